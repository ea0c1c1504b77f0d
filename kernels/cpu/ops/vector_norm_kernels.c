/* vector_norm_kernels.c - vector_norm over axes (array API linalg.vector_norm).
 *
 * x's dims split into kept ones (one output element each) and reduced ones (the group an output
 * reduces). Each output's group is walked in order by one task, so results never depend on the
 * thread count. Every order reduces moduli a = |x| in double:
 *   inf, -inf  the largest (smallest) a, nan propagating;
 *   0          the count of non-zero a (nan counts);
 *   1          the sum of a;
 *   2 and 1 of float32 input: plain sums in double (ct_vnorm_group_f32);
 *   p > 0      a running maximum m and s = sum (a / m)^p, rescaled when m grows (LAPACK's nrm2
 *              for p = 2), so that no power overflows or underflows where the norm does not;
 *              the norm is m * s^(1/p) (0 when m is 0);
 *   p < 0      s = sum a^p, the norm s^(1/p) (a zero element makes s inf and the norm 0). */
#include <math.h>
#include <string.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/strided_iter.h"

typedef enum ct_vnorm_mode {
  CT_VNORM_MAX,
  CT_VNORM_MIN,
  CT_VNORM_COUNT,
  CT_VNORM_SUM,
  CT_VNORM_TWO,
  CT_VNORM_POSITIVE,
  CT_VNORM_NEGATIVE
} ct_vnorm_mode;

/* Loads |x| of one element as double. */
typedef double (*ct_vnorm_load_fn)(const char* p);
/* Stores a double result. */
typedef void (*ct_vnorm_store_fn)(char* p, double v);

/* One call, in byte strides. */
typedef struct ct_vnorm_job {
  ct_vnorm_mode mode;
  double p;
  int32_t n_outer, n_inner;
  int64_t outer_shape[CT_MAX_NDIM], inner_shape[CT_MAX_NDIM];
  int64_t x_outer[CT_MAX_NDIM], out_outer[CT_MAX_NDIM], x_inner[CT_MAX_NDIM];
  int64_t group_size;
  const char* x;
  char* out;
  ct_vnorm_load_fn load;
  ct_vnorm_store_fn store;
  bool f32; /* float32 input: ord 1 and 2 take the plain loop of ct_vnorm_group_f32 */
} ct_vnorm_job;

#define CT_VNORM_ACCESS_X(A, SFX, T, C, U, ID)          \
  static double ct_vnorm_load_##SFX(const char* p) {    \
    T v;                                                \
    memcpy(&v, p, sizeof v);                            \
    return fabs((double)ct_load_##SFX(v));              \
  }                                                     \
  static void ct_vnorm_store_##SFX(char* p, double v) { \
    const T t = ct_store_##SFX((C)v);                   \
    memcpy(p, &t, sizeof t);                            \
  }
CT_CPU_FLOAT_TYPES(CT_VNORM_ACCESS_X, _)
#undef CT_VNORM_ACCESS_X

/* complex: the modulus, without overflow (hypot) */
static double ct_vnorm_load_c64(const char* p) {
  float v[2];
  memcpy(v, p, sizeof v);
  return hypot((double)v[0], (double)v[1]);
}
static double ct_vnorm_load_c128(const char* p) {
  double v[2];
  memcpy(v, p, sizeof v);
  return hypot(v[0], v[1]);
}

/* ord 1 and 2 of float32 input: |x| and x^2 summed in double, which no float32 overflows or
 * underflows (so no scaling), four partial sums over each run for speed; the same order on
 * every thread count. */
static double ct_vnorm_group_f32(const ct_vnorm_job* job, const char* x0) {
  const int32_t last = job->n_inner - 1;
  const int64_t run = last >= 0 ? job->inner_shape[last] : 1;
  const int64_t step = last >= 0 ? job->x_inner[last] : 0;
  const bool squares = job->mode == CT_VNORM_TWO;
  double total = 0.0;
  int64_t idx[CT_MAX_NDIM] = {0};
  const char* xp = x0;
  for (int64_t e = 0; e < job->group_size; e += run) {
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    if (step == (int64_t)sizeof(float)) {
      const float* p = (const float*)xp;
      for (; i + 4 <= run; i += 4) {
        for (int k = 0; k < 4; ++k) {
          const double a = (double)p[i + k];
          s[k] += squares ? a * a : fabs(a);
        }
      }
    }
    for (; i < run; ++i) {
      float v;
      memcpy(&v, xp + i * step, sizeof v);
      const double a = (double)v;
      s[0] += squares ? a * a : fabs(a);
    }
    total += (s[0] + s[1]) + (s[2] + s[3]);
    for (int32_t d = last - 1; d >= 0; --d) {
      xp += job->x_inner[d];
      if (++idx[d] < job->inner_shape[d]) break;
      xp -= job->x_inner[d] * job->inner_shape[d];
      idx[d] = 0;
    }
  }
  return squares ? sqrt(total) : total;
}

/* The norm of one group, its elements walked in order. */
static double ct_vnorm_group(const ct_vnorm_job* job, const char* x0) {
  if (job->f32 && (job->mode == CT_VNORM_TWO || job->mode == CT_VNORM_SUM)) {
    return ct_vnorm_group_f32(job, x0);
  }
  const int32_t last = job->n_inner - 1;
  const int64_t run = last >= 0 ? job->inner_shape[last] : 1;
  const int64_t step = last >= 0 ? job->x_inner[last] : 0;
  const double p = job->p;
  double m = job->mode == CT_VNORM_MIN ? INFINITY : 0.0, s = 0.0;
  int64_t idx[CT_MAX_NDIM] = {0};
  const char* xp = x0;
  for (int64_t e = 0; e < job->group_size; e += run) {
    for (int64_t i = 0; i < run; ++i) {
      const double a = job->load(xp + i * step);
      switch (job->mode) {
        case CT_VNORM_MAX:
          if (a > m || a != a) m = m != m ? m : a;
          break;
        case CT_VNORM_MIN:
          if (a < m || a != a) m = m != m ? m : a;
          break;
        case CT_VNORM_COUNT:
          s += a != 0.0;
          break;
        case CT_VNORM_SUM:
          s += a;
          break;
        case CT_VNORM_TWO:
          if (m != m) break; /* a nan seen: it stays the norm (a later a would replace m) */
          if (!(a <= m)) {   /* a larger maximum, or nan (which makes s nan) */
            const double r = m / a;
            s = 1.0 + s * (r * r);
            m = a;
          } else if (a == m) {
            s += 1.0; /* also inf == inf, where a / m is nan */
          } else {
            const double r = a / m;
            s += r * r;
          }
          break;
        case CT_VNORM_POSITIVE:
          if (m != m) break; /* as for CT_VNORM_TWO */
          if (!(a <= m)) {
            s = 1.0 + s * pow(m / a, p);
            m = a;
          } else if (a == m) {
            s += 1.0;
          } else {
            s += pow(a / m, p);
          }
          break;
        case CT_VNORM_NEGATIVE:
          s += pow(a, p);
          break;
      }
    }
    /* the next run: the odometer over the other reduced dims */
    for (int32_t d = last - 1; d >= 0; --d) {
      xp += job->x_inner[d];
      if (++idx[d] < job->inner_shape[d]) break;
      xp -= job->x_inner[d] * job->inner_shape[d];
      idx[d] = 0;
    }
  }
  switch (job->mode) {
    case CT_VNORM_MAX:
    case CT_VNORM_MIN:
      return m;
    case CT_VNORM_COUNT:
    case CT_VNORM_SUM:
      return s;
    case CT_VNORM_TWO:
      return m == 0.0 ? 0.0 : m * sqrt(s);
    case CT_VNORM_POSITIVE:
      return m == 0.0 ? 0.0 : m * pow(s, 1.0 / p);
    case CT_VNORM_NEGATIVE:
      return pow(s, 1.0 / p);
  }
  return 0.0;
}

static void ct_vnorm_outputs(int64_t begin, int64_t end, void* context) {
  const ct_vnorm_job* job = context;
  for (int64_t o = begin; o < end; ++o) {
    int64_t rest = o, xo = 0, oo = 0;
    for (int32_t d = job->n_outer - 1; d >= 0; --d) {
      const int64_t i = rest % job->outer_shape[d];
      rest /= job->outer_shape[d];
      xo += i * job->x_outer[d];
      oo += i * job->out_outer[d];
    }
    job->store(job->out + oo, ct_vnorm_group(job, job->x + xo));
  }
}

static int ct_cpu_vector_norm_run(const ct_kernel_call* call, ct_vnorm_load_fn load,
                                  ct_vnorm_store_fn store) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int64_t x_size = ct_dtype_size(x->dtype), out_size = ct_dtype_size(out->dtype);
  ct_vnorm_job job;
  memset(&job, 0, sizeof job);
  job.p = call->attrs[2].value.f;
  job.mode = job.p == INFINITY    ? CT_VNORM_MAX
             : job.p == -INFINITY ? CT_VNORM_MIN
             : job.p == 0.0       ? CT_VNORM_COUNT
             : job.p == 1.0       ? CT_VNORM_SUM
             : job.p == 2.0       ? CT_VNORM_TWO
             : job.p > 0.0        ? CT_VNORM_POSITIVE
                                  : CT_VNORM_NEGATIVE;
  job.x = ct_tensor_base(x);
  job.out = ct_tensor_base(out);
  job.load = load;
  job.store = store;
  job.f32 = x->dtype.code == CT_DTYPE_FLOAT && x->dtype.bits == 32;
  job.group_size = 1;
  bool mask[CT_MAX_NDIM];
  const ct_attr_value* axis = &call->attrs[0];
  for (int32_t k = 0; k < x->ndim; ++k) mask[k] = axis->type == CT_ATTR_NONE;
  if (axis->type != CT_ATTR_NONE) {
    const int64_t count = axis->type == CT_ATTR_INT_LIST ? axis->count : 1;
    for (int64_t j = 0; j < count; ++j) {
      int64_t a = axis->type == CT_ATTR_INT_LIST ? axis->value.ints[j] : axis->value.i;
      if (a < 0) a += x->ndim;
      if (a < 0 || a >= x->ndim) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "vector_norm: axis %lld is out of range",
                            (long long)a);
      }
      mask[a] = true;
    }
  }
  const bool keepdims = call->attrs[1].value.b != 0;
  int64_t outputs = 1;
  for (int32_t k = 0, r = 0; k < x->ndim; ++k) {
    if (mask[k]) {
      if (keepdims) ++r;
      if (x->shape[k] == 1) continue; /* adds nothing to the group */
      job.inner_shape[job.n_inner] = x->shape[k];
      job.x_inner[job.n_inner++] = ct_tensor_stride(x, k) * x_size;
      job.group_size *= x->shape[k];
      continue;
    }
    job.outer_shape[job.n_outer] = x->shape[k];
    job.x_outer[job.n_outer] = ct_tensor_stride(x, k) * x_size;
    job.out_outer[job.n_outer++] = ct_tensor_stride(out, r) * out_size;
    outputs *= x->shape[k];
    ++r;
  }
  if (outputs == 0) return CT_OK;
  /* empty groups give 0 (infer refused ord < 0 and inf for them) */
  ct_cpu_parallel_for(outputs, ct_size_add(job.group_size, 1), ct_vnorm_outputs, &job);
  return CT_OK;
}

/* One kernel per input dtype; the output is the input's real dtype. */
#define CT_VNORM_KERNEL(IN, OUT)                                                   \
  static int ct_cpu_vector_norm_##IN(const ct_kernel_call* call) {                 \
    return ct_cpu_vector_norm_run(call, ct_vnorm_load_##IN, ct_vnorm_store_##OUT); \
  }
CT_VNORM_KERNEL(f16, f16)
CT_VNORM_KERNEL(bf16, bf16)
CT_VNORM_KERNEL(f32, f32)
CT_VNORM_KERNEL(f64, f64)
CT_VNORM_KERNEL(c64, f32)
CT_VNORM_KERNEL(c128, f64)
#undef CT_VNORM_KERNEL

static const ct_cpu_kernel ct_cpu_vector_norm_kernels[] = {
    {"vector_norm", 2, {CT_DT_F16, CT_DT_F16}, ct_cpu_vector_norm_f16, NULL, NULL},
    {"vector_norm", 2, {CT_DT_BF16, CT_DT_BF16}, ct_cpu_vector_norm_bf16, NULL, NULL},
    {"vector_norm", 2, {CT_DT_F32, CT_DT_F32}, ct_cpu_vector_norm_f32, NULL, NULL},
    {"vector_norm", 2, {CT_DT_F64, CT_DT_F64}, ct_cpu_vector_norm_f64, NULL, NULL},
    {"vector_norm", 2, {CT_DT_C64, CT_DT_F32}, ct_cpu_vector_norm_c64, NULL, NULL},
    {"vector_norm", 2, {CT_DT_C128, CT_DT_F64}, ct_cpu_vector_norm_c128, NULL, NULL},
};

int ct_cpu_register_vector_norm(void) {
  return ct_cpu_register_all(ct_cpu_vector_norm_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_vector_norm_kernels));
}
