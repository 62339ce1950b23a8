/* gpu_expr.c — C expressions of the GPU emitter: output helpers (lines,
 * errors), storage / compute C types and conversions, how an operand is
 * read at a flat element (fused constants, broadcasts and elementwise ops
 * expanded in place, register tiles as their register), coordinates,
 * literals and the expression of each elementwise op. Shared by every
 * emission file through gpu_emit.h. */
#include "gpu_emit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* ------------------------------------------------------------ helpers */

void bk_gpu_line(BkGpuEm *em, const char *fmt, ...)
{
    va_list ap;
    for (int i = 0; i < em->indent; i++)
        dsl_buf_put(em->o, "    ", 4);
    va_start(ap, fmt);
    dsl_buf_vprintf(em->o, fmt, ap);
    va_end(ap);
    dsl_buf_put(em->o, "\n", 1);
}

void bk_gpu_fail(BkGpuEm *em, const char *fmt, ...)
{
    if (em->fail)
        return;
    em->fail = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(em->err, em->errlen, fmt, ap);
    va_end(ap);
}

const char *bk_gpu_stype(int dt)
{
    switch (dt) {
    case DT_BOOL: return "bool";
    case DT_I8: return "signed char";
    case DT_I16: return "short";
    case DT_I32: return "int";
    case DT_I64: return "long long";
    case DT_U8: return "unsigned char";
    case DT_U16: return "unsigned short";
    case DT_U32: return "unsigned";
    case DT_U64: return "unsigned long long";
    case DT_F16: return "blk_f16";
    case DT_BF16: return "blk_bf16";
    case DT_F32: return "float";
    case DT_F64: return "double";
    case DT_F8E4M3: return "blk_f8e4m3";
    case DT_F8E5M2: return "blk_f8e5m2";
    default: return "void";
    }
}

const char *bk_gpu_ctype(int dt)
{
    switch (dt) {
    case DT_BOOL: return "bool";
    case DT_I8: case DT_I16: case DT_I32: case DT_U8: case DT_U16: return "int";
    case DT_I64: return "long long";
    case DT_U32: return "unsigned";
    case DT_U64: return "unsigned long long";
    case DT_F64: return "double";
    case DT_F16: case DT_BF16: case DT_F32: case DT_F8E4M3: case DT_F8E5M2:
        return "float";
    default: return "void";
    }
}

static bool is_narrow_float(int dt)
{
    return dt == DT_F16 || dt == DT_BF16 || dt == DT_F8E4M3 || dt == DT_F8E5M2;
}

/* "f16", "bf16", "f8e4m3" ... for the conversion function names */
static const char *narrow_tag(int dt)
{
    return dsl_dtype_name(dt);
}

void bk_gpu_to_c(char *buf, size_t n, int dt, const char *x)
{
    if (is_narrow_float(dt))
        snprintf(buf, n, "blk_%s_to_f32(%s)", narrow_tag(dt), x);
    else
        snprintf(buf, n, "%s", x);
}

void bk_gpu_to_s(char *buf, size_t n, int dt, const char *x)
{
    if (is_narrow_float(dt))
        snprintf(buf, n, "blk_f32_to_%s(%s)", narrow_tag(dt), x);
    else if (dt == DT_BOOL)
        snprintf(buf, n, "(bool)(%s)", x);
    else if (!strcmp(bk_gpu_stype(dt), bk_gpu_ctype(dt)))
        snprintf(buf, n, "%s", x); /* same C type: no conversion */
    else
        snprintf(buf, n, "(%s)(%s)", bk_gpu_stype(dt), x);
}

void bk_gpu_name(BkGpuEm *em, int v, char *buf, size_t n)
{
    (void)em;
    snprintf(buf, n, "v%d", v);
}


static void put(BkGpuEm *em, char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(BkGpuEm *em, char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n)
        bk_gpu_fail(em, "internal: a fused expression of kernel %s is too long",
             em->f->name);
}

/* The SLICE value whose registers the broadcast v reads where it is read:
 * v = x[:, None] (x reshaped to the parent type with a last dim of 1,
 * broadcast to the parent type) inside a blocked loop of the parent
 * type; else -1. */
static int slice_bcast(const BkGpuEm *em, int v)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[v];
    if (!em->lay || in->op != IR_BCAST || !em->blk_t || !ir_shape_eq(em->blk_t, &in->type))
        return -1;
    const IrType *a = &f->ins[in->opnd[0]].type;
    int r = bk_gpu_slice_root(em, in->opnd[0]);
    if (r < 0 || a->rank != in->type.rank || a->shape[a->rank - 1] != 1 ||
        !ir_shape_eq(&f->ins[em->spar[r]].type, &in->type))
        return -1;
    for (int d = 0; d + 1 < a->rank; d++)
        if (a->shape[d] != in->type.shape[d])
            return -1;
    return r;
}

/* The MROW value whose row registers the broadcast v = x[:, None] (x an
 * [M, 1] reshape of it, v [M, N]) reads in a loop over the registers of
 * an MMA tile of the same rows (em->reg_var); else -1. */
static int mrow_bcast(const BkGpuEm *em, int v)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[v];
    if (!em->lay || !em->mrow || in->op != IR_BCAST || em->reg_var < 0 || in->type.rank != 2)
        return -1;
    const IrType *a = &f->ins[in->opnd[0]].type;
    int r = bk_gpu_mrow_root(em, in->opnd[0]);
    if (r < 0 || a->rank != 2 || a->shape[1] != 1 || a->shape[0] != in->type.shape[0] ||
        !bk_gpu_same_rows(em, em->reg_var, em->mrow[r]))
        return -1;
    return r;
}

static void bcast_raw(BkGpuEm *em, int v, const char *idx, char *buf, size_t n);

static void raw_at(BkGpuEm *em, int v, const char *idx, char *buf, size_t n)
{
    const IrInstr *in = &em->f->ins[v];
    if (in->type.rank == 0) {
        snprintf(buf, n, "v%d", v);
    } else if (BK_GPU_RV(em, v) && !em->virt[v] && em->reg_var >= 0 &&
               bk_gpu_same_grid(em, em->reg_var, BK_GPU_RV_VAR(em, v))) {
        /* a register value in a loop over registers of its layout */
        snprintf(buf, n, "var%d[blk_r]", BK_GPU_RV_VAR(em, v));
    } else if (em->lay && em->lay[v] == BK_LAY_REG) {
        snprintf(buf, n, "0");
        bk_gpu_fail(em, "internal: register value v%d read at %s outside its registers' loop",
                    v, idx);
    } else if (bk_gpu_mrow_root(em, v) >= 0) {
        /* an MROW value: its registers in a loop over rows of its layout,
         * else its shared copy */
        int r = bk_gpu_mrow_root(em, v);
        char rg[32];
        bk_gpu_mrow_reg(em, r, rg, sizeof rg);
        if (em->mr_loop >= 0 && !strcmp(idx, "e") &&
            ir_numel(&in->type) == ir_numel(&em->f->ins[r].type) &&
            bk_gpu_same_rows(em, em->mr_loop, em->mrow[r])) {
            snprintf(buf, n, "%s[blk_s]", rg);
        } else if (em->mrcvt[r]) {
            snprintf(buf, n, "BLK_SLD(v%d_s[%s])", r, idx);
        } else {
            snprintf(buf, n, "0");
            bk_gpu_fail(em, "internal: row value v%d read at %s outside its layout", r, idx);
        }
    } else if (em->lay && bk_gpu_slice_root(em, v) >= 0) {
        /* a SLICE value: its registers in a loop over them, else its copy */
        int r = bk_gpu_slice_root(em, v);
        if (em->sl_par && em->blk == 1 && !strcmp(idx, "e") &&
            ir_numel(&in->type) == ir_numel(&em->f->ins[r].type) &&
            ir_shape_eq(em->sl_par, &em->f->ins[em->spar[r]].type)) {
            char rg[32];
            bk_gpu_slice_reg(em, r, rg, sizeof rg);
            snprintf(buf, n, "%s[blk_k]", rg);
        } else if (em->scvt[r]) {
            snprintf(buf, n, "BLK_SLD(v%d_s[%s])", r, idx);
        } else {
            snprintf(buf, n, "0");
            bk_gpu_fail(em, "internal: slice tile v%d read at %s outside its layout", r, idx);
        }
    } else if (em->lay && em->lay[v] == BK_LAY_MMA && in->op == IR_VGET) {
        /* inside a loop over the var's registers (gpu_mma.c), element
         * blk_r; anywhere else the register would be another element */
        snprintf(buf, n, "var%d[blk_r]", in->param);
        if (em->reg_var != in->param)
            bk_gpu_fail(em, "internal: mma var %s read at %s outside its registers' loop",
                        em->f->vars[in->param].name, idx);
    } else if (em->lay && em->lay[v] == BK_LAY_BLOCKED) {
        /* registers: only this thread's own element of a blocked loop */
        if (em->blk > 1 && !strcmp(idx, "e"))
            snprintf(buf, n, "v%d[blk_q]", v);
        else if (em->blk == 1 && !strcmp(idx, "e + blk_j"))
            snprintf(buf, n, "v%d[blk_k * %d + blk_j]", v, bk_gpu_blk_w(em, &in->type));
        else {
            snprintf(buf, n, "0");
            bk_gpu_fail(em, "internal: blocked tile v%d read at %s outside its layout", v, idx);
        }
    } else if (em->virt && em->virt[v] && in->op == IR_CONST) {
        char lit[128];
        bk_gpu_literal(lit, sizeof lit, in->type.dtype, in);
        bk_gpu_to_s(buf, n, in->type.dtype, lit);
    } else if (em->virt && em->virt[v] && in->op == IR_ARANGE) {
        snprintf(buf, n, "(%lld + (int)(%s))", (long long)in->ival, idx);
    } else if (em->virt && em->virt[v] && in->op == IR_RESHAPE) {
        bk_gpu_raw(em, in->opnd[0], idx, buf, n); /* the same flat element */
    } else if (em->virt && em->virt[v] && (ir_op_flags[in->op] & F_ELEM)) {
        /* fused elementwise op: its expression over its operands at idx */
        char o[3][BK_GPU_EXPR / 4], x[BK_GPU_EXPR];
        for (int i = 0; i < 3; i++) {
            o[i][0] = 0;
            if (i < ir_op_nopnd[in->op])
                bk_gpu_read(em, in->opnd[i], idx, o[i], sizeof o[i]);
        }
        bk_gpu_elem_expr(em, v, o[0], o[1], o[2], x, sizeof x);
        if (strlen(x) + 1 >= sizeof x)
            bk_gpu_fail(em, "internal: a fused expression of kernel %s is too long",
                 em->f->name);
        char s[BK_GPU_EXPR];
        bk_gpu_to_s(s, sizeof s, in->type.dtype, x);
        put(em, buf, n, "%s", s);
    } else if (em->virt && em->virt[v] && mrow_bcast(em, v) >= 0) {
        /* x[:, None] of an MROW x per register of an MMA tile of the same
         * rows: the register of that register's row */
        char sl[160], rg[32];
        int S;
        bk_gpu_mma_slot(em, em->reg_var, "blk_r", sl, sizeof sl, &S);
        bk_gpu_mrow_reg(em, mrow_bcast(em, v), rg, sizeof rg);
        snprintf(buf, n, "%s[%s]", rg, sl);
    } else if (em->rowc && em->rowc[v] &&
               em->reg_var == (em->rowc[v] > 0 ? em->rowc[v] - 1 : -1 - em->rowc[v])) {
        /* x[:, None] / x[None, :] per register: this lane's rows / columns,
         * loaded before the loop */
        char sl[160];
        int S;
        bk_gpu_mma_slot(em, em->rowc[v] > 0 ? em->reg_var : -1 - em->reg_var, "blk_r", sl,
                        sizeof sl, &S);
        snprintf(buf, n, "blk_rc%d[%s]", v, sl);
    } else if (em->virt && em->virt[v] && slice_bcast(em, v) >= 0) {
        /* x[:, None] of a SLICE x in its parent's blocked loop: the row of
         * run blk_k is the one register blk_k of the slice holds */
        char rg[32];
        bk_gpu_slice_reg(em, slice_bcast(em, v), rg, sizeof rg);
        snprintf(buf, n, "%s[blk_k]", rg);
    } else if (em->virt && em->virt[v] && in->op == IR_PERMUTE) {
        /* read only by register dots, which read its operand (gpu_mma.c) */
        snprintf(buf, n, "0");
        bk_gpu_fail(em, "internal: fused transpose v%d read at %s outside a dot", v, idx);
    } else if (em->virt && em->virt[v]) { /* BCAST: index the operand */
        bcast_raw(em, v, idx, buf, n);
    } else { /* a tile in shared memory, or a var's array */
        snprintf(buf, n, "BLK_SLD(v%d[%s])", v, idx);
    }
}

/* Broadcast v at flat element idx: its operand at the element the
 * coordinates of idx name. Each coordinate repeats idx, so nested
 * broadcasts of high-rank tiles (a reduction over broadcast(x + y, ...)
 * of 8-D tiles) grow the index fast: the pieces live on the heap, sized
 * from idx, and only the result's buffer limits it (issue 12; they were
 * 300 / 400 / 1200 bytes, cut silently: tests/emu/tbufs.blk). */
static void bcast_raw(BkGpuEm *em, int v, const char *idx, char *buf, size_t n)
{
    const IrInstr *in = &em->f->ins[v];
    const IrInstr *a = &em->f->ins[in->opnd[0]];
    size_t ne = strlen(idx) + 3, nc = ne + 64, nx = (size_t)a->type.rank * (nc + 32) + 2;
    char *e = malloc(ne), *c = malloc(nc), *ix = malloc(nx);
    if (!e || !c || !ix) {
        free(e);
        free(c);
        free(ix);
        snprintf(buf, n, "0");
        bk_gpu_fail(em, "out of memory");
        return;
    }
    size_t k = 0;
    snprintf(e, ne, "(%s)", idx);
    ix[0] = 0;
    long long st = 1;
    for (int j = a->type.rank - 1; j >= 0; j--) {
        int i = j + (in->type.rank - a->type.rank);
        if (a->type.shape[j] != 1) {
            bk_gpu_coord(c, nc, &in->type, i, e);
            k += (size_t)snprintf(ix + k, nx - k, "%s%s * %lld", k ? " + " : "", c, st);
        }
        st *= a->type.shape[j];
    }
    bk_gpu_raw(em, in->opnd[0], k ? ix : "0", buf, n);
    free(e);
    free(c);
    free(ix);
}

void bk_gpu_raw(BkGpuEm *em, int v, const char *idx, char *buf, size_t n)
{
    raw_at(em, v, idx, buf, n);
    /* every form above ends in a snprintf into buf: a full buffer is a
     * cut expression, never valid C */
    if (n && strlen(buf) + 1 >= n)
        bk_gpu_fail(em, "internal: a fused expression of kernel %s is too long",
                    em->f->name);
}

void bk_gpu_read(BkGpuEm *em, int v, const char *idx, char *buf, size_t n)
{
    char raw[BK_GPU_EXPR];
    bk_gpu_raw(em, v, idx, raw, sizeof raw);
    char tmp[BK_GPU_EXPR];
    bk_gpu_to_c(tmp, sizeof tmp, em->f->ins[v].type.dtype, raw);
    put(em, buf, n, "%s", tmp);
}

void bk_gpu_coord(char *buf, size_t n, const IrType *t, int k, const char *e)
{
    long long st = 1;
    for (int i = k + 1; i < t->rank; i++)
        st *= t->shape[i];
    if (t->rank == 1 || (k == 0 && st == 1))
        snprintf(buf, n, "%s", e);
    else if (k == 0)
        snprintf(buf, n, "(%s / %lld)", e, st);
    else if (st == 1)
        snprintf(buf, n, "(%s %% %d)", e, (int)t->shape[k]);
    else
        snprintf(buf, n, "((%s / %lld) %% %d)", e, st, (int)t->shape[k]);
}

void bk_gpu_min_lit(char *buf, size_t n, int dt)
{
    switch (dt) {
    case DT_BOOL: snprintf(buf, n, "0"); break;
    case DT_I8: snprintf(buf, n, "-128"); break;
    case DT_I16: snprintf(buf, n, "-32768"); break;
    case DT_I32: snprintf(buf, n, "(-2147483647 - 1)"); break;
    case DT_I64: snprintf(buf, n, "(-9223372036854775807LL - 1)"); break;
    case DT_U8: case DT_U16: case DT_U32: snprintf(buf, n, "0u"); break;
    case DT_U64: snprintf(buf, n, "0ull"); break;
    case DT_F64: snprintf(buf, n, "__longlong_as_double(0xfff0000000000000ull)"); break;
    default: snprintf(buf, n, "__int_as_float(0xff800000)"); break;
    }
}

void bk_gpu_max_lit(char *buf, size_t n, int dt)
{
    switch (dt) {
    case DT_BOOL: snprintf(buf, n, "1"); break;
    case DT_I8: snprintf(buf, n, "127"); break;
    case DT_I16: snprintf(buf, n, "32767"); break;
    case DT_I32: snprintf(buf, n, "2147483647"); break;
    case DT_I64: snprintf(buf, n, "9223372036854775807LL"); break;
    case DT_U8: snprintf(buf, n, "255u"); break;
    case DT_U16: snprintf(buf, n, "65535u"); break;
    case DT_U32: snprintf(buf, n, "4294967295u"); break;
    case DT_U64: snprintf(buf, n, "18446744073709551615ull"); break;
    case DT_F64: snprintf(buf, n, "__longlong_as_double(0x7ff0000000000000ull)"); break;
    default: snprintf(buf, n, "__int_as_float(0x7f800000)"); break;
    }
}

/* A literal of dtype dt in its compute type. */
void bk_gpu_literal(char *buf, size_t n, int dt, const IrInstr *in)
{
    if (dsl_is_float(dt)) {
        double v = in->fval;
        bool dbl = dt == DT_F64;
        if (isnan(v))
            snprintf(buf, n, dbl ? "__longlong_as_double(0x7ff8000000000000ull)"
                                 : "__int_as_float(0x7fc00000)");
        else if (isinf(v) && v > 0)
            bk_gpu_max_lit(buf, n, dbl ? DT_F64 : DT_F32);
        else if (isinf(v))
            bk_gpu_min_lit(buf, n, dbl ? DT_F64 : DT_F32);
        else {
            char t[64];
            if (dbl)
                snprintf(t, sizeof t, "%.17g", v);
            else
                snprintf(t, sizeof t, "%.9g", (double)(float)v);
            bool dot = strpbrk(t, ".e") != NULL;
            snprintf(buf, n, "%s%s%s", t, dot ? "" : ".0", dbl ? "" : "f");
        }
        return;
    }
    long long v = (long long)in->ival;
    switch (dt) {
    case DT_BOOL: snprintf(buf, n, "%s", v ? "true" : "false"); break;
    case DT_I64:
        if (v == INT64_MIN)
            snprintf(buf, n, "(-9223372036854775807LL - 1)");
        else
            snprintf(buf, n, "%lldLL", v);
        break;
    case DT_U64: snprintf(buf, n, "%lluull", (unsigned long long)v); break;
    case DT_U32: snprintf(buf, n, "%lluu", (unsigned long long)(uint32_t)v); break;
    default:
        if (v == INT32_MIN)
            snprintf(buf, n, "(-2147483647 - 1)");
        else
            snprintf(buf, n, "%lld", v);
        break;
    }
}

static const char *fn1(int op, bool dbl)
{
    switch (op) {
    case IR_EXP: return dbl ? "exp" : "expf";
    case IR_EXP2: return dbl ? "exp2" : "exp2f";
    case IR_LOG: return dbl ? "log" : "logf";
    case IR_LOG2: return dbl ? "log2" : "log2f";
    case IR_SQRT: return dbl ? "sqrt" : "sqrtf";
    case IR_RSQRT: return dbl ? "rsqrt" : "rsqrtf";
    case IR_SIN: return dbl ? "sin" : "sinf";
    case IR_COS: return dbl ? "cos" : "cosf";
    case IR_TANH: return dbl ? "tanh" : "tanhf";
    case IR_ERF: return dbl ? "erf" : "erff";
    case IR_FLOOR: return dbl ? "floor" : "floorf";
    case IR_CEIL: return dbl ? "ceil" : "ceilf";
    case IR_LOG1P: return dbl ? "log1p" : "log1pf";
    case IR_EXPM1: return dbl ? "expm1" : "expm1f";
    case IR_TAN: return dbl ? "tan" : "tanf";
    case IR_ATAN: return dbl ? "atan" : "atanf";
    case IR_SINH: return dbl ? "sinh" : "sinhf";
    case IR_COSH: return dbl ? "cosh" : "coshf";
    case IR_ROUND: return dbl ? "rint" : "rintf";
    case IR_TRUNC: return dbl ? "trunc" : "truncf";
    case IR_POW: return dbl ? "pow" : "powf";
    case IR_ATAN2: return dbl ? "atan2" : "atan2f";
    default: return "?";
    }
}

/* The compute-typed expression of elementwise op `id` over operands a, b, c
 * (already compute-typed). */
void bk_gpu_elem_expr(BkGpuEm *em, int id, const char *a, const char *b,
                      const char *c, char *x, size_t n)
{
    const IrInstr *in = &em->f->ins[id];
    int dt = in->opnd[0] >= 0 ? em->f->ins[in->opnd[0]].type.dtype : in->type.dtype;
    bool fl = dsl_is_float(dt), dbl = dt == DT_F64;
    int bits = dsl_dtype_bytes(dt) * 8;
    if (em->nfold && bk_gpu_split_true(em, id)) { /* a full step of a split loop */
        snprintf(x, n, "true");
        return;
    }
    switch (in->op) {
    case IR_NEG: snprintf(x, n, "-%s", a); break;
    case IR_NOT: snprintf(x, n, "!%s", a); break;
    case IR_BITNOT: snprintf(x, n, "~%s", a); break;
    case IR_ABS:
        if (fl)
            snprintf(x, n, "%s(%s)", dbl ? "fabs" : "fabsf", a);
        else if (dsl_dtype_kind(dt) == 'u')
            snprintf(x, n, "%s", a);
        else
            snprintf(x, n, "(%s < 0 ? -%s : %s)", a, a, a);
        break;
    case IR_SIGMOID:
        snprintf(x, n, dbl ? "(1.0 / (1.0 + exp(-%s)))" : "(1.0f / (1.0f + expf(-%s)))", a);
        break;
    case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2: case IR_SQRT:
    case IR_RSQRT: case IR_SIN: case IR_COS: case IR_TANH: case IR_ERF:
    case IR_FLOOR: case IR_CEIL: case IR_LOG1P: case IR_EXPM1: case IR_TAN:
    case IR_ATAN: case IR_SINH: case IR_COSH: case IR_ROUND: case IR_TRUNC:
        /* f32 exp2: the prelude's blk_exp2f (one MUFU.EX2 on sm_80+ CUDA,
         * results below 2^-126 flushed to +0) unless BLKC_GPU_NOEX2FTZ */
        if (in->op == IR_EXP2 && !dbl && !em->noex2ftz)
            snprintf(x, n, "blk_exp2f(%s)", a);
        else
            snprintf(x, n, "%s(%s)", fn1(in->op, dbl), a);
        break;
    case IR_POW: case IR_ATAN2:
        snprintf(x, n, "%s(%s, %s)", fn1(in->op, dbl), a, b);
        break;
    case IR_BITCAST: {
        int to = in->type.dtype;
        int fk = dsl_dtype_kind(dt), tk = dsl_dtype_kind(to);
        int bytes = dsl_dtype_bytes(to);
        if (fk != 'f' && tk != 'f')
            snprintf(x, n, "(%s)%s", bk_gpu_ctype(to), a);
        else if (bytes == 4 && fk == 'f')
            snprintf(x, n, "(%s)__float_as_uint(%s)", bk_gpu_ctype(to), a);
        else if (bytes == 4)
            snprintf(x, n, "__uint_as_float((unsigned)%s)", a);
        else if (bytes == 8 && fk == 'f')
            snprintf(x, n, "(%s)__double_as_longlong(%s)", bk_gpu_ctype(to), a);
        else if (bytes == 8)
            snprintf(x, n, "__longlong_as_double((long long)%s)", a);
        else {
            bk_gpu_fail(em, "bitcast of %s to %s is not supported on GPUs yet",
                        dsl_dtype_name(dt), dsl_dtype_name(to));
            snprintf(x, n, "0");
        }
        break;
    }
    case IR_CVT: {
        int to = in->type.dtype;
        if (to == DT_BOOL)
            snprintf(x, n, "(%s != 0)", a);
        else if (fl && dsl_is_int(to))
            snprintf(x, n, "(%s != %s ? (%s)0 : (%s)%s)", a, a,
                     bk_gpu_stype(to), bk_gpu_stype(to), a);
        else
            snprintf(x, n, "(%s)%s", bk_gpu_ctype(to), a);
        break;
    }
    case IR_ADD: snprintf(x, n, "(%s + %s)", a, b); break;
    case IR_SUB: snprintf(x, n, "(%s - %s)", a, b); break;
    case IR_MUL: snprintf(x, n, "(%s * %s)", a, b); break;
    case IR_DIV:
        if (fl)
            snprintf(x, n, "(%s / %s)", a, b);
        else
            snprintf(x, n, "(%s == 0 ? 0 : %s / %s)", b, a, b);
        break;
    case IR_REM:
        if (fl)
            snprintf(x, n, "%s(%s, %s)", dbl ? "fmod" : "fmodf", a, b);
        else
            snprintf(x, n, "(%s == 0 ? 0 : %s %% %s)", b, a, b);
        break;
    case IR_AND: snprintf(x, n, "(%s & %s)", a, b); break;
    case IR_OR: snprintf(x, n, "(%s | %s)", a, b); break;
    case IR_XOR: snprintf(x, n, "(%s ^ %s)", a, b); break;
    case IR_SHL: snprintf(x, n, "(%s << (%s & %d))", a, b, bits - 1); break;
    case IR_SHR: snprintf(x, n, "(%s >> (%s & %d))", a, b, bits - 1); break;
    case IR_EQ: snprintf(x, n, "(%s == %s)", a, b); break;
    case IR_NE: snprintf(x, n, "(%s != %s)", a, b); break;
    case IR_LT: snprintf(x, n, "(%s < %s)", a, b); break;
    case IR_LE: snprintf(x, n, "(%s <= %s)", a, b); break;
    case IR_GT: snprintf(x, n, "(%s > %s)", a, b); break;
    case IR_GE: snprintf(x, n, "(%s >= %s)", a, b); break;
    case IR_MAX: snprintf(x, n, "blk_max(%s, %s)", a, b); break;
    case IR_MIN: snprintf(x, n, "blk_min(%s, %s)", a, b); break;
    case IR_FMA:
        if (fl)
            snprintf(x, n, "%s(%s, %s, %s)", dbl ? "fma" : "fmaf", a, b, c);
        else
            snprintf(x, n, "(%s * %s + %s)", a, b, c);
        break;
    case IR_SELECT: snprintf(x, n, "(%s ? %s : %s)", a, b, c); break;
    default: snprintf(x, n, "0"); break;
    }
}
