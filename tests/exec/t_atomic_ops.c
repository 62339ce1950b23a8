/* t_atomic_ops.c — atomics return old values: every program takes a ticket
 * with atomic_add (the tickets are a permutation of 0..G-1); atomic_max and
 * atomic_min over i32 and f32; atomic_xchg returns the previous value; a
 * tile atomic_max over a range. */
#include "harness.h"

static const char *src =
    "kernel t(T: i32[1], OUT: i32[G], MX: i32[2], MF: f32[2], X: i32[G], XF: f32[G],\n"
    "         XC: i64[1], OLD: i64[G], TM: i32[8]) grid(G) {\n"
    "    let p = program_id(0);\n"
    "    OUT[p] = atomic_add(T[0], 1);\n"
    "    atomic_max(MX[0], X[p]);\n"
    "    atomic_min(MX[1], X[p]);\n"
    "    atomic_max(MF[0], XF[p]);\n"
    "    atomic_min(MF[1], XF[p]);\n"
    "    OLD[p] = atomic_xchg(XC[0], p as i64);\n"
    "    atomic_max(TM[0 +: 8], (arange(8) * p) % 37);\n"
    "}\n";

int main(void)
{
    enum { G = 200 };
    h_seed(23);
    blkc_kernel *k = h_build(src, NULL);
    int32_t t = 0, mx[2] = {INT32_MIN, INT32_MAX}, tm[8] = {0};
    int32_t *out = h_array(H_I32, G), *x = h_array(H_I32, G);
    float mf[2] = {-INFINITY, INFINITY}, *xf = h_array(H_F32, G);
    int64_t xc = -1, *old = h_array(H_I64, G);
    h_fill(x, H_I32, G, -1000000, 1000000);
    h_fill(xf, H_F32, G, -100, 100);
    H_LAUNCH(k, h_ten(h_t1(&t, H_I32, 1)), h_ten(h_t1(out, H_I32, G)), h_ten(h_t1(mx, H_I32, 2)),
             h_ten(h_t1(mf, H_F32, 2)), h_ten(h_t1(x, H_I32, G)), h_ten(h_t1(xf, H_F32, G)),
             h_ten(h_t1(&xc, H_I64, 1)), h_ten(h_t1(old, H_I64, G)), h_ten(h_t1(tm, H_I32, 8)));
    int seen[G] = {0}, perm = t == G;
    for (int i = 0; i < G; i++) {
        if (out[i] < 0 || out[i] >= G || seen[out[i]]++)
            perm = 0;
    }
    h_ok(perm, "atomic_add tickets are a permutation of 0..%d (counter %d)", G - 1, t);
    int64_t rmx[2] = {INT32_MIN, INT32_MAX};
    double rmf[2] = {-INFINITY, INFINITY};
    for (int i = 0; i < G; i++) {
        if (x[i] > rmx[0]) rmx[0] = x[i];
        if (x[i] < rmx[1]) rmx[1] = x[i];
        rmf[0] = fmax(rmf[0], xf[i]);
        rmf[1] = fmin(rmf[1], xf[i]);
    }
    h_check_i("i32 atomic_max/min", mx, H_I32, rmx, 2);
    h_check("f32 atomic_max/min", mf, H_F32, rmf, 2, 0, 0);
    /* xchg: the old values and the final value form a chain -1 -> ... */
    int chain = 1, seenx[G + 1] = {0};
    for (int i = 0; i < G; i++) {
        if (old[i] < -1 || old[i] >= G || old[i] == i || seenx[old[i] + 1]++)
            chain = 0;
    }
    chain = chain && xc >= 0 && xc < G && !seenx[xc + 1] && seenx[0] == 1;
    h_ok(chain, "atomic_xchg old values chain every program exactly once (final %lld)",
         (long long)xc);
    int64_t rtm[8];
    for (int j = 0; j < 8; j++) {
        rtm[j] = 0;
        for (int p = 0; p < G; p++)
            if ((j * p) % 37 > rtm[j]) rtm[j] = (j * p) % 37;
    }
    h_check_i("tile atomic_max over a range", tm, H_I32, rtm, 8);
    return h_done();
}
