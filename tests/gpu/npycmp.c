/* npycmp.c — compare two .npy files element by element:
 *     npycmp A.npy B.npy [RTOL [ATOL]]
 * passes when every |a - b| <= ATOL + RTOL * |b| (NaN == NaN, same shape);
 * prints the largest error. Exit 0 equal, 1 different, 2 unreadable. */
#include "runtime/rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: npycmp A.npy B.npy [RTOL [ATOL]]\n");
        return 2;
    }
    double rtol = argc > 3 ? atof(argv[3]) : 1e-5;
    double atol = argc > 4 ? atof(argv[4]) : 1e-6;
    RtNpy a, b;
    char err[512];
    if (rt_npy_read(argv[1], &a, err, sizeof err) ||
        rt_npy_read(argv[2], &b, err, sizeof err)) {
        fprintf(stderr, "npycmp: %s\n", err);
        return 2;
    }
    int bad = a.ndim != b.ndim || a.numel != b.numel;
    for (int d = 0; !bad && d < a.ndim; d++)
        bad = a.shape[d] != b.shape[d];
    if (bad) {
        printf("npycmp: %s and %s differ in shape\n", argv[1], argv[2]);
        return 1;
    }
    int ea = dsl_dtype_bytes(a.dtype), eb = dsl_dtype_bytes(b.dtype);
    double worst = 0;
    int64_t at = -1, nbad = 0;
    for (int64_t i = 0; i < a.numel; i++) {
        double x = rt_load_f64((char *)a.data + i * ea, a.dtype);
        double y = rt_load_f64((char *)b.data + i * eb, b.dtype);
        if ((isnan(x) && isnan(y)) || x == y) /* equal infinities too */
            continue;
        double e = fabs(x - y);
        if (!(e <= atol + rtol * fabs(y))) {
            nbad++;
            if (at < 0)
                at = i;
        }
        if (e > worst || isnan(e))
            worst = e;
    }
    printf("npycmp: %lld elements, max abs error %g, %lld outside rtol %g "
           "atol %g%s\n", (long long)a.numel, worst, (long long)nbad, rtol, atol,
           nbad ? "" : " (ok)");
    if (nbad)
        printf("npycmp: first mismatch at flat index %lld\n", (long long)at);
    rt_npy_free(&a);
    rt_npy_free(&b);
    return nbad ? 1 : 0;
}
