/* random_kernels.c - random_uniform, random_normal, random_bernoulli, dropout,
 * dropout_backward and arange on the CPU.
 *
 * Every output element is a pure function of its row-major linear index (and, for the random
 * ops, of seed and offset through philox.h, the same text the OpenCL and CUDA plugins compile),
 * so the threads split the index range in any way and the results never depend on the thread
 * count. Operands may have any strides: each thread walks its range of indices with an odometer
 * over the output's shape and calls the op's loop on runs along the last dimension.
 *
 * Compiled with -ffp-contract=off (kernels/cpu/meson.build): philox.h's float operations must
 * round one at a time, as on the other devices. */
#include <string.h>

#include "../../common/philox.h"
#include "cpu_register.h"
#include "engine/strided_iter.h"

#define CT_RAND_MAX_OPERANDS 4

/* The loops are also built for AVX2 (integer multiplies of 8 lanes for Philox), picked at load
 * time; without contraction or FMA, so every build gives the same bits. Not under
 * ThreadSanitizer, whose instrumented ifunc resolvers crash on load (engine/reduce_layout.h). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__)
#define CT_RAND_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CT_RAND_CLONES
#endif

/* The parameters of a call, as every loop reads them. */
typedef struct ct_rand_params {
  ct_philox_u64 seed, offset;
  float lo_f, hi_f;         /* uniform's bounds, normal's mean and std, bernoulli's p (float32) */
  double lo_d, hi_d;        /* the same in float64; arange's start and step */
  uint64_t start_i, step_i; /* arange's, as two's complement words */
  float scale_f;            /* dropout's scale */
  double scale_d;
  bool keep_all; /* dropout with training=False */
  ct_dtype_id out_type, in_type;
} ct_rand_params;

/* A loop over `count` consecutive elements of the last dimension: element j has linear index
 * index + j and operand k at ptrs[k] + j * steps[k]. */
typedef void (*ct_rand_loop)(const ct_rand_params* params, uint64_t index, int64_t count,
                             char* const* ptrs, const int64_t* steps);

typedef struct ct_rand_walk {
  int32_t ndim; /* at least 1 */
  int32_t count;
  int64_t shape[CT_MAX_NDIM];
  int64_t strides[CT_RAND_MAX_OPERANDS][CT_MAX_NDIM]; /* bytes */
  char* base[CT_RAND_MAX_OPERANDS];
  ct_rand_loop loop;
  const ct_rand_params* params;
} ct_rand_walk;

/* Starts a walk over the shape of `out` (operand 0). */
static void ct_rand_walk_begin(ct_rand_walk* walk, const ct_tensor* out) {
  memset(walk, 0, sizeof *walk);
  walk->ndim = out->ndim > 0 ? out->ndim : 1;
  walk->shape[0] = 1;
  for (int32_t d = 0; d < out->ndim; ++d) walk->shape[d] = out->shape[d];
}

/* Adds an operand broadcast (right-aligned) to the walk's shape. */
static void ct_rand_walk_add(ct_rand_walk* walk, const ct_tensor* t) {
  const int32_t k = walk->count++;
  walk->base[k] = (char*)t->data + t->byte_offset;
  const int32_t lead = walk->ndim - t->ndim;
  for (int32_t d = 0; d < walk->ndim; ++d) {
    const int32_t j = d - lead;
    walk->strides[k][d] =
        (j < 0 || t->shape[j] == 1) ? 0 : ct_tensor_stride(t, j) * ct_dtype_size(t->dtype);
  }
}

static void ct_rand_walk_range(int64_t begin, int64_t end, void* context) {
  const ct_rand_walk* walk = context;
  const int32_t last = walk->ndim - 1;
  int64_t index[CT_MAX_NDIM];
  char* ptrs[CT_RAND_MAX_OPERANDS];
  int64_t rest = begin;
  for (int32_t d = last; d >= 0; --d) {
    index[d] = rest % walk->shape[d];
    rest /= walk->shape[d];
  }
  for (int32_t k = 0; k < walk->count; ++k) {
    ptrs[k] = walk->base[k];
    for (int32_t d = 0; d <= last; ++d) ptrs[k] += index[d] * walk->strides[k][d];
  }
  int64_t steps[CT_RAND_MAX_OPERANDS];
  for (int32_t k = 0; k < walk->count; ++k) steps[k] = walk->strides[k][last];
  int64_t i = begin;
  while (i < end) {
    int64_t run = walk->shape[last] - index[last];
    if (run > end - i) run = end - i;
    walk->loop(walk->params, (uint64_t)i, run, ptrs, steps);
    i += run;
    if (i >= end) break;
    /* next row: the odometer carries into the leading dims */
    for (int32_t k = 0; k < walk->count; ++k) ptrs[k] -= index[last] * steps[k];
    index[last] = 0;
    for (int32_t d = last - 1; d >= 0; --d) {
      for (int32_t k = 0; k < walk->count; ++k) ptrs[k] += walk->strides[k][d];
      if (++index[d] < walk->shape[d]) break;
      for (int32_t k = 0; k < walk->count; ++k) ptrs[k] -= index[d] * walk->strides[k][d];
      index[d] = 0;
    }
  }
}

static int ct_rand_walk_run(ct_rand_walk* walk, const ct_tensor* out, ct_rand_loop loop,
                            const ct_rand_params* params, int64_t cost) {
  walk->loop = loop;
  walk->params = params;
  ct_cpu_parallel_for(ct_tensor_numel(out), cost, ct_rand_walk_range, walk);
  return CT_OK;
}

#define CT_AT_PTR(T, p, j, step) (*(T*)((p) + (j) * (step)))

/* The Philox words of element `index` (a macro: always inlined, so that loops vectorise). */
#define ct_rand_words(params, index) \
  ct_philox_element((params)->seed, (params)->offset, (uint64_t)(index))

/* A loop storing EXPR (of the element's words `w`) into `count` elements of type T at o with
 * byte step so; a separate loop for the dense case, which compilers vectorise. */
#define CT_RAND_STORE_LOOP(T, EXPR)                                 \
  do {                                                              \
    if (so == (int64_t)sizeof(T)) {                                 \
      T* dst = (T*)o;                                               \
      for (int64_t j = 0; j < count; ++j) {                         \
        const ct_philox4 w = ct_rand_words(q, index + (uint64_t)j); \
        dst[j] = (EXPR);                                            \
      }                                                             \
    } else {                                                        \
      for (int64_t j = 0; j < count; ++j) {                         \
        const ct_philox4 w = ct_rand_words(q, index + (uint64_t)j); \
        CT_AT_PTR(T, o, j, so) = (EXPR);                            \
      }                                                             \
    }                                                               \
  } while (0)

/* ----- random_uniform ----- */

CT_RAND_CLONES static void ct_uniform_loop(const ct_rand_params* q, uint64_t index, int64_t count,
                                           char* const* ptrs, const int64_t* steps) {
  char* o = ptrs[0];
  const int64_t so = steps[0];
  switch (q->out_type) {
    case CT_DT_F32:
      CT_RAND_STORE_LOOP(float, ct_philox_uniform_range_f32(w.x[0], q->lo_f, q->hi_f));
      break;
    case CT_DT_F16:
      CT_RAND_STORE_LOOP(uint16_t, ct_philox_uniform_range_f16(w.x[0], q->lo_f, q->hi_f));
      break;
    case CT_DT_BF16:
      CT_RAND_STORE_LOOP(uint16_t, ct_philox_uniform_range_bf16(w.x[0], q->lo_f, q->hi_f));
      break;
    default:
      CT_RAND_STORE_LOOP(double, ct_philox_uniform_range_f64(w.x[0], w.x[1], q->lo_d, q->hi_d));
  }
}

static void ct_rand_seed(const ct_kernel_call* call, int32_t seed_attr, ct_rand_params* q) {
  memset(q, 0, sizeof *q);
  q->seed = (ct_philox_u64)call->attrs[seed_attr].value.i;
  q->offset = (ct_philox_u64)call->attrs[seed_attr + 1].value.i;
}

/* A float bound as the kernels of `type` see it: float32, then the 16-bit format. */
static float ct_rand_bound(double value, ct_dtype_id type) {
  const float f = (float)value;
  if (type == CT_DT_F16) return ct_philox_f16_to_f32(ct_philox_f32_to_f16(f));
  if (type == CT_DT_BF16) return ct_philox_bf16_to_f32(ct_philox_f32_to_bf16(f));
  return f;
}

static int ct_cpu_random_uniform_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  ct_rand_params q;
  ct_rand_seed(call, 4, &q);
  q.out_type = ct_dtype_to_id(out->dtype);
  q.lo_d = call->attrs[2].value.f;
  q.hi_d = call->attrs[3].value.f;
  q.lo_f = ct_rand_bound(q.lo_d, q.out_type);
  q.hi_f = ct_rand_bound(q.hi_d, q.out_type);
  ct_rand_walk walk;
  ct_rand_walk_begin(&walk, out);
  ct_rand_walk_add(&walk, out);
  return ct_rand_walk_run(&walk, out, ct_uniform_loop, &q, 24);
}

/* ----- random_normal ----- */

CT_RAND_CLONES static void ct_normal_loop(const ct_rand_params* q, uint64_t index, int64_t count,
                                          char* const* ptrs, const int64_t* steps) {
  char* o = ptrs[0];
  const int64_t so = steps[0];
  switch (q->out_type) {
    case CT_DT_F32:
      CT_RAND_STORE_LOOP(float, ct_philox_normal_range_f32(w.x[0], w.x[1], q->lo_f, q->hi_f));
      break;
    case CT_DT_F16:
      CT_RAND_STORE_LOOP(uint16_t, ct_philox_f32_to_f16(ct_philox_normal_range_f32(
                                       w.x[0], w.x[1], q->lo_f, q->hi_f)));
      break;
    case CT_DT_BF16:
      CT_RAND_STORE_LOOP(uint16_t, ct_philox_f32_to_bf16(ct_philox_normal_range_f32(
                                       w.x[0], w.x[1], q->lo_f, q->hi_f)));
      break;
    default:
      CT_RAND_STORE_LOOP(
          double, ct_philox_normal_range_f64(w.x[0], w.x[1], w.x[2], w.x[3], q->lo_d, q->hi_d));
  }
}

static int ct_cpu_random_normal_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  ct_rand_params q;
  ct_rand_seed(call, 4, &q);
  q.out_type = ct_dtype_to_id(out->dtype);
  q.lo_d = call->attrs[2].value.f;
  q.hi_d = call->attrs[3].value.f;
  q.lo_f = (float)q.lo_d;
  q.hi_f = (float)q.hi_d;
  ct_rand_walk walk;
  ct_rand_walk_begin(&walk, out);
  ct_rand_walk_add(&walk, out);
  return ct_rand_walk_run(&walk, out, ct_normal_loop, &q, 64);
}

/* ----- random_bernoulli ----- */

/* A float element of any float dtype, as float32 (float64 rounds once). */
static float ct_rand_load_f32(const char* p, ct_dtype_id type) {
  switch (type) {
    case CT_DT_F16:
      return ct_philox_f16_to_f32(*(const uint16_t*)p);
    case CT_DT_BF16:
      return ct_philox_bf16_to_f32(*(const uint16_t*)p);
    case CT_DT_F32:
      return *(const float*)p;
    default:
      return (float)*(const double*)p;
  }
}

/* Stores 1 or 0 in a bool or float element. */
static void ct_rand_store_bit(char* p, ct_dtype_id type, bool bit) {
  switch (type) {
    case CT_DT_BOOL:
      *(uint8_t*)p = bit;
      break;
    case CT_DT_F16:
      *(uint16_t*)p = bit ? 0x3c00u : 0;
      break;
    case CT_DT_BF16:
      *(uint16_t*)p = bit ? 0x3f80u : 0;
      break;
    case CT_DT_F32:
      *(float*)p = bit ? 1.0f : 0.0f;
      break;
    default:
      *(double*)p = bit ? 1.0 : 0.0;
  }
}

CT_RAND_CLONES static void ct_bernoulli_loop(const ct_rand_params* q, uint64_t index, int64_t count,
                                             char* const* ptrs, const int64_t* steps) {
  for (int64_t j = 0; j < count; ++j) {
    const ct_philox4 w = ct_rand_words(q, index + (uint64_t)j);
    const float p = q->in_type == CT_DT_INVALID
                        ? q->lo_f
                        : ct_rand_load_f32(ptrs[1] + j * steps[1], q->in_type);
    ct_rand_store_bit(ptrs[0] + j * steps[0], q->out_type, ct_philox_uniform_f32(w.x[0]) < p);
  }
}

static int ct_cpu_random_bernoulli_run(const ct_kernel_call* call) {
  const ct_tensor* probs = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  ct_rand_params q;
  ct_rand_seed(call, 3, &q);
  q.out_type = ct_dtype_to_id(out->dtype);
  q.in_type = probs ? ct_dtype_to_id(probs->dtype) : CT_DT_INVALID;
  q.lo_f = call->attrs[1].type == CT_ATTR_NONE ? 0.5f : (float)call->attrs[1].value.f;
  ct_rand_walk walk;
  ct_rand_walk_begin(&walk, out);
  ct_rand_walk_add(&walk, out);
  if (probs) ct_rand_walk_add(&walk, probs);
  return ct_rand_walk_run(&walk, out, ct_bernoulli_loop, &q, 24);
}

/* ----- dropout and dropout_backward ----- */

/* value * scale where keep, else 0, stored in `type` (16-bit types computed in float32). */
static void ct_dropout_store(char* dst, const char* src, ct_dtype_id type, bool keep,
                             const ct_rand_params* q) {
  switch (type) {
    case CT_DT_F16:
      *(uint16_t*)dst =
          keep ? ct_philox_f32_to_f16(ct_philox_f16_to_f32(*(const uint16_t*)src) * q->scale_f) : 0;
      break;
    case CT_DT_BF16:
      *(uint16_t*)dst =
          keep ? ct_philox_f32_to_bf16(ct_philox_bf16_to_f32(*(const uint16_t*)src) * q->scale_f)
               : 0;
      break;
    case CT_DT_F32:
      *(float*)dst = keep ? *(const float*)src * q->scale_f : 0.0f;
      break;
    default:
      *(double*)dst = keep ? *(const double*)src * q->scale_d : 0.0;
  }
}

/* Operands: out, x, mask. */
CT_RAND_CLONES static void ct_dropout_loop(const ct_rand_params* q, uint64_t index, int64_t count,
                                           char* const* ptrs, const int64_t* steps) {
  const int64_t size = q->out_type == CT_DT_F64 ? 8 : q->out_type == CT_DT_F32 ? 4 : 2;
  if (!q->keep_all && q->out_type == CT_DT_F32 && steps[0] == 4 && steps[1] == 4 && steps[2] == 1) {
    /* Dense float32: the same values as below, in a loop compilers vectorise. */
    float* dst = (float*)ptrs[0];
    const float* src = (const float*)ptrs[1];
    uint8_t* mask = (uint8_t*)ptrs[2];
    const float lo = q->lo_f, scale = q->scale_f;
    for (int64_t j = 0; j < count; ++j) {
      const ct_philox4 w = ct_rand_words(q, index + (uint64_t)j);
      const bool keep = ct_philox_uniform_f32(w.x[0]) >= lo;
      dst[j] = keep ? src[j] * scale : 0.0f;
      mask[j] = keep;
    }
    return;
  }
  for (int64_t j = 0; j < count; ++j) {
    char* dst = ptrs[0] + j * steps[0];
    const char* src = ptrs[1] + j * steps[1];
    bool keep = true;
    if (q->keep_all) {
      memmove(dst, src, (size_t)size);
    } else {
      const ct_philox4 w = ct_rand_words(q, index + (uint64_t)j);
      keep = ct_philox_uniform_f32(w.x[0]) >= q->lo_f;
      ct_dropout_store(dst, src, q->out_type, keep, q);
    }
    *(uint8_t*)(ptrs[2] + j * steps[2]) = keep;
  }
}

/* dropout's scale: 1 / (1 - p) in float64, 0 for p = 1, 1 without training. */
static void ct_dropout_scale(double p, bool training, ct_rand_params* q) {
  q->scale_d = !training ? 1.0 : p >= 1 ? 0.0 : 1.0 / (1.0 - p);
  q->scale_f = (float)q->scale_d;
}

static int ct_cpu_dropout_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  ct_rand_params q;
  ct_rand_seed(call, 1, &q);
  q.out_type = ct_dtype_to_id(out->dtype);
  const double p = call->attrs[0].value.f;
  q.keep_all = !call->attrs[3].value.b;
  q.lo_f = (float)p;
  ct_dropout_scale(p, true, &q);
  ct_rand_walk walk;
  ct_rand_walk_begin(&walk, out);
  ct_rand_walk_add(&walk, out);
  ct_rand_walk_add(&walk, x);
  ct_rand_walk_add(&walk, call->outputs[1]);
  return ct_rand_walk_run(&walk, out, ct_dropout_loop, &q, 24);
}

/* Operands: grad_x, grad_out, mask. */
static void ct_dropout_backward_loop(const ct_rand_params* q, uint64_t index, int64_t count,
                                     char* const* ptrs, const int64_t* steps) {
  (void)index;
  for (int64_t j = 0; j < count; ++j) {
    const bool keep = *(const uint8_t*)(ptrs[2] + j * steps[2]) != 0;
    ct_dropout_store(ptrs[0] + j * steps[0], ptrs[1] + j * steps[1], q->out_type, keep, q);
  }
}

static int ct_cpu_dropout_backward_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  ct_rand_params q;
  memset(&q, 0, sizeof q);
  q.out_type = ct_dtype_to_id(out->dtype);
  ct_dropout_scale(call->attrs[0].value.f, call->attrs[1].value.b, &q);
  ct_rand_walk walk;
  ct_rand_walk_begin(&walk, out);
  ct_rand_walk_add(&walk, out);
  ct_rand_walk_add(&walk, call->inputs[0]);
  ct_rand_walk_add(&walk, call->inputs[1]);
  return ct_rand_walk_run(&walk, out, ct_dropout_backward_loop, &q, 2);
}

/* ----- arange ----- */

static void ct_arange_loop(const ct_rand_params* q, uint64_t index, int64_t count,
                           char* const* ptrs, const int64_t* steps) {
  char* o = ptrs[0];
  const int64_t so = steps[0];
  for (int64_t j = 0; j < count; ++j) {
    const uint64_t i = index + (uint64_t)j;
    char* dst = o + j * so;
    if (q->out_type == CT_DT_F16 || q->out_type == CT_DT_BF16 || q->out_type == CT_DT_F32 ||
        q->out_type == CT_DT_F64) {
      const double v = q->lo_d + (double)i * q->hi_d;
      switch (q->out_type) {
        case CT_DT_F16:
          *(uint16_t*)dst = ct_philox_f32_to_f16((float)v);
          break;
        case CT_DT_BF16:
          *(uint16_t*)dst = ct_philox_f32_to_bf16((float)v);
          break;
        case CT_DT_F32:
          *(float*)dst = (float)v;
          break;
        default:
          *(double*)dst = v;
      }
      continue;
    }
    /* integers: exact in 64 bits (infer checked the range), stored truncated */
    const uint64_t v = q->start_i + i * q->step_i;
    switch (ct_dtype_size(ct_dtype_from_id(q->out_type))) {
      case 1:
        *(uint8_t*)dst = (uint8_t)v;
        break;
      case 2:
        *(uint16_t*)dst = (uint16_t)v;
        break;
      case 4:
        *(uint32_t*)dst = (uint32_t)v;
        break;
      default:
        *(uint64_t*)dst = v;
    }
  }
}

/* A whole number of an integer arange as its 64-bit two's complement word. infer checked that
 * start and every value fit the dtype, so start and a step that is taken (more than one
 * element) lie in (-2^64, 2^64), whose words make start + i * step exact modulo 2^64 (a uint64
 * step above INT64_MAX, an int64 step below INT64_MIN); a step of one-element arange is never
 * taken and may be any size: 0. */
static uint64_t ct_arange_bits(double value) {
  const double magnitude = value < 0 ? -value : value;
  if (!(magnitude < 18446744073709551616.0)) return 0;
  const uint64_t word = (uint64_t)magnitude;
  return value < 0 ? (uint64_t)0 - word : word;
}

static int ct_cpu_arange_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  ct_rand_params q;
  memset(&q, 0, sizeof q);
  q.out_type = ct_dtype_to_id(out->dtype);
  const bool no_stop = call->attrs[1].type == CT_ATTR_NONE;
  q.lo_d = no_stop ? 0.0 : call->attrs[0].value.f;
  q.hi_d = call->attrs[2].value.f;
  /* Integer outputs only (a float arange's start and step may lie beyond 64 bits, where
   * converting them is undefined). */
  if (!ct_dtype_is_float(out->dtype)) {
    q.start_i = ct_arange_bits(q.lo_d);
    q.step_i = ct_arange_bits(q.hi_d);
  }
  ct_rand_walk walk;
  ct_rand_walk_begin(&walk, out);
  ct_rand_walk_add(&walk, out);
  return ct_rand_walk_run(&walk, out, ct_arange_loop, &q, 2);
}

/* ----- registration ----- */

#define CT_RAND_FLOATS(X, A) X(A, CT_DT_F16) X(A, CT_DT_BF16) X(A, CT_DT_F32) X(A, CT_DT_F64)
#define CT_RAND_OUT(A, ID) {#A, 1, {ID}, ct_cpu_##A##_run, NULL, NULL},
#define CT_DROPOUT_REG(A, ID)                                           \
  {"dropout", 3, {ID, ID, CT_DT_BOOL}, ct_cpu_dropout_run, NULL, NULL}, \
      {"dropout_backward", 3, {ID, CT_DT_BOOL, ID}, ct_cpu_dropout_backward_run, NULL, NULL},
/* random_bernoulli: (probs, out) for every float probs dtype and bool or float out */
#define CT_BERNOULLI_REG(OUT, ID) \
  {"random_bernoulli", 2, {ID, OUT}, ct_cpu_random_bernoulli_run, NULL, NULL},
#define CT_ARANGE_REG(A, ID) {"arange", 1, {ID}, ct_cpu_arange_run, NULL, NULL},

static const ct_cpu_kernel ct_cpu_random_kernels[] = {
    CT_RAND_FLOATS(CT_RAND_OUT, random_uniform)  /* */
    CT_RAND_FLOATS(CT_RAND_OUT, random_normal)   /* */
    CT_RAND_FLOATS(CT_DROPOUT_REG, _)            /* */
    CT_RAND_FLOATS(CT_BERNOULLI_REG, CT_DT_BOOL) /* */
    CT_RAND_FLOATS(CT_BERNOULLI_REG, CT_DT_F16)  /* */
    CT_RAND_FLOATS(CT_BERNOULLI_REG, CT_DT_BF16) /* */
    CT_RAND_FLOATS(CT_BERNOULLI_REG, CT_DT_F32)  /* */
    CT_RAND_FLOATS(CT_BERNOULLI_REG, CT_DT_F64)  /* */
    CT_RAND_FLOATS(CT_ARANGE_REG, _)             /* */
    CT_ARANGE_REG(_, CT_DT_I8) CT_ARANGE_REG(_, CT_DT_U8) CT_ARANGE_REG(_, CT_DT_I16)
        CT_ARANGE_REG(_, CT_DT_U16) CT_ARANGE_REG(_, CT_DT_I32) CT_ARANGE_REG(_, CT_DT_U32)
            CT_ARANGE_REG(_, CT_DT_I64) CT_ARANGE_REG(_, CT_DT_U64)};

int ct_cpu_register_random(void) {
  return ct_cpu_register_all(ct_cpu_random_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_random_kernels));
}
