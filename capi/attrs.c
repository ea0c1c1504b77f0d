/* attrs.c - resolving a caller's named attributes against an op's schema. */
#include <string.h>

#include "internal.h"

static const char* const ct_attr_type_names[] = {"int",      "float",      "bool",  "string",
                                                 "int list", "float list", "dtype", "None"};

static const char* ct_attr_type_name(int32_t type) {
  return type >= 0 && type <= CT_ATTR_NONE ? ct_attr_type_names[type] : "an unknown type";
}

int32_t ct_schema_attr_index(const ct_op_schema* schema, const char* name) {
  for (int32_t i = 0; i < schema->num_attrs; ++i) {
    if (strcmp(schema->attrs[i].name, name) == 0) return i;
  }
  return -1;
}

/* Converts `given` to the schema's type where the header allows it; checks payloads. */
static int ct_attr_coerce(const ct_op_schema* schema, const ct_attr_schema* spec,
                          const ct_attr_value* given, ct_attr_value* out) {
  *out = *given;
  if (given->type == CT_ATTR_NONE) {
    if (spec->flags & CT_ATTR_NULLABLE) return CT_OK;
    return ct_set_error(CT_ERROR_ATTRIBUTE_TYPE, "%s: attribute '%s' cannot be None", schema->name,
                        spec->name);
  }
  if (given->type == spec->type) {
    /* same type: check the payload below */
  } else if (spec->type == CT_ATTR_INT_LIST && given->type == CT_ATTR_INT) {
    out->type = CT_ATTR_INT_LIST;
    out->count = 1;
    out->value.ints = &given->value.i;
  } else if (spec->type == CT_ATTR_FLOAT && given->type == CT_ATTR_INT) {
    out->type = CT_ATTR_FLOAT;
    out->count = 0;
    out->value.f = (double)given->value.i;
  } else {
    return ct_set_error(CT_ERROR_ATTRIBUTE_TYPE, "%s: attribute '%s' takes %s, got %s",
                        schema->name, spec->name, ct_attr_type_name(spec->type),
                        ct_attr_type_name(given->type));
  }
  switch (out->type) {
    case CT_ATTR_BOOL:
      if (out->value.b != 0 && out->value.b != 1) {
        return ct_set_error(CT_ERROR_ATTRIBUTE_TYPE,
                            "%s: attribute '%s' is a bool (0 or 1), got %lld", schema->name,
                            spec->name, (long long)out->value.b);
      }
      break;
    case CT_ATTR_STRING:
      if (!out->value.s) {
        return ct_set_error(CT_ERROR_NULL_POINTER, "%s: attribute '%s' has a NULL string",
                            schema->name, spec->name);
      }
      break;
    case CT_ATTR_INT_LIST:
    case CT_ATTR_FLOAT_LIST:
      if (out->count < 0 || (out->count > 0 && !out->value.ints)) {
        return ct_set_error(out->count < 0 ? CT_ERROR_INVALID_ARGUMENT : CT_ERROR_NULL_POINTER,
                            "%s: attribute '%s' has an invalid list (count %lld, data %p)",
                            schema->name, spec->name, (long long)out->count,
                            (const void*)out->value.ints);
      }
      break;
    case CT_ATTR_DTYPE:
      if (ct_dtype_to_id(out->value.dtype) == CT_DT_INVALID) {
        return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                            "%s: attribute '%s' names dtype %s, which ctensor does not support",
                            schema->name, spec->name, ct_dtype_describe(out->value.dtype));
      }
      break;
    default:
      break;
  }
  return CT_OK;
}

int ct_attrs_resolve(const ct_op_schema* schema, const ct_attr* attrs, int32_t num_attrs,
                     ct_attr_value* resolved) {
  if (num_attrs < 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: negative attribute count %d", schema->name,
                        num_attrs);
  }
  if (num_attrs > 0 && !attrs) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "%s: %d attributes but a NULL attribute array",
                        schema->name, num_attrs);
  }
  bool given[CT_MAX_ATTRS] = {false};
  for (int32_t i = 0; i < schema->num_attrs; ++i) resolved[i] = schema->attrs[i].default_value;
  for (int32_t j = 0; j < num_attrs; ++j) {
    if (!attrs[j].name) {
      return ct_set_error(CT_ERROR_NULL_POINTER, "%s: attribute %d has a NULL name", schema->name,
                          j);
    }
    const int32_t i = ct_schema_attr_index(schema, attrs[j].name);
    if (i < 0) {
      return ct_set_error(CT_ERROR_UNKNOWN_ATTRIBUTE, "%s has no attribute '%s'", schema->name,
                          attrs[j].name);
    }
    if (given[i]) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' given twice", schema->name,
                          attrs[j].name);
    }
    given[i] = true;
    const int status = ct_attr_coerce(schema, &schema->attrs[i], &attrs[j].value, &resolved[i]);
    if (status != CT_OK) return status;
  }
  for (int32_t i = 0; i < schema->num_attrs; ++i) {
    if ((schema->attrs[i].flags & CT_ATTR_REQUIRED) && !given[i]) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is required", schema->name,
                          schema->attrs[i].name);
    }
  }
  return CT_OK;
}
