/*
 * test_abi.c - the C ABI contract of libctensor, checked from a plain C program.
 *
 *   cc -std=c11 -pthread test_abi.c $(pkg-config --cflags --libs ctensor) -o test_abi
 *   ./test_abi            # TAP-like: "ok N - ..." / "not ok N - ...", exit 1 on any failure
 *
 * Covers: ABI version, struct layouts (DLPack's), enum values, status names, the registry and
 * schemas, kernel introspection, schema JSON, dtype names, every argument error with its own
 * status and a message (outputs left bit-for-bit untouched), aliasing rules, workspace and
 * allocator contracts, context versioning, per-thread errors and concurrent runs.
 *
 * Built and run by tests/test_c_api.py (also under valgrind). Only <ctensor.h> is used (and
 * test_support.h beside this file).
 */
#define _POSIX_C_SOURCE 200809L /* pthread barriers */

#include <ctensor.h>

#include "test_support.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Reporting
 * ------------------------------------------------------------------------------------------- */

static void diag(const char* format, ...) {
  va_list args;
  printf("# ");
  va_start(args, format);
  vprintf(format, args);
  va_end(args);
  printf("\n");
}

/* ---------------------------------------------------------------------------------------------
 * Tensors
 * ------------------------------------------------------------------------------------------- */

static const ct_dtype F32 = {CT_DTYPE_FLOAT, 32, 1};
static const ct_dtype F64 = {CT_DTYPE_FLOAT, 64, 1};
static const ct_dtype I32 = {CT_DTYPE_INT, 32, 1};
static const ct_dtype I64 = {CT_DTYPE_INT, 64, 1};

static ct_tensor on_device(ct_tensor t, int32_t device_type, int32_t device_id) {
  t.device.device_type = device_type;
  t.device.device_id = device_id;
  return t;
}

static int same_dtype(ct_dtype a, ct_dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/* ---------------------------------------------------------------------------------------------
 * Running and expecting failure with untouched outputs
 * ------------------------------------------------------------------------------------------- */

#define SENTINEL_BYTE 0xA5

/* Runs `op`, expects status `want`, a message, and `guard_bytes` at `guard` unchanged. */
static int expect_run_fails(const char* what, int want, const ct_op* op,
                            const ct_tensor* const* inputs, int32_t num_inputs,
                            const ct_tensor* const* outputs, int32_t num_outputs,
                            const ct_attr* attrs, int32_t num_attrs, const ct_context* context,
                            const void* guard, size_t guard_bytes) {
  unsigned char before[1024];
  if (guard_bytes > sizeof before) guard_bytes = sizeof before;
  if (guard) memcpy(before, guard, guard_bytes);
  const int status =
      ct_op_run(op, inputs, num_inputs, outputs, num_outputs, attrs, num_attrs, context);
  int ok = expect_status(status, want, what);
  if (guard) {
    ok = check(memcmp(before, guard, guard_bytes) == 0, "%s: memory bit-for-bit unchanged", what) &&
         ok;
  }
  return ok;
}

static int expect_infer_fails(const char* what, int want, const ct_op* op,
                              const ct_tensor* const* inputs, int32_t num_inputs,
                              const ct_attr* attrs, int32_t num_attrs) {
  ct_tensor_info info[CT_MAX_NDIM];
  int32_t n = -1;
  const int status = ct_op_infer(op, inputs, num_inputs, attrs, num_attrs, info, CT_MAX_NDIM, &n);
  return expect_status(status, want, what);
}

/* ---------------------------------------------------------------------------------------------
 * 1. Versions, layouts, enum values
 * ------------------------------------------------------------------------------------------- */

static void test_versions_and_layout(void) {
  const uint32_t abi = ct_abi_version();
  check(abi >> 16 == CT_ABI_VERSION_MAJOR, "ct_abi_version major %u == CT_ABI_VERSION_MAJOR %d",
        abi >> 16, CT_ABI_VERSION_MAJOR);
  check((long)(abi & 0xffffu) >= (long)CT_ABI_VERSION_MINOR,
        "ct_abi_version minor %u >= header minor %d", abi & 0xffffu, CT_ABI_VERSION_MINOR);
  const char* version = ct_version_string();
  diag("libctensor %s, ABI 0x%08x", version ? version : "(null)", abi);
  check(version && version[0] != '\0', "ct_version_string() is non-empty (\"%s\")",
        version ? version : "(null)");

#if UINTPTR_MAX == 0xffffffffffffffffu
  check(sizeof(ct_tensor) == 48, "sizeof(ct_tensor) == 48 (DLTensor), got %zu", sizeof(ct_tensor));
  check(offsetof(ct_tensor, data) == 0, "offsetof(ct_tensor, data) == 0");
  check(offsetof(ct_tensor, device) == 8, "offsetof(ct_tensor, device) == 8, got %zu",
        offsetof(ct_tensor, device));
  check(offsetof(ct_tensor, ndim) == 16, "offsetof(ct_tensor, ndim) == 16, got %zu",
        offsetof(ct_tensor, ndim));
  check(offsetof(ct_tensor, dtype) == 20, "offsetof(ct_tensor, dtype) == 20, got %zu",
        offsetof(ct_tensor, dtype));
  check(offsetof(ct_tensor, shape) == 24, "offsetof(ct_tensor, shape) == 24, got %zu",
        offsetof(ct_tensor, shape));
  check(offsetof(ct_tensor, strides) == 32, "offsetof(ct_tensor, strides) == 32, got %zu",
        offsetof(ct_tensor, strides));
  check(offsetof(ct_tensor, byte_offset) == 40, "offsetof(ct_tensor, byte_offset) == 40, got %zu",
        offsetof(ct_tensor, byte_offset));
#else
  diag("32-bit target: DLTensor offsets not checked against the 64-bit table");
#endif
  check(sizeof(ct_device) == 8 && offsetof(ct_device, device_type) == 0 &&
            offsetof(ct_device, device_id) == 4,
        "ct_device is DLDevice: 8 bytes, device_type@0, device_id@4");
  check(sizeof(ct_dtype) == 4 && offsetof(ct_dtype, code) == 0 && offsetof(ct_dtype, bits) == 1 &&
            offsetof(ct_dtype, lanes) == 2,
        "ct_dtype is DLDataType: 4 bytes, code@0, bits@1, lanes@2");
  check(sizeof(((ct_tensor*)0)->byte_offset) == 8 && sizeof(((ct_tensor*)0)->ndim) == 4,
        "byte_offset is 64-bit, ndim 32-bit");

  /* DLPack's DLDeviceType and DLDataTypeCode values. */
  check(CT_DEVICE_CPU == 1 && CT_DEVICE_CUDA == 2 && CT_DEVICE_CUDA_HOST == 3 &&
            CT_DEVICE_OPENCL == 4 && CT_DEVICE_VULKAN == 7 && CT_DEVICE_METAL == 8 &&
            CT_DEVICE_VPI == 9 && CT_DEVICE_ROCM == 10 && CT_DEVICE_ROCM_HOST == 11 &&
            CT_DEVICE_EXT_DEV == 12 && CT_DEVICE_CUDA_MANAGED == 13 && CT_DEVICE_ONEAPI == 14 &&
            CT_DEVICE_WEBGPU == 15 && CT_DEVICE_HEXAGON == 16,
        "device type codes are DLPack's");
  check(CT_DTYPE_INT == 0 && CT_DTYPE_UINT == 1 && CT_DTYPE_FLOAT == 2 &&
            CT_DTYPE_OPAQUE_HANDLE == 3 && CT_DTYPE_BFLOAT == 4 && CT_DTYPE_COMPLEX == 5 &&
            CT_DTYPE_BOOL == 6,
        "dtype codes are DLPack's");

  /* Growable structs start with struct_size; 64-bit sizes throughout. */
  check(offsetof(ct_context, struct_size) == 0 && offsetof(ct_allocator, struct_size) == 0 &&
            offsetof(ct_op_schema, struct_size) == 0 && offsetof(ct_kernel_info, struct_size) == 0,
        "ct_context, ct_allocator, ct_op_schema, ct_kernel_info start with struct_size");
  check(sizeof(((ct_context*)0)->workspace_size) == 8 &&
            sizeof(((ct_tensor_info*)0)->shape[0]) == 8 && sizeof(((ct_attr_value*)0)->count) == 8,
        "workspace_size, inferred extents and list counts are 64-bit");
  check(sizeof(((ct_tensor_info*)0)->shape) / sizeof(int64_t) == CT_MAX_NDIM && CT_MAX_NDIM >= 32,
        "ct_tensor_info holds CT_MAX_NDIM (%d) extents", CT_MAX_NDIM);
}

/* ---------------------------------------------------------------------------------------------
 * 2. Status names
 * ------------------------------------------------------------------------------------------- */

static void test_status_names(void) {
  static const struct {
    int status;
    const char* name;
  } table[] = {
      {CT_OK, "CT_OK"},
      {CT_ERROR_INVALID_ARGUMENT, "CT_ERROR_INVALID_ARGUMENT"},
      {CT_ERROR_UNSUPPORTED_DTYPE, "CT_ERROR_UNSUPPORTED_DTYPE"},
      {CT_ERROR_UNSUPPORTED_DEVICE, "CT_ERROR_UNSUPPORTED_DEVICE"},
      {CT_ERROR_CONTIGUOUS_REQUIRED, "CT_ERROR_CONTIGUOUS_REQUIRED"},
      {CT_ERROR_OUT_OF_MEMORY, "CT_ERROR_OUT_OF_MEMORY"},
      {CT_ERROR_BACKEND, "CT_ERROR_BACKEND"},
      {CT_ERROR_UNKNOWN_OP, "CT_ERROR_UNKNOWN_OP"},
      {CT_ERROR_ABI_MISMATCH, "CT_ERROR_ABI_MISMATCH"},
      {CT_ERROR_SHAPE_MISMATCH, "CT_ERROR_SHAPE_MISMATCH"},
      {CT_ERROR_UNKNOWN_ATTRIBUTE, "CT_ERROR_UNKNOWN_ATTRIBUTE"},
      {CT_ERROR_ATTRIBUTE_TYPE, "CT_ERROR_ATTRIBUTE_TYPE"},
      {CT_ERROR_DEVICE_MISMATCH, "CT_ERROR_DEVICE_MISMATCH"},
      {CT_ERROR_NULL_POINTER, "CT_ERROR_NULL_POINTER"},
      {CT_ERROR_INVALID_SHAPE, "CT_ERROR_INVALID_SHAPE"},
      {CT_ERROR_SIZE_OVERFLOW, "CT_ERROR_SIZE_OVERFLOW"},
      {CT_ERROR_ALIASING, "CT_ERROR_ALIASING"},
      {CT_ERROR_WORKSPACE_TOO_SMALL, "CT_ERROR_WORKSPACE_TOO_SMALL"},
      {CT_ERROR_WRONG_ARITY, "CT_ERROR_WRONG_ARITY"},
      {CT_ERROR_BACKEND_UNAVAILABLE, "CT_ERROR_BACKEND_UNAVAILABLE"},
  };
  const int n = (int)(sizeof table / sizeof table[0]);
  for (int i = 0; i < n; ++i) {
    const char* name = ct_status_name(table[i].status);
    check(name && strcmp(name, table[i].name) == 0, "ct_status_name(%d) == \"%s\" (got \"%s\")",
          table[i].status, table[i].name, name ? name : "(null)");
    /* Explicit, distinct, negative values: -1, -2, ... in header order. */
    check(table[i].status == -i, "%s == %d", table[i].name, -i);
  }
  const int unknown[] = {1, -20, -1000, 12345};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; ++i) {
    const char* name = ct_status_name(unknown[i]);
    int distinct = name != NULL;
    for (int j = 0; distinct && j < n; ++j) distinct = strcmp(name, table[j].name) != 0;
    check(distinct, "ct_status_name(%d) is a non-NULL name of no real status (\"%s\")", unknown[i],
          name ? name : "(null)");
  }
}

/* ---------------------------------------------------------------------------------------------
 * 3. Registry and schemas
 * ------------------------------------------------------------------------------------------- */

static void test_registry(void) {
  int32_t count = 0;
  if (!expect_status(ct_op_count(&count), CT_OK, "ct_op_count")) return;
  check(count >= 10, "ct_op_count gives %d operators", count);
  expect_status(ct_op_count(NULL), CT_ERROR_NULL_POINTER, "ct_op_count(NULL)");

  int all_found = 1, sorted = 1, schemas_ok = 1;
  const char* previous = NULL;
  const char* bad = "";
  for (int32_t i = 0; i < count; ++i) {
    const ct_op* op = NULL;
    const ct_op* again = NULL;
    const ct_op_schema* s = NULL;
    if (ct_op_at(i, &op) != CT_OK || !op || ct_op_get_schema(op, &s) != CT_OK || !s) {
      all_found = 0;
      continue;
    }
    if (ct_op_find(s->name, &again) != CT_OK || again != op) all_found = 0, bad = s->name;
    if (previous && strcmp(previous, s->name) >= 0) sorted = 0;
    previous = s->name;
    int ok = s->struct_size >= sizeof(ct_op_schema) && s->name[0] != '\0' && s->doc &&
             s->doc[0] != '\0' && s->category >= CT_OP_SHAPE_STATIC &&
             s->category <= CT_OP_DYNAMIC && (s->flags & ~0x1fu) == 0 && s->num_inputs >= 0 &&
             (s->num_inputs == 0 || s->inputs) && s->num_outputs >= 1 && s->outputs &&
             s->num_attrs >= 0 && (s->num_attrs == 0 || s->attrs);
    for (int32_t k = 0; ok && k < s->num_inputs; ++k) {
      ok = s->inputs[k].name && s->inputs[k].name[0] && (s->inputs[k].flags & ~3u) == 0;
      /* Only the last parameter may be variadic. */
      if ((s->inputs[k].flags & CT_PARAM_VARIADIC) && k != s->num_inputs - 1) ok = 0;
    }
    for (int32_t k = 0; ok && k < s->num_outputs; ++k) {
      ok = s->outputs[k].name && s->outputs[k].name[0] && (s->outputs[k].flags & ~3u) == 0;
      if ((s->outputs[k].flags & CT_PARAM_VARIADIC) && k != s->num_outputs - 1) ok = 0;
    }
    for (int32_t k = 0; ok && k < s->num_attrs; ++k) {
      const ct_attr_schema* a = &s->attrs[k];
      ok = a->name && a->name[0] && a->type >= CT_ATTR_INT && a->type < CT_ATTR_NONE &&
           (a->flags & ~3u) == 0;
      if (ok && !(a->flags & CT_ATTR_REQUIRED)) {
        ok = a->default_value.type == a->type ||
             (a->default_value.type == CT_ATTR_NONE && (a->flags & CT_ATTR_NULLABLE));
      }
    }
    if (!ok) schemas_ok = 0, bad = s->name;
  }
  check(all_found, "ct_op_at(i) for every i and ct_op_find(its name) give the same handle%s%s",
        bad[0] ? ": " : "", bad);
  check(sorted, "ct_op_at enumerates operators in strict name order");
  check(schemas_ok,
        "every schema is well formed (names, docs, categories, flags, params, attrs)%s%s",
        bad[0] ? "; first bad: " : "", bad);

  const ct_op* op = NULL;
  expect_status(ct_op_at(-1, &op), CT_ERROR_INVALID_ARGUMENT, "ct_op_at(-1)");
  expect_status(ct_op_at(count, &op), CT_ERROR_INVALID_ARGUMENT, "ct_op_at(count)");
  expect_status(ct_op_at(0, NULL), CT_ERROR_NULL_POINTER, "ct_op_at(0, NULL)");
  expect_status(ct_op_find("no_such_op", &op), CT_ERROR_UNKNOWN_OP, "ct_op_find(\"no_such_op\")");
  check(strstr(ct_last_error(), "no_such_op") != NULL, "the UNKNOWN_OP message names the op");
  expect_status(ct_op_find("", &op), CT_ERROR_UNKNOWN_OP, "ct_op_find(\"\")");
  expect_status(ct_op_find("EXP", &op), CT_ERROR_UNKNOWN_OP,
                "ct_op_find(\"EXP\") (names are case-sensitive)");
  expect_status(ct_op_find(NULL, &op), CT_ERROR_NULL_POINTER, "ct_op_find(NULL)");
  expect_status(ct_op_find("exp", NULL), CT_ERROR_NULL_POINTER, "ct_op_find(name, NULL)");
  const ct_op_schema* schema = NULL;
  expect_status(ct_op_get_schema(NULL, &schema), CT_ERROR_NULL_POINTER, "ct_op_get_schema(NULL)");

  static const char* const expected_ops[] = {"abs",     "add",    "astype",   "conv2d",
                                             "exp",     "matmul", "negative", "nonzero",
                                             "softmax", "sum",    "where"};
  for (size_t i = 0; i < sizeof expected_ops / sizeof expected_ops[0]; ++i) {
    check(ct_op_find(expected_ops[i], &op) == CT_OK, "operator \"%s\" is registered",
          expected_ops[i]);
  }
}

static const ct_attr_schema* find_attr(const ct_op_schema* s, const char* name) {
  for (int32_t i = 0; i < s->num_attrs; ++i) {
    if (strcmp(s->attrs[i].name, name) == 0) return &s->attrs[i];
  }
  return NULL;
}

static void test_schemas(void) {
  const ct_op_schema* s = NULL;
  const ct_op* op;

  if ((op = find_op("exp")) && ct_op_get_schema(op, &s) == CT_OK) {
    check(strcmp(s->name, "exp") == 0 && s->category == CT_OP_SHAPE_STATIC && s->num_inputs == 1 &&
              s->num_outputs == 1 && s->num_attrs == 0,
          "exp: shape-static, 1 input, 1 output, no attributes");
    check((s->flags & CT_OP_FLAG_ELEMENTWISE) && (s->flags & CT_OP_FLAG_INPLACE) &&
              (s->flags & CT_OP_FLAG_DETERMINISTIC) && !(s->flags & CT_OP_FLAG_BROADCASTING),
          "exp: flags elementwise, inplace, deterministic, not broadcasting (0x%x)", s->flags);
    check(strcmp(s->inputs[0].name, "x") == 0 && strcmp(s->outputs[0].name, "out") == 0 &&
              s->inputs[0].flags == 0,
          "exp: input 'x', output 'out'");
  }
  if ((op = find_op("add")) && ct_op_get_schema(op, &s) == CT_OK) {
    check(s->num_inputs == 2 && strcmp(s->inputs[0].name, "x1") == 0 &&
              strcmp(s->inputs[1].name, "x2") == 0 && (s->flags & CT_OP_FLAG_BROADCASTING) &&
              (s->flags & CT_OP_FLAG_ELEMENTWISE),
          "add: inputs x1, x2; broadcasting, elementwise");
  }
  if ((op = find_op("conv2d")) && ct_op_get_schema(op, &s) == CT_OK) {
    check(s->category == CT_OP_WORKSPACE, "conv2d: category CT_OP_WORKSPACE (%d)", s->category);
    check(s->num_inputs == 3 && !(s->inputs[0].flags & CT_PARAM_OPTIONAL) &&
              !(s->inputs[1].flags & CT_PARAM_OPTIONAL) &&
              (s->inputs[2].flags & CT_PARAM_OPTIONAL) && strcmp(s->inputs[2].name, "bias") == 0,
          "conv2d: inputs input, weight, optional bias");
    const ct_attr_schema* stride = find_attr(s, "stride");
    const ct_attr_schema* padding = find_attr(s, "padding");
    const ct_attr_schema* dilation = find_attr(s, "dilation");
    const ct_attr_schema* groups = find_attr(s, "groups");
    check(stride && stride->type == CT_ATTR_INT_LIST && stride->default_value.count == 2 &&
              stride->default_value.value.ints[0] == 1 && stride->default_value.value.ints[1] == 1,
          "conv2d: stride is an int list defaulting to (1, 1)");
    check(padding && padding->type == CT_ATTR_INT_LIST && padding->default_value.count == 2 &&
              padding->default_value.value.ints[0] == 0 &&
              padding->default_value.value.ints[1] == 0,
          "conv2d: padding is an int list defaulting to (0, 0)");
    check(dilation && dilation->type == CT_ATTR_INT_LIST && dilation->default_value.count == 2 &&
              dilation->default_value.value.ints[0] == 1,
          "conv2d: dilation is an int list defaulting to (1, 1)");
    check(groups && groups->type == CT_ATTR_INT && groups->default_value.type == CT_ATTR_INT &&
              groups->default_value.value.i == 1 && !(groups->flags & CT_ATTR_REQUIRED),
          "conv2d: groups is an int defaulting to 1");
  }
  if ((op = find_op("nonzero")) && ct_op_get_schema(op, &s) == CT_OK) {
    check(s->category == CT_OP_DYNAMIC && s->num_outputs == 1 &&
              (s->outputs[0].flags & CT_PARAM_VARIADIC) && !(s->flags & CT_OP_FLAG_GRAPH_SAFE),
          "nonzero: dynamic, one variadic output, not graph-safe");
  }
  if ((op = find_op("astype")) && ct_op_get_schema(op, &s) == CT_OK) {
    const ct_attr_schema* dtype = find_attr(s, "dtype");
    check(dtype && dtype->type == CT_ATTR_DTYPE && (dtype->flags & CT_ATTR_REQUIRED) &&
              !(s->flags & CT_OP_FLAG_INPLACE),
          "astype: required dtype attribute; not in-place");
  }
  if ((op = find_op("sum")) && ct_op_get_schema(op, &s) == CT_OK) {
    const ct_attr_schema* axis = find_attr(s, "axis");
    const ct_attr_schema* keepdims = find_attr(s, "keepdims");
    check(axis && axis->type == CT_ATTR_INT_LIST && (axis->flags & CT_ATTR_NULLABLE) &&
              axis->default_value.type == CT_ATTR_NONE,
          "sum: axis is a nullable int list defaulting to None");
    check(keepdims && keepdims->type == CT_ATTR_BOOL &&
              keepdims->default_value.type == CT_ATTR_BOOL && keepdims->default_value.value.b == 0,
          "sum: keepdims is a bool defaulting to false");
  }
}

/* ---------------------------------------------------------------------------------------------
 * 4. Kernel introspection
 * ------------------------------------------------------------------------------------------- */

static void test_kernel_info(void) {
  const ct_op* exp_op = find_op("exp");
  if (!exp_op) return;
  int32_t count = 0;
  expect_status(ct_op_kernel_count(exp_op, &count), CT_OK, "ct_op_kernel_count(exp)");
  check(count >= 2, "exp has at least 2 kernels (%d)", count);
  int has_f32 = 0, has_f64 = 0, has_i32 = 0, all_ok = 1;
  for (int32_t k = 0; k < count; ++k) {
    ct_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (ct_op_kernel_info(exp_op, k, &info) != CT_OK) {
      all_ok = 0;
      continue;
    }
    if (!info.backend || !info.backend[0] || info.signature_length != 2 || !info.signature ||
        !same_dtype(info.signature[0], info.signature[1]) || !ct_dtype_name(info.signature[0])) {
      all_ok = 0;
      continue;
    }
    if (info.device_type == CT_DEVICE_CPU && strcmp(info.backend, "cpu") == 0) {
      has_f32 |= same_dtype(info.signature[0], F32);
      has_f64 |= same_dtype(info.signature[0], F64);
      has_i32 |= same_dtype(info.signature[0], I32);
    }
  }
  check(all_ok, "every exp kernel has a backend name and a (x, out) signature of one known dtype");
  check(has_f32 && has_f64 && !has_i32,
        "exp has cpu kernels for float32 and float64, none for int32");

  ct_kernel_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  expect_status(ct_op_kernel_info(exp_op, count, &info), CT_ERROR_INVALID_ARGUMENT,
                "ct_op_kernel_info(exp, count)");
  expect_status(ct_op_kernel_info(exp_op, -1, &info), CT_ERROR_INVALID_ARGUMENT,
                "ct_op_kernel_info(exp, -1)");
  info.struct_size = sizeof info - 1;
  expect_status(ct_op_kernel_info(exp_op, 0, &info), CT_ERROR_ABI_MISMATCH,
                "ct_op_kernel_info with struct_size too small");
  expect_status(ct_op_kernel_info(exp_op, 0, NULL), CT_ERROR_NULL_POINTER,
                "ct_op_kernel_info(exp, 0, NULL)");
  expect_status(ct_op_kernel_count(NULL, &count), CT_ERROR_NULL_POINTER,
                "ct_op_kernel_count(NULL)");

  /* Every kernel of every op: signature length = inputs + outputs, every dtype named. */
  int32_t ops = 0;
  ct_op_count(&ops);
  int sig_ok = 1;
  const char* bad = "";
  for (int32_t i = 0; i < ops; ++i) {
    const ct_op* op = NULL;
    const ct_op_schema* s = NULL;
    int32_t n = 0;
    ct_op_at(i, &op);
    ct_op_get_schema(op, &s);
    ct_op_kernel_count(op, &n);
    for (int32_t k = 0; k < n; ++k) {
      ct_kernel_info each;
      memset(&each, 0, sizeof each);
      each.struct_size = sizeof each;
      if (ct_op_kernel_info(op, k, &each) != CT_OK ||
          each.signature_length != s->num_inputs + s->num_outputs) {
        sig_ok = 0, bad = s->name;
        continue;
      }
      for (int32_t j = 0; j < each.signature_length; ++j) {
        if (!ct_dtype_name(each.signature[j])) sig_ok = 0, bad = s->name;
      }
    }
  }
  check(sig_ok, "every kernel's signature has one known dtype per input and output%s%s",
        bad[0] ? "; first bad: " : "", bad);
}

/* ---------------------------------------------------------------------------------------------
 * 5. Schema JSON: snprintf-style lengths
 * ------------------------------------------------------------------------------------------- */

static void test_schema_json_one(const ct_op* op, const char* what) {
  size_t length = 0, again = 0, small_length = 0;
  if (!expect_status(ct_op_schema_json(op, NULL, 0, &length), CT_OK, what)) return;
  check(length > 2, "%s: capacity 0 reports the full length (%zu)", what, length);
  char* full = malloc(length + 1);
  char small[16];
  if (!full) return;
  memset(full, 'x', length + 1);
  expect_status(ct_op_schema_json(op, full, length + 1, &again), CT_OK, what);
  check(again == length && strlen(full) == length && full[0] == '{' && full[length - 1] == '}',
        "%s: capacity length+1 writes it all, NUL-terminated (%zu, strlen %zu)", what, again,
        strlen(full));
  memset(small, 'x', sizeof small);
  expect_status(ct_op_schema_json(op, small, sizeof small, &small_length), CT_OK, what);
  check(small_length == length && strlen(small) == sizeof small - 1 &&
            strncmp(small, full, sizeof small - 1) == 0,
        "%s: a short buffer gets a NUL-terminated prefix and the full length", what);
  if (op) {
    const ct_op_schema* s = NULL;
    char key[128];
    ct_op_get_schema(op, &s);
    snprintf(key, sizeof key, "\"name\": \"%s\"", s->name);
    check(strstr(full, key) != NULL, "%s: contains %s", what, key);
  } else {
    int32_t count = 0, missing = 0;
    ct_op_count(&count);
    for (int32_t i = 0; i < count; ++i) {
      const ct_op* each = NULL;
      const ct_op_schema* s = NULL;
      char key[128];
      ct_op_at(i, &each);
      ct_op_get_schema(each, &s);
      snprintf(key, sizeof key, "\"name\": \"%s\"", s->name);
      if (!strstr(full, key)) ++missing;
    }
    check(missing == 0 && strstr(full, "abi_version") != NULL,
          "%s: names every operator and the ABI version", what);
  }
  free(full);
}

static void test_schema_json(void) {
  const ct_op* exp_op = find_op("exp");
  const ct_op* conv = find_op("conv2d");
  size_t length = 0;
  if (exp_op) test_schema_json_one(exp_op, "ct_op_schema_json(exp)");
  if (conv) test_schema_json_one(conv, "ct_op_schema_json(conv2d)");
  test_schema_json_one(NULL, "ct_op_schema_json(registry)");
  char buffer[8];
  expect_status(ct_op_schema_json(exp_op, NULL, 8, &length), CT_ERROR_NULL_POINTER,
                "ct_op_schema_json(NULL buffer, capacity 8)");
  expect_status(ct_op_schema_json(exp_op, buffer, sizeof buffer, NULL), CT_ERROR_NULL_POINTER,
                "ct_op_schema_json(NULL length)");
}

/* ---------------------------------------------------------------------------------------------
 * 6. Dtype names
 * ------------------------------------------------------------------------------------------- */

static void test_dtype_names(void) {
  static const struct {
    const char* name;
    ct_dtype dtype;
  } table[] = {
      {"bool", {CT_DTYPE_BOOL, 8, 1}},
      {"int8", {CT_DTYPE_INT, 8, 1}},
      {"uint8", {CT_DTYPE_UINT, 8, 1}},
      {"int16", {CT_DTYPE_INT, 16, 1}},
      {"uint16", {CT_DTYPE_UINT, 16, 1}},
      {"int32", {CT_DTYPE_INT, 32, 1}},
      {"uint32", {CT_DTYPE_UINT, 32, 1}},
      {"int64", {CT_DTYPE_INT, 64, 1}},
      {"uint64", {CT_DTYPE_UINT, 64, 1}},
      {"float16", {CT_DTYPE_FLOAT, 16, 1}},
      {"bfloat16", {CT_DTYPE_BFLOAT, 16, 1}},
      {"float32", {CT_DTYPE_FLOAT, 32, 1}},
      {"float64", {CT_DTYPE_FLOAT, 64, 1}},
      {"complex64", {CT_DTYPE_COMPLEX, 64, 1}},
      {"complex128", {CT_DTYPE_COMPLEX, 128, 1}},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    ct_dtype parsed = {0, 0, 0};
    const int status = ct_dtype_from_name(table[i].name, &parsed);
    const char* name = ct_dtype_name(table[i].dtype);
    check(status == CT_OK && same_dtype(parsed, table[i].dtype) && name &&
              strcmp(name, table[i].name) == 0,
          "dtype \"%s\" <-> (code %d, bits %d, lanes 1) round trip", table[i].name,
          table[i].dtype.code, table[i].dtype.bits);
  }
  const ct_dtype complex32 = {CT_DTYPE_COMPLEX, 32, 1};
  const ct_dtype float32x4 = {CT_DTYPE_FLOAT, 32, 4};
  const ct_dtype float8 = {CT_DTYPE_FLOAT, 8, 1};
  check(ct_dtype_name(complex32) == NULL && ct_dtype_name(float32x4) == NULL &&
            ct_dtype_name(float8) == NULL,
        "ct_dtype_name is NULL for complex32, float32x4 and 8-bit float");
  ct_dtype d;
  expect_status(ct_dtype_from_name("float128", &d), CT_ERROR_UNSUPPORTED_DTYPE,
                "ct_dtype_from_name(\"float128\")");
  expect_status(ct_dtype_from_name("Float32", &d), CT_ERROR_UNSUPPORTED_DTYPE,
                "ct_dtype_from_name(\"Float32\")");
  expect_status(ct_dtype_from_name(NULL, &d), CT_ERROR_NULL_POINTER, "ct_dtype_from_name(NULL)");
  expect_status(ct_dtype_from_name("float32", NULL), CT_ERROR_NULL_POINTER,
                "ct_dtype_from_name(name, NULL)");
}

/* ---------------------------------------------------------------------------------------------
 * 7. Successful runs: reference values, strides, offsets, in place
 * ------------------------------------------------------------------------------------------- */

/* float32 against a float64 reference, with the project's float32 tolerance (tests/arrays.py). */
static int close_f32(float got, double want) {
  return fabs((double)got - want) <= 2e-6 * fabs(want) + 1e-7;
}

static void test_runs(void) {
  const ct_op* exp_op = find_op("exp");
  const ct_op* abs_op = find_op("abs");
  const ct_op* neg_op = find_op("negative");
  if (!exp_op || !abs_op || !neg_op) return;
  float x[8] = {-2.0f, -1.0f, -0.5f, 0.0f, 0.25f, 1.0f, 2.0f, 3.0f};
  float out[8];
  int64_t shape[1] = {8};
  ct_tensor tx = view(x, F32, 1, shape, NULL);
  ct_tensor tout = view(out, F32, 1, shape, NULL);
  const ct_tensor* in[1] = {&tx};
  const ct_tensor* outs[1] = {&tout};
  int ok = 1;

  /* infer */
  ct_tensor_info info[2];
  int32_t n = 0;
  expect_status(ct_op_infer(exp_op, in, 1, NULL, 0, info, 2, &n), CT_OK,
                "ct_op_infer(exp, (8,) float32)");
  check(n == 1 && info[0].ndim == 1 && info[0].shape[0] == 8 && same_dtype(info[0].dtype, F32),
        "exp infers one float32 (8,) output");
  n = -1;
  expect_status(ct_op_infer(exp_op, in, 1, NULL, 0, NULL, 0, &n), CT_ERROR_WRONG_ARITY,
                "ct_op_infer with capacity 0");
  check(n == 1, "ct_op_infer with capacity 0 still reports 1 output (%d)", n);
  expect_status(ct_op_infer(exp_op, in, 1, NULL, 0, info, 1, NULL), CT_ERROR_NULL_POINTER,
                "ct_op_infer(num_outputs NULL)");
  expect_status(ct_op_infer(exp_op, in, 1, NULL, 0, NULL, 1, &n), CT_ERROR_NULL_POINTER,
                "ct_op_infer(outputs NULL, capacity 1)");

  /* infer reads no data: a non-empty view without data is fine there (the layout is still
   * checked), while running on it is an error. */
  {
    ct_tensor no_data = view(NULL, F32, 1, shape, NULL);
    const ct_tensor* in_no_data[1] = {&no_data};
    n = 0;
    expect_status(ct_op_infer(exp_op, in_no_data, 1, NULL, 0, info, 2, &n), CT_OK,
                  "ct_op_infer(exp) on an (8,) view with NULL data");
    check(n == 1 && info[0].ndim == 1 && info[0].shape[0] == 8,
          "infer without data gives the (8,) output");
    int64_t negative[1] = {-1};
    ct_tensor bad = view(NULL, F32, 1, negative, NULL);
    const ct_tensor* in_bad[1] = {&bad};
    expect_status(ct_op_infer(exp_op, in_bad, 1, NULL, 0, info, 2, &n), CT_ERROR_INVALID_SHAPE,
                  "ct_op_infer without data still checks the extents");
    expect_status(ct_op_run(exp_op, in_no_data, 1, outs, 1, NULL, 0, NULL), CT_ERROR_NULL_POINTER,
                  "ct_op_run(exp) on an (8,) input with NULL data");
    const ct_tensor* out_no_data[1] = {&no_data};
    expect_status(ct_op_run(exp_op, in, 1, out_no_data, 1, NULL, 0, NULL), CT_ERROR_NULL_POINTER,
                  "ct_op_run(exp) into an (8,) output with NULL data");
    uint64_t ws_bytes = 0, ws_alignment = 0;
    expect_status(
        ct_op_workspace(exp_op, in_no_data, 1, NULL, 0, NULL, 0, &ws_bytes, &ws_alignment),
        CT_ERROR_NULL_POINTER, "ct_op_workspace(exp) on an input with NULL data");
  }

  /* workspace: exp needs none */
  uint64_t bytes = 99, alignment = 0;
  expect_status(ct_op_workspace(exp_op, in, 1, NULL, 0, NULL, 0, &bytes, &alignment), CT_OK,
                "ct_op_workspace(exp)");
  check(bytes == 0 && alignment >= 1, "exp asks for no workspace (%llu bytes, alignment %llu)",
        (unsigned long long)bytes, (unsigned long long)alignment);
  expect_status(ct_op_workspace(exp_op, in, 1, NULL, 0, NULL, 0, NULL, &alignment),
                CT_ERROR_NULL_POINTER, "ct_op_workspace(bytes NULL)");

  /* plain run */
  expect_status(ct_op_run(exp_op, in, 1, outs, 1, NULL, 0, NULL), CT_OK, "exp float32 (8,)");
  for (int i = 0; i < 8; ++i) ok &= close_f32(out[i], exp((double)x[i]));
  check(ok, "exp matches the C library's exp");

  /* abs and negative on int32 are exact */
  int32_t xi[6] = {-3, -1, 0, 1, 7, -2147483647 - 1};
  int32_t oi[6];
  int64_t shape6[1] = {6};
  ct_tensor txi = view(xi, I32, 1, shape6, NULL), toi = view(oi, I32, 1, shape6, NULL);
  const ct_tensor* ini[1] = {&txi};
  const ct_tensor* outi[1] = {&toi};
  expect_status(ct_op_run(abs_op, ini, 1, outi, 1, NULL, 0, NULL), CT_OK, "abs int32");
  check(oi[0] == 3 && oi[1] == 1 && oi[2] == 0 && oi[3] == 1 && oi[4] == 7 &&
            oi[5] == -2147483647 - 1,
        "abs int32 values (INT32_MIN wraps as NumPy)");
  expect_status(ct_op_run(neg_op, ini, 1, outi, 1, NULL, 0, NULL), CT_OK, "negative int32");
  check(oi[0] == 3 && oi[1] == 1 && oi[2] == 0 && oi[3] == -1 && oi[4] == -7,
        "negative int32 values");

  /* Negative strides with byte_offset (x reversed), zero strides (broadcast view) on inputs. */
  int64_t reverse[1] = {-1};
  ct_tensor trev = view(x, F32, 1, shape, reverse);
  trev.byte_offset = 7 * sizeof(float);
  const ct_tensor* inrev[1] = {&trev};
  expect_status(ct_op_run(exp_op, inrev, 1, outs, 1, NULL, 0, NULL), CT_OK,
                "exp of a reversed view (stride -1, byte_offset)");
  ok = 1;
  for (int i = 0; i < 8; ++i) ok &= close_f32(out[i], exp((double)x[7 - i]));
  check(ok, "reversed view read in the right order");
  int64_t zero[1] = {0};
  ct_tensor tbcast = view(x, F32, 1, shape, zero);
  tbcast.byte_offset = 6 * sizeof(float); /* x[6] = 2 everywhere */
  const ct_tensor* inb[1] = {&tbcast};
  expect_status(ct_op_run(exp_op, inb, 1, outs, 1, NULL, 0, NULL), CT_OK,
                "exp of a zero-stride input");
  ok = 1;
  for (int i = 0; i < 8; ++i) ok &= close_f32(out[i], exp(2.0));
  check(ok, "zero-stride input broadcasts one element");

  /* Strided output: every other element of a 16-float buffer; the gaps stay untouched. */
  float wide[16];
  memset(wide, SENTINEL_BYTE, sizeof wide);
  int64_t two[1] = {2};
  ct_tensor twide = view(wide, F32, 1, shape, two);
  const ct_tensor* outw[1] = {&twide};
  expect_status(ct_op_run(exp_op, in, 1, outw, 1, NULL, 0, NULL), CT_OK,
                "exp into a stride-2 output");
  ok = 1;
  for (int i = 0; i < 8; ++i) {
    unsigned char gap[sizeof(float)];
    memset(gap, SENTINEL_BYTE, sizeof gap);
    ok &=
        close_f32(wide[2 * i], exp((double)x[i])) && memcmp(&wide[2 * i + 1], gap, sizeof gap) == 0;
  }
  check(ok, "stride-2 output written at its elements only");

  /* A reversed output view (negative stride, byte_offset at its last element) is fine. */
  float backwards[8];
  memset(backwards, SENTINEL_BYTE, sizeof backwards);
  ct_tensor tback = view(backwards, F32, 1, shape, reverse);
  tback.byte_offset = 7 * sizeof(float);
  const ct_tensor* outback[1] = {&tback};
  expect_status(ct_op_run(exp_op, in, 1, outback, 1, NULL, 0, NULL), CT_OK,
                "exp into a reversed output view (stride -1)");
  ok = 1;
  for (int i = 0; i < 8; ++i) ok &= close_f32(backwards[7 - i], exp((double)x[i]));
  check(ok, "reversed output written in the right order");

  /* 2-D with non-compact input strides (a transposed view). */
  float m[6] = {0, 1, 2, 3, 4, 5}; /* (2, 3) */
  float mt[6];
  int64_t tshape[2] = {3, 2}, tstrides[2] = {1, 3};
  ct_tensor tm = view(m, F32, 2, tshape, tstrides);
  ct_tensor tmt = view(mt, F32, 2, tshape, NULL);
  const ct_tensor* inm[1] = {&tm};
  const ct_tensor* outm[1] = {&tmt};
  expect_status(ct_op_run(neg_op, inm, 1, outm, 1, NULL, 0, NULL), CT_OK,
                "negative of a transposed view");
  check(mt[0] == -0.0f && mt[1] == -3 && mt[2] == -1 && mt[3] == -4 && mt[4] == -2 && mt[5] == -5,
        "transposed view read in the right order");

  /* Exactly in place is allowed for INPLACE ops. */
  float y[8];
  memcpy(y, x, sizeof y);
  ct_tensor ty = view(y, F32, 1, shape, NULL);
  const ct_tensor* iny[1] = {&ty};
  const ct_tensor* outy[1] = {&ty};
  expect_status(ct_op_run(exp_op, iny, 1, outy, 1, NULL, 0, NULL), CT_OK,
                "exp exactly in place (INPLACE op)");
  ok = 1;
  for (int i = 0; i < 8; ++i) ok &= close_f32(y[i], exp((double)x[i]));
  check(ok, "in-place exp values");

  /* The same memory described once with NULL strides and once with explicit compact strides
   * is the same view. */
  memcpy(y, x, sizeof y);
  int64_t unit[1] = {1};
  ct_tensor ty_strided = view(y, F32, 1, shape, unit);
  const ct_tensor* outys[1] = {&ty_strided};
  expect_status(ct_op_run(exp_op, iny, 1, outys, 1, NULL, 0, NULL), CT_OK,
                "in place with NULL strides in, explicit compact strides out (same view)");
  ok = 1;
  for (int i = 0; i < 8; ++i) ok &= close_f32(y[i], exp((double)x[i]));
  check(ok, "in-place exp values (explicit strides)");

  /* The same first element split differently between data and byte_offset (two DLPack
   * producers may do this) is still exactly the same view. */
  float z[9];
  memcpy(z + 1, x, sizeof y);
  ct_tensor tz_offset = view(z, F32, 1, shape, NULL);
  tz_offset.byte_offset = sizeof(float);
  ct_tensor tz_pointer = view(z + 1, F32, 1, shape, NULL);
  const ct_tensor* inz[1] = {&tz_offset};
  const ct_tensor* outz[1] = {&tz_pointer};
  expect_status(ct_op_run(exp_op, inz, 1, outz, 1, NULL, 0, NULL), CT_OK,
                "in place with the address split as (data, byte_offset) vs (data + offset, 0)");
  ok = 1;
  for (int i = 0; i < 8; ++i) ok &= close_f32(z[i + 1], exp((double)x[i]));
  check(ok, "in-place exp values (split address)");

  /* Zero-size and 0-d tensors. */
  int64_t empty_shape[2] = {0, 3};
  ct_tensor tempty = view(NULL, F32, 2, empty_shape, NULL);
  const ct_tensor* ine[1] = {&tempty};
  const ct_tensor* oute[1] = {&tempty};
  ct_tensor tempty_out = view(NULL, F32, 2, empty_shape, NULL);
  oute[0] = &tempty_out;
  expect_status(ct_op_run(exp_op, ine, 1, oute, 1, NULL, 0, NULL), CT_OK,
                "exp of a (0, 3) tensor with NULL data");
  float scalar = 1.0f, scalar_out = 0.0f;
  ct_tensor ts = view(&scalar, F32, 0, NULL, NULL), tso = view(&scalar_out, F32, 0, NULL, NULL);
  const ct_tensor* ins[1] = {&ts};
  const ct_tensor* outs0[1] = {&tso};
  expect_status(ct_op_run(exp_op, ins, 1, outs0, 1, NULL, 0, NULL), CT_OK,
                "exp of a 0-d tensor (shape NULL)");
  check(close_f32(scalar_out, exp(1.0)), "0-d exp value");

  /* A context from a newer caller (bigger struct) is fine; its extra fields are ignored. */
  struct {
    ct_context base;
    uint64_t future_fields[4];
  } newer;
  memset(&newer, 0, sizeof newer);
  newer.base.struct_size = sizeof newer;
  expect_status(ct_op_run(exp_op, in, 1, outs, 1, NULL, 0, &newer.base), CT_OK,
                "ct_context with a larger struct_size (newer caller)");

  /* Thread count setting. */
  int32_t threads = 0;
  expect_status(ct_set_num_threads(2), CT_OK, "ct_set_num_threads(2)");
  expect_status(ct_get_num_threads(&threads), CT_OK, "ct_get_num_threads");
  check(threads == 2 || threads == 1, "ct_get_num_threads after setting 2 gives %d", threads);
  expect_status(ct_set_num_threads(0), CT_OK, "ct_set_num_threads(0) (default)");
  expect_status(ct_get_num_threads(NULL), CT_ERROR_NULL_POINTER, "ct_get_num_threads(NULL)");
}

/* ---------------------------------------------------------------------------------------------
 * 8. Argument errors, each with its own status; outputs untouched
 * ------------------------------------------------------------------------------------------- */

static void test_argument_errors(void) {
  const ct_op* exp_op = find_op("exp");
  const ct_op* add_op = find_op("add");
  const ct_op* softmax_op = find_op("softmax");
  const ct_op* sum_op = find_op("sum");
  const ct_op* astype_op = find_op("astype");
  const ct_op* permute_op = find_op("permute_dims");
  if (!exp_op || !add_op || !softmax_op || !sum_op || !astype_op || !permute_op) return;

  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float out[8];
  memset(out, SENTINEL_BYTE, sizeof out);
  int64_t shape[1] = {8};
  ct_tensor tx = view(x, F32, 1, shape, NULL);
  ct_tensor tout = view(out, F32, 1, shape, NULL);
  const ct_tensor* in[1] = {&tx};
  const ct_tensor* outs[1] = {&tout};
  const size_t G = sizeof out;

  /* NULL pointers */
  expect_run_fails("run with NULL op", CT_ERROR_NULL_POINTER, NULL, in, 1, outs, 1, NULL, 0, NULL,
                   out, G);
  expect_infer_fails("infer with NULL op", CT_ERROR_NULL_POINTER, NULL, in, 1, NULL, 0);
  {
    uint64_t b, a;
    expect_status(ct_op_workspace(NULL, in, 1, NULL, 0, NULL, 0, &b, &a), CT_ERROR_NULL_POINTER,
                  "workspace with NULL op");
  }
  const ct_tensor* null_in[1] = {NULL};
  expect_run_fails("NULL input tensor pointer", CT_ERROR_NULL_POINTER, exp_op, null_in, 1, outs, 1,
                   NULL, 0, NULL, out, G);
  expect_infer_fails("infer with NULL input tensor pointer", CT_ERROR_NULL_POINTER, exp_op, null_in,
                     1, NULL, 0);
  expect_run_fails("NULL input array with 1 input", CT_ERROR_NULL_POINTER, exp_op, NULL, 1, outs, 1,
                   NULL, 0, NULL, out, G);
  const ct_tensor* null_out[1] = {NULL};
  expect_run_fails("NULL output tensor pointer", CT_ERROR_NULL_POINTER, exp_op, in, 1, null_out, 1,
                   NULL, 0, NULL, x, sizeof x);
  expect_run_fails("NULL output array with 1 output", CT_ERROR_NULL_POINTER, exp_op, in, 1, NULL, 1,
                   NULL, 0, NULL, x, sizeof x);
  {
    ct_tensor t = tx;
    t.shape = NULL;
    const ct_tensor* bad[1] = {&t};
    expect_run_fails("NULL shape with ndim 1", CT_ERROR_NULL_POINTER, exp_op, bad, 1, outs, 1, NULL,
                     0, NULL, out, G);
    expect_infer_fails("infer with NULL shape", CT_ERROR_NULL_POINTER, exp_op, bad, 1, NULL, 0);
  }
  {
    ct_tensor t = tx;
    t.data = NULL;
    const ct_tensor* bad[1] = {&t};
    expect_run_fails("NULL input data with 8 elements", CT_ERROR_NULL_POINTER, exp_op, bad, 1, outs,
                     1, NULL, 0, NULL, out, G);
    ct_tensor o = tout;
    o.data = NULL;
    const ct_tensor* bad_out[1] = {&o};
    expect_run_fails("NULL output data with 8 elements", CT_ERROR_NULL_POINTER, exp_op, in, 1,
                     bad_out, 1, NULL, 0, NULL, x, sizeof x);
  }

  /* Shapes */
  {
    int64_t negative[2] = {2, -4};
    ct_tensor t = view(x, F32, 2, negative, NULL);
    const ct_tensor* bad[1] = {&t};
    expect_run_fails("negative extent", CT_ERROR_INVALID_SHAPE, exp_op, bad, 1, outs, 1, NULL, 0,
                     NULL, out, G);
    expect_infer_fails("infer with negative extent", CT_ERROR_INVALID_SHAPE, exp_op, bad, 1, NULL,
                       0);
    ct_tensor o = view(out, F32, 2, negative, NULL);
    const ct_tensor* bad_out[1] = {&o};
    expect_run_fails("negative extent on the output", CT_ERROR_INVALID_SHAPE, exp_op, in, 1,
                     bad_out, 1, NULL, 0, NULL, out, G);
  }
  {
    int64_t ones[CT_MAX_NDIM + 1];
    for (int k = 0; k <= CT_MAX_NDIM; ++k) ones[k] = 1;
    ct_tensor t = view(x, F32, CT_MAX_NDIM + 1, ones, NULL);
    const ct_tensor* bad[1] = {&t};
    expect_run_fails("ndim = CT_MAX_NDIM + 1", CT_ERROR_INVALID_SHAPE, exp_op, bad, 1, outs, 1,
                     NULL, 0, NULL, out, G);
    t.ndim = -1;
    expect_run_fails("ndim = -1", CT_ERROR_INVALID_SHAPE, exp_op, bad, 1, outs, 1, NULL, 0, NULL,
                     out, G);
    /* ndim == CT_MAX_NDIM is fine. */
    float one = 0.5f, one_out = 0;
    ct_tensor big = view(&one, F32, CT_MAX_NDIM, ones, NULL);
    ct_tensor big_out = view(&one_out, F32, CT_MAX_NDIM, ones, NULL);
    const ct_tensor* bin[1] = {&big};
    const ct_tensor* bout[1] = {&big_out};
    expect_status(ct_op_run(exp_op, bin, 1, bout, 1, NULL, 0, NULL), CT_OK,
                  "ndim = CT_MAX_NDIM is accepted");
  }
  {
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    ct_tensor t = view(x, F32, 2, huge, NULL);
    const ct_tensor* bad[1] = {&t};
    expect_run_fails("element count 2^80 overflows int64", CT_ERROR_SIZE_OVERFLOW, exp_op, bad, 1,
                     outs, 1, NULL, 0, NULL, out, G);
    expect_infer_fails("infer with element count overflow", CT_ERROR_SIZE_OVERFLOW, exp_op, bad, 1,
                       NULL, 0);
    int64_t bytes_huge[1] = {(int64_t)1 << 62}; /* 2^62 elements fit; 2^64 bytes do not */
    ct_tensor b = view(x, F32, 1, bytes_huge, NULL);
    const ct_tensor* bad_bytes[1] = {&b};
    expect_run_fails("byte count 2^64 overflows int64", CT_ERROR_SIZE_OVERFLOW, exp_op, bad_bytes,
                     1, outs, 1, NULL, 0, NULL, out, G);
    int64_t s2[2] = {2, 2};
    int64_t far[2] = {INT64_MAX / 2, 1};
    ct_tensor f = view(x, F32, 2, s2, far);
    const ct_tensor* bad_far[1] = {&f};
    expect_run_fails("strides reaching past int64 bytes", CT_ERROR_SIZE_OVERFLOW, exp_op, bad_far,
                     1, outs, 1, NULL, 0, NULL, out, G);
  }

  /* Unknown op, attributes */
  {
    const ct_op* op = NULL;
    expect_status(ct_op_find("definitely_not_an_op", &op), CT_ERROR_UNKNOWN_OP, "unknown op name");
    ct_attr alpha;
    memset(&alpha, 0, sizeof alpha);
    alpha.name = "alpha";
    alpha.value.type = CT_ATTR_INT;
    alpha.value.value.i = 1;
    expect_run_fails("unknown attribute 'alpha' on exp", CT_ERROR_UNKNOWN_ATTRIBUTE, exp_op, in, 1,
                     outs, 1, &alpha, 1, NULL, out, G);
    check(strstr(ct_last_error(), "alpha") != NULL, "the UNKNOWN_ATTRIBUTE message names 'alpha'");
    expect_infer_fails("infer with unknown attribute", CT_ERROR_UNKNOWN_ATTRIBUTE, exp_op, in, 1,
                       &alpha, 1);

    ct_attr axis;
    memset(&axis, 0, sizeof axis);
    axis.name = "axis";
    axis.value.type = CT_ATTR_STRING;
    axis.value.value.s = "0";
    expect_run_fails("softmax axis given a string (wants int)", CT_ERROR_ATTRIBUTE_TYPE, softmax_op,
                     in, 1, outs, 1, &axis, 1, NULL, out, G);
    axis.value.type = CT_ATTR_FLOAT;
    axis.value.value.f = 0.0;
    expect_run_fails("softmax axis given a float (wants int)", CT_ERROR_ATTRIBUTE_TYPE, softmax_op,
                     in, 1, outs, 1, &axis, 1, NULL, out, G);
    axis.value.type = CT_ATTR_NONE;
    expect_run_fails("softmax axis given None (not nullable)", CT_ERROR_ATTRIBUTE_TYPE, softmax_op,
                     in, 1, outs, 1, &axis, 1, NULL, out, G);
    ct_attr keepdims;
    memset(&keepdims, 0, sizeof keepdims);
    keepdims.name = "keepdims";
    keepdims.value.type = CT_ATTR_BOOL;
    keepdims.value.value.b = 2;
    expect_run_fails("sum keepdims bool = 2", CT_ERROR_ATTRIBUTE_TYPE, sum_op, in, 1, outs, 1,
                     &keepdims, 1, NULL, out, G);

    /* Missing required attributes: the caller left out a value the op cannot default. */
    expect_run_fails("astype without its required 'dtype'", CT_ERROR_INVALID_ARGUMENT, astype_op,
                     in, 1, outs, 1, NULL, 0, NULL, out, G);
    check(strstr(ct_last_error(), "dtype") != NULL, "the message names the missing 'dtype'");
    expect_infer_fails("infer of permute_dims without its required 'axes'",
                       CT_ERROR_INVALID_ARGUMENT, permute_op, in, 1, NULL, 0);

    ct_attr twice[2];
    memset(twice, 0, sizeof twice);
    twice[0].name = twice[1].name = "axis";
    twice[0].value.type = twice[1].value.type = CT_ATTR_INT;
    expect_run_fails("attribute given twice", CT_ERROR_INVALID_ARGUMENT, softmax_op, in, 1, outs, 1,
                     twice, 2, NULL, out, G);
    twice[0].name = NULL;
    expect_run_fails("attribute with a NULL name", CT_ERROR_NULL_POINTER, softmax_op, in, 1, outs,
                     1, twice, 1, NULL, out, G);
    expect_run_fails("NULL attribute array with 1 attribute", CT_ERROR_NULL_POINTER, softmax_op, in,
                     1, outs, 1, NULL, 1, NULL, out, G);
    expect_run_fails("negative attribute count", CT_ERROR_INVALID_ARGUMENT, softmax_op, in, 1, outs,
                     1, NULL, -1, NULL, out, G);
  }

  /* Shape mismatch */
  {
    float a[6] = {0}, b[2] = {0};
    int64_t sa[2] = {2, 3}, sb[1] = {2};
    ct_tensor ta = view(a, F32, 2, sa, NULL), tb = view(b, F32, 1, sb, NULL);
    const ct_tensor* ab[2] = {&ta, &tb};
    int64_t so[2] = {2, 3};
    ct_tensor to = view(out, F32, 2, so, NULL);
    const ct_tensor* o[1] = {&to};
    expect_infer_fails("infer add (2, 3) + (2,): not broadcastable", CT_ERROR_SHAPE_MISMATCH,
                       add_op, ab, 2, NULL, 0);
    expect_run_fails("run add (2, 3) + (2,): not broadcastable", CT_ERROR_SHAPE_MISMATCH, add_op,
                     ab, 2, o, 1, NULL, 0, NULL, out, G);

    int64_t seven[1] = {7};
    ct_tensor t7 = view(out, F32, 1, seven, NULL);
    const ct_tensor* o7[1] = {&t7};
    expect_run_fails("exp out shape (7,) for input (8,)", CT_ERROR_SHAPE_MISMATCH, exp_op, in, 1,
                     o7, 1, NULL, 0, NULL, out, G);
    int64_t two_four[2] = {2, 4};
    ct_tensor t24 = view(out, F32, 2, two_four, NULL);
    const ct_tensor* o24[1] = {&t24};
    expect_run_fails("exp out shape (2, 4) for input (8,)", CT_ERROR_SHAPE_MISMATCH, exp_op, in, 1,
                     o24, 1, NULL, 0, NULL, out, G);
  }

  /* Dtypes */
  {
    double out64[8];
    memset(out64, SENTINEL_BYTE, sizeof out64);
    ct_tensor t64 = view(out64, F64, 1, shape, NULL);
    const ct_tensor* o64[1] = {&t64};
    expect_run_fails("exp float32 -> float64 out (wrong out dtype)", CT_ERROR_UNSUPPORTED_DTYPE,
                     exp_op, in, 1, o64, 1, NULL, 0, NULL, out64, sizeof out64);

    int32_t xi[8] = {0}, oi[8];
    memset(oi, SENTINEL_BYTE, sizeof oi);
    ct_tensor txi = view(xi, I32, 1, shape, NULL), toi = view(oi, I32, 1, shape, NULL);
    const ct_tensor* ini[1] = {&txi};
    const ct_tensor* outi[1] = {&toi};
    expect_run_fails("exp on int32 (no integer kernel at C level)", CT_ERROR_UNSUPPORTED_DTYPE,
                     exp_op, ini, 1, outi, 1, NULL, 0, NULL, oi, sizeof oi);

    ct_tensor tc = tx;
    tc.dtype.code = CT_DTYPE_COMPLEX;
    tc.dtype.bits = 32;
    const ct_tensor* inc[1] = {&tc};
    expect_run_fails("complex32 input (a dtype ctensor lacks)", CT_ERROR_UNSUPPORTED_DTYPE, exp_op,
                     inc, 1, outs, 1, NULL, 0, NULL, out, G);
    ct_tensor tl = tx;
    tl.dtype.lanes = 2;
    const ct_tensor* inl[1] = {&tl};
    expect_run_fails("float32 with 2 lanes", CT_ERROR_UNSUPPORTED_DTYPE, exp_op, inl, 1, outs, 1,
                     NULL, 0, NULL, out, G);
    /* The C level does not promote: add wants one dtype (the Python layer promotes). */
    double x64[8] = {0};
    ct_tensor tx64 = view(x64, F64, 1, shape, NULL);
    const ct_tensor* mixed[2] = {&tx, &tx64};
    expect_run_fails("add float32 + float64 (no promotion at C level)", CT_ERROR_UNSUPPORTED_DTYPE,
                     add_op, mixed, 2, outs, 1, NULL, 0, NULL, out, G);

    ct_tensor tk = tx;
    tk.dtype.code = 42;
    const ct_tensor* ink[1] = {&tk};
    expect_run_fails("dtype code 42", CT_ERROR_UNSUPPORTED_DTYPE, exp_op, ink, 1, outs, 1, NULL, 0,
                     NULL, out, G);
  }

  /* Devices */
  {
    static char fake_cuda_memory; /* never dereferenced: validation fails first */
    ct_tensor cuda_x = on_device(tx, CT_DEVICE_CUDA, 0);
    cuda_x.data = &fake_cuda_memory;
    ct_tensor cuda_out = on_device(tout, CT_DEVICE_CUDA, 0);
    cuda_out.data = &fake_cuda_memory;
    const ct_tensor* mixed[2] = {&tx, &cuda_x};
    expect_run_fails("add of a CPU and a CUDA tensor", CT_ERROR_DEVICE_MISMATCH, add_op, mixed, 2,
                     outs, 1, NULL, 0, NULL, out, G);
    const ct_tensor* cuda_o[1] = {&cuda_out};
    expect_run_fails("exp from CPU into a CUDA output", CT_ERROR_DEVICE_MISMATCH, exp_op, in, 1,
                     cuda_o, 1, NULL, 0, NULL, x, sizeof x);
    ct_tensor cuda1_x = on_device(cuda_x, CT_DEVICE_CUDA, 1);
    const ct_tensor* two_gpus[2] = {&cuda_x, &cuda1_x};
    expect_run_fails("add of CUDA:0 and CUDA:1 tensors", CT_ERROR_DEVICE_MISMATCH, add_op, two_gpus,
                     2, cuda_o, 1, NULL, 0, NULL, NULL, 0);
    const ct_tensor* cuda_in[1] = {&cuda_x};
    expect_run_fails("exp on CUDA with no CUDA backend loaded", CT_ERROR_UNSUPPORTED_DEVICE, exp_op,
                     cuda_in, 1, cuda_o, 1, NULL, 0, NULL, NULL, 0);
  }

  /* Arity */
  {
    const ct_tensor* two_in[2] = {&tx, &tx};
    const ct_tensor* two_out[2] = {&tout, &tout};
    expect_run_fails("exp with 2 inputs", CT_ERROR_WRONG_ARITY, exp_op, two_in, 2, outs, 1, NULL, 0,
                     NULL, out, G);
    expect_run_fails("exp with 0 inputs", CT_ERROR_WRONG_ARITY, exp_op, in, 0, outs, 1, NULL, 0,
                     NULL, out, G);
    expect_run_fails("exp with -1 inputs", CT_ERROR_WRONG_ARITY, exp_op, in, -1, outs, 1, NULL, 0,
                     NULL, out, G);
    expect_run_fails("exp with 2 outputs", CT_ERROR_WRONG_ARITY, exp_op, in, 1, two_out, 2, NULL, 0,
                     NULL, out, G);
    expect_run_fails("exp with 0 outputs", CT_ERROR_WRONG_ARITY, exp_op, in, 1, NULL, 0, NULL, 0,
                     NULL, out, G);
    expect_run_fails("add with 1 input", CT_ERROR_WRONG_ARITY, add_op, in, 1, outs, 1, NULL, 0,
                     NULL, out, G);
  }

  /* Context versioning */
  {
    ct_context context;
    memset(&context, 0, sizeof context);
    /* The smallest context is ABI 1.0's without `backend` (which reads as NULL when absent). */
    context.struct_size = offsetof(ct_context, allocator) + sizeof(const ct_allocator*) - 1;
    expect_run_fails("ct_context.struct_size too small", CT_ERROR_ABI_MISMATCH, exp_op, in, 1, outs,
                     1, NULL, 0, &context, out, G);
    context.struct_size = 0;
    expect_run_fails("ct_context.struct_size 0", CT_ERROR_ABI_MISMATCH, exp_op, in, 1, outs, 1,
                     NULL, 0, &context, out, G);
  }
}

/* ---------------------------------------------------------------------------------------------
 * 9. Aliasing
 * ------------------------------------------------------------------------------------------- */

static void test_aliasing(void) {
  const ct_op* exp_op = find_op("exp");
  const ct_op* astype_op = find_op("astype");
  if (!exp_op || !astype_op) return;
  float buffer[16];
  for (int i = 0; i < 16; ++i) buffer[i] = (float)i / 8.0f;
  int64_t shape[1] = {8};
  ct_tensor tin = view(buffer, F32, 1, shape, NULL);
  const ct_tensor* in[1] = {&tin};

  int64_t zero[1] = {0};
  ct_tensor self0 = view(buffer + 8, F32, 1, shape, zero);
  const ct_tensor* o0[1] = {&self0};
  expect_run_fails("output with a zero stride overlaps itself", CT_ERROR_ALIASING, exp_op, in, 1,
                   o0, 1, NULL, 0, NULL, buffer, sizeof buffer);

  float wide[8];
  memset(wide, SENTINEL_BYTE, sizeof wide);
  float rows[8] = {0};
  int64_t s24[2] = {2, 4}, overlapping[2] = {1, 1};
  ct_tensor trows = view(rows, F32, 2, s24, NULL);
  ct_tensor tself = view(wide, F32, 2, s24, overlapping);
  const ct_tensor* in24[1] = {&trows};
  const ct_tensor* oself[1] = {&tself};
  expect_run_fails("output (2, 4) with strides (1, 1) overlaps itself", CT_ERROR_ALIASING, exp_op,
                   in24, 1, oself, 1, NULL, 0, NULL, wide, sizeof wide);

  ct_tensor shifted = view(buffer + 1, F32, 1, shape, NULL);
  const ct_tensor* os[1] = {&shifted};
  expect_run_fails("output shifted one element into the input", CT_ERROR_ALIASING, exp_op, in, 1,
                   os, 1, NULL, 0, NULL, buffer, sizeof buffer);

  int64_t minus[1] = {-1};
  ct_tensor reversed = view(buffer, F32, 1, shape, minus);
  reversed.byte_offset = 7 * sizeof(float);
  const ct_tensor* orev[1] = {&reversed};
  expect_run_fails("output is the input reversed (same memory, different view)", CT_ERROR_ALIASING,
                   exp_op, in, 1, orev, 1, NULL, 0, NULL, buffer, sizeof buffer);

  /* Adjacent, non-overlapping: fine. */
  ct_tensor next = view(buffer + 8, F32, 1, shape, NULL);
  const ct_tensor* onext[1] = {&next};
  expect_status(ct_op_run(exp_op, in, 1, onext, 1, NULL, 0, NULL), CT_OK,
                "output right after the input (adjacent, no overlap)");

  /* Binary INPLACE op: out may be exactly x1 while x2 broadcasts; a broadcast (zero-stride)
   * view of x2 as out overlaps itself. */
  const ct_op* add_op = find_op("add");
  if (add_op) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
    int64_t s23[2] = {2, 3}, s3[1] = {3}, bcast[2] = {0, 1};
    ct_tensor ta = view(a, F32, 2, s23, NULL), tb = view(b, F32, 1, s3, NULL);
    ct_tensor tb_wide = view(b, F32, 2, s23, bcast);
    const ct_tensor* ab[2] = {&ta, &tb};
    const ct_tensor* into_a[1] = {&ta};
    const ct_tensor* into_b[1] = {&tb_wide};
    if (expect_status(ct_op_run(add_op, ab, 2, into_a, 1, NULL, 0, NULL), CT_OK,
                      "add in place into x1 while x2 broadcasts")) {
      check(a[0] == 11 && a[1] == 22 && a[2] == 33 && a[3] == 14 && a[4] == 25 && a[5] == 36,
            "in-place broadcast add values");
    }
    expect_run_fails("add into a zero-stride view of x2", CT_ERROR_ALIASING, add_op, ab, 2, into_b,
                     1, NULL, 0, NULL, b, sizeof b);
    ct_tensor shifted_a = view(a + 1, F32, 1, s3, NULL);
    ct_tensor ta_row = view(a, F32, 1, s3, NULL);
    const ct_tensor* row_b[2] = {&ta_row, &tb};
    const ct_tensor* into_shifted[1] = {&shifted_a};
    expect_run_fails("add output shifted one element into x1", CT_ERROR_ALIASING, add_op, row_b, 2,
                     into_shifted, 1, NULL, 0, NULL, a, sizeof a);
  }

  /* Exactly the same view on a non-INPLACE op (astype float32 -> float32) is refused. */
  ct_attr dtype;
  memset(&dtype, 0, sizeof dtype);
  dtype.name = "dtype";
  dtype.value.type = CT_ATTR_DTYPE;
  dtype.value.value.dtype = F32;
  const ct_tensor* same[1] = {&tin};
  expect_run_fails("astype in place (op without CT_OP_FLAG_INPLACE)", CT_ERROR_ALIASING, astype_op,
                   in, 1, same, 1, &dtype, 1, NULL, buffer, sizeof buffer);
}

/* ---------------------------------------------------------------------------------------------
 * 10. Workspace (conv2d)
 * ------------------------------------------------------------------------------------------- */

static void test_workspace(void) {
  const ct_op* conv = find_op("conv2d");
  if (!conv) return;
  /* input (1, 1, 4, 4) = 0..15, weight (1, 1, 3, 3) all ones: out (1, 1, 2, 2) = sums of the 3x3
   * windows: 45, 54, 81, 90. */
  float input[16], weight[9], out[4];
  for (int i = 0; i < 16; ++i) input[i] = (float)i;
  for (int i = 0; i < 9; ++i) weight[i] = 1.0f;
  memset(out, SENTINEL_BYTE, sizeof out);
  int64_t si[4] = {1, 1, 4, 4}, sw[4] = {1, 1, 3, 3}, so[4] = {1, 1, 2, 2};
  ct_tensor ti = view(input, F32, 4, si, NULL), tw = view(weight, F32, 4, sw, NULL);
  ct_tensor to = view(out, F32, 4, so, NULL);
  const ct_tensor* in[2] = {&ti, &tw};
  const ct_tensor* outs[1] = {&to};

  uint64_t bytes = 0, alignment = 0, bytes_no_out = 0, alignment_no_out = 0;
  if (!expect_status(ct_op_workspace(conv, in, 2, outs, 1, NULL, 0, &bytes, &alignment), CT_OK,
                     "ct_op_workspace(conv2d 3x3)"))
    return;
  check(bytes > 0 && alignment > 1 && (alignment & (alignment - 1)) == 0,
        "conv2d asks for workspace: %llu bytes aligned to %llu (a power of two > 1)",
        (unsigned long long)bytes, (unsigned long long)alignment);
  expect_status(ct_op_workspace(conv, in, 2, NULL, 0, NULL, 0, &bytes_no_out, &alignment_no_out),
                CT_OK, "ct_op_workspace(conv2d) without outputs");
  check(bytes_no_out == bytes && alignment_no_out == alignment,
        "the workspace query without outputs gives the same answer");
  if (bytes == 0 || alignment < 2) return;

  const uint64_t rounded = (bytes + 1 + alignment - 1) / alignment * alignment + alignment;
  unsigned char* scratch = aligned_alloc((size_t)alignment, (size_t)rounded);
  if (!scratch) return;
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;

  expect_run_fails("conv2d without workspace", CT_ERROR_WORKSPACE_TOO_SMALL, conv, in, 2, outs, 1,
                   NULL, 0, NULL, out, sizeof out);
  expect_run_fails("conv2d with a NULL workspace in the context", CT_ERROR_WORKSPACE_TOO_SMALL,
                   conv, in, 2, outs, 1, NULL, 0, &context, out, sizeof out);
  context.workspace = scratch;
  context.workspace_size = bytes - 1;
  expect_run_fails("conv2d with workspace one byte too small", CT_ERROR_WORKSPACE_TOO_SMALL, conv,
                   in, 2, outs, 1, NULL, 0, &context, out, sizeof out);
  context.workspace = scratch + 1;
  context.workspace_size = bytes;
  expect_run_fails("conv2d with a misaligned workspace", CT_ERROR_WORKSPACE_TOO_SMALL, conv, in, 2,
                   outs, 1, NULL, 0, &context, out, sizeof out);
  context.workspace = scratch;
  context.workspace_size = bytes;
  if (expect_status(ct_op_run(conv, in, 2, outs, 1, NULL, 0, &context), CT_OK,
                    "conv2d with exactly the workspace asked for")) {
    check(out[0] == 45 && out[1] == 54 && out[2] == 81 && out[3] == 90,
          "conv2d 3x3 box sums (45, 54, 81, 90), got (%g, %g, %g, %g)", out[0], out[1], out[2],
          out[3]);
  }
  /* The optional bias may also be an explicit NULL entry. */
  const ct_tensor* in_null_bias[3] = {&ti, &tw, NULL};
  memset(out, SENTINEL_BYTE, sizeof out);
  if (expect_status(ct_op_run(conv, in_null_bias, 3, outs, 1, NULL, 0, &context), CT_OK,
                    "conv2d with the optional bias passed as NULL")) {
    check(out[0] == 45 && out[1] == 54 && out[2] == 81 && out[3] == 90,
          "conv2d without bias values");
  }
  free(scratch);
}

/* ---------------------------------------------------------------------------------------------
 * 11. Dynamic ops and the allocator (nonzero)
 * ------------------------------------------------------------------------------------------- */

typedef struct allocation_log {
  int calls;
  int seen[CT_MAX_NDIM];
  int fail_with; /* status to return instead of allocating, 0 = allocate */
  int bad;       /* set when the library calls us with unexpected arguments */
  void* data[CT_MAX_NDIM];
  ct_tensor_info info[CT_MAX_NDIM];
} allocation_log;

static int logging_allocate(void* user_data, int32_t output_index, const ct_tensor_info* info,
                            int32_t device_type, int32_t device_id, void** data) {
  allocation_log* log = (allocation_log*)user_data;
  /* Each output exactly once (in any order), on the inputs' device. */
  if (output_index < 0 || output_index >= CT_MAX_NDIM || log->seen[output_index] || !info ||
      !data || device_type != CT_DEVICE_CPU || device_id != 0) {
    log->bad = 1;
    return CT_ERROR_INVALID_ARGUMENT;
  }
  log->seen[output_index] = 1;
  ++log->calls;
  if (log->fail_with) return log->fail_with;
  int64_t n = 1;
  for (int32_t k = 0; k < info->ndim; ++k) n *= info->shape[k];
  log->info[output_index] = *info;
  log->data[output_index] = malloc((size_t)(n > 0 ? n : 1) * (size_t)(info->dtype.bits / 8));
  *data = log->data[output_index];
  return log->data[output_index] ? CT_OK : CT_ERROR_OUT_OF_MEMORY;
}

/* Breaks the contract: reports success without providing memory. */
static int null_allocate(void* user_data, int32_t output_index, const ct_tensor_info* info,
                         int32_t device_type, int32_t device_id, void** data) {
  (void)user_data, (void)output_index, (void)info, (void)device_type, (void)device_id;
  *data = NULL;
  return CT_OK;
}

static void free_log(allocation_log* log) {
  for (int i = 0; i < CT_MAX_NDIM; ++i) free(log->data[i]);
}

static void test_dynamic(void) {
  const ct_op* nonzero = find_op("nonzero");
  if (!nonzero) return;
  /* x (3, 4): non-zero at (0, 1), (1, 0), (1, 3), (2, 2). */
  float x[12] = {0, 5, 0, 0, -1, 0, 0, 2, 0, 0, 0.5f, 0};
  int64_t shape[2] = {3, 4};
  ct_tensor tx = view(x, F32, 2, shape, NULL);
  const ct_tensor* in[1] = {&tx};

  ct_tensor_info info[CT_MAX_NDIM];
  int32_t n = 0;
  if (expect_status(ct_op_infer(nonzero, in, 1, NULL, 0, info, CT_MAX_NDIM, &n), CT_OK,
                    "ct_op_infer(nonzero, (3, 4))")) {
    check(n == 2 && info[0].ndim == 1 && info[0].shape[0] == -1 && same_dtype(info[0].dtype, I64) &&
              info[1].shape[0] == -1,
          "nonzero infers 2 int64 1-D outputs of unknown (-1) extent");
  }

  allocation_log log;
  memset(&log, 0, sizeof log);
  ct_allocator allocator;
  memset(&allocator, 0, sizeof allocator);
  allocator.struct_size = sizeof allocator;
  allocator.user_data = &log;
  allocator.allocate = logging_allocate;
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;

  expect_run_fails("nonzero with a NULL context (no allocator)", CT_ERROR_NULL_POINTER, nonzero, in,
                   1, NULL, 0, NULL, 0, NULL, x, sizeof x);
  expect_run_fails("nonzero with a context but no allocator", CT_ERROR_NULL_POINTER, nonzero, in, 1,
                   NULL, 0, NULL, 0, &context, x, sizeof x);
  ct_allocator no_fn = allocator;
  no_fn.allocate = NULL;
  context.allocator = &no_fn;
  expect_run_fails("nonzero with an allocator without a function", CT_ERROR_NULL_POINTER, nonzero,
                   in, 1, NULL, 0, NULL, 0, &context, x, sizeof x);
  ct_allocator old = allocator;
  old.struct_size = sizeof old - 1;
  context.allocator = &old;
  expect_run_fails("nonzero with ct_allocator.struct_size too small", CT_ERROR_ABI_MISMATCH,
                   nonzero, in, 1, NULL, 0, NULL, 0, &context, x, sizeof x);
  check(log.calls == 0, "the allocator was not called by failing argument checks (%d calls)",
        log.calls);

  context.allocator = &allocator;
  /* A dynamic kernel may also ask for workspace: give it what it asks for. */
  uint64_t ws_bytes = 0, ws_alignment = 1;
  void* workspace = NULL;
  if (expect_status(ct_op_workspace(nonzero, in, 1, NULL, 0, NULL, 0, &ws_bytes, &ws_alignment),
                    CT_OK, "ct_op_workspace(nonzero) without outputs") &&
      ws_bytes > 0) {
    if (ws_alignment < sizeof(void*)) ws_alignment = sizeof(void*);
    /* Enough for the largest input used below (12 elements). */
    workspace = aligned_alloc((size_t)ws_alignment, (size_t)((ws_bytes + ws_alignment - 1) /
                                                             ws_alignment * ws_alignment));
    context.workspace = workspace;
    context.workspace_size = ws_bytes;
  }
  int64_t out_shape[1] = {4};
  int64_t out_data[4];
  ct_tensor tout = view(out_data, I64, 1, out_shape, NULL);
  const ct_tensor* outs[1] = {&tout};
  expect_run_fails("nonzero given output views", CT_ERROR_WRONG_ARITY, nonzero, in, 1, outs, 1,
                   NULL, 0, &context, NULL, 0);

  /* The allocator's failure comes back as the run's status. */
  log.fail_with = CT_ERROR_OUT_OF_MEMORY;
  expect_status(ct_op_run(nonzero, in, 1, NULL, 0, NULL, 0, &context), CT_ERROR_OUT_OF_MEMORY,
                "nonzero when the allocator fails with OUT_OF_MEMORY");
  check(log.calls == 1 && !log.bad, "the run stops after the first failing allocation (%d calls)",
        log.calls);
  free_log(&log);
  memset(&log, 0, sizeof log);

  if (expect_status(ct_op_run(nonzero, in, 1, NULL, 0, NULL, 0, &context), CT_OK,
                    "nonzero with an allocator")) {
    check(log.calls == 2 && log.seen[0] && log.seen[1] && !log.bad,
          "allocator called exactly once per output (%d calls)", log.calls);
    int shapes_ok = log.calls == 2;
    for (int i = 0; shapes_ok && i < 2; ++i) {
      shapes_ok =
          log.info[i].ndim == 1 && log.info[i].shape[0] == 4 && same_dtype(log.info[i].dtype, I64);
    }
    check(shapes_ok, "each output is int64 of shape (4,)");
    if (shapes_ok) {
      const int64_t* rows = log.data[0];
      const int64_t* cols = log.data[1];
      check(rows[0] == 0 && rows[1] == 1 && rows[2] == 1 && rows[3] == 2 && cols[0] == 1 &&
                cols[1] == 0 && cols[2] == 3 && cols[3] == 2,
            "nonzero indices rows (0, 1, 1, 2), cols (1, 0, 3, 2)");
    }
  }
  free_log(&log);
  memset(&log, 0, sizeof log);

  /* An allocator that "succeeds" without memory for a non-empty output: an error, not a
   * crash. (Which status is the library's choice; it must be a failure with a message.) */
  log.fail_with = 0;
  {
    ct_allocator liar = allocator;
    allocation_log liar_log;
    memset(&liar_log, 0, sizeof liar_log);
    liar.user_data = &liar_log;
    liar.allocate = null_allocate;
    context.allocator = &liar;
    const int status = ct_op_run(nonzero, in, 1, NULL, 0, NULL, 0, &context);
    check(status < 0 && ct_last_error()[0] != '\0',
          "nonzero when the allocator returns CT_OK but NULL data -> an error (got %s: \"%s\")",
          ct_status_name(status), ct_last_error());
    context.allocator = &allocator;
  }

  /* All zeros: outputs of extent 0 are still allocated (once each). */
  float zeros[5] = {0};
  int64_t five[1] = {5};
  ct_tensor tz = view(zeros, F32, 1, five, NULL);
  const ct_tensor* inz[1] = {&tz};
  if (expect_status(ct_op_run(nonzero, inz, 1, NULL, 0, NULL, 0, &context), CT_OK,
                    "nonzero of all zeros")) {
    check(log.calls == 1 && log.info[0].ndim == 1 && log.info[0].shape[0] == 0,
          "one allocation of extent 0");
  }
  free_log(&log);
  memset(&log, 0, sizeof log);

  float scalar = 1.0f;
  ct_tensor t0 = view(&scalar, F32, 0, NULL, NULL);
  const ct_tensor* in0[1] = {&t0};
  expect_run_fails("nonzero of a 0-d array", CT_ERROR_INVALID_ARGUMENT, nonzero, in0, 1, NULL, 0,
                   NULL, 0, &context, NULL, 0);
  check(log.calls == 0, "no allocation for a refused call");
  free(workspace);
}

/* ---------------------------------------------------------------------------------------------
 * 12. Threads: per-thread errors, concurrent runs
 * ------------------------------------------------------------------------------------------- */

static pthread_barrier_t g_barrier;

typedef struct error_thread {
  int which;
  int status;
  char message[256];
} error_thread;

static void* error_thread_main(void* arg) {
  error_thread* t = (error_thread*)arg;
  if (t->which == 0) {
    const ct_op* op = NULL;
    t->status = ct_op_find("thread_a_missing_op", &op);
  } else {
    const ct_op* exp_op = NULL;
    float x[2] = {0}, y[2] = {0};
    int64_t negative[1] = {-2}, two[1] = {2};
    ct_tensor tx = view(x, F32, 1, negative, NULL), ty = view(y, F32, 1, two, NULL);
    const ct_tensor* in[1] = {&tx};
    const ct_tensor* out[1] = {&ty};
    ct_op_find("exp", &exp_op);
    t->status = ct_op_run(exp_op, in, 1, out, 1, NULL, 0, NULL);
  }
  /* Both threads have failed before either reads its message. */
  pthread_barrier_wait(&g_barrier);
  snprintf(t->message, sizeof t->message, "%s", ct_last_error());
  pthread_barrier_wait(&g_barrier);
  return NULL;
}

static void test_thread_local_errors(void) {
  const ct_op* op = NULL;
  ct_op_find("main_thread_missing_op", &op);
  error_thread threads[2];
  pthread_t ids[2];
  memset(threads, 0, sizeof threads);
  pthread_barrier_init(&g_barrier, NULL, 2);
  for (int i = 0; i < 2; ++i) {
    threads[i].which = i;
    pthread_create(&ids[i], NULL, error_thread_main, &threads[i]);
  }
  for (int i = 0; i < 2; ++i) pthread_join(ids[i], NULL);
  pthread_barrier_destroy(&g_barrier);
  check(threads[0].status == CT_ERROR_UNKNOWN_OP &&
            strstr(threads[0].message, "thread_a_missing_op") &&
            !strstr(threads[0].message, "negative"),
        "thread A sees its own UNKNOWN_OP message (\"%s\")", threads[0].message);
  check(threads[1].status == CT_ERROR_INVALID_SHAPE && strstr(threads[1].message, "-2") &&
            !strstr(threads[1].message, "thread_a"),
        "thread B sees its own INVALID_SHAPE message (\"%s\")", threads[1].message);
  check(strstr(ct_last_error(), "main_thread_missing_op") != NULL,
        "the main thread's message is untouched by other threads (\"%s\")", ct_last_error());
}

#define CONCURRENT_THREADS 8
#define CONCURRENT_N 1000
#define CONCURRENT_ITERATIONS 10

typedef struct concurrent_job {
  int index;
  const ct_op* op;
  ct_dtype dtype;
  void* input;
  void* expected; /* serial result */
  int failures;
} concurrent_job;

static void* concurrent_main(void* arg) {
  concurrent_job* job = (concurrent_job*)arg;
  const size_t bytes = (size_t)CONCURRENT_N * 4;
  void* out = malloc(bytes);
  int64_t shape[1] = {CONCURRENT_N};
  ct_tensor tin = view(job->input, job->dtype, 1, shape, NULL);
  ct_tensor tout = view(out, job->dtype, 1, shape, NULL);
  const ct_tensor* in[1] = {&tin};
  const ct_tensor* outs[1] = {&tout};
  pthread_barrier_wait(&g_barrier);
  for (int it = 0; out && it < CONCURRENT_ITERATIONS; ++it) {
    memset(out, 0, bytes);
    if (ct_op_run(job->op, in, 1, outs, 1, NULL, 0, NULL) != CT_OK ||
        memcmp(out, job->expected, bytes) != 0)
      ++job->failures;
  }
  if (!out) job->failures = -1;
  free(out);
  return NULL;
}

static void test_concurrent_runs(void) {
  const ct_op* exp_op = find_op("exp");
  const ct_op* abs_op = find_op("abs");
  if (!exp_op || !abs_op) return;
  concurrent_job jobs[CONCURRENT_THREADS];
  pthread_t ids[CONCURRENT_THREADS];
  int setup_ok = 1;
  int64_t shape[1] = {CONCURRENT_N};
  for (int t = 0; t < CONCURRENT_THREADS; ++t) {
    concurrent_job* job = &jobs[t];
    memset(job, 0, sizeof *job);
    job->index = t;
    job->op = t % 2 ? abs_op : exp_op;
    job->dtype = t % 4 == 3 ? I32 : F32; /* exp float32, abs float32, abs int32 */
    job->input = malloc((size_t)CONCURRENT_N * 4);
    job->expected = malloc((size_t)CONCURRENT_N * 4);
    if (!job->input || !job->expected) {
      setup_ok = 0;
      continue;
    }
    for (int i = 0; i < CONCURRENT_N; ++i) {
      const int v = (i * 37 + t * 101) % 401 - 200;
      if (job->dtype.code == CT_DTYPE_INT)
        ((int32_t*)job->input)[i] = v * 1000;
      else
        ((float*)job->input)[i] = (float)v / 40.0f;
    }
    /* The serial result, from the library itself. */
    ct_tensor tin = view(job->input, job->dtype, 1, shape, NULL);
    ct_tensor tout = view(job->expected, job->dtype, 1, shape, NULL);
    const ct_tensor* in[1] = {&tin};
    const ct_tensor* outs[1] = {&tout};
    if (ct_op_run(job->op, in, 1, outs, 1, NULL, 0, NULL) != CT_OK) setup_ok = 0;
  }
  check(setup_ok, "serial reference results for %d jobs", CONCURRENT_THREADS);
  /* Spot-check the serial results against the C library. */
  check(close_f32(((float*)jobs[0].expected)[3], exp((double)((float*)jobs[0].input)[3])) &&
            ((float*)jobs[1].expected)[5] == fabsf(((float*)jobs[1].input)[5]) &&
            ((int32_t*)jobs[3].expected)[7] == abs(((int32_t*)jobs[3].input)[7]),
        "serial exp/abs results are right");

  pthread_barrier_init(&g_barrier, NULL, CONCURRENT_THREADS);
  for (int t = 0; t < CONCURRENT_THREADS; ++t)
    pthread_create(&ids[t], NULL, concurrent_main, &jobs[t]);
  int failures = 0;
  for (int t = 0; t < CONCURRENT_THREADS; ++t) {
    pthread_join(ids[t], NULL);
    failures += jobs[t].failures != 0;
  }
  pthread_barrier_destroy(&g_barrier);
  check(failures == 0,
        "%d threads x %d concurrent exp/abs runs equal the serial results (%d threads differ)",
        CONCURRENT_THREADS, CONCURRENT_ITERATIONS, failures);
  for (int t = 0; t < CONCURRENT_THREADS; ++t) {
    free(jobs[t].input);
    free(jobs[t].expected);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_versions_and_layout();
  test_status_names();
  test_registry();
  test_schemas();
  test_kernel_info();
  test_schema_json();
  test_dtype_names();
  test_runs();
  test_argument_errors();
  test_aliasing();
  test_workspace();
  test_dynamic();
  test_thread_local_errors();
  test_concurrent_runs();
  return tap_finish();
}
