/*
 * test_profiler.c - the profiling hooks (ct_set_profiler / ct_get_profiler), from a plain C
 * program.
 *
 *   cc -std=c11 -pthread test_profiler.c $(pkg-config --cflags --libs ctensor) -o test_profiler
 *   ./test_profiler [ROUNDS]  # TAP-like: "ok N - ..." / "not ok N - ...", exit 1 on any failure
 *
 * Covers: nothing installed at start; struct_size checks and NULL; begin/end around ct_op_run
 * and ct_plan_run with the op's name, backend, device, input shapes and dtypes and one call id;
 * the struct is copied at install; failing checks are not reported, a failing kernel is (with its
 * status, its message kept); empty outputs and dynamic ops; runs started from a callback are not
 * reported and a callback cannot change the profiler; uninstall; threads running ops while the
 * profiler is swapped (every begin has its end, ids unique, and nothing reaches a replaced
 * profiler once ct_set_profiler has returned, so its user_data may be freed at once).
 *
 * Built and run by tests/test_c_api.py (also under valgrind and sanitizers).
 */
#include <ctensor.h>

#include "test_support.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const ct_dtype F32 = {CT_DTYPE_FLOAT, 32, 1};
static const ct_dtype I64 = {CT_DTYPE_INT, 64, 1};

/* ---- a recording profiler: what the callbacks saw, copied out of the event ---- */

#define MAX_RECORDS 16

typedef struct record {
  int phase; /* 'b' or 'e' */
  uint64_t call_id;
  const ct_op* op;
  char op_name[32];
  char backend[16];
  ct_device device;
  int32_t source;
  int32_t num_inputs;
  int32_t ndim[4];
  int64_t shape[4][4];
  ct_dtype dtype[4];
  int input_present[4];
  int32_t num_outputs;
  size_t struct_size;
  int status;
  char message[128]; /* ct_last_error() during end */
} record;

typedef struct recorder {
  record records[MAX_RECORDS];
  int count;
  int overflow;
  const ct_op* nested_op; /* when set, end runs this op itself (add on two 1-element views) */
  int nested_status;
  int set_profiler_status; /* what ct_set_profiler returned from inside begin */
  int try_set_profiler;
} recorder;

static record* next_record(recorder* r, char phase, const ct_profile_event* event) {
  if (r->count >= MAX_RECORDS) {
    r->overflow = 1;
    return NULL;
  }
  record* rec = &r->records[r->count++];
  memset(rec, 0, sizeof *rec);
  rec->phase = phase;
  rec->call_id = event->call_id;
  rec->op = event->op;
  snprintf(rec->op_name, sizeof rec->op_name, "%s", event->op_name ? event->op_name : "(null)");
  snprintf(rec->backend, sizeof rec->backend, "%s", event->backend ? event->backend : "(null)");
  rec->device = event->device;
  rec->source = event->source;
  rec->num_inputs = event->num_inputs;
  rec->num_outputs = event->num_outputs;
  rec->struct_size = event->struct_size;
  for (int32_t i = 0; i < event->num_inputs && i < 4; ++i) {
    const ct_tensor* t = event->inputs[i];
    rec->input_present[i] = t != NULL;
    if (!t) continue;
    rec->ndim[i] = t->ndim;
    rec->dtype[i] = t->dtype;
    for (int32_t k = 0; k < t->ndim && k < 4; ++k) rec->shape[i][k] = t->shape[k];
  }
  return rec;
}

static void record_begin(void* user_data, const ct_profile_event* event) {
  recorder* r = (recorder*)user_data;
  next_record(r, 'b', event);
  if (r->try_set_profiler) r->set_profiler_status = ct_set_profiler(NULL);
}

static void record_end(void* user_data, const ct_profile_event* event, int status) {
  recorder* r = (recorder*)user_data;
  record* rec = next_record(r, 'e', event);
  if (rec) {
    rec->status = status;
    snprintf(rec->message, sizeof rec->message, "%s", ct_last_error());
  }
  if (r->nested_op) {
    float a = 1, b = 2, c = 0;
    int64_t shape[1] = {1};
    ct_tensor ta = view(&a, F32, 1, shape, NULL), tb = view(&b, F32, 1, shape, NULL);
    ct_tensor tc = view(&c, F32, 1, shape, NULL);
    const ct_tensor* in[2] = {&ta, &tb};
    const ct_tensor* out[1] = {&tc};
    r->nested_status = ct_op_run(r->nested_op, in, 2, out, 1, NULL, 0, NULL);
  }
}

static ct_profiler recording_profiler(recorder* r) {
  ct_profiler p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.user_data = r;
  p.begin = record_begin;
  p.end = record_end;
  return p;
}

static int shape_is(const record* rec, int32_t i, int32_t ndim, const int64_t* shape) {
  if (!rec->input_present[i] || rec->ndim[i] != ndim) return 0;
  for (int32_t k = 0; k < ndim; ++k)
    if (rec->shape[i][k] != shape[k]) return 0;
  return 1;
}

static int dtype_is(ct_dtype got, ct_dtype want) {
  return got.code == want.code && got.bits == want.bits && got.lanes == want.lanes;
}

/* ---- tests ---- */

static void test_nothing_installed_and_struct_sizes(void) {
  ct_profiler got;
  memset(&got, 0xab, sizeof got);
  got.struct_size = sizeof got;
  expect_status(ct_get_profiler(&got), CT_OK, "ct_get_profiler with none installed");
  check(got.begin == NULL && got.end == NULL && got.user_data == NULL,
        "none installed: user_data, begin and end are NULL");
  check(got.struct_size == sizeof got, "struct_size is kept");
  expect_status(ct_get_profiler(NULL), CT_ERROR_NULL_POINTER, "ct_get_profiler(NULL)");
  got.struct_size = sizeof(size_t);
  expect_status(ct_get_profiler(&got), CT_ERROR_ABI_MISMATCH,
                "ct_get_profiler with a struct_size older than ABI 1.3");
  ct_profiler small;
  memset(&small, 0, sizeof small);
  small.struct_size = offsetof(ct_profiler, end);
  expect_status(ct_set_profiler(&small), CT_ERROR_ABI_MISMATCH,
                "ct_set_profiler with a struct_size that ends before `end`");
  expect_status(ct_set_profiler(NULL), CT_OK, "ct_set_profiler(NULL) with none installed");
}

/* A newer caller's longer struct: the fields this library knows are read. */
static void test_longer_struct_is_accepted(void) {
  recorder r;
  memset(&r, 0, sizeof r);
  struct {
    ct_profiler known;
    void* future_field;
  } longer;
  memset(&longer, 0, sizeof longer);
  longer.known = recording_profiler(&r);
  longer.known.struct_size = sizeof longer;
  longer.future_field = &r;
  expect_status(ct_set_profiler(&longer.known), CT_OK, "ct_set_profiler with a longer struct");
  ct_profiler got;
  got.struct_size = sizeof got;
  ct_get_profiler(&got);
  check(got.user_data == &r && got.begin == record_begin && got.end == record_end,
        "ct_get_profiler gives the installed callbacks");
  check(got.struct_size == sizeof got, "and keeps the caller's struct_size");
  expect_status(ct_set_profiler(NULL), CT_OK, "uninstall");
  ct_get_profiler(&got);
  check(got.begin == NULL && got.end == NULL, "after uninstall none is installed");
}

static void test_op_run_events(void) {
  const ct_op* add = find_op("add");
  if (!add) return;
  recorder r;
  memset(&r, 0, sizeof r);
  ct_profiler p = recording_profiler(&r);
  expect_status(ct_set_profiler(&p), CT_OK, "install a recording profiler");
  /* The library keeps its own copy: the caller's struct may change or go. */
  memset(&p, 0, sizeof p);

  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, out[6];
  int64_t sa[2] = {2, 3}, sb[1] = {3}, so[2] = {2, 3};
  ct_tensor ta = view(a, F32, 2, sa, NULL), tb = view(b, F32, 1, sb, NULL);
  ct_tensor to = view(out, F32, 2, so, NULL);
  const ct_tensor* in[2] = {&ta, &tb};
  const ct_tensor* outs[1] = {&to};
  expect_status(ct_op_run(add, in, 2, outs, 1, NULL, 0, NULL), CT_OK, "ct_op_run(add) profiled");
  check(out[0] == 11 && out[5] == 36, "the profiled run computes a + b");
  check(r.count == 2 && !r.overflow, "one begin and one end (%d records)", r.count);
  if (r.count == 2) {
    const record* begin = &r.records[0];
    const record* end = &r.records[1];
    check(begin->phase == 'b' && end->phase == 'e', "begin comes first, then end");
    check(begin->call_id != 0 && begin->call_id == end->call_id,
          "begin and end carry one call id (%llu, %llu)", (unsigned long long)begin->call_id,
          (unsigned long long)end->call_id);
    check(begin->struct_size == sizeof(ct_profile_event), "event struct_size is the library's");
    check(begin->op == add && strcmp(begin->op_name, "add") == 0, "op and op_name (\"%s\")",
          begin->op_name);
    check(strcmp(begin->backend, "cpu") == 0, "backend \"%s\" is \"cpu\"", begin->backend);
    check(begin->device.device_type == CT_DEVICE_CPU && begin->device.device_id == 0,
          "device is CPU 0");
    check(begin->source == CT_PROFILE_OP_RUN, "source is CT_PROFILE_OP_RUN");
    check(begin->num_inputs == 2 && begin->num_outputs == 1, "2 inputs, 1 output");
    check(shape_is(begin, 0, 2, sa) && shape_is(begin, 1, 1, sb), "input shapes (2, 3) and (3,)");
    check(dtype_is(begin->dtype[0], F32) && dtype_is(begin->dtype[1], F32), "input dtypes float32");
    check(end->status == CT_OK, "end receives CT_OK");
  }

  /* A second run gets a new id. */
  uint64_t first_id = r.count > 0 ? r.records[0].call_id : 0;
  r.count = 0;
  ct_op_run(add, in, 2, outs, 1, NULL, 0, NULL);
  check(r.count == 2 && r.records[0].call_id != first_id, "each run has its own call id");

  /* A call that fails its checks is not reported. */
  r.count = 0;
  int64_t bad_shape[1] = {4};
  ct_tensor tbad = view(b, F32, 1, bad_shape, NULL);
  const ct_tensor* bad_in[2] = {&ta, &tbad};
  expect_status(ct_op_run(add, bad_in, 2, outs, 1, NULL, 0, NULL), CT_ERROR_SHAPE_MISMATCH,
                "ct_op_run(add) with shapes that do not broadcast");
  check(r.count == 0, "a call failing its checks reports nothing (%d records)", r.count);

  /* Empty outputs: reported, with CT_OK. */
  r.count = 0;
  int64_t empty[2] = {0, 3};
  ct_tensor te = view(NULL, F32, 2, empty, NULL), teo = view(NULL, F32, 2, empty, NULL);
  const ct_tensor* empty_in[2] = {&te, &tb};
  const ct_tensor* empty_out[1] = {&teo};
  expect_status(ct_op_run(add, empty_in, 2, empty_out, 1, NULL, 0, NULL), CT_OK,
                "ct_op_run(add) on empty tensors");
  check(r.count == 2 && r.records[1].status == CT_OK && shape_is(&r.records[0], 0, 2, empty),
        "empty outputs: begin and end, CT_OK, shape (0, 3)");

  expect_status(ct_set_profiler(NULL), CT_OK, "uninstall");
  r.count = 0;
  ct_op_run(add, in, 2, outs, 1, NULL, 0, NULL);
  check(r.count == 0, "after uninstall nothing is reported");
}

/* A kernel that fails: end gets its status, and its message survives a callback that calls the
 * library; that nested run is not reported. */
static void test_failing_kernel_and_nested_runs(void) {
  const ct_op* take = find_op("take");
  const ct_op* add = find_op("add");
  if (!take || !add) return;
  recorder r;
  memset(&r, 0, sizeof r);
  r.nested_op = add;
  ct_profiler p = recording_profiler(&r);
  expect_status(ct_set_profiler(&p), CT_OK, "install a profiler whose end runs add");
  float x[3] = {1, 2, 3}, out[1];
  int64_t index[1] = {5};
  int64_t sx[1] = {3}, si[1] = {1};
  ct_tensor tx = view(x, F32, 1, sx, NULL), ti = view(index, I64, 1, si, NULL);
  ct_tensor to = view(out, F32, 1, si, NULL);
  const ct_tensor* in[2] = {&tx, &ti};
  const ct_tensor* outs[1] = {&to};
  expect_status(ct_op_run(take, in, 2, outs, 1, NULL, 0, NULL), CT_ERROR_INVALID_ARGUMENT,
                "ct_op_run(take) with an index out of range");
  check(strstr(ct_last_error(), "out of range") != NULL,
        "the kernel's message is kept after the end callback ran add (\"%s\")", ct_last_error());
  check(r.count == 2, "only the take run is reported, not add run from its end (%d records)",
        r.count);
  if (r.count == 2) {
    check(strcmp(r.records[0].op_name, "take") == 0, "the event names take");
    check(dtype_is(r.records[0].dtype[1], I64), "the index input is int64");
    check(r.records[1].status == CT_ERROR_INVALID_ARGUMENT, "end receives the kernel's status");
    check(strstr(r.records[1].message, "out of range") != NULL,
          "end sees the kernel's message in ct_last_error()");
  }
  check(r.nested_status == CT_OK, "a callback may run ops");

  /* A callback may not change the profiler (it would wait for its own run). */
  r.count = 0;
  r.nested_op = NULL;
  r.try_set_profiler = 1;
  index[0] = 1;
  expect_status(ct_op_run(take, in, 2, outs, 1, NULL, 0, NULL), CT_OK, "ct_op_run(take)");
  check(r.set_profiler_status == CT_ERROR_INVALID_ARGUMENT,
        "ct_set_profiler from a callback -> CT_ERROR_INVALID_ARGUMENT (got %s)",
        ct_status_name(r.set_profiler_status));
  ct_profiler got;
  got.struct_size = sizeof got;
  ct_get_profiler(&got);
  check(got.user_data == &r, "and the profiler stays installed");
  r.try_set_profiler = 0;
  expect_status(ct_set_profiler(NULL), CT_OK, "uninstall");
}

static void test_plan_events(void) {
  const ct_op* mul = find_op("multiply");
  if (!mul) return;
  float a[4] = {1, 0, 3, 0}, out[4];
  int64_t shape[1] = {4};
  ct_tensor ta = view(a, F32, 1, shape, NULL), to = view(out, F32, 1, shape, NULL);
  const ct_tensor* in[2] = {&ta, &ta};
  const ct_tensor* outs[1] = {&to};
  ct_plan* plan = NULL;
  if (!expect_status(ct_plan_create(mul, in, 2, outs, 1, NULL, 0, NULL, &plan), CT_OK,
                     "ct_plan_create(multiply)"))
    return;
  recorder r;
  memset(&r, 0, sizeof r);
  ct_profiler p = recording_profiler(&r);
  ct_set_profiler(&p);
  expect_status(ct_plan_run(plan), CT_OK, "ct_plan_run profiled");
  check(out[2] == 9, "the plan computes a * a");
  check(r.count == 2, "a plan run reports begin and end (%d records)", r.count);
  if (r.count == 2) {
    check(r.records[0].source == CT_PROFILE_PLAN_RUN, "source is CT_PROFILE_PLAN_RUN");
    check(r.records[0].op == mul && strcmp(r.records[0].op_name, "multiply") == 0,
          "the plan's op is named");
    check(strcmp(r.records[0].backend, "cpu") == 0 && r.records[0].device.device_type == 1,
          "backend cpu on the CPU");
    check(r.records[0].num_inputs == 2 && shape_is(&r.records[0], 1, 1, shape),
          "the plan's input shapes");
    check(r.records[0].call_id == r.records[1].call_id, "one call id");
  }
  ct_plan_destroy(plan);
  expect_status(ct_set_profiler(NULL), CT_OK, "uninstall");
}

static int allocate_host(void* user_data, int32_t output_index, const ct_tensor_info* info,
                         int32_t device_type, int32_t device_id, void** data) {
  (void)output_index, (void)device_type, (void)device_id;
  void** blocks = (void**)user_data;
  int64_t n = 1;
  for (int32_t k = 0; k < info->ndim; ++k) n *= info->shape[k];
  *data = malloc((size_t)(n > 0 ? n : 1) * (info->dtype.bits / 8u));
  for (int i = 0; i < 4; ++i) {
    if (!blocks[i]) {
      blocks[i] = *data;
      break;
    }
  }
  return *data ? CT_OK : CT_ERROR_OUT_OF_MEMORY;
}

static void test_dynamic_op_event(void) {
  const ct_op* nonzero = find_op("nonzero");
  if (!nonzero) return;
  float a[4] = {1, 0, 3, 0};
  int64_t shape[1] = {4};
  ct_tensor ta = view(a, F32, 1, shape, NULL);
  const ct_tensor* in[1] = {&ta};
  void* blocks[4] = {NULL, NULL, NULL, NULL};
  ct_allocator allocator;
  memset(&allocator, 0, sizeof allocator);
  allocator.struct_size = sizeof allocator;
  allocator.user_data = blocks;
  allocator.allocate = allocate_host;
  ct_context context;
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  context.allocator = &allocator;
  recorder r;
  memset(&r, 0, sizeof r);
  ct_profiler p = recording_profiler(&r);
  ct_set_profiler(&p);
  expect_status(ct_op_run(nonzero, in, 1, NULL, 0, NULL, 0, &context), CT_OK,
                "ct_op_run(nonzero) profiled");
  check(r.count == 2 && strcmp(r.records[0].op_name, "nonzero") == 0 &&
            r.records[0].num_outputs == 0 && r.records[0].num_inputs == 1,
        "a dynamic op is reported with its input and no outputs");
  ct_set_profiler(NULL);
  for (int i = 0; i < 4; ++i) free(blocks[i]);
}

/* ---- threads ---- */

typedef struct counting {
  atomic_long begins;
  atomic_long ends;
  atomic_long unmatched; /* an end whose call id this thread did not begin last */
  atomic_int freed;      /* set by the test when it frees this profiler; callbacks check it */
  atomic_long after_free;
} counting;

static _Thread_local uint64_t g_open_call = 0;

static void count_begin(void* user_data, const ct_profile_event* event) {
  counting* c = (counting*)user_data;
  if (atomic_load(&c->freed)) atomic_fetch_add(&c->after_free, 1);
  atomic_fetch_add(&c->begins, 1);
  g_open_call = event->call_id;
}

static void count_end(void* user_data, const ct_profile_event* event, int status) {
  counting* c = (counting*)user_data;
  if (atomic_load(&c->freed)) atomic_fetch_add(&c->after_free, 1);
  if (event->call_id != g_open_call || status != CT_OK) atomic_fetch_add(&c->unmatched, 1);
  g_open_call = 0;
  atomic_fetch_add(&c->ends, 1);
}

#define THREADS 4

static atomic_int g_stop = 0;
static atomic_long g_run_failures = 0;

static void* run_adds(void* arg) {
  (void)arg;
  const ct_op* add = NULL;
  ct_op_find("add", &add);
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
  int64_t shape[1] = {8};
  ct_tensor ta = view(a, F32, 1, shape, NULL), to = view(out, F32, 1, shape, NULL);
  const ct_tensor* in[2] = {&ta, &ta};
  const ct_tensor* outs[1] = {&to};
  ct_plan* plan = NULL;
  if (ct_plan_create(add, in, 2, outs, 1, NULL, 0, NULL, &plan) != CT_OK) {
    atomic_fetch_add(&g_run_failures, 1);
    return NULL;
  }
  for (int i = 0; !atomic_load(&g_stop); ++i) {
    const int status = i % 2 ? ct_plan_run(plan) : ct_op_run(add, in, 2, outs, 1, NULL, 0, NULL);
    if (status != CT_OK || out[7] != 16) atomic_fetch_add(&g_run_failures, 1);
  }
  ct_plan_destroy(plan);
  return NULL;
}

static counting* new_counting_profiler(void) {
  counting* c = calloc(1, sizeof *c);
  if (!c) return NULL;
  ct_profiler p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.user_data = c;
  p.begin = count_begin;
  p.end = count_end;
  if (ct_set_profiler(&p) != CT_OK) {
    free(c);
    return NULL;
  }
  return c;
}

static void test_threads_while_swapping(int rounds) {
  pthread_t threads[THREADS];
  int started = 0;
  for (int t = 0; t < THREADS; ++t)
    started += pthread_create(&threads[t], NULL, run_adds, NULL) == 0;
  check(started == THREADS, "%d threads started", started);
  long total_begins = 0, total_ends = 0, unmatched = 0, after_free = 0;
  int swaps = 0;
  counting* current = new_counting_profiler();
  for (int round = 0; round < rounds && current; ++round) {
    /* Let the threads run a few ops under this profiler. */
    while (atomic_load(&current->ends) < 3 && atomic_load(&g_run_failures) == 0 &&
           started == THREADS)
      sched_yield();
    /* Replace `current` by nothing (odd rounds) or straight by the next profiler (even rounds):
     * either way, once ct_set_profiler has returned, nothing may reach it any more. */
    counting* next = NULL;
    if (round % 2) {
      ct_set_profiler(NULL);
    } else {
      next = new_counting_profiler();
      if (!next) break;
    }
    const long begins = atomic_load(&current->begins), ends = atomic_load(&current->ends);
    atomic_store(&current->freed, 1);
    for (volatile int spin = 0; spin < 20000; spin = spin + 1) {
    }
    total_begins += begins;
    total_ends += ends;
    unmatched += atomic_load(&current->unmatched);
    after_free += atomic_load(&current->after_free);
    if (atomic_load(&current->begins) != begins || atomic_load(&current->ends) != ends)
      ++after_free;
    free(current); /* the guarantee: safe as soon as ct_set_profiler has returned */
    ++swaps;
    current = next ? next : new_counting_profiler();
  }
  ct_set_profiler(NULL);
  free(current);
  atomic_store(&g_stop, 1);
  for (int t = 0; t < started; ++t) pthread_join(threads[t], NULL);
  check(swaps == rounds, "%d profilers installed and replaced while %d threads ran ops", rounds,
        THREADS);
  check(atomic_load(&g_run_failures) == 0, "every run computed a + a");
  check(total_begins == total_ends && total_begins > 0,
        "every begin has its end (%ld begins, %ld ends)", total_begins, total_ends);
  check(unmatched == 0, "each end pairs with its thread's begin by call id, with CT_OK");
  check(after_free == 0, "no callback reached a profiler after ct_set_profiler replaced it");
}

/* Call ids are unique across threads while one profiler stays installed. */
#define ID_THREADS 3
#define ID_RUNS 500
static uint64_t g_ids[ID_THREADS][ID_RUNS];
static _Thread_local int g_id_slot = -1;
static _Thread_local int g_id_count = 0;

static void id_begin(void* user_data, const ct_profile_event* event) {
  (void)user_data;
  if (g_id_slot >= 0 && g_id_count < ID_RUNS) g_ids[g_id_slot][g_id_count++] = event->call_id;
}

static void* run_for_ids(void* arg) {
  g_id_slot = (int)(intptr_t)arg;
  const ct_op* neg = NULL;
  ct_op_find("negative", &neg);
  float a[4] = {1, 2, 3, 4}, out[4];
  int64_t shape[1] = {4};
  ct_tensor ta = view(a, F32, 1, shape, NULL), to = view(out, F32, 1, shape, NULL);
  const ct_tensor* in[1] = {&ta};
  const ct_tensor* outs[1] = {&to};
  for (int i = 0; i < ID_RUNS; ++i) ct_op_run(neg, in, 1, outs, 1, NULL, 0, NULL);
  return NULL;
}

static int compare_ids(const void* a, const void* b) {
  const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return (x > y) - (x < y);
}

static void test_call_ids_unique_across_threads(void) {
  if (!find_op("negative")) return;
  ct_profiler p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.begin = id_begin; /* end may be NULL */
  expect_status(ct_set_profiler(&p), CT_OK, "install a begin-only profiler");
  pthread_t threads[ID_THREADS];
  for (int t = 0; t < ID_THREADS; ++t)
    pthread_create(&threads[t], NULL, run_for_ids, (void*)(intptr_t)t);
  for (int t = 0; t < ID_THREADS; ++t) pthread_join(threads[t], NULL);
  ct_set_profiler(NULL);
  static uint64_t all[ID_THREADS * ID_RUNS];
  memcpy(all, g_ids, sizeof all);
  qsort(all, ID_THREADS * ID_RUNS, sizeof all[0], compare_ids);
  int unique = all[0] != 0;
  for (int i = 1; i < ID_THREADS * ID_RUNS; ++i) unique &= all[i] != all[i - 1];
  check(unique, "%d runs on %d threads got distinct, non-zero call ids", ID_THREADS * ID_RUNS,
        ID_THREADS);
}

int main(int argc, char** argv) {
  /* The number of profilers the thread test swaps (fewer under valgrind). */
  const int rounds = argc > 1 ? atoi(argv[1]) : 40;
  test_nothing_installed_and_struct_sizes();
  test_longer_struct_is_accepted();
  test_op_run_events();
  test_failing_kernel_and_nested_runs();
  test_plan_events();
  test_dynamic_op_event();
  test_threads_while_swapping(rounds > 0 ? rounds : 1);
  test_call_ids_unique_across_threads();
  return tap_finish();
}
