/* gpu_emit.c — Core IR -> CUDA C / HIP C (the part both dialects share).
 *
 * The scheme favours obvious correctness: scalars are registers computed
 * redundantly by every thread (control flow is uniform per block); a tile
 * lives in dynamic shared memory, row-major, unless the layout pass
 * (gpu_layouts.c) keeps it in registers (gpu_mma.c); a shared tile op is
 * one block-strided loop `for (e = tid; e < N; e += NT)` followed by
 * __syncthreads() where gpu_sync.c cannot leave it out. Shared memory is reused between tiles whose live ranges
 * do not overlap (first fit over linear positions, where a use inside a loop
 * keeps a value defined outside it alive to the loop's end). RESHAPE and,
 * when no store to the var intervenes, VGET of a tile var alias storage.
 * Reductions, scans, dot and atomics are in gpu_ops.c. */
#include "gpu_emit.h"

#include <math.h>
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

void bk_gpu_raw(BkGpuEm *em, int v, const char *idx, char *buf, size_t n)
{
    const IrInstr *in = &em->f->ins[v];
    if (in->type.rank == 0) {
        snprintf(buf, n, "v%d", v);
    } else if (em->lay && em->lay[v] == BK_LAY_MMA && in->op == IR_VGET) {
        /* inside a loop over the var's registers (gpu_mma.c) */
        snprintf(buf, n, "var%d[blk_r]", in->param);
    } else if (em->virt && em->virt[v] && in->op == IR_CONST) {
        char lit[128];
        bk_gpu_literal(lit, sizeof lit, in->type.dtype, in);
        bk_gpu_to_s(buf, n, in->type.dtype, lit);
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
    } else if (em->virt && em->virt[v]) { /* BCAST: index the operand */
        const IrInstr *a = &em->f->ins[in->opnd[0]];
        char e[300], c[400], ix[1200];
        size_t k = 0;
        snprintf(e, sizeof e, "(%s)", idx);
        ix[0] = 0;
        long long st = 1;
        for (int j = a->type.rank - 1; j >= 0; j--) {
            int i = j + (in->type.rank - a->type.rank);
            if (a->type.shape[j] != 1) {
                bk_gpu_coord(c, sizeof c, &in->type, i, e);
                k += (size_t)snprintf(ix + k, k < sizeof ix ? sizeof ix - k : 0,
                                      "%s%s * %lld", k ? " + " : "", c, st);
            }
            st *= a->type.shape[j];
        }
        bk_gpu_raw(em, in->opnd[0], k ? ix : "0", buf, n);
    } else {
        snprintf(buf, n, "v%d[%s]", v, idx);
    }
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

/* ------------------------------------------------------------ emission */

void bk_gpu_sync(BkGpuEm *em)
{
    bk_gpu_line(em, "__syncthreads();");
    em->nacc = 0;
    em->seg_gread = em->seg_gwrite = em->pending = false;
}

static void sync(BkGpuEm *em)
{
    bk_gpu_sync(em);
}

/* Declare tile value id's storage pointer. */
void bk_gpu_decl_tile(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    const char *t = bk_gpu_stype(in->type.dtype);
    char ty[128];
    ir_type_str(&in->type, ty, sizeof ty);
    if (em->var_of[id] >= 0)
        bk_gpu_line(em, "%s *v%d = var%d; /* %s, reads the var in place */", t,
                    id, em->var_of[id], ty);
    else if (em->alias[id] != id)
        bk_gpu_line(em, "%s *v%d = v%d; /* %s, same storage */", t, id,
                    em->f->ins[id].opnd[0], ty);
    else
        bk_gpu_line(em, "%s *v%d = (%s *)(blk_smem + %lld); /* %s */", t, id, t,
                    em->off[id], ty);
}

void bk_gpu_loop_open(BkGpuEm *em, const IrType *t)
{
    bk_gpu_line(em, "for (int e = blk_tid; e < %lld; e += %d) {",
                (long long)ir_numel(t), em->nt);
    em->indent++;
}

/* The barrier after a tile op's loop is left to gpu_sync.c when the op was
 * checked (bk_gpu_barrier_before): the next op adds it if it must. */
void bk_gpu_loop_close(BkGpuEm *em)
{
    em->indent--;
    bk_gpu_line(em, "}");
    if (em->nosyncelim || !em->seg_ok)
        sync(em);
    else
        em->pending = true;
}

/* Assign the compute-typed expression `x` to value id (tile: at [e]). */
static void assign(BkGpuEm *em, int id, const char *x)
{
    const IrInstr *in = &em->f->ins[id];
    char s[BK_GPU_EXPR];
    bk_gpu_to_s(s, sizeof s, in->type.dtype, x);
    if (in->type.rank > 0)
        bk_gpu_line(em, "v%d[e] = %s;", id, s);
    else
        bk_gpu_line(em, "const %s v%d = %s;", bk_gpu_stype(in->type.dtype), id, s);
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
    case IR_FLOOR: case IR_CEIL:
        snprintf(x, n, "%s(%s)", fn1(in->op, dbl), a);
        break;
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

static void emit_elem(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    char o[3][BK_GPU_EXPR / 4], x[BK_GPU_EXPR];
    int k = ir_op_nopnd[in->op];
    for (int i = 0; i < 3; i++)
        o[i][0] = 0;
    for (int i = 0; i < k && i < 3; i++)
        bk_gpu_read(em, in->opnd[i], "e", o[i], sizeof o[i]);
    /* bool & | ^ give int in C++; the assignment converts back */
    if (in->type.rank > 0 && em->virt[id]) {
        bk_gpu_line(em, "/* v%d = %s: fused into its use */", id, ir_op_names[in->op]);
        return;
    }
    bk_gpu_elem_expr(em, id, o[0], o[1], o[2], x, sizeof x);
    if (in->type.rank == 0) {
        assign(em, id, x);
        return;
    }
    bk_gpu_decl_tile(em, id);
    bk_gpu_loop_open(em, &in->type);
    assign(em, id, x);
    bk_gpu_loop_close(em);
}

static void emit_const(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    char lit[128];
    bk_gpu_literal(lit, sizeof lit, in->type.dtype, in);
    if (in->type.rank == 0) {
        assign(em, id, lit);
        return;
    }
    if (em->virt[id]) {
        bk_gpu_line(em, "/* v%d = splat %s, computed where it is read */", id, lit);
        return;
    }
    bk_gpu_decl_tile(em, id);
    bk_gpu_loop_open(em, &in->type);
    assign(em, id, lit);
    bk_gpu_loop_close(em);
}

/* BCAST, PERMUTE, and RESHAPE that cannot alias (scalar on either side). */
static void emit_shape(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    const IrInstr *a = &em->f->ins[in->opnd[0]];
    char idx[600], c[128], rd[BK_GPU_EXPR];
    if (in->type.rank == 0) { /* reshape of a one-element tile to a scalar */
        snprintf(c, sizeof c, "v%d[0]", in->opnd[0]);
        bk_gpu_line(em, "const %s v%d = %s;", bk_gpu_stype(in->type.dtype), id, c);
        return;
    }
    if (in->op == IR_RESHAPE && em->alias[id] != id) {
        bk_gpu_decl_tile(em, id);
        return;
    }
    if (em->virt[id]) {
        bk_gpu_line(em, "/* v%d = broadcast of v%d, computed where it is read */",
                    id, in->opnd[0]);
        return;
    }
    if (a->type.rank == 0) {
        snprintf(idx, sizeof idx, "0");
    } else if (in->op == IR_RESHAPE) {
        snprintf(idx, sizeof idx, "e");
    } else {
        /* operand element offset from the result coordinates */
        long long ost[IR_MAX_RANK], s = 1;
        for (int j = a->type.rank - 1; j >= 0; j--) {
            ost[j] = s;
            s *= a->type.shape[j];
        }
        size_t k = 0;
        idx[0] = 0;
        for (int i = 0; i < in->type.rank; i++) {
            int j;
            if (in->op == IR_PERMUTE)
                j = in->perm[i];
            else {
                j = i - (in->type.rank - a->type.rank);
                if (j < 0 || a->type.shape[j] == 1)
                    continue;
            }
            bk_gpu_coord(c, sizeof c, &in->type, i, "e");
            k += (size_t)snprintf(idx + k, sizeof idx - k, "%s%s * %lld",
                                  k ? " + " : "", c, ost[j]);
            if (k >= sizeof idx)
                break;
        }
        if (!k)
            snprintf(idx, sizeof idx, "0");
    }
    bk_gpu_decl_tile(em, id);
    bk_gpu_loop_open(em, &in->type);
    bk_gpu_raw(em, in->opnd[0], idx, rd, sizeof rd);
    bk_gpu_line(em, "v%d[e] = %s;", id, rd);
    bk_gpu_loop_close(em);
}

static void emit_arange(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    bk_gpu_decl_tile(em, id);
    bk_gpu_loop_open(em, &in->type);
    bk_gpu_line(em, "v%d[e] = %lld + e;", id, (long long)in->ival);
    bk_gpu_loop_close(em);
}

/* ------------------------------------------------------------ memory
 * Loads, stores and views are in gpu_mem.c. */

bool bk_gpu_uses_ranks(const IrFunc *f)
{
    for (int i = 0; i < f->nins; i++) {
        const IrInstr *in = &f->ins[i];
        if (in->dead)
            continue;
        if (in->op == IR_RANK || in->op == IR_WORLD || in->op == IR_NOTIFY ||
            in->op == IR_WAIT)
            return true;
        if ((in->op == IR_LOAD || in->op == IR_STORE || in->op == IR_ATOMIC) &&
            in->opnd[3] >= 0)
            return true;
    }
    return false;
}

static bool has_wait(const IrFunc *f)
{
    for (int i = 0; i < f->nins; i++)
        if (!f->ins[i].dead && f->ins[i].op == IR_WAIT)
            return true;
    return false;
}

/* ------------------------------------------------------------ signals
 * notify / wait on u64 signal cells, done by thread 0 of the block for
 * every cell of the view in row-major order, between __syncthreads() (the
 * block's earlier writes are complete before a notify; a wait's acquire by
 * thread 0 is ordered before the other threads' later reads by the
 * barrier). A wait that fails (timeout, abort, an earlier failure) ends the
 * program instance, like the CPU's. */

static void emit_signal(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    char ok[1024], addr[1024], base[128];
    IrType vt;
    memset(&vt, 0, sizeof vt);
    ir_view_shape(f, &f->views[in->view], &vt);
    bool wait = in->op == IR_WAIT;
    bk_gpu_base(em, id, base, sizeof base);
    sync(em);
    bk_gpu_line(em, "if (blk_tid == 0) {");
    em->indent++;
    if (wait)
        bk_gpu_line(em, "int blk_bad = 0;");
    bk_gpu_line(em, "for (int e = 0; e < %lld%s; e++) {", (long long)ir_numel(&vt),
                wait ? " && !blk_bad" : "");
    em->indent++;
    bk_gpu_view(em, id, ok, sizeof ok, addr, sizeof addr);
    if (wait)
        bk_gpu_line(em, "if (%s) blk_bad = blk_wait(blk_rc, (unsigned long long *)&%s[%s], "
                    "%d, (unsigned long long)v%d, %d, (long long)(%s));", ok, base, addr,
                    in->attr == WAIT_EQ, in->opnd[0], in->param, addr);
    else
        bk_gpu_line(em, "if (%s) blk_notify((unsigned long long *)&%s[%s], %d, "
                    "(unsigned long long)v%d);", ok, base, addr, in->attr == SIG_ADD,
                    in->opnd[0]);
    bk_gpu_line(em, "(void)e;");
    em->indent--;
    bk_gpu_line(em, "}");
    if (wait)
        bk_gpu_line(em, "blk_wfail = blk_bad;");
    em->indent--;
    bk_gpu_line(em, "}");
    sync(em);
    if (wait) {
        bk_gpu_line(em, "if (blk_wfail) return; /* uniform: the whole block */");
        sync(em); /* every thread has read blk_wfail before a later wait */
    }
}

/* ------------------------------------------------------------ control */

static void emit_region(BkGpuEm *em, int r);

/* Whether FOR id's body loads a tile directly (for the HIP stages note). */
static bool loop_loads_tiles(const BkGpuEm *em, int id)
{
    const IrRegion *reg = &em->f->regions[em->f->ins[id].region[0]];
    for (int i = 0; i < reg->n; i++) {
        const IrInstr *x = &em->f->ins[reg->ins[i]];
        if (!x->dead && x->op == IR_LOAD && x->type.rank > 0)
            return true;
    }
    return false;
}

static void emit_instr(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    if (in->loc.line > 0 && in->loc.line != em->last_line) {
        bk_gpu_line(em, "// line %d", in->loc.line);
        em->last_line = in->loc.line;
    }
    bk_gpu_barrier_before(em, id);
    if (ir_op_flags[in->op] & F_ELEM) {
        emit_elem(em, id);
        return;
    }
    const char *st = bk_gpu_stype(in->type.dtype);
    switch (in->op) {
    case IR_CONST: emit_const(em, id); break;
    case IR_PARAM:
        bk_gpu_line(em, "const %s v%d = p_%s;", st, id, f->params[in->param].name);
        break;
    case IR_SIZE:
        bk_gpu_line(em, "const int v%d = (int)p_%s.shape[%d];", id,
                    f->params[in->param].name, in->attr);
        break;
    case IR_PID:
        if (em->group_m && in->attr < 2)
            bk_gpu_line(em, "const int v%d = blk_pid%d;", id, in->attr);
        else
            bk_gpu_line(em, "const int v%d = (int)blockIdx.%c;", id, "xyz"[in->attr % 3]);
        break;
    case IR_NPROG:
        bk_gpu_line(em, "const int v%d = (int)gridDim.%c;", id, "xyz"[in->attr % 3]);
        break;
    case IR_ARANGE: emit_arange(em, id); break;
    case IR_BCAST: case IR_RESHAPE: case IR_PERMUTE: emit_shape(em, id); break;
    case IR_REDUCE: bk_gpu_emit_reduce(em, id); break;
    case IR_SCAN: bk_gpu_emit_scan(em, id); break;
    case IR_DOT:
        if (em->lay[id] == BK_LAY_MMA && in->opnd[2] >= 0)
            bk_gpu_mma_dot(em, id, em->mvar[id]);
        else if (em->lay[id] == BK_LAY_MMA)
            bk_gpu_line(em, "/* v%d = dot, layout mma: accumulated into var%d at its var.set */",
                        id, em->mvar[id]);
        else
            bk_gpu_emit_dot(em, id);
        break;
    case IR_LOAD: bk_gpu_emit_load(em, id); break;
    case IR_STORE: bk_gpu_emit_store(em, id); break;
    case IR_ATOMIC: bk_gpu_emit_atomic(em, id); break;
    case IR_VGET:
        if (em->lay[id] == BK_LAY_MMA) {
            bk_gpu_line(em, "/* v%d = var%d, layout mma: read in place (registers) */",
                        id, in->param);
        } else if (em->cvt[id]) {
            bk_gpu_mma_to_shared(em, id);
        } else if (in->type.rank == 0) {
            bk_gpu_line(em, "const %s v%d = var%d;", st, id, in->param);
        } else if (em->var_of[id] >= 0) {
            bk_gpu_decl_tile(em, id);
        } else {
            bk_gpu_decl_tile(em, id);
            bk_gpu_loop_open(em, &in->type);
            bk_gpu_line(em, "v%d[e] = var%d[e];", id, in->param);
            bk_gpu_loop_close(em);
        }
        break;
    case IR_VSET:
        if (em->vmma[in->param].on) {
            bk_gpu_mma_vset(em, id);
        } else if (f->vars[in->param].type.rank == 0) {
            bk_gpu_line(em, "var%d = v%d;", in->param, in->opnd[0]);
        } else {
            bk_gpu_loop_open(em, &f->vars[in->param].type);
            char rv[BK_GPU_EXPR];
            bk_gpu_raw(em, in->opnd[0], "e", rv, sizeof rv);
            bk_gpu_line(em, "var%d[e] = %s;", in->param, rv);
            bk_gpu_loop_close(em);
        }
        break;
    case IR_FOR: {
        const IrInstr *stp = &f->ins[in->opnd[2]];
        const char *t = bk_gpu_stype(in->type.dtype);
        char cond[256];
        if (stp->op == IR_CONST && stp->type.rank == 0 && stp->ival > 0)
            snprintf(cond, sizeof cond, "v%d < v%d", id, in->opnd[1]);
        else if (stp->op == IR_CONST && stp->type.rank == 0 && stp->ival < 0)
            snprintf(cond, sizeof cond, "v%d > v%d", id, in->opnd[1]);
        else
            snprintf(cond, sizeof cond, "v%d > 0 ? v%d < v%d : (v%d < 0 && v%d > v%d)",
                     in->opnd[2], id, in->opnd[1], in->opnd[2], id, in->opnd[1]);
        if (em->pipe[id] > 0) {
            bk_gpu_pipe_prologue(em, id);
            bk_gpu_line(em, "for (%s v%d = v%d; %s; v%d += v%d, blk_it%d++) {", t,
                        id, in->opnd[0], cond, id, in->opnd[2], id);
            em->indent++;
            bk_gpu_pipe_top(em, id);
        } else {
            if (em->dl->kind == BK_GPU_HIP && em->f->stages > 1 &&
                em->pipe[id] == 0 && loop_loads_tiles(em, id))
                bk_gpu_line(em, "// stages(%d) ignored: no cp.async on AMD GPUs; "
                            "loads go through registers", em->f->stages);
            bk_gpu_line(em, "for (%s v%d = v%d; %s; v%d += v%d) {", t, id,
                        in->opnd[0], cond, id, in->opnd[2]);
            em->indent++;
        }
        /* a pipelined body starts with a barrier (pipe_top), which covers
         * the back edge: what the body still owes is paid after the loop */
        int saved = em->noflush_region;
        em->noflush_region = em->pipe[id] > 0 ? in->region[0] : -1;
        emit_region(em, in->region[0]);
        em->noflush_region = saved;
        em->indent--;
        bk_gpu_line(em, "}");
        bk_gpu_barrier_flush(em);
        break;
    }
    case IR_WHILE:
        bk_gpu_line(em, "while (true) {");
        em->indent++;
        emit_region(em, in->region[0]);
        if (in->region[1] >= 0)
            emit_region(em, in->region[1]);
        em->indent--;
        bk_gpu_line(em, "}");
        break;
    case IR_IF:
        bk_gpu_line(em, "if (v%d) {", in->opnd[0]);
        em->indent++;
        emit_region(em, in->region[0]);
        em->indent--;
        if (in->region[1] >= 0 && f->regions[in->region[1]].n > 0) {
            bk_gpu_line(em, "} else {");
            em->indent++;
            emit_region(em, in->region[1]);
            em->indent--;
        }
        bk_gpu_line(em, "}");
        break;
    case IR_YIELD:
        /* only a WHILE condition region reaches here (the grid region is
         * evaluated on the host); the body follows in the same C loop */
        bk_gpu_line(em, "if (!v%d) break;", in->opnd[0]);
        break;
    case IR_RET: bk_gpu_line(em, "return;"); break;
    case IR_RANK: bk_gpu_line(em, "const int v%d = blk_rc.rank;", id); break;
    case IR_WORLD: bk_gpu_line(em, "const int v%d = blk_rc.world;", id); break;
    case IR_NOTIFY: case IR_WAIT: emit_signal(em, id); break;
    default:
        bk_gpu_fail(em, "cuda/hip backend: op %s is not supported", ir_op_names[in->op]);
        break;
    }
}

static void emit_region(BkGpuEm *em, int r)
{
    const IrFunc *f = em->f;
    const IrRegion *reg = &f->regions[r];
    for (int i = 0; i < reg->n; i++)
        if (!f->ins[reg->ins[i]].dead)
            emit_instr(em, reg->ins[i]);
    /* a nested region ends in a barrier if one is owed (loop back edges,
     * code after an if); the kernel's end needs none */
    if (r != 0 && r != em->noflush_region)
        bk_gpu_barrier_flush(em);
}

static void emit_func(BkGpuEm *em)
{
    const IrFunc *f = em->f;
    bk_gpu_line(em, "// kernel %s (.blk line %d): blockDim.x = %d (%d warps of %d),",
                f->name, f->loc.line, em->nt, em->nw, em->dl->warp);
    bk_gpu_line(em, "// gridDim = the grid of ir_eval_grid, dynamic shared memory = %lld bytes",
                em->smem);
    bk_gpu_line(em, "extern \"C\" __constant__ int blk_smem_%s = %lld;", f->name,
                em->smem);
    DslBuf *o = em->o;
    dsl_buf_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(",
                   em->nt, f->name);
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        if (i)
            dsl_buf_printf(o, ",");
        dsl_buf_printf(o, "\n    ");
        if (p->kind == PK_TENSOR)
            dsl_buf_printf(o, "BlkTensor<%s, %d> p_%s", bk_gpu_stype(p->dtype),
                           p->rank, p->name);
        else
            dsl_buf_printf(o, "%s p_%s", bk_gpu_stype(p->dtype), p->name);
    }
    if (bk_gpu_uses_ranks(f))
        dsl_buf_printf(o, "%s\n    BlkRankCtx blk_rc /* rank builtins */",
                       f->nparams ? "," : "");
    dsl_buf_printf(o, ")\n{\n");
    em->indent = 1;
    bk_gpu_line(em, "BLK_DYNAMIC_SMEM(blk_smem);");
    bk_gpu_line(em, "const int blk_tid = threadIdx.x;");
    bk_gpu_line(em, "const int blk_lane = blk_tid %% %d, blk_warp = blk_tid / %d;",
                em->dl->warp, em->dl->warp);
    bk_gpu_line(em, "(void)blk_lane; (void)blk_warp; (void)blk_smem;");
    if (has_wait(f))
        bk_gpu_line(em, "__shared__ int blk_wfail; /* a wait of this block failed */");
    for (int v = 0; v < f->nvars; v++) {
        const IrVar *var = &f->vars[v];
        const char *t = bk_gpu_stype(var->type.dtype);
        char ty[128];
        ir_type_str(&var->type, ty, sizeof ty);
        if (var->type.rank == 0)
            bk_gpu_line(em, "%s var%d; /* var %s : %s */", t, v, var->name, ty);
        else if (em->vmma[v].on)
            bk_gpu_mma_decl(em, v);
        else
            bk_gpu_line(em, "%s *var%d = (%s *)(blk_smem + %lld); /* var %s : %s */",
                        t, v, t, em->var_off[v], var->name, ty);
    }
    if (em->group_m) {
        /* grouped ordering (as Triton's GROUP_M): blocks dispatched one after
         * another (x fastest) walk down GROUP_M rows of output tiles before
         * moving right, so they share their A rows and B columns in L2. A
         * bijection of (blockIdx.x, blockIdx.y): every program runs once. */
        bk_gpu_line(em, "// program ids in groups of %d along program_id(0) (L2 reuse)", em->group_m);
        bk_gpu_line(em, "int blk_pid0, blk_pid1;");
        bk_gpu_line(em, "{");
        em->indent++;
        bk_gpu_line(em, "const int np0 = (int)gridDim.x, np1 = (int)gridDim.y;");
        bk_gpu_line(em, "const int lin = (int)blockIdx.x + (int)blockIdx.y * np0;");
        bk_gpu_line(em, "const int first = lin / (%d * np1) * %d;", em->group_m, em->group_m);
        bk_gpu_line(em, "const int gs = np0 - first < %d ? np0 - first : %d;", em->group_m,
                    em->group_m);
        bk_gpu_line(em, "const int r = lin %% (%d * np1);", em->group_m);
        bk_gpu_line(em, "blk_pid0 = first + r %% gs;");
        bk_gpu_line(em, "blk_pid1 = r / gs;");
        em->indent--;
        bk_gpu_line(em, "}");
    }
    emit_region(em, 0);
    em->indent = 0;
    dsl_buf_printf(o, "}\n");
}

int bk_gpu_em_init(BkGpuEm *em, const IrFunc *f, const BkGpuDialect *dl,
                   DslBuf *out, char *err, size_t errlen)
{
    memset(em, 0, sizeof *em);
    em->f = f;
    em->dl = dl;
    em->o = out;
    em->err = err;
    em->errlen = errlen;
    em->nw = f->warps > 0 ? f->warps : 4;
    em->nt = em->nw * dl->warp;
    if (em->nt > 1024) {
        snprintf(err, errlen, "kernel %s: warps(%d) gives %d threads per block; "
                 "the most is 1024", f->name, f->warps, em->nt);
        return -1;
    }
    em->last_line = -1;
    em->noflush_region = -1;
    /* the old paths stay selectable (docs/backends.md) */
    const char *e;
    em->novec = (e = getenv("BLKC_GPU_NOVEC")) && *e && strcmp(e, "0");
    em->nopipe = (e = getenv("BLKC_GPU_NOPIPE")) && *e && strcmp(e, "0");
    em->nosyncelim = (e = getenv("BLKC_GPU_NOSYNCELIM")) && *e && strcmp(e, "0");
    if (bk_gpu_analyze(em) < 0) {
        bk_gpu_em_free(em);
        return -1;
    }
    /* cp.async rings multiply the loads' shared memory by stages(S): past
     * the smallest CUDA per-block limit (sm_80: 163 KiB) keep the kernel
     * loadable and give up the pipeline instead */
    bool piped = false;
    for (int i = 0; i < f->nins; i++)
        piped |= em->pipe[i] >= 0 && f->ins[i].op == IR_LOAD;
    if (piped && em->smem > 160 * 1024) {
        bk_gpu_em_free(em);
        em->nopipe = true;
        em->fail = 0;
        if (bk_gpu_analyze(em) < 0) {
            bk_gpu_em_free(em);
            return -1;
        }
    }
    return 0;
}

int bk_gpu_kernel_info(const IrFunc *f, const BkGpuDialect *dl,
                       BkGpuKernelInfo *info, char *err, size_t errlen)
{
    BkGpuEm em;
    if (bk_gpu_em_init(&em, f, dl, NULL, err, errlen) < 0)
        return -1;
    info->threads = em.nt;
    info->smem_bytes = em.smem;
    info->rank_ctx = bk_gpu_uses_ranks(f);
    bk_gpu_em_free(&em);
    return 0;
}

int bk_gpu_emit_module(const IrModule *m, const BkGpuDialect *dl, DslBuf *out,
                       char *err, size_t errlen)
{
    dsl_buf_printf(out, "// Generated by blkc: %s, one __global__ function per kernel.\n"
                        "// Tiles live in shared memory (each tile op a block-strided loop) unless\n"
                        "// their layout puts them in registers (accumulators of dot loops).\n",
                   dl->name);
    for (int i = 0; dl->prelude[i]; i++)
        dsl_buf_put(out, dl->prelude[i], strlen(dl->prelude[i]));
    for (int i = 0; bk_gpu_common_prelude[i]; i++)
        dsl_buf_put(out, bk_gpu_common_prelude[i], strlen(bk_gpu_common_prelude[i]));
    for (int i = 0; i < m->nfuncs; i++) {
        BkGpuEm em;
        if (m->funcs[i]->is_device)
            continue; /* Device IR: run by the runtime's plan interpreter */
        dsl_buf_printf(out, "\n");
        if (bk_gpu_em_init(&em, m->funcs[i], dl, out, err, errlen) < 0)
            return -1;
        emit_func(&em);
        bk_gpu_em_free(&em);
        if (em.fail)
            return -1;
    }
    if (out->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
