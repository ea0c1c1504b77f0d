/* math_ops.c - clip, the element-wise operator outside the element-wise table (optional bounds,
 * CPU only). */
#include "op_defs.h"

/* ----- clip ----- */

static const ct_param_schema ct_clip_inputs[3] = {
    {"x", "values to clip", 0, 0},
    {"min", "lower bound (absent: none)", CT_PARAM_OPTIONAL, 0},
    {"max", "upper bound (absent: none)", CT_PARAM_OPTIONAL, 0}};

static int ct_infer_clip(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                         int32_t* num_outputs) {
  (void)capacity;
  outputs[0].dtype = call->inputs[0]->dtype;
  *num_outputs = 1;
  return ct_infer_broadcast_shape(call->schema->name, call->inputs, call->num_inputs, &outputs[0]);
}

CT_DEFINE_OP_NO_ATTRS(clip,
                      "min(max(x, min), max), element-wise with broadcasting of all three "
                      "(absent bounds are not applied); nan in any operand gives nan. Where "
                      "min > max the result is max, as NumPy.",
                      CT_OP_SHAPE_STATIC, CT_FLAGS_BINARY, ct_clip_inputs, ct_params_out,
                      ct_infer_clip);
