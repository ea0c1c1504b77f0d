"""How NDArrays reach ctensor's call path and come back: the one place that knows.

MXNet 1.9.1 NDArrays have no ``__dlpack__``: ``mx.nd.to_dlpack_for_read`` and
``to_dlpack_for_write`` export a ``dltensor`` capsule (after waiting for pending writes, or for
pending reads and writes), which ctensor's call path reads like any capsule, without a copy.
MXNet exports bool arrays as unsigned 1-bit integers, which no consumer reads as bool: those are
exported here instead, as a bool capsule viewing the NDArray's memory (also without a copy),
after the same wait. NumPy results (of an eager dynamic op) become NDArrays through
``mx.nd.array`` (a copy: ``mx.nd.from_dlpack`` fails once ctensor is imported, issue 29).

These are stopgaps until ctensor's binding accepts NDArrays itself (the interop part of issue
29); every caller goes through ``readable``, ``writable`` and ``to_ndarray``.
"""

from __future__ import annotations

import ctypes
from typing import Any

import mxnet as mx
import numpy as np

from .._device_array import _capsule
from .._lib import lib

__all__ = ["data_pointer", "readable", "to_ndarray", "writable"]

_NDArray = mx.nd.NDArray
_to_read = mx.nd.to_dlpack_for_read
_to_write = mx.nd.to_dlpack_for_write
_BOOL = np.bool_
_CPU = (lib.CT_DEVICE_CPU, 0)


def data_pointer(array: Any) -> int:
    """The address of an NDArray's first element."""
    pointer = ctypes.c_void_p()
    mx.base.check_call(mx.base._LIB.MXNDArrayGetData(array.handle, ctypes.byref(pointer)))
    return pointer.value or 0


def _bool_capsule(array: Any) -> Any:
    return _capsule(data_pointer(array), _CPU, array.shape, "bool", None, 0, array)


def readable(value: Any) -> Any:
    """What ctensor's call path reads for an input: a capsule of an NDArray's memory, anything
    else as it is."""
    if type(value) is not _NDArray:
        return value
    if value.dtype is _BOOL:
        value.wait_to_read()
        return _bool_capsule(value)
    return _to_read(value)


def writable(array: Any) -> Any:
    """A capsule through which ctensor writes an NDArray's memory."""
    if array.dtype is _BOOL:
        mx.base.check_call(mx.base._LIB.MXNDArrayWaitToWrite(array.handle))
        return _bool_capsule(array)
    return _to_write(array)


def to_ndarray(array: np.ndarray) -> Any:
    """An NDArray holding a NumPy result."""
    return mx.nd.array(array, dtype=array.dtype)
