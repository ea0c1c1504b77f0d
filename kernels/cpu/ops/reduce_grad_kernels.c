/* reduce_grad_kernels.c - the backward operators of the reductions (sum, mean, prod, max, min,
 * logsumexp, var, std) and of the scans (cumulative_sum, cumulative_prod).
 *
 * Reductions: x's dimensions split into kept ("outer") and reduced ("inner") ones. Each group
 * (one element of grad_out) is handled by one task: a first pass over the group's elements
 * gathers what the formula needs (the mean, the count of ties, the product of the non-zero
 * elements and the number of zeros), a second writes grad_x. grad_out's element of a group is
 * found through its strides over the kept dimensions, so keepdims, negative axes and tuples of
 * axes are only a different split. Everything is computed in double and rounded once.
 *
 * Scans: one lane per position of the other dimensions, walked backwards (scan_kernels.c's
 * layout). */
#include <math.h>
#include <string.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/strided_iter.h"

typedef enum ct_rgrad_kind {
  CT_RGRAD_SUM,
  CT_RGRAD_MEAN,
  CT_RGRAD_PROD,
  CT_RGRAD_MAX, /* also min: the tie test is x == out either way */
  CT_RGRAD_LOGSUMEXP,
  CT_RGRAD_VAR,
  CT_RGRAD_STD
} ct_rgrad_kind;

typedef double (*ct_rgrad_load_fn)(const char* p);
typedef void (*ct_rgrad_store_fn)(char* p, double v);

/* One call, in byte strides. */
typedef struct ct_rgrad_job {
  ct_rgrad_kind kind;
  ct_rgrad_load_fn load;
  ct_rgrad_store_fn store;
  int32_t n_outer, n_inner;
  int64_t outer_shape[CT_MAX_NDIM], inner_shape[CT_MAX_NDIM];
  int64_t x_outer[CT_MAX_NDIM], x_inner[CT_MAX_NDIM];
  int64_t gx_outer[CT_MAX_NDIM], gx_inner[CT_MAX_NDIM];
  int64_t g_outer[CT_MAX_NDIM], o_outer[CT_MAX_NDIM];
  int64_t group_size;
  double correction;
  bool full; /* axis None */
  const char *g, *x, *out;
  char* gx;
  /* The element-wise path (kinds without group statistics): every dim of x in order, grad_out
   * and out with stride 0 along the reduced ones. */
  int32_t ndim;
  int64_t shape[CT_MAX_NDIM], xs[CT_MAX_NDIM], gxs[CT_MAX_NDIM], gs[CT_MAX_NDIM], os[CT_MAX_NDIM];
} ct_rgrad_job;

/* Walks the inner (reduced) elements of one group: BODY sees xp (x's element) and gp (grad_x's
 * element). */
#define CT_RGRAD_FOR_GROUP(job, x0, gx0, BODY)               \
  do {                                                       \
    int64_t idx_[CT_MAX_NDIM] = {0};                         \
    const char* xp = (x0);                                   \
    char* gp = (gx0);                                        \
    for (int64_t e_ = 0; e_ < (job)->group_size; ++e_) {     \
      BODY;                                                  \
      for (int32_t d_ = (job)->n_inner - 1; d_ >= 0; --d_) { \
        xp += (job)->x_inner[d_];                            \
        gp += (job)->gx_inner[d_];                           \
        if (++idx_[d_] < (job)->inner_shape[d_]) break;      \
        xp -= (job)->x_inner[d_] * (job)->inner_shape[d_];   \
        gp -= (job)->gx_inner[d_] * (job)->inner_shape[d_];  \
        idx_[d_] = 0;                                        \
      }                                                      \
    }                                                        \
  } while (0)

static void ct_rgrad_group(const ct_rgrad_job* job, int64_t group) {
  int64_t xo = 0, gxo = 0, go = 0, oo = 0, rest = group;
  for (int32_t d = job->n_outer - 1; d >= 0; --d) {
    const int64_t i = rest % job->outer_shape[d];
    rest /= job->outer_shape[d];
    xo += i * job->x_outer[d];
    gxo += i * job->gx_outer[d];
    go += i * job->g_outer[d];
    oo += i * job->o_outer[d];
  }
  const char* x0 = job->x + xo;
  char* gx0 = job->gx + gxo;
  const double g = job->load(job->g + go);
  const double n = (double)job->group_size;
  switch (job->kind) {
    case CT_RGRAD_SUM:
      CT_RGRAD_FOR_GROUP(job, x0, gx0, job->store(gp, g));
      break;
    case CT_RGRAD_MEAN: {
      const double v = g / n;
      CT_RGRAD_FOR_GROUP(job, x0, gx0, job->store(gp, v));
      break;
    }
    case CT_RGRAD_LOGSUMEXP: {
      const double out = job->load(job->out + oo);
      CT_RGRAD_FOR_GROUP(job, x0, gx0, job->store(gp, g * exp(job->load(xp) - out)));
      break;
    }
    case CT_RGRAD_MAX: {
      const double out = job->load(job->out + oo);
      const bool nan_out = isnan(out);
      int64_t count = 0;
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        const double v = job->load(xp);
        count += nan_out ? isnan(v) : v == out;
      });
      const double share = g / (double)count;
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        const double v = job->load(xp);
        job->store(gp, (nan_out ? isnan(v) : v == out) ? share : 0.0);
      });
      break;
    }
    case CT_RGRAD_PROD: {
      double product = 1.0;
      int64_t zeros = 0;
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        const double v = job->load(xp);
        if (v == 0) {
          ++zeros;
        } else {
          product *= v;
        }
      });
      /* No zero: g * prod / x (torch's formula); one zero: it takes g * the product of the
       * others, the rest 0; more: all 0. */
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        const double v = job->load(xp);
        double r = 0.0;
        if (zeros == 0) {
          r = g * (product / v);
        } else if (zeros == 1 && v == 0) {
          r = g * product;
        }
        job->store(gp, r);
      });
      break;
    }
    case CT_RGRAD_VAR:
    case CT_RGRAD_STD: {
      double sum = 0.0;
      CT_RGRAD_FOR_GROUP(job, x0, gx0, sum += job->load(xp));
      const double mean = sum / n;
      const double dof = n - job->correction;
      double scale = g;
      if (job->kind == CT_RGRAD_STD) {
        /* torch: var's backward of g / (2 std), 0 where std is 0. */
        const double out = job->load(job->out + oo);
        scale = out == 0 ? 0.0 : g / (2.0 * out);
      }
      if (dof <= 0 && job->full) { /* torch: only a reduction without dims takes this rule */
        CT_RGRAD_FOR_GROUP(job, x0, gx0,
                           job->store(gp, scale * (job->load(xp) == mean ? NAN : INFINITY)));
      } else {
        const double f = 2.0 * scale / dof;
        CT_RGRAD_FOR_GROUP(job, x0, gx0, job->store(gp, f * (job->load(xp) - mean)));
      }
      break;
    }
  }
}

/* sum, mean, logsumexp: grad_x[i] from grad_out's (and out's) element of i's group alone, walked
 * in x's order (rows of its last dim), so that any axis reads and writes memory in order. */
static void ct_rgrad_do_rows(int64_t begin, int64_t end, void* context) {
  const ct_rgrad_job* job = context;
  const int32_t last = job->ndim - 1;
  const int64_t n = job->shape[last];
  const double scale = job->kind == CT_RGRAD_MEAN ? 1.0 / (double)job->group_size : 1.0;
  for (int64_t row = begin; row < end; ++row) {
    int64_t rest = row, xo = 0, gxo = 0, go = 0, oo = 0;
    for (int32_t d = last - 1; d >= 0; --d) {
      const int64_t i = rest % job->shape[d];
      rest /= job->shape[d];
      xo += i * job->xs[d];
      gxo += i * job->gxs[d];
      go += i * job->gs[d];
      oo += i * job->os[d];
    }
    const char* x = job->x + xo;
    const char* g = job->g + go;
    const char* o = job->out ? job->out + oo : NULL;
    char* gx = job->gx + gxo;
    if (job->kind == CT_RGRAD_LOGSUMEXP) {
      for (int64_t i = 0; i < n; ++i) {
        const double v = job->load(g + i * job->gs[last]) *
                         exp(job->load(x + i * job->xs[last]) - job->load(o + i * job->os[last]));
        job->store(gx + i * job->gxs[last], v);
      }
    } else if (job->gs[last] == 0) { /* one value along the row */
      const double v = job->load(g) * scale;
      for (int64_t i = 0; i < n; ++i) job->store(gx + i * job->gxs[last], v);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        job->store(gx + i * job->gxs[last], job->load(g + i * job->gs[last]) * scale);
      }
    }
  }
}

static void ct_rgrad_do_groups(int64_t begin, int64_t end, void* context) {
  const ct_rgrad_job* job = context;
  for (int64_t group = begin; group < end; ++group) ct_rgrad_group(job, group);
}

/* Element access per dtype, in double. */
#define CT_RGRAD_ACCESS_X(A, SFX, T, C, U, ID)          \
  static double ct_rgrad_load_##SFX(const char* p) {    \
    T v;                                                \
    memcpy(&v, p, sizeof v);                            \
    return (double)ct_load_##SFX(v);                    \
  }                                                     \
  static void ct_rgrad_store_##SFX(char* p, double v) { \
    const T t = ct_store_##SFX((C)v);                   \
    memcpy(p, &t, sizeof t);                            \
  }
CT_CPU_FLOAT_TYPES(CT_RGRAD_ACCESS_X, _)

/* Splits x's dims into kept and reduced ones (inputs: grad_out, x[, out]). */
static int ct_rgrad_run(const ct_kernel_call* call, ct_rgrad_kind kind, ct_rgrad_load_fn load,
                        ct_rgrad_store_fn store) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->num_inputs > 2 ? call->inputs[2] : NULL;
  const ct_tensor* gx = call->outputs[0];
  const int64_t size = ct_dtype_size(x->dtype);
  ct_rgrad_job job;
  memset(&job, 0, sizeof job);
  job.kind = kind;
  job.load = load;
  job.store = store;
  job.g = ct_tensor_base(g);
  job.x = ct_tensor_base(x);
  job.out = out ? ct_tensor_base(out) : NULL;
  job.gx = ct_tensor_base(gx);
  job.group_size = 1;
  if (kind == CT_RGRAD_VAR || kind == CT_RGRAD_STD) job.correction = call->attrs[2].value.f;
  bool mask[CT_MAX_NDIM];
  const ct_attr_value* axis = &call->attrs[0];
  job.full = axis->type == CT_ATTR_NONE;
  for (int32_t k = 0; k < x->ndim; ++k) mask[k] = axis->type == CT_ATTR_NONE;
  if (axis->type != CT_ATTR_NONE) {
    const int64_t count = axis->type == CT_ATTR_INT_LIST ? axis->count : 1;
    for (int64_t j = 0; j < count; ++j) {
      int64_t a = axis->type == CT_ATTR_INT_LIST ? axis->value.ints[j] : axis->value.i;
      if (a < 0) a += x->ndim;
      mask[a] = true;
    }
  }
  const bool keepdims = call->attrs[1].value.b != 0;
  int64_t groups = 1;
  for (int32_t k = 0, r = 0; k < x->ndim; ++k) {
    job.shape[k] = x->shape[k];
    job.xs[k] = ct_tensor_stride(x, k) * size;
    job.gxs[k] = ct_tensor_stride(gx, k) * size;
    job.gs[k] = mask[k] || x->shape[k] == 1 ? 0 : ct_tensor_stride(g, r) * size;
    job.os[k] = mask[k] || x->shape[k] == 1 || !out ? 0 : ct_tensor_stride(out, r) * size;
    if (mask[k]) {
      if (x->shape[k] == 1) { /* an extent-1 reduced dim adds nothing to the group */
        if (keepdims) ++r;
        continue;
      }
      job.inner_shape[job.n_inner] = x->shape[k];
      job.x_inner[job.n_inner] = ct_tensor_stride(x, k) * size;
      job.gx_inner[job.n_inner] = ct_tensor_stride(gx, k) * size;
      job.group_size *= x->shape[k];
      ++job.n_inner;
      if (keepdims) ++r;
      continue;
    }
    job.outer_shape[job.n_outer] = x->shape[k];
    job.x_outer[job.n_outer] = ct_tensor_stride(x, k) * size;
    job.gx_outer[job.n_outer] = ct_tensor_stride(gx, k) * size;
    job.g_outer[job.n_outer] = ct_tensor_stride(g, r) * size;
    job.o_outer[job.n_outer] = out ? ct_tensor_stride(out, r) * size : 0;
    groups *= x->shape[k];
    ++job.n_outer;
    ++r;
  }
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (x->shape[k] == 0) return CT_OK; /* nothing to write */
  }
  job.ndim = x->ndim;
  if (kind == CT_RGRAD_SUM || kind == CT_RGRAD_MEAN || kind == CT_RGRAD_LOGSUMEXP) {
    if (x->ndim == 0) {
      job.ndim = 1;
      job.shape[0] = 1;
    }
    const int64_t n = job.shape[job.ndim - 1];
    ct_cpu_parallel_for(ct_tensor_numel(x) / n, n, ct_rgrad_do_rows, &job);
    return CT_OK;
  }
  ct_cpu_parallel_for(groups, job.group_size * 2 + 1, ct_rgrad_do_groups, &job);
  return CT_OK;
}

/* ----- scans ----- */

typedef struct ct_sgrad_job {
  bool prod;
  ct_rgrad_load_fn load;
  ct_rgrad_store_fn store;
  int32_t outer_ndim;
  int64_t outer_shape[CT_MAX_NDIM];
  int64_t g_strides[CT_MAX_NDIM], x_strides[CT_MAX_NDIM], o_strides[CT_MAX_NDIM],
      gx_strides[CT_MAX_NDIM];
  const char *g, *x, *out;
  char* gx;
  int64_t g_step, x_step, o_step, gx_step, n;
  int include_initial;
} ct_sgrad_job;

static void ct_sgrad_lane(const ct_sgrad_job* job, const char* g, const char* x, const char* out,
                          char* gx) {
  const int64_t n = job->n;
  const int64_t shift = job->include_initial ? 1 : 0; /* g[i + shift] is x[i]'s output */
  double s = 0.0;
  for (int64_t i = n - 1; i >= 0; --i) {
    const double gi = job->load(g + (i + shift) * job->g_step);
    if (!job->prod) {
      s += gi;
      job->store(gx + i * job->gx_step, s);
      continue;
    }
    /* s[i] = g[i] + x[i+1] s[i+1]; grad_x[i] = (prefix product before i) * s[i]. */
    s = i + 1 < n ? gi + job->load(x + (i + 1) * job->x_step) * s : gi;
    const int64_t before = i - 1 + shift; /* out's index of the product of x[0..i-1] */
    const double prefix = before >= 0 ? job->load(out + before * job->o_step) : 1.0;
    job->store(gx + i * job->gx_step, prefix * s);
  }
}

static void ct_sgrad_do_lanes(int64_t begin, int64_t end, void* context) {
  const ct_sgrad_job* job = context;
  for (int64_t lane = begin; lane < end; ++lane) {
    int64_t rest = lane, go = 0, xo = 0, oo = 0, gxo = 0;
    for (int32_t d = job->outer_ndim - 1; d >= 0; --d) {
      const int64_t i = rest % job->outer_shape[d];
      rest /= job->outer_shape[d];
      go += i * job->g_strides[d];
      xo += i * job->x_strides[d];
      oo += i * job->o_strides[d];
      gxo += i * job->gx_strides[d];
    }
    ct_sgrad_lane(job, job->g + go, job->x + xo, job->out ? job->out + oo : NULL, job->gx + gxo);
  }
}

static int ct_sgrad_run(const ct_kernel_call* call, bool prod, ct_rgrad_load_fn load,
                        ct_rgrad_store_fn store) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->num_inputs > 2 ? call->inputs[2] : NULL;
  const ct_tensor* gx = call->outputs[0];
  const int64_t size = ct_dtype_size(x->dtype);
  ct_sgrad_job job;
  memset(&job, 0, sizeof job);
  job.prod = prod;
  job.load = load;
  job.store = store;
  job.include_initial = call->attrs[1].value.b;
  job.g = ct_tensor_base(g);
  job.x = ct_tensor_base(x);
  job.out = out ? ct_tensor_base(out) : NULL;
  job.gx = ct_tensor_base(gx);
  int64_t lanes = 1;
  if (x->ndim == 0) {
    job.n = 1;
    job.g_step = ct_tensor_stride(g, 0) * size;
    job.o_step = out ? ct_tensor_stride(out, 0) * size : 0;
  } else {
    int64_t axis = call->attrs[0].type == CT_ATTR_NONE ? 0 : call->attrs[0].value.i;
    if (axis < 0) axis += x->ndim;
    job.n = x->shape[axis];
    for (int32_t d = 0, o = 0; d < x->ndim; ++d) {
      if (d == axis) {
        job.g_step = ct_tensor_stride(g, d) * size;
        job.x_step = ct_tensor_stride(x, d) * size;
        job.o_step = out ? ct_tensor_stride(out, d) * size : 0;
        job.gx_step = ct_tensor_stride(gx, d) * size;
        continue;
      }
      job.outer_shape[o] = x->shape[d];
      job.g_strides[o] = ct_tensor_stride(g, d) * size;
      job.x_strides[o] = ct_tensor_stride(x, d) * size;
      job.o_strides[o] = out ? ct_tensor_stride(out, d) * size : 0;
      job.gx_strides[o] = ct_tensor_stride(gx, d) * size;
      lanes *= x->shape[d];
      ++o;
    }
    job.outer_ndim = x->ndim - 1;
  }
  if (lanes == 0 || job.n == 0) return CT_OK;
  ct_cpu_parallel_for(lanes, job.n + 1, ct_sgrad_do_lanes, &job);
  return CT_OK;
}

/* ----- kernels: one named function per op and dtype ----- */

#define CT_RGRAD_KERNELS_X(A, SFX, T, C, U, ID)                                               \
  static int ct_cpu_sum_backward_##SFX(const ct_kernel_call* call) {                          \
    return ct_rgrad_run(call, CT_RGRAD_SUM, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX);       \
  }                                                                                           \
  static int ct_cpu_mean_backward_##SFX(const ct_kernel_call* call) {                         \
    return ct_rgrad_run(call, CT_RGRAD_MEAN, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX);      \
  }                                                                                           \
  static int ct_cpu_prod_backward_##SFX(const ct_kernel_call* call) {                         \
    return ct_rgrad_run(call, CT_RGRAD_PROD, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX);      \
  }                                                                                           \
  static int ct_cpu_max_backward_##SFX(const ct_kernel_call* call) {                          \
    return ct_rgrad_run(call, CT_RGRAD_MAX, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX);       \
  }                                                                                           \
  static int ct_cpu_logsumexp_backward_##SFX(const ct_kernel_call* call) {                    \
    return ct_rgrad_run(call, CT_RGRAD_LOGSUMEXP, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX); \
  }                                                                                           \
  static int ct_cpu_var_backward_##SFX(const ct_kernel_call* call) {                          \
    return ct_rgrad_run(call, CT_RGRAD_VAR, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX);       \
  }                                                                                           \
  static int ct_cpu_std_backward_##SFX(const ct_kernel_call* call) {                          \
    return ct_rgrad_run(call, CT_RGRAD_STD, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX);       \
  }                                                                                           \
  static int ct_cpu_cumulative_sum_backward_##SFX(const ct_kernel_call* call) {               \
    return ct_sgrad_run(call, false, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX);              \
  }                                                                                           \
  static int ct_cpu_cumulative_prod_backward_##SFX(const ct_kernel_call* call) {              \
    return ct_sgrad_run(call, true, ct_rgrad_load_##SFX, ct_rgrad_store_##SFX);               \
  }
CT_CPU_FLOAT_TYPES(CT_RGRAD_KERNELS_X, _)

/* ----- registration ----- */

#define CT_RGRAD_REG2(NAME, SFX, ID) {#NAME, 3, {ID, ID, ID}, ct_cpu_##NAME##_##SFX, NULL, NULL},
#define CT_RGRAD_REG3(NAME, SFX, ID) \
  {#NAME, 4, {ID, ID, ID, ID}, ct_cpu_##NAME##_##SFX, NULL, NULL},
#define CT_RGRAD_REG_X(A, SFX, T, C, U, ID)                                                    \
  CT_RGRAD_REG2(sum_backward, SFX, ID)                                                         \
  CT_RGRAD_REG2(mean_backward, SFX, ID)                                                        \
  CT_RGRAD_REG2(prod_backward, SFX, ID)                                                        \
  CT_RGRAD_REG3(max_backward, SFX, ID){                                                        \
      "min_backward", 4, {ID, ID, ID, ID}, ct_cpu_max_backward_##SFX, NULL, NULL},             \
      CT_RGRAD_REG3(logsumexp_backward, SFX, ID) CT_RGRAD_REG2(var_backward, SFX, ID)          \
          CT_RGRAD_REG3(std_backward, SFX, ID) CT_RGRAD_REG2(cumulative_sum_backward, SFX, ID) \
              CT_RGRAD_REG3(cumulative_prod_backward, SFX, ID)

static const ct_cpu_kernel ct_cpu_reduce_grad_kernels[] = {CT_CPU_FLOAT_TYPES(CT_RGRAD_REG_X, _)};

int ct_cpu_register_reduce_grad(void) {
  return ct_cpu_register_all(ct_cpu_reduce_grad_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_reduce_grad_kernels));
}
