/* conv2d_kernels.c - conv2d as an implicit GEMM: the packed GEMM (gemm.h) reads the input as the
 * im2col matrix through its own B packer, so no im2col buffer is ever built.
 *
 * For each (image, group), output channels of the group = weight[g] (Og × K) · col (K × P), with
 * K = C_in/groups · kH · kW (+ 1 with a bias) and P = H_out · W_out; col row (c, i, j), column
 * (oh, ow) is input[c, oh·sH - pH + i·dH, ow·sW - pW + j·dW], zero in the padding, and the bias
 * row is all ones. The (image, group) pairs are the GEMM's batch, so one GEMM call covers the
 * whole convolution and its threads share out images, groups and column blocks. When the
 * output's (H, W) dims do not flatten into one stride, output rows are one more batch
 * dimension (P = W_out per entry). When P is small and off the micro-kernel's column tile
 * (7 × 7 = 49 = 3 · 16 + 1: 64 columns computed per 49), the images are folded into the
 * columns instead ("folded"): the N · P columns, zero-padded, are cut into chunks of a few
 * micro-panels that form the batch with the groups, computed into a compact staging buffer
 * and then scattered into the output (ct_conv2d_fold_columns).
 *
 * Workspace (compute type C: float for float16/bfloat16/float32, double for float64):
 *   weight: C_out × K, the weight converted to C and made compact, with the bias as its last
 *           column, so that the GEMM adds the bias and every output element is stored once
 *           (none where the weight already is that matrix: of type C, compact per output
 *           channel, without a bias);
 *   staged: folded only, C_out × (chunks · chunk width) elements of the output type;
 *   gemm:   the GEMM's packing buffers (ct_gemm_workspace_<instance>). */
#include <string.h>

#include "conv/conv2d_direct.h"
#include "conv/conv_entry.h"
#include "conv/conv2d_winograd.h"
#include "cpu_register.h"
#include "gemm/gemm.h"
#include "gemm/gemm_ukernel.h"
#include "ops/op_defs.h"
#include "engine/strided_iter.h"

#define CT_CONV2D_ALIGNMENT 64
/* Folding the images into one product: at most this many positions per image, and a staging
 * buffer of at most this many bytes. */
#define CT_CONV2D_FOLD_MAX_P 1024
#define CT_CONV2D_FOLD_MAX_BYTES ((int64_t)64 << 20)
/* Folded chunks at least (the GEMM shares whole batch entries out, rather than each panel, from
 * 4 per thread: 8 covers 2 threads). A constant, not the thread count, so that the workspace
 * asked for always fits the call. */
#define CT_CONV2D_FOLD_MIN_CHUNKS 8
/* Pieces of packed rows up to this long are copied element by element (narrow images). */
#define CT_CONV2D_SHORT_SEGMENT 8
/* Kernel widths up to this have their valid column ranges computed once per call. */
#define CT_CONV2D_MAX_KW 16

/* The column tile (NR) of the micro-kernels that will run for a compute type of this size. */
static int64_t ct_conv2d_tile_columns(int64_t compute_size) {
  const ct_gemm_ukernels* uk = ct_gemm_ukernels_get();
  return compute_size == (int64_t)sizeof(double) ? uk->f64_blocking.nr : uk->f32_blocking.nr;
}

typedef struct ct_conv2d_job ct_conv2d_job;
static bool ct_conv2d_fold_columns(const ct_conv2d_job* job, int64_t nr, int64_t* q,
                                   int64_t* chunks);

/* Everything about one call that does not depend on the dtype. */
struct ct_conv2d_job {
  int64_t n, channels, h, w;    /* input (N, C, H, W) */
  int64_t out_channels, kh, kw; /* weight (O, C/groups, kH, kW) */
  int64_t oh, ow;               /* output spatial extents */
  int64_t stride[2], padding[2], dilation[2], groups;
  int64_t cg, og; /* input and output channels per group */
  int64_t taps;   /* cg · kH · kW: the col rows read from the input */
  int64_t k;      /* GEMM depth: taps, + 1 with a bias */
  int64_t p;      /* output positions per image: oh · ow */
  bool per_row;   /* (H_out, W_out) do not flatten: one GEMM batch entry per output row */
  bool folded;    /* the images are more GEMM columns (N · P), computed into `staged` */
  int64_t fold_q, fold_chunks; /* folded: the N · P columns as fold_chunks batch entries */
  int64_t staged_bytes;
  int64_t weight_bytes;
  bool has_bias;
  bool weight_rows_compact;        /* each output channel's weights are contiguous, in order */
  bool weight_in_place;            /* the weight is the GEMM's A as it is: nothing packed */
  int64_t xs[4], ws[4], bs, os[4]; /* element strides of input, weight, bias, output */
  const char *x, *weight, *bias;
  char* out;
  void* packed; /* workspace: O × K compute-type elements */
  void* staged; /* workspace, folded only: O × (chunks · fold_q) output-type elements */
  /* The GEMM: batch (N, groups[, oh]) over the packed weight, the implicit col and the output. */
  ct_gemm_desc gemm;
  int64_t batch_shape[3], a_bs[3], b_bs[3], c_bs[3];
  /* ct_conv2d_valid_columns of the first CT_CONV2D_MAX_KW kernel columns, computed once. */
  int64_t col_shift[CT_CONV2D_MAX_KW], col_lo[CT_CONV2D_MAX_KW], col_hi[CT_CONV2D_MAX_KW];
};

static void ct_conv2d_valid_columns(const ct_conv2d_job* job, int64_t j, int64_t* shift,
                                    int64_t* lo, int64_t* hi);

static int ct_conv2d_prepare(const ct_kernel_call* call, int64_t compute_size, int64_t out_size,
                             ct_conv2d_job* job) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* weight = call->inputs[1];
  const ct_tensor* bias = call->inputs[2];
  const ct_tensor* out = call->outputs[0];
  int status =
      ct_conv2d_params(call->attrs, job->stride, job->padding, job->dilation, &job->groups);
  if (status != CT_OK) return status;
  job->n = x->shape[0];
  job->channels = x->shape[1];
  job->h = x->shape[2];
  job->w = x->shape[3];
  job->out_channels = weight->shape[0];
  job->kh = weight->shape[2];
  job->kw = weight->shape[3];
  job->oh = out->shape[2];
  job->ow = out->shape[3];
  job->cg = job->channels / job->groups;
  job->og = job->out_channels / job->groups;
  job->has_bias = bias != NULL;
  job->taps = job->cg * job->kh * job->kw; /* <= the weight's element count */
  job->k = job->taps + (job->has_bias ? 1 : 0);
  job->p = job->oh * job->ow; /* <= the output's element count */
  for (int32_t q = 0; q < 4; ++q) {
    job->xs[q] = ct_tensor_stride(x, q);
    job->ws[q] = ct_tensor_stride(weight, q);
    job->os[q] = ct_tensor_stride(out, q);
  }
  job->bs = bias ? ct_tensor_stride(bias, 0) : 0;
  job->x = ct_tensor_base(x);
  job->weight = ct_tensor_base(weight);
  job->bias = bias ? ct_tensor_base(bias) : NULL;
  job->out = ct_tensor_base(out);
  job->packed = NULL;
  int64_t weight_elements, weight_bytes;
  if (!ct_checked_mul_i64(job->out_channels, job->k, &weight_elements) ||
      !ct_checked_mul_i64(weight_elements, compute_size, &weight_bytes) ||
      !ct_checked_add_i64(weight_bytes, CT_CONV2D_ALIGNMENT - 1, &weight_bytes)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "conv2d: the packed weight (%lld x %lld elements) overflows int64",
                        (long long)job->out_channels, (long long)job->k);
  }
  job->weight_bytes = weight_bytes / CT_CONV2D_ALIGNMENT * CT_CONV2D_ALIGNMENT;
  job->weight_rows_compact =
      job->ws[3] == 1 && job->ws[2] == job->kw && job->ws[1] == job->kh * job->kw;
  job->weight_in_place = !job->has_bias && compute_size == out_size && job->weight_rows_compact;
  if (job->weight_in_place) job->weight_bytes = 0;

  /* The GEMM, flattening (H_out, W_out) into one column index where the output allows. */
  ct_gemm_desc* d = &job->gemm;
  *d = (ct_gemm_desc){0};
  int64_t flat = 0;
  if (job->oh == 1) {
    flat = job->os[3];
  } else if (job->ow == 1) {
    flat = job->os[2];
  } else if (job->os[2] == job->ow * job->os[3]) {
    flat = job->os[3];
  }
  job->per_row = flat == 0;
  /* Few positions per image, off the micro-kernel's column tile (7 × 7 = 49 = 3 · 16 + 1): the
   * images side by side, cut into chunks of fold_q columns, waste less of the last tiles. */
  job->folded = ct_conv2d_fold_columns(job, ct_conv2d_tile_columns(compute_size), &job->fold_q,
                                       &job->fold_chunks);
  int64_t staged_elements = 0;
  job->folded =
      job->folded &&
      ct_checked_mul_i64(job->out_channels, job->fold_chunks * job->fold_q, &staged_elements) &&
      staged_elements <= CT_CONV2D_FOLD_MAX_BYTES / out_size;
  job->staged_bytes = job->folded ? (staged_elements * out_size + CT_CONV2D_ALIGNMENT - 1) /
                                        CT_CONV2D_ALIGNMENT * CT_CONV2D_ALIGNMENT
                                  : 0;
  job->staged = NULL;
  d->m = job->og;
  d->n = flat != 0 ? job->p : job->ow;
  d->k = job->k;
  d->a_rs = job->weight_in_place ? job->ws[0] : job->k;
  d->a_cs = 1;
  d->c = job->out;
  d->c_rs = job->os[1];
  d->c_cs = flat != 0 ? flat : job->os[3];
  job->batch_shape[0] = job->n;
  job->batch_shape[1] = job->groups;
  job->batch_shape[2] = job->oh;
  job->a_bs[0] = 0;
  job->a_bs[1] = job->og * d->a_rs;
  job->a_bs[2] = 0;
  job->b_bs[0] = job->b_bs[1] = job->b_bs[2] = 0; /* the packer finds its own place */
  job->c_bs[0] = job->os[0];
  job->c_bs[1] = job->og * job->os[1];
  job->c_bs[2] = job->os[2];
  d->batch_ndim = flat != 0 ? 2 : 3;
  d->batch_shape = job->batch_shape;
  d->a_bs = job->a_bs;
  d->b_bs = job->b_bs;
  d->c_bs = job->c_bs;
  d->pack_b_context = job;
  if (job->folded) { /* batch (chunk, group); C: the O × (chunks · fold_q) staging buffer */
    const int64_t row = job->fold_chunks * job->fold_q;
    job->per_row = false;
    d->n = job->fold_q;
    d->c = NULL; /* set at run time */
    d->c_rs = row;
    d->c_cs = 1;
    job->batch_shape[0] = job->fold_chunks;
    job->c_bs[0] = job->fold_q;
    job->c_bs[1] = job->og * row;
    d->batch_ndim = 2;
  }
  for (int64_t j = 0; j < job->kw && j < CT_CONV2D_MAX_KW; ++j) {
    ct_conv2d_valid_columns(job, j, &job->col_shift[j], &job->col_lo[j], &job->col_hi[j]);
  }
  return CT_OK;
}

/* Whether to fold the images into the GEMM's columns, and how: the N · P columns (zero-padded
 * to chunks · q) as `chunks` batch entries of q columns, q a multiple of nr. Chosen to waste
 * the fewest columns in at least CT_CONV2D_FOLD_MIN_CHUNKS entries; of near-equal choices
 * (within 1/16) the widest.
 * False where no choice saves an eighth of the columns of one product per image. */
static bool ct_conv2d_fold_columns(const ct_conv2d_job* job, int64_t nr, int64_t* q,
                                   int64_t* chunks) {
  const int64_t per_image = (job->p + nr - 1) / nr * nr;
  if (job->n < 2 || job->p > CT_CONV2D_FOLD_MAX_P || per_image == job->p) return false;
  const int64_t total = job->n * job->p;
  const int64_t min_chunks = CT_CONV2D_FOLD_MIN_CHUNKS;
  int64_t best = 0;
  for (int64_t w = nr; w <= per_image; w += nr) {
    const int64_t c = (total + w - 1) / w;
    if (c >= min_chunks && (best == 0 || c * w < best)) best = c * w;
  }
  if (best == 0 || best * 8 > job->n * per_image * 7) return false;
  for (int64_t w = per_image / nr * nr; w >= nr; w -= nr) { /* the widest near the best */
    const int64_t c = (total + w - 1) / w;
    if (c >= min_chunks && c * w * 16 <= best * 17) {
      *q = w;
      *chunks = c;
      return true;
    }
  }
  return false;
}

/* The operands of a float32 job, for the float32-only paths. */
static ct_conv2d_f32_operands ct_conv2d_f32_operands_of(const ct_conv2d_job* job) {
  return (ct_conv2d_f32_operands){
      .x = (const float*)(const void*)job->x,
      .xs = {job->xs[0], job->xs[1], job->xs[2], job->xs[3]},
      .weight = (const float*)(const void*)job->weight,
      .ws = {job->ws[0], job->ws[1], job->ws[2], job->ws[3]},
      .bias = (const float*)(const void*)job->bias,
      .bs = job->bs,
      .out = (float*)(void*)job->out,
      .os = {job->os[0], job->os[1], job->os[2], job->os[3]},
  };
}

/* The direct path's description of a float32 job (conv2d_direct.h) and its tile shape, or NULL
 * where it does not apply: a stride other than 1, output rows narrower or wider than the
 * input's, rows that are not W apart, more taps than it takes, or no shape for this CPU and
 * plane (ct_conv2d_direct_shape_for). */
static const ct_conv2d_direct_shape* ct_conv2d_direct_of(const ct_conv2d_job* job,
                                                         ct_conv2d_direct_job* direct) {
  const int64_t taps = job->kh * job->kw;
  if (job->stride[0] != 1 || job->stride[1] != 1 || job->ow != job->w || taps == 0 ||
      taps > CT_CONV2D_DIRECT_MAX_TAPS || job->cg == 0 || (job->xs[3] != 1 && job->w > 1) ||
      (job->xs[2] != job->w && job->h > 1) || (job->os[3] != 1 && job->ow > 1) ||
      (job->os[2] != job->ow && job->oh > 1)) {
    return NULL;
  }
  *direct = (ct_conv2d_direct_job){
      .n = job->n,
      .groups = job->groups,
      .cg = job->cg,
      .og = job->og,
      .h = job->h,
      .w = job->w,
      .oh = job->oh,
      .kh = job->kh,
      .kw = job->kw,
      .pad_h = job->padding[0],
      .pad_w = job->padding[1],
      .dil_h = job->dilation[0],
      .dil_w = job->dilation[1],
      .f = ct_conv2d_f32_operands_of(job),
  };
  return ct_conv2d_direct_shape_for(direct);
}

/* The Winograd path's description of a float32 job (conv2d_winograd.h): true where it applies
 * (3 × 3, stride 1, dilation 1, one group) and pays. */
static bool ct_conv2d_winograd_of(const ct_conv2d_job* job, ct_conv2d_winograd_job* wino) {
  if (job->kh != 3 || job->kw != 3 || job->groups != 1 || job->stride[0] != 1 ||
      job->stride[1] != 1 || job->dilation[0] != 1 || job->dilation[1] != 1) {
    return false;
  }
  *wino = (ct_conv2d_winograd_job){
      .n = job->n,
      .c = job->channels,
      .k = job->out_channels,
      .h = job->h,
      .w = job->w,
      .oh = job->oh,
      .ow = job->ow,
      .pad_h = job->padding[0],
      .pad_w = job->padding[1],
      .f = ct_conv2d_f32_operands_of(job),
  };
  return ct_conv2d_winograd_pays(wino);
}

/* Nothing to compute: no image, no output channel or no output position. */
static bool ct_conv2d_empty(const ct_conv2d_job* job) {
  return job->n == 0 || job->out_channels == 0 || job->p == 0;
}

/* Column range of kernel column j: output column ow reads input column ow·sW + shift, inside the
 * input for ow in [*lo, *hi). */
static void ct_conv2d_valid_columns(const ct_conv2d_job* job, int64_t j, int64_t* shift,
                                    int64_t* lo, int64_t* hi) {
  const int64_t sw = job->stride[1];
  *shift = j * job->dilation[1] - job->padding[1];
  ct_conv_valid_range(*shift, sw, job->w, job->ow, lo, hi);
}

/* Copies `bytes` (a multiple of 4, at most a micro-panel row: 128 or fewer in practice) between
 * buffers that do not overlap, as two overlapping fixed-size copies that compile to a few vector
 * moves: the packer's row pieces are short and of every length, which a general memcpy or a
 * vectorized loop handles with more overhead than work. */
static inline void ct_conv2d_copy(void* restrict dst, const void* restrict src, size_t bytes) {
  char* d = dst;
  const char* s = src;
  if (bytes > 128) {
    memcpy(d, s, bytes);
  } else if (bytes >= 64) {
    memcpy(d, s, 64);
    memcpy(d + bytes - 64, s + bytes - 64, 64);
  } else if (bytes >= 32) {
    memcpy(d, s, 32);
    memcpy(d + bytes - 32, s + bytes - 32, 32);
  } else if (bytes >= 16) {
    memcpy(d, s, 16);
    memcpy(d + bytes - 16, s + bytes - 16, 16);
  } else if (bytes >= 8) {
    memcpy(d, s, 8);
    memcpy(d + bytes - 8, s + bytes - 8, 8);
  } else {
    for (size_t u = 0; u < bytes; ++u) d[u] = s[u];
  }
}

/* Zeros `bytes` the same way (all-zero bits are 0.0 in float and double). */
static inline void ct_conv2d_zero(void* dst, size_t bytes) {
  char* d = dst;
  if (bytes > 128) {
    memset(d, 0, bytes);
  } else if (bytes >= 64) {
    memset(d, 0, 64);
    memset(d + bytes - 64, 0, 64);
  } else if (bytes >= 32) {
    memset(d, 0, 32);
    memset(d + bytes - 32, 0, 32);
  } else if (bytes >= 16) {
    memset(d, 0, 16);
    memset(d + bytes - 16, 0, 16);
  } else if (bytes >= 8) {
    memset(d, 0, 8);
    memset(d + bytes - 8, 0, 8);
  } else {
    for (size_t u = 0; u < bytes; ++u) d[u] = 0;
  }
}

#define CT_CONV2D_REG(SFX, T, C, ID, GEMM) \
  {"conv2d", 4, {ID, ID, ID, ID}, ct_cpu_conv2d_##SFX, ct_cpu_conv2d_workspace_##SFX, NULL},

/* The kernel list: (SFX, T, C, ID, GEMM) = name suffix, storage type, compute type, dtype id,
 * and the GEMM instance taking C panels into T. The includes below follow it. */
#define CT_CONV2D_TYPES(X)                       \
  X(f16, uint16_t, float, CT_DT_F16, f32_f16)    \
  X(bf16, uint16_t, float, CT_DT_BF16, f32_bf16) \
  X(f32, float, float, CT_DT_F32, f32)           \
  X(f64, double, double, CT_DT_F64, f64)

/* ----- kernels per dtype (conv2d_dtype_impl.h), in CT_CONV2D_TYPES order ----- */

#define CT_C2_SFX f16
#define CT_C2_T uint16_t
#define CT_C2_C float
#define CT_C2_ID CT_DT_F16
#define CT_C2_GEMM f32_f16
#include "conv/conv2d_dtype_impl.h"
#define CT_C2_SFX bf16
#define CT_C2_T uint16_t
#define CT_C2_C float
#define CT_C2_ID CT_DT_BF16
#define CT_C2_GEMM f32_bf16
#include "conv/conv2d_dtype_impl.h"
#define CT_C2_SFX f32
#define CT_C2_T float
#define CT_C2_C float
#define CT_C2_ID CT_DT_F32
#define CT_C2_GEMM f32
#include "conv/conv2d_dtype_impl.h"
#define CT_C2_SFX f64
#define CT_C2_T double
#define CT_C2_C double
#define CT_C2_ID CT_DT_F64
#define CT_C2_GEMM f64
#include "conv/conv2d_dtype_impl.h"

static const ct_cpu_kernel ct_cpu_conv2d_kernels[] = {CT_CONV2D_TYPES(CT_CONV2D_REG)};

int ct_cpu_register_conv2d(void) {
  return ct_cpu_register_all(ct_cpu_conv2d_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_conv2d_kernels));
}
