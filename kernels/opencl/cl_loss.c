/* cl_loss.c - the losses and their backward operators (capi/ops/loss_ops.c): cross_entropy and
 * nll_loss along a class axis, binary_cross_entropy_with_logits, mse_loss and smooth_l1_loss
 * element-wise. float16/float32 compute in float, float64 in double; sums accumulate in double
 * where the device has it.
 *
 * Class-axis losses: one work item first walks the targets, checking every class index (an
 * index out of range is reported before any output is written) and summing the mean's
 * denominator; then one work item per sample. Reductions: the samples' losses go to a scratch
 * buffer, which CT_CL_LOSS_BLOCKS work items sum in fixed contiguous blocks and one work item
 * then adds in order, so the result does not depend on scheduling.
 *
 * A layout holds at most four operands, so the samples are walked by two layouts over the same
 * shape (each collapsed on its own: both visit the samples in the same row-major order). */
#include <stdio.h>
#include <string.h>

#include "cl_layout.h"
#include "cl_types.h"

#define CT_CL_LOSS_BLOCKS 256

static int ct_cl_loss_mode(const ct_attr_value* value) {
  const char* s = value->value.s;
  return strcmp(s, "none") == 0 ? 0 : strcmp(s, "sum") == 0 ? 2 : 1;
}

/* The two layouts' offsets of sample `index`: a0..a3 and b0..b3 (declared by the caller). */
static void ct_cl_loss_offsets(ct_cl_source* source, const char* index) {
  ct_cl_source_index_loop_named(source, index, "meta_a", "ndim_a", "a", 4);
  ct_cl_source_index_loop_named(source, index, "meta_b", "ndim_b", "b", 4);
}

/* Sums `count` ACC values of `values` into out[0] (scaled by `scale`, or divided by den[0] when
 * use_den): ct_loss_blocks over CT_CL_LOSS_BLOCKS work items, then ct_loss_finish over one. */
static const char ct_cl_loss_sum_source[] =
    "__kernel void ct_loss_blocks(__global const ACC* values, long count, long blocks, "
    "__global ACC* partial) {\n"
    "  const long b = get_global_id(0);\n  if (b >= blocks) return;\n"
    "  const long first = b * count / blocks, last = (b + 1) * count / blocks;\n"
    "  ACC total = 0;\n  for (long i = first; i < last; ++i) total += values[i];\n"
    "  partial[b] = total;\n}\n"
    "__kernel void ct_loss_finish(__global const ACC* partial, long blocks, __global char* out, "
    "long off_out, int use_den, __global const ACC* den, ACC scale) {\n"
    "  if (get_global_id(0) != 0) return;\n"
    "  ACC total = 0;\n  for (long b = 0; b < blocks; ++b) total += partial[b];\n"
    "  total = use_den ? total / den[0] : total * scale;\n"
    "  CAT(ST_, TAG)(out, off_out, (T)total);\n}\n";

/* ----- class-axis losses ----- */

static const char ct_cl_class_source[] =
    "ACC ct_w(__global const char* w, long w_off, long w_step, long c) {\n"
    "#if HAS_W\n  return (ACC)CAT(LD_, TAG)(w, w_off + c * w_step);\n#else\n  return (ACC)1;\n"
    "#endif\n}\n"
    "#define LDX(o) ((ACC)CAT(LD_, TAG)(x, (o)))\n"
    "ACC ct_lse(__global const char* x, long ox, long n, long sx) {\n"
    "  T high = -INFINITY;\n"
    "  for (long k = 0; k < n; ++k) {\n"
    "    const T v = CAT(LD_, TAG)(x, ox + k * sx);\n"
    "    if (v > high || v != v) high = v;\n  }\n"
    "  ACC total = 0;\n"
    "  for (long k = 0; k < n; ++k) total += (ACC)exp(CAT(LD_, TAG)(x, ox + k * sx) - high);\n"
    "  return (ACC)high + log(total);\n}\n"
    /* the loss of one sample (y: its class index; probability targets: the row at ot) */
    "ACC ct_sample_loss(__global const char* x, long ox, long sx, __global const char* t, "
    "long ot, long st, long y, __global const char* w, long w_off, long w_step, long n, "
    "ACC smoothing) {\n"
    "#if NLL\n  return -ct_w(w, w_off, w_step, y) * LDX(ox + y * sx);\n#else\n"
    "  const ACC lse = ct_lse(x, ox, n, sx);\n"
    "  const ACC keep = 1 - smoothing, flat = smoothing / (ACC)n;\n"
    "#if PROB\n  ACC total = 0;\n"
    "  for (long c = 0; c < n; ++c) total += ct_w(w, w_off, w_step, c) * (keep * "
    "(ACC)CAT(LD_, TAG)(t, ot + c * st) + flat) * (lse - LDX(ox + c * sx));\n"
    "  return total;\n#else\n"
    "  ACC loss = keep * ct_w(w, w_off, w_step, y) * (lse - LDX(ox + y * sx));\n"
    "  if (smoothing > 0) {\n    ACC spread = 0;\n"
    "    for (long c = 0; c < n; ++c) spread += ct_w(w, w_off, w_step, c) * (lse - LDX(ox + c * "
    "sx));\n    loss += flat * spread;\n  }\n  return loss;\n#endif\n#endif\n}\n";

/* The kernels' common parameters (the two layouts, the operands, the class axis). */
#define CT_CL_CLASS_PARAMS                                                                        \
  "__global const long* meta_a, int ndim_a, __global const long* meta_b, int ndim_b, long rows, " \
  "long n, __global const char* x, long off_x, long sx, __global const char* t, long off_t, "     \
  "long st, __global const char* w, long off_w, long w_step, long ignore, ACC smoothing"

#define CT_CL_SAMPLE_START \
  "  long a0 = off_x, a1 = off_t, a2 = off_s, a3 = off_gx, b0 = off_gt, b1 = 0, b2 = 0, b3 = 0;\n"

static void ct_cl_class_program(ct_cl_source* source, bool backward) {
  /* check: class indices in range, the mean's denominator */
  ct_cl_source_add(
      source, "__kernel void ct_loss_check(" CT_CL_CLASS_PARAMS
              ", __global long* found, __global ACC* den) {\n"
              "  if (get_global_id(0) != 0) return;\n  ACC total = 0;\n"
              "  for (long r = 0; r < rows; ++r) {\n"
              "#if PROB\n    total += 1;\n#else\n"
              "    long a0 = 0, a1 = off_t, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;\n");
  ct_cl_loss_offsets(source, "r");
  ct_cl_source_add(source,
                   "    const long y = (long)CAT(LD_, TT)(t, a1);\n"
                   "#if HAS_IGNORE\n    if (y == ignore) continue;\n#endif\n"
                   "    if (y < 0 || y >= n) { found[0] = 1; found[1] = y; return; }\n"
                   "    total += ct_w(w, off_w, w_step, y);\n#endif\n  }\n  den[0] = total;\n}\n");
  if (!backward) {
    ct_cl_source_add(source,
                     "__kernel void ct_loss_rows(" CT_CL_CLASS_PARAMS
                     ", __global char* s, long off_s, int reduced, __global ACC* values) {\n"
                     "  const long r = get_global_id(0);\n  if (r >= rows) return;\n"
                     "  const long off_gx = 0, off_gt = 0;\n" CT_CL_SAMPLE_START);
    ct_cl_loss_offsets(source, "r");
    ct_cl_source_add(source,
                     "#if PROB\n  const long y = -1;\n#else\n"
                     "  const long y = (long)CAT(LD_, TT)(t, a1);\n#endif\n"
                     "  ACC loss = 0;\n"
                     "#if HAS_IGNORE\n  if (y != ignore)\n#endif\n"
                     "  loss = ct_sample_loss(x, a0, sx, t, a1, st, y, w, off_w, w_step, n, "
                     "smoothing);\n"
                     "  if (reduced) values[r] = loss; else CAT(ST_, TAG)(s, a2, (T)loss);\n}\n");
    return;
  }
  ct_cl_source_add(
      source,
      "__kernel void ct_loss_rows_backward(" CT_CL_CLASS_PARAMS
      ", __global const char* s, long off_s, int mode, __global const ACC* den, __global char* "
      "gx, long off_gx, long sgx, __global char* gt, long off_gt, long sgt, int has_gt) {\n"
      "  const long r = get_global_id(0);\n  if (r >= rows) return;\n" CT_CL_SAMPLE_START);
  ct_cl_loss_offsets(source, "r");
  ct_cl_source_add(
      source,
      "  ACC g = (ACC)CAT(LD_, TAG)(s, a2);\n  if (mode == 1) g /= den[0];\n"
      "  const ACC keep = 1 - smoothing, flat = smoothing / (ACC)n;\n"
      "#if PROB\n"
      "  const ACC lse = ct_lse(x, a0, n, sx);\n  ACC a = 0;\n"
      "  for (long c = 0; c < n; ++c) a += ct_w(w, off_w, w_step, c) * (keep * (ACC)CAT(LD_, "
      "TAG)(t, a1 + c * st) + flat);\n"
      "  for (long c = 0; c < n; ++c) {\n"
      "    const ACC xc = LDX(a0 + c * sx), wc = ct_w(w, off_w, w_step, c);\n"
      "    const ACC q = keep * (ACC)CAT(LD_, TAG)(t, a1 + c * st) + flat;\n"
      "    const ACC p = (ACC)exp((T)(xc - lse));\n"
      "    CAT(ST_, TAG)(gx, a3 + c * sgx, (T)(g * (p * a - wc * q)));\n"
      "    CAT(ST_, TAG)(gt, b0 + c * sgt, (T)(g * keep * wc * (lse - xc)));\n  }\n"
      "#else\n"
      "  if (has_gt) CAT(ST_, TAG)(gt, b0, (T)0);\n"
      "  const long y = (long)CAT(LD_, TT)(t, a1);\n"
      "#if HAS_IGNORE\n  if (y == ignore) {\n"
      "    for (long c = 0; c < n; ++c) CAT(ST_, TAG)(gx, a3 + c * sgx, (T)0);\n    return;\n  }\n"
      "#endif\n"
      "  const ACC wy = ct_w(w, off_w, w_step, y);\n"
      "#if NLL\n"
      "  for (long c = 0; c < n; ++c) CAT(ST_, TAG)(gx, a3 + c * sgx, (T)0);\n"
      "  CAT(ST_, TAG)(gx, a3 + y * sgx, (T)(-g * wy));\n"
      "#else\n"
      "  const ACC lse = ct_lse(x, a0, n, sx);\n  ACC total_w = 0;\n"
      "  for (long c = 0; c < n; ++c) total_w += ct_w(w, off_w, w_step, c);\n"
      "  const ACC a = keep * wy + flat * total_w;\n"
      "  for (long c = 0; c < n; ++c) {\n"
      "    const ACC p = (ACC)exp((T)(LDX(a0 + c * sx) - lse));\n"
      "    ACC v = p * a - flat * ct_w(w, off_w, w_step, c);\n"
      "    if (c == y) v -= keep * wy;\n"
      "    CAT(ST_, TAG)(gx, a3 + c * sgx, (T)(g * v));\n  }\n"
      "#endif\n#endif\n}\n");
}

/* Row layout strides of t over the dims but `axis` (all of t's dims when axis < 0; zeros for a
 * 0-d or absent t), and its byte step along the axis. */
static void ct_cl_row_strides(const ct_tensor* t, int32_t axis, int32_t ndim, int64_t* strides,
                              int64_t* step) {
  for (int32_t d = 0; d < CT_MAX_NDIM; ++d) strides[d] = 0;
  *step = 0;
  if (!t) return;
  int32_t d = 0;
  for (int32_t k = 0; k < t->ndim; ++k) {
    const int64_t s = ct_pl_byte_stride(t, k);
    if (k == axis) {
      *step = s;
    } else if (d < ndim) {
      strides[d++] = s;
    }
  }
}

typedef struct ct_cl_loss_scratch {
  cl_mem meta_a, meta_b, found, den, values, partial;
} ct_cl_loss_scratch;

static void ct_cl_loss_release(ct_cl_loss_scratch* s) {
  cl_mem* all[] = {&s->meta_a, &s->meta_b, &s->found, &s->den, &s->values, &s->partial};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i) {
    if (*all[i]) ct_cl.clReleaseMemObject(*all[i]);
    *all[i] = NULL;
  }
}

/* Sums `count` values into `out` (see ct_cl_loss_sum_source). */
static int ct_cl_loss_total(const ct_cl_exec* exec, const ct_cl_source* source,
                            ct_cl_loss_scratch* s, int64_t count, size_t acc_size,
                            const ct_tensor* out, bool use_den, double scale) {
  int64_t blocks = count < CT_CL_LOSS_BLOCKS ? count : CT_CL_LOSS_BLOCKS;
  if (blocks < 1) blocks = 1;
  int status = ct_cl_scratch_buffer(exec, (size_t)blocks * acc_size, &s->partial);
  cl_mem values = s->values;
  if (status == CT_OK) {
    const ct_cl_arg args[] = {CT_CL_ARG(values), CT_CL_ARG(count), CT_CL_ARG(blocks),
                              CT_CL_ARG(s->partial)};
    status = ct_cl_launch(exec, source, "ct_loss_blocks", (size_t)blocks, args, 4);
  }
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
    const cl_int den_flag = use_den;
    cl_mem den = s->den ? s->den : s->partial; /* not read without use_den */
    const float scale_f = (float)scale;
    const bool fp64 = acc_size == sizeof(double);
    const ct_cl_arg args[] = {CT_CL_ARG(s->partial),
                              CT_CL_ARG(blocks),
                              CT_CL_ARG(out_buffer),
                              CT_CL_ARG(off_out),
                              CT_CL_ARG(den_flag),
                              CT_CL_ARG(den),
                              fp64 ? CT_CL_ARG(scale) : CT_CL_ARG(scale_f)};
    status = ct_cl_launch(exec, source, "ct_loss_finish", 1, args, 7);
  }
  return status;
}

static int ct_cl_class_loss_run(const ct_kernel_call* call) {
  const bool backward = strstr(call->schema->name, "_backward") != NULL;
  const int32_t first = backward ? 1 : 0;
  const ct_tensor* x = call->inputs[first];
  const ct_tensor* target = call->inputs[first + 1];
  const ct_tensor* weight = call->inputs[first + 2];
  const ct_tensor* sample = backward ? call->inputs[0] : call->outputs[0];
  const ct_tensor* gx = backward ? call->outputs[0] : NULL;
  const ct_tensor* gt = backward && call->num_outputs > 1 ? call->outputs[1] : NULL;
  const bool nll = strncmp(call->schema->name, "nll_loss", 8) == 0;
  const bool prob = ct_pl_type_of(target->dtype) == ct_pl_type_of(x->dtype);
  const int mode = ct_cl_loss_mode(&call->attrs[1]);
  const bool has_ignore = call->attrs[2].type != CT_ATTR_NONE;
  const int64_t ignore = has_ignore ? call->attrs[2].value.i : 0;
  const double smoothing = call->schema->num_attrs > 3 ? call->attrs[3].value.f : 0.0;
  const int32_t axis = x->ndim == 1
                           ? 0
                           : (int32_t)(call->attrs[0].value.i < 0 ? call->attrs[0].value.i + x->ndim
                                                                  : call->attrs[0].value.i);
  const int64_t n = x->shape[axis];
  int64_t shape[CT_MAX_NDIM], rows = 1;
  int32_t ndim = 0;
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (k != axis) rows *= (shape[ndim++] = x->shape[k]);
  }
  if (backward && rows == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  int64_t strides[5][CT_MAX_NDIM], steps[5];
  ct_cl_row_strides(x, axis, ndim, strides[0], &steps[0]);
  ct_cl_row_strides(target, prob ? axis : -1, ndim, strides[1], &steps[1]);
  ct_cl_row_strides(sample, -1, ndim, strides[2], &steps[2]);
  ct_cl_row_strides(gx, axis, ndim, strides[3], &steps[3]);
  ct_cl_row_strides(gt, prob ? axis : -1, ndim, strides[4], &steps[4]);
  ct_pl_layout la, lb;
  ct_pl_layout_begin(&la, ndim, shape);
  ct_pl_layout_begin(&lb, ndim, shape);
  for (int k = 0; k < 4; ++k) ct_pl_layout_add_strides(&la, strides[k]);
  ct_pl_layout_add_strides(&lb, strides[4]);
  ct_pl_layout_collapse(&la, NULL);
  ct_pl_layout_collapse(&lb, NULL);

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  const bool fp64 = exec.device->has_fp64;
  const size_t acc_size = fp64 ? sizeof(double) : sizeof(float);
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source,
                   "#define T %s\n#define TAG %s\n#define TT %s\n#define ACC %s\n#define NLL %d\n"
                   "#define PROB %d\n#define HAS_W %d\n#define HAS_IGNORE %d\n",
                   t->compute, t->tag, prob ? t->tag : (target->dtype.bits == 64 ? "i64" : "i32"),
                   fp64 ? "double" : "float", nll, prob, weight != NULL, has_ignore);
  ct_cl_source_add(&source, "%s%s", ct_cl_class_source, ct_cl_loss_sum_source);
  ct_cl_class_program(&source, backward);

  ct_cl_loss_scratch s = {0};
  status = ct_cl_layout_meta(&exec, &la, &s.meta_a);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &lb, &s.meta_b);
  if (status == CT_OK) status = ct_cl_scratch_buffer(&exec, 2 * sizeof(int64_t), &s.found);
  if (status == CT_OK) status = ct_cl_scratch_buffer(&exec, acc_size, &s.den);
  int64_t found[2] = {0, 0};
  if (status == CT_OK) {
    status = ct_cl_check(ct_cl.clEnqueueWriteBuffer(exec.queue, s.found, CL_TRUE, 0, sizeof found,
                                                    found, 0, NULL, NULL),
                         "clEnqueueWriteBuffer");
  }
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  CT_CL_TENSOR_ARGS(t_buffer, off_t, target);
  cl_mem w_buffer = weight ? (cl_mem)weight->data : x_buffer; /* not read without HAS_W */
  const int64_t off_w = weight ? (int64_t)weight->byte_offset : 0;
  const int64_t w_step = weight ? ct_pl_byte_stride(weight, 0) : 0;
  const cl_int ndim_a = la.ndim, ndim_b = lb.ndim;
  const float smoothing_f = (float)smoothing;
  const ct_cl_arg common[] = {CT_CL_ARG(s.meta_a),
                              CT_CL_ARG(ndim_a),
                              CT_CL_ARG(s.meta_b),
                              CT_CL_ARG(ndim_b),
                              CT_CL_ARG(rows),
                              CT_CL_ARG(n),
                              CT_CL_ARG(x_buffer),
                              CT_CL_ARG(off_x),
                              CT_CL_ARG(steps[0]),
                              CT_CL_ARG(t_buffer),
                              CT_CL_ARG(off_t),
                              CT_CL_ARG(steps[1]),
                              CT_CL_ARG(w_buffer),
                              CT_CL_ARG(off_w),
                              CT_CL_ARG(w_step),
                              CT_CL_ARG(ignore),
                              fp64 ? CT_CL_ARG(smoothing) : CT_CL_ARG(smoothing_f)};
  enum { NCOMMON = sizeof common / sizeof *common };
  ct_cl_arg args[NCOMMON + 12];
  memcpy(args, common, sizeof common);
  if (status == CT_OK) {
    args[NCOMMON] = CT_CL_ARG(s.found);
    args[NCOMMON + 1] = CT_CL_ARG(s.den);
    status = ct_cl_launch(&exec, &source, "ct_loss_check", 1, args, NCOMMON + 2);
  }
  if (status == CT_OK) status = ct_cl_read(&exec, s.found, 0, found, sizeof found);
  if (status == CT_OK && found[0]) {
    status = ct_cl_error(CT_ERROR_INVALID_ARGUMENT,
                         "%s: target class index %lld is out of range [0, %lld)%s",
                         call->schema->name, (long long)found[1], (long long)n,
                         has_ignore ? " and is not ignore_index" : "");
  }
  CT_CL_TENSOR_ARGS(s_buffer, off_s, sample);
  if (status == CT_OK && !backward) {
    const cl_int reduced = mode != 0;
    /* the samples' losses when reduced (one unused element otherwise) */
    const int64_t kept = reduced && rows > 0 ? rows : 1;
    status = ct_cl_scratch_array(&exec, kept, acc_size, &s.values);
    args[NCOMMON] = CT_CL_ARG(s_buffer);
    args[NCOMMON + 1] = CT_CL_ARG(off_s);
    args[NCOMMON + 2] = CT_CL_ARG(reduced);
    args[NCOMMON + 3] = CT_CL_ARG(s.values);
    if (status == CT_OK && rows > 0) {
      status = ct_cl_launch(&exec, &source, "ct_loss_rows", (size_t)rows, args, NCOMMON + 4);
    }
    if (status == CT_OK && reduced) {
      status = ct_cl_loss_total(&exec, &source, &s, rows, acc_size, sample, mode == 1, 1.0);
    }
  } else if (status == CT_OK) {
    const cl_int mode_arg = mode;
    cl_mem gx_buffer = (cl_mem)gx->data;
    const int64_t off_gx = (int64_t)gx->byte_offset;
    cl_mem gt_buffer = gt ? (cl_mem)gt->data : gx_buffer;
    const int64_t off_gt = gt ? (int64_t)gt->byte_offset : 0;
    const cl_int has_gt = gt != NULL;
    args[NCOMMON] = CT_CL_ARG(s_buffer);
    args[NCOMMON + 1] = CT_CL_ARG(off_s);
    args[NCOMMON + 2] = CT_CL_ARG(mode_arg);
    args[NCOMMON + 3] = CT_CL_ARG(s.den);
    args[NCOMMON + 4] = CT_CL_ARG(gx_buffer);
    args[NCOMMON + 5] = CT_CL_ARG(off_gx);
    args[NCOMMON + 6] = CT_CL_ARG(steps[3]);
    args[NCOMMON + 7] = CT_CL_ARG(gt_buffer);
    args[NCOMMON + 8] = CT_CL_ARG(off_gt);
    args[NCOMMON + 9] = CT_CL_ARG(steps[4]);
    args[NCOMMON + 10] = CT_CL_ARG(has_gt);
    status =
        ct_cl_launch(&exec, &source, "ct_loss_rows_backward", (size_t)rows, args, NCOMMON + 11);
  }
  ct_cl_loss_release(&s);
  return status;
}

/* ----- element-wise losses ----- */

#define CT_CL_POINT_PARAMS                                                                \
  "__global const long* meta_a, int ndim_a, __global const long* meta_b, int ndim_b, "    \
  "long count, __global const char* x, long off_x, __global const char* t, long off_t, "  \
  "__global const char* w, long off_w, int has_w, __global const char* pw, long off_pw, " \
  "int has_pw, ACC beta"

static const char ct_cl_point_source[] =
    "T ct_log_sigmoid(T v) {\n  return (v < 0 ? v : (T)0) - log1p(exp(-fabs(v)));\n}\n"
    "__kernel void ct_point(" CT_CL_POINT_PARAMS
    ", __global char* s, long off_s, int reduced, __global ACC* values) {\n"
    "  const long i = get_global_id(0);\n  if (i >= count) return;\n"
    "  long a0 = off_s, a1 = off_x, a2 = off_t, a3 = off_w, b0 = off_pw, b1 = 0, b2 = 0, "
    "b3 = 0;\n"
    "CT_OFFSETS"
    "  const T xv = CAT(LD_, TAG)(x, a1), tv = CAT(LD_, TAG)(t, a2);\n"
    "#if KIND == 1\n  const T d = xv - tv;\n  const T loss = d * d;\n"
    "#elif KIND == 2\n  const T d = fabs(xv - tv), b = (T)beta;\n"
    "  const T loss = d < b ? (T)0.5 * d * d / b : d - (T)0.5 * b;\n"
    "#else\n  const T wv = has_w ? CAT(LD_, TAG)(w, a3) : (T)1;\n"
    "  const T lw = has_pw ? (T)1 + (CAT(LD_, TAG)(pw, b0) - (T)1) * tv : (T)1;\n"
    "  const T loss = wv * (((T)1 - tv) * xv - lw * ct_log_sigmoid(xv));\n#endif\n"
    "  if (reduced) values[i] = (ACC)loss; else CAT(ST_, TAG)(s, a0, loss);\n}\n"
    "__kernel void ct_point_backward(" CT_CL_POINT_PARAMS
    ", __global const char* s, long off_s, ACC scale, __global char* gx, long off_gx, "
    "__global char* gt, long off_gt) {\n"
    "  const long i = get_global_id(0);\n  if (i >= count) return;\n"
    "  long a0 = off_s, a1 = off_x, a2 = off_t, a3 = off_w, b0 = off_pw, b1 = off_gx, "
    "b2 = off_gt, b3 = 0;\n"
    "CT_OFFSETS"
    "  const T xv = CAT(LD_, TAG)(x, a1), tv = CAT(LD_, TAG)(t, a2);\n"
    "  const T g = (T)((ACC)CAT(LD_, TAG)(s, a0) * scale);\n"
    "#if KIND == 1\n  CAT(ST_, TAG)(gx, b1, (T)2 * (xv - tv) * g);\n"
    "#elif KIND == 2\n  const T d = xv - tv, b = (T)beta;\n"
    "  const T slope = fabs(d) < b ? d / b : d > 0 ? (T)1 : d < 0 ? (T)-1 : (T)0;\n"
    "  CAT(ST_, TAG)(gx, b1, slope * g);\n"
    "#else\n  const T wv = has_w ? CAT(LD_, TAG)(w, a3) : (T)1;\n"
    "  const T pv = has_pw ? CAT(LD_, TAG)(pw, b0) : (T)1;\n"
    "  const T lw = (T)1 + (pv - (T)1) * tv;\n"
    "  const T sig = (T)1 / ((T)1 + exp(-xv));\n"
    "  CAT(ST_, TAG)(gx, b1, g * wv * (lw * sig - pv * tv));\n"
    "  CAT(ST_, TAG)(gt, b2, g * wv * (-xv - (pv - (T)1) * ct_log_sigmoid(xv)));\n#endif\n}\n";

static int ct_cl_point_loss_run(const ct_kernel_call* call) {
  const bool backward = strstr(call->schema->name, "_backward") != NULL;
  const int32_t first = backward ? 1 : 0;
  const char* name = call->schema->name;
  const int kind = name[0] == 'b' ? 0 : name[0] == 'm' ? 1 : 2;
  const int mode = ct_cl_loss_mode(&call->attrs[0]);
  const double beta = kind == 2 ? call->attrs[1].value.f : 0.0;
  const ct_tensor* x = call->inputs[first];
  const ct_tensor* target = call->inputs[first + 1];
  const ct_tensor* weight = kind == 0 ? call->inputs[first + 2] : NULL;
  const ct_tensor* pos_weight = kind == 0 ? call->inputs[first + 3] : NULL;
  const ct_tensor* sample = backward ? call->inputs[0] : call->outputs[0];
  const ct_tensor* gx = backward ? call->outputs[0] : NULL;
  const ct_tensor* gt = backward && call->num_outputs > 1 ? call->outputs[1] : NULL;
  /* the element shape: x and target broadcast */
  const ct_tensor* pair[2] = {x, target};
  int32_t ndim = x->ndim > target->ndim ? x->ndim : target->ndim;
  int64_t shape[CT_MAX_NDIM];
  for (int32_t d = 0; d < ndim; ++d) shape[d] = 1;
  for (int k = 0; k < 2; ++k) {
    for (int32_t d = 0; d < pair[k]->ndim; ++d) {
      const int64_t e = pair[k]->shape[d];
      if (e != 1) shape[ndim - pair[k]->ndim + d] = e;
    }
  }
  int64_t count = 1;
  for (int32_t d = 0; d < ndim; ++d) count *= shape[d];
  if (backward && count == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  /* layout a: (sample, x, target, weight); b: (pos_weight, grad_x, grad_target); an absent or
   * reduced (0-d) operand takes zero strides */
  const ct_tensor* a_ops[4] = {sample, x, target, weight};
  const ct_tensor* b_ops[3] = {pos_weight, gx, gt};
  ct_pl_layout la, lb;
  ct_pl_layout_begin(&la, ndim, shape);
  ct_pl_layout_begin(&lb, ndim, shape);
  const int64_t zeros[CT_MAX_NDIM] = {0};
  for (int k = 0; k < 4; ++k) {
    if (a_ops[k] && a_ops[k]->ndim > 0) {
      ct_pl_layout_add(&la, a_ops[k]);
    } else {
      ct_pl_layout_add_strides(&la, zeros);
    }
  }
  for (int k = 0; k < 3; ++k) {
    if (b_ops[k] && b_ops[k]->ndim > 0) {
      ct_pl_layout_add(&lb, b_ops[k]);
    } else {
      ct_pl_layout_add_strides(&lb, zeros);
    }
  }
  ct_pl_layout_collapse(&la, NULL);
  ct_pl_layout_collapse(&lb, NULL);

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  const bool fp64 = exec.device->has_fp64;
  const size_t acc_size = fp64 ? sizeof(double) : sizeof(float);
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define ACC %s\n#define KIND %d\n",
                   t->compute, t->tag, fp64 ? "double" : "float", kind);
  /* the point kernels' offsets: the source's CT_OFFSETS marks where they go */
  const char* marker = strstr(ct_cl_point_source, "CT_OFFSETS");
  const char* rest = marker;
  const char* text = ct_cl_point_source;
  while (marker) {
    ct_cl_source_add(&source, "%.*s", (int)(marker - text), text);
    ct_cl_loss_offsets(&source, "i");
    text = marker + strlen("CT_OFFSETS");
    marker = strstr(text, "CT_OFFSETS");
    rest = text;
  }
  ct_cl_source_add(&source, "%s%s", rest, ct_cl_loss_sum_source);

  ct_cl_loss_scratch s = {0};
  status = ct_cl_layout_meta(&exec, &la, &s.meta_a);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &lb, &s.meta_b);
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  CT_CL_TENSOR_ARGS(t_buffer, off_t, target);
  CT_CL_TENSOR_ARGS(s_buffer, off_s, sample);
  cl_mem w_buffer = weight ? (cl_mem)weight->data : x_buffer;
  const int64_t off_w = weight ? (int64_t)weight->byte_offset : 0;
  cl_mem pw_buffer = pos_weight ? (cl_mem)pos_weight->data : x_buffer;
  const int64_t off_pw = pos_weight ? (int64_t)pos_weight->byte_offset : 0;
  const cl_int has_w = weight != NULL, has_pw = pos_weight != NULL;
  const cl_int ndim_a = la.ndim, ndim_b = lb.ndim;
  const float beta_f = (float)beta;
  const ct_cl_arg common[] = {CT_CL_ARG(s.meta_a),  CT_CL_ARG(ndim_a),
                              CT_CL_ARG(s.meta_b),  CT_CL_ARG(ndim_b),
                              CT_CL_ARG(count),     CT_CL_ARG(x_buffer),
                              CT_CL_ARG(off_x),     CT_CL_ARG(t_buffer),
                              CT_CL_ARG(off_t),     CT_CL_ARG(w_buffer),
                              CT_CL_ARG(off_w),     CT_CL_ARG(has_w),
                              CT_CL_ARG(pw_buffer), CT_CL_ARG(off_pw),
                              CT_CL_ARG(has_pw),    fp64 ? CT_CL_ARG(beta) : CT_CL_ARG(beta_f)};
  enum { NCOMMON = sizeof common / sizeof *common };
  ct_cl_arg args[NCOMMON + 8];
  memcpy(args, common, sizeof common);
  if (status == CT_OK && !backward) {
    const cl_int reduced = mode != 0;
    const int64_t kept = reduced && count > 0 ? count : 1;
    status = ct_cl_scratch_array(&exec, kept, acc_size, &s.values);
    args[NCOMMON] = CT_CL_ARG(s_buffer);
    args[NCOMMON + 1] = CT_CL_ARG(off_s);
    args[NCOMMON + 2] = CT_CL_ARG(reduced);
    args[NCOMMON + 3] = CT_CL_ARG(s.values);
    if (status == CT_OK && count > 0) {
      status = ct_cl_launch(&exec, &source, "ct_point", (size_t)count, args, NCOMMON + 4);
    }
    if (status == CT_OK && reduced) {
      const double scale = mode == 1 ? 1.0 / (double)count : 1.0; /* 1 / 0: inf, 0 * inf: nan */
      status = ct_cl_loss_total(&exec, &source, &s, count, acc_size, sample, false, scale);
    }
  } else if (status == CT_OK) {
    const double scale = mode == 1 ? 1.0 / (double)count : 1.0;
    const float scale_f = (float)scale;
    cl_mem gx_buffer = (cl_mem)gx->data;
    const int64_t off_gx = (int64_t)gx->byte_offset;
    cl_mem gt_buffer = gt ? (cl_mem)gt->data : gx_buffer;
    const int64_t off_gt = gt ? (int64_t)gt->byte_offset : 0;
    args[NCOMMON] = CT_CL_ARG(s_buffer);
    args[NCOMMON + 1] = CT_CL_ARG(off_s);
    args[NCOMMON + 2] = fp64 ? CT_CL_ARG(scale) : CT_CL_ARG(scale_f);
    args[NCOMMON + 3] = CT_CL_ARG(gx_buffer);
    args[NCOMMON + 4] = CT_CL_ARG(off_gx);
    args[NCOMMON + 5] = CT_CL_ARG(gt_buffer);
    args[NCOMMON + 6] = CT_CL_ARG(off_gt);
    status = ct_cl_launch(&exec, &source, "ct_point_backward", (size_t)count, args, NCOMMON + 7);
  }
  ct_cl_loss_release(&s);
  return status;
}

int ct_cl_register_loss(void) {
  const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  int status = CT_OK;
  for (int k = 0; k < 3 && status == CT_OK; ++k) {
    const ct_pl_type f = floats[k];
    const ct_pl_type targets[3] = {CT_PL_I64, CT_PL_I32, f};
    for (int i = 0; i < 3 && status == CT_OK; ++i) {
      const ct_pl_type y = targets[i];
      const ct_pl_type forward[4] = {f, y, f, f};
      const ct_pl_type backward[6] = {f, f, y, f, f, f};
      status = ct_cl_register("cross_entropy", forward, 4, ct_cl_class_loss_run, NULL, NULL);
      if (status == CT_OK) {
        status =
            ct_cl_register("cross_entropy_backward", backward, 6, ct_cl_class_loss_run, NULL, NULL);
      }
      if (status == CT_OK && i < 2) {
        status = ct_cl_register("nll_loss", forward, 4, ct_cl_class_loss_run, NULL, NULL);
      }
      if (status == CT_OK && i < 2) {
        status = ct_cl_register("nll_loss_backward", backward, 5, ct_cl_class_loss_run, NULL, NULL);
      }
    }
    const ct_pl_type same[7] = {f, f, f, f, f, f, f};
    static const char* const pairs[] = {"mse_loss", "smooth_l1_loss"};
    if (status == CT_OK) {
      status = ct_cl_register("binary_cross_entropy_with_logits", same, 5, ct_cl_point_loss_run,
                              NULL, NULL);
    }
    if (status == CT_OK) {
      status = ct_cl_register("binary_cross_entropy_with_logits_backward", same, 7,
                              ct_cl_point_loss_run, NULL, NULL);
    }
    for (int i = 0; i < 2 && status == CT_OK; ++i) {
      char backward_name[64];
      snprintf(backward_name, sizeof backward_name, "%s_backward", pairs[i]);
      status = ct_cl_register(pairs[i], same, 3, ct_cl_point_loss_run, NULL, NULL);
      if (status == CT_OK) {
        status = ct_cl_register(backward_name, same, 4, ct_cl_point_loss_run, NULL, NULL);
      }
    }
  }
  return status;
}
