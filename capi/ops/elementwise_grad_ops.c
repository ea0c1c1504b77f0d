/* elementwise_grad_ops.c - the schemas of the element-wise backward operators, one per row of
 * elementwise_grad_table.h. */
#include <string.h>

#include "elementwise_grad_table.h"
#include "op_defs.h"

/* ----- parameters by the table's inputs and outputs columns ----- */

static const ct_param_schema ct_ewg_inputs_FROM_X[2] = {
    {"grad_out", "cotangent of the forward's result", 0, 0}, {"x", "the forward's input", 0, 0}};
static const ct_param_schema ct_ewg_inputs_FROM_OUT[2] = {
    {"grad_out", "cotangent of the forward's result", 0, 0}, {"out", "the forward's result", 0, 0}};
static const ct_param_schema ct_ewg_inputs_FROM_X1_X2[3] = {
    {"grad_out", "cotangent of the forward's result (the broadcast shape)", 0, 0},
    {"x1", "the forward's first input", 0, 0},
    {"x2", "the forward's second input", 0, 0}};
static const ct_param_schema ct_ewg_inputs_FROM_CONDITION[2] = {
    {"grad_out", "cotangent of the forward's result (the broadcast shape)", 0, 0},
    {"condition", "the forward's bool condition", 0, 0}};

static const ct_param_schema ct_ewg_outputs_GRAD_X[1] = {{"grad_x", "cotangent of x", 0, 0}};
static const ct_param_schema ct_ewg_outputs_GRAD_X1[1] = {
    {"grad_x1", "cotangent of x1 at the broadcast shape", 0, 0}};
static const ct_param_schema ct_ewg_outputs_GRAD_X1_X2[2] = {
    {"grad_x1", "cotangent of x1 at the broadcast shape", 0, 0},
    {"grad_x2", "cotangent of x2 at the broadcast shape", 0, 0}};

/* ----- attributes of the rows with params, as the forward ops' ----- */

static const ct_attr_schema ct_leaky_relu_backward_attrs[] = {
    CT_ATTR_SPEC_FLOAT("negative_slope", "slope for x < 0", 0.01)};
static const ct_attr_schema ct_elu_backward_attrs[] = {
    CT_ATTR_SPEC_FLOAT("alpha", "scale of the negative part", 1.0)};
static const ct_attr_schema ct_softplus_backward_attrs[] = {
    CT_ATTR_SPEC_FLOAT("beta", "sharpness", 1.0),
    CT_ATTR_SPEC_FLOAT("threshold", "above beta * x > threshold the result is x", 20.0)};
static const ct_attr_schema ct_gelu_backward_attrs[] = {
    CT_ATTR_SPEC_STRING("approximate", "\"none\" (exact, with erf) or \"tanh\"", "none")};

/* Outputs: grad_out's dtype, the inputs' broadcast shape. The value inputs must have grad_out's
 * dtype (the gradient entries pass them so), the condition must be bool: otherwise
 * CT_ERROR_UNSUPPORTED_DTYPE, as for a signature no kernel has. */
static int ct_infer_elementwise_grad(const ct_infer_call* call, ct_tensor_info* outputs,
                                     int32_t capacity, int32_t* num_outputs) {
  const char* name = call->schema->name;
  const ct_dtype dtype = call->inputs[0]->dtype;
  for (int32_t i = 1; i < call->num_inputs; ++i) {
    const ct_dtype d = call->inputs[i]->dtype;
    const bool condition = strcmp(call->schema->inputs[i].name, "condition") == 0;
    if (condition ? !ct_dtype_is_bool(d) : !ct_dtype_equal(d, dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s: %s must be %s", name,
                          call->schema->inputs[i].name, condition ? "bool" : "of grad_out's dtype");
    }
  }
  if (call->schema->num_attrs == 1 && call->attrs[0].type == CT_ATTR_STRING) {
    const char* mode = call->attrs[0].value.s;
    if (!mode || (strcmp(mode, "none") != 0 && strcmp(mode, "tanh") != 0)) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: approximate must be \"none\" or \"tanh\", got \"%s\"", name,
                          mode ? mode : "(null)");
    }
  }
  const int32_t count = call->schema->num_outputs;
  if (capacity < count) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: room for %d outputs needed", name,
                        (int)count);
  }
  for (int32_t k = 0; k < count; ++k) {
    outputs[k].dtype = dtype;
    const int status = ct_infer_broadcast_shape(name, call->inputs, call->num_inputs, &outputs[k]);
    if (status != CT_OK) return status;
  }
  *num_outputs = count;
  return CT_OK;
}

#define CT_EWG_FLAGS (CT_OP_FLAG_ELEMENTWISE | CT_OP_FLAG_BROADCASTING | CT_FLAGS_PURE)
#define CT_EWG_SCHEMA_NONE(NAME, INPUTS, OUTPUTS, DOC)                                       \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_EWG_FLAGS, ct_ewg_inputs_##INPUTS, \
                        ct_ewg_outputs_##OUTPUTS, ct_infer_elementwise_grad);
#define CT_EWG_SCHEMA_FLOATS(NAME, INPUTS, OUTPUTS, DOC)                            \
  CT_DEFINE_OP(NAME, DOC, CT_OP_SHAPE_STATIC, CT_EWG_FLAGS, ct_ewg_inputs_##INPUTS, \
               ct_ewg_outputs_##OUTPUTS, ct_##NAME##_attrs, ct_infer_elementwise_grad);
#define CT_EWG_SCHEMA_GELU CT_EWG_SCHEMA_FLOATS
#define CT_EWG_SCHEMA(NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1, DOC) \
  CT_EWG_SCHEMA_##PARAMS(NAME, INPUTS, OUTPUTS, DOC)

CT_ELEMENTWISE_GRAD_OPS(CT_EWG_SCHEMA)
