/*
 * example_plugin.c - an out-of-tree ctensor backend plugin for the CPU, backend name "example".
 *
 *   cc -shared -fPIC -O2 -o libctensor_example.so example_plugin.c $(pkg-config --cflags ctensor)
 *
 * It includes only the installed header ctensor_plugin.h and does not link libctensor: everything
 * it needs from the host comes through the ct_host_api table handed to ct_plugin_init. It
 * registers, for float32, float64 and int32:
 *
 *   add, multiply   elementwise with broadcasting (int32 wraps around, as NumPy)
 *   relu            max(x, 0); NaN stays NaN, -0.0 becomes 0.0 (as the built-in kernel)
 *   relu_backward   (float32, float64) relu's gradient from its result: grad_out where
 *                   out > 0 (or NaN), else 0, as relu's gradient entry asks
 *   sum             over the `axis` attribute (all axes when None), keepdims either way; asks
 *                   for a workspace of one float64/int64 accumulator per output element
 *   nonzero         dynamic: one int64 index array per dimension, each asked once from the
 *                   caller's allocator
 *
 * Built with -DCT_EXAMPLE_PLANT_FAULTS it becomes the deliberately broken plugin
 * "example-broken", with exactly four planted faults for the conformance suite to find:
 *   (a) add on int32 returns x1 + x2 + 1 (a wrong result for one dtype of one op);
 *   (b) relu on float32 writes one element past the end of its output;
 *   (c) nonzero on float64 asks the allocator for an extra buffer (output index ndim) that it
 *       never hands back as an output;
 *   (d) relu_backward on float64 passes grad_out everywhere (the mask forgotten): a backward
 *       kernel that disagrees with its own forward, which relu's gradient check catches.
 *
 * Any build also plants one fault of a class vendors really get wrong when the environment
 * variable CT_EXAMPLE_FAULT names it at load time (ct_plugin_init reads it):
 *   size         add computes x1 alone beyond its first 1024 elements (a blocked loop's
 *                remainder wrong only for large tensors);
 *   accumulation sum on float32 rounds its accumulator to float after every addition (a
 *                running float32 sum: fine for short lanes, drifts over long ones);
 *   attribute    sum with keepdims and an axis other than the last adds 1 to every result;
 *   race         relu computes into one static scratch buffer shared by every call, then
 *                copies it out after a short pause (overlapping calls mix their results);
 *   allocator    nonzero ignores the allocator's failure and writes where it was pointed;
 *   message      nonzero returns its allocator's failure status without a message.
 * tests/test_conformance_faults.py checks the conformance suite catches each.
 */
/* nanosleep, the race fault's pause, is POSIX rather than ISO C. */
#define _POSIX_C_SOURCE 200809L

#include <ctensor_plugin.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef CT_EXAMPLE_PLANT_FAULTS
#define EXAMPLE_NAME "example-broken"
#define EXAMPLE_VERSION "1.0.0+planted-faults"
#else
#define EXAMPLE_NAME "example"
#define EXAMPLE_VERSION "1.0.0"
#endif

/* The host's table, kept for set_error (valid for the whole process). */
static const ct_host_api* example_host = NULL;

/* The fault CT_EXAMPLE_FAULT selects (read once, by ct_plugin_init). */
typedef enum example_fault {
  EXAMPLE_FAULT_NONE,
  EXAMPLE_FAULT_SIZE,
  EXAMPLE_FAULT_ACCUMULATION,
  EXAMPLE_FAULT_ATTRIBUTE,
  EXAMPLE_FAULT_RACE,
  EXAMPLE_FAULT_ALLOCATOR,
  EXAMPLE_FAULT_MESSAGE
} example_fault;
static example_fault example_planted = EXAMPLE_FAULT_NONE;

static example_fault example_fault_named(const char* name) {
  static const char* const names[] = {"",     "size",      "accumulation", "attribute",
                                      "race", "allocator", "message"};
  if (!name) return EXAMPLE_FAULT_NONE;
  for (int k = 1; k < (int)(sizeof names / sizeof names[0]); ++k) {
    if (strcmp(name, names[k]) == 0) return (example_fault)k;
  }
  return EXAMPLE_FAULT_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * Walking tensors: byte strides aligned to an iteration shape (broadcast dims get stride 0)
 * ------------------------------------------------------------------------------------------- */

static int64_t example_element_size(ct_dtype dtype) {
  return dtype.bits / 8;
}

/* Stride of dim k in elements, NULL strides meaning compact row-major. */
static int64_t example_stride(const ct_tensor* t, int32_t k) {
  if (t->strides) return t->strides[k];
  int64_t stride = 1;
  for (int32_t j = t->ndim - 1; j > k; --j) stride *= t->shape[j];
  return stride;
}

static char* example_base(const ct_tensor* t) {
  return (char*)t->data + t->byte_offset;
}

/* Byte steps of t along the `ndim` dims of `shape`, t's dims aligned to the right. */
static void example_byte_steps(const ct_tensor* t, int32_t ndim, const int64_t* shape,
                               int64_t* steps) {
  const int64_t size = example_element_size(t->dtype);
  for (int32_t k = 0; k < ndim; ++k) {
    const int32_t j = k - (ndim - t->ndim);
    steps[k] = (j < 0 || t->shape[j] != shape[k]) ? 0 : example_stride(t, j) * size;
  }
}

/* Advances a row-major multi-index over `shape`, moving up to three pointers. */
static void example_next(int32_t ndim, const int64_t* shape, int64_t* index, char** p,
                         const int64_t (*steps)[CT_MAX_NDIM], int32_t count) {
  for (int32_t k = ndim - 1; k >= 0; --k) {
    if (++index[k] < shape[k]) {
      for (int32_t t = 0; t < count; ++t) p[t] += steps[t][k];
      return;
    }
    index[k] = 0;
    for (int32_t t = 0; t < count; ++t) p[t] -= steps[t][k] * (shape[k] - 1);
  }
}

static int64_t example_numel(int32_t ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int32_t k = 0; k < ndim; ++k) n *= shape[k];
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise: add, multiply, relu
 * ------------------------------------------------------------------------------------------- */

typedef void (*example_binary_fn)(const char* a, const char* b, char* out);
typedef void (*example_unary_fn)(const char* x, char* out);

#define EXAMPLE_BINARY(NAME, T, EXPR)                            \
  static void NAME(const char* a_, const char* b_, char* out_) { \
    T a, b, out;                                                 \
    memcpy(&a, a_, sizeof a);                                    \
    memcpy(&b, b_, sizeof b);                                    \
    out = (EXPR);                                                \
    memcpy(out_, &out, sizeof out);                              \
  }

EXAMPLE_BINARY(example_add_f32, float, a + b)
EXAMPLE_BINARY(example_add_f64, double, a + b)
#ifdef CT_EXAMPLE_PLANT_FAULTS
/* Planted fault (a): off by one. */
EXAMPLE_BINARY(example_add_i32, int32_t, (int32_t)((uint32_t)a + (uint32_t)b + 1u))
#else
EXAMPLE_BINARY(example_add_i32, int32_t, (int32_t)((uint32_t)a + (uint32_t)b))
#endif
EXAMPLE_BINARY(example_multiply_f32, float, a* b)
EXAMPLE_BINARY(example_multiply_f64, double, a* b)
EXAMPLE_BINARY(example_multiply_i32, int32_t, (int32_t)((uint32_t)a * (uint32_t)b))

EXAMPLE_BINARY(example_relu_backward_f32, float, (b > 0 || b != b) ? a : 0.0f)
#ifdef CT_EXAMPLE_PLANT_FAULTS
/* Planted fault (d): relu's derivative taken as 1 everywhere. */
EXAMPLE_BINARY(example_relu_backward_f64, double, a)
#else
EXAMPLE_BINARY(example_relu_backward_f64, double, (b > 0 || b != b) ? a : 0.0)
#endif

#define EXAMPLE_RELU(NAME, T)                    \
  static void NAME(const char* x_, char* out_) { \
    T x, out;                                    \
    memcpy(&x, x_, sizeof x);                    \
    out = (x > 0 || x != x) ? x : (T)0;          \
    memcpy(out_, &out, sizeof out);              \
  }

EXAMPLE_RELU(example_relu_f32, float)
EXAMPLE_RELU(example_relu_f64, double)
EXAMPLE_RELU(example_relu_i32, int32_t)

static int example_run_binary(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  int64_t steps[3][CT_MAX_NDIM];
  example_byte_steps(call->inputs[0], out->ndim, out->shape, steps[0]);
  example_byte_steps(call->inputs[1], out->ndim, out->shape, steps[1]);
  example_byte_steps(out, out->ndim, out->shape, steps[2]);
  char* p[3] = {example_base(call->inputs[0]), example_base(call->inputs[1]), example_base(out)};
  int64_t index[CT_MAX_NDIM] = {0};
  const example_binary_fn fn = *(const example_binary_fn*)call->kernel_data;
  const int64_t n = example_numel(out->ndim, out->shape);
  const int size_fault = example_planted == EXAMPLE_FAULT_SIZE &&
                         (fn == example_add_f32 || fn == example_add_f64 || fn == example_add_i32);
  const int64_t size = example_element_size(out->dtype);
  for (int64_t i = 0; i < n; ++i) {
    if (size_fault && i >= 1024) {
      memcpy(p[2], p[0], (size_t)size); /* planted: x1 alone beyond 1024 elements */
    } else {
      fn(p[0], p[1], p[2]);
    }
    example_next(out->ndim, out->shape, index, p, (const int64_t (*)[CT_MAX_NDIM])steps, 3);
  }
  return CT_OK;
}

#ifdef CT_EXAMPLE_PLANT_FAULTS
/* Planted fault (b): one element written just past the highest-addressed element of `out`. */
static void example_write_past(const ct_tensor* out) {
  const int64_t size = example_element_size(out->dtype);
  int64_t last = 0; /* byte offset of the highest-addressed element */
  for (int32_t k = 0; k < out->ndim; ++k) {
    const int64_t step = example_stride(out, k) * size;
    if (step > 0) last += step * (out->shape[k] - 1);
  }
  memset(example_base(out) + last + size, 0x7f, (size_t)size);
}
#endif

/* Planted race: every call's results go through this one buffer. */
static char example_scratch[1 << 20];

/* relu through example_scratch: computed into it, a pause, then copied out (the pause widens
 * the window in which an overlapping call overwrites the scratch). */
static int example_run_unary_shared(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  const int64_t size = example_element_size(out->dtype);
  const int64_t n = example_numel(out->ndim, out->shape);
  if (n * size > (int64_t)sizeof example_scratch) return CT_OK; /* too large: not planted */
  int64_t steps[2][CT_MAX_NDIM];
  example_byte_steps(call->inputs[0], out->ndim, out->shape, steps[0]);
  example_byte_steps(out, out->ndim, out->shape, steps[1]);
  const example_unary_fn fn = *(const example_unary_fn*)call->kernel_data;
  char* p[2] = {example_base(call->inputs[0]), example_base(out)};
  int64_t index[CT_MAX_NDIM] = {0};
  for (int64_t i = 0; i < n; ++i) {
    fn(p[0], example_scratch + i * size);
    example_next(out->ndim, out->shape, index, p, (const int64_t (*)[CT_MAX_NDIM])steps, 1);
  }
  const struct timespec pause = {0, 2000000};
  nanosleep(&pause, NULL);
  p[1] = example_base(out);
  memset(index, 0, sizeof index);
  const int64_t (*out_steps)[CT_MAX_NDIM] = (const int64_t (*)[CT_MAX_NDIM]) & steps[1];
  for (int64_t i = 0; i < n; ++i) {
    memcpy(p[1], example_scratch + i * size, (size_t)size);
    example_next(out->ndim, out->shape, index, p + 1, out_steps, 1);
  }
  return CT_OK;
}

static int example_run_unary(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  if (example_planted == EXAMPLE_FAULT_RACE && example_numel(out->ndim, out->shape) > 0) {
    return example_run_unary_shared(call);
  }
  int64_t steps[2][CT_MAX_NDIM];
  example_byte_steps(call->inputs[0], out->ndim, out->shape, steps[0]);
  example_byte_steps(out, out->ndim, out->shape, steps[1]);
  char* p[2] = {example_base(call->inputs[0]), example_base(out)};
  int64_t index[CT_MAX_NDIM] = {0};
  const example_unary_fn fn = *(const example_unary_fn*)call->kernel_data;
  const int64_t n = example_numel(out->ndim, out->shape);
  for (int64_t i = 0; i < n; ++i) {
    fn(p[0], p[1]);
    example_next(out->ndim, out->shape, index, p, (const int64_t (*)[CT_MAX_NDIM])steps, 2);
  }
#ifdef CT_EXAMPLE_PLANT_FAULTS
  if (fn == example_relu_f32) example_write_past(out);
#endif
  return CT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * sum over axes, with a workspace of accumulators
 * ------------------------------------------------------------------------------------------- */

/* Which dims of x the `axis` attribute reduces (the host validated and resolved it). */
static void example_reduced_dims(const ct_kernel_call* call, int32_t ndim, int* reduced) {
  const ct_attr_value* axis = &call->attrs[0];
  const int all = axis->type == CT_ATTR_NONE;
  for (int32_t k = 0; k < ndim; ++k) reduced[k] = all;
  if (all) return;
  for (int64_t i = 0; i < axis->count; ++i) {
    int64_t k = axis->value.ints[i];
    if (k < 0) k += ndim;
    if (k >= 0 && k < ndim) reduced[k] = 1;
  }
}

static int example_sum_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  const ct_tensor* out = call->outputs[0];
  *bytes = (uint64_t)example_numel(out->ndim, out->shape) * 8u;
  *alignment = 8;
  return CT_OK;
}

static int example_run_sum(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int64_t n_out = example_numel(out->ndim, out->shape);
  if (call->workspace_size < (uint64_t)n_out * 8u) {
    return example_host->set_error(CT_ERROR_WORKSPACE_TOO_SMALL,
                                   "example sum: the workspace is too small");
  }
  int reduced[CT_MAX_NDIM];
  example_reduced_dims(call, x->ndim, reduced);
  /* Accumulator index steps along x's dims: compact over the kept dims. */
  int64_t acc_steps[CT_MAX_NDIM];
  int64_t stride = 1;
  for (int32_t k = x->ndim - 1; k >= 0; --k) {
    acc_steps[k] = reduced[k] ? 0 : stride;
    if (!reduced[k]) stride *= x->shape[k];
  }
  const int is_int = x->dtype.code == CT_DTYPE_INT;
  double* acc_f = (double*)call->workspace;
  int64_t* acc_i = (int64_t*)call->workspace;
  for (int64_t j = 0; j < n_out; ++j) {
    if (is_int) {
      acc_i[j] = 0;
    } else {
      acc_f[j] = 0.0;
    }
  }
  int64_t steps[1][CT_MAX_NDIM];
  example_byte_steps(x, x->ndim, x->shape, steps[0]);
  char* p[1] = {example_base(x)};
  int64_t index[CT_MAX_NDIM] = {0};
  const int64_t n = example_numel(x->ndim, x->shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = 0;
    for (int32_t k = 0; k < x->ndim; ++k) a += index[k] * acc_steps[k];
    if (x->dtype.bits == 32 && !is_int) {
      float v;
      memcpy(&v, p[0], sizeof v);
      acc_f[a] += v;
      /* planted: a float32 running sum */
      if (example_planted == EXAMPLE_FAULT_ACCUMULATION) acc_f[a] = (float)acc_f[a];
    } else if (is_int) {
      int32_t v;
      memcpy(&v, p[0], sizeof v);
      acc_i[a] = (int64_t)((uint64_t)acc_i[a] + (uint64_t)(int64_t)v);
    } else {
      double v;
      memcpy(&v, p[0], sizeof v);
      acc_f[a] += v;
    }
    example_next(x->ndim, x->shape, index, p, (const int64_t (*)[CT_MAX_NDIM])steps, 1);
  }
  /* planted: keepdims with a reduced axis other than the last goes wrong */
  int shifted = 0;
  if (example_planted == EXAMPLE_FAULT_ATTRIBUTE && call->attrs[0].type != CT_ATTR_NONE &&
      call->attrs[1].value.b) {
    for (int32_t k = 0; k + 1 < x->ndim; ++k) shifted |= reduced[k];
  }
  for (int64_t j = 0; j < n_out && shifted; ++j) {
    if (is_int) {
      acc_i[j] += 1;
    } else {
      acc_f[j] += 1.0;
    }
  }
  /* Accumulator j is the j-th output element in row-major order. */
  int64_t out_steps[1][CT_MAX_NDIM];
  example_byte_steps(out, out->ndim, out->shape, out_steps[0]);
  char* q[1] = {example_base(out)};
  int64_t out_index[CT_MAX_NDIM] = {0};
  for (int64_t j = 0; j < n_out; ++j) {
    if (is_int) {
      memcpy(q[0], &acc_i[j], sizeof acc_i[j]);
    } else if (out->dtype.bits == 32) {
      const float v = (float)acc_f[j];
      memcpy(q[0], &v, sizeof v);
    } else {
      memcpy(q[0], &acc_f[j], sizeof acc_f[j]);
    }
    example_next(out->ndim, out->shape, out_index, q, (const int64_t (*)[CT_MAX_NDIM])out_steps, 1);
  }
  return CT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * nonzero: dynamic outputs through the caller's allocator
 * ------------------------------------------------------------------------------------------- */

static int example_is_nonzero(const char* p, ct_dtype dtype) {
  if (dtype.code == CT_DTYPE_INT) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v != 0;
  }
  if (dtype.bits == 32) {
    float v;
    memcpy(&v, p, sizeof v);
    return v != 0.0f; /* NaN counts, -0.0 does not */
  }
  double v;
  memcpy(&v, p, sizeof v);
  return v != 0.0;
}

static int example_run_nonzero(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_allocator* allocator = call->allocator;
  const int32_t ndim = x->ndim;
  const int64_t n = example_numel(ndim, x->shape);
  int64_t steps[1][CT_MAX_NDIM];
  example_byte_steps(x, ndim, x->shape, steps[0]);

  int64_t count = 0;
  char* p[1] = {example_base(x)};
  int64_t index[CT_MAX_NDIM] = {0};
  for (int64_t i = 0; i < n; ++i) {
    count += example_is_nonzero(p[0], x->dtype);
    example_next(ndim, x->shape, index, p, (const int64_t (*)[CT_MAX_NDIM])steps, 1);
  }

  int64_t* columns[CT_MAX_NDIM];
  ct_tensor_info info;
  memset(&info, 0, sizeof info);
  info.dtype.code = CT_DTYPE_INT;
  info.dtype.bits = 64;
  info.dtype.lanes = 1;
  info.ndim = 1;
  info.shape[0] = count;
  for (int32_t k = 0; k < ndim; ++k) {
    void* data = NULL;
    const int status = allocator->allocate(allocator->user_data, k, &info, x->device.device_type,
                                           x->device.device_id, &data);
    if (status != CT_OK && example_planted == EXAMPLE_FAULT_MESSAGE) return status; /* planted */
    if (status != CT_OK && example_planted != EXAMPLE_FAULT_ALLOCATOR) {
      return example_host->set_error(status, "example nonzero: the allocator failed for output %d",
                                     k);
    }
    if (count > 0 && !data) {
      return example_host->set_error(CT_ERROR_OUT_OF_MEMORY,
                                     "example nonzero: the allocator gave NULL for output %d", k);
    }
    columns[k] = (int64_t*)data;
  }
#ifdef CT_EXAMPLE_PLANT_FAULTS
  if (x->dtype.code == CT_DTYPE_FLOAT && x->dtype.bits == 64) {
    /* Planted fault (c): an allocation that is never handed back as an output. */
    void* stray = NULL;
    const int status = allocator->allocate(allocator->user_data, ndim, &info, x->device.device_type,
                                           x->device.device_id, &stray);
    if (status != CT_OK) return status;
  }
#endif

  int64_t found = 0;
  p[0] = example_base(x);
  memset(index, 0, sizeof index);
  for (int64_t i = 0; i < n && found < count; ++i) {
    if (example_is_nonzero(p[0], x->dtype)) {
      for (int32_t k = 0; k < ndim; ++k) columns[k][found] = index[k];
      ++found;
    }
    example_next(ndim, x->shape, index, p, (const int64_t (*)[CT_MAX_NDIM])steps, 1);
  }
  return CT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------------------------- */

static const ct_dtype example_f32 = {CT_DTYPE_FLOAT, 32, 1};
static const ct_dtype example_f64 = {CT_DTYPE_FLOAT, 64, 1};
static const ct_dtype example_i32 = {CT_DTYPE_INT, 32, 1};
static const ct_dtype example_i64 = {CT_DTYPE_INT, 64, 1};

/* kernel_data points at these: the per-dtype element functions. */
static const example_binary_fn example_binary_fns[2][3] = {
    {example_add_f32, example_add_f64, example_add_i32},
    {example_multiply_f32, example_multiply_f64, example_multiply_i32}};
static const example_unary_fn example_relu_fns[3] = {example_relu_f32, example_relu_f64,
                                                     example_relu_i32};
static const example_binary_fn example_relu_backward_fns[2] = {example_relu_backward_f32,
                                                               example_relu_backward_f64};

static int example_register(const char* op, const ct_dtype* signature, int32_t length,
                            ct_kernel_run_fn run, ct_kernel_workspace_fn workspace,
                            const void* kernel_data) {
  ct_kernel_def def;
  memset(&def, 0, sizeof def);
  def.struct_size = sizeof def;
  def.op_name = op;
  def.backend_name = EXAMPLE_NAME;
  def.device_type = CT_DEVICE_CPU;
  def.signature_length = length;
  def.signature = signature;
  def.run = run;
  def.workspace = workspace;
  def.kernel_data = (void*)kernel_data;
  return example_host->kernel_register(&def);
}

CT_PLUGIN_DEFINE_ABI_VERSION()

CT_PLUGIN_EXTERN_C CT_PLUGIN_EXPORT int ct_plugin_init(const ct_host_api* host,
                                                       ct_plugin_info* info) {
  if (!host || !info || host->struct_size < sizeof(ct_host_api)) return CT_ERROR_ABI_MISMATCH;
  example_host = host;
  example_planted = example_fault_named(getenv("CT_EXAMPLE_FAULT"));
  info->name = EXAMPLE_NAME;
  info->version = EXAMPLE_VERSION;
  info->device_type = CT_DEVICE_CPU;
  info->device_count = 1;
  info->memory = NULL; /* host memory */
  info->plugin_data = NULL;

  static const char* const binary_ops[2] = {"add", "multiply"};
  const ct_dtype types[3] = {example_f32, example_f64, example_i32};
  const ct_dtype sum_out[3] = {example_f32, example_f64, example_i64};
  int status = CT_OK;
  for (int t = 0; t < 3 && status == CT_OK; ++t) {
    const ct_dtype binary[3] = {types[t], types[t], types[t]};
    const ct_dtype unary[2] = {types[t], types[t]};
    const ct_dtype sum[2] = {types[t], sum_out[t]};
    const ct_dtype nonzero[2] = {types[t], example_i64};
    for (int o = 0; o < 2 && status == CT_OK; ++o) {
      status = example_register(binary_ops[o], binary, 3, example_run_binary, NULL,
                                &example_binary_fns[o][t]);
    }
    if (status == CT_OK) {
      status = example_register("relu", unary, 2, example_run_unary, NULL, &example_relu_fns[t]);
    }
    if (status == CT_OK && t < 2) {
      status = example_register("relu_backward", binary, 3, example_run_binary, NULL,
                                &example_relu_backward_fns[t]);
    }
    if (status == CT_OK) {
      status = example_register("sum", sum, 2, example_run_sum, example_sum_workspace, NULL);
    }
    if (status == CT_OK) {
      status = example_register("nonzero", nonzero, 2, example_run_nonzero, NULL, NULL);
    }
  }
  return status;
}
