/* api_task.c — tasks through libblkc, public API only: the tensor-parallel
 * MLP (tests/task/mlp.blk) run on 1, 2 and 4 local ranks against a C
 * reference (silu(x @ w1) @ w2 in double), a task with two results, the
 * plan text equal to `blkc plan`'s golden output, and the error routes
 * (unknown task, wrong arity / dtype / shape, ranks not dividing a split
 * dim, bad sizes) as statuses with clear messages; one handle run from
 * several threads at once; a task on a 2-D mesh (plan equal to its golden,
 * a 2 x 2 run against the reference). Also a device function on N local ranks
 * (blkc_kernel_run_ranks): an all_reduce through a buffer made inside it. */
#include <blkc/blkc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_test.h"

static char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", BLKC_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
        exit(1);
    b[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return b;
}

typedef struct {
    DLTensor t;
    int64_t shape[2];
} Tensor;

static void mk(Tensor *x, float *data, int64_t a, int64_t b)
{
    memset(x, 0, sizeof *x);
    x->shape[0] = a;
    x->shape[1] = b;
    x->t.data = data;
    x->t.device.device_type = kDLCPU;
    x->t.ndim = 2;
    x->t.dtype.code = kDLFloat;
    x->t.dtype.bits = 32;
    x->t.dtype.lanes = 1;
    x->t.shape = x->shape;
}

static float *rnd(int64_t n, unsigned *s)
{
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 1103515245u + 12345u;
        p[i] = (float)((*s >> 8) % 2001) / 1000.0f - 1.0f;
    }
    return p;
}

/* h = silu(x @ w1) [T, F]; y = h @ w2 [T, H], in double */
static void reference(const float *x, const float *w1, const float *w2, int T, int H, int F,
                      double *h, double *y)
{
    for (int t = 0; t < T; t++)
        for (int f = 0; f < F; f++) {
            double a = 0;
            for (int k = 0; k < H; k++)
                a += (double)x[t * H + k] * w1[k * F + f];
            h[t * F + f] = a / (1 + exp(-a));
        }
    for (int t = 0; t < T; t++)
        for (int j = 0; j < H; j++) {
            double a = 0;
            for (int f = 0; f < F; f++)
                a += h[t * F + f] * w2[f * H + j];
            y[t * H + j] = a;
        }
}

static double maxdiff(const float *got, const double *want, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]);
        if (!(d <= m))
            m = d;
    }
    return m;
}

/* threads running one handle at once (runs are serialized inside) */
typedef struct {
    blkc_task *t;
    const blkc_arg *args;
    const double *want;
    int n;
    int ok;
} Job;

static void *job_run(void *p)
{
    Job *j = p;
    float *o = malloc(sizeof(float) * (size_t)j->n);
    Tensor ty;
    mk(&ty, o, 8, 16);
    DLTensor *res[] = {&ty.t};
    j->ok = 1;
    for (int rep = 0; rep < 3; rep++)
        if (blkc_task_run(j->t, j->args, 3, res, 1) != BLKC_OK || maxdiff(o, j->want, j->n) > 1e-3)
            j->ok = 0;
    free(o);
    return NULL;
}

static blkc_task *make(const char *src, size_t len, const char *file, const char *name,
                       int ranks)
{
    blkc_compile_options o;
    blkc_compile_options_init(&o);
    o.filename = file;
    blkc_task_options to;
    blkc_task_options_init(&to);
    to.ranks = ranks;
    blkc_task *t = NULL;
    blkc_status st = blkc_task_create(src, len, &o, name, &to, &t);
    CHECK(st == BLKC_OK && t);
    return t;
}

int main(void)
{
    enum { T = 8, H = 16, F = 32 };
    unsigned seed = 7;
    float *x = rnd(T * H, &seed), *w1 = rnd(H * F, &seed), *w2 = rnd(F * H, &seed);
    double *h = malloc(sizeof(double) * T * F), *y = malloc(sizeof(double) * T * H);
    reference(x, w1, w2, T, H, F, h, y);
    Tensor tx, tw1, tw2, ty, th;
    mk(&tx, x, T, H);
    mk(&tw1, w1, H, F);
    mk(&tw2, w2, F, H);
    blkc_arg args[3];
    for (int i = 0; i < 3; i++)
        args[i].kind = BLKC_ARG_TENSOR;
    args[0].v.tensor = &tx.t;
    args[1].v.tensor = &tw1.t;
    args[2].v.tensor = &tw2.t;
    float *out = malloc(sizeof(float) * T * H), *out_h = malloc(sizeof(float) * T * F);

    size_t mlen, tlen;
    char *mlp = slurp("tests/task/mlp.blk", &mlen);
    char *two = slurp("tests/task/two_results.blk", &tlen);

    /* the MLP on 1, 2 and 4 ranks, each run twice (the second reuses the
     * compiled form) */
    int ranks[] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        blkc_task *t = make(mlp, mlen, "mlp.blk", "mlp", ranks[k]);
        if (!t)
            continue;
        CHECK(blkc_task_param_count(t) == 3);
        CHECK(strcmp(blkc_task_param_name(t, 1), "w1") == 0);
        CHECK(blkc_task_param_is_tensor(t, 2) == 1);
        CHECK(blkc_task_result_count(t) == 1);
        int nd = 0;
        int64_t shp[8];
        DLDataType dt;
        CHECK(blkc_task_result_shape(t, args, 3, 0, &dt, &nd, shp) == BLKC_OK);
        CHECK(nd == 2 && shp[0] == T && shp[1] == H && dt.code == kDLFloat && dt.bits == 32);
        for (int rep = 0; rep < 2; rep++) {
            memset(out, 0xff, sizeof(float) * T * H);
            mk(&ty, out, T, H);
            DLTensor *res[] = {&ty.t};
            CHECK(blkc_task_run(t, args, 3, res, 1) == BLKC_OK);
            double d = maxdiff(out, y, T * H);
            printf("mlp on %d rank%s (run %d): max |diff| %.3g\n", ranks[k],
                   ranks[k] == 1 ? "" : "s", rep + 1, d);
            CHECK(d <= 1e-3);
        }
        blkc_task_destroy(t);
    }

    /* megakernel mode (blkc_task_options.megakernel): the same bits as
     * one launch per op, on 1 and 2 ranks; a bad value is refused */
    for (int k = 0; k < 2; k++) {
        float *o2 = malloc(sizeof(float) * T * H);
        blkc_task *tt[2] = {NULL, NULL};
        for (int mk_ = 0; mk_ < 2; mk_++) {
            blkc_compile_options o;
            blkc_compile_options_init(&o);
            o.filename = "mlp.blk";
            blkc_task_options to;
            blkc_task_options_init(&to);
            to.ranks = k + 1;
            to.megakernel = mk_;
            CHECK(blkc_task_create(mlp, mlen, &o, "mlp", &to, &tt[mk_]) == BLKC_OK && tt[mk_]);
        }
        if (tt[0] && tt[1] && o2) {
            mk(&ty, out, T, H);
            DLTensor *res[] = {&ty.t};
            CHECK(blkc_task_run(tt[0], args, 3, res, 1) == BLKC_OK);
            for (int rep = 0; rep < 3; rep++) { /* runs 2, 3: the cached table */
                memset(o2, 0xff, sizeof(float) * T * H);
                mk(&ty, o2, T, H);
                CHECK(blkc_task_run(tt[1], args, 3, res, 1) == BLKC_OK);
                CHECK(memcmp(out, o2, sizeof(float) * T * H) == 0);
            }
            printf("mlp on %d rank%s, megakernel: max |diff| %.3g, same bits as launch per op\n",
                   k + 1, k ? "s" : "", maxdiff(o2, y, T * H));
        }
        blkc_task_destroy(tt[0]);
        blkc_task_destroy(tt[1]);
        free(o2);
    }
    {
        blkc_compile_options o;
        blkc_compile_options_init(&o);
        blkc_task_options to;
        blkc_task_options_init(&to);
        to.megakernel = 2;
        blkc_task *bad = NULL;
        EXPECT(blkc_task_create(mlp, mlen, &o, "mlp", &to, &bad), BLKC_ERR_USAGE,
               "megakernel 2 is not 0 or 1");
    }

    /* one handle, four threads */
    {
        blkc_task *t = make(mlp, mlen, "mlp.blk", "mlp", 2);
        Job jobs[4];
        pthread_t th[4];
        for (int i = 0; t && i < 4; i++) {
            jobs[i] = (Job){t, args, y, T * H, 0};
            CHECK(pthread_create(&th[i], NULL, job_run, &jobs[i]) == 0);
        }
        for (int i = 0; t && i < 4; i++) {
            pthread_join(th[i], NULL);
            CHECK(jobs[i].ok);
        }
        printf("mlp on 2 ranks from 4 threads: %s\n", t ? "done" : "no task");
        blkc_task_destroy(t);
    }

    /* two results: the output (replicated) and the hidden activation
     * (split(1), gathered whole) */
    {
        blkc_task *t = make(two, tlen, "two_results.blk", NULL, 4);
        if (t) {
            CHECK(blkc_task_result_count(t) == 2);
            int nd = 0;
            int64_t shp[8];
            CHECK(blkc_task_result_shape(t, args, 3, 1, NULL, &nd, shp) == BLKC_OK);
            CHECK(nd == 2 && shp[0] == T && shp[1] == F);
            mk(&ty, out, T, H);
            mk(&th, out_h, T, F);
            DLTensor *res[] = {&ty.t, &th.t};
            CHECK(blkc_task_run(t, args, 3, res, 2) == BLKC_OK);
            double d0 = maxdiff(out, y, T * H), d1 = maxdiff(out_h, h, T * F);
            printf("mlp2 on 4 ranks: max |diff| %.3g (result0), %.3g (result1)\n", d0, d1);
            CHECK(d0 <= 1e-3 && d1 <= 1e-4);
            /* one result tensor for two results */
            EXPECT(blkc_task_run(t, args, 3, res, 1), BLKC_ERR_USAGE,
                   "task mlp2 has 2 results, got 1 result tensors");
            blkc_task_destroy(t);
        }
    }

    /* the plan: the same text as `blkc plan` (tests/task/golden) */
    {
        blkc_compile_options o;
        blkc_compile_options_init(&o);
        o.filename = "mlp.blk";
        blkc_task_options to;
        blkc_task_options_init(&to);
        to.ranks = 8;
        to.topology = "h100-nvl8";
        blkc_task *t = NULL;
        CHECK(blkc_task_create(mlp, mlen, &o, "mlp", &to, &t) == BLKC_OK);
        const char *sizes[] = {"T=4096", "H=8192", "F=28672"};
        char *plan = NULL;
        size_t plen = 0;
        CHECK(blkc_task_plan(t, sizes, 3, 0, &plan, &plen) == BLKC_OK);
        char *golden = slurp("tests/task/golden/mlp_h100.txt", NULL);
        CHECK(plan && strcmp(plan, golden) == 0);
        CHECK(plan && strlen(plan) == plen);
        CHECK(plan && strstr(plan, "decision: GEMM+AllReduce, 1 chunk per shard"));
        CHECK(plan && strstr(plan, "w1         param                  f32[H=8192, F=28672]"
                                   "             split(1)"));
        if (plan && golden && strcmp(plan, golden) != 0)
            fprintf(stderr, "plan:\n%s\ngolden:\n%s\n", plan, golden);
        blkc_free(plan);
        free(golden);
        plan = NULL;
        CHECK(blkc_task_plan(t, sizes, 3, 1, &plan, NULL) == BLKC_OK);
        CHECK(plan && plan[0] == '{' && strstr(plan, "\"all_reduce\""));
        blkc_free(plan);
        EXPECT(blkc_task_plan(t, sizes, 2, 0, &plan, NULL), BLKC_ERR_USAGE,
               "task mlp needs the size F: give F=VALUE");
        const char *bad[] = {"T=4096", "Q=3", "F=8"};
        EXPECT(blkc_task_plan(t, bad, 3, 0, &plan, NULL), BLKC_ERR_USAGE,
               "size 1 'Q=3' of task mlp is not NAME=VALUE with a size of the task (T, H, F)");
        const char *odd[] = {"T=16", "H=16", "F=30"};
        EXPECT(blkc_task_plan(t, odd, 3, 0, &plan, NULL), BLKC_ERR_COMPILE,
               "30 is not divisible by 8");
        blkc_task_destroy(t);
        to.topology = "no-such-topology";
        t = NULL;
        EXPECT(blkc_task_create(mlp, mlen, &o, "mlp", &to, &t), BLKC_ERR_USAGE,
               "no-such-topology");
        CHECK(t == NULL);
    }

    /* a task on a 2-D mesh: the mesh sizes are sizes of the task */
    {
        size_t len = 0;
        char *src = slurp("tests/task/mlp_mesh.blk", &len);
        blkc_compile_options o;
        blkc_compile_options_init(&o);
        o.filename = "mlp_mesh.blk";
        blkc_task_options to;
        blkc_task_options_init(&to);
        to.ranks = 16;
        to.topology = "h100-nvl8";
        blkc_task *t = NULL;
        CHECK(src && blkc_task_create(src, len, &o, "mlp", &to, &t) == BLKC_OK);
        const char *sizes[] = {"T=4096", "H=8192", "F=28672", "DP=2", "TP=8"};
        char *plan = NULL;
        CHECK(t && blkc_task_plan(t, sizes, 5, 0, &plan, NULL) == BLKC_OK);
        char *golden = slurp("tests/task/golden/mlp_mesh_h100.txt", NULL);
        CHECK(plan && golden && strcmp(plan, golden) == 0);
        blkc_free(plan);
        free(golden);
        const char *four[] = {"T=4096", "H=8192", "F=28672", "DP=2", "TP=2"};
        if (t)
            EXPECT(blkc_task_plan(t, four, 5, 0, &plan, NULL), BLKC_ERR_COMPILE,
                   "mesh(dp = 2, tp = 2) of task 'mlp' has 4 ranks, but it runs on 16");
        blkc_task_destroy(t);
        /* a run binds sizes from the tensors: mesh sizes come from
         * constants, set by defines (a 2 x 2 mesh on 4 ranks) */
        const char pre[] = "const DP = 1;\nconst TP = 1;\n";
        char *src2 = malloc(sizeof pre + len);
        memcpy(src2, pre, sizeof pre - 1);
        memcpy(src2 + sizeof pre - 1, src, len + 1);
        const char *defs[] = {"DP=2", "TP=2"};
        o.defines = defs;
        o.ndefines = 2;
        to.ranks = 4;
        to.topology = NULL;
        t = NULL;
        CHECK(blkc_task_create(src2, strlen(src2), &o, "mlp", &to, &t) == BLKC_OK);
        memset(out, 0xff, sizeof(float) * T * H);
        mk(&ty, out, T, H);
        DLTensor *res[] = {&ty.t};
        CHECK(t && blkc_task_run(t, args, 3, res, 1) == BLKC_OK);
        double d = maxdiff(out, y, T * H);
        printf("mlp on mesh(dp = 2, tp = 2): max |diff| %.3g\n", d);
        CHECK(d <= 1e-3);
        blkc_task_destroy(t);
        free(src2);
        free(src);
    }

    /* errors */
    {
        blkc_task *t = NULL;
        EXPECT(blkc_task_create(mlp, mlen, NULL, "nope", NULL, &t), BLKC_ERR_NOT_FOUND,
               "no task named 'nope' in <input> (tasks: mlp)");
        CHECK(t == NULL);
        EXPECT(blkc_task_create("task t(x: f32[N]) -> f32[N] { return x + ; }", 44, NULL,
                                NULL, NULL, &t),
               BLKC_ERR_COMPILE, "error:");
        blkc_compile_options o;
        blkc_compile_options_init(&o);
        o.target = BLKC_TARGET_CUDA;
        EXPECT(blkc_task_create(mlp, mlen, &o, "mlp", NULL, &t), BLKC_ERR_UNSUPPORTED,
               "cpu ranks only");
        blkc_task_options to;
        blkc_task_options_init(&to);
        to.ranks = -2;
        EXPECT(blkc_task_create(mlp, mlen, NULL, "mlp", &to, &t), BLKC_ERR_USAGE,
               "ranks -2");

        t = make(mlp, mlen, "mlp.blk", "mlp", 4);
        if (t) {
            mk(&ty, out, T, H);
            DLTensor *res[] = {&ty.t};
            EXPECT(blkc_task_run(t, args, 2, res, 1), BLKC_ERR_USAGE,
                   "task mlp takes 3 arguments (x, w1, w2), got 2");
            /* wrong dtype */
            Tensor bad;
            mk(&bad, w1, H, F);
            bad.t.dtype.code = kDLInt;
            blkc_arg a2[3] = {args[0], args[1], args[2]};
            a2[1].v.tensor = &bad.t;
            EXPECT(blkc_task_run(t, a2, 3, res, 1), BLKC_ERR_USAGE,
                   "argument 'w1' of task mlp has dtype i32, expected f32");
            /* wrong shape: w1's H differs from x's */
            mk(&bad, w1, H / 2, F * 2);
            EXPECT(blkc_task_run(t, a2, 3, res, 1), BLKC_ERR_USAGE,
                   "argument 'w1' of task mlp: dim 0 is 8, but size H is 16");
            /* a scalar for a tensor */
            a2[1].kind = BLKC_ARG_INT;
            a2[1].v.i = 3;
            EXPECT(blkc_task_run(t, a2, 3, res, 1), BLKC_ERR_USAGE,
                   "argument 'w1' of task mlp is a tensor, got a scalar");
            /* a result of the wrong shape */
            Tensor r2;
            mk(&r2, out, T, H + 1);
            DLTensor *res2[] = {&r2.t};
            EXPECT(blkc_task_run(t, args, 3, res2, 1), BLKC_ERR_USAGE,
                   "result 'result' of task mlp: dim 1 is 17, but size H is 16");
            EXPECT(blkc_task_run(t, args, 3, NULL, 1), BLKC_ERR_USAGE, "results is NULL");
            /* F = 30 does not divide over 4 ranks */
            float *w1o = rnd(H * 30, &seed), *w2o = rnd(30 * H, &seed);
            Tensor o1, o2;
            mk(&o1, w1o, H, 30);
            mk(&o2, w2o, 30, H);
            blkc_arg a3[3] = {args[0], args[1], args[2]};
            a3[1].v.tensor = &o1.t;
            a3[2].v.tensor = &o2.t;
            EXPECT(blkc_task_run(t, a3, 3, res, 1), BLKC_ERR_COMPILE,
                   "cannot split 'w1' (f32[H=16, F=30]) along dim 1 over 4 ranks: 30 is not "
                   "divisible by 4");
            /* and the task still runs afterwards */
            CHECK(blkc_task_run(t, args, 3, res, 1) == BLKC_OK);
            CHECK(maxdiff(out, y, T * H) <= 1e-3);
            free(w1o);
            free(w2o);
            blkc_task_destroy(t);
        }
        EXPECT(blkc_task_run(NULL, args, 3, NULL, 1), BLKC_ERR_USAGE, "task is NULL");
        blkc_task_destroy(NULL);
    }

    /* a device function on 1 and 4 local ranks, each with its own arguments */
    {
        static const char *dev =
            "device ar2(x: f32[N], y: f32[N], k: f32) {\n"
            "    let s = symmetric(f32, N);\n"
            "    copy(s[0 +: N], x[0 +: N]);\n"
            "    all_reduce(s, op = sum);\n"
            "    copy(y[0 +: N], s[0 +: N]);\n"
            "}\n";
        blkc_module *m = NULL;
        blkc_kernel *k = NULL;
        CHECK(blkc_module_create(NULL, dev, strlen(dev), NULL, &m) == BLKC_OK);
        CHECK(m && blkc_module_get_kernel(m, "ar2", &k) == BLKC_OK);
        enum { N = 64, R = 4 };
        float xs[R][N], ys[R][N];
        int64_t shp[1] = {N};
        DLTensor tx4[R], ty4[R];
        blkc_arg a[R * 3];
        for (int r = 0; r < R; r++) {
            for (int i = 0; i < N; i++) {
                xs[r][i] = (float)(r + 1) * (float)i;
                ys[r][i] = -1;
            }
            DLTensor *p[2] = {&tx4[r], &ty4[r]};
            float *d[2] = {xs[r], ys[r]};
            for (int j = 0; j < 2; j++) {
                memset(p[j], 0, sizeof *p[j]);
                p[j]->data = d[j];
                p[j]->device.device_type = kDLCPU;
                p[j]->ndim = 1;
                p[j]->dtype.code = kDLFloat;
                p[j]->dtype.bits = 32;
                p[j]->dtype.lanes = 1;
                p[j]->shape = shp;
                a[r * 3 + j].kind = BLKC_ARG_TENSOR;
                a[r * 3 + j].v.tensor = p[j];
            }
            a[r * 3 + 2].kind = BLKC_ARG_FLOAT;
            a[r * 3 + 2].v.f = 1.0;
        }
        if (k) {
            CHECK(blkc_kernel_run_ranks(k, 1, a, 3, NULL) == BLKC_OK);
            int bad = 0;
            for (int i = 0; i < N; i++)
                bad += ys[0][i] != xs[0][i];
            CHECK(bad == 0);
            CHECK(blkc_kernel_run_ranks(k, R, a, 3, NULL) == BLKC_OK);
            for (int r = 0; r < R; r++)
                for (int i = 0; i < N; i++)
                    bad += ys[r][i] != 10.0f * (float)i; /* (1 + 2 + 3 + 4) * i */
            CHECK(bad == 0);
            printf("device function ar2 on 1 and %d ranks: %s\n", R, bad ? "WRONG" : "ok");
            EXPECT(blkc_kernel_run_ranks(k, R, a, 2, NULL), BLKC_ERR_USAGE,
                   "ar2 takes 3 arguments per rank, got 2");
            EXPECT(blkc_kernel_run_ranks(k, 0, a, 3, NULL), BLKC_ERR_USAGE, "nranks 0");
            blkc_arg save = a[3 + 1];
            a[3 + 1].kind = BLKC_ARG_INT;
            EXPECT(blkc_kernel_run_ranks(k, R, a, 3, NULL), BLKC_ERR_USAGE,
                   "rank 1: parameter 'y' of ar2 is a tensor, got a scalar");
            a[3 + 1] = save;
            int64_t shp2[1] = {N - 1};
            ty4[2].shape = shp2;
            EXPECT(blkc_kernel_run_ranks(k, R, a, 3, NULL), BLKC_ERR_USAGE,
                   "rank 2: tensor 'y' of ar2: dim 0 is 63, expected 64");
            ty4[2].shape = shp;
        }
        blkc_module_destroy(m);
    }

    free(mlp);
    free(two);
    free(x);
    free(w1);
    free(w2);
    free(h);
    free(y);
    free(out);
    free(out_h);
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("api_task: all checks passed\n");
    return 0;
}
