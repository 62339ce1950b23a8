/* t_gpu_device.c — GPU device names (runtime/gpu_launch.c,
 * rt_gpu_parse_device), without a GPU: targets and ids, the message of a
 * name that is not a GPU's and of a malformed id, and the same messages
 * from the lone run and GPU ranks (rt_gpu_run_host, rt_gpur_run), which
 * take them from rt_gpu_parse_device. */
#include "../../runtime/gpu_ranks.h"

#include <stdio.h>
#include <string.h>

#include "unit_check.h"

int main(void)
{
    blkc_target t;
    int id;
    char err[256] = "";
    CHECK(rt_gpu_parse_device("cuda", &t, &id, err, sizeof err) == 0 &&
          t == BLKC_TARGET_CUDA && id == 0);
    CHECK(rt_gpu_parse_device("hip:3", &t, &id, err, sizeof err) == 0 &&
          t == BLKC_TARGET_HIP && id == 3);
    CHECK(rt_gpu_parse_device("cuda-emu", &t, &id, err, sizeof err) == 0 &&
          t == BLKC_TARGET_CUDA && id == RT_GPU_EMU);
    CHECK(rt_gpu_parse_device("cpu", &t, &id, err, sizeof err) == -1);
    CHECK(!strcmp(err, "'cpu' is not a GPU device"));
    CHECK(rt_gpu_parse_device(NULL, &t, &id, err, sizeof err) == -1);
    CHECK(!strcmp(err, "'(null)' is not a GPU device"));
    CHECK(rt_gpu_parse_device("cuda:x", &t, &id, err, sizeof err) == -2);
    CHECK(!strcmp(err, "bad device 'cuda:x' (cpu, cuda[:N], hip[:N], "
                       "cuda-emu, hip-emu)"));
    /* the callers: BLKC_ERR_USAGE with the same messages, before they
     * look at the module */
    CHECK(rt_gpu_run_host("tpu:0", NULL, 0, NULL, 0, NULL, 0, NULL, NULL,
                          NULL, err, sizeof err) == BLKC_ERR_USAGE);
    CHECK(!strcmp(err, "'tpu:0' is not a GPU device"));
    CHECK(rt_gpur_run(NULL, 0, 2, NULL, NULL, "cpu", err, sizeof err) ==
          BLKC_ERR_USAGE);
    CHECK(!strcmp(err, "'cpu' is not a GPU device"));
    CHECK(rt_gpur_run(NULL, 0, 2, NULL, NULL, "hip:-1", err, sizeof err) ==
          BLKC_ERR_USAGE);
    CHECK(!strncmp(err, "bad device 'hip:-1'", 19));
    if (fails)
        fprintf(stderr, "%d checks failed\n", fails);
    else
        printf("ok\n");
    return fails ? 1 : 0;
}
