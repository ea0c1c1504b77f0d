/* fast_call.c - whole calls with out= in one crossing: the arrays are read in C (array_view.c),
 * checked (host memory, writable outputs) and run, without Python code in between. Also the
 * replay of a bound call on new arrays (ctpy_bound_run), which reads them the same way. */
#include "binding.h"

void ctpy_mark_written_locked(PyObject* outs) {
  /* As torch's own out= and in-place ops do: autograd then refuses a backward pass that needs
   * the old values instead of computing it from the new ones. The write has happened and the
   * call succeeded, so a failure here (which torch gives only for objects that are not tensors,
   * never passed) is cleared rather than reported. */
  if (!ctpy_increment_version || !ctpy_tensor_type) return;
  const int is_tuple = PyTuple_CheckExact(outs), is_list = PyList_CheckExact(outs);
  const Py_ssize_t n = is_tuple ? PyTuple_Size(outs) : (is_list ? PyList_Size(outs) : 1);
  PyObject* group = NULL;
  for (int pass = 0; pass < 2; ++pass) { /* count, then fill */
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* o =
          is_tuple ? PyTuple_GetItem(outs, i) : (is_list ? PyList_GetItem(outs, i) : outs);
      if (!o || !PyObject_TypeCheck(o, (PyTypeObject*)ctpy_tensor_type)) continue;
      if (group) {
        Py_INCREF(o);
        PyTuple_SetItem(group, count, o);
      }
      ++count;
    }
    if (pass == 0 && (count == 0 || !(group = PyTuple_New(count)))) break;
  }
  PyObject* done = group ? PyObject_CallOneArg(ctpy_increment_version, group) : NULL;
  Py_XDECREF(done);
  Py_XDECREF(group);
  if (PyErr_Occurred()) PyErr_Clear();
}

/* Calls whose tensors all have at most this many elements run holding the GIL: they take
 * microseconds, and CPU kernels stay on one thread below their grain size. */
#define CTPY_SMALL_NUMEL 4096
int ctpy_is_small(const ctpy_frame* f, int32_t n, int32_t n_out) {
  for (int32_t i = 0; i < n + n_out; ++i) {
    const ct_tensor* t = f->tensors[i];
    if (!t) continue;
    int64_t numel = 1;
    for (int32_t d = 0; d < t->ndim; ++d) {
      numel *= t->shape[d];
      if (numel > CTPY_SMALL_NUMEL || numel < 0) return 0;
    }
  }
  return 1;
}

/* The end of a one-crossing call, entered holding the GIL (`gil`) with the tensors collected
 * in `f`: with `rc` set, lets everything go and returns it (nothing run); else runs `op` on the
 * n inputs and n_out outputs, marks `written` (when not NULL) and lets the capsules go. Small
 * calls keep the GIL: releasing and taking it again costs more than their work. */
static int ctpy_run_collected(ctpy_frame* f, PyGILState_STATE gil, int rc, const ct_op* op,
                              int32_t n, int32_t n_out, const ct_attr* attrs, int32_t num_attrs,
                              const ct_context* context, PyObject* written) {
  if (rc) {
    ctpy_drop_owned(f, CTPY_FAST_TENSORS);
    PyGILState_Release(gil);
    return rc;
  }
  const int hold = ctpy_is_small(f, n, n_out);
  if (!hold) PyGILState_Release(gil);
  const int status =
      ct_op_run(op, (const ct_tensor* const*)f->tensors, n, (const ct_tensor* const*)f->tensors + n,
                n_out, attrs, num_attrs, context);
  if (!hold) gil = PyGILState_Ensure();
  if (status == CT_OK && written) ctpy_mark_written_locked(written);
  ctpy_drop_owned(f, n + n_out);
  PyGILState_Release(gil);
  return status;
}

/* Reads `args` (inputs) and `outs` (outputs) into the frame. Returns 0, or CTPY_FAST_NEED_PYTHON
 * for anything but host tensors and writable outputs. */
static int ctpy_collect_call(ctpy_frame* f, PyObject* args, PyObject* outs, int32_t* n,
                             int32_t* n_out) {
  *n = ctpy_collect(f, args, 0, CTPY_READ_INPUT);
  *n_out = *n < 0 ? -1 : ctpy_collect(f, outs, *n, CTPY_READ_OUTPUT);
  if (*n < 0 || *n_out < 0) return CTPY_FAST_NEED_PYTHON;
  for (int32_t i = 0; i < *n + *n_out; ++i) {
    if (f->tensors[i]->device.device_type != CT_DEVICE_CPU ||
        (i >= *n && (f->meta[i] & CTPY_META_READ_ONLY))) {
      return CTPY_FAST_NEED_PYTHON;
    }
  }
  return 0;
}

int ctpy_fast_call(ctpy_frame* f, const ct_op* op, intptr_t args, intptr_t outs,
                   const ct_attr* attrs, int32_t num_attrs) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int32_t n, n_out;
  const int rc = ctpy_collect_call(f, (PyObject*)args, (PyObject*)outs, &n, &n_out);
  return ctpy_run_collected(f, gil, rc, op, n, n_out, attrs, num_attrs, NULL, (PyObject*)outs);
}

int ctpy_run_held(ctpy_frame* f, const ct_op* op, int32_t n, int32_t n_out) {
  f->num_outputs = n_out;
  int status;
  const ct_plan* plan = ctpy_cached_plan(f, op, n + n_out, &status);
  if (status == CT_OK) {
    PyThreadState* state = ctpy_is_small(f, n, n_out) ? NULL : PyEval_SaveThread();
    if (plan) {
      status = ct_plan_run(plan);
    } else {
      status = ct_op_run(op, (const ct_tensor* const*)f->tensors, n,
                         (const ct_tensor* const*)f->tensors + n, n_out, NULL, 0, NULL);
    }
    if (state) PyEval_RestoreThread(state);
  }
  ctpy_drop_owned(f, n + n_out);
  return status;
}

int ctpy_fast_call_held(ctpy_frame* f, const ct_op* op, PyObject* args, PyObject* outs) {
  int32_t n, n_out;
  const int rc = ctpy_collect_call(f, args, outs, &n, &n_out);
  if (rc) {
    ctpy_drop_owned(f, CTPY_FAST_TENSORS);
    return rc;
  }
  const int status = ctpy_run_held(f, op, n, n_out);
  if (status == CT_OK) ctpy_mark_written_locked(outs);
  return status;
}

int32_t ctpy_layout_diff(ct_tensor* const* bound, ct_tensor* const* given, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    const ct_tensor* a = bound[i];
    const ct_tensor* b = given[i];
    if (!a || !b) {
      if (a != b) return i;
      continue;
    }
    if (a->ndim != b->ndim || a->device.device_type != b->device.device_type ||
        a->device.device_id != b->device.device_id || a->dtype.code != b->dtype.code ||
        a->dtype.bits != b->dtype.bits || a->dtype.lanes != b->dtype.lanes ||
        a->byte_offset != b->byte_offset) {
      return i;
    }
    int64_t compact_a = 1, compact_b = 1;
    for (int32_t d = a->ndim - 1; d >= 0; --d) {
      if (a->shape[d] != b->shape[d]) return i;
      const int64_t stride_a = a->strides ? a->strides[d] : compact_a;
      const int64_t stride_b = b->strides ? b->strides[d] : compact_b;
      if (stride_a != stride_b && a->shape[d] != 1) return i;
      compact_a *= a->shape[d];
      compact_b *= b->shape[d];
    }
  }
  return -1;
}

int ctpy_bound_run(ctpy_frame* f, ct_tensor* const* bound, const ct_op* op, int32_t n,
                   int32_t n_out, intptr_t args, intptr_t outs, const ct_attr* attrs,
                   int32_t num_attrs, const ct_context* context) {
  if (n < 0 || n_out < 0 || n + n_out > CTPY_FAST_TENSORS) return CTPY_FAST_NEED_PYTHON;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* in = (PyObject*)args;
  PyObject* out = (PyObject*)outs;
  int rc = 0;
  const Py_ssize_t given = PyTuple_Size(in);
  if (given < 0) {
    PyErr_Clear();
    rc = CTPY_FAST_NEED_PYTHON;
  } else if (given == 0) {
    for (int32_t i = 0; i < n; ++i) f->tensors[i] = bound[i];
  } else if (ctpy_collect(f, in, 0, CTPY_READ_INPUT) != n) {
    rc = CTPY_FAST_NEED_PYTHON;
  }
  if (rc == 0 && out == Py_None) {
    for (int32_t j = 0; j < n_out; ++j) f->tensors[n + j] = bound[n + j];
  } else if (rc == 0 && ctpy_collect(f, out, n, CTPY_READ_OUTPUT) != n_out) {
    rc = CTPY_FAST_NEED_PYTHON;
  }
  for (int32_t i = 0; rc == 0 && i < n + n_out; ++i) {
    const ct_tensor* t = f->tensors[i];
    const int is_given = i < n ? given > 0 : out != Py_None;
    if (!t) {
      if (bound[i]) rc = CTPY_FAST_NEED_PYTHON; /* only an absent optional input may be NULL */
    } else if (is_given && (t->device.device_type != CT_DEVICE_CPU ||
                            (i >= n && (f->meta[i] & CTPY_META_READ_ONLY)))) {
      rc = CTPY_FAST_NEED_PYTHON;
    }
  }
  if (rc == 0) {
    const int32_t diff = ctpy_layout_diff(bound, f->tensors, n + n_out);
    if (diff >= 0) rc = CTPY_LAYOUT_MISMATCH + diff;
  }
  /* Bound outputs (out None) are marked by the caller, which holds their objects. */
  return ctpy_run_collected(f, gil, rc, op, n, n_out, attrs, num_attrs, context,
                            out == Py_None ? NULL : out);
}
