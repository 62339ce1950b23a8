/* isolate.c — the parent side of compile isolation (isolate.h): decide
 * whether a compile is isolated, find the `blkc-cc` worker, start it with
 * posix_spawn (never a bare fork of a possibly multi-threaded server),
 * send the request through its stdin, read the object from its stdout and
 * its messages from its stderr (poll, so neither side can block the
 * other), reap it (waitpid: no zombies) and turn every way it can end
 * into one clear error. No files are involved: nothing to clean up. */
#include "isolate.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------ settings */

bool iso_enabled(int opt)
{
    if (opt)
        return opt > 0;
    const char *s = getenv("BLKC_COMPILE_ISOLATE");
    return s && strcmp(s, "1") == 0;
}

int iso_mem_mb(int opt)
{
    if (opt > 0)
        return opt;
    const char *s = getenv("BLKC_COMPILE_MEM_MB");
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v <= 0 || v > INT_MAX / 2)
        return 0; /* invalid values are ignored, like BLKC_NUM_THREADS */
    return (int)v;
}

/* ------------------------------------------------------------ digest */

void iso_digest(const IrModule *m, uint8_t out[32])
{
    JcSha s;
    jc_sha_init(&s);
    jc_sha_i64(&s, m->nfuncs);
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        DslBuf b;
        memset(&b, 0, sizeof b);
        ir_print_func(&b, f);
        jc_sha_i64(&s, b.oom ? -1 : (int64_t)b.len);
        jc_sha_add(&s, b.data, b.oom ? 0 : b.len);
        dsl_buf_free(&b);
        jc_sha_i64(&s, f->nparams);
        for (int p = 0; p < f->nparams; p++)
            jc_sha_i64(&s, f->params[p].assume);
    }
    jc_sha_done(&s, out);
}

/* ------------------------------------------------------------ request */

static void put_u64(DslBuf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    dsl_buf_put(b, (const char *)x, 8);
}

static void put_str(DslBuf *b, const char *s, size_t n)
{
    if (!s) {
        put_u64(b, UINT64_MAX); /* NULL */
        return;
    }
    put_u64(b, n);
    dsl_buf_put(b, s, n);
}

/* magic, stage, arch, opt level, source, defines, the selected functions
 * (name, assume bits per param), the digest of m. */
static void build_request(DslBuf *b, const IrModule *m, const BkOptions *o,
                          const char *stage, const JcSrc *src)
{
    dsl_buf_put(b, ISO_REQ_MAGIC, 8);
    put_str(b, stage, strlen(stage));
    const char *arch = o ? o->arch : NULL;
    put_str(b, arch, arch ? strlen(arch) : 0);
    put_u64(b, (uint64_t)(o ? o->opt_level : 3));
    put_str(b, src->text ? src->text : "", src->len);
    put_u64(b, (uint64_t)src->ndefines);
    for (int i = 0; i < src->ndefines; i++)
        put_str(b, src->defines[i], strlen(src->defines[i]));
    put_u64(b, (uint64_t)m->nfuncs);
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        put_str(b, f->name, strlen(f->name));
        put_u64(b, (uint64_t)f->nparams);
        for (int p = 0; p < f->nparams; p++)
            put_u64(b, f->params[p].assume);
    }
    uint8_t d[32];
    iso_digest(m, d);
    dsl_buf_put(b, (const char *)d, 32);
}

/* ------------------------------------------------------------ finding */

static bool try_path(char *buf, size_t n, const char *dir, const char *rel)
{
    int k = snprintf(buf, n, "%s%s", dir, rel);
    return k > 0 && (size_t)k < n && access(buf, X_OK) == 0;
}

int iso_worker_path(char *buf, size_t n, char *err, size_t errlen)
{
    const char *env = getenv("BLKC_COMPILE_WORKER");
    if (env && *env) {
        if (access(env, X_OK) != 0) {
            snprintf(err, errlen, "compile worker '%s' (BLKC_COMPILE_WORKER) "
                     "cannot be run: %s", env, strerror(errno));
            return -1;
        }
        snprintf(buf, n, "%s", env);
        return 0;
    }
    /* next to the library or executable that holds this code */
    char self[PATH_MAX] = "";
    static const char anchor = 0; /* an address inside this object */
    Dl_info di;
    if (!dladdr(&anchor, &di) || !di.dli_fname ||
        !strchr(di.dli_fname, '/') || !realpath(di.dli_fname, self)) {
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        self[k > 0 ? k : 0] = 0;
    }
    char *slash = strrchr(self, '/');
    if (slash) {
        *slash = 0;
        if (try_path(buf, n, self, "/blkc-cc") ||
            try_path(buf, n, self, "/../libexec/blkc/blkc-cc"))
            return 0;
    }
#ifdef BLKC_WORKER_INSTALL_PATH
    if (try_path(buf, n, BLKC_WORKER_INSTALL_PATH, ""))
        return 0;
#endif
#ifdef BLKC_WORKER_BUILD_PATH
    if (try_path(buf, n, BLKC_WORKER_BUILD_PATH, ""))
        return 0;
#endif
    snprintf(err, errlen, "compile worker 'blkc-cc' not found (looked in "
             "%s, %s/../libexec/blkc"
#ifdef BLKC_WORKER_INSTALL_PATH
             ", " BLKC_WORKER_INSTALL_PATH
#endif
             "); set BLKC_COMPILE_WORKER to its path",
             self[0] ? self : "?", self[0] ? self : "?");
    return -1;
}

/* ------------------------------------------------------------ running */

/* fds 0-2 are the child's; keep ours above them */
static int high_fd(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return h;
}

static int make_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    p[0] = high_fd(p[0]);
    p[1] = high_fd(p[1]);
    if (p[0] < 0 || p[1] < 0) {
        if (p[0] >= 0)
            close(p[0]);
        if (p[1] >= 0)
            close(p[1]);
        return -1;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* The worker's stderr: the last bytes are kept (LLVM's message is last). */
typedef struct Tail {
    char b[2048];
    size_t n;
} Tail;

static void tail_add(Tail *t, const char *s, size_t n)
{
    if (n >= sizeof t->b) {
        s += n - (sizeof t->b - 1);
        n = sizeof t->b - 1;
    }
    if (t->n + n >= sizeof t->b) {
        size_t drop = t->n + n - (sizeof t->b - 1);
        memmove(t->b, t->b + drop, t->n - drop);
        t->n -= drop;
    }
    memcpy(t->b + t->n, s, n);
    t->n += n;
    t->b[t->n] = 0;
}

/* The last non-empty line of the worker's stderr, at most 300 bytes. */
static void last_line(const Tail *t, char *out, size_t n)
{
    size_t e = t->n;
    while (e > 0 && (t->b[e - 1] == '\n' || t->b[e - 1] == '\r' ||
                     t->b[e - 1] == ' '))
        e--;
    size_t s = e;
    while (s > 0 && t->b[s - 1] != '\n')
        s--;
    while (s < e && (t->b[s] == ' ' || t->b[s] == '\t'))
        s++;
    size_t k = e - s > 300 ? 300 : e - s;
    if (k + 1 > n)
        k = n ? n - 1 : 0;
    memcpy(out, t->b + s, k);
    if (n)
        out[k] = 0;
}

static bool says_oom(const Tail *t)
{
    return strstr(t->b, "out of memory") || strstr(t->b, "bad_alloc") ||
           strstr(t->b, "Cannot allocate memory") ||
           strstr(t->b, "Allocation failed");
}

/* Feed req to the worker and collect its stdout and stderr until both
 * close. 0, or -1 with err set (the worker is then killed). */
static int exchange(int *in, int *outp, int *errp,
                    const DslBuf *req, DslBuf *rsp, Tail *tail,
                    char *err, size_t errlen)
{
    size_t sent = 0;
    int flags = fcntl(*in, F_GETFL);
    if (flags >= 0)
        fcntl(*in, F_SETFL, flags | O_NONBLOCK);
    char chunk[65536];
    while (*outp >= 0 || *errp >= 0) {
        struct pollfd pf[3];
        int np = 0, ii = -1, io = -1, ie = -1;
        if (*in >= 0) {
            pf[np] = (struct pollfd){*in, POLLOUT, 0};
            ii = np++;
        }
        if (*outp >= 0) {
            pf[np] = (struct pollfd){*outp, POLLIN, 0};
            io = np++;
        }
        if (*errp >= 0) {
            pf[np] = (struct pollfd){*errp, POLLIN, 0};
            ie = np++;
        }
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, errlen, "compile worker: poll: %s", strerror(errno));
            return -1;
        }
        if (ii >= 0 && pf[ii].revents) {
            ssize_t k = write(*in, req->data + sent, req->len - sent);
            if (k > 0)
                sent += (size_t)k;
            else if (k < 0 && errno != EAGAIN && errno != EINTR)
                close_fd(in); /* EPIPE: the worker stopped reading; its
                                 exit status tells why */
            if (sent == req->len)
                close_fd(in);
        }
        if (io >= 0 && pf[io].revents) {
            ssize_t k = read(*outp, chunk, sizeof chunk);
            if (k > 0) {
                if (rsp->len + (size_t)k > ISO_MAX_OUTPUT + 64) {
                    snprintf(err, errlen, "compile worker output is larger "
                             "than %zu bytes", ISO_MAX_OUTPUT);
                    return -1;
                }
                dsl_buf_put(rsp, chunk, (size_t)k);
                if (rsp->oom) {
                    snprintf(err, errlen, "out of memory reading the compile "
                             "worker's output");
                    return -1;
                }
            } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
                close_fd(outp);
            }
        }
        if (ie >= 0 && pf[ie].revents) {
            ssize_t k = read(*errp, chunk, sizeof chunk);
            if (k > 0)
                tail_add(tail, chunk, (size_t)k);
            else if (k == 0 || (errno != EAGAIN && errno != EINTR))
                close_fd(errp);
        }
    }
    return 0;
}

/* Check the framing and checksum of rsp; the payload goes to out. */
static int take_result(const DslBuf *rsp, DslBuf *out, char *err,
                       size_t errlen)
{
    const uint8_t *p = (const uint8_t *)rsp->data;
    if (rsp->len < 48 || memcmp(p, ISO_RSP_MAGIC, 8) != 0) {
        snprintf(err, errlen, "compile worker returned a corrupt result "
                 "(%zu bytes, no valid header)", rsp->len);
        return -1;
    }
    uint64_t n = 0;
    for (int i = 0; i < 8; i++)
        n |= (uint64_t)p[8 + i] << (8 * i);
    if (n != rsp->len - 48) {
        snprintf(err, errlen, "compile worker returned a corrupt result "
                 "(%zu payload bytes, the header says %llu)", rsp->len - 48,
                 (unsigned long long)n);
        return -1;
    }
    JcSha s;
    uint8_t d[32];
    jc_sha_init(&s);
    jc_sha_add(&s, p + 48, (size_t)n);
    jc_sha_done(&s, d);
    if (memcmp(d, p + 16, 32) != 0) {
        snprintf(err, errlen, "compile worker returned a corrupt result "
                 "(checksum mismatch)");
        return -1;
    }
    dsl_buf_put(out, (const char *)p + 48, (size_t)n);
    if (out->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* One clear message for a worker that ended badly. */
static void explain(int status, const Tail *tail, int mem_mb, char *err,
                    size_t errlen)
{
    char line[320], lim[64];
    last_line(tail, line, sizeof line);
    if (mem_mb > 0)
        snprintf(lim, sizeof lim, "limit %d MB", mem_mb);
    else
        snprintf(lim, sizeof lim, "no BLKC_COMPILE_MEM_MB limit");
    bool oom = says_oom(tail) ||
               (WIFEXITED(status) && WEXITSTATUS(status) == ISO_EXIT_NOMEM);
    if (oom) {
        snprintf(err, errlen, "compile worker died: out of memory (%s)%s%s",
                 lim, line[0] ? ": " : "", line);
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(err, errlen, "compile worker died: signal %d (%s)%s%s%s", sig,
                 strsignal(sig),
                 sig == SIGKILL ? ", as the kernel's OOM killer does" : "",
                 line[0] ? ": " : "", line);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        snprintf(err, errlen, "compile worker could not start%s%s",
                 line[0] ? ": " : "", line);
    } else if (WIFEXITED(status)) {
        snprintf(err, errlen, "compile worker failed (exit %d)%s%s",
                 WEXITSTATUS(status), line[0] ? ": " : "", line);
    } else {
        snprintf(err, errlen, "compile worker ended abnormally (status %d)",
                 status);
    }
}

/* Wait for pid, retrying on EINTR. -1 if it cannot be reaped (a process
 * that sets SIGCHLD to SIG_IGN reaps its children itself). */
static int reap(pid_t pid, int *status)
{
    for (;;) {
        if (waitpid(pid, status, 0) == pid)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

static int run_worker(const DslBuf *req, int mem_mb, DslBuf *out, char *err,
                      size_t errlen)
{
    char path[PATH_MAX];
    if (iso_worker_path(path, sizeof path, err, errlen))
        return -1;
    int in[2] = {-1, -1}, op[2] = {-1, -1}, ep[2] = {-1, -1};
    if (make_pipe(in) || make_pipe(op) || make_pipe(ep)) {
        snprintf(err, errlen, "compile worker: cannot create pipes: %s",
                 strerror(errno));
        for (int i = 0; i < 2; i++) {
            close_fd(&in[i]);
            close_fd(&op[i]);
            close_fd(&ep[i]);
        }
        return -1;
    }
    char memarg[48];
    snprintf(memarg, sizeof memarg, "--mem-mb=%d", mem_mb);
    char *argv[] = {path, memarg, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, op[1], 1);
    posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);    /* the server's masks and */
    posix_spawnattr_setsigdefault(&at, &all);  /* handlers stay behind */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, path, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close_fd(&in[0]);
    close_fd(&op[1]);
    close_fd(&ep[1]);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the compile worker '%s': %s",
                 path, strerror(rc));
        close_fd(&in[1]);
        close_fd(&op[0]);
        close_fd(&ep[0]);
        return -1;
    }
    /* a worker that dies before reading everything must not kill us with
     * SIGPIPE: block it on this thread, and drop one we caused */
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    DslBuf rsp;
    memset(&rsp, 0, sizeof rsp);
    Tail tail = {.n = 0};
    tail.b[0] = 0;
    rc = exchange(&in[1], &op[0], &ep[0], req, &rsp, &tail, err, errlen);
    close_fd(&in[1]);
    close_fd(&op[0]);
    close_fd(&ep[0]);
    if (rc != 0)
        kill(pid, SIGKILL);
    int status = 0;
    bool reaped = reap(pid, &status) == 0;
    sigpending(&pending);
    if (!was_pending && sigismember(&pending, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        if (reaped && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            explain(status, &tail, mem_mb, err, errlen);
            rc = -1;
        } else {
            /* (not reaped: SIGCHLD ignored; the checksum decides) */
            rc = take_result(&rsp, out, err, errlen);
        }
    }
    dsl_buf_free(&rsp);
    return rc;
}

int iso_emit(const BkBackend *be, const IrModule *m, const BkOptions *o,
             const char *stage, const JcSrc *src, DslBuf *out, char *err,
             size_t errlen)
{
    if (be != &bk_cpu_backend || !src || !iso_enabled(src->isolate))
        return be->emit(m, o, stage, out, err, errlen);
    DslBuf req;
    memset(&req, 0, sizeof req);
    build_request(&req, m, o, stage, src);
    if (req.oom) {
        dsl_buf_free(&req);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = run_worker(&req, iso_mem_mb(src->mem_mb), out, err, errlen);
    dsl_buf_free(&req);
    return rc;
}
