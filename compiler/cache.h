/* cache.h — the JIT cache: content hashes (SHA-256), compiled CPU code
 * loaded from object files, the on-disk cache (BLKC_CACHE_DIR), the
 * in-memory cache of compiled units with their specialized variants, and
 * the autotuner's choice cache (tune.c).
 *
 * A "unit" is one compiled source (text + defines + options): its Core IR
 * and the generic code of every kernel, plus per kernel a small table of
 * specialized variants (compiled on first use by a launch whose arguments
 * have more known properties). Units are immutable once published and
 * reference counted; the variant tables grow under a lock and are read
 * without one.
 * Cross-file prefix: jc_ (functions), Jc (types). */
#ifndef BLKC_CACHE_H
#define BLKC_CACHE_H

#include "../backends/backend.h"
#include "../include/blkc/blkc.h"
#include "ir.h"

#include <pthread.h>

/* ------------------------------------------------------------ hashing */
typedef struct JcSha {
    uint32_t h[8];
    uint64_t n;           /* bytes hashed so far */
    uint8_t buf[64];
    size_t nbuf;
} JcSha;
void jc_sha_init(JcSha *s);
void jc_sha_add(JcSha *s, const void *p, size_t n);
void jc_sha_str(JcSha *s, const char *str);   /* length-prefixed; NULL ok */
void jc_sha_i64(JcSha *s, int64_t v);
void jc_sha_done(JcSha *s, uint8_t out[32]);
void jc_hex(const uint8_t key[32], char out[65]);
/* 64-bit word-at-a-time hash: disk entry checksums, memory-cache buckets */
uint64_t jc_fast_hash(uint64_t h, const void *data, size_t n);

/* What a compilation depends on besides the IR (hashed into every key). */
typedef struct JcSrc {
    const char *text; size_t len;           /* .blk source */
    const char *const *defines; int ndefines;
    const char *target;                     /* "cpu", "cuda", "hip" */
    const char *arch;                       /* NULL = host / default */
    int opt_level;                          /* 1..3 */
    int isolate;        /* LLVM in a worker: 1, -1, 0 = env (isolate.h);
                           not hashed: the code is the same */
    int mem_mb;         /* the worker's memory cap, 0 = env */
} JcSrc;
/* Start a key: blkc version, LLVM version, host CPU + features, source,
 * defines, target, arch, opt level. Callers add what else they vary on. */
void jc_key_begin(JcSha *s, const JcSrc *src);
/* The CPU backend's BLKC_CPU_* switches that change its code (in the key,
 * and a unit compiled under other switches is not reused). */
uint64_t jc_codegen_switches(void);

/* ------------------------------------------------------------ code */
/* Code of an object file linked into its own ORC LLJIT. */
typedef struct JcCode JcCode;
int jc_code_load(const void *obj, size_t len, const IrModule *m,
                 JcCode **out, char *err, size_t errlen);
BkRangeFn jc_code_range(const JcCode *c, const char *name);
/* the same as RtPlanModule.range (runtime/plan.h), range_ctx the JcCode */
BkRangeFn jc_code_range_of(const void *code, const char *name);
/* Frees c at once: whoever runs code on ranks that may be left behind
 * holds its owner instead (RtPlanModule.hold, runtime/plan.h). */
void jc_code_free(JcCode *c);
/* JcCode loaded and not yet freed in this process (tests). */
int64_t jc_code_live(void);

/* ------------------------------------------------------------ disk */
/* The cache directory (NULL when disabled or unusable); stable after the
 * first call unless jc_disk_reset() is called (tests, benchmarks). */
const char *jc_disk_dir(void);
void jc_disk_reset(void);
/* A validated entry's payload (malloc'd) or -1: missing, disabled, or
 * corrupt (a corrupt entry is deleted). */
int jc_disk_get(const uint8_t key[32], void **data, size_t *len);
/* Store atomically (temp file + rename); errors are ignored (the cache
 * degrades to memory only). Evicts least recently used entries over the
 * size cap (BLKC_CACHE_MAX_MB, default 1024). */
void jc_disk_put(const uint8_t key[32], const void *data, size_t len);
typedef struct JcStats {
    int64_t entries, bytes, max_bytes;
    int64_t hits, misses, corrupt, writes;    /* this process */
    int64_t compiles;          /* backend code generations run (misses) */
} JcStats;
void jc_disk_stats(JcStats *st);
int jc_disk_clear(void);                      /* entries removed, -1 error */

/* Stage `stage` of m through the disk cache (key: src + stage + `extra`,
 * e.g. the entry name). *hit says whether it came from the cache. */
int jc_emit(const BkBackend *be, const IrModule *m, const BkOptions *o,
            const char *stage, const JcSrc *src, const char *extra,
            DslBuf *out, bool *hit, char *err, size_t errlen);
/* CPU code for m (every non-device function) through the disk cache:
 * a cached object is linked without running LLVM codegen. */
int jc_cpu_code(const IrModule *m, const BkOptions *o, const JcSrc *src,
                const char *extra, JcCode **out, bool *hit, char *err,
                size_t errlen);

/* ------------------------------------------------------------ cache_mem.c */
/* The launch facts of arguments are rt_signature / rt_tensor_assume
 * (runtime/rt.h). */
#define JC_MAX_VARIANTS 16

typedef struct JcVariant {
    const uint32_t *assume;   /* per param */
    int nbits;                /* total assumption bits (specificity) */
    IrModule *ir;             /* its own front-end run, assumptions set */
    const IrFunc *func;
    JcCode *code;
    BkRangeFn range;
} JcVariant;

typedef struct JcKernelVars {
    pthread_mutex_t lock;                  /* held while compiling one */
    int n;                                 /* published (atomic) */
    JcVariant *v[JC_MAX_VARIANTS];         /* published (atomic) */
} JcKernelVars;

typedef struct JcUnit {
    int refs;                 /* atomic */
    uint8_t key[32];
    char *text; size_t len;   /* copies, for compiling variants */
    char **defines; int ndefines;
    char *filename;
    BkOptions bo;
    char *arch;
    IrModule *ir;             /* generic Core IR */
    JcCode *code;             /* generic code */
    JcKernelVars *vars;       /* per function of ir */
    bool from_disk;           /* the generic code came from the disk cache */
    int isolate, mem_mb;      /* JcSrc's, for compiling variants */
    uint64_t switches;        /* cpu_switches() when compiled */
    struct JcUnit *next;      /* memory cache chain */
} JcUnit;

/* A memory cache (one per context). */
typedef struct JcMem JcMem;
JcMem *jc_mem_new(void);
void jc_mem_free(JcMem *mc);
/* The unit for (src, filename): from mc (hot), else front end + disk object
 * (warm), else compiled (cold). *how: 2 hot, 1 warm, 0 cold. The status is
 * BLKC_ERR_COMPILE with the diagnostics in err, etc. A thread asking for a
 * source that another thread is building in the same mc waits for that
 * build and gets its result (*how 2) or its error, never builds it again. */
blkc_status jc_unit_get(JcMem *mc, const JcSrc *src, const char *filename,
                        JcUnit **out, int *how, char *err, size_t errlen);
void jc_unit_ref(JcUnit *u);
void jc_unit_unref(JcUnit *u);
/* The code to run function fi with signature sig: the exact variant, else
 * the most specialized compiled variant that fits; *func and *range are
 * left as they are (the caller's generic code) when none fits. A missing
 * exact variant is compiled here (mode EAGER; DEFAULT is EAGER unless
 * BLKC_SPECIALIZE=0, then OFF), queued for the background compiler
 * (BACKGROUND: this launch runs what exists) or not at all (OFF). Never
 * allocates when the variant exists. */
void jc_unit_pick(JcUnit *u, int fi, const uint32_t *sig, blkc_specialize mode,
                  const IrFunc **func, BkRangeFn *range);
/* Compile and publish the exact variant of fi for sig unless it exists
 * (blocks while another thread compiles one of fi's variants): 0, or -1
 * when it cannot be compiled (or the table is full). */
int jc_unit_compile(JcUnit *u, int fi, const uint32_t *sig);
/* Variants of function fi published so far. */
int jc_unit_variants(const JcUnit *u, int fi);

/* ------------------------------------------------------------ spec_bg.c */
/* The background compiler: one worker thread at most (started when a job
 * is queued, gone when the queue is empty), a queue of JC_SPEC_QUEUE jobs
 * (a job already queued or running is not queued again; a full queue drops
 * the job, and a later launch queues it again). A job holds a reference
 * to its unit. At exit, queued jobs are dropped and the running one is
 * waited for. */
#define JC_SPEC_QUEUE 64
void jc_spec_enqueue(JcUnit *u, int fi, const uint32_t *sig);
/* Wait until no job is queued or running. */
void jc_spec_wait(void);

/* ------------------------------------------------------------ tune.c */
/* The product of "NAME=v1,v2,..." lists; at most JC_TUNE_MAX configs. */
#define JC_TUNE_MAX 256
typedef struct JcTuneSpace {
    int nparams;
    char *names[16];
    int64_t *vals[16]; int nvals[16];
    int nconfigs;
} JcTuneSpace;
int jc_tune_parse(JcTuneSpace *ts, const char *const *spec, int n,
                  char *err, size_t errlen);
void jc_tune_free(JcTuneSpace *ts);
/* Config i as defines "NAME=V" into buf (strings point into buf). */
int jc_tune_config(const JcTuneSpace *ts, int i, char *buf, size_t n,
                   const char **defs);
/* Config i as text: "BM=64 BN=128". */
void jc_tune_text(const JcTuneSpace *ts, int i, char *out, size_t n);
/* api.c: set the calling thread's blkc_last_error; returns s. */
blkc_status jc_api_error(blkc_status s, const char *msg);
/* The key of a tuning choice: the source and options, the kernel, the
 * space, and the power-of-two bucket of every tensor argument's extents
 * (which covers the symbolic sizes). */
void jc_tune_key(const JcSrc *src, const char *kernel, const JcTuneSpace *ts,
                 const blkc_arg *args, int nargs, uint8_t key[32]);
/* The remembered choice for key (memory, then disk): config index or -1. */
int jc_tune_lookup(const uint8_t key[32], int nconfigs);
void jc_tune_store(const uint8_t key[32], int config);
/* Time a launch of fn: min over reps (after one warm-up), in ms, or <0. */
double jc_tune_time(const IrFunc *f, BkRangeFn fn, const blkc_arg *args,
                    int nargs, int reps);
/* Save / restore the tensor arguments (tuning runs must leave no mark). */
typedef struct JcSaved JcSaved;
JcSaved *jc_save_tensors(const blkc_arg *args, int nargs);
void jc_restore_tensors(JcSaved *s);   /* and frees s */

#endif
