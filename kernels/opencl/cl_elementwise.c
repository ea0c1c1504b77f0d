/* cl_elementwise.c - every element-wise op (capi/ops/elementwise_table.h) and astype, from one
 * generated kernel per (op, dtypes): a strided-index kernel over the broadcast, collapsed
 * layout, and a contiguous fast path when every operand is one dense run. */
#include <stdio.h>
#include <string.h>

#include "cl_layout.h"
#include "cl_types.h"
#include "ops/elementwise_table.h"

/* One element-wise op: a row of the table, its formulas as OpenCL C source (the table's text,
 * stringized; "CT_NA" where the class has no kernel). */
typedef struct ct_cl_elementwise_op {
  const char* name;
  int32_t arity;
  const char* float_expr;
  const char* int_expr;
  const char* bool_expr;
  ct_elementwise_out_rule out;
  ct_elementwise_params params;
} ct_cl_elementwise_op;

static const ct_cl_elementwise_op ct_cl_elementwise_table[] = {
#define CT_CL_ROW(NAME, ARITY, SCHEMA, OUT, PARAMS, FLOAT, INT, BOOL, DOC) \
  {#NAME, ARITY, #FLOAT, #INT, #BOOL, CT_ELEMENTWISE_OUT_##OUT, CT_ELEMENTWISE_PARAMS_##PARAMS},
    CT_ELEMENTWISE_OPS(CT_CL_ROW)
#undef CT_CL_ROW
};

/* astype has no expression of its own: ct_cl_astype_expression picks one per dtype pair. */
static const ct_cl_elementwise_op ct_cl_astype_op = {
    "astype", 1, NULL, NULL, NULL, CT_ELEMENTWISE_OUT_SAME, CT_ELEMENTWISE_PARAMS_NONE};

/* A formula of the table, or NULL where the dtype class has none (CT_NA). */
static const char* ct_cl_formula(const char* expr) {
  return expr && strcmp(expr, "CT_NA") != 0 ? expr : NULL;
}

/* Names every formula may use, whatever its class: CT_WRAP as the table defines it. */
static const char ct_cl_common_helpers[] = "#define CT_WRAP(op) (T)((U)a op (U)b)\n";

/* Float helpers (T is the compute type): NumPy's divmod for floor_divide and remainder, the
 * integer versions (division by zero gives 0, MIN // -1 wraps), selu, hardswish and gelu as the
 * CPU backend computes them. */
static const char ct_cl_float_helpers[] =
    "inline T ct_divmod(T a, T b, T* modulus) {\n"
    "  T mod = fmod(a, b);\n"
    "  if (b == 0) { *modulus = mod; return a / b; }\n"
    "  T div = (a - mod) / b;\n"
    "  if (mod != 0) { if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; } }\n"
    "  else { mod = copysign((T)0, b); }\n"
    "  T floordiv;\n"
    "  if (div != 0) { floordiv = floor(div); if (div - floordiv > (T)0.5) floordiv += (T)1; }\n"
    "  else { floordiv = copysign((T)0, a / b); }\n"
    "  *modulus = mod;\n  return floordiv;\n}\n"
    "inline T ct_floor_divide(T a, T b) { T mod; return b != 0 ? ct_divmod(a, b, &mod) : a / b; }\n"
    "inline T ct_remainder(T a, T b) { T mod = fmod(a, b); if (b != 0) ct_divmod(a, b, &mod); "
    "return mod; }\n"
    "inline T ct_selu(T x) {\n"
    "  const T alpha = (T)1.6732632423543772848170429916717;\n"
    "  const T scale = (T)1.0507009873554804934193349852946;\n"
    "  return x > 0 ? scale * x : scale * alpha * expm1(x);\n}\n"
    "inline T ct_hardswish(T x) {\n"
    "  if (x >= 3) return x;\n  const T t = x + (T)3 < 0 ? (T)0 : x + (T)3;\n"
    "  return x * t / (T)6;\n}\n"
    "inline T ct_hypot(T a, T b) { return hypot(a, b); }\n"
    "inline T ct_gelu(T x, T approximate) {\n"
    "  if (approximate != 0) {\n    const T k = (T)0.7978845608028654;\n"
    "    const T u = k * (x + (T)0.044715 * x * x * x);\n"
    /* tanh saturates exactly: 1 + tanh(u) must be 0 for very negative u (the runtime's tanh
     * may stop an ulp short of -1 there, and x * that ulp is huge). */
    "    const T t = fabs(u) >= (T)20 ? copysign((T)1, u) : tanh(u);\n"
    "    return (T)0.5 * x * ((T)1 + t);\n  }\n"
    "  return (T)0.5 * x * ((T)1 + erf(x * (T)0.70710678118654752440));\n}\n";

static const char ct_cl_int_helpers[] =
    "inline T ct_int_floor_divide(T a, T b) {\n"
    "  if (b == 0) return 0;\n  if (b == -1) return (T)((U)0 - (U)a);\n"
    "  const T q = a / b;\n  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n"
    "inline T ct_int_remainder(T a, T b) {\n"
    "  if (b == 0 || b == -1) return 0;\n  const T r = a % b;\n"
    "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n"
    "inline T ct_int_pow(T a, T b) {\n"
    "  U base = (U)a, exponent = (U)b, result = 1;\n"
    "  while (exponent) { if (exponent & 1) result *= base; base *= base; exponent >>= 1; }\n"
    "  return (T)result;\n}\n";

/* Integer pow refuses negative exponents (as NumPy and the CPU backend): x2 is scanned on the
 * device before anything is written. */
static int ct_cl_check_exponents(const ct_cl_exec* exec, const ct_tensor* x2) {
  const int64_t n = ct_pl_tensor_elements(x2);
  if (n == 0) return CT_OK;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, x2->ndim, x2->shape);
  ct_pl_layout_add(&layout, x2);
  ct_pl_layout_collapse(&layout, NULL);
  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x2->dtype)];
  ct_cl_source source;
  ct_cl_source_begin(&source, exec);
  ct_cl_source_add(&source,
                   "__kernel void ct_negative_scan(__global const char* x, long off_x, __global "
                   "const long* meta, int ndim, long n, __global int* found) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_x;\n");
  ct_cl_source_index_loop(&source, 1);
  ct_cl_source_add(&source, "  if (LD_%s(x, off0) < 0) found[0] = 1;\n}\n", t->tag);
  cl_mem meta = NULL, found = NULL;
  int status = ct_cl_layout_meta(exec, &layout, &meta);
  if (status == CT_OK) status = ct_cl_scratch_buffer(exec, sizeof(cl_int), &found);
  cl_int flag = 0;
  if (status == CT_OK) {
    status = ct_cl_check(ct_cl.clEnqueueWriteBuffer(exec->queue, found, CL_TRUE, 0, sizeof flag,
                                                    &flag, 0, NULL, NULL),
                         "clEnqueueWriteBuffer");
  }
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(x_buffer, off_x, x2);
    const cl_int ndim = layout.ndim;
    const ct_cl_arg args[] = {CT_CL_ARG(x_buffer), CT_CL_ARG(off_x), CT_CL_ARG(meta),
                              CT_CL_ARG(ndim),     CT_CL_ARG(n),     CT_CL_ARG(found)};
    status = ct_cl_launch(exec, &source, "ct_negative_scan", (size_t)n, args, 6);
  }
  if (status == CT_OK) status = ct_cl_read(exec, found, 0, &flag, sizeof flag);
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (found) ct_cl.clReleaseMemObject(found);
  if (status == CT_OK && flag) {
    status = ct_cl_error(CT_ERROR_INVALID_ARGUMENT,
                         "pow: integers to negative integer powers are not allowed");
  }
  return status;
}

static const char* ct_cl_astype_expression(ct_pl_type from, ct_pl_type to, char* buffer,
                                           size_t capacity) {
  if (to == CT_PL_B8) return "(a != 0)";
  if ((to == CT_PL_I32 || to == CT_PL_I64) && ct_pl_type_is_float(from)) {
    /* Truncation toward zero, nan to 0, saturation at the range: OpenCL's _sat conversion. */
    snprintf(buffer, capacity, "convert_%s_sat(a)", ct_cl_types[to].compute);
    return buffer;
  }
  return "a";
}

/* The scalar parameter type: the value input's compute type, or long for integers. */
static const char* ct_cl_param_type(ct_pl_type value) {
  return ct_pl_type_is_float(value) ? ct_cl_types[value].compute : "long";
}

static int ct_cl_elementwise_params(const ct_kernel_call* call, const ct_cl_elementwise_op* op,
                                    double params[2]) {
  params[0] = params[1] = 0;
  if (op->params == CT_ELEMENTWISE_PARAMS_FLOATS) {
    for (int32_t k = 0; k < call->schema->num_attrs && k < 2; ++k) {
      const ct_attr_value* v = &call->attrs[k];
      params[k] = v->type == CT_ATTR_INT ? (double)v->value.i : v->value.f;
    }
  } else if (op->params == CT_ELEMENTWISE_PARAMS_GELU) {
    const char* mode = call->attrs[0].value.s;
    if (strcmp(mode, "tanh") == 0) {
      params[0] = 1;
    } else if (strcmp(mode, "none") != 0) {
      return ct_cl_error(CT_ERROR_INVALID_ARGUMENT,
                         "gelu: approximate must be 'none' or 'tanh', not '%s'", mode);
    }
  }
  return CT_OK;
}

static int ct_cl_elementwise_run(const ct_kernel_call* call) {
  const ct_cl_elementwise_op* op = call->kernel_data;
  const ct_tensor* out = call->outputs[0];
  const int32_t arity = call->num_inputs;
  double params[2];
  int status = ct_cl_elementwise_params(call, op, params);
  if (status != CT_OK) return status;
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;

  ct_cl_exec exec;
  status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  if (strcmp(op->name, "pow") == 0 && !ct_pl_type_is_float(ct_pl_type_of(out->dtype))) {
    status = ct_cl_check_exponents(&exec, call->inputs[1]);
    if (status != CT_OK) return status;
  }

  ct_pl_type types[CT_PL_MAX_OPERANDS];
  types[0] = (ct_pl_type)ct_pl_type_of(out->dtype);
  int32_t sizes[CT_PL_MAX_OPERANDS] = {ct_pl_type_size(types[0])};
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, out->ndim, out->shape);
  ct_pl_layout_add(&layout, out);
  for (int32_t k = 0; k < arity; ++k) {
    types[k + 1] = (ct_pl_type)ct_pl_type_of(call->inputs[k]->dtype);
    sizes[k + 1] = ct_pl_type_size(types[k + 1]);
    ct_pl_layout_add(&layout, call->inputs[k]);
  }
  ct_pl_layout_collapse(&layout, sizes);
  const bool contiguous = layout.contiguous;

  /* The value input decides the expression class and T (where: x1, after the condition). */
  const ct_pl_type value = types[op->out == CT_ELEMENTWISE_OUT_WHERE ? 2 : 1];
  char astype_buffer[64];
  const char* expression =
      op == &ct_cl_astype_op
          ? ct_cl_astype_expression(value, types[0], astype_buffer, sizeof astype_buffer)
      : ct_pl_type_is_float(value) ? ct_cl_formula(op->float_expr)
      : value == CT_PL_B8          ? ct_cl_formula(op->bool_expr)
                                   : ct_cl_formula(op->int_expr);
  bool uses_double = false;
  for (int32_t k = 1; k <= arity; ++k) uses_double |= types[k] == CT_PL_F64;

  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define U %s\n", ct_cl_types[value].compute,
                   ct_cl_types[value].unsigned_type);
  ct_cl_source_add(&source, "%s", ct_cl_common_helpers);
  ct_cl_source_add(&source, "%s",
                   ct_pl_type_is_float(value) ? ct_cl_float_helpers
                   : value == CT_PL_B8        ? ""
                                              : ct_cl_int_helpers);
  ct_cl_source_add(&source, "__kernel void ct_elementwise(__global char* out, long off_out");
  for (int32_t k = 0; k < arity; ++k) {
    ct_cl_source_add(&source, ", __global const char* in%d, long off_in%d", k, k);
  }
  ct_cl_source_add(&source,
                   ", __global const long* meta, int ndim, long n, %s P0, %s P1) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_out",
                   ct_cl_param_type(value), ct_cl_param_type(value));
  for (int32_t k = 0; k < arity; ++k) ct_cl_source_add(&source, ", off%d = off_in%d", k + 1, k);
  ct_cl_source_add(&source, ";\n");
  if (contiguous) {
    for (int32_t k = 0; k <= arity; ++k) {
      ct_cl_source_add(&source, "  off%d += i * %d;\n", k, sizes[k]);
    }
  } else {
    ct_cl_source_index_loop(&source, arity + 1);
  }
  static const char names[] = "abc";
  for (int32_t k = 0; k < arity; ++k) {
    ct_cl_source_add(&source, "  const %s %c = LD_%s(in%d, off%d);\n",
                     ct_cl_types[types[k + 1]].compute, names[k], ct_cl_types[types[k + 1]].tag, k,
                     k + 1);
  }
  const char* cast = types[0] == CT_PL_F16 ? (uses_double ? "(double)" : "(float)") : "";
  ct_cl_source_add(&source, "  ST_%s(out, off0, %s(%s));\n}\n", ct_cl_types[types[0]].tag, cast,
                   expression);

  cl_mem meta = NULL;
  status = ct_cl_layout_meta(&exec, &layout, &meta);
  if (status != CT_OK) return status;
  cl_mem buffers[CT_PL_MAX_OPERANDS];
  int64_t offsets[CT_PL_MAX_OPERANDS];
  buffers[0] = (cl_mem)out->data;
  offsets[0] = (int64_t)out->byte_offset;
  for (int32_t k = 0; k < arity; ++k) {
    buffers[k + 1] = (cl_mem)call->inputs[k]->data;
    offsets[k + 1] = (int64_t)call->inputs[k]->byte_offset;
  }
  ct_cl_arg args[16];
  int count = 0;
  for (int32_t k = 0; k <= arity; ++k) {
    args[count++] = CT_CL_ARG(buffers[k]);
    args[count++] = CT_CL_ARG(offsets[k]);
  }
  const cl_int ndim = layout.ndim;
  const float params_f[2] = {(float)params[0], (float)params[1]};
  const int64_t params_i[2] = {(int64_t)params[0], (int64_t)params[1]};
  args[count++] = CT_CL_ARG(meta);
  args[count++] = CT_CL_ARG(ndim);
  args[count++] = CT_CL_ARG(n);
  for (int k = 0; k < 2; ++k) {
    args[count++] = !ct_pl_type_is_float(value) ? CT_CL_ARG(params_i[k])
                    : value == CT_PL_F64        ? CT_CL_ARG(params[k])
                                                : CT_CL_ARG(params_f[k]);
  }
  status = ct_cl_launch(&exec, &source, "ct_elementwise", (size_t)n, args, count);
  ct_cl.clReleaseMemObject(meta);
  return status;
}

/* Registers `op` for every dtype of a class that has an expression. */
static int ct_cl_register_elementwise_op(const ct_cl_elementwise_op* op) {
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  static const ct_pl_type ints[] = {CT_PL_I32, CT_PL_I64};
  static const ct_pl_type bools[] = {CT_PL_B8};
  const struct {
    const char* expr;
    const ct_pl_type* types;
    int count;
  } classes[] = {{ct_cl_formula(op->float_expr), floats, 3},
                 {ct_cl_formula(op->int_expr), ints, 2},
                 {ct_cl_formula(op->bool_expr), bools, 1}};
  for (int c = 0; c < 3; ++c) {
    if (!classes[c].expr) continue;
    for (int t = 0; t < classes[c].count; ++t) {
      const ct_pl_type value = classes[c].types[t];
      ct_pl_type signature[4];
      int32_t length = 0;
      if (op->out == CT_ELEMENTWISE_OUT_WHERE) signature[length++] = CT_PL_B8;
      const int32_t values = op->out == CT_ELEMENTWISE_OUT_WHERE ? 2 : op->arity;
      for (int32_t k = 0; k < values; ++k) signature[length++] = value;
      ct_pl_type out = value;
      if (op->out == CT_ELEMENTWISE_OUT_BOOL) out = CT_PL_B8;
      if (op->out == CT_ELEMENTWISE_OUT_F64_FOR_INTS && !ct_pl_type_is_float(value))
        out = CT_PL_F64;
      if (op->out == CT_ELEMENTWISE_OUT_F16_FOR_BOOL && value == CT_PL_B8) out = CT_PL_F16;
      signature[length++] = out;
      const int status =
          ct_cl_register(op->name, signature, length, ct_cl_elementwise_run, NULL, op);
      if (status != CT_OK) return status;
    }
  }
  return CT_OK;
}

int ct_cl_register_elementwise(void) {
  const int32_t count = (int32_t)(sizeof ct_cl_elementwise_table / sizeof *ct_cl_elementwise_table);
  for (int32_t i = 0; i < count; ++i) {
    const int status = ct_cl_register_elementwise_op(&ct_cl_elementwise_table[i]);
    if (status != CT_OK) return status;
  }
  for (int from = 0; from < CT_PL_TYPE_COUNT; ++from) {
    for (int to = 0; to < CT_PL_TYPE_COUNT; ++to) {
      const ct_pl_type signature[2] = {(ct_pl_type)from, (ct_pl_type)to};
      const int status =
          ct_cl_register("astype", signature, 2, ct_cl_elementwise_run, NULL, &ct_cl_astype_op);
      if (status != CT_OK) return status;
    }
  }
  return CT_OK;
}
