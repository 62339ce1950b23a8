/* t_reduce_nan.c — max/min along the last axis of rows long enough for the
 * CPU's vector loop (1000 f32: 31 vectors of 32 lanes and a tail of 8),
 * with a NaN in each row at a different place (the first element, every
 * lane of the vector part, the tail), rows with +-inf and rows without
 * NaN: a NaN anywhere gives NaN, otherwise the exact extreme (C fmax /
 * fmin over the row). backends/cpu/tile.c keeps its NaN flags beside a
 * one-compare maximum, so the NaN can no longer come from the
 * accumulator's own compare. */
#include "harness.h"

static const char *src =
    "kernel mm<N = 1000>(X: f32[R, N], MX: f32[R], MN: f32[R]) grid(R) {\n"
    "    let x = X[program_id(0), :];\n"
    "    MX[program_id(0)] = max(x);\n"
    "    MN[program_id(0)] = min(x);\n"
    "}\n";

int main(void)
{
    enum { N = 1000, R = 80 };
    h_seed(31);
    blkc_kernel *k = h_build(src, NULL);
    float *x = h_array(H_F32, R * N), *mx = h_array(H_F32, R), *mn = h_array(H_F32, R);
    h_fill(x, H_F32, R * N, -50, 50);
    /* rows 0..63: a NaN at 0, then 1..62 spread over the vector lanes and
     * blocks, 63: in the tail; 64..67: +-inf; 68..: no NaN */
    for (int r = 0; r < 64; r++) {
        int at = r == 0 ? 0 : r == 63 ? N - 3 : (r * 33 + r / 2) % (N - 8);
        x[r * N + at] = NAN;
    }
    x[64 * N + 500] = INFINITY;
    x[65 * N + 999] = -INFINITY;
    x[66 * N + 3] = INFINITY;
    x[66 * N + 700] = -INFINITY;
    x[67 * N + 0] = -INFINITY;
    H_LAUNCH(k, h_ten(h_t2(x, H_F32, R, N)), h_ten(h_t1(mx, H_F32, R)),
             h_ten(h_t1(mn, H_F32, R)));
    int bad = 0;
    for (int r = 0; r < R; r++) {
        bool nan = false;
        float a = x[r * N], b = x[r * N];
        for (int j = 0; j < N; j++) {
            float v = x[r * N + j];
            nan |= isnan(v);
            a = fmaxf(a, v);
            b = fminf(b, v);
        }
        bool ok = nan ? isnan(mx[r]) && isnan(mn[r]) : mx[r] == a && mn[r] == b;
        if (!ok && bad++ < 5)
            fprintf(stderr, "row %d (NaN %d): max %g min %g, want %g %g\n", r, nan,
                    mx[r], mn[r], nan ? NAN : a, nan ? NAN : b);
    }
    h_ok(bad == 0, "max/min of %d rows of %d with NaN, +-inf: %d wrong", R, N, bad);
    return h_done();
}
