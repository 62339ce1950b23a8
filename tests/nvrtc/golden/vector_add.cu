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
    alignas(16) float v9[2]; /* f32[256], blocked: registers, runs of 1 */
    #pragma unroll
    for (int blk_k = 0; blk_k < 2; blk_k++) { /* blocked: runs of 1 */
        #pragma unroll
        for (int blk_j = 0; blk_j < 1; blk_j++) {
            const int blk_q = blk_k * 1 + blk_j;
            const int e = (blk_tid + blk_k * 128) * 1 + blk_j;
            (void)blk_q; (void)e;
            const long long c0 = (long long)v8 + e;
            BLK_SST(v9[blk_q]) = ((unsigned long long)c0 < (unsigned long long)p_X.shape[0]) ? p_X.data[c0 * p_X.stride[0]] : 0;
        }
    }
    alignas(16) float v10[2]; /* f32[256], blocked: registers, runs of 1 */
    #pragma unroll
    for (int blk_k = 0; blk_k < 2; blk_k++) { /* blocked: runs of 1 */
        #pragma unroll
        for (int blk_j = 0; blk_j < 1; blk_j++) {
            const int blk_q = blk_k * 1 + blk_j;
            const int e = (blk_tid + blk_k * 128) * 1 + blk_j;
            (void)blk_q; (void)e;
            const long long c0 = (long long)v8 + e;
            BLK_SST(v10[blk_q]) = ((unsigned long long)c0 < (unsigned long long)p_Y.shape[0]) ? p_Y.data[c0 * p_Y.stride[0]] : 0;
        }
    }
    /* v11 = add: fused into its use */
    // line 5
    __syncthreads();
    #pragma unroll
    for (int blk_k = 0; blk_k < 2; blk_k++) { /* blocked: runs of 1 */
        #pragma unroll
        for (int blk_j = 0; blk_j < 1; blk_j++) {
            const int blk_q = blk_k * 1 + blk_j;
            const int e = (blk_tid + blk_k * 128) * 1 + blk_j;
            (void)blk_q; (void)e;
            const long long c0 = (long long)v8 + e;
            if ((unsigned long long)c0 < (unsigned long long)p_Z.shape[0]) p_Z.data[c0 * p_Z.stride[0]] = (v9[blk_q] + v10[blk_q]);
        }
    }
}
