/* frame.c - the per-call frame (ctpy_frame): opening the capsules the Python side put in
 * objects[], summarizing and inferring outputs, running, and releasing. */
#include <string.h>

#include "binding.h"

_Static_assert(CTPY_SUMMARY_SIZE == CTPY_MAX_OUTPUTS * (CT_MAX_NDIM + 2),
               "CTPY_SUMMARY_SIZE holds a dtype key, ndim and extents per output");
_Static_assert(CTPY_VIEW_STRIDES == CTPY_MAX_VIEWS * CT_MAX_NDIM,
               "CTPY_VIEW_STRIDES holds CT_MAX_NDIM strides per view");

int ctpy_open_locked(ctpy_frame* f, int32_t start, int32_t count) {
  if (start < 0 || count < 0 || start + count > CTPY_MAX_TENSORS) return -1 - start;
  int rc = 0;
  for (int32_t i = start; i < start + count; ++i) {
    const intptr_t raw = f->objects[i];
    f->tensors[i] = NULL;
    f->managed[i] = NULL;
    f->meta[i] = 0;
    if (raw == 0) continue;
    PyObject* o = (PyObject*)(raw & ~(intptr_t)1);
    const int consume = (int)(raw & 1);
    if (!PyCapsule_CheckExact(o)) {
      f->meta[i] = CTPY_CAPSULE_NOT_A_CAPSULE;
      rc = -1 - i;
      break;
    }
    if (PyCapsule_IsValid(o, ctpy_name_versioned)) {
      DLManagedTensorVersioned* m =
          (DLManagedTensorVersioned*)PyCapsule_GetPointer(o, ctpy_name_versioned);
      /* A major version other than 1 may lay out the tensor differently: refused before it is
       * consumed, so the capsule still belongs to its producer. */
      if (m && m->version.major != CTPY_DLPACK_MAJOR) {
        f->meta[i] = CTPY_CAPSULE_VERSION;
        rc = -1 - i;
        break;
      }
      if (!m || (consume && PyCapsule_SetName(o, ctpy_used_versioned) != 0)) {
        f->meta[i] = CTPY_CAPSULE_NULL;
        rc = -1 - i;
        break;
      }
      ctpy_normalize_dtype(&m->dl_tensor);
      f->tensors[i] = &m->dl_tensor;
      if (consume) f->managed[i] = m;
      f->meta[i] = ctpy_meta(&m->dl_tensor) | CTPY_META_VERSIONED |
                   ((m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) ? CTPY_META_READ_ONLY : 0);
    } else if (PyCapsule_IsValid(o, ctpy_name_legacy)) {
      DLManagedTensor* m = (DLManagedTensor*)PyCapsule_GetPointer(o, ctpy_name_legacy);
      if (!m || (consume && PyCapsule_SetName(o, ctpy_used_legacy) != 0)) {
        f->meta[i] = CTPY_CAPSULE_NULL;
        rc = -1 - i;
        break;
      }
      ctpy_normalize_dtype(&m->dl_tensor);
      f->tensors[i] = &m->dl_tensor;
      if (consume) f->managed[i] = m;
      f->meta[i] = ctpy_meta(&m->dl_tensor);
    } else {
      const char* name = PyCapsule_GetName(o);
      f->meta[i] =
          (name && strncmp(name, "used_", 5) == 0) ? CTPY_CAPSULE_USED : CTPY_CAPSULE_WRONG_NAME;
      rc = -1 - i;
      break;
    }
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return rc;
}

int ctpy_open(ctpy_frame* f, int32_t start, int32_t count) {
  PyGILState_STATE gil = PyGILState_Ensure();
  const int rc = ctpy_open_locked(f, start, count);
  PyGILState_Release(gil);
  return rc;
}

void ctpy_drop_owned(ctpy_frame* f, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    PyObject* owned = (PyObject*)f->owned[i];
    f->owned[i] = NULL;
    Py_XDECREF(owned);
  }
}

void ctpy_release(ctpy_frame* f, int32_t start, int32_t count) {
  if (start < 0 || count < 0 || start + count > CTPY_MAX_TENSORS) return;
  int any = 0;
  for (int32_t i = start; i < start + count; ++i) any |= f->managed[i] != NULL || f->owned[i];
  if (!any) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  for (int32_t i = start; i < start + count; ++i) {
    PyObject* owned = (PyObject*)f->owned[i];
    f->owned[i] = NULL;
    Py_XDECREF(owned);
  }
  for (int32_t i = start; i < start + count; ++i) {
    void* managed = f->managed[i];
    if (!managed) continue;
    f->managed[i] = NULL;
    ctpy_managed_delete(managed, (f->meta[i] & CTPY_META_VERSIONED) != 0);
  }
  PyGILState_Release(gil);
}

int32_t ctpy_summarize(ctpy_frame* f, int32_t count) {
  int32_t k = 0;
  if (count < 0 || count > CTPY_MAX_OUTPUTS) return -1;
  for (int32_t i = 0; i < count; ++i) {
    const ct_tensor_info* info = &f->infos[i];
    const int32_t ndim = info->ndim < 0 ? 0 : (info->ndim > CT_MAX_NDIM ? CT_MAX_NDIM : info->ndim);
    f->summary[k++] = (int64_t)info->dtype.code | ((int64_t)info->dtype.bits << 8) |
                      ((int64_t)info->dtype.lanes << 16);
    f->summary[k++] = ndim;
    for (int32_t d = 0; d < ndim; ++d) f->summary[k++] = info->shape[d];
  }
  return k;
}

int32_t ctpy_infer(ctpy_frame* f, const ct_op* op, int32_t num_inputs, const ct_attr* attrs,
                   int32_t num_attrs, int32_t capacity) {
  if (capacity > CTPY_MAX_OUTPUTS) capacity = CTPY_MAX_OUTPUTS;
  f->num_outputs = 0;
  const int status = ct_op_infer(op, (const ct_tensor* const*)f->tensors, num_inputs, attrs,
                                 num_attrs, f->infos, capacity, &f->num_outputs);
  if (status != CT_OK) return status;
  return ctpy_summarize(f, f->num_outputs);
}

int ctpy_open_run(ctpy_frame* f, const ct_op* op, int32_t num_inputs, int32_t num_outputs,
                  const ct_attr* attrs, int32_t num_attrs, const ct_context* context) {
  const int rc = ctpy_open(f, num_inputs, num_outputs);
  if (rc) return 1 + (-1 - rc);
  return ct_op_run(op, (const ct_tensor* const*)f->tensors, num_inputs,
                   (const ct_tensor* const*)f->tensors + num_inputs, num_outputs, attrs, num_attrs,
                   context);
}

int ctpy_run_fast(ctpy_frame* f, const ct_op* op, int32_t num_inputs, int32_t num_outputs,
                  const ct_attr* attrs, int32_t num_attrs) {
  const int rc = ctpy_open(f, 0, num_inputs + num_outputs);
  if (rc) return 1 + (-1 - rc);
  for (int32_t i = 0; i < num_inputs + num_outputs; ++i) {
    if (f->tensors[i] && f->tensors[i]->device.device_type != CT_DEVICE_CPU) {
      return CTPY_FAST_NOT_CPU;
    }
  }
  for (int32_t i = num_inputs; i < num_inputs + num_outputs; ++i) {
    if (f->meta[i] & CTPY_META_READ_ONLY) return CTPY_FAST_READ_ONLY;
  }
  return ct_op_run(op, (const ct_tensor* const*)f->tensors, num_inputs,
                   (const ct_tensor* const*)f->tensors + num_inputs, num_outputs, attrs, num_attrs,
                   NULL);
}
