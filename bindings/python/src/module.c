/* module.c - PyInit__native: ctensor._native is cffi's module (ffi, lib), to which this adds the
 * types FastOp and Replay and the function configure().
 *
 * cffi's generated source is compiled with its PyInit renamed to ctpy_cffi_module_init (see
 * meson.build); it builds the module object with `ffi` and `lib` in it, and this init extends it.
 */
#include "binding.h"

PyMODINIT_FUNC ctpy_cffi_module_init(void);

PyDoc_STRVAR(configure_doc,
             "configure(*, ndarray_type=None, tensor_type=None, to_dlpack=None, "
             "increment_version=None, grad_enabled=None, allocators=None)\n\n"
             "Tells the fast paths what they may read and call themselves (None: leave as is): "
             "the exact array types they read (numpy.ndarray, torch.Tensor), torch's to_dlpack, "
             "torch's autograd version bump (called with a tuple of the torch tensors a call "
             "wrote), torch.is_grad_enabled (asked when a tensor requires grad), and FastOp's "
             "allocators by input type (a dict, see Framework.fast_allocator).");

static PyObject* native_configure(PyObject* module, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"ndarray_type", "tensor_type", "to_dlpack", "increment_version",
                             "grad_enabled", "allocators",  NULL};
  PyObject *ndarray_type = Py_None, *tensor_type = Py_None, *to_dlpack = Py_None;
  PyObject *increment_version = Py_None, *grad_enabled = Py_None, *allocators = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOOOO:configure", keywords, &ndarray_type,
                                   &tensor_type, &to_dlpack, &increment_version, &grad_enabled,
                                   &allocators)) {
    return NULL;
  }
  if ((ndarray_type != Py_None && !PyType_Check(ndarray_type)) ||
      (tensor_type != Py_None && !PyType_Check(tensor_type))) {
    PyErr_SetString(PyExc_TypeError, "configure: ndarray_type and tensor_type must be types");
    return NULL;
  }
  if (ctpy_configure_types(ndarray_type == Py_None ? NULL : ndarray_type,
                           tensor_type == Py_None ? NULL : tensor_type,
                           to_dlpack == Py_None ? NULL : to_dlpack,
                           increment_version == Py_None ? NULL : increment_version,
                           grad_enabled == Py_None ? NULL : grad_enabled) != 0) {
    return NULL;
  }
  if (allocators != Py_None && ctpy_fast_op_set_allocators(allocators) != 0) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef native_functions[] = {
    {"configure", (PyCFunction)(void (*)(void))native_configure, METH_VARARGS | METH_KEYWORDS,
     configure_doc},
    {NULL, NULL, 0, NULL},
};

static int native_add_type(PyObject* module, PyType_Spec* spec, const char* name) {
  PyObject* type = PyType_FromModuleAndSpec(module, spec, NULL);
  if (!type) return -1;
  const int rc = PyModule_AddObjectRef(module, name, type);
  Py_DECREF(type);
  return rc;
}

PyMODINIT_FUNC PyInit__native(void) {
  PyObject* module = ctpy_cffi_module_init();
  if (!module) return NULL;
  if (PyModule_AddFunctions(module, native_functions) != 0 ||
      native_add_type(module, &ctpy_fast_op_spec, "FastOp") != 0 ||
      native_add_type(module, &ctpy_replay_spec, "Replay") != 0 ||
      ctpy_configure_types(NULL, NULL, NULL, NULL, NULL) != 0) {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
