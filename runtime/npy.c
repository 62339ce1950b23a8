/* npy.c — reading and writing NumPy .npy files (format versions 1.0, 2.0,
 * 3.0; little-endian; C order). The reader trusts nothing: the header dict
 * is parsed strictly, the shape is checked for overflow and the data size
 * must match the file exactly before anything the size of the data is
 * allocated. */
#include "rt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#define NPY_MAX_HEADER (1u << 20) /* bigger headers are not numpy's */

static const struct {
    int dtype;
    const char *code;     /* type letter + size, after the byte-order char */
} npy_types[] = {
    {DT_BOOL, "b1"}, {DT_I8, "i1"},  {DT_I16, "i2"}, {DT_I32, "i4"},
    {DT_I64, "i8"},  {DT_U8, "u1"},  {DT_U16, "u2"}, {DT_U32, "u4"},
    {DT_U64, "u8"},  {DT_F16, "f2"}, {DT_F32, "f4"}, {DT_F64, "f8"},
};

void *rt_alloc64(size_t n)
{
    return aligned_alloc(64, (n + 63) / 64 * 64);
}

const char *rt_npy_descr(int dtype)
{
    switch (dtype) {
    case DT_BOOL: return "|b1";
    case DT_I8: return "|i1";
    case DT_U8: return "|u1";
    case DT_I16: return "<i2";
    case DT_I32: return "<i4";
    case DT_I64: return "<i8";
    case DT_U16: return "<u2";
    case DT_U32: return "<u4";
    case DT_U64: return "<u8";
    case DT_F16: return "<f2";
    case DT_F32: return "<f4";
    case DT_F64: return "<f8";
    default: return NULL;
    }
}

/* ------------------------------------------------------------ header dict */

typedef struct {
    const char *p, *end;
} Lex;

static void skip_ws(Lex *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' ||
                             *l->p == '\r'))
        l->p++;
}

static bool eat(Lex *l, char c)
{
    skip_ws(l);
    if (l->p < l->end && *l->p == c) {
        l->p++;
        return true;
    }
    return false;
}

/* A quoted Python string literal without escapes, copied into buf. */
static bool lex_string(Lex *l, char *buf, size_t n)
{
    skip_ws(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"'))
        return false;
    char q = *l->p++;
    size_t i = 0;
    while (l->p < l->end && *l->p != q) {
        if (*l->p == '\\' || i + 1 >= n)
            return false;
        buf[i++] = *l->p++;
    }
    if (l->p >= l->end)
        return false;
    l->p++;
    buf[i] = 0;
    return true;
}

static bool lex_word(Lex *l, const char *w)
{
    skip_ws(l);
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) >= n && memcmp(l->p, w, n) == 0) {
        l->p += n;
        return true;
    }
    return false;
}

/* Parse the header dict; fill dtype/ndim/shape. */
static int parse_dict(Lex *l, RtNpy *a, char *err, size_t errlen)
{
    bool have_descr = false, have_order = false, have_shape = false;
    if (!eat(l, '{'))
        goto bad;
    while (!eat(l, '}')) {
        char key[32];
        if (!lex_string(l, key, sizeof key) || !eat(l, ':'))
            goto bad;
        if (strcmp(key, "descr") == 0 && !have_descr) {
            char d[32];
            if (!lex_string(l, d, sizeof d))
                goto bad;
            have_descr = true;
            a->dtype = -1;
            for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++) {
                if (strcmp(d + (d[0] ? 1 : 0), npy_types[i].code) != 0)
                    continue;
                int bytes = dsl_dtype_bytes(npy_types[i].dtype);
                if (d[0] == '<' || d[0] == '=' || (d[0] == '|' && bytes == 1) ||
                    (d[0] == '>' && bytes == 1))
                    a->dtype = npy_types[i].dtype;
                else if (d[0] == '>') {
                    snprintf(err, errlen, "big-endian data ('%s') is not "
                             "supported", d);
                    return -1;
                }
            }
            if (a->dtype < 0) {
                snprintf(err, errlen, "unsupported dtype '%s' (supported: "
                         "bool, i1..i8, u1..u8, f2, f4, f8)", d);
                return -1;
            }
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            if (lex_word(l, "True")) {
                snprintf(err, errlen, "Fortran-order arrays are not "
                         "supported (save a C-order copy)");
                return -1;
            }
            if (!lex_word(l, "False"))
                goto bad;
            have_order = true;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            if (!eat(l, '('))
                goto bad;
            a->ndim = 0;
            while (!eat(l, ')')) {
                skip_ws(l);
                int64_t v = 0;
                int digits = 0;
                while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
                    if (v > (INT64_MAX - 9) / 10) {
                        snprintf(err, errlen, "shape extent is too large");
                        return -1;
                    }
                    v = v * 10 + (*l->p++ - '0');
                    digits++;
                }
                if (l->p < l->end && *l->p == 'L')
                    l->p++; /* Python 2 long */
                if (!digits)
                    goto bad;
                if (a->ndim == DSL_MAX_RANK) {
                    snprintf(err, errlen, "array has more than %d dimensions",
                             DSL_MAX_RANK);
                    return -1;
                }
                a->shape[a->ndim++] = v;
                if (!eat(l, ',')) {
                    if (!eat(l, ')'))
                        goto bad;
                    break;
                }
            }
            have_shape = true;
        } else {
            snprintf(err, errlen, "unexpected key '%s' in header", key);
            return -1;
        }
        if (!eat(l, ',')) {
            if (!eat(l, '}'))
                goto bad;
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape) {
        snprintf(err, errlen, "header lacks '%s'", !have_descr ? "descr"
                 : !have_order ? "fortran_order" : "shape");
        return -1;
    }
    return 0;
bad:
    snprintf(err, errlen, "malformed header");
    return -1;
}

/* Parse the preamble and header from the first `len` bytes of a file whose
 * total size is fsize. Sets *data_off. */
static int parse_header(const unsigned char *b, size_t len, uint64_t fsize,
                        RtNpy *a, size_t *data_off, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
        snprintf(err, errlen, "not a .npy file (bad magic)");
        return -1;
    }
    int major = b[6];
    size_t hlen, pre;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        pre = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) {
            snprintf(err, errlen, "truncated header");
            return -1;
        }
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
               (size_t)b[11] << 24;
        pre = 12;
    } else {
        snprintf(err, errlen, "unsupported .npy format version %d.%d", major,
                 b[7]);
        return -1;
    }
    if (hlen > NPY_MAX_HEADER) {
        snprintf(err, errlen, "header length %zu is absurd", hlen);
        return -1;
    }
    if (pre + hlen > len) {
        snprintf(err, errlen, "truncated header");
        return -1;
    }
    Lex l = {(const char *)b + pre, (const char *)b + pre + hlen};
    if (memchr(l.p, 0, hlen)) {
        snprintf(err, errlen, "malformed header");
        return -1;
    }
    if (parse_dict(&l, a, err, errlen) != 0)
        return -1;
    skip_ws(&l);
    if (l.p != l.end) {
        snprintf(err, errlen, "malformed header (trailing text)");
        return -1;
    }
    int64_t numel = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] != 0 && numel > INT64_MAX / 16 / a->shape[d]) {
            snprintf(err, errlen, "shape is absurdly large");
            return -1;
        }
        numel *= a->shape[d];
    }
    a->numel = numel;
    uint64_t need = (uint64_t)numel * (uint64_t)dsl_dtype_bytes(a->dtype);
    uint64_t have = fsize - (pre + hlen);
    if (have != need) {
        snprintf(err, errlen, "%s: header says %llu data bytes, file has %llu",
                 have < need ? "truncated data" : "extra data after the array",
                 (unsigned long long)need, (unsigned long long)have);
        return -1;
    }
    *data_off = pre + hlen;
    return 0;
}

int rt_npy_parse(const void *buf, size_t len, RtNpy *out, char *err,
                 size_t errlen)
{
    size_t off;
    if (parse_header(buf, len, len, out, &off, err, errlen) != 0)
        return -1;
    size_t n = len - off;
    if (n) {
        out->data = rt_alloc64(n);
        if (!out->data) {
            snprintf(err, errlen, "out of memory (%zu bytes)", n);
            return -1;
        }
        memcpy(out->data, (const char *)buf + off, n);
    }
    return 0;
}

int rt_npy_read(const char *path, RtNpy *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char msg[256];
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "'%s' is not a regular file", path);
        fclose(fp);
        return -1;
    }
    /* the preamble, then the header it announces */
    unsigned char *hdr = malloc(12 + NPY_MAX_HEADER);
    if (!hdr) {
        snprintf(err, errlen, "out of memory");
        fclose(fp);
        return -1;
    }
    size_t got = fread(hdr, 1, 12, fp);
    size_t want = got;
    if (got >= 10 && memcmp(hdr, "\x93NUMPY", 6) == 0) {
        size_t hlen = hdr[6] == 1 ? ((size_t)hdr[8] | (size_t)hdr[9] << 8)
                                  : got < 12 ? 0
                                  : ((size_t)hdr[8] | (size_t)hdr[9] << 8 |
                                     (size_t)hdr[10] << 16 |
                                     (size_t)hdr[11] << 24);
        size_t pre = hdr[6] == 1 ? 10 : 12;
        if (hlen <= NPY_MAX_HEADER && pre + hlen > got)
            want = got + fread(hdr + got, 1, pre + hlen - got, fp);
    }
    size_t off;
    if (parse_header(hdr, want, (uint64_t)st.st_size, out, &off, msg,
                     sizeof msg) != 0) {
        snprintf(err, errlen, "%s: %s", path, msg);
        free(hdr);
        fclose(fp);
        return -1;
    }
    size_t n = (size_t)st.st_size - off;
    if (n) {
        out->data = rt_alloc64(n);
        if (!out->data) {
            snprintf(err, errlen, "%s: out of memory (%zu bytes)", path, n);
            free(hdr);
            fclose(fp);
            return -1;
        }
        /* the header was read in full; data follows (hdr may hold some
         * bytes of it when the file is tiny) */
        size_t pre_data = want > off ? want - off : 0;
        memcpy(out->data, hdr + off, pre_data);
        if (fseek(fp, (long)(off + pre_data), SEEK_SET) != 0 ||
            fread((char *)out->data + pre_data, 1, n - pre_data, fp) !=
                n - pre_data) {
            snprintf(err, errlen, "%s: read error", path);
            rt_npy_free(out);
            free(hdr);
            fclose(fp);
            return -1;
        }
    }
    free(hdr);
    fclose(fp);
    return 0;
}

void rt_npy_free(RtNpy *a)
{
    free(a->data);
    a->data = NULL;
}

int rt_npy_write(const char *path, int dtype, int ndim, const int64_t *shape,
                 const void *data, char *err, size_t errlen)
{
    const char *descr = rt_npy_descr(dtype);
    if (!descr) {
        snprintf(err, errlen, "%s: numpy has no %s dtype", path,
                 dsl_dtype_name(dtype));
        return -1;
    }
    char h[512];
    int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, "
                     "'shape': (", descr);
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        n += snprintf(h + n, sizeof h - (size_t)n, "%lld,%s",
                      (long long)shape[d], d + 1 < ndim ? " " : "");
        numel *= shape[d];
    }
    if (ndim > 1)
        n--; /* (3, 4) rather than (3, 4,) */
    n += snprintf(h + n, sizeof h - (size_t)n, "), }");
    /* pad with spaces so that the data starts on a 64-byte boundary */
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    memset(h + n, ' ', (size_t)pad);
    n += pad;
    h[n++] = '\n';
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(n & 0xff),
                             (unsigned char)(n >> 8)};
    /* write a temporary file beside the target and rename it into place, so
     * that a failed write (disk full, size limit) leaves no partial file;
     * an existing non-regular file (a device, a FIFO) is written in place */
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (!tmp) {
        snprintf(err, errlen, "cannot write '%s': out of memory", path);
        return -1;
    }
    struct stat st;
    bool replace = stat(path, &st) != 0 || S_ISREG(st.st_mode);
    if (replace)
        snprintf(tmp, plen + 32, "%s.tmp%ld", path, (long)getpid());
    else
        snprintf(tmp, plen + 32, "%s", path);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    size_t bytes = (size_t)numel * (size_t)dsl_dtype_bytes(dtype);
    bool ok = fwrite(pre, 1, 10, fp) == 10 &&
              fwrite(h, 1, (size_t)n, fp) == (size_t)n &&
              (bytes == 0 || fwrite(data, 1, bytes, fp) == bytes);
    int saved = errno;
    if (fclose(fp) != 0) {
        ok = false;
        saved = errno;
    }
    if (ok && replace && rename(tmp, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        if (replace)
            unlink(tmp);
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(saved));
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
