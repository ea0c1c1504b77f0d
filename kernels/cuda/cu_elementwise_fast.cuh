/* cu_elementwise_fast.cuh - element-wise kernels over "dense" operands: one dense run each, or
 * rows of a dense run (a broadcast row or column, a single value). Each thread takes 16-byte
 * vectors (of the widest operand; the others read N elements in one narrower access) in a
 * grid-stride loop, with kernel parameters of a few pointers and sizes rather than a 64-dim
 * layout. Values convert exactly as ct_cu_load / ct_cu_store convert them (float16 computed in
 * float, stored rounding to nearest even), so results equal the strided kernel's bit for bit. */
#ifndef CTENSOR_CU_ELEMENTWISE_FAST_CUH_
#define CTENSOR_CU_ELEMENTWISE_FAST_CUH_

#include <stdint.h>

#include "cu_types.cuh"
#include "plugin_layout.h"

/* N elements of storage type S, aligned to their size, so that a load or store of the whole
 * pack is one vector access (ld.global.v4 for 16 bytes). */
template <class S, int N>
struct alignas(sizeof(S) * N) ct_cu_pack {
  S v[N];
};

template <ct_pl_type Tag>
using ct_cu_storage_t = typename ct_cu_traits<Tag>::storage;

/* Elements per vector for a kernel over these operand tags: 16 bytes of the widest, at most 8
 * (bool-only ops take 8-byte accesses, which keeps their unrolled math short). */
template <ct_pl_type... Tags>
__host__ __device__ constexpr int ct_cu_vector_elements() {
  int widest = 1;
  ((widest =
        (int)sizeof(ct_cu_storage_t<Tags>) > widest ? (int)sizeof(ct_cu_storage_t<Tags>) : widest),
   ...);
  return 16 / widest < 8 ? 16 / widest : 8;
}

/* The operands of a dense call: the output (operand 0) and up to three inputs over `rows` rows
 * of `inner` elements. Operand k's element (r, c) is at base[k] + r * row_step[k] + c * size_k,
 * or at base[k] + r * row_step[k] when bit k of `splat` is set (inner stride 0: one value per
 * row, a scalar when row_step is 0 too). The output is never splat. */
struct ct_cu_dense_args {
  char* out;
  const char* in[3];
  int64_t row_step[4];
  int64_t rows;
  int64_t inner;
  int64_t n; /* rows * inner */
  unsigned splat;
  /* Whole vectors: every operand that is not splat is aligned to its vector's bytes (row steps
   * too), and with more than one row, `inner` is a multiple of the vector's elements. */
  bool vector;
};

/* Row and column of flat element `i`; 32-bit division when the elements allow. */
__device__ __forceinline__ void ct_cu_dense_split(const ct_cu_dense_args& p, int64_t i,
                                                  int64_t* row, int64_t* col) {
  if (p.rows == 1) {
    *row = 0;
    *col = i;
  } else if (p.n <= (int64_t)UINT32_MAX) {
    const uint32_t r = (uint32_t)i / (uint32_t)p.inner;
    *row = r;
    *col = i - (int64_t)r * p.inner;
  } else {
    *row = i / p.inner;
    *col = i - *row * p.inner;
  }
}

/* The N values of input k (tag Tag) at (row, col .. col + N - 1), as a pack. */
template <ct_pl_type Tag, int N>
__device__ __forceinline__ ct_cu_pack<ct_cu_storage_t<Tag>, N> ct_cu_dense_load_pack(
    const char* base, int64_t row_step, int64_t row, int64_t col, bool splat) {
  using S = ct_cu_storage_t<Tag>;
  const char* at = base + row * row_step;
  ct_cu_pack<S, N> pack;
  if (splat) {
    const S value = *reinterpret_cast<const S*>(at);
#pragma unroll
    for (int e = 0; e < N; ++e) pack.v[e] = value;
  } else {
    pack = *reinterpret_cast<const ct_cu_pack<S, N>*>(at + col * (int64_t)sizeof(S));
  }
  return pack;
}

/* The value of input k (tag Tag) at (row, col), in its compute type. */
template <ct_pl_type Tag>
__device__ __forceinline__ ct_cu_compute_t<Tag> ct_cu_dense_load(const char* base, int64_t row_step,
                                                                 int64_t row, int64_t col,
                                                                 bool splat) {
  const char* at = base + row * row_step;
  return ct_cu_load<Tag>(splat ? at : at + col * (int64_t)sizeof(ct_cu_storage_t<Tag>));
}

/* Blocks of 256 threads an SM the dense kernel is compiled for: 6 (40 registers a thread), or 4
 * (64 registers) where float64 math needs them. With the bare 256-thread bound, ptxas targets
 * 32 registers and spills in the binary float32 kernels. */
template <ct_pl_type O, ct_pl_type I0, ct_pl_type I1, ct_pl_type I2>
__host__ __device__ constexpr int ct_cu_dense_min_blocks() {
  return ct_cu_vector_elements<O, I0, I1, I2>() == 2 ? 4 : 6;
}

/* out = f(in0, in1, in2) element by element (Arity inputs; the unused ones read as 0 of I1/I2's
 * compute type, as the strided kernel passes them). Whole vectors first, then the elements
 * after the last whole vector (all of them without `vector`) one a thread. */
template <int Arity, ct_pl_type O, ct_pl_type I0, ct_pl_type I1, ct_pl_type I2, class F>
__global__ void __launch_bounds__(256, ct_cu_dense_min_blocks<O, I0, I1, I2>())
    ct_cu_dense_kernel(const ct_cu_dense_args p, const F f) {
  constexpr int N = ct_cu_vector_elements<O, I0, I1, I2>();
  using SO = ct_cu_storage_t<O>;
  using C1 = ct_cu_compute_t<I1>;
  using C2 = ct_cu_compute_t<I2>;
  const bool splat0 = p.splat & 1u, splat1 = p.splat & 2u, splat2 = p.splat & 4u;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t vectors = p.vector ? p.n / N : 0;
  for (int64_t v = first; v < vectors; v += step) {
    int64_t row, col;
    ct_cu_dense_split(p, v * N, &row, &col);
    const auto a = ct_cu_dense_load_pack<I0, N>(p.in[0], p.row_step[1], row, col, splat0);
    ct_cu_pack<ct_cu_storage_t<I1>, N> b;
    ct_cu_pack<ct_cu_storage_t<I2>, N> c;
    if constexpr (Arity > 1)
      b = ct_cu_dense_load_pack<I1, N>(p.in[1], p.row_step[2], row, col, splat1);
    if constexpr (Arity > 2)
      c = ct_cu_dense_load_pack<I2, N>(p.in[2], p.row_step[3], row, col, splat2);
    ct_cu_pack<SO, N> r;
#pragma unroll
    for (int e = 0; e < N; ++e) {
      const auto x0 = ct_cu_load<I0>(reinterpret_cast<const char*>(&a.v[e]));
      C1 x1 = C1(0);
      C2 x2 = C2(0);
      if constexpr (Arity > 1) x1 = ct_cu_load<I1>(reinterpret_cast<const char*>(&b.v[e]));
      if constexpr (Arity > 2) x2 = ct_cu_load<I2>(reinterpret_cast<const char*>(&c.v[e]));
      ct_cu_store<O>(reinterpret_cast<char*>(&r.v[e]), f(x0, x1, x2));
    }
    *reinterpret_cast<ct_cu_pack<SO, N>*>(p.out + row * p.row_step[0] + col * (int64_t)sizeof(SO)) =
        r;
  }
  for (int64_t i = vectors * N + first; i < p.n; i += step) {
    int64_t row, col;
    ct_cu_dense_split(p, i, &row, &col);
    const auto x0 = ct_cu_dense_load<I0>(p.in[0], p.row_step[1], row, col, splat0);
    C1 x1 = C1(0);
    C2 x2 = C2(0);
    if constexpr (Arity > 1) x1 = ct_cu_dense_load<I1>(p.in[1], p.row_step[2], row, col, splat1);
    if constexpr (Arity > 2) x2 = ct_cu_dense_load<I2>(p.in[2], p.row_step[3], row, col, splat2);
    ct_cu_store<O>(p.out + row * p.row_step[0] + col * (int64_t)sizeof(SO), f(x0, x1, x2));
  }
}

/* Plans a dense call from a collapsed layout (operand 0 the output, then `inputs` inputs of
 * byte sizes sizes[1..]) for vectors of `elements` elements: one dim where each input is dense
 * or a single value, or two dims whose inner one every operand walks densely or (inputs) not at
 * all, when whole vectors fit (aligned, rows a whole number of vectors). False: the layout
 * needs the strided kernel. */
inline bool ct_cu_dense_plan(const ct_pl_layout& layout, const int32_t* sizes, int inputs,
                             int elements, char* out, const char* const* in, ct_cu_dense_args* p) {
  if (layout.ndim < 1 || layout.ndim > 2) return false;
  const int inner = layout.ndim - 1;
  p->out = out;
  p->rows = layout.ndim == 2 ? layout.shape[0] : 1;
  p->inner = layout.shape[inner];
  p->n = p->rows * p->inner;
  p->splat = 0;
  p->vector = p->rows == 1 || p->inner % elements == 0;
  for (int k = 0; k < 3; ++k) p->in[k] = k < inputs ? in[k] : out;
  for (int k = 0; k <= inputs; ++k) {
    const int64_t stride = layout.strides[k][inner];
    const int64_t row_step = layout.ndim == 2 ? layout.strides[k][0] : 0;
    p->row_step[k] = row_step;
    if (stride == 0 && k > 0) {
      p->splat |= 1u << (k - 1);
      continue;
    }
    if (stride != sizes[k]) return false;
    const int64_t bytes = (int64_t)sizes[k] * elements;
    const uintptr_t base = reinterpret_cast<uintptr_t>(k == 0 ? out : in[k - 1]);
    if (base % (uintptr_t)bytes != 0 || row_step % bytes != 0) p->vector = false;
  }
  for (int k = inputs + 1; k < 4; ++k) p->row_step[k] = 0;
  /* Two dims without whole vectors would divide per element: the strided kernel does better. */
  return p->rows == 1 || p->vector;
}

#endif /* CTENSOR_CU_ELEMENTWISE_FAST_CUH_ */
