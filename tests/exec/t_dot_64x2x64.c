/* t_dot_64x2x64.c — dot for (M, N, K) = (64, 2, 64): f16 -> f32 (with and without an
 * accumulator) on several programs, and f32 -> f32. */
#include "dot_common.h"

int main(void)
{
    h_seed(64 * 1000 + 2 + 64);
    run_dot(64, 2, 64, "f16", 3);
    run_dot(64, 2, 64, "f32", 2);
    return h_done();
}
