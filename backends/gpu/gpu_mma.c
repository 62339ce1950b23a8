/* gpu_mma.c — emission of the ops on MMA-layout tiles (gpu_layouts.c): a
 * tile var held in registers across loop iterations as tensor-core
 * accumulator fragments (its dots: gpu_mmadot.c), its var.set of a splat
 * constant or of an expression per register, the store of the var to
 * global memory from the registers (the epilogue), the one conversion
 * MMA -> shared of a var.get that needs the tile in shared memory, and
 * elementwise values and row reductions of such tiles.
 * Register blk_r of var v holds element (row, col) of bk_gpu_mma_rowcol
 * with mt = blk_r / (E nt), nt = blk_r / E % nt, i = blk_r % E, E = the
 * elements per lane of one fragment (4 for 16x8 / 32 lanes and 16x16 / 64
 * lanes, 16 for MFMA 32x32 / 64 lanes). */
#include "gpu_emit.h"

#include <stdio.h>
#include <string.h>

/* elements per lane of one fragment */
static int fel(const BkGpuEm *em, const BkGpuMma *g)
{
    return g->fm * g->fn / em->dl->warp;
}

int bk_gpu_mma_nregs(const BkGpuMma *g)
{
    return g->mt * g->nt * (g->fm == 32 ? 16 : 4);
}

/* the fragment-row, fragment-column and element expressions of register R */
void bk_gpu_mma_split(const BkGpuEm *em, const BkGpuMma *g, const char *R, char *mt,
                      char *nt, char *i, size_t n)
{
    int E = fel(em, g);
    snprintf(mt, n, "%s / %d", R, g->nt * E);
    snprintf(nt, n, "%s / %d %% %d", R, E, g->nt);
    snprintf(i, n, "%s %% %d", R, E);
}

/* `for (blk_r ...) {` with blk_row / blk_col of register blk_r of var v */
void bk_gpu_mma_loop_open(BkGpuEm *em, int v)
{
    const BkGpuMma *g = &em->vmma[v];
    char row[256], col[256], mt[64], nt[64], i[64];
    bk_gpu_mma_split(em, g, "blk_r", mt, nt, i, sizeof mt);
    bk_gpu_mma_rowcol(em, v, mt, nt, i, row, sizeof row, col, sizeof col);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_r = 0; blk_r < %d; blk_r++) {", bk_gpu_mma_nregs(g));
    em->indent++;
    bk_gpu_line(em, "const int blk_row = %s, blk_col = %s;", row, col);
    em->reg_var = v;
}

void bk_gpu_mma_loop_close(BkGpuEm *em)
{
    em->indent--;
    bk_gpu_line(em, "}");
    em->reg_var = -1;
}

void bk_gpu_mma_slot(const BkGpuEm *em, int v, const char *R, char *buf, size_t n, int *S)
{
    const BkGpuMma *g = &em->vmma[v < 0 ? -1 - v : v];
    int E = fel(em, g);
    if (v < 0) { /* columns: CUDA 2 per n-fragment (2q, 2q + 1); HIP 1 */
        if (em->dl->kind == BK_GPU_CUDA) {
            snprintf(buf, n, "(%s) / %d %% %d * 2 + ((%s) & 1)", R, E, g->nt, R);
            *S = g->nt * 2;
        } else {
            snprintf(buf, n, "(%s) / %d %% %d", R, E, g->nt);
            *S = g->nt;
        }
    } else if (em->dl->kind == BK_GPU_CUDA) {
        snprintf(buf, n, "(%s) / %d * 2 + ((%s) %% 4 >> 1)", R, g->nt * E, R);
        *S = g->mt * 2;
    } else {
        snprintf(buf, n, "(%s) / %d * %d + (%s) %% %d", R, g->nt * E, E, R, E);
        *S = g->mt * E;
    }
}

/* The row broadcasts x[:, None] (of an [M, 1] tile read at the row) in
 * the fused expression x read per register of v: open: each lane loads
 * its rows once into blk_rc<B>[slot] (raw reads them there: no shared
 * load per register); else forgets them after the loop. */
static void row_caches(BkGpuEm *em, int v, int x, bool open, int depth)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[x];
    if (!em->rowc || depth > 16 || !em->virt[x] || bk_gpu_free_leaf(em, x) ||
        in->type.rank == 0)
        return;
    const BkGpuMma *g = &em->vmma[v];
    if (in->op == IR_BCAST) {
        const IrType *a = &f->ins[in->opnd[0]].type;
        bool rows = a->rank == 2 && a->shape[1] == 1 && a->shape[0] == g->M;
        bool cols = a->rank == 2 && a->shape[0] == 1 && a->shape[1] == g->N;
        if (in->type.rank != 2 || in->type.shape[0] != g->M || in->type.shape[1] != g->N ||
            !(rows || cols) || BK_GPU_RV(em, in->opnd[0]))
            return;
        int mr = bk_gpu_mrow_root(em, in->opnd[0]);
        if (rows && mr >= 0 && bk_gpu_same_rows(em, v, em->mrow[mr]))
            return; /* an MROW value: read from its registers (gpu_mrows.c) */
        if (!open) {
            em->rowc[x] = 0;
            return;
        }
        char sl[160], mt[200], i[200], row[400], col[400], rv[BK_GPU_EXPR];
        int S, cuda = em->dl->kind == BK_GPU_CUDA, E = fel(em, g);
        bk_gpu_mma_slot(em, rows ? v : -1 - v, "blk_r", sl, sizeof sl, &S);
        if (rows) {
            snprintf(mt, sizeof mt, "blk_s / %d", cuda ? 2 : E);
            snprintf(i, sizeof i, cuda ? "blk_s %% 2 * 2" : "blk_s %% %d", E);
            bk_gpu_mma_rowcol(em, v, mt, "0", i, row, sizeof row, col, sizeof col);
        } else {
            snprintf(mt, sizeof mt, cuda ? "blk_s / 2" : "blk_s");
            snprintf(i, sizeof i, cuda ? "blk_s %% 2" : "0");
            bk_gpu_mma_rowcol(em, v, "0", mt, i, row, sizeof row, col, sizeof col);
        }
        bk_gpu_line(em, "%s blk_rc%d[%d]; /* v%d: this lane's %s */",
                    bk_gpu_stype(a->dtype), x, S, x, rows ? "rows" : "columns");
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) {", S);
        em->indent++;
        bk_gpu_line(em, "const int blk_e = %s;", rows ? row : col);
        bk_gpu_raw(em, in->opnd[0], "blk_e", rv, sizeof rv);
        bk_gpu_line(em, "blk_rc%d[blk_s] = %s;", x, rv);
        em->indent--;
        bk_gpu_line(em, "}");
        em->rowc[x] = rows ? v + 1 : -1 - v;
        return;
    }
    if (!(ir_op_flags[in->op] & F_ELEM))
        return;
    for (int j = 0; j < 3 && j < ir_op_nopnd[in->op]; j++)
        if (in->opnd[j] >= 0)
            row_caches(em, v, in->opnd[j], open, depth + 1);
}

/* The registers of pseudo-var P (a dot value's, a register value's) in
 * the current scope, where every reader of the value can see them. */
void bk_gpu_mma_decl_regs(BkGpuEm *em, int P, const char *ty)
{
    const BkGpuMma *g = &em->vmma[P];
    bk_gpu_line(em, "%s var%d[%d];", ty, P, bk_gpu_mma_nregs(g));
    bk_gpu_mma_decl_warp(em, P);
}

void bk_gpu_mma_decl_warp(BkGpuEm *em, int P)
{
    const BkGpuMma *g = &em->vmma[P];
    if (g->wb > 1) /* a part at a time: the warp's place in its group of wm x wn */
        bk_gpu_line(em, "const int blk_wr%d = (blk_warp %% %d / %d) * %d, blk_wc%d = (blk_warp %% %d) * %d;",
                    P, g->wm * g->wn, g->wn, g->WM, P, g->wn, g->WN);
    else
        bk_gpu_line(em, "const int blk_wr%d = (blk_warp / %d) * %d, blk_wc%d = (blk_warp %% %d) * %d;",
                    P, g->wn, g->WM, P, g->wn, g->WN);
    bk_gpu_line(em, "(void)blk_wr%d; (void)blk_wc%d;", P, P);
}

/* " && vM[E]" for a mask tile at flat element E, " && vM" for a scalar */
static void mask_and(const BkGpuEm *em, int mask, const char *e, char *buf, size_t n)
{
    buf[0] = 0;
    if (mask >= 0 && em->f->ins[mask].type.rank > 0)
        snprintf(buf, n, " && BLK_SLD(v%d[%s])", mask, e);
    else if (mask >= 0)
        snprintf(buf, n, " && v%d", mask);
}

/* The end of an op whose accesses gpu_sync.c recorded (as loop_close). */
void bk_gpu_mma_op_done(BkGpuEm *em)
{
    if (em->nosyncelim || !em->seg_ok)
        bk_gpu_sync(em);
    else
        em->pending = true;
}

void bk_gpu_mma_decl(BkGpuEm *em, int v)
{
    char ty[128], lay[256];
    ir_type_str(&em->f->vars[v].type, ty, sizeof ty);
    bk_gpu_var_lay_str(em, v, lay, sizeof lay);
    bk_gpu_line(em, "/* var %s : %s, layout %s */", em->f->vars[v].name, ty, lay);
    bk_gpu_mma_decl_regs(em, v, "float");
}

static void vset_expr(BkGpuEm *em, int id);

void bk_gpu_mma_vset(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    int x = in->opnd[0];
    if (em->f->ins[x].op == IR_DOT) {
        bk_gpu_line(em, "/* var.set %s: the dot accumulated in place (registers) */",
                    em->f->vars[in->param].name);
        return;
    }
    if (!(em->f->ins[x].op == IR_CONST && em->virt[x])) {
        vset_expr(em, id);
        return;
    }
    if (em->persist && id == em->pzero) { /* gpu_persist.c */
        bk_gpu_line(em, "/* var.set %s = 0: by the tile's first wgmma (scale-d 0), not by "
                    "instructions inside the wgmma pipeline across tiles */",
                    em->f->vars[in->param].name);
        dsl_buf_printf(em->o, "#if !(__CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL))\n");
        bk_gpu_line(em, "for (int blk_r = 0; blk_r < %d; blk_r++) var%d[blk_r] = 0.0f;",
                    bk_gpu_mma_nregs(&em->vmma[in->param]), in->param);
        dsl_buf_printf(em->o, "#endif\n");
        return;
    }
    char lit[256]; /* a splat constant's literal (bk_gpu_read checks the fit) */
    bk_gpu_read(em, x, "0", lit, sizeof lit);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_r = 0; blk_r < %d; blk_r++) var%d[blk_r] = %s; /* registers */",
                bk_gpu_mma_nregs(&em->vmma[in->param]), in->param, lit);
}

void bk_gpu_mma_to_shared(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    int v = in->param;
    bk_gpu_line(em, "/* layout conversion: var %s mma (registers) -> shared, row-major */",
                em->f->vars[v].name);
    bk_gpu_decl_tile(em, id);
    bk_gpu_mma_loop_open(em, v);
    bk_gpu_line(em, "BLK_SST(v%d[blk_row * %lld + blk_col]) = var%d[blk_r];", id, em->vmma[v].N, v);
    bk_gpu_mma_loop_close(em);
    bk_gpu_mma_op_done(em);
}

/* blk_x[0 .. n) = the stored values (dtype dt) of value x, var v's
 * registers blk_p .. blk_p + n - 1 at (blk_row, blk_col + j); the element
 * index blk_e of type et (cast: its cast of blk_row) */
static void reg_values(BkGpuEm *em, int v, int x, int n, int dt, const char *et,
                       const char *cast)
{
    char rv[BK_GPU_EXPR], cv[BK_GPU_EXPR + 64];
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_j = 0; blk_j < %d; blk_j++) {", n);
    em->indent++;
    bk_gpu_line(em, "const int blk_r = blk_p + blk_j;");
    bk_gpu_line(em, "const %s blk_e = %sblk_row * %lld + blk_col + blk_j;", et, cast,
                em->vmma[v].N);
    bk_gpu_line(em, "(void)blk_r; (void)blk_e;");
    em->reg_var = v;
    bk_gpu_read(em, x, "blk_e", rv, sizeof rv);
    em->reg_var = -1;
    bk_gpu_to_s(cv, sizeof cv, dt, rv); /* rv: the C type (float) */
    bk_gpu_line(em, "blk_x[blk_j] = %s;", cv);
    em->indent--;
    bk_gpu_line(em, "}");
}

/* The epilogue: store id of an MMA var.get, or of a fused elementwise
 * expression of it (gpu_layouts.c store_of: a cast to bf16 / f16, a
 * scale), each lane computing the value of its own registers and writing
 * them to global memory. On CUDA registers 2i, 2i+1 of a lane are columns
 * c, c + 1 of one row, so a pair goes as one 8-byte store (f32; a 4-byte
 * bf16x2 / f16x2 store for 16-bit types) when both are in bounds, on,
 * contiguous and aligned: the 4 lanes of a row then cover 32 (16) bytes.
 * Else (and on HIP, where a lane's registers are rows of one column, 16
 * lanes in a row covering 64 / 32 bytes) element by element with the
 * bounds masks. */
void bk_gpu_mma_store(BkGpuEm *em, int id)
{
    const IrFunc *f = em->f;
    const IrInstr *in = &f->ins[id];
    const IrParam *pp = &f->params[in->param];
    int x = in->opnd[0], v = em->mvar[x];
    const BkGpuMma *mg = &em->vmma[v];
    int sz = dsl_dtype_bytes(pp->dtype);
    int P = em->dl->kind == BK_GPU_CUDA && (pp->assume & IR_ASSUME_UNIT_INNER) &&
            (pp->assume & IR_ASSUME_ALIGN16) &&
            (pp->dtype == DT_F32 || pp->dtype == DT_F16 || pp->dtype == DT_BF16) ? 2 : 1;
    int I = f->views[in->view].ndims - 1;
    char ok[BK_GPU_VIEW], addr[BK_GPU_VIEW], m[64], base[BK_GPU_NAME + 16], row[256], col[256], mt[64], nt[64], fi[64];
    const char *st = bk_gpu_stype(pp->dtype);
    if (id == em->tstore) { /* by TMA from a staging tile (gpu_persist.c) */
        bk_gpu_tstore_open(em, id);
        row_caches(em, v, x, true, 0);
        /* CUDA: a lane's registers 2i, 2i + 1 are columns c, c + 1 (c
         * even) of one row, in one 16-byte chunk of the swizzled row: one
         * 8-byte (4-byte) store, 2 wavefronts per warp, no bank conflict */
        const int Q = em->dl->kind == BK_GPU_CUDA ? 2 : 1;
        bk_gpu_mma_split(em, mg, "blk_p", mt, nt, fi, sizeof mt);
        bk_gpu_mma_rowcol(em, v, mt, nt, fi, row, sizeof row, col, sizeof col);
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_p = 0; blk_p < %d; blk_p += %d) {", bk_gpu_mma_nregs(mg), Q);
        em->indent++;
        bk_gpu_line(em, "const int blk_row = %s, blk_col = %s;", row, col);
        bk_gpu_line(em, "alignas(%d) %s blk_x[%d];", Q * sz, st, Q);
        reg_values(em, v, x, Q, pp->dtype, "int", "");
        bk_gpu_line(em, "*(%s *)&blk_st[blk_wgs(blk_row * %lld + blk_col, %lld, %lld, 0, 128, %d)] = "
                    "*(const %s *)blk_x;", Q * sz == 8 ? "unsigned long long" : Q * sz == 4 ?
                    "unsigned" : Q * sz == 2 ? "unsigned short" : "float", mg->N, mg->N, mg->M, sz,
                    Q * sz == 8 ? "unsigned long long" : Q * sz == 4 ? "unsigned" : Q * sz == 2 ?
                    "unsigned short" : "float");
        em->indent--;
        bk_gpu_line(em, "}");
        row_caches(em, v, x, false, 0);
        bk_gpu_tstore_close(em, id);
        bk_gpu_mma_op_done(em);
        return;
    }
    bk_gpu_base(em, id, base, sizeof base);
    bk_gpu_line(em, "/* store %s from var %s's registers (layout mma)%s, %s */",
                pp->name, f->vars[v].name, f->ins[x].op == IR_VGET ? "" : " through a per-register expression",
                P == 2 ? "column pairs as one store" : "element by element");
    bk_gpu_mma_split(em, mg, "blk_p", mt, nt, fi, sizeof mt);
    bk_gpu_mma_rowcol(em, v, mt, nt, fi, row, sizeof row, col, sizeof col);
    bk_gpu_line(em, "{");
    em->indent++;
    row_caches(em, v, x, true, 0);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_p = 0; blk_p < %d; blk_p += %d) {", bk_gpu_mma_nregs(mg), P);
    em->indent++;
    bk_gpu_line(em, "const int blk_row = %s, blk_col = %s;", row, col);
    /* the stored values of registers blk_p .. blk_p + P - 1 */
    bk_gpu_line(em, "%s blk_x[%d];", st, P);
    reg_values(em, v, x, P, pp->dtype, "long long", "(long long)");
    if (P == 2) {
        bk_gpu_line(em, "bool blk_full;");
        bk_gpu_line(em, "{");
        em->indent++;
        bk_gpu_line(em, "const long long e = (long long)blk_row * %lld + blk_col;", mg->N);
        bk_gpu_view_at(em, id, "e", -1, NULL, ok, sizeof ok, addr, sizeof addr);
        mask_and(em, in->opnd[1], "e", m, sizeof m);
        char m1[64];
        mask_and(em, in->opnd[1], "e + 1", m1, sizeof m1);
        bk_gpu_line(em, "blk_full = %s && c%d + 2 <= p_%s.shape[%d]%s%s && ((%s) & 1) == 0;",
                    ok, I, pp->name, I, m, m1, addr);
        bk_gpu_line(em, "if (blk_full) {");
        if (sz == 4) /* one 64-bit value: one 8-byte store */
            bk_gpu_line(em, "    *(unsigned long long *)&%s[%s] = (unsigned long long)__float_as_uint(blk_x[1]) << 32 | __float_as_uint(blk_x[0]);",
                        base, addr);
        else /* a bf16x2 / f16x2 pair: one 4-byte store */
            bk_gpu_line(em, "    alignas(4) %s blk_vb[2] = {blk_x[0], blk_x[1]}; *(unsigned *)&%s[%s] = *(const unsigned *)blk_vb;",
                        st, base, addr);
        bk_gpu_line(em, "}");
        em->indent--;
        bk_gpu_line(em, "}");
        bk_gpu_line(em, "if (!blk_full) /* cut by the bounds, the mask or the alignment */");
    }
    bk_gpu_line(em, "for (int blk_j = 0; blk_j < %d; blk_j++) {", P);
    em->indent++;
    bk_gpu_line(em, "const long long e = (long long)blk_row * %lld + blk_col + blk_j;", mg->N);
    bk_gpu_view_at(em, id, "e", -1, NULL, ok, sizeof ok, addr, sizeof addr);
    mask_and(em, in->opnd[1], "e", m, sizeof m);
    bk_gpu_line(em, "if (%s%s) %s[%s] = blk_x[blk_j];", ok, m, base, addr);
    em->indent--;
    bk_gpu_line(em, "}");
    em->indent--;
    bk_gpu_line(em, "}");
    row_caches(em, v, x, false, 0);
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_mma_op_done(em);
}

/* var.set v, x with x = E or add(E, dot(a, b)): E per register, then the
 * dot accumulates in place. */
static void vset_expr(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    int v = in->param, x = in->opnd[0], rest = -1;
    int d = bk_gpu_set_dot(em, x, &rest);
    int e = d >= 0 ? rest : x;
    char idx[128], rv[BK_GPU_EXPR];
    bk_gpu_line(em, "/* var.set %s, layout mma: per register (row, col)%s */",
                em->f->vars[v].name, d >= 0 ? ", then the dot accumulates in place" : "");
    bool dfr = d >= 0 && bk_gpu_wgmma_deferred(em, d);
    if (dfr) /* gpu_wgmma.c qk_plan: on sm_90a the next step's q k^T rescales */
        dsl_buf_printf(em->o, "#if !(__CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL))\n");
    bk_gpu_line(em, "{");
    em->indent++;
    row_caches(em, v, e, true, 0);
    bk_gpu_mma_loop_open(em, v);
    snprintf(idx, sizeof idx, "blk_row * %lld + blk_col", em->vmma[v].N);
    bk_gpu_read(em, e, idx, rv, sizeof rv);
    bk_gpu_line(em, "var%d[blk_r] = %s;", v, rv);
    bk_gpu_mma_loop_close(em);
    row_caches(em, v, e, false, 0);
    em->indent--;
    bk_gpu_line(em, "}");
    if (dfr)
        dsl_buf_printf(em->o, "#endif\n");
    if (d >= 0)
        bk_gpu_mma_dot(em, d, v);
    else
        bk_gpu_mma_op_done(em);
}

/* Register value id (gpu_rvals.c): its expression per register of its
 * pseudo-var, reading register values of the same layout in place; its
 * shared tile written too where other readers need it (convert mma ->
 * shared), or only for the FMA path of a dot reading it as operand a. */
void bk_gpu_mma_value(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    int P = BK_GPU_RV_VAR(em, id);
    const BkGpuMma *g = &em->vmma[P];
    bool sh = em->lay[id] == BK_LAY_SHARED, fb = sh && em->rfb[id] && !em->rcvt[id];
    bk_gpu_line(em, "/* v%d = %s per register (var%d): mma(%dx%d warps, %dx%d fragments of %dx%d), "
                "the layout of v%d%s */", id, ir_op_names[in->op], P, g->wm, g->wn, g->mt, g->nt,
                g->fm, g->fn, em->rroot[id],
                !sh ? "" : fb ? "; a shared copy for the FMA path" : ", then convert mma -> shared");
    if (sh)
        bk_gpu_decl_tile(em, id);
    bk_gpu_mma_decl_regs(em, P, bk_gpu_stype(in->type.dtype));
    bk_gpu_line(em, "{");
    em->indent++;
    for (int i = 0; i < 3 && i < ir_op_nopnd[in->op]; i++)
        if (in->opnd[i] >= 0)
            row_caches(em, P, in->opnd[i], true, 0);
    bk_gpu_mma_loop_open(em, P);
    char idx[128], o[3][BK_GPU_EXPR / 4], x[BK_GPU_EXPR], sv[BK_GPU_EXPR];
    snprintf(idx, sizeof idx, "blk_row * %lld + blk_col", g->N);
    for (int i = 0; i < 3; i++) {
        o[i][0] = 0;
        if (i < ir_op_nopnd[in->op] && in->opnd[i] >= 0)
            bk_gpu_read(em, in->opnd[i], idx, o[i], sizeof o[i]);
    }
    bk_gpu_elem_expr(em, id, o[0], o[1], o[2], x, sizeof x);
    bk_gpu_to_s(sv, sizeof sv, in->type.dtype, x);
    bk_gpu_line(em, "var%d[blk_r] = %s;", P, sv);
    if (sh && !fb) {
        char se[300]; /* bounded: blk_swz / blk_wgs of idx (< 128) and five numbers */
        bk_gpu_swz_idx(em, id, idx, se, sizeof se);
        bk_gpu_line(em, "v%d[%s] = var%d[blk_r];", id, se, P);
    }
    bk_gpu_mma_loop_close(em);
    for (int i = 0; i < 3 && i < ir_op_nopnd[in->op]; i++)
        if (in->opnd[i] >= 0)
            row_caches(em, P, in->opnd[i], false, 0);
    em->indent--;
    bk_gpu_line(em, "}");
    if (fb) { /* the FMA path's copy, fenced by its own barriers (gpu_sync.c
               * does not track it: the tensor-core path never touches it) */
        char se[300]; /* bounded, as above */
        bk_gpu_swz_idx(em, id, idx, se, sizeof se);
        dsl_buf_printf(em->o, "#if !(__CUDA_ARCH__ >= 800)\n");
        bk_gpu_bar(em);
        bk_gpu_mma_loop_open(em, P);
        bk_gpu_line(em, "v%d[%s] = var%d[blk_r];", id, se, P);
        bk_gpu_mma_loop_close(em);
        bk_gpu_bar(em);
        dsl_buf_printf(em->o, "#endif\n");
    }
    bk_gpu_mma_op_done(em);
}

/* Reduction id (sum / max / min, f32) along the last axis of register
 * value x, whose warps own whole rows (wn = 1): each lane folds its
 * registers of each of its rows (CUDA m16n8: rows g and g + 8 of each
 * m-fragment, registers i >> 1; HIP MFMA: one row per register i), then
 * the lanes sharing the rows (CUDA the 4 of a quad; HIP the fn lanes of a
 * fragment row group) combine by xor shuffles. An MROW result
 * (gpu_mrows.c) keeps them: every lane its rows' registers; else the
 * first lane of each row writes it into the reduction's shared tile. */
void bk_gpu_mma_reduce(BkGpuEm *em, int id)
{
    const IrInstr *in = &em->f->ins[id];
    int x = in->opnd[0], P = BK_GPU_DOT_VAR(em, bk_gpu_rv_root(em, x));
    const BkGpuMma *g = &em->vmma[P];
    bool cuda = em->dl->kind == BK_GPU_CUDA;
    int E = fel(em, g), S, span = cuda ? 4 : g->fn;
    char ident[96], slot[160], idx[128], v[BK_GPU_EXPR], c[BK_GPU_EXPR + 64], st[BK_GPU_EXPR];
    const char *f = in->attr == RED_SUM ? "(%s + %s)" : in->attr == RED_MAX ? "blk_max(%s, %s)"
                                                                            : "blk_min(%s, %s)";
    if (in->attr == RED_SUM)
        snprintf(ident, sizeof ident, "0.0f");
    else if (in->attr == RED_MAX)
        bk_gpu_min_lit(ident, sizeof ident, DT_F32);
    else
        bk_gpu_max_lit(ident, sizeof ident, DT_F32);
    bk_gpu_mma_slot(em, P, "blk_r", slot, sizeof slot, &S);
    bk_gpu_decl_tile(em, id);
    bk_gpu_line(em, "{ /* v%d = reduce %s along the last axis from the registers of v%d (var%d): "
                "in-lane, then the %d lanes of each row; the warps own whole rows */",
                id, in->attr == RED_SUM ? "sum" : in->attr == RED_MAX ? "max" : "min", x, P, span);
    em->indent++;
    bk_gpu_line(em, "float blk_rp[%d];", S);
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) blk_rp[blk_s] = %s;", S, ident);
    row_caches(em, P, x, true, 0);
    bk_gpu_mma_loop_open(em, P);
    snprintf(idx, sizeof idx, "blk_row * %lld + blk_col", g->N);
    bk_gpu_read(em, x, idx, v, sizeof v);
    snprintf(c, sizeof c, f, "blk_rp[blk_s]", v);
    bk_gpu_line(em, "const int blk_s = %s;", slot);
    bk_gpu_line(em, "blk_rp[blk_s] = %s;", c);
    bk_gpu_mma_loop_close(em);
    row_caches(em, P, x, false, 0);
    snprintf(c, sizeof c, f, "blk_rp[blk_s]", "blk_y");
    bk_gpu_line(em, "#pragma unroll");
    bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++)", S);
    bk_gpu_line(em, "    for (int m = %d; m > 0; m >>= 1) {", span / 2);
    bk_gpu_line(em, "        const float blk_y = BLK_SHFL_XOR(blk_rp[blk_s], m);");
    bk_gpu_line(em, "        blk_rp[blk_s] = %s;", c);
    bk_gpu_line(em, "    }");
    bk_gpu_to_s(st, sizeof st, in->type.dtype, "blk_rp[blk_s]");
    if (em->lay[id] == BK_LAY_MROW) { /* the slots are its row registers */
        bk_gpu_line(em, "#pragma unroll");
        bk_gpu_line(em, "for (int blk_s = 0; blk_s < %d; blk_s++) v%d[blk_s] = %s;", S, id, st);
        em->indent--;
        bk_gpu_line(em, "}");
        if (em->mrcvt[id])
            bk_gpu_mrow_to_shared(em, id);
        bk_gpu_mma_op_done(em);
        return;
    }
    bk_gpu_mma_loop_open(em, P);
    bk_gpu_line(em, "const int blk_s = %s;", slot);
    bk_gpu_line(em, "if (blk_lane %% %d == 0 && blk_r / %d %% %d == 0%s) BLK_SST(v%d[blk_row]) = %s;", span, E,
                g->nt, cuda ? " && (blk_r & 1) == 0" : "", id, st);
    bk_gpu_mma_loop_close(em);
    em->indent--;
    bk_gpu_line(em, "}");
    bk_gpu_mma_op_done(em);
}
