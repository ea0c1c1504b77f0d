"""A private ctypes handle on the Python C API's capsule functions.

``ctypes.pythonapi`` is one object shared by the whole process: setting ``argtypes`` or
``restype`` on its functions changes them for every other library that calls them (MXNet's
``mx.nd.from_dlpack`` passes capsules as ``py_object`` and fails with ``ArgumentError: wrong
type`` once someone declared them ``c_void_p``). ctensor declares its own on a private
``ctypes.PyDLL`` handle instead, whose function objects are its alone.
"""

from __future__ import annotations

import ctypes

__all__ = ["capsule_get_pointer", "capsule_is_valid", "capsule_new"]

_api = ctypes.PyDLL(None)

#: PyCapsule_New(pointer, name, destructor) -> capsule
capsule_new = _api.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
#: PyCapsule_IsValid(capsule address, name) -> int (for destructors, which get an address)
capsule_is_valid = _api.PyCapsule_IsValid
capsule_is_valid.restype = ctypes.c_int
capsule_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
#: PyCapsule_GetPointer(capsule address, name) -> pointer
capsule_get_pointer = _api.PyCapsule_GetPointer
capsule_get_pointer.restype = ctypes.c_void_p
capsule_get_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
