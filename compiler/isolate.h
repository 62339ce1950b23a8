/* isolate.h — compile isolation: the LLVM stage (Core IR -> optimized
 * native object) run in a separate worker process (`blkc-cc`), so that
 * LLVM aborting on out-of-memory (C++ bad_alloc, "LLVM ERROR") ends the
 * worker, never the process that embeds libblkc. The parent sends the
 * source and options through a pipe, the worker re-runs the front end,
 * checks that it rebuilt the same Core IR (a digest), emits the stage and
 * writes it back with a checksum; the parent then loads the object as the
 * disk cache does (jc_code_load). See docs/limits.md.
 * Cross-file prefix: iso_. */
#ifndef BLKC_ISOLATE_H
#define BLKC_ISOLATE_H

#include "cache.h"

/* Whether a compile with API option `opt` (1 yes, -1 no, 0 unset) runs in
 * a worker: the option, else BLKC_COMPILE_ISOLATE ("1" / "0"), else no. */
bool iso_enabled(int opt);
/* The worker's memory cap in MB (beyond its startup footprint) for API
 * option `opt` (> 0), else BLKC_COMPILE_MEM_MB, else 0 (none). */
int iso_mem_mb(int opt);

/* Stage `stage` of m by backend be: in a worker process when be is the
 * CPU backend and iso_enabled(src->isolate), else in this process
 * (be->emit). m must be (a selection of the functions of) the front end's
 * output for src, optionally with IrParam.assume bits set. 0, or -1 with
 * a one-line message in err. */
int iso_emit(const BkBackend *be, const IrModule *m, const BkOptions *o,
             const char *stage, const JcSrc *src, DslBuf *out, char *err,
             size_t errlen);

/* The worker executable: BLKC_COMPILE_WORKER, else `blkc-cc` next to the
 * library (or ../libexec/blkc/), else the install path, else the build
 * tree. 0 with the path in buf, or -1 with a message in err. */
int iso_worker_path(char *buf, size_t n, char *err, size_t errlen);

/* A digest of the functions of m as the backend sees them (their Core IR
 * text and IrParam.assume bits): parent and worker must agree on it. */
void iso_digest(const IrModule *m, uint8_t out[32]);

/* The request/response framing shared by both sides. */
#define ISO_REQ_MAGIC "BLKCREQ1"
#define ISO_RSP_MAGIC "BLKCOBJ1"
#define ISO_MAX_OUTPUT ((size_t)1 << 30)   /* largest accepted object */

/* Worker exit statuses (besides 0, and whatever LLVM's abort gives). */
enum {
    ISO_EXIT_USAGE = 64,    /* bad command line */
    ISO_EXIT_REQUEST = 65,  /* malformed request or IR mismatch */
    ISO_EXIT_BACKEND = 66,  /* the backend reported an error */
    ISO_EXIT_NOMEM = 67,    /* the worker's own allocation failed */
    ISO_EXIT_IO = 68,       /* writing the result failed */
};

/* isolate_worker.c: the worker's main (tools/blkc_cc.c calls it). */
int iso_worker_main(int argc, char **argv);

#endif
