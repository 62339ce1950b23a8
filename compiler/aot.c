/* aot.c — `blkc compile --emit=aot`: writes NAME.h / NAME.c, a C build's
 * view of a compiled .blk module (see aot.h and docs/aot.md).
 *
 * Every launcher does the same four things in plain C:
 *   1. checks its arguments (dtype and rank through blkc_rt_check_tensor,
 *      static extents, symbolic sizes agreeing between tensors);
 *   2. computes the grid from the sizes: the kernel's grid region (Core IR
 *      scalar ops, evaluated by compiler/eval.c for JIT launches) written
 *      out as C with the same integer wrapping and the same errors;
 *   3. builds the kernel's arguments in the backend's ABI (backend.h for
 *      the CPU, gpu_emit.h for CUDA);
 *   4. calls libblkc_runtime (blkc_rt_cpu_launch / blkc_rt_cuda_launch). */
#include "aot.h"

#include "../backends/backend.h"
#include "../backends/gpu/gpu_emit.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef BLKC_VERSION_STRING
#define BLKC_VERSION_STRING "0.1.0"
#endif

#define P dsl_buf_printf

/* ------------------------------------------------------------ names */

static bool is_ident(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

/* C keywords and the launchers' own locals: a .blk name equal to one of
 * these gets a trailing underscore in the generated C. */
static const char *const reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do",
    "double", "else", "enum", "extern", "float", "for", "goto", "if",
    "inline", "int", "long", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "bool", "true", "false",
    "rc", "grid", "args", "opts", "kernel", NULL,
};

static void cname(char *buf, size_t n, const char *name)
{
    for (int i = 0; reserved[i]; i++)
        if (strcmp(reserved[i], name) == 0) {
            snprintf(buf, n, "%s_", name);
            return;
        }
    snprintf(buf, n, "%s", name);
}

/* the C name of parameter p of f */
static const char *pname(const IrFunc *f, int p, char *buf, size_t n)
{
    cname(buf, n, f->params[p].name);
    return buf;
}

/* The C name of symbolic size s: its own name unless a parameter or a
 * reserved word has it, then size_NAME. */
static const char *sname(const IrFunc *f, int s, char *buf, size_t n)
{
    const char *nm = f->syms[s].name;
    bool clash = false;
    for (int p = 0; p < f->nparams; p++)
        clash |= strcmp(f->params[p].name, nm) == 0;
    for (int i = 0; reserved[i]; i++)
        clash |= strcmp(reserved[i], nm) == 0;
    if (clash)
        snprintf(buf, n, "size_%s", nm);
    else
        snprintf(buf, n, "%s", nm);
    return buf;
}

/* C type of a scalar of dtype dt (launcher arguments and grid values):
 * f16/bf16 are their 16-bit patterns, f8 one byte. */
static const char *ctype(int dt)
{
    switch (dt) {
    case DT_BOOL: return "bool";
    case DT_I8: return "int8_t";
    case DT_I16: return "int16_t";
    case DT_I32: return "int32_t";
    case DT_I64: return "int64_t";
    case DT_U8: return "uint8_t";
    case DT_U16: return "uint16_t";
    case DT_U32: return "uint32_t";
    case DT_U64: return "uint64_t";
    case DT_F16: case DT_BF16: return "uint16_t";
    case DT_F32: return "float";
    case DT_F64: return "double";
    case DT_F8E4M3: case DT_F8E5M2: return "uint8_t";
    default: return "void";
    }
}

static void dtype_enum(char *buf, size_t n, int dt)
{
    const char *s = dsl_dtype_name(dt);
    size_t k = (size_t)snprintf(buf, n, "BLKC_RT_");
    for (; *s && k + 1 < n; s++)
        buf[k++] = (char)toupper((unsigned char)*s);
    buf[k] = 0;
}

/* "f32[M, 64]" */
static void param_type_str(const IrFunc *f, const IrParam *p, char *buf,
                           size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s", dsl_dtype_name(p->dtype));
    if (p->kind != PK_TENSOR)
        return;
    k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "[");
    for (int d = 0; d < p->rank && k < n; d++) {
        if (p->dims[d] >= 0)
            k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, d ? ", " : "",
                                  p->dims[d]);
        else
            k += (size_t)snprintf(buf + k, n - k, "%s%s", d ? ", " : "",
                                  f->syms[-1 - p->dims[d]].name);
    }
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

static const char *base_name(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path ? path : "?";
}

/* ------------------------------------------------------------ header */

static void gen_banner(DslBuf *b, const AotOptions *o, const char *file,
                       const char *what)
{
    P(b, "/* %s — generated by blkc %s from %s (--emit=aot, target %s%s%s).\n"
         " * %s\n"
         " * Do not edit: regenerate with blkc compile. */\n",
      file, BLKC_VERSION_STRING, base_name(o->source),
      o->target ? o->target : "cpu", o->arch ? ", arch " : "",
      o->arch ? o->arch : "", what);
}

/* the launcher's parameter list (no parentheses) */
static void gen_params(DslBuf *b, const IrFunc *f, const char *indent)
{
    char nm[256];
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pr = &f->params[p];
        if (pr->kind == PK_TENSOR)
            P(b, "const blkc_rt_tensor *%s,", pname(f, p, nm, sizeof nm));
        else
            P(b, "%s %s,", ctype(pr->dtype), pname(f, p, nm, sizeof nm));
        P(b, "\n%s", indent);
    }
    P(b, "const blkc_rt_launch *opts");
}

static void gen_prototype(DslBuf *b, const IrFunc *f, const char *prefix,
                          bool decl)
{
    char indent[300];
    int n = snprintf(indent, sizeof indent, "%*s",
                     (int)(strlen(prefix) + strlen(f->name) + 6), "");
    (void)n;
    P(b, "int %s_%s(", prefix, f->name);
    gen_params(b, f, indent);
    P(b, ")%s\n", decl ? ";" : "");
}

static void gen_doc(DslBuf *b, const IrFunc *f, const AotOptions *o,
                    const char *target)
{
    P(b, "/* %s — kernel from %s:%d", f->name, base_name(o->source),
      f->loc.line);
    if (f->ncparams) {
        P(b, ", compiled with ");
        for (int i = 0; i < f->ncparams; i++)
            P(b, "%s%s=%" PRId64, i ? ", " : "", f->cparam_names[i],
              f->cparam_vals[i]);
    }
    P(b, ".\n");
    size_t w = 1;
    for (int p = 0; p < f->nparams; p++)
        if (strlen(f->params[p].name) > w)
            w = strlen(f->params[p].name);
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pr = &f->params[p];
        char ty[256];
        param_type_str(f, pr, ty, sizeof ty);
        const char *role = pr->kind != PK_TENSOR ? "scalar"
                           : pr->written ? "tensor, written" : "tensor, read";
        const char *note = "";
        if (pr->kind != PK_TENSOR && (pr->dtype == DT_F16 || pr->dtype == DT_BF16))
            note = ", as its 16-bit pattern";
        else if (pr->kind != PK_TENSOR && dsl_dtype_bytes(pr->dtype) == 1 &&
                 dsl_is_float(pr->dtype))
            note = ", as its 8-bit pattern";
        P(b, " *   %-*s  %-16s (%s%s)\n", (int)w, pr->name, ty, role, note);
    }
    if (f->nsyms) {
        P(b, " * Size%s ", f->nsyms > 1 ? "s" : "");
        for (int s = 0; s < f->nsyms; s++)
            P(b, "%s%s", s ? (s + 1 == f->nsyms ? " and " : ", ") : "",
              f->syms[s].name);
        P(b, " %s read from the tensors' shapes and must agree.\n",
          f->nsyms > 1 ? "are" : "is");
    }
    P(b, " * The grid is computed from the kernel's grid(...) clause; a non-zero\n"
         " * opts->grid overrides it. opts may be NULL.\n");
    if (strcmp(target, "cuda") == 0)
        P(b, " * Tensor data are device pointers (CUdeviceptr); the launch is\n"
             " * asynchronous on opts->stream, like cuLaunchKernel.\n");
    else
        P(b, " * Runs on libblkc_runtime's thread pool and returns when done.\n");
    P(b, " * Returns 0, or a blkc_rt_status with blkc_rt_last_error() set. */\n");
}

static void gen_header(DslBuf *h, const IrModule *m, const AotOptions *o,
                       const char *prefix, const char *target)
{
    char file[512], guard[512];
    snprintf(file, sizeof file, "%s.h", prefix);
    size_t k = 0;
    for (const char *s = prefix; *s && k + 3 < sizeof guard; s++)
        guard[k++] = (char)toupper((unsigned char)*s);
    snprintf(guard + k, sizeof guard - k, "_H");
    gen_banner(h, o, file, "Typed launchers; link with libblkc_runtime "
               "(-lblkc_runtime -lm).");
    P(h, "#ifndef %s\n#define %s\n\n", guard, guard);
    P(h, "#include <blkc/blkc_runtime.h>\n#include <stdbool.h>\n"
         "#include <stdint.h>\n\n");
    P(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        if (f->is_device)
            continue;
        P(h, "\n");
        gen_doc(h, f, o, target);
        gen_prototype(h, f, prefix, true);
    }
    P(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

/* ------------------------------------------------------------ checks */

/* Argument checks: dtype/rank, symbolic sizes (defined from their binding
 * tensor dim, compared with every other use), static extents. */
static void gen_checks(DslBuf *c, const IrFunc *f)
{
    char nm[256], sn[256];
    P(c, "    static const char kernel[] = \"%s\";\n", f->name);
    P(c, "    int rc;\n\n");
    P(c, "    /* arguments: dtype and rank */\n");
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pr = &f->params[p];
        if (pr->kind != PK_TENSOR)
            continue;
        char de[64];
        dtype_enum(de, sizeof de, pr->dtype);
        P(c, "    if ((rc = blkc_rt_check_tensor(kernel, \"%s\", %s, %s, %d)) != 0)\n"
             "        return rc;\n", pr->name, pname(f, p, nm, sizeof nm), de,
          pr->rank);
    }
    if (f->nsyms) {
        P(c, "\n    /* symbolic sizes */\n");
        for (int s = 0; s < f->nsyms; s++) {
            const IrSym *sy = &f->syms[s];
            P(c, "    const int64_t %s = %s->shape[%d];\n",
              sname(f, s, sn, sizeof sn), pname(f, sy->param, nm, sizeof nm),
              sy->dim);
        }
    }
    bool any = false;
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pr = &f->params[p];
        if (pr->kind != PK_TENSOR)
            continue;
        for (int d = 0; d < pr->rank; d++) {
            int64_t e = pr->dims[d];
            if (e < 0) {
                const IrSym *sy = &f->syms[-1 - e];
                if (sy->param == p && sy->dim == d)
                    continue; /* the binding itself */
                if (!any)
                    P(c, "\n    /* extents */\n");
                any = true;
                sname(f, (int)(-1 - e), sn, sizeof sn);
                P(c, "    if (%s->shape[%d] != %s)\n"
                     "        return blkc_rt_error(BLKC_RT_ERR_USAGE, \"%%s: tensor %s "
                     "dim %d is %%lld, but size %s is %%lld (from %s)\",\n"
                     "                             kernel, (long long)%s->shape[%d], "
                     "(long long)%s);\n",
                  pname(f, p, nm, sizeof nm), d, sn, pr->name, d, sy->name,
                  f->params[sy->param].name, nm, d, sn);
            } else {
                if (!any)
                    P(c, "\n    /* extents */\n");
                any = true;
                pname(f, p, nm, sizeof nm);
                P(c, "    if (%s->shape[%d] != %" PRId64 ")\n"
                     "        return blkc_rt_error(BLKC_RT_ERR_USAGE, \"%%s: tensor %s "
                     "dim %d must be %" PRId64 ", got %%lld\",\n"
                     "                             kernel, (long long)%s->shape[%d]);\n",
                  nm, d, e, pr->name, d, e, nm, d);
            }
        }
    }
}

/* ------------------------------------------------------------ grid */

typedef struct Gg {
    DslBuf *c;
    const IrFunc *f;
    char *err;
    size_t errlen;
} Gg;

static int gg_fail(Gg *g, int id, const char *what)
{
    snprintf(g->err, g->errlen, "kernel %s: %s in the grid (%s) is not "
             "supported by --emit=aot", g->f->name, what,
             ir_op_names[g->f->ins[id].op]);
    return -1;
}

static bool is_const(const IrFunc *f, int v, int64_t *out)
{
    const IrInstr *in = &f->ins[v];
    if (in->op != IR_CONST || dsl_is_float(in->type.dtype))
        return false;
    *out = in->ival;
    return true;
}

static void float_lit(char *buf, size_t n, int dt, double x)
{
    if (isnan(x)) {
        snprintf(buf, n, "NAN");
        return;
    }
    if (isinf(x)) {
        snprintf(buf, n, "%sINFINITY", x < 0 ? "-" : "");
        return;
    }
    char num[64];
    snprintf(num, sizeof num, dt == DT_F64 ? "%.17g" : "%.9g",
             dt == DT_F64 ? x : (double)(float)x);
    snprintf(buf, n, "%s%s%s", num, strpbrk(num, ".e") ? "" : ".0",
             dt == DT_F64 ? "" : "f");
}

/* One grid instruction as `const T grid_vID = EXPR;` (plus a division
 * check where needed). */
static int gg_instr(Gg *g, int id)
{
    const IrFunc *f = g->f;
    const IrInstr *in = &f->ins[id];
    DslBuf *c = g->c;
    int dt = in->type.dtype, op = in->op;
    const char *T = ctype(dt);
    char nm[256], e[1024];
    if (in->type.rank != 0)
        return gg_fail(g, id, "a tile value");
    if (dt == DT_F16 || dt == DT_BF16 || dt == DT_F8E4M3 || dt == DT_F8E5M2)
        return gg_fail(g, id, "a small-float value");
    int a = in->opnd[0], b = in->opnd[1];
    int od = a >= 0 ? f->ins[a].type.dtype : dt;
    if (a >= 0 && (od == DT_F16 || od == DT_BF16 || od == DT_F8E4M3 ||
                   od == DT_F8E5M2))
        return gg_fail(g, id, "a small-float operand");
    bool fl = dsl_is_float(od);
    bool sg = dsl_dtype_kind(od) == 'i';
    int w = dsl_dtype_bytes(od) * 8;
    const char *cmt = "";
    char cbuf[300] = "";
    switch (op) {
    case IR_CONST:
        if (dsl_is_float(dt))
            float_lit(e, sizeof e, dt, in->fval);
        else if (dt == DT_BOOL)
            snprintf(e, sizeof e, "%s", in->ival ? "true" : "false");
        else if (dt == DT_U64)
            snprintf(e, sizeof e, "UINT64_C(%" PRIu64 ")", (uint64_t)in->ival);
        else if (dt == DT_I64)
            snprintf(e, sizeof e, "INT64_C(%" PRId64 ")", in->ival);
        else
            snprintf(e, sizeof e, "%" PRId64, in->ival);
        break;
    case IR_PARAM:
        snprintf(e, sizeof e, "%s", pname(f, in->param, nm, sizeof nm));
        break;
    case IR_RANK: /* an AOT launch is rank 0 of 1, as its kernel sees */
    case IR_WORLD:
        snprintf(e, sizeof e, "%d", op == IR_RANK ? 0 : 1);
        break;
    case IR_SIZE: {
        const IrParam *pr = &f->params[in->param];
        int64_t d = pr->dims[in->attr];
        if (d < 0) { /* a symbolic size: use its name */
            char sn[256];
            snprintf(e, sizeof e, "(%s)%s", T, sname(f, (int)(-1 - d), sn,
                                                      sizeof sn));
            snprintf(cbuf, sizeof cbuf, " /* size %s.%d */", pr->name,
                     in->attr);
            cmt = cbuf;
        } else {
            snprintf(e, sizeof e, "(%s)%s->shape[%d]", T,
                     pname(f, in->param, nm, sizeof nm), in->attr);
        }
        break;
    }
    case IR_CVT:
        if (dt == DT_BOOL)
            snprintf(e, sizeof e, "grid_v%d != 0", a);
        else if (fl && !dsl_is_float(dt))
            snprintf(e, sizeof e, "(%s)(isnan(grid_v%d) || fabs(grid_v%d) >= "
                     "0x1p63 ? 0 : (int64_t)grid_v%d)", T, a, a, a);
        else if (!fl && dsl_is_float(dt))
            snprintf(e, sizeof e, "(%s)(double)grid_v%d", T, a);
        else
            snprintf(e, sizeof e, "(%s)grid_v%d", T, a);
        break;
    case IR_SELECT:
        snprintf(e, sizeof e, "grid_v%d ? grid_v%d : grid_v%d", a, b,
                 in->opnd[2]);
        break;
    case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE: {
        static const char *const cmp[] = {"==", "!=", "<", "<=", ">", ">="};
        snprintf(e, sizeof e, "grid_v%d %s grid_v%d", a, cmp[op - IR_EQ], b);
        break;
    }
    case IR_NEG:
        if (fl)
            snprintf(e, sizeof e, "-grid_v%d", a);
        else
            snprintf(e, sizeof e, "(%s)(0 - (uint64_t)grid_v%d)", T, a);
        break;
    case IR_NOT:
        snprintf(e, sizeof e, "!grid_v%d", a);
        break;
    case IR_BITNOT:
        if (fl)
            return gg_fail(g, id, "a float operand");
        snprintf(e, sizeof e, "(%s)~(uint64_t)grid_v%d", T, a);
        break;
    case IR_ABS:
        if (fl)
            snprintf(e, sizeof e, "(%s)fabs(grid_v%d)", T, a);
        else if (sg)
            snprintf(e, sizeof e, "grid_v%d < 0 ? (%s)(0 - (uint64_t)grid_v%d) "
                     ": grid_v%d", a, T, a, a);
        else
            snprintf(e, sizeof e, "grid_v%d", a);
        break;
    case IR_FLOOR: case IR_CEIL: case IR_SQRT:
        if (!fl)
            return gg_fail(g, id, "an integer operand");
        snprintf(e, sizeof e, "(%s)%s(grid_v%d)", T,
                 op == IR_FLOOR ? "floor" : op == IR_CEIL ? "ceil" : "sqrt", a);
        break;
    case IR_ADD: case IR_SUB: case IR_MUL: case IR_AND: case IR_OR:
    case IR_XOR: {
        const char *o = op == IR_ADD ? "+" : op == IR_SUB ? "-" : op == IR_MUL ? "*"
                      : op == IR_AND ? "&" : op == IR_OR ? "|" : "^";
        if (fl && (op == IR_AND || op == IR_OR || op == IR_XOR))
            return gg_fail(g, id, "a float operand");
        if (fl)
            snprintf(e, sizeof e, "grid_v%d %s grid_v%d", a, o, b);
        else /* wraps like the kernel's integers */
            snprintf(e, sizeof e, "(%s)((uint64_t)grid_v%d %s (uint64_t)grid_v%d)",
                     T, a, o, b);
        break;
    }
    case IR_DIV: case IR_REM: {
        const char *o = op == IR_DIV ? "/" : "%";
        if (fl) {
            if (op == IR_DIV)
                snprintf(e, sizeof e, "grid_v%d / grid_v%d", a, b);
            else
                snprintf(e, sizeof e, "(%s)fmod(grid_v%d, grid_v%d)", T, a, b);
            break;
        }
        int64_t k = 0;
        bool kc = is_const(f, b, &k);
        if (!kc || k == 0)
            P(c, "        if (grid_v%d == 0)\n"
                 "            return blkc_rt_error(BLKC_RT_ERR_USAGE, \"%%s: division "
                 "by zero while computing the launch grid\", kernel);\n", b);
        if (sg && (!kc || k == -1) && op == IR_DIV) /* INT_MIN / -1 wraps */
            snprintf(e, sizeof e, "grid_v%d == -1 ? (%s)(0 - (uint64_t)grid_v%d) "
                     ": grid_v%d / grid_v%d", b, T, a, a, b);
        else if (sg && (!kc || k == -1))
            snprintf(e, sizeof e, "grid_v%d == -1 ? 0 : grid_v%d %% grid_v%d",
                     b, a, b);
        else
            snprintf(e, sizeof e, "grid_v%d %s grid_v%d", a, o, b);
        break;
    }
    case IR_SHL: case IR_SHR:
        if (fl)
            return gg_fail(g, id, "a float operand");
        snprintf(e, sizeof e, op == IR_SHL
                 ? "(%s)((uint64_t)grid_v%d << ((uint64_t)grid_v%d & %d))"
                 : "(%s)(grid_v%d >> ((uint64_t)grid_v%d & %d))", T, a, b, w - 1);
        break;
    case IR_MAX: case IR_MIN: {
        const char *o = op == IR_MAX ? ">" : "<";
        if (fl)
            snprintf(e, sizeof e, "isnan(grid_v%d) || isnan(grid_v%d) ? NAN : "
                     "(%s)%s(grid_v%d, grid_v%d)", a, b, T,
                     op == IR_MAX ? "fmax" : "fmin", a, b);
        else
            snprintf(e, sizeof e, "grid_v%d %s grid_v%d ? grid_v%d : grid_v%d",
                     a, o, b, a, b);
        break;
    }
    default:
        return gg_fail(g, id, "this op");
    }
    P(c, "        const %s grid_v%d = %s;%s\n", T, id, e, cmt);
    return 0;
}

static int gen_grid(DslBuf *c, const IrFunc *f, const AotOptions *o, char *err,
                    size_t errlen)
{
    P(c, "\n    /* the grid, from the grid(...) clause of %s (%s:%d) */\n",
      f->name, base_name(o->source), f->loc.line);
    P(c, "    int64_t grid[3] = {1, 1, 1};\n");
    if (f->grid_region < 0)
        return 0;
    Gg g = {c, f, err, errlen};
    const IrRegion *reg = &f->regions[f->grid_region];
    P(c, "    {\n");
    for (int k = 0; k < reg->n; k++) {
        int id = reg->ins[k];
        const IrInstr *in = &f->ins[id];
        if (in->dead)
            continue;
        if (in->op != IR_YIELD) {
            if (gg_instr(&g, id))
                return -1;
            continue;
        }
        for (int i = 0; i < in->nopnd && i < 3; i++) {
            int v = in->opnd[i];
            int vdt = f->ins[v].type.dtype;
            if (!dsl_is_int(vdt)) {
                snprintf(err, errlen, "kernel %s: grid extent is not an "
                         "integer", f->name);
                return -1;
            }
            if (dsl_dtype_kind(vdt) == 'i')
                P(c, "        if (grid_v%d < 0)\n"
                     "            return blkc_rt_error(BLKC_RT_ERR_USAGE, \"%%s: grid "
                     "extent %%lld along axis %d is negative\",\n"
                     "                                 kernel, (long long)grid_v%d);\n",
                  v, i, v);
            P(c, "        grid[%d] = (int64_t)grid_v%d;\n", i, v);
        }
        break;
    }
    P(c, "    }\n");
    return 0;
}

/* ------------------------------------------------------------ CPU */

typedef struct Rename { const char *from, *to; } Rename;

/* compiler-rt names LLVM may call for half conversions: the JIT binds them
 * to the same helpers (backends/cpu/dtype.c) */
static const Rename helper_renames[] = {
    {"__gnu_h2f_ieee", "blkc_cpu_f16_to_f32"},
    {"__extendhfsf2", "blkc_cpu_f16_to_f32"},
    {"__gnu_f2h_ieee", "blkc_cpu_f32_to_f16"},
    {"__truncsfhf2", "blkc_cpu_f32_to_f16"},
    {"__truncdfhf2", "blkc_cpu_f64_to_f16"},
    {NULL, NULL},
};

static bool sym_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '$';
}

/* Rewrite one assembly line: local labels .Lxxx -> .L<prefix>_xxx (they
 * would clash with the C compiler's own), helper names as above. */
static void rewrite_line(DslBuf *out, const char *s, size_t n,
                         const char *prefix)
{
    size_t i = 0;
    while (i < n) {
        char ch = s[i];
        if (ch == '"') { /* copy strings untouched */
            size_t j = i + 1;
            while (j < n && s[j] != '"')
                j += s[j] == '\\' ? 2 : 1;
            j = j < n ? j + 1 : n;
            dsl_buf_put(out, s + i, j - i);
            i = j;
            continue;
        }
        /* `$` starts an immediate ($.LCPI0_0) as well as living inside
         * labels (.L0$pb) */
        if (!sym_char(ch) || ch == '$' ||
            (i > 0 && sym_char(s[i - 1]) && s[i - 1] != '$')) {
            dsl_buf_put(out, s + i, 1);
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && sym_char(s[j]))
            j++;
        size_t len = j - i;
        const char *to = NULL;
        for (int k = 0; helper_renames[k].from; k++)
            if (strlen(helper_renames[k].from) == len &&
                memcmp(helper_renames[k].from, s + i, len) == 0)
                to = helper_renames[k].to;
        if (to)
            P(out, "%s", to);
        else if (len > 2 && s[i] == '.' && s[i + 1] == 'L')
            P(out, ".L%s_%.*s", prefix, (int)(len - 2), s + i + 2);
        else
            dsl_buf_put(out, s + i, len);
        i = j;
    }
}

/* The assembly as C string literals in top-level __asm__ statements of at
 * most ~3000 characters each (ISO C guarantees only 4095 per literal; clang
 * -pedantic warns past it). Compilers emit consecutive top-level asm in
 * order, so the .pushsection of the first and the .popsection of the last
 * enclose the whole text. */
static void gen_asm(DslBuf *c, const IrModule *m, const char *prefix,
                    const char *text, size_t len)
{
    P(c, "__asm__(\n    \".pushsection .text\\n\"\n");
    DslBuf line = {0};
    size_t i = 0, chunk = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        const char *s = text + i;
        size_t n = j - i;
        i = j < len ? j + 1 : j;
        size_t k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\t'))
            k++;
        /* directives that would fight the C compiler's own */
        if ((n - k >= 5 && !strncmp(s + k, ".file", 5)) ||
            (n - k >= 6 && !strncmp(s + k, ".ident", 6)) ||
            (n - k >= 7 && !strncmp(s + k, ".addrsig", 8)) || n == k)
            continue;
        line.len = 0;
        rewrite_line(&line, s, n, prefix);
        if (chunk > 3000) {
            P(c, ");\n__asm__(\n");
            chunk = 0;
        }
        chunk += line.len + 2;
        P(c, "    \"");
        for (size_t q = 0; q < line.len; q++) {
            unsigned char ch = (unsigned char)line.data[q];
            if (ch == '\\' || ch == '"')
                P(c, "\\%c", ch);
            else if (ch == '\t')
                P(c, "\\t");
            else if (ch < 32 || ch >= 127)
                P(c, "\\%03o", ch);
            else
                dsl_buf_put(c, (const char *)&ch, 1);
        }
        P(c, "\\n\"\n");
    }
    dsl_buf_free(&line);
    for (int i2 = 0; i2 < m->nfuncs; i2++) {
        const IrFunc *f = m->funcs[i2];
        if (f->is_device)
            continue;
        P(c, "    \"\\t.hidden\\t" BK_KERNEL_PREFIX "%s__%s\\n\"\n", prefix, f->name);
        P(c, "    \"\\t.hidden\\t" BK_KERNEL_PREFIX "%s__%s__range\\n\"\n", prefix,
          f->name);
    }
    P(c, "    \".popsection\\n\");\n");
}

static void gen_kernel_tensor(DslBuf *c, const char *ty, const char *nm,
                              int rank)
{
    P(c, "    %s k_%s = {%s->data", ty, nm, nm);
    if (rank == 0) {
        P(c, "%s};\n", strcmp(ty, "blkc_rt_kernel_tensor") == 0 ? ", {0}, {0}" : "");
        return;
    }
    P(c, ", {");
    for (int d = 0; d < rank; d++)
        P(c, "%s%s->shape[%d]", d ? ", " : "", nm, d);
    P(c, "}, {");
    for (int d = 0; d < rank; d++)
        P(c, "%s%s->stride[%d]", d ? ", " : "", nm, d);
    P(c, "}};\n");
}

static int gen_launcher_cpu(DslBuf *c, const IrFunc *f, const AotOptions *o,
                            const char *prefix, char *err, size_t errlen)
{
    char nm[256];
    P(c, "\n");
    gen_prototype(c, f, prefix, false);
    P(c, "{\n");
    gen_checks(c, f);
    if (gen_grid(c, f, o, err, errlen))
        return -1;
    P(c, "\n    /* the kernel's arguments (CPU kernel ABI) */\n");
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pr = &f->params[p];
        pname(f, p, nm, sizeof nm);
        if (pr->kind == PK_TENSOR)
            gen_kernel_tensor(c, "blkc_rt_kernel_tensor", nm, pr->rank);
        else if (pr->dtype == DT_BOOL)
            P(c, "    uint8_t k_%s = %s ? 1 : 0;\n", nm, nm);
    }
    P(c, "    void *const args[%d] = {", f->nparams ? f->nparams : 1);
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pr = &f->params[p];
        pname(f, p, nm, sizeof nm);
        bool k = pr->kind == PK_TENSOR || pr->dtype == DT_BOOL;
        P(c, "%s%s%s%s", p ? ", " : "", k ? "&k_" : "&", nm,
          k ? "" : "");
    }
    if (!f->nparams)
        P(c, "NULL");
    P(c, "};\n");
    P(c, "    return blkc_rt_cpu_launch(kernel, " BK_KERNEL_PREFIX "%s__%s__range, args, "
         "grid, opts);\n",
      prefix, f->name);
    P(c, "}\n");
    return 0;
}

/* The header file, and the .c file's banner, includes and ABI check. */
static void gen_prologue(DslBuf *h, DslBuf *c, const IrModule *m,
                         const AotOptions *o, const char *prefix,
                         const char *target, const char *what)
{
    gen_header(h, m, o, prefix, target);
    char file[512];
    snprintf(file, sizeof file, "%s.c", prefix);
    gen_banner(c, o, file, what);
    P(c, "#include \"%s.h\"\n\n#include <math.h>\n#include <stddef.h>\n\n", prefix);
    P(c, "_Static_assert(BLKC_RT_ABI_VERSION == 1, \"blkc_runtime.h does not "
         "match this file: regenerate it\");\n\n");
}

int aot_gen_cpu(const IrModule *m, const AotOptions *o, const char *prefix,
                const char *asm_text, size_t asm_len, DslBuf *h, DslBuf *c,
                char *err, size_t errlen)
{
    gen_prologue(h, c, m, o, prefix, "cpu", "The kernels' machine code "
                 "(assembly from the CPU backend) and their launchers.");
    P(c, "/* ------------------------------------------------------------ code\n"
         " * Each kernel KERNEL is " BK_KERNEL_PREFIX "NAME__KERNEL (one program\n"
         " * instance) and " BK_KERNEL_PREFIX "NAME__KERNEL__range (instances\n"
         " * first..last-1 of the linearised grid), with the CPU kernel ABI of\n"
         " * blkc's backends/backend.h. */\n");
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        if (f->is_device)
            continue;
        P(c, "__attribute__((visibility(\"hidden\"))) void "
             BK_KERNEL_PREFIX "%s__%s__range(\n"
             "    void *const *args, int64_t first, int64_t last, "
             "const int32_t *nprog);\n", prefix, f->name);
    }
    P(c, "\n");
    gen_asm(c, m, prefix, asm_text, asm_len);
    P(c, "\n/* ------------------------------------------------------------ launchers */\n");
    for (int i = 0; i < m->nfuncs; i++) {
        if (m->funcs[i]->is_device)
            continue;
        if (gen_launcher_cpu(c, m->funcs[i], o, prefix, err, errlen))
            return -1;
    }
    if (h->oom || c->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ CUDA */

static int gen_launcher_cuda(DslBuf *c, const IrFunc *f, const AotOptions *o,
                             const char *prefix, char *err, size_t errlen)
{
    if (bk_gpu_uses_ranks(f)) {
        snprintf(err, errlen, "kernel %s uses rank builtins, which --emit=aot "
                 "does not support for CUDA", f->name);
        return -1;
    }
    BkGpuKernelInfo ki;
    if (bk_gpu_kernel_info(f, &bk_gpu_cuda_dialect, o->arch, &ki, err, errlen))
        return -1;
    if (ki.ntma) { /* generic kernels have no launch facts, so no TMA: a net */
        snprintf(err, errlen, "kernel %s takes tensor maps (TMA), which --emit=aot does "
                 "not build", f->name);
        return -1;
    }
    char nm[256];
    P(c, "\n");
    gen_prototype(c, f, prefix, false);
    P(c, "{\n");
    gen_checks(c, f);
    if (gen_grid(c, f, o, err, errlen))
        return -1;
    P(c, "\n    /* the kernel's arguments (BlkTensor<T, R> by value, scalars "
         "in their storage type) */\n");
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pr = &f->params[p];
        pname(f, p, nm, sizeof nm);
        if (pr->kind != PK_TENSOR)
            continue;
        char ty[160];
        if (pr->rank == 0)
            snprintf(ty, sizeof ty, "struct { void *data; }");
        else
            snprintf(ty, sizeof ty, "struct { void *data; long long shape[%d]; "
                     "long long stride[%d]; }", pr->rank, pr->rank);
        gen_kernel_tensor(c, ty, nm, pr->rank);
    }
    P(c, "    void *params[%d] = {", f->nparams ? f->nparams : 1);
    for (int p = 0; p < f->nparams; p++)
        P(c, "%s&%s%s", p ? ", " : "",
          f->params[p].kind == PK_TENSOR ? "k_" : "", pname(f, p, nm, sizeof nm));
    if (!f->nparams)
        P(c, "NULL");
    P(c, "};\n");
    P(c, "    /* blockDim.x = %d (%d warps), %lld bytes of dynamic shared memory */\n",
      ki.threads, ki.threads / 32, ki.smem_bytes);
    P(c, "    return blkc_rt_cuda_launch(&%s_image, kernel, grid, %d, %lld, "
         "params, opts);\n", prefix, ki.threads, ki.smem_bytes);
    P(c, "}\n");
    return 0;
}

int aot_gen_cuda(const IrModule *m, const AotOptions *o, const char *prefix,
                 const void *image, size_t image_len, DslBuf *h, DslBuf *c,
                 char *err, size_t errlen)
{
    gen_prologue(h, c, m, o, prefix, "cuda", "The kernels' CUDA binary and "
                 "their launchers (CUDA driver API, loaded by libblkc_runtime).");
    bool ptx = image_len >= 1 && ((const unsigned char *)image)[0] != 0x7f;
    P(c, "/* the %s for %s (%zu bytes, NUL-terminated) */\n",
      ptx ? "PTX" : "cubin", o->arch ? o->arch : "sm_90", image_len);
    P(c, "static _Alignas(16) const unsigned char %s_binary[%zu] = {", prefix,
      image_len + 1);
    const unsigned char *b = image;
    for (size_t i = 0; i <= image_len; i++) {
        if (i % 16 == 0)
            P(c, "\n   ");
        P(c, " 0x%02x,", i < image_len ? b[i] : 0);
    }
    P(c, "\n};\n\n");
    P(c, "static blkc_rt_cuda_image %s_image = {%s_binary, sizeof %s_binary, NULL};\n",
      prefix, prefix, prefix);
    P(c, "\n/* ------------------------------------------------------------ launchers */\n");
    for (int i = 0; i < m->nfuncs; i++) {
        if (m->funcs[i]->is_device)
            continue;
        if (gen_launcher_cuda(c, m->funcs[i], o, prefix, err, errlen))
            return -1;
    }
    if (h->oom || c->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ driver */

static int write_file(const char *path, const DslBuf *b, char *err,
                      size_t errlen)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return -1;
    }
    bool ok = fwrite(b->data ? b->data : "", 1, b->len, fp) == b->len;
    if (fclose(fp) != 0 || !ok) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int aot_write(const IrModule *m, const AotOptions *o, char *err, size_t errlen)
{
    const char *target = o->target ? o->target : "cpu";
    bool cuda = strcmp(target, "cuda") == 0;
    if (!cuda && strcmp(target, "cpu") != 0) {
        snprintf(err, errlen, "--emit=aot supports the cpu and cuda targets, "
                 "not %s", target);
        return -1;
    }
    /* OUT, OUT.c or OUT.h all name the pair OUT.h / OUT.c */
    char out[4096];
    snprintf(out, sizeof out, "%s", o->out ? o->out : "");
    size_t ol = strlen(out);
    if (ol > 2 && out[ol - 2] == '.' && (out[ol - 1] == 'c' || out[ol - 1] == 'h'))
        out[ol - 2] = 0;
    const char *prefix = base_name(out);
    if (!is_ident(prefix)) {
        snprintf(err, errlen, "the name of -o '%s' must be a C identifier "
                 "(it prefixes every generated symbol)", o->out ? o->out : "");
        return -1;
    }
    int nk = 0;
    for (int i = 0; i < m->nfuncs; i++)
        nk += !m->funcs[i]->is_device;
    if (nk == 0) {
        snprintf(err, errlen, "no kernel to compile ahead of time");
        return -1;
    }

    AotOptions oo = *o;
    oo.target = target;
    DslBuf h = {0}, c = {0}, code = {0};
    int rc = -1;
    IrFunc *copies = NULL;
    IrFunc **ptrs = NULL;
    char **names = NULL;
    if (cuda) {
        if (!oo.arch)
            oo.arch = "sm_90";
        BkOptions bo = {oo.arch, 3};
        if (bk_cuda_backend.emit(m, &bo, "cubin", &code, err, errlen))
            goto done;
        rc = aot_gen_cuda(m, &oo, prefix, code.data, code.len, &h, &c, err,
                          errlen);
    } else {
        /* compile a view of m whose kernels are named PREFIX__KERNEL (the
         * backend's symbols blk_k_PREFIX__KERNEL) */
        copies = calloc((size_t)m->nfuncs, sizeof *copies);
        ptrs = calloc((size_t)m->nfuncs, sizeof *ptrs);
        names = calloc((size_t)m->nfuncs, sizeof *names);
        if (!copies || !ptrs || !names) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        for (int i = 0; i < m->nfuncs; i++) {
            copies[i] = *m->funcs[i];
            size_t n = strlen(prefix) + strlen(m->funcs[i]->name) + 3;
            names[i] = malloc(n);
            if (!names[i]) {
                snprintf(err, errlen, "out of memory");
                goto done;
            }
            snprintf(names[i], n, "%s__%s", prefix, m->funcs[i]->name);
            copies[i].name = names[i];
            ptrs[i] = &copies[i];
        }
        IrModule view;
        memset(&view, 0, sizeof view);
        view.funcs = ptrs;
        view.nfuncs = m->nfuncs;
        BkOptions bo = {oo.arch, 3};
        if (bk_cpu_backend.emit(&view, &bo, "asm", &code, err, errlen))
            goto done;
        char cpu_note[300];
        if (!oo.arch) {
            char *host = LLVMGetHostCPUName();
            snprintf(cpu_note, sizeof cpu_note, "host CPU %s", host ? host : "?");
            LLVMDisposeMessage(host);
            oo.arch = cpu_note;
        }
        rc = aot_gen_cpu(m, &oo, prefix, code.data, code.len, &h, &c, err,
                         errlen);
    }
    if (rc == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s.h", out);
        rc = write_file(path, &h, err, errlen);
        if (rc == 0) {
            snprintf(path, sizeof path, "%s.c", out);
            rc = write_file(path, &c, err, errlen);
        }
    }
done:
    for (int i = 0; names && i < m->nfuncs; i++)
        free(names[i]);
    free(names);
    free(ptrs);
    free(copies);
    dsl_buf_free(&h);
    dsl_buf_free(&c);
    dsl_buf_free(&code);
    return rc;
}
