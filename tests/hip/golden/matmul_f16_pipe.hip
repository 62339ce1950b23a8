// kernel matmul_f16 (.blk line 0): blockDim.x = 256 (4 warps of 64),
// gridDim = the grid of ir_eval_grid, dynamic shared memory = 40960 bytes
extern "C" __constant__ int blk_smem_matmul_f16 = 40960;
extern "C" __global__ void __launch_bounds__(256) matmul_f16(
    BlkTensor<blk_f16, 2> p_A,
    BlkTensor<blk_f16, 2> p_B,
    BlkTensor<blk_f16, 2> p_C)
{
    BLK_DYNAMIC_SMEM(blk_smem);
    const int blk_tid = threadIdx.x;
    const int blk_lane = blk_tid % 64, blk_warp = blk_tid / 64;
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
    for (int e = blk_tid; e < 4096; e += 256) {
        var0[e] = 0.0f;
    }
    // line 6
    const int v8 = (int)p_A.shape[1];
    const int v9 = 32;
    const int v10 = 0;
    __syncthreads();
    // stages(3) ignored: no cp.async on AMD GPUs; loads go through registers
    for (int v11 = v10; v11 < v8; v11 += v9) {
        // line 7
        float *v12 = var0; /* f32[64, 64], reads the var in place */
        blk_f16 *v13 = (blk_f16 *)(blk_smem + 16384); /* f16[64, 32] */
        for (int e = blk_tid * 8; e < 2048; e += 2048) { /* 8-element (16-byte) vectors */
            bool blk_full;
            {
                const long long c0 = (long long)v2 + (e / 32);
                const long long c1 = (long long)v11 + (e % 32);
                blk_full = c0 >= 0 && c0 < p_A.shape[0] && c1 >= 0 && c1 < p_A.shape[1] && c1 + 8 <= p_A.shape[1];
                if (blk_full) *(uint4 *)&v13[e] = *(const uint4 *)&p_A.data[c0 * p_A.stride[0] + c1];
            }
            if (!blk_full) { /* cut by the bounds or the mask */
                for (int blk_j = 0; blk_j < 8; blk_j++) {
                    const int blk_e = e + blk_j;
                    const long long c0 = (long long)v2 + (blk_e / 32);
                    const long long c1 = (long long)v11 + (blk_e % 32);
                    v13[blk_e] = (c0 >= 0 && c0 < p_A.shape[0] && c1 >= 0 && c1 < p_A.shape[1]) ? p_A.data[c0 * p_A.stride[0] + c1] : blk_f32_to_f16(0);
                }
            }
        }
        blk_f16 *v14 = (blk_f16 *)(blk_smem + 20480); /* f16[32, 64] */
        for (int e = blk_tid * 8; e < 2048; e += 2048) { /* 8-element (16-byte) vectors */
            bool blk_full;
            {
                const long long c0 = (long long)v11 + (e / 64);
                const long long c1 = (long long)v5 + (e % 64);
                blk_full = c0 >= 0 && c0 < p_B.shape[0] && c1 >= 0 && c1 < p_B.shape[1] && c1 + 8 <= p_B.shape[1];
                if (blk_full) *(uint4 *)&v14[e] = *(const uint4 *)&p_B.data[c0 * p_B.stride[0] + c1];
            }
            if (!blk_full) { /* cut by the bounds or the mask */
                for (int blk_j = 0; blk_j < 8; blk_j++) {
                    const int blk_e = e + blk_j;
                    const long long c0 = (long long)v11 + (blk_e / 64);
                    const long long c1 = (long long)v5 + (blk_e % 64);
                    v14[blk_e] = (c0 >= 0 && c0 < p_B.shape[0] && c1 >= 0 && c1 < p_B.shape[1]) ? p_B.data[c0 * p_B.stride[0] + c1] : blk_f32_to_f16(0);
                }
            }
        }
        __syncthreads();
        float *v15 = (float *)(blk_smem + 24576); /* f32[64, 64] */
#if BLK_HAVE_MFMA
        /* tensor cores: MFMA 16x16, operands in shared memory */
        for (int t = blk_warp; t < 16; t += 4) {
            const int bb = t / 16, tm = (t / 4) % 4 * 16, tn = t % 4 * 16;
            const blk_f16 *A = v13 + 0 * 2048;
            const blk_f16 *B = v14 + 0 * 2048;
            float *C = v15 + bb * 4096;
            const int r16 = blk_lane & 15, kq = blk_lane >> 4;
            blk_float4 c;
            for (int j = 0; j < 4; j++) c[j] = v12[bb * 4096 + (tm + 4 * kq + j) * 64 + tn + r16];
            for (int k = 0; k < 32; k += 16) {
                blk_half4 a, b;
                const _Float16 *Ab = (const _Float16 *)A, *Bb = (const _Float16 *)B;
                for (int j = 0; j < 4; j++) {
                    a[j] = Ab[(tm + r16) * 32 + k + 4 * kq + j];
                    b[j] = Bb[(k + 4 * kq + j) * 64 + tn + r16];
                }
                c = blk_mfma_16x16x16_f16(a, b, c);
            }
            for (int j = 0; j < 4; j++) C[(tm + 4 * kq + j) * 64 + tn + r16] = c[j];
        }
#else
        for (int e = blk_tid; e < 4096; e += 256) {
            const int bb = e / 4096, m = (e / 64) % 64, n = e % 64;
            float acc = v12[e];
            const int M_ = 64, K_ = 32; (void)M_; (void)K_; (void)bb;
            for (int k = 0; k < 32; k++)
                acc = acc + (float)blk_f16_to_f32(v13[(m) * 32 + k]) * (float)blk_f16_to_f32(v14[(k) * 64 + n]);
            v15[e] = acc;
        }
#endif
        __syncthreads();
        for (int e = blk_tid; e < 4096; e += 256) {
            var0[e] = v15[e];
        }
        __syncthreads();
    }
    // line 9
    float *v17 = var0; /* f32[64, 64], reads the var in place */
    /* v18 = cvt: fused into its use */
    for (int e = blk_tid * 8; e < 4096; e += 2048) { /* 8-element (16-byte) vectors */
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
