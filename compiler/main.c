/* main.c — the `blkc` command line: check, compile (print or write one
 * stage), run (bind .npy tensors and scalars, launch on the CPU, write
 * results), plan. The contract is the spec's CLI.md; docs/cli.md has the
 * details. Exit status: 0 ok, 1 compile errors, 2 usage errors, 3 runtime
 * errors (a one-line `blkc: error: ...`). */
#include "../backends/backend.h"
#include "../runtime/rt.h"
#include "ir.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BLKC_VERSION_STRING
#define BLKC_VERSION_STRING "0.1.0"
#endif

enum { X_OK = 0, X_COMPILE = 1, X_USAGE = 2, X_RUNTIME = 3 };

typedef struct OutSpec {
    char *name, *path;           /* --out NAME=PATH (points into argv) */
} OutSpec;

/* Everything the command line said. */
typedef struct Cli {
    const char *cmd;             /* check / compile / run / plan */
    const char *file;            /* FILE.blk */
    const char *target;          /* --target (NULL = not given) */
    const char *arch;            /* --arch */
    const char *emit;            /* --emit (NULL = default stage) */
    const char *entry;           /* --entry */
    const char *out_path;        /* -o */
    const char *device;          /* --device */
    const char **defines;        /* -D NAME=VALUE */
    int ndefines;
    char **args;                 /* run/plan: NAME=VALUE / NAME=@PATH */
    int nargs;
    OutSpec *outs;               /* --out */
    int nouts;
    int ranks;                   /* --ranks */
    bool random;                 /* --random */
    uint64_t seed;               /* --seed */
    int bench;                   /* --bench (0 = none) */
    int64_t grid[3];             /* --grid (all 0 = the kernel's) */
} Cli;

static Cli cli;

/* What a command allocates lives here, reachable until exit, so that an
 * early exit (die) is not a leak under LeakSanitizer. */
static struct {
    char *src;                   /* source text */
    IrModule *mod;               /* compiled module */
    DslArena arena;              /* --emit=ast */
    DslBuf out;                  /* emitted stage */
    struct PArg *pargs;          /* run: per parameter */
    blkc_arg *args;              /* run: launch arguments */
    BkCpuModule *cm;             /* run: JIT'd code */
    double *times;               /* run: --bench */
} g;

/* ------------------------------------------------------------ messages */

static int die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("blkc: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (code == X_USAGE)
        fprintf(stderr, " (see 'blkc %s%s--help')", cli.cmd ? cli.cmd : "",
                cli.cmd ? " " : "");
    fputc('\n', stderr);
    exit(code);
}

static const char usage_all[] =
    "usage: blkc COMMAND FILE.blk [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  check    parse and check a program; print diagnostics only\n"
    "  compile  print or write one compilation stage\n"
    "  run      compile and run one kernel on the CPU\n"
    "  plan     show a task's sharding and communication plan\n"
    "\n"
    "  blkc --version | --help | COMMAND --help\n"
    "exit status: 0 ok, 1 compile errors, 2 usage errors, 3 runtime errors\n";

static const char *command_usage(const char *cmd)
{
    if (strcmp(cmd, "check") == 0)
        return "usage: blkc check FILE.blk [-D NAME=VALUE]...\n"
               "  Parse and check FILE.blk; print diagnostics only.\n"
               "  -D NAME=VALUE   override a const or compile-time parameter\n";
    if (strcmp(cmd, "compile") == 0)
        return "usage: blkc compile FILE.blk [--target=cpu|cuda|hip] [--arch=ARCH]\n"
               "                    [--emit=STAGE] [--entry=NAME] [-D NAME=VALUE]... [-o OUT]\n"
               "  --emit=STAGE    ast, core; cpu: llvm, llvm-unopt, asm, obj;\n"
               "                  cuda: cuda, ptx, cubin; hip: hip, hsaco\n"
               "                  (default: the target's loadable binary)\n"
               "  --target=T      cpu (default), cuda or hip; a stage that only\n"
               "                  one target has selects it\n"
               "  --arch=ARCH     sm_80, sm_90, gfx90a, ... (default: host/default)\n"
               "  --entry=NAME    only this kernel\n"
               "  -o OUT          write to OUT; '-' or none prints text stages\n";
    if (strcmp(cmd, "run") == 0)
        return "usage: blkc run FILE.blk [--entry=NAME] [--device=cpu|cuda[:N]|hip[:N]]\n"
               "                [--ranks=N] [-D NAME=VALUE]... [ARG]... [--out NAME=PATH.npy]...\n"
               "                [--random] [--seed=S] [--bench=N] [--grid=X[,Y[,Z]]]\n"
               "  NAME=VALUE      a scalar parameter or a symbolic size\n"
               "  NAME=@PATH.npy  a tensor parameter (its shape binds sizes)\n"
               "  --out NAME=PATH.npy  write that tensor after the run\n"
               "  --random        fill tensors not given uniformly in [-1, 1)\n"
               "                  (ints in [-4, 4), unsigned in [0, 8)) instead of zeros\n"
               "  --seed=S        seed of --random (default 0)\n"
               "  --bench=N       run N more times after a warm-up; print min/median\n"
               "  --grid=X,Y,Z    override the kernel's grid\n";
    if (strcmp(cmd, "plan") == 0)
        return "usage: blkc plan FILE.blk --entry=NAME --ranks=N [--topology=PRESET|FILE]\n"
               "                 [--json] [ARG]...\n"
               "  Print a task's shardings, communication decisions and costs.\n";
    return NULL;
}

/* ------------------------------------------------------------ parsing */

static bool is_ident(const char *s, size_t n)
{
    if (n == 0 || !(s[0] == '_' || ((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z')))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
              ((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z')))
            return false;
    return true;
}

static bool parse_i64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 0);
    if (!*s || *end || errno)
        return false;
    *v = x;
    return true;
}

static bool parse_f64(const char *s, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (!*s || *end)
        return false;
    *v = x;
    return true;
}

static void check_define(const char *d)
{
    const char *eq = strchr(d, '=');
    int64_t i;
    double f;
    if (!eq || !is_ident(d, (size_t)(eq - d)) ||
        !(parse_i64(eq + 1, &i) || parse_f64(eq + 1, &f) ||
          strcmp(eq + 1, "true") == 0 || strcmp(eq + 1, "false") == 0))
        die(X_USAGE, "bad -D '%s': expected NAME=VALUE with an integer, float "
            "or bool VALUE", d);
}

static void parse_grid(const char *s)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int64_t v;
        if (n >= 3 || !parse_i64(t, &v) || v < 1 || v > INT32_MAX)
            n = 4;
        else
            cli.grid[n++] = v;
    }
    if (n < 1 || n > 3 || !s[0] || s[0] == ',' || s[strlen(s) - 1] == ',' ||
        strstr(s, ",,"))
        die(X_USAGE, "bad --grid '%s': expected X[,Y[,Z]] with positive "
            "integers", s);
    for (int a = n; a < 3; a++)
        cli.grid[a] = 1;
}

static void check_device(const char *d)
{
    const char *rest = strncmp(d, "cuda", 4) == 0 ? d + 4
                     : strncmp(d, "hip", 3) == 0 ? d + 3 : NULL;
    if (strcmp(d, "cpu") == 0)
        return;
    int64_t n;
    if (!rest || !(*rest == 0 || (*rest == ':' && parse_i64(rest + 1, &n) &&
                                  n >= 0 && rest[1] >= '0' && rest[1] <= '9')))
        die(X_USAGE, "bad --device '%s': expected cpu, cuda[:N] or hip[:N]", d);
}

/* Option table: name, takes a value, commands it belongs to. */
enum { C_CHECK = 1, C_COMPILE = 2, C_RUN = 4, C_PLAN = 8 };
static const struct {
    const char *name;
    bool value;
    int cmds;
} options[] = {
    {"-D", true, C_CHECK | C_COMPILE | C_RUN},
    {"-o", true, C_COMPILE},
    {"--target", true, C_COMPILE},
    {"--arch", true, C_COMPILE},
    {"--emit", true, C_COMPILE},
    {"--entry", true, C_COMPILE | C_RUN | C_PLAN},
    {"--device", true, C_RUN},
    {"--ranks", true, C_RUN | C_PLAN},
    {"--out", true, C_RUN},
    {"--random", false, C_RUN},
    {"--seed", true, C_RUN},
    {"--bench", true, C_RUN},
    {"--grid", true, C_RUN},
    {"--topology", true, C_PLAN},
    {"--json", false, C_PLAN},
};

static void set_option(const char *name, char *val)
{
    int64_t v;
    if (strcmp(name, "-D") == 0) {
        check_define(val);
        cli.defines[cli.ndefines++] = val;
    } else if (strcmp(name, "-o") == 0) {
        cli.out_path = val;
    } else if (strcmp(name, "--target") == 0) {
        if (strcmp(val, "cpu") && strcmp(val, "cuda") && strcmp(val, "hip"))
            die(X_USAGE, "bad --target '%s': expected cpu, cuda or hip", val);
        cli.target = val;
    } else if (strcmp(name, "--arch") == 0) {
        cli.arch = val;
    } else if (strcmp(name, "--emit") == 0) {
        cli.emit = val;
    } else if (strcmp(name, "--entry") == 0) {
        if (!is_ident(val, strlen(val)))
            die(X_USAGE, "bad --entry '%s'", val);
        cli.entry = val;
    } else if (strcmp(name, "--device") == 0) {
        check_device(val);
        cli.device = val;
    } else if (strcmp(name, "--ranks") == 0) {
        if (!parse_i64(val, &v) || v < 1 || v > 65536)
            die(X_USAGE, "bad --ranks '%s': expected a positive integer", val);
        cli.ranks = (int)v;
    } else if (strcmp(name, "--out") == 0) {
        char *eq = strchr(val, '=');
        if (!eq || !is_ident(val, (size_t)(eq - val)) || !eq[1])
            die(X_USAGE, "bad --out '%s': expected NAME=PATH.npy", val);
        *eq = 0;
        cli.outs[cli.nouts++] = (OutSpec){val, eq + 1};
    } else if (strcmp(name, "--random") == 0) {
        cli.random = true;
    } else if (strcmp(name, "--seed") == 0) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(val, &end, 0);
        if (!*val || *end || errno || val[0] == '-')
            die(X_USAGE, "bad --seed '%s': expected a non-negative integer", val);
        cli.seed = s;
    } else if (strcmp(name, "--bench") == 0) {
        if (!parse_i64(val, &v) || v < 1 || v > 1000000)
            die(X_USAGE, "bad --bench '%s': expected a positive integer", val);
        cli.bench = (int)v;
    } else if (strcmp(name, "--grid") == 0) {
        parse_grid(val);
    }
    /* --topology, --json: accepted for plan */
}

static void parse_args(int argc, char **argv)
{
    int mask = strcmp(cli.cmd, "check") == 0 ? C_CHECK
             : strcmp(cli.cmd, "compile") == 0 ? C_COMPILE
             : strcmp(cli.cmd, "run") == 0 ? C_RUN : C_PLAN;
    cli.defines = calloc((size_t)argc, sizeof *cli.defines);
    cli.args = calloc((size_t)argc, sizeof *cli.args);
    cli.outs = calloc((size_t)argc, sizeof *cli.outs);
    if (!cli.defines || !cli.args || !cli.outs)
        die(X_RUNTIME, "out of memory");
    cli.ranks = 1;
    bool only_pos = false;
    for (int i = 2; i < argc; i++) {
        char *a = argv[i];
        if (!only_pos && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            fputs(command_usage(cli.cmd), stdout);
            exit(X_OK);
        }
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = true;
            continue;
        }
        if (!only_pos && a[0] == '-' && a[1]) {
            /* --name=value, --name value, -Dvalue, -D value, -ovalue, -o value */
            char name[64];
            char *val = NULL;
            bool dash2 = a[1] == '-';
            if (dash2) {
                char *eq = strchr(a, '=');
                size_t n = eq ? (size_t)(eq - a) : strlen(a);
                snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), a);
                if (eq)
                    val = eq + 1;
            } else {
                snprintf(name, sizeof name, "-%c", a[1]);
                if (a[2])
                    val = a + 2;
            }
            int k = -1;
            for (size_t j = 0; j < sizeof options / sizeof *options; j++)
                if (strcmp(options[j].name, name) == 0 &&
                    (options[j].cmds & mask))
                    k = (int)j;
            if (k < 0)
                die(X_USAGE, "unknown option '%s' for '%s'", name, cli.cmd);
            if (options[k].value && !val) {
                if (i + 1 >= argc)
                    die(X_USAGE, "option %s needs a value", name);
                val = argv[++i];
            } else if (!options[k].value && val) {
                die(X_USAGE, "option %s takes no value", name);
            }
            set_option(name, val);
            continue;
        }
        if (!cli.file)
            cli.file = a;
        else if (mask & (C_RUN | C_PLAN))
            cli.args[cli.nargs++] = a;
        else
            die(X_USAGE, "unexpected argument '%s'", a);
    }
    if (!cli.file)
        die(X_USAGE, "missing FILE.blk argument");
}

/* ------------------------------------------------------------ compiling */

#define src_text g.src
static size_t src_len;

static void load_source(void)
{
    FILE *fp = fopen(cli.file, "rb");
    if (!fp)
        die(X_RUNTIME, "cannot read '%s': %s", cli.file, strerror(errno));
    size_t cap = 1 << 16;
    src_text = malloc(cap);
    for (;;) {
        if (!src_text)
            die(X_RUNTIME, "out of memory reading '%s'", cli.file);
        src_len += fread(src_text + src_len, 1, cap - src_len - 1, fp);
        if (src_len + 1 < cap)
            break;
        if (cap > DSL_MAX_SOURCE)
            die(X_RUNTIME, "'%s' is too large for a source file", cli.file);
        cap *= 2;
        src_text = realloc(src_text, cap);
    }
    if (ferror(fp))
        die(X_RUNTIME, "cannot read '%s': %s", cli.file, strerror(errno));
    fclose(fp);
    src_text[src_len] = 0;
}

/* Compile to Core IR; print diagnostics (warnings too); exit 1 on errors. */
static IrModule *compile_ir(void)
{
    DslSource src = {cli.file, src_text, src_len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    IrModule *m = ir_compile_source(&src, &diags, cli.defines, cli.ndefines,
                                    NULL);
    if (diags.out.len)
        fputs(diags.out.data, stderr);
    int nerrors = diags.nerrors;
    dsl_diags_free(&diags);
    if (nerrors) {
        ir_module_free(m);
        exit(X_COMPILE);
    }
    if (!m)
        die(X_RUNTIME, "out of memory while compiling '%s'", cli.file);
    g.mod = m;
    return m;
}

static void list_kernels(const IrModule *m, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < m->nfuncs && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "",
                              m->funcs[i]->name);
}

/* Narrow m to the --entry kernel (view shares m's storage) */
static const IrModule *select_entry(const IrModule *m, IrModule *view,
                                    bool need_one)
{
    char list[1024];
    list_kernels(m, list, sizeof list);
    if (!cli.entry) {
        if (!need_one)
            return m;
        if (m->nfuncs == 0)
            die(X_USAGE, "'%s' has no kernel to run (device functions and "
                "tasks are not runnable yet)", cli.file);
        if (m->nfuncs > 1)
            die(X_USAGE, "'%s' has %d kernels (%s): choose one with "
                "--entry=NAME", cli.file, m->nfuncs, list);
    }
    int k = 0;
    if (cli.entry) {
        k = -1;
        for (int i = 0; i < m->nfuncs; i++)
            if (strcmp(m->funcs[i]->name, cli.entry) == 0)
                k = i;
        if (k < 0)
            die(X_USAGE, "no kernel named '%s' in '%s' (kernels: %s)",
                cli.entry, cli.file, m->nfuncs ? list : "none");
    }
    memset(view, 0, sizeof *view);
    view->funcs = &m->funcs[k];
    view->nfuncs = 1;
    return view;
}

static int cmd_check(void)
{
    load_source();
    ir_module_free(compile_ir());
    g.mod = NULL;
    free(g.src);
    return X_OK;
}

static bool backend_has(const BkBackend *b, const char *stage)
{
    for (int i = 0; b && b->stages && b->stages[i]; i++)
        if (strcmp(b->stages[i], stage) == 0)
            return true;
    return false;
}

static void write_output(const char *data, size_t len, bool text,
                         const char *stage)
{
    const char *path = cli.out_path;
    char defpath[4096];
    if (!path && !text) {
        /* binary stage, no -o: FILE without .blk, plus the stage's suffix */
        const char *base = strrchr(cli.file, '/');
        base = base ? base + 1 : cli.file;
        size_t n = strlen(base);
        if (n > 4 && strcmp(base + n - 4, ".blk") == 0)
            n -= 4;
        snprintf(defpath, sizeof defpath, "%.*s.%s", (int)n, base,
                 strcmp(stage, "obj") == 0 ? "o" : stage);
        path = defpath;
    }
    if (!path || strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
            die(X_RUNTIME, "cannot write to stdout");
        return;
    }
    FILE *fp = fopen(path, "wb");
    if (!fp)
        die(X_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
    bool ok = fwrite(data, 1, len, fp) == len;
    if (fclose(fp) != 0 || !ok)
        die(X_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
}

static int cmd_compile(void)
{
    static const char *const names[] = {"cpu", "cuda", "hip"};
    const char *stage = cli.emit;
    const BkBackend *be = cli.target ? bk_find(cli.target) : NULL;
    if (cli.target && !be)
        die(X_RUNTIME, "the %s backend is not built into this blkc",
            cli.target);
    if (!stage) {
        if (!be)
            be = bk_find("cpu");
        if (!be || !be->default_stage)
            die(X_RUNTIME, "no default stage for this target");
        stage = be->default_stage;
    }
    bool ir_stage = strcmp(stage, "ast") == 0 || strcmp(stage, "core") == 0;
    if (strcmp(stage, "task") == 0 || strcmp(stage, "device") == 0)
        die(X_USAGE, "--emit=%s is not available: the %s tier is not "
            "implemented yet", stage, stage);
    if (strcmp(stage, "aot") == 0)
        die(X_USAGE, "--emit=aot is not implemented yet");
    if (!ir_stage && !be) /* a stage that names its target */
        for (int i = 0; i < 3 && !be; i++)
            if (backend_has(bk_find(names[i]), stage))
                be = bk_find(names[i]);
    if (!ir_stage && !backend_has(be, stage)) {
        char list[512] = "ast, core";
        size_t n = strlen(list);
        for (int i = 0; i < 3; i++) {
            const BkBackend *b = bk_find(names[i]);
            if (cli.target && strcmp(cli.target, names[i]) != 0)
                continue;
            for (int j = 0; b && b->stages && b->stages[j] && n < sizeof list; j++)
                n += (size_t)snprintf(list + n, sizeof list - n, ", %s",
                                      b->stages[j]);
        }
        if (cli.target)
            die(X_USAGE, "no stage '%s' for target %s (stages: %s)", stage,
                cli.target, list);
        die(X_USAGE, "unknown stage '%s' (stages: %s)", stage, list);
    }
    load_source();
    bool text = true;
    if (strcmp(stage, "ast") == 0) {
        DslSource src = {cli.file, src_text, src_len};
        DslDiags diags;
        memset(&diags, 0, sizeof diags);
        diags.src = &src;
        AstProgram *p = dsl_parse(&g.arena, &diags, &src);
        if (diags.out.len)
            fputs(diags.out.data, stderr);
        int nerrors = diags.nerrors;
        dsl_diags_free(&diags);
        if (nerrors)
            exit(X_COMPILE);
        if (!p)
            die(X_RUNTIME, "out of memory while parsing");
        AstProgram one = *p;
        if (cli.entry) {
            int k = -1;
            for (int i = 0; i < p->nfuncs; i++)
                if (strcmp(p->funcs[i]->name, cli.entry) == 0)
                    k = i;
            if (k < 0)
                die(X_USAGE, "no function named '%s' in '%s'", cli.entry,
                    cli.file);
            one.funcs = &p->funcs[k];
            one.nfuncs = 1;
        }
        dsl_print_ast(&g.out, &one);
    } else {
        IrModule view;
        const IrModule *sel = select_entry(compile_ir(), &view, false);
        if (strcmp(stage, "core") == 0) {
            ir_print_module(&g.out, sel);
        } else {
            BkOptions bo = {cli.arch, 3};
            char err[1024] = "";
            if (be->emit(sel, &bo, stage, &g.out, err, sizeof err) != 0)
                die(X_RUNTIME, "--emit=%s: %s", stage,
                    err[0] ? err : "code generation failed");
            text = be->stage_is_text ? be->stage_is_text(stage) : true;
        }
    }
    if (g.out.oom)
        die(X_RUNTIME, "out of memory");
    write_output(g.out.data ? g.out.data : "", g.out.len, text, stage);
    dsl_buf_free(&g.out);
    dsl_arena_free(&g.arena);
    ir_module_free(g.mod);
    free(g.src);
    return X_OK;
}

/* ------------------------------------------------------------ run */

typedef struct PArg {
    bool given;                  /* set on the command line */
    const char *path;            /* NAME=@PATH */
    blkc_arg arg;                /* scalar value / tensor */
    DLTensor dl;                 /* tensor params */
    int64_t shape[IR_MAX_RANK];  /* tensor extents */
    int64_t numel;
    void *data;                  /* host buffer in the param's dtype */
} PArg;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void fill_random(void *data, int dt, int64_t n, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull, s = cli.seed;
    for (const char *c = name; *c; c++) /* per-tensor stream: FNV-1a */
        h = (h ^ (unsigned char)*c) * 0x100000001B3ull;
    s = splitmix(&s) ^ h;
    size_t b = (size_t)dsl_dtype_bytes(dt);
    char *p = data;
    for (int64_t i = 0; i < n; i++, p += b) {
        uint64_t r = splitmix(&s);
        switch (dsl_dtype_kind(dt)) {
        case 'f': rt_store_f64(p, dt, (double)(r >> 11) * 0x1p-52 - 1.0); break;
        case 'i': rt_store_i64(p, dt, (int64_t)(r >> 61) - 4); break;
        case 'u': rt_store_i64(p, dt, (int64_t)(r >> 61)); break;
        default: rt_store_i64(p, dt, (int64_t)(r >> 63)); break;
        }
    }
}

/* PATH with {rank} replaced by rank 0 */
static const char *rank_path(const char *path, char *buf, size_t n)
{
    const char *r = strstr(path, "{rank}");
    if (!r)
        return path;
    snprintf(buf, n, "%.*s0%s", (int)(r - path), path, r + 6);
    return buf;
}

static int64_t *symval;          /* per sym: bound value, -1 = unknown */
static const char **symsrc;      /* per sym: who bound it */

static void bind_sym(const IrFunc *f, int s, int64_t v, const char *from)
{
    if (symval[s] < 0) {
        symval[s] = v;
        symsrc[s] = from;
    } else if (symval[s] != v) {
        die(X_RUNTIME, "size mismatch: %s is %lld from %s but %lld from %s",
            f->syms[s].name, (long long)symval[s], symsrc[s], (long long)v,
            from);
    }
}

static void set_scalar(const IrParam *p, PArg *pa, const char *val)
{
    int dt = p->dtype;
    if (dsl_is_float(dt)) {
        double f;
        if (!parse_f64(val, &f))
            die(X_USAGE, "bad value '%s' for %s: expected a %s number", val,
                p->name, dsl_dtype_name(dt));
        pa->arg = (blkc_arg){.kind = BLKC_ARG_FLOAT, .v.f = f};
        return;
    }
    int64_t v;
    if (dt == DT_BOOL) {
        if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0)
            v = 1;
        else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0)
            v = 0;
        else
            die(X_USAGE, "bad value '%s' for %s: expected true or false", val,
                p->name);
    } else if (dt == DT_U64 && val[0] != '-') {
        char *end;
        errno = 0;
        unsigned long long u = strtoull(val, &end, 0);
        if (!*val || *end || errno)
            die(X_USAGE, "bad value '%s' for %s: expected a u64", val, p->name);
        v = (int64_t)u;
    } else {
        int bits = dsl_dtype_bytes(dt) * 8;
        bool sgn = dsl_dtype_kind(dt) == 'i';
        if (!parse_i64(val, &v) ||
            (bits < 64 && sgn && (v < -((int64_t)1 << (bits - 1)) ||
                                  v >= ((int64_t)1 << (bits - 1)))) ||
            (bits < 64 && !sgn && (v < 0 || v >= ((int64_t)1 << bits))) ||
            (!sgn && v < 0))
            die(X_USAGE, "bad value '%s' for %s: expected a %s", val, p->name,
                dsl_dtype_name(dt));
    }
    pa->arg = (blkc_arg){.kind = BLKC_ARG_INT, .v.i = v};
}

/* NAME=@PATH: read, convert to the param's dtype, bind sizes */
static void load_tensor(const IrFunc *f, int pi, PArg *pa)
{
    const IrParam *p = &f->params[pi];
    char pbuf[4096], err[512];
    const char *path = rank_path(pa->path, pbuf, sizeof pbuf);
    RtNpy a;
    if (rt_npy_read(path, &a, err, sizeof err) != 0)
        die(X_RUNTIME, "%s", err);
    pa->data = a.data; /* owned by pa from here on */
    int dt = p->dtype;
    bool small = dt == DT_F16 || dt == DT_BF16 || dt == DT_F8E4M3 ||
                 dt == DT_F8E5M2;
    if (a.dtype != dt && !(small && dsl_is_float(a.dtype)))
        die(X_RUNTIME, "dtype mismatch: parameter %s is %s but %s holds %s",
            p->name, dsl_dtype_name(dt), path, dsl_dtype_name(a.dtype));
    if (a.ndim != p->rank)
        die(X_RUNTIME, "shape mismatch: parameter %s has %d dims but %s has %d",
            p->name, p->rank, path, a.ndim);
    for (int d = 0; d < p->rank; d++) {
        if (p->dims[d] >= 0 && a.shape[d] != p->dims[d])
            die(X_RUNTIME, "shape mismatch: parameter %s dim %d is %lld but %s "
                "has %lld", p->name, d, (long long)p->dims[d], path,
                (long long)a.shape[d]);
        if (p->dims[d] < 0) {
            if (a.shape[d] > INT32_MAX)
                die(X_RUNTIME, "%s: extent %lld does not fit i32", path,
                    (long long)a.shape[d]);
            bind_sym(f, (int)(-1 - p->dims[d]), a.shape[d], p->name);
        }
        pa->shape[d] = a.shape[d];
    }
    pa->numel = a.numel;
    if (a.dtype != dt) {
        void *conv = malloc((size_t)a.numel * (size_t)dsl_dtype_bytes(dt) + 1);
        if (!conv)
            die(X_RUNTIME, "out of memory converting %s", path);
        rt_convert(conv, dt, a.data, a.dtype, a.numel);
        pa->data = conv;
        rt_npy_free(&a);
    }
}

/* A tensor not given: zeros (or --random) from its declared shape. */
static void make_tensor(const IrFunc *f, int pi, PArg *pa)
{
    const IrParam *p = &f->params[pi];
    int64_t numel = 1;
    for (int d = 0; d < p->rank; d++) {
        int64_t n = p->dims[d];
        if (n < 0) {
            int s = (int)(-1 - n);
            if (symval[s] < 0)
                die(X_USAGE, "missing size %s (of parameter %s): give %s=VALUE "
                    "or a tensor that has it", f->syms[s].name, p->name,
                    f->syms[s].name);
            n = symval[s];
        }
        pa->shape[d] = n;
        if (n && numel > (INT64_MAX >> 4) / n)
            die(X_RUNTIME, "parameter %s is too large", p->name);
        numel *= n;
    }
    size_t bytes = (size_t)numel * (size_t)dsl_dtype_bytes(p->dtype);
    pa->numel = numel;
    pa->data = calloc(1, bytes + 1);
    if (!pa->data)
        die(X_RUNTIME, "out of memory allocating %s (%zu bytes)", p->name, bytes);
    if (cli.random)
        fill_random(pa->data, p->dtype, numel, p->name);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void write_out(const IrFunc *f, const OutSpec *o, PArg *pargs)
{
    int pi = -1;
    for (int i = 0; i < f->nparams; i++)
        if (strcmp(f->params[i].name, o->name) == 0)
            pi = i;
    const IrParam *p = &f->params[pi];
    PArg *pa = &pargs[pi];
    char pbuf[4096], err[512];
    const char *path = rank_path(o->path, pbuf, sizeof pbuf);
    int dt = p->dtype;
    void *data = pa->data;
    static void *tmp;
    if (!rt_npy_descr(dt)) { /* bf16, f8: written as f32 */
        tmp = malloc((size_t)pa->numel * 4 + 1);
        if (!tmp)
            die(X_RUNTIME, "out of memory writing %s", path);
        rt_convert(tmp, DT_F32, pa->data, dt, pa->numel);
        data = tmp;
        dt = DT_F32;
    }
    if (rt_npy_write(path, dt, p->rank, pa->shape, data, err, sizeof err) != 0)
        die(X_RUNTIME, "%s", err);
    free(tmp);
    tmp = NULL;
}

static int cmd_run(void)
{
    if (cli.device && strcmp(cli.device, "cpu") != 0)
        die(X_RUNTIME, "running on %s is not supported yet (this build runs "
            "kernels on the cpu only)", cli.device);
    if (cli.ranks > 1)
        die(X_RUNTIME, "multi-rank runs need the device tier (not implemented "
            "yet)");
    load_source();
    IrModule view;
    const IrModule *sel = select_entry(compile_ir(), &view, true);
    const IrFunc *f = sel->funcs[0];
    PArg *pargs = g.pargs = calloc((size_t)f->nparams + 1, sizeof *pargs);
    symval = malloc(((size_t)f->nsyms + 1) * sizeof *symval);
    symsrc = calloc((size_t)f->nsyms + 1, sizeof *symsrc);
    if (!pargs || !symval || !symsrc)
        die(X_RUNTIME, "out of memory");
    for (int s = 0; s < f->nsyms; s++)
        symval[s] = -1;
    /* --out names must be tensors */
    for (int i = 0; i < cli.nouts; i++) {
        int pi = -1;
        for (int j = 0; j < f->nparams; j++)
            if (strcmp(f->params[j].name, cli.outs[i].name) == 0)
                pi = j;
        if (pi < 0 || f->params[pi].kind != PK_TENSOR)
            die(X_USAGE, "--out %s: kernel %s has no tensor parameter %s",
                cli.outs[i].name, f->name, cli.outs[i].name);
    }
    /* NAME=VALUE and NAME=@PATH */
    for (int i = 0; i < cli.nargs; i++) {
        char *a = cli.args[i], *eq = strchr(a, '=');
        if (!eq || !is_ident(a, (size_t)(eq - a)))
            die(X_USAGE, "bad argument '%s': expected NAME=VALUE or "
                "NAME=@PATH.npy", a);
        *eq = 0;
        const char *val = eq + 1;
        int pi = -1, si = -1;
        for (int j = 0; j < f->nparams; j++)
            if (strcmp(f->params[j].name, a) == 0)
                pi = j;
        for (int j = 0; j < f->nsyms && pi < 0; j++)
            if (strcmp(f->syms[j].name, a) == 0)
                si = j;
        if (pi < 0 && si < 0) {
            char list[1024];
            size_t n = 0;
            list[0] = 0;
            for (int j = 0; j < f->nparams && n < sizeof list; j++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                                      j ? ", " : "", f->params[j].name);
            for (int j = 0; j < f->nsyms && n < sizeof list; j++)
                n += (size_t)snprintf(list + n, sizeof list - n, ", %s",
                                      f->syms[j].name);
            die(X_USAGE, "kernel %s has no parameter or size '%s' (it has: "
                "%s)", f->name, a, list);
        }
        if (si >= 0) {
            int64_t v;
            if (!parse_i64(val, &v) || v < 0 || v > INT32_MAX)
                die(X_USAGE, "bad size %s=%s: expected an integer in 0 .. "
                    "2147483647", a, val);
            if (symval[si] >= 0)
                die(X_USAGE, "size %s is given twice", a);
            bind_sym(f, si, v, "the command line");
            continue;
        }
        const IrParam *p = &f->params[pi];
        if (pargs[pi].given)
            die(X_USAGE, "parameter %s is given twice", a);
        pargs[pi].given = true;
        if (p->kind == PK_TENSOR) {
            if (val[0] != '@' || !val[1])
                die(X_USAGE, "%s is a tensor: give %s=@PATH.npy", a, a);
            pargs[pi].path = val + 1;
        } else {
            if (val[0] == '@')
                die(X_USAGE, "%s is a %s scalar: give %s=VALUE", a,
                    dsl_dtype_name(p->dtype), a);
            set_scalar(p, &pargs[pi], val);
        }
    }
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i].kind == PK_SCALAR && !pargs[i].given)
            die(X_USAGE, "missing value for scalar parameter %s: give %s=VALUE",
                f->params[i].name, f->params[i].name);
    for (int i = 0; i < f->nparams; i++)
        if (pargs[i].given && f->params[i].kind == PK_TENSOR)
            load_tensor(f, i, &pargs[i]);
    for (int i = 0; i < f->nparams; i++)
        if (!pargs[i].given && f->params[i].kind == PK_TENSOR)
            make_tensor(f, i, &pargs[i]);
    for (int i = 0; i < f->nparams; i++) {
        PArg *pa = &pargs[i];
        if (f->params[i].kind != PK_TENSOR)
            continue;
        pa->dl = (DLTensor){.data = pa->data, .device = {kDLCPU, 0},
                            .ndim = f->params[i].rank,
                            .dtype = rt_dtype_to_dl(f->params[i].dtype),
                            .shape = pa->shape};
        pa->arg = (blkc_arg){.kind = BLKC_ARG_TENSOR, .v.tensor = &pa->dl};
    }
    blkc_arg *args = g.args = calloc((size_t)f->nparams + 1, sizeof *args);
    if (!args)
        die(X_RUNTIME, "out of memory");
    for (int i = 0; i < f->nparams; i++)
        args[i] = pargs[i].arg;
    /* JIT only the entry */
    BkOptions bo = {NULL, 3};
    char err[1024] = "";
    if (bk_cpu_jit(sel, &bo, &g.cm, err, sizeof err) != 0)
        die(X_RUNTIME, "JIT of %s failed: %s", f->name, err);
    BkRangeFn fn = bk_cpu_kernel_range(g.cm, f->name);
    if (!fn)
        die(X_RUNTIME, "internal: JIT lost kernel %s", f->name);
    blkc_launch_options lo;
    blkc_launch_options_init(&lo);
    memcpy(lo.grid, cli.grid, sizeof lo.grid);
    int64_t grid[3];
    double t0 = now_ms();
    blkc_status st = rt_cpu_launch(f, fn, args, f->nparams, &lo, grid, err,
                                   sizeof err);
    double t1 = now_ms() - t0;
    if (st != BLKC_OK)
        die(X_RUNTIME, "%s", err);
    if (cli.nouts == 0)
        printf("%s: grid (%lld, %lld, %lld), %.3f ms on cpu (%d threads)\n",
               f->name, (long long)grid[0], (long long)grid[1],
               (long long)grid[2], t1, rt_pool_size());
    if (cli.bench) {
        double *t = g.times = malloc((size_t)cli.bench * sizeof *t);
        if (!t)
            die(X_RUNTIME, "out of memory");
        for (int i = 0; i < cli.bench; i++) {
            double b0 = now_ms();
            st = rt_cpu_launch(f, fn, args, f->nparams, &lo, NULL, err,
                               sizeof err);
            t[i] = now_ms() - b0;
            if (st != BLKC_OK)
                die(X_RUNTIME, "%s", err);
        }
        qsort(t, (size_t)cli.bench, sizeof *t, cmp_double);
        double med = cli.bench % 2 ? t[cli.bench / 2]
                   : 0.5 * (t[cli.bench / 2 - 1] + t[cli.bench / 2]);
        printf("%s: bench %d runs: min %.3f ms, median %.3f ms\n", f->name,
               cli.bench, t[0], med);
        free(t);
        g.times = NULL;
    }
    for (int i = 0; i < cli.nouts; i++)
        write_out(f, &cli.outs[i], pargs);
    fflush(stdout);
    bk_cpu_free(g.cm);
    for (int i = 0; i < f->nparams; i++)
        free(pargs[i].data);
    free(pargs);
    free(args);
    free(symval);
    free(symsrc);
    ir_module_free(g.mod);
    free(g.src);
    return X_OK;
}

static int cmd_plan(void)
{
    die(X_USAGE, "plan needs a task, and the task tier is not implemented yet");
    return X_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_all, stderr);
        return X_USAGE;
    }
    const char *c = argv[1];
    if (strcmp(c, "--version") == 0 || strcmp(c, "-V") == 0) {
        printf("blkc %s\n", BLKC_VERSION_STRING);
        return X_OK;
    }
    if (strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0 ||
        strcmp(c, "help") == 0) {
        if (argc > 2 && command_usage(argv[2]))
            fputs(command_usage(argv[2]), stdout);
        else
            fputs(usage_all, stdout);
        return X_OK;
    }
    if (!command_usage(c)) {
        fprintf(stderr, "blkc: error: unknown command '%s' (commands: check, "
                "compile, run, plan; see 'blkc --help')\n", c);
        return X_USAGE;
    }
    cli.cmd = c;
    parse_args(argc, argv);
    if (strcmp(c, "check") == 0)
        return cmd_check();
    if (strcmp(c, "compile") == 0)
        return cmd_compile();
    if (strcmp(c, "run") == 0)
        return cmd_run();
    return cmd_plan();
}
