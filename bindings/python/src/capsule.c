/* capsule.c - single DLPack capsules, for the Python side (through cffi, which releases the GIL
 * around every call: each function takes it back). The caller keeps a reference to `obj` for the
 * duration of the call. */
#include <string.h>

#include "binding.h"

const char ctpy_name_versioned[] = "dltensor_versioned";
const char ctpy_name_legacy[] = "dltensor";
const char ctpy_used_versioned[] = "used_dltensor_versioned";
const char ctpy_used_legacy[] = "used_dltensor";

int ctpy_capsule_open(void* obj, int consume, ctpy_capsule_view* view) {
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* o = (PyObject*)obj;
  int rc = CTPY_CAPSULE_OK;
  memset(view, 0, sizeof *view);
  if (!PyCapsule_CheckExact(o)) {
    rc = CTPY_CAPSULE_NOT_A_CAPSULE;
  } else if (PyCapsule_IsValid(o, ctpy_name_versioned)) {
    DLManagedTensorVersioned* m =
        (DLManagedTensorVersioned*)PyCapsule_GetPointer(o, ctpy_name_versioned);
    if (!m) {
      rc = CTPY_CAPSULE_NULL;
    } else if (m->version.major != CTPY_DLPACK_MAJOR) {
      rc = CTPY_CAPSULE_VERSION; /* not consumed: the capsule stays its producer's */
      view->version_major = m->version.major;
      view->version_minor = m->version.minor;
    } else {
      ctpy_normalize_dtype(&m->dl_tensor);
      view->tensor = &m->dl_tensor;
      view->managed = m;
      view->versioned = 1;
      view->flags = m->flags;
      view->version_major = m->version.major;
      view->version_minor = m->version.minor;
      if (consume && PyCapsule_SetName(o, ctpy_used_versioned) != 0) rc = CTPY_CAPSULE_NULL;
    }
  } else if (PyCapsule_IsValid(o, ctpy_name_legacy)) {
    DLManagedTensor* m = (DLManagedTensor*)PyCapsule_GetPointer(o, ctpy_name_legacy);
    if (!m) {
      rc = CTPY_CAPSULE_NULL;
    } else {
      ctpy_normalize_dtype(&m->dl_tensor);
      view->tensor = &m->dl_tensor;
      view->managed = m;
      view->versioned = 0;
      if (consume && PyCapsule_SetName(o, ctpy_used_legacy) != 0) rc = CTPY_CAPSULE_NULL;
    }
  } else {
    const char* name = PyCapsule_GetName(o);
    rc = (name && strncmp(name, "used_", 5) == 0) ? CTPY_CAPSULE_USED : CTPY_CAPSULE_WRONG_NAME;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(gil);
  return rc;
}

void ctpy_managed_delete(void* managed, int versioned) {
  if (versioned) {
    DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)managed;
    if (m->deleter) m->deleter(m);
  } else {
    DLManagedTensor* m = (DLManagedTensor*)managed;
    if (m->deleter) m->deleter(m);
  }
}

/* Holds the GIL around the deleter, as a capsule destructor would. */
void ctpy_managed_release(void* managed, int versioned) {
  if (!managed) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  ctpy_managed_delete(managed, versioned);
  PyGILState_Release(gil);
}

int ctpy_capsule_is_valid(void* obj, const char* name) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int valid = PyCapsule_IsValid((PyObject*)obj, name);
  PyGILState_Release(gil);
  return valid;
}

void* ctpy_capsule_get_pointer(void* obj, const char* name) {
  PyGILState_STATE gil = PyGILState_Ensure();
  void* pointer = PyCapsule_GetPointer((PyObject*)obj, name);
  if (!pointer) PyErr_Clear();
  PyGILState_Release(gil);
  return pointer;
}

int ctpy_capsule_set_name(void* obj, int which) {
  static const char* const names[] = {ctpy_name_legacy, ctpy_name_versioned, ctpy_used_legacy,
                                      ctpy_used_versioned};
  if (which < 0 || which > 3) return -1;
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = PyCapsule_SetName((PyObject*)obj, names[which]);
  if (rc != 0) PyErr_Clear();
  PyGILState_Release(gil);
  return rc;
}
