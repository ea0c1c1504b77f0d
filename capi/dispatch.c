/* dispatch.c - ct_op_infer, ct_op_workspace and ct_op_run: validate, infer, pick a kernel, run.
 * The checking steps are shared with plans (plan.c) through dispatch.h. */
#include <stdio.h>
#include <string.h>

#include "dispatch.h"
#include "profiler.h"

static bool ct_param_is_variadic(const ct_param_schema* params, int32_t count) {
  return count > 0 && (params[count - 1].flags & CT_PARAM_VARIADIC);
}

static const char* ct_input_name(const ct_op_schema* schema, int32_t index) {
  if (index >= schema->num_inputs) return schema->inputs[schema->num_inputs - 1].name;
  return schema->inputs[index].name;
}

static int ct_check_device(ct_prepared_call* p, const ct_tensor* t, const ct_tensor_label* label) {
  if (!p->has_device) {
    p->device = t->device;
    p->has_device = true;
    return CT_OK;
  }
  if (t->device.device_type != p->device.device_type ||
      t->device.device_id != p->device.device_id) {
    char what[160];
    return ct_set_error(CT_ERROR_DEVICE_MISMATCH,
                        "%s is on device (%d, %d) but earlier tensors are on (%d, %d)",
                        ct_label_text(label, what, sizeof what), t->device.device_type,
                        t->device.device_id, p->device.device_type, p->device.device_id);
  }
  return CT_OK;
}

/* Step 1: op, arity, input views (their data pointers only with `need_data`), devices,
 * attributes. */
static int ct_prepare_inputs(ct_prepared_call* p, const ct_op* op, const ct_tensor* const* inputs,
                             int32_t num_inputs, const ct_attr* attrs, int32_t num_attrs,
                             bool need_data) {
  if (!op) return ct_set_error(CT_ERROR_NULL_POINTER, "op is NULL");
  const int init = ct_registry_init();
  if (init != CT_OK) return init;
  p->op = op;
  p->schema = &op->def->schema;
  p->has_device = false;
  p->device = (ct_device){CT_DEVICE_CPU, 0};
  const ct_op_schema* schema = p->schema;
  if (num_inputs < 0 || num_inputs > CT_MAX_CALL_TENSORS) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "%s: %d inputs is outside [0, %d]", schema->name,
                        num_inputs, CT_MAX_CALL_TENSORS);
  }
  if (num_inputs > 0 && !inputs) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "%s: %d inputs but a NULL input array", schema->name,
                        num_inputs);
  }
  const bool variadic = ct_param_is_variadic(schema->inputs, schema->num_inputs);
  const int32_t fixed = variadic ? schema->num_inputs - 1 : schema->num_inputs;
  /* Trailing optional inputs may be left out. */
  int32_t required = fixed;
  while (required > 0 && (schema->inputs[required - 1].flags & CT_PARAM_OPTIONAL)) --required;
  if (num_inputs < required || (!variadic && num_inputs > fixed)) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "%s takes %s%d input%s, got %d", schema->name,
                        variadic ? "at least " : (required < fixed ? "up to " : ""),
                        variadic ? fixed : fixed, fixed == 1 ? "" : "s", num_inputs);
  }
  p->num_inputs = num_inputs > fixed ? num_inputs : fixed;
  for (int32_t i = 0; i < p->num_inputs; ++i) {
    const ct_tensor* t = i < num_inputs ? inputs[i] : NULL;
    p->inputs[i] = t;
    const ct_param_schema* param = &schema->inputs[i < fixed ? i : schema->num_inputs - 1];
    if (!t && (param->flags & CT_PARAM_OPTIONAL)) continue;
    const ct_tensor_label label = {schema->name, "input", param->name, i < fixed ? -1 : i - fixed};
    int status = ct_tensor_validate(t, &label, need_data);
    if (status != CT_OK) return status;
    status = ct_check_device(p, t, &label);
    if (status != CT_OK) return status;
  }
  return ct_attrs_resolve(schema, attrs, num_attrs, p->attrs);
}

/* Step 2: output shapes and dtypes. */
static int ct_prepare_infer(ct_prepared_call* p) {
  const ct_infer_call call = {p->schema, p->inputs, p->num_inputs, p->attrs};
  p->num_outputs = 0;
  const int status = p->op->def->infer(&call, p->infos, CT_MAX_OUTPUTS, &p->num_outputs);
  if (status != CT_OK) return status;
  for (int32_t i = 0; i < p->num_outputs; ++i) p->infos[i].dtype.lanes = 1;
  /* Every output must be countable as ct_tensor_validate requires of a view: the bytes of its
   * non-zero extents fit in int64 (extents known only from the data, -1, count as 1), so that
   * no caller sizes an allocation from a wrapped product. */
  for (int32_t i = 0; i < p->num_outputs; ++i) {
    const ct_tensor_info* info = &p->infos[i];
    int64_t count = ct_dtype_size(info->dtype);
    /* An extent below 0 (other than a dynamic op's -1) comes from arithmetic that wrapped in
     * an infer function: refuse it here rather than let a caller size an allocation from it. */
    const int64_t lowest = p->schema->category == CT_OP_DYNAMIC ? -1 : 0;
    if (info->ndim < 0 || info->ndim > CT_MAX_NDIM) {
      return ct_set_error(CT_ERROR_INVALID_SHAPE, "%s: output %d would have %d dimensions",
                          p->schema->name, i, info->ndim);
    }
    for (int32_t k = 0; k < info->ndim; ++k) {
      if (info->shape[k] < lowest) {
        char what[160];
        const ct_tensor_label label = ct_output_label(p->schema, i);
        return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                            "%s would have extent %lld in dimension %d: its size arithmetic "
                            "overflowed",
                            ct_label_text(&label, what, sizeof what), (long long)info->shape[k], k);
      }
    }
    for (int32_t k = 0; k < info->ndim; ++k) {
      const int64_t extent = info->shape[k] < 1 ? 1 : info->shape[k];
      if (!ct_checked_mul_i64(count, extent, &count)) {
        char what[160];
        const ct_tensor_label label = ct_output_label(p->schema, i);
        return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                            "%s would have more bytes than int64 can count (overflow at dimension "
                            "%d of %d)",
                            ct_label_text(&label, what, sizeof what), k, info->ndim);
      }
    }
  }
  return CT_OK;
}

/* Step 3: the kernel for the device and dtypes. */
static int ct_prepare_kernel(ct_prepared_call* p, const ct_kernel_entry** kernel) {
  const ct_op_schema* schema = p->schema;
  const bool variadic_in = ct_param_is_variadic(schema->inputs, schema->num_inputs);
  const int32_t fixed_in = variadic_in ? schema->num_inputs - 1 : schema->num_inputs;
  int32_t slot = 0;
  for (int32_t i = 0; i < schema->num_inputs; ++i, ++slot) {
    p->signature[slot] = (ct_dtype){0, 0, 0};
    if (i < fixed_in) {
      if (p->inputs[i]) p->signature[slot] = p->inputs[i]->dtype;
      continue;
    }
    for (int32_t j = fixed_in; j < p->num_inputs; ++j) {
      if (j == fixed_in) {
        p->signature[slot] = p->inputs[j]->dtype;
      } else if (!ct_dtype_equal(p->inputs[j]->dtype, p->signature[slot])) {
        return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                            "%s: all tensors of '%s' must share one dtype (%s vs %s)", schema->name,
                            ct_input_name(schema, j), ct_dtype_describe(p->signature[slot]),
                            ct_dtype_describe(p->inputs[j]->dtype));
      }
    }
  }
  /* A variadic output contributes one slot: the dtype of its first tensor. */
  for (int32_t i = 0; i < schema->num_outputs; ++i, ++slot) {
    p->signature[slot] = i < p->num_outputs ? p->infos[i].dtype : (ct_dtype){0, 0, 0};
  }
  const int32_t device_type = p->has_device ? p->device.device_type : CT_DEVICE_CPU;
  return ct_registry_find_kernel(p->op, device_type, p->backend, p->signature, slot, kernel);
}

/* The backend a context names, or NULL (also for contexts older than the field). */
const char* ct_context_backend(const ct_context* context) {
  if (!context) return NULL;
  if (context->struct_size < offsetof(ct_context, backend) + sizeof(const char*)) return NULL;
  return context->backend;
}

/* Steps 1 to 3. */
int ct_prepare(ct_prepared_call* p, const ct_op* op, const ct_tensor* const* inputs,
               int32_t num_inputs, const ct_attr* attrs, int32_t num_attrs, const char* backend,
               bool need_data, const ct_kernel_entry** kernel) {
  p->backend = backend;
  int status = ct_prepare_inputs(p, op, inputs, num_inputs, attrs, num_attrs, need_data);
  p->device_from_outputs = status == CT_OK && !p->has_device;
  if (status == CT_OK) status = ct_prepare_infer(p);
  if (status != CT_OK) return status;
  status = ct_prepare_kernel(p, kernel);
  if (status != CT_OK && p->device_from_outputs &&
      (status == CT_ERROR_UNSUPPORTED_DEVICE || status == CT_ERROR_UNSUPPORTED_DTYPE)) {
    /* No input fixed the device: the outputs will (ct_check_outputs looks the kernel up). */
    *kernel = NULL;
    ct_clear_error();
    status = CT_OK;
  }
  return status;
}

int ct_op_infer(const ct_op* op, const ct_tensor* const* inputs, int32_t num_inputs,
                const ct_attr* attrs, int32_t num_attrs, ct_tensor_info* outputs, int32_t capacity,
                int32_t* num_outputs) {
  ct_clear_error();
  if (!num_outputs || (capacity > 0 && !outputs)) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_infer: outputs or num_outputs is NULL");
  }
  ct_prepared_call p;
  const ct_kernel_entry* kernel = NULL;
  /* Shapes and dtypes only: the views need no data (ctensor.h says so). */
  int status = ct_prepare(&p, op, inputs, num_inputs, attrs, num_attrs, NULL, false, &kernel);
  /* Infer is device-independent: a device whose backend is not loaded (yet) is no error here,
   * but dtypes that no kernel of a present backend takes are. */
  if (status == CT_ERROR_UNSUPPORTED_DEVICE) {
    ct_clear_error();
    status = CT_OK;
  }
  if (status != CT_OK) return status;
  *num_outputs = p.num_outputs;
  if (capacity < p.num_outputs) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "%s has %d outputs; room was given for %d",
                        p.schema->name, p.num_outputs, capacity);
  }
  memcpy(outputs, p.infos, sizeof(ct_tensor_info) * (size_t)p.num_outputs);
  return CT_OK;
}

ct_tensor_label ct_output_label(const ct_op_schema* schema, int32_t i) {
  const int32_t param = i < schema->num_outputs ? i : schema->num_outputs - 1;
  const bool variadic = schema->outputs[param].flags & CT_PARAM_VARIADIC;
  return (ct_tensor_label){schema->name, "output", schema->outputs[param].name,
                           variadic ? i - param : -1};
}

/* The aliasing rules for output i: it may not overlap itself, an earlier output, or an input
 * (unless the op runs in place and the two are exactly the same view of one dtype). */
int ct_check_output_overlaps(const ct_op_schema* schema, const ct_tensor* const* inputs,
                             int32_t num_inputs, const ct_tensor* const* outputs, int32_t i,
                             const ct_tensor_label* label) {
  char what_buffer[160]; /* error messages only */
  const ct_tensor* t = outputs[i];
  if (ct_tensor_may_self_overlap(t)) {
    return ct_set_error(CT_ERROR_ALIASING, "%s overlaps itself (zero or overlapping strides)",
                        ct_label_text(label, what_buffer, sizeof what_buffer));
  }
  for (int32_t j = 0; j < i; ++j) {
    if (ct_tensors_may_overlap(t, outputs[j])) {
      return ct_set_error(CT_ERROR_ALIASING, "%s overlaps output %d",
                          ct_label_text(label, what_buffer, sizeof what_buffer), j);
    }
  }
  for (int32_t j = 0; j < num_inputs; ++j) {
    const ct_tensor* in = inputs[j];
    if (!in || !ct_tensors_may_overlap(t, in)) continue;
    if ((schema->flags & CT_OP_FLAG_INPLACE) && ct_tensors_same_view(t, in) &&
        ct_dtype_equal(t->dtype, in->dtype))
      continue;
    return ct_set_error(
        CT_ERROR_ALIASING, "%s overlaps input '%s'%s",
        ct_label_text(label, what_buffer, sizeof what_buffer), ct_input_name(schema, j),
        (schema->flags & CT_OP_FLAG_INPLACE) ? " without being exactly the same view"
                                             : " and this op cannot run in place");
  }
  return CT_OK;
}

/* Checks the caller's outputs against the inferred ones, and every aliasing rule. */
int ct_check_outputs(ct_prepared_call* p, const ct_tensor* const* outputs, int32_t num_outputs,
                     const ct_kernel_entry** kernel) {
  const ct_op_schema* schema = p->schema;
  if (schema->category == CT_OP_DYNAMIC) {
    if (num_outputs != 0) {
      return ct_set_error(
          CT_ERROR_WRONG_ARITY,
          "%s allocates its outputs through the context's allocator; pass no outputs",
          schema->name);
    }
    /* no input fixed the device and no output can: the CPU's kernel */
    if (p->device_from_outputs && !*kernel) return ct_prepare_kernel(p, kernel);
    return CT_OK;
  }
  if (num_outputs != p->num_outputs) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "%s produces %d output%s, got %d", schema->name,
                        p->num_outputs, p->num_outputs == 1 ? "" : "s", num_outputs);
  }
  if (num_outputs > 0 && !outputs) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "%s: NULL output array", schema->name);
  }
  char what_buffer[160]; /* error messages only */
  for (int32_t i = 0; i < num_outputs; ++i) {
    const ct_tensor* t = outputs[i];
    const ct_tensor_label label = ct_output_label(schema, i);
    int status = ct_tensor_validate(t, &label, true);
    if (status != CT_OK) return status;
    status = ct_check_device(p, t, &label);
    if (status != CT_OK) return status;
    const ct_tensor_info* want = &p->infos[i];
    if (!ct_dtype_equal(t->dtype, want->dtype)) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "%s has dtype %s; %s produces %s here",
                          ct_label_text(&label, what_buffer, sizeof what_buffer),
                          ct_dtype_describe(t->dtype), schema->name,
                          ct_dtype_describe(want->dtype));
    }
    bool same_shape = t->ndim == want->ndim;
    for (int32_t k = 0; same_shape && k < t->ndim; ++k) same_shape = t->shape[k] == want->shape[k];
    if (!same_shape) {
      char got[256], expected[256];
      size_t g = 0, e = 0;
      got[0] = expected[0] = '\0';
      for (int32_t k = 0; k < t->ndim && g < sizeof got; ++k)
        g += (size_t)snprintf(got + g, sizeof got - g, "%s%lld", k ? ", " : "",
                              (long long)t->shape[k]);
      for (int32_t k = 0; k < want->ndim && e < sizeof expected; ++k)
        e += (size_t)snprintf(expected + e, sizeof expected - e, "%s%lld", k ? ", " : "",
                              (long long)want->shape[k]);
      return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "%s has shape (%s); expected (%s)",
                          ct_label_text(&label, what_buffer, sizeof what_buffer), got, expected);
    }
    status = ct_check_output_overlaps(schema, p->inputs, p->num_inputs, outputs, i, &label);
    if (status != CT_OK) return status;
  }
  /* ct_prepare looked the kernel up for the CPU (if it found one); the outputs say where the
   * call runs. */
  if (p->device_from_outputs && (p->device.device_type != CT_DEVICE_CPU || !*kernel)) {
    return ct_prepare_kernel(p, kernel);
  }
  return CT_OK;
}

/* Reads the caller's context, filling defaults for fields it does not have. */
int ct_read_context(const ct_context* context, ct_context* out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  if (!context) return CT_OK;
  if (context->struct_size < CT_CONTEXT_SIZE_1_0) {
    return ct_set_error(CT_ERROR_ABI_MISMATCH,
                        "ct_context.struct_size is %zu; ABI 1.0 defines it as %zu bytes",
                        context->struct_size, (size_t)CT_CONTEXT_SIZE_1_0);
  }
  /* Newer callers may pass a longer struct: read only the fields this library knows. */
  memcpy(out, context, context->struct_size < sizeof *out ? context->struct_size : sizeof *out);
  out->struct_size = sizeof *out;
  return CT_OK;
}

void ct_fill_kernel_call(ct_kernel_call* call, const ct_prepared_call* p,
                         const ct_tensor* const* outputs, int32_t num_outputs,
                         const ct_context* context, const ct_kernel_entry* kernel) {
  memset(call, 0, sizeof *call);
  call->struct_size = sizeof *call;
  call->schema = p->schema;
  call->inputs = p->inputs;
  call->num_inputs = p->num_inputs;
  call->outputs = outputs;
  call->num_outputs = num_outputs;
  call->attrs = p->attrs;
  call->stream = context->stream;
  call->workspace = context->workspace;
  call->workspace_size = context->workspace_size;
  call->allocator = context->allocator;
  call->kernel_data = kernel->def.kernel_data;
}

int ct_query_workspace(const ct_kernel_entry* kernel, const ct_kernel_call* call, uint64_t* bytes,
                       uint64_t* alignment) {
  *bytes = 0;
  *alignment = 1;
  if (!kernel->def.workspace) return CT_OK;
  const int status = kernel->def.workspace(call, bytes, alignment);
  if (status != CT_OK) return status;
  if (*alignment == 0 || (*alignment & (*alignment - 1))) *alignment = 64;
  return CT_OK;
}

int ct_op_workspace(const ct_op* op, const ct_tensor* const* inputs, int32_t num_inputs,
                    const ct_tensor* const* outputs, int32_t num_outputs, const ct_attr* attrs,
                    int32_t num_attrs, uint64_t* bytes, uint64_t* alignment) {
  return ct_op_workspace_with_context(op, inputs, num_inputs, outputs, num_outputs, attrs,
                                      num_attrs, NULL, bytes, alignment);
}

int ct_op_workspace_with_context(const ct_op* op, const ct_tensor* const* inputs,
                                 int32_t num_inputs, const ct_tensor* const* outputs,
                                 int32_t num_outputs, const ct_attr* attrs, int32_t num_attrs,
                                 const ct_context* context, uint64_t* bytes, uint64_t* alignment) {
  ct_clear_error();
  if (!bytes || !alignment) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_workspace: bytes or alignment is NULL");
  }
  ct_prepared_call p;
  const ct_kernel_entry* kernel = NULL;
  int status = ct_prepare(&p, op, inputs, num_inputs, attrs, num_attrs, ct_context_backend(context),
                          true, &kernel);
  if (status != CT_OK) return status;
  /* Without outputs, describe the inferred ones (data NULL, compact) so that callers can ask
   * before allocating. */
  ct_tensor described[CT_MAX_OUTPUTS];
  const ct_tensor* described_ptrs[CT_MAX_OUTPUTS];
  if (p.schema->category != CT_OP_DYNAMIC && num_outputs == 0) {
    for (int32_t i = 0; i < p.num_outputs; ++i) {
      described[i] =
          (ct_tensor){NULL, p.device, p.infos[i].ndim, p.infos[i].dtype, p.infos[i].shape, NULL, 0};
      described_ptrs[i] = &described[i];
    }
    outputs = described_ptrs;
    num_outputs = p.num_outputs;
    if (!kernel) { /* no input or output fixes the device: the CPU's kernel */
      status = ct_prepare_kernel(&p, &kernel);
      if (status != CT_OK) return status;
    }
  } else {
    status = ct_check_outputs(&p, outputs, num_outputs, &kernel);
    if (status != CT_OK) return status;
  }
  ct_context ctx;
  status = ct_read_context(context, &ctx);
  if (status != CT_OK) return status;
  ct_kernel_call call;
  ct_fill_kernel_call(&call, &p, outputs, num_outputs, &ctx, kernel);
  return ct_query_workspace(kernel, &call, bytes, alignment);
}

/* Everything ct_op_run checks once the outputs are known: the context (allocator, workspace
 * size and alignment), ending with `call` filled for the kernel. */
int ct_prepare_run(const ct_prepared_call* p, const ct_tensor* const* outputs, int32_t num_outputs,
                   const ct_context* context, const ct_kernel_entry* kernel, ct_kernel_call* call) {
  ct_context ctx;
  int status = ct_read_context(context, &ctx);
  if (status != CT_OK) return status;
  if (p->schema->category == CT_OP_DYNAMIC && (!ctx.allocator || !ctx.allocator->allocate)) {
    return ct_set_error(CT_ERROR_NULL_POINTER,
                        "%s is dynamic-allocating: the context needs an allocator",
                        p->schema->name);
  }
  if (ctx.allocator && ctx.allocator->struct_size < CT_ALLOCATOR_SIZE_1_0) {
    return ct_set_error(CT_ERROR_ABI_MISMATCH,
                        "ct_allocator.struct_size is %zu; ABI 1.0 defines it as %zu bytes",
                        ctx.allocator->struct_size, (size_t)CT_ALLOCATOR_SIZE_1_0);
  }
  ct_fill_kernel_call(call, p, outputs, num_outputs, &ctx, kernel);
  uint64_t bytes, alignment;
  status = ct_query_workspace(kernel, call, &bytes, &alignment);
  if (status != CT_OK) return status;
  if (bytes > 0) {
    if (!ctx.workspace || ctx.workspace_size < bytes) {
      return ct_set_error(CT_ERROR_WORKSPACE_TOO_SMALL,
                          "%s needs %llu bytes of workspace; the context gives %llu at %p",
                          p->schema->name, (unsigned long long)bytes,
                          (unsigned long long)ctx.workspace_size, ctx.workspace);
    }
    if ((uintptr_t)ctx.workspace % alignment != 0) {
      return ct_set_error(CT_ERROR_WORKSPACE_TOO_SMALL,
                          "%s needs its workspace aligned to %llu bytes; %p is not",
                          p->schema->name, (unsigned long long)alignment, ctx.workspace);
    }
  }
  return CT_OK;
}

/* True when a shape-static call has outputs and all of them are empty: nothing to compute. */
bool ct_outputs_all_empty(const ct_op_schema* schema, const ct_tensor* const* outputs,
                          int32_t num_outputs) {
  if (schema->category == CT_OP_DYNAMIC || num_outputs == 0) return false;
  for (int32_t i = 0; i < num_outputs; ++i) {
    if (ct_tensor_numel(outputs[i]) != 0) return false;
  }
  return true;
}

int ct_op_run(const ct_op* op, const ct_tensor* const* inputs, int32_t num_inputs,
              const ct_tensor* const* outputs, int32_t num_outputs, const ct_attr* attrs,
              int32_t num_attrs, const ct_context* context) {
  ct_clear_error();
  ct_prepared_call p;
  const ct_kernel_entry* kernel = NULL;
  int status = ct_prepare(&p, op, inputs, num_inputs, attrs, num_attrs, ct_context_backend(context),
                          true, &kernel);
  if (status != CT_OK) return status;
  status = ct_check_outputs(&p, outputs, num_outputs, &kernel);
  if (status != CT_OK) return status;
  ct_kernel_call call;
  status = ct_prepare_run(&p, outputs, num_outputs, context, kernel, &call);
  if (status != CT_OK) return status;
  const bool empty = ct_outputs_all_empty(p.schema, outputs, num_outputs);
  if (ct_profiler_active()) {
    ct_profile_event event = {
        .op = op,
        .op_name = p.schema->name,
        .backend = kernel->def.backend_name,
        .device = {kernel->def.device_type, p.has_device ? p.device.device_id : 0},
        .source = CT_PROFILE_OP_RUN,
        .num_inputs = p.num_inputs,
        .inputs = p.inputs,
        .num_outputs = num_outputs,
        .outputs = outputs,
    };
    return ct_profiled_run(&event, empty ? NULL : kernel->def.run, &call);
  }
  if (empty) return CT_OK; /* nothing to compute */
  return kernel->def.run(&call);
}
