/* t_promote_float.c — + - * / across float/float and float/int dtype pairs.
 * The promoted result is stored into an f64 tensor (exact), so a wrong
 * result dtype shows up as a different rounding: f64 > f32 > f16 > bf16,
 * f16 with bf16 gives f32, a float with an int gives the float; f16/bf16
 * arithmetic is computed in f32 and rounded to the result dtype. */
#include "harness.h"

typedef struct { const char *a, *b, *r; } Pair;
static const Pair pairs[] = {
    {"f16", "f16", "f16"},   {"bf16", "bf16", "bf16"}, {"f16", "bf16", "f32"},
    {"bf16", "f16", "f32"},  {"f16", "f32", "f32"},    {"f32", "bf16", "f32"},
    {"f32", "f64", "f64"},   {"f16", "f64", "f64"},    {"bf16", "f64", "f64"},
    {"f32", "f32", "f32"},   {"f64", "f64", "f64"},    {"f16", "i32", "f16"},
    {"i8", "bf16", "bf16"},  {"f32", "i64", "f32"},    {"u16", "f64", "f64"},
    {"f16", "u8", "f16"},    {"bf16", "i16", "bf16"},  {"u32", "f32", "f32"},
};
#define NPAIRS (int)(sizeof pairs / sizeof pairs[0])

static double as_dt(const char *r, double v)
{
    if (!strcmp(r, "f16")) return h_rf16((float)v);
    if (!strcmp(r, "bf16")) return h_rbf16((float)v);
    if (!strcmp(r, "f32")) return (float)v;
    return v;
}

static double op(const char *r, int o, double x, double y)
{
    if (!strcmp(r, "f64")) {
        switch (o) {
        case 0: return x + y;
        case 1: return x - y;
        case 2: return x * y;
        default: return x / y;
        }
    }
    float fx = (float)x, fy = (float)y, z;
    switch (o) {
    case 0: z = fx + fy; break;
    case 1: z = fx - fy; break;
    case 2: z = fx * fy; break;
    default: z = fx / fy; break;
    }
    return as_dt(r, z);
}

int main(void)
{
    enum { N = 300 };
    char *src = h_alloc(64 * 1024);
    size_t len = 0;
    for (int p = 0; p < NPAIRS; p++)
        len += (size_t)snprintf(src + len, 64 * 1024 - len,
            "kernel p%d<BLOCK = 64>(A: %s[N], B: %s[N], O: f64[4, N]) grid(cdiv(N, BLOCK)) {\n"
            "    let o = program_id(0) * BLOCK;\n"
            "    let a = A[o +: BLOCK];\n"
            "    let b = B[o +: BLOCK];\n"
            "    O[0, o +: BLOCK] = a + b;\n"
            "    O[1, o +: BLOCK] = a - b;\n"
            "    O[2, o +: BLOCK] = a * b;\n"
            "    O[3, o +: BLOCK] = a / b;\n"
            "}\n", p, pairs[p].a, pairs[p].b);
    blkc_module *m = h_compile(src, NULL);
    h_seed(1);
    for (int p = 0; p < NPAIRS; p++) {
        DLDataType ta = h_dtype(pairs[p].a), tb = h_dtype(pairs[p].b);
        void *a = h_array(ta, N), *b = h_array(tb, N);
        double *o = h_alloc(sizeof(double) * 4 * N), *ref = h_alloc(sizeof(double) * 4 * N);
        for (int i = 0; i < N; i++) {
            double va = h_dtype_is_float(ta) ? h_randu(-4, 4) : (double)h_randi(1, 9);
            double vb = h_dtype_is_float(tb) ? h_randu(-4, 4) : (double)h_randi(1, 9);
            if (h_dtype_is_float(tb) && fabs(vb) < 0.25)
                vb = 0.5;
            h_set(a, ta, i, va);
            h_set(b, tb, i, vb);
        }
        for (int i = 0; i < N; i++) {
            double x = as_dt(pairs[p].r, h_get(a, ta, i));
            double y = as_dt(pairs[p].r, h_get(b, tb, i));
            for (int k = 0; k < 4; k++)
                ref[k * N + i] = op(pairs[p].r, k, x, y);
        }
        char name[16];
        snprintf(name, sizeof name, "p%d", p);
        H_LAUNCH(h_kernel(m, name), h_ten(h_t1(a, ta, N)), h_ten(h_t1(b, tb, N)),
                 h_ten(h_t2(o, H_F64, 4, N)));
        char what[96];
        snprintf(what, sizeof what, "%s op %s -> %s (+ - * / rows)", pairs[p].a,
                 pairs[p].b, pairs[p].r);
        h_check(what, o, H_F64, ref, 4 * N, 0, 0);
    }
    return h_done();
}
