// kernel vector_add (.blk line 0): blockDim.x = 128 (4 warps of 32),
// gridDim = the grid of ir_eval_grid, dynamic shared memory = 2048 bytes
extern "C" __constant__ int blk_smem_vector_add = 2048;
extern "C" __global__ void __launch_bounds__(128) vector_add(
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
    float *v9 = (float *)(blk_smem + 0); /* f32[256] */
    for (int e = blk_tid; e < 256; e += 128) {
        const long long c0 = (long long)v8 + e;
        v9[e] = (c0 >= 0 && c0 < p_X.shape[0]) ? p_X.data[c0 * p_X.stride[0]] : 0;
    }
    float *v10 = (float *)(blk_smem + 1024); /* f32[256] */
    for (int e = blk_tid; e < 256; e += 128) {
        const long long c0 = (long long)v8 + e;
        v10[e] = (c0 >= 0 && c0 < p_Y.shape[0]) ? p_Y.data[c0 * p_Y.stride[0]] : 0;
    }
    /* v11 = add: fused into its use */
    // line 5
    __syncthreads();
    for (int e = blk_tid; e < 256; e += 128) {
        const long long c0 = (long long)v8 + e;
        if (c0 >= 0 && c0 < p_Z.shape[0]) p_Z.data[c0 * p_Z.stride[0]] = (v9[e] + v10[e]);
    }
}
