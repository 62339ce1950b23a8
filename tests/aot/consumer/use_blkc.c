/* use_blkc.c — the smallest libblkc user: JIT-compile a kernel from a
 * NUL-terminated string (length 0) and launch it on two DLPack tensors,
 * then once more with the one-line launcher. */
#include <blkc/blkc.h>

#include <stdio.h>
#include <string.h>

static const char src[] =
    "kernel twice<B = 64>(X: f32[N], Y: f32[N]) grid(cdiv(N, B)) {\n"
    "    let o = program_id(0) * B;\n"
    "    Y[o +: B] = X[o +: B] * 2.0;\n"
    "}\n";

int main(void)
{
    blkc_context *ctx;
    blkc_module *mod;
    blkc_kernel *k;
    if (blkc_context_create("cpu", &ctx) != BLKC_OK ||
        blkc_module_create(ctx, src, 0, NULL, &mod) != BLKC_OK ||
        blkc_module_get_kernel(mod, "twice", &k) != BLKC_OK) {
        fprintf(stderr, "use_blkc: %s\n", blkc_last_error());
        return 1;
    }
    float x[100], y[100];
    for (int i = 0; i < 100; i++)
        x[i] = (float)i;
    int64_t shape[1] = {100};
    DLTensor tx = {x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    DLTensor ty = {y, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    blkc_arg args[2] = {{BLKC_ARG_TENSOR, {.tensor = &tx}},
                        {BLKC_ARG_TENSOR, {.tensor = &ty}}};
    if (blkc_kernel_launch(k, args, 2, NULL) != BLKC_OK) {
        fprintf(stderr, "use_blkc: %s\n", blkc_last_error());
        return 1;
    }
    for (int i = 0; i < 100; i++)
        if (y[i] != 2.0f * (float)i) {
            fprintf(stderr, "use_blkc: y[%d] = %g\n", i, y[i]);
            return 1;
        }
    float z[100];
    if (blkc_kernel_launchf(k, "f32[#] f32[#]", y, 100, z, 100) != BLKC_OK) {
        fprintf(stderr, "use_blkc: %s\n", blkc_last_error());
        return 1;
    }
    for (int i = 0; i < 100; i++)
        if (z[i] != 4.0f * (float)i) {
            fprintf(stderr, "use_blkc: z[%d] = %g\n", i, z[i]);
            return 1;
        }
    blkc_module_destroy(mod);
    blkc_context_destroy(ctx);
    printf("use_blkc: blkc %s ok\n", blkc_version());
    return 0;
}
