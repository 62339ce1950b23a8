/* unit_check.h — the check macro of the GPU runtime's unit tests
 * (t_nccl_load.c, t_gpu_device.c, t_gpu_stage.c): CHECK(c) prints the
 * file, line and expression of a check that fails and counts it in
 * `fails` (the test's exit status comes from it). */
#ifndef BLKC_TESTS_GPU_UNIT_CHECK_H
#define BLKC_TESTS_GPU_UNIT_CHECK_H
#include <stdio.h>

static int fails;
#define CHECK(c)                                                             \
    do {                                                                     \
        if (!(c)) {                                                          \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #c);                                                     \
            fails++;                                                         \
        }                                                                    \
    } while (0)

#endif
