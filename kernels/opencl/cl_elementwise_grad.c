/* cl_elementwise_grad.c - the element-wise backward operators (capi/ops/elementwise_grad_table.h)
 * as generated kernels: the table's formulas and helpers as OpenCL C source (its text,
 * stringized), one kernel per output (an output and up to three inputs fit one strided layout),
 * with a contiguous fast path when every operand is one dense run. */
#include <string.h>

#include "cl_layout.h"
#include "cl_types.h"
#include "ops/elementwise_grad_table.h"
#include "ops/elementwise_table.h"

/* One backward op: a row of the table, its formulas as OpenCL C source. */
typedef struct ct_cl_elementwise_grad_op {
  const char* name;
  int32_t inputs;  /* grad_out and one or two more */
  bool condition;  /* the second input is a bool condition */
  int32_t outputs; /* one or two */
  ct_elementwise_params params;
  const char* grads[2];
} ct_cl_elementwise_grad_op;

#define CT_CL_EWG_INPUTS_FROM_X 2, false
#define CT_CL_EWG_INPUTS_FROM_OUT 2, false
#define CT_CL_EWG_INPUTS_FROM_X1_X2 3, false
#define CT_CL_EWG_INPUTS_FROM_CONDITION 2, true
#define CT_CL_EWG_OUTPUTS_GRAD_X 1
#define CT_CL_EWG_OUTPUTS_GRAD_X1 1
#define CT_CL_EWG_OUTPUTS_GRAD_X1_X2 2
/* (inputs, condition) in the struct's order: expanded through one more macro. */
#define CT_CL_EWG_ROW_(NAME, INPUTS_FROM_CONDITION, OUTPUTS, PARAMS, GRAD0, GRAD1) \
  {#NAME, INPUTS_FROM_CONDITION, OUTPUTS, CT_ELEMENTWISE_PARAMS_##PARAMS, {GRAD0, GRAD1}},
#define CT_CL_EWG_ROW(NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1, DOC)                        \
  CT_CL_EWG_ROW_(NAME, CT_CL_EWG_INPUTS_##INPUTS, CT_CL_EWG_OUTPUTS_##OUTPUTS, PARAMS, #GRAD0, \
                 #GRAD1)

static const ct_cl_elementwise_grad_op ct_cl_elementwise_grad_table[] = {
    CT_ELEMENTWISE_GRAD_OPS(CT_CL_EWG_ROW)};

/* The table's helpers as OpenCL C (T is #defined before them). */
#define CT_CL_EWG_HELPER(NAME, PARAMS, ...) "inline T " #NAME #PARAMS " { " #__VA_ARGS__ " }\n"
static const char ct_cl_elementwise_grad_helpers[] = CT_ELEMENTWISE_GRAD_HELPERS(CT_CL_EWG_HELPER);
#undef CT_CL_EWG_HELPER

static int ct_cl_elementwise_grad_params(const ct_kernel_call* call,
                                         const ct_cl_elementwise_grad_op* op, double params[2]) {
  params[0] = params[1] = 0;
  if (op->params == CT_ELEMENTWISE_PARAMS_FLOATS) {
    for (int32_t k = 0; k < call->schema->num_attrs && k < 2; ++k) {
      const ct_attr_value* v = &call->attrs[k];
      params[k] = v->type == CT_ATTR_INT ? (double)v->value.i : v->value.f;
    }
  } else if (op->params == CT_ELEMENTWISE_PARAMS_GELU) {
    const char* mode = call->attrs[0].value.s;
    if (mode && strcmp(mode, "tanh") == 0) {
      params[0] = 1;
    } else if (!mode || strcmp(mode, "none") != 0) {
      return ct_cl_error(CT_ERROR_INVALID_ARGUMENT,
                         "%s: approximate must be 'none' or 'tanh', not '%s'", op->name,
                         mode ? mode : "(null)");
    }
  }
  return CT_OK;
}

/* Computes output k of the call: one launch over (output k, the inputs). */
static int ct_cl_elementwise_grad_output(const ct_kernel_call* call,
                                         const ct_cl_elementwise_grad_op* op,
                                         const ct_cl_exec* exec, int32_t k,
                                         const double params[2]) {
  const ct_tensor* out = call->outputs[k];
  const int32_t arity = op->inputs;
  ct_pl_type types[CT_PL_MAX_OPERANDS];
  int32_t sizes[CT_PL_MAX_OPERANDS];
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, out->ndim, out->shape);
  ct_pl_layout_add(&layout, out);
  types[0] = (ct_pl_type)ct_pl_type_of(out->dtype);
  sizes[0] = ct_pl_type_size(types[0]);
  for (int32_t i = 0; i < arity; ++i) {
    types[i + 1] = (ct_pl_type)ct_pl_type_of(call->inputs[i]->dtype);
    sizes[i + 1] = ct_pl_type_size(types[i + 1]);
    ct_pl_layout_add(&layout, call->inputs[i]);
  }
  ct_pl_layout_collapse(&layout, sizes);
  const ct_pl_type value = types[0];
  const ct_cl_type_info* t = &ct_cl_types[value];

  ct_cl_source source;
  ct_cl_source_begin(&source, exec);
  ct_cl_source_add(&source, "#define T %s\n%s", t->compute, ct_cl_elementwise_grad_helpers);
  ct_cl_source_add(&source, "__kernel void ct_elementwise_grad(__global char* out, long off_out");
  for (int32_t i = 0; i < arity; ++i) {
    ct_cl_source_add(&source, ", __global const char* in%d, long off_in%d", i, i);
  }
  ct_cl_source_add(&source,
                   ", __global const long* meta, int ndim, long n, T P0, T P1) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_out");
  for (int32_t i = 0; i < arity; ++i) ct_cl_source_add(&source, ", off%d = off_in%d", i + 1, i);
  ct_cl_source_add(&source, ";\n");
  if (layout.contiguous) {
    for (int32_t i = 0; i <= arity; ++i) {
      ct_cl_source_add(&source, "  off%d += i * %d;\n", i, sizes[i]);
    }
  } else {
    ct_cl_source_index_loop(&source, arity + 1);
  }
  static const char names[] = "gab";
  for (int32_t i = 0; i < arity; ++i) {
    ct_cl_source_add(&source, "  const %s %c = LD_%s(in%d, off%d);\n",
                     ct_cl_types[types[i + 1]].compute, names[i], ct_cl_types[types[i + 1]].tag, i,
                     i + 1);
  }
  ct_cl_source_add(&source, "  ST_%s(out, off0, (T)(%s));\n}\n", t->tag, op->grads[k]);

  cl_mem meta = NULL;
  int status = ct_cl_layout_meta(exec, &layout, &meta);
  if (status != CT_OK) return status;
  cl_mem buffers[CT_PL_MAX_OPERANDS];
  int64_t offsets[CT_PL_MAX_OPERANDS];
  buffers[0] = (cl_mem)out->data;
  offsets[0] = (int64_t)out->byte_offset;
  for (int32_t i = 0; i < arity; ++i) {
    buffers[i + 1] = (cl_mem)call->inputs[i]->data;
    offsets[i + 1] = (int64_t)call->inputs[i]->byte_offset;
  }
  ct_cl_arg args[16];
  int count = 0;
  for (int32_t i = 0; i <= arity; ++i) {
    args[count++] = CT_CL_ARG(buffers[i]);
    args[count++] = CT_CL_ARG(offsets[i]);
  }
  const cl_int ndim = layout.ndim;
  const int64_t n = layout.elements;
  const float params_f[2] = {(float)params[0], (float)params[1]};
  args[count++] = CT_CL_ARG(meta);
  args[count++] = CT_CL_ARG(ndim);
  args[count++] = CT_CL_ARG(n);
  for (int i = 0; i < 2; ++i) {
    args[count++] = value == CT_PL_F64 ? CT_CL_ARG(params[i]) : CT_CL_ARG(params_f[i]);
  }
  status = ct_cl_launch(exec, &source, "ct_elementwise_grad", (size_t)n, args, count);
  ct_cl.clReleaseMemObject(meta);
  return status;
}

static int ct_cl_elementwise_grad_run(const ct_kernel_call* call) {
  const ct_cl_elementwise_grad_op* op = call->kernel_data;
  double params[2];
  int status = ct_cl_elementwise_grad_params(call, op, params);
  if (status != CT_OK || ct_pl_tensor_elements(call->outputs[0]) == 0) return status;
  ct_cl_exec exec;
  status = ct_cl_exec_for_call(call, &exec);
  for (int32_t k = 0; k < op->outputs && status == CT_OK; ++k) {
    status = ct_cl_elementwise_grad_output(call, op, &exec, k, params);
  }
  return status;
}

int ct_cl_register_elementwise_grad(void) {
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  const int32_t count =
      (int32_t)(sizeof ct_cl_elementwise_grad_table / sizeof *ct_cl_elementwise_grad_table);
  for (int32_t i = 0; i < count; ++i) {
    const ct_cl_elementwise_grad_op* op = &ct_cl_elementwise_grad_table[i];
    for (int t = 0; t < 3; ++t) {
      ct_pl_type signature[5];
      int32_t length = 0;
      for (int32_t k = 0; k < op->inputs; ++k) {
        signature[length++] = k == 1 && op->condition ? CT_PL_B8 : floats[t];
      }
      for (int32_t k = 0; k < op->outputs; ++k) signature[length++] = floats[t];
      const int status =
          ct_cl_register(op->name, signature, length, ct_cl_elementwise_grad_run, NULL, op);
      if (status != CT_OK) return status;
    }
  }
  return CT_OK;
}
