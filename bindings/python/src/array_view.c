/* array_view.c - the array types the fast paths read themselves, and reading them into a frame:
 * exact numpy.ndarray straight from NumPy's array object, exact torch.Tensor through DLPack's
 * exchange API, anything else of those types through a capsule. */
#include <string.h>

#include "binding.h"

PyObject* ctpy_ndarray_type = NULL;        /* numpy.ndarray (exact type only) */
PyObject* ctpy_tensor_type = NULL;         /* torch.Tensor (exact type only) */
PyObject* ctpy_increment_version = NULL;   /* torch's autograd version bump (a tuple of tensors) */
static PyObject* ctpy_to_dlpack = NULL;    /* torch.utils.dlpack.to_dlpack */
static PyObject* ctpy_grad_enabled = NULL; /* torch.is_grad_enabled */
/* torch.Tensor's own descriptors, called directly on exact tensors: `requires_grad` and
 * `_version` (data descriptors) and the methods is_neg and is_conj (method descriptors). Looking
 * each up on the tensor and binding a method costs more than the call itself. NULL: not
 * configured (the tensor is then read the Python way). */
static PyObject* ctpy_requires_grad_descr = NULL;
static PyObject* ctpy_version_descr = NULL;
static PyObject* ctpy_is_neg_descr = NULL;
static PyObject* ctpy_is_conj_descr = NULL;
static PyObject* ctpy_str_dlpack = NULL;
static PyObject* ctpy_str_requires_grad = NULL;
static PyObject* ctpy_str_version = NULL;
static PyObject* ctpy_str_is_neg = NULL;
static PyObject* ctpy_str_is_conj = NULL;
static PyObject* ctpy_no_args = NULL;
static PyObject* ctpy_versioned_kwargs = NULL; /* {"max_version": (1, 0)} */

/* ---- DLPack's exchange API (DLPack 1.2+): a producer type's `__dlpack_c_exchange_api__` is a
 * capsule "dlpack_exchange_api" holding a static table of C functions. The one used here fills a
 * caller's DLTensor from an object without allocating (shape and strides point into the
 * object, valid while it lives) and without synchronising: torch.Tensor has it. The layout below
 * is the table's as the DLPack specification defines it. */
typedef struct ctpy_dlpack_exchange_api {
  DLPackVersion version; /* header: version, then the previous table in the chain */
  void* prev_api;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out); /* may be NULL */
  void* current_work_stream;
} ctpy_dlpack_exchange_api;
typedef int (*ctpy_dltensor_reader)(void* py_object, DLTensor* out);
static ctpy_dltensor_reader ctpy_tensor_reader = NULL; /* for ctpy_tensor_type, or NULL */

/* The exchange API's DLTensor reader of `type` (major version 1, minor 2 or more), or NULL. */
static ctpy_dltensor_reader ctpy_exchange_reader(PyObject* type) {
  PyObject* capsule = PyObject_GetAttrString(type, "__dlpack_c_exchange_api__");
  ctpy_dltensor_reader reader = NULL;
  if (capsule && PyCapsule_CheckExact(capsule)) {
    const ctpy_dlpack_exchange_api* api = PyCapsule_GetPointer(capsule, "dlpack_exchange_api");
    if (api && api->version.major == 1 && api->version.minor >= 2) {
      reader = api->dltensor_from_py_object_no_sync;
    }
  }
  Py_XDECREF(capsule); /* the table is static: it outlives the capsule object */
  PyErr_Clear();
  return reader;
}

static void ctpy_replace(PyObject** slot, PyObject* value) {
  if (!value) return;
  Py_INCREF(value);
  Py_XSETREF(*slot, value);
}

/* Sets *slot to the class attribute `name` of `type` (a descriptor: attribute access on a class
 * returns it unbound) when it is one of the expected kind: a data descriptor when `data`, else a
 * callable. Otherwise NULL, and the fast paths leave tensors of that type to the Python path. */
static void ctpy_set_descriptor(PyObject** slot, PyObject* type, PyObject* name, int data) {
  PyObject* descr = PyObject_GetAttr(type, name);
  if (descr && (data ? Py_TYPE(descr)->tp_descr_get == NULL || Py_TYPE(descr)->tp_descr_set == NULL
                     : !PyCallable_Check(descr))) {
    Py_CLEAR(descr);
  }
  PyErr_Clear();
  Py_XSETREF(*slot, descr);
}

int ctpy_configure_types(PyObject* ndarray_type, PyObject* tensor_type, PyObject* to_dlpack,
                         PyObject* increment_version, PyObject* grad_enabled) {
  if (!ctpy_str_dlpack) {
    ctpy_str_dlpack = PyUnicode_InternFromString("__dlpack__");
    ctpy_str_requires_grad = PyUnicode_InternFromString("requires_grad");
    ctpy_str_version = PyUnicode_InternFromString("_version");
    ctpy_str_is_neg = PyUnicode_InternFromString("is_neg");
    ctpy_str_is_conj = PyUnicode_InternFromString("is_conj");
    ctpy_no_args = PyTuple_New(0);
    ctpy_versioned_kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
    if (!ctpy_str_dlpack || !ctpy_str_requires_grad || !ctpy_str_version || !ctpy_str_is_neg ||
        !ctpy_str_is_conj || !ctpy_no_args || !ctpy_versioned_kwargs) {
      Py_CLEAR(ctpy_str_dlpack);
      return -1;
    }
  }
  ctpy_replace(&ctpy_ndarray_type, ndarray_type);
  ctpy_replace(&ctpy_tensor_type, tensor_type);
  ctpy_replace(&ctpy_to_dlpack, to_dlpack);
  ctpy_replace(&ctpy_increment_version, increment_version);
  ctpy_replace(&ctpy_grad_enabled, grad_enabled);
  if (tensor_type) {
    ctpy_tensor_reader = ctpy_exchange_reader(tensor_type);
    ctpy_set_descriptor(&ctpy_requires_grad_descr, tensor_type, ctpy_str_requires_grad, 1);
    ctpy_set_descriptor(&ctpy_version_descr, tensor_type, ctpy_str_version, 1);
    ctpy_set_descriptor(&ctpy_is_neg_descr, tensor_type, ctpy_str_is_neg, 0);
    ctpy_set_descriptor(&ctpy_is_conj_descr, tensor_type, ctpy_str_is_conj, 0);
  }
  return 0;
}

/* The truth of torch tensor `o`'s flag read through `descr` (a data descriptor when `data`, else
 * a method taking no arguments): 1, 0, or -1 when it cannot be read (no descriptor, an error;
 * no exception is left). */
static int ctpy_torch_flag(PyObject* o, PyObject* descr, int data) {
  if (!descr) return -1;
  PyObject* value = data ? Py_TYPE(descr)->tp_descr_get(descr, o, (PyObject*)Py_TYPE(o))
                         : PyObject_Vectorcall(descr, &o, 1, NULL);
  const int flag = value == Py_True ? 1 : (value == Py_False ? 0 : -1);
  Py_XDECREF(value);
  if (flag < 0) PyErr_Clear();
  return flag;
}

/* Whether torch tensor `o` may be an inference tensor: reading its version counter fails for
 * those ("Inference tensors do not track version counter"), and costs less than is_inference(),
 * which goes through torch's argument parser. Errors count as yes. */
static int ctpy_torch_maybe_inference(PyObject* o) {
  if (!ctpy_version_descr) return 1;
  PyObject* version =
      Py_TYPE(ctpy_version_descr)->tp_descr_get(ctpy_version_descr, o, (PyObject*)Py_TYPE(o));
  if (version) {
    Py_DECREF(version);
    return 0;
  }
  PyErr_Clear();
  return 1;
}

/* Whether torch's grad mode is on (torch.is_grad_enabled()); unknown counts as on. */
static int ctpy_torch_grad_mode(void) {
  if (!ctpy_grad_enabled) return 1;
  PyObject* value = PyObject_CallNoArgs(ctpy_grad_enabled);
  const int on = value != Py_False;
  Py_XDECREF(value);
  if (!value) PyErr_Clear();
  return on;
}

/* True when exact torch tensor `o` (of DLPack dtype code `dtype_code`) must go the Python way,
 * which applies torch's rules (see ctensor/_torch_rules.py): an input or output that requires
 * grad while grad mode is on (the call goes through autograd, or out= is refused), or an output
 * that may be an inference tensor (refused outside torch.inference_mode). Only floating and
 * complex tensors (codes 2, 4, 5) can require grad; grad mode is asked only about tensors that
 * do. Plain tensors cost one read of requires_grad (and of the version counter for outputs). */
static int ctpy_torch_declines(PyObject* o, int output, int dtype_code) {
  if (dtype_code == 2 || dtype_code == 4 || dtype_code == 5) {
    const int grad = ctpy_torch_flag(o, ctpy_requires_grad_descr, 1);
    if (grad != 0 && (grad < 0 || ctpy_torch_grad_mode())) return 1;
  }
  return output && ctpy_torch_maybe_inference(o);
}

/* True when torch tensor `o` has a lazy negative or conjugate bit (views such as z.conj() and
 * z.conj().imag): its memory holds values that torch negates or conjugates on access, and a
 * DLPack export shows the raw memory. Such tensors go the Python way, which resolves them. Only
 * floating and complex tensors (DLPack codes 2, 4, 5) can carry the bits. Errors count as set. */
static int ctpy_torch_lazy_bits(PyObject* o, int dtype_code) {
  if (dtype_code != 2 && dtype_code != 4 && dtype_code != 5) return 0;
  if (ctpy_torch_flag(o, ctpy_is_neg_descr, 0) != 0) return 1;
  return dtype_code == 5 && ctpy_torch_flag(o, ctpy_is_conj_descr, 0) != 0;
}

/* A new reference to a capsule of `o`, or NULL when the Python path must handle it (another
 * type, a tensor that requires grad or that ctpy_torch_declines, a producer that refuses). Never
 * leaves an exception. */
static PyObject* ctpy_capsule_of(PyObject* o, int output) {
  PyObject* type = (PyObject*)Py_TYPE(o);
  PyObject* capsule = NULL;
  if (type == ctpy_ndarray_type && ctpy_str_dlpack) {
    if (output) {
      PyObject* method = PyObject_GetAttr(o, ctpy_str_dlpack);
      if (method) {
        capsule = PyObject_Call(method, ctpy_no_args, ctpy_versioned_kwargs);
        Py_DECREF(method);
      }
    } else {
      capsule = PyObject_CallMethodObjArgs(o, ctpy_str_dlpack, NULL);
    }
  } else if (type == ctpy_tensor_type && ctpy_to_dlpack) {
    PyObject* grad = PyObject_GetAttr(o, ctpy_str_requires_grad);
    if (grad == Py_False && !ctpy_torch_declines(o, output, 2) &&
        !ctpy_torch_lazy_bits(o, 5)) { /* 5: both bits, whatever the dtype */
      capsule = PyObject_CallFunctionObjArgs(ctpy_to_dlpack, o, NULL);
    }
    Py_XDECREF(grad);
  }
  if (!capsule) PyErr_Clear();
  if (capsule && !PyCapsule_CheckExact(capsule)) {
    Py_DECREF(capsule);
    capsule = NULL;
  }
  return capsule;
}

/* ---- NumPy arrays read without DLPack ----------------------------------------------------
 * The fields of NumPy's array and dtype objects that the direct path reads. Their layout is
 * part of NumPy's C ABI and the same in NumPy 1.x and 2.x for these fields; the binding checks
 * it at import against the DLPack export of a few arrays (ctpy_numpy_view vs the capsule) and
 * turns the direct path off if anything differs. */
typedef struct ctpy_np_descr {
  PyObject ob_base;
  PyTypeObject* typeobj;
  char kind;
  char type;
  char byteorder;
  char former_flags;
  int type_num;
} ctpy_np_descr;

typedef struct ctpy_np_array {
  PyObject ob_base;
  char* data;
  int nd;
  intptr_t* dimensions;
  intptr_t* strides;
  PyObject* base;
  ctpy_np_descr* descr;
  int flags;
} ctpy_np_array;

#define CTPY_NPY_ALIGNED 0x0100
#define CTPY_NPY_WRITEABLE 0x0400
static int ctpy_direct_enabled = 0;

int ctpy_numpy_direct(int enable) {
  const int previous = ctpy_direct_enabled;
  ctpy_direct_enabled = enable && sizeof(intptr_t) == sizeof(int64_t);
  return previous;
}

/* The ct dtype of a NumPy type number (native byte order), or bits 0 when not handled here:
 * 0-12 are bool, byte, ubyte, short, ushort, int, uint, long, ulong, longlong, ulonglong, float
 * and double; 23 is half. */
static ct_dtype ctpy_numpy_dtype(int type_num) {
  static const ct_dtype table[13] = {
      {CT_DTYPE_BOOL, 8, 1},
      {CT_DTYPE_INT, 8, 1},
      {CT_DTYPE_UINT, 8, 1},
      {CT_DTYPE_INT, 8 * sizeof(short), 1},
      {CT_DTYPE_UINT, 8 * sizeof(short), 1},
      {CT_DTYPE_INT, 8 * sizeof(int), 1},
      {CT_DTYPE_UINT, 8 * sizeof(int), 1},
      {CT_DTYPE_INT, 8 * sizeof(long), 1},
      {CT_DTYPE_UINT, 8 * sizeof(long), 1},
      {CT_DTYPE_INT, 8 * sizeof(long long), 1},
      {CT_DTYPE_UINT, 8 * sizeof(long long), 1},
      {CT_DTYPE_FLOAT, 32, 1},
      {CT_DTYPE_FLOAT, 64, 1},
  };
  if (type_num >= 0 && type_num < 13) return table[type_num];
  const ct_dtype half = {CT_DTYPE_FLOAT, 16, 1}, none = {0, 0, 1};
  return type_num == 23 ? half : none;
}

/* Fills `view` (strides in elements into `strides`, CT_MAX_NDIM entries) from an exact
 * numpy.ndarray, without exporting it. Returns 0, or 1 when the DLPack path must handle it:
 * another type, a dtype other than bool/int/uint/float16-64 in native byte order, an unaligned
 * array, strides that are not multiples of the item size, a read-only output. */
static int ctpy_numpy_view_locked(PyObject* o, ct_tensor* view, int64_t* strides, int output) {
  if (!ctpy_direct_enabled || (PyObject*)Py_TYPE(o) != ctpy_ndarray_type) return 1;
  const ctpy_np_array* a = (const ctpy_np_array*)o;
  const ctpy_np_descr* descr = a->descr;
  if (!descr || a->nd < 0 || a->nd > CT_MAX_NDIM) return 1;
  if (descr->byteorder == '>' || descr->byteorder == '<') {
    const uint16_t probe = 1;
    const int little = *(const uint8_t*)&probe == 1;
    if (descr->byteorder != (little ? '<' : '>')) return 1;
  }
  if (!(a->flags & CTPY_NPY_ALIGNED)) return 1;
  if (output && !(a->flags & CTPY_NPY_WRITEABLE)) return 1;
  const ct_dtype dtype = ctpy_numpy_dtype(descr->type_num);
  if (dtype.bits == 0) return 1;
  const int64_t item = dtype.bits / 8;
  for (int d = 0; d < a->nd; ++d) {
    const int64_t stride = (int64_t)a->strides[d];
    if (stride % item != 0) return 1;
    strides[d] = stride / item;
  }
  view->data = a->data;
  view->device.device_type = CT_DEVICE_CPU;
  view->device.device_id = 0;
  view->ndim = a->nd;
  view->dtype = dtype;
  view->shape = a->nd ? (int64_t*)a->dimensions : strides; /* 0-d: NumPy may hold NULL */
  view->strides = a->nd ? strides : NULL;
  view->byte_offset = 0;
  return 0;
}

int ctpy_numpy_view(intptr_t array, ct_tensor* view, int64_t* strides, int32_t output) {
  PyGILState_STATE gil = PyGILState_Ensure();
  const int rc = ctpy_numpy_view_locked((PyObject*)array, view, strides, output);
  PyGILState_Release(gil);
  return rc;
}

/* An exact numpy.ndarray goes directly into a frame view when it can (slots below
 * CTPY_MAX_VIEWS), a torch.Tensor through the exchange API, anything else through a capsule the
 * frame owns, opened at once. `output` is a CTPY_READ_* value. */
int ctpy_view_locked(ctpy_frame* f, int32_t i, PyObject* item, int output) {
  f->objects[i] = 0;
  if (i < CTPY_MAX_VIEWS &&
      ctpy_numpy_view_locked(item, &f->views[i], &f->view_strides[i * CT_MAX_NDIM], output) == 0) {
    f->tensors[i] = &f->views[i];
    f->managed[i] = NULL;
    f->meta[i] = ctpy_meta(&f->views[i]);
    return 0;
  }
  if (i < CTPY_MAX_VIEWS && ctpy_tensor_reader && (PyObject*)Py_TYPE(item) == ctpy_tensor_type) {
    /* Tensors torch's autograd and inference rules apply to go the Python way; others are read
     * as the Python path reads them (detached). Outputs just allocated need no check. */
    const int fresh = output == CTPY_READ_NEW_OUTPUT;
    if (ctpy_tensor_reader(item, &f->views[i]) == 0) {
      const int code = f->views[i].dtype.code;
      if (!fresh && (ctpy_torch_declines(item, output, code) || ctpy_torch_lazy_bits(item, code))) {
        return -1;
      }
      f->tensors[i] = &f->views[i];
      f->managed[i] = NULL;
      f->meta[i] = ctpy_meta(&f->views[i]);
      return 0;
    }
    PyErr_Clear();
  }
  PyObject* capsule = ctpy_capsule_of(item, output);
  if (!capsule) return -1;
  f->owned[i] = capsule;
  f->objects[i] = (intptr_t)capsule;
  return ctpy_open_locked(f, i, 1) == 0 ? 0 : -1;
}

/* The item of `seq` at i: a tuple's item, a list's (which Python code run while reading may
 * have shortened: NULL then), or `seq` itself. */
static PyObject* ctpy_item(PyObject* seq, int is_tuple, int is_list, Py_ssize_t i) {
  if (is_tuple) return PyTuple_GET_ITEM(seq, i);
  return is_list ? PyList_GetItem(seq, i) : seq;
}

int32_t ctpy_collect(ctpy_frame* f, PyObject* seq, int32_t start, int output) {
  const int is_tuple = PyTuple_CheckExact(seq), is_list = PyList_CheckExact(seq);
  const Py_ssize_t n = is_tuple ? PyTuple_GET_SIZE(seq) : (is_list ? PyList_GET_SIZE(seq) : 1);
  if (n > CTPY_FAST_TENSORS - start) return -1;
  /* Types first, so that nothing is exported when one item needs the Python path anyway. */
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* type = (PyObject*)Py_TYPE(ctpy_item(seq, is_tuple, is_list, i));
    if (type != ctpy_ndarray_type && type != ctpy_tensor_type) return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = ctpy_item(seq, is_tuple, is_list, i);
    if (!item) {
      PyErr_Clear();
      return -1;
    }
    if (ctpy_view_locked(f, start + (int32_t)i, item, output) != 0) return -1;
  }
  return (int32_t)n;
}

int ctpy_torch_first_not_row_major(PyObject* args, const ct_tensor* first) {
  if (first->ndim != 4 && first->ndim != 5) return 0;
  const int is_tuple = PyTuple_CheckExact(args);
  if (!is_tuple && !PyList_CheckExact(args)) return 0;
  if ((is_tuple ? PyTuple_GET_SIZE(args) : PyList_GET_SIZE(args)) == 0) return 0;
  PyObject* item = is_tuple ? PyTuple_GET_ITEM(args, 0) : PyList_GET_ITEM(args, 0);
  if ((PyObject*)Py_TYPE(item) != ctpy_tensor_type || !first->strides) return 0;
  int64_t compact = 1;
  for (int32_t d = first->ndim - 1; d >= 0; --d) {
    if (first->shape[d] != 1 && first->strides[d] != compact) return 1;
    compact *= first->shape[d];
  }
  return 0;
}
