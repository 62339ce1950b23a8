// kernel softmax (.blk line 0): blockDim.x = 128 (4 warps of 32),
// gridDim = the grid of ir_eval_grid, dynamic shared memory = 0 bytes
extern "C" __constant__ int blk_smem_blk_k_softmax = 0;
extern "C" __global__ void __launch_bounds__(128) blk_k_softmax(
    BlkTensor<float, 2> p_X,
    BlkTensor<float, 2> p_Y)
{
    BLK_DYNAMIC_SMEM(blk_smem);
    const int blk_tid = threadIdx.x;
    const int blk_lane = blk_tid % 32, blk_warp = blk_tid / 32;
    (void)blk_lane; (void)blk_warp; (void)blk_smem;
    // line 2
    const int v2 = (int)blockIdx.x;
    const int v3 = 0;
    // line 3
    const float v4 = __int_as_float(0xff800000);
    alignas(16) float v5[8]; /* f32[1024], blocked: registers, runs of 1 */
    #pragma unroll
    for (int blk_k = 0; blk_k < 8; blk_k++) { /* blocked: runs of 1 */
        #pragma unroll
        for (int blk_j = 0; blk_j < 1; blk_j++) {
            const int blk_q = blk_k * 1 + blk_j;
            const int e = (blk_tid + blk_k * 128) * 1 + blk_j;
            (void)blk_q; (void)e;
            const long long c0 = v2;
            const long long c1 = (long long)v3 + e;
            BLK_SST(v5[blk_q]) = ((unsigned long long)c0 < (unsigned long long)p_X.shape[0] && (unsigned long long)c1 < (unsigned long long)p_X.shape[1]) ? p_X.data[c0 * p_X.stride[0] + c1 * p_X.stride[1]] : v4;
        }
    }
    // line 4
    float v6; /* f32 */
    {
        float acc = __int_as_float(0xff800000);
        #pragma unroll
        for (int blk_k = 0; blk_k < 8; blk_k++) { /* blocked: runs of 1 */
            #pragma unroll
            for (int blk_j = 0; blk_j < 1; blk_j++) {
                const int blk_q = blk_k * 1 + blk_j;
                const int e = (blk_tid + blk_k * 128) * 1 + blk_j;
                (void)blk_q; (void)e;
                const float x = v5[blk_q];
                acc = blk_max(acc, x);
            }
        }
        for (int m = 16; m > 0; m >>= 1) {
            const float y = BLK_SHFL_XOR(acc, m);
            acc = blk_max(acc, y);
        }
        __shared__ float blk_red6[4];
        if (blk_lane == 0) {
            BLK_SST(blk_red6[blk_warp]) = acc;
        }
        __syncthreads();
        acc = BLK_SLD(blk_red6[0]);
        for (int w = 1; w < 4; w++) {
            acc = blk_max(acc, BLK_SLD(blk_red6[w]));
        }
        v6 = acc;
    }
    /* v7 = sub: fused into its use */
    alignas(16) float v8[8]; /* f32[1024], blocked: registers, runs of 1 */
    #pragma unroll
    for (int blk_k = 0; blk_k < 8; blk_k++) { /* blocked: runs of 1 */
        #pragma unroll
        for (int blk_j = 0; blk_j < 1; blk_j++) {
            const int blk_q = blk_k * 1 + blk_j;
            const int e = (blk_tid + blk_k * 128) * 1 + blk_j;
            (void)blk_q; (void)e;
            v8[blk_q] = expf((v5[blk_q] - v6));
        }
    }
    // line 5
    float v9; /* f32 */
    {
        float acc = 0;
        #pragma unroll
        for (int blk_k = 0; blk_k < 8; blk_k++) { /* blocked: runs of 1 */
            #pragma unroll
            for (int blk_j = 0; blk_j < 1; blk_j++) {
                const int blk_q = blk_k * 1 + blk_j;
                const int e = (blk_tid + blk_k * 128) * 1 + blk_j;
                (void)blk_q; (void)e;
                const float x = v8[blk_q];
                acc = acc + x;
            }
        }
        for (int m = 16; m > 0; m >>= 1) {
            const float y = BLK_SHFL_XOR(acc, m);
            acc = acc + y;
        }
        __shared__ float blk_red9[4];
        if (blk_lane == 0) {
            BLK_SST(blk_red9[blk_warp]) = acc;
        }
        __syncthreads();
        acc = BLK_SLD(blk_red9[0]);
        for (int w = 1; w < 4; w++) {
            acc = acc + BLK_SLD(blk_red9[w]);
        }
        v9 = acc;
    }
    /* v10 = div: fused into its use */
    #pragma unroll
    for (int blk_k = 0; blk_k < 8; blk_k++) { /* blocked: runs of 1 */
        #pragma unroll
        for (int blk_j = 0; blk_j < 1; blk_j++) {
            const int blk_q = blk_k * 1 + blk_j;
            const int e = (blk_tid + blk_k * 128) * 1 + blk_j;
            (void)blk_q; (void)e;
            const long long c0 = v2;
            const long long c1 = (long long)v3 + e;
            if ((unsigned long long)c0 < (unsigned long long)p_Y.shape[0] && (unsigned long long)c1 < (unsigned long long)p_Y.shape[1]) p_Y.data[c0 * p_Y.stride[0] + c1 * p_Y.stride[1]] = (v8[blk_q] / v9);
        }
    }
}
