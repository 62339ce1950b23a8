/* npytool.c — a tiny .npy writer/reader for the CLI tests, independent of
 * blkc's own runtime so that it checks the CLI's files from outside.
 *
 *   npytool write PATH DESCR SHAPE V...   SHAPE: "4", "2x3", "-" (0-d)
 *   npytool dump PATH                     prints "DESCR SHAPE: v v v"
 * DESCR is one of <f4 <f8 <f2 <i4 <i8 |i1 |u1 |b1. f2 values are written
 * as their exact f16 encoding of the given (f16-representable) value. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int size_of(const char *d)
{
    return atoi(d + 2);
}

static uint16_t to_f16(double v) /* exact values only (tests use them) */
{
    if (v == 0)
        return signbit(v) ? 0x8000 : 0;
    uint16_t s = v < 0 ? 0x8000 : 0;
    v = fabs(v);
    int e;
    double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
    int ex = e - 1 + 15;
    if (ex <= 0) /* subnormal */
        return s | (uint16_t)lrint(ldexp(v, 24));
    return s | (uint16_t)(ex << 10) | (uint16_t)(lrint(ldexp(m, 11)) & 0x3ff);
}

static double from_f16(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                : ldexp(m | 0x400, e - 25);
    return h & 0x8000 ? -v : v;
}

static int do_write(int argc, char **argv)
{
    const char *path = argv[2], *descr = argv[3], *shape = argv[4];
    char sh[256] = "";
    long n = 1;
    if (strcmp(shape, "-") != 0) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", shape);
        int k = 0;
        for (char *t = strtok(buf, "x"); t; t = strtok(NULL, "x"), k++) {
            long d = atol(t);
            n *= d;
            snprintf(sh + strlen(sh), sizeof sh - strlen(sh), "%ld,%s", d, "");
        }
        if (k > 1)
            sh[strlen(sh) - 1] = 0;
    }
    if (argc - 5 != n) {
        fprintf(stderr, "npytool: %ld values expected\n", n);
        return 1;
    }
    char h[512];
    int hn = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, "
                      "'shape': (%s), }", descr, sh);
    int pad = (64 - (10 + hn + 1) % 64) % 64;
    memset(h + hn, ' ', (size_t)pad);
    hn += pad;
    h[hn++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hn & 0xff, f);
    fputc(hn >> 8, f);
    fwrite(h, 1, (size_t)hn, f);
    for (long i = 0; i < n; i++) {
        double v = atof(argv[5 + i]);
        char c = descr[1];
        int b = size_of(descr);
        unsigned char out[8];
        if (c == 'f' && b == 4) { float x = (float)v; memcpy(out, &x, 4); }
        else if (c == 'f' && b == 8) memcpy(out, &v, 8);
        else if (c == 'f' && b == 2) { uint16_t x = to_f16(v); memcpy(out, &x, 2); }
        else { int64_t x = (int64_t)v; memcpy(out, &x, 8); } /* little-endian */
        fwrite(out, 1, (size_t)b, f);
    }
    return fclose(f) != 0;
}

static int do_dump(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "npytool: cannot open %s\n", path);
        return 1;
    }
    unsigned char pre[10];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY\x01", 7) != 0) {
        fprintf(stderr, "npytool: %s: bad preamble\n", path);
        return 1;
    }
    int hn = pre[8] | pre[9] << 8;
    char h[65536];
    if (fread(h, 1, (size_t)hn, f) != (size_t)hn || (10 + hn) % 64 != 0 ||
        h[hn - 1] != '\n') {
        fprintf(stderr, "npytool: %s: bad header\n", path);
        return 1;
    }
    h[hn] = 0;
    char descr[8] = "", shape[128] = "";
    const char *d = strstr(h, "'descr': '"), *s = strstr(h, "'shape': (");
    if (!d || !s || !strstr(h, "'fortran_order': False")) {
        fprintf(stderr, "npytool: %s: bad header dict\n", path);
        return 1;
    }
    sscanf(d + 10, "%7[^']", descr);
    sscanf(s + 10, "%127[^)]", shape);
    printf("%s (%s):", descr, shape);
    int b = size_of(descr);
    unsigned char v[8];
    while (fread(v, 1, (size_t)b, f) == (size_t)b) {
        double x = 0;
        char c = descr[1];
        if (c == 'f' && b == 4) { float y; memcpy(&y, v, 4); x = y; }
        else if (c == 'f' && b == 8) memcpy(&x, v, 8);
        else if (c == 'f' && b == 2) { uint16_t y; memcpy(&y, v, 2); x = from_f16(y); }
        else if (c == 'i' && b == 4) { int32_t y; memcpy(&y, v, 4); x = y; }
        else if (c == 'i' && b == 8) { int64_t y; memcpy(&y, v, 8); x = (double)y; }
        else if (c == 'i' && b == 1) x = (int8_t)v[0];
        else x = v[0];
        printf(" %.9g", x);
    }
    printf("\n");
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "write") == 0)
        return do_write(argc, argv);
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return do_dump(argv[2]);
    fprintf(stderr, "usage: npytool write PATH DESCR SHAPE V... | dump PATH\n");
    return 2;
}
