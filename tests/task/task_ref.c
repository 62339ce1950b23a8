/* task_ref.c — checks for the task-tier tests (tests/task/task_test.sh):
 *   task_ref cmp A.npy B.npy TOL         max |A - B| <= TOL (same shape)
 *   task_ref mlp X W1 W2 OUT TOL [sqrelu] OUT == silu(X @ W1) @ W2, in C
 *                                        (sqrelu: x > 0 ? x * x : 0.25 * x)
 *   task_ref gated X W G OUT TOL         Y = X @ W; OUT == Y * sigmoid(G)^2 + Y
 *   task_ref rmsnorm X W EPS OUT TOL     OUT == rmsnorm(X, W, EPS) * 2 - X
 *   task_ref moe X WR W1 W2 K OUT TOL    OUT == moe(X, WR, W1, W2, K) (docs/task.md
 *                                        "Mixture of experts"): top-K of X @ WR per
 *                                        token (ties to the lower expert), gates =
 *                                        softmax over the K chosen logits, OUT[t] =
 *                                        sum_j gate_j * silu(X[t] @ W1[e_j]) @ W2[e_j];
 *                                        TOL relative to max |OUT|
 *   task_ref fill OUT V D0 [D1 ...]      write an f32 .npy of shape D0 x D1 ... all V
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
    if (argc >= 5 && strcmp(argv[1], "fill") == 0) {
        int64_t shape[8], n = 1;
        int nd = argc - 4 > 8 ? 8 : argc - 4;
        for (int i = 0; i < nd; i++)
            n *= shape[i] = atoll(argv[4 + i]);
        float *v = keep(malloc((size_t)n * sizeof *v));
        char err[512];
        if (!v)
            return 2;
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)atof(argv[3]);
        if (rt_npy_write(argv[2], DT_F32, nd, shape, v, err, sizeof err)) {
            fprintf(stderr, "task_ref: %s\n", err);
            return 2;
        }
        return 0;
    }
    if (argc >= 9 && strcmp(argv[1], "moe") == 0) {
        RtNpy x = load(argv[2]), wr = load(argv[3]), w1 = load(argv[4]), w2 = load(argv[5]);
        RtNpy o = load(argv[7]);
        int K = atoi(argv[6]);
        int64_t T = x.shape[0], H = x.shape[1], E = wr.shape[1], F = w1.shape[2];
        double *y = keep(calloc((size_t)(T * H), sizeof *y));
        double *lg = keep(calloc((size_t)E, sizeof *lg)), *h = keep(calloc((size_t)F, sizeof *h));
        int *pick = keep(calloc((size_t)E, sizeof *pick));
        double *g = keep(calloc((size_t)K, sizeof *g));
        int *ix = keep(calloc((size_t)K, sizeof *ix));
        if (!y || !lg || !h || !pick || !g || !ix || K < 1 || K > E)
            return 2;
        double top = 0;
        for (int64_t t = 0; t < T; t++) {
            for (int64_t e = 0; e < E; e++) {
                float s = 0; /* f32 as the router GEMM */
                for (int64_t k = 0; k < H; k++)
                    s += (float)at(&x, t * H + k) * (float)at(&wr, k * E + e);
                lg[e] = s;
                pick[e] = 0;
            }
            for (int j = 0; j < K; j++) { /* the largest untaken; ties: lower e */
                int b = -1;
                for (int e = 0; e < E; e++)
                    if (!pick[e] && (b < 0 || lg[e] > lg[b]))
                        b = e;
                pick[b] = 1;
                ix[j] = b;
            }
            double sum = 0;
            for (int j = 0; j < K; j++)
                sum += g[j] = exp(lg[ix[j]] - lg[ix[0]]);
            for (int j = 0; j < K; j++) {
                int e = ix[j];
                for (int64_t f = 0; f < F; f++) {
                    double a = 0;
                    for (int64_t k = 0; k < H; k++)
                        a += at(&x, t * H + k) * at(&w1, (e * H + k) * F + f);
                    h[f] = a / (1 + exp(-a));
                }
                for (int64_t c = 0; c < H; c++) {
                    double a = 0;
                    for (int64_t f = 0; f < F; f++)
                        a += h[f] * at(&w2, (e * F + f) * H + c);
                    y[t * H + c] += g[j] / sum * a;
                }
            }
        }
        for (int64_t i = 0; i < T * H; i++)
            top = fmax(top, fabs(y[i]));
        printf("moe: max |OUT| %.3g\n", top);
        return check(&o, y, T * H, atof(argv[8]) * (top > 0 ? top : 1), "moe vs C reference");
    }
    fprintf(stderr, "usage: task_ref cmp|mlp|rmsnorm|gated|moe ...\n");
    return 2;
}
