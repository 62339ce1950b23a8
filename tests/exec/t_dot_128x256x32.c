/* t_dot_128x256x32.c — dot for (M, N, K) = (128, 256, 32): f16 -> f32 (with and without an
 * accumulator) on several programs, and f32 -> f32. */
#include "dot_common.h"

int main(void)
{
    h_seed(128 * 1000 + 256 + 32);
    run_dot(128, 256, 32, "f16", 3);
    run_dot(128, 256, 32, "f32", 2);
    return h_done();
}
