// kernel matmul_f16 (.blk line 0): blockDim.x = 128 (4 warps of 32),
// gridDim = the grid of ir_eval_grid, dynamic shared memory = 57344 bytes
extern "C" __constant__ int blk_smem_matmul_f16 = 57344;
extern "C" __global__ void __launch_bounds__(128) matmul_f16(
    BlkTensor<blk_f16, 2> p_A,
    BlkTensor<blk_f16, 2> p_B,
    BlkTensor<blk_f16, 2> p_C)
{
    BLK_DYNAMIC_SMEM(blk_smem);
    const int blk_tid = threadIdx.x;
    const int blk_lane = blk_tid % 32, blk_warp = blk_tid / 32;
    (void)blk_lane; (void)blk_warp; (void)blk_smem;
    float *var0 = (float *)(blk_smem + 0); /* var acc : f32[64, 64] */
    // line 3
    const int v0 = (int)blockIdx.x;
    const int v1 = 64;
    const int v2 = (v0 * v1);
    const int v3 = (int)blockIdx.y;
    const int v4 = 64;
    const int v5 = (v3 * v4);
    // line 5
    /* v6 = splat 0.0f, computed where it is read */
    for (int e = blk_tid; e < 4096; e += 128) {
        var0[e] = 0.0f;
    }
    // line 6
    const int v8 = (int)p_A.shape[1];
    const int v9 = 32;
    const int v10 = 0;
    __syncthreads();
    // stages(3): 2 cp.async ring load(s), issued 2 iteration(s) ahead
    int blk_it11 = 0; /* iteration number: ring slot blk_it % 3 */
    for (int blk_s = 0; blk_s < 2; blk_s++) {
        const long long blk_fl = (long long)v10 + (long long)blk_s * 32LL;
        if (blk_fl < (long long)v8) {
            const int blk_fiv = (int)blk_fl;
            { /* v13: A */
                unsigned char *const blk_ring = blk_smem + 16384 + (long long)(blk_s) * 4096;
                for (int e = blk_tid * 8; e < 2048; e += 1024) {
                    const long long c0 = (long long)v2 + (e / 32);
                    const long long c1 = (long long)blk_fiv + (e % 32);
                    const int blk_nb = (c0 >= 0 && c0 < p_A.shape[0] && c1 >= 0 && c1 < p_A.shape[1]) ? (int)(p_A.shape[1] - c1 >= 8 ? 8 : p_A.shape[1] - c1) * 2 : 0;
                    blk_cp_async16(blk_ring + (long long)e * 2, blk_nb ? (const void *)&p_A.data[c0 * p_A.stride[0] + c1] : (const void *)p_A.data, blk_nb);
                }
            }
            { /* v14: B */
                unsigned char *const blk_ring = blk_smem + 28672 + (long long)(blk_s) * 4096;
                for (int e = blk_tid * 8; e < 2048; e += 1024) {
                    const long long c0 = (long long)blk_fiv + (e / 64);
                    const long long c1 = (long long)v5 + (e % 64);
                    const int blk_nb = (c0 >= 0 && c0 < p_B.shape[0] && c1 >= 0 && c1 < p_B.shape[1]) ? (int)(p_B.shape[1] - c1 >= 8 ? 8 : p_B.shape[1] - c1) * 2 : 0;
                    blk_cp_async16(blk_ring + (long long)e * 2, blk_nb ? (const void *)&p_B.data[c0 * p_B.stride[0] + c1] : (const void *)p_B.data, blk_nb);
                }
            }
        }
        blk_cp_commit(); /* group blk_s, maybe empty */
    }
    for (int v11 = v10; v11 < v8; v11 += v9, blk_it11++) {
        blk_cp_wait<1>(); /* this thread's copies of group blk_it11 have landed */
        __syncthreads();
        { /* prefetch iteration blk_it11 + 2 */
            const long long blk_fl = (long long)v11 + 64LL;
            if (blk_fl < (long long)v8) {
                const int blk_fiv = (int)blk_fl;
                { /* v13: A */
                    unsigned char *const blk_ring = blk_smem + 16384 + (long long)((blk_it11 + 2) % 3) * 4096;
                    for (int e = blk_tid * 8; e < 2048; e += 1024) {
                        const long long c0 = (long long)v2 + (e / 32);
                        const long long c1 = (long long)blk_fiv + (e % 32);
                        const int blk_nb = (c0 >= 0 && c0 < p_A.shape[0] && c1 >= 0 && c1 < p_A.shape[1]) ? (int)(p_A.shape[1] - c1 >= 8 ? 8 : p_A.shape[1] - c1) * 2 : 0;
                        blk_cp_async16(blk_ring + (long long)e * 2, blk_nb ? (const void *)&p_A.data[c0 * p_A.stride[0] + c1] : (const void *)p_A.data, blk_nb);
                    }
                }
                { /* v14: B */
                    unsigned char *const blk_ring = blk_smem + 28672 + (long long)((blk_it11 + 2) % 3) * 4096;
                    for (int e = blk_tid * 8; e < 2048; e += 1024) {
                        const long long c0 = (long long)blk_fiv + (e / 64);
                        const long long c1 = (long long)v5 + (e % 64);
                        const int blk_nb = (c0 >= 0 && c0 < p_B.shape[0] && c1 >= 0 && c1 < p_B.shape[1]) ? (int)(p_B.shape[1] - c1 >= 8 ? 8 : p_B.shape[1] - c1) * 2 : 0;
                        blk_cp_async16(blk_ring + (long long)e * 2, blk_nb ? (const void *)&p_B.data[c0 * p_B.stride[0] + c1] : (const void *)p_B.data, blk_nb);
                    }
                }
            }
            blk_cp_commit();
        }
        // line 7
        float *v12 = var0; /* f32[64, 64], reads the var in place */
        blk_f16 *v13 = (blk_f16 *)(blk_smem + 16384 + (long long)(blk_it11 % 3) * 4096); /* f16[64, 32], cp.async ring slot of this iteration */
        blk_f16 *v14 = (blk_f16 *)(blk_smem + 28672 + (long long)(blk_it11 % 3) * 4096); /* f16[32, 64], cp.async ring slot of this iteration */
        float *v15 = (float *)(blk_smem + 40960); /* f32[64, 64] */
#if __CUDA_ARCH__ >= 800
        /* tensor cores: mma.sync, operands in shared memory */
        for (int t = blk_warp; t < 32; t += 4) {
            const int bb = t / 32, tm = (t / 8) % 4 * 16, tn = t % 8 * 8;
            const blk_f16 *A = v13 + 0 * 2048;
            const blk_f16 *B = v14 + 0 * 2048;
            float *C = v15 + bb * 4096;
            const int g = blk_lane >> 2, q = blk_lane & 3;
            const float *C0 = v12 + bb * 4096;
            float c[4] = {C0[(tm + g) * 64 + tn + 2 * q], C0[(tm + g) * 64 + tn + 2 * q + 1],
                        C0[(tm + g + 8) * 64 + tn + 2 * q], C0[(tm + g + 8) * 64 + tn + 2 * q + 1]};
            for (int k = 0; k < 32; k += 16) {
                unsigned a[4], b[2];
                blk_ldmatrix_x4(a, &A[(tm + (blk_lane & 15)) * 32 + k + (blk_lane >> 4) * 8]);
                blk_ldmatrix_x2_trans(b, &B[(k + (blk_lane & 15)) * 64 + tn]);
                blk_mma_f16(c, a, b);
            }
            C[(tm + g) * 64 + tn + 2 * q] = c[0];
            C[(tm + g) * 64 + tn + 2 * q + 1] = c[1];
            C[(tm + g + 8) * 64 + tn + 2 * q] = c[2];
            C[(tm + g + 8) * 64 + tn + 2 * q + 1] = c[3];
        }
#else
        for (int e = blk_tid; e < 4096; e += 128) {
            const int bb = e / 4096, m = (e / 64) % 64, n = e % 64;
            float acc = v12[e];
            const int M_ = 64, K_ = 32; (void)M_; (void)K_; (void)bb;
            for (int k = 0; k < 32; k++)
                acc = acc + (float)blk_f16_to_f32(v13[(m) * 32 + k]) * (float)blk_f16_to_f32(v14[(k) * 64 + n]);
            v15[e] = acc;
        }
#endif
        __syncthreads();
        for (int e = blk_tid; e < 4096; e += 128) {
            var0[e] = v15[e];
        }
    }
    __syncthreads();
    // line 9
    float *v17 = var0; /* f32[64, 64], reads the var in place */
    /* v18 = cvt: fused into its use */
    for (int e = blk_tid * 8; e < 4096; e += 1024) { /* 8-element (16-byte) vectors */
        bool blk_full;
        alignas(16) blk_f16 blk_vb[8];
        #pragma unroll
        for (int blk_j = 0; blk_j < 8; blk_j++) blk_vb[blk_j] = blk_f32_to_f16((float)v17[e + blk_j]);
        {
            const long long c0 = (long long)v2 + (e / 64);
            const long long c1 = (long long)v5 + (e % 64);
            blk_full = c0 >= 0 && c0 < p_C.shape[0] && c1 >= 0 && c1 < p_C.shape[1] && c1 + 8 <= p_C.shape[1];
            if (blk_full) *(uint4 *)&p_C.data[c0 * p_C.stride[0] + c1] = *(const uint4 *)blk_vb;
        }
        if (!blk_full) { /* cut by the bounds or the mask */
            for (int blk_j = 0; blk_j < 8; blk_j++) {
                const int blk_e = e + blk_j;
                const long long c0 = (long long)v2 + (blk_e / 64);
                const long long c1 = (long long)v5 + (blk_e % 64);
                if (c0 >= 0 && c0 < p_C.shape[0] && c1 >= 0 && c1 < p_C.shape[1]) p_C.data[c0 * p_C.stride[0] + c1] = blk_vb[blk_j];
            }
        }
    }
}
