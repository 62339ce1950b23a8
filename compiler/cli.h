/* cli.h — private interface between the blkc CLI's files: main.c
 * (arguments, check, compile) and cli_run.c (run). Prefix cli_. */
#ifndef BLKC_CLI_H
#define BLKC_CLI_H

#include "../backends/backend.h"
#include "../runtime/rt.h"
#include "ir.h"

#include <stdbool.h>

enum { X_SUCCESS = 0, X_COMPILE = 1, X_USAGE = 2, X_RUNTIME = 3 };

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
    const char *ab;              /* --ab=NAME=VALUE: --bench against a B build (NULL = none) */
    bool megakernel;             /* run/plan --megakernel (tasks) */
    bool stats;                  /* --stats (emulated devices) */
    int stats_sample;            /* --stats-sample=N: N blocks + first + last, 0 all */
    int64_t grid[3];             /* --grid (all 0 = the kernel's) */
    const char **tunes;          /* --tune NAME=V1,V2,... */
    int ntunes;
} Cli;

extern Cli cli;

/* What a command allocates lives here, reachable until exit, so that an
 * early exit (die) is not a leak under LeakSanitizer. */
struct CliGlobals {
    char *src;                   /* source text */
    IrModule *mod;               /* compiled module */
    DslArena arena;              /* --emit=ast */
    DslBuf out;                  /* emitted stage */
    struct PArg *pargs;          /* run: per parameter */
    blkc_arg *args;              /* run: launch arguments */
    double *times;               /* run: --bench */
};
extern struct CliGlobals cli_g;


/* cli_stats.c: --stats of the last emulated launch */
void cli_print_emu_stats(const char *kernel);

/* main.c */
int cli_die(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void cli_load_source(void);
IrModule *cli_compile_ir(void);
const IrModule *cli_select_entry(const IrModule *m, IrModule *view,
                                 bool need_one);
bool cli_is_ident(const char *s, size_t n);
bool cli_parse_i64(const char *s, int64_t *v);
bool cli_parse_f64(const char *s, double *v);

/* cli_run.c */
int cli_cmd_run(void);

#endif
