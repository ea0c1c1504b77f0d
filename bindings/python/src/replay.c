/* replay.c - ctensor._native.Replay: the base type of bound calls (ctensor.bind), which replays
 * a ct_plan with one C call.
 *
 * cffi releases the GIL around every call into C and converts each argument, which costs more
 * than the whole kernel on tiny tensors. A replay needs neither: `call()` here is a vectorcall
 * that runs ct_plan_run and returns the bound result, releasing the GIL only for plans with
 * enough work to be worth it. */
#include "binding.h"

typedef struct {
  PyObject_HEAD ct_plan* plan;
  PyObject* result; /* what a replay returns (the bound outputs) */
  /* Called as mark(written) after each replay that succeeded, or NULL: torch's autograd version
   * bump and the bound outputs that are torch tensors (ctensor._bind sets them). */
  PyObject* mark;
  PyObject* written;
  int release_gil; /* run without the GIL: plans with enough work for other threads */
  int running;     /* a run is in progress (only observable while the GIL is released) */
  vectorcallfunc vectorcall;
} ReplayObject;

/* Raises the error of a failed run through the subclass's `_raise_status(status)`. */
static PyObject* replay_raise_status(PyObject* self, int status) {
  PyObject* raised = PyObject_CallMethod(self, "_raise_status", "i", status);
  if (raised) {
    Py_DECREF(raised);
    PyErr_Format(PyExc_RuntimeError, "ctensor bound call failed with status %d", status);
  }
  return NULL;
}

/* After a replay wrote the bound outputs: mark(written), whose failure (a torch error, which it
 * gives only for objects that are not tensors) is cleared, as the write has happened. */
static void replay_mark_written(ReplayObject* r) {
  if (!r->mark) return;
  PyObject* done = PyObject_CallOneArg(r->mark, r->written);
  Py_XDECREF(done);
  if (!done) PyErr_Clear();
}

/* Runs the plan; returns its status, or 1 with a Python error set. */
static int replay_run_plan(ReplayObject* r) {
  if (!r->plan) {
    PyErr_SetString(PyExc_RuntimeError, "this bound call has no plan (it was not bound)");
    return 1;
  }
  if (r->running) {
    PyErr_SetString(PyExc_RuntimeError,
                    "this bound call is running in another thread; a bound call runs on one "
                    "thread at a time (bind one per thread)");
    return 1;
  }
  int status;
  if (r->release_gil) {
    r->running = 1;
    Py_BEGIN_ALLOW_THREADS status = ct_plan_run(r->plan);
    Py_END_ALLOW_THREADS r->running = 0;
  } else {
    status = ct_plan_run(r->plan);
  }
  if (status == CT_OK) replay_mark_written(r);
  return status;
}

/* call(): replay on the bound buffers. call(*inputs, out=...): the subclass's _call_with. */
static PyObject* replay_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                                   PyObject* kwnames) {
  ReplayObject* r = (ReplayObject*)self;
  if (PyVectorcall_NARGS(nargsf) == 0 && (!kwnames || PyTuple_GET_SIZE(kwnames) == 0)) {
    const int status = replay_run_plan(r);
    if (status == 1 && PyErr_Occurred()) return NULL;
    if (status != CT_OK) return replay_raise_status(self, status);
    Py_INCREF(r->result);
    return r->result;
  }
  PyObject* method = PyObject_GetAttrString(self, "_call_with");
  if (!method) return NULL;
  PyObject* out = PyObject_Vectorcall(method, args, nargsf, kwnames);
  Py_DECREF(method);
  return out;
}

static PyObject* replay_run(PyObject* self, PyObject* Py_UNUSED(ignored)) {
  const int status = replay_run_plan((ReplayObject*)self);
  if (status == 1 && PyErr_Occurred()) return NULL;
  return PyLong_FromLong(status);
}

static PyObject* replay_set_plan(PyObject* self, PyObject* args) {
  ReplayObject* r = (ReplayObject*)self;
  unsigned long long address;
  PyObject* result;
  int release_gil;
  PyObject *mark = Py_None, *written = Py_None;
  if (!PyArg_ParseTuple(args, "KOp|OO:_set_plan", &address, &result, &release_gil, &mark,
                        &written)) {
    return NULL;
  }
  if (r->running) {
    PyErr_SetString(PyExc_RuntimeError, "cannot replace the plan of a running bound call");
    return NULL;
  }
  ct_plan_destroy(r->plan);
  r->plan = (ct_plan*)(uintptr_t)address;
  Py_INCREF(result);
  Py_XSETREF(r->result, result);
  r->release_gil = release_gil;
  if (mark == Py_None) {
    Py_CLEAR(r->mark);
    Py_CLEAR(r->written);
  } else {
    Py_INCREF(mark);
    Py_XSETREF(r->mark, mark);
    Py_INCREF(written);
    Py_XSETREF(r->written, written);
  }
  Py_RETURN_NONE;
}

static PyObject* replay_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  ReplayObject* r = (ReplayObject*)type->tp_alloc(type, 0);
  if (!r) return NULL;
  r->plan = NULL;
  Py_INCREF(Py_None);
  r->result = Py_None;
  r->mark = NULL;
  r->written = NULL;
  r->vectorcall = replay_vectorcall;
  return (PyObject*)r;
}

static int replay_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(((ReplayObject*)self)->result);
  Py_VISIT(((ReplayObject*)self)->mark);
  Py_VISIT(((ReplayObject*)self)->written);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

static int replay_clear(PyObject* self) {
  Py_CLEAR(((ReplayObject*)self)->result);
  Py_CLEAR(((ReplayObject*)self)->mark);
  Py_CLEAR(((ReplayObject*)self)->written);
  return 0;
}

static void replay_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  replay_clear(self);
  ct_plan_destroy(((ReplayObject*)self)->plan);
  ((ReplayObject*)self)->plan = NULL;
  type->tp_free(self);
  Py_DECREF(type);
}

static PyMethodDef replay_methods[] = {
    {"run", replay_run, METH_NOARGS,
     "Replays the call and returns its ct_status (0 on success) instead of raising; the "
     "result is the bound output(s)."},
    {"_set_plan", replay_set_plan, METH_VARARGS,
     "_set_plan(address, result, release_gil, mark=None, written=None): takes ownership of the "
     "ct_plan at `address` (from ct_plan_create) and the object a replay returns; mark(written) "
     "is called after each replay that succeeded."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef replay_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(ReplayObject, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot replay_slots[] = {
    {Py_tp_doc, "Base of ctensor bound calls: replays a checked ct_plan with one C call."},
    {Py_tp_new, replay_new},
    {Py_tp_dealloc, replay_dealloc},
    {Py_tp_traverse, replay_traverse},
    {Py_tp_clear, replay_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_methods, replay_methods},
    {Py_tp_members, replay_members},
    {0, NULL},
};

PyType_Spec ctpy_replay_spec = {
    "ctensor._native.Replay",
    sizeof(ReplayObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    replay_slots,
};
