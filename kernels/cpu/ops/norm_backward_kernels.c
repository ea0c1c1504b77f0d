/* norm_backward_kernels.c - the backward ops of softmax, log_softmax, layer_norm, rms_norm,
 * group_norm and batch_norm, and batch_norm_training (the forward that saves its statistics).
 *
 * As norm_kernels.c, every op is one loop over "rows": a row is the set of elements that share
 * one reduction (softmax: one lane along the axis; layer/rms: one index of the leading dims;
 * group: one (sample, group); batch: one channel, over the samples and the spatial dims). Each
 * operand has one element stride per outer (row) and per inner dim. Per row:
 *   softmax      gx = y * (g - sum(g y))
 *   log_softmax  gx = g - exp(y) * sum(g)
 *   layer/group  xhat = (x - mean) rstd, gx = rstd (g w - mean(g w) - xhat mean(g w xhat))
 *   rms          xhat = x rstd, gx = rstd (g w - xhat mean(g w xhat))
 *   batch        gx = w istd (g - mean(g) - xhat mean(g xhat)); in inference gx = g w istd
 * The statistics are recomputed as the forward computes them (double, two passes); row sums
 * accumulate in double, the element-wise steps run in the compute type (float for
 * float16/bfloat16/float32, double for float64).
 *
 * grad_weight and grad_bias (sums of g xhat and g per weight element) of layer, rms and group
 * norm span rows: the rows are cut into blocks by the shape alone, each block sums into its own
 * double partials in the workspace, and the blocks are added in order afterwards, so results do
 * not depend on the thread count. Batch norm's rows are its channels: their sums are the
 * results. Rows contiguous for every operand take loops compiled per ISA (cpu_isa.h) with
 * CT_NB_LANES independent accumulators per sum, widened to double every CT_NB_CHUNK elements; a
 * large output is written with non-temporal stores from a row buffer (stream_store.h). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "engine/int_div.h"
#include "engine/cpu_dtypes.h"
#include "engine/cpu_isa.h"
#include "engine/row_walk.h"
#include "cpu_register.h"
#include "engine/stream_store.h"
#include "engine/strided_iter.h"
#include "math/vector_math.h"

/* The operands with a stride per outer and inner dim: X the input (softmax: the forward's out),
 * G the cotangent, Y the element-wise output (grad_input, or batch_norm_training's out), W the
 * weight, B the bias (batch_norm_training), P the weight element's index (partial sums). */
enum { CT_NB_X, CT_NB_G, CT_NB_Y, CT_NB_W, CT_NB_B, CT_NB_P, CT_NB_OPERANDS };

typedef enum ct_nb_mode {
  CT_NB_SOFTMAX,
  CT_NB_LOG_SOFTMAX,
  CT_NB_LAYER,
  CT_NB_RMS,
  CT_NB_GROUP,
  CT_NB_BATCH,      /* batch_norm_backward */
  CT_NB_BATCH_TRAIN /* batch_norm_training (forward) */
} ct_nb_mode;

/* Most blocks of rows with their own partial sums; a block has at least this many elements. */
#define CT_NB_MAX_BLOCKS 64
#define CT_NB_BLOCK_ELEMENTS 16384
/* Independent accumulators of the contiguous loops (whole vectors of every ISA). */
#define CT_NB_LANES 64 /* four AVX-512 float vectors: independent add chains */
/* Rows up to this many elements are streamed through a buffer on the stack. */
#define CT_NB_ROW_BUFFER_BYTES 16384

typedef struct ct_nb_job {
  ct_nb_mode mode;
  int32_t outer_nd, inner_nd; /* inner_nd >= 1 */
  int64_t outer_shape[CT_MAX_NDIM], inner_shape[CT_MAX_NDIM];
  int64_t rows, inner;
  int64_t outer_strides[CT_NB_OPERANDS][CT_MAX_NDIM];
  int64_t inner_strides[CT_NB_OPERANDS][CT_MAX_NDIM];
  const char* base[CT_NB_OPERANDS]; /* NULL for an absent operand; P is never read */
  bool contiguous;                  /* every row one run for X, G, Y and W (when present) */
  double eps, momentum;
  bool training;
  /* Per-row vectors of the batch modes (element strides, NULL when absent). */
  const char* mean_in; /* batch_norm_backward: save_mean (or running_mean) */
  const char* istd_in; /* batch_norm_backward: save_invstd (or running_var) */
  int64_t mean_in_stride, istd_in_stride;
  char* row_out[4]; /* batch_norm_training: save_mean, save_invstd, new running mean, var */
  const char* running[2];
  int64_t row_out_stride[4], running_stride[2];
  /* grad_weight and grad_bias (layer, rms, group, batch): P elements, shaped pshape. */
  char* gw;
  char* gb;
  int32_t pnd;
  int64_t pshape[CT_MAX_NDIM], gw_strides[CT_MAX_NDIM], gb_strides[CT_MAX_NDIM];
  int64_t params;
  int64_t blocks, rows_per_block;
  void* partials; /* blocks x 2 x params doubles (workspace) */
} ct_nb_job;

static inline int64_t ct_nb_offset(int64_t flat, int32_t nd, const int64_t* shape,
                                   const int64_t* strides) {
  int64_t offset = 0;
  for (int32_t k = nd - 1; k >= 0; --k) {
    offset += (flat % shape[k]) * strides[k];
    flat /= shape[k];
  }
  return offset;
}

static bool ct_nb_has_partials(ct_nb_mode mode) {
  return mode == CT_NB_LAYER || mode == CT_NB_RMS || mode == CT_NB_GROUP;
}

/* The job of a call; the infer function validated shapes and attributes. */
static int ct_nb_prepare(const ct_kernel_call* call, ct_nb_mode mode, double default_eps,
                         ct_nb_job* job) {
  memset(job, 0, sizeof(*job));
  job->mode = mode;
  const ct_tensor* ops[CT_NB_OPERANDS] = {NULL};
  const ct_tensor* x;
  /* ct_op_workspace may describe no outputs: the workspace depends on the inputs only */
  const bool outs = call->outputs && call->num_outputs > 0;
  switch (mode) {
    case CT_NB_SOFTMAX:
    case CT_NB_LOG_SOFTMAX: {
      ops[CT_NB_G] = call->inputs[0];
      ops[CT_NB_X] = x = call->inputs[1];
      ops[CT_NB_Y] = outs ? call->outputs[0] : NULL;
      int64_t axis = call->attrs[0].value.i;
      if (axis < 0) axis += x->ndim > 0 ? x->ndim : 1;
      for (int32_t k = 0; k < x->ndim; ++k) {
        const bool in = k == axis;
        const int32_t slot = in ? 0 : job->outer_nd++;
        if (in) {
          job->inner_nd = 1;
          job->inner_shape[0] = x->shape[k];
        } else {
          job->outer_shape[slot] = x->shape[k];
        }
        for (int32_t i = CT_NB_X; i <= CT_NB_Y; ++i) {
          (in ? job->inner_strides : job->outer_strides)[i][slot] = ct_tensor_stride(ops[i], k);
        }
      }
      break;
    }
    case CT_NB_LAYER:
    case CT_NB_RMS: {
      ops[CT_NB_G] = call->inputs[0];
      ops[CT_NB_X] = x = call->inputs[1];
      ops[CT_NB_W] = call->inputs[2];
      ops[CT_NB_Y] = outs ? call->outputs[0] : NULL;
      const int32_t lead = x->ndim - (int32_t)call->attrs[0].count;
      job->outer_nd = lead;
      job->inner_nd = x->ndim - lead;
      int64_t compact = 1;
      for (int32_t k = x->ndim - 1; k >= 0; --k) {
        for (int32_t i = 0; i < CT_NB_P; ++i) {
          if (!ops[i]) continue;
          const bool param = i == CT_NB_W;
          if (k < lead) {
            job->outer_strides[i][k] = param ? 0 : ct_tensor_stride(ops[i], k);
          } else {
            job->inner_strides[i][k - lead] = ct_tensor_stride(ops[i], param ? k - lead : k);
          }
        }
        if (k < lead) {
          job->outer_shape[k] = x->shape[k];
        } else {
          job->inner_shape[k - lead] = x->shape[k];
          job->inner_strides[CT_NB_P][k - lead] = compact;
          compact *= x->shape[k];
        }
      }
      job->params = compact;
      job->pnd = job->inner_nd;
      for (int32_t k = 0; k < job->pnd; ++k) job->pshape[k] = x->shape[lead + k];
      job->eps = call->attrs[1].type == CT_ATTR_FLOAT ? call->attrs[1].value.f : default_eps;
      break;
    }
    case CT_NB_GROUP: {
      ops[CT_NB_G] = call->inputs[0];
      ops[CT_NB_X] = x = call->inputs[1];
      ops[CT_NB_W] = call->inputs[2];
      ops[CT_NB_Y] = outs ? call->outputs[0] : NULL;
      const int64_t groups = call->attrs[0].value.i, cg = x->shape[1] / groups;
      job->outer_nd = 2;
      job->outer_shape[0] = x->shape[0];
      job->outer_shape[1] = groups;
      job->inner_nd = x->ndim - 1;
      job->inner_shape[0] = cg;
      for (int32_t k = 2; k < x->ndim; ++k) job->inner_shape[k - 1] = x->shape[k];
      for (int32_t i = 0; i < CT_NB_P; ++i) {
        if (!ops[i]) continue;
        if (i == CT_NB_W) {
          job->outer_strides[i][1] = cg * ct_tensor_stride(ops[i], 0);
          job->inner_strides[i][0] = ct_tensor_stride(ops[i], 0);
          continue;
        }
        job->outer_strides[i][0] = ct_tensor_stride(ops[i], 0);
        job->outer_strides[i][1] = cg * ct_tensor_stride(ops[i], 1);
        for (int32_t k = 1; k < x->ndim; ++k) {
          job->inner_strides[i][k - 1] = ct_tensor_stride(ops[i], k);
        }
      }
      job->outer_strides[CT_NB_P][1] = cg;
      job->inner_strides[CT_NB_P][0] = 1;
      job->params = x->shape[1];
      job->pnd = 1;
      job->pshape[0] = x->shape[1];
      job->eps = call->attrs[1].value.f;
      break;
    }
    case CT_NB_BATCH:
    case CT_NB_BATCH_TRAIN: {
      const bool train = mode == CT_NB_BATCH_TRAIN;
      if (train) {
        ops[CT_NB_X] = x = call->inputs[0];
        ops[CT_NB_W] = call->inputs[3];
        ops[CT_NB_B] = call->inputs[4];
      } else {
        ops[CT_NB_G] = call->inputs[0];
        ops[CT_NB_X] = x = call->inputs[1];
        ops[CT_NB_W] = call->inputs[2];
      }
      ops[CT_NB_Y] = outs ? call->outputs[0] : NULL;
      job->pnd = 1;
      job->pshape[0] = job->params = x->shape[1];
      job->outer_nd = 1;
      job->outer_shape[0] = x->shape[1];
      job->inner_nd = x->ndim - 1;
      job->inner_shape[0] = x->shape[0];
      for (int32_t k = 2; k < x->ndim; ++k) job->inner_shape[k - 1] = x->shape[k];
      for (int32_t i = 0; i < CT_NB_P; ++i) {
        if (!ops[i]) continue;
        if (i == CT_NB_W || i == CT_NB_B) {
          job->outer_strides[i][0] = ct_tensor_stride(ops[i], 0);
          continue;
        }
        job->outer_strides[i][0] = ct_tensor_stride(ops[i], 1);
        job->inner_strides[i][0] = ct_tensor_stride(ops[i], 0);
        for (int32_t k = 2; k < x->ndim; ++k) {
          job->inner_strides[i][k - 1] = ct_tensor_stride(ops[i], k);
        }
      }
      if (train) {
        job->momentum = call->attrs[0].value.f;
        job->eps = call->attrs[1].value.f;
        for (int32_t j = 0; j < 4; ++j) {
          const ct_tensor* t = outs && j + 1 < call->num_outputs ? call->outputs[j + 1] : NULL;
          job->row_out[j] = t ? ct_tensor_base(t) : NULL;
          job->row_out_stride[j] = t ? ct_tensor_stride(t, 0) : 0;
        }
        for (int32_t j = 0; j < 2; ++j) {
          const ct_tensor* t = call->inputs[1 + j];
          job->running[j] = t ? ct_tensor_base(t) : NULL;
          job->running_stride[j] = t ? ct_tensor_stride(t, 0) : 0;
        }
      } else {
        job->training = call->attrs[0].value.b;
        job->eps = call->attrs[1].value.f;
        job->mean_in = ct_tensor_base(call->inputs[3]);
        job->istd_in = ct_tensor_base(call->inputs[4]);
        job->mean_in_stride = ct_tensor_stride(call->inputs[3], 0);
        job->istd_in_stride = ct_tensor_stride(call->inputs[4], 0);
      }
      break;
    }
  }
  if (job->inner_nd == 0) {
    job->inner_nd = 1;
    job->inner_shape[0] = 1;
  }
  /* Saturating: an attribute (group_norm's num_groups) may make a count no tensor has; such a
   * job has no elements to run and its workspace query reports the overflow. */
  job->rows = 1;
  for (int32_t k = 0; k < job->outer_nd; ++k)
    job->rows = ct_size_mul(job->rows, job->outer_shape[k]);
  job->inner = 1;
  for (int32_t k = 0; k < job->inner_nd; ++k)
    job->inner = ct_size_mul(job->inner, job->inner_shape[k]);
  for (int32_t i = 0; i < CT_NB_P; ++i) job->base[i] = ops[i] ? ct_tensor_base(ops[i]) : NULL;
  /* grad_weight, grad_bias */
  if (outs && mode != CT_NB_SOFTMAX && mode != CT_NB_LOG_SOFTMAX && mode != CT_NB_BATCH_TRAIN) {
    const ct_tensor* gw = call->outputs[1];
    const ct_tensor* gb = call->num_outputs > 2 ? call->outputs[2] : NULL;
    job->gw = ct_tensor_base(gw);
    job->gb = gb ? ct_tensor_base(gb) : NULL;
    for (int32_t k = 0; k < job->pnd; ++k) {
      job->gw_strides[k] = ct_tensor_stride(gw, k);
      job->gb_strides[k] = gb ? ct_tensor_stride(gb, k) : 0;
    }
  }
  /* Contiguous rows. */
  job->contiguous = true;
  for (int32_t i = 0; i <= CT_NB_W && job->contiguous; ++i) {
    if (!job->base[i]) continue;
    int64_t expected = 1;
    for (int32_t k = job->inner_nd - 1; k >= 0; --k) {
      if (job->inner_shape[k] > 1 && job->inner_strides[i][k] != expected) {
        job->contiguous = false;
        break;
      }
      expected *= job->inner_shape[k];
    }
  }
  if (mode == CT_NB_BATCH || mode == CT_NB_BATCH_TRAIN || mode == CT_NB_GROUP) {
    job->contiguous = false; /* weight per channel: the strided loops */
  }
  /* Blocks of rows with their own partial sums: from the shape alone. */
  job->blocks = 1;
  job->rows_per_block = job->rows;
  if (ct_nb_has_partials(mode) && job->rows > 0) {
    int64_t blocks = job->rows * job->inner / CT_NB_BLOCK_ELEMENTS;
    if (blocks > CT_NB_MAX_BLOCKS) blocks = CT_NB_MAX_BLOCKS;
    if (blocks > job->rows) blocks = job->rows;
    if (blocks < 1) blocks = 1;
    job->rows_per_block = ct_div_up(job->rows, blocks);
    job->blocks = ct_div_up(job->rows, job->rows_per_block);
  }
  return CT_OK;
}

static uint64_t ct_nb_workspace_bytes(const ct_nb_job* job) {
  if (!ct_nb_has_partials(job->mode) || job->rows == 0) return 0;
  return (uint64_t)ct_size_mul(ct_size_mul(job->blocks, 2 * (int64_t)sizeof(double)), job->params);
}

/* Loops over the elements of one row: BODY sees element offsets x, g, y, w, b and p. */
#define CT_NB_FOR_ROW(job, row_off, ...)                                                           \
  do {                                                                                             \
    const int32_t nd_ = (job)->inner_nd - 1;                                                       \
    const int64_t last_ = (job)->inner_shape[nd_], rest_ = (job)->inner / last_;                   \
    int64_t st_[CT_NB_OPERANDS];                                                                   \
    for (int32_t i_ = 0; i_ < CT_NB_OPERANDS; ++i_) st_[i_] = (job)->inner_strides[i_][nd_];       \
    for (int64_t j_ = 0; j_ < rest_; ++j_) {                                                       \
      int64_t o_[CT_NB_OPERANDS];                                                                  \
      for (int32_t i_ = 0; i_ < CT_NB_OPERANDS; ++i_) {                                            \
        o_[i_] =                                                                                   \
            (row_off)[i_] + ct_nb_offset(j_, nd_, (job)->inner_shape, (job)->inner_strides[i_]);   \
      }                                                                                            \
      int64_t x = o_[CT_NB_X], g = o_[CT_NB_G], y = o_[CT_NB_Y], w = o_[CT_NB_W], b = o_[CT_NB_B], \
              p = o_[CT_NB_P];                                                                     \
      for (int64_t t_ = 0; t_ < last_; ++t_, x += st_[CT_NB_X], g += st_[CT_NB_G],                 \
                   y += st_[CT_NB_Y], w += st_[CT_NB_W], b += st_[CT_NB_B], p += st_[CT_NB_P]) {   \
        (void)x, (void)g, (void)y, (void)w, (void)b, (void)p;                                      \
        __VA_ARGS__                                                                                \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static void ct_nb_row_start(const ct_nb_job* job, int64_t row, int64_t* index, int64_t* off) {
  ct_row_walk_start(job->outer_nd, job->outer_shape, CT_NB_OPERANDS, job->outer_strides, row, index,
                    off);
}

static inline void ct_nb_row_next(const ct_nb_job* job, int64_t* index, int64_t* off) {
  ct_row_walk_next(job->outer_nd, job->outer_shape, CT_NB_OPERANDS, job->outer_strides, index, off);
}

/* Writes `bytes` from a row buffer `src` to dst: whole cache lines with non-temporal stores,
 * the partial lines at both ends with plain ones. src has dst's offset within a line. */
static void ct_nb_stream_row(char* dst, const char* src, int64_t bytes, int mode) {
  const int64_t head = (int64_t)((CT_STREAM_LINE_BYTES - ((uintptr_t)dst % CT_STREAM_LINE_BYTES)) %
                                 CT_STREAM_LINE_BYTES);
  if (head >= bytes) {
    memcpy(dst, src, (size_t)bytes);
    return;
  }
  memcpy(dst, src, (size_t)head);
  const int64_t body = (bytes - head) / CT_STREAM_LINE_BYTES * CT_STREAM_LINE_BYTES;
  ct_stream_copy(dst + head, src + head, body, mode);
  memcpy(dst + head + body, src + head + body, (size_t)(bytes - head - body));
}

/* Prefetches `bytes` at p into the caches, a line at a time: the next row's operands, read
 * while this row is computed (the rows' passes depend on each other, so the hardware
 * prefetcher alone leaves each row's first pass waiting on memory). */
static inline void ct_nb_prefetch(const void* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += CT_STREAM_LINE_BYTES) __builtin_prefetch((const char*)p + b);
}

/* The contiguous rows, per dtype. Sums run in CT_NB_LANES accumulators of the compute type over
 * chunks of CT_NB_CHUNK elements (vector registers), each chunk's lanes then added into double
 * accumulators: the vector width of float, the accuracy of a double sum over chunks. */
#define CT_NB_CHUNK 1024
/* Elements of grad_weight and grad_bias summed at a time over the blocks. */
#define CT_NB_REDUCE_CHUNK 256

/* Adds the lanes of a chunk, pairwise in the compute type, into the double TOTAL and clears
 * them. */
#define CT_NB_WIDEN(TOTAL, R)                                   \
  do {                                                          \
    for (int k_ = 0; k_ < 32; ++k_) (R)[k_] += (R)[k_ + 32];    \
    for (int k_ = 0; k_ < 16; ++k_) (R)[k_] += (R)[k_ + 16];    \
    for (int k_ = 0; k_ < 8; ++k_) (R)[k_] += (R)[k_ + 8];      \
    for (int k_ = 0; k_ < 4; ++k_) (R)[k_] += (R)[k_ + 4];      \
    (TOTAL) += (double)(((R)[0] + (R)[2]) + ((R)[1] + (R)[3])); \
    for (int k_ = 0; k_ < CT_NB_LANES; ++k_) (R)[k_] = 0;       \
  } while (0);
_Static_assert(CT_NB_LANES == 64, "CT_NB_WIDEN adds 64 lanes");

/* layer_norm's sums take one pass, deviations taken from the row's first element; where that
 * element lies so far from the mean that n c^2 (c: the mean deviation) exceeds this many times
 * the sum of squared deviations, the subtraction would cancel digits, and the row takes two
 * passes (the mean first). */
#define CT_NB_SHIFT_RATIO 16.0

#define CT_NB_CONTIGUOUS_DEFINE(SFX, T, C)                                                         \
  /* sum(g * y) (softmax) or sum(g) (log_softmax) */                                               \
  static CT_CPU_ISA_BODY void ct_nb_sum_##SFX##_body(const T* g, const T* y, int64_t n,            \
                                                     double* out) {                                \
    const int64_t whole = n - n % CT_NB_LANES;                                                     \
    double acc = 0.0;                                                                              \
    C r[CT_NB_LANES] = {0};                                                                        \
    for (int64_t i0 = 0; i0 < whole; i0 += CT_NB_CHUNK) {                                          \
      const int64_t i1 = whole - i0 < CT_NB_CHUNK ? whole : i0 + CT_NB_CHUNK;                      \
      if (y) {                                                                                     \
        for (int64_t i = i0; i < i1; i += CT_NB_LANES)                                             \
          for (int k = 0; k < CT_NB_LANES; ++k)                                                    \
            r[k] += ct_load_##SFX(g[i + k]) * ct_load_##SFX(y[i + k]);                             \
      } else {                                                                                     \
        for (int64_t i = i0; i < i1; i += CT_NB_LANES)                                             \
          for (int k = 0; k < CT_NB_LANES; ++k) r[k] += ct_load_##SFX(g[i + k]);                   \
      }                                                                                            \
      CT_NB_WIDEN(acc, r)                                                                          \
    }                                                                                              \
    double total = acc;                                                                            \
    for (int64_t i = whole; i < n; ++i)                                                            \
      total += y ? (double)ct_load_##SFX(g[i]) * (double)ct_load_##SFX(y[i])                       \
                 : (double)ct_load_##SFX(g[i]);                                                    \
    *out = total;                                                                                  \
  }                                                                                                \
  CT_CPU_ISA_LOOP(ct_nb_sum_##SFX, (const T* g, const T* y, int64_t n, double* out),               \
                  (g, y, n, out))                                                                  \
  /* softmax: dst = y (g - s); log_softmax: dst = g - e s, e = exp(y) given in dst (float32) */    \
  static CT_CPU_ISA_BODY void ct_nb_softmax_out_##SFX##_body(                                      \
      const T* restrict g, const T* restrict y, T* restrict dst, int64_t n, C s, int log,          \
      int have_e) {                                                                                \
    if (!log) {                                                                                    \
      for (int64_t i = 0; i < n; ++i) {                                                            \
        const C yv = ct_load_##SFX(y[i]);                                                          \
        dst[i] = ct_store_##SFX(yv * (ct_load_##SFX(g[i]) - s));                                   \
      }                                                                                            \
    } else if (have_e) {                                                                           \
      for (int64_t i = 0; i < n; ++i) {                                                            \
        dst[i] = ct_store_##SFX(ct_load_##SFX(g[i]) - ct_load_##SFX(dst[i]) * s);                  \
      }                                                                                            \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; ++i) {                                                            \
        dst[i] = ct_store_##SFX(ct_load_##SFX(g[i]) - (C)ct_nb_exp_##C(ct_load_##SFX(y[i])) * s);  \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  CT_CPU_ISA_LOOP(ct_nb_softmax_out_##SFX,                                                         \
                  (const T* g, const T* y, T* dst, int64_t n, C s, int log, int have_e),           \
                  (g, y, dst, n, s, log, have_e))                                                  \
  /* layer/rms: sums[0] the mean (0 without center), [1] the squared deviations from it, [2]       \
   * sum(g w), [3] sum(g w (x - mean)). Deviations are taken from the mean rounded to C, m;        \
   * with c = mean - m their sums are corrected: sum (d - c)^2 = sum d^2 - n c^2. */               \
  static CT_CPU_ISA_BODY void ct_nb_norm_sums_##SFX##_body(const T* x, const T* g, const T* w,     \
                                                           int64_t n, int center, double* sums) {  \
    const int64_t whole = n - n % CT_NB_LANES;                                                     \
    double mean = 0.0;                                                                             \
    if (center == 1 && n > 0) {                                                                    \
      mean = (double)ct_load_##SFX(x[0]);                                                          \
    } else if (center) {                                                                           \
      double acc = 0.0;                                                                            \
      C r[CT_NB_LANES] = {0};                                                                      \
      for (int64_t i0 = 0; i0 < whole; i0 += CT_NB_CHUNK) {                                        \
        const int64_t i1 = whole - i0 < CT_NB_CHUNK ? whole : i0 + CT_NB_CHUNK;                    \
        for (int64_t i = i0; i < i1; i += CT_NB_LANES)                                             \
          for (int k = 0; k < CT_NB_LANES; ++k) r[k] += ct_load_##SFX(x[i + k]);                   \
        CT_NB_WIDEN(acc, r)                                                                        \
      }                                                                                            \
      double total = acc;                                                                          \
      for (int64_t i = whole; i < n; ++i) total += (double)ct_load_##SFX(x[i]);                    \
      mean = total / (double)n;                                                                    \
    }                                                                                              \
    const C m = (C)mean;                                                                           \
    double a_sq = 0.0, a_dv = 0.0;                                                                 \
    double a_gw = 0.0, a_gd = 0.0;                                                                 \
    C sq[CT_NB_LANES] = {0}, dv[CT_NB_LANES] = {0}, gs[CT_NB_LANES] = {0}, gd[CT_NB_LANES] = {0};  \
    for (int64_t i0 = 0; i0 < whole; i0 += CT_NB_CHUNK) {                                          \
      const int64_t i1 = whole - i0 < CT_NB_CHUNK ? whole : i0 + CT_NB_CHUNK;                      \
      if (w) {                                                                                     \
        for (int64_t i = i0; i < i1; i += CT_NB_LANES) {                                           \
          for (int k = 0; k < CT_NB_LANES; ++k) {                                                  \
            const C d = ct_load_##SFX(x[i + k]) - m;                                               \
            const C gw = ct_load_##SFX(g[i + k]) * ct_load_##SFX(w[i + k]);                        \
            sq[k] += d * d;                                                                        \
            dv[k] += d;                                                                            \
            gs[k] += gw;                                                                           \
            gd[k] += gw * d;                                                                       \
          }                                                                                        \
        }                                                                                          \
      } else {                                                                                     \
        for (int64_t i = i0; i < i1; i += CT_NB_LANES) {                                           \
          for (int k = 0; k < CT_NB_LANES; ++k) {                                                  \
            const C d = ct_load_##SFX(x[i + k]) - m;                                               \
            const C gw = ct_load_##SFX(g[i + k]);                                                  \
            sq[k] += d * d;                                                                        \
            dv[k] += d;                                                                            \
            gs[k] += gw;                                                                           \
            gd[k] += gw * d;                                                                       \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
      CT_NB_WIDEN(a_sq, sq)                                                                        \
      CT_NB_WIDEN(a_dv, dv)                                                                        \
      CT_NB_WIDEN(a_gw, gs)                                                                        \
      CT_NB_WIDEN(a_gd, gd)                                                                        \
    }                                                                                              \
    double s_sq = a_sq, s_dv = a_dv;                                                               \
    double s_gw = a_gw, s_gd = a_gd;                                                               \
    for (int64_t i = whole; i < n; ++i) {                                                          \
      const double d = (double)(ct_load_##SFX(x[i]) - m);                                          \
      double gw = (double)ct_load_##SFX(g[i]);                                                     \
      if (w) gw *= (double)ct_load_##SFX(w[i]);                                                    \
      s_sq += d * d;                                                                               \
      s_dv += d;                                                                                   \
      s_gw += gw;                                                                                  \
      s_gd += gw * d;                                                                              \
    }                                                                                              \
    const double c = center ? s_dv / (double)n : 0.0;                                              \
    double squares = s_sq - (double)n * c * c;                                                     \
    if (center == 1 && (double)n * c * c > CT_NB_SHIFT_RATIO * squares) {                          \
      ct_nb_norm_sums_##SFX##_body(x, g, w, n, 2, sums);                                           \
      return;                                                                                      \
    }                                                                                              \
    if (squares < 0.0) squares = 0.0;                                                              \
    sums[0] = (double)m + c;                                                                       \
    sums[1] = squares;                                                                             \
    sums[2] = s_gw;                                                                                \
    sums[3] = s_gd - c * s_gw;                                                                     \
  }                                                                                                \
  CT_CPU_ISA_LOOP(ct_nb_norm_sums_##SFX,                                                           \
                  (const T* x, const T* g, const T* w, int64_t n, int center, double* sums),       \
                  (x, g, w, n, center, sums))                                                      \
  /* gx = rstd g w + c1 xhat + c0; partials pw += g xhat, pb += g (pb may be NULL) */              \
  static CT_CPU_ISA_BODY void ct_nb_norm_out_##SFX##_body(                                         \
      const T* restrict x, const T* restrict g, const T* restrict w, T* restrict dst, int64_t n,   \
      C m, C rstd, C c1, C c0, double* restrict pw, double* restrict pb) {                         \
    if (w && pb) {                                                                                 \
      for (int64_t i = 0; i < n; ++i) {                                                            \
        const C gv = ct_load_##SFX(g[i]);                                                          \
        const C xhat = (ct_load_##SFX(x[i]) - m) * rstd;                                           \
        dst[i] = ct_store_##SFX(rstd * (gv * ct_load_##SFX(w[i])) + (c1 * xhat + c0));             \
        pw[i] += gv * xhat;                                                                        \
        pb[i] += gv;                                                                               \
      }                                                                                            \
    } else if (pb) {                                                                               \
      for (int64_t i = 0; i < n; ++i) {                                                            \
        const C gv = ct_load_##SFX(g[i]);                                                          \
        const C xhat = (ct_load_##SFX(x[i]) - m) * rstd;                                           \
        dst[i] = ct_store_##SFX(rstd * gv + (c1 * xhat + c0));                                     \
        pw[i] += gv * xhat;                                                                        \
        pb[i] += gv;                                                                               \
      }                                                                                            \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; ++i) {                                                            \
        const C gv = ct_load_##SFX(g[i]);                                                          \
        const C xhat = (ct_load_##SFX(x[i]) - m) * rstd;                                           \
        const C gwv = w ? gv * ct_load_##SFX(w[i]) : gv;                                           \
        dst[i] = ct_store_##SFX(rstd * gwv + (c1 * xhat + c0));                                    \
        pw[i] += gv * xhat;                                                                        \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  CT_CPU_ISA_LOOP(ct_nb_norm_out_##SFX,                                                            \
                  (const T* x, const T* g, const T* w, T* dst, int64_t n, C m, C rstd, C c1, C c0, \
                   double* pw, double* pb),                                                        \
                  (x, g, w, dst, n, m, rstd, c1, c0, pw, pb))

static inline float ct_nb_exp_float(float v) {
  return ct_exp_f32(v);
}
static inline double ct_nb_exp_double(double v) {
  return exp(v);
}

/* The per-row coefficients of gx = rstd g w + c1 xhat + c0 for layer (center) and rms norm,
 * from n, the mean, the sum of squared deviations and the sums a = sum(g w), b = sum(g w (x -
 * mean)). */
static void ct_nb_norm_coefficients(int64_t n, const double* sums, double eps, int center,
                                    double* rstd, double* c1, double* c0) {
  const double inv_n = 1.0 / (double)n;
  *rstd = 1.0 / sqrt(sums[1] * inv_n + eps);
  /* mean(g w xhat) = rstd b / n */
  const double mb = *rstd * sums[3] * inv_n;
  *c1 = -*rstd * mb;
  *c0 = center ? -*rstd * sums[2] * inv_n : 0.0;
}

#define CT_NB_DEFINE(SFX, T, C, ID)                                                                \
  CT_NB_CONTIGUOUS_DEFINE(SFX, T, C)                                                               \
  /* One contiguous row of layer/rms norm. */                                                      \
  static void ct_nb_norm_row_##SFX(const ct_nb_job* job, const T* x, const T* g, const T* w,       \
                                   T* dst, double* pw, double* pb) {                               \
    const int center = job->mode == CT_NB_LAYER;                                                   \
    double sums[4], rstd, c1, c0;                                                                  \
    ct_nb_norm_sums_##SFX(x, g, w, job->inner, center, sums);                                      \
    ct_nb_norm_coefficients(job->inner, sums, job->eps, center, &rstd, &c1, &c0);                  \
    ct_nb_norm_out_##SFX(x, g, w, dst, job->inner, (C)sums[0], (C)rstd, (C)c1, (C)c0, pw,          \
                         center ? pb : NULL);                                                      \
  }                                                                                                \
  /* One contiguous row of softmax/log_softmax backward. */                                        \
  static void ct_nb_softmax_row_##SFX(const ct_nb_job* job, const T* y, const T* g, T* dst) {      \
    const int log = job->mode == CT_NB_LOG_SOFTMAX;                                                \
    double s;                                                                                      \
    ct_nb_sum_##SFX(g, log ? NULL : y, job->inner, &s);                                            \
    /* float32: exp(y) by vector_math's explicit vector loop, into dst */                          \
    const int have_e = log && sizeof(T) == sizeof(float) && sizeof(C) == sizeof(float);            \
    if (have_e) ct_vector_math_get()->exp_f32((const float*)y, (float*)dst, job->inner, 0);        \
    ct_nb_softmax_out_##SFX(g, y, dst, job->inner, (C)s, log, have_e);                             \
  }                                                                                                \
  /* One strided row of any mode. */                                                               \
  static void ct_nb_strided_row_##SFX(const ct_nb_job* job, int64_t row, const int64_t* off,       \
                                      double* pw, double* pb) {                                    \
    const T* xs = (const T*)job->base[CT_NB_X];                                                    \
    const T* gs = (const T*)job->base[CT_NB_G];                                                    \
    T* ys = (T*)job->base[CT_NB_Y];                                                                \
    const T* ws = (const T*)job->base[CT_NB_W];                                                    \
    const T* bs = (const T*)job->base[CT_NB_B];                                                    \
    const double n = (double)job->inner;                                                           \
    switch (job->mode) {                                                                           \
      case CT_NB_SOFTMAX: {                                                                        \
        double s = 0.0;                                                                            \
        CT_NB_FOR_ROW(job, off,                                                                    \
                      s += (double)ct_load_##SFX(gs[g]) * (double)ct_load_##SFX(xs[x]););          \
        const C sc = (C)s;                                                                         \
        CT_NB_FOR_ROW(job, off, {                                                                  \
          ys[y] = ct_store_##SFX(ct_load_##SFX(xs[x]) * (ct_load_##SFX(gs[g]) - sc));              \
        });                                                                                        \
        return;                                                                                    \
      }                                                                                            \
      case CT_NB_LOG_SOFTMAX: {                                                                    \
        double s = 0.0;                                                                            \
        CT_NB_FOR_ROW(job, off, s += (double)ct_load_##SFX(gs[g]););                               \
        const C sc = (C)s;                                                                         \
        CT_NB_FOR_ROW(job, off, {                                                                  \
          const C e = ct_nb_exp_##C(ct_load_##SFX(xs[x]));                                         \
          ys[y] = ct_store_##SFX(ct_load_##SFX(gs[g]) - e * sc);                                   \
        });                                                                                        \
        return;                                                                                    \
      }                                                                                            \
      case CT_NB_BATCH_TRAIN: {                                                                    \
        double sum = 0.0, squares = 0.0;                                                           \
        CT_NB_FOR_ROW(job, off, sum += (double)ct_load_##SFX(xs[x]););                             \
        const double mean = sum / n;                                                               \
        CT_NB_FOR_ROW(job, off, {                                                                  \
          const double d = (double)ct_load_##SFX(xs[x]) - mean;                                    \
          squares += d * d;                                                                        \
        });                                                                                        \
        const double var = squares / n, istd = 1.0 / sqrt(var + job->eps);                         \
        const C m = (C)mean, r = (C)istd;                                                          \
        const C wv = ws ? ct_load_##SFX(ws[off[CT_NB_W]]) : (C)1;                                  \
        const C bv = bs ? ct_load_##SFX(bs[off[CT_NB_B]]) : (C)0;                                  \
        CT_NB_FOR_ROW(job, off, {                                                                  \
          C v = (ct_load_##SFX(xs[x]) - m) * r;                                                    \
          if (ws) v *= wv;                                                                         \
          if (bs) v += bv;                                                                         \
          ys[y] = ct_store_##SFX(v);                                                               \
        });                                                                                        \
        /* the per-channel outputs last, each read before any is written (they may be the */       \
        /* same views as the running statistics) */                                                \
        /* absent running statistics: zeros and ones */                                            \
        const double mo = job->momentum;                                                           \
        const double rm =                                                                          \
            job->running[0]                                                                        \
                ? (double)ct_load_##SFX(((const T*)job->running[0])[row * job->running_stride[0]]) \
                : 0.0;                                                                             \
        const double rv =                                                                          \
            job->running[1]                                                                        \
                ? (double)ct_load_##SFX(((const T*)job->running[1])[row * job->running_stride[1]]) \
                : 1.0;                                                                             \
        const double update[2] = {(1.0 - mo) * rm + mo * mean,                                     \
                                  (1.0 - mo) * rv + mo * (squares / (n - 1.0))};                   \
        const double values[4] = {mean, istd, update[0], update[1]};                               \
        for (int j = 0; j < 4; ++j) {                                                              \
          if (!job->row_out[j]) continue;                                                          \
          ((T*)job->row_out[j])[row * job->row_out_stride[j]] = ct_store_##SFX((C)values[j]);      \
        }                                                                                          \
        return;                                                                                    \
      }                                                                                            \
      case CT_NB_BATCH: {                                                                          \
        const double mean =                                                                        \
            (double)ct_load_##SFX(((const T*)job->mean_in)[row * job->mean_in_stride]);            \
        double istd = (double)ct_load_##SFX(((const T*)job->istd_in)[row * job->istd_in_stride]);  \
        if (!job->training) istd = 1.0 / sqrt(istd + job->eps);                                    \
        const C m = (C)mean, r = (C)istd;                                                          \
        double sum_g = 0.0, sum_gx = 0.0; /* not a, b: CT_NB_FOR_ROW names offsets so */           \
        CT_NB_FOR_ROW(job, off, {                                                                  \
          const C gv = ct_load_##SFX(gs[g]);                                                       \
          sum_g += (double)gv;                                                                     \
          sum_gx += (double)gv * (double)((ct_load_##SFX(xs[x]) - m) * r);                         \
        });                                                                                        \
        const C wv = ws ? ct_load_##SFX(ws[off[CT_NB_W]]) : (C)1;                                  \
        const C k = wv * r;                                                                        \
        const C ma = job->training ? (C)(sum_g / n) : (C)0,                                        \
                mb = job->training ? (C)(sum_gx / n) : (C)0;                                       \
        CT_NB_FOR_ROW(job, off, {                                                                  \
          const C xhat = (ct_load_##SFX(xs[x]) - m) * r;                                           \
          ys[y] = ct_store_##SFX(k * (ct_load_##SFX(gs[g]) - ma - xhat * mb));                     \
        });                                                                                        \
        ((T*)job->gw)[row * job->gw_strides[0]] = ct_store_##SFX((C)sum_gx);                       \
        ((T*)job->gb)[row * job->gb_strides[0]] = ct_store_##SFX((C)sum_g);                        \
        return;                                                                                    \
      }                                                                                            \
      default: {                                                                                   \
        const int center = job->mode != CT_NB_RMS;                                                 \
        double mean = 0.0;                                                                         \
        if (center) {                                                                              \
          double sum = 0.0;                                                                        \
          CT_NB_FOR_ROW(job, off, sum += (double)ct_load_##SFX(xs[x]););                           \
          mean = sum / n;                                                                          \
        }                                                                                          \
        double sums[4] = {mean, 0.0, 0.0, 0.0};                                                    \
        CT_NB_FOR_ROW(job, off, {                                                                  \
          const double d = (double)ct_load_##SFX(xs[x]) - mean;                                    \
          double gw = (double)ct_load_##SFX(gs[g]);                                                \
          if (ws) gw *= (double)ct_load_##SFX(ws[w]);                                              \
          sums[1] += d * d;                                                                        \
          sums[2] += gw;                                                                           \
          sums[3] += gw * d;                                                                       \
        });                                                                                        \
        double rstd, c1, c0;                                                                       \
        ct_nb_norm_coefficients(job->inner, sums, job->eps, center, &rstd, &c1, &c0);              \
        const C m = (C)mean, r = (C)rstd, k1 = (C)c1, k0 = (C)c0;                                  \
        CT_NB_FOR_ROW(job, off, {                                                                  \
          const C gv = ct_load_##SFX(gs[g]);                                                       \
          const C xhat = (ct_load_##SFX(xs[x]) - m) * r;                                           \
          const C gwv = ws ? gv * ct_load_##SFX(ws[w]) : gv;                                       \
          ys[y] = ct_store_##SFX(r * gwv + (k1 * xhat + k0));                                      \
          pw[p] += gv * xhat;                                                                      \
          pb[p] += gv;                                                                             \
        });                                                                                        \
        return;                                                                                    \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  /* Rows [begin, end) of one block (partials: its sums) or of any rows (no partials). */          \
  static void ct_nb_rows_##SFX(const ct_nb_job* job, int64_t begin, int64_t end, double* pw,       \
                               double* pb, int64_t share) {                                        \
    T* ys = (T*)job->base[CT_NB_Y];                                                                \
    const T* xs = (const T*)job->base[CT_NB_X];                                                    \
    const T* gs = (const T*)job->base[CT_NB_G];                                                    \
    const T* ws = (const T*)job->base[CT_NB_W];                                                    \
    const int64_t n = job->inner, bytes = n * (int64_t)sizeof(T);                                  \
    /* a thread's share of `share` rows of a huge output skips the caches (stream_store.h) */      \
    const int stream =                                                                             \
        job->contiguous && bytes <= CT_NB_ROW_BUFFER_BYTES && ct_stream_worth(share * bytes)       \
            ? ct_stream_mode(ct_cpu_isa() >= CT_CPU_ISA_AVX2)                                      \
            : CT_STREAM_OFF;                                                                       \
    _Alignas(64) char buffer[CT_NB_ROW_BUFFER_BYTES + CT_STREAM_LINE_BYTES];                       \
    int64_t index[CT_MAX_NDIM], off[CT_NB_OPERANDS];                                               \
    ct_nb_row_start(job, begin, index, off);                                                       \
    for (int64_t r = begin; r < end; ++r, ct_nb_row_next(job, index, off)) {                       \
      if (!job->contiguous) {                                                                      \
        ct_nb_strided_row_##SFX(job, r, off, pw, pb);                                              \
        continue;                                                                                  \
      }                                                                                            \
      if (r + 1 < end) {                                                                           \
        int64_t next_index[CT_MAX_NDIM], next[CT_NB_OPERANDS];                                     \
        memcpy(next_index, index, sizeof next_index);                                              \
        memcpy(next, off, sizeof next);                                                            \
        ct_nb_row_next(job, next_index, next);                                                     \
        ct_nb_prefetch(xs + next[CT_NB_X], bytes);                                                 \
        ct_nb_prefetch(gs + next[CT_NB_G], bytes);                                                 \
      }                                                                                            \
      T* out = ys + off[CT_NB_Y];                                                                  \
      T* dst = stream ? (T*)(buffer + (uintptr_t)out % CT_STREAM_LINE_BYTES) : out;                \
      if (job->mode == CT_NB_SOFTMAX || job->mode == CT_NB_LOG_SOFTMAX) {                          \
        ct_nb_softmax_row_##SFX(job, xs + off[CT_NB_X], gs + off[CT_NB_G], dst);                   \
      } else {                                                                                     \
        ct_nb_norm_row_##SFX(job, xs + off[CT_NB_X], gs + off[CT_NB_G],                            \
                             ws ? ws + off[CT_NB_W] : NULL, dst, pw, pb);                          \
      }                                                                                            \
      if (stream) ct_nb_stream_row((char*)out, (const char*)dst, bytes, stream);                   \
    }                                                                                              \
    if (stream) ct_stream_fence();                                                                 \
  }                                                                                                \
  static void ct_nb_tasks_##SFX(int64_t begin, int64_t end, void* context) {                       \
    const ct_nb_job* job = context;                                                                \
    if (!ct_nb_has_partials(job->mode)) {                                                          \
      ct_nb_rows_##SFX(job, begin, end, NULL, NULL, end - begin);                                  \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t blk = begin; blk < end; ++blk) {                                                  \
      double* pw = (double*)job->partials + blk * 2 * job->params;                                 \
      double* pb = pw + job->params;                                                               \
      for (int64_t i = 0; i < 2 * job->params; ++i) pw[i] = 0.0;                                   \
      const int64_t first = blk * job->rows_per_block;                                             \
      const int64_t last =                                                                         \
          first + job->rows_per_block < job->rows ? first + job->rows_per_block : job->rows;       \
      ct_nb_rows_##SFX(job, first, last, pw, pb, (end - begin) * job->rows_per_block);             \
    }                                                                                              \
  }                                                                                                \
  /* grad_weight and grad_bias from the blocks' partials, added in block order (per element, a     \
   * double sum of the blocks in order; elements a chunk at a time, so that the loads are rows).   \
   */                                                                                              \
  static void ct_nb_reduce_##SFX(int64_t begin, int64_t end, void* context) {                      \
    const ct_nb_job* job = context;                                                                \
    const double* part = (const double*)job->partials;                                             \
    for (int64_t p0 = begin; p0 < end; p0 += CT_NB_REDUCE_CHUNK) {                                 \
      const int64_t count = end - p0 < CT_NB_REDUCE_CHUNK ? end - p0 : CT_NB_REDUCE_CHUNK;         \
      double sw[CT_NB_REDUCE_CHUNK], sb[CT_NB_REDUCE_CHUNK];                                       \
      for (int64_t j = 0; j < count; ++j) sw[j] = sb[j] = 0.0;                                     \
      for (int64_t blk = 0; blk < job->blocks; ++blk) {                                            \
        const double* pw = part + blk * 2 * job->params + p0;                                      \
        const double* pb = pw + job->params;                                                       \
        for (int64_t j = 0; j < count; ++j) {                                                      \
          sw[j] += (double)pw[j];                                                                  \
          sb[j] += (double)pb[j];                                                                  \
        }                                                                                          \
      }                                                                                            \
      for (int64_t j = 0; j < count; ++j) {                                                        \
        const int64_t p = p0 + j;                                                                  \
        ((T*)job->gw)[ct_nb_offset(p, job->pnd, job->pshape, job->gw_strides)] =                   \
            ct_store_##SFX((C)sw[j]);                                                              \
        if (job->gb) {                                                                             \
          ((T*)job->gb)[ct_nb_offset(p, job->pnd, job->pshape, job->gb_strides)] =                 \
              ct_store_##SFX((C)sb[j]);                                                            \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  static int ct_nb_run_##SFX(const ct_kernel_call* call, ct_nb_mode mode) {                        \
    ct_nb_job job;                                                                                 \
    ct_nb_prepare(call, mode, sizeof(C) == sizeof(float) ? FLT_EPSILON : DBL_EPSILON, &job);       \
    if (ct_nb_has_partials(mode)) {                                                                \
      if (job.params == 0) return CT_OK;                                                           \
      if (job.rows == 0 || job.inner == 0) { /* no elements: the sums are zero */                  \
        for (int64_t p = 0; p < job.params; ++p) {                                                 \
          ((T*)job.gw)[ct_nb_offset(p, job.pnd, job.pshape, job.gw_strides)] = ct_store_##SFX(0);  \
          if (job.gb) {                                                                            \
            ((T*)job.gb)[ct_nb_offset(p, job.pnd, job.pshape, job.gb_strides)] =                   \
                ct_store_##SFX(0);                                                                 \
          }                                                                                        \
        }                                                                                          \
        return CT_OK;                                                                              \
      }                                                                                            \
      if (call->workspace_size < ct_nb_workspace_bytes(&job)) {                                    \
        return ct_set_error(CT_ERROR_WORKSPACE_TOO_SMALL, "%s: workspace too small",               \
                            call->schema->name);                                                   \
      }                                                                                            \
      job.partials = call->workspace;                                                              \
      ct_cpu_parallel_for(job.blocks, ct_size_mul(4, ct_size_mul(job.rows_per_block, job.inner)),  \
                          ct_nb_tasks_##SFX, &job);                                                \
      ct_cpu_parallel_for(job.params, job.blocks * 2, ct_nb_reduce_##SFX, &job);                   \
      return CT_OK;                                                                                \
    }                                                                                              \
    if (job.rows == 0) return CT_OK;                                                               \
    if (job.inner == 0 && mode == CT_NB_BATCH) { /* empty channels: zero sums */                   \
      for (int64_t c = 0; c < job.rows; ++c) {                                                     \
        ((T*)job.gw)[c * job.gw_strides[0]] = ct_store_##SFX(0);                                   \
        ((T*)job.gb)[c * job.gb_strides[0]] = ct_store_##SFX(0);                                   \
      }                                                                                            \
      return CT_OK;                                                                                \
    }                                                                                              \
    if (job.inner == 0) return CT_OK;                                                              \
    ct_cpu_parallel_for(job.rows, ct_size_mul(4, job.inner), ct_nb_tasks_##SFX, &job);             \
    return CT_OK;                                                                                  \
  }                                                                                                \
  static int ct_cpu_softmax_backward_##SFX(const ct_kernel_call* call) {                           \
    return ct_nb_run_##SFX(call, CT_NB_SOFTMAX);                                                   \
  }                                                                                                \
  static int ct_cpu_log_softmax_backward_##SFX(const ct_kernel_call* call) {                       \
    return ct_nb_run_##SFX(call, CT_NB_LOG_SOFTMAX);                                               \
  }                                                                                                \
  static int ct_cpu_layer_norm_backward_##SFX(const ct_kernel_call* call) {                        \
    return ct_nb_run_##SFX(call, CT_NB_LAYER);                                                     \
  }                                                                                                \
  static int ct_cpu_rms_norm_backward_##SFX(const ct_kernel_call* call) {                          \
    return ct_nb_run_##SFX(call, CT_NB_RMS);                                                       \
  }                                                                                                \
  static int ct_cpu_group_norm_backward_##SFX(const ct_kernel_call* call) {                        \
    return ct_nb_run_##SFX(call, CT_NB_GROUP);                                                     \
  }                                                                                                \
  static int ct_cpu_batch_norm_backward_##SFX(const ct_kernel_call* call) {                        \
    return ct_nb_run_##SFX(call, CT_NB_BATCH);                                                     \
  }                                                                                                \
  static int ct_cpu_batch_norm_training_##SFX(const ct_kernel_call* call) {                        \
    return ct_nb_run_##SFX(call, CT_NB_BATCH_TRAIN);                                               \
  }

/* Workspace of the ops with partial sums (the same for every dtype: double partials). */
static int ct_nb_workspace_mode(const ct_kernel_call* call, ct_nb_mode mode, uint64_t* bytes,
                                uint64_t* alignment) {
  ct_nb_job job;
  ct_nb_prepare(call, mode, 0.0, &job);
  *bytes = ct_nb_workspace_bytes(&job);
  *alignment = 64;
  if (job.rows == CT_SIZE_TOO_LARGE || job.inner == CT_SIZE_TOO_LARGE ||
      *bytes == (uint64_t)CT_SIZE_TOO_LARGE) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: the element counts overflow int64",
                        call->schema->name);
  }
  return CT_OK;
}
static int ct_nb_workspace_layer(const ct_kernel_call* call, uint64_t* bytes, uint64_t* align) {
  return ct_nb_workspace_mode(call, CT_NB_LAYER, bytes, align);
}
static int ct_nb_workspace_rms(const ct_kernel_call* call, uint64_t* bytes, uint64_t* align) {
  return ct_nb_workspace_mode(call, CT_NB_RMS, bytes, align);
}
static int ct_nb_workspace_group(const ct_kernel_call* call, uint64_t* bytes, uint64_t* align) {
  return ct_nb_workspace_mode(call, CT_NB_GROUP, bytes, align);
}

#define CT_NB_TYPES(X)                 \
  X(f16, uint16_t, float, CT_DT_F16)   \
  X(bf16, uint16_t, float, CT_DT_BF16) \
  X(f32, float, float, CT_DT_F32)      \
  X(f64, double, double, CT_DT_F64)

CT_NB_TYPES(CT_NB_DEFINE)

#define CT_NB_REG(SFX, T, C, ID)                                                                \
  {"softmax_backward", 3, {ID, ID, ID}, ct_cpu_softmax_backward_##SFX, NULL, NULL},             \
      {"log_softmax_backward", 3, {ID, ID, ID}, ct_cpu_log_softmax_backward_##SFX, NULL, NULL}, \
      {"layer_norm_backward", 6,   {ID, ID, ID, ID, ID, ID}, ct_cpu_layer_norm_backward_##SFX,  \
       ct_nb_workspace_layer, NULL},                                                            \
      {"rms_norm_backward", 5,   {ID, ID, ID, ID, ID}, ct_cpu_rms_norm_backward_##SFX,          \
       ct_nb_workspace_rms, NULL},                                                              \
      {"group_norm_backward", 6,   {ID, ID, ID, ID, ID, ID}, ct_cpu_group_norm_backward_##SFX,  \
       ct_nb_workspace_group, NULL},                                                            \
      {"batch_norm_backward",                                                                   \
       8,                                                                                       \
       {ID, ID, ID, ID, ID, ID, ID, ID},                                                        \
       ct_cpu_batch_norm_backward_##SFX,                                                        \
       NULL,                                                                                    \
       NULL},

/* batch_norm_training has ten dtype slots (five inputs, five outputs), more than ct_cpu_kernel
 * holds: registered through ct_kernel_register directly. */
#define CT_NB_TRAIN_REG(SFX, T, C, ID) {ID, ct_cpu_batch_norm_training_##SFX},

static int ct_nb_register_training(void) {
  static const struct {
    ct_dtype_id id;
    ct_kernel_run_fn run;
  } kernels[] = {CT_NB_TYPES(CT_NB_TRAIN_REG)};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; ++i) {
    ct_dtype signature[10];
    for (int k = 0; k < 10; ++k) signature[k] = ct_dtype_from_id(kernels[i].id);
    const ct_kernel_def def = {sizeof(ct_kernel_def),
                               "batch_norm_training",
                               "cpu",
                               CT_DEVICE_CPU,
                               10,
                               signature,
                               kernels[i].run,
                               NULL,
                               NULL};
    const int status = ct_kernel_register(&def);
    if (status != CT_OK) return status;
  }
  return CT_OK;
}

static const ct_cpu_kernel ct_cpu_norm_backward_kernels[] = {CT_NB_TYPES(CT_NB_REG)};

int ct_cpu_register_norm_backward(void) {
  const int status = ct_cpu_register_all(ct_cpu_norm_backward_kernels,
                                         CT_CPU_KERNEL_COUNT(ct_cpu_norm_backward_kernels));
  return status != CT_OK ? status : ct_nb_register_training();
}
