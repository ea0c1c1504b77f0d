"""Generates the C source of ctensor's cffi extension module (API, out-of-line mode).

The cdef is derived from capi/ctensor.h, so the public header stays the single source of truth:

* comments are removed;
* of ``#if defined(DLPACK_DLPACK_H_) ... #else ... #endif`` only the ``#else`` branch is kept
  (the self-contained declarations), and ``#ifdef __cplusplus`` blocks are dropped;
* every other preprocessor line (``#if``/``#ifdef``/``#ifndef``/``#elif``/``#else``/``#endif``,
  ``#include``, function-like or non-integer ``#define``) is removed; ``#define NAME <integer>``
  is kept;
* the ``CT_API`` export macro is removed.

To that the binding adds what it needs and the header does not declare: DLPack's managed-tensor
structs (capsule payloads, written from the public DLPack specification), a few C helpers for
capsules (cffi cannot pass a Python object as ``PyObject*``; the helpers take ``void*`` and the
Python side passes ``ffi.cast("void*", id(obj))`` while it holds a reference), and the
``extern "Python"`` allocator callback used by dynamic-allocating ops.

Usage: ``python build_cffi.py path/to/ctensor.h path/to/output.c``
"""

from __future__ import annotations

import re
import sys

import cffi

_INT_DEFINE = re.compile(
    r"^#\s*define\s+([A-Za-z_]\w*)\s+(\(?-?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*\)?)\s*$"
)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def cdef_from_header(text: str) -> str:
    """Turns the public header into declarations pycparser (and so cffi) understands."""
    out: list[str] = []
    # Stack of (keep_this_branch, keep_else_branch, parent_keeps).
    stack: list[tuple[bool, bool, bool]] = []
    depth = 0  # braces open in the kept text

    def active() -> bool:
        return all(keep for keep, _, _ in stack)

    for raw in _strip_comments(text).splitlines():
        line = raw.strip()
        if line.startswith("#"):
            directive = line[1:].strip()
            word = directive.split(None, 1)[0] if directive else ""
            rest = directive[len(word):].strip()
            if word in ("if", "ifdef", "ifndef"):
                if word == "ifdef" and rest == "__cplusplus":
                    stack.append((False, False, True))
                elif word == "if" and re.fullmatch(r"defined\s*\(?\s*DLPACK_DLPACK_H_\s*\)?", rest):
                    stack.append((False, True, True))
                else:
                    stack.append((True, True, True))
            elif word in ("elif", "else"):
                if not stack:
                    raise ValueError(f"unbalanced #{word} in header")
                keep, keep_else, parent = stack.pop()
                stack.append((keep_else, keep_else, parent))
            elif word == "endif":
                if not stack:
                    raise ValueError("unbalanced #endif in header")
                stack.pop()
            elif word == "define" and active():
                match = _INT_DEFINE.match(line)
                if match:
                    value = match.group(2).strip("()").rstrip("uUlL")
                    out.append(f"#define {match.group(1)} {value}")
            # #include, #error, #pragma, #undef and other defines: dropped.
            continue
        if not active():
            continue
        if line == 'extern "C" {' or (line == "}" and depth == 0):
            continue  # C++ linkage guard outside an #ifdef __cplusplus block
        depth += line.count("{") - line.count("}")
        line = re.sub(r"\bCT_API\b\s*", "", raw)
        if line.strip():
            out.append(line.rstrip())
    if stack:
        raise ValueError("unterminated #if in header")
    return "\n".join(out) + "\n"



# DLPack's managed tensors (public specification, DLPack >= 0.8 for the versioned one).
DLPACK_CDEF = """
typedef ct_tensor DLTensor;
typedef struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_READ_ONLY 1
#define DLPACK_FLAG_BITMASK_IS_COPIED 2
"""

HELPERS_CDEF = """
/* What ctpy_capsule_open found in a DLPack capsule. */
typedef struct ctpy_capsule_view {
  ct_tensor* tensor;  /* the DLTensor inside the managed tensor */
  void* managed;      /* DLManagedTensor* or DLManagedTensorVersioned* */
  int32_t versioned;  /* 1 for "dltensor_versioned" */
  int32_t reserved;
  uint64_t flags;     /* DLPack flags (versioned only) */
  uint32_t version_major;
  uint32_t version_minor;
} ctpy_capsule_view;

#define CTPY_CAPSULE_OK 0
#define CTPY_CAPSULE_NOT_A_CAPSULE 1
#define CTPY_CAPSULE_USED 2
#define CTPY_CAPSULE_WRONG_NAME 3
#define CTPY_CAPSULE_NULL 4

int ctpy_capsule_open(void* obj, int consume, ctpy_capsule_view* view);
void ctpy_managed_release(void* managed, int versioned);
int ctpy_capsule_is_valid(void* obj, const char* name);
void* ctpy_capsule_get_pointer(void* obj, const char* name);
int ctpy_capsule_set_name(void* obj, int which);

/* Per-call scratch reused from a pool: tensor views, infer results and the context. */
#define CTPY_MAX_TENSORS 320
#define CTPY_MAX_OUTPUTS 64
#define CTPY_SUMMARY_SIZE 4224
typedef struct ctpy_frame {
  intptr_t objects[320];      /* in: PyObject* of each capsule (| 1: consume it); 0: absent */
  ct_tensor* tensors[320];    /* out: the DLTensor of each capsule (NULL when absent) */
  void* managed[320];         /* out: managed tensor of consumed capsules (caller releases) */
  uint64_t meta[320];         /* out: dtype key | flags | device, see CTPY_META_* */
  ct_tensor_info infos[64];   /* ct_op_infer results */
  int64_t summary[4224];      /* ctpy_summarize: per output dtype key, ndim, extents */
  int32_t num_outputs;
  int32_t reserved;
  uint64_t workspace_bytes;
  uint64_t workspace_alignment;
  ct_context context;
  void* owned[320];           /* capsules the fast paths asked for (references held) */
  ct_tensor views[16];        /* NumPy arrays read directly by the fast paths */
  int64_t view_strides[1024]; /* their strides in elements, 64 per view */
} ctpy_frame;

#define CTPY_META_READ_ONLY 4294967296
#define CTPY_META_VERSIONED 8589934592

int ctpy_open(ctpy_frame* frame, int32_t start, int32_t count);
int32_t ctpy_summarize(ctpy_frame* frame, int32_t count);
void ctpy_release(ctpy_frame* frame, int32_t start, int32_t count);
int32_t ctpy_infer(ctpy_frame* frame, const ct_op* op, int32_t num_inputs, const ct_attr* attrs,
                   int32_t num_attrs, int32_t capacity);
int ctpy_open_run(ctpy_frame* frame, const ct_op* op, int32_t num_inputs, int32_t num_outputs,
                  const ct_attr* attrs, int32_t num_attrs, const ct_context* context);
#define CTPY_FAST_READ_ONLY 1000000
#define CTPY_FAST_NOT_CPU 1000001
int ctpy_run_fast(ctpy_frame* frame, const ct_op* op, int32_t num_inputs, int32_t num_outputs,
                  const ct_attr* attrs, int32_t num_attrs);
#define CTPY_FAST_NEED_PYTHON 1000002
int ctpy_configure(intptr_t ndarray_type, intptr_t tensor_type, intptr_t to_dlpack,
                   intptr_t increment_version);
int ctpy_fast_call(ctpy_frame* frame, const ct_op* op, intptr_t args, intptr_t outs,
                   const ct_attr* attrs, int32_t num_attrs);
int ctpy_fast_call_held(ctpy_frame* frame, const ct_op* op, intptr_t args, intptr_t outs);
int ctpy_fast_new(ctpy_frame* frame, const ct_op* op, intptr_t args, const ct_attr* attrs,
                  int32_t num_attrs, int32_t capacity, intptr_t prepare, intptr_t dtypes,
                  intptr_t results);
int ctpy_fast_new_held(ctpy_frame* frame, const ct_op* op, intptr_t args, int32_t capacity,
                       intptr_t prepare, intptr_t dtypes, intptr_t results);
int32_t ctpy_layout_diff(ct_tensor* const* bound, ct_tensor* const* given, int32_t count);
#define CTPY_LAYOUT_MISMATCH 2000000
int ctpy_bound_run(ctpy_frame* frame, ct_tensor* const* bound, const ct_op* op, int32_t num_inputs,
                   int32_t num_outputs, intptr_t args, intptr_t outs, const ct_attr* attrs,
                   int32_t num_attrs, const ct_context* context);
int ctpy_numpy_direct(int enable);
int ctpy_numpy_view(intptr_t array, ct_tensor* view, int64_t* strides, int32_t output);

extern "Python" int ctpy_allocate(void* user_data, int32_t output_index,
                                  const ct_tensor_info* info, int32_t device_type,
                                  int32_t device_id, void** data);
"""

SOURCE = r"""
#include <string.h>
#include "ctensor.h"

typedef ct_tensor DLTensor;
typedef struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_READ_ONLY 1
#define DLPACK_FLAG_BITMASK_IS_COPIED 2

typedef struct ctpy_capsule_view {
  ct_tensor* tensor;
  void* managed;
  int32_t versioned;
  int32_t reserved;
  uint64_t flags;
  uint32_t version_major;
  uint32_t version_minor;
} ctpy_capsule_view;

#define CTPY_CAPSULE_OK 0
#define CTPY_CAPSULE_NOT_A_CAPSULE 1
#define CTPY_CAPSULE_USED 2
#define CTPY_CAPSULE_WRONG_NAME 3
#define CTPY_CAPSULE_NULL 4

/* cffi releases the GIL around every call into C, so the helpers that touch Python objects take
 * it back first. The caller keeps a reference to `obj` for the duration of the call. */

static const char ctpy_name_versioned[] = "dltensor_versioned";
static const char ctpy_name_legacy[] = "dltensor";
/* PyCapsule_SetName keeps the pointer: the names must be static. */
static const char ctpy_used_versioned[] = "used_dltensor_versioned";
static const char ctpy_used_legacy[] = "used_dltensor";

static int ctpy_capsule_open(void* obj, int consume, ctpy_capsule_view* view) {
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
    } else {
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

#define CTPY_MAX_TENSORS 320
#define CTPY_MAX_OUTPUTS 64
#define CTPY_SUMMARY_SIZE (CTPY_MAX_OUTPUTS * (CT_MAX_NDIM + 2))
#define CTPY_MAX_VIEWS 16
typedef struct ctpy_frame {
  intptr_t objects[CTPY_MAX_TENSORS];
  ct_tensor* tensors[CTPY_MAX_TENSORS];
  void* managed[CTPY_MAX_TENSORS];
  uint64_t meta[CTPY_MAX_TENSORS];
  ct_tensor_info infos[CTPY_MAX_OUTPUTS];
  int64_t summary[CTPY_SUMMARY_SIZE];
  int32_t num_outputs;
  int32_t reserved;
  uint64_t workspace_bytes;
  uint64_t workspace_alignment;
  ct_context context;
  void* owned[CTPY_MAX_TENSORS];
  ct_tensor views[CTPY_MAX_VIEWS];
  int64_t view_strides[CTPY_MAX_VIEWS * CT_MAX_NDIM];
} ctpy_frame;

/* meta: bits 0-31 dtype key (code | bits << 8 | lanes << 16), bit 32 READ_ONLY, bit 33
 * versioned, bits 40-47 device type, bits 48-63 device id. On failure, the failing entry's meta
 * holds its CTPY_CAPSULE_* code. */
#define CTPY_META_READ_ONLY (1ull << 32)
#define CTPY_META_VERSIONED (1ull << 33)

static uint64_t ctpy_meta(const ct_tensor* t) {
  return (uint64_t)t->dtype.code | ((uint64_t)t->dtype.bits << 8) |
         ((uint64_t)t->dtype.lanes << 16) | ((uint64_t)(t->device.device_type & 0xff) << 40) |
         ((uint64_t)(t->device.device_id & 0xffff) << 48);
}

/* Opens the capsules objects[start .. start+count). Returns 0, or -1 - i for the first entry
 * that is not a usable DLPack capsule (its meta holds the reason). Consumed entries opened
 * before a failure keep their managed pointer, so the caller can release them. */
static int ctpy_open_locked(ctpy_frame* f, int32_t start, int32_t count) {
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
      if (!m || (consume && PyCapsule_SetName(o, ctpy_used_versioned) != 0)) {
        f->meta[i] = CTPY_CAPSULE_NULL;
        rc = -1 - i;
        break;
      }
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
      f->tensors[i] = &m->dl_tensor;
      if (consume) f->managed[i] = m;
      f->meta[i] = ctpy_meta(&m->dl_tensor);
    } else {
      const char* name = PyCapsule_GetName(o);
      f->meta[i] = (name && strncmp(name, "used_", 5) == 0) ? CTPY_CAPSULE_USED
                                                              : CTPY_CAPSULE_WRONG_NAME;
      rc = -1 - i;
      break;
    }
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return rc;
}

static int ctpy_open(ctpy_frame* f, int32_t start, int32_t count) {
  PyGILState_STATE gil = PyGILState_Ensure();
  const int rc = ctpy_open_locked(f, start, count);
  PyGILState_Release(gil);
  return rc;
}

/* Calls the deleter of every consumed capsule in [start, start+count), once. */
static void ctpy_release(ctpy_frame* f, int32_t start, int32_t count) {
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
    if (f->meta[i] & CTPY_META_VERSIONED) {
      DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)managed;
      if (m->deleter) m->deleter(m);
    } else {
      DLManagedTensor* m = (DLManagedTensor*)managed;
      if (m->deleter) m->deleter(m);
    }
  }
  PyGILState_Release(gil);
}

/* Packs infos[0..count) as: dtype key, ndim, extents... per output. Returns the length. */
static int32_t ctpy_summarize(ctpy_frame* f, int32_t count) {
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

/* ct_op_infer on frame->tensors[0 .. num_inputs), then ctpy_summarize. Returns the packed
 * length (>= 0) or a negative ct_status. */
static int32_t ctpy_infer(ctpy_frame* f, const ct_op* op, int32_t num_inputs, const ct_attr* attrs,
                          int32_t num_attrs, int32_t capacity) {
  if (capacity > CTPY_MAX_OUTPUTS) capacity = CTPY_MAX_OUTPUTS;
  f->num_outputs = 0;
  const int status = ct_op_infer(op, (const ct_tensor* const*)f->tensors, num_inputs, attrs,
                                 num_attrs, f->infos, capacity, &f->num_outputs);
  if (status != CT_OK) return status;
  return ctpy_summarize(f, f->num_outputs);
}

/* Opens the output capsules objects[num_inputs .. num_inputs + num_outputs), then ct_op_run with
 * the frame's inputs and outputs. Returns the ct_status of the run (<= 0), or 1 + i when capsule
 * i could not be opened (its meta holds the reason). */
static int ctpy_open_run(ctpy_frame* f, const ct_op* op, int32_t num_inputs, int32_t num_outputs,
                         const ct_attr* attrs, int32_t num_attrs, const ct_context* context) {
  const int rc = ctpy_open(f, num_inputs, num_outputs);
  if (rc) return 1 + (-1 - rc);
  return ct_op_run(op, (const ct_tensor* const*)f->tensors, num_inputs,
                   (const ct_tensor* const*)f->tensors + num_inputs, num_outputs, attrs, num_attrs,
                   context);
}

/* The common case of a call with out=, in one crossing: opens every capsule (inputs then
 * outputs) and runs on the CPU without a context. Returns the ct_status of the run (<= 0);
 * 1 + i when capsule i could not be opened; CTPY_FAST_READ_ONLY when an output is flagged
 * READ_ONLY and CTPY_FAST_NOT_CPU when a tensor is not in host memory, without running: the
 * caller then takes its general path with the capsules already open. */
#define CTPY_FAST_READ_ONLY 1000000
#define CTPY_FAST_NOT_CPU 1000001
#define CTPY_FAST_NEED_PYTHON 1000002
static int ctpy_run_fast(ctpy_frame* f, const ct_op* op, int32_t num_inputs, int32_t num_outputs,
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


/* ---- Fast paths: arrays of the two commonest types read in C ------------------------------ */

static PyObject* ctpy_ndarray_type = NULL;   /* numpy.ndarray (exact type only) */
static PyObject* ctpy_tensor_type = NULL;    /* torch.Tensor (exact type only) */
static PyObject* ctpy_to_dlpack = NULL;      /* torch.utils.dlpack.to_dlpack */
/* torch's autograd version bump: called with a tuple of tensors (see ctpy_mark_written_locked) */
static PyObject* ctpy_increment_version = NULL;
static PyObject* ctpy_str_dlpack = NULL;
static PyObject* ctpy_str_requires_grad = NULL;
static PyObject* ctpy_str_is_neg = NULL;
static PyObject* ctpy_str_is_conj = NULL;
static PyObject* ctpy_no_args = NULL;
static PyObject* ctpy_versioned_kwargs = NULL; /* {"max_version": (1, 0)} */

static void ctpy_replace(PyObject** slot, intptr_t value) {
  if (!value) return;
  PyObject* old = *slot;
  Py_INCREF((PyObject*)value);
  *slot = (PyObject*)value;
  Py_XDECREF(old);
}

/* Tells the fast paths which types they may read themselves (0: leave as is). */
/* True when torch tensor `o` has a lazy negative or conjugate bit (views such as z.conj() and
 * z.conj().imag): its memory holds values that torch negates or conjugates on access, and a
 * DLPack export shows the raw memory. Such tensors go the Python way, which resolves them. Only
 * floating and complex tensors (DLPack codes 2, 4, 5) can carry the bits. Errors count as set. */
static int ctpy_torch_lazy_bits(PyObject* o, int dtype_code) {
  if (dtype_code != 2 && dtype_code != 4 && dtype_code != 5) return 0;
  int set = 0;
  for (int k = 0; k < (dtype_code == 5 ? 2 : 1) && !set; ++k) {
    PyObject* name = k == 0 ? ctpy_str_is_neg : ctpy_str_is_conj;
    PyObject* bit = PyObject_CallMethodObjArgs(o, name, NULL);
    set = bit != Py_False;
    Py_XDECREF(bit);
  }
  PyErr_Clear();
  return set;
}

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

static int ctpy_configure(intptr_t ndarray_type, intptr_t tensor_type, intptr_t to_dlpack,
                          intptr_t increment_version) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = 0;
  if (!ctpy_str_dlpack) {
    ctpy_str_dlpack = PyUnicode_InternFromString("__dlpack__");
    ctpy_str_requires_grad = PyUnicode_InternFromString("requires_grad");
    ctpy_str_is_neg = PyUnicode_InternFromString("is_neg");
    ctpy_str_is_conj = PyUnicode_InternFromString("is_conj");
    ctpy_no_args = PyTuple_New(0);
    ctpy_versioned_kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
    if (!ctpy_str_dlpack || !ctpy_str_requires_grad || !ctpy_str_is_neg || !ctpy_str_is_conj ||
        !ctpy_no_args || !ctpy_versioned_kwargs) {
      PyErr_Clear();
      rc = -1;
    }
  }
  if (rc == 0) {
    ctpy_replace(&ctpy_ndarray_type, ndarray_type);
    ctpy_replace(&ctpy_tensor_type, tensor_type);
    ctpy_replace(&ctpy_to_dlpack, to_dlpack);
    ctpy_replace(&ctpy_increment_version, increment_version);
    if (tensor_type) ctpy_tensor_reader = ctpy_exchange_reader((PyObject*)tensor_type);
  }
  PyGILState_Release(gil);
  return rc;
}

/* After a run wrote into `outs` (one object, or a tuple or list of them): advances the autograd
 * version counter of the torch tensors among them, as torch's own out= and in-place ops do, so
 * that autograd refuses a backward pass that needs their old values instead of computing it
 * from the new ones. With the GIL. Never leaves an exception: the write has happened and the
 * call succeeded, so a failure here (which torch gives only for objects that are not tensors,
 * never passed) is cleared rather than reported as a failed call. */
static void ctpy_mark_written_locked(PyObject* outs) {
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
  PyObject* done = group ? PyObject_CallFunctionObjArgs(ctpy_increment_version, group, NULL) : NULL;
  Py_XDECREF(done);
  Py_XDECREF(group);
  if (PyErr_Occurred()) PyErr_Clear();
}

/* A new reference to a capsule of `o`, or NULL when the Python path must handle it (another
 * type, a tensor that requires grad, a producer that refuses). Never leaves an exception. */
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
    if (grad == Py_False && !ctpy_torch_lazy_bits(o, 5)) { /* 5: both bits, whatever the dtype */
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

/* Turns the direct path on (1) or off (0); returns the previous setting. */
static int ctpy_numpy_direct(int enable) {
  const int previous = ctpy_direct_enabled;
  ctpy_direct_enabled = enable && sizeof(intptr_t) == sizeof(int64_t);
  return previous;
}

/* The ct dtype of a NumPy type number (native byte order), or bits 0 when not handled here. */
static ct_dtype ctpy_numpy_dtype(int type_num) {
  ct_dtype d = {0, 0, 1};
  switch (type_num) {
    case 0: d.code = CT_DTYPE_BOOL; d.bits = 8; break;
    case 1: d.code = CT_DTYPE_INT; d.bits = 8; break;
    case 2: d.code = CT_DTYPE_UINT; d.bits = 8; break;
    case 3: d.code = CT_DTYPE_INT; d.bits = 8 * sizeof(short); break;
    case 4: d.code = CT_DTYPE_UINT; d.bits = 8 * sizeof(short); break;
    case 5: d.code = CT_DTYPE_INT; d.bits = 8 * sizeof(int); break;
    case 6: d.code = CT_DTYPE_UINT; d.bits = 8 * sizeof(int); break;
    case 7: d.code = CT_DTYPE_INT; d.bits = 8 * sizeof(long); break;
    case 8: d.code = CT_DTYPE_UINT; d.bits = 8 * sizeof(long); break;
    case 9: d.code = CT_DTYPE_INT; d.bits = 8 * sizeof(long long); break;
    case 10: d.code = CT_DTYPE_UINT; d.bits = 8 * sizeof(long long); break;
    case 11: d.code = CT_DTYPE_FLOAT; d.bits = 32; break;
    case 12: d.code = CT_DTYPE_FLOAT; d.bits = 64; break;
    case 23: d.code = CT_DTYPE_FLOAT; d.bits = 16; break;
    default: d.bits = 0; break;
  }
  return d;
}

/* Fills `view` (strides in elements into `strides`, CT_MAX_NDIM entries) from an exact
 * numpy.ndarray, without exporting it. Returns 0, or 1 when the DLPack path must handle it:
 * another type, a dtype other than bool/int/uint/float16-64 in native byte order, an unaligned
 * array, strides that are not multiples of the item size, a read-only output. Holds the GIL. */
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

/* ctpy_numpy_view_locked for the import-time layout check (takes the GIL). */
static int ctpy_numpy_view(intptr_t array, ct_tensor* view, int64_t* strides, int32_t output) {
  PyGILState_STATE gil = PyGILState_Ensure();
  const int rc = ctpy_numpy_view_locked((PyObject*)array, view, strides, output);
  PyGILState_Release(gil);
  return rc;
}

/* How ctpy_view_locked reads an array: an input, an output the caller gave, or an output the
 * fast path has just allocated through the framework (no autograd history, no lazy bits). */
enum { CTPY_READ_INPUT = 0, CTPY_READ_OUTPUT = 1, CTPY_READ_NEW_OUTPUT = 2 };

/* Reads one array into slot `i` of the frame: an exact numpy.ndarray directly into a frame
 * view when it can (slots below CTPY_MAX_VIEWS), anything else through a capsule the frame
 * owns, opened at once. `output` is a CTPY_READ_* value. Returns 0, or -1 when the Python
 * path must take over. */
static int ctpy_view_locked(ctpy_frame* f, int32_t i, PyObject* item, int output) {
  f->objects[i] = 0;
  if (i < CTPY_MAX_VIEWS &&
      ctpy_numpy_view_locked(item, &f->views[i], &f->view_strides[i * CT_MAX_NDIM], output) ==
          0) {
    f->tensors[i] = &f->views[i];
    f->managed[i] = NULL;
    f->meta[i] = ctpy_meta(&f->views[i]);
    return 0;
  }
  if (i < CTPY_MAX_VIEWS && ctpy_tensor_reader && (PyObject*)Py_TYPE(item) == ctpy_tensor_type) {
    /* torch: read through the exchange API (no capsule, no allocation). Inputs are read as
     * the Python path reads them (detached); outputs that require grad go the Python way,
     * which refuses them. */
    const int fresh = output == CTPY_READ_NEW_OUTPUT;
    int plain = 1;
    if (output && !fresh) {
      PyObject* grad = PyObject_GetAttr(item, ctpy_str_requires_grad);
      plain = grad == Py_False;
      Py_XDECREF(grad);
    }
    if (plain && ctpy_tensor_reader(item, &f->views[i]) == 0) {
      if (!fresh && ctpy_torch_lazy_bits(item, f->views[i].dtype.code)) return -1;
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

/* Capsules for the items of `seq` (a tuple or list; any other object is one item) into
 * owned/objects[start ..]. Returns the count, or -1 when the Python path must take over. */
static int32_t ctpy_collect(ctpy_frame* f, PyObject* seq, int32_t start, int output) {
  /* cffi compiles against the limited C API: no direct access to tuple items. */
  const int is_tuple = PyTuple_CheckExact(seq), is_list = PyList_CheckExact(seq);
  const Py_ssize_t n = is_tuple ? PyTuple_Size(seq) : (is_list ? PyList_Size(seq) : 1);
  if (n < 0 || n > CTPY_MAX_TENSORS - 8 - start) {
    PyErr_Clear();
    return -1;
  }
  /* Types first, so that nothing is exported when one item needs the Python path anyway. */
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = is_tuple ? PyTuple_GetItem(seq, i) : (is_list ? PyList_GetItem(seq, i) : seq);
    PyObject* type = item ? (PyObject*)Py_TYPE(item) : NULL;
    if (!type || (type != ctpy_ndarray_type && type != ctpy_tensor_type)) {
      PyErr_Clear();
      return -1;
    }
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = is_tuple ? PyTuple_GetItem(seq, i) : (is_list ? PyList_GetItem(seq, i) : seq);
    if (!item) {
      PyErr_Clear();
      return -1;
    }
    if (ctpy_view_locked(f, start + (int32_t)i, item, output) != 0) return -1;
  }
  return (int32_t)n;
}

static void ctpy_drop_owned(ctpy_frame* f, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    PyObject* owned = (PyObject*)f->owned[i];
    f->owned[i] = NULL;
    Py_XDECREF(owned);
  }
}

/* Whether a call is small enough to run holding the GIL: every tensor has at most
 * CTPY_SMALL_NUMEL elements (such calls take microseconds, and CPU kernels stay on one thread
 * below their grain size). */
#define CTPY_SMALL_NUMEL 4096
static int ctpy_is_small(const ctpy_frame* f, int32_t n, int32_t n_out) {
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
 * n inputs and n_out outputs and lets the capsules go. Small calls keep the GIL: releasing and
 * taking it again costs more than their work. */
static int ctpy_run_collected(ctpy_frame* f, PyGILState_STATE gil, int rc, const ct_op* op,
                              int32_t n, int32_t n_out, const ct_attr* attrs, int32_t num_attrs,
                              const ct_context* context, PyObject* written) {
  if (rc) {
    ctpy_drop_owned(f, CTPY_MAX_TENSORS - 8);
    PyGILState_Release(gil);
    return rc;
  }
  const int hold = ctpy_is_small(f, n, n_out);
  if (!hold) PyGILState_Release(gil);
  const int status = ct_op_run(op, (const ct_tensor* const*)f->tensors, n,
                               (const ct_tensor* const*)f->tensors + n, n_out, attrs, num_attrs,
                               context);
  if (!hold) gil = PyGILState_Ensure();
  if (status == CT_OK && written) ctpy_mark_written_locked(written);
  ctpy_drop_owned(f, n + n_out);
  PyGILState_Release(gil);
  return status;
}

/* A whole call with out= in one crossing: reads inputs (`args`, a tuple) and outputs (`outs`,
 * an array or a tuple/list) in C, checks that everything is in host memory and no output is
 * READ_ONLY, runs without a context, and lets the capsules go. Returns the ct_status of the run,
 * or CTPY_FAST_NEED_PYTHON (nothing run, nothing held) for anything else. */
/* Reads `args` (inputs) and `outs` (outputs) into the frame for the fast paths; with the GIL.
 * Returns 0, or CTPY_FAST_NEED_PYTHON for anything but host tensors and writable outputs. */
static int ctpy_collect_call(ctpy_frame* f, intptr_t args, intptr_t outs, int32_t* n,
                             int32_t* n_out) {
  *n = ctpy_collect(f, (PyObject*)args, 0, 0);
  *n_out = *n < 0 ? -1 : ctpy_collect(f, (PyObject*)outs, *n, 1);
  if (*n < 0 || *n_out < 0) return CTPY_FAST_NEED_PYTHON;
  for (int32_t i = 0; i < *n + *n_out; ++i) {
    if (f->tensors[i]->device.device_type != CT_DEVICE_CPU ||
        (i >= *n && (f->meta[i] & CTPY_META_READ_ONLY))) {
      return CTPY_FAST_NEED_PYTHON;
    }
  }
  return 0;
}

static int ctpy_fast_call(ctpy_frame* f, const ct_op* op, intptr_t args, intptr_t outs,
                          const ct_attr* attrs, int32_t num_attrs) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int32_t n, n_out;
  const int rc = ctpy_collect_call(f, args, outs, &n, &n_out);
  return ctpy_run_collected(f, gil, rc, op, n, n_out, attrs, num_attrs, NULL, (PyObject*)outs);
}

/* ----- plans of recent fast calls, by layout -----
 * ctpy_fast_call_held keeps the ct_plan of its last few layouts (op; dtype, device, byte offset,
 * shape and strides of every tensor; not the data pointers): a call whose layout was seen before
 * skips ct_op_run's checks, which depend on nothing else, and only points the plan at its
 * buffers (ct_plan_set_data, which checks aliasing again). A change of the registry (a plugin
 * loaded, a kernel registered) empties the cache, as ct_op_run would pick the new kernel. Used
 * with the GIL held and by one call at a time (FastOp's busy flag), so it needs no lock. */
#define CTPY_PLAN_CACHE_SIZE 8
#define CTPY_PLAN_KEY_WORDS 192
typedef struct ctpy_cached_plan {
  const ct_op* op;
  int32_t words;
  int64_t key[CTPY_PLAN_KEY_WORDS];
  ct_plan* plan;
} ctpy_cached_plan;
static ctpy_cached_plan ctpy_plan_cache[CTPY_PLAN_CACHE_SIZE];
static int32_t ctpy_plan_cache_next = 0;
static uint64_t ctpy_plan_cache_generation = 0;

/* The layout key of the collected tensors, or -1 when the call is not cached (too many tensors
 * or dims, absent tensors, or data NULL, which ct_plan_set_data would read as "keep"). */
static int32_t ctpy_layout_key(const ctpy_frame* f, int32_t count, int64_t* key) {
  int32_t w = 0;
  key[w++] = count;
  for (int32_t i = 0; i < count; ++i) {
    const ct_tensor* t = f->tensors[i];
    if (!t || !t->data || w + 4 + 2 * t->ndim > CTPY_PLAN_KEY_WORDS) return -1;
    key[w++] = (int64_t)t->dtype.code | (int64_t)t->dtype.bits << 8 |
               (int64_t)t->dtype.lanes << 16 | (int64_t)t->ndim << 32;
    key[w++] = (int64_t)t->device.device_type << 32 | (int64_t)(uint32_t)t->device.device_id;
    key[w++] = (int64_t)t->byte_offset;
    key[w++] = t->strides != NULL;
    /* Shape and strides interleaved, a dim at a time: two plain copy loops became memcpy calls
     * (rep movsq), whose start-up cost was most of this function's time on tiny calls. */
    if (t->strides) {
      for (int32_t d = 0; d < t->ndim; ++d) {
        key[w++] = t->shape[d];
        key[w++] = t->strides[d];
      }
    } else {
      for (int32_t d = 0; d < t->ndim; ++d) key[w++] = t->shape[d];
    }
  }
  return w;
}

static void ctpy_recipes_clear(void); /* the recipes of calls without out=, below */

/* Whether a cached layout key (words, key) is `probe` (probe_words of them). */
static int ctpy_same_key(int32_t words, const int64_t* key, int32_t probe_words,
                         const int64_t* probe) {
  return words == probe_words && memcmp(key, probe, sizeof(int64_t) * probe_words) == 0;
}

static void ctpy_plan_cache_clear(void) {
  for (int32_t i = 0; i < CTPY_PLAN_CACHE_SIZE; ++i) {
    ct_plan_destroy(ctpy_plan_cache[i].plan);
    ctpy_plan_cache[i].plan = NULL;
    ctpy_plan_cache[i].op = NULL;
  }
}

/* Empties the plan cache and the recipes when the registry changed since they were made. */
static void ctpy_plan_cache_sync(void) {
  const uint64_t generation = ct_registry_generation();
  if (generation != ctpy_plan_cache_generation) {
    ctpy_plan_cache_clear();
    ctpy_recipes_clear();
    ctpy_plan_cache_generation = generation;
  }
}

/* The cached plan for (op, key), or NULL. */
static ct_plan* ctpy_plan_cache_find(const ct_op* op, const int64_t* key, int32_t words) {
  ctpy_plan_cache_sync();
  for (int32_t i = 0; i < CTPY_PLAN_CACHE_SIZE; ++i) {
    const ctpy_cached_plan* c = &ctpy_plan_cache[i];
    if (c->op == op && ctpy_same_key(c->words, c->key, words, key)) return c->plan;
  }
  return NULL;
}

/* Caches `plan` (created at the current generation), replacing the oldest entry. */
static void ctpy_plan_cache_add(const ct_op* op, const int64_t* key, int32_t words,
                                ct_plan* plan) {
  ctpy_cached_plan* c = &ctpy_plan_cache[ctpy_plan_cache_next];
  ctpy_plan_cache_next = (ctpy_plan_cache_next + 1) % CTPY_PLAN_CACHE_SIZE;
  ct_plan_destroy(c->plan);
  c->op = op;
  c->words = words;
  memcpy(c->key, key, sizeof(int64_t) * words);
  c->plan = plan;
}

/* The plan for the collected call: cached, pointed at this call's buffers; or created and
 * cached. NULL (a status in *status when it failed) when the call is not cached. */
static ct_plan* ctpy_plan_for(ctpy_frame* f, const ct_op* op, int32_t count, int* status) {
  int64_t key[CTPY_PLAN_KEY_WORDS];
  *status = CT_OK;
  const int32_t words = ctpy_layout_key(f, count, key);
  if (words < 0) return NULL;
  ct_plan* plan = ctpy_plan_cache_find(op, key, words);
  if (plan) {
    void* data[CTPY_MAX_TENSORS];
    for (int32_t i = 0; i < count; ++i) data[i] = f->tensors[i]->data;
    *status = ct_plan_set_data(plan, data, count);
    return *status == CT_OK ? plan : NULL;
  }
  const int32_t n_out = f->num_outputs;
  *status = ct_plan_create(op, (const ct_tensor* const*)f->tensors, count - n_out,
                           (const ct_tensor* const*)f->tensors + count - n_out, n_out, NULL, 0,
                           NULL, &plan);
  if (*status != CT_OK) return NULL;
  ctpy_plan_cache_sync(); /* creating the plan may have registered the built-in kernels */
  ctpy_plan_cache_add(op, key, words, plan);
  return plan;
}

/* Runs the collected call (n inputs, n_out outputs, no attributes, no context) for a caller that
 * holds the GIL, through the plan cache above, letting the GIL go only around runs with enough
 * work, then lets the frame's capsules go. Returns the ct_status. */
static int ctpy_run_held(ctpy_frame* f, const ct_op* op, int32_t n, int32_t n_out) {
  f->num_outputs = n_out;
  int status;
  const ct_plan* plan = ctpy_plan_for(f, op, n + n_out, &status);
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

/* ctpy_fast_call without attributes for a caller that already holds the GIL (the C operator
 * objects of ctensor._replay, which call it through a function pointer rather than through
 * cffi). */
static int ctpy_fast_call_held(ctpy_frame* f, const ct_op* op, intptr_t args, intptr_t outs) {
  int32_t n, n_out;
  const int rc = ctpy_collect_call(f, args, outs, &n, &n_out);
  if (rc) {
    ctpy_drop_owned(f, CTPY_MAX_TENSORS - 8);
    return rc;
  }
  const int status = ctpy_run_held(f, op, n, n_out);
  if (status == CT_OK) ctpy_mark_written_locked((PyObject*)outs);
  return status;
}


/* A bound call replayed on other arrays, in one crossing: reads `args` (a tuple; empty: the
 * bound inputs) and `outs` (an array or a tuple/list; None: the bound outputs) as
 * ctpy_fast_call does, checks their layouts against `bound` (ctpy_layout_diff) and runs with the
 * bound attributes and context. Returns the ct_status of the run; CTPY_FAST_NEED_PYTHON (nothing
 * run, nothing held) for anything the Python path must read or report (other types, counts,
 * devices, READ_ONLY outputs); CTPY_LAYOUT_MISMATCH + i when tensor i's layout differs from the
 * bound one (nothing run). */
#define CTPY_LAYOUT_MISMATCH 2000000
static int32_t ctpy_layout_diff(ct_tensor* const* bound, ct_tensor* const* given, int32_t count);
static int ctpy_bound_run(ctpy_frame* f, ct_tensor* const* bound, const ct_op* op, int32_t n,
                          int32_t n_out, intptr_t args, intptr_t outs, const ct_attr* attrs,
                          int32_t num_attrs, const ct_context* context) {
  if (n < 0 || n_out < 0 || n + n_out > CTPY_MAX_TENSORS - 8) return CTPY_FAST_NEED_PYTHON;
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
  } else if (ctpy_collect(f, in, 0, 0) != n) {
    rc = CTPY_FAST_NEED_PYTHON;
  }
  if (rc == 0 && out == Py_None) {
    for (int32_t j = 0; j < n_out; ++j) f->tensors[n + j] = bound[n + j];
  } else if (rc == 0 && ctpy_collect(f, out, n, 1) != n_out) {
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

/* How to allocate output `info`: `prepare` (the framework's, see Framework.fast_allocator)
 * called with the shape as a tuple and dtypes[dtype key] gives (callable, args, kwargs or None),
 * new references in *fn, *args and *kwargs (NULL for None). Returns 0, or -1 (an exception may
 * be set) when the dtype has no entry, prepare fails, or it answers something else. */
static int ctpy_allocation_call(const ct_tensor_info* info, PyObject* prepare, PyObject* dtypes,
                                PyObject** fn, PyObject** args, PyObject** kwargs) {
  *fn = *args = *kwargs = NULL;
  const long key = (long)info->dtype.code | ((long)info->dtype.bits << 8) |
                   ((long)info->dtype.lanes << 16);
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

/* Allocates the n_out outputs inferred into f->infos, with the GIL: calls what
 * ctpy_allocation_call gives (`prepare`, and `dtypes`: a dict, dtype key -> the framework's
 * dtype object), appends each new array to the list `results` and reads it into slot n + j.
 * Returns 0, or CTPY_FAST_NEED_PYTHON (a dtype not in `dtypes`, an allocation that raised, an
 * array the fast path cannot read), leaving no exception. */
static int ctpy_allocate_locked(ctpy_frame* f, int32_t n, int32_t n_out, PyObject* prepare,
                                PyObject* dtypes, PyObject* results) {
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

/* Reads the inputs (`args`, a tuple) for the paths without out=, with the GIL: returns their
 * count, or -1 (everything let go) when one is not a host array the fast path reads, or when
 * `capacity` more outputs would not fit the frame. */
static int32_t ctpy_collect_new(ctpy_frame* f, intptr_t args, int32_t capacity) {
  const int32_t n = ctpy_collect(f, (PyObject*)args, 0, 0);
  int ok = n >= 0 && n + capacity <= CTPY_MAX_TENSORS - 8;
  for (int32_t i = 0; ok && i < n; ++i) ok = f->tensors[i]->device.device_type == CT_DEVICE_CPU;
  if (ok) return n;
  ctpy_drop_owned(f, CTPY_MAX_TENSORS - 8);
  return -1;
}

/* A whole call without out= in one crossing: reads the inputs (`args`, a tuple) in C and checks
 * that they are in host memory, infers, allocates every output (ctpy_allocate_locked, with
 * `prepare` and `dtypes`; the new arrays go to the list `results`), runs without a context and
 * lets the capsules go. Returns the ct_status of infer or run, or CTPY_FAST_NEED_PYTHON (nothing
 * run, nothing held) for anything it does not handle (another input type, a device, a dtype not
 * in `dtypes`, an allocation that raised): the Python path then does it again and reports what
 * went wrong. */
static int ctpy_fast_new(ctpy_frame* f, const ct_op* op, intptr_t args, const ct_attr* attrs,
                         int32_t num_attrs, int32_t capacity, intptr_t prepare, intptr_t dtypes,
                         intptr_t results) {
  if (capacity > CTPY_MAX_OUTPUTS) capacity = CTPY_MAX_OUTPUTS;
  PyGILState_STATE gil = PyGILState_Ensure();
  const int32_t n = ctpy_collect_new(f, args, capacity);
  PyGILState_Release(gil);
  if (n < 0) return CTPY_FAST_NEED_PYTHON;
  f->num_outputs = 0;
  int status = ct_op_infer(op, (const ct_tensor* const*)f->tensors, n, attrs, num_attrs,
                           f->infos, capacity, &f->num_outputs);
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

/* ----- recipes of recent calls without out= -----
 * ctpy_fast_new_held keeps, for its last few (op, prepare, input layouts), what ct_op_infer
 * said about the outputs and how to allocate each (ctpy_allocation_call's callable, args and
 * kwargs, references held): a call whose inputs were seen before skips infer, which depends on
 * nothing else, and builds no Python object before allocating. Emptied with the plan cache
 * when the registry changes (ctpy_plan_cache_sync). With the GIL, one call at a time (FastOp's
 * busy flag). */
#define CTPY_RECIPE_CACHE_SIZE 8
#define CTPY_RECIPE_MAX_OUTPUTS 4
typedef struct ctpy_new_recipe {
  const ct_op* op;
  PyObject* prepare; /* held, so that no other object takes its address */
  int32_t words;
  int64_t key[CTPY_PLAN_KEY_WORDS];
  int32_t n_out;
  ct_tensor_info infos[CTPY_RECIPE_MAX_OUTPUTS];
  PyObject* fn[CTPY_RECIPE_MAX_OUTPUTS];     /* held */
  PyObject* args[CTPY_RECIPE_MAX_OUTPUTS];   /* held */
  PyObject* kwargs[CTPY_RECIPE_MAX_OUTPUTS]; /* held, or NULL */
} ctpy_new_recipe;
static ctpy_new_recipe ctpy_recipes[CTPY_RECIPE_CACHE_SIZE];
static int32_t ctpy_recipe_next = 0;

static void ctpy_recipe_clear(ctpy_new_recipe* r) {
  for (int32_t j = 0; j < r->n_out; ++j) {
    Py_CLEAR(r->fn[j]);
    Py_CLEAR(r->args[j]);
    Py_CLEAR(r->kwargs[j]);
  }
  Py_CLEAR(r->prepare);
  r->op = NULL;
  r->n_out = 0;
}

static void ctpy_recipes_clear(void) {
  for (int32_t i = 0; i < CTPY_RECIPE_CACHE_SIZE; ++i) ctpy_recipe_clear(&ctpy_recipes[i]);
}

/* The recipe for (op, prepare, key), or NULL. */
static const ctpy_new_recipe* ctpy_recipe_find(const ct_op* op, PyObject* prepare,
                                               const int64_t* key, int32_t words) {
  ctpy_plan_cache_sync();
  for (int32_t i = 0; i < CTPY_RECIPE_CACHE_SIZE; ++i) {
    const ctpy_new_recipe* r = &ctpy_recipes[i];
    if (r->op == op && r->prepare == prepare && ctpy_same_key(r->words, r->key, words, key)) {
      return r;
    }
  }
  return NULL;
}

/* Remembers the call just inferred (f->infos, n_out outputs) under (op, prepare, key). */
static void ctpy_recipe_add(const ct_op* op, PyObject* prepare, PyObject* dtypes,
                            const int64_t* key, int32_t words, const ctpy_frame* f,
                            int32_t n_out) {
  if (n_out > CTPY_RECIPE_MAX_OUTPUTS) return;
  ctpy_new_recipe* r = &ctpy_recipes[ctpy_recipe_next];
  ctpy_recipe_next = (ctpy_recipe_next + 1) % CTPY_RECIPE_CACHE_SIZE;
  ctpy_recipe_clear(r);
  for (int32_t j = 0; j < n_out; ++j) {
    r->n_out = j + 1; /* what ctpy_recipe_clear lets go */
    if (ctpy_allocation_call(&f->infos[j], prepare, dtypes, &r->fn[j], &r->args[j],
                             &r->kwargs[j]) != 0) {
      PyErr_Clear();
      ctpy_recipe_clear(r);
      return;
    }
    r->infos[j] = f->infos[j];
  }
  Py_INCREF(prepare);
  r->prepare = prepare;
  r->op = op;
  r->words = words;
  memcpy(r->key, key, sizeof(int64_t) * words);
}

/* Allocates a recipe's outputs into slots n.. of the frame (their infos into f->infos), each
 * new array appended to `results`. Returns 0, or CTPY_FAST_NEED_PYTHON, leaving no exception. */
static int ctpy_allocate_recipe(ctpy_frame* f, int32_t n, const ctpy_new_recipe* r,
                                PyObject* results) {
  int rc = 0;
  for (int32_t j = 0; rc == 0 && j < r->n_out; ++j) {
    f->infos[j] = r->infos[j];
    rc = ctpy_adopt_new_output(f, n + j, PyObject_Call(r->fn[j], r->args[j], r->kwargs[j]),
                               results);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return rc;
}

/* ctpy_fast_new without attributes for a caller that already holds the GIL (FastOp called
 * without out=), run as ctpy_fast_call_held runs (ctpy_run_held); inferred and allocated from a
 * recipe (above) when its inputs' layouts were seen before. */
static int ctpy_fast_new_held(ctpy_frame* f, const ct_op* op, intptr_t args, int32_t capacity,
                              intptr_t prepare, intptr_t dtypes, intptr_t results) {
  if (capacity > CTPY_MAX_OUTPUTS) capacity = CTPY_MAX_OUTPUTS;
  const int32_t n = ctpy_collect_new(f, args, capacity);
  if (n < 0) return CTPY_FAST_NEED_PYTHON;
  int64_t key[CTPY_PLAN_KEY_WORDS];
  const int32_t words = ctpy_layout_key(f, n, key);
  const ctpy_new_recipe* recipe =
      words < 0 ? NULL : ctpy_recipe_find(op, (PyObject*)prepare, key, words);
  if (recipe) {
    const int rc = ctpy_allocate_recipe(f, n, recipe, (PyObject*)results);
    if (rc != 0) {
      ctpy_drop_owned(f, n + recipe->n_out);
      return rc;
    }
    return ctpy_run_held(f, op, n, recipe->n_out);
  }
  f->num_outputs = 0;
  const int status = ct_op_infer(op, (const ct_tensor* const*)f->tensors, n, NULL, 0, f->infos,
                                 capacity, &f->num_outputs);
  const int32_t n_out = status == CT_OK ? f->num_outputs : 0;
  const int rc = status == CT_OK ? ctpy_allocate_locked(f, n, n_out, (PyObject*)prepare,
                                                        (PyObject*)dtypes, (PyObject*)results)
                                 : 0;
  if (status != CT_OK || rc != 0) {
    ctpy_drop_owned(f, n + n_out);
    return rc ? rc : status;
  }
  if (words >= 0) ctpy_recipe_add(op, (PyObject*)prepare, (PyObject*)dtypes, key, words, f, n_out);
  return ctpy_run_held(f, op, n, n_out);
}

/* For bound calls replayed on new buffers: the index of the first of `count` tensors whose
 * device, dtype, shape, strides (absent strides read as compact) or byte offset differ from the
 * bound one; -1 when every layout matches (data pointers may differ). */
static int32_t ctpy_layout_diff(ct_tensor* const* bound, ct_tensor* const* given, int32_t count) {
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

/* Calls the producer's deleter of a consumed capsule (once), holding the GIL as a capsule
 * destructor would. */
static void ctpy_managed_release(void* managed, int versioned) {
  if (!managed) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  if (versioned) {
    DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)managed;
    if (m->deleter) m->deleter(m);
  } else {
    DLManagedTensor* m = (DLManagedTensor*)managed;
    if (m->deleter) m->deleter(m);
  }
  PyGILState_Release(gil);
}

static int ctpy_capsule_is_valid(void* obj, const char* name) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int valid = PyCapsule_IsValid((PyObject*)obj, name);
  PyGILState_Release(gil);
  return valid;
}

static void* ctpy_capsule_get_pointer(void* obj, const char* name) {
  PyGILState_STATE gil = PyGILState_Ensure();
  void* pointer = PyCapsule_GetPointer((PyObject*)obj, name);
  if (!pointer) PyErr_Clear();
  PyGILState_Release(gil);
  return pointer;
}

/* which: 0 "dltensor", 1 "dltensor_versioned", 2 "used_dltensor", 3 "used_dltensor_versioned" */
static int ctpy_capsule_set_name(void* obj, int which) {
  static const char* const names[] = {ctpy_name_legacy, ctpy_name_versioned, ctpy_used_legacy,
                                      ctpy_used_versioned};
  if (which < 0 || which > 3) return -1;
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = PyCapsule_SetName((PyObject*)obj, names[which]);
  if (rc != 0) PyErr_Clear();
  PyGILState_Release(gil);
  return rc;
}
"""


def make_ffibuilder(header_text: str) -> cffi.FFI:
    ffibuilder = cffi.FFI()
    ffibuilder.cdef(cdef_from_header(header_text) + DLPACK_CDEF + HELPERS_CDEF)
    ffibuilder.set_source("ctensor._capi", SOURCE)
    return ffibuilder


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    header, output = argv[1], argv[2]
    with open(header, encoding="utf-8") as f:
        text = f.read()
    make_ffibuilder(text).emit_c_code(output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
