// kernel vector_add (.blk line 0): blockDim.x = 128 (4 warps of 32),
// gridDim = the grid of ir_eval_grid, dynamic shared memory = 0 bytes
extern "C" __constant__ int blk_smem_blk_k_vector_add = 0;
extern "C" __global__ void __launch_bounds__(128) blk_k_vector_add(
    BlkTensor<float, 1> p_X,
    BlkTensor<float, 1> p_Y,
    BlkTensor<float, 1> p_Z)
{
    BLK_DYNAMIC_SMEM(blk_smem);
    const int blk_tid = threadIdx.x;
    const int blk_lane = blk_tid % 32, blk_warp = blk_tid / 32;
    (void)blk_lane; (void)blk_warp; (void)blk_smem;
    // line 3
    const int v6 = (int)blockIdx.x;
    const int v7 = 256;
    const int v8 = (v6 * v7);
    // line 4
    alignas(16) float v9[4]; /* f32[256], blocked: registers, runs of 4 */
    #pragma unroll
    for (int blk_k = 0; blk_k < 1; blk_k++) { /* blocked: runs of 4 */
        const int e = (blk_tid + blk_k * 128) * 4;
        if (e >= 256) continue;
        bool blk_full;
        {
            const long long c0 = (long long)v8 + e;
            blk_full = (unsigned long long)c0 < (unsigned long long)p_X.shape[0];
            if (blk_full) BLK_SST(*(uint4 *)&v9[blk_k * 4]) = *(const uint4 *)&p_X.data[c0];
        }
        if (!blk_full) { /* cut by the bounds or the mask */
            for (int blk_j = 0; blk_j < 4; blk_j++) {
                const int blk_e = e + blk_j;
                const long long c0 = (long long)v8 + blk_e;
                BLK_SST(v9[blk_k * 4 + blk_j]) = ((unsigned long long)c0 < (unsigned long long)p_X.shape[0]) ? p_X.data[c0] : 0;
            }
        }
    }
    alignas(16) float v10[4]; /* f32[256], blocked: registers, runs of 4 */
    #pragma unroll
    for (int blk_k = 0; blk_k < 1; blk_k++) { /* blocked: runs of 4 */
        const int e = (blk_tid + blk_k * 128) * 4;
        if (e >= 256) continue;
        bool blk_full;
        {
            const long long c0 = (long long)v8 + e;
            blk_full = (unsigned long long)c0 < (unsigned long long)p_Y.shape[0];
            if (blk_full) BLK_SST(*(uint4 *)&v10[blk_k * 4]) = *(const uint4 *)&p_Y.data[c0];
        }
        if (!blk_full) { /* cut by the bounds or the mask */
            for (int blk_j = 0; blk_j < 4; blk_j++) {
                const int blk_e = e + blk_j;
                const long long c0 = (long long)v8 + blk_e;
                BLK_SST(v10[blk_k * 4 + blk_j]) = ((unsigned long long)c0 < (unsigned long long)p_Y.shape[0]) ? p_Y.data[c0] : 0;
            }
        }
    }
    /* v11 = add: fused into its use */
    // line 5
    __syncthreads();
    #pragma unroll
    for (int blk_k = 0; blk_k < 1; blk_k++) { /* blocked: runs of 4 */
        const int e = (blk_tid + blk_k * 128) * 4;
        if (e >= 256) continue;
        bool blk_full;
        alignas(16) float blk_vb[4];
        #pragma unroll
        for (int blk_j = 0; blk_j < 4; blk_j++) blk_vb[blk_j] = (v9[blk_k * 4 + blk_j] + v10[blk_k * 4 + blk_j]);
        {
            const long long c0 = (long long)v8 + e;
            blk_full = (unsigned long long)c0 < (unsigned long long)p_Z.shape[0];
            if (blk_full) *(uint4 *)&p_Z.data[c0] = *(const uint4 *)blk_vb;
        }
        if (!blk_full) { /* cut by the bounds or the mask */
            for (int blk_j = 0; blk_j < 4; blk_j++) {
                const int blk_e = e + blk_j;
                const long long c0 = (long long)v8 + blk_e;
                if ((unsigned long long)c0 < (unsigned long long)p_Z.shape[0]) p_Z.data[c0] = blk_vb[blk_j];
            }
        }
    }
}
