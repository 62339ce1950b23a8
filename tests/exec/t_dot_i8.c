/* t_dot_i8.c — dot of i8 tiles accumulates in i32 (exact, full i8 range,
 * products summed past the i16 range), several shapes. */
#include "dot_common.h"

int main(void)
{
    h_seed(18);
    run_dot(16, 16, 16, "i8", 2);
    run_dot(32, 48, 64, "i8", 3);
    run_dot(5, 7, 130, "i8", 2);
    return h_done();
}
