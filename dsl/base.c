/* base.c — arenas, growable text buffers, diagnostics and the dtype table:
 * the pieces every layer of blkc uses. */
#include "dsl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ arena */

struct DslArenaChunk {
    struct DslArenaChunk *next; /* older chunk */
    size_t used, cap;           /* bytes of data[] */
    _Alignas(16) unsigned char data[];
};

void *dsl_alloc(DslArena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    struct DslArenaChunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

char *dsl_strdup(DslArena *a, const char *s, size_t n)
{
    char *p = dsl_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

void dsl_arena_free(DslArena *a)
{
    struct DslArenaChunk *c = a->head;
    while (c) {
        struct DslArenaChunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

void dsl_arena_adopt(DslArena *dst, DslArena *src)
{
    struct DslArenaChunk *c = src->head;
    if (!c)
        return;
    while (c->next)
        c = c->next;
    c->next = dst->head;
    dst->head = src->head;
    dst->total += src->total;
    src->head = NULL;
    src->total = 0;
}

/* ------------------------------------------------------------ buffers */

static bool buf_reserve(DslBuf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t ncap = b->cap ? b->cap * 2 : 256;
    while (ncap < b->len + extra + 1)
        ncap *= 2;
    char *p = realloc(b->data, ncap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->data = p;
    b->cap = ncap;
    return true;
}

void dsl_buf_put(DslBuf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void dsl_buf_vprintf(DslBuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !buf_reserve(b, (size_t)n))
        return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void dsl_buf_printf(DslBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dsl_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void dsl_buf_free(DslBuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------ diagnostics */

/* Render `file:line:col: KIND: msg`, the source line and a caret. */
static void report(DslDiags *d, DslLoc loc, const char *kind, const char *fmt,
                   va_list ap)
{
    const char *name = d->src && d->src->name ? d->src->name : "<input>";
    if (loc.line > 0)
        dsl_buf_printf(&d->out, "%s:%d:%d: %s: ", name, loc.line, loc.col, kind);
    else
        dsl_buf_printf(&d->out, "%s: %s: ", name, kind);
    dsl_buf_vprintf(&d->out, fmt, ap);
    dsl_buf_put(&d->out, "\n", 1);
    if (loc.line <= 0 || !d->src || !d->src->text)
        return;
    const char *p = d->src->text, *end = p + d->src->len;
    for (int l = 1; l < loc.line && p < end; p++)
        if (*p == '\n')
            l++;
    const char *e = p;
    while (e < end && *e != '\n')
        e++;
    size_t n = (size_t)(e - p);
    if (n > 300) /* very long lines: show a window around the column */
        n = 300;
    dsl_buf_put(&d->out, p, n);
    dsl_buf_put(&d->out, "\n", 1);
    for (int i = 1; i < loc.col && i <= 300; i++)
        dsl_buf_put(&d->out, p + i - 1 < e && p[i - 1] == '\t' ? "\t" : " ", 1);
    dsl_buf_put(&d->out, "^\n", 2);
}

void dsl_verror(DslDiags *d, DslLoc loc, const char *fmt, va_list ap)
{
    d->nerrors++;
    if (d->nerrors > DSL_MAX_ERRORS) {
        if (d->nerrors == DSL_MAX_ERRORS + 1)
            dsl_buf_printf(&d->out, "%s: error: too many errors, stopping\n",
                           d->src && d->src->name ? d->src->name : "<input>");
        return;
    }
    report(d, loc, "error", fmt, ap);
}

void dsl_error(DslDiags *d, DslLoc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dsl_verror(d, loc, fmt, ap);
    va_end(ap);
}

void dsl_warning(DslDiags *d, DslLoc loc, const char *fmt, ...)
{
    va_list ap;
    d->nwarnings++;
    va_start(ap, fmt);
    report(d, loc, "warning", fmt, ap);
    va_end(ap);
}

void dsl_diags_free(DslDiags *d)
{
    dsl_buf_free(&d->out);
    d->nerrors = d->nwarnings = 0;
}

/* ------------------------------------------------------------ dtypes */

static const struct {
    const char *name;
    int bytes;
    char kind;
} dtypes[DT_COUNT] = {
#define X(e, n, b, k) {n, b, k},
    DSL_DTYPES(X)
#undef X
};

const char *dsl_dtype_name(int dt)
{
    return dt >= 0 && dt < DT_COUNT ? dtypes[dt].name : "?";
}

int dsl_dtype_bytes(int dt)
{
    return dt >= 0 && dt < DT_COUNT ? dtypes[dt].bytes : 0;
}

char dsl_dtype_kind(int dt)
{
    return dt >= 0 && dt < DT_COUNT ? dtypes[dt].kind : 'v';
}

int dsl_dtype_from_name(const char *s)
{
    for (int i = 1; i < DT_COUNT; i++)
        if (strcmp(dtypes[i].name, s) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------ utf-8 */

bool dsl_utf8_valid(const char *s, size_t n, size_t *bad_offset)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                   : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + len > n)
            goto bad;
        uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                goto bad;
            cp = (cp << 6) | (p[i + k] & 0x3Fu);
        }
        /* overlong forms, UTF-16 surrogates and code points past U+10FFFF */
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            goto bad;
        i += len;
    }
    return true;
bad:
    if (bad_offset)
        *bad_offset = i;
    return false;
}
