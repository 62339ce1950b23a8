#!/usr/bin/env bash
# demo.sh BLKC — the showcase behind `make demo`: runs examples/matmul.blk
# (f16 inputs, f32 accumulation and output) on the best device present
# (--device=cuda when nvidia-smi works and blkc runs there, the CPU
# otherwise) on random inputs written to a temp dir, checks the result
# against a reference computed in double precision by a small C program
# compiled on the fly (python3+numpy when no C compiler), and prints one
# verification line. Exits non-zero on a mismatch.
set -euo pipefail
BLKC=${1:-build/blkc}
M=${M:-256} N=${N:-256} K=${K:-256}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$BLKC" ] || { echo "demo: $BLKC is not executable (build first)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/blkc-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The helper: `gen M K N DIR` writes a.npy [M,K] and b.npy [K,N] as f32
# holding f16-exact values (multiples of 1/1024 in [-1, 1)), so the device
# sees exactly the numbers the reference uses; `check M K N DIR` reads them
# and c.npy and prints the max abs error.
cat > "$tmp/ref.c" <<'CEOF'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void wr(const char *path, const float *d, long r, long c) {
    FILE *f = fopen(path, "wb");
    char h[128];
    int n = snprintf(h, sizeof h,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (%ld, %ld), }", r, c);
    int tot = 10 + n + 1, pad = (64 - tot % 64) % 64;
    unsigned short hl = (unsigned short)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f); fputc(hl >> 8, f);
    fwrite(h, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(d, 4, (size_t)(r * c), f);
    fclose(f);
}
static float *rd(const char *path, long want) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "demo: cannot open %s\n", path); exit(1); }
    unsigned char pre[10];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
        fprintf(stderr, "demo: %s is not a .npy file\n", path); exit(1);
    }
    long hl = pre[8] | (pre[9] << 8);
    if (pre[6] >= 2) { unsigned char x[2]; if (fread(x, 1, 2, f) != 2) exit(1);
        hl |= ((long)x[0] << 16) | ((long)x[1] << 24); }
    char *h = calloc(1, (size_t)hl + 1);
    if (fread(h, 1, (size_t)hl, f) != (size_t)hl) exit(1);
    if (!strstr(h, "'<f4'")) { fprintf(stderr, "demo: %s: expected f32, header %s\n", path, h); exit(1); }
    free(h);
    float *d = malloc((size_t)want * 4);
    if (fread(d, 4, (size_t)want, f) != (size_t)want) {
        fprintf(stderr, "demo: %s: short data\n", path); exit(1);
    }
    fclose(f);
    return d;
}
int main(int argc, char **argv) {
    if (argc != 6) return 2;
    long M = atol(argv[2]), K = atol(argv[3]), N = atol(argv[4]);
    char p[4096];
    if (!strcmp(argv[1], "gen")) {
        unsigned long long s = 88172645463325252ull;
        float *a = malloc((size_t)(M * K) * 4), *b = malloc((size_t)(K * N) * 4);
        for (long i = 0; i < M * K + K * N; i++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            float v = (float)((long)(s % 2048) - 1024) / 1024.0f;
            if (i < M * K) a[i] = v; else b[i - M * K] = v;
        }
        snprintf(p, sizeof p, "%s/a.npy", argv[5]); wr(p, a, M, K);
        snprintf(p, sizeof p, "%s/b.npy", argv[5]); wr(p, b, K, N);
        free(a); free(b);
        return 0;
    }
    snprintf(p, sizeof p, "%s/a.npy", argv[5]); float *a = rd(p, M * K);
    snprintf(p, sizeof p, "%s/b.npy", argv[5]); float *b = rd(p, K * N);
    snprintf(p, sizeof p, "%s/c.npy", argv[5]); float *c = rd(p, M * N);
    double maxerr = 0;
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            double r = 0;
            for (long k = 0; k < K; k++) r += (double)a[i * K + k] * b[k * N + j];
            double e = fabs(r - c[i * N + j]);
            if (e != e) e = INFINITY;          /* NaN counts as a mismatch */
            if (e > maxerr) maxerr = e;
        }
    /* f16 inputs are exact; f32 accumulation over K terms of size <= 1 */
    double tol = (double)K * 4.8e-7 + 1e-5;
    printf("%.1e %.1e\n", maxerr, tol);
    free(a); free(b); free(c);
    return maxerr <= tol ? 0 : 1;
}
CEOF

CC=${CC:-cc}
if command -v "$CC" >/dev/null 2>&1; then
  "$CC" -O2 -o "$tmp/ref" "$tmp/ref.c" -lm
  ref() { "$tmp/ref" "$@"; }
elif command -v python3 >/dev/null 2>&1 && python3 -c 'import numpy' 2>/dev/null; then
  ref() {
    python3 - "$@" <<'PEOF'
import sys, numpy as np
mode, M, K, N, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if mode == "gen":
    rng = np.random.default_rng(0)
    np.save(f"{d}/a.npy", (rng.integers(-1024, 1024, (M, K)) / 1024).astype(np.float32))
    np.save(f"{d}/b.npy", (rng.integers(-1024, 1024, (K, N)) / 1024).astype(np.float32))
else:
    a, b, c = (np.load(f"{d}/{x}.npy").astype(np.float64) for x in "abc")
    err = float(np.max(np.where(np.isnan(c), np.inf, np.abs(a @ b - c))))
    tol = K * 4.8e-7 + 1e-5
    print("%.1e %.1e" % (err, tol))
    sys.exit(0 if err <= tol else 1)
PEOF
  }
else
  echo "demo: need a C compiler (cc) or python3 with numpy for the reference" >&2
  exit 2
fi

ref gen "$M" "$K" "$N" "$tmp"

device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  if "$BLKC" run "$here/matmul.blk" --device=cuda A=@"$tmp/a.npy" B=@"$tmp/b.npy" \
       --out C="$tmp/c.npy" 2>"$tmp/cuda.err"; then
    device=cuda
  else
    echo "demo: a GPU is present but blkc could not run there ($(head -n1 "$tmp/cuda.err")); using the CPU" >&2
  fi
fi
if [ "$device" = cpu ]; then
  "$BLKC" run "$here/matmul.blk" --device=cpu A=@"$tmp/a.npy" B=@"$tmp/b.npy" \
      --out C="$tmp/c.npy"
fi

status=0
out=$(ref check "$M" "$K" "$N" "$tmp") || status=$?
err=${out%% *} tol=${out##* }
if [ "$status" -eq 0 ]; then
  echo "matmul ${M}x${N}x${K} f16->f32 on $device: max abs err $err vs reference: OK"
else
  echo "matmul ${M}x${N}x${K} f16->f32 on $device: max abs err ${err:-?} vs reference (tol ${tol:-?}): MISMATCH"
  exit 1
fi
