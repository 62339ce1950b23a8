/* t_dot_128x256x32.c — dot for (M, N, K) = (128, 256, 32): f16 -> f32 (with and without an
 * accumulator) on several programs, and f32 -> f32. An argument (f16 or f32)
 * runs only that case: on cuda-emu only f16 fits sm_80's shared memory. */
#include "dot_common.h"

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    h_seed(128 * 1000 + 256 + 32);
    if (!only || !strcmp(only, "f16"))
        run_dot(128, 256, 32, "f16", 3);
    if (!only || !strcmp(only, "f32"))
        run_dot(128, 256, 32, "f32", 2);
    return h_done();
}
