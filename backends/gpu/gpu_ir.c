/* gpu_ir.c — the `--emit=gpu-ir` stage: each kernel's Core IR with the
 * layout the layout pass (gpu_layouts.c) chose for every tile value and
 * var printed after it (` @ LAYOUT`), the conversions and fused operands
 * marked, and the launch facts the kernel was specialized for. The same
 * strings annotate the generated CUDA/HIP C (bk_gpu_var_lay_str).
 * Entry: bk_gpu_emit_gpu_ir. */
#include "gpu_emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* how a wgmma operand tile is stored (gpu_wgmma.c) */
static const char *wg_note(const BkGpuEm *em, int id)
{
    return em->wgs[id] == 128 ? ", wgmma 128B swizzle" :
           em->wgs[id] == 64 ? ", wgmma 64B swizzle" : ", wgmma 32B swizzle";
}

void bk_gpu_lay_str(const BkGpuEm *em, int id, char *buf, size_t n)
{
    const IrInstr *in = &em->f->ins[id];
    buf[0] = 0;
    if (in->op == IR_VSET && em->mvar[id] >= 0) {
        snprintf(buf, n, "registers, per fragment element");
        return;
    }
    if (in->type.rank == 0 || in->dead)
        return;
    if (BK_GPU_RV(em, id) && !em->virt[id]) {
        const BkGpuMma *g = &em->vmma[BK_GPU_RV_VAR(em, id)];
        char cv[160] = "";
        if (em->rcvt[id])
            snprintf(cv, sizeof cv, "  ; convert mma -> shared+%lld%s", em->off[id],
                     em->swz[id] ? ", swizzled" : "");
        else if (em->rfb[id])
            snprintf(cv, sizeof cv, "  ; a dot reads it as a from registers (FMA path: shared+%lld)",
                     em->off[id]);
        if (in->op == IR_DOT && em->wgd && em->wgd[id]) { /* a dot value on wgmma */
            char nm[64];
            bk_gpu_wgmma_name(em, id, nm, sizeof nm);
            snprintf(cv, sizeof cv, "  ; wgmma.mma_async %s (sm_90a), a and b from shared memory",
                     nm);
        }
        snprintf(buf, n, "mma(%dx%d warps, %dx%d fragments of %dx%d, registers%s)%s", g->wm, g->wn,
                 g->mt, g->nt, g->fm, g->fn,
                 em->rroot[id] == id ? "" : ", per register", cv);
        return;
    }
    if (bk_gpu_mrow_root(em, id) == id) {
        char lay[160], fr[96] = "", cv[64] = "";
        bk_gpu_mrow_str(em, em->mrow[id], lay, sizeof lay);
        if (em->rred[id])
            snprintf(fr, sizeof fr, "  ; from the registers of %%%d (in-lane, then shuffles)",
                     in->opnd[0]);
        if (em->mrcvt[id])
            snprintf(cv, sizeof cv, "  ; convert mma rows -> shared+%lld", em->off[id]);
        snprintf(buf, n, "%s%s%s", lay, fr, cv);
        return;
    }
    if (bk_gpu_mrow_root(em, id) >= 0) {
        snprintf(buf, n, "rows = %%%d", bk_gpu_mrow_root(em, id));
        return;
    }
    if (em->rred && em->rred[id]) {
        snprintf(buf, n, "shared+%lld  ; from the registers of %%%d (in-lane, then shuffles)",
                 em->off[id], in->opnd[0]);
        return;
    }
    if (em->lay[id] == BK_LAY_BLOCKED) {
        int W = bk_gpu_blk_w(em, &in->type);
        snprintf(buf, n, "blocked(runs of %d, %d registers per thread)", W,
                 bk_gpu_blk_regs(em, &in->type));
    } else if (em->lay[id] == BK_LAY_SLICE) {
        const IrType *p = &em->f->ins[em->spar[id]].type;
        char pt[96], cv[64] = "";
        ir_type_str(p, pt, sizeof pt);
        if (em->scvt[id])
            snprintf(cv, sizeof cv, "  ; convert slice -> shared+%lld", em->off[id]);
        snprintf(buf, n, "slice(of %s, %d registers per thread)%s", pt,
                 bk_gpu_blk_regs(em, p) / bk_gpu_blk_w(em, p), cv);
    } else if (em->lay[id] == BK_LAY_MMA) {
        const BkGpuMma *g = &em->vmma[em->mvar[id]];
        char wg[128] = "", nm[64];
        if (in->op == IR_DOT && em->wgd && em->wgd[id]) {
            bk_gpu_wgmma_name(em, id, nm, sizeof nm);
            snprintf(wg, sizeof wg, "  ; wgmma.mma_async %s (sm_90a), %s from shared memory",
                     nm, em->areg && em->areg[id] ? "b" : "a and b");
        }
        snprintf(buf, n, "mma(%dx%d warps, %dx%d fragments of %dx%d, registers)%s%s%s",
                 g->wm, g->wn, g->mt, g->nt, g->fm, g->fn,
                 in->op == IR_DOT && in->opnd[2] < 0 ? "  ; accumulates at the var.set" : "",
                 in->op == IR_DOT && em->areg && em->areg[id] ? ", a from registers" : "", wg);
    } else if (em->cvt[id]) {
        snprintf(buf, n, "shared+%lld  ; convert mma -> shared", em->off[id]);
    } else if (in->op == IR_DOT && em->vmma[BK_GPU_DOT_VAR(em, id)].on) {
        const BkGpuMma *g = &em->vmma[BK_GPU_DOT_VAR(em, id)];
        char parts[96] = "";
        if (g->wb > 0)
            snprintf(parts, sizeof parts, " %d group%s over %lld part%s of %lldx%lld,", g->wb,
                     g->wb > 1 ? "s" : "", g->B, g->B > 1 ? "s" : "", g->M, g->N);
        snprintf(buf, n, "shared+%lld  ; computed in%s mma(%dx%d warps, %dx%d fragments of %dx%d, "
                 "registers), convert mma -> shared", em->off[id], parts, g->wm, g->wn, g->mt,
                 g->nt, g->fm, g->fn);
    } else if (em->virt[id] && in->op == IR_PERMUTE) {
        snprintf(buf, n, "fused (the dots read %%%d transposed)", in->opnd[0]);
    } else if (em->inblk[id] && (ir_op_flags[in->op] & F_ELEM)) {
        snprintf(buf, n, "shared+%lld%s  ; convert blocked -> shared", em->off[id],
                 em->swz[id] ? ", swizzled" : "");
    } else if (em->virt[id]) {
        snprintf(buf, n, "fused (computed where read)");
    } else if (em->var_of[id] >= 0) { /* a report line (b[256]): long names shortened */
        const char *vn = em->f->vars[em->var_of[id]].name;
        snprintf(buf, n, "shared = var %.200s%s", vn, strlen(vn) > 200 ? "..." : "");
    } else if (em->alias[id] != id && bk_gpu_slice_root(em, id) >= 0) {
        snprintf(buf, n, "slice = %%%d", bk_gpu_slice_root(em, id));
    } else if (em->alias[id] != id) {
        snprintf(buf, n, "shared = %%%d", em->alias[id]);
    } else if (in->op == IR_LOAD && em->pipe[id] >= 0) {
        snprintf(buf, n, "shared+%lld, %s ring of %d%s", em->off[id],
                 em->tma && em->tma[id] ? "TMA" : em->dl->kind == BK_GPU_HIP ? "register-staged" : "cp.async", bk_gpu_pipe_slots(em),
                 em->wgl && em->wgl[id] ? wg_note(em, id) : em->swz[id] ? ", swizzled" : "");
    } else if (in->op == IR_LOAD && em->tmaq == id) { /* gpu_persist.c's q_plan */
        snprintf(buf, n, "shared+%lld, TMA per tile by the producer%s", em->off[id],
                 em->wgl && em->wgl[id] ? wg_note(em, id) : em->swz[id] ? ", swizzled" : "");
    } else if (em->wgl && em->wgl[id]) {
        snprintf(buf, n, "shared+%lld%s", em->off[id], wg_note(em, id));
    } else if (em->swz[id]) {
        snprintf(buf, n, "shared+%lld, swizzled", em->off[id]);
    } else {
        snprintf(buf, n, "shared+%lld", em->off[id]);
    }
}

void bk_gpu_var_lay_str(const BkGpuEm *em, int v, char *buf, size_t n)
{
    const BkGpuMma *g = &em->vmma[v];
    if (em->f->vars[v].type.rank == 0)
        snprintf(buf, n, "register (scalar)");
    else if (em->vmrow[v] >= 0)
        bk_gpu_mrow_str(em, em->vmrow[v], buf, n);
    else if (em->vsl[v] >= 0) {
        const IrType *p = &em->f->ins[em->vsl[v]].type;
        char pt[96];
        ir_type_str(p, pt, sizeof pt);
        snprintf(buf, n, "slice(of %s, %d registers per thread)", pt,
                 bk_gpu_blk_regs(em, p) / bk_gpu_blk_w(em, p));
    } else if (g->on)
        snprintf(buf, n, "mma(%dx%d warps of %dx%d, %dx%d fragments of %dx%d, "
                 "%d registers per thread)", g->wm, g->wn, g->WM, g->WN, g->mt,
                 g->nt, g->fm, g->fn, g->mt * g->nt * g->fm * g->fn / em->dl->warp);
    else
        snprintf(buf, n, "shared+%lld", em->var_off[v]);
}

/* The launch facts the kernel was specialized for (IrParam.assume): they
 * decide vector widths and blocked runs, so the text says which code it
 * describes. */
static void facts_line(DslBuf *out, const IrFunc *f)
{
    bool any = false;
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        if (p->kind != PK_TENSOR || !p->assume)
            continue;
        dsl_buf_printf(out, "%s %s:", any ? "," : "// specialized for", p->name);
        any = true;
        if (p->assume & IR_ASSUME_ALIGN16)
            dsl_buf_printf(out, " align16");
        if (p->assume & IR_ASSUME_UNIT_INNER)
            dsl_buf_printf(out, " unit_inner");
        for (int d = 0; d < p->rank; d++) {
            if (p->assume & IR_ASSUME_STRIDE16(d))
                dsl_buf_printf(out, " stride16(%d)", d);
            if (p->assume & IR_ASSUME_DIM16(d))
                dsl_buf_printf(out, " dim16(%d)", d);
        }
    }
    dsl_buf_printf(out, "%s\n", any ? "" : "// generic: no launch facts (scalar loads and stores)");
}

int bk_gpu_emit_gpu_ir(const IrModule *m, const BkGpuDialect *dl, const char *arch,
                       DslBuf *out, char *err, size_t errlen)
{
    for (int k = 0, nk = 0; k < m->nfuncs; k++) {
        const IrFunc *f = m->funcs[k];
        if (f->is_device)
            continue;
        BkGpuEm em;
        if (bk_gpu_em_init(&em, f, dl, arch, NULL, err, errlen) < 0)
            return -1;
        char **notes = calloc((size_t)f->nins + 1, sizeof(char *));
        char **vnotes = calloc((size_t)f->nvars + 1, sizeof(char *));
        bool oom = !notes || !vnotes;
        for (int i = 0; i < f->nins && !oom; i++) {
            char b[256];
            bk_gpu_lay_str(&em, i, b, sizeof b);
            oom = b[0] && !(notes[i] = strdup(b));
        }
        for (int v = 0; v < f->nvars && !oom; v++) {
            char b[256];
            bk_gpu_var_lay_str(&em, v, b, sizeof b);
            oom = !(vnotes[v] = strdup(b));
        }
        if (!oom) {
            dsl_buf_printf(out, "%s// kernel %s (%s): blockDim.x = %d (%d warps of %d%s), "
                           "dynamic shared memory = %lld bytes\n", nk++ ? "\n" : "",
                           f->name, dl->name, bk_gpu_threads(&em), em.nw, dl->warp,
                           em.persist ? ", then a TMA producer warpgroup; persistent: "
                                        "each block loops over tiles"
                           : em.ws ? ", then a TMA producer warpgroup" : "", em.smem);
            facts_line(out, f);
            ir_print_func_notes(out, f, (const char *const *)notes,
                                (const char *const *)vnotes);
        }
        for (int i = 0; notes && i < f->nins; i++)
            free(notes[i]);
        for (int v = 0; vnotes && v < f->nvars; v++)
            free(vnotes[v]);
        free(notes);
        free(vnotes);
        bk_gpu_em_free(&em);
        if (oom) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (out->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
