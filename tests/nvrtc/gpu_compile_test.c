/* gpu_compile_test.c — the GPU backends' compile and golden tests.
 *
 *   gpu_compile_test golden          generated text of the golden kernels
 *                                    (tests/<nvrtc|hip>/golden/NAME.<cu|hip>,
 *                                    the part after the prelude) must match;
 *                                    BLKC_UPDATE_GOLDEN=1 rewrites the files
 *   gpu_compile_test compile         every hand-built kernel (kernels.h)
 *                                    compiles: CUDA to cubin for sm_80 and
 *                                    sm_90a (dots on wgmma) and to PTX for
 *                                    compute_90 that `ptxas -arch=sm_90`
 *                                    assembles (each arch once: a cubin is
 *                                    NVRTC's PTX through its own ptxas);
 *                                    HIP to a gfx90a code object
 *   gpu_compile_test vec             the specialized forms (every IR_ASSUME_*
 *                                    fact set): goldens NAME_vec / _pipe, they
 *                                    compile, and the vendor output has the
 *                                    vector instructions (PTX ld/st.global.v4,
 *                                    cp.async; gfx90a global_load_dwordx4),
 *                                    and not under BLKC_GPU_NOVEC/NOPIPE
 *   gpu_compile_test blk FILE...     the same for every kernel of .blk files,
 *                                    through the whole pipeline (needs
 *                                    compiler/pipeline.c: BLKC_HAVE_PIPELINE)
 *   gpu_compile_test blkspec FILE... blk with every IR_ASSUME_* fact set;
 *                                    (CUDA) on sm_90a the gpu-ir's TMA ring
 *                                    loads are the CUDA C's
 *   gpu_compile_test gpuir FILE...   --emit=gpu-ir of .blk files (every fact)
 *                                    against golden BASENAME.gpuir
 *   gpu_compile_test regcheck FILE   (CUDA) examples/matmul.blk at 128x128x32,
 *                                    warps 4 and 8, stages(3): accumulator in
 *                                    registers, no ptxas spills, no shared-
 *                                    memory traffic of it in the main loop
 *   gpu_compile_test emit NAME S OUT the CUDA text after the prelude of
 *                                    hand-built kernel NAME (stages(S) if
 *                                    S > 0) with the emu harness's facts,
 *                                    honouring BLKC_GPU_NO*
 * Exit 77 (skip) when the vendor compiler is absent.
 * Built as the CUDA test by default; tests/hip defines GPU_TEST_HIP. */
#include "backends/backend.h"
#include "compiler/ir.h"
#include "nvrtc/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BLKC_SOURCE_DIR
#define BLKC_SOURCE_DIR "."
#endif

#ifdef GPU_TEST_HIP
#define BK (&bk_hip_backend)
#define TEXT_STAGE "hip"
#define GOLDEN_DIR "tests/hip/golden"
#define GOLDEN_EXT "hip"
#else
#define BK (&bk_cuda_backend)
#define TEXT_STAGE "cuda"
#define GOLDEN_DIR "tests/nvrtc/golden"
#define GOLDEN_EXT "cu"
#endif

static int failures;

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return s;
}

/* ------------------------------------------------------------ golden */

static void golden_mod(IrModule *m, const char *name);

static void golden_one(const char *name)
{
    golden_mod(k_build_one(name), name);
}

static void golden_stage(IrModule *m, const char *name, const char *stage,
                         const char *ext);

/* Compares the text of module m (freed here) with golden file `name`. */
static void golden_mod(IrModule *m, const char *name)
{
    golden_stage(m, name, TEXT_STAGE, GOLDEN_EXT);
}

/* The same for stage `stage`, golden file NAME.EXT. */
static void golden_stage(IrModule *m, const char *name, const char *stage,
                         const char *ext)
{
    DslBuf out = {0};
    char err[2048] = "";
    if (BK->emit(m, NULL, stage, &out, err, sizeof err) < 0) {
        printf("FAIL golden %s: %s\n", name, err);
        failures++;
        ir_module_free(m);
        return;
    }
    /* from the first kernel on (the C text has a prelude before it; the
     * gpu-ir starts with it) */
    const char *body = strncmp(out.data, "// kernel ", 10) ? strstr(out.data, "\n// kernel ") : NULL;
    body = body ? body + 1 : out.data;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s.%s", BLKC_SOURCE_DIR, GOLDEN_DIR, name,
             ext);
    const char *upd = getenv("BLKC_UPDATE_GOLDEN");
    if (upd && *upd == '1') {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(body, 1, strlen(body), f) != strlen(body)) {
            printf("FAIL golden %s: cannot write %s\n", name, path);
            failures++;
        } else {
            printf("updated %s\n", path);
        }
        if (f)
            fclose(f);
    } else {
        char *want = read_file(path, NULL);
        if (!want) {
            printf("FAIL golden %s: missing %s (run with BLKC_UPDATE_GOLDEN=1)\n",
                   name, path);
            failures++;
        } else if (strcmp(want, body)) {
            const char *a = want, *b = body;
            int line = 1;
            while (*a && *a == *b) {
                if (*a == '\n')
                    line++;
                a++;
                b++;
            }
            printf("FAIL golden %s: differs from %s at line %d\n", name, path, line);
            failures++;
        } else {
            printf("ok golden %s\n", name);
        }
        free(want);
    }
    dsl_buf_free(&out);
    ir_module_free(m);
}

/* ------------------------------------------------------------ compile */

static bool absent(const char *err)
{
    return strstr(err, "not found") != NULL;
}

/* Finds a tool in $PATH or under the CUDA root; returns false if none. */
static bool find_tool(const char *name, char *path, size_t n)
    __attribute__((unused));
static bool find_tool(const char *name, char *path, size_t n)
{
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"),
                           "/usr/local/cuda", "/opt/rocm"};
    const char *p = getenv("PATH");
    while (p && *p) {
        const char *c = strchr(p, ':');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        snprintf(path, n, "%.*s/%s", (int)len, p, name);
        if (len && access(path, X_OK) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    for (int i = 0; i < 4; i++) {
        if (!roots[i])
            continue;
        snprintf(path, n, "%s/bin/%s", roots[i], name);
        if (access(path, X_OK) == 0)
            return true;
    }
    return false;
}

#ifndef GPU_TEST_HIP
static void ptx_check(const char *what, const IrModule *m, const char *parch,
                      const char *sarch);
#endif

/* Returns 77 if the compiler is absent, else 0 (failures counted). */
static int compile_module(const char *what, const IrModule *m)
{
    char err[8192] = "";
#ifdef GPU_TEST_HIP
    static const char *const archs[] = {"gfx90a", NULL};
    const char *stage = "hsaco";
#else
    static const char *const archs[] = {"sm_80", "sm_90a", NULL};
    const char *stage = "cubin";
#endif
    for (int i = 0; archs[i]; i++) {
        BkOptions o = {archs[i], 3};
        DslBuf out = {0};
        int rc = BK->emit(m, &o, stage, &out, err, sizeof err);
        if (rc < 0 && absent(err)) {
            printf("skip: %s\n", err);
            dsl_buf_free(&out);
            return 77;
        }
        if (rc < 0 || out.len == 0) {
            printf("FAIL %s %s for %s: %s\n", what, stage, archs[i], err);
            failures++;
        } else {
            printf("ok %s: %s for %s, %zu bytes\n", what, stage, archs[i], out.len);
        }
        dsl_buf_free(&out);
    }
#ifndef GPU_TEST_HIP
    /* PTX for compute_90 (no wgmma), assembled by ptxas for sm_90: the PTX
     * stage, and sm_90 without the cubin compile that would repeat it */
    ptx_check(what, m, "compute_90", "sm_90");
#endif
    return 0;
}

#ifndef GPU_TEST_HIP
static void ptx_check(const char *what, const IrModule *m, const char *parch,
                      const char *sarch)
{
    char err[8192] = "";
    BkOptions o = {parch, 3};
    DslBuf ptx = {0};
    if (BK->emit(m, &o, "ptx", &ptx, err, sizeof err) < 0) {
        printf("FAIL %s ptx for %s: %s\n", what, parch, err);
        failures++;
        dsl_buf_free(&ptx);
        return;
    }
    char tool[1024];
    if (!find_tool("ptxas", tool, sizeof tool)) {
        printf("ok %s: ptx (%zu bytes; no ptxas to assemble it)\n", what, ptx.len);
        dsl_buf_free(&ptx);
        return;
    }
    char tmpl[] = "/tmp/blkc_ptx_XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0 || write(fd, ptx.data, ptx.len) != (ssize_t)ptx.len) {
        printf("FAIL %s: cannot write a temporary file\n", what);
        failures++;
    } else {
        char cmd[2300];
        snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o /dev/null 2>&1", tool, sarch,
                 tmpl);
        int rc = system(cmd), nwg = 0;
        for (const char *q = ptx.data; q && (q = strstr(q, "wgmma.mma_async")); q++)
            nwg++;
        if (rc != 0) {
            printf("FAIL %s: ptxas -arch=%s rejected the PTX (%d)\n", what, sarch, rc);
            failures++;
        } else {
            printf("ok %s: ptxas -arch=%s assembles the PTX (%d wgmma.mma_async)\n", what,
                   sarch, nwg);
        }
    }
    if (fd >= 0)
        close(fd);
    unlink(tmpl);
    dsl_buf_free(&ptx);
}
#endif

/* Compiles every kernel on its own (so one failure names its kernel). */
static int compile_each(const IrModule *m)
{
    for (int i = 0; i < m->nfuncs; i++) {
        if (m->funcs[i]->is_device)
            continue; /* device functions are not GPU kernels */
        IrModule one = *m;
        one.funcs = &m->funcs[i];
        one.nfuncs = 1;
        if (compile_module(m->funcs[i]->name, &one) == 77)
            return 77;
    }
    return 0;
}

/* The module of a .blk file (its first kernel is emitted), or NULL. */
static IrModule *blk_module(const char *path)
{
#ifdef BLKC_HAVE_PIPELINE
    size_t len;
    char *text = read_file(path, &len);
    if (!text)
        return NULL;
    DslSource src = {path, text, len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    IrModule *m = ir_compile_source(&src, &diags, NULL, 0, NULL);
    if (!m)
        printf("%s", diags.out.data ? diags.out.data : "does not compile\n");
    dsl_diags_free(&diags);
    free(text);
    return m;
#else
    (void)path;
    return NULL;
#endif
}

/* ------------------------------------------------------------ vec
 * The specialized forms: kernels built with every IR_ASSUME_* fact a launch
 * with aligned, contiguous arguments gives (what compiler/cache.c computes),
 * so loads/stores take the 128-bit vector form and the dot loop of
 * matmul_f16 (stages(3)) the cp.async pipeline. */

/* Every fact: 16-byte aligned data, unit inner stride, outer strides and
 * symbolic extents multiples of 16. */
static void assume_all(IrModule *m)
{
    for (int i = 0; i < m->nfuncs; i++)
        for (int p = 0; p < m->funcs[i]->nparams; p++) {
            IrParam *q = &m->funcs[i]->params[p];
            if (q->kind != PK_TENSOR)
                continue;
            q->assume = IR_ASSUME_ALIGN16 | IR_ASSUME_UNIT_INNER;
            for (int d = 0; d < q->rank; d++) {
                if (d < q->rank - 1)
                    q->assume |= IR_ASSUME_STRIDE16(d);
                if (q->dims[d] < 0)
                    q->assume |= IR_ASSUME_DIM16(d);
            }
        }
}

static IrModule *build_spec(const char *name, int stages)
{
    IrModule *m = k_build_one(name);
    assume_all(m);
    if (stages)
        m->funcs[0]->stages = stages;
    return m;
}

/* The text of stage `stage` for arch of module m, or NULL (skip/fail set). */
static char *emit_text(const IrModule *m, const char *arch, const char *stage,
                       size_t *len, int *skip)
{
    BkOptions o = {arch, 3};
    DslBuf out = {0};
    char err[8192] = "";
    if (BK->emit(m, &o, stage, &out, err, sizeof err) < 0) {
        if (absent(err)) {
            printf("skip: %s\n", err);
            *skip = 1;
        } else {
            printf("FAIL %s for %s: %s\n", stage, arch, err);
            failures++;
        }
        dsl_buf_free(&out);
        return NULL;
    }
    *len = out.len;
    return out.data; /* DslBuf data is malloc'd */
}

/* Whether the n bytes of text t contain s (binary-safe). */
static bool has(const char *t, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(t + i, s, k))
            return true;
    return false;
}

static void expect(const char *what, const char *t, size_t n, const char *s,
                   bool want)
{
    if (has(t, n, s) == want) {
        printf("ok %s: %s'%s'\n", what, want ? "" : "no ", s);
    } else {
        printf("FAIL %s: %s'%s' expected\n", what, want ? "" : "no ", s);
        failures++;
    }
}

#ifdef GPU_TEST_HIP
/* Disassembles a gfx90a code object with llvm-objdump into a malloc'd
 * text, or NULL when there is no llvm-objdump. */
static char *disasm(const char *obj, size_t n, size_t *len)
{
    char tool[1024];
    if (!find_tool("llvm-objdump", tool, sizeof tool) &&
        access(strcpy(tool, "/opt/rocm/llvm/bin/llvm-objdump"), X_OK) != 0)
        return NULL;
    char in[] = "/tmp/blkc_hsaco_XXXXXX";
    int fd = mkstemp(in);
    if (fd < 0)
        return NULL;
    bool okw = write(fd, obj, n) == (ssize_t)n;
    close(fd);
    char cmd[2300], out[64];
    snprintf(out, sizeof out, "%s.s", in);
    snprintf(cmd, sizeof cmd, "'%s' -d --triple=amdgcn-amd-amdhsa --mcpu=gfx90a '%s' > '%s' 2>/dev/null",
             tool, in, out);
    char *t = okw && system(cmd) == 0 ? read_file(out, len) : NULL;
    unlink(in);
    unlink(out);
    return t;
}
#endif

/* Golden text, compiles, and the vector / cp.async instructions in the
 * vendor compiler's output, with and without BLKC_GPU_NOVEC/NOPIPE. */
static int vec_mode(void)
{
    golden_mod(build_spec("vector_add", 0), "vector_add_vec");
    golden_mod(build_spec("matmul_f16", 3), "matmul_f16_pipe");
    golden_mod(build_spec("softmax", 0), "softmax_vec");
    static const char *const names[] = {"vector_add", "matmul_f16", "softmax"};
    int skip = 0;
    for (int i = 0; i < 3 && !skip; i++) {
        IrModule *m = build_spec(names[i], i == 1 ? 3 : 0);
        if (compile_module(names[i], m) == 77)
            skip = 1;
        ir_module_free(m);
    }
    if (skip)
        return 77;
    for (int mode = 0; mode < 3; mode++) { /* default, NOPIPE, NOVEC */
        if (mode == 1)
            setenv("BLKC_GPU_NOPIPE", "1", 1);
        if (mode == 2)
            setenv("BLKC_GPU_NOVEC", "1", 1);
        const char *tag[] = {"spec", "spec+NOPIPE", "spec+NOVEC"};
        for (int i = 0; i < 2; i++) {
            IrModule *m = build_spec(names[i], i == 1 ? 3 : 0);
            char what[128];
            snprintf(what, sizeof what, "%s %s", names[i], tag[mode]);
            size_t n = 0;
#ifdef GPU_TEST_HIP
            size_t cn = 0;
            char *obj = emit_text(m, "gfx90a", "hsaco", &cn, &skip);
            char *t = obj ? disasm(obj, cn, &n) : NULL;
            free(obj);
            if (obj && !t)
                printf("ok %s: (no llvm-objdump to read the code object)\n", what);
            if (t) {
                expect(what, t, n, "global_load_dwordx4", mode != 2);
                /* matmul_f16 stores its accumulator straight from the MFMA
                 * registers (element stores: a lane's registers are rows of
                 * one column), never through 16-byte vectors */
                expect(what, t, n, "global_store_dwordx4", mode != 2 && i == 0);
            }
#else
            char *t = emit_text(m, "compute_80", "ptx", &n, &skip);
            if (t) {
                /* matmul_f16's loads all become cp.async when pipelined */
                expect(what, t, n, "ld.global.v4", mode == 1 || (mode == 0 && i == 0));
                /* matmul_f16 stores its accumulator straight from the mma
                 * registers: 4-byte f16x2 pairs, not 16-byte vectors */
                expect(what, t, n, "st.global.v4", mode != 2 && i == 0);
                if (i == 1)
                    expect(what, t, n, "cp.async.cg.shared.global", mode == 0);
                if (i == 1 && mode == 0)
                    expect(what, t, n, "cp.async.wait_group", true);
            }
#endif
            free(t);
            ir_module_free(m);
        }
    }
    unsetenv("BLKC_GPU_NOPIPE");
    unsetenv("BLKC_GPU_NOVEC");
    return skip ? 77 : 0;
}

#ifdef BLKC_HAVE_PIPELINE
static bool spec_all; /* `blkspec`: with every specialization fact */

#ifndef GPU_TEST_HIP
/* On sm_90a the gpu-ir must say which loads TMA fills (gpu_tma.c,
 * gpu_persist.c): as many `TMA ring of` and `TMA per tile` loads as the
 * kernels of the CUDA C take tensor maps of loads (flash attention's K
 * and V: rank-3 tensor maps, and its q on the persistent grid). */
static void tma_agree(const IrModule *m, const char *path)
{
    BkOptions o = {"sm_90a", 3};
    DslBuf ir = {0}, c = {0};
    char err[2048] = "";
    if (BK->emit(m, &o, "gpu-ir", &ir, err, sizeof err) < 0 ||
        BK->emit(m, &o, TEXT_STAGE, &c, err, sizeof err) < 0) {
        printf("FAIL %s sm_90a: %s\n", path, err);
        failures++;
    } else {
        int ni = 0, nc = 0;
        for (const char *q = ir.data; (q = strstr(q, ", TMA ring of ")); q++)
            ni++;
        for (const char *q = ir.data; (q = strstr(q, ", TMA per tile ")); q++)
            ni++;
        for (const char *q = c.data; (q = strstr(q, "/* the tensor map of v")); q++)
            nc++;
        if (ni != nc) {
            printf("FAIL %s sm_90a: gpu-ir has %d TMA ring load(s), the CUDA C %d\n", path, ni,
                   nc);
            failures++;
        } else {
            printf("%s sm_90a: %d TMA ring load(s) in gpu-ir and CUDA C\n", path, ni);
        }
    }
    dsl_buf_free(&ir);
    dsl_buf_free(&c);
}
#endif

static int compile_blk(const char *path)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        printf("FAIL %s: cannot read\n", path);
        failures++;
        return 0;
    }
    DslSource src = {path, text, len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    IrModule *m = ir_compile_source(&src, &diags, NULL, 0, NULL);
    int rc = 0;
    if (m && spec_all)
        assume_all(m);
    if (!m) {
        printf("FAIL %s: does not compile:\n%s\n", path,
               diags.out.data ? diags.out.data : "");
        failures++;
    } else {
        if (spec_all) { /* how many ops took the specialized forms */
            DslBuf out = {0};
            char err[2048] = "";
            int nv = 0, np = 0;
            if (BK->emit(m, NULL, TEXT_STAGE, &out, err, sizeof err) == 0) {
                for (const char *q = out.data; (q = strstr(q, "(16-byte) vectors")); q++)
                    nv++;
                for (const char *q = out.data; (q = strstr(q, "cp.async ring slot of")); q++)
                    np++;
            }
            printf("%s: %d vector loop(s), %d cp.async ring load(s)\n", path, nv, np);
            dsl_buf_free(&out);
#ifndef GPU_TEST_HIP
            tma_agree(m, path);
#endif
        }
        rc = compile_each(m);
        ir_module_free(m);
    }
    dsl_diags_free(&diags);
    free(text);
    return rc;
}
#endif

#ifdef BLKC_HAVE_PIPELINE
/* ------------------------------------------------------------ gpuir
 * `gpuir FILE...`: the --emit=gpu-ir text (Core IR with the layouts the
 * backend chose) of each .blk file with every specialization fact, against
 * golden GOLDEN_DIR/BASENAME.gpuir. */
static IrModule *blk_spec_module(const char *path, const char *const *defs, int ndefs)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        printf("FAIL %s: cannot read\n", path);
        failures++;
        return NULL;
    }
    DslSource src = {path, text, len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    IrModule *m = ir_compile_source(&src, &diags, defs, ndefs, NULL);
    if (!m) {
        printf("FAIL %s: does not compile:\n%s\n", path, diags.out.data ? diags.out.data : "");
        failures++;
    } else {
        assume_all(m);
    }
    dsl_diags_free(&diags);
    free(text);
    return m;
}

/* The number of occurrences of `pat` in t, and the sorted list of the
 * integers that follow each (at most 64). */
static int count_after(const char *t, const char *pat, int *nums)
{
    int n = 0;
    for (const char *q = t; (q = strstr(q, pat)); q += strlen(pat))
        if (n < 64)
            nums[n++] = atoi(q + strlen(pat));
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && nums[j - 1] > nums[j]; j--) {
            int x = nums[j];
            nums[j] = nums[j - 1];
            nums[j - 1] = x;
        }
    return n;
}

/* The gpu-ir must describe the code: the blocked run widths and the slice
 * tiles it reports are the ones the CUDA / HIP C of the same module
 * declares. */
static void layouts_agree(const IrModule *m, const char *name)
{
    DslBuf ir = {0}, c = {0};
    char err[2048] = "";
    if (BK->emit(m, NULL, "gpu-ir", &ir, err, sizeof err) < 0 ||
        BK->emit(m, NULL, TEXT_STAGE, &c, err, sizeof err) < 0) {
        printf("FAIL layouts %s: %s\n", name, err);
        failures++;
    } else {
        int a[64], b[64], sa[64], sb[64];
        int na = count_after(ir.data, "blocked(runs of ", a);
        int nb = count_after(c.data, "blocked: registers, runs of ", b);
        int ns = count_after(ir.data, "@ slice(of ", sa);
        int nc = count_after(c.data, ", slice: ", sb);
        bool same = na == nb && ns == nc;
        for (int i = 0; same && i < na && i < 64; i++)
            same = a[i] == b[i];
        if (!same) {
            printf("FAIL layouts %s: gpu-ir has %d blocked tiles (runs of %d..) and %d slices, "
                   "the %s %d (runs of %d..) and %d\n", name, na, na ? a[0] : 0, ns, TEXT_STAGE,
                   nb, nb ? b[0] : 0, nc);
            failures++;
        } else {
            printf("ok layouts %s: %d blocked tiles, %d slices in both\n", name, na, ns);
        }
    }
    dsl_buf_free(&ir);
    dsl_buf_free(&c);
}

static void gpuir_one(const char *path)
{
    IrModule *m = blk_spec_module(path, NULL, 0);
    if (!m)
        return;
    const char *b = strrchr(path, '/');
    char name[256];
    snprintf(name, sizeof name, "%s", b ? b + 1 : path);
    char *dot = strstr(name, ".blk");
    if (dot)
        *dot = 0;
    layouts_agree(m, name);
    golden_stage(m, name, "gpu-ir", "gpuir");
}

#ifndef GPU_TEST_HIP
/* ------------------------------------------------------------ regcheck
 * `regcheck MATMUL.blk`: examples/matmul.blk at BM = BN = 128, BK = 32,
 * stages(3), warps 4 and 8, every specialization fact, through PTX for
 * compute_80: the accumulator is in the mma layout (gpu-ir), `ptxas -v
 * -arch=sm_80` reports no spills, and the main loop of the PTX (the back
 * edge around the mma.sync instructions) has no st.shared and no f32
 * ld.shared (operands arrive by cp.async and leave by ldmatrix; the
 * accumulator never touches shared memory). Under BLKC_GPU_SMEM=1 (the old
 * path) the same loop must have st.shared: the check can fail. */

/* The number of lines of PTX text t in the innermost back-edge loop that
 * holds every mma.sync, that contain `what`; -1 if no such loop. */
static int loop_count(const char *t, const char *what, int *nmma)
{
    /* lines */
    int nl = 0;
    for (const char *q = t; *q; q++)
        nl += *q == '\n';
    const char **ln = malloc(sizeof(char *) * (size_t)(nl + 2));
    int n = 0;
    for (const char *q = t; q && *q; ) {
        ln[n++] = q;
        q = strchr(q, '\n');
        if (q)
            q++;
    }
    int first = -1, last = -1;
    *nmma = 0;
    for (int i = 0; i < n; i++) {
        const char *e = strchr(ln[i], '\n');
        size_t k = e ? (size_t)(e - ln[i]) : strlen(ln[i]);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(k < 511 ? k : 511), ln[i]);
        if (strstr(line, "mma.sync")) {
            if (first < 0)
                first = i;
            last = i;
            ++*nmma;
        }
    }
    int best_lo = -1, best_hi = -1;
    for (int j = 0; j < n && first >= 0; j++) {
        char line[512];
        const char *e = strchr(ln[j], '\n');
        size_t k = e ? (size_t)(e - ln[j]) : strlen(ln[j]);
        snprintf(line, sizeof line, "%.*s", (int)(k < 511 ? k : 511), ln[j]);
        const char *br = strstr(line, "bra");
        if (!br || j < last)
            continue;
        const char *lab = strchr(br, '$');
        if (!lab)
            continue;
        char target[128];
        size_t tl = strcspn(lab, ";, \t");
        snprintf(target, sizeof target, "%.*s:", (int)(tl < 120 ? tl : 120), lab);
        for (int i = 0; i <= first; i++)
            if (!strncmp(ln[i], target, strlen(target)) &&
                (best_lo < 0 || i > best_lo || (i == best_lo && j < best_hi))) {
                best_lo = i;
                best_hi = j;
            }
    }
    int c = -1;
    if (best_lo >= 0) {
        c = 0;
        for (int i = best_lo; i <= best_hi; i++) {
            const char *e = strchr(ln[i], '\n');
            size_t k = e ? (size_t)(e - ln[i]) : strlen(ln[i]);
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(k < 511 ? k : 511), ln[i]);
            if (strstr(line, what))
                c++;
        }
    }
    free(ln);
    return c;
}

static int regcheck_one(const char *path, int warps, bool smem)
{
    static const char *const defs[] = {"BM=128", "BN=128", "BK=32"};
    IrModule *m = blk_spec_module(path, defs, 3);
    if (!m)
        return 0;
    m->funcs[0]->warps = warps;
    m->funcs[0]->stages = 3;
    char what[128];
    snprintf(what, sizeof what, "matmul 128x128x32 warps(%d) stages(3)%s", warps,
             smem ? " BLKC_GPU_SMEM" : "");
    size_t n = 0;
    int skip = 0;
    char *ir = emit_text(m, "compute_80", "gpu-ir", &n, &skip);
    if (ir)
        expect(what, ir, n, "var acc : f32[128, 128] @ mma(", !smem);
    free(ir);
    char *ptx = emit_text(m, "compute_80", "ptx", &n, &skip);
    ir_module_free(m);
    if (!ptx)
        return skip ? 77 : 0;
    int nmma = 0;
    int st = loop_count(ptx, "st.shared", &nmma);
    int ldf = loop_count(ptx, "ld.shared.f32", &nmma) +
              loop_count(ptx, "ld.shared.v2.f32", &nmma) +
              loop_count(ptx, "ld.shared.v4.f32", &nmma);
    int cpa = loop_count(ptx, "cp.async.cg.shared.global", &nmma);
    int ldm = loop_count(ptx, "ldmatrix", &nmma);
    if (st < 0) {
        printf("FAIL %s: no loop around the %d mma.sync of the PTX\n", what, nmma);
        failures++;
    } else if (!smem && (st != 0 || ldf != 0 || cpa <= 0 || ldm <= 0)) {
        printf("FAIL %s: main loop has %d st.shared, %d f32 ld.shared, %d cp.async, "
               "%d ldmatrix (want 0, 0, > 0, > 0)\n", what, st, ldf, cpa, ldm);
        failures++;
    } else if (smem && st == 0) {
        printf("FAIL %s: main loop has no st.shared on the all-shared path\n", what);
        failures++;
    } else {
        printf("ok %s: main loop: %d mma.sync, %d ldmatrix, %d cp.async, %d st.shared, "
               "%d f32 ld.shared\n", what, nmma, ldm, cpa, st, ldf);
    }
    char tool[1024];
    if (smem || !find_tool("ptxas", tool, sizeof tool)) {
        free(ptx);
        return 0;
    }
    char tmpl[] = "/tmp/blkc_ptx_XXXXXX";
    int fd = mkstemp(tmpl);
    bool okw = fd >= 0 && write(fd, ptx, strlen(ptx)) == (ssize_t)strlen(ptx);
    if (fd >= 0)
        close(fd);
    free(ptx);
    char cmd[2300], outp[64];
    snprintf(outp, sizeof outp, "%s.log", tmpl);
    snprintf(cmd, sizeof cmd, "'%s' -v -arch=sm_80 '%s' -o /dev/null > '%s' 2>&1", tool,
             tmpl, outp);
    if (!okw || system(cmd) != 0) {
        printf("FAIL %s: ptxas -v -arch=sm_80 failed\n", what);
        failures++;
    } else {
        char *log = read_file(outp, NULL);
        const char *sp = log ? strstr(log, "bytes spill stores") : NULL;
        const char *rg = log ? strstr(log, "Used ") : NULL;
        long stores = -1, loads = -1, nreg = -1;
        if (sp) {
            const char *b = sp;
            while (b > log && b[-1] != '\n' && b[-1] != ',')
                b--;
            stores = strtol(b, NULL, 10);
            const char *l = strstr(sp, ", ");
            if (l)
                loads = strtol(l + 2, NULL, 10);
        }
        if (rg)
            nreg = strtol(rg + 5, NULL, 10);
        if (stores != 0 || loads != 0) {
            printf("FAIL %s: ptxas -v sm_80: %ld bytes spill stores, %ld bytes spill loads\n%s",
                   what, stores, loads, log ? log : "");
            failures++;
        } else {
            printf("ok %s: ptxas -v sm_80: %ld registers, 0 bytes spill stores, "
                   "0 bytes spill loads\n", what, nreg);
        }
        free(log);
    }
    unlink(tmpl);
    unlink(outp);
    return 0;
}
#endif
#endif

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "compile";
    if (!strcmp(mode, "emit") && argc == 5) { /* emu.sh: honours BLKC_GPU_NO* */
        IrModule *m = strstr(argv[2], ".blk") ? blk_module(argv[2]) : k_build_one(argv[2]);
        if (!m)
            return 2;
        /* the facts of the emu harness's arguments: aligned, contiguous,
         * outer strides multiples of 16 (no DIM16: its sizes are not) */
        for (int p = 0; p < m->funcs[0]->nparams; p++) {
            IrParam *q = &m->funcs[0]->params[p];
            q->assume = IR_ASSUME_ALIGN16 | IR_ASSUME_UNIT_INNER;
            for (int d = 0; d + 1 < q->rank; d++)
                q->assume |= IR_ASSUME_STRIDE16(d);
        }
        if (atoi(argv[3]) > 0)
            m->funcs[0]->stages = atoi(argv[3]);
        DslBuf out = {0};
        char err[2048] = "";
        int rc = BK->emit(m, NULL, TEXT_STAGE, &out, err, sizeof err);
        const char *body = rc == 0 ? strstr(out.data, "\n// kernel ") : NULL;
        FILE *f = body ? fopen(argv[4], "wb") : NULL;
        if (!f || fputs(body + 1, f) < 0) {
            printf("FAIL emit %s: %s\n", argv[2], err);
            rc = -1;
        }
        if (f)
            fclose(f);
        dsl_buf_free(&out);
        ir_module_free(m);
        return rc ? 1 : 0;
    }
    /* goldens and compiles are of the default paths unless a mode says */
    unsetenv("BLKC_GPU_NOVEC");
    unsetenv("BLKC_GPU_NOPIPE");
    if (!strcmp(mode, "golden")) {
        unsetenv("BLKC_GPU_NOSYNCELIM");
        golden_one("vector_add");
        golden_one("softmax");
        golden_one("matmul_f16");
    } else if (!strcmp(mode, "compile")) {
        IrModule *m = k_build_all();
        int rc = compile_each(m);
        if (rc == 0) /* the whole module as one translation unit too */
            rc = compile_module("(all kernels)", m);
        ir_module_free(m);
        if (rc == 77)
            return 77;
    } else if (!strcmp(mode, "vec")) {
        unsetenv("BLKC_GPU_NOSYNCELIM");
        if (vec_mode() == 77)
            return 77;
    } else if (!strcmp(mode, "blk") || !strcmp(mode, "blkspec")) {
#ifdef BLKC_HAVE_PIPELINE
        spec_all = !strcmp(mode, "blkspec");
        for (int i = 2; i < argc; i++)
            if (compile_blk(argv[i]) == 77)
                return 77;
#else
        printf("skip: built without compiler/pipeline.c (BLKC_HAVE_PIPELINE)\n");
        return 77;
#endif
    } else if (!strcmp(mode, "gpuir") || !strcmp(mode, "regcheck")) {
#ifdef BLKC_HAVE_PIPELINE
        unsetenv("BLKC_GPU_NOSYNCELIM");
        unsetenv("BLKC_GPU_SMEM");
        for (int i = 2; i < argc; i++) {
            if (mode[0] == 'g') {
                gpuir_one(argv[i]);
                continue;
            }
#ifndef GPU_TEST_HIP
            for (int w = 4; w <= 8; w += 4)
                if (regcheck_one(argv[i], w, false) == 77)
                    return 77;
            setenv("BLKC_GPU_SMEM", "1", 1);
            if (regcheck_one(argv[i], 4, true) == 77)
                return 77;
            unsetenv("BLKC_GPU_SMEM");
#endif
        }
#else
        printf("skip: built without compiler/pipeline.c (BLKC_HAVE_PIPELINE)\n");
        return 77;
#endif
    } else if (!strcmp(mode, "print")) { /* debugging aid: dump the text */
        IrModule *m = k_build_all();
        DslBuf out = {0};
        char err[2048] = "";
        if (BK->emit(m, NULL, TEXT_STAGE, &out, err, sizeof err) < 0)
            printf("error: %s\n", err);
        else
            fputs(out.data, stdout);
        dsl_buf_free(&out);
        ir_module_free(m);
        return 0;
    } else {
        fprintf(stderr, "usage: %s golden|vec|compile|blk FILE...|blkspec FILE...|"
                "gpuir FILE...|regcheck FILE|print\n",
                argv[0]);
        return 2;
    }
    printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
