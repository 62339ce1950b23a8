// kernel matmul_f16 (.blk line 0): blockDim.x = 256 (4 warps of 64),
// gridDim = the grid of ir_eval_grid, dynamic shared memory = 16384 bytes
extern "C" __constant__ int blk_smem_blk_k_matmul_f16 = 16384;
extern "C" __global__ void __launch_bounds__(256) blk_k_matmul_f16(
    BlkTensor<blk_f16, 2> p_A,
    BlkTensor<blk_f16, 2> p_B,
    BlkTensor<blk_f16, 2> p_C)
{
    BLK_DYNAMIC_SMEM(blk_smem);
    const int blk_tid = threadIdx.x;
    const int blk_lane = blk_tid % 64, blk_warp = blk_tid / 64;
    (void)blk_lane; (void)blk_warp; (void)blk_smem;
    /* var acc : f32[64, 64], layout mma(2x2 warps of 32x32, 1x1 fragments of 32x32, 16 registers per thread) */
    float var0[16];
    const int blk_wr0 = (blk_warp / 2) * 32, blk_wc0 = (blk_warp % 2) * 32;
    (void)blk_wr0; (void)blk_wc0;
    // program ids in groups of 8 along program_id(0) (L2 reuse)
    int blk_pid0, blk_pid1;
    {
        const int np0 = (int)gridDim.x, np1 = (int)gridDim.y;
        const int lin = (int)blockIdx.x + (int)blockIdx.y * np0;
        const int first = lin / (8 * np1) * 8;
        const int gs = np0 - first < 8 ? np0 - first : 8;
        const int r = lin % (8 * np1);
        blk_pid0 = first + r % gs;
        blk_pid1 = r / gs;
    }
    // line 3
    const int v0 = blk_pid0;
    const int v1 = 64;
    const int v2 = (v0 * v1);
    const int v3 = blk_pid1;
    const int v4 = 64;
    const int v5 = (v3 * v4);
    // line 5
    /* v6 = splat 0.0f, computed where it is read */
    #pragma unroll
    for (int blk_r = 0; blk_r < 16; blk_r++) var0[blk_r] = 0.0f; /* registers */
    // line 6
    const int v8 = (int)p_A.shape[1];
    const int v9 = 32;
    const int v10 = 0;
    // stages(3) on an AMD GPU: 2 ring load(s) of 2 slots, staged through registers one iteration ahead (no cp.async)
    int blk_it11 = 0; /* iteration number: ring slot blk_it % 2 */
    if (v10 < v8) { /* iteration 0 into slot 0 */
        const int blk_fiv = v10;
        uint4 blk_pr13[1]; /* v13's next tile (16-byte vectors) */
        uint4 blk_pr14[1]; /* v14's next tile (16-byte vectors) */
        { /* v13: A, into registers */
            #pragma unroll
            for (int blk_i = 0, e = blk_tid * 8; blk_i < 1; blk_i++, e += 2048) {
                bool blk_full;
                {
                    const long long c0 = (long long)v2 + (e / 32);
                    const long long c1 = (long long)blk_fiv + (e % 32);
                    blk_full = (unsigned long long)c0 < (unsigned long long)p_A.shape[0] && (unsigned long long)c1 < (unsigned long long)p_A.shape[1];
                    if (blk_full) blk_pr13[blk_i] = *(const uint4 *)&p_A.data[c0 * p_A.stride[0] + c1];
                }
                if (!blk_full) { /* cut by the bounds: element by element, zeros outside */
                    alignas(16) blk_f16 blk_vb[8];
                    for (int blk_j = 0; blk_j < 8; blk_j++) {
                        const int blk_e = e + blk_j;
                        const long long c0 = (long long)v2 + (blk_e / 32);
                        const long long c1 = (long long)blk_fiv + (blk_e % 32);
                        blk_vb[blk_j] = ((unsigned long long)c0 < (unsigned long long)p_A.shape[0] && (unsigned long long)c1 < (unsigned long long)p_A.shape[1]) ? p_A.data[c0 * p_A.stride[0] + c1] : blk_f32_to_f16(0);
                    }
                    blk_pr13[blk_i] = *(const uint4 *)blk_vb;
                }
            }
        }
        { /* v14: B, into registers */
            #pragma unroll
            for (int blk_i = 0, e = blk_tid * 8; blk_i < 1; blk_i++, e += 2048) {
                bool blk_full;
                {
                    const long long c0 = (long long)blk_fiv + (e / 64);
                    const long long c1 = (long long)v5 + (e % 64);
                    blk_full = (unsigned long long)c0 < (unsigned long long)p_B.shape[0] && (unsigned long long)c1 < (unsigned long long)p_B.shape[1];
                    if (blk_full) blk_pr14[blk_i] = *(const uint4 *)&p_B.data[c0 * p_B.stride[0] + c1];
                }
                if (!blk_full) { /* cut by the bounds: element by element, zeros outside */
                    alignas(16) blk_f16 blk_vb[8];
                    for (int blk_j = 0; blk_j < 8; blk_j++) {
                        const int blk_e = e + blk_j;
                        const long long c0 = (long long)blk_fiv + (blk_e / 64);
                        const long long c1 = (long long)v5 + (blk_e % 64);
                        blk_vb[blk_j] = ((unsigned long long)c0 < (unsigned long long)p_B.shape[0] && (unsigned long long)c1 < (unsigned long long)p_B.shape[1]) ? p_B.data[c0 * p_B.stride[0] + c1] : blk_f32_to_f16(0);
                    }
                    blk_pr14[blk_i] = *(const uint4 *)blk_vb;
                }
            }
        }
        { /* v13: A, registers -> slot 0 */
            unsigned char *const blk_ring = blk_smem + 0 + (long long)(0) * 4096;
            #pragma unroll
            for (int blk_i = 0, e = blk_tid * 8; blk_i < 1; blk_i++, e += 2048) {
                BLK_SST(*(uint4 *)(blk_ring + (long long)(e) * 2)) = blk_pr13[blk_i];
            }
        }
        { /* v14: B, registers -> slot 0 */
            unsigned char *const blk_ring = blk_smem + 8192 + (long long)(0) * 4096;
            #pragma unroll
            for (int blk_i = 0, e = blk_tid * 8; blk_i < 1; blk_i++, e += 2048) {
                BLK_SST(*(uint4 *)(blk_ring + (long long)(e) * 2)) = blk_pr14[blk_i];
            }
        }
    }
    __syncthreads();
    for (int v11 = v10; v11 < v8; v11 += v9, blk_it11++) {
        uint4 blk_pr13[1]; /* v13's next tile (16-byte vectors) */
        uint4 blk_pr14[1]; /* v14's next tile (16-byte vectors) */
        const bool blk_nx11 = (long long)v11 + 32LL < (long long)v8; /* a next iteration */
        if (blk_nx11) { /* its tiles into registers, in flight during the body */
            const int blk_fiv = (int)(v11 + v9);
            { /* v13: A, into registers */
                #pragma unroll
                for (int blk_i = 0, e = blk_tid * 8; blk_i < 1; blk_i++, e += 2048) {
                    bool blk_full;
                    {
                        const long long c0 = (long long)v2 + (e / 32);
                        const long long c1 = (long long)blk_fiv + (e % 32);
                        blk_full = (unsigned long long)c0 < (unsigned long long)p_A.shape[0] && (unsigned long long)c1 < (unsigned long long)p_A.shape[1];
                        if (blk_full) blk_pr13[blk_i] = *(const uint4 *)&p_A.data[c0 * p_A.stride[0] + c1];
                    }
                    if (!blk_full) { /* cut by the bounds: element by element, zeros outside */
                        alignas(16) blk_f16 blk_vb[8];
                        for (int blk_j = 0; blk_j < 8; blk_j++) {
                            const int blk_e = e + blk_j;
                            const long long c0 = (long long)v2 + (blk_e / 32);
                            const long long c1 = (long long)blk_fiv + (blk_e % 32);
                            blk_vb[blk_j] = ((unsigned long long)c0 < (unsigned long long)p_A.shape[0] && (unsigned long long)c1 < (unsigned long long)p_A.shape[1]) ? p_A.data[c0 * p_A.stride[0] + c1] : blk_f32_to_f16(0);
                        }
                        blk_pr13[blk_i] = *(const uint4 *)blk_vb;
                    }
                }
            }
            { /* v14: B, into registers */
                #pragma unroll
                for (int blk_i = 0, e = blk_tid * 8; blk_i < 1; blk_i++, e += 2048) {
                    bool blk_full;
                    {
                        const long long c0 = (long long)blk_fiv + (e / 64);
                        const long long c1 = (long long)v5 + (e % 64);
                        blk_full = (unsigned long long)c0 < (unsigned long long)p_B.shape[0] && (unsigned long long)c1 < (unsigned long long)p_B.shape[1];
                        if (blk_full) blk_pr14[blk_i] = *(const uint4 *)&p_B.data[c0 * p_B.stride[0] + c1];
                    }
                    if (!blk_full) { /* cut by the bounds: element by element, zeros outside */
                        alignas(16) blk_f16 blk_vb[8];
                        for (int blk_j = 0; blk_j < 8; blk_j++) {
                            const int blk_e = e + blk_j;
                            const long long c0 = (long long)blk_fiv + (blk_e / 64);
                            const long long c1 = (long long)v5 + (blk_e % 64);
                            blk_vb[blk_j] = ((unsigned long long)c0 < (unsigned long long)p_B.shape[0] && (unsigned long long)c1 < (unsigned long long)p_B.shape[1]) ? p_B.data[c0 * p_B.stride[0] + c1] : blk_f32_to_f16(0);
                        }
                        blk_pr14[blk_i] = *(const uint4 *)blk_vb;
                    }
                }
            }
        }
        // line 7
        /* v12 = var0, layout mma: read in place (registers) */
        blk_f16 *v13 = (blk_f16 *)(blk_smem + 0 + (long long)(blk_it11 % 2) * 4096); /* f16[64, 32], register-staged ring slot of this iteration */
        blk_f16 *v14 = (blk_f16 *)(blk_smem + 8192 + (long long)(blk_it11 % 2) * 4096); /* f16[32, 64], register-staged ring slot of this iteration */
        { /* dot, layout mma: accumulates in place in var0 (registers); operands from shared memory */
            const blk_f16 *blk_A = v13, *blk_B = v14;
            (void)blk_A; (void)blk_B;
#if BLK_HAVE_MFMA
            const _Float16 *blk_Ae = (const _Float16 *)blk_A, *blk_Be = (const _Float16 *)blk_B;
            const int blk_fr = blk_lane & 31, blk_fk = 4 * (blk_lane >> 5);
            #pragma unroll
            for (int k = 0; k < 32; k += 8) {
                blk_half4 a[1], b[1];
                #pragma unroll
                for (int i = 0; i < 1; i++)
                    for (int j = 0; j < 4; j++) a[i][j] = BLK_SLD(blk_Ae[(blk_wr0 + i * 32 + blk_fr) * 32 + k + blk_fk + j]);
                #pragma unroll
                for (int i = 0; i < 1; i++)
                    for (int j = 0; j < 4; j++) b[i][j] = BLK_SLD(blk_Be[(k + blk_fk + j) * 64 + blk_wc0 + i * 32 + blk_fr]);
                #pragma unroll
                for (int i = 0; i < 1; i++)
                    #pragma unroll
                    for (int j = 0; j < 1; j++) {
                        float *c = &var0[(i * 1 + j) * 16];
                        blk_float16 cc;
                        for (int e = 0; e < 16; e++) cc[e] = c[e];
                        cc = blk_mfma_32x32x8_f16(a[i], b[j], cc);
                        for (int e = 0; e < 16; e++) c[e] = cc[e];
                    }
            }
#else
            #pragma unroll
            for (int blk_r = 0; blk_r < 16; blk_r++) {
                const int blk_row = (blk_wr0 + (blk_r / 16) * 32 + ((blk_r % 16) >> 2) * 8 + (blk_lane >> 5) * 4 + ((blk_r % 16) & 3)), blk_col = (blk_wc0 + (blk_r / 16 % 1) * 32 + (blk_lane & 31));
                float blk_s = var0[blk_r];
                const int K_ = 32, N_ = 64;
                for (int k = 0; k < K_; k++)
                    blk_s = blk_s + (float)blk_f16_to_f32(BLK_SLD(v13[blk_row * K_ + k])) * (float)blk_f16_to_f32(BLK_SLD(v14[k * N_ + blk_col]));
                var0[blk_r] = blk_s;
            }
#endif
        }
        /* var.set acc: the dot accumulated in place (registers) */
        if (blk_nx11) { /* the next iteration's tiles into its slot */
            { /* v13: A, registers -> slot (blk_it11 + 1) % 2 */
                unsigned char *const blk_ring = blk_smem + 0 + (long long)((blk_it11 + 1) % 2) * 4096;
                #pragma unroll
                for (int blk_i = 0, e = blk_tid * 8; blk_i < 1; blk_i++, e += 2048) {
                    BLK_SST(*(uint4 *)(blk_ring + (long long)(e) * 2)) = blk_pr13[blk_i];
                }
            }
            { /* v14: B, registers -> slot (blk_it11 + 1) % 2 */
                unsigned char *const blk_ring = blk_smem + 8192 + (long long)((blk_it11 + 1) % 2) * 4096;
                #pragma unroll
                for (int blk_i = 0, e = blk_tid * 8; blk_i < 1; blk_i++, e += 2048) {
                    BLK_SST(*(uint4 *)(blk_ring + (long long)(e) * 2)) = blk_pr14[blk_i];
                }
            }
        }
        __syncthreads();
    }
    // line 9
    /* v17 = var0, layout mma: read in place (registers) */
    /* v18 = cvt: fused into its use */
    /* store C from var acc's registers (layout mma) through a per-register expression, element by element */
    {
        #pragma unroll
        for (int blk_p = 0; blk_p < 16; blk_p += 1) {
            const int blk_row = (blk_wr0 + (blk_p / 16) * 32 + ((blk_p % 16) >> 2) * 8 + (blk_lane >> 5) * 4 + ((blk_p % 16) & 3)), blk_col = (blk_wc0 + (blk_p / 16 % 1) * 32 + (blk_lane & 31));
            blk_f16 blk_x[1];
            #pragma unroll
            for (int blk_j = 0; blk_j < 1; blk_j++) {
                const int blk_r = blk_p + blk_j;
                const long long blk_e = (long long)blk_row * 64 + blk_col + blk_j;
                (void)blk_r; (void)blk_e;
                blk_x[blk_j] = blk_f32_to_f16(blk_f16_to_f32(blk_f32_to_f16((float)var0[blk_r])));
            }
            for (int blk_j = 0; blk_j < 1; blk_j++) {
                const long long e = (long long)blk_row * 64 + blk_col + blk_j;
                const long long c0 = (long long)v2 + (e / 64);
                const long long c1 = (long long)v5 + (e % 64);
                if ((unsigned long long)c0 < (unsigned long long)p_C.shape[0] && (unsigned long long)c1 < (unsigned long long)p_C.shape[1]) p_C.data[c0 * p_C.stride[0] + c1] = blk_x[blk_j];
            }
        }
    }
}
