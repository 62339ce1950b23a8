// kernel matmul_f16 (.blk line 0): blockDim.x = 128 (4 warps of 32),
// gridDim = the grid of ir_eval_grid, dynamic shared memory = 24576 bytes
extern "C" __constant__ int blk_smem_blk_k_matmul_f16 = 24576;
extern "C" __global__ void __launch_bounds__(128) blk_k_matmul_f16(
    BlkTensor<blk_f16, 2> p_A,
    BlkTensor<blk_f16, 2> p_B,
    BlkTensor<blk_f16, 2> p_C)
{
    BLK_DYNAMIC_SMEM(blk_smem);
    const int blk_tid = threadIdx.x;
    const int blk_lane = blk_tid % 32, blk_warp = blk_tid / 32;
    (void)blk_lane; (void)blk_warp; (void)blk_smem;
    /* var acc : f32[64, 64], layout mma(2x2 warps of 32x32, 2x4 fragments of 16x8, 32 registers per thread) */
    float var0[32];
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
    for (int blk_r = 0; blk_r < 32; blk_r++) var0[blk_r] = 0.0f; /* registers */
    // line 6
    const int v8 = (int)p_A.shape[1];
    const int v9 = 32;
    const int v10 = 0;
    // stages(3): 2 cp.async ring load(s), issued 2 iteration(s) ahead
    int blk_it11 = 0; /* iteration number: ring slot blk_it % 3 */
    for (int blk_s = 0; blk_s < 2; blk_s++) {
        const long long blk_fl = (long long)v10 + (long long)blk_s * 32LL;
        if (blk_fl < (long long)v8) {
            const int blk_fiv = (int)blk_fl;
            { /* v13: A */
                unsigned char *const blk_ring = blk_smem + 0 + (long long)(blk_s) * 4096;
                #pragma unroll
                for (int blk_i = 0, e = blk_tid * 8; blk_i < 2; blk_i++, e += 1024) {
                    const long long c0 = (long long)v2 + (e / 32);
                    const long long c1 = (long long)blk_fiv + (e % 32);
                    const int blk_nb = ((unsigned long long)c0 < (unsigned long long)p_A.shape[0] && (unsigned long long)c1 < (unsigned long long)p_A.shape[1]) ? 16 : 0;
                    blk_cp_async16(blk_ring + (long long)blk_swz(e, 32, 8, 2, 3) * 2, blk_nb ? (const void *)&p_A.data[c0 * p_A.stride[0] + c1] : (const void *)p_A.data, blk_nb);
                }
            }
            { /* v14: B */
                unsigned char *const blk_ring = blk_smem + 12288 + (long long)(blk_s) * 4096;
                #pragma unroll
                for (int blk_i = 0, e = blk_tid * 8; blk_i < 2; blk_i++, e += 1024) {
                    const long long c0 = (long long)blk_fiv + (e / 64);
                    const long long c1 = (long long)v5 + (e % 64);
                    const int blk_nb = ((unsigned long long)c0 < (unsigned long long)p_B.shape[0] && (unsigned long long)c1 < (unsigned long long)p_B.shape[1]) ? 16 : 0;
                    blk_cp_async16(blk_ring + (long long)blk_swz(e, 64, 8, 1, 7) * 2, blk_nb ? (const void *)&p_B.data[c0 * p_B.stride[0] + c1] : (const void *)p_B.data, blk_nb);
                }
            }
        }
        blk_cp_commit(); /* group blk_s, maybe empty */
    }
    /* v13: A, the prefetch's copies hoisted (coordinate 1 follows the loop) */
    const blk_f16 *blk_hp13[2]; int blk_ho13[2];
    const long long blk_hd13 = 32LL * p_A.stride[1];
    const int blk_sc13 = p_A.shape[1] < 2147483647LL ? (int)p_A.shape[1] : 2147483647;
    {
        const long long blk_fl = (long long)v10 + 64LL;
        const int blk_fiv = (int)blk_fl;
        #pragma unroll
        for (int blk_i = 0, e = blk_tid * 8; blk_i < 2; blk_i++, e += 1024) {
            const long long c0 = (long long)v2 + (e / 32);
            const long long c1 = (long long)blk_fiv + (e % 32);
            blk_hp13[blk_i] = p_A.data + (c0 * p_A.stride[0] + c1);
            blk_ho13[blk_i] = ((unsigned long long)c0 < (unsigned long long)p_A.shape[0]) ? (int)(c1 - blk_fl) : -1;
        }
    }
    /* v14: B, the prefetch's copies hoisted (coordinate 0 follows the loop) */
    const blk_f16 *blk_hp14[2]; int blk_ho14[2];
    const long long blk_hd14 = 32LL * p_B.stride[0];
    const int blk_sc14 = p_B.shape[0] < 2147483647LL ? (int)p_B.shape[0] : 2147483647;
    {
        const long long blk_fl = (long long)v10 + 64LL;
        const int blk_fiv = (int)blk_fl;
        #pragma unroll
        for (int blk_i = 0, e = blk_tid * 8; blk_i < 2; blk_i++, e += 1024) {
            const long long c0 = (long long)blk_fiv + (e / 64);
            const long long c1 = (long long)v5 + (e % 64);
            blk_hp14[blk_i] = p_B.data + (c0 * p_B.stride[0] + c1);
            blk_ho14[blk_i] = ((unsigned long long)c1 < (unsigned long long)p_B.shape[1]) ? (int)(c0 - blk_fl) : -1;
        }
    }
    const int blk_pe11 = v8 > -2147483584 ? v8 - 64 : -2147483647 - 1; /* prefetch while iv < this */
    /* v15's fragments double-buffered across the ring's barrier (gpu_fragpipe.c): the first slot's first k step now */
    blk_cp_wait<1>(); /* this thread's copies of group 0 have landed */
    __syncthreads();
#if __CUDA_ARCH__ >= 800
    unsigned blk_fa[2][2][4], blk_fb[2][4][2];
    if (v10 < v8) {
        const unsigned blk_xa = (unsigned)(0u + (unsigned)(0) * 4096u) + 2u * blk_swz((blk_wr0 + (blk_lane & 15)) * 32 + (blk_lane >> 4) * 8, 32, 8, 2, 3);
        const unsigned blk_xb = (unsigned)(12288u + (unsigned)(0) * 4096u) + 2u * blk_swz((blk_lane & 15) * 64 + blk_wc0 + (blk_lane >> 4) * 8, 64, 8, 1, 7);
        #pragma unroll
        for (int i = 0; i < 2; i++)
            blk_ldmatrix_x4(blk_fa[0][i], blk_smem + ((blk_xa ^ (unsigned)(0 * 2)) + i * 1024));
        #pragma unroll
        for (int j = 0; j + 1 < 4; j += 2) {
            unsigned t[4];
            blk_ldmatrix_x4_trans(t, blk_smem + ((blk_xb ^ (unsigned)(j * 16)) + 0 * 128));
            blk_fb[0][j][0] = t[0]; blk_fb[0][j][1] = t[1]; blk_fb[0][j + 1][0] = t[2]; blk_fb[0][j + 1][1] = t[3];
        }
    }
#endif
    for (int v11 = v10; v11 < v8; v11 += v9, blk_it11++) {
        /* group blk_it11 landed, and the barrier met, in the last k step before */
        { /* prefetch iteration blk_it11 + 2 */
            const long long blk_fl = (long long)v11 + 64LL;
            if (v11 < blk_pe11) {
                const int blk_fiv = (int)blk_fl;
                (void)blk_fiv; /* unused when every load is hoisted */
                { /* v13: A, hoisted */
                    unsigned char *const blk_ring = blk_smem + 0 + (long long)((blk_it11 + 2) % 3) * 4096;
                    const int blk_hx = blk_sc13 - blk_fiv;
                    const unsigned blk_hr = (unsigned)(blk_hx > 0 ? blk_hx : 0);
                    const int blk_se = blk_swz(blk_tid * 8, 32, 8, 2, 3); /* copy blk_i: + blk_i * 1024 */
                    #pragma unroll
                    for (int blk_i = 0, e = blk_tid * 8; blk_i < 2; blk_i++, e += 1024) {
                        const int blk_nb = (unsigned)blk_ho13[blk_i] < blk_hr ? 16 : 0;
                        blk_cp_async16(blk_ring + (long long)(blk_se + blk_i * 1024) * 2, (const void *)blk_hp13[blk_i], blk_nb);
                        blk_hp13[blk_i] += blk_hd13;
                    }
                }
                { /* v14: B, hoisted */
                    unsigned char *const blk_ring = blk_smem + 12288 + (long long)((blk_it11 + 2) % 3) * 4096;
                    const int blk_hx = blk_sc14 - blk_fiv;
                    const unsigned blk_hr = (unsigned)(blk_hx > 0 ? blk_hx : 0);
                    const int blk_se = blk_swz(blk_tid * 8, 64, 8, 1, 7); /* copy blk_i: + blk_i * 1024 */
                    #pragma unroll
                    for (int blk_i = 0, e = blk_tid * 8; blk_i < 2; blk_i++, e += 1024) {
                        const int blk_nb = (unsigned)blk_ho14[blk_i] < blk_hr ? 16 : 0;
                        blk_cp_async16(blk_ring + (long long)(blk_se + blk_i * 1024) * 2, (const void *)blk_hp14[blk_i], blk_nb);
                        blk_hp14[blk_i] += blk_hd14;
                    }
                }
            }
            blk_cp_commit();
        }
        // line 7
        /* v12 = var0, layout mma: read in place (registers) */
        blk_f16 *v13 = (blk_f16 *)(blk_smem + 0 + (long long)(blk_it11 % 3) * 4096); /* f16[64, 32], cp.async ring slot of this iteration */
        blk_f16 *v14 = (blk_f16 *)(blk_smem + 12288 + (long long)(blk_it11 % 3) * 4096); /* f16[32, 64], cp.async ring slot of this iteration */
        { /* dot, layout mma: accumulates in place in var0 (registers); operands from shared memory */
            const blk_f16 *blk_A = v13, *blk_B = v14;
            (void)blk_A; (void)blk_B;
#if __CUDA_ARCH__ >= 800
            /* fragments double-buffered (gpu_fragpipe.c): step blk_kk's in blk_fa/fb[blk_kk & 1], loaded in the step before */
            const unsigned blk_xa = (unsigned)((const unsigned char *)blk_A - blk_smem) + 2u * blk_swz((blk_wr0 + (blk_lane & 15)) * 32 + (blk_lane >> 4) * 8, 32, 8, 2, 3);
            const unsigned blk_xb = (unsigned)((const unsigned char *)blk_B - blk_smem) + 2u * blk_swz((blk_lane & 15) * 64 + blk_wc0 + (blk_lane >> 4) * 8, 64, 8, 1, 7);
            #pragma unroll
            for (int blk_kk = 0; blk_kk < 2; blk_kk++) {
                if (blk_kk + 1 < 2) {
                    #pragma unroll
                    for (int i = 0; i < 2; i++)
                        blk_ldmatrix_x4(blk_fa[(blk_kk + 1) & 1][i], blk_smem + ((blk_xa ^ (unsigned)((blk_kk + 1) * 16 * 2)) + i * 1024));
                    #pragma unroll
                    for (int j = 0; j + 1 < 4; j += 2) {
                        unsigned t[4];
                        blk_ldmatrix_x4_trans(t, blk_smem + ((blk_xb ^ (unsigned)(j * 16)) + (blk_kk + 1) * 16 * 128));
                        blk_fb[(blk_kk + 1) & 1][j][0] = t[0]; blk_fb[(blk_kk + 1) & 1][j][1] = t[1]; blk_fb[(blk_kk + 1) & 1][j + 1][0] = t[2]; blk_fb[(blk_kk + 1) & 1][j + 1][1] = t[3];
                    }
                } else { /* the last step: the next slot's first fragments */
                    blk_cp_wait<1>(); /* this thread's copies of group blk_it11 + 1 have landed */
                    __syncthreads();
                    if ((long long)v11 + 32LL < (long long)v8) {
                        const unsigned blk_xa = (unsigned)(0u + (unsigned)((blk_it11 + 1) % 3) * 4096u) + 2u * blk_swz((blk_wr0 + (blk_lane & 15)) * 32 + (blk_lane >> 4) * 8, 32, 8, 2, 3);
                        const unsigned blk_xb = (unsigned)(12288u + (unsigned)((blk_it11 + 1) % 3) * 4096u) + 2u * blk_swz((blk_lane & 15) * 64 + blk_wc0 + (blk_lane >> 4) * 8, 64, 8, 1, 7);
                        #pragma unroll
                        for (int i = 0; i < 2; i++)
                            blk_ldmatrix_x4(blk_fa[0][i], blk_smem + ((blk_xa ^ (unsigned)(0 * 2)) + i * 1024));
                        #pragma unroll
                        for (int j = 0; j + 1 < 4; j += 2) {
                            unsigned t[4];
                            blk_ldmatrix_x4_trans(t, blk_smem + ((blk_xb ^ (unsigned)(j * 16)) + 0 * 128));
                            blk_fb[0][j][0] = t[0]; blk_fb[0][j][1] = t[1]; blk_fb[0][j + 1][0] = t[2]; blk_fb[0][j + 1][1] = t[3];
                        }
                    }
                }
                #pragma unroll
                for (int i = 0; i < 2; i++)
                    #pragma unroll
                    for (int j = 0; j < 4; j++)
                        blk_mma_f16(&var0[(i * 4 + j) * 4], blk_fa[blk_kk & 1][i], blk_fb[blk_kk & 1][j]);
            }
#else
            #pragma unroll
            for (int blk_r = 0; blk_r < 32; blk_r++) {
                const int blk_row = (blk_wr0 + (blk_r / 16) * 16 + (blk_lane >> 2) + ((blk_r % 4) >> 1) * 8), blk_col = (blk_wc0 + (blk_r / 4 % 4) * 8 + (blk_lane & 3) * 2 + ((blk_r % 4) & 1));
                float blk_s = var0[blk_r];
                const int K_ = 32, N_ = 64;
                for (int k = 0; k < K_; k++)
                    blk_s = blk_s + (float)blk_f16_to_f32(BLK_SLD(v13[blk_swz(blk_row * K_ + k, 32, 8, 2, 3)])) * (float)blk_f16_to_f32(BLK_SLD(v14[blk_swz(k * N_ + blk_col, 64, 8, 1, 7)]));
                var0[blk_r] = blk_s;
            }
            blk_cp_wait<1>(); /* this thread's copies of group blk_it11 + 1 have landed */
            __syncthreads();
#endif
        }
        /* var.set acc: the dot accumulated in place (registers) */
    }
    __syncthreads();
    // line 9
    /* v17 = var0, layout mma: read in place (registers) */
    /* v18 = cvt: fused into its use */
    /* store C from var acc's registers (layout mma) through a per-register expression, column pairs as one store */
    {
        #pragma unroll
        for (int blk_p = 0; blk_p < 32; blk_p += 2) {
            const int blk_row = (blk_wr0 + (blk_p / 16) * 16 + (blk_lane >> 2) + ((blk_p % 4) >> 1) * 8), blk_col = (blk_wc0 + (blk_p / 4 % 4) * 8 + (blk_lane & 3) * 2 + ((blk_p % 4) & 1));
            blk_f16 blk_x[2];
            #pragma unroll
            for (int blk_j = 0; blk_j < 2; blk_j++) {
                const int blk_r = blk_p + blk_j;
                const long long blk_e = (long long)blk_row * 64 + blk_col + blk_j;
                (void)blk_r; (void)blk_e;
                blk_x[blk_j] = blk_f32_to_f16(blk_f16_to_f32(blk_f32_to_f16((float)var0[blk_r])));
            }
            bool blk_full;
            {
                const long long e = (long long)blk_row * 64 + blk_col;
                const long long c0 = (long long)v2 + (e / 64);
                const long long c1 = (long long)v5 + (e % 64);
                blk_full = (unsigned long long)c0 < (unsigned long long)p_C.shape[0] && (unsigned long long)c1 < (unsigned long long)p_C.shape[1] && c1 + 2 <= p_C.shape[1] && ((c0 * p_C.stride[0] + c1) & 1) == 0;
                if (blk_full) {
                    alignas(4) blk_f16 blk_vb[2] = {blk_x[0], blk_x[1]}; *(unsigned *)&p_C.data[c0 * p_C.stride[0] + c1] = *(const unsigned *)blk_vb;
                }
            }
            if (!blk_full) /* cut by the bounds, the mask or the alignment */
            for (int blk_j = 0; blk_j < 2; blk_j++) {
                const long long e = (long long)blk_row * 64 + blk_col + blk_j;
                const long long c0 = (long long)v2 + (e / 64);
                const long long c1 = (long long)v5 + (e % 64);
                if ((unsigned long long)c0 < (unsigned long long)p_C.shape[0] && (unsigned long long)c1 < (unsigned long long)p_C.shape[1]) p_C.data[c0 * p_C.stride[0] + c1] = blk_x[blk_j];
            }
        }
    }
}
