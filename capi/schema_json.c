/* schema_json.c - the registry as JSON (format: docs/schema-json.md). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* snprintf-style writer: counts everything, stores what fits. */
typedef struct ct_json_writer {
  char* buffer;
  size_t capacity;
  size_t length;
} ct_json_writer;

static void ct_json_raw(ct_json_writer* w, const char* format, ...) {
  char scratch[128];
  va_list args;
  va_start(args, format);
  const int n = vsnprintf(scratch, sizeof scratch, format, args);
  va_end(args);
  if (n <= 0) return;
  for (int i = 0; i < n && i < (int)sizeof scratch - 1; ++i) {
    if (w->length + 1 < w->capacity) w->buffer[w->length] = scratch[i];
    ++w->length;
  }
}

static void ct_json_putc(ct_json_writer* w, char c) {
  if (w->length + 1 < w->capacity) w->buffer[w->length] = c;
  ++w->length;
}

static void ct_json_string(ct_json_writer* w, const char* s) {
  ct_json_putc(w, '"');
  for (; s && *s; ++s) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      ct_json_putc(w, '\\');
      ct_json_putc(w, (char)c);
    } else if (c == '\n') {
      ct_json_raw(w, "\\n");
    } else if (c < 0x20) {
      ct_json_raw(w, "\\u%04x", c);
    } else {
      ct_json_putc(w, (char)c);
    }
  }
  ct_json_putc(w, '"');
}

static void ct_json_double(ct_json_writer* w, double v) {
  if (isnan(v))
    ct_json_raw(w, "\"nan\"");
  else if (isinf(v))
    ct_json_raw(w, v > 0 ? "\"inf\"" : "\"-inf\"");
  else
    ct_json_raw(w, "%.17g", v);
}

static const char* ct_category_name(int32_t category) {
  switch (category) {
    case CT_OP_SHAPE_STATIC:
      return "shape_static";
    case CT_OP_WORKSPACE:
      return "workspace";
    case CT_OP_DYNAMIC:
      return "dynamic";
  }
  return "unknown";
}

const char* ct_device_name(int32_t device_type) {
  switch (device_type) {
    case CT_DEVICE_CPU:
      return "cpu";
    case CT_DEVICE_CUDA:
      return "cuda";
    case CT_DEVICE_CUDA_HOST:
      return "cuda_host";
    case CT_DEVICE_OPENCL:
      return "opencl";
    case CT_DEVICE_VULKAN:
      return "vulkan";
    case CT_DEVICE_METAL:
      return "metal";
    case CT_DEVICE_ROCM:
      return "rocm";
    case CT_DEVICE_ONEAPI:
      return "oneapi";
  }
  return "other";
}

static const char* const ct_attr_type_json[] = {"int",      "float",      "bool",  "string",
                                                "int_list", "float_list", "dtype", "none"};

static void ct_json_attr_value(ct_json_writer* w, const ct_attr_value* v) {
  switch (v->type) {
    case CT_ATTR_INT:
      ct_json_raw(w, "%lld", (long long)v->value.i);
      break;
    case CT_ATTR_FLOAT:
      ct_json_double(w, v->value.f);
      break;
    case CT_ATTR_BOOL:
      ct_json_raw(w, v->value.b ? "true" : "false");
      break;
    case CT_ATTR_STRING:
      ct_json_string(w, v->value.s);
      break;
    case CT_ATTR_INT_LIST:
      ct_json_putc(w, '[');
      for (int64_t i = 0; i < v->count; ++i)
        ct_json_raw(w, "%s%lld", i ? ", " : "", (long long)v->value.ints[i]);
      ct_json_putc(w, ']');
      break;
    case CT_ATTR_FLOAT_LIST:
      ct_json_putc(w, '[');
      for (int64_t i = 0; i < v->count; ++i) {
        if (i) ct_json_raw(w, ", ");
        ct_json_double(w, v->value.floats[i]);
      }
      ct_json_putc(w, ']');
      break;
    case CT_ATTR_DTYPE:
      ct_json_string(w, ct_dtype_name(v->value.dtype));
      break;
    default:
      ct_json_raw(w, "null");
      break;
  }
}

static void ct_json_params(ct_json_writer* w, const ct_param_schema* params, int32_t count) {
  ct_json_putc(w, '[');
  for (int32_t i = 0; i < count; ++i) {
    ct_json_raw(w, "%s{\"name\": ", i ? ", " : "");
    ct_json_string(w, params[i].name);
    ct_json_raw(w, ", \"doc\": ");
    ct_json_string(w, params[i].doc);
    ct_json_raw(w, ", \"optional\": %s, \"variadic\": %s}",
                (params[i].flags & CT_PARAM_OPTIONAL) ? "true" : "false",
                (params[i].flags & CT_PARAM_VARIADIC) ? "true" : "false");
  }
  ct_json_putc(w, ']');
}

/* {"input": i} / {"output": j} / {"cotangent": j} / {"step": s, "output": k}, or null. */
static void ct_json_grad_value(ct_json_writer* w, const ct_grad_value* v) {
  switch (v->source) {
    case CT_GRAD_INPUT:
      ct_json_raw(w, "{\"input\": %d}", v->index);
      break;
    case CT_GRAD_OUTPUT:
      ct_json_raw(w, "{\"output\": %d}", v->index);
      break;
    case CT_GRAD_COTANGENT:
      ct_json_raw(w, "{\"cotangent\": %d}", v->index);
      break;
    case CT_GRAD_STEP:
      ct_json_raw(w, "{\"step\": %d, \"output\": %d}", v->index, v->output);
      break;
    default:
      ct_json_raw(w, "null");
  }
}

static void ct_json_flags(ct_json_writer* w, const char* key, const uint8_t* flags, int32_t n) {
  ct_json_raw(w, ", \"%s\": [", key);
  for (int32_t i = 0; i < n; ++i)
    ct_json_raw(w, "%s%s", i ? ", " : "", flags[i] ? "true" : "false");
  ct_json_putc(w, ']');
}

/* The gradient entry (docs/schema-json.md), or {"error": message} when its row is broken. */
static void ct_json_gradient(ct_json_writer* w, const ct_op* op) {
  const ct_gradient* g = NULL;
  if (ct_op_gradient(op, &g) != CT_OK) {
    ct_json_raw(w, "{\"error\": ");
    ct_json_string(w, ct_last_error());
    ct_json_putc(w, '}');
    return;
  }
  ct_json_raw(w, "{\"differentiable\": %s, \"formula\": ", g->differentiable ? "true" : "false");
  ct_json_string(w, g->formula);
  ct_json_raw(w, ", \"note\": ");
  ct_json_string(w, g->note);
  ct_json_raw(w, ", \"steps\": [");
  for (int32_t s = 0; s < g->num_steps; ++s) {
    const ct_grad_step* step = &g->steps[s];
    const ct_op_schema* schema = NULL;
    ct_op_get_schema(step->op, &schema);
    ct_json_raw(w, "%s{\"op\": ", s ? ", " : "");
    ct_json_string(w, schema->name);
    ct_json_raw(w, ", \"inputs\": [");
    for (int32_t i = 0; i < step->num_inputs; ++i) {
      if (i) ct_json_raw(w, ", ");
      ct_json_grad_value(w, &step->inputs[i]);
    }
    ct_json_raw(w, "], \"attrs\": [");
    for (int32_t a = 0; a < step->num_attrs; ++a) {
      const ct_grad_attr* attr = &step->attrs[a];
      ct_json_raw(w, "%s{\"name\": ", a ? ", " : "");
      ct_json_string(w, attr->name);
      if (attr->source == CT_GRAD_ATTR_FORWARD) {
        ct_json_raw(w, ", \"forward\": ");
        ct_json_string(w, op->def->schema.attrs[attr->index].name);
      } else if (attr->source == CT_GRAD_ATTR_DTYPE_OF) {
        ct_json_raw(w, ", \"dtype_of\": %d", attr->index);
      } else {
        ct_json_raw(w, ", \"value\": ");
        ct_json_attr_value(w, &attr->value);
      }
      ct_json_putc(w, '}');
    }
    ct_json_raw(w, "], \"num_outputs\": %d}", step->num_outputs);
  }
  ct_json_raw(w, "], \"input_grads\": [");
  for (int32_t i = 0; i < g->num_inputs; ++i) {
    if (i) ct_json_raw(w, ", ");
    ct_json_grad_value(w, &g->input_grads[i]);
  }
  ct_json_putc(w, ']');
  ct_json_flags(w, "saved_inputs", g->saved_inputs, g->num_inputs);
  ct_json_flags(w, "saved_outputs", g->saved_outputs, g->num_outputs);
  ct_json_flags(w, "output_takes_cotangent", g->output_takes_cotangent, g->num_outputs);
  ct_json_putc(w, '}');
}

static void ct_json_op(ct_json_writer* w, const ct_op* op) {
  const ct_op_schema* s = &op->def->schema;
  ct_json_raw(w, "{\"name\": ");
  ct_json_string(w, s->name);
  ct_json_raw(w, ", \"doc\": ");
  ct_json_string(w, s->doc);
  ct_json_raw(w, ", \"category\": \"%s\", \"flags\": [", ct_category_name(s->category));
  static const char* const flag_names[] = {"elementwise", "broadcasting", "inplace",
                                           "deterministic", "graph_safe"};
  bool first = true;
  for (int b = 0; b < 5; ++b) {
    if (s->flags & (1u << b)) {
      ct_json_raw(w, "%s\"%s\"", first ? "" : ", ", flag_names[b]);
      first = false;
    }
  }
  ct_json_raw(w, "], \"inputs\": ");
  ct_json_params(w, s->inputs, s->num_inputs);
  ct_json_raw(w, ", \"outputs\": ");
  ct_json_params(w, s->outputs, s->num_outputs);
  ct_json_raw(w, ", \"attrs\": [");
  for (int32_t i = 0; i < s->num_attrs; ++i) {
    const ct_attr_schema* a = &s->attrs[i];
    ct_json_raw(w, "%s{\"name\": ", i ? ", " : "");
    ct_json_string(w, a->name);
    ct_json_raw(w, ", \"doc\": ");
    ct_json_string(w, a->doc);
    ct_json_raw(w, ", \"type\": \"%s\", \"required\": %s, \"nullable\": %s, \"default\": ",
                ct_attr_type_json[a->type], (a->flags & CT_ATTR_REQUIRED) ? "true" : "false",
                (a->flags & CT_ATTR_NULLABLE) ? "true" : "false");
    if (a->flags & CT_ATTR_REQUIRED)
      ct_json_raw(w, "null");
    else
      ct_json_attr_value(w, &a->default_value);
    ct_json_putc(w, '}');
  }
  ct_json_raw(w, "], \"kernels\": [");
  int32_t count = 0;
  ct_op_kernel_count(op, &count);
  for (int32_t k = 0; k < count; ++k) {
    ct_kernel_info info = {sizeof info, NULL, 0, 0, NULL};
    if (ct_op_kernel_info(op, k, &info) != CT_OK) break;
    ct_json_raw(w, "%s{\"backend\": ", k ? ", " : "");
    ct_json_string(w, info.backend);
    ct_json_raw(w, ", \"device\": \"%s\", \"signature\": [", ct_device_name(info.device_type));
    for (int32_t i = 0; i < info.signature_length; ++i) {
      ct_json_raw(w, "%s", i ? ", " : "");
      ct_json_string(w, ct_dtype_name(info.signature[i]));
    }
    ct_json_raw(w, "]}");
  }
  ct_json_raw(w, "], \"gradient\": ");
  ct_json_gradient(w, op);
  ct_json_putc(w, '}');
}

int ct_op_schema_json(const ct_op* op, char* buffer, size_t capacity, size_t* length) {
  ct_clear_error();
  if (!length || (capacity > 0 && !buffer)) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_schema_json: buffer or length is NULL");
  }
  const int status = ct_registry_init();
  if (status != CT_OK) return status;
  ct_json_writer w = {buffer, capacity, 0};
  if (op) {
    ct_json_op(&w, op);
  } else {
    int32_t count = 0;
    ct_op_count(&count);
    ct_json_raw(&w, "{\"version\": \"%s\", \"abi_version\": [%d, %d], \"ops\": [",
                ct_version_string(), CT_ABI_VERSION_MAJOR, CT_ABI_VERSION_MINOR);
    for (int32_t i = 0; i < count; ++i) {
      const ct_op* each = NULL;
      ct_op_at(i, &each);
      if (i) ct_json_raw(&w, ", ");
      ct_json_op(&w, each);
    }
    ct_json_raw(&w, "]}");
  }
  if (capacity > 0) buffer[w.length < capacity ? w.length : capacity - 1] = '\0';
  *length = w.length;
  ct_clear_error();
  return CT_OK;
}
