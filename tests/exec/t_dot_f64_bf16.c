/* t_dot_f64_bf16.c — dot of f64 tiles stays f64; bf16 tiles accumulate in
 * f32; odd shapes. */
#include "dot_common.h"

int main(void)
{
    h_seed(19);
    run_dot(24, 40, 56, "f64", 2);
    run_dot(33, 17, 48, "bf16", 3);
    run_dot(8, 8, 8, "bf16", 1);
    return h_done();
}
