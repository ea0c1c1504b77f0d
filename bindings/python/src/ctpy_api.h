/* ctpy_api.h - what the Python side of ctensor calls through cffi (ctensor._native.lib).
 *
 * cffi's declarations are generated from this header (build_cffi.py), so it holds plain C only:
 * no Python.h, integer #defines only. cffi cannot pass a Python object as PyObject*: the functions
 * below that read Python objects take them as void* or intptr_t (the object's address, from
 * id(obj)), and the caller holds a reference for the duration of the call. cffi releases the GIL
 * around every call into C; the functions that touch Python objects take it back themselves. */
#ifndef CTENSOR_PY_CTPY_API_H_
#define CTENSOR_PY_CTPY_API_H_

#include <stdint.h>

#include "ctensor.h"
#include "dlpack_managed.h"

/* ---- Single capsules (capsule.c) ---------------------------------------------------------- */

/* What ctpy_capsule_open found in a DLPack capsule. */
typedef struct ctpy_capsule_view {
  ct_tensor* tensor; /* the DLTensor inside the managed tensor */
  void* managed;     /* DLManagedTensor* or DLManagedTensorVersioned* */
  int32_t versioned; /* 1 for "dltensor_versioned" */
  int32_t reserved;
  uint64_t flags; /* DLPack flags (versioned only) */
  uint32_t version_major;
  uint32_t version_minor;
} ctpy_capsule_view;

#define CTPY_CAPSULE_OK 0
#define CTPY_CAPSULE_NOT_A_CAPSULE 1
#define CTPY_CAPSULE_USED 2
#define CTPY_CAPSULE_WRONG_NAME 3
#define CTPY_CAPSULE_NULL 4
/* A "dltensor_versioned" capsule whose major version is not CTPY_DLPACK_MAJOR (not consumed). */
#define CTPY_CAPSULE_VERSION 5
/* The DLPack major version whose versioned capsules ctensor reads (DLManagedTensorVersioned). */
#define CTPY_DLPACK_MAJOR 1

int ctpy_capsule_open(void* obj, int consume, ctpy_capsule_view* view);
/* Calls the producer's deleter of a consumed capsule's managed tensor (once). */
void ctpy_managed_release(void* managed, int versioned);
int ctpy_capsule_is_valid(void* obj, const char* name);
void* ctpy_capsule_get_pointer(void* obj, const char* name);
/* which: 0 "dltensor", 1 "dltensor_versioned", 2 "used_dltensor", 3 "used_dltensor_versioned" */
int ctpy_capsule_set_name(void* obj, int which);

/* ---- The per-call frame (frame.c) ----------------------------------------------------------
 * Per-call scratch, reused from a pool: tensor views, infer results and the context.
 * CTPY_SUMMARY_SIZE is CTPY_MAX_OUTPUTS * (CT_MAX_NDIM + 2) and CTPY_MAX_VIEWS * CT_MAX_NDIM is
 * 1024 (checked in frame.c; cffi reads integer constants only). */
#define CTPY_MAX_TENSORS 320
#define CTPY_MAX_OUTPUTS 64
#define CTPY_SUMMARY_SIZE 4224
#define CTPY_MAX_VIEWS 16
#define CTPY_VIEW_STRIDES 1024
typedef struct ctpy_frame {
  intptr_t
      objects[CTPY_MAX_TENSORS]; /* in: PyObject* of each capsule (| 1: consume it); 0: absent */
  ct_tensor* tensors[CTPY_MAX_TENSORS]; /* out: the DLTensor of each capsule (NULL when absent) */
  void* managed[CTPY_MAX_TENSORS]; /* out: managed tensor of consumed capsules (caller releases) */
  uint64_t meta[CTPY_MAX_TENSORS]; /* out: dtype key | flags | device, see CTPY_META_* */
  ct_tensor_info infos[CTPY_MAX_OUTPUTS]; /* ct_op_infer results */
  int64_t summary[CTPY_SUMMARY_SIZE];     /* ctpy_summarize: per output dtype key, ndim, extents */
  int32_t num_outputs;
  int32_t reserved;
  uint64_t workspace_bytes;
  uint64_t workspace_alignment;
  ct_context context;
  void* owned[CTPY_MAX_TENSORS];           /* capsules the fast paths asked for (references held) */
  ct_tensor views[CTPY_MAX_VIEWS];         /* arrays read directly by the fast paths */
  int64_t view_strides[CTPY_VIEW_STRIDES]; /* their strides in elements, CT_MAX_NDIM per view */
} ctpy_frame;

/* meta: bits 0-31 dtype key (code | bits << 8 | lanes << 16), bit 32 READ_ONLY, bit 33
 * versioned, bits 40-47 device type, bits 48-63 device id. On failure, the failing entry's meta
 * holds its CTPY_CAPSULE_* code. */
#define CTPY_META_READ_ONLY 0x100000000ull
#define CTPY_META_VERSIONED 0x200000000ull

/* Opens the capsules objects[start .. start+count). Returns 0, or -1 - i for the first entry
 * that is not a usable DLPack capsule (its meta holds the reason). Consumed entries opened
 * before a failure keep their managed pointer, so the caller can release them. */
int ctpy_open(ctpy_frame* frame, int32_t start, int32_t count);
/* Packs infos[0..count) as: dtype key, ndim, extents... per output. Returns the length. */
int32_t ctpy_summarize(ctpy_frame* frame, int32_t count);
/* Lets go the capsules the frame owns and calls the deleter of every consumed capsule in
 * [start, start+count), once. */
void ctpy_release(ctpy_frame* frame, int32_t start, int32_t count);
/* ct_op_infer on frame->tensors[0 .. num_inputs), then ctpy_summarize. Returns the packed
 * length (>= 0) or a negative ct_status. */
int32_t ctpy_infer(ctpy_frame* frame, const ct_op* op, int32_t num_inputs, const ct_attr* attrs,
                   int32_t num_attrs, int32_t capacity);
/* Opens the output capsules objects[num_inputs .. num_inputs + num_outputs), then ct_op_run with
 * the frame's inputs and outputs. Returns the ct_status of the run (<= 0), or 1 + i when capsule
 * i could not be opened (its meta holds the reason). */
int ctpy_open_run(ctpy_frame* frame, const ct_op* op, int32_t num_inputs, int32_t num_outputs,
                  const ct_attr* attrs, int32_t num_attrs, const ct_context* context);

/* The fast paths' answers besides a ct_status: an output flagged READ_ONLY, a tensor not in host
 * memory, anything else the Python path must handle (nothing run, nothing held), and, from
 * ctpy_bound_run, CTPY_LAYOUT_MISMATCH + i when tensor i's layout differs from the bound one. */
#define CTPY_FAST_READ_ONLY 1000000
#define CTPY_FAST_NOT_CPU 1000001
#define CTPY_FAST_NEED_PYTHON 1000002
#define CTPY_LAYOUT_MISMATCH 2000000

/* The common case of a call with out=, once the Python side filled objects[]: opens every
 * capsule (inputs then outputs) and runs on the CPU without a context. Returns the ct_status of
 * the run (<= 0); 1 + i when capsule i could not be opened; CTPY_FAST_READ_ONLY when an output is
 * flagged READ_ONLY and CTPY_FAST_NOT_CPU when a tensor is not in host memory, without running:
 * the caller then takes its general path with the capsules already open. */
int ctpy_run_fast(ctpy_frame* frame, const ct_op* op, int32_t num_inputs, int32_t num_outputs,
                  const ct_attr* attrs, int32_t num_attrs);

/* ---- Whole calls in one crossing (fast_call.c, new_outputs.c) ------------------------------- */

/* A whole call with out=: reads inputs (`args`, a tuple) and outputs (`outs`, an array or a
 * tuple/list) in C, checks that everything is in host memory and no output is READ_ONLY, runs
 * without a context, and lets the capsules go. Returns the ct_status of the run, or
 * CTPY_FAST_NEED_PYTHON (nothing run, nothing held) for anything else. */
int ctpy_fast_call(ctpy_frame* frame, const ct_op* op, intptr_t args, intptr_t outs,
                   const ct_attr* attrs, int32_t num_attrs);
/* A whole call without out=: reads the inputs (`args`, a tuple) in C and checks that they are
 * in host memory, infers, allocates every output (`prepare` and `dtypes`, see
 * Framework.fast_allocator; the new arrays go to the list `results`), runs without a context and
 * lets the capsules go. Returns the ct_status of infer or run, or CTPY_FAST_NEED_PYTHON (nothing
 * run, nothing held) for anything it does not handle: the Python path then does it again and
 * reports what went wrong. */
int ctpy_fast_new(ctpy_frame* frame, const ct_op* op, intptr_t args, const ct_attr* attrs,
                  int32_t num_attrs, int32_t capacity, intptr_t prepare, intptr_t dtypes,
                  intptr_t results);

/* For bound calls replayed on new buffers: the index of the first of `count` tensors whose
 * device, dtype, shape, strides (absent strides read as compact) or byte offset differ from the
 * bound one; -1 when every layout matches (data pointers may differ). */
int32_t ctpy_layout_diff(ct_tensor* const* bound, ct_tensor* const* given, int32_t count);
/* A bound call replayed on other arrays, in one crossing: reads `args` (a tuple; empty: the
 * bound inputs) and `outs` (an array or a tuple/list; None: the bound outputs) as ctpy_fast_call
 * does, checks their layouts against `bound` (ctpy_layout_diff) and runs with the bound
 * attributes and context. Returns the ct_status of the run; CTPY_FAST_NEED_PYTHON (nothing run,
 * nothing held) for anything the Python path must read or report (other types, counts, devices,
 * READ_ONLY outputs); CTPY_LAYOUT_MISMATCH + i when tensor i's layout differs (nothing run). */
int ctpy_bound_run(ctpy_frame* frame, ct_tensor* const* bound, const ct_op* op, int32_t num_inputs,
                   int32_t num_outputs, intptr_t args, intptr_t outs, const ct_attr* attrs,
                   int32_t num_attrs, const ct_context* context);

/* ---- NumPy arrays read without DLPack (array_view.c) --------------------------------------- */

/* Turns the direct path on (1) or off (0); returns the previous setting. */
int ctpy_numpy_direct(int enable);
/* Reads an exact numpy.ndarray (`array`) into `view`, strides in elements into `strides`
 * (CT_MAX_NDIM entries), as the fast paths do. Returns 0, or 1 when the DLPack path must handle
 * it. For the import-time layout check. */
int ctpy_numpy_view(intptr_t array, ct_tensor* view, int64_t* strides, int32_t output);

#endif /* CTENSOR_PY_CTPY_API_H_ */
