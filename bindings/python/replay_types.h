/* replay_types.h - the parts of the ctensor._replay module defined outside replay.c. */
#ifndef CTENSOR_PY_REPLAY_TYPES_H_
#define CTENSOR_PY_REPLAY_TYPES_H_

#include <Python.h>
#include <structmember.h>

/* ctensor._replay.FastOp (fast_op.c). */
extern PyType_Spec ctpy_fast_op_spec;

/* set_fast_path(function_address, frame_address, keepalive) (fast_op.c): the cffi module's
 * ctpy_fast_call_held and the frame every FastOp call uses. */
PyObject* ctpy_set_fast_path(PyObject* module, PyObject* args);

#endif /* CTENSOR_PY_REPLAY_TYPES_H_ */
