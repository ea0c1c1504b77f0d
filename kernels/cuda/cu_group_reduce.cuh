/* cu_group_reduce.cuh - reductions across the threads that share one lane (a row of softmax or
 * layer_norm, an output of a matrix-vector product): a group of a warp or a whole block
 * (shuffles, then shared memory), or the threads of a block that share a column (a shared-memory
 * tree). Every thread taking part gets the same result, bit for bit. With the NaN-propagating
 * maximum and the sum that the softmax, norm and matmul families combine with. */
#ifndef CTENSOR_CU_GROUP_REDUCE_CUH_
#define CTENSOR_CU_GROUP_REDUCE_CUH_

/* max that keeps a NaN from either side (as the OpenCL and CPU backends). */
struct ct_cu_nan_max_op {
  template <class V>
  __device__ __forceinline__ V operator()(V a, V b) const {
    return (b > a || b != b) ? b : a;
  }
};

struct ct_cu_sum_op {
  template <class V>
  __device__ __forceinline__ V operator()(V a, V b) const {
    return a + b;
  }
};

/* Threads of a block made of Width-thread groups: eight warps, or one wider group. */
__host__ __device__ constexpr int ct_cu_group_block(int width) {
  return width > 256 ? width : 256;
}

/* Combines `v` over the Width threads of the group. A block-wide group (Width > 32) must be
 * reached by every thread of the block. */
template <int Width, class V, class Op>
__device__ __forceinline__ V ct_cu_group_reduce(V v, Op op) {
  static_assert(Width % 32 == 0, "groups are whole warps");
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  if constexpr (Width == 32) {
    return __shfl_sync(0xffffffffu, v, 0);
  } else {
    __shared__ V partial[Width / 32];
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    v = partial[0];
    for (int w = 1; w < Width / 32; ++w) v = op(v, partial[w]);
    __syncthreads(); /* the partials are read before the next reduction writes them */
    return v;
  }
}

/* Combines the partial results `v` of the threads of a block that share a column (threadIdx.x
 * modulo `width`, a power of two dividing blockDim.x, itself a power of two) through `part`
 * (blockDim.x slots); every thread gets its column's result. Every thread of the block must
 * reach it. */
template <class V, class Op>
__device__ __forceinline__ V ct_cu_column_reduce(V* part, V v, int width, Op op) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half >= width; half /= 2) {
    if ((int)threadIdx.x < half) {
      part[threadIdx.x] = op(part[threadIdx.x], part[threadIdx.x + half]);
    }
    __syncthreads();
  }
  v = part[threadIdx.x & (width - 1)];
  __syncthreads(); /* read before the next reduction writes */
  return v;
}

#endif /* CTENSOR_CU_GROUP_REDUCE_CUH_ */
