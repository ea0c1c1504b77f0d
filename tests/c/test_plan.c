/*
 * test_plan.c - the plan API (ct_plan_create / set_data / run / destroy), from a plain C program.
 *
 *   cc -std=c11 test_plan.c $(pkg-config --cflags --libs ctensor) -o test_plan
 *   ./test_plan           # TAP-like: "ok N - ..." / "not ok N - ...", exit 1 on any failure
 *
 * Covers: a plan computes what ct_op_run computes and replays on changed data; it owns copies of
 * shapes, strides and attributes (the caller's arrays may change after create); create fails
 * exactly as ct_op_run does, with *plan NULL and outputs untouched; set_data re-checks aliasing
 * and leaves the plan as it was on error; workspace, empty outputs, dynamic ops, NULL handling.
 *
 * Built and run by tests/test_c_api.py (also under valgrind and sanitizers).
 */
#include <ctensor.h>
#include <ctensor_backend.h>

#include "test_support.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ct_dtype F32 = {CT_DTYPE_FLOAT, 32, 1};
static const ct_dtype BOOL8 = {CT_DTYPE_BOOL, 8, 1};

static int all_equal(const float* got, const float* want, int n) {
  for (int i = 0; i < n; ++i)
    if (got[i] != want[i]) return 0;
  return 1;
}

/* add: same results as ct_op_run, replay after the inputs change, copies of shapes and strides. */
static void test_add_replays(void) {
  const ct_op* add = find_op("add");
  if (!add) return;
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, out[6], expected[6];
  int64_t sa[2] = {2, 3}, sb[1] = {3}, so[2] = {2, 3}, strides[2] = {3, 1};
  ct_tensor ta = view(a, F32, 2, sa, strides), tb = view(b, F32, 1, sb, NULL);
  ct_tensor to = view(out, F32, 2, so, NULL);
  const ct_tensor* in[2] = {&ta, &tb};
  const ct_tensor* outs[1] = {&to};
  ct_plan* plan = (ct_plan*)&plan; /* must be overwritten */
  if (!expect_status(ct_plan_create(add, in, 2, outs, 1, NULL, 0, NULL, &plan), CT_OK,
                     "ct_plan_create(add, (2,3) + (3,))"))
    return;
  check(plan != NULL, "the plan is not NULL");
  /* The caller's arrays may change after create: the plan holds its own copies. */
  sa[0] = 99, sa[1] = -5, strides[0] = 0, so[0] = 0, sb[0] = 1;
  memset(out, 0, sizeof out);
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run(add)");
  for (int i = 0; i < 6; ++i) expected[i] = a[i] + b[i % 3];
  check(all_equal(out, expected, 6), "the plan computes a + b");
  a[0] = 100, b[2] = -1;
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run(add) again");
  for (int i = 0; i < 6; ++i) expected[i] = a[i] + b[i % 3];
  check(all_equal(out, expected, 6), "a replay reads the inputs' current values");

  /* Other buffers of the same layout. */
  float a2[6] = {-1, -2, -3, -4, -5, -6}, out2[6];
  void* data[3] = {a2, NULL, out2};
  expect_status(ct_plan_set_data(plan, data, 3), CT_OK, "ct_plan_set_data(a2, keep b, out2)");
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run after set_data");
  for (int i = 0; i < 6; ++i) expected[i] = a2[i] + b[i % 3];
  check(all_equal(out2, expected, 6), "the plan wrote a2 + b into out2");
  expect_status(ct_plan_set_data(plan, data, 2), CT_ERROR_WRONG_ARITY,
                "ct_plan_set_data with 2 of 3 pointers");
  expect_status(ct_plan_set_data(plan, NULL, 3), CT_ERROR_NULL_POINTER,
                "ct_plan_set_data with NULL data");
  /* In place (add runs in place): out is exactly the view of x1. */
  void* in_place[3] = {a2, NULL, a2};
  expect_status(ct_plan_set_data(plan, in_place, 3), CT_OK, "ct_plan_set_data(out = x1)");
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run in place");
  check(a2[0] == -1 + b[0] && a2[5] == -6 + b[2], "in place: a2 += b");
  /* out overlapping b, not the same view: refused, and the plan keeps its pointers. */
  void* overlap[3] = {a, NULL, b};
  float b_before[3];
  memcpy(b_before, b, sizeof b);
  expect_status(ct_plan_set_data(plan, overlap, 3), CT_ERROR_ALIASING,
                "ct_plan_set_data(out overlapping input b)");
  memset(a2, 0, sizeof a2);
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run after the refused set_data");
  check(memcmp(b, b_before, sizeof b) == 0, "b untouched: the refused pointers were not kept");
  check(a2[0] == b[0] && a2[5] == b[2], "the plan still runs in place on a2");
  ct_plan_destroy(plan);
}

/* create fails as ct_op_run does: same status, *plan NULL, output untouched. */
static void test_create_errors(void) {
  const ct_op* add = find_op("add");
  const ct_op* matmul = find_op("matmul");
  if (!add || !matmul) return;
  float a[4] = {1, 2, 3, 4}, out[4];
  int64_t s2[1] = {2}, s4[1] = {4}, sq[2] = {2, 2};
  ct_tensor ta = view(a, F32, 1, s4, NULL), to = view(out, F32, 1, s4, NULL);
  ct_tensor wrong = view(out, F32, 1, s2, NULL);
  const ct_tensor* in[2] = {&ta, &ta};
  const ct_tensor* outs[1] = {&wrong};
  memset(out, 0xA5, sizeof out);
  unsigned char before[sizeof out];
  memcpy(before, out, sizeof out);
  ct_plan* plan = (ct_plan*)&plan;
  int status = ct_plan_create(add, in, 2, outs, 1, NULL, 0, NULL, &plan);
  const int run_status = ct_op_run(add, in, 2, outs, 1, NULL, 0, NULL);
  expect_status(status, CT_ERROR_SHAPE_MISMATCH, "ct_plan_create(add, output of shape (2,))");
  check(status == run_status, "the same status as ct_op_run");
  check(plan == NULL, "*plan is NULL after a failed create");
  check(memcmp(out, before, sizeof out) == 0, "the output is untouched");

  expect_status(ct_plan_create(add, in, 2, outs, 1, NULL, 0, NULL, NULL), CT_ERROR_NULL_POINTER,
                "ct_plan_create with plan NULL");
  expect_status(ct_plan_create(NULL, in, 2, outs, 1, NULL, 0, NULL, &plan), CT_ERROR_NULL_POINTER,
                "ct_plan_create with op NULL");
  expect_status(ct_plan_create(add, in, 1, outs, 1, NULL, 0, NULL, &plan), CT_ERROR_WRONG_ARITY,
                "ct_plan_create(add) with one input");
  /* matmul into an output overlapping its input: not an in-place op. */
  ct_tensor m = view(a, F32, 2, sq, NULL), mo = view(a, F32, 2, sq, NULL);
  const ct_tensor* mi[2] = {&m, &m};
  const ct_tensor* mouts[1] = {&mo};
  expect_status(ct_plan_create(matmul, mi, 2, mouts, 1, NULL, 0, NULL, &plan), CT_ERROR_ALIASING,
                "ct_plan_create(matmul, out = input)");
  check(plan == NULL, "*plan is NULL");
  /* Attributes are checked as ct_op_run checks them. */
  ct_attr bad = {"no_such_attribute", {CT_ATTR_INT, 0, 0, {.i = 1}}};
  outs[0] = &to;
  expect_status(ct_plan_create(add, in, 2, outs, 1, &bad, 1, NULL, &plan),
                CT_ERROR_UNKNOWN_ATTRIBUTE, "ct_plan_create with an unknown attribute");
  expect_status(ct_plan_run(NULL), CT_ERROR_NULL_POINTER, "ct_plan_run(NULL)");
  expect_status(ct_plan_set_data(NULL, NULL, 0), CT_ERROR_NULL_POINTER,
                "ct_plan_set_data(NULL plan)");
  ct_plan_destroy(NULL);
  check(1, "ct_plan_destroy(NULL) is a no-op");
}

/* Attributes are copied: lists and strings the caller changes after create do not matter. */
static void test_attribute_copies(void) {
  const ct_op* sum = find_op("sum");
  const ct_op* pad = find_op("pad");
  if (!sum || !pad) return;
  float x[6] = {1, 2, 3, 4, 5, 6}, out[3];
  int64_t sx[2] = {2, 3}, so[1] = {3};
  ct_tensor tx = view(x, F32, 2, sx, NULL), to = view(out, F32, 1, so, NULL);
  const ct_tensor* in[1] = {&tx};
  const ct_tensor* outs[1] = {&to};
  int64_t axis[1] = {0};
  ct_attr attrs[1] = {{"axis", {CT_ATTR_INT_LIST, 0, 1, {.ints = axis}}}};
  ct_plan* plan = NULL;
  if (!expect_status(ct_plan_create(sum, in, 1, outs, 1, attrs, 1, NULL, &plan), CT_OK,
                     "ct_plan_create(sum, axis=[0])"))
    return;
  axis[0] = 1; /* would make the output shape (2,) */
  attrs[0].name = "keepdims";
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run(sum) after the caller changed its attrs");
  const float expected[3] = {5, 7, 9};
  check(all_equal(out, expected, 3), "sum over axis 0 as planned: 5 7 9");
  ct_plan_destroy(plan);

  /* pad with mode "reflect" given in a buffer the caller then overwrites. */
  float v[4] = {1, 2, 3, 4}, padded[6];
  int64_t sv[1] = {4}, sp[1] = {6}, widths[2] = {1, 1};
  char mode[16] = "reflect";
  ct_tensor tv = view(v, F32, 1, sv, NULL), tp = view(padded, F32, 1, sp, NULL);
  const ct_tensor* pin[1] = {&tv};
  const ct_tensor* pout[1] = {&tp};
  ct_attr pattrs[2] = {{"pad_width", {CT_ATTR_INT_LIST, 0, 2, {.ints = widths}}},
                       {"mode", {CT_ATTR_STRING, 0, 0, {.s = mode}}}};
  if (!expect_status(ct_plan_create(pad, pin, 1, pout, 1, pattrs, 2, NULL, &plan), CT_OK,
                     "ct_plan_create(pad, reflect)"))
    return;
  strcpy(mode, "edge");
  widths[0] = 7;
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run(pad)");
  const float reflect[6] = {2, 1, 2, 3, 4, 3};
  check(all_equal(padded, reflect, 6), "pad used the mode and widths it was planned with");
  ct_plan_destroy(plan);
}

/* Workspace: checked at create, used by every run. Empty outputs: run does nothing. */
static void test_workspace_and_empty(void) {
  const ct_op* matmul = find_op("matmul");
  const ct_op* add = find_op("add");
  if (!matmul || !add) return;
  enum { N = 24 };
  static float a[N * N], b[N * N], out[N * N];
  for (int i = 0; i < N * N; ++i) a[i] = (float)(i % 7) - 3.0f, b[i] = (float)(i % 5) - 2.0f;
  int64_t shape[2] = {N, N};
  ct_tensor ta = view(a, F32, 2, shape, NULL), tb = view(b, F32, 2, shape, NULL);
  ct_tensor to = view(out, F32, 2, shape, NULL);
  const ct_tensor* in[2] = {&ta, &tb};
  const ct_tensor* outs[1] = {&to};
  uint64_t bytes = 0, alignment = 0;
  expect_status(ct_op_workspace(matmul, in, 2, outs, 1, NULL, 0, &bytes, &alignment), CT_OK,
                "ct_op_workspace(matmul 24x24)");
  ct_plan* plan = NULL;
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  unsigned char* scratch = NULL;
  if (bytes > 0) {
    expect_status(ct_plan_create(matmul, in, 2, outs, 1, NULL, 0, NULL, &plan),
                  CT_ERROR_WORKSPACE_TOO_SMALL, "ct_plan_create(matmul) without its workspace");
    scratch =
        aligned_alloc((size_t)alignment, (size_t)((bytes + alignment - 1) / alignment * alignment));
    context.workspace = scratch;
    context.workspace_size = bytes;
  }
  if (expect_status(ct_plan_create(matmul, in, 2, outs, 1, NULL, 0, &context, &plan), CT_OK,
                    "ct_plan_create(matmul) with its workspace")) {
    expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run(matmul)");
    int ok = 1;
    for (int i = 0; i < N && ok; ++i)
      for (int j = 0; j < N && ok; ++j) {
        float acc = 0;
        for (int k = 0; k < N; ++k) acc += a[i * N + k] * b[k * N + j];
        ok = out[i * N + j] == acc; /* small integers: exact */
      }
    check(ok, "the planned matmul is exact on small integers");
    ct_plan_destroy(plan);
  }
  free(scratch);

  int64_t empty_shape[2] = {0, 3};
  ct_tensor e = view(NULL, F32, 2, empty_shape, NULL);
  const ct_tensor* ein[2] = {&e, &e};
  ct_tensor eo = view(NULL, F32, 2, empty_shape, NULL);
  const ct_tensor* eouts[1] = {&eo};
  if (expect_status(ct_plan_create(add, ein, 2, eouts, 1, NULL, 0, NULL, &plan), CT_OK,
                    "ct_plan_create(add) on empty tensors")) {
    expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run on empty tensors does nothing");
    ct_plan_destroy(plan);
  }
}

typedef struct allocations {
  int calls;
  void* data[4];
} allocations;

static int keep_allocate(void* user_data, int32_t output_index, const ct_tensor_info* info,
                         int32_t device_type, int32_t device_id, void** data) {
  (void)output_index, (void)device_type, (void)device_id;
  allocations* log = (allocations*)user_data;
  int64_t n = 1;
  for (int32_t k = 0; k < info->ndim; ++k) n *= info->shape[k];
  if (log->calls >= 4) return CT_ERROR_OUT_OF_MEMORY;
  *data = log->data[log->calls++] = malloc((size_t)(n > 0 ? n : 1) * 8);
  return *data ? CT_OK : CT_ERROR_OUT_OF_MEMORY;
}

/* A dynamic op: each run asks the allocator again. */
static void test_dynamic(void) {
  const ct_op* nonzero = find_op("nonzero");
  if (!nonzero) return;
  unsigned char mask[5] = {0, 1, 0, 1, 1};
  int64_t shape[1] = {5};
  ct_tensor t = view(mask, BOOL8, 1, shape, NULL);
  const ct_tensor* in[1] = {&t};
  allocations log = {0, {NULL}};
  ct_allocator allocator = {sizeof allocator, &log, keep_allocate};
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  ct_plan* plan = NULL;
  expect_status(ct_plan_create(nonzero, in, 1, NULL, 0, NULL, 0, NULL, &plan),
                CT_ERROR_NULL_POINTER, "ct_plan_create(nonzero) without an allocator");
  context.allocator = &allocator;
  if (expect_status(ct_plan_create(nonzero, in, 1, NULL, 0, NULL, 0, &context, &plan), CT_OK,
                    "ct_plan_create(nonzero) with an allocator")) {
    expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run(nonzero)");
    mask[0] = 1;
    expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run(nonzero) again");
    check(log.calls == 2, "one allocation per run (%d)", log.calls);
    const int64_t* second = (const int64_t*)log.data[1];
    check(second && second[0] == 0 && second[3] == 4, "the second run saw the changed mask");
    ct_plan_destroy(plan);
  }
  for (int i = 0; i < log.calls; ++i) free(log.data[i]);
}

/* A "newer backend" kernel for subtract on int16: writes 7 everywhere. */
static int sevens_kernel(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  int64_t n = 1;
  for (int32_t k = 0; k < out->ndim; ++k) n *= out->shape[k];
  for (int64_t i = 0; i < n; ++i) ((short*)out->data)[i] = 7;
  return CT_OK;
}

/* ct_registry_generation grows with each registration; a plan keeps its kernel while ct_op_run
 * takes the newest. */
static void test_registry_generation(void) {
  const ct_op* subtract = find_op("subtract");
  if (!subtract) return;
  const ct_dtype i16 = {CT_DTYPE_INT, 16, 1};
  short a[3] = {5, 6, 7}, b[3] = {1, 1, 1}, out[3] = {0, 0, 0};
  int64_t shape[1] = {3};
  ct_tensor ta = view(a, i16, 1, shape, NULL), tb = view(b, i16, 1, shape, NULL);
  ct_tensor to = view(out, i16, 1, shape, NULL);
  const ct_tensor* in[2] = {&ta, &tb};
  const ct_tensor* outs[1] = {&to};
  ct_plan* plan = NULL;
  if (!expect_status(ct_plan_create(subtract, in, 2, outs, 1, NULL, 0, NULL, &plan), CT_OK,
                     "ct_plan_create(subtract int16)"))
    return;
  const uint64_t before = ct_registry_generation();
  check(before > 0, "the registry generation counts the built-in kernels (%llu)",
        (unsigned long long)before);
  const ct_dtype signature[3] = {i16, i16, i16};
  ct_kernel_def def;
  memset(&def, 0, sizeof def);
  def.struct_size = sizeof def;
  def.op_name = "subtract";
  def.backend_name = "test-plan-sevens";
  def.device_type = CT_DEVICE_CPU;
  def.signature_length = 3;
  def.signature = signature;
  def.run = sevens_kernel;
  expect_status(ct_kernel_register(&def), CT_OK, "ct_kernel_register(subtract int16, newer)");
  check(ct_registry_generation() > before, "the generation grew with the registration");
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run(subtract) after the registration");
  check(out[0] == 4 && out[2] == 6, "the plan keeps the kernel it was created with");
  expect_status(ct_op_run(subtract, in, 2, outs, 1, NULL, 0, NULL), CT_OK, "ct_op_run(subtract)");
  check(out[0] == 7 && out[2] == 7, "ct_op_run takes the newest kernel");
  ct_plan_destroy(plan);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  check(ct_abi_version() >= ((1u << 16) | 1u), "the library has ABI 1.1 or newer (plans)");
  test_add_replays();
  test_create_errors();
  test_attribute_copies();
  test_workspace_and_empty();
  test_dynamic();
  test_registry_generation(); /* last: it changes what subtract on int16 computes */
  return tap_finish();
}
