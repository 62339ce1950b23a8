/* isolate_worker.c — the worker side of compile isolation (isolate.h):
 * the `blkc-cc` executable's main. It caps its own address space
 * (RLIMIT_AS = its footprint at startup + --mem-mb), offers itself to the
 * kernel's OOM killer first, reads one request from stdin, re-runs the
 * front end, checks that the Core IR it rebuilt has the parent's digest,
 * runs the CPU backend and writes the stage to stdout with a checksum.
 * Whatever LLVM does on out-of-memory (abort) ends only this process; the
 * parent (isolate.c) reports it. Exit statuses: isolate.h. */
#include "isolate.h"

#include <errno.h>
#include <fcntl.h>
#ifndef BLKC_NO_CPU_BACKEND
#include <llvm-c/ErrorHandling.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ------------------------------------------------------------ limits */

/* The address space mapped now (libLLVM, the C library, ...), in bytes. */
static uint64_t footprint(void)
{
    FILE *fp = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (fp) {
        if (fscanf(fp, "%lu", &pages) != 1)
            pages = 0;
        fclose(fp);
    }
    long ps = sysconf(_SC_PAGESIZE);
    return (uint64_t)pages * (uint64_t)(ps > 0 ? ps : 4096);
}

static void cap_memory(int mem_mb)
{
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) { /* best effort: the OOM killer should pick us first */
        if (write(fd, "1000", 4) < 0)
            errno = 0;
        close(fd);
    }
    if (mem_mb <= 0)
        return;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0)
        return;
    uint64_t want = footprint() + (uint64_t)mem_mb * 1024 * 1024;
    if (rl.rlim_max != RLIM_INFINITY && want > (uint64_t)rl.rlim_max)
        want = (uint64_t)rl.rlim_max;
    if (rl.rlim_cur == RLIM_INFINITY || want < (uint64_t)rl.rlim_cur) {
        rl.rlim_cur = (rlim_t)want;
        setrlimit(RLIMIT_AS, &rl);
    }
}

/* ------------------------------------------------------------ request */

typedef struct Rd {
    const uint8_t *p;
    size_t n, at;
    bool bad;   /* malformed */
    bool oom;   /* an allocation failed */
} Rd;

static uint64_t get_u64(Rd *r)
{
    if (r->bad || r->n - r->at < 8) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)r->p[r->at + i] << (8 * i);
    r->at += 8;
    return v;
}

/* A NUL-terminated malloc'd copy (NULL for a NULL string: *isnull). */
static char *get_str(Rd *r, size_t *len, bool *isnull)
{
    uint64_t n = get_u64(r);
    *isnull = n == UINT64_MAX && !r->bad;
    if (r->bad || *isnull)
        return NULL;
    if (n > r->n - r->at) {
        r->bad = true;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        r->bad = r->oom = true;
        return NULL;
    }
    memcpy(s, r->p + r->at, (size_t)n);
    s[n] = 0;
    r->at += (size_t)n;
    if (len)
        *len = (size_t)n;
    return s;
}

/* The whole request; NULL with *code set on failure. */
static uint8_t *read_all(int fd, size_t *len, int *code)
{
    size_t cap = 1 << 16, n = 0, max = (size_t)DSL_MAX_SOURCE + (64u << 20);
    uint8_t *b = malloc(cap);
    while (b) {
        if (n == cap) {
            uint8_t *b2 = cap >= max ? NULL : realloc(b, cap * 2);
            if (!b2) {
                free(b);
                *code = cap >= max ? ISO_EXIT_REQUEST : ISO_EXIT_NOMEM;
                fprintf(stderr, "blkc-cc: %s\n", cap >= max ?
                        "request too large" : "out of memory");
                return NULL;
            }
            b = b2;
            cap *= 2;
        }
        ssize_t k = read(fd, b + n, cap - n);
        if (k == 0)
            break;
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            fprintf(stderr, "blkc-cc: reading the request: %s\n",
                    strerror(errno));
            free(b);
            *code = ISO_EXIT_REQUEST;
            return NULL;
        }
        n += (size_t)k;
    }
    if (!b) {
        fprintf(stderr, "blkc-cc: out of memory\n");
        *code = ISO_EXIT_NOMEM;
    }
    *len = n;
    return b;
}

static int fail(int code, const char *msg)
{
    fprintf(stderr, "blkc-cc: %s\n", msg);
    return code;
}

static bool write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        c += k;
        n -= (size_t)k;
    }
    return true;
}

/* ------------------------------------------------------------ main */

int iso_worker_main(int argc, char **argv)
{
    int mem_mb = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mem-mb=", 9) == 0) {
            char *end;
            long v = strtol(argv[i] + 9, &end, 10);
            if (*end || v < 0 || v > 1 << 30)
                return fail(ISO_EXIT_USAGE, "bad --mem-mb");
            mem_mb = (int)v;
        } else {
            fprintf(stderr, "blkc-cc: blkc's compile worker, started by "
                    "libblkc (BLKC_COMPILE_ISOLATE=1); it reads a request "
                    "on stdin and is not meant to be run by hand\n");
            return ISO_EXIT_USAGE;
        }
    }
    cap_memory(mem_mb);

    size_t rlen = 0;
    int code = 0;
    uint8_t *req = read_all(0, &rlen, &code);
    if (!req)
        return code;
    Rd r = {req, rlen, 0, false, false};
    if (rlen < 8 || memcmp(req, ISO_REQ_MAGIC, 8) != 0)
        return fail(ISO_EXIT_REQUEST, "bad request (magic)");
    r.at = 8;
    bool nul;
    size_t srclen = 0;
    char *stage = get_str(&r, NULL, &nul);
    char *arch = get_str(&r, NULL, &nul);
    int opt = (int)get_u64(&r);
    char *text = get_str(&r, &srclen, &nul);
    uint64_t nd = get_u64(&r);
    if (r.oom)
        return fail(ISO_EXIT_NOMEM, "out of memory");
    if (r.bad || !stage || !text || nd > 100000 || opt < 0 || opt > 3)
        return fail(ISO_EXIT_REQUEST, "bad request (header)");
    char **defs = calloc((size_t)nd + 1, sizeof *defs);
    if (!defs)
        return fail(ISO_EXIT_NOMEM, "out of memory");
    for (uint64_t i = 0; i < nd && !r.bad; i++)
        if (!(defs[i] = get_str(&r, NULL, &nul)))
            r.bad = true;
    uint64_t nsel = get_u64(&r);
    if (r.oom)
        return fail(ISO_EXIT_NOMEM, "out of memory");
    if (r.bad || nsel > 100000)
        return fail(ISO_EXIT_REQUEST, "bad request (defines)");

    DslSource src = {"<isolated>", text, srclen};
    DslDiags diags;
    memset(&diags, 0, sizeof diags);
    diags.src = &src;
    IrModule *m = ir_compile_source(&src, &diags, (const char *const *)defs,
                                    (int)nd, NULL);
    if (!m || diags.nerrors) {
        fprintf(stderr, "blkc-cc: the source does not compile here: %.300s\n",
                diags.out.data ? diags.out.data : "out of memory");
        return m ? ISO_EXIT_REQUEST : ISO_EXIT_NOMEM;
    }
    IrFunc **sel = calloc((size_t)nsel + 1, sizeof *sel);
    if (!sel)
        return fail(ISO_EXIT_NOMEM, "out of memory");
    for (uint64_t i = 0; i < nsel && !r.bad; i++) {
        char *name = get_str(&r, NULL, &nul);
        uint64_t np = get_u64(&r);
        for (int k = 0; name && k < m->nfuncs && !sel[i]; k++)
            if (strcmp(m->funcs[k]->name, name) == 0)
                sel[i] = m->funcs[k];
        free(name);
        if (!sel[i] || np != (uint64_t)sel[i]->nparams) {
            r.bad = true;
            break;
        }
        for (int p = 0; p < sel[i]->nparams; p++)
            sel[i]->params[p].assume = (uint32_t)get_u64(&r);
    }
    if (r.oom)
        return fail(ISO_EXIT_NOMEM, "out of memory");
    if (r.bad || r.n - r.at != 32)
        return fail(ISO_EXIT_REQUEST, "bad request (functions)");
    IrModule view;
    memset(&view, 0, sizeof view);
    view.funcs = sel;
    view.nfuncs = (int)nsel;
    uint8_t d[32];
    iso_digest(&view, d);
    if (memcmp(d, r.p + r.at, 32) != 0)
        return fail(ISO_EXIT_REQUEST, "the Core IR rebuilt from the source "
                    "differs from the parent's (internal error)");

    /* the in-process fatal-error handler (jit.c) advises isolation; here
     * LLVM's own message and exit are what the parent wants to see */
    IrModule *empty = ir_module_new();
    DslBuf out;
    memset(&out, 0, sizeof out);
    char err[1024] = "";
    if (empty) {
        bk_cpu_backend.emit(empty, NULL, "llvm-unopt", &out, err, sizeof err);
        ir_module_free(empty);
        dsl_buf_free(&out);
        memset(&out, 0, sizeof out);
    }
#ifndef BLKC_NO_CPU_BACKEND
    LLVMResetFatalErrorHandler();
#endif

    BkOptions bo = {arch, opt};
    if (bk_cpu_backend.emit(&view, &bo, stage, &out, err, sizeof err) != 0)
        return fail(ISO_EXIT_BACKEND, err);
    if (out.oom)
        return fail(ISO_EXIT_NOMEM, "out of memory");
    uint8_t hdr[48];
    memcpy(hdr, ISO_RSP_MAGIC, 8);
    for (int i = 0; i < 8; i++)
        hdr[8 + i] = (uint8_t)((uint64_t)out.len >> (8 * i));
    JcSha s;
    jc_sha_init(&s);
    jc_sha_add(&s, out.data, out.len);
    jc_sha_done(&s, hdr + 16);
    if (!write_all(1, hdr, sizeof hdr) || !write_all(1, out.data, out.len))
        return fail(ISO_EXIT_IO, "writing the result failed");
    /* the process ends here: the OS frees the rest */
    return 0;
}
