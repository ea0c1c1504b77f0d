/*
 * test_plugin.c - the backend table, plugin loading and discovery, backend-selected dispatch and
 * device memory, from C (TAP-like output: "ok N - ..." / "not ok N - ...", then "1..N").
 *
 *   test_plugin PLUGIN_DIR DISCOVER_DIR
 *
 * PLUGIN_DIR holds libctensor_example.so (examples/plugin) and variant_<name>.so for each
 * variant of tests/c/plugin_variants.c; DISCOVER_DIR holds libctensor_example_broken.so (the
 * fault-planted build), a_bogus.so (not a shared module) and notes.txt. tests/test_plugins.py
 * builds them against the installed package and runs this program.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <ctensor.h>
#include <ctensor_plugin.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_count = 0;
static int failures = 0;

static int check(int ok, const char* format, ...) {
  va_list args;
  va_start(args, format);
  printf("%s %d - ", ok ? "ok" : "not ok", ++test_count);
  vprintf(format, args);
  printf("\n");
  va_end(args);
  if (!ok) ++failures;
  return ok;
}

static void expect_status(int got, int want, const char* what) {
  check(got == want, "%s -> %s (got %s: \"%s\")", what, ct_status_name(want), ct_status_name(got),
        ct_last_error());
}

static char plugin_dir[2048];
static char discover_dir[2048];

static const char* plugin_path(const char* file) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", plugin_dir, file);
  return path;
}

static ct_backend_info backend_info(int32_t index) {
  ct_backend_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (ct_backend_get_info(index, &info) != CT_OK) memset(&info, 0, sizeof info);
  return info;
}

static int32_t backend_count(void) {
  int32_t count = -1;
  ct_backend_count(&count);
  return count;
}

/* Index of the table row whose path ends with `suffix`, or -1. */
static int32_t find_row(const char* suffix) {
  const int32_t count = backend_count();
  for (int32_t i = 0; i < count; ++i) {
    const ct_backend_info info = backend_info(i);
    if (!info.path) continue;
    const size_t n = strlen(info.path), m = strlen(suffix);
    if (n >= m && strcmp(info.path + n - m, suffix) == 0) return i;
  }
  return -1;
}

/* Kernels of `op` registered by `backend`. */
static int32_t kernels_of(const char* op_name, const char* backend) {
  const ct_op* op = NULL;
  int32_t count = 0, found = 0;
  if (ct_op_find(op_name, &op) != CT_OK || ct_op_kernel_count(op, &count) != CT_OK) return -1;
  for (int32_t k = 0; k < count; ++k) {
    ct_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (ct_op_kernel_info(op, k, &info) == CT_OK && strcmp(info.backend, backend) == 0) ++found;
  }
  return found;
}

/* add on int32 {1, 2, 3} + {10, 20, 30} into out, with a context naming `backend` (no context at
 * all when use_context is 0). */
static int run_add_i32(int use_context, const char* backend, int32_t* out) {
  static int32_t a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
  int64_t shape[1] = {3};
  const ct_dtype i32 = {CT_DTYPE_INT, 32, 1};
  ct_tensor ta = {a, {CT_DEVICE_CPU, 0}, 1, i32, shape, NULL, 0};
  ct_tensor tb = {b, {CT_DEVICE_CPU, 0}, 1, i32, shape, NULL, 0};
  ct_tensor tout = {out, {CT_DEVICE_CPU, 0}, 1, i32, shape, NULL, 0};
  const ct_tensor* inputs[2] = {&ta, &tb};
  const ct_tensor* outputs[1] = {&tout};
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  context.backend = backend;
  const ct_op* add = NULL;
  ct_op_find("add", &add);
  return ct_op_run(add, inputs, 2, outputs, 1, NULL, 0, use_context ? &context : NULL);
}

static int equals3(const int32_t* got, int32_t x, int32_t y, int32_t z) {
  return got[0] == x && got[1] == y && got[2] == z;
}

/* ------------------------------------------------------------------------------------------- */

static void test_builtin_row(void) {
  check(backend_count() >= 1, "the table has the built-in CPU backend");
  const ct_backend_info cpu = backend_info(0);
  check(cpu.name && strcmp(cpu.name, "cpu") == 0, "row 0 is \"cpu\"");
  check(cpu.path == NULL, "the built-in backend has no path");
  check(cpu.version && strcmp(cpu.version, ct_version_string()) == 0,
        "the built-in backend's version is the library's");
  check(
      cpu.state == CT_BACKEND_LOADED && cpu.status == CT_OK && cpu.reason && cpu.reason[0] == '\0',
      "the built-in backend is loaded");
  check(cpu.device_type == CT_DEVICE_CPU && cpu.device_count == 1, "it serves one CPU");
  check(cpu.abi_version == CT_PLUGIN_ABI_VERSION, "it speaks the plugin ABI of this header");
  check(kernels_of("add", "cpu") > 0, "built-in kernels report backend \"cpu\"");

  ct_backend_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = 8;
  expect_status(ct_backend_get_info(0, &info), CT_ERROR_ABI_MISMATCH,
                "ct_backend_get_info with struct_size too small");
  info.struct_size = sizeof info;
  expect_status(ct_backend_get_info(backend_count(), &info), CT_ERROR_INVALID_ARGUMENT,
                "ct_backend_get_info(count)");
  expect_status(ct_backend_get_info(-1, &info), CT_ERROR_INVALID_ARGUMENT,
                "ct_backend_get_info(-1)");
  expect_status(ct_backend_get_info(0, NULL), CT_ERROR_NULL_POINTER, "ct_backend_get_info NULL");
  expect_status(ct_backend_count(NULL), CT_ERROR_NULL_POINTER, "ct_backend_count NULL");
  expect_status(ct_backend_load(NULL, NULL), CT_ERROR_NULL_POINTER, "ct_backend_load(NULL)");
}

static void test_load_example(void) {
  const int32_t before = backend_count();
  int32_t index = -1;
  expect_status(ct_backend_load(plugin_path("libctensor_example.so"), &index), CT_OK,
                "ct_backend_load(example)");
  check(index == before && backend_count() == before + 1, "the example got a new row (%d)", index);
  const ct_backend_info info = backend_info(index);
  check(info.name && strcmp(info.name, "example") == 0, "its name is \"example\"");
  check(info.version && strcmp(info.version, "1.0.0") == 0, "its version is \"1.0.0\"");
  check(info.path && strcmp(info.path, plugin_path("libctensor_example.so")) == 0,
        "its path is the one given");
  check(info.state == CT_BACKEND_LOADED && info.status == CT_OK && info.reason[0] == '\0',
        "it is loaded");
  check(info.device_type == CT_DEVICE_CPU && info.device_count == 1, "it serves one CPU");
  check(info.abi_version == CT_PLUGIN_ABI_VERSION, "it was built for this plugin ABI");
  check(kernels_of("add", "example") == 3 && kernels_of("multiply", "example") == 3 &&
            kernels_of("relu", "example") == 3 && kernels_of("sum", "example") == 3 &&
            kernels_of("nonzero", "example") == 3,
        "its kernels are registered under \"example\"");

  /* The same file by another spelling is the same plugin. */
  char other[4200];
  snprintf(other, sizeof other, "%s/./libctensor_example.so", plugin_dir);
  int32_t again = -1;
  expect_status(ct_backend_load(other, &again), CT_OK, "loading the example a second time");
  check(again == index && backend_count() == before + 1,
        "a second load returns the first entry and adds no row");
  check(kernels_of("add", "example") == 3, "and registers nothing twice");
}

static void test_backend_dispatch(void) {
  int32_t out[3] = {0, 0, 0};
  expect_status(run_add_i32(1, "example", out), CT_OK, "add with backend \"example\"");
  check(equals3(out, 11, 22, 33), "the example's add is right");
  expect_status(run_add_i32(1, "cpu", out), CT_OK, "add with backend \"cpu\"");
  check(equals3(out, 11, 22, 33), "the built-in add is right");

  memset(out, 0, sizeof out);
  expect_status(run_add_i32(1, "nope", out), CT_ERROR_UNSUPPORTED_DEVICE,
                "add with an unknown backend");
  check(strstr(ct_last_error(), "nope") != NULL, "the message names the backend");
  check(equals3(out, 0, 0, 0), "and the output is untouched");

  /* The example has no int8 add: the named backend never falls back. */
  int8_t a[2] = {1, 2}, o[2] = {0, 0};
  int64_t shape[1] = {2};
  const ct_dtype i8 = {CT_DTYPE_INT, 8, 1};
  ct_tensor ta = {a, {CT_DEVICE_CPU, 0}, 1, i8, shape, NULL, 0};
  ct_tensor to = {o, {CT_DEVICE_CPU, 0}, 1, i8, shape, NULL, 0};
  const ct_tensor* inputs[2] = {&ta, &ta};
  const ct_tensor* outputs[1] = {&to};
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  context.backend = "example";
  const ct_op* add = NULL;
  ct_op_find("add", &add);
  expect_status(ct_op_run(add, inputs, 2, outputs, 1, NULL, 0, &context),
                CT_ERROR_UNSUPPORTED_DTYPE, "int8 add with backend \"example\"");
  check(o[0] == 0 && o[1] == 0, "nothing was written");
  context.backend = NULL;
  expect_status(ct_op_run(add, inputs, 2, outputs, 1, NULL, 0, &context), CT_OK,
                "int8 add without a backend name");
  check(o[0] == 2 && o[1] == 4, "runs the built-in kernel");

  /* A context from before the `backend` field: whatever lies beyond struct_size is not read. */
  context.struct_size = offsetof(ct_context, backend);
  context.backend = "nope";
  expect_status(ct_op_run(add, inputs, 2, outputs, 1, NULL, 0, &context), CT_OK,
                "a 1.0 context without the backend field");
}

static void test_refused_plugins(void) {
  int32_t index = -1;
  const int32_t cpu_add = kernels_of("add", "cpu");

  expect_status(ct_backend_load(plugin_path("variant_abi2.so"), &index), CT_ERROR_ABI_MISMATCH,
                "a plugin built for plugin ABI 2.0");
  check(strstr(ct_last_error(), "2.0") && strstr(ct_last_error(), "1.0"),
        "the message names both versions: %s", ct_last_error());
  ct_backend_info info = backend_info(index);
  check(info.state == CT_BACKEND_FAILED && info.status == CT_ERROR_ABI_MISMATCH,
        "its row says failed, ABI mismatch");
  check(info.abi_version == ((uint32_t)2 << 16), "and records the version it reported");
  check(strcmp(info.name, "variant_abi2.so") == 0, "it is named by its file");
  check(strstr(info.reason, "2.0") != NULL, "the reason is kept");
  check(kernels_of("add", "abi2-test") == 0, "its init never ran");

  expect_status(ct_backend_load(plugin_path("variant_unavailable.so"), &index),
                CT_ERROR_BACKEND_UNAVAILABLE, "a plugin whose device is absent");
  check(strstr(ct_last_error(), "TESTDEV") != NULL, "the message is the plugin's: %s",
        ct_last_error());
  info = backend_info(index);
  check(info.state == CT_BACKEND_UNAVAILABLE && info.status == CT_ERROR_BACKEND_UNAVAILABLE,
        "its row says unavailable");
  check(strcmp(info.name, "unavailable-test") == 0, "under the name it gave");
  check(strstr(info.reason, "libtestdev.so.1") != NULL, "with its reason: %s", info.reason);
  check(kernels_of("add", "unavailable-test") == 0, "the kernel it registered was dropped");
  int32_t again = -1;
  expect_status(ct_backend_load(plugin_path("variant_unavailable.so"), &again),
                CT_ERROR_BACKEND_UNAVAILABLE, "loading it again");
  check(again == index, "gives the same row");

  expect_status(ct_backend_load(plugin_path("variant_failing.so"), &index), CT_ERROR_BACKEND,
                "a plugin whose init fails");
  check(strstr(ct_last_error(), "CT_ERROR_OUT_OF_MEMORY") &&
            strstr(ct_last_error(), "could not set up its pools"),
        "the message has its status and message: %s", ct_last_error());
  info = backend_info(index);
  check(info.state == CT_BACKEND_FAILED && info.status == CT_ERROR_BACKEND, "its row says failed");
  check(kernels_of("add", "failing-test") == 0, "a failed init leaves no kernels");

  expect_status(ct_backend_load(plugin_path("variant_wrong_name.so"), &index), CT_ERROR_BACKEND,
                "a plugin registering under another backend's name");
  check(strstr(ct_last_error(), "'cpu'") != NULL, "the message says which name: %s",
        ct_last_error());
  check(kernels_of("add", "cpu") == cpu_add, "the built-in kernels are not replaced");
  check(kernels_of("add", "wrong-name-test") == 0, "and nothing is registered");
  check(backend_info(index).state == CT_BACKEND_FAILED, "its row says failed");

  expect_status(ct_backend_load(plugin_path("variant_not_a_plugin.so"), &index), CT_ERROR_BACKEND,
                "a shared module without the entry points");
  check(strstr(ct_last_error(), "ct_plugin_abi_version") != NULL, "the message says so: %s",
        ct_last_error());
  expect_status(ct_backend_load(plugin_path("no_such_plugin.so"), &index), CT_ERROR_BACKEND,
                "a file that does not exist");
  info = backend_info(index);
  check(info.state == CT_BACKEND_FAILED && strcmp(info.name, "no_such_plugin.so") == 0,
        "gets a failed row named by its file");

  int32_t result[3] = {0, 0, 0};
  expect_status(run_add_i32(1, "failing-test", result), CT_ERROR_UNSUPPORTED_DEVICE,
                "a failed backend runs nothing");
}

static void test_discovery(void) {
  char search[8192];
  snprintf(search, sizeof search, "%s/does-not-exist::%s:", plugin_dir, discover_dir);
  /* The plugins installed with the package (ctensor-plugins/ beside libctensor, such as the
   * OpenCL backend) are found by every default discovery: count them first. */
  unsetenv("CTENSOR_PLUGIN_PATH");
  int32_t installed = -1;
  expect_status(ct_backend_discover(NULL, &installed), CT_OK, "discovering installed plugins");
  setenv("CTENSOR_PLUGIN_PATH", search, 1);
  int32_t loaded = -1;
  const int32_t before = backend_count();
  expect_status(ct_backend_discover(NULL, &loaded), CT_OK, "ct_backend_discover(NULL)");
  check(loaded == 1 + installed, "one plugin on CTENSOR_PLUGIN_PATH loaded (got %d)",
        loaded - installed);
  check(backend_count() == before + 2, "two rows added: the broken example and a_bogus.so");
  const int32_t bogus = find_row("/a_bogus.so");
  const int32_t broken = find_row("/libctensor_example_broken.so");
  check(bogus >= 0 && backend_info(bogus).state == CT_BACKEND_FAILED,
        "a file that is no shared module is recorded as failed");
  check(broken >= 0 && backend_info(broken).state == CT_BACKEND_LOADED &&
            strcmp(backend_info(broken).name, "example-broken") == 0,
        "the fault-planted example is loaded");
  check(bogus < broken, "files load in name order");
  check(find_row("/notes.txt") < 0, "files without a plugin suffix are ignored");

  int32_t out[3] = {0, 0, 0};
  expect_status(run_add_i32(0, NULL, out), CT_OK, "add without a context");
  check(equals3(out, 12, 23, 34), "runs the newest kernel: the broken example's (off by one)");
  expect_status(run_add_i32(1, NULL, out), CT_OK, "add with a NULL backend name");
  check(equals3(out, 12, 23, 34), "runs the newest kernel too");
  expect_status(run_add_i32(1, "example", out), CT_OK, "add with backend \"example\"");
  check(equals3(out, 11, 22, 33), "runs the example's kernel");
  expect_status(run_add_i32(1, "cpu", out), CT_OK, "add with backend \"cpu\"");
  check(equals3(out, 11, 22, 33), "runs the built-in kernel");

  const int32_t rows = backend_count();
  expect_status(ct_backend_discover(NULL, &loaded), CT_OK, "discovering again");
  check(loaded == 1 + installed && backend_count() == rows,
        "finds the same plugins and adds no rows");
  expect_status(ct_backend_discover("/does/not/exist:", NULL), CT_OK,
                "a search path of nothing usable");
  expect_status(ct_backend_discover(discover_dir, &loaded), CT_OK, "an explicit search path");
  check(loaded == 1, "counts the plugin loaded earlier");
}

static void test_workspace_with_context(void) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  const ct_dtype f32 = {CT_DTYPE_FLOAT, 32, 1};
  ct_tensor tx = {x, {CT_DEVICE_CPU, 0}, 2, f32, shape, NULL, 0};
  const ct_tensor* inputs[1] = {&tx};
  int64_t axis = 1;
  ct_attr attrs[1];
  memset(attrs, 0, sizeof attrs);
  attrs[0].name = "axis";
  attrs[0].value.type = CT_ATTR_INT;
  attrs[0].value.value.i = axis;
  const ct_op* sum = NULL;
  ct_op_find("sum", &sum);
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  context.backend = "example";
  uint64_t bytes = 0, alignment = 0;
  expect_status(
      ct_op_workspace_with_context(sum, inputs, 1, NULL, 0, attrs, 1, &context, &bytes, &alignment),
      CT_OK, "the example's sum workspace");
  check(bytes == 2 * 8 && alignment == 8, "one 8-byte accumulator per output element (%llu, %llu)",
        (unsigned long long)bytes, (unsigned long long)alignment);
  uint64_t cpu_bytes = 99, cpu_alignment = 0;
  context.backend = "cpu";
  expect_status(ct_op_workspace_with_context(sum, inputs, 1, NULL, 0, attrs, 1, &context,
                                             &cpu_bytes, &cpu_alignment),
                CT_OK, "the built-in sum workspace");
  check(cpu_bytes == 0, "the built-in sum needs none");

  float out[2] = {0, 0};
  int64_t out_shape[1] = {2};
  ct_tensor tout = {out, {CT_DEVICE_CPU, 0}, 1, f32, out_shape, NULL, 0};
  const ct_tensor* outputs[1] = {&tout};
  double workspace[2];
  context.backend = "example";
  context.workspace = workspace;
  context.workspace_size = sizeof workspace - 1;
  expect_status(ct_op_run(sum, inputs, 1, outputs, 1, attrs, 1, &context),
                CT_ERROR_WORKSPACE_TOO_SMALL, "the example's sum with a workspace too small");
  context.workspace_size = sizeof workspace;
  expect_status(ct_op_run(sum, inputs, 1, outputs, 1, attrs, 1, &context), CT_OK,
                "the example's sum with its workspace");
  check(out[0] == 6.0f && out[1] == 15.0f, "sums rows: %g %g", out[0], out[1]);
}

/* Runs add on the built-in backend many times; counts wrong results or failures. */
static void* run_adds(void* arg) {
  int* bad = (int*)arg;
  for (int i = 0; i < 500; ++i) {
    int32_t out[3] = {0, 0, 0};
    if (run_add_i32(1, "cpu", out) != CT_OK || !equals3(out, 11, 22, 33)) ++*bad;
  }
  return NULL;
}

/* Loading takes the registry's lock for writing only to commit: runs on other threads go on. */
static void test_load_while_running(void) {
  enum { THREADS = 4 };
  pthread_t threads[THREADS];
  int bad[THREADS] = {0};
  int started = 0;
  for (int t = 0; t < THREADS; ++t)
    started += pthread_create(&threads[t], NULL, run_adds, &bad[t]) == 0;
  int32_t index = -1;
  expect_status(ct_backend_load(plugin_path("variant_memory.so"), &index), CT_OK,
                "loading a plugin while other threads run ops");
  int wrong = 0;
  for (int t = 0; t < THREADS; ++t) {
    if (t < started) pthread_join(threads[t], NULL);
    wrong += bad[t];
  }
  check(started == THREADS && wrong == 0, "%d threads ran add 500 times each, %d wrong", started,
        wrong);
  check(kernels_of("add", "memory-test") == 1, "the plugin's kernel is registered");
}

static void test_device_memory(void) {
  const ct_device cpu = {CT_DEVICE_CPU, 0};
  void* data = NULL;
  expect_status(ct_device_allocate(cpu, 100, &data), CT_OK, "ct_device_allocate(cpu, 100)");
  check(data != NULL && ((uintptr_t)data % 64) == 0, "host memory aligned to 64 bytes");
  const char text[] = "hello, device";
  expect_status(ct_device_copy_from_host(cpu, data, 10, text, sizeof text, NULL), CT_OK,
                "ct_device_copy_from_host at offset 10");
  char back[sizeof text];
  memset(back, 0, sizeof back);
  expect_status(ct_device_copy_to_host(cpu, back, data, 10, sizeof text, NULL), CT_OK,
                "ct_device_copy_to_host from offset 10");
  check(memcmp(back, text, sizeof text) == 0, "the bytes come back");
  expect_status(ct_device_synchronize(cpu, NULL), CT_OK, "ct_device_synchronize(cpu)");
  expect_status(ct_device_free(cpu, data), CT_OK, "ct_device_free(cpu)");
  expect_status(ct_device_free(cpu, NULL), CT_OK, "ct_device_free(cpu, NULL)");
  data = &data;
  expect_status(ct_device_allocate(cpu, 0, &data), CT_OK, "ct_device_allocate(cpu, 0)");
  ct_device_free(cpu, data);
  expect_status(ct_device_allocate(cpu, 8, NULL), CT_ERROR_NULL_POINTER,
                "ct_device_allocate without a result pointer");
  const ct_device cpu1 = {CT_DEVICE_CPU, 1};
  expect_status(ct_device_allocate(cpu1, 8, &data), CT_ERROR_UNSUPPORTED_DEVICE,
                "ct_device_allocate(cpu:1)");
  const ct_device cuda = {CT_DEVICE_CUDA, 0};
  expect_status(ct_device_allocate(cuda, 8, &data), CT_ERROR_UNSUPPORTED_DEVICE,
                "ct_device_allocate(cuda:0) with no CUDA backend");
  expect_status(ct_device_synchronize(cuda, NULL), CT_ERROR_UNSUPPORTED_DEVICE,
                "ct_device_synchronize(cuda:0) with no CUDA backend");

  /* A plugin with memory functions serves its device. */
  const ct_device ext1 = {CT_DEVICE_EXT_DEV, 1};
  expect_status(ct_device_allocate(ext1, 8, &data), CT_ERROR_UNSUPPORTED_DEVICE,
                "ct_device_allocate(ext_dev:1) before its plugin is loaded");
  test_load_while_running(); /* loads the plugin with memory functions */
  data = NULL;
  expect_status(ct_device_allocate(ext1, 16, &data), CT_OK, "ct_device_allocate(ext_dev:1)");
  unsigned char bytes[16];
  memset(bytes, 0, sizeof bytes);
  expect_status(ct_device_copy_to_host(ext1, bytes, data, 0, sizeof bytes, NULL), CT_OK,
                "ct_device_copy_to_host(ext_dev:1)");
  check(bytes[0] == 0xAB && bytes[15] == 0xAB, "the plugin's allocate served it");
  expect_status(ct_device_copy_from_host(ext1, data, 4, "xy", 2, NULL), CT_OK,
                "ct_device_copy_from_host(ext_dev:1)");
  expect_status(ct_device_copy_to_host(ext1, bytes, data, 0, sizeof bytes, NULL), CT_OK,
                "and back");
  check(bytes[3] == 0xAB && bytes[4] == 'x' && bytes[5] == 'y', "at the offset given");
  expect_status(ct_device_synchronize(ext1, NULL), CT_OK,
                "ct_device_synchronize(ext_dev:1) gets the plugin's data");
  expect_status(ct_device_free(ext1, data), CT_OK, "ct_device_free(ext_dev:1)");
  const ct_device ext2 = {CT_DEVICE_EXT_DEV, 2};
  expect_status(ct_device_allocate(ext2, 8, &data), CT_ERROR_UNSUPPORTED_DEVICE,
                "ct_device_allocate(ext_dev:2) of a plugin with 2 devices");
}

/* Kernels for the replacement checks: each writes its own value into a float32 output. */
static int write_value(const ct_kernel_call* call, float value) {
  const ct_tensor* out = call->outputs[0];
  float* data = (float*)((char*)out->data + out->byte_offset);
  for (int64_t i = 0; i < out->shape[0]; ++i) data[i] = value;
  return CT_OK;
}
static int write_1(const ct_kernel_call* call) {
  return write_value(call, 1.0f);
}
static int write_2(const ct_kernel_call* call) {
  return write_value(call, 2.0f);
}
static int write_3(const ct_kernel_call* call) {
  return write_value(call, 3.0f);
}

static int register_add_f32(const char* backend, ct_kernel_run_fn run) {
  static const ct_dtype f32[3] = {
      {CT_DTYPE_FLOAT, 32, 1}, {CT_DTYPE_FLOAT, 32, 1}, {CT_DTYPE_FLOAT, 32, 1}};
  ct_kernel_def def;
  memset(&def, 0, sizeof def);
  def.struct_size = sizeof def;
  def.op_name = "add";
  def.backend_name = backend;
  def.device_type = CT_DEVICE_CPU;
  def.signature_length = 3;
  def.signature = f32;
  def.run = run;
  return ct_kernel_register(&def);
}

static float run_add_f32(const char* backend) {
  float a[2] = {0, 0}, out[2] = {0, 0};
  int64_t shape[1] = {2};
  const ct_dtype f32 = {CT_DTYPE_FLOAT, 32, 1};
  ct_tensor ta = {a, {CT_DEVICE_CPU, 0}, 1, f32, shape, NULL, 0};
  ct_tensor to = {out, {CT_DEVICE_CPU, 0}, 1, f32, shape, NULL, 0};
  const ct_tensor* inputs[2] = {&ta, &ta};
  const ct_tensor* outputs[1] = {&to};
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  context.backend = backend;
  const ct_op* add = NULL;
  ct_op_find("add", &add);
  if (ct_op_run(add, inputs, 2, outputs, 1, NULL, 0, &context) != CT_OK) return -1.0f;
  return out[0];
}

/* Same (op, device, signature, backend) replaces; the newest registration runs by default. */
static void test_registration_order(void) {
  expect_status(register_add_f32("order-a", write_1), CT_OK, "registering add for \"order-a\"");
  expect_status(register_add_f32("order-b", write_2), CT_OK, "registering add for \"order-b\"");
  check(run_add_f32(NULL) == 2.0f, "the newest kernel (order-b) runs by default");
  check(run_add_f32("order-a") == 1.0f, "order-a's runs when named");
  expect_status(register_add_f32("order-a", write_3), CT_OK, "registering order-a's add again");
  check(kernels_of("add", "order-a") == 1, "replaces its kernel, adds none");
  check(run_add_f32(NULL) == 3.0f, "the replacement is now the newest kernel");
  check(run_add_f32("order-b") == 2.0f, "order-b's still runs when named");
  check(run_add_f32("cpu") == 0.0f, "the built-in one too");
  expect_status(register_add_f32("", write_1), CT_ERROR_INVALID_ARGUMENT,
                "registering under an empty backend name");
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PLUGIN_DIR DISCOVER_DIR\n", argv[0]);
    return 2;
  }
  snprintf(plugin_dir, sizeof plugin_dir, "%s", argv[1]);
  snprintf(discover_dir, sizeof discover_dir, "%s", argv[2]);
  test_builtin_row();
  test_load_example();
  test_backend_dispatch();
  test_refused_plugins();
  test_discovery();
  test_workspace_with_context();
  test_device_memory();
  test_registration_order();
  printf("1..%d\n", test_count);
  return failures ? 1 : 0;
}
