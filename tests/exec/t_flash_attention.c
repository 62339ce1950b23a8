/* t_flash_attention.c — examples/flash_attention.blk (online softmax)
 * against a direct softmax(scale Q K^T) V in double: non-causal and causal,
 * S not a multiple of the blocks, several batch*head slices. */
#include "harness.h"

static void run(const char *const *defs, int Z, int S, int D, int causal)
{
    blkc_kernel *k = h_build(H_EXAMPLE("flash_attention.blk"), defs);
    size_t n = (size_t)Z * S * D;
    uint16_t *q = h_array(H_F16, n), *kk = h_array(H_F16, n), *v = h_array(H_F16, n),
             *o = h_array(H_F16, n);
    h_fill(q, H_F16, n, -1, 1);
    h_fill(kk, H_F16, n, -1, 1);
    h_fill(v, H_F16, n, -1, 1);
    double scale = 1.0 / sqrt((double)D);
    H_LAUNCH(k, h_ten(h_t3(q, H_F16, Z, S, D)), h_ten(h_t3(kk, H_F16, Z, S, D)),
             h_ten(h_t3(v, H_F16, Z, S, D)), h_ten(h_t3(o, H_F16, Z, S, D)), h_flt(scale));
    double *r = h_alloc(8 * n), *p = h_alloc(8 * (size_t)S);
    for (int z = 0; z < Z; z++)
        for (int i = 0; i < S; i++) {
            double mx = -INFINITY, sum = 0;
            int hi = causal ? i + 1 : S;
            for (int j = 0; j < hi; j++) {
                double s = 0;
                for (int d = 0; d < D; d++)
                    s += (double)h_get(q, H_F16, ((size_t)z * S + i) * D + d) *
                         h_get(kk, H_F16, ((size_t)z * S + j) * D + d);
                p[j] = s * scale;
                mx = fmax(mx, p[j]);
            }
            for (int j = 0; j < hi; j++) { p[j] = exp(p[j] - mx); sum += p[j]; }
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < hi; j++)
                    acc += p[j] * h_get(v, H_F16, ((size_t)z * S + j) * D + d);
                r[((size_t)z * S + i) * D + d] = acc / sum;
            }
        }
    char what[96];
    snprintf(what, sizeof what, "flash attention Z=%d S=%d D=%d%s", Z, S, D,
             causal ? " causal" : "");
    /* P is rounded to f16 before the PV product, the output to f16 */
    h_check(what, o, H_F16, r, n, 4e-3, 1e-2);
}

int main(void)
{
    h_seed(29);
    run(NULL, 3, 200, 64, 0);
    run(H_DEFS("CAUSAL=true"), 2, 150, 64, 1);
    run(H_DEFS("BM=32", "BN=16", "D=32", "CAUSAL=true"), 4, 77, 32, 1);
    run(H_DEFS("BM=16", "BN=32", "D=16"), 2, 50, 16, 0);
    return h_done();
}
