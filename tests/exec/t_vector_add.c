/* t_vector_add.c — examples/vector_add.blk with a tail (N not a multiple of
 * BLOCK) on a grid of many programs, plus BLOCK overridden by a define. */
#include "harness.h"

static void run(const char *const *defs, int64_t n)
{
    blkc_kernel *k = h_build(H_EXAMPLE("vector_add.blk"), defs);
    float *a = h_array(H_F32, n), *b = h_array(H_F32, n), *c = h_array(H_F32, n + 8);
    double *ref = h_alloc(sizeof(double) * (n + 8));
    h_fill(a, H_F32, n, -1, 1);
    h_fill(b, H_F32, n, -1, 1);
    for (int64_t i = 0; i < n + 8; i++) {
        c[i] = 42.0f;
        ref[i] = i < n ? (double)(a[i] + b[i]) : 42.0;
    }
    H_LAUNCH(k, h_ten(h_t1(a, H_F32, n)), h_ten(h_t1(b, H_F32, n)),
             h_ten(h_t1(c, H_F32, n)));
    h_check("vector_add (and nothing written past N)", c, H_F32, ref, n + 8, 0, 0);
}

int main(void)
{
    run(NULL, 100003);
    run(H_DEFS("BLOCK=128"), 1000);
    run(H_DEFS("BLOCK=100"), 1);
    return h_done();
}
