/* t_dist_dims.c — tensor dims written as expressions (tests/dist/dims.blk)
 * and the §5 example of LANGUAGE.md verbatim (tests/dist/lang5.blk), on 1,
 * 2, 3, 4 and 8 local ranks against references computed in C; plus the
 * errors for extents that do not match their expression (entry and call). */
#include "dist_test.h"
#include "runtime/khelp.h"

enum { M = 3, K = 4, PAD = 2 };

static void gather2(const DtMod *m, int W)
{
    int fi = dt_entry(m, "gather2");
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *a[DT_MAXR], *g[DT_MAXR], *h[DT_MAXR], *t[DT_MAXR], *p[DT_MAXR];
    for (int r = 0; r < W; r++) {
        a[r] = DT_T(&A, r, "a", M, K);
        g[r] = DT_T(&A, r, "g", (int64_t)M * W, K);
        h[r] = DT_T(&A, r, "h", M * K);
        t[r] = DT_T(&A, r, "t", 8);
        p[r] = DT_T(&A, r, "p", M + PAD);
        dt_int(&A, r, "pad", PAD);
        dt_fill(a[r], M * K, r, 5);
        for (int i = 0; i < 8; i++)
            t[r][i] = (float)(i + r);
        for (int i = 0; i < M + PAD; i++)
            p[r][i] = -1.0f;
    }
    if (dt_run_ok(&A, "gather2") == 0)
        for (int r = 0; r < W; r++) {
            int bad = 0;
            for (int q = 0; q < W; q++)
                for (int i = 0; i < M * K; i++)
                    bad += g[r][q * M * K + i] != a[q][i];
            for (int i = 0; i < M * K; i++) {
                float s = 0;
                for (int q = 0; q < W; q++)
                    s += a[q][i];
                bad += h[r][i] != s;
            }
            for (int i = 0; i < 8; i++)
                bad += t[r][i] != (float)(2 * (i + r));
            for (int i = 0; i < M + PAD; i++)
                bad += p[r][i] != (i < M ? a[r][i * K] : -1.0f);
            T_CHECK(bad == 0, "gather2 W=%d rank %d: %d wrong values", W, r, bad);
        }
    dt_args_free(&A);
}

/* call_dims: g = all_gather(a) through a callee typed f32[R * world() - R
 * + R, C]; with mw != M * W the callee's check fails. */
static void call_dims(const DtMod *m, int W, int mw, const char *want_err)
{
    int fi = dt_entry(m, "call_dims");
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *a[DT_MAXR], *g[DT_MAXR];
    for (int r = 0; r < W; r++) {
        a[r] = DT_T(&A, r, "a", M, K);
        g[r] = DT_T(&A, r, "g", mw, K);
        dt_fill(a[r], M * K, r, 9);
    }
    if (want_err) {
        char err[1024];
        int rc = dt_run(&A, err, sizeof err);
        T_CHECK(rc != 0 && strstr(err, want_err), "call_dims W=%d MW=%d: rc %d '%s'", W, mw,
                rc, err);
    } else if (dt_run_ok(&A, "call_dims") == 0) {
        for (int r = 0; r < W; r++) {
            int bad = 0;
            for (int q = 0; q < W; q++)
                for (int i = 0; i < M * K; i++)
                    bad += g[r][q * M * K + i] != a[q][i];
            T_CHECK(bad == 0, "call_dims W=%d rank %d: %d wrong values", W, r, bad);
        }
    }
    dt_args_free(&A);
}

static void entry_mismatch(const DtMod *m)
{
    int fi = dt_entry(m, "gather2");
    DtArgs A;
    char err[1024];
    dt_args_init(&A, m, fi, 2);
    for (int r = 0; r < 2; r++) {
        DT_T(&A, r, "a", M, K);
        DT_T(&A, r, "g", 2 * M + 1, K);
        DT_T(&A, r, "h", M * K);
        DT_T(&A, r, "t", 8);
        DT_T(&A, r, "p", M + PAD);
        dt_int(&A, r, "pad", PAD);
    }
    T_CHECK(dt_run(&A, err, sizeof err) != 0 &&
                strstr(err, "'g' dim 0 is 7, but its type says M * world() = 6"),
            "entry extent mismatch: '%s'", err);
    dt_args_free(&A);
}

/* LANGUAGE.md §5: c = concat_q(a_q) @ b in f16 (f32 accumulation). */
static void lang5(const DtMod *m, const char *entry, int W)
{
    enum { LM = 5, LK = 24, LN = 20 };
    int fi = dt_entry(m, entry);
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    uint16_t *a[DT_MAXR], *b[DT_MAXR], *c[DT_MAXR];
    float af[DT_MAXR][LM * LK], bf[LK * LN];
    dt_fill(bf, LK * LN, 99, 1);
    for (int r = 0; r < W; r++) {
        a[r] = DT_T(&A, r, "a", LM, LK);
        b[r] = DT_T(&A, r, "b", LK, LN);
        c[r] = DT_T(&A, r, "c", (int64_t)LM * W, LN);
        dt_fill(af[r], LM * LK, r, 2);
        for (int i = 0; i < LM * LK; i++)
            a[r][i] = blkc_cpu_f32_to_f16(af[r][i]);
        for (int i = 0; i < LK * LN; i++)
            b[r][i] = blkc_cpu_f32_to_f16(bf[i]);
    }
    if (dt_run_ok(&A, entry) == 0) {
        double *want = t_xmalloc(sizeof(double) * (size_t)(LM * W * LN));
        for (int q = 0; q < W; q++)
            for (int i = 0; i < LM; i++)
                for (int j = 0; j < LN; j++) {
                    double s = 0;
                    for (int k = 0; k < LK; k++)
                        s += (double)af[q][i * LK + k] * bf[k * LN + j];
                    want[(q * LM + i) * LN + j] = s;
                }
        float *got = t_xmalloc(sizeof(float) * (size_t)(LM * W * LN));
        for (int r = 0; r < W; r++) {
            for (int i = 0; i < LM * W * LN; i++)
                got[i] = blkc_cpu_f16_to_f32(c[r][i]);
            dt_close(got, want, (size_t)(LM * W * LN), 2e-3, entry, W, r);
        }
        free(got);
        free(want);
    }
    dt_args_free(&A);
}

int main(void)
{
    DtMod m = dt_load("tests/dist/dims.blk", NULL, 0);
    DtMod l5 = dt_load("tests/dist/lang5.blk", NULL, 0);
    for (int i = 0; i < DT_NWORLDS; i++) {
        int W = dt_worlds[i];
        gather2(&m, W);
        call_dims(&m, W, M * W, NULL);
        lang5(&l5, "ag_gemm", W);
        lang5(&l5, "ag_gemm_expr", W);
    }
    entry_mismatch(&m);
    call_dims(&m, 2, 2 * M + 1,
              "fill_from line 30: 'dst' dim 0 is 7, but its type says R * world() - R + R = 6");
    dt_free(&l5);
    dt_free(&m);
    return t_done("t_dist_dims");
}
