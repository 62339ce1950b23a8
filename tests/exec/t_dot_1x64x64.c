/* t_dot_1x64x64.c — dot for (M, N, K) = (1, 64, 64): f16 -> f32 (with and without an
 * accumulator) on several programs, and f32 -> f32. */
#include "dot_common.h"

int main(void)
{
    h_seed(1 * 1000 + 64 + 64);
    run_dot(1, 64, 64, "f16", 3);
    run_dot(1, 64, 64, "f32", 2);
    return h_done();
}
