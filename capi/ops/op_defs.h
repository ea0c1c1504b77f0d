/* op_defs.h - helpers for defining operators: schema building blocks and shared infer logic. */
#ifndef CTENSOR_OP_DEFS_H_
#define CTENSOR_OP_DEFS_H_

#include "../internal.h"

#define CT_COUNT_OF(array) ((int32_t)(sizeof(array) / sizeof((array)[0])))

/* Defines ct_op_def_<NAME>. INPUTS, OUTPUTS and ATTRS are arrays; use CT_DEFINE_OP_NO_ATTRS when
 * the op has none. */
#define CT_DEFINE_OP(NAME, DOC, CATEGORY, FLAGS, INPUTS, OUTPUTS, ATTRS, INFER) \
  const ct_op_def ct_op_def_##NAME = {                                          \
      {sizeof(ct_op_schema), #NAME, DOC, CATEGORY, FLAGS, CT_COUNT_OF(INPUTS),  \
       CT_COUNT_OF(OUTPUTS), CT_COUNT_OF(ATTRS), 0, INPUTS, OUTPUTS, ATTRS},    \
      INFER}

#define CT_DEFINE_OP_NO_ATTRS(NAME, DOC, CATEGORY, FLAGS, INPUTS, OUTPUTS, INFER) \
  const ct_op_def ct_op_def_##NAME = {                                            \
      {sizeof(ct_op_schema), #NAME, DOC, CATEGORY, FLAGS, CT_COUNT_OF(INPUTS),    \
       CT_COUNT_OF(OUTPUTS), 0, 0, INPUTS, OUTPUTS, NULL},                        \
      INFER}

/* An op without tensor inputs (random numbers, arange): it runs on its outputs' device. */
#define CT_DEFINE_OP_NO_INPUTS(NAME, DOC, CATEGORY, FLAGS, OUTPUTS, ATTRS, INFER)  \
  const ct_op_def ct_op_def_##NAME = {                                             \
      {sizeof(ct_op_schema), #NAME, DOC, CATEGORY, FLAGS, 0, CT_COUNT_OF(OUTPUTS), \
       CT_COUNT_OF(ATTRS), 0, NULL, OUTPUTS, ATTRS},                               \
      INFER}

/* Attribute schema entries. */
#define CT_ATTR_SPEC_INT(NAME, DOC, VALUE) \
  {                                        \
    NAME, DOC, CT_ATTR_INT, 0, {           \
      CT_ATTR_INT, 0, 0, {                 \
        .i = (VALUE)                       \
      }                                    \
    }                                      \
  }
#define CT_ATTR_SPEC_FLOAT(NAME, DOC, VALUE) \
  {                                          \
    NAME, DOC, CT_ATTR_FLOAT, 0, {           \
      CT_ATTR_FLOAT, 0, 0, {                 \
        .f = (VALUE)                         \
      }                                      \
    }                                        \
  }
#define CT_ATTR_SPEC_STRING(NAME, DOC, VALUE) \
  {                                           \
    NAME, DOC, CT_ATTR_STRING, 0, {           \
      CT_ATTR_STRING, 0, 0, {                 \
        .s = (VALUE)                          \
      }                                       \
    }                                         \
  }
#define CT_ATTR_SPEC_BOOL(NAME, DOC, VALUE) \
  {                                         \
    NAME, DOC, CT_ATTR_BOOL, 0, {           \
      CT_ATTR_BOOL, 0, 0, {                 \
        .b = (VALUE)                        \
      }                                     \
    }                                       \
  }
#define CT_ATTR_SPEC_INT_LIST(NAME, DOC, COUNT, VALUES) \
  {                                                     \
    NAME, DOC, CT_ATTR_INT_LIST, 0, {                   \
      CT_ATTR_INT_LIST, 0, COUNT, {                     \
        .ints = (VALUES)                                \
      }                                                 \
    }                                                   \
  }
#define CT_ATTR_SPEC_REQUIRED(NAME, DOC, TYPE) \
  {                                            \
    NAME, DOC, TYPE, CT_ATTR_REQUIRED, {       \
      CT_ATTR_NONE, 0, 0, {.i = 0}             \
    }                                          \
  }
#define CT_ATTR_SPEC_NULLABLE(NAME, DOC, TYPE) \
  {                                            \
    NAME, DOC, TYPE, CT_ATTR_NULLABLE, {       \
      CT_ATTR_NONE, 0, 0, {.i = 0}             \
    }                                          \
  }

/* Shared parameter lists. */
CT_INTERNAL extern const ct_param_schema ct_params_x[1];
CT_INTERNAL extern const ct_param_schema ct_params_x1_x2[2];
CT_INTERNAL extern const ct_param_schema ct_params_out[1];

/* Flag sets. */
#define CT_FLAGS_UNARY \
  (CT_OP_FLAG_ELEMENTWISE | CT_OP_FLAG_INPLACE | CT_OP_FLAG_DETERMINISTIC | CT_OP_FLAG_GRAPH_SAFE)
#define CT_FLAGS_BINARY (CT_FLAGS_UNARY | CT_OP_FLAG_BROADCASTING)
#define CT_FLAGS_PURE (CT_OP_FLAG_DETERMINISTIC | CT_OP_FLAG_GRAPH_SAFE)
/* Ops that check index values (class targets, positions, gather and scatter indices) before they
 * write: on a device the check's result is read back to the host, a synchronisation that CUDA
 * graph capture refuses, so they are not graph-safe. */
#define CT_FLAGS_INDEX_CHECKED CT_OP_FLAG_DETERMINISTIC

/* ----- shared infer logic (infer_helpers.c) ----- */

/* Sets info's shape to the NumPy broadcast of the given tensors (NULL entries skipped). */
CT_INTERNAL int ct_infer_broadcast_shape(const char* op_name, const ct_tensor* const* tensors,
                                         int32_t count, ct_tensor_info* info);
/* Reads a pair attribute given as one value (both) or two (torch's int-or-tuple), each at least
 * `minimum`. With a `fallback`, None or an empty list means the fallback pair. */
CT_INTERNAL int ct_attr_pair(const char* op, const char* name, const ct_attr_value* value,
                             const int64_t* fallback, int64_t minimum, int64_t out[2]);
/* A sliding window's extents in spatial dim `dim`, checked: padded = in + 2 * padding and
 * span = dilation * (kernel - 1) + 1 (kernel >= 1 taps). CT_ERROR_SIZE_OVERFLOW, naming the op
 * and the attributes, when either does not fit in int64; then every position a kernel computes
 * from them (i * stride - padding + j * dilation, within [-padding, in + padding]) fits too. */
CT_INTERNAL int ct_window_extents(const char* op, int dim, int64_t in, int64_t kernel,
                                  int64_t padding, int64_t dilation, int64_t* padded,
                                  int64_t* span);
/* A float attribute that scales values of `dtype`: CT_ERROR_INVALID_ARGUMENT, naming the op and
 * the attribute, when it is finite and non-zero but becomes infinite or zero in the precision
 * the kernels compute `dtype` in (float32 for float16, bfloat16 and float32), where the result
 * would silently differ from the one the value defines. Other dtypes and values pass. */
CT_INTERNAL int ct_check_float_attr_precision(const char* op, const char* name, double value,
                                              ct_dtype dtype);
/* Copies t's shape and sets dtype. */
CT_INTERNAL void ct_info_from_tensor(const ct_tensor* t, ct_dtype dtype, ct_tensor_info* info);
/* Normalises an axis attribute (None = every axis; ints may be negative) into a mask over ndim
 * dims. Duplicates and out-of-range axes are INVALID_ARGUMENT. */
CT_INTERNAL int ct_axes_to_mask(const char* op_name, const ct_attr_value* axis, int32_t ndim,
                                bool* mask);
/* Normalises one axis; INVALID_ARGUMENT when out of [-ndim, ndim). */
CT_INTERNAL int ct_normalize_axis(const char* op_name, int64_t axis, int32_t ndim, int32_t* out);
/* Output of a reduction over mask (keepdims keeps reduced dims as 1). */
CT_INTERNAL void ct_reduced_info(const ct_tensor* x, const bool* mask, bool keepdims,
                                 ct_dtype dtype, ct_tensor_info* info);

/* Infer functions shared by many ops. */
CT_INTERNAL int ct_infer_same_as_input(const ct_infer_call* call, ct_tensor_info* outputs,
                                       int32_t capacity, int32_t* num_outputs);
CT_INTERNAL int ct_infer_broadcast_same_dtype(const ct_infer_call* call, ct_tensor_info* outputs,
                                              int32_t capacity, int32_t* num_outputs);
CT_INTERNAL int ct_infer_broadcast_bool(const ct_infer_call* call, ct_tensor_info* outputs,
                                        int32_t capacity, int32_t* num_outputs);

/* conv2d's attributes (stride, padding, dilation as pairs; groups), validated. Kernels use it
 * too. */
CT_INTERNAL int ct_conv2d_params(const ct_attr_value* attrs, int64_t stride[2], int64_t padding[2],
                                 int64_t dilation[2], int64_t* groups);

#endif /* CTENSOR_OP_DEFS_H_ */
