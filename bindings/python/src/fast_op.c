/* fast_op.c - ctensor._native.FastOp: the type of the ctensor.ops functions whose commonest calls
 * (arrays only, every input positional, no attributes; out= given or not) run from C.
 *
 * Those calls go to ctpy_fast_call_held (out=) or ctpy_fast_new_held (new outputs) with the GIL
 * held: no Python frame, no cffi argument conversion, no GIL round trip for tiny tensors. Every
 * other call, and any call the fast path declines or that fails, goes to the operator's Python
 * function (`fallback`), which handles every case and raises every error. */
#include "binding.h"

/* The frame every FastOp call uses, one call at a time (`busy`: a call that finds it taken goes
 * the Python way). */
static ctpy_frame g_fast_frame;
static int g_fast_busy = 0;
/* type of the first input -> (prepare(shape, dtype), {dtype key: dtype}) (see
 * Framework.fast_allocator), filled by the Python path the first time it allocates for arrays
 * of that type in host memory; set by configure(allocators=) */
static PyObject* g_allocators = NULL;
static PyObject* g_out_name = NULL; /* "out", interned */

typedef struct {
  PyObject_HEAD const ct_op* op;
  PyObject* fallback;    /* the operator's Python function */
  Py_ssize_t num_inputs; /* inputs of the fast form: all of them, positional */
  int single_output;     /* out=(array,) returns the array; one new output is returned alone */
  int capacity;          /* outputs the operator may return (its declared ones, or the most) */
  vectorcallfunc vectorcall;
  PyObject* dict;     /* __name__, __doc__, __signature__, spec... (set by ctensor._ops) */
  PyObject* weakrefs; /* weak references: jax.jit(ctensor.ops.exp) keeps one, as for functions */
} FastOpObject;

int ctpy_fast_op_set_allocators(PyObject* allocators) {
  if (!PyDict_Check(allocators)) {
    PyErr_SetString(PyExc_TypeError, "allocators must be a dict");
    return -1;
  }
  if (g_fast_busy) {
    PyErr_SetString(PyExc_RuntimeError, "the fast path is in use");
    return -1;
  }
  Py_INCREF(allocators);
  Py_XSETREF(g_allocators, allocators);
  return 0;
}

/* out=, when it is the only keyword. */
static PyObject* fast_op_only_out(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (!kwnames || PyTuple_GET_SIZE(kwnames) != 1) return NULL;
  PyObject* name = PyTuple_GET_ITEM(kwnames, 0);
  if (name != g_out_name && PyUnicode_Compare(name, g_out_name) != 0) return NULL;
  PyObject* out = args[nargs];
  return out == Py_None ? NULL : out;
}

/* The inputs as a new tuple, or NULL with an exception. */
static PyObject* fast_op_inputs(PyObject* const* args, Py_ssize_t nargs) {
  PyObject* inputs = PyTuple_New(nargs);
  if (!inputs) return NULL;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(inputs, i, args[i]);
  }
  return inputs;
}

/* The call with out=: the outputs (or the single one), or NULL (no exception) when the Python
 * function must take the call. */
static PyObject* fast_op_call_out(FastOpObject* f, PyObject* const* args, Py_ssize_t nargs,
                                  PyObject* out) {
  PyObject* inputs = fast_op_inputs(args, nargs);
  if (!inputs) return NULL;
  g_fast_busy = 1;
  const int status = ctpy_fast_call_held(&g_fast_frame, f->op, inputs, out);
  g_fast_busy = 0;
  Py_DECREF(inputs);
  if (status != 0) return NULL;
  if (f->single_output && (PyTuple_CheckExact(out) || PyList_CheckExact(out)) &&
      PySequence_Size(out) == 1) {
    return PySequence_GetItem(out, 0);
  }
  Py_INCREF(out);
  return out;
}

/* The call without out=, for inputs whose type has an allocator: the new output (one, for an
 * operator with a single output) or a tuple of them, or NULL (no exception) when the Python
 * function must take the call. */
static PyObject* fast_op_call_new(FastOpObject* f, PyObject* const* args, Py_ssize_t nargs) {
  PyObject* allocator = PyDict_GetItemWithError(g_allocators, (PyObject*)Py_TYPE(args[0]));
  if (!allocator || !PyTuple_CheckExact(allocator) || PyTuple_GET_SIZE(allocator) != 2) {
    return NULL;
  }
  Py_INCREF(allocator); /* allocating runs Python code, which may change the dict */
  PyObject* inputs = fast_op_inputs(args, nargs);
  PyObject* results = inputs ? PyList_New(0) : NULL;
  int status = -1;
  if (results) {
    g_fast_busy = 1;
    status =
        ctpy_fast_new_held(&g_fast_frame, f->op, inputs, f->capacity,
                           PyTuple_GET_ITEM(allocator, 0), PyTuple_GET_ITEM(allocator, 1), results);
    g_fast_busy = 0;
  }
  Py_XDECREF(inputs);
  Py_DECREF(allocator);
  PyObject* value = NULL;
  if (status == 0) {
    if (f->single_output && PyList_GET_SIZE(results) == 1) {
      value = PyList_GET_ITEM(results, 0);
      Py_INCREF(value);
    } else {
      value = PyList_AsTuple(results);
    }
  }
  Py_XDECREF(results);
  return value;
}

/* Whether torch's profiler is recording, for a call on torch tensors: FastOp then leaves it to
 * the Python function, which names it for the profiler (ctensor/_profile.py). The flag is
 * torch.autograd.profiler._is_profiler_enabled, read from that module's dict (found the first
 * time a torch tensor comes here with the module loaded). */
static int fast_op_torch_profiling(void) {
  static PyObject* profiler_dict = NULL;
  static PyObject* flag_name = NULL;
  if (!profiler_dict) {
    PyObject* name = PyUnicode_FromString("torch.autograd.profiler");
    PyObject* module = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    if (module && !flag_name) flag_name = PyUnicode_InternFromString("_is_profiler_enabled");
    if (module && flag_name) {
      profiler_dict = PyModule_GetDict(module);
      Py_INCREF(profiler_dict);
    }
    Py_XDECREF(module);
    PyErr_Clear();
    if (!profiler_dict) return 0;
  }
  PyObject* flag = PyDict_GetItemWithError(profiler_dict, flag_name); /* borrowed */
  if (!flag) PyErr_Clear();
  return flag == Py_True;
}

static PyObject* fast_op_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                                    PyObject* kwnames) {
  FastOpObject* f = (FastOpObject*)self;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs == f->num_inputs && nargs > 0 && !g_fast_busy &&
      ((PyObject*)Py_TYPE(args[0]) != ctpy_tensor_type || !fast_op_torch_profiling())) {
    PyObject* value = NULL;
    if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) {
      if (g_allocators) value = fast_op_call_new(f, args, nargs);
    } else {
      PyObject* out = fast_op_only_out(args, nargs, kwnames);
      if (out) value = fast_op_call_out(f, args, nargs, out);
    }
    if (value) return value;
    if (PyErr_Occurred()) PyErr_Clear(); /* the fallback below reads the arrays again */
  }
  return PyObject_Vectorcall(f->fallback, args, nargsf, kwnames);
}

static PyObject* fast_op_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  const char* name;
  PyObject* fallback;
  Py_ssize_t num_inputs;
  int single_output, capacity;
  if (!PyArg_ParseTuple(args, "sOnpi:FastOp", &name, &fallback, &num_inputs, &single_output,
                        &capacity)) {
    return NULL;
  }
  const ct_op* op = NULL;
  if (ct_op_find(name, &op) != CT_OK || !op) {
    PyErr_Format(PyExc_ValueError, "FastOp: no operator named %s", name);
    return NULL;
  }
  if (!PyCallable_Check(fallback)) {
    PyErr_SetString(PyExc_TypeError, "FastOp: the fallback must be callable");
    return NULL;
  }
  if (!g_out_name && !(g_out_name = PyUnicode_InternFromString("out"))) return NULL;
  FastOpObject* f = (FastOpObject*)type->tp_alloc(type, 0);
  if (!f) return NULL;
  f->op = op;
  Py_INCREF(fallback);
  f->fallback = fallback;
  f->num_inputs = num_inputs;
  f->single_output = single_output;
  f->capacity = capacity;
  f->vectorcall = fast_op_vectorcall;
  return (PyObject*)f;
}

/* Attribute access on a class returns the operator itself, unbound, as for builtins; this also
 * makes inspect (and so help()) treat it as a routine. */
static PyObject* fast_op_descr_get(PyObject* self, PyObject* obj, PyObject* type) {
  Py_INCREF(self);
  return self;
}

/* <ctensor operator NAME> */
static PyObject* fast_op_repr(PyObject* self) {
  PyObject* name = PyObject_GetAttrString(self, "__name__");
  if (!name) return NULL;
  PyObject* text = PyUnicode_FromFormat("<ctensor operator %S>", name);
  Py_DECREF(name);
  return text;
}

/* Pickled by reference, as functions are: the qualified name in __module__. */
static PyObject* fast_op_reduce(PyObject* self, PyObject* Py_UNUSED(ignored)) {
  return PyObject_GetAttrString(self, "__qualname__");
}

static int fast_op_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(((FastOpObject*)self)->fallback);
  Py_VISIT(((FastOpObject*)self)->dict);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

static int fast_op_clear(PyObject* self) {
  Py_CLEAR(((FastOpObject*)self)->fallback);
  Py_CLEAR(((FastOpObject*)self)->dict);
  return 0;
}

static void fast_op_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (((FastOpObject*)self)->weakrefs) PyObject_ClearWeakRefs(self);
  fast_op_clear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

static PyMemberDef fast_op_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FastOpObject, vectorcall), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(FastOpObject, dict), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(FastOpObject, weakrefs), READONLY, NULL},
    {"fallback", T_OBJECT, offsetof(FastOpObject, fallback), READONLY,
     "the operator's Python function: every call the C fast path does not take"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef fast_op_methods[] = {
    {"__reduce__", fast_op_reduce, METH_NOARGS, "pickled by qualified name"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot fast_op_slots[] = {
    {Py_tp_doc,
     "A ctensor operator: ctensor.ops.<name>. Arrays passed positionally, with or without out=, "
     "and no attributes run from C; every other call goes through `fallback`, the operator's "
     "Python function. Each instance carries the operator's own docstring and signature."},
    {Py_tp_new, fast_op_new},
    {Py_tp_dealloc, fast_op_dealloc},
    {Py_tp_traverse, fast_op_traverse},
    {Py_tp_clear, fast_op_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_descr_get, fast_op_descr_get},
    {Py_tp_members, fast_op_members},
    {Py_tp_methods, fast_op_methods},
    {Py_tp_repr, fast_op_repr},
    {0, NULL},
};

PyType_Spec ctpy_fast_op_spec = {
    "ctensor._native.FastOp",
    sizeof(FastOpObject),
    0,
    /* Not subclassable: Python subclasses would lose Py_TPFLAGS_HAVE_VECTORCALL (before 3.12). */
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    fast_op_slots,
};
