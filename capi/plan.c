/* plan.c - ct_plan_*: a call checked once (dispatch.h), stored with its own copies of the views
 * and attributes, then run with no further checks. */
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "profiler.h"

struct ct_plan {
  ct_kernel_call call; /* what the kernel sees; its pointers lead into this allocation */
  ct_kernel_run_fn run;
  bool outputs_empty;  /* nothing to compute: run returns CT_OK at once */
  const ct_op* op;     /* what a profiler is told (profiler.h) */
  const char* backend; /* the kernel's backend name (lives as long as the registry) */
  ct_device device;    /* where the kernel runs */
  int32_t num_tensors;
  const ct_tensor** tensors; /* inputs then outputs; NULL for absent optional inputs */
  ct_tensor* views;          /* the copies the entries of `tensors` point to */
  ct_attr_value attrs[CT_MAX_ATTRS];
};

/* Bytes of the copies of one view's shape and strides. */
static size_t ct_view_extra_bytes(const ct_tensor* t) {
  if (!t) return 0;
  return sizeof(int64_t) * (size_t)t->ndim * (t->strides ? 2u : 1u);
}

/* Bytes of the copy of one attribute's payload (lists and strings); SIZE_MAX when a list's
 * count times 8 does not fit in size_t (the plan then cannot be allocated). */
static size_t ct_attr_extra_bytes(const ct_attr_value* value) {
  size_t bytes;
  switch (value->type) {
    case CT_ATTR_STRING:
      return value->value.s ? strlen(value->value.s) + 1 : 0;
    case CT_ATTR_INT_LIST:
    case CT_ATTR_FLOAT_LIST:
      if (!value->value.ints) return 0;
      return __builtin_mul_overflow((size_t)value->count, sizeof(int64_t), &bytes) ? SIZE_MAX
                                                                                   : bytes;
    default:
      return 0;
  }
}

/* *total += bytes rounded up to 8 (ct_bump_copy's step), saturating at SIZE_MAX. */
static void ct_add_extra(size_t* total, size_t bytes) {
  if (bytes > SIZE_MAX - 8 || __builtin_add_overflow(*total, (bytes + 7u) & ~(size_t)7u, total))
    *total = SIZE_MAX;
}

/* Copies `bytes` from `from` to the bump pointer `*at` (8-byte aligned) and returns the copy. */
static void* ct_bump_copy(char** at, const void* from, size_t bytes) {
  void* copy = *at;
  if (bytes > 0) memcpy(copy, from, bytes); /* `from` may be NULL when there is nothing */
  *at += (bytes + 7u) & ~(size_t)7u;
  return copy;
}

static void ct_copy_view(ct_tensor* view, const ct_tensor* t, char** at) {
  *view = *t;
  view->shape = ct_bump_copy(at, t->shape, sizeof(int64_t) * (size_t)t->ndim);
  if (t->strides) view->strides = ct_bump_copy(at, t->strides, sizeof(int64_t) * (size_t)t->ndim);
}

static void ct_copy_attr(ct_attr_value* copy, const ct_attr_value* value, char** at) {
  *copy = *value;
  const size_t bytes = ct_attr_extra_bytes(value);
  if (bytes == 0) return;
  if (value->type == CT_ATTR_STRING) copy->value.s = ct_bump_copy(at, value->value.s, bytes);
  if (value->type == CT_ATTR_INT_LIST)
    copy->value.ints = ct_bump_copy(at, value->value.ints, bytes);
  if (value->type == CT_ATTR_FLOAT_LIST) {
    copy->value.floats = ct_bump_copy(at, value->value.floats, bytes);
  }
}

/* One allocation holding the plan, its views, their shapes and strides, and attribute payloads. */
static ct_plan* ct_plan_build(const ct_prepared_call* p, const ct_tensor* const* outputs,
                              int32_t num_outputs, const ct_kernel_call* call,
                              const ct_kernel_entry* kernel) {
  const int32_t num_tensors = p->num_inputs + num_outputs;
  size_t extra = 0;
  for (int32_t i = 0; i < p->num_inputs; ++i)
    ct_add_extra(&extra, ct_view_extra_bytes(p->inputs[i]));
  for (int32_t i = 0; i < num_outputs; ++i) ct_add_extra(&extra, ct_view_extra_bytes(outputs[i]));
  for (int32_t i = 0; i < p->schema->num_attrs; ++i)
    ct_add_extra(&extra, ct_attr_extra_bytes(&p->attrs[i]));
  const size_t pointers = sizeof(ct_tensor*) * (size_t)(num_tensors > 0 ? num_tensors : 1);
  const size_t views = sizeof(ct_tensor) * (size_t)(num_tensors > 0 ? num_tensors : 1);
  /* An attribute list longer than memory (its count is the caller's word) saturates `extra`:
   * refuse it as out of memory rather than copy past a wrapped allocation. */
  if (extra > SIZE_MAX - sizeof(ct_plan) - pointers - views) return NULL;
  ct_plan* plan = calloc(1, sizeof(ct_plan) + pointers + views + extra);
  if (!plan) return NULL;
  char* at = (char*)(plan + 1);
  plan->tensors = (const ct_tensor**)at;
  at += pointers;
  plan->views = (ct_tensor*)at;
  at += views;
  for (int32_t i = 0; i < num_tensors; ++i) {
    const ct_tensor* t = i < p->num_inputs ? p->inputs[i] : outputs[i - p->num_inputs];
    if (!t) continue; /* an absent optional input */
    ct_copy_view(&plan->views[i], t, &at);
    plan->tensors[i] = &plan->views[i];
  }
  for (int32_t i = 0; i < p->schema->num_attrs; ++i)
    ct_copy_attr(&plan->attrs[i], &p->attrs[i], &at);
  plan->num_tensors = num_tensors;
  plan->call = *call;
  plan->call.inputs = plan->tensors;
  plan->call.outputs = plan->tensors + p->num_inputs;
  plan->call.attrs = plan->attrs;
  plan->run = kernel->def.run;
  plan->op = p->op;
  plan->backend = kernel->def.backend_name;
  plan->device = (ct_device){kernel->def.device_type, p->has_device ? p->device.device_id : 0};
  plan->outputs_empty = ct_outputs_all_empty(p->schema, plan->call.outputs, num_outputs);
  return plan;
}

int ct_plan_create(const ct_op* op, const ct_tensor* const* inputs, int32_t num_inputs,
                   const ct_tensor* const* outputs, int32_t num_outputs, const ct_attr* attrs,
                   int32_t num_attrs, const ct_context* context, ct_plan** plan) {
  ct_clear_error();
  if (!plan) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_plan_create: plan is NULL");
  *plan = NULL;
  ct_prepared_call* p = malloc(sizeof *p); /* large (the views of up to 256 tensors) */
  if (!p) return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_plan_create: out of memory");
  const ct_kernel_entry* kernel = NULL;
  int status = ct_prepare(p, op, inputs, num_inputs, attrs, num_attrs, ct_context_backend(context),
                          true, &kernel);
  if (status == CT_OK) status = ct_check_outputs(p, outputs, num_outputs, &kernel);
  ct_kernel_call call;
  if (status == CT_OK) status = ct_prepare_run(p, outputs, num_outputs, context, kernel, &call);
  if (status == CT_OK) {
    *plan = ct_plan_build(p, outputs, num_outputs, &call, kernel);
    if (!*plan) {
      status =
          ct_set_error(CT_ERROR_OUT_OF_MEMORY, "%s: out of memory for the plan", p->schema->name);
    }
  }
  free(p);
  return status;
}

int ct_plan_set_data(ct_plan* plan, void* const* data, int32_t count) {
  ct_clear_error();
  if (!plan) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_plan_set_data: plan is NULL");
  const ct_op_schema* schema = plan->call.schema;
  if (count != plan->num_tensors) {
    return ct_set_error(CT_ERROR_WRONG_ARITY,
                        "%s: the plan has %d tensors (inputs then outputs); got %d pointers",
                        schema->name, plan->num_tensors, count);
  }
  if (count > 0 && !data) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "%s: ct_plan_set_data: data is NULL", schema->name);
  }
  void* previous[CT_MAX_CALL_TENSORS + CT_MAX_OUTPUTS];
  for (int32_t i = 0; i < count; ++i) {
    ct_tensor* view = &plan->views[i];
    previous[i] = view->data;
    if (plan->tensors[i] && data[i]) view->data = data[i];
  }
  int status = CT_OK;
  const int32_t num_inputs = plan->call.num_inputs;
  /* The new addresses must not wrap and must be aligned, as ct_op_run checks for its views. */
  for (int32_t i = 0; status == CT_OK && i < count; ++i) {
    if (!plan->tensors[i] || !data[i]) continue;
    const ct_tensor_label label =
        i < num_inputs
            ? (ct_tensor_label){schema->name, "input",
                                schema->inputs[i < schema->num_inputs ? i : schema->num_inputs - 1]
                                    .name,
                                -1}
            : ct_output_label(schema, i - num_inputs);
    status = ct_tensor_validate_address(&plan->views[i], &label);
  }
  for (int32_t i = 0; status == CT_OK && i < plan->call.num_outputs; ++i) {
    const ct_tensor_label label = ct_output_label(schema, i);
    status = ct_check_output_overlaps(schema, plan->call.inputs, num_inputs, plan->call.outputs, i,
                                      &label);
  }
  if (status != CT_OK) {
    for (int32_t i = 0; i < count; ++i) plan->views[i].data = previous[i];
  }
  return status;
}

int ct_plan_run(const ct_plan* plan) {
  ct_clear_error();
  if (!plan) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_plan_run: plan is NULL");
  if (ct_profiler_active()) {
    ct_profile_event event = {
        .op = plan->op,
        .op_name = plan->call.schema->name,
        .backend = plan->backend,
        .device = plan->device,
        .source = CT_PROFILE_PLAN_RUN,
        .num_inputs = plan->call.num_inputs,
        .inputs = plan->call.inputs,
        .num_outputs = plan->call.num_outputs,
        .outputs = plan->call.outputs,
    };
    return ct_profiled_run(&event, plan->outputs_empty ? NULL : plan->run, &plan->call);
  }
  if (plan->outputs_empty) return CT_OK;
  return plan->run(&plan->call);
}

void ct_plan_destroy(ct_plan* plan) {
  free(plan);
}
