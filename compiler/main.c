/* main.c — the `blkc` command line: check, compile (print or write one
 * stage), run (bind .npy tensors and scalars, launch on the CPU, write
 * results), plan. The contract is the spec's CLI.md; docs/cli.md has the
 * details. Exit status: 0 ok, 1 compile errors, 2 usage errors, 3 runtime
 * errors (a one-line `blkc: error: ...`). */
#include "../backends/backend.h"
#include "../runtime/rt.h"
#include "aot.h"
#include "ir.h"
#include "task.h"

#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BLKC_VERSION_STRING
#define BLKC_VERSION_STRING "0.1.0"
#endif

#include "cli.h"
#include "cache.h"

Cli cli;
struct CliGlobals cli_g;

/* ------------------------------------------------------------ messages */

int cli_die(int code, const char *fmt, ...)
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
    "  cache    stats | clear: the JIT cache (BLKC_CACHE_DIR)\n"
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
               "                  cuda: gpu-ir, cuda, ptx, cubin; hip: gpu-ir, hip, hsaco\n"
               "                  (gpu-ir: the Core IR with the GPU layouts chosen)\n"
               "                  (default: the target's loadable binary);\n"
               "                  aot (cpu, cuda): NAME.h/NAME.c for -o NAME\n"
               "  --target=T      cpu (default), cuda or hip; a stage that only\n"
               "                  one target has selects it\n"
               "  --arch=ARCH     sm_80, sm_90, gfx90a, ... (default: host/default)\n"
               "  --entry=NAME    only this kernel\n"
               "  -o OUT          write to OUT; '-' or none prints text stages\n";
    if (strcmp(cmd, "run") == 0)
        return "usage: blkc run FILE.blk [--entry=NAME]\n"
               "                [--device=cpu|cuda[:N]|hip[:N]|cuda-emu|hip-emu]\n"
               "                [--ranks=N] [-D NAME=VALUE]... [ARG]... [--out NAME=PATH.npy]...\n"
               "                [--random] [--seed=S] [--bench=N [--ab=NAME=VALUE]]\n"
               "                [--grid=X[,Y[,Z]]] [--stats | --stats-sample=N] [--megakernel]\n"
               "  --device=D      cuda-emu / hip-emu: the generated CUDA / HIP C on the\n"
               "                  CPU, GPU paths emulated thread by thread (slow)\n"
               "  NAME=VALUE      a scalar parameter or a symbolic size\n"
               "  NAME=@PATH.npy  a tensor parameter (its shape binds sizes)\n"
               "  --out NAME=PATH.npy  write that tensor after the run\n"
               "  --random        fill tensors not given uniformly in [-1, 1)\n"
               "                  (ints in [-4, 4), unsigned in [0, 8)) instead of zeros\n"
               "  --seed=S        seed of --random (default 0)\n"
               "  --bench=N       run N more times after a warm-up; print min/median\n"
               "  --ab=NAME=VALUE (with --bench, one kernel on the CPU) also JIT the\n"
               "                  kernel with environment variable NAME=VALUE (a\n"
               "                  BLKC_CPU_* switch) and alternate the two N times:\n"
               "                  both times and the median of the pairs' ratios\n"
               "  --grid=X,Y,Z    override the kernel's grid\n"
               "  --stats         (cuda-emu, hip-emu) per-kernel counts: tensor-core\n"
               "                  instructions, shared-memory wavefronts, global sectors,\n"
               "                  barriers, and the bound they imply on H200 and MI250X\n"
               "  --stats-sample=N  --stats running only N evenly spread blocks plus the\n"
               "                  first and last, the counts scaled to the grid (outputs\n"
               "                  partial: --out refused, results not checked)\n"
               "  --tune NAME=V1,V2,...  autotune a compile-time parameter (repeat\n"
               "                  for more); the fastest config per shape bucket is\n"
               "                  cached and used for the run\n"
               "  --megakernel    (tasks, CPU ranks) one tile-task graph per rank run by\n"
               "                  worker threads instead of one launch per op\n";
    if (strcmp(cmd, "plan") == 0)
        return "usage: blkc plan FILE.blk --entry=NAME --ranks=N [--topology=PRESET|FILE]\n"
               "                 [--json] [--megakernel] [ARG]...\n"
               "  Print a task's shardings, communication decisions and costs.\n"
               "  --megakernel    also the tile-task graph (run once on zero inputs)\n";
    return NULL;
}

/* ------------------------------------------------------------ parsing */

bool cli_is_ident(const char *s, size_t n)
{
    if (n == 0 || !(s[0] == '_' || ((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z')))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
              ((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z')))
            return false;
    return true;
}

bool cli_parse_i64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 0);
    if (!*s || *end || errno)
        return false;
    *v = x;
    return true;
}

bool cli_parse_f64(const char *s, double *v)
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
    if (!eq || !cli_is_ident(d, (size_t)(eq - d)) ||
        !(cli_parse_i64(eq + 1, &i) || cli_parse_f64(eq + 1, &f) ||
          strcmp(eq + 1, "true") == 0 || strcmp(eq + 1, "false") == 0))
        cli_die(X_USAGE, "bad -D '%s': expected NAME=VALUE with an integer, float "
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
        if (n >= 3 || !cli_parse_i64(t, &v) || v < 1 || v > INT32_MAX)
            n = 4;
        else
            cli.grid[n++] = v;
    }
    if (n < 1 || n > 3 || !s[0] || s[0] == ',' || s[strlen(s) - 1] == ',' ||
        strstr(s, ",,"))
        cli_die(X_USAGE, "bad --grid '%s': expected X[,Y[,Z]] with positive "
            "integers", s);
    for (int a = n; a < 3; a++)
        cli.grid[a] = 1;
}

static void check_device(const char *d)
{
    const char *rest = strncmp(d, "cuda", 4) == 0 ? d + 4
                     : strncmp(d, "hip", 3) == 0 ? d + 3 : NULL;
    if (strcmp(d, "cpu") == 0 || strcmp(d, "cuda-emu") == 0 ||
        strcmp(d, "hip-emu") == 0)
        return;
    int64_t n;
    if (!rest || !(*rest == 0 || (*rest == ':' && cli_parse_i64(rest + 1, &n) &&
                                  n >= 0 && rest[1] >= '0' && rest[1] <= '9')))
        cli_die(X_USAGE, "bad --device '%s': expected cpu, cuda[:N], hip[:N], "
                "cuda-emu or hip-emu", d);
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
    {"--ab", true, C_RUN},
    {"--stats", false, C_RUN},
    {"--stats-sample", true, C_RUN},
    {"--grid", true, C_RUN},
    {"--tune", true, C_RUN},
    {"--topology", true, C_PLAN},
    {"--json", false, C_PLAN},
    {"--megakernel", false, C_RUN | C_PLAN},
};

static const char *plan_topology; /* plan: --topology */
static bool plan_json;            /* plan: --json */

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
            cli_die(X_USAGE, "bad --target '%s': expected cpu, cuda or hip", val);
        cli.target = val;
    } else if (strcmp(name, "--arch") == 0) {
        cli.arch = val;
    } else if (strcmp(name, "--emit") == 0) {
        cli.emit = val;
    } else if (strcmp(name, "--entry") == 0) {
        if (!cli_is_ident(val, strlen(val)))
            cli_die(X_USAGE, "bad --entry '%s'", val);
        cli.entry = val;
    } else if (strcmp(name, "--device") == 0) {
        check_device(val);
        cli.device = val;
    } else if (strcmp(name, "--ranks") == 0) {
        if (!cli_parse_i64(val, &v) || v < 1 || v > 65536)
            cli_die(X_USAGE, "bad --ranks '%s': expected a positive integer", val);
        cli.ranks = (int)v;
    } else if (strcmp(name, "--out") == 0) {
        char *eq = strchr(val, '=');
        if (!eq || !cli_is_ident(val, (size_t)(eq - val)) || !eq[1])
            cli_die(X_USAGE, "bad --out '%s': expected NAME=PATH.npy", val);
        *eq = 0;
        cli.outs[cli.nouts++] = (OutSpec){val, eq + 1};
    } else if (strcmp(name, "--random") == 0) {
        cli.random = true;
    } else if (strcmp(name, "--seed") == 0) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(val, &end, 0);
        if (!*val || *end || errno || val[0] == '-')
            cli_die(X_USAGE, "bad --seed '%s': expected a non-negative integer", val);
        cli.seed = s;
    } else if (strcmp(name, "--bench") == 0) {
        if (!cli_parse_i64(val, &v) || v < 1 || v > 1000000)
            cli_die(X_USAGE, "bad --bench '%s': expected a positive integer", val);
        cli.bench = (int)v;
    } else if (strcmp(name, "--ab") == 0) {
        const char *eq = strchr(val, '=');
        if (!eq || (size_t)(eq - val) >= 128 || !cli_is_ident(val, (size_t)(eq - val)))
            cli_die(X_USAGE, "bad --ab '%s': expected NAME=VALUE (an environment variable)", val);
        cli.ab = val;
    } else if (strcmp(name, "--stats") == 0) {
        cli.stats = true;
    } else if (strcmp(name, "--stats-sample") == 0) {
        if (!cli_parse_i64(val, &v) || v < 1 || v > 1000000)
            cli_die(X_USAGE, "bad --stats-sample '%s': expected a positive integer", val);
        cli.stats = true;
        cli.stats_sample = (int)v;
    } else if (strcmp(name, "--grid") == 0) {
        parse_grid(val);
    } else if (strcmp(name, "--tune") == 0) {
        cli.tunes[cli.ntunes++] = val;
    }
    else if (strcmp(name, "--topology") == 0)
        plan_topology = val;
    else if (strcmp(name, "--json") == 0)
        plan_json = true;
    else if (strcmp(name, "--megakernel") == 0)
        cli.megakernel = true;
}

static void parse_args(int argc, char **argv)
{
    int mask = strcmp(cli.cmd, "check") == 0 ? C_CHECK
             : strcmp(cli.cmd, "compile") == 0 ? C_COMPILE
             : strcmp(cli.cmd, "run") == 0 ? C_RUN : C_PLAN;
    cli.defines = calloc((size_t)argc, sizeof *cli.defines);
    cli.args = calloc((size_t)argc, sizeof *cli.args);
    cli.outs = calloc((size_t)argc, sizeof *cli.outs);
    cli.tunes = calloc((size_t)argc, sizeof *cli.tunes);
    if (!cli.defines || !cli.args || !cli.outs || !cli.tunes)
        cli_die(X_RUNTIME, "out of memory");
    cli.ranks = 1;
    bool only_pos = false;
    for (int i = 2; i < argc; i++) {
        char *a = argv[i];
        if (!only_pos && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            fputs(command_usage(cli.cmd), stdout);
            exit(X_SUCCESS);
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
                cli_die(X_USAGE, "unknown option '%s' for '%s'", name, cli.cmd);
            if (options[k].value && !val) {
                if (i + 1 >= argc)
                    cli_die(X_USAGE, "option %s needs a value", name);
                val = argv[++i];
            } else if (!options[k].value && val) {
                cli_die(X_USAGE, "option %s takes no value", name);
            }
            set_option(name, val);
            continue;
        }
        if (!cli.file)
            cli.file = a;
        else if (mask & (C_RUN | C_PLAN))
            cli.args[cli.nargs++] = a;
        else
            cli_die(X_USAGE, "unexpected argument '%s'", a);
    }
    if (!cli.file)
        cli_die(X_USAGE, "missing FILE.blk argument");
}

/* ------------------------------------------------------------ compiling */

static size_t src_len;

void cli_load_source(void)
{
    FILE *fp = fopen(cli.file, "rb");
    if (!fp)
        cli_die(X_RUNTIME, "cannot read '%s': %s", cli.file, strerror(errno));
    size_t cap = 1 << 16;
    cli_g.src = malloc(cap);
    for (;;) {
        if (!cli_g.src)
            cli_die(X_RUNTIME, "out of memory reading '%s'", cli.file);
        src_len += fread(cli_g.src + src_len, 1, cap - src_len - 1, fp);
        if (src_len + 1 < cap)
            break;
        if (cap > DSL_MAX_SOURCE)
            cli_die(X_RUNTIME, "'%s' is too large for a source file", cli.file);
        cap *= 2;
        cli_g.src = realloc(cli_g.src, cap);
    }
    if (ferror(fp))
        cli_die(X_RUNTIME, "cannot read '%s': %s", cli.file, strerror(errno));
    fclose(fp);
    cli_g.src[src_len] = 0;
}

/* Compile to Core IR; print diagnostics (warnings too); exit 1 on errors. */
IrModule *cli_compile_ir(void)
{
    DslSource src = {cli.file, cli_g.src, src_len};
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
        cli_die(X_RUNTIME, "out of memory while compiling '%s'", cli.file);
    cli_g.mod = m;
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
const IrModule *cli_select_entry(const IrModule *m, IrModule *view,
                                    bool need_one)
{
    char list[1024];
    list_kernels(m, list, sizeof list);
    if (!cli.entry) {
        if (!need_one)
            return m;
        if (m->nfuncs == 0)
            cli_die(X_USAGE, "'%s' has no kernel to run (device functions and "
                "tasks are not runnable yet)", cli.file);
        if (m->nfuncs > 1)
            cli_die(X_USAGE, "'%s' has %d kernels (%s): choose one with "
                "--entry=NAME", cli.file, m->nfuncs, list);
    }
    int k = 0;
    if (cli.entry) {
        k = -1;
        for (int i = 0; i < m->nfuncs; i++)
            if (strcmp(m->funcs[i]->name, cli.entry) == 0)
                k = i;
        if (k < 0)
            cli_die(X_USAGE, "no kernel named '%s' in '%s' (kernels: %s)",
                cli.entry, cli.file, m->nfuncs ? list : "none");
    }
    memset(view, 0, sizeof *view);
    view->funcs = &m->funcs[k];
    view->nfuncs = 1;
    return view;
}

static int cmd_check(void)
{
    cli_load_source();
    ir_module_free(cli_compile_ir());
    cli_g.mod = NULL;
    free(cli_g.src);
    return X_SUCCESS;
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
            cli_die(X_RUNTIME, "cannot write to stdout");
        return;
    }
    FILE *fp = fopen(path, "wb");
    if (!fp)
        cli_die(X_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
    bool ok = fwrite(data, 1, len, fp) == len;
    if (fclose(fp) != 0 || !ok)
        cli_die(X_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
}

/* --emit=aot -o NAME: NAME.h / NAME.c (compiler/aot.c, docs/aot.md) */
static int compile_aot(void)
{
    if (cli.out_path && strcmp(cli.out_path, "-") == 0)
        cli_die(X_USAGE, "--emit=aot writes two files: give -o NAME, not -o -");
    if (cli.target && strcmp(cli.target, "cpu") != 0 &&
        strcmp(cli.target, "cuda") != 0)
        cli_die(X_USAGE, "--emit=aot supports --target=cpu and --target=cuda");
    char defname[4096];
    if (!cli.out_path) { /* FILE without .blk */
        const char *base = strrchr(cli.file, '/');
        base = base ? base + 1 : cli.file;
        size_t n = strlen(base);
        if (n > 4 && strcmp(base + n - 4, ".blk") == 0)
            n -= 4;
        snprintf(defname, sizeof defname, "%.*s", (int)n, base);
    }
    cli_load_source();
    IrModule view;
    const IrModule *sel = cli_select_entry(cli_compile_ir(), &view, false);
    AotOptions ao = {cli.out_path ? cli.out_path : defname, cli.target,
                     cli.arch, cli.file};
    char err[1024] = "";
    if (aot_write(sel, &ao, err, sizeof err) != 0)
        cli_die(X_RUNTIME, "--emit=aot: %s", err[0] ? err : "failed");
    ir_module_free(cli_g.mod);
    free(cli_g.src);
    return X_SUCCESS;
}

static int emit_task(void);

static int cmd_compile(void)
{
    static const char *const names[] = {"cpu", "cuda", "hip"};
    const char *stage = cli.emit;
    const BkBackend *be = cli.target ? bk_find(cli.target) : NULL;
    if (cli.target && !be)
        cli_die(X_RUNTIME, "the %s backend is not built into this blkc",
            cli.target);
    if (!stage) {
        if (!be)
            be = bk_find("cpu");
        if (!be || !be->default_stage)
            cli_die(X_RUNTIME, "no default stage for this target");
        stage = be->default_stage;
    }
    bool ir_stage = strcmp(stage, "ast") == 0 || strcmp(stage, "core") == 0 ||
                    strcmp(stage, "device") == 0;
    if (strcmp(stage, "task") == 0)
        return emit_task();
    if (strcmp(stage, "aot") == 0)
        return compile_aot();
    if (!ir_stage && !be) /* a stage that names its target */
        for (int i = 0; i < 3 && !be; i++)
            if (backend_has(bk_find(names[i]), stage))
                be = bk_find(names[i]);
    if (!ir_stage && !backend_has(be, stage)) {
        char list[512] = "ast, core, device";
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
            cli_die(X_USAGE, "no stage '%s' for target %s (stages: %s)", stage,
                cli.target, list);
        cli_die(X_USAGE, "unknown stage '%s' (stages: %s)", stage, list);
    }
    cli_load_source();
    bool text = true;
    if (strcmp(stage, "ast") == 0) {
        DslSource src = {cli.file, cli_g.src, src_len};
        DslDiags diags;
        memset(&diags, 0, sizeof diags);
        diags.src = &src;
        AstProgram *p = dsl_parse(&cli_g.arena, &diags, &src);
        if (diags.out.len)
            fputs(diags.out.data, stderr);
        int nerrors = diags.nerrors;
        dsl_diags_free(&diags);
        if (nerrors)
            exit(X_COMPILE);
        if (!p)
            cli_die(X_RUNTIME, "out of memory while parsing");
        AstProgram one = *p;
        if (cli.entry) {
            int k = -1;
            for (int i = 0; i < p->nfuncs; i++)
                if (strcmp(p->funcs[i]->name, cli.entry) == 0)
                    k = i;
            if (k < 0)
                cli_die(X_USAGE, "no function named '%s' in '%s'", cli.entry,
                    cli.file);
            one.funcs = &p->funcs[k];
            one.nfuncs = 1;
        }
        dsl_print_ast(&cli_g.out, &one);
    } else {
        IrModule view;
        const IrModule *sel = cli_select_entry(cli_compile_ir(), &view, false);
        if (strcmp(stage, "core") == 0 || strcmp(stage, "device") == 0) {
            /* core: the kernels (Core IR); device: the device functions
             * (Device IR) */
            bool dev = stage[0] == 'd';
            for (int i = 0, k = 0; i < sel->nfuncs; i++) {
                if (sel->funcs[i]->is_device != dev)
                    continue;
                if (k++)
                    dsl_buf_printf(&cli_g.out, "\n");
                ir_print_func(&cli_g.out, sel->funcs[i]);
            }
        } else {
            BkOptions bo = {cli.arch, 3};
            char err[1024] = "";
            /* through the JIT cache (cache.c) */
            JcSrc js = {cli_g.src, src_len, cli.defines, cli.ndefines,
                        be->name, cli.arch, 3, 0, 0};
            bool hit;
            if (jc_emit(be, sel, &bo, stage, &js, cli.entry ? cli.entry : "",
                        &cli_g.out, &hit, err, sizeof err) != 0)
                cli_die(X_RUNTIME, "--emit=%s: %s", stage,
                    err[0] ? err : "code generation failed");
            text = be->stage_is_text ? be->stage_is_text(stage) : true;
        }
    }
    if (cli_g.out.oom)
        cli_die(X_RUNTIME, "out of memory");
    write_output(cli_g.out.data ? cli_g.out.data : "", cli_g.out.len, text, stage);
    dsl_buf_free(&cli_g.out);
    dsl_arena_free(&cli_g.arena);
    ir_module_free(cli_g.mod);
    free(cli_g.src);
    return X_SUCCESS;
}

/* plan: the task's Task IR after sharding propagation and placement on
 * --ranks and --topology, for the sizes given as NAME=VALUE (or the shapes
 * of NAME=@PATH.npy tensors). */
/* --emit=task: the Task IR of a task after sharding propagation and
 * collective insertion, with symbolic sizes (no ranks or placement yet:
 * `blkc plan` shows those for a given mesh). */
static int emit_task(void)
{
    char err[1024] = "";
    cli_load_source();
    ir_module_free(cli_compile_ir()); /* checks everything, exits 1 on errors */
    cli_g.mod = NULL;
    DslSource src = {cli.file, cli_g.src, src_len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    AstProgram *prog = dsl_parse(&cli_g.arena, &diags, &src);
    if (!prog)
        cli_die(X_RUNTIME, "out of memory");
    const AstFunc *fn = tk_pick_task(prog, cli.entry, err, sizeof err);
    if (!fn)
        cli_die(X_USAGE, err[0] ? "'%s' has %s" : "'%s' has no task%s", cli.file,
                err[0] ? err : "");
    TkTask *t = tk_build(prog, fn, 0, cli.defines, cli.ndefines, NULL, 0, &diags);
    if (t && tk_propagate(t, &diags) == 0)
        tk_print(&cli_g.out, t);
    if (diags.out.len)
        fputs(diags.out.data, stderr);
    int nerrors = diags.nerrors;
    dsl_diags_free(&diags);
    tk_free(t);
    if (nerrors)
        exit(X_COMPILE);
    if (cli_g.out.oom)
        cli_die(X_RUNTIME, "out of memory");
    write_output(cli_g.out.data ? cli_g.out.data : "", cli_g.out.len, true, "task");
    dsl_buf_free(&cli_g.out);
    dsl_arena_free(&cli_g.arena);
    free(cli_g.src);
    return X_SUCCESS;
}

static int cmd_plan(void)
{
    char err[1024];
    TkTopology topo;
    if (tk_topology_get(plan_topology ? plan_topology : "this-cpu", &topo, err, sizeof err))
        cli_die(X_USAGE, "%s", err);
    cli_load_source();
    ir_module_free(cli_compile_ir()); /* checks everything, exits 1 on errors */
    cli_g.mod = NULL;
    DslSource src = {cli.file, cli_g.src, src_len};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    AstProgram *prog = dsl_parse(&cli_g.arena, &diags, &src);
    if (!prog)
        cli_die(X_RUNTIME, "out of memory");
    const AstFunc *fn = tk_pick_task(prog, cli.entry, err, sizeof err);
    if (!fn && err[0])
        cli_die(X_USAGE, "'%s' has %s", cli.file, err);
    if (!fn)
        cli_die(X_USAGE, cli.entry ? "no task named '%s' in '%s'" : "%s'%s' has no task",
                cli.entry ? cli.entry : "", cli.file);
    TkTask *sig_t = tk_build(prog, fn, 0, cli.defines, cli.ndefines, NULL, 0, &diags);
    IrFunc *sig = sig_t ? tk_signature(sig_t) : NULL;
    if (!sig)
        cli_die(X_RUNTIME, "out of memory");
    const char **sizes = calloc((size_t)cli.nargs * IR_MAX_RANK + 1, sizeof *sizes);
    char (*sbuf)[160] = calloc((size_t)cli.nargs * IR_MAX_RANK + 1, sizeof *sbuf);
    int nsizes = 0;
    if (!sizes || !sbuf)
        cli_die(X_RUNTIME, "out of memory");
    for (int i = 0; i < cli.nargs; i++) {
        char *a = cli.args[i], *eq = strchr(a, '=');
        if (!eq || !cli_is_ident(a, (size_t)(eq - a)))
            cli_die(X_USAGE, "bad argument '%s': expected NAME=VALUE or NAME=@PATH.npy", a);
        int pi = -1, si = -1;
        for (int j = 0; j < sig->nparams; j++)
            if (strncmp(sig->params[j].name, a, (size_t)(eq - a)) == 0 &&
                !sig->params[j].name[eq - a])
                pi = j;
        for (int j = 0; j < sig->nsyms; j++)
            if (strncmp(sig->syms[j].name, a, (size_t)(eq - a)) == 0 &&
                !sig->syms[j].name[eq - a])
                si = j;
        int64_t v;
        if (si >= 0) {
            if (!cli_parse_i64(eq + 1, &v) || v < 1)
                cli_die(X_USAGE, "bad size '%s': expected a positive integer", a);
            sizes[nsizes++] = a;
        } else if (pi >= 0 && eq[1] == '@' && sig->params[pi].kind == PK_TENSOR) {
            RtNpy np;
            if (rt_npy_read(eq + 2, &np, err, sizeof err))
                cli_die(X_RUNTIME, "%s", err);
            const IrParam *p = &sig->params[pi];
            if (np.ndim != p->rank)
                cli_die(X_RUNTIME, "shape mismatch: parameter %s has %d dims but %s has %d",
                        p->name, p->rank, eq + 2, np.ndim);
            for (int d = 0; d < p->rank; d++)
                if (p->dims[d] < 0) {
                    snprintf(sbuf[nsizes], sizeof sbuf[nsizes], "%s=%lld",
                             sig->syms[-1 - p->dims[d]].name, (long long)np.shape[d]);
                    sizes[nsizes] = sbuf[nsizes];
                    nsizes++;
                }
            rt_npy_free(&np);
        } else if (pi < 0 || sig->params[pi].kind != PK_SCALAR) {
            cli_die(X_USAGE, "task %s has no size or tensor parameter '%.*s'", fn->name,
                    (int)(eq - a), a);
        }
    }
    TkTask *t = tk_prepare(prog, fn, cli.ranks, cli.defines, cli.ndefines, sizes, nsizes,
                           cli_g.src, src_len, &topo, 0, &diags, err, sizeof err);
    if (diags.out.len)
        fputs(diags.out.data, stderr);
    if (diags.nerrors)
        exit(X_COMPILE);
    if (!t)
        cli_die(X_USAGE, "plan: %s", err);
    if (cli.megakernel && plan_json)
        cli_die(X_USAGE, "plan --megakernel prints text only, not --json");
    tk_plan_print(&cli_g.out, t, &topo, plan_json);
    if (cli.megakernel && tk_mega_plan(&cli_g.out, t, err, sizeof err))
        cli_die(X_RUNTIME, "%s", err);
    if (cli_g.out.oom)
        cli_die(X_RUNTIME, "out of memory");
    fputs(cli_g.out.data ? cli_g.out.data : "", stdout);
    dsl_buf_free(&cli_g.out);
    dsl_diags_free(&diags);
    tk_free(t);
    tk_free(sig_t);
    tk_signature_free(sig);
    free(sizes);
    free(sbuf);
    dsl_arena_free(&cli_g.arena);
    free(cli_g.src);
    return X_SUCCESS;
}

/* blkc cache stats|clear */
static int cmd_cache(int argc, char **argv)
{
    const char *sub = argc > 2 ? argv[2] : "";
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
        fputs("usage: blkc cache stats|clear\n"
              "  stats   the cache directory, its entries and size\n"
              "  clear   remove every entry\n"
              "  BLKC_CACHE_DIR (default $XDG_CACHE_HOME/blkc or ~/.cache/blkc),\n"
              "  BLKC_CACHE_DISABLE=1, BLKC_CACHE_MAX_MB (default 1024)\n",
              stdout);
        return X_SUCCESS;
    }
    cli.cmd = "cache";
    if (argc != 3 || (strcmp(sub, "stats") && strcmp(sub, "clear")))
        cli_die(X_USAGE, "expected 'blkc cache stats' or 'blkc cache clear'");
    const char *dir = jc_disk_dir();
    if (strcmp(sub, "clear") == 0) {
        int n = jc_disk_clear();
        if (n < 0)
            cli_die(X_RUNTIME, "cannot clear %s", dir);
        printf("removed %d entr%s from %s\n", n, n == 1 ? "y" : "ies",
               dir ? dir : "(cache disabled)");
        return X_SUCCESS;
    }
    JcStats st;
    jc_disk_stats(&st);
    printf("dir: %s\nentries: %lld\nsize: %.1f KiB\nlimit: %lld MiB\n",
           dir ? dir : "(disabled)", (long long)st.entries,
           (double)st.bytes / 1024.0, (long long)(st.max_bytes >> 20));
    return X_SUCCESS;
}

int main(int argc, char **argv)
{
    /* a write past the file-size limit is an error (EFBIG), not a kill */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        fputs(usage_all, stderr);
        return X_USAGE;
    }
    const char *c = argv[1];
    if (strcmp(c, "--version") == 0 || strcmp(c, "-V") == 0) {
        printf("blkc %s\n", BLKC_VERSION_STRING);
        return X_SUCCESS;
    }
    if (strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0 ||
        strcmp(c, "help") == 0) {
        if (argc > 2 && command_usage(argv[2]))
            fputs(command_usage(argv[2]), stdout);
        else
            fputs(usage_all, stdout);
        return X_SUCCESS;
    }
    if (strcmp(c, "cache") == 0)
        return cmd_cache(argc, argv);
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
        return cli_cmd_run();
    return cmd_plan();
}
