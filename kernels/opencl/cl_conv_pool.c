/* cl_conv_pool.c - conv2d (NCHW input, OIHW weight, stride/padding/dilation/groups, optional
 * bias) and max_pool2d / avg_pool2d / adaptive_avg_pool2d over (N, C, H, W) or (C, H, W): one
 * work item per output element, windows and divisors exactly as the CPU backend (torch's). The
 * direct convolution needs no workspace. float16 computes in float. */
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
    "  while (h0 < 0) h0 += dh;\n  while (w0 < 0) w0 += dw;\n"
    "  result = -INFINITY;\n"
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
  static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  int64_t p[27] = {0};
  ct_pl_nchw(out, p, p + 4);
  ct_pl_nchw(x, p + 8, p + 12);
  p[22] = p[23] = 1;
  p[24] = 1;
  if (mode != CT_CL_POOL_ADAPTIVE) {
    ct_pl_attr_pair(&call->attrs[0], ones, p + 16);
    ct_pl_attr_pair(&call->attrs[1], p + 16, p + 18);
    ct_pl_attr_pair(&call->attrs[2], zeros, p + 20);
  }
  if (mode == CT_CL_POOL_MAX) ct_pl_attr_pair(&call->attrs[3], ones, p + 22);
  if (mode == CT_CL_POOL_AVG) {
    p[24] = call->attrs[4].value.b != 0;
    p[25] = call->attrs[5].type == CT_ATTR_INT;
    p[26] = p[25] ? call->attrs[5].value.i : 0;
  }
  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  const int32_t x_size = ct_pl_type_size(ct_pl_type_of(x->dtype));
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define SZ %d\n#define MODE %d\n%s",
                   t->compute, t->tag, x_size, (int)mode, ct_cl_pool_source);
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
  for (int t = 0; t < 3; ++t) {
    const ct_pl_type signature[4] = {floats[t], floats[t], floats[t], floats[t]};
    int status = ct_cl_register("conv2d", signature, 4, ct_cl_conv2d_run, NULL, NULL);
    for (intptr_t m = 0; m < 3 && status == CT_OK; ++m) {
      status = ct_cl_register(pools[m], signature, 2, ct_cl_pool_run, NULL, (const void*)m);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
