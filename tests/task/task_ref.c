/* task_ref.c — checks for the task-tier tests (tests/task/task_test.sh):
 *   task_ref cmp A.npy B.npy TOL         max |A - B| <= TOL (same shape)
 *   task_ref mlp X W1 W2 OUT TOL [sqrelu] OUT == silu(X @ W1) @ W2, in C
 *                                        (sqrelu: x > 0 ? x * x : 0.25 * x)
 *   task_ref gated X W G OUT TOL         Y = X @ W; OUT == Y * sigmoid(G)^2 + Y
 *   task_ref rmsnorm X W EPS OUT TOL     OUT == rmsnorm(X, W, EPS) * 2 - X
 * Exit 0 when it holds, 1 when not (with the largest difference). */
#include "../../runtime/rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A one-shot reference tool: its buffers live until exit on purpose, kept
 * reachable from here so that LeakSanitizer does not count them. */
static void *kept[256];
static int nkept;
static void *keep(void *p)
{
    if (nkept < 256)
        kept[nkept++] = p;
    return p;
}

static RtNpy load(const char *p)
{
    RtNpy a;
    char err[512];
    if (rt_npy_read(p, &a, err, sizeof err)) {
        fprintf(stderr, "task_ref: %s\n", err);
        exit(2);
    }
    keep(a.data);
    return a;
}

static double at(const RtNpy *a, int64_t i)
{
    return rt_load_f64((const char *)a->data + i * dsl_dtype_bytes(a->dtype), a->dtype);
}

static int check(const RtNpy *got, const double *want, int64_t n, double tol, const char *what)
{
    double m = 0;
    int64_t where = 0;
    if (got->numel != n) {
        fprintf(stderr, "%s: %lld elements, expected %lld\n", what, (long long)got->numel,
                (long long)n);
        return 1;
    }
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(at(got, i) - want[i]);
        if (!(d <= m)) {
            m = d;
            where = i;
        }
    }
    printf("%s: %lld elements, max |diff| %.3g at %lld\n", what, (long long)n, m, (long long)where);
    return !(m <= tol);
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "cmp") == 0) {
        RtNpy a = load(argv[2]), b = load(argv[3]);
        bool same = a.ndim == b.ndim;
        for (int d = 0; same && d < a.ndim; d++)
            same = a.shape[d] == b.shape[d];
        if (!same) {
            fprintf(stderr, "cmp: shapes differ\n");
            return 1;
        }
        double *w = keep(malloc(sizeof *w * (size_t)(b.numel + 1)));
        for (int64_t i = 0; i < b.numel; i++)
            w[i] = at(&b, i);
        return check(&a, w, b.numel, atof(argv[4]), "cmp");
    }
    if (argc >= 7 && strcmp(argv[1], "mlp") == 0) {
        RtNpy x = load(argv[2]), w1 = load(argv[3]), w2 = load(argv[4]), o = load(argv[5]);
        int64_t T = x.shape[0], H = x.shape[1], F = w1.shape[1];
        double *h = keep(calloc((size_t)(T * F), sizeof *h));
        double *y = keep(calloc((size_t)(T * H), sizeof *y));
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < F; j++) {
                double s = 0;
                for (int64_t k = 0; k < H; k++)
                    s += at(&x, i * H + k) * at(&w1, k * F + j);
                h[i * F + j] = argc >= 8 && strcmp(argv[7], "sqrelu") == 0
                                   ? (s > 0 ? s * s : 0.25 * s) : s / (1 + exp(-s));
            }
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < H; j++) {
                double s = 0;
                for (int64_t k = 0; k < F; k++)
                    s += h[i * F + k] * at(&w2, k * H + j);
                y[i * H + j] = s;
            }
        return check(&o, y, T * H, atof(argv[6]), "mlp vs C reference");
    }
    if (argc >= 7 && strcmp(argv[1], "rmsnorm") == 0) {
        RtNpy x = load(argv[2]), w = load(argv[3]), o = load(argv[5]);
        double eps = atof(argv[4]);
        int64_t T = x.shape[0], H = x.shape[1];
        double *y = keep(calloc((size_t)(T * H), sizeof *y));
        for (int64_t i = 0; i < T; i++) {
            double ss = 0;
            for (int64_t k = 0; k < H; k++)
                ss += at(&x, i * H + k) * at(&x, i * H + k);
            double r = 1 / sqrt(ss / H + eps);
            for (int64_t k = 0; k < H; k++)
                y[i * H + k] = at(&x, i * H + k) * r * at(&w, k) * 2 - at(&x, i * H + k);
        }
        return check(&o, y, T * H, atof(argv[6]), "rmsnorm vs C reference");
    }
    if (argc >= 7 && strcmp(argv[1], "gated") == 0) {
        RtNpy x = load(argv[2]), w = load(argv[3]), g = load(argv[4]), o = load(argv[5]);
        int64_t T = x.shape[0], H = x.shape[1];
        double *y = keep(calloc((size_t)(T * H), sizeof *y));
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < H; j++) {
                double s = 0;
                for (int64_t k = 0; k < H; k++)
                    s += at(&x, i * H + k) * at(&w, k * H + j);
                double sg = 1 / (1 + exp(-at(&g, j)));
                y[i * H + j] = s * sg * sg + s;
            }
        return check(&o, y, T * H, atof(argv[6]), "gated vs C reference");
    }
    fprintf(stderr, "usage: task_ref cmp|mlp|rmsnorm|gated ...\n");
    return 2;
}
