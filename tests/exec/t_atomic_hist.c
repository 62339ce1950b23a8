/* t_atomic_hist.c — a histogram: hundreds of programs atomic_add into the
 * same 16 bins through an index tile (duplicates within a tile too); the
 * tail uses pad = -1, an out-of-bounds bin that is never written. Also a
 * float total with atomic_add on one element (exact values). */
#include "harness.h"

static const char *src =
    "kernel hist<BLOCK = 256>(X: i32[N], H: i32[NB]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = load(X[o +: BLOCK], pad = -1);\n"
    "    atomic_add(H[x], full(i32, 1, BLOCK));\n"
    "}\n"
    "kernel total<BLOCK = 128>(X: f32[N], S: f32[1], C: i64[1]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    atomic_add(S[0], sum(X[o +: BLOCK]));\n"
    "    atomic_add(C[0], 1 as i64);\n"
    "}\n";

int main(void)
{
    enum { N = 100003, NB = 16 };
    h_seed(22);
    blkc_module *m = h_compile(src, NULL);
    int32_t *x = h_array(H_I32, N), h[NB] = {0};
    int64_t ref[NB] = {0};
    for (int i = 0; i < N; i++) {
        x[i] = (int32_t)h_randi(0, NB - 1);
        ref[x[i]]++;
    }
    for (int rep = 0; rep < 3; rep++) {
        memset(h, 0, sizeof h);
        H_LAUNCH(h_kernel(m, "hist"), h_ten(h_t1(x, H_I32, N)), h_ten(h_t1(h, H_I32, NB)));
        h_check_i("histogram of 100003 values in 16 bins (782 programs)", h, H_I32, ref, NB);
    }
    float *xf = h_array(H_F32, N), s = 0;
    int64_t cnt = 0;
    double tot = 0;
    for (int i = 0; i < N; i++) {
        xf[i] = (float)h_randi(-8, 8) / 8.0f;   /* sums stay exact in f32 */
        tot += xf[i];
    }
    H_LAUNCH(h_kernel(m, "total"), h_ten(h_t1(xf, H_F32, N)), h_ten(h_t1(&s, H_F32, 1)),
             h_ten(h_t1(&cnt, H_I64, 1)));
    h_check("f32 atomic_add total", &s, H_F32, &tot, 1, 0, 0);
    int64_t progs = (N + 127) / 128;
    h_check_i("i64 atomic_add counter", &cnt, H_I64, &progs, 1);
    return h_done();
}
