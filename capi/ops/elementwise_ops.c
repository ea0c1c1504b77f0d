/* elementwise_ops.c - the element-wise operators' schemas: every row of elementwise_table.h
 * (the generic ones from the table, the CUSTOM ones by hand below with the row's doc), and
 * astype. */
#include <string.h>

#include "elementwise_table.h"
#include "op_defs.h"

/* ----- the table's schemas ----- */

#define CT_EW_SCHEMA_UNARY(NAME, DOC)                                                              \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x, ct_params_out, \
                        ct_infer_same_as_input);
#define CT_EW_SCHEMA_UNARY_BOOL(NAME, DOC)                                                     \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_OP_FLAG_ELEMENTWISE | CT_FLAGS_PURE, \
                        ct_params_x, ct_params_out, ct_infer_unary_bool);
#define CT_EW_SCHEMA_BINARY(NAME, DOC)                                                   \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY, ct_params_x1_x2, \
                        ct_params_out, ct_infer_broadcast_same_dtype);
/* pow checks that integer exponents are not negative before it writes: on a device that reads
 * the check's result back (a synchronisation), so it is not graph-safe (op_defs.h). */
#define CT_EW_SCHEMA_BINARY_CHECKED(NAME, DOC)                                                   \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY & ~CT_OP_FLAG_GRAPH_SAFE, \
                        ct_params_x1_x2, ct_params_out, ct_infer_broadcast_same_dtype);
#define CT_EW_SCHEMA_BINARY_BOOL(NAME, DOC)                                               \
  CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CT_OP_SHAPE_STATIC,                                    \
                        CT_OP_FLAG_ELEMENTWISE | CT_OP_FLAG_BROADCASTING | CT_FLAGS_PURE, \
                        ct_params_x1_x2, ct_params_out, ct_infer_broadcast_bool);
/* CUSTOM: the doc only; the schema is written below. */
#define CT_EW_SCHEMA_CUSTOM(NAME, DOC) static const char ct_ew_doc_##NAME[] = DOC;

#define CT_EW_SCHEMA(NAME, ARITY, SCHEMA, OUT, PARAMS, FLOAT, INT, BOOL, DOC) \
  CT_EW_SCHEMA_##SCHEMA(NAME, DOC)

static int ct_infer_unary_bool(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                               int32_t* num_outputs) {
  (void)capacity;
  ct_info_from_tensor(call->inputs[0], CT_DTYPE_BOOL_V, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_ELEMENTWISE_OPS(CT_EW_SCHEMA)

/* ----- CUSTOM rows ----- */

/* abs: complex gives the real dtype of its parts, as NumPy. */
static int ct_infer_abs(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                        int32_t* num_outputs) {
  (void)capacity;
  ct_info_from_tensor(call->inputs[0], ct_dtype_real_part(call->inputs[0]->dtype), &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP_NO_ATTRS(abs, ct_ew_doc_abs, CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x,
                      ct_params_out, ct_infer_abs);

/* round(bool) is float16, as NumPy. */
static int ct_infer_round(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                          int32_t* num_outputs) {
  const int status = ct_infer_same_as_input(call, outputs, capacity, num_outputs);
  if (status == CT_OK && ct_dtype_is_bool(call->inputs[0]->dtype))
    outputs[0].dtype = (ct_dtype){CT_DTYPE_FLOAT, 16, 1};
  return status;
}

CT_DEFINE_OP_NO_ATTRS(round, ct_ew_doc_round, CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x,
                      ct_params_out, ct_infer_round);

/* True division: integers and bool divide in float64, as NumPy. */
static int ct_infer_divide(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  const int status = ct_infer_broadcast_same_dtype(call, outputs, capacity, num_outputs);
  const ct_dtype x = call->inputs[0]->dtype;
  if (status == CT_OK && !ct_dtype_is_float(x) && !ct_dtype_is_complex(x))
    outputs[0].dtype = CT_DTYPE_F64_V;
  return status;
}

CT_DEFINE_OP_NO_ATTRS(divide, ct_ew_doc_divide, CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY,
                      ct_params_x1_x2, ct_params_out, ct_infer_divide);

/* Activations with attributes. */
#define CT_UNARY_ATTR_OP(NAME, ATTRS, INFER)                                            \
  CT_DEFINE_OP(NAME, ct_ew_doc_##NAME, CT_OP_SHAPE_STATIC, CT_FLAGS_UNARY, ct_params_x, \
               ct_params_out, ATTRS, INFER)

static const ct_attr_schema ct_leaky_relu_attrs[] = {
    CT_ATTR_SPEC_FLOAT("negative_slope", "slope for x < 0", 0.01)};
CT_UNARY_ATTR_OP(leaky_relu, ct_leaky_relu_attrs, ct_infer_same_as_input);

static const ct_attr_schema ct_elu_attrs[] = {
    CT_ATTR_SPEC_FLOAT("alpha", "scale of the negative part", 1.0)};
CT_UNARY_ATTR_OP(elu, ct_elu_attrs, ct_infer_same_as_input);

static const ct_attr_schema ct_softplus_attrs[] = {
    CT_ATTR_SPEC_FLOAT("beta", "sharpness", 1.0),
    CT_ATTR_SPEC_FLOAT("threshold", "above beta * x > threshold the result is x", 20.0)};
/* beta divides the result: one that rounds to 0 (or overflows) in the compute precision would
 * give nan where log(1 + exp(beta * x)) / beta is defined. */
static int ct_infer_softplus(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                             int32_t* num_outputs) {
  const int status = ct_check_float_attr_precision(call->schema->name, "beta",
                                                   call->attrs[0].value.f, call->inputs[0]->dtype);
  if (status != CT_OK) return status;
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}
CT_UNARY_ATTR_OP(softplus, ct_softplus_attrs, ct_infer_softplus);

static const ct_attr_schema ct_gelu_attrs[] = {
    CT_ATTR_SPEC_STRING("approximate", "\"none\" (exact, with erf) or \"tanh\"", "none")};

static int ct_infer_gelu(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  const char* mode = call->attrs[0].value.s;
  if (!mode || (strcmp(mode, "none") != 0 && strcmp(mode, "tanh") != 0)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "gelu: approximate must be \"none\" or \"tanh\", got \"%s\"",
                        mode ? mode : "(null)");
  }
  return ct_infer_same_as_input(call, outputs, capacity, num_outputs);
}

CT_UNARY_ATTR_OP(gelu, ct_gelu_attrs, ct_infer_gelu);

/* ----- where ----- */

static const ct_param_schema ct_where_inputs[3] = {
    {"condition", "bool array choosing x1 (true) or x2 (false)", 0, 0},
    {"x1", "values where condition is true", 0, 0},
    {"x2", "values where condition is false", 0, 0}};

static int ct_infer_where(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                          int32_t* num_outputs) {
  outputs[0].dtype = call->inputs[1]->dtype;
  *num_outputs = 1;
  return ct_infer_broadcast_shape(call->schema->name, call->inputs, 3, &outputs[0]);
}

CT_DEFINE_OP_NO_ATTRS(where, ct_ew_doc_where, CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY, ct_where_inputs,
                      ct_params_out, ct_infer_where);

/* ----- astype ----- */

static const ct_attr_schema ct_astype_attrs[] = {
    CT_ATTR_SPEC_REQUIRED("dtype", "element type of the result", CT_ATTR_DTYPE)};

static int ct_infer_astype(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs) {
  ct_info_from_tensor(call->inputs[0], call->attrs[0].value.dtype, &outputs[0]);
  *num_outputs = 1;
  return CT_OK;
}

CT_DEFINE_OP(astype,
             "Converts x to another dtype (a new array). Floats to integers truncate toward zero; "
             "nan becomes 0 and out-of-range values saturate (NumPy leaves these undefined). "
             "Anything non-zero becomes true for bool; float16/bfloat16 round to nearest even. "
             "Complex to a real dtype keeps the real part (NumPy, which also warns: the Python "
             "binding leaves warnings to the caller); complex to bool is true where either part "
             "is non-zero.",
             CT_OP_SHAPE_STATIC, CT_OP_FLAG_ELEMENTWISE | CT_FLAGS_PURE, ct_params_x, ct_params_out,
             ct_astype_attrs, ct_infer_astype);
