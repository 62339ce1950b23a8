/* gpu_print.c — print(...) in CUDA C / HIP C (LANGUAGE.md §7, Debugging).
 *
 * A print's pieces are consecutive IR_PRINT ids: begin (attr 0), text (1)
 * or value (2) pieces, end (3). It prints the line the CPU prints
 * (runtime/khelp.c): `pid (x, y, z):`, then each piece after a space;
 * ints in decimal, floats as C's %g, bools true/false, tiles in full as
 * nested row-major lists followed by `(shape [..])` when rank >= 2.
 *
 * Scalars only: one device printf by thread 0 with a format string made
 * here. With a tile piece the tile's elements live in many threads, so
 * the layout pass leaves a printed tile SHARED (print is not a register
 * reader, gpu_layouts.c), and after a barrier thread 0 builds the line in
 * a local buffer (BLK_PB_CAP bytes, then `...`) with the formatting
 * functions of bk_gpu_print_prelude and writes it with one printf("%s"),
 * so a line never mixes with another instance's; a second barrier keeps
 * the other threads from overwriting the tile while thread 0 reads it.
 * The device printf goes to stdout (the CPU's print goes to stderr).
 *
 * Entries: bk_gpu_emit_print, bk_gpu_print_tiles (whether a module needs
 * bk_gpu_print_prelude). */
#include "gpu_emit.h"

#include <stdio.h>
#include <string.h>

/* Device-side formatting for prints with tiles. blk_pb_g is C's %g
 * (precision 6) computed exactly: the double is m * 2^e2; its decimal
 * digits are those of the integer m * 2^e2 (e2 >= 0) or m * 5^-e2 with
 * the point moved -e2 places (e2 < 0), held in base-1e9 limbs (at most
 * 767 digits); the first 6 are rounded half to even on the exact rest,
 * then %g's rule picks fixed or exponent style and drops trailing zeros.
 * NaN prints as nan / -nan and infinities as inf / -inf, as glibc does. */
const char *const bk_gpu_print_prelude[] = {
    "\n",
    "/* print(...) with tiles (gpu_print.c): thread 0 builds the line */\n",
    "#define BLK_PB_CAP 2048\n",
    "struct BlkPb { int n; bool full; char s[BLK_PB_CAP]; };\n",
    "__device__ inline void blk_pb_c(BlkPb &b, char c)\n",
    "{\n",
    "    if (b.n < BLK_PB_CAP - 8) b.s[b.n++] = c; else b.full = true;\n",
    "}\n",
    "__device__ inline void blk_pb_s(BlkPb &b, const char *s) { while (*s) blk_pb_c(b, *s++); }\n",
    "__device__ inline void blk_pb_u(BlkPb &b, unsigned long long v)\n",
    "{\n",
    "    char t[20];\n",
    "    int k = 0;\n",
    "    do { t[k++] = (char)('0' + v % 10); v /= 10; } while (v);\n",
    "    while (k) blk_pb_c(b, t[--k]);\n",
    "}\n",
    "__device__ inline void blk_pb_i(BlkPb &b, long long v)\n",
    "{\n",
    "    if (v < 0) { blk_pb_c(b, '-'); blk_pb_u(b, 0ull - (unsigned long long)v); }\n",
    "    else blk_pb_u(b, (unsigned long long)v);\n",
    "}\n",
    "__device__ inline void blk_pb_b(BlkPb &b, bool v) { blk_pb_s(b, v ? \"true\" : \"false\"); }\n",
    "/* digit d (0: the most significant) of the base-1e9 number L[0..n),\n",
    " * whose top limb has t digits; 0 past its end */\n",
    "__device__ inline int blk_pb_dig(const unsigned *L, int n, int t, int d)\n",
    "{\n",
    "    int limb, pos;\n",
    "    if (d < t) { limb = n - 1; pos = t - 1 - d; }\n",
    "    else { d -= t; limb = n - 2 - d / 9; pos = 8 - d % 9; }\n",
    "    if (limb < 0) return 0;\n",
    "    unsigned v = L[limb];\n",
    "    while (pos-- > 0) v /= 10;\n",
    "    return (int)(v % 10);\n",
    "}\n",
    "__device__ inline void blk_pb_g(BlkPb &b, double x)\n",
    "{\n",
    "    union { double d; unsigned long long u; } c;\n",
    "    c.d = x;\n",
    "    const bool neg = (c.u >> 63) != 0;\n",
    "    const int be = (int)(c.u >> 52 & 0x7ff);\n",
    "    unsigned long long m = c.u & 0xfffffffffffffull;\n",
    "    if (be == 0x7ff) { blk_pb_s(b, m ? (neg ? \"-nan\" : \"nan\") : (neg ? \"-inf\" : \"inf\")); return; }\n",
    "    if (neg) blk_pb_c(b, '-');\n",
    "    if (be == 0 && m == 0) { blk_pb_c(b, '0'); return; }\n",
    "    const int e2 = (be ? be : 1) - 1075;\n",
    "    if (be) m |= 1ull << 52;\n",
    "    unsigned L[90];\n",
    "    int n = 0;\n",
    "    do { L[n++] = (unsigned)(m % 1000000000u); m /= 1000000000u; } while (m);\n",
    "    for (int k = e2 < 0 ? -e2 : e2; k > 0;) {\n",
    "        int s = e2 > 0 ? (k < 29 ? k : 29) : (k < 12 ? k : 12);\n",
    "        unsigned mul = 1;\n",
    "        for (int i = 0; i < s; i++) mul *= e2 > 0 ? 2u : 5u;\n",
    "        k -= s;\n",
    "        unsigned long long carry = 0;\n",
    "        for (int i = 0; i < n; i++) {\n",
    "            const unsigned long long t = (unsigned long long)L[i] * mul + carry;\n",
    "            L[i] = (unsigned)(t % 1000000000u);\n",
    "            carry = t / 1000000000u;\n",
    "        }\n",
    "        while (carry) { L[n++] = (unsigned)(carry % 1000000000u); carry /= 1000000000u; }\n",
    "    }\n",
    "    int t = 0;\n",
    "    for (unsigned v = L[n - 1]; v; v /= 10) t++;\n",
    "    const int D = t + 9 * (n - 1);\n",
    "    int X = D - 1 + (e2 < 0 ? e2 : 0); /* the leading digit's power of ten */\n",
    "    long long q = 0;\n",
    "    for (int d = 0; d < 6; d++) q = q * 10 + blk_pb_dig(L, n, t, d);\n",
    "    const int r = blk_pb_dig(L, n, t, 6);\n",
    "    bool sticky = false;\n",
    "    for (int d = 7; d < D && !sticky; d++) sticky = blk_pb_dig(L, n, t, d) != 0;\n",
    "    if (r > 5 || (r == 5 && (sticky || (q & 1))))\n",
    "        if (++q == 1000000) { q = 100000; X++; }\n",
    "    char dg[6];\n",
    "    for (int i = 5; i >= 0; i--) { dg[i] = (char)('0' + q % 10); q /= 10; }\n",
    "    int nd = 6;\n",
    "    while (nd > 1 && dg[nd - 1] == '0') nd--;\n",
    "    if (X < -4 || X >= 6) {\n",
    "        blk_pb_c(b, dg[0]);\n",
    "        if (nd > 1) blk_pb_c(b, '.');\n",
    "        for (int i = 1; i < nd; i++) blk_pb_c(b, dg[i]);\n",
    "        blk_pb_c(b, 'e');\n",
    "        blk_pb_c(b, X < 0 ? '-' : '+');\n",
    "        if (X > -10 && X < 10) blk_pb_c(b, '0');\n",
    "        blk_pb_u(b, (unsigned long long)(X < 0 ? -X : X));\n",
    "    } else if (X >= 0) {\n",
    "        for (int i = 0; i <= X; i++) blk_pb_c(b, dg[i]);\n",
    "        if (nd > X + 1) blk_pb_c(b, '.');\n",
    "        for (int i = X + 1; i < nd; i++) blk_pb_c(b, dg[i]);\n",
    "    } else {\n",
    "        blk_pb_s(b, \"0.\");\n",
    "        for (int i = 0; i < -X - 1; i++) blk_pb_c(b, '0');\n",
    "        for (int i = 0; i < nd; i++) blk_pb_c(b, dg[i]);\n",
    "    }\n",
    "}\n",
    "__device__ inline void blk_pb_end(BlkPb &b)\n",
    "{\n",
    "    if (b.full) { b.s[b.n++] = '.'; b.s[b.n++] = '.'; b.s[b.n++] = '.'; }\n",
    "    b.s[b.n++] = '\\n';\n",
    "    b.s[b.n] = 0;\n",
    "    printf(\"%s\", b.s);\n",
    "}\n",
    NULL,
};

/* s as the inside of a C string literal; for a printf format also with
 * % doubled */
static void put_text(DslBuf *o, const char *s, bool fmt)
{
    for (; *s; s++) {
        if (*s == '%' && fmt)
            dsl_buf_put(o, "%%", 2);
        else if (*s == '"' || *s == '\\')
            dsl_buf_printf(o, "\\%c", *s);
        else if (*s == '\n')
            dsl_buf_put(o, "\\n", 2);
        else if (*s == '\t')
            dsl_buf_put(o, "\\t", 2);
        else if ((unsigned char)*s < 32)
            dsl_buf_printf(o, "\\%03o", (unsigned char)*s);
        else
            dsl_buf_put(o, s, 1);
    }
}

static bool has_tile(const IrFunc *f, int id)
{
    for (int i = id + 1; i < f->nins && f->ins[i].op == IR_PRINT && f->ins[i].attr != 3; i++)
        if (f->ins[i].attr == 2 && f->ins[f->ins[i].opnd[0]].type.rank > 0)
            return true;
    return false;
}

bool bk_gpu_print_tiles(const IrModule *m)
{
    for (int k = 0; k < m->nfuncs; k++) {
        const IrFunc *f = m->funcs[k];
        if (f->is_device)
            continue;
        for (int i = 0; i < f->nins; i++)
            if (!f->ins[i].dead && f->ins[i].op == IR_PRINT && f->ins[i].attr == 0 &&
                has_tile(f, i))
                return true;
    }
    return false;
}

/* ------------------------------------------------------------ scalars */

static void emit_scalars(BkGpuEm *em, int id, const char *p0, const char *p1)
{
    const IrFunc *f = em->f;
    DslBuf fmt, args;
    memset(&fmt, 0, sizeof fmt);
    memset(&args, 0, sizeof args);
    dsl_buf_printf(&fmt, "pid (%%d, %%d, %%d):");
    dsl_buf_printf(&args, ", %s, %s, (int)blockIdx.z", p0, p1);
    for (int i = id + 1; i < f->nins && f->ins[i].op == IR_PRINT && f->ins[i].attr != 3; i++) {
        const IrInstr *p = &f->ins[i];
        if (p->attr == 1) {
            dsl_buf_put(&fmt, " ", 1);
            put_text(&fmt, f->msgs[p->ival], true);
            continue;
        }
        int v = p->opnd[0], dt = f->ins[v].type.dtype;
        if (dt == DT_BOOL)
            dsl_buf_printf(&fmt, " %%s"), dsl_buf_printf(&args, ", v%d ? \"true\" : \"false\"", v);
        else if (dt == DT_I64)
            dsl_buf_printf(&fmt, " %%lld"), dsl_buf_printf(&args, ", (long long)v%d", v);
        else if (dt == DT_U64)
            dsl_buf_printf(&fmt, " %%llu"), dsl_buf_printf(&args, ", (unsigned long long)v%d", v);
        else if (dt == DT_U32 || dt == DT_U16 || dt == DT_U8)
            dsl_buf_printf(&fmt, " %%u"), dsl_buf_printf(&args, ", (unsigned)v%d", v);
        else if (!dsl_is_float(dt))
            dsl_buf_printf(&fmt, " %%d"), dsl_buf_printf(&args, ", (int)v%d", v);
        else if (dt == DT_F8E4M3 || dt == DT_F8E5M2)
            dsl_buf_printf(&fmt, " %%g"), dsl_buf_printf(&args, ", (double)blk_%s_to_f32(v%d)",
                                                       dsl_dtype_name(dt), v);
        else
            dsl_buf_printf(&fmt, " %%g"), dsl_buf_printf(&args, ", (double)(float)v%d", v);
    }
    if (fmt.oom || args.oom || !fmt.data || !args.data)
        bk_gpu_fail(em, "out of memory");
    else
        bk_gpu_line(em, "if (blk_tid == 0) printf(\"%s\\n\"%s);", fmt.data, args.data);
    dsl_buf_free(&fmt);
    dsl_buf_free(&args);
}

/* ------------------------------------------------------------ tiles */

/* The call appending value x (a C expression of the compute type of dt). */
static void put_value(BkGpuEm *em, int dt, const char *x)
{
    if (dt == DT_BOOL)
        bk_gpu_line(em, "blk_pb_b(blk_pb, %s);", x);
    else if (dt == DT_U64 || dt == DT_U32 || dt == DT_U16 || dt == DT_U8)
        bk_gpu_line(em, "blk_pb_u(blk_pb, (unsigned long long)(%s));", x);
    else if (!dsl_is_float(dt))
        bk_gpu_line(em, "blk_pb_i(blk_pb, (long long)(%s));", x);
    else
        bk_gpu_line(em, "blk_pb_g(blk_pb, (double)(%s));", x);
}

/* a tile piece: nested lists as khelp.c's blkc_cpu_print_val */
static void emit_tile(BkGpuEm *em, int v)
{
    const IrType *t = &em->f->ins[v].type;
    char x[BK_GPU_EXPR], shp[256] = "";
    int r = t->rank;
    size_t k = 0;
    for (int d = 0; d < r; d++)
        k += (size_t)snprintf(shp + k, sizeof shp - k, "%s%lld", d ? ", " : "",
                              (long long)t->shape[d]);
    bk_gpu_line(em, "{");
    em->indent++;
    bk_gpu_line(em, "const int blk_psh[%d] = {%s};", r, shp);
    bk_gpu_line(em, "int blk_pix[%d] = {0};", r);
    bk_gpu_line(em, "blk_pb_s(blk_pb, \"%.*s\");", r, "[[[[[[[[");
    bk_gpu_line(em, "for (int blk_pe = 0; blk_pe < %lld; blk_pe++) {", (long long)ir_numel(t));
    em->indent++;
    bk_gpu_read(em, v, "blk_pe", x, sizeof x);
    put_value(em, t->dtype, x);
    bk_gpu_line(em, "int d = %d;", r - 1);
    bk_gpu_line(em, "while (d >= 0 && ++blk_pix[d] == blk_psh[d]) { blk_pix[d--] = 0; blk_pb_c(blk_pb, ']'); }");
    bk_gpu_line(em, "if (d >= 0) { blk_pb_s(blk_pb, \", \"); for (int j = d + 1; j < %d; j++) blk_pb_c(blk_pb, '['); }", r);
    em->indent--;
    bk_gpu_line(em, "}");
    if (r >= 2)
        bk_gpu_line(em, "blk_pb_s(blk_pb, \" (shape [%s])\");", shp);
    em->indent--;
    bk_gpu_line(em, "}");
}

static void emit_tiles(BkGpuEm *em, int id, const char *p0, const char *p1)
{
    const IrFunc *f = em->f;
    /* the barrier owed by the tiles' writes is paid before this op
     * (bk_gpu_barrier_before: print has no loop of its own) */
    bk_gpu_line(em, "// print (line %d) with tiles: thread 0 builds the line", f->ins[id].loc.line);
    bk_gpu_line(em, "if (blk_tid == 0) {");
    em->indent++;
    bk_gpu_line(em, "BlkPb blk_pb;");
    bk_gpu_line(em, "blk_pb.n = 0;");
    bk_gpu_line(em, "blk_pb.full = false;");
    bk_gpu_line(em, "blk_pb_s(blk_pb, \"pid (\");");
    bk_gpu_line(em, "blk_pb_i(blk_pb, %s);", p0);
    bk_gpu_line(em, "blk_pb_s(blk_pb, \", \");");
    bk_gpu_line(em, "blk_pb_i(blk_pb, %s);", p1);
    bk_gpu_line(em, "blk_pb_s(blk_pb, \", \");");
    bk_gpu_line(em, "blk_pb_i(blk_pb, (int)blockIdx.z);");
    bk_gpu_line(em, "blk_pb_s(blk_pb, \"):\");");
    for (int i = id + 1; i < f->nins && f->ins[i].op == IR_PRINT && f->ins[i].attr != 3; i++) {
        const IrInstr *p = &f->ins[i];
        if (p->attr == 1) {
            DslBuf s;
            memset(&s, 0, sizeof s);
            dsl_buf_put(&s, " ", 1);
            put_text(&s, f->msgs[p->ival], false);
            if (s.oom || !s.data)
                bk_gpu_fail(em, "out of memory");
            else
                bk_gpu_line(em, "blk_pb_s(blk_pb, \"%s\");", s.data);
            dsl_buf_free(&s);
            continue;
        }
        int v = p->opnd[0];
        bk_gpu_line(em, "blk_pb_c(blk_pb, ' ');");
        if (f->ins[v].type.rank > 0) {
            emit_tile(em, v);
        } else {
            char x[BK_GPU_EXPR];
            bk_gpu_read(em, v, "0", x, sizeof x);
            put_value(em, f->ins[v].type.dtype, x);
        }
    }
    bk_gpu_line(em, "blk_pb_end(blk_pb);");
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_sync(em);
}

void bk_gpu_emit_print(BkGpuEm *em, int id)
{
    if (em->f->ins[id].attr != 0)
        return; /* the pieces are handled at their begin */
    const char *p0 = em->group_m ? "blk_pid0" : "(int)blockIdx.x";
    const char *p1 = em->group_m ? "blk_pid1" : "(int)blockIdx.y";
    if (has_tile(em->f, id))
        emit_tiles(em, id, p0, p1);
    else
        emit_scalars(em, id, p0, p1);
}
