/* cu_dnn.cu - cuDNN's convolutions for the plugin (cu_dnn.h): handles per (thread, device),
 * descriptors that destroy themselves, and a bounded, thread-safe cache of the algorithms that
 * cuDNN's heuristics choose for each problem. */
#include <string.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cu_dnn.h"
#include "plugin_geometry.h"

namespace {

/* ----- handles -----
 * A cudnnHandle_t must not be used by two threads at once, and it belongs to the device that was
 * current when it was made: each thread gets one per device, made on first use. When a thread
 * ends, its handles go to a shared free list that later threads take from, so short-lived
 * threads do not make a handle each. Handles are never destroyed: destroying one at process
 * exit can race with the CUDA runtime's own teardown (frameworks keep theirs for the same
 * reason). */

struct ct_cu_dnn_free_handles {
  std::mutex mutex;
  std::vector<std::vector<cudnnHandle_t>> by_device;
};

/* Allocated once and never freed, so that threads ending during static destruction still find
 * it. */
ct_cu_dnn_free_handles& ct_cu_dnn_free_list() {
  static ct_cu_dnn_free_handles* free_list = new ct_cu_dnn_free_handles;
  return *free_list;
}

struct ct_cu_dnn_thread_handles {
  std::vector<cudnnHandle_t> by_device;
  ~ct_cu_dnn_thread_handles() {
    ct_cu_dnn_free_handles& free_list = ct_cu_dnn_free_list();
    std::lock_guard<std::mutex> lock(free_list.mutex);
    for (size_t device = 0; device < by_device.size(); ++device) {
      if (!by_device[device]) continue;
      if (free_list.by_device.size() <= device) free_list.by_device.resize(device + 1);
      free_list.by_device[device].push_back(by_device[device]);
    }
  }
};

thread_local ct_cu_dnn_thread_handles ct_cu_dnn_handles;

/* This thread's handle for `device_id`, which the caller has made current. */
int ct_cu_dnn_handle(int32_t device_id, cudnnHandle_t* handle) {
  std::vector<cudnnHandle_t>& mine = ct_cu_dnn_handles.by_device;
  const size_t device = (size_t)device_id;
  if (device < mine.size() && mine[device]) {
    *handle = mine[device];
    return CT_OK;
  }
  if (mine.size() <= device) mine.resize(device + 1, nullptr);
  {
    ct_cu_dnn_free_handles& free_list = ct_cu_dnn_free_list();
    std::lock_guard<std::mutex> lock(free_list.mutex);
    if (device < free_list.by_device.size() && !free_list.by_device[device].empty()) {
      mine[device] = free_list.by_device[device].back();
      free_list.by_device[device].pop_back();
      *handle = mine[device];
      return CT_OK;
    }
  }
  cudnnHandle_t made = nullptr;
  const int status = ct_cu_dnn_check(ct_cu_dnn.cudnnCreate(&made), "cudnnCreate");
  if (status != CT_OK) return status;
  mine[device] = made;
  *handle = made;
  return CT_OK;
}

/* ----- descriptors: each destroys what it created ----- */

class ct_cu_dnn_tensor_desc {
 public:
  ct_cu_dnn_tensor_desc() = default;
  ~ct_cu_dnn_tensor_desc() {
    if (desc_) ct_cu_dnn.cudnnDestroyTensorDescriptor(desc_);
  }
  ct_cu_dnn_tensor_desc(const ct_cu_dnn_tensor_desc&) = delete;
  ct_cu_dnn_tensor_desc& operator=(const ct_cu_dnn_tensor_desc&) = delete;
  cudnnStatus_t set(cudnnDataType_t type, const int32_t dims[4], const int32_t strides[4],
                    const char** what) {
    *what = "cudnnCreateTensorDescriptor";
    const cudnnStatus_t status = ct_cu_dnn.cudnnCreateTensorDescriptor(&desc_);
    if (status != CUDNN_STATUS_SUCCESS) return status;
    *what = "cudnnSetTensorNdDescriptor";
    return ct_cu_dnn.cudnnSetTensorNdDescriptor(desc_, type, 4, dims, strides);
  }
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

class ct_cu_dnn_filter_desc {
 public:
  ct_cu_dnn_filter_desc() = default;
  ~ct_cu_dnn_filter_desc() {
    if (desc_) ct_cu_dnn.cudnnDestroyFilterDescriptor(desc_);
  }
  ct_cu_dnn_filter_desc(const ct_cu_dnn_filter_desc&) = delete;
  ct_cu_dnn_filter_desc& operator=(const ct_cu_dnn_filter_desc&) = delete;
  cudnnStatus_t set(cudnnDataType_t type, const int32_t dims[4], const char** what) {
    *what = "cudnnCreateFilterDescriptor";
    const cudnnStatus_t status = ct_cu_dnn.cudnnCreateFilterDescriptor(&desc_);
    if (status != CUDNN_STATUS_SUCCESS) return status;
    *what = "cudnnSetFilter4dDescriptor";
    return ct_cu_dnn.cudnnSetFilter4dDescriptor(desc_, type, CUDNN_TENSOR_NCHW, dims[0], dims[1],
                                                dims[2], dims[3]);
  }
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

class ct_cu_dnn_conv_desc {
 public:
  ct_cu_dnn_conv_desc() = default;
  ~ct_cu_dnn_conv_desc() {
    if (desc_) ct_cu_dnn.cudnnDestroyConvolutionDescriptor(desc_);
  }
  ct_cu_dnn_conv_desc(const ct_cu_dnn_conv_desc&) = delete;
  ct_cu_dnn_conv_desc& operator=(const ct_cu_dnn_conv_desc&) = delete;
  cudnnStatus_t set(const ct_cu_dnn_conv_problem& p, cudnnDataType_t compute, const char** what) {
    *what = "cudnnCreateConvolutionDescriptor";
    cudnnStatus_t status = ct_cu_dnn.cudnnCreateConvolutionDescriptor(&desc_);
    if (status != CUDNN_STATUS_SUCCESS) return status;
    *what = "cudnnSetConvolution2dDescriptor";
    status = ct_cu_dnn.cudnnSetConvolution2dDescriptor(
        desc_, p.padding[0], p.padding[1], p.stride[0], p.stride[1], p.dilation[0], p.dilation[1],
        CUDNN_CROSS_CORRELATION, compute);
    if (status != CUDNN_STATUS_SUCCESS) return status;
    *what = "cudnnSetConvolutionGroupCount";
    return ct_cu_dnn.cudnnSetConvolutionGroupCount(desc_, p.groups);
  }
  int set_math(cudnnMathType_t math) {
    return ct_cu_dnn_check(ct_cu_dnn.cudnnSetConvolutionMathType(desc_, math),
                           "cudnnSetConvolutionMathType");
  }
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

/* The descriptors of one problem. */
struct ct_cu_dnn_conv_descs {
  ct_cu_dnn_tensor_desc x, y;
  ct_cu_dnn_filter_desc w;
  ct_cu_dnn_conv_desc conv;
};

/* float16 is stored as half and computed in float (cuDNN's pseudo-half configuration, as
 * torch's); float32 and float64 compute in their own type. */
cudnnDataType_t ct_cu_dnn_data_type(int32_t dtype) {
  return dtype == CT_PL_F16   ? CUDNN_DATA_HALF
         : dtype == CT_PL_F32 ? CUDNN_DATA_FLOAT
                              : CUDNN_DATA_DOUBLE;
}

cudnnDataType_t ct_cu_dnn_compute_type(int32_t dtype) {
  return dtype == CT_PL_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

/* The math type the heuristics are asked with. float32 is CUDNN_FMA_MATH: the default lets
 * Ampere and later GPUs round the operands to TF32 (10 mantissa bits), far outside float32's
 * tolerances. float16 may use tensor cores (float accumulation). float64's default math is
 * exact (FP64 tensor cores are IEEE double FMAs). */
cudnnMathType_t ct_cu_dnn_base_math(int32_t dtype) {
  return dtype == CT_PL_F16   ? CUDNN_TENSOR_OP_MATH
         : dtype == CT_PL_F32 ? CUDNN_FMA_MATH
                              : CUDNN_DEFAULT_MATH;
}

/* Whether cuDNN refused what it was given (not supported, or a parameter it rejects): nothing
 * has run, and the plugin's kernel takes the call. */
bool ct_cu_dnn_refused(cudnnStatus_t status) {
  return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED ||
         CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_BAD_PARAM;
}

/* Makes the problem's descriptors: CT_OK with `*refused` set when cuDNN rejects them (the
 * plugin's kernel runs), or an error. */
int ct_cu_dnn_conv_descs_set(const ct_cu_dnn_conv_problem& p, ct_cu_dnn_conv_descs* d,
                             bool* refused) {
  const cudnnDataType_t type = ct_cu_dnn_data_type(p.dtype);
  const char* what = "";
  cudnnStatus_t status = d->x.set(type, p.x_dims, p.x_strides, &what);
  if (status == CUDNN_STATUS_SUCCESS) status = d->y.set(type, p.y_dims, p.y_strides, &what);
  if (status == CUDNN_STATUS_SUCCESS) status = d->w.set(type, p.w_dims, &what);
  if (status == CUDNN_STATUS_SUCCESS) {
    status = d->conv.set(p, ct_cu_dnn_compute_type(p.dtype), &what);
  }
  *refused = ct_cu_dnn_refused(status);
  if (*refused) return CT_OK;
  const int checked = ct_cu_dnn_check(status, what);
  return checked != CT_OK ? checked : d->conv.set_math(ct_cu_dnn_base_math(p.dtype));
}

/* ----- algorithm choice ----- */

/* One usable algorithm: the algorithm enum's value, the math type to run it with and the
 * workspace it needs with that math type. */
struct ct_cu_dnn_choice {
  int32_t algo;
  cudnnMathType_t math;
  uint64_t workspace;
};

/* The usable algorithms of a problem in the heuristics' order (best first); count 0 when cuDNN
 * has none (the caller's own kernel runs). */
struct ct_cu_dnn_plan {
  int32_t count = 0;
  ct_cu_dnn_choice choices[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
};

static_assert((int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT >= (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT &&
                  (int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT >=
                      (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
              "a plan holds every algorithm of each direction");

/* Algorithms left out whatever the heuristics say. FFT and non-fused Winograd transform the
 * operands, so their rounding error grows with the transform size rather than with the number
 * of terms of each output, and goes beyond the tolerances the direct sum meets (the conformance
 * suite's accumulating class); they also ask for large workspaces. */
bool ct_cu_dnn_algo_excluded(int32_t direction, int32_t algo) {
  switch (direction) {
    case CT_CU_DNN_FORWARD:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case CT_CU_DNN_BACKWARD_DATA:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    default:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
  }
}

/* Whether a heuristic result may be used: it is supported, deterministic (the plugin's results
 * do not depend on the run: this leaves out the backward algorithms that add with atomics), not
 * excluded above, and for float32 not a tensor-core (TF32) one. */
template <class Perf>
bool ct_cu_dnn_perf_usable(const ct_cu_dnn_conv_problem& p, const Perf& perf) {
  if (perf.status != CUDNN_STATUS_SUCCESS || perf.determinism != CUDNN_DETERMINISTIC) return false;
  if (ct_cu_dnn_algo_excluded(p.direction, (int32_t)perf.algo)) return false;
  if (p.dtype == CT_PL_F32 && (perf.mathType == CUDNN_TENSOR_OP_MATH ||
                               perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) {
    return false;
  }
  return true;
}

/* The workspace of `algo` run with `math` (set on the descriptor), or false when cuDNN says that
 * combination is not supported. */
bool ct_cu_dnn_algo_workspace(cudnnHandle_t handle, const ct_cu_dnn_conv_problem& p,
                              ct_cu_dnn_conv_descs* d, int32_t algo, cudnnMathType_t math,
                              uint64_t* bytes) {
  if (d->conv.set_math(math) != CT_OK) return false;
  size_t size = 0;
  cudnnStatus_t status;
  switch (p.direction) {
    case CT_CU_DNN_FORWARD:
      status = ct_cu_dnn.cudnnGetConvolutionForwardWorkspaceSize(
          handle, d->x.get(), d->w.get(), d->conv.get(), d->y.get(),
          (cudnnConvolutionFwdAlgo_t)algo, &size);
      break;
    case CT_CU_DNN_BACKWARD_DATA:
      status = ct_cu_dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, d->w.get(), d->y.get(), d->conv.get(), d->x.get(),
          (cudnnConvolutionBwdDataAlgo_t)algo, &size);
      break;
    default:
      status = ct_cu_dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, d->x.get(), d->y.get(), d->conv.get(), d->w.get(),
          (cudnnConvolutionBwdFilterAlgo_t)algo, &size);
      break;
  }
  if (status != CUDNN_STATUS_SUCCESS) return false;
  *bytes = (uint64_t)size;
  return true;
}

/* Adds the usable heuristic results to `plan`, with their workspaces. */
template <class Perf>
void ct_cu_dnn_plan_add(cudnnHandle_t handle, const ct_cu_dnn_conv_problem& p,
                        ct_cu_dnn_conv_descs* d, const Perf* perfs, int returned,
                        ct_cu_dnn_plan* plan) {
  for (int i = 0; i < returned && plan->count < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++i) {
    if (!ct_cu_dnn_perf_usable(p, perfs[i])) continue;
    const int32_t algo = (int32_t)perfs[i].algo;
    bool seen = false;
    for (int32_t k = 0; k < plan->count; ++k) seen = seen || plan->choices[k].algo == algo;
    if (seen) continue;
    /* float32 runs with FMA math whatever math type the result names (its DEFAULT would allow
     * TF32); the others run with the result's own. */
    const cudnnMathType_t math = p.dtype == CT_PL_F32 ? CUDNN_FMA_MATH : perfs[i].mathType;
    uint64_t bytes = 0;
    if (!ct_cu_dnn_algo_workspace(handle, p, d, algo, math, &bytes)) continue;
    plan->choices[plan->count++] = {algo, math, bytes};
  }
}

/* Asks cuDNN's heuristics (cudnnGet*Algorithm_v7: a model of the device, nothing is run or
 * allocated) for the problem's algorithms. Leaves the descriptor's math type changed. */
int ct_cu_dnn_plan_make(cudnnHandle_t handle, const ct_cu_dnn_conv_problem& p,
                        ct_cu_dnn_conv_descs* d, ct_cu_dnn_plan* plan) {
  plan->count = 0;
  int returned = 0;
  switch (p.direction) {
    case CT_CU_DNN_FORWARD: {
      cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      const cudnnStatus_t status = ct_cu_dnn.cudnnGetConvolutionForwardAlgorithm_v7(
          handle, d->x.get(), d->w.get(), d->conv.get(), d->y.get(),
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perfs);
      if (ct_cu_dnn_refused(status)) return CT_OK;
      const int checked = ct_cu_dnn_check(status, "cudnnGetConvolutionForwardAlgorithm_v7");
      if (checked != CT_OK) return checked;
      ct_cu_dnn_plan_add(handle, p, d, perfs, returned, plan);
      break;
    }
    case CT_CU_DNN_BACKWARD_DATA: {
      cudnnConvolutionBwdDataAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      const cudnnStatus_t status = ct_cu_dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
          handle, d->w.get(), d->y.get(), d->conv.get(), d->x.get(),
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perfs);
      if (ct_cu_dnn_refused(status)) return CT_OK;
      const int checked = ct_cu_dnn_check(status, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      if (checked != CT_OK) return checked;
      ct_cu_dnn_plan_add(handle, p, d, perfs, returned, plan);
      break;
    }
    default: {
      cudnnConvolutionBwdFilterAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      const cudnnStatus_t status = ct_cu_dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          handle, d->x.get(), d->y.get(), d->conv.get(), d->w.get(),
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perfs);
      if (ct_cu_dnn_refused(status)) return CT_OK;
      const int checked = ct_cu_dnn_check(status, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      if (checked != CT_OK) return checked;
      ct_cu_dnn_plan_add(handle, p, d, perfs, returned, plan);
      break;
    }
  }
  return CT_OK;
}

/* ----- the cache: problem -> plan, shared by all threads, bounded ----- */

struct ct_cu_dnn_problem_hash {
  size_t operator()(const ct_cu_dnn_conv_problem& p) const {
    /* FNV-1a over the bytes: the struct is int32 fields only, zeroed before it is filled. */
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&p);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < sizeof p; ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
    return (size_t)h;
  }
};

struct ct_cu_dnn_problem_equal {
  bool operator()(const ct_cu_dnn_conv_problem& a, const ct_cu_dnn_conv_problem& b) const {
    return memcmp(&a, &b, sizeof a) == 0;
  }
};

/* Problems remembered at most; past it the cache starts again empty (a model with more
 * distinct convolutions than this re-asks the heuristics, which take microseconds). */
constexpr size_t ct_cu_dnn_cache_capacity = 4096;

struct ct_cu_dnn_cache {
  std::mutex mutex;
  std::unordered_map<ct_cu_dnn_conv_problem, ct_cu_dnn_plan, ct_cu_dnn_problem_hash,
                     ct_cu_dnn_problem_equal>
      plans;
};

ct_cu_dnn_cache& ct_cu_dnn_plans() {
  static ct_cu_dnn_cache* cache = new ct_cu_dnn_cache; /* never freed, as the handles */
  return *cache;
}

/* The problem's plan: from the cache, or from the heuristics (outside the lock: two threads may
 * both ask for a new problem, and both get the same answer). */
bool ct_cu_dnn_plan_cached(const ct_cu_dnn_conv_problem& p, ct_cu_dnn_plan* plan) {
  ct_cu_dnn_cache& cache = ct_cu_dnn_plans();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const auto found = cache.plans.find(p);
  if (found == cache.plans.end()) return false;
  *plan = found->second;
  return true;
}

int ct_cu_dnn_plan_for(cudnnHandle_t handle, const ct_cu_dnn_conv_problem& p,
                       ct_cu_dnn_conv_descs* d, ct_cu_dnn_plan* plan) {
  if (ct_cu_dnn_plan_cached(p, plan)) return CT_OK;
  const int status = ct_cu_dnn_plan_make(handle, p, d, plan);
  if (status != CT_OK) return status;
  ct_cu_dnn_cache& cache = ct_cu_dnn_plans();
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (cache.plans.size() >= ct_cu_dnn_cache_capacity) cache.plans.clear();
  cache.plans.emplace(p, *plan);
  return CT_OK;
}

/* ----- describing views ----- */

constexpr int64_t ct_cu_dnn_int_max = 2147483647;

/* dims and element strides of a 4-D view as int32, size-1 dims' strides replaced by the extent
 * of the dims inside them (any value addresses the same elements; cuDNN reads the layout from
 * the strides, as torch normalises them). False when a dim is empty, a stride of a longer dim
 * is not positive, two elements share an address, or a size does not fit in int32. With
 * `packed`, also when the view is not compact (a filter). */
bool ct_cu_dnn_view(const ct_tensor* t, bool packed, int32_t dims[4], int32_t strides[4]) {
  int64_t shape[4], step[4];
  ct_pl_nchw(t, shape, step);
  int64_t elements = 1, span = 0;
  for (int d = 0; d < 4; ++d) {
    if (shape[d] <= 0 || shape[d] > ct_cu_dnn_int_max) return false;
    elements *= shape[d];
    if (elements > ct_cu_dnn_int_max) return false;
    if (shape[d] > 1) {
      if (step[d] <= 0 || step[d] > ct_cu_dnn_int_max) return false;
      span += (shape[d] - 1) * step[d];
      if (span > ct_cu_dnn_int_max) return false;
    }
  }
  /* No overlap: ordered by stride, each longer dim's stride is at least the extent of the dims
   * inside it. */
  int order[4] = {0, 1, 2, 3};
  std::sort(order, order + 4,
            [&](int a, int b) { return step[a] != step[b] ? step[a] < step[b] : a > b; });
  int64_t extent = 1;
  for (int k = 0; k < 4; ++k) {
    const int d = order[k];
    if (shape[d] == 1) continue;
    if (step[d] < extent) return false;
    extent = step[d] * shape[d];
  }
  /* Each dim's footprint (stride times extent) must fit in int32 too: cuDNN sizes a tensor by
   * it. */
  int64_t inner = 1;
  for (int d = 3; d >= 0; --d) {
    const int64_t stride = shape[d] == 1 ? inner : step[d];
    if (packed && stride != inner) return false;
    inner = stride * shape[d];
    if (inner > ct_cu_dnn_int_max) return false;
    dims[d] = (int32_t)shape[d];
    strides[d] = (int32_t)stride;
  }
  return true;
}

bool ct_cu_dnn_fits(int64_t v, int64_t lo) {
  return v >= lo && v <= ct_cu_dnn_int_max;
}

}  // namespace

bool ct_cu_dnn_conv_describe(ct_cu_dnn_direction direction, int32_t dtype, int32_t device_id,
                             const ct_tensor* x, const ct_tensor* w, const ct_tensor* y,
                             const int64_t stride[2], const int64_t padding[2],
                             const int64_t dilation[2], int64_t groups,
                             ct_cu_dnn_conv_problem* problem) {
  ct_cu_dnn_conv_problem& p = *problem;
  memset(&p, 0, sizeof p);
  if (dtype != CT_PL_F16 && dtype != CT_PL_F32 && dtype != CT_PL_F64) return false;
  if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4) return false;
  p.direction = direction;
  p.dtype = dtype;
  p.device_id = device_id;
  if (!ct_cu_dnn_view(x, false, p.x_dims, p.x_strides) ||
      !ct_cu_dnn_view(y, false, p.y_dims, p.y_strides)) {
    return false;
  }
  int32_t w_strides[4];
  if (!ct_cu_dnn_view(w, true, p.w_dims, w_strides)) return false;
  if (!ct_cu_dnn_fits(groups, 1)) return false;
  p.groups = (int32_t)groups;
  for (int k = 0; k < 2; ++k) {
    if (!ct_cu_dnn_fits(stride[k], 1) || !ct_cu_dnn_fits(padding[k], 0) ||
        !ct_cu_dnn_fits(dilation[k], 1)) {
      return false;
    }
    p.stride[k] = (int32_t)stride[k];
    p.padding[k] = (int32_t)padding[k];
    p.dilation[k] = (int32_t)dilation[k];
  }
  /* The shapes of cuDNN's forward convolution: x (N, C), w (K, C / groups), y (N, K), and y's
   * extents those of the forward output. */
  if (p.x_dims[0] != p.y_dims[0] || p.w_dims[0] != p.y_dims[1]) return false;
  if (p.x_dims[1] % p.groups != 0 || p.y_dims[1] % p.groups != 0) return false;
  if (p.w_dims[1] != p.x_dims[1] / p.groups) return false;
  for (int k = 0; k < 2; ++k) {
    const int64_t reach = (int64_t)p.x_dims[2 + k] + 2 * (int64_t)p.padding[k] -
                          (int64_t)p.dilation[k] * (p.w_dims[2 + k] - 1) - 1;
    if (reach < 0 || reach / p.stride[k] + 1 != p.y_dims[2 + k]) return false;
  }
  return true;
}

int ct_cu_dnn_conv_workspace(const ct_cu_dnn_conv_problem& problem, uint64_t* bytes, bool* usable) {
  *bytes = 0;
  *usable = false;
  ct_cu_dnn_plan plan;
  if (!ct_cu_dnn_plan_cached(problem, &plan)) { /* the device, a handle and descriptors */
    ct_cu_exec exec;
    int status = ct_cu_exec_for_device(problem.device_id, nullptr, &exec);
    if (status != CT_OK) return status;
    cudnnHandle_t handle;
    status = ct_cu_dnn_handle(problem.device_id, &handle);
    if (status != CT_OK) return status;
    ct_cu_dnn_conv_descs descs;
    bool refused = false;
    status = ct_cu_dnn_conv_descs_set(problem, &descs, &refused);
    if (status != CT_OK || refused) return status;
    status = ct_cu_dnn_plan_for(handle, problem, &descs, &plan);
    if (status != CT_OK) return status;
  }
  *usable = plan.count > 0;
  if (plan.count > 0) *bytes = plan.choices[0].workspace;
  return CT_OK;
}

int ct_cu_dnn_conv_run(const ct_cu_dnn_conv_problem& problem, const ct_cu_exec& exec, void* x,
                       void* w, void* y, void* workspace, uint64_t workspace_size, bool* declined) {
  *declined = true;
  cudnnHandle_t handle;
  int status = ct_cu_dnn_handle(exec.device_id, &handle);
  if (status != CT_OK) return status;
  ct_cu_dnn_conv_descs descs;
  bool refused = false;
  status = ct_cu_dnn_conv_descs_set(problem, &descs, &refused);
  if (status != CT_OK || refused) return status;
  ct_cu_dnn_plan plan;
  status = ct_cu_dnn_plan_for(handle, problem, &descs, &plan);
  if (status != CT_OK) return status;
  /* The best algorithm whose workspace fits: the workspace query may have described compact
   * outputs where the call has strided ones, and so asked for another algorithm's size. */
  const ct_cu_dnn_choice* choice = nullptr;
  for (int32_t k = 0; k < plan.count && !choice; ++k) {
    if (plan.choices[k].workspace <= workspace_size) choice = &plan.choices[k];
  }
  if (!choice) return CT_OK;
  status = descs.conv.set_math(choice->math);
  if (status != CT_OK) return status;
  status = ct_cu_dnn_check(ct_cu_dnn.cudnnSetStream(handle, exec.stream), "cudnnSetStream");
  if (status != CT_OK) return status;
  /* alpha 1, beta 0 (the written tensor is not read); double for float64 data, else float. */
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* one = problem.dtype == CT_PL_F64 ? (const void*)&one_d : (const void*)&one_f;
  const void* zero = problem.dtype == CT_PL_F64 ? (const void*)&zero_d : (const void*)&zero_f;
  void* scratch = choice->workspace > 0 ? workspace : nullptr;
  const size_t scratch_size = (size_t)choice->workspace;
  cudnnStatus_t result;
  const char* what;
  switch (problem.direction) {
    case CT_CU_DNN_FORWARD:
      what = "cudnnConvolutionForward";
      result = ct_cu_dnn.cudnnConvolutionForward(
          handle, one, descs.x.get(), x, descs.w.get(), w, descs.conv.get(),
          (cudnnConvolutionFwdAlgo_t)choice->algo, scratch, scratch_size, zero, descs.y.get(), y);
      break;
    case CT_CU_DNN_BACKWARD_DATA:
      what = "cudnnConvolutionBackwardData";
      result = ct_cu_dnn.cudnnConvolutionBackwardData(
          handle, one, descs.w.get(), w, descs.y.get(), y, descs.conv.get(),
          (cudnnConvolutionBwdDataAlgo_t)choice->algo, scratch, scratch_size, zero, descs.x.get(),
          x);
      break;
    default:
      what = "cudnnConvolutionBackwardFilter";
      result = ct_cu_dnn.cudnnConvolutionBackwardFilter(
          handle, one, descs.x.get(), x, descs.y.get(), y, descs.conv.get(),
          (cudnnConvolutionBwdFilterAlgo_t)choice->algo, scratch, scratch_size, zero, descs.w.get(),
          w);
      break;
  }
  /* cuDNN checks support and alignment (a view starting at an odd element of float16 data)
   * before it launches anything: the caller's kernel then runs instead. */
  if (CUDNN_STATUS_CATEGORY(result) == CUDNN_STATUS_NOT_SUPPORTED ||
      result == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER) {
    return CT_OK;
  }
  *declined = false;
  return ct_cu_dnn_check(result, what);
}
