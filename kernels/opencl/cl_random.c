/* cl_random.c - random_uniform, random_normal, random_bernoulli, dropout, dropout_backward and
 * arange: one work item per output element, at the element's row-major linear index, computing
 * with kernels/common/philox.h (embedded in the program text at build time: the same text the
 * CPU backend and the CUDA plugin compile), so every value has the CPU's bits. Float16 and
 * bfloat16 values are stored as the bits philox.h rounds. */
#include <stdio.h>
#include <string.h>

#include "cl_layout.h"
#include "cl_philox_source.h"
#include "cl_types.h"
#include "philox.h"

/* The operands of a call (up to 3: the output first), its parameters, and the statement that
 * computes one element (reading `w`, the element's Philox words, `i`, its index, and the byte
 * offsets off0..off2 of the operands at o0..o2). */
typedef struct ct_cl_rand_call {
  const ct_tensor* operands[3];
  int32_t count;
  ct_philox_u64 seed, offset;
  float pf0, pf1;
  double pd0, pd1;
  int64_t pi0, pi1;
  const char* body;
} ct_cl_rand_call;

static int ct_cl_rand_launch(const ct_kernel_call* call, ct_cl_rand_call* r) {
  const ct_tensor* out = r->operands[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const bool fp64 = exec.device->has_fp64;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, out->ndim, out->shape);
  for (int32_t k = 0; k < 3; ++k) {
    if (k < r->count) {
      ct_pl_layout_add(&layout, r->operands[k]);
    } else {
      const int64_t zeros[CT_MAX_NDIM] = {0};
      ct_pl_layout_add_strides(&layout, zeros);
    }
  }
  layout.elements = ct_pl_tensor_elements(out);
  ct_pl_layout_collapse(&layout, NULL); /* keeps the dims' order: the index stays row-major */

  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "%s", ct_cl_philox_source);
  ct_cl_source_add(&source,
                   "#define DBL %s\n"
                   "__kernel void ct_rand(__global char* o0, long b0, __global char* o1, long b1, "
                   "__global char* o2, long b2, __global const long* meta, int ndim, long n, "
                   "ulong seed, ulong offset, float pf0, float pf1, DBL pd0, DBL pd1, long pi0, "
                   "long pi1) {\n  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = b0, off1 = b1, off2 = b2;\n",
                   fp64 ? "double" : "float");
  ct_cl_source_index_loop(&source, 3);
  ct_cl_source_add(&source,
                   "  const ct_philox4 w = ct_philox_element(seed, offset, (ulong)i);\n  %s\n}\n",
                   r->body);

  cl_mem meta = NULL;
  status = ct_cl_layout_meta(&exec, &layout, &meta);
  if (status == CT_OK) {
    cl_mem buffers[3];
    int64_t offsets[3];
    for (int32_t k = 0; k < 3; ++k) {
      const ct_tensor* t = r->operands[k < r->count ? k : 0];
      buffers[k] = (cl_mem)t->data;
      offsets[k] = (int64_t)t->byte_offset;
    }
    const cl_int ndim = layout.ndim;
    const int64_t n = layout.elements;
    const cl_ulong seed = r->seed, offset = r->offset;
    const float pd0_f = (float)r->pd0, pd1_f = (float)r->pd1;
    const ct_cl_arg args[] = {CT_CL_ARG(buffers[0]),
                              CT_CL_ARG(offsets[0]),
                              CT_CL_ARG(buffers[1]),
                              CT_CL_ARG(offsets[1]),
                              CT_CL_ARG(buffers[2]),
                              CT_CL_ARG(offsets[2]),
                              CT_CL_ARG(meta),
                              CT_CL_ARG(ndim),
                              CT_CL_ARG(n),
                              CT_CL_ARG(seed),
                              CT_CL_ARG(offset),
                              CT_CL_ARG(r->pf0),
                              CT_CL_ARG(r->pf1),
                              fp64 ? CT_CL_ARG(r->pd0) : CT_CL_ARG(pd0_f),
                              fp64 ? CT_CL_ARG(r->pd1) : CT_CL_ARG(pd1_f),
                              CT_CL_ARG(r->pi0),
                              CT_CL_ARG(r->pi1)};
    status =
        ct_cl_launch(&exec, &source, "ct_rand", (size_t)n, args, (int)(sizeof args / sizeof *args));
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  return status;
}

static void ct_cl_rand_begin(const ct_kernel_call* call, int32_t seed_attr, ct_cl_rand_call* r) {
  memset(r, 0, sizeof *r);
  r->operands[0] = call->outputs[0];
  r->count = 1;
  if (seed_attr >= 0) {
    r->seed = (ct_philox_u64)call->attrs[seed_attr].value.i;
    r->offset = (ct_philox_u64)call->attrs[seed_attr + 1].value.i;
  }
}

/* A bound as the kernels of `type` see it: float32, then float16 (as the CPU backend). */
static float ct_cl_rand_bound(double value, ct_pl_type type) {
  const float f = (float)value;
  return type == CT_PL_F16 ? ct_philox_f16_to_f32(ct_philox_f32_to_f16(f)) : f;
}

static int ct_cl_random_uniform_run(const ct_kernel_call* call) {
  ct_cl_rand_call r;
  ct_cl_rand_begin(call, 4, &r);
  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(call->outputs[0]->dtype);
  r.pd0 = call->attrs[2].value.f;
  r.pd1 = call->attrs[3].value.f;
  r.pf0 = ct_cl_rand_bound(r.pd0, type);
  r.pf1 = ct_cl_rand_bound(r.pd1, type);
  r.body = type == CT_PL_F32 ? "*AT(float, o0, off0) = ct_philox_uniform_range_f32(w.x[0], pf0, "
                               "pf1);"
           : type == CT_PL_F16
               ? "*AT(ushort, o0, off0) = ct_philox_uniform_range_f16(w.x[0], pf0, pf1);"
               : "*AT(double, o0, off0) = ct_philox_uniform_range_f64(w.x[0], w.x[1], pd0, pd1);";
  return ct_cl_rand_launch(call, &r);
}

static int ct_cl_random_normal_run(const ct_kernel_call* call) {
  ct_cl_rand_call r;
  ct_cl_rand_begin(call, 4, &r);
  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(call->outputs[0]->dtype);
  r.pd0 = call->attrs[2].value.f;
  r.pd1 = call->attrs[3].value.f;
  r.pf0 = (float)r.pd0;
  r.pf1 = (float)r.pd1;
  r.body = type == CT_PL_F32
               ? "*AT(float, o0, off0) = ct_philox_normal_range_f32(w.x[0], w.x[1], pf0, pf1);"
           : type == CT_PL_F16 ? "*AT(ushort, o0, off0) = "
                                 "ct_philox_f32_to_f16(ct_philox_normal_range_f32(w.x[0], w.x[1], "
                                 "pf0, pf1));"
                               : "*AT(double, o0, off0) = ct_philox_normal_range_f64(w.x[0], "
                                 "w.x[1], w.x[2], w.x[3], pd0, pd1);";
  return ct_cl_rand_launch(call, &r);
}

/* The statement storing bit `keep` (an int) in operand 0 of `type`, after `prefix`. */
static void ct_cl_store_bit(char* text, size_t size, const char* prefix, ct_pl_type type) {
  const char* store = type == CT_PL_B8    ? "*AT(uchar, o0, off0) = (uchar)keep;"
                      : type == CT_PL_F16 ? "*AT(ushort, o0, off0) = keep ? (ushort)0x3c00 : 0;"
                      : type == CT_PL_F32 ? "*AT(float, o0, off0) = keep ? 1.0f : 0.0f;"
                                          : "*AT(double, o0, off0) = keep ? 1.0 : 0.0;";
  snprintf(text, size, "%s\n  %s", prefix, store);
}

/* A float element of operand `k` as float32 (float16 exactly, float64 rounded once). */
static const char* ct_cl_load_f32(ct_pl_type type, int k) {
  static const char* const loads[3][3] = {{"ct_philox_f16_to_f32(*AT(ushort, o0, off0))",
                                           "*AT(float, o0, off0)", "(float)*AT(double, o0, off0)"},
                                          {"ct_philox_f16_to_f32(*AT(ushort, o1, off1))",
                                           "*AT(float, o1, off1)", "(float)*AT(double, o1, off1)"},
                                          {"ct_philox_f16_to_f32(*AT(ushort, o2, off2))",
                                           "*AT(float, o2, off2)", "(float)*AT(double, o2, off2)"}};
  return loads[k][type == CT_PL_F16 ? 0 : type == CT_PL_F32 ? 1 : 2];
}

static int ct_cl_random_bernoulli_run(const ct_kernel_call* call) {
  ct_cl_rand_call r;
  ct_cl_rand_begin(call, 3, &r);
  const ct_tensor* probs = call->inputs[0];
  const ct_pl_type out_type = (ct_pl_type)ct_pl_type_of(call->outputs[0]->dtype);
  r.pf0 = call->attrs[1].type == CT_ATTR_NONE ? 0.5f : (float)call->attrs[1].value.f;
  char prefix[160], body[320];
  if (probs) {
    r.operands[r.count++] = probs;
    snprintf(prefix, sizeof prefix, "const int keep = ct_philox_uniform_f32(w.x[0]) < %s;",
             ct_cl_load_f32((ct_pl_type)ct_pl_type_of(probs->dtype), 1));
  } else {
    snprintf(prefix, sizeof prefix, "const int keep = ct_philox_uniform_f32(w.x[0]) < pf0;");
  }
  ct_cl_store_bit(body, sizeof body, prefix, out_type);
  r.body = body;
  return ct_cl_rand_launch(call, &r);
}

/* dropout's scale: 1 / (1 - p) in float64, 0 for p = 1, 1 without training. */
static void ct_cl_dropout_scale(double p, bool training, ct_cl_rand_call* r) {
  r->pd1 = !training ? 1.0 : p >= 1 ? 0.0 : 1.0 / (1.0 - p);
  r->pf1 = (float)r->pd1;
}

/* out (operand 0) = keep ? x (operand 1) * scale : 0, computed as the CPU backend does. */
static const char* ct_cl_dropout_store(ct_pl_type type) {
  return type == CT_PL_F16   ? "*AT(ushort, o0, off0) = keep ? "
                               "ct_philox_f32_to_f16(ct_philox_f16_to_f32(*AT(ushort, o1, off1)) * "
                               "pf1) : (ushort)0;"
         : type == CT_PL_F32 ? "*AT(float, o0, off0) = keep ? *AT(float, o1, off1) * pf1 : 0.0f;"
                             : "*AT(double, o0, off0) = keep ? *AT(double, o1, off1) * pd1 : 0.0;";
}

static int ct_cl_dropout_run(const ct_kernel_call* call) {
  ct_cl_rand_call r;
  ct_cl_rand_begin(call, 1, &r);
  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(call->outputs[0]->dtype);
  r.operands[r.count++] = call->inputs[0];
  r.operands[r.count++] = call->outputs[1];
  const double p = call->attrs[0].value.f;
  r.pf0 = (float)p;
  ct_cl_dropout_scale(p, true, &r);
  r.pi0 = !call->attrs[3].value.b; /* keep everything, unscaled */
  const int32_t size = ct_pl_type_size(type);
  char body[512];
  snprintf(body, sizeof body,
           "if (pi0) {\n    for (int k = 0; k < %d; ++k) o0[off0 + k] = o1[off1 + k];\n"
           "    *AT(uchar, o2, off2) = 1;\n    return;\n  }\n"
           "  const int keep = ct_philox_uniform_f32(w.x[0]) >= pf0;\n  %s\n"
           "  *AT(uchar, o2, off2) = (uchar)keep;",
           size, ct_cl_dropout_store(type));
  r.body = body;
  return ct_cl_rand_launch(call, &r);
}

static int ct_cl_dropout_backward_run(const ct_kernel_call* call) {
  ct_cl_rand_call r;
  ct_cl_rand_begin(call, -1, &r);
  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(call->outputs[0]->dtype);
  r.operands[r.count++] = call->inputs[0];
  r.operands[r.count++] = call->inputs[1];
  ct_cl_dropout_scale(call->attrs[0].value.f, call->attrs[1].value.b, &r);
  char body[512];
  snprintf(body, sizeof body, "const int keep = *AT(uchar, o2, off2) != 0;\n  %s",
           ct_cl_dropout_store(type));
  r.body = body;
  return ct_cl_rand_launch(call, &r);
}

/* A whole number of an integer arange as its 64-bit two's complement word (as the CPU kernel):
 * infer checked start and every value against the dtype, so start and a step that is taken lie
 * in (-2^64, 2^64); a one-element arange's step is never taken and may be any size: 0. Float
 * aranges never read these (their start and step may lie beyond 64 bits, where converting them
 * is undefined). */
static int64_t ct_cl_arange_bits(double value, bool integer) {
  const double magnitude = value < 0 ? -value : value;
  if (!integer || !(magnitude < 18446744073709551616.0)) return 0;
  const uint64_t word = (uint64_t)magnitude;
  return (int64_t)(value < 0 ? (uint64_t)0 - word : word);
}

static int ct_cl_arange_run(const ct_kernel_call* call) {
  ct_cl_rand_call r;
  ct_cl_rand_begin(call, -1, &r);
  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(call->outputs[0]->dtype);
  const bool no_stop = call->attrs[1].type == CT_ATTR_NONE;
  r.pd0 = no_stop ? 0.0 : call->attrs[0].value.f;
  r.pd1 = call->attrs[2].value.f;
  const bool whole =
      call->outputs[0]->dtype.code == CT_DTYPE_INT || call->outputs[0]->dtype.code == CT_DTYPE_UINT;
  r.pi0 = ct_cl_arange_bits(r.pd0, whole);
  r.pi1 = ct_cl_arange_bits(r.pd1, whole);
  static const char value[] = "const DBL v = pd0 + (DBL)i * pd1;\n  ";
  static const char integer[] = "const long v = (long)((ulong)pi0 + (ulong)i * (ulong)pi1);\n  ";
  char body[256];
  switch (type) {
    case CT_PL_F16:
      snprintf(body, sizeof body, "%s*AT(ushort, o0, off0) = ct_philox_f32_to_f16((float)v);",
               value);
      break;
    case CT_PL_F32:
      snprintf(body, sizeof body, "%s*AT(float, o0, off0) = (float)v;", value);
      break;
    case CT_PL_F64:
      snprintf(body, sizeof body, "%s*AT(double, o0, off0) = v;", value);
      break;
    case CT_PL_I32:
      snprintf(body, sizeof body, "%s*AT(int, o0, off0) = (int)v;", integer);
      break;
    default:
      snprintf(body, sizeof body, "%s*AT(long, o0, off0) = v;", integer);
  }
  r.body = body;
  return ct_cl_rand_launch(call, &r);
}

int ct_cl_register_random(void) {
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  static const ct_pl_type outs[] = {CT_PL_B8, CT_PL_F16, CT_PL_F32, CT_PL_F64};
  int status = CT_OK;
  for (int t = 0; t < 3 && status == CT_OK; ++t) {
    const ct_pl_type f = floats[t];
    status = ct_cl_register("random_uniform", &f, 1, ct_cl_random_uniform_run, NULL, NULL);
    if (status == CT_OK) {
      status = ct_cl_register("random_normal", &f, 1, ct_cl_random_normal_run, NULL, NULL);
    }
    const ct_pl_type dropout[3] = {f, f, CT_PL_B8}, backward[3] = {f, CT_PL_B8, f};
    if (status == CT_OK)
      status = ct_cl_register("dropout", dropout, 3, ct_cl_dropout_run, NULL, NULL);
    if (status == CT_OK) {
      status =
          ct_cl_register("dropout_backward", backward, 3, ct_cl_dropout_backward_run, NULL, NULL);
    }
    for (int o = 0; o < 4 && status == CT_OK; ++o) {
      const ct_pl_type bernoulli[2] = {f, outs[o]};
      status =
          ct_cl_register("random_bernoulli", bernoulli, 2, ct_cl_random_bernoulli_run, NULL, NULL);
    }
    /* float arange computes in float64: only on devices that have it */
    if (status == CT_OK && ct_cl_all_devices_fp64()) {
      status = ct_cl_register("arange", &f, 1, ct_cl_arange_run, NULL, NULL);
    }
  }
  static const ct_pl_type ints[] = {CT_PL_I32, CT_PL_I64};
  for (int t = 0; t < 2 && status == CT_OK; ++t) {
    status = ct_cl_register("arange", &ints[t], 1, ct_cl_arange_run, NULL, NULL);
  }
  return status;
}
