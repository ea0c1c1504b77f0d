/* test_support.h - what the C test programs share: TAP-like reporting ("ok N - ..." /
 * "not ok N - ...", then "1..N" and an exit status from tap_finish()), host tensor views and
 * operator lookup. Header-only, so that each program still builds from one command line. */
#ifndef CTENSOR_TESTS_TEST_SUPPORT_H_
#define CTENSOR_TESTS_TEST_SUPPORT_H_

#include <ctensor.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int g_count = 0;
static int g_failed = 0;

/* Records one check. Returns cond so that callers can chain. */
static int check(int cond, const char* format, ...) {
  va_list args;
  ++g_count;
  if (!cond) ++g_failed;
  printf("%s %d - ", cond ? "ok" : "not ok", g_count);
  va_start(args, format);
  vprintf(format, args);
  va_end(args);
  printf("\n");
  fflush(stdout);
  return cond;
}

/* A call must return exactly `want`; a failing one must also leave a non-empty message. */
static int expect_status(int got, int want, const char* what) {
  const char* message = ct_last_error();
  if (want == CT_OK) {
    if (got == CT_OK) return check(1, "%s -> CT_OK", what);
    return check(0, "%s -> CT_OK (got %s: \"%s\")", what, ct_status_name(got), message);
  }
  return check(got == want && message && message[0] != '\0', "%s -> %s (got %s: \"%s\")", what,
               ct_status_name(want), ct_status_name(got), message ? message : "(null)");
}

/* Prints the plan line and the summary; returns the program's exit status. */
static int tap_finish(void) {
  printf("1..%d\n", g_count);
  if (g_failed) {
    printf("# FAILED %d of %d checks\n", g_failed, g_count);
    return 1;
  }
  printf("# all %d checks passed\n", g_count);
  return 0;
}

/* A host (CPU 0) view with byte offset 0. */
static ct_tensor view(void* data, ct_dtype dtype, int32_t ndim, int64_t* shape, int64_t* strides) {
  ct_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = CT_DEVICE_CPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 0;
  return t;
}

/* The operator called `name`, or NULL after a failed check. */
static const ct_op* find_op(const char* name) {
  const ct_op* op = NULL;
  if (ct_op_find(name, &op) != CT_OK) {
    check(0, "ct_op_find(\"%s\") (%s)", name, ct_last_error());
    return NULL;
  }
  return op;
}

#endif /* CTENSOR_TESTS_TEST_SUPPORT_H_ */
