/* t_int64.c — i64/u64 tiles with values past 32 bits: arithmetic, shifts,
 * a u64 multiply that wraps, comparisons, and i64 reductions. */
#include "harness.h"

static const char *src =
    "kernel k<BLOCK = 32>(A: i64[N], B: i64[N], U: u64[N], O: i64[4, N], OU: u64[2, N],\n"
    "        S: i64[P, 2]) grid(cdiv(N, BLOCK)) {\n"
    "    let p = program_id(0);\n"
    "    let o = p * BLOCK;\n"
    "    let a = A[o +: BLOCK];\n"
    "    let b = B[o +: BLOCK];\n"
    "    let u = U[o +: BLOCK];\n"
    "    O[0, o +: BLOCK] = a * 3 - b;\n"
    "    O[1, o +: BLOCK] = a / b;\n"
    "    O[2, o +: BLOCK] = a >> 33;\n"
    "    O[3, o +: BLOCK] = where(a > b, a, b);\n"
    "    OU[0, o +: BLOCK] = u * 0x5851f42d4c957f2d;\n"
    "    OU[1, o +: BLOCK] = u >> 60;\n"
    "    S[p, 0] = sum(a);\n"
    "    S[p, 1] = max(b);\n"
    "}\n";

int main(void)
{
    enum { N = 320, BLOCK = 32, P = N / BLOCK };
    h_seed(37);
    blkc_kernel *k = h_build(src, NULL);
    int64_t *a = h_array(H_I64, N), *b = h_array(H_I64, N), *o = h_array(H_I64, 4 * N);
    uint64_t *u = h_array(H_U64, N), *ou = h_array(H_U64, 2 * N);
    int64_t *s = h_array(H_I64, P * 2);
    for (int i = 0; i < N; i++) {
        a[i] = h_randi(-(1LL << 50), 1LL << 50);
        b[i] = h_randi(1LL << 33, 1LL << 40) * (i % 2 ? 1 : -1);
        u[i] = h_rand_u64();
    }
    H_LAUNCH(k, h_ten(h_t1(a, H_I64, N)), h_ten(h_t1(b, H_I64, N)), h_ten(h_t1(u, H_U64, N)),
             h_ten(h_t2(o, H_I64, 4, N)), h_ten(h_t2(ou, H_U64, 2, N)),
             h_ten(h_t2(s, H_I64, P, 2)));
    int64_t *r = h_alloc(8 * 4 * N), *ru = h_alloc(8 * 2 * N), rs[P * 2];
    for (int i = 0; i < N; i++) {
        r[i] = a[i] * 3 - b[i];
        r[N + i] = a[i] / b[i];
        r[2 * N + i] = a[i] >> 33;
        r[3 * N + i] = a[i] > b[i] ? a[i] : b[i];
        ru[i] = (int64_t)(u[i] * 0x5851f42d4c957f2dull);
        ru[N + i] = (int64_t)(u[i] >> 60);
    }
    for (int p = 0; p < P; p++) {
        int64_t t = 0, m = INT64_MIN;
        for (int i = p * BLOCK; i < (p + 1) * BLOCK; i++) {
            t += a[i];
            if (b[i] > m) m = b[i];
        }
        rs[p * 2] = t;
        rs[p * 2 + 1] = m;
    }
    h_check_i("i64 a * 3 - b", o, H_I64, r, N);
    h_check_i("i64 a / b", o + N, H_I64, r + N, N);
    h_check_i("i64 a >> 33", o + 2 * N, H_I64, r + 2 * N, N);
    h_check_i("i64 where(a > b, a, b)", o + 3 * N, H_I64, r + 3 * N, N);
    h_check_i("u64 multiply wraps (hex literal)", ou, H_U64, ru, N);
    h_check_i("u64 >> 60 (logical)", ou + N, H_U64, ru + N, N);
    h_check_i("i64 sum / max", s, H_I64, rs, P * 2);
    return h_done();
}
