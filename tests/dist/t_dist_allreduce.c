/* t_dist_allreduce.c — lib/allreduce.blk (one-shot and two-shot all-reduce
 * with peer loads and signals) for sum, max and min on 1, 2, 3, 4 and 8
 * local ranks, N divisible by W or not (down to N < W), against the
 * reduction in rank order computed in C (f32 accumulation, so exact). */
#include "dist_test.h"
#include "allreduce_case.h"

int main(void)
{
    DtMod m = dt_load("lib/allreduce.blk", NULL, 0);
    static const int sizes[] = {1, 3, 256, 1001, 4099};
    for (int w = 0; w < DT_NWORLDS; w++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int op = 0; op < 3; op++) {
                allreduce_case(&m, "allreduce_oneshot", dt_worlds[w], sizes[s], op, -1);
                allreduce_case(&m, "allreduce_twoshot", dt_worlds[w], sizes[s], op, -1);
            }
    dt_free(&m);
    return t_done("t_dist_allreduce");
}
