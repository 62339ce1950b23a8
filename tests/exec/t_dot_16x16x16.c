/* t_dot_16x16x16.c — dot for (M, N, K) = (16, 16, 16): f16 -> f32 (with and without an
 * accumulator) on several programs, and f32 -> f32. */
#include "dot_common.h"

int main(void)
{
    h_seed(16 * 1000 + 16 + 16);
    run_dot(16, 16, 16, "f16", 3);
    run_dot(16, 16, 16, "f32", 2);
    return h_done();
}
