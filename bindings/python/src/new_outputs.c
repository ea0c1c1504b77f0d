/* new_outputs.c - whole calls without out= in one crossing: the inputs are read in C, the
 * outputs inferred and allocated through the framework of the first input (its `prepare`, see
 * Framework.fast_allocator), then run. Also the output cache: for the last few (op, prepare,
 * input layouts) of FastOp calls, what ct_op_infer said about the outputs and how to allocate
 * each, so that a call whose inputs were seen before skips infer (which depends on nothing else)
 * and builds no Python object before allocating. Emptied with the layout cache when the registry
 * changes (ctpy_caches_sync). With the GIL, one call at a time (FastOp's busy flag). */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "binding.h"

/* How to allocate output `info`: `prepare` called with the shape as a tuple and dtypes[dtype
 * key] gives (callable, args, kwargs or None), new references in *fn, *args and *kwargs (NULL
 * for None). Returns 0, or -1 (an exception may be set) when the dtype has no entry, prepare
 * fails, or it answers something else. */
static int ctpy_allocation_call(const ct_tensor_info* info, PyObject* prepare, PyObject* dtypes,
                                PyObject** fn, PyObject** args, PyObject** kwargs) {
  *fn = *args = *kwargs = NULL;
  const long key =
      (long)info->dtype.code | ((long)info->dtype.bits << 8) | ((long)info->dtype.lanes << 16);
  PyObject* key_obj = PyLong_FromLong(key);
  PyObject* dtype = key_obj ? PyDict_GetItem(dtypes, key_obj) : NULL; /* borrowed */
  Py_XDECREF(key_obj);
  PyObject* shape = dtype ? PyTuple_New(info->ndim) : NULL;
  for (int32_t d = 0; shape && d < info->ndim; ++d) {
    PyObject* extent = PyLong_FromLongLong(info->shape[d]);
    if (!extent || PyTuple_SetItem(shape, d, extent) != 0) Py_CLEAR(shape);
  }
  PyObject* how = shape ? PyObject_CallFunctionObjArgs(prepare, shape, dtype, NULL) : NULL;
  Py_XDECREF(shape);
  if (how && PyTuple_CheckExact(how) && PyTuple_Size(how) == 3) {
    *fn = PyTuple_GetItem(how, 0);
    *args = PyTuple_GetItem(how, 1);
    *kwargs = PyTuple_GetItem(how, 2);
    if (*kwargs == Py_None) *kwargs = NULL;
    if (*fn && *args && PyTuple_CheckExact(*args) && (!*kwargs || PyDict_CheckExact(*kwargs))) {
      Py_INCREF(*fn);
      Py_INCREF(*args);
      Py_XINCREF(*kwargs);
      Py_DECREF(how);
      return 0;
    }
  }
  Py_XDECREF(how);
  *fn = *args = *kwargs = NULL;
  return -1;
}

/* Appends `array`, an output just allocated (a new reference, which this takes; NULL: the
 * allocation raised), to the list `results` and reads it into slot i. Returns 0, or
 * CTPY_FAST_NEED_PYTHON. */
static int ctpy_adopt_new_output(ctpy_frame* f, int32_t i, PyObject* array, PyObject* results) {
  const int rc = !array || PyList_Append(results, array) != 0 ||
                         ctpy_view_locked(f, i, array, CTPY_READ_NEW_OUTPUT) != 0
                     ? CTPY_FAST_NEED_PYTHON
                     : 0;
  Py_XDECREF(array); /* `results` holds it */
  return rc;
}

/* Whether the outputs' bytes together fit in the machine's physical memory (true where the
 * system does not say). ct_op_infer has checked that each output's byte count fits in int64. */
static bool ctpy_outputs_fit_host_memory(const ct_tensor_info* infos, int32_t n_out) {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  static int64_t memory = -1;
  if (memory < 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    memory = pages > 0 && page > 0 && pages <= INT64_MAX / page ? (int64_t)pages * page : 0;
  }
  if (memory == 0) return true;
  int64_t total = 0;
  for (int32_t j = 0; j < n_out; ++j) {
    int64_t bytes = infos[j].dtype.bits / 8 > 0 ? infos[j].dtype.bits / 8 : 1;
    for (int32_t d = 0; d < infos[j].ndim; ++d) {
      if (__builtin_mul_overflow(bytes, infos[j].shape[d] > 0 ? infos[j].shape[d] : 0, &bytes))
        return false;
    }
    if (__builtin_add_overflow(total, bytes, &total)) return false;
  }
  return total <= memory;
#else
  (void)infos;
  (void)n_out;
  return true;
#endif
}

/* Allocates the n_out outputs inferred into f->infos: calls what ctpy_allocation_call gives
 * (`prepare`, and `dtypes`: a dict, dtype key -> the framework's dtype object), appends each new
 * array to the list `results` and reads it into slot n + j. Returns 0, or CTPY_FAST_NEED_PYTHON
 * (a dtype not in `dtypes`, an allocation that raised, an array the fast path cannot read),
 * leaving no exception. */
static int ctpy_allocate_locked(ctpy_frame* f, int32_t n, int32_t n_out, PyObject* prepare,
                                PyObject* dtypes, PyObject* results) {
  /* Outputs larger than the machine's memory: the Python path raises SizeOverflowError
   * (_run.check_host_outputs) without asking the framework for them. */
  if (!ctpy_outputs_fit_host_memory(f->infos, n_out)) return CTPY_FAST_NEED_PYTHON;
  int rc = 0;
  for (int32_t j = 0; rc == 0 && j < n_out; ++j) {
    PyObject *fn, *args, *kwargs;
    PyObject* array = NULL;
    if (ctpy_allocation_call(&f->infos[j], prepare, dtypes, &fn, &args, &kwargs) == 0) {
      array = PyObject_Call(fn, args, kwargs);
      Py_DECREF(fn);
      Py_DECREF(args);
      Py_XDECREF(kwargs);
    }
    rc = ctpy_adopt_new_output(f, n + j, array, results);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return rc;
}

/* Reads the inputs (`args`, a tuple): returns their count, or -1 (everything let go) when one is
 * not a host array the fast path reads, when `capacity` more outputs would not fit, or when the
 * results may need the first input's memory format (ctpy_torch_first_not_row_major). */
static int32_t ctpy_collect_new(ctpy_frame* f, PyObject* args, int32_t capacity) {
  const int32_t n = ctpy_collect(f, args, 0, CTPY_READ_INPUT);
  int ok = n > 0 ? !ctpy_torch_first_not_row_major(args, f->tensors[0]) : n == 0;
  ok = ok && n + capacity <= CTPY_FAST_TENSORS;
  for (int32_t i = 0; ok && i < n; ++i) ok = f->tensors[i]->device.device_type == CT_DEVICE_CPU;
  if (ok) return n;
  ctpy_drop_owned(f, CTPY_FAST_TENSORS);
  return -1;
}

int ctpy_fast_new(ctpy_frame* f, const ct_op* op, intptr_t args, const ct_attr* attrs,
                  int32_t num_attrs, int32_t capacity, intptr_t prepare, intptr_t dtypes,
                  intptr_t results) {
  if (capacity > CTPY_MAX_OUTPUTS) capacity = CTPY_MAX_OUTPUTS;
  PyGILState_STATE gil = PyGILState_Ensure();
  const int32_t n = ctpy_collect_new(f, (PyObject*)args, capacity);
  PyGILState_Release(gil);
  if (n < 0) return CTPY_FAST_NEED_PYTHON;
  f->num_outputs = 0;
  int status = ct_op_infer(op, (const ct_tensor* const*)f->tensors, n, attrs, num_attrs, f->infos,
                           capacity, &f->num_outputs);
  const int32_t n_out = status == CT_OK ? f->num_outputs : 0;
  gil = PyGILState_Ensure();
  const int rc = status == CT_OK ? ctpy_allocate_locked(f, n, n_out, (PyObject*)prepare,
                                                        (PyObject*)dtypes, (PyObject*)results)
                                 : 0;
  PyGILState_Release(gil);
  if (status == CT_OK && rc == 0) {
    status = ct_op_run(op, (const ct_tensor* const*)f->tensors, n,
                       (const ct_tensor* const*)f->tensors + n, n_out, attrs, num_attrs, NULL);
  }
  gil = PyGILState_Ensure();
  ctpy_drop_owned(f, n + n_out);
  PyGILState_Release(gil);
  return rc ? rc : status;
}

/* ---- The output cache ---- */
#define CTPY_OUTPUT_CACHE_SIZE 8
#define CTPY_OUTPUT_ENTRY_MAX_OUTPUTS 4
typedef struct ctpy_output_entry {
  const ct_op* op;
  PyObject* prepare; /* held, so that no other object takes its address */
  int32_t words;
  int64_t key[CTPY_LAYOUT_KEY_WORDS];
  int32_t n_out;
  ct_tensor_info infos[CTPY_OUTPUT_ENTRY_MAX_OUTPUTS];
  PyObject* fn[CTPY_OUTPUT_ENTRY_MAX_OUTPUTS];     /* held */
  PyObject* args[CTPY_OUTPUT_ENTRY_MAX_OUTPUTS];   /* held */
  PyObject* kwargs[CTPY_OUTPUT_ENTRY_MAX_OUTPUTS]; /* held, or NULL */
} ctpy_output_entry;
static ctpy_output_entry ctpy_output_cache[CTPY_OUTPUT_CACHE_SIZE];
static int32_t ctpy_output_cache_next = 0;

static void ctpy_output_entry_clear(ctpy_output_entry* e) {
  for (int32_t j = 0; j < e->n_out; ++j) {
    Py_CLEAR(e->fn[j]);
    Py_CLEAR(e->args[j]);
    Py_CLEAR(e->kwargs[j]);
  }
  Py_CLEAR(e->prepare);
  e->op = NULL;
  e->n_out = 0;
}

void ctpy_output_cache_clear(void) {
  for (int32_t i = 0; i < CTPY_OUTPUT_CACHE_SIZE; ++i)
    ctpy_output_entry_clear(&ctpy_output_cache[i]);
}

/* The entry for (op, prepare, key), or NULL. */
static const ctpy_output_entry* ctpy_output_cache_find(const ct_op* op, PyObject* prepare,
                                                       const int64_t* key, int32_t words) {
  ctpy_caches_sync();
  for (int32_t i = 0; i < CTPY_OUTPUT_CACHE_SIZE; ++i) {
    const ctpy_output_entry* e = &ctpy_output_cache[i];
    if (e->op == op && e->prepare == prepare && ctpy_same_key(e->words, e->key, words, key)) {
      return e;
    }
  }
  return NULL;
}

/* Remembers the call just inferred (f->infos, n_out outputs) under (op, prepare, key). */
static void ctpy_output_cache_add(const ct_op* op, PyObject* prepare, PyObject* dtypes,
                                  const int64_t* key, int32_t words, const ctpy_frame* f,
                                  int32_t n_out) {
  if (n_out > CTPY_OUTPUT_ENTRY_MAX_OUTPUTS) return;
  ctpy_output_entry* e = &ctpy_output_cache[ctpy_output_cache_next];
  ctpy_output_cache_next = (ctpy_output_cache_next + 1) % CTPY_OUTPUT_CACHE_SIZE;
  ctpy_output_entry_clear(e);
  for (int32_t j = 0; j < n_out; ++j) {
    e->n_out = j + 1; /* what ctpy_output_entry_clear lets go */
    if (ctpy_allocation_call(&f->infos[j], prepare, dtypes, &e->fn[j], &e->args[j],
                             &e->kwargs[j]) != 0) {
      PyErr_Clear();
      ctpy_output_entry_clear(e);
      return;
    }
    e->infos[j] = f->infos[j];
  }
  Py_INCREF(prepare);
  e->prepare = prepare;
  e->op = op;
  e->words = words;
  memcpy(e->key, key, sizeof(int64_t) * words);
}

/* Allocates an entry's outputs into slots n.. of the frame (their infos into f->infos), each
 * new array appended to `results`. Returns 0, or CTPY_FAST_NEED_PYTHON, leaving no exception. */
static int ctpy_allocate_cached(ctpy_frame* f, int32_t n, const ctpy_output_entry* e,
                                PyObject* results) {
  int rc = 0;
  for (int32_t j = 0; rc == 0 && j < e->n_out; ++j) {
    f->infos[j] = e->infos[j];
    rc =
        ctpy_adopt_new_output(f, n + j, PyObject_Call(e->fn[j], e->args[j], e->kwargs[j]), results);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return rc;
}

int ctpy_fast_new_held(ctpy_frame* f, const ct_op* op, PyObject* args, int32_t capacity,
                       PyObject* prepare, PyObject* dtypes, PyObject* results) {
  if (capacity > CTPY_MAX_OUTPUTS) capacity = CTPY_MAX_OUTPUTS;
  const int32_t n = ctpy_collect_new(f, args, capacity);
  if (n < 0) return CTPY_FAST_NEED_PYTHON;
  int64_t key[CTPY_LAYOUT_KEY_WORDS];
  const int32_t words = ctpy_layout_key(f, n, key);
  const ctpy_output_entry* cached =
      words < 0 ? NULL : ctpy_output_cache_find(op, prepare, key, words);
  if (cached) {
    const int rc = ctpy_allocate_cached(f, n, cached, results);
    if (rc != 0) {
      ctpy_drop_owned(f, n + cached->n_out);
      return rc;
    }
    return ctpy_run_held(f, op, n, cached->n_out);
  }
  f->num_outputs = 0;
  const int status = ct_op_infer(op, (const ct_tensor* const*)f->tensors, n, NULL, 0, f->infos,
                                 capacity, &f->num_outputs);
  const int32_t n_out = status == CT_OK ? f->num_outputs : 0;
  const int rc = status == CT_OK ? ctpy_allocate_locked(f, n, n_out, prepare, dtypes, results) : 0;
  if (status != CT_OK || rc != 0) {
    ctpy_drop_owned(f, n + n_out);
    return rc ? rc : status;
  }
  if (words >= 0) ctpy_output_cache_add(op, prepare, dtypes, key, words, f, n_out);
  return ctpy_run_held(f, op, n, n_out);
}
