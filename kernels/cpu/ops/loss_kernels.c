/* loss_kernels.c - the losses and their backward operators (capi/ops/loss_ops.c says what each
 * computes): cross_entropy, nll_loss (class axis), binary_cross_entropy_with_logits, mse_loss,
 * smooth_l1_loss (element-wise).
 *
 * Class-axis losses: per sample row the maximum, then the sum of exponentials and the target's
 * entry, rows spread over threads. Contiguous float32 rows run vector_math's loops, and with a
 * class-index target (no smoothing) take one pass: shifted by the target's logit, lse - x[y] =
 * log(sum_c exp(x[c] - x[y])), whose sum is at least 1; only a sum that overflows (a logit 88
 * above the target's) or is nan falls back to the two passes.
 * Class indices are checked, and the mean's denominator (the summed weight of the samples not
 * ignored) summed, by a serial pre-pass over the targets before anything is written, so an
 * out-of-range index leaves the outputs untouched.
 *
 * Reductions: the samples (elements) are cut into at most CT_LOSS_BLOCKS blocks fixed by their
 * count, each summed in double in order, the block sums then added in order: results do not
 * depend on the thread count. float16/bfloat16/float32 compute in float, float64 in double. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/reduce_layout.h"
#include "engine/strided_iter.h"
#include "math/sleef_math.h"
#include "math/vector_math.h"

#define CT_LOSS_BLOCKS 256       /* most blocks a reduction sums */
#define CT_LOSS_POINT_GRAIN 2048 /* least elements of a block of an element-wise loss */
#define CT_LOSS_LANES 8          /* independent accumulators of a row's sum */
#define CT_LOSS_OPERANDS 8
#define CT_LOSS_CHUNK 256 /* elements of BCE's log1p chunks */

enum { CT_LOSS_NONE = 0, CT_LOSS_MEAN = 1, CT_LOSS_SUM = 2 };
enum { CT_POINT_BCE, CT_POINT_MSE, CT_POINT_SMOOTH_L1 };

static int ct_loss_mode(const ct_attr_value* value) {
  const char* s = value->value.s;
  return strcmp(s, "none") == 0 ? CT_LOSS_NONE : strcmp(s, "sum") == 0 ? CT_LOSS_SUM : CT_LOSS_MEAN;
}

static inline float ct_loss_exp_float(float v) {
  return ct_exp_f32(v);
}
static inline double ct_loss_exp_double(double v) {
  return exp(v);
}
static inline float ct_loss_log1p_float(float v) {
  return log1pf(v);
}
static inline double ct_loss_log1p_double(double v) {
  return log1p(v);
}

static inline double ct_loss_lanes_total(double* acc) {
  for (int w = CT_LOSS_LANES / 2; w > 0; w /= 2) {
    for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
  }
  return acc[0];
}

/* ----- walking the samples (rows or elements) of several operands ----- */

typedef struct ct_loss_walker {
  int32_t ndim, count;
  int64_t shape[CT_MAX_NDIM];
  const char* base[CT_LOSS_OPERANDS]; /* NULL: absent */
  int64_t strides[CT_LOSS_OPERANDS][CT_MAX_NDIM];
} ct_loss_walker;

typedef struct ct_loss_position {
  int64_t index[CT_MAX_NDIM];
  const char* at[CT_LOSS_OPERANDS];
} ct_loss_position;

/* Places p at sample r. Over no samples (an extent 0) only r = 0 comes, and p stays at the
 * bases: the extent is never a divisor then. */
static void ct_loss_walk_start(const ct_loss_walker* w, int64_t r, ct_loss_position* p) {
  for (int32_t k = 0; k < w->count; ++k) p->at[k] = w->base[k];
  for (int32_t d = w->ndim - 1; d >= 0; --d) {
    const int64_t extent = w->shape[d] > 0 ? w->shape[d] : 1;
    const int64_t i = r % extent;
    r /= extent;
    p->index[d] = i;
    for (int32_t k = 0; k < w->count; ++k) {
      if (p->at[k]) p->at[k] += i * w->strides[k][d];
    }
  }
}

static void ct_loss_walk_next(const ct_loss_walker* w, ct_loss_position* p) {
  for (int32_t d = w->ndim - 1; d >= 0; --d) {
    if (++p->index[d] < w->shape[d]) {
      for (int32_t k = 0; k < w->count; ++k) {
        if (p->at[k]) p->at[k] += w->strides[k][d];
      }
      return;
    }
    p->index[d] = 0;
    for (int32_t k = 0; k < w->count; ++k) {
      if (p->at[k]) p->at[k] -= (w->shape[d] - 1) * w->strides[k][d];
    }
  }
}

/* Adds operand t (NULL: absent) to a walker over the rows of a class-axis loss: its byte strides
 * over the row dims (the dims but `axis`, or all of t's when it has no class axis: axis -1) and
 * its byte step along the class axis. */
static void ct_loss_walker_add(ct_loss_walker* w, const ct_tensor* t, int32_t axis, int64_t* step) {
  const int32_t k = w->count++;
  w->base[k] = t ? ct_tensor_base(t) : NULL;
  *step = 0;
  if (!t) return;
  const int64_t size = ct_dtype_size(t->dtype);
  int32_t d = 0;
  for (int32_t i = 0; i < t->ndim; ++i) {
    const int64_t s = ct_tensor_stride(t, i) * size;
    if (i == axis) {
      *step = s;
    } else if (d < w->ndim) {
      w->strides[k][d++] = s;
    }
  }
  for (; d < w->ndim; ++d) w->strides[k][d] = 0; /* a reduced (0-d) sample operand */
}

/* Sample count b's rows of `total` cut into `blocks`. */
static inline void ct_loss_block_range(int64_t b, int64_t blocks, int64_t total, int64_t* begin,
                                       int64_t* end) {
  *begin = b * total / blocks;
  *end = (b + 1) * total / blocks;
}

/* ----- per-dtype bodies ----- */

typedef struct ct_class_job ct_class_job;
typedef struct ct_point_job ct_point_job;

typedef struct ct_loss_fns {
  int64_t size;
  double (*class_forward)(const ct_class_job* j, const char* x, const char* t, int64_t y);
  void (*class_backward)(const ct_class_job* j, const char* x, const char* t, int64_t y, double g,
                         char* gx, char* gt);
  void (*point_run)(const ct_point_job* j, const char* const* at, const int64_t* steps, int64_t len,
                    int64_t e0, double* acc);
  void (*store)(char* p, double v);
  double (*load)(const char* p);
} ct_loss_fns;

/* Operands of a class-axis job's walker. */
enum { CT_CL_X, CT_CL_TARGET, CT_CL_SAMPLE, CT_CL_GRAD_X, CT_CL_GRAD_TARGET };

struct ct_class_job {
  const ct_loss_fns* fns;
  ct_loss_walker walk;
  int64_t step[5]; /* byte step along the class axis per operand (0: none) */
  int64_t rows, classes;
  bool nll, probabilities, backward, has_ignore, target64;
  int64_t ignore;
  int mode;
  double smoothing;
  const char* weight;
  int64_t weight_step;
  double weight_total; /* sum of the weights (classes without) */
  double g;            /* backward, reduced: grad_out over the mean's denominator */
  int64_t blocks;
  double* partial; /* per block */
};

/* Operands of an element-wise job's walker. */
enum {
  CT_PT_X,
  CT_PT_TARGET,
  CT_PT_WEIGHT,
  CT_PT_POS_WEIGHT,
  CT_PT_SAMPLE,
  CT_PT_GRAD_X,
  CT_PT_GRAD_TARGET
};

struct ct_point_job {
  const ct_loss_fns* fns;
  ct_loss_walker walk;
  int kind, mode;
  bool backward;
  double beta;
  int64_t elements, blocks;
  double g; /* backward, reduced: grad_out (over the element count for the mean) */
  double* partial;
};

#define SFX f16
#define CT_LOSS_FLOAT 1
#define T uint16_t
#define C float
#define CT_LOSS_VECTOR 0
#include "loss_impl.h"
#undef SFX
#undef T
#undef C
#undef CT_LOSS_VECTOR
#undef CT_LOSS_FLOAT

#define SFX bf16
#define CT_LOSS_FLOAT 1
#define T uint16_t
#define C float
#define CT_LOSS_VECTOR 0
#include "loss_impl.h"
#undef SFX
#undef T
#undef C
#undef CT_LOSS_VECTOR
#undef CT_LOSS_FLOAT

#define SFX f32
#define CT_LOSS_FLOAT 1
#define T float
#define C float
#define CT_LOSS_VECTOR 1
#include "loss_impl.h"
#undef SFX
#undef T
#undef C
#undef CT_LOSS_VECTOR
#undef CT_LOSS_FLOAT

#define SFX f64
#define CT_LOSS_FLOAT 0
#define T double
#define C double
#define CT_LOSS_VECTOR 0
#include "loss_impl.h"
#undef SFX
#undef T
#undef C
#undef CT_LOSS_VECTOR
#undef CT_LOSS_FLOAT

/* ----- class-axis losses ----- */

static int32_t ct_loss_axis(int64_t axis, int32_t ndim) {
  if (ndim == 1) return 0;
  return (int32_t)(axis < 0 ? axis + ndim : axis);
}

static inline int64_t ct_loss_target_at(const ct_class_job* j, const char* p) {
  return j->target64 ? *(const int64_t*)p : (int64_t)*(const int32_t*)p;
}

static inline bool ct_loss_ignored(const ct_class_job* j, int64_t y) {
  return j->has_ignore && y == j->ignore;
}

/* Sets up the job of a forward (x_first 0) or backward (x_first 1) call. */
static void ct_class_job_init(const ct_kernel_call* call, bool backward, ct_class_job* j) {
  const int32_t first = backward ? 1 : 0;
  const ct_tensor* x = call->inputs[first];
  const ct_tensor* target = call->inputs[first + 1];
  const ct_tensor* weight = call->inputs[first + 2];
  const int32_t axis = ct_loss_axis(call->attrs[0].value.i, x->ndim);
  memset(j, 0, sizeof *j);
  j->fns = call->kernel_data;
  j->nll = strncmp(call->schema->name, "nll_loss", 8) == 0;
  j->backward = backward;
  j->probabilities = ct_dtype_is_float(target->dtype);
  j->target64 = target->dtype.bits == 64;
  j->mode = ct_loss_mode(&call->attrs[1]);
  j->has_ignore = call->attrs[2].type != CT_ATTR_NONE;
  j->ignore = j->has_ignore ? call->attrs[2].value.i : 0;
  j->smoothing = call->schema->num_attrs > 3 ? call->attrs[3].value.f : 0.0;
  j->classes = x->shape[axis];
  ct_loss_walker* w = &j->walk;
  w->ndim = 0;
  j->rows = 1;
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (k == axis) continue;
    w->shape[w->ndim++] = x->shape[k];
    j->rows *= x->shape[k];
  }
  const ct_tensor* sample = backward ? call->inputs[0] : call->outputs[0];
  ct_loss_walker_add(w, x, axis, &j->step[CT_CL_X]);
  ct_loss_walker_add(w, target, j->probabilities ? axis : -1, &j->step[CT_CL_TARGET]);
  ct_loss_walker_add(w, sample, -1, &j->step[CT_CL_SAMPLE]);
  ct_loss_walker_add(w, backward ? call->outputs[0] : NULL, axis, &j->step[CT_CL_GRAD_X]);
  ct_loss_walker_add(w, backward && call->num_outputs > 1 ? call->outputs[1] : NULL,
                     j->probabilities ? axis : -1, &j->step[CT_CL_GRAD_TARGET]);
  j->weight = weight ? ct_tensor_base(weight) : NULL;
  j->weight_step = weight ? ct_tensor_stride(weight, 0) * ct_dtype_size(weight->dtype) : 0;
  j->weight_total = (double)j->classes;
  if (weight) {
    double total = 0.0;
    for (int64_t c = 0; c < j->classes; ++c) total += j->fns->load(j->weight + c * j->weight_step);
    j->weight_total = total;
  }
  j->blocks = j->rows < CT_LOSS_BLOCKS ? j->rows : CT_LOSS_BLOCKS;
}

/* The serial pre-pass: every class index in range (or ignored), and the mean's denominator. */
static int ct_class_job_check(const ct_kernel_call* call, ct_class_job* j, double* denominator) {
  if (j->probabilities) {
    *denominator = (double)j->rows;
    return CT_OK;
  }
  double total = 0.0;
  ct_loss_position p;
  ct_loss_walk_start(&j->walk, 0, &p);
  for (int64_t r = 0; r < j->rows; ++r, ct_loss_walk_next(&j->walk, &p)) {
    const int64_t y = ct_loss_target_at(j, p.at[CT_CL_TARGET]);
    if (ct_loss_ignored(j, y)) continue;
    if (y < 0 || y >= j->classes) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: target class index %lld is out of range [0, %lld)%s",
                          call->schema->name, (long long)y, (long long)j->classes,
                          j->has_ignore ? " and is not ignore_index" : "");
    }
    total += j->weight ? j->fns->load(j->weight + y * j->weight_step) : 1.0;
  }
  *denominator = total;
  return CT_OK;
}

static void ct_class_blocks(int64_t begin, int64_t end, void* context) {
  const ct_class_job* j = context;
  const ct_loss_fns* f = j->fns;
  for (int64_t b = begin; b < end; ++b) {
    int64_t r0, r1;
    ct_loss_block_range(b, j->blocks, j->rows, &r0, &r1);
    ct_loss_position p;
    ct_loss_walk_start(&j->walk, r0, &p);
    double total = 0.0;
    for (int64_t r = r0; r < r1; ++r, ct_loss_walk_next(&j->walk, &p)) {
      const char* x = p.at[CT_CL_X];
      const char* t = p.at[CT_CL_TARGET];
      const int64_t y = j->probabilities ? -1 : ct_loss_target_at(j, t);
      const bool ignored = !j->probabilities && ct_loss_ignored(j, y);
      if (!j->backward) {
        const double loss = ignored ? 0.0 : f->class_forward(j, x, t, y);
        if (j->mode == CT_LOSS_NONE) f->store((char*)p.at[CT_CL_SAMPLE], loss);
        total += loss;
        continue;
      }
      char* gx = (char*)p.at[CT_CL_GRAD_X];
      char* gt = (char*)p.at[CT_CL_GRAD_TARGET];
      if (gt && !j->probabilities) f->store(gt, 0.0); /* class indices: no cotangent */
      if (ignored) {
        for (int64_t c = 0; c < j->classes; ++c) f->store(gx + c * j->step[CT_CL_GRAD_X], 0.0);
        continue;
      }
      const double g = j->mode == CT_LOSS_NONE ? f->load(p.at[CT_CL_SAMPLE]) : j->g;
      f->class_backward(j, x, t, y, g, gx, gt);
    }
    if (j->partial) j->partial[b] = total;
  }
}

static int ct_cpu_class_loss_run(const ct_kernel_call* call, bool backward) {
  ct_class_job j;
  ct_class_job_init(call, backward, &j);
  double denominator = 0.0;
  const int status = ct_class_job_check(call, &j, &denominator);
  if (status != CT_OK) return status;
  double partial[CT_LOSS_BLOCKS];
  j.partial = !backward && j.mode != CT_LOSS_NONE ? partial : NULL;
  if (backward && j.mode != CT_LOSS_NONE) {
    j.g = j.fns->load(ct_tensor_base(call->inputs[0]));
    if (j.mode == CT_LOSS_MEAN) j.g /= denominator;
  }
  if (j.rows > 0) {
    const int64_t per_row = j.nll ? 1 : ct_size_add(ct_size_mul(4, j.classes), 1);
    const int64_t per_block = ct_size_mul(j.rows / j.blocks, per_row);
    ct_cpu_parallel_for(j.blocks, per_block, ct_class_blocks, &j);
  }
  if (j.partial) {
    double total = 0.0;
    for (int64_t b = 0; b < j.blocks; ++b) total += partial[b];
    if (j.mode == CT_LOSS_MEAN) total /= denominator;
    j.fns->store(ct_tensor_base(call->outputs[0]), total);
  }
  return CT_OK;
}

static int ct_cpu_class_forward_run(const ct_kernel_call* call) {
  return ct_cpu_class_loss_run(call, false);
}
static int ct_cpu_class_backward_run(const ct_kernel_call* call) {
  return ct_cpu_class_loss_run(call, true);
}

/* ----- element-wise losses ----- */

/* Moves p forward by `len` elements along the last dim, carrying into the outer dims at its
 * end (len never passes the end of the current run). */
static void ct_loss_walk_skip(const ct_loss_walker* w, ct_loss_position* p, int64_t len) {
  const int32_t d = w->ndim - 1;
  if (d < 0) return;
  p->index[d] += len - 1;
  for (int32_t k = 0; k < w->count; ++k) {
    if (p->at[k]) p->at[k] += (len - 1) * w->strides[k][d];
  }
  ct_loss_walk_next(w, p);
}

static void ct_point_blocks(int64_t begin, int64_t end, void* context) {
  const ct_point_job* j = context;
  const ct_loss_walker* w = &j->walk;
  const int32_t last = w->ndim - 1;
  int64_t steps[CT_LOSS_OPERANDS] = {0};
  for (int32_t k = 0; k < w->count && last >= 0; ++k) steps[k] = w->strides[k][last];
  for (int64_t b = begin; b < end; ++b) {
    int64_t e0, e1;
    ct_loss_block_range(b, j->blocks, j->elements, &e0, &e1);
    ct_loss_position p;
    ct_loss_walk_start(w, e0, &p);
    double acc[CT_LOSS_LANES] = {0.0};
    for (int64_t e = e0; e < e1;) {
      const int64_t left = last >= 0 ? w->shape[last] - p.index[last] : 1;
      const int64_t len = left < e1 - e ? left : e1 - e;
      j->fns->point_run(j, p.at, steps, len, e, acc);
      e += len;
      if (e < e1) ct_loss_walk_skip(w, &p, len);
    }
    if (j->partial) j->partial[b] = ct_loss_lanes_total(acc);
  }
}

static int ct_cpu_point_loss_run(const ct_kernel_call* call, bool backward) {
  ct_point_job j;
  memset(&j, 0, sizeof j);
  j.fns = call->kernel_data;
  j.backward = backward;
  const char* name = call->schema->name;
  j.kind = name[0] == 'b' ? CT_POINT_BCE : name[0] == 'm' ? CT_POINT_MSE : CT_POINT_SMOOTH_L1;
  j.mode = ct_loss_mode(&call->attrs[0]);
  j.beta = j.kind == CT_POINT_SMOOTH_L1 ? call->attrs[1].value.f : 0.0;
  const int32_t first = backward ? 1 : 0;
  const int32_t inputs = call->num_inputs - first;
  /* the element shape: the broadcast of x and target (logits' shape for BCE) */
  const ct_tensor* x = call->inputs[first];
  const ct_tensor* target = call->inputs[first + 1];
  ct_loss_walker* w = &j.walk;
  w->ndim = x->ndim > target->ndim ? x->ndim : target->ndim;
  for (int32_t d = 0; d < w->ndim; ++d) {
    const int32_t dx = d - (w->ndim - x->ndim), dt = d - (w->ndim - target->ndim);
    const int64_t ex = dx >= 0 ? x->shape[dx] : 1, et = dt >= 0 ? target->shape[dt] : 1;
    w->shape[d] = ex == 1 ? et : ex;
  }
  j.elements = 1;
  for (int32_t d = 0; d < w->ndim; ++d) j.elements *= w->shape[d];
  const ct_tensor* operands[CT_LOSS_OPERANDS] = {NULL};
  for (int32_t i = 0; i < inputs; ++i) operands[CT_PT_X + i] = call->inputs[first + i];
  operands[CT_PT_SAMPLE] = backward ? call->inputs[0] : call->outputs[0];
  if (backward) {
    operands[CT_PT_GRAD_X] = call->outputs[0];
    operands[CT_PT_GRAD_TARGET] = call->num_outputs > 1 ? call->outputs[1] : NULL;
  }
  w->count = CT_PT_GRAD_TARGET + 1;
  for (int32_t k = 0; k < w->count; ++k) {
    const ct_tensor* t = operands[k];
    w->base[k] = t ? ct_tensor_base(t) : NULL;
    if (t && t->ndim > 0) {
      ct_cpu_broadcast_strides(t, w->ndim, w->shape, w->strides[k]);
    } else {
      for (int32_t d = 0; d < w->ndim; ++d) w->strides[k][d] = 0;
    }
  }
  int64_t blocks = j.elements / CT_LOSS_POINT_GRAIN;
  j.blocks = blocks < 1 ? 1 : blocks > CT_LOSS_BLOCKS ? CT_LOSS_BLOCKS : blocks;
  double partial[CT_LOSS_BLOCKS];
  j.partial = !backward && j.mode != CT_LOSS_NONE ? partial : NULL;
  if (backward && j.mode != CT_LOSS_NONE) {
    j.g = j.fns->load(ct_tensor_base(call->inputs[0]));
    if (j.mode == CT_LOSS_MEAN) j.g /= (double)j.elements;
  }
  if (j.elements > 0) {
    ct_cpu_parallel_for(j.blocks, ct_size_mul(j.elements / j.blocks, 8), ct_point_blocks, &j);
  } else if (j.partial) {
    partial[0] = 0.0;
  }
  if (j.partial) {
    double total = 0.0;
    for (int64_t b = 0; b < j.blocks; ++b) total += partial[b];
    if (j.mode == CT_LOSS_MEAN) total /= (double)j.elements;
    j.fns->store(ct_tensor_base(call->outputs[0]), total);
  }
  return CT_OK;
}

static int ct_cpu_point_forward_run(const ct_kernel_call* call) {
  return ct_cpu_point_loss_run(call, false);
}
static int ct_cpu_point_backward_run(const ct_kernel_call* call) {
  return ct_cpu_point_loss_run(call, true);
}

/* ----- the kernel list ----- */

#define CT_LOSS_REG(SFX, ID)                                                                        \
  {                                                                                                 \
      "cross_entropy",          4,    {ID, CT_DT_I64, ID, ID},                                      \
      ct_cpu_class_forward_run, NULL, &ct_loss_fns_##SFX},                                          \
      {"cross_entropy",          4,    {ID, CT_DT_I32, ID, ID},                                     \
       ct_cpu_class_forward_run, NULL, &ct_loss_fns_##SFX},                                         \
      {"cross_entropy", 4, {ID, ID, ID, ID}, ct_cpu_class_forward_run, NULL, &ct_loss_fns_##SFX},   \
      {"cross_entropy_backward",  6,    {ID, ID, CT_DT_I64, ID, ID, ID},                            \
       ct_cpu_class_backward_run, NULL, &ct_loss_fns_##SFX},                                        \
      {"cross_entropy_backward",  6,    {ID, ID, CT_DT_I32, ID, ID, ID},                            \
       ct_cpu_class_backward_run, NULL, &ct_loss_fns_##SFX},                                        \
      {"cross_entropy_backward",  6,    {ID, ID, ID, ID, ID, ID},                                   \
       ct_cpu_class_backward_run, NULL, &ct_loss_fns_##SFX},                                        \
      {"nll_loss", 4, {ID, CT_DT_I64, ID, ID}, ct_cpu_class_forward_run, NULL, &ct_loss_fns_##SFX}, \
      {"nll_loss", 4, {ID, CT_DT_I32, ID, ID}, ct_cpu_class_forward_run, NULL, &ct_loss_fns_##SFX}, \
      {"nll_loss_backward",       5,    {ID, ID, CT_DT_I64, ID, ID},                                \
       ct_cpu_class_backward_run, NULL, &ct_loss_fns_##SFX},                                        \
      {"nll_loss_backward",       5,    {ID, ID, CT_DT_I32, ID, ID},                                \
       ct_cpu_class_backward_run, NULL, &ct_loss_fns_##SFX},                                        \
      {"binary_cross_entropy_with_logits", 5,    {ID, ID, ID, ID, ID},                              \
       ct_cpu_point_forward_run,           NULL, &ct_loss_fns_##SFX},                               \
      {"binary_cross_entropy_with_logits_backward",                                                 \
       7,                                                                                           \
       {ID, ID, ID, ID, ID, ID, ID},                                                                \
       ct_cpu_point_backward_run,                                                                   \
       NULL,                                                                                        \
       &ct_loss_fns_##SFX},                                                                         \
      {"mse_loss", 3, {ID, ID, ID}, ct_cpu_point_forward_run, NULL, &ct_loss_fns_##SFX},            \
      {"mse_loss_backward",       4,    {ID, ID, ID, ID},                                           \
       ct_cpu_point_backward_run, NULL, &ct_loss_fns_##SFX},                                        \
      {"smooth_l1_loss", 3, {ID, ID, ID}, ct_cpu_point_forward_run, NULL, &ct_loss_fns_##SFX},      \
      {"smooth_l1_loss_backward", 4,    {ID, ID, ID, ID},                                           \
       ct_cpu_point_backward_run, NULL, &ct_loss_fns_##SFX},

static const ct_cpu_kernel ct_cpu_loss_kernels[] = {CT_LOSS_REG(f16, CT_DT_F16) CT_LOSS_REG(
    bf16, CT_DT_BF16) CT_LOSS_REG(f32, CT_DT_F32) CT_LOSS_REG(f64, CT_DT_F64)};

int ct_cpu_register_loss(void) {
  return ct_cpu_register_all(ct_cpu_loss_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_loss_kernels));
}
