/* t_math.c — every math builtin on f32 tiles (libm reference) and a few on
 * f16 (computed in f32, rounded): exp exp2 log log2 sqrt rsqrt sin cos tanh
 * erf abs floor ceil sigmoid fma maximum minimum. */
#include "harness.h"

#define NF 17
static const char *src =
    "kernel m<BLOCK = 64>(X: f32[N], Y: f32[N], O: f32[17, N], H: f16[N], OH: f16[3, N])\n"
    "    grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    let y = Y[o +: BLOCK];\n"
    "    let px = abs(x) + 0.125;\n"
    "    O[0, o +: BLOCK] = exp(x);\n"
    "    O[1, o +: BLOCK] = exp2(x);\n"
    "    O[2, o +: BLOCK] = log(px);\n"
    "    O[3, o +: BLOCK] = log2(px);\n"
    "    O[4, o +: BLOCK] = sqrt(px);\n"
    "    O[5, o +: BLOCK] = rsqrt(px);\n"
    "    O[6, o +: BLOCK] = sin(x);\n"
    "    O[7, o +: BLOCK] = cos(x);\n"
    "    O[8, o +: BLOCK] = tanh(x);\n"
    "    O[9, o +: BLOCK] = erf(x);\n"
    "    O[10, o +: BLOCK] = abs(x);\n"
    "    O[11, o +: BLOCK] = floor(x);\n"
    "    O[12, o +: BLOCK] = ceil(x);\n"
    "    O[13, o +: BLOCK] = sigmoid(x);\n"
    "    O[14, o +: BLOCK] = fma(x, y, 0.5);\n"
    "    O[15, o +: BLOCK] = maximum(x, y);\n"
    "    O[16, o +: BLOCK] = minimum(x, 0.0);\n"
    "    let h = H[o +: BLOCK];\n"
    "    OH[0, o +: BLOCK] = exp(h);\n"
    "    OH[1, o +: BLOCK] = sqrt(abs(h));\n"
    "    OH[2, o +: BLOCK] = sigmoid(h);\n"
    "}\n";

static double ref(int f, double x, double y)
{
    double px = fabs(x) + 0.125;
    switch (f) {
    case 0: return expf((float)x);
    case 1: return exp2f((float)x);
    case 2: return logf((float)px);
    case 3: return log2f((float)px);
    case 4: return sqrtf((float)px);
    case 5: return 1.0 / sqrt(px);
    case 6: return sinf((float)x);
    case 7: return cosf((float)x);
    case 8: return tanhf((float)x);
    case 9: return erff((float)x);
    case 10: return fabs(x);
    case 11: return floor(x);
    case 12: return ceil(x);
    case 13: return 1.0 / (1.0 + exp(-x));
    case 14: return fmaf((float)x, (float)y, 0.5f);
    case 15: return fmax(x, y);
    default: return fmin(x, 0.0);
    }
}

int main(void)
{
    enum { N = 777 };
    static const char *names[NF] = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin",
                                    "cos", "tanh", "erf", "abs", "floor", "ceil", "sigmoid",
                                    "fma", "maximum", "minimum"};
    h_seed(30);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, N), *y = h_array(H_F32, N), *o = h_array(H_F32, NF * N);
    uint16_t *hh = h_array(H_F16, N), *oh = h_array(H_F16, 3 * N);
    h_fill(x, H_F32, N, -6, 6);
    h_fill(y, H_F32, N, -6, 6);
    h_fill(hh, H_F16, N, -4, 4);
    x[0] = 2.5f; x[1] = -2.5f; x[2] = -0.0f; x[3] = 3.0f;
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_F32, N)),
             h_ten(h_t2(o, H_F32, NF, N)), h_ten(h_t1(hh, H_F16, N)),
             h_ten(h_t2(oh, H_F16, 3, N)));
    double *r = h_alloc(8 * N);
    for (int f = 0; f < NF; f++) {
        for (int i = 0; i < N; i++) r[i] = ref(f, x[i], y[i]);
        int exact = f >= 10 && f != 13;
        h_check(names[f], o + f * N, H_F32, r, N, exact ? 0 : 1e-6, exact ? 0 : 4e-6);
    }
    for (int i = 0; i < N; i++) r[i] = h_rf16(expf(h_f16_to_f32(hh[i])));
    h_check("f16 exp", oh, H_F16, r, N, 0, 1.0 / 1024);
    for (int i = 0; i < N; i++) r[i] = h_rf16(sqrtf(fabsf(h_f16_to_f32(hh[i]))));
    h_check("f16 sqrt(abs)", oh + N, H_F16, r, N, 0, 0);
    for (int i = 0; i < N; i++) r[i] = h_rf16(1.0f / (1.0f + expf(-h_f16_to_f32(hh[i]))));
    h_check("f16 sigmoid", oh + 2 * N, H_F16, r, N, 1e-3, 1.0 / 1024);
    return h_done();
}
