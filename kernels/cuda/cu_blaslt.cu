/* cu_blaslt.cu - ct_cu_gemm (cu_blaslt.h): cuBLASLt handles per device, the problem cache and
 * the mapping of strided products onto cuBLASLt's column-major layouts.
 *
 * cuBLASLt multiplies column-major matrices, each optionally transposed. A matrix of ctensor's
 * with a unit stride along its rows is column-major as it is; one with a unit stride along its
 * columns is row-major, which is its transpose stored column-major. A column-major D is computed
 * as op(A) op(B); a row-major D as its transpose, D^T = op(B)^T op(A)^T, with A and B swapped.
 * Batches become one strided-batched call where their strides allow (a shared operand has stride
 * 0), batch dims along which B is shared fold into the rows of A and D (one larger GEMM), and
 * summed products fold into the contraction where their strides continue it. What is left is a
 * loop of calls on the stream, accumulating (beta 1) over summed products. */
#include <stdio.h>
#include <string.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "cu_blaslt.h"
#include "cu_vendor.h"

namespace {

constexpr int ct_cu_gemm_max_devices = 64;
/* Problems whose plans the cache keeps; past that an arbitrary one is dropped. */
constexpr size_t ct_cu_gemm_cache_capacity = 1024;
/* At most this many cublasLtMatmul calls for one op call; past that the hand-written kernel,
 * which walks any layout in one launch, is the better tool. */
constexpr int64_t ct_cu_gemm_max_launches = 4096;

/* ----- handles ----- */

std::atomic<cublasLtHandle_t> ct_cu_lt_handles[ct_cu_gemm_max_devices];
std::atomic<int> ct_cu_cc_major[ct_cu_gemm_max_devices]; /* 0: not asked yet */

/* The handle of `device_id` (the current device), created on first use. cuBLASLt's handle keeps
 * no stream or workspace, so one handle serves every thread. */
int ct_cu_lt_handle(int32_t device_id, cublasLtHandle_t* handle) {
  if (device_id < 0 || device_id >= ct_cu_gemm_max_devices) {
    return ct_cu_error(CT_ERROR_UNSUPPORTED_DEVICE, "cuBLASLt: no handle for CUDA device %d",
                       (int)device_id);
  }
  *handle = ct_cu_lt_handles[device_id].load(std::memory_order_acquire);
  if (*handle) return CT_OK;
  static std::mutex creating;
  std::lock_guard<std::mutex> lock(creating);
  *handle = ct_cu_lt_handles[device_id].load(std::memory_order_acquire);
  if (*handle) return CT_OK;
  cublasLtHandle_t created = nullptr;
  const int status = ct_cu_blas_check(ct_cu_blaslt.cublasLtCreate(&created), "cublasLtCreate");
  if (status != CT_OK) return status;
  ct_cu_lt_handles[device_id].store(created, std::memory_order_release);
  *handle = created;
  return CT_OK;
}

/* ----- the problem cache ----- */

/* Everything the heuristic's choice depends on. Fields are ordered so that the struct has no
 * padding: keys are hashed and compared as bytes. */
struct ct_cu_gemm_key {
  uint64_t a_rows, a_cols, b_rows, b_cols, d_rows, d_cols;
  int64_t a_ld, b_ld, d_ld, a_stride, b_stride, d_stride;
  uint64_t workspace;
  int32_t device, tag, trans_a, trans_b, epilogue;
  uint32_t a_align, b_align, d_align, bias_align;
  int32_t batch;
};
static_assert(sizeof(ct_cu_gemm_key) == 13 * 8 + 10 * 4, "no padding in the cache key");

struct ct_cu_gemm_key_hash {
  size_t operator()(const ct_cu_gemm_key& key) const {
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&key);
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < sizeof key; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    return (size_t)h;
  }
};

struct ct_cu_gemm_key_equal {
  bool operator()(const ct_cu_gemm_key& x, const ct_cu_gemm_key& y) const {
    return memcmp(&x, &y, sizeof x) == 0;
  }
};

/* A problem's descriptors and algorithm; `supported` false when the heuristic had none. The
 * descriptors are only read once built, so threads share a plan. */
struct ct_cu_gemm_plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo = {};
  bool supported = false;

  ct_cu_gemm_plan() = default;
  ct_cu_gemm_plan(const ct_cu_gemm_plan&) = delete;
  ct_cu_gemm_plan& operator=(const ct_cu_gemm_plan&) = delete;
  ~ct_cu_gemm_plan() {
    if (desc) ct_cu_blaslt.cublasLtMatmulDescDestroy(desc);
    if (a) ct_cu_blaslt.cublasLtMatrixLayoutDestroy(a);
    if (b) ct_cu_blaslt.cublasLtMatrixLayoutDestroy(b);
    if (d) ct_cu_blaslt.cublasLtMatrixLayoutDestroy(d);
  }
};

using ct_cu_gemm_plan_ptr = std::shared_ptr<const ct_cu_gemm_plan>;

/* Never destroyed: plans may be in use by other threads while the process exits, and cuBLASLt
 * may be unloaded before static destructors would run. */
struct ct_cu_gemm_cache {
  std::mutex mutex;
  std::unordered_map<ct_cu_gemm_key, ct_cu_gemm_plan_ptr, ct_cu_gemm_key_hash, ct_cu_gemm_key_equal>
      plans;
};

ct_cu_gemm_cache& ct_cu_gemm_plans() {
  static ct_cu_gemm_cache* cache = new ct_cu_gemm_cache;
  return *cache;
}

ct_cu_gemm_plan_ptr ct_cu_gemm_cached(const ct_cu_gemm_key& key) {
  ct_cu_gemm_cache& cache = ct_cu_gemm_plans();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const auto found = cache.plans.find(key);
  return found == cache.plans.end() ? nullptr : found->second;
}

/* Keeps `plan` for `key` (or the one another thread kept first) and returns the kept one. */
ct_cu_gemm_plan_ptr ct_cu_gemm_keep(const ct_cu_gemm_key& key, ct_cu_gemm_plan_ptr plan) {
  ct_cu_gemm_cache& cache = ct_cu_gemm_plans();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const auto found = cache.plans.find(key);
  if (found != cache.plans.end()) return found->second;
  if (cache.plans.size() >= ct_cu_gemm_cache_capacity) cache.plans.erase(cache.plans.begin());
  cache.plans.emplace(key, plan);
  return plan;
}

/* ----- types ----- */

cudaDataType_t ct_cu_lt_data_type(int32_t tag) {
  return tag == CT_PL_F16 ? CUDA_R_16F : tag == CT_PL_F32 ? CUDA_R_32F : CUDA_R_64F;
}

/* float16 and float32 accumulate and scale in float (no TF32: float32's tolerances), float64 in
 * double. */
cublasComputeType_t ct_cu_lt_compute_type(int32_t tag) {
  return tag == CT_PL_F64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
}

cudaDataType_t ct_cu_lt_scale_type(int32_t tag) {
  return tag == CT_PL_F64 ? CUDA_R_64F : CUDA_R_32F;
}

/* ----- descriptors ----- */

template <class T>
cublasStatus_t ct_cu_desc_set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                              const T& value) {
  return ct_cu_blaslt.cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value);
}

template <class T>
cublasStatus_t ct_cu_layout_set(cublasLtMatrixLayout_t layout,
                                cublasLtMatrixLayoutAttribute_t attribute, const T& value) {
  return ct_cu_blaslt.cublasLtMatrixLayoutSetAttribute(layout, attribute, &value, sizeof value);
}

template <class T>
cublasStatus_t ct_cu_pref_set(cublasLtMatmulPreference_t preference,
                              cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
  return ct_cu_blaslt.cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value,
                                                           sizeof value);
}

/* Sets the transposes and the epilogue (with its bias pointer) of a matmul descriptor. */
int ct_cu_desc_fill(cublasLtMatmulDesc_t desc, const ct_cu_gemm_key& key, const void* bias) {
  const int32_t trans_a = key.trans_a, trans_b = key.trans_b;
  int status = ct_cu_blas_check(ct_cu_desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, trans_a),
                                "cublasLtMatmulDescSetAttribute(TRANSA)");
  if (status == CT_OK) {
    status = ct_cu_blas_check(ct_cu_desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, trans_b),
                              "cublasLtMatmulDescSetAttribute(TRANSB)");
  }
  if (status == CT_OK && key.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    const uint32_t epilogue = (uint32_t)key.epilogue;
    status = ct_cu_blas_check(ct_cu_desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue),
                              "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    if (status == CT_OK) {
      status = ct_cu_blas_check(ct_cu_desc_set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias),
                                "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    }
  }
  return status;
}

/* Whether cuBLASLt refused a problem it cannot take (sizes, leading dims, a configuration without
 * a kernel): the plan is then unsupported and the hand-written kernel runs, rather than an
 * error. */
bool ct_cu_lt_refused(cublasStatus_t status) {
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE;
}

/* A rows x cols column-major layout with leading dim `ld` and `batch` matrices `stride` elements
 * apart; `*refused` when cuBLASLt does not take these sizes. */
int ct_cu_layout_create(cublasLtMatrixLayout_t* layout, const ct_cu_gemm_key& key, uint64_t rows,
                        uint64_t cols, int64_t ld, int64_t stride, bool* refused) {
  const cublasStatus_t created =
      ct_cu_blaslt.cublasLtMatrixLayoutCreate(layout, ct_cu_lt_data_type(key.tag), rows, cols, ld);
  if (ct_cu_lt_refused(created)) {
    *layout = nullptr;
    *refused = true;
    return CT_OK;
  }
  int status = ct_cu_blas_check(created, "cublasLtMatrixLayoutCreate");
  if (status != CT_OK || key.batch <= 1) return status;
  status =
      ct_cu_blas_check(ct_cu_layout_set(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, key.batch),
                       "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
  if (status != CT_OK) return status;
  return ct_cu_blas_check(
      ct_cu_layout_set(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride),
      "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

/* Asks the heuristic for the best algorithm of `plan`'s problem within the preferences: the
 * workspace, the operands' alignments and (float16) split-K partial sums kept in float. */
int ct_cu_gemm_choose(cublasLtHandle_t handle, const ct_cu_gemm_key& key, ct_cu_gemm_plan* plan) {
  cublasLtMatmulPreference_t preference = nullptr;
  int status = ct_cu_blas_check(ct_cu_blaslt.cublasLtMatmulPreferenceCreate(&preference),
                                "cublasLtMatmulPreferenceCreate");
  if (status != CT_OK) return status;
  const uint64_t workspace = key.workspace;
  cublasStatus_t set =
      ct_cu_pref_set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace);
  if (set == CUBLAS_STATUS_SUCCESS) {
    set = ct_cu_pref_set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.a_align);
  }
  if (set == CUBLAS_STATUS_SUCCESS) {
    set = ct_cu_pref_set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.b_align);
  }
  if (set == CUBLAS_STATUS_SUCCESS) {
    set = ct_cu_pref_set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.d_align);
  }
  if (set == CUBLAS_STATUS_SUCCESS) {
    set = ct_cu_pref_set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.d_align);
  }
  if (set == CUBLAS_STATUS_SUCCESS && key.tag == CT_PL_F16) {
    /* In place split-K would add partial sums in float16 (the output type): allow only the
     * scheme that keeps them in the compute type (no split-K stays allowed). */
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    set = ct_cu_pref_set(preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, schemes);
  }
  status = ct_cu_blas_check(set, "cublasLtMatmulPreferenceSetAttribute");
  if (status == CT_OK) {
    cublasLtMatmulHeuristicResult_t result = {};
    int count = 0;
    const cublasStatus_t found = ct_cu_blaslt.cublasLtMatmulAlgoGetHeuristic(
        handle, plan->desc, plan->a, plan->b, plan->d, plan->d, preference, 1, &result, &count);
    if (found == CUBLAS_STATUS_SUCCESS) {
      plan->supported = count > 0 && result.state == CUBLAS_STATUS_SUCCESS &&
                        result.workspaceSize <= key.workspace;
      if (plan->supported) plan->algo = result.algo;
    } else if (!ct_cu_lt_refused(found)) {
      /* NOT_SUPPORTED: no heuristic for this configuration; INVALID_VALUE: sizes or leading
       * dims it does not take. The hand-written kernel takes both; anything else is an error. */
      status = ct_cu_blas_check(found, "cublasLtMatmulAlgoGetHeuristic");
    }
  }
  ct_cu_blaslt.cublasLtMatmulPreferenceDestroy(preference);
  return status;
}

/* Builds the plan of `key` (bias: a pointer with the alignment the key records). */
int ct_cu_gemm_build(cublasLtHandle_t handle, const ct_cu_gemm_key& key, const void* bias,
                     ct_cu_gemm_plan* plan) {
  int status = ct_cu_blas_check(
      ct_cu_blaslt.cublasLtMatmulDescCreate(&plan->desc, ct_cu_lt_compute_type(key.tag),
                                            ct_cu_lt_scale_type(key.tag)),
      "cublasLtMatmulDescCreate");
  if (status == CT_OK) status = ct_cu_desc_fill(plan->desc, key, bias);
  bool refused = false;
  if (status == CT_OK) {
    status = ct_cu_layout_create(&plan->a, key, key.a_rows, key.a_cols, key.a_ld, key.a_stride,
                                 &refused);
  }
  if (status == CT_OK && !refused) {
    status = ct_cu_layout_create(&plan->b, key, key.b_rows, key.b_cols, key.b_ld, key.b_stride,
                                 &refused);
  }
  if (status == CT_OK && !refused) {
    status = ct_cu_layout_create(&plan->d, key, key.d_rows, key.d_cols, key.d_ld, key.d_stride,
                                 &refused);
  }
  if (status == CT_OK && !refused) status = ct_cu_gemm_choose(handle, key, plan);
  return status;
}

/* ----- mapping strided matrices onto layouts ----- */

/* A rows x cols matrix with byte strides. */
struct ct_cu_matrix {
  int64_t rows, cols, rs, cs;
};

/* How cuBLASLt sees a matrix: stored column-major as rows x cols with leading dim `ld`
 * (elements); `transposed` when what is stored is the matrix's transpose (it was row-major). */
struct ct_cu_lt_view {
  int64_t rows, cols, ld;
  bool transposed;
};

/* Whether `x` is column-major for cuBLASLt (unit stride down its columns, a leading dimension at
 * least its rows), with that leading dimension. A dim of extent 1 takes any stride. */
bool ct_cu_column_major(const ct_cu_matrix& x, int64_t size, int64_t* ld) {
  if (x.rows > 1 && x.rs != size) return false;
  if (x.cols == 1) {
    *ld = x.rows;
    return true;
  }
  if (x.cs <= 0 || x.cs % size != 0) return false;
  *ld = x.cs / size;
  return *ld >= x.rows;
}

/* The view of `x`: `want` 0 as it is (column-major), 1 as its transpose (row-major), -1
 * whichever its unit stride says. False when neither fits. */
bool ct_cu_view_of(const ct_cu_matrix& x, int64_t size, int want, ct_cu_lt_view* view) {
  const bool row_first =
      want == 1 || (want < 0 && x.cols > 1 && x.cs == size && !(x.rows > 1 && x.rs == size));
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool row = (attempt == 0) == row_first;
    if (want >= 0 && row != (want == 1)) continue;
    int64_t ld = 0;
    if (row) {
      const ct_cu_matrix t = {x.cols, x.rows, x.cs, x.rs};
      if (ct_cu_column_major(t, size, &ld)) {
        *view = {x.cols, x.rows, ld, true};
        return true;
      }
    } else if (ct_cu_column_major(x, size, &ld)) {
      *view = {x.rows, x.cols, ld, false};
      return true;
    }
  }
  return false;
}

/* The largest power of two up to 256 that divides `value` (256 for 0). */
uint32_t ct_cu_alignment_of(uint64_t value) {
  value |= 256;
  return (uint32_t)(value & (~value + 1));
}

/* Removes dim `d` of a layout. */
void ct_cu_layout_drop(ct_pl_layout* layout, int32_t d) {
  layout->elements /= layout->shape[d];
  for (int32_t q = d; q + 1 < layout->ndim; ++q) {
    layout->shape[q] = layout->shape[q + 1];
    for (int32_t k = 0; k < layout->count; ++k) layout->strides[k][q] = layout->strides[k][q + 1];
  }
  --layout->ndim;
}

/* Byte offsets of element `i` (row-major) of `layout` for each of its operands. */
void ct_cu_host_offsets(const ct_pl_layout& layout, int64_t i, int64_t* offsets) {
  for (int32_t k = 0; k < layout.count; ++k) offsets[k] = 0;
  for (int32_t d = layout.ndim - 1; d >= 0; --d) {
    const int64_t index = i % layout.shape[d];
    i /= layout.shape[d];
    for (int32_t k = 0; k < layout.count; ++k) offsets[k] += index * layout.strides[k][d];
  }
}

/* One GEMM shape with the matrices' byte strides. */
struct ct_cu_gemm_shape {
  int64_t m, n, k;
  int64_t d_m, d_n, a_m, a_k, b_k, b_n;
};

bool ct_cu_views_fit(const ct_cu_gemm_shape& s, int64_t size, bool bias) {
  ct_cu_lt_view v;
  return ct_cu_view_of({s.m, s.k, s.a_m, s.a_k}, size, -1, &v) &&
         ct_cu_view_of({s.k, s.n, s.b_k, s.b_n}, size, -1, &v) &&
         ct_cu_view_of({s.m, s.n, s.d_m, s.d_n}, size, bias ? 1 : -1, &v);
}

/* Folds summed products into the contraction where both operands continue it by their strides
 * (any dim: the sum's order is free). */
void ct_cu_fold_summed(ct_cu_gemm_shape* s, ct_pl_layout* summed, int64_t size) {
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t d = 0; d < summed->ndim && !changed; ++d) {
      const int64_t extent = summed->shape[d];
      const int64_t as = summed->strides[0][d], bs = summed->strides[1][d];
      ct_cu_gemm_shape t = *s;
      if (t.k == 1) { /* the contraction's strides are free */
        t.a_k = as;
        t.b_k = bs;
      } else if (as == t.k * t.a_k && bs == t.k * t.b_k) {
        /* index s * k + kk: the contraction's strides stay */
      } else if (t.a_k == extent * as && t.b_k == extent * bs) {
        t.a_k = as; /* index kk * extent + s */
        t.b_k = bs;
      } else {
        continue;
      }
      t.k *= extent;
      if (!ct_cu_views_fit(t, size, false)) continue;
      *s = t;
      ct_cu_layout_drop(summed, d);
      changed = true;
    }
  }
}

/* Folds batch dims into the rows of A and D where B is shared along them (stride 0), or into the
 * columns of B and D where A is, so that one larger GEMM replaces a batch. Not into the columns
 * with a bias, which is per column. */
void ct_cu_fold_batch(ct_cu_gemm_shape* s, ct_pl_layout* batch, int64_t size, bool bias) {
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t d = 0; d < batch->ndim && !changed; ++d) {
      const int64_t extent = batch->shape[d];
      const int64_t ds = batch->strides[0][d], as = batch->strides[1][d], bs = batch->strides[2][d];
      for (int side = 0; side < 2 && !changed; ++side) {
        ct_cu_gemm_shape t = *s;
        /* side 0: rows (m) of A and D; side 1: columns (n) of B and D */
        int64_t& extent_x = side == 0 ? t.m : t.n;
        int64_t& d_x = side == 0 ? t.d_m : t.d_n;
        int64_t& o_x = side == 0 ? t.a_m : t.b_n;
        const int64_t os = side == 0 ? as : bs;
        const int64_t shared = side == 0 ? bs : as;
        if (shared != 0 || (side == 1 && bias)) continue;
        if (extent_x == 1) {
          d_x = ds;
          o_x = os;
        } else if (ds == extent_x * d_x && os == extent_x * o_x) {
          /* index z * extent + i: strides stay */
        } else if (d_x == extent * ds && o_x == extent * os) {
          d_x = ds; /* index i * extent + z */
          o_x = os;
        } else {
          continue;
        }
        extent_x *= extent;
        if (!ct_cu_views_fit(t, size, bias)) continue;
        *s = t;
        ct_cu_layout_drop(batch, d);
        changed = true;
      }
    }
  }
}

/* The cached per-device attribute (compute capability major), 0 when it cannot be read. */
int ct_cu_compute_major(int32_t device_id) {
  if (device_id < 0 || device_id >= ct_cu_gemm_max_devices) return 0;
  int major = ct_cu_cc_major[device_id].load(std::memory_order_relaxed);
  if (major > 0) return major;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_id) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  ct_cu_cc_major[device_id].store(major, std::memory_order_relaxed);
  return major;
}

}  // namespace

uint64_t ct_cu_gemm_workspace(int32_t device_id) {
  /* cuBLAS's recommended workspace: 32 MiB from Hopper (compute capability 9) on, 4 MiB on
   * earlier devices. */
  return ct_cu_compute_major(device_id) >= 9 ? (uint64_t)32 << 20 : (uint64_t)4 << 20;
}

int ct_cu_gemm(const ct_cu_exec& exec, const ct_cu_gemm_args& g, void* workspace,
               uint64_t workspace_size, bool* ran) {
  *ran = false;
  if (g.tag != CT_PL_F16 && g.tag != CT_PL_F32 && g.tag != CT_PL_F64) return CT_OK;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return CT_OK; /* k 0: the kernel writes zeros (+ bias) */
  const int64_t size = ct_pl_type_size(g.tag);
  const bool has_bias = g.bias != nullptr;

  ct_pl_layout batch = g.batch, summed = g.summed;
  ct_pl_layout_collapse(&batch, nullptr);
  ct_pl_layout_collapse(&summed, nullptr);
  ct_cu_gemm_shape s = {g.m, g.n, g.k, g.d_m, g.d_n, g.a_m, g.a_k, g.b_k, g.b_n};
  if (!ct_cu_views_fit(s, size, has_bias)) return CT_OK;
  ct_cu_fold_summed(&s, &summed, size);
  ct_cu_fold_batch(&s, &batch, size, has_bias);
  /* Summed products that stay a loop accumulate in the output: float16 would round each partial
   * sum (the kernel keeps one float accumulator), and a bias would be added once per product. */
  if (summed.ndim > 0 && (g.tag == CT_PL_F16 || has_bias)) return CT_OK;

  /* The innermost batch dim, when its strides are whole non-negative elements, is one strided
   * batch; the other batch dims and the summed products are a loop of calls. */
  int64_t count = 1, stride[3] = {0, 0, 0};
  if (batch.ndim > 0) {
    const int32_t last = batch.ndim - 1;
    bool strided = batch.shape[last] <= INT32_MAX;
    for (int k = 0; k < 3; ++k) {
      strided = strided && batch.strides[k][last] >= 0 && batch.strides[k][last] % size == 0;
    }
    if (strided) {
      count = batch.shape[last];
      for (int k = 0; k < 3; ++k) stride[k] = batch.strides[k][last] / size;
      ct_cu_layout_drop(&batch, last);
    }
  }
  const int64_t outer = batch.elements, inner = summed.elements;
  if (outer > ct_cu_gemm_max_launches || inner > ct_cu_gemm_max_launches ||
      outer * inner > ct_cu_gemm_max_launches) {
    return CT_OK;
  }

  /* Alignment of every pointer a call will see: the first ones and every step of the loop and
   * the strided batch. cuBLASLt needs at least whole elements. */
  uint64_t a_bits = (uint64_t)(uintptr_t)g.a, b_bits = (uint64_t)(uintptr_t)g.b;
  uint64_t d_bits = (uint64_t)(uintptr_t)g.d;
  for (int32_t q = 0; q < batch.ndim; ++q) {
    d_bits |= (uint64_t)batch.strides[0][q];
    a_bits |= (uint64_t)batch.strides[1][q];
    b_bits |= (uint64_t)batch.strides[2][q];
  }
  for (int32_t q = 0; q < summed.ndim; ++q) {
    a_bits |= (uint64_t)summed.strides[0][q];
    b_bits |= (uint64_t)summed.strides[1][q];
  }
  d_bits |= (uint64_t)(stride[0] * size);
  a_bits |= (uint64_t)(stride[1] * size);
  b_bits |= (uint64_t)(stride[2] * size);
  const uint32_t a_align = ct_cu_alignment_of(a_bits), b_align = ct_cu_alignment_of(b_bits);
  const uint32_t d_align = ct_cu_alignment_of(d_bits);
  if (a_align < size || b_align < size || d_align < size) return CT_OK;

  ct_cu_lt_view va, vb, vd;
  ct_cu_view_of({s.m, s.k, s.a_m, s.a_k}, size, -1, &va);
  ct_cu_view_of({s.k, s.n, s.b_k, s.b_n}, size, -1, &vb);
  ct_cu_view_of({s.m, s.n, s.d_m, s.d_n}, size, has_bias ? 1 : -1, &vd);

  ct_cu_gemm_key key;
  memset(&key, 0, sizeof key);
  key.device = exec.device_id;
  key.tag = g.tag;
  key.batch = (int32_t)count;
  key.d_rows = (uint64_t)vd.rows;
  key.d_cols = (uint64_t)vd.cols;
  key.d_ld = vd.ld;
  key.d_stride = stride[0];
  key.d_align = d_align;
  /* The operands in cuBLASLt's order: a column-major D is op(A) op(B); a row-major one (stored
   * as D^T) is op(B)^T op(A)^T. An operand is transposed where its storage differs from what
   * its slot wants. */
  const bool swapped = vd.transposed;
  const ct_cu_lt_view& first = swapped ? vb : va;
  const ct_cu_lt_view& second = swapped ? va : vb;
  key.trans_a = first.transposed != swapped ? CUBLAS_OP_T : CUBLAS_OP_N;
  key.trans_b = second.transposed != swapped ? CUBLAS_OP_T : CUBLAS_OP_N;
  key.a_rows = (uint64_t)first.rows;
  key.a_cols = (uint64_t)first.cols;
  key.a_ld = first.ld;
  key.a_stride = swapped ? stride[2] : stride[1];
  key.a_align = swapped ? b_align : a_align;
  key.b_rows = (uint64_t)second.rows;
  key.b_cols = (uint64_t)second.cols;
  key.b_ld = second.ld;
  key.b_stride = swapped ? stride[1] : stride[2];
  key.b_align = swapped ? a_align : b_align;
  key.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (has_bias) {
    /* The BIAS epilogue adds a packed vector along D's stored rows: the columns of ctensor's
     * row-major D (swapped). cuBLASLt's bias epilogue has had faults with a single row or
     * contraction of 1 and with unaligned vectors, which the hand-written kernel takes. */
    key.bias_align = ct_cu_alignment_of((uint64_t)(uintptr_t)g.bias);
    if (!swapped || s.n <= 1 || s.k <= 1 || g.bias_n != size || key.bias_align < 16) {
      return CT_OK;
    }
    key.epilogue = CUBLASLT_EPILOGUE_BIAS;
  }
  const bool workspace_aligned =
      workspace && (uintptr_t)workspace % CT_CU_GEMM_WORKSPACE_ALIGNMENT == 0;
  key.workspace = workspace_aligned ? workspace_size : 0;

  cublasLtHandle_t handle = nullptr;
  int status = ct_cu_lt_handle(exec.device_id, &handle);
  if (status != CT_OK) return status;
  ct_cu_gemm_plan_ptr plan = ct_cu_gemm_cached(key);
  if (!plan) {
    auto built = std::make_shared<ct_cu_gemm_plan>();
    status = ct_cu_gemm_build(handle, key, g.bias, built.get());
    if (status != CT_OK) return status;
    plan = ct_cu_gemm_keep(key, std::move(built));
  }
  if (!plan->supported) return CT_OK;

  /* The bias pointer lives in the matmul descriptor: a call with a bias gets a descriptor of its
   * own (in place, no allocation) so that threads never write a shared one. */
  cublasLtMatmulDescOpaque_t own;
  cublasLtMatmulDesc_t desc = plan->desc;
  if (has_bias) {
    desc = &own;
    status = ct_cu_blas_check(
        ct_cu_blaslt.cublasLtMatmulDescInit_internal(desc, sizeof own, ct_cu_lt_compute_type(g.tag),
                                                     ct_cu_lt_scale_type(g.tag)),
        "cublasLtMatmulDescInit");
    if (status == CT_OK) status = ct_cu_desc_fill(desc, key, g.bias);
    if (status != CT_OK) return status;
  }

  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const bool wide = g.tag == CT_PL_F64;
  const void* alpha = wide ? (const void*)&one_d : (const void*)&one_f;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off[3] = {0, 0, 0};
    ct_cu_host_offsets(batch, o, off);
    for (int64_t i = 0; i < inner; ++i) {
      int64_t sum_off[2] = {0, 0};
      ct_cu_host_offsets(summed, i, sum_off);
      const char* a = g.a + off[1] + sum_off[0];
      const char* b = g.b + off[2] + sum_off[1];
      char* d = g.d + off[0];
      const void* beta = i == 0 ? (wide ? (const void*)&zero_d : (const void*)&zero_f)
                                : (wide ? (const void*)&one_d : (const void*)&one_f);
      status =
          ct_cu_blas_check(ct_cu_blaslt.cublasLtMatmul(
                               handle, desc, alpha, swapped ? b : a, plan->a, swapped ? a : b,
                               plan->b, beta, d, plan->d, d, plan->d, &plan->algo,
                               workspace_aligned ? workspace : nullptr, key.workspace, exec.stream),
                           "cublasLtMatmul");
      if (status != CT_OK) return status;
      *ran = true;
    }
  }
  *ran = true;
  return CT_OK;
}
