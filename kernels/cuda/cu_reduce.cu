/* cu_reduce.cu - reductions (sum, prod, mean, max, min, any, all, argmax, argmin). Each output
 * element's lane (its reduced sub-space, flattened row-major, so argmax's index is NumPy's
 * flattened index) is reduced by a group of 1, 8, 32 (a warp) or 256 (a block) threads: each
 * thread folds a strided share of the lane, then the group combines with warp shuffles and
 * shared memory. A few outputs with long lanes split each lane into segments (as many items as
 * the device holds resident blocks for) whose partial states a second kernel combines. Float sums
 * and means accumulate in double, integer sums and products wrap in 64 bits; max/min propagate nan;
 * argmax/argmin take the first nan, else the first extremum. A lane of stride one element is read
 * in chunks of 16 bytes (a vector load each where aligned; the same order element by element where
 * not, so the result does not depend on the address). Every choice depends only on shapes, strides
 * and the device, so results are reproducible run to run. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <atomic>
#include <type_traits>

#include "cu_call.h"
#include "cu_layout.h"
#include "plugin_geometry.h"
#include "cu_types.cuh"

namespace {

enum ct_cu_reduce_kind {
  CT_CU_SUM,
  CT_CU_PROD,
  CT_CU_MEAN,
  CT_CU_MAX,
  CT_CU_MIN,
  CT_CU_ANY,
  CT_CU_ALL,
  CT_CU_ARGMAX,
  CT_CU_ARGMIN,
  CT_CU_REDUCE_KINDS
};

constexpr const char* ct_cu_reduce_names[CT_CU_REDUCE_KINDS] = {
    "sum", "prod", "mean", "max", "min", "any", "all", "argmax", "argmin"};

constexpr int ct_cu_threads = 256;

/* Whether a kind looks for the largest value (max, argmax) rather than the smallest. */
template <int K>
inline constexpr bool ct_cu_upward = K == CT_CU_MAX || K == CT_CU_ARGMAX;

/* One reduction over inputs of tag V: its accumulator, partial state, output tag and steps. */
template <int K, ct_pl_type V>
struct ct_cu_reducer {
  using T = ct_cu_compute_t<V>;
  static constexpr ct_pl_type input = V;
  static constexpr const char* name = ct_cu_reduce_names[K];
  static constexpr bool is_float = ct_cu_is_float_v<V>;
  static constexpr bool indexed = K == CT_CU_ARGMAX || K == CT_CU_ARGMIN;
  static constexpr bool extremum = indexed || K == CT_CU_MAX || K == CT_CU_MIN;
  static constexpr bool logical = K == CT_CU_ANY || K == CT_CU_ALL;
  /* Float (and every mean) accumulates in double; integer sums and products wrap in 64 bits. */
  using A = std::conditional_t<logical, int,
                               std::conditional_t<extremum, T,
                                                  std::conditional_t<is_float || K == CT_CU_MEAN,
                                                                     double, unsigned long long>>>;
  static constexpr ct_pl_type out = indexed           ? CT_PL_I64
                                    : logical         ? CT_PL_B8
                                    : is_float        ? V
                                    : K == CT_CU_MEAN ? CT_PL_F64
                                    : extremum        ? V
                                                      : CT_PL_I64;

  /* A partial result; `index` is the lane index of an arg extremum (-1: none seen yet). */
  struct State {
    A value;
    long long index;
  };

  __device__ static State identity() {
    constexpr bool wide = sizeof(T) == 8;
    if constexpr (K == CT_CU_PROD || K == CT_CU_ALL) {
      return {A(1), 0};
    } else if constexpr ((K == CT_CU_MAX || K == CT_CU_MIN) && is_float) {
      return {ct_cu_upward<K> ? -T(INFINITY) : T(INFINITY), 0};
    } else if constexpr (K == CT_CU_MAX || K == CT_CU_MIN) {
      return {ct_cu_upward<K> ? T(wide ? LLONG_MIN : INT_MIN) : T(wide ? LLONG_MAX : INT_MAX), 0};
    } else {
      return {A(0), indexed ? -1 : 0};
    }
  }

  /* Whether b (an arg candidate) replaces a: the first nan, else the first extremum. */
  __device__ static bool replaces(const State& a, const State& b) {
    if (b.index < 0) return false;
    if (a.index < 0) return true;
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan || b_nan) return b_nan && (!a_nan || b.index < a.index);
    if (b.value == a.value) return b.index < a.index;
    return ct_cu_upward<K> ? b.value > a.value : b.value < a.value;
  }

  __device__ static void combine(State& a, const State& b) {
    if constexpr (K == CT_CU_SUM || K == CT_CU_MEAN) {
      a.value += b.value;
    } else if constexpr (K == CT_CU_PROD) {
      a.value *= b.value;
    } else if constexpr (K == CT_CU_ANY) {
      a.value |= b.value;
    } else if constexpr (K == CT_CU_ALL) {
      a.value &= b.value;
    } else if constexpr (indexed) {
      if (replaces(a, b)) a = b;
    } else if (a.value == a.value &&
               (b.value != b.value || (ct_cu_upward<K> ? b.value > a.value : b.value < a.value))) {
      a.value = b.value; /* a nan, once in, stays */
    }
  }

  /* Folds element `j` of the lane, of value v; one thread's j increase. */
  __device__ static void step(State& s, T v, int64_t j) {
    if constexpr (logical) {
      combine(s, {v != T(0), 0});
    } else if constexpr (indexed) {
      if (s.index < 0 ||
          (s.value == s.value && (v != v || (ct_cu_upward<K> ? v > s.value : v < s.value)))) {
        s = {v, j};
      }
    } else {
      combine(s, {static_cast<A>(v), j});
    }
  }

  __device__ static auto result(const State& s, int64_t count) {
    if constexpr (K == CT_CU_MEAN) {
      return s.value / static_cast<double>(count);
    } else if constexpr (indexed) {
      return s.index;
    } else {
      return s.value;
    }
  }
};

/* Combines the states of each W consecutive lanes of a warp (W a power of two up to 32) into the
 * first's. Every lane of the warp takes part. */
template <class R, int W>
__device__ __forceinline__ void ct_cu_warp_reduce(typename R::State& s) {
  for (int delta = W / 2; delta > 0; delta /= 2) {
    typename R::State other;
    other.value = __shfl_down_sync(0xffffffffu, s.value, delta, W);
    other.index = 0;
    if constexpr (R::indexed) other.index = __shfl_down_sync(0xffffffffu, s.index, delta, W);
    R::combine(s, other);
  }
}

/* Combines the states of each group of G threads (a power of two up to the block) into the
 * group's first. Every thread of the block takes part. */
template <class R, int G>
__device__ __forceinline__ void ct_cu_group_reduce(typename R::State& s) {
  constexpr int width = G < 32 ? G : 32;
  ct_cu_warp_reduce<R, width>(s);
  if constexpr (G > 32) {
    static_assert(G == ct_cu_threads, "a group larger than a warp is the whole block");
    __shared__ typename R::State warps[G / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads(); /* the previous item's reads of `warps` are done */
    if (lane == 0) warps[warp] = s;
    __syncthreads();
    if (warp == 0) {
      s = lane < G / 32 ? warps[lane] : R::identity();
      ct_cu_warp_reduce<R, 32>(s);
    }
  }
}

/* Byte offsets of output `o` in out and x (a one-dim layout without divisions). */
__device__ __forceinline__ void ct_cu_kept_offsets(const ct_pl_layout& kept, int64_t o,
                                                   int64_t* off) {
  if (kept.ndim == 1) {
    off[0] = o * kept.strides[0][0];
    off[1] = o * kept.strides[1][0];
  } else {
    ct_cu_offsets<2>(kept, o, off);
  }
}

/* Elements of a dense lane a thread takes at a time: 16 bytes of them (8 bools). */
template <ct_pl_type V>
inline constexpr int ct_cu_lane_vector = 16 / (int)sizeof(typename ct_cu_traits<V>::storage) < 8
                                             ? 16 / (int)sizeof(typename ct_cu_traits<V>::storage)
                                             : 8;

template <class S, int N>
struct alignas(sizeof(S) * N) ct_cu_lane_pack {
  S v[N];
};

/* Folds the elements of a dense lane (stride one element, from `base`) that one thread of a
 * G-thread group takes: chunks of N = ct_cu_lane_vector elements, G chunks apart, from element
 * `from` (the thread's first chunk) to `end`, in increasing order. Four chunks are loaded before
 * any is folded, as 16-byte vectors when `vector` (base and every chunk aligned), else element
 * by element: the order, and so the result, is the same either way. */
template <class R, int G>
__device__ __forceinline__ void ct_cu_fold_dense(typename R::State& s, const char* base,
                                                 int64_t from, int64_t end, bool vector) {
  constexpr ct_pl_type V = R::input;
  constexpr int N = ct_cu_lane_vector<V>, U = 4;
  constexpr int64_t apart = (int64_t)G * N;
  using S = typename ct_cu_traits<V>::storage;
  using Pack = ct_cu_lane_pack<S, N>;
  const S* data = reinterpret_cast<const S*>(base);
  int64_t j = from;
  for (; j + (U - 1) * apart + N <= end; j += U * apart) {
    Pack pack[U];
    if (vector) {
#pragma unroll
      for (int u = 0; u < U; ++u) pack[u] = *reinterpret_cast<const Pack*>(data + j + u * apart);
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int e = 0; e < N; ++e) pack[u].v[e] = data[j + u * apart + e];
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int e = 0; e < N; ++e) {
        R::step(s, ct_cu_load<V>(reinterpret_cast<const char*>(&pack[u].v[e])), j + u * apart + e);
      }
    }
  }
  for (; j < end; j += apart) {
    for (int e = 0; e < N && j + e < end; ++e) {
      R::step(s, ct_cu_load<V>(reinterpret_cast<const char*>(data + j + e)), j + e);
    }
  }
}

/* Item = (output o, segment): groups of G threads fold elements [begin, end) of o's lane, then
 * store the result (one segment) or the partial state at partial[item]. Items run o fastest, so
 * with G = 1 neighbouring threads read neighbouring outputs. The loop runs block by block so
 * that every thread reaches the group's shuffles and barriers. */
template <class R, int G>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_reduce_kernel(const ct_pl_layout kept, const ct_pl_layout reduced, char* out,
                        const char* x, int64_t n, int64_t count, int64_t segments, int64_t segment,
                        bool dense, bool vector, typename R::State* partial) {
  constexpr ct_pl_type V = R::input;
  constexpr int per_block = ct_cu_threads / G;
  const int lane = threadIdx.x % G;
  const int64_t items = n * segments;
  for (int64_t first = (int64_t)blockIdx.x * per_block; first < items;
       first += (int64_t)gridDim.x * per_block) {
    const int64_t item = first + threadIdx.x / G;
    const int64_t o = item % n, begin = item / n * segment;
    const int64_t end = item >= items ? begin : begin + segment < count ? begin + segment : count;
    int64_t off[2];
    ct_cu_kept_offsets(kept, o, off);
    const char* base = x + off[1];
    typename R::State s = R::identity();
    if (dense) {
      ct_cu_fold_dense<R, G>(s, base, begin + lane * ct_cu_lane_vector<V>, end, vector);
    } else if (reduced.ndim == 1) {
      const int64_t stride = reduced.strides[0][0];
#pragma unroll 4
      for (int64_t j = begin + lane; j < end; j += G) {
        R::step(s, ct_cu_load<V>(base + j * stride), j);
      }
    } else {
      for (int64_t j = begin + lane; j < end; j += G) {
        int64_t at[1];
        ct_cu_offsets<1>(reduced, j, at);
        R::step(s, ct_cu_load<V>(base + at[0]), j);
      }
    }
    ct_cu_group_reduce<R, G>(s);
    if (lane != 0 || item >= items) continue;
    if (partial) {
      partial[item] = s;
    } else {
      ct_cu_store<R::out>(out + off[0], R::result(s, count));
    }
  }
}

/* A warp per output combines its segments' partial states (partial[segment * n + o]). */
template <class R>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_reduce_segments_kernel(const ct_pl_layout kept, char* out,
                                 const typename R::State* partial, int64_t n, int64_t count,
                                 int64_t segments) {
  const int lane = threadIdx.x % 32;
  const int64_t step = (int64_t)gridDim.x * (ct_cu_threads / 32);
  for (int64_t o = ((int64_t)blockIdx.x * ct_cu_threads + threadIdx.x) / 32; o < n; o += step) {
    typename R::State s = R::identity();
    for (int64_t k = lane; k < segments; k += 32) R::combine(s, partial[k * n + o]);
    ct_cu_warp_reduce<R, 32>(s);
    if (lane != 0) continue;
    int64_t off[2];
    ct_cu_kept_offsets(kept, o, off);
    ct_cu_store<R::out>(out + off[0], R::result(s, count));
  }
}

/* How one call runs: kept dims (operands out, x) and reduced dims (x) as byte-strided layouts,
 * the group size, and the segments each lane is cut into. */
struct ct_cu_reduce_plan {
  ct_pl_layout kept;
  ct_pl_layout reduced;
  int64_t n;        /* outputs */
  int64_t count;    /* elements per lane */
  int64_t segments; /* per lane; 1: no partial states */
  int64_t segment;  /* elements per segment */
  int group;        /* threads per item: 1, 8, 32 or 256 */
  bool dense;       /* one reduced dim of stride one element: chunked reads (ct_cu_fold_dense) */
  bool vector;      /* dense, and every lane and segment starts 16-byte aligned */
};

/* Runs a planned call; `workspace` (`workspace_size` bytes, null without) holds the segments'
 * partial states when it is large enough. */
using ct_cu_reduce_launch_fn = int (*)(const ct_cu_exec& exec, const ct_cu_reduce_plan& plan,
                                       char* out, const char* x, void* workspace,
                                       uint64_t workspace_size);

/* Bytes of partial states a planned call (group chosen) needs on `device` (0: one segment). */
using ct_cu_reduce_partial_fn = uint64_t (*)(int32_t device, const ct_cu_reduce_plan& plan);

/* What a registered kernel hands its run function. */
struct ct_cu_reduce_entry {
  bool indexed; /* argmax/argmin: the axis attribute is one int and reduced dims keep order */
  ct_cu_reduce_launch_fn launch;
  ct_cu_reduce_partial_fn partial_bytes;
};

template <class R, int G>
void ct_cu_reduce_lanes(const ct_cu_exec& exec, const ct_cu_reduce_plan& p, char* out,
                        const char* x, typename R::State* partial) {
  const unsigned grid = ct_cu_grid(exec, p.n * p.segments * G, ct_cu_threads);
  ct_cu_reduce_kernel<R, G><<<grid, ct_cu_threads, 0, exec.stream>>>(
      p.kept, p.reduced, out, x, p.n, p.count, p.segments, p.segment, p.dense, p.vector, partial);
}

/* Group size: one thread per output for short lanes, or when neighbouring outputs lie closer in
 * memory than neighbouring lane elements and there are enough of them; otherwise 8 threads, a
 * warp or a block per lane as it grows, reading it coalesced. */
void ct_cu_reduce_group(ct_cu_reduce_plan* p) {
  const ct_pl_layout& r = p->reduced;
  const ct_pl_layout& k = p->kept;
  const int64_t lane_step = llabs(r.strides[0][r.ndim - 1]);
  const int64_t output_step = llabs(k.strides[1][k.ndim - 1]);
  if (p->count < 32 || (output_step < lane_step && p->n >= 256)) {
    p->group = 1;
  } else {
    p->group = p->count >= 8192 ? ct_cu_threads : p->count >= 256 ? 32 : 8;
  }
}

/* Segments: lanes are cut while the outputs alone leave the device's resident blocks (`resident`
 * an SM) idle, down to 64 elements a thread, so that the items fill one round of resident
 * blocks rather than leaving part of a second round. */
void ct_cu_reduce_segments(int32_t device, ct_cu_reduce_plan* p, int resident) {
  const int64_t wanted =
      (int64_t)ct_cu_multiprocessors(device) * resident * (ct_cu_threads / p->group);
  const int64_t shortest = (int64_t)p->group * 64;
  p->segments = 1;
  if (p->n < wanted && p->count > shortest) {
    const int64_t by_width = (wanted + p->n - 1) / p->n;
    const int64_t by_length = (p->count + shortest - 1) / shortest;
    p->segments = by_width < by_length ? by_width : by_length;
    if (p->segments > 4096) p->segments = 4096;
  }
  p->segment = (p->count + p->segments - 1) / p->segments;
  if (p->segment > 0) p->segments = (p->count + p->segment - 1) / p->segment;
}

/* Blocks of ct_cu_reduce_kernel<R, G> resident on one multiprocessor (asked once per kernel: the
 * answer depends on its registers and the architecture); 8 if CUDA cannot say. */
template <class R, int G>
int ct_cu_reduce_resident_of() {
  static std::atomic<int> known{0};
  int blocks = known.load(std::memory_order_relaxed);
  if (blocks == 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, ct_cu_reduce_kernel<R, G>,
                                                      ct_cu_threads, 0) != cudaSuccess ||
        blocks < 1) {
      (void)cudaGetLastError(); /* not a failure of the call: the default stands */
      blocks = 2048 / ct_cu_threads;
    }
    known.store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

template <class R>
int ct_cu_reduce_resident(int group) {
  if (group == 1) return ct_cu_reduce_resident_of<R, 1>();
  if (group == 8) return ct_cu_reduce_resident_of<R, 8>();
  if (group == 32) return ct_cu_reduce_resident_of<R, 32>();
  return ct_cu_reduce_resident_of<R, ct_cu_threads>();
}

/* Segments for the chosen kernel's residency on `device`, cut at whole chunks of a dense lane
 * (ct_cu_fold_dense); `vector` is left false. */
template <int K, ct_pl_type V>
void ct_cu_reduce_finish(int32_t device, ct_cu_reduce_plan* p) {
  constexpr int64_t size = sizeof(typename ct_cu_traits<V>::storage);
  constexpr int64_t n = ct_cu_lane_vector<V>;
  ct_cu_reduce_segments(device, p, ct_cu_reduce_resident<ct_cu_reducer<K, V>>(p->group));
  const ct_pl_layout& r = p->reduced;
  p->dense = r.ndim == 1 && r.strides[0][0] == size;
  p->vector = false;
  if (p->dense && p->segments > 1) {
    p->segment = (p->segment + n - 1) / n * n;
    p->segments = (p->count + p->segment - 1) / p->segment;
  }
}

template <int K, ct_pl_type V>
uint64_t ct_cu_reduce_partial_bytes(int32_t device, const ct_cu_reduce_plan& plan) {
  ct_cu_reduce_plan p = plan;
  ct_cu_reduce_finish<K, V>(device, &p);
  if (p.segments <= 1) return 0;
  return sizeof(typename ct_cu_reducer<K, V>::State) * (uint64_t)(p.n * p.segments);
}

/* Whether every chunk of a dense lane is aligned for vector loads from `x`. */
template <ct_pl_type V>
bool ct_cu_reduce_vector(const ct_cu_reduce_plan& p, const char* x) {
  constexpr int64_t bytes = ct_cu_lane_vector<V> * sizeof(typename ct_cu_traits<V>::storage);
  if (!p.dense || reinterpret_cast<uintptr_t>(x) % (uintptr_t)bytes != 0) return false;
  for (int32_t d = 0; d < p.kept.ndim; ++d) {
    if (p.kept.strides[1][d] % bytes != 0) return false;
  }
  return true;
}

template <int K, ct_pl_type V>
int ct_cu_reduce_launch(const ct_cu_exec& exec, const ct_cu_reduce_plan& plan, char* out,
                        const char* x, void* workspace, uint64_t workspace_size) {
  using R = ct_cu_reducer<K, V>;
  using State = typename R::State;
  ct_cu_reduce_plan p = plan;
  ct_cu_reduce_finish<K, V>(exec.device_id, &p);
  p.vector = ct_cu_reduce_vector<V>(p, x);
  State* partial = nullptr;
  if (p.segments > 1) {
    /* The partial states live in the call's workspace (ct_cu_reduce_workspace asked for them). */
    void* scratch = nullptr;
    const int status =
        ct_cu_workspace(workspace, workspace_size, sizeof(State) * (uint64_t)(p.n * p.segments),
                        alignof(State), R::name, &scratch);
    if (status != CT_OK) return status;
    partial = static_cast<State*>(scratch);
  }
  if (p.group == 1) {
    ct_cu_reduce_lanes<R, 1>(exec, p, out, x, partial);
  } else if (p.group == 8) {
    ct_cu_reduce_lanes<R, 8>(exec, p, out, x, partial);
  } else if (p.group == 32) {
    ct_cu_reduce_lanes<R, 32>(exec, p, out, x, partial);
  } else {
    ct_cu_reduce_lanes<R, ct_cu_threads>(exec, p, out, x, partial);
  }
  int status = ct_cu_launch_status(R::name);
  if (partial && status == CT_OK) {
    ct_cu_reduce_segments_kernel<R>
        <<<ct_cu_grid(exec, p.n * 32, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            p.kept, out, partial, p.n, p.count, p.segments);
    status = ct_cu_launch_status(R::name);
  }
  return status;
}

/* The layouts and group of a call with `n` outputs (argmax/argmin keep the lane's logical order:
 * their index is the flat one). */
void ct_cu_reduce_plan_call(const ct_kernel_call* call, const ct_cu_reduce_entry* entry, int64_t n,
                            ct_cu_reduce_plan* plan) {
  plan->n = n;
  plan->count =
      ct_pl_reduce_layouts(call, entry->indexed, !entry->indexed, &plan->kept, &plan->reduced);
  ct_cu_reduce_group(plan);
}

int ct_cu_reduce_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_reduce_entry*>(call->kernel_data);
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cu_reduce_plan plan;
  ct_cu_reduce_plan_call(call, entry, n, &plan);
  return entry->launch(exec, plan, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(call->inputs[0]),
                       call->workspace, call->workspace_size);
}

/* The partial states of a call's segments, when its lanes are cut. */
int ct_cu_reduce_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  const auto* entry = static_cast<const ct_cu_reduce_entry*>(call->kernel_data);
  *bytes = 0;
  *alignment = 16;
  const int64_t n = ct_pl_tensor_elements(call->outputs[0]);
  if (n == 0) return CT_OK;
  ct_cu_reduce_plan plan;
  ct_cu_reduce_plan_call(call, entry, n, &plan);
  *bytes = entry->partial_bytes(call->inputs[0]->device.device_id, plan);
  return CT_OK;
}

template <int K, ct_pl_type V>
int ct_cu_register_reduction() {
  using R = ct_cu_reducer<K, V>;
  static const ct_cu_reduce_entry entry = {R::indexed, &ct_cu_reduce_launch<K, V>,
                                           &ct_cu_reduce_partial_bytes<K, V>};
  const ct_pl_type signature[2] = {V, R::out};
  return ct_cu_register(R::name, signature, 2, ct_cu_reduce_run, ct_cu_reduce_workspace, &entry);
}

/* sum_to_shape: the sum kernel over the dims broadcasting added (plugin_geometry.h). */
int ct_cu_sum_to_shape_run(const ct_kernel_call* call) {
  ct_pl_sum_to_shape sum;
  ct_pl_sum_to_shape_call(call, &sum);
  return ct_cu_reduce_run(&sum.call);
}

int ct_cu_sum_to_shape_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  ct_pl_sum_to_shape sum;
  ct_pl_sum_to_shape_call(call, &sum);
  return ct_cu_reduce_workspace(&sum.call, bytes, alignment);
}

template <ct_pl_type V>
int ct_cu_register_sum_to_shape() {
  static const ct_cu_reduce_entry entry = {false, &ct_cu_reduce_launch<CT_CU_SUM, V>,
                                           &ct_cu_reduce_partial_bytes<CT_CU_SUM, V>};
  const ct_pl_type signature[3] = {V, V, V};
  return ct_cu_register("sum_to_shape", signature, 3, ct_cu_sum_to_shape_run,
                        ct_cu_sum_to_shape_workspace, &entry);
}

template <int K>
int ct_cu_register_kind() {
  return ct_cu_for_each_tag(ct_cu_all_tags{}, [](auto tag) {
    return ct_cu_register_reduction<K, decltype(tag)::value>();
  });
}

}  // namespace

int ct_cu_register_reduce(void) {
  int status = ct_cu_register_kind<CT_CU_SUM>();
  if (status == CT_OK) status = ct_cu_register_kind<CT_CU_PROD>();
  if (status == CT_OK) status = ct_cu_register_kind<CT_CU_MEAN>();
  if (status == CT_OK) status = ct_cu_register_kind<CT_CU_MAX>();
  if (status == CT_OK) status = ct_cu_register_kind<CT_CU_MIN>();
  if (status == CT_OK) status = ct_cu_register_kind<CT_CU_ANY>();
  if (status == CT_OK) status = ct_cu_register_kind<CT_CU_ALL>();
  if (status == CT_OK) status = ct_cu_register_kind<CT_CU_ARGMAX>();
  if (status == CT_OK) status = ct_cu_register_kind<CT_CU_ARGMIN>();
  if (status == CT_OK) status = ct_cu_register_sum_to_shape<CT_PL_F16>();
  if (status == CT_OK) status = ct_cu_register_sum_to_shape<CT_PL_F32>();
  if (status == CT_OK) status = ct_cu_register_sum_to_shape<CT_PL_F64>();
  return status;
}
