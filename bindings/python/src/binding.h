/* binding.h - the internal header of ctensor._native, the Python binding's one extension module.
 *
 * The module is cffi's (ffi, lib: the C ABI and ctpy_api.h) plus the types and functions of
 * module.c. The files share what is declared here:
 *   capsule.c      single DLPack capsules (names, open, release)
 *   frame.c        the per-call frame: open / summarize / infer / run / release
 *   array_view.c   which array types the fast paths read themselves, and reading them
 *   fast_call.c    whole calls with out= in one crossing, and bound-call replays on new arrays
 *   layout_cache.c the layout cache: a ct_plan per (op, tensor layouts) of recent out= calls
 *   new_outputs.c  whole calls without out=, and the output cache of their allocations
 *   fast_op.c      FastOp, the type of the ctensor.ops functions
 *   replay.c       Replay, the base type of bound calls (ctensor.bind)
 *   module.c       PyInit__native: cffi's module, the types above and configure()
 * Everything here is used with the GIL held unless its comment says otherwise. */
#ifndef CTENSOR_PY_BINDING_H_
#define CTENSOR_PY_BINDING_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>

#include "ctensor.h"
#include "ctpy_api.h"
#include "dlpack_managed.h"

/* ---- capsule.c ---- */
/* Capsule names; PyCapsule_SetName keeps the pointer, so they are static. */
extern const char ctpy_name_versioned[]; /* "dltensor_versioned" */
extern const char ctpy_name_legacy[];    /* "dltensor" */
extern const char ctpy_used_versioned[]; /* "used_dltensor_versioned" */
extern const char ctpy_used_legacy[];    /* "used_dltensor" */
/* Calls the deleter of a managed tensor (DLManagedTensorVersioned when `versioned`). */
void ctpy_managed_delete(void* managed, int versioned);

/* ---- frame.c ---- */
/* The frame's meta word of tensor `t` (see CTPY_META_*), without the flags. */
static inline uint64_t ctpy_meta(const ct_tensor* t) {
  return (uint64_t)t->dtype.code | ((uint64_t)t->dtype.bits << 8) |
         ((uint64_t)t->dtype.lanes << 16) | ((uint64_t)(t->device.device_type & 0xff) << 40) |
         ((uint64_t)(t->device.device_id & 0xffff) << 48);
}
/* Reads a 1-bit unsigned integer (DLPack code 1, bits 1, one lane) as DLPack's bool (code 6,
 * 8 bits): MXNet 1.x exports its bool arrays so, one byte per element, and nobody stores packed
 * bits under that dtype. The tensor is the consumer's copy in a capsule it reads, so rewriting
 * its dtype touches nothing the producer reads back. */
static inline void ctpy_normalize_dtype(ct_tensor* t) {
  if (t->dtype.code == CT_DTYPE_UINT && t->dtype.bits == 1 && t->dtype.lanes == 1) {
    t->dtype.code = CT_DTYPE_BOOL;
    t->dtype.bits = 8;
  }
}
/* ctpy_open for a caller that holds the GIL. */
int ctpy_open_locked(ctpy_frame* f, int32_t start, int32_t count);
/* Lets go the capsules the fast paths asked for in owned[0 .. count). */
void ctpy_drop_owned(ctpy_frame* f, int32_t count);
/* Slots of the frame the fast paths may fill (the rest is kept for the Python path's extras). */
#define CTPY_FAST_TENSORS (CTPY_MAX_TENSORS - 8)

/* ---- array_view.c ---- */
/* What configure() set: the exact types the fast paths read themselves (NULL: none), torch's
 * to_dlpack, autograd version bump and grad mode query, and interned names. */
extern PyObject* ctpy_ndarray_type;
extern PyObject* ctpy_tensor_type;
extern PyObject* ctpy_increment_version;
/* Sets what is not NULL (new references taken); returns 0, or -1 with an exception. */
int ctpy_configure_types(PyObject* ndarray_type, PyObject* tensor_type, PyObject* to_dlpack,
                         PyObject* increment_version, PyObject* grad_enabled);
/* True when `args` (a tuple or list) starts with an exact torch tensor, read into the frame's
 * `first` view, that is 4-D or 5-D and not compact row-major (channels_last, channels_last_3d
 * and other layouts): torch's own ops keep such layouts in their results, so the fast paths
 * that allocate outputs leave the call to the Python path, which does the same. */
int ctpy_torch_first_not_row_major(PyObject* args, const ct_tensor* first);
/* How ctpy_view_locked reads an array: an input, an output the caller gave, or an output the
 * fast path has just allocated through the framework (no autograd history, no lazy bits). */
enum { CTPY_READ_INPUT = 0, CTPY_READ_OUTPUT = 1, CTPY_READ_NEW_OUTPUT = 2 };
/* Reads one array into slot `i` of the frame. Returns 0, or -1 when the Python path must take
 * over. */
int ctpy_view_locked(ctpy_frame* f, int32_t i, PyObject* item, int output);
/* Reads the items of `seq` (a tuple or list; any other object is one item) into slots
 * start.. Returns the count, or -1 when the Python path must take over. */
int32_t ctpy_collect(ctpy_frame* f, PyObject* seq, int32_t start, int output);

/* ---- fast_call.c ---- */
/* Whether every tensor of the call has few enough elements to run holding the GIL. */
int ctpy_is_small(const ctpy_frame* f, int32_t n, int32_t n_out);
/* Advances the autograd version of the torch tensors in `outs` (one object, or a tuple or list)
 * after a run wrote them. Never leaves an exception. */
void ctpy_mark_written_locked(PyObject* outs);
/* Runs the collected call (n inputs, n_out outputs, no attributes, no context) through the
 * layout cache, letting the GIL go only around runs with enough work, then lets the frame's
 * capsules go. Returns the ct_status. */
int ctpy_run_held(ctpy_frame* f, const ct_op* op, int32_t n, int32_t n_out);
/* ctpy_fast_call without attributes, for FastOp (holds the GIL). */
int ctpy_fast_call_held(ctpy_frame* f, const ct_op* op, PyObject* args, PyObject* outs);

/* ---- layout_cache.c ---- */
#define CTPY_LAYOUT_KEY_WORDS 192
/* The layout key of the frame's first `count` tensors (op excluded; data pointers excluded), or
 * -1 when the call is not cached. */
int32_t ctpy_layout_key(const ctpy_frame* f, int32_t count, int64_t* key);
int ctpy_same_key(int32_t words, const int64_t* key, int32_t probe_words, const int64_t* probe);
/* Empties the layout cache and the output cache when the registry changed since they were
 * filled. */
void ctpy_caches_sync(void);
/* The ct_plan of the collected call (count tensors, f->num_outputs of them outputs): cached and
 * pointed at this call's buffers, or created and cached. NULL (a status in *status when it
 * failed) when the call is not cached. */
ct_plan* ctpy_cached_plan(ctpy_frame* f, const ct_op* op, int32_t count, int* status);

/* ---- new_outputs.c ---- */
/* Empties the output cache. */
void ctpy_output_cache_clear(void);
/* ctpy_fast_new without attributes, for FastOp (holds the GIL). */
int ctpy_fast_new_held(ctpy_frame* f, const ct_op* op, PyObject* args, int32_t capacity,
                       PyObject* prepare, PyObject* dtypes, PyObject* results);

/* ---- fast_op.c, replay.c ---- */
extern PyType_Spec ctpy_fast_op_spec;
extern PyType_Spec ctpy_replay_spec;
/* FastOp's allocators by input type (see configure(allocators=)); a new reference is taken. */
int ctpy_fast_op_set_allocators(PyObject* allocators);

#endif /* CTENSOR_PY_BINDING_H_ */
