/* t_dist_a2av.c — all_to_all with uneven send/recv counts (tests/dist/
 * a2av.blk) on 1, 2, 3, 4 and 8 local ranks, some chunks empty, against the
 * exchange computed in C; plus the errors for counts that do not add up. */
#include "dist_test.h"

/* elements rank r sends to rank q */
static int count(int r, int q) { return (r + 2 * q) % 3 + (r == q); }

static void one(const DtMod *m, const char *entry, int W)
{
    int fi = dt_entry(m, entry);
    bool with_rc = strcmp(entry, "a2av") == 0;
    DtArgs A;
    dt_args_init(&A, m, fi, W);
    float *src[DT_MAXR], *dst[DT_MAXR];
    int D = 3 * W + W; /* room for the most any rank can receive */
    for (int r = 0; r < W; r++) {
        int S = 0;
        for (int q = 0; q < W; q++)
            S += count(r, q);
        src[r] = DT_T(&A, r, "src", S > 0 ? S : 1);
        dst[r] = DT_T(&A, r, "dst", D);
        for (int i = 0; i < S; i++)
            src[r][i] = (float)(1000 * r + i);
        if (with_rc) {
            int64_t *sc = DT_T(&A, r, "sc", W), *rc = DT_T(&A, r, "rc", W);
            for (int q = 0; q < W; q++) {
                sc[q] = count(r, q);
                rc[q] = count(q, r);
            }
        } else {
            int32_t *sc = DT_T(&A, r, "sc", W);
            for (int q = 0; q < W; q++)
                sc[q] = count(r, q);
        }
    }
    if (dt_run_ok(&A, entry) == 0) {
        for (int r = 0; r < W; r++) { /* rank r gets, from each q in order,
                                        q's chunk for r */
            int k = 0, bad = 0;
            for (int q = 0; q < W; q++) {
                int off = 0;
                for (int p = 0; p < r; p++)
                    off += count(q, p);
                for (int i = 0; i < count(q, r); i++, k++)
                    if (dst[r][k] != (float)(1000 * q + off + i))
                        bad++;
            }
            T_CHECK(bad == 0, "%s W=%d rank %d: %d wrong elements", entry, W, r, bad);
        }
    }
    dt_args_free(&A);
}

static void errors(const DtMod *m)
{
    int fi = dt_entry(m, "a2av");
    DtArgs A;
    char err[1024];
    dt_args_init(&A, m, fi, 2);
    for (int r = 0; r < 2; r++) {
        DT_T(&A, r, "src", 4);
        DT_T(&A, r, "dst", 4);
        int64_t *sc = DT_T(&A, r, "sc", 2), *rc = DT_T(&A, r, "rc", 2);
        sc[0] = sc[1] = 3; /* 6 > 4 elements of src */
        rc[0] = rc[1] = 3;
    }
    T_CHECK(dt_run(&A, err, sizeof err) != 0 && strstr(err, "send counts add up to 6"),
            "oversized send counts: got '%s'", err);
    dt_args_free(&A);
}

int main(void)
{
    DtMod m = dt_load("tests/dist/a2av.blk", NULL, 0);
    const int ws[] = {1, 2, 3, 4, 8};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
        one(&m, "a2av", ws[i]);
        one(&m, "a2av_auto", ws[i]);
    }
    errors(&m);
    dt_free(&m);
    return t_done("t_dist_a2av");
}
