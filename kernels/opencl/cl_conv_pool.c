/* cl_conv_pool.c - conv2d (NCHW input, OIHW weight, stride/padding/dilation/groups, optional
 * bias) and max_pool2d / avg_pool2d / adaptive_avg_pool2d over (N, C, H, W) or (C, H, W): one
 * work item per output element, windows and divisors exactly as the CPU backend (torch's). The
 * direct convolution needs no workspace. float16 computes in float. Their backward operators
 * (conv2d_backward_input/_weight, <pool>_backward) likewise: one work item per cotangent
 * element, gathering, no workspace. */
#include <string.h>

#include "cl_layout.h"
#include "plugin_geometry.h"
#include "cl_types.h"

typedef enum ct_cl_pool_mode {
  CT_CL_POOL_MAX = 0,
  CT_CL_POOL_AVG,
  CT_CL_POOL_ADAPTIVE
} ct_cl_pool_mode;

static const char ct_cl_conv_source[] =
    "__kernel void ct_conv2d(__global char* out, long off_out, __global const char* x, long "
    "off_x, __global const char* w, long off_w, __global const char* b, long off_b, int has_b, "
    "__global const long* p, long n) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    /* p: out shape[4], out strides[4], x shape[4], x strides[4], w shape[4], w strides[4],
     * bias stride, stride[2], padding[2], dilation[2], groups (element strides) */
    "  const long ow = i % p[3], oh = (i / p[3]) % p[2], oc = (i / (p[3] * p[2])) % p[1],\n"
    "             b0 = i / (p[3] * p[2] * p[1]);\n"
    "  const long cin = p[17], kh_n = p[18], kw_n = p[19];\n"
    "  const long groups = p[31], oc_per_group = p[1] / groups, g = oc / oc_per_group;\n"
    "  ACC acc = 0;\n"
    "  for (long c = 0; c < cin; ++c) {\n"
    "    const long ic = g * cin + c;\n"
    "    for (long kh = 0; kh < kh_n; ++kh) {\n"
    "      const long ih = oh * p[25] - p[27] + kh * p[29];\n"
    "      for (long kw = 0; kw < kw_n; ++kw) {\n"
    "        const long iw = ow * p[26] - p[28] + kw * p[30];\n"
    /* Padding is zeros that still multiply the weight (0 * nan is nan, as im2col and torch). */
    "        const int inside = ih >= 0 && ih < p[10] && iw >= 0 && iw < p[11];\n"
    "        const ACC xv = inside ? (ACC)CAT(LD_, TAG)(x, off_x + SZ * (b0 * p[12] + ic * p[13] "
    "+ ih * p[14] + iw * p[15])) : (ACC)0;\n"
    "        const ACC wv = CAT(LD_, TAG)(w, off_w + SZ * (oc * p[20] + c * p[21] + kh * p[22] + "
    "kw * p[23]));\n"
    "        acc += xv * wv;\n      }\n    }\n  }\n"
    "  if (has_b) acc += CAT(LD_, TAG)(b, off_b + SZ * oc * p[24]);\n"
    "  CAT(ST_, TAG)(out, off_out + SZ * (b0 * p[4] + oc * p[5] + oh * p[6] + ow * p[7]), "
    "(T)acc);\n}\n";

static const char ct_cl_pool_source[] =
    "__kernel void ct_pool(__global char* out, long off_out, __global const char* x, long off_x, "
    "__global const long* p, long n) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    /* p: out shape[4], out strides[4], x shape[4], x strides[4], kernel[2], stride[2],
     * padding[2], dilation[2], count_include_pad, has_divisor, divisor */
    "  const long ow = i % p[3], oh = (i / p[3]) % p[2], c = (i / (p[3] * p[2])) % p[1],\n"
    "             b0 = i / (p[3] * p[2] * p[1]);\n"
    "  const long h = p[10], w = p[11], oh_n = p[2], ow_n = p[3];\n"
    "  const long base = off_x + SZ * (b0 * p[12] + c * p[13]);\n"
    "  T result;\n"
    "#if MODE == 0\n"
    "  const long dh = p[22], dw = p[23];\n"
    "  long h0 = oh * p[18] - p[20], w0 = ow * p[19] - p[21];\n"
    "  const long h1 = min(h0 + (p[16] - 1) * dh + 1, h), w1 = min(w0 + (p[17] - 1) * dw + 1, w);\n"
    "  if (h0 < 0) h0 += (dh - 1 - h0) / dh * dh;\n"
    "  if (w0 < 0) w0 += (dw - 1 - w0) / dw * dw;\n"
    "  result = LOWEST;\n"
    "  for (long ih = h0; ih < h1; ih += dh)\n"
    "    for (long iw = w0; iw < w1; iw += dw) {\n"
    "      const T v = CAT(LD_, TAG)(x, base + SZ * (ih * p[14] + iw * p[15]));\n"
    "      if (v > result || v != v) result = v;\n    }\n"
    "#else\n"
    "  long h0, h1, w0, w1, divide;\n"
    "#if MODE == 2\n"
    "  h0 = oh * h / oh_n;  h1 = ((oh + 1) * h + oh_n - 1) / oh_n;\n"
    "  w0 = ow * w / ow_n;  w1 = ((ow + 1) * w + ow_n - 1) / ow_n;\n"
    "  divide = (h1 - h0) * (w1 - w0);\n"
    "#else\n"
    "  h0 = oh * p[18] - p[20];  w0 = ow * p[19] - p[21];\n"
    "  h1 = min(h0 + p[16], h + p[20]);  w1 = min(w0 + p[17], w + p[21]);\n"
    "  const long pool_size = (h1 - h0) * (w1 - w0);\n"
    "  h0 = max(h0, 0L);  w0 = max(w0, 0L);  h1 = min(h1, h);  w1 = min(w1, w);\n"
    "  divide = p[25] ? p[26] : p[24] ? pool_size : (h1 - h0) * (w1 - w0);\n"
    "#endif\n"
    "  T sum = 0;\n"
    "  for (long ih = h0; ih < h1; ++ih)\n"
    "    for (long iw = w0; iw < w1; ++iw)\n"
    "      sum += CAT(LD_, TAG)(x, base + SZ * (ih * p[14] + iw * p[15]));\n"
    "  result = (h0 >= h1 || w0 >= w1) ? (T)0 : sum / (T)divide;\n"
    "#endif\n"
    "  CAT(ST_, TAG)(out, off_out + SZ * (b0 * p[4] + c * p[5] + oh * p[6] + ow * p[7]), "
    "result);\n}\n";

/* The backward operators, one work item per element of the cotangent they write, each a sum
 * gathered over what reads that element in the forward (no atomics). The sums run in the
 * compute type, in another order than the CPU's. */
static const char ct_cl_conv_backward_source[] =
    "__kernel void ct_conv2d_bwd(__global char* out, long off_out, __global const char* g, long "
    "off_g, __global const char* v, long off_v, __global const long* p, long n) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    /* p: out shape[4], out strides[4], grad_out shape[4] and strides[4], v (the weight for the
     * input's cotangent, the input for the weight's) shape[4] and strides[4], stride[2],
     * padding[2], dilation[2], groups */
    "  const long a3 = i % p[3], a2 = (i / p[3]) % p[2], a1 = (i / (p[3] * p[2])) % p[1],\n"
    "             a0 = i / (p[3] * p[2] * p[1]);\n"
    "  const long groups = p[30];\n"
    "  ACC acc = 0;\n"
    "#if WEIGHT\n"
    /* out: grad_weight (O, C/groups, kH, kW); v: input (N, C, H, W) */
    "  const long og = p[0] / groups, c = (a0 / og) * p[1] + a1;\n"
    "  for (long b = 0; b < p[8]; ++b)\n"
    "    for (long oh = 0; oh < p[10]; ++oh) {\n"
    "      const long ih = oh * p[24] - p[26] + a2 * p[28];\n"
    "      if (ih < 0 || ih >= p[18]) continue;\n"
    "      for (long ow = 0; ow < p[11]; ++ow) {\n"
    "        const long iw = ow * p[25] - p[27] + a3 * p[29];\n"
    "        if (iw < 0 || iw >= p[19]) continue;\n"
    "        acc += (ACC)CAT(LD_, TAG)(g, off_g + SZ * (b * p[12] + a0 * p[13] + oh * p[14] + ow "
    "* p[15])) * (ACC)CAT(LD_, TAG)(v, off_v + SZ * (b * p[20] + c * p[21] + ih * p[22] + iw * "
    "p[23]));\n"
    "      }\n    }\n"
    "#else\n"
    /* out: grad_input (N, C, H, W); v: weight (O, C/groups, kH, kW) */
    "  const long cg = p[1] / groups, og = p[16] / groups, grp = a1 / cg, cl = a1 - grp * cg;\n"
    "  for (long o = 0; o < og; ++o) {\n"
    "    const long oc = grp * og + o;\n"
    "    for (long ki = 0; ki < p[18]; ++ki) {\n"
    "      const long t = a2 + p[26] - ki * p[28];\n"
    "      if (t < 0 || t % p[24] != 0 || t / p[24] >= p[10]) continue;\n"
    "      for (long kj = 0; kj < p[19]; ++kj) {\n"
    "        const long u = a3 + p[27] - kj * p[29];\n"
    "        if (u < 0 || u % p[25] != 0 || u / p[25] >= p[11]) continue;\n"
    "        acc += (ACC)CAT(LD_, TAG)(g, off_g + SZ * (a0 * p[12] + oc * p[13] + (t / p[24]) * "
    "p[14] + (u / p[25]) * p[15])) * (ACC)CAT(LD_, TAG)(v, off_v + SZ * (oc * p[20] + cl * "
    "p[21] + ki * p[22] + kj * p[23]));\n"
    "      }\n    }\n  }\n"
    "#endif\n"
    "  CAT(ST_, TAG)(out, off_out + SZ * (a0 * p[4] + a1 * p[5] + a2 * p[6] + a3 * p[7]), "
    "(T)acc);\n}\n";

static const char ct_cl_pool_backward_source[] =
    "__kernel void ct_pool_bwd(__global char* out, long off_out, __global const char* g, long "
    "off_g, __global const char* x, long off_x, __global const long* p, long n) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    /* p: grad_input shape[4] and strides[4], grad_out shape[4] and strides[4], input strides
     * at p[20..23], kernel[2] p[24], stride[2] p[26], padding[2] p[28], dilation[2] p[30],
     * count_include_pad p[32], has_divisor p[33], divisor p[34] */
    "  const long w_ = i % p[3], h_ = (i / p[3]) % p[2], c = (i / (p[3] * p[2])) % p[1],\n"
    "             b0 = i / (p[3] * p[2] * p[1]);\n"
    "  const long h = p[2], w = p[3], oh_n = p[10], ow_n = p[11];\n"
    "  const long gbase = off_g + SZ * (b0 * p[12] + c * p[13]);\n"
    "  T acc = 0;\n"
    "#if MODE == 2\n"
    "  for (long oh = max(0L, h_ * oh_n / h - 1); oh < min(oh_n, (h_ + 1) * oh_n / h + 2); ++oh) "
    "{\n"
    "    const long h0 = oh * h / oh_n, h1 = ((oh + 1) * h + oh_n - 1) / oh_n;\n"
    "    if (h_ < h0 || h_ >= h1) continue;\n"
    "    for (long ow = max(0L, w_ * ow_n / w - 1); ow < min(ow_n, (w_ + 1) * ow_n / w + 2); "
    "++ow) {\n"
    "      const long w0 = ow * w / ow_n, w1 = ((ow + 1) * w + ow_n - 1) / ow_n;\n"
    "      if (w_ < w0 || w_ >= w1) continue;\n"
    "      acc += CAT(LD_, TAG)(g, gbase + SZ * (oh * p[14] + ow * p[15])) / (T)(h1 - h0) / "
    "(T)(w1 - w0);\n"
    "    }\n  }\n"
    "#else\n"
    "  const long kh = p[24], kw = p[25], sh = p[26], sw = p[27], ph = p[28], pw = p[29];\n"
    "  const long dh = p[30], dw = p[31];\n"
    "  const long lo_h = h_ + ph - (kh - 1) * dh, lo_w = w_ + pw - (kw - 1) * dw;\n"
    "  const long oh_lo = lo_h > 0 ? (lo_h + sh - 1) / sh : 0, oh_hi = min(oh_n - 1, (h_ + ph) "
    "/ sh);\n"
    "  const long ow_lo = lo_w > 0 ? (lo_w + sw - 1) / sw : 0, ow_hi = min(ow_n - 1, (w_ + pw) "
    "/ sw);\n"
    "  for (long oh = oh_lo; oh <= oh_hi; ++oh) {\n"
    "    if ((h_ + ph - oh * sh) % dh != 0) continue;\n"
    "    for (long ow = ow_lo; ow <= ow_hi; ++ow) {\n"
    "      if ((w_ + pw - ow * sw) % dw != 0) continue;\n"
    "      const T gv = CAT(LD_, TAG)(g, gbase + SZ * (oh * p[14] + ow * p[15]));\n"
    "#if MODE == 0\n"
    "      long h0 = oh * sh - ph, w0 = ow * sw - pw;\n"
    "      const long h1 = min(h0 + (kh - 1) * dh + 1, h), w1 = min(w0 + (kw - 1) * dw + 1, w);\n"
    "      if (h0 < 0) h0 += (dh - 1 - h0) / dh * dh;\n      if (w0 < 0) w0 += (dw - 1 - w0) / dw "
    "* dw;\n"
    "      const long xbase = off_x + SZ * (b0 * p[20] + c * p[21]);\n"
    "      T best = -INFINITY;\n      long bh = h0, bw = w0;\n"
    "      for (long ih = h0; ih < h1; ih += dh)\n"
    "        for (long iw = w0; iw < w1; iw += dw) {\n"
    "          const T v = CAT(LD_, TAG)(x, xbase + SZ * (ih * p[22] + iw * p[23]));\n"
    "          if (v > best || v != v) { best = v; bh = ih; bw = iw; }\n        }\n"
    "      if (bh == h_ && bw == w_) acc += gv;\n"
    "#else\n"
    "      long h0 = oh * sh - ph, w0 = ow * sw - pw;\n"
    "      long h1 = min(h0 + kh, h + ph), w1 = min(w0 + kw, w + pw);\n"
    "      const long pool_size = (h1 - h0) * (w1 - w0);\n"
    "      h0 = max(h0, 0L);  w0 = max(w0, 0L);  h1 = min(h1, h);  w1 = min(w1, w);\n"
    "      const long divide = p[33] ? p[34] : p[32] ? pool_size : (h1 - h0) * (w1 - w0);\n"
    "      acc += gv / (T)divide;\n"
    "#endif\n"
    "    }\n  }\n"
    "#endif\n"
    "  CAT(ST_, TAG)(out, off_out + SZ * (b0 * p[4] + c * p[5] + h_ * p[6] + w_ * p[7]), acc);\n"
    "}\n";

/* conv2d_backward_input (kernel_data 0) and conv2d_backward_weight (1). */
/* adaptive_avg_pool2d's device code forms i · H and (i + 1) · H (and their W and backward
 * counterparts) in 64 bits: refused where H · H_out or W · W_out overflows int64 (broadcast
 * inputs of huge extent), which bounds every such product. `in` and `out` are (N, C, H, W). */
static int ct_cl_adaptive_fits(const char* op, const int64_t* in, const int64_t* out) {
  int64_t product;
  if (__builtin_mul_overflow(in[2], out[2], &product) ||
      __builtin_mul_overflow(in[3], out[3], &product)) {
    return ct_cl_error(CT_ERROR_SIZE_OVERFLOW,
                       "%s: input extents (%lld, %lld) times output extents (%lld, %lld) overflow "
                       "int64 in the OpenCL window arithmetic",
                       op, (long long)in[2], (long long)in[3], (long long)out[2],
                       (long long)out[3]);
  }
  return CT_OK;
}

static int ct_cl_conv2d_backward_run(const ct_kernel_call* call) {
  const int weight_mode = (int)(intptr_t)call->kernel_data;
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* other = weight_mode ? call->inputs[1] : call->inputs[2];
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  int64_t p[31];
  ct_pl_nchw(out, p, p + 4);
  ct_pl_nchw(grad, p + 8, p + 12);
  ct_pl_nchw(other, p + 16, p + 20);
  ct_pl_attr_pair(&call->attrs[0], ones, p + 24);
  ct_pl_attr_pair(&call->attrs[1], zeros, p + 26);
  ct_pl_attr_pair(&call->attrs[2], ones, p + 28);
  p[30] = call->attrs[3].value.i;
  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(grad->dtype)];
  const int32_t size = ct_pl_type_size(ct_pl_type_of(grad->dtype));
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source,
                   "#define T %s\n#define TAG %s\n#define SZ %d\n#define ACC %s\n#define WEIGHT "
                   "%d\n%s",
                   t->compute, t->tag, size, t->compute, weight_mode, ct_cl_conv_backward_source);
  cl_mem params = NULL;
  status = ct_cl_meta_buffer(&exec, p, 31, &params);
  if (status != CT_OK) return status;
  CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
  CT_CL_TENSOR_ARGS(g_buffer, off_g, grad);
  CT_CL_TENSOR_ARGS(v_buffer, off_v, other);
  const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out),  CT_CL_ARG(g_buffer),
                            CT_CL_ARG(off_g),      CT_CL_ARG(v_buffer), CT_CL_ARG(off_v),
                            CT_CL_ARG(params),     CT_CL_ARG(n)};
  status = ct_cl_launch(&exec, &source, "ct_conv2d_bwd", (size_t)n, args,
                        (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(params);
  return status;
}

static int ct_cl_pool_backward_run(const ct_kernel_call* call) {
  const ct_cl_pool_mode mode = (ct_cl_pool_mode)(intptr_t)call->kernel_data;
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  int64_t p[35] = {0};
  ct_pl_nchw(out, p, p + 4);
  ct_pl_nchw(grad, p + 8, p + 12);
  ct_pl_nchw(x, p + 16, p + 20);
  if (mode == CT_CL_POOL_ADAPTIVE) {
    status = ct_cl_adaptive_fits(call->schema->name, p + 16, p + 8);
    if (status != CT_OK) return status;
  }
  ct_pl_pool_window window;
  ct_pl_pool_window_read(call->attrs, (int32_t)mode, &window);
  memcpy(p + 24, &window, sizeof window);
  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  const int32_t size = ct_pl_type_size(ct_pl_type_of(x->dtype));
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define SZ %d\n#define MODE %d\n%s",
                   t->compute, t->tag, size, (int)mode, ct_cl_pool_backward_source);
  cl_mem params = NULL;
  status = ct_cl_meta_buffer(&exec, p, 35, &params);
  if (status != CT_OK) return status;
  CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
  CT_CL_TENSOR_ARGS(g_buffer, off_g, grad);
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out),  CT_CL_ARG(g_buffer),
                            CT_CL_ARG(off_g),      CT_CL_ARG(x_buffer), CT_CL_ARG(off_x),
                            CT_CL_ARG(params),     CT_CL_ARG(n)};
  status = ct_cl_launch(&exec, &source, "ct_pool_bwd", (size_t)n, args,
                        (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(params);
  return status;
}

static int ct_cl_conv2d_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* weight = call->inputs[1];
  const ct_tensor* bias = call->num_inputs > 2 ? call->inputs[2] : NULL;
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  int64_t p[32];
  ct_pl_nchw(out, p, p + 4);
  ct_pl_nchw(x, p + 8, p + 12);
  ct_pl_nchw(weight, p + 16, p + 20);
  int64_t bias_strides[CT_MAX_NDIM] = {0};
  if (bias) ct_pl_tensor_strides(bias, bias_strides);
  p[24] = bias_strides[0];
  ct_pl_attr_pair(&call->attrs[0], ones, p + 25);
  ct_pl_attr_pair(&call->attrs[1], zeros, p + 27);
  ct_pl_attr_pair(&call->attrs[2], ones, p + 29);
  p[31] = call->attrs[3].value.i;

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  const int32_t x_size = ct_pl_type_size(ct_pl_type_of(x->dtype));
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define SZ %d\n#define ACC %s\n%s",
                   t->compute, t->tag, x_size, t->compute, ct_cl_conv_source);
  cl_mem params = NULL;
  status = ct_cl_meta_buffer(&exec, p, 32, &params);
  if (status != CT_OK) return status;
  CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  CT_CL_TENSOR_ARGS(w_buffer, off_w, weight);
  cl_mem b_buffer = bias ? (cl_mem)bias->data : x_buffer;
  const int64_t off_b = bias ? (int64_t)bias->byte_offset : 0;
  const cl_int has_b = bias != NULL;
  const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out),  CT_CL_ARG(x_buffer),
                            CT_CL_ARG(off_x),      CT_CL_ARG(w_buffer), CT_CL_ARG(off_w),
                            CT_CL_ARG(b_buffer),   CT_CL_ARG(off_b),    CT_CL_ARG(has_b),
                            CT_CL_ARG(params),     CT_CL_ARG(n)};
  status =
      ct_cl_launch(&exec, &source, "ct_conv2d", (size_t)n, args, (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(params);
  return status;
}

static int ct_cl_pool_run(const ct_kernel_call* call) {
  const ct_cl_pool_mode mode = (ct_cl_pool_mode)(intptr_t)call->kernel_data;
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  int64_t p[27] = {0};
  ct_pl_nchw(out, p, p + 4);
  ct_pl_nchw(x, p + 8, p + 12);
  if (mode == CT_CL_POOL_ADAPTIVE) {
    status = ct_cl_adaptive_fits(call->schema->name, p + 8, p);
    if (status != CT_OK) return status;
  }
  ct_pl_pool_window window;
  ct_pl_pool_window_read(call->attrs, (int32_t)mode, &window);
  memcpy(p + 16, &window, sizeof window);
  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  const int32_t x_size = ct_pl_type_size(ct_pl_type_of(x->dtype));
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  /* max_pool2d's padding value: -inf, or an integer dtype's minimum */
  const ct_pl_type x_type = (ct_pl_type)ct_pl_type_of(x->dtype);
  const char* lowest = x_type == CT_PL_I32   ? "INT_MIN"
                       : x_type == CT_PL_I64 ? "LONG_MIN"
                                             : "-INFINITY";
  ct_cl_source_add(&source,
                   "#define T %s\n#define TAG %s\n#define SZ %d\n#define MODE %d\n#define LOWEST "
                   "%s\n%s",
                   t->compute, t->tag, x_size, (int)mode, lowest, ct_cl_pool_source);
  cl_mem params = NULL;
  status = ct_cl_meta_buffer(&exec, p, 27, &params);
  if (status != CT_OK) return status;
  CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out), CT_CL_ARG(x_buffer),
                            CT_CL_ARG(off_x),      CT_CL_ARG(params),  CT_CL_ARG(n)};
  status =
      ct_cl_launch(&exec, &source, "ct_pool", (size_t)n, args, (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(params);
  return status;
}

int ct_cl_register_conv_pool(void) {
  const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  static const char* pools[] = {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"};
  static const char* pool_backwards[] = {"max_pool2d_backward", "avg_pool2d_backward",
                                         "adaptive_avg_pool2d_backward"};
  /* integer max pooling (the integer dtypes this plugin has) */
  static const ct_pl_type integers[] = {CT_PL_I32, CT_PL_I64};
  for (int t = 0; t < 2; ++t) {
    const ct_pl_type signature[2] = {integers[t], integers[t]};
    const int status =
        ct_cl_register("max_pool2d", signature, 2, ct_cl_pool_run, NULL, (const void*)0);
    if (status != CT_OK) return status;
  }
  for (int t = 0; t < 3; ++t) {
    const ct_pl_type signature[4] = {floats[t], floats[t], floats[t], floats[t]};
    int status = ct_cl_register("conv2d", signature, 4, ct_cl_conv2d_run, NULL, NULL);
    for (intptr_t m = 0; m < 3 && status == CT_OK; ++m) {
      status = ct_cl_register(pools[m], signature, 2, ct_cl_pool_run, NULL, (const void*)m);
      if (status == CT_OK) {
        status = ct_cl_register(pool_backwards[m], signature, 3, ct_cl_pool_backward_run, NULL,
                                (const void*)m);
      }
    }
    if (status == CT_OK) {
      status = ct_cl_register("conv2d_backward_input", signature, 4, ct_cl_conv2d_backward_run,
                              NULL, (const void*)0);
    }
    if (status == CT_OK) {
      status = ct_cl_register("conv2d_backward_weight", signature, 4, ct_cl_conv2d_backward_run,
                              NULL, (const void*)1);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
