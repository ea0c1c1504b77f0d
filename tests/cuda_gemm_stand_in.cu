/* cuda_gemm_stand_in.cu - the CUDA plugin's GEMM mapping run on the host, without a GPU, for
 * tests/test_cuda_gemm_mapping.py. cu_matmul.cu's run functions (matmul, matmul_backward, linear)
 * and cu_blaslt.cu's ct_cu_gemm call a stand-in cuBLASLt, installed in the ct_cu_blaslt table,
 * that computes cublasLtMatmul's documented result on host memory: D = alpha op(A) op(B) +
 * beta C (+ the BIAS epilogue's vector along D's rows), column-major with leading dims, batches
 * of matrices a strided offset apart. On the way it checks what cuBLASLt requires or was
 * promised: consistent shapes and transposes, leading dims of at least the rows, C == D, the
 * compute and scale types of each dtype, every pointer aligned as the heuristic's preferences
 * said, the workspace within the preference and 256-byte aligned, float16's reduction scheme,
 * and every element read or written inside the buffers the case allocated.
 *
 * Random calls (1-D to 4-D operands, broadcast batch dims, transposed, padded, offset, reversed
 * and zero-stride views, shared weights, optional and strided biases) run through the plugin's
 * functions and through libctensor's CPU kernels; where the plugin took cuBLASLt the results must
 * agree. Where it chose its own kernel instead (a layout cuBLASLt cannot take), the kernel's
 * launch fails quietly here (no device) and the case is only counted. Prints counts and the
 * failures; exits 1 on any failure. Usage: cuda_gemm_stand_in [cases per dtype]; the variable
 * CT_STAND_IN_VERBOSE=1 prints each case that fell back to the kernel, with its layouts. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include "cu_matmul.cu" /* its run functions live in an anonymous namespace */
#include "cu_vendor.h"

/* ----- what the plugin's other files would define ----- */

ct_cu_blaslt_api ct_cu_blaslt;
ct_cu_dnn_api ct_cu_dnn;
const ct_host_api* ct_cu_host;

namespace {

int failures = 0;
int kernel_launches = 0;
char last_error[1024];

/* Counts of what the stand-in saw. */
struct Counts {
  long heuristics = 0, matmuls = 0, bias = 0, accumulate = 0, batched = 0, compared = 0;
  long transposes[4] = {0, 0, 0, 0}; /* NN, NT, TN, TT */
} seen;

/* Records a failure; prints the first 20. */
void fail(const char* format, ...) {
  if (++failures > 20) return;
  va_list args;
  va_start(args, format);
  printf("FAIL: ");
  vprintf(format, args);
  printf("\n");
  va_end(args);
}

}  // namespace

int ct_cu_error(int status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(last_error, sizeof last_error, format, args);
  va_end(args);
  return status;
}

int ct_cu_blas_check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return CT_OK;
  return ct_cu_error(CT_ERROR_BACKEND, "cuBLASLt: %s failed with %d", what, (int)status);
}

ct_cu_device_guard::~ct_cu_device_guard() {}

int ct_cu_exec_for_call(const ct_kernel_call*, ct_cu_exec* exec) {
  exec->device_id = 0;
  exec->stream = nullptr;
  return CT_OK;
}

/* A hand-written kernel was launched (it fails without a device): the case is not compared. */
int ct_cu_launch_status(const char*) {
  cudaGetLastError();
  ++kernel_launches;
  return CT_OK;
}

unsigned ct_cu_grid(const ct_cu_exec&, int64_t, int) {
  return 1;
}

int32_t ct_cu_multiprocessors(int32_t) {
  return 132;
}

int ct_cu_register(const char*, const ct_pl_type*, int32_t, ct_kernel_run_fn,
                   ct_kernel_workspace_fn, const void*) {
  return CT_OK;
}

namespace {

/* ----- the case's buffers, for bounds checks ----- */

struct Buffer {
  char* base;
  size_t size;
};
std::vector<Buffer> buffers;

void check_inside(const void* p, size_t bytes, const char* what) {
  const char* c = static_cast<const char*>(p);
  for (const Buffer& b : buffers) {
    if (c >= b.base && c + bytes <= b.base + b.size) return;
  }
  fail("%s of %p outside every buffer", what, p);
}

/* ----- the stand-in cuBLASLt ----- */

struct Desc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
};
static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t), "a Desc fits cuBLASLt's space");

struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};

struct Preference {
  uint64_t workspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256}; /* A, B, C, D: cuBLASLt's defaults */
  uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_MASK;
};

Desc* desc_of(cublasLtMatmulDesc_t d) {
  return reinterpret_cast<Desc*>(d);
}
Layout* layout_of(cublasLtMatrixLayout_t l) {
  return reinterpret_cast<Layout*>(l);
}

cublasStatus_t stand_in_create(cublasLtHandle_t* handle) {
  *handle = reinterpret_cast<cublasLtHandle_t>(&seen);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t stand_in_desc_init(cublasLtMatmulDesc_t d, size_t size, cublasComputeType_t compute,
                                  cudaDataType_t scale) {
  if (size < sizeof(Desc)) return CUBLAS_STATUS_ALLOC_FAILED;
  Desc* desc = new (d) Desc;
  desc->compute = compute;
  desc->scale = scale;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t stand_in_desc_create(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                                    cudaDataType_t scale) {
  *d = new cublasLtMatmulDescOpaque_t;
  return stand_in_desc_init(*d, sizeof(cublasLtMatmulDescOpaque_t), compute, scale);
}

cublasStatus_t stand_in_desc_destroy(cublasLtMatmulDesc_t d) {
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

/* Copies an attribute of the documented size. */
template <class T>
cublasStatus_t set_value(T* field, const void* value, size_t size, int attribute) {
  if (size != sizeof(T)) {
    fail("attribute %d set with %zu bytes, its type has %zu", attribute, size, sizeof(T));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  memcpy(field, value, size);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t stand_in_desc_set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attribute,
                                 const void* value, size_t size) {
  Desc* desc = desc_of(d);
  switch (attribute) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return set_value(&desc->trans_a, value, size, attribute);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return set_value(&desc->trans_b, value, size, attribute);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return set_value(&desc->epilogue, value, size, attribute);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return set_value(&desc->bias, value, size, attribute);
    default:
      fail("unexpected matmul descriptor attribute %d", (int)attribute);
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t stand_in_layout_create(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows,
                                      uint64_t cols, int64_t ld) {
  if (ld < 1 || ld < (int64_t)rows) {
    fail("layout %llu x %llu with leading dim %lld", (unsigned long long)rows,
         (unsigned long long)cols, (long long)ld);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  Layout* layout = new Layout;
  layout->type = type;
  layout->rows = rows;
  layout->cols = cols;
  layout->ld = ld;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t stand_in_layout_destroy(cublasLtMatrixLayout_t l) {
  delete layout_of(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t stand_in_layout_set(cublasLtMatrixLayout_t l,
                                   cublasLtMatrixLayoutAttribute_t attribute, const void* value,
                                   size_t size) {
  Layout* layout = layout_of(l);
  if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) {
    return set_value(&layout->batch, value, size, attribute);
  }
  if (attribute == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) {
    const cublasStatus_t status = set_value(&layout->stride, value, size, attribute);
    if (layout->stride < 0) fail("negative batch stride %lld", (long long)layout->stride);
    return status;
  }
  fail("unexpected layout attribute %d", (int)attribute);
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t stand_in_preference_create(cublasLtMatmulPreference_t* p) {
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t stand_in_preference_destroy(cublasLtMatmulPreference_t p) {
  delete reinterpret_cast<Preference*>(p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t stand_in_preference_set(cublasLtMatmulPreference_t p,
                                       cublasLtMatmulPreferenceAttributes_t attribute,
                                       const void* value, size_t size) {
  Preference* preference = reinterpret_cast<Preference*>(p);
  switch (attribute) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return set_value(&preference->workspace, value, size, attribute);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return set_value(
          &preference->alignment[attribute - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], value,
          size, attribute);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
      return set_value(&preference->schemes, value, size, attribute);
    default:
      fail("unexpected preference attribute %d", (int)attribute);
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

size_t type_size(cudaDataType type) {
  return type == CUDA_R_16F ? 2 : type == CUDA_R_32F ? 4 : 8;
}

/* Whether the problem is consistent; its M, N, K (of op(A) M x K, op(B) K x N). */
bool consistent(const Desc* desc, const Layout* a, const Layout* b, const Layout* c,
                const Layout* d, uint64_t* m, uint64_t* n, uint64_t* k) {
  const bool ta = desc->trans_a == CUBLAS_OP_T, tb = desc->trans_b == CUBLAS_OP_T;
  *m = ta ? a->cols : a->rows;
  *k = ta ? a->rows : a->cols;
  *n = tb ? b->rows : b->cols;
  const uint64_t kb = tb ? b->cols : b->rows;
  const bool wide = a->type == CUDA_R_64F;
  const bool ok = *k == kb && *m == d->rows && *n == d->cols && c == d && a->batch == b->batch &&
                  b->batch == d->batch && a->type == b->type && b->type == d->type &&
                  desc->compute == (wide ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F) &&
                  desc->scale == (wide ? CUDA_R_64F : CUDA_R_32F) &&
                  (desc->epilogue != CUBLASLT_EPILOGUE_BIAS || desc->bias);
  if (!ok) {
    fail("inconsistent problem: trans %d %d, A %llux%llu, B %llux%llu, D %llux%llu, batch %d %d %d",
         desc->trans_a, desc->trans_b, (unsigned long long)a->rows, (unsigned long long)a->cols,
         (unsigned long long)b->rows, (unsigned long long)b->cols, (unsigned long long)d->rows,
         (unsigned long long)d->cols, a->batch, b->batch, d->batch);
  }
  return ok;
}

/* One algorithm, which remembers the preferences (alignments, workspace) to check calls by. */
cublasStatus_t stand_in_heuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                                  cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                  cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                  cublasLtMatmulPreference_t p, int requested,
                                  cublasLtMatmulHeuristicResult_t* results, int* count) {
  ++seen.heuristics;
  uint64_t m, n, k;
  if (requested < 1 || !consistent(desc_of(desc), layout_of(a), layout_of(b), layout_of(c),
                                   layout_of(d), &m, &n, &k)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const Preference* preference = reinterpret_cast<const Preference*>(p);
  if (layout_of(a)->type == CUDA_R_16F &&
      preference->schemes != CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) {
    fail("float16 allows split-K partial sums in float16 (reduction schemes %u)",
         preference->schemes);
  }
  memset(results, 0, sizeof *results);
  for (int i = 0; i < 4; ++i) results->algo.data[i] = preference->alignment[i];
  results->algo.data[4] = preference->workspace;
  results->state = CUBLAS_STATUS_SUCCESS;
  *count = 1;
  return CUBLAS_STATUS_SUCCESS;
}

double load(const void* p, cudaDataType type) {
  check_inside(p, type_size(type), "a read");
  if (type == CUDA_R_16F) return __half2float(*static_cast<const __half*>(p));
  if (type == CUDA_R_32F) return *static_cast<const float*>(p);
  return *static_cast<const double*>(p);
}

void store(void* p, cudaDataType type, double v) {
  check_inside(p, type_size(type), "a write");
  if (type == CUDA_R_16F) {
    *static_cast<__half*>(p) = __float2half((float)v);
  } else if (type == CUDA_R_32F) {
    *static_cast<float*>(p) = (float)v;
  } else {
    *static_cast<double*>(p) = v;
  }
}

cublasStatus_t stand_in_matmul(cublasLtHandle_t, cublasLtMatmulDesc_t computeDesc,
                               const void* alpha, const void* a, cublasLtMatrixLayout_t a_layout,
                               const void* b, cublasLtMatrixLayout_t b_layout, const void* beta,
                               const void* c, cublasLtMatrixLayout_t c_layout, void* d,
                               cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo,
                               void* workspace, size_t workspace_size, cudaStream_t) {
  ++seen.matmuls;
  const Desc* desc = desc_of(computeDesc);
  const Layout *la = layout_of(a_layout), *lb = layout_of(b_layout), *ld = layout_of(d_layout);
  uint64_t m, n, k;
  if (!consistent(desc, la, lb, layout_of(c_layout), ld, &m, &n, &k)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const size_t size = type_size(la->type);
  const void* pointers[4] = {a, b, c, d};
  for (int i = 0; i < 4; ++i) {
    if ((uintptr_t)pointers[i] % algo->data[i] != 0 || (uintptr_t)pointers[i] % size != 0) {
      fail("operand %d at %p is not aligned to the preference's %llu bytes", i, pointers[i],
           (unsigned long long)algo->data[i]);
    }
  }
  if (c != d) fail("C is not D");
  if (workspace_size > algo->data[4] || (workspace_size && !workspace) ||
      (uintptr_t)workspace % 256 != 0) {
    fail("workspace of %zu bytes at %p, the preference allowed %llu", workspace_size, workspace,
         (unsigned long long)algo->data[4]);
  }
  const bool wide = la->type == CUDA_R_64F;
  const double scale_a =
      wide ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  const double scale_c =
      wide ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  const bool ta = desc->trans_a == CUBLAS_OP_T, tb = desc->trans_b == CUBLAS_OP_T;
  seen.accumulate += scale_c != 0;
  seen.bias += desc->epilogue == CUBLASLT_EPILOGUE_BIAS;
  seen.batched += ld->batch > 1;
  ++seen.transposes[ta * 2 + tb];
  for (int32_t z = 0; z < ld->batch; ++z) {
    const char* az = static_cast<const char*>(a) + z * la->stride * size;
    const char* bz = static_cast<const char*>(b) + z * lb->stride * size;
    char* dz = static_cast<char*>(d) + z * ld->stride * size;
    std::vector<double> result(m * n);
    for (uint64_t j = 0; j < n; ++j) {
      for (uint64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (uint64_t q = 0; q < k; ++q) {
          const uint64_t ai = ta ? q + i * la->ld : i + q * la->ld;
          const uint64_t bi = tb ? j + q * lb->ld : q + j * lb->ld;
          sum += load(az + ai * size, la->type) * load(bz + bi * size, lb->type);
        }
        double v = scale_a * sum;
        if (scale_c != 0) v += scale_c * load(dz + (i + j * ld->ld) * size, ld->type);
        if (desc->epilogue == CUBLASLT_EPILOGUE_BIAS) {
          v += load(static_cast<const char*>(desc->bias) + i * size, ld->type);
        }
        result[i + j * m] = v;
      }
    }
    for (uint64_t j = 0; j < n; ++j) {
      for (uint64_t i = 0; i < m; ++i) {
        store(dz + (i + j * ld->ld) * size, ld->type, result[i + j * m]);
      }
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* ----- random calls ----- */

std::mt19937_64 generator(12345);

int uniform(int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(generator);
}

ct_pl_type tag;

int64_t element_size() {
  return ct_pl_type_size(tag);
}

/* A tensor view over a buffer of its own. */
struct View {
  ct_tensor t;
  std::vector<int64_t> shape, strides;
  char* buffer = nullptr;
  size_t bytes = 0;
};
std::vector<std::unique_ptr<View>> views;

char* allocate(size_t bytes) {
  char* p = static_cast<char*>(aligned_alloc(256, (bytes + 255) / 256 * 256));
  buffers.push_back({p, bytes});
  return p;
}

/* A random view of `shape`: dims in a random memory order, some padded, a gap before some, an
 * offset; inputs also get zero strides (expanded) and reversed dims. Filled with values in
 * [-1, 1]. */
View* make_view(const std::vector<int64_t>& shape, bool input) {
  views.push_back(std::make_unique<View>());
  View* v = views.back().get();
  v->shape = shape;
  const int ndim = (int)shape.size();
  std::vector<int> order(ndim);
  for (int i = 0; i < ndim; ++i) order[i] = i;
  if (uniform(0, 2) == 0) {
    std::shuffle(order.begin(), order.end(), generator);
  } else if (ndim >= 2 && uniform(0, 1)) {
    std::swap(order[ndim - 1], order[ndim - 2]);
  }
  v->strides.assign(ndim, 0);
  int64_t step = 1;
  for (int q = ndim - 1; q >= 0; --q) {
    const int d = order[q];
    const int mode = uniform(0, 9);
    if (input && mode == 0 && shape[d] > 1) continue; /* stride 0 */
    if (mode == 1) step *= uniform(1, 3);             /* a gap before this dim */
    v->strides[d] = input && mode == 3 ? -step : step;
    step *= shape[d] + (mode == 2 ? uniform(1, 3) : 0);
  }
  int64_t span = 1, start = 0;
  for (int d = 0; d < ndim; ++d) {
    const int64_t reach = (shape[d] > 0 ? shape[d] - 1 : 0) * v->strides[d];
    span += reach < 0 ? -reach : reach;
    if (reach < 0) start -= reach;
  }
  const int64_t offset = (uniform(0, 3) == 0 ? uniform(1, 9) : 0) + start;
  v->bytes = (size_t)(span + offset + 8) * element_size();
  v->buffer = allocate(v->bytes);
  for (size_t i = 0; i < v->bytes / element_size(); ++i) {
    const double x = std::uniform_real_distribution<double>(-1, 1)(generator);
    char* p = v->buffer + i * element_size();
    if (tag == CT_PL_F16) {
      *reinterpret_cast<__half*>(p) = __float2half((float)x);
    } else if (tag == CT_PL_F32) {
      *reinterpret_cast<float*>(p) = (float)x;
    } else {
      *reinterpret_cast<double*>(p) = x;
    }
  }
  v->t.data = v->buffer;
  v->t.device = {CT_DEVICE_CPU, 0};
  v->t.ndim = ndim;
  v->t.dtype = ct_pl_dtype(tag);
  v->t.shape = v->shape.data();
  v->t.strides = v->strides.data();
  v->t.byte_offset = (uint64_t)offset * element_size();
  return v;
}

/* A view with `like`'s layout over a buffer of its own filled with 0x7f bytes (a NaN in
 * float16, huge values otherwise), which the run must overwrite. */
View* same_layout(const View* like) {
  views.push_back(std::make_unique<View>(*like));
  View* v = views.back().get();
  v->buffer = allocate(v->bytes);
  memset(v->buffer, 0x7f, v->bytes);
  v->t.data = v->buffer;
  v->t.shape = v->shape.data();
  v->t.strides = v->strides.data();
  return v;
}

double value_at(const View* v, const std::vector<int64_t>& index) {
  int64_t e = 0;
  for (size_t d = 0; d < index.size(); ++d) e += index[d] * v->strides[d];
  const char* p = v->buffer + v->t.byte_offset + e * element_size();
  if (tag == CT_PL_F16) return __half2float(*reinterpret_cast<const __half*>(p));
  if (tag == CT_PL_F32) return *reinterpret_cast<const float*>(p);
  return *reinterpret_cast<const double*>(p);
}

int64_t elements(const View* v) {
  int64_t count = 1;
  for (int64_t e : v->shape) count *= e;
  return count;
}

/* Whether the run wrote `v` (its first element is no longer the 0x7f filling). */
bool written(const View* v) {
  if (elements(v) == 0) return false;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(v->buffer + v->t.byte_offset);
  for (int64_t i = 0; i < element_size(); ++i) {
    if (p[i] != 0x7f) return true;
  }
  return false;
}

/* got against the CPU's result: both round the same exact products' sums once, in float
 * (float16, float32) or double, in different orders. */
void compare(const View* got, const View* want, const char* what) {
  const double tolerance = tag == CT_PL_F16 ? 4e-3 : tag == CT_PL_F32 ? 2e-5 : 1e-12;
  std::vector<int64_t> index(want->shape.size(), 0);
  for (int64_t i = 0; i < elements(want); ++i) {
    int64_t rest = i;
    for (int d = (int)index.size() - 1; d >= 0; --d) {
      index[d] = rest % want->shape[d];
      rest /= want->shape[d];
    }
    const double g = value_at(got, index), w = value_at(want, index);
    ++seen.compared;
    if (!(fabs(g - w) <= tolerance * (1 + 8 * fabs(w)))) {
      fail("%s: element %lld is %g, the CPU's %g", what, (long long)i, g, w);
      return;
    }
  }
}

const ct_op* op_named(const char* name) {
  const ct_op* op = nullptr;
  if (ct_op_find(name, &op) != CT_OK) fail("no op %s", name);
  return op;
}

/* Runs `name` on the CPU with the workspace it asks for. */
int run_cpu(const char* name, const std::vector<const ct_tensor*>& in,
            const std::vector<const ct_tensor*>& out) {
  const ct_op* op = op_named(name);
  uint64_t bytes = 0, alignment = 0;
  int status = ct_op_workspace(op, in.data(), (int32_t)in.size(), out.data(), (int32_t)out.size(),
                               nullptr, 0, &bytes, &alignment);
  if (status != CT_OK) return status;
  void* workspace = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  ct_context context = {};
  context.struct_size = sizeof context;
  context.workspace = workspace;
  context.workspace_size = bytes;
  status = ct_op_run(op, in.data(), (int32_t)in.size(), out.data(), (int32_t)out.size(), nullptr, 0,
                     &context);
  free(workspace);
  return status;
}

alignas(256) char plugin_workspace[8 << 20];

/* Runs a plugin run function on these tensors, with the workspace (most calls) or none. */
int run_plugin(ct_kernel_run_fn run, const ct_cu_matmul_entry* entry,
               const std::vector<const ct_tensor*>& in, const std::vector<const ct_tensor*>& out) {
  ct_kernel_call call = {};
  call.struct_size = sizeof call;
  call.inputs = in.data();
  call.num_inputs = (int32_t)in.size();
  call.outputs = out.data();
  call.num_outputs = (int32_t)out.size();
  call.kernel_data = const_cast<ct_cu_matmul_entry*>(entry);
  const bool with_workspace = uniform(0, 4) != 0;
  call.workspace = with_workspace ? plugin_workspace : nullptr;
  call.workspace_size = with_workspace ? sizeof plugin_workspace : 0;
  const int status = run(&call);
  if (status != CT_OK) fail("the plugin's run failed: %s", last_error);
  return status;
}

/* The last `ndim` of `full`, each extent 1 (broadcast) a quarter of the time. */
std::vector<int64_t> batch_dims(int ndim, const std::vector<int64_t>& full) {
  std::vector<int64_t> dims(full.end() - ndim, full.end());
  for (int64_t& e : dims) {
    if (uniform(0, 3) == 0) e = 1;
  }
  return dims;
}

void print_views(const char* what) {
  printf("kernel: %s;", what);
  for (const auto& v : views) {
    printf(" [");
    for (size_t d = 0; d < v->shape.size(); ++d) {
      printf("%s%lld:%lld", d ? " " : "", (long long)v->shape[d], (long long)v->strides[d]);
    }
    printf(" +%lld]", (long long)(v->t.byte_offset / element_size()));
  }
  printf("\n");
}

/* One random call of matmul (kind 0), matmul_backward (1) or linear (2). Returns whether the
 * plugin ran cuBLASLt for all of it. */
template <ct_pl_type Tag>
void one_case(int kind, long* on_blaslt, long* on_kernel) {
  static const ct_cu_matmul_entry entry = {Tag, &ct_cu_matmul_launch<Tag>, ct_cu_mmgrad_of<Tag>()};
  const int64_t m = uniform(1, 3) == 1 ? 1 : uniform(2, 9);
  const int64_t n = uniform(1, 3) == 1 ? 1 : uniform(2, 9);
  const int64_t k = uniform(0, 20) == 0 ? 0 : (uniform(1, 4) == 1 ? 1 : uniform(2, 12));
  const std::vector<int64_t> full = {uniform(2, 3), uniform(2, 4), uniform(2, 3)};
  const int launches = kernel_launches;
  const long matmuls = seen.matmuls;
  char what[256];
  if (kind == 2) {
    const int xd = uniform(1, 4);
    std::vector<int64_t> xs(full.end() - std::max(xd - 2, 0), full.end());
    if (xd >= 2) xs.push_back(m);
    xs.push_back(k);
    View* x = make_view(xs, true);
    View* w = make_view({n, k}, true);
    View* bias = uniform(0, 3) != 0 ? make_view({n}, true) : nullptr;
    std::vector<int64_t> os = xs;
    os.back() = n;
    View* want = make_view(os, false);
    View* got = same_layout(want);
    snprintf(what, sizeof what, "linear, x %dD, m %lld n %lld k %lld, bias %d", xd, (long long)m,
             (long long)n, (long long)k, bias != nullptr);
    const std::vector<const ct_tensor*> in = {&x->t, &w->t, bias ? &bias->t : nullptr};
    if (run_cpu("linear", in, {&want->t}) != CT_OK) {
      fail("%s: the CPU's linear failed: %s", what, ct_last_error());
    } else if (run_plugin(ct_cu_linear_run, &entry, in, {&got->t}) == CT_OK &&
               kernel_launches == launches) {
      compare(got, want, what);
    }
  } else {
    const int ad = uniform(1, 4), bd = uniform(1, 4);
    std::vector<int64_t> as = ad > 2 ? batch_dims(ad - 2, full) : std::vector<int64_t>();
    std::vector<int64_t> bs = bd > 2 ? batch_dims(bd - 2, full) : std::vector<int64_t>();
    if (ad >= 2) as.push_back(m);
    as.push_back(k);
    bs.push_back(k);
    if (bd >= 2) bs.push_back(n);
    View* a = make_view(as, true);
    View* b = make_view(bs, true);
    const ct_tensor* operands[2] = {&a->t, &b->t};
    ct_tensor_info info;
    int32_t count = 0;
    if (ct_op_infer(op_named("matmul"), operands, 2, nullptr, 0, &info, 1, &count) != CT_OK) {
      fail("matmul's infer failed: %s", ct_last_error());
      return;
    }
    const std::vector<int64_t> os(info.shape, info.shape + info.ndim);
    snprintf(what, sizeof what, "%s, a %dD b %dD, m %lld n %lld k %lld",
             kind == 0 ? "matmul" : "matmul_backward", ad, bd, (long long)m, (long long)n,
             (long long)k);
    if (kind == 0) {
      View* want = make_view(os, false);
      View* got = same_layout(want);
      if (run_cpu("matmul", {&a->t, &b->t}, {&want->t}) != CT_OK) {
        fail("%s: the CPU's matmul failed: %s", what, ct_last_error());
      } else if (run_plugin(ct_cu_matmul_run, &entry, {&a->t, &b->t}, {&got->t}) == CT_OK &&
                 kernel_launches == launches) {
        compare(got, want, what);
      }
    } else {
      View* g = make_view(os, true);
      View* want1 = make_view(as, false);
      View* want2 = make_view(bs, false);
      View* got1 = same_layout(want1);
      View* got2 = same_layout(want2);
      const std::vector<const ct_tensor*> in = {&g->t, &a->t, &b->t};
      if (run_cpu("matmul_backward", in, {&want1->t, &want2->t}) != CT_OK) {
        fail("%s: the CPU's matmul_backward failed: %s", what, ct_last_error());
      } else if (run_plugin(ct_cu_matmul_backward_run, &entry, in, {&got1->t, &got2->t}) == CT_OK) {
        /* A cotangent the kernel was to write (it cannot here) keeps its filling. */
        char cotangent[300];
        snprintf(cotangent, sizeof cotangent, "%s: grad_x1", what);
        if (written(got1)) compare(got1, want1, cotangent);
        snprintf(cotangent, sizeof cotangent, "%s: grad_x2", what);
        if (written(got2)) compare(got2, want2, cotangent);
      }
    }
  }
  if (seen.matmuls != matmuls) ++*on_blaslt;
  if (kernel_launches != launches) {
    ++*on_kernel;
    if (getenv("CT_STAND_IN_VERBOSE")) print_views(what);
  }
}

template <ct_pl_type Tag>
void cases(int count, const char* name) {
  tag = Tag;
  long on_blaslt = 0, on_kernel = 0;
  for (int c = 0; c < count; ++c) {
    one_case<Tag>(c % 3, &on_blaslt, &on_kernel);
    views.clear();
    for (const Buffer& b : buffers) free(b.base);
    buffers.clear();
  }
  printf("%s: %d cases, %ld on cuBLASLt, %ld on the kernel\n", name, count, on_blaslt, on_kernel);
}

/* A problem run twice asks the heuristic once: the second call finds the cached plan. */
void repeat_check() {
  tag = CT_PL_F32;
  static const ct_cu_matmul_entry entry = {CT_PL_F32, &ct_cu_matmul_launch<CT_PL_F32>,
                                           ct_cu_mmgrad_of<CT_PL_F32>()};
  std::vector<View*> made;
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{37, 29}, {29, 31}, {37, 31}}) {
    views.push_back(std::make_unique<View>());
    View* v = views.back().get();
    v->shape = shape;
    v->bytes = (size_t)(shape[0] * shape[1]) * element_size();
    v->buffer = allocate(v->bytes);
    memset(v->buffer, 0, v->bytes);
    v->t = {v->buffer, {CT_DEVICE_CPU, 0}, 2, ct_pl_dtype(tag), v->shape.data(), nullptr, 0};
    made.push_back(v);
  }
  const long before = seen.heuristics;
  for (int i = 0; i < 2; ++i) {
    run_plugin(ct_cu_matmul_run, &entry, {&made[0]->t, &made[1]->t}, {&made[2]->t});
  }
  printf("repeated problem: %ld heuristic calls\n", seen.heuristics - before);
  if (seen.heuristics - before != 1) fail("a repeated problem asked the heuristic again");
  views.clear();
  for (const Buffer& b : buffers) free(b.base);
  buffers.clear();
}

}  // namespace

int main(int argc, char** argv) {
  ct_cu_blaslt.cublasLtCreate = stand_in_create;
  ct_cu_blaslt.cublasLtMatmulDescCreate = stand_in_desc_create;
  ct_cu_blaslt.cublasLtMatmulDescInit_internal = stand_in_desc_init;
  ct_cu_blaslt.cublasLtMatmulDescDestroy = stand_in_desc_destroy;
  ct_cu_blaslt.cublasLtMatmulDescSetAttribute = stand_in_desc_set;
  ct_cu_blaslt.cublasLtMatrixLayoutCreate = stand_in_layout_create;
  ct_cu_blaslt.cublasLtMatrixLayoutDestroy = stand_in_layout_destroy;
  ct_cu_blaslt.cublasLtMatrixLayoutSetAttribute = stand_in_layout_set;
  ct_cu_blaslt.cublasLtMatmulPreferenceCreate = stand_in_preference_create;
  ct_cu_blaslt.cublasLtMatmulPreferenceDestroy = stand_in_preference_destroy;
  ct_cu_blaslt.cublasLtMatmulPreferenceSetAttribute = stand_in_preference_set;
  ct_cu_blaslt.cublasLtMatmulAlgoGetHeuristic = stand_in_heuristic;
  ct_cu_blaslt.cublasLtMatmul = stand_in_matmul;
  const int count = argc > 1 ? atoi(argv[1]) : 900;
  cases<CT_PL_F32>(count, "float32");
  cases<CT_PL_F64>(count, "float64");
  cases<CT_PL_F16>(count, "float16");
  repeat_check();
  printf(
      "heuristics %ld, matmuls %ld, with bias %ld, accumulating %ld, batched %ld, "
      "NN %ld NT %ld TN %ld TT %ld, elements compared %ld\n",
      seen.heuristics, seen.matmuls, seen.bias, seen.accumulate, seen.batched, seen.transposes[0],
      seen.transposes[1], seen.transposes[2], seen.transposes[3], seen.compared);
  printf("failures %d\n", failures);
  return failures ? 1 : 0;
}
