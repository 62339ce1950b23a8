/* api_example.c — the smallest complete use of libblkc: compile a
 * vector-add kernel from a string, launch it on DLPack tensors over plain C
 * arrays, check the result and print one line.
 *
 *   cc api_example.c $(pkg-config --cflags --libs blkc) -o api_example */
#include <blkc/blkc.h>
#include <stdio.h>
#include <string.h>

static const char *source =
    "kernel vadd<BLOCK = 256>(A: f32[N], B: f32[N], C: f32[N])\n"
    "    grid(cdiv(N, BLOCK))\n"
    "{\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK];\n"
    "}\n";

enum { N = 10000 };
static float a[N], b[N], c[N];

/* A 1-D f32 tensor over a C array (strides NULL = compact). */
static DLTensor f32_vector(float *data, int64_t *shape)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype = (DLDataType){kDLFloat, 32, 1};
    t.shape = shape;
    return t;
}

static int fail(const char *what)
{
    fprintf(stderr, "api_example: %s: %s\n", what, blkc_last_error());
    return 1;
}

int main(void)
{
    blkc_context *ctx;
    blkc_module *mod;
    blkc_kernel *vadd;
    if (blkc_context_create("cpu", &ctx) != BLKC_OK)
        return fail("context");
    blkc_compile_options opts;
    blkc_compile_options_init(&opts);
    opts.filename = "vadd.blk"; /* shown in diagnostics */
    if (blkc_module_create(ctx, source, strlen(source), &opts, &mod) != BLKC_OK)
        return fail("compile");
    if (blkc_module_get_kernel(mod, "vadd", &vadd) != BLKC_OK)
        return fail("kernel");

    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 0.5f * (float)i;
    }
    int64_t shape[1] = {N};
    DLTensor ta = f32_vector(a, shape), tb = f32_vector(b, shape),
             tc = f32_vector(c, shape);
    blkc_arg args[3] = {
        {.kind = BLKC_ARG_TENSOR, .v.tensor = &ta},
        {.kind = BLKC_ARG_TENSOR, .v.tensor = &tb},
        {.kind = BLKC_ARG_TENSOR, .v.tensor = &tc},
    };
    if (blkc_kernel_launch(vadd, args, 3, NULL) != BLKC_OK)
        return fail("launch");

    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += c[i] != 1.5f * (float)i;
    printf("api_example: vadd of %d floats with libblkc %s: %s\n", N,
           blkc_version(), wrong ? "WRONG" : "ok");
    blkc_module_destroy(mod);
    blkc_context_destroy(ctx);
    return wrong != 0;
}
