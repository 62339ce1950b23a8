/* t_dot_i8.c — dot of i8 tiles accumulates in i32 (exact, full i8 range,
 * products summed past the i16 range), several shapes; 64 x 64 x 64 is a
 * register dot on both GPU dialects (mma.sync m16n8k32 .s8 on CUDA,
 * v_mfma_i32_16x16x16i8 on HIP: BLKC_TEST_DEVICE=cuda-emu / hip-emu). */
#include "dot_common.h"

int main(void)
{
    h_seed(18);
    run_dot(16, 16, 16, "i8", 2);
    run_dot(32, 48, 64, "i8", 3);
    run_dot(5, 7, 130, "i8", 2);
    run_dot(64, 64, 64, "i8", 2);
    return h_done();
}
