"""Helpers for testing DLPack producers and consumers against ctensor (used by the binding
tests): capsules whose deleter counts its calls, and reading the tensor inside a capsule.

Not imported by ``import ctensor``; it makes capsules through ctensor's private ctypes handle
on the Python C API (``_pyapi``), never through ``ctypes.pythonapi``."""

from __future__ import annotations

import ctypes

import numpy as np

from ._dlpack import capsule_tensor
from ._lib import ffi, lib
from ._pyapi import capsule_new

__all__ = ["CountedCapsule", "capsule_name", "capsule_tensor", "tensor_address"]


_DTYPE_CODES = {
    "i": lib.CT_DTYPE_INT,
    "u": lib.CT_DTYPE_UINT,
    "f": lib.CT_DTYPE_FLOAT,
    "b": lib.CT_DTYPE_BOOL,
    "c": lib.CT_DTYPE_COMPLEX,
}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


class CountedCapsule:
    """A DLPack capsule over a NumPy array whose deleter counts its calls. The capsule has no
    destructor of its own, so ``deleter_calls`` counts exactly the consumer's calls."""

    def __init__(
        self,
        array: np.ndarray,
        versioned: bool = False,
        read_only: bool = False,
        device_type: int = 1,
        null_strides: bool = False,
    ):
        self.array = array
        self.deleter_calls = 0
        self._shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
        self._strides = (ctypes.c_int64 * max(array.ndim, 1))(
            *[s // array.itemsize for s in array.strides]
        )
        self._deleter = _DELETER(self._delete)
        dtype = _DLDataType(_DTYPE_CODES[array.dtype.kind], array.itemsize * 8, 1)
        tensor = _DLTensor(
            array.__array_interface__["data"][0],
            _DLDevice(device_type, 0),
            array.ndim,
            dtype,
            self._shape,
            None if null_strides else self._strides,
            0,
        )
        if versioned:
            self._managed = _DLManagedTensorVersioned(
                _DLPackVersion(1, 0),
                None,
                self._deleter,
                lib.DLPACK_FLAG_BITMASK_READ_ONLY if read_only else 0,
                tensor,
            )
            name = b"dltensor_versioned"
        else:
            self._managed = _DLManagedTensor(tensor, None, self._deleter)
            name = b"dltensor"
        self.capsule = capsule_new(ctypes.addressof(self._managed), name, None)

    def _delete(self, _pointer: int) -> None:
        self.deleter_calls += 1


def capsule_name(capsule: object) -> str:
    """The capsule's current name, from its repr (renamed to used_... once consumed)."""
    return repr(capsule).split('"')[1]


def tensor_address(capsule: object) -> tuple[int, tuple[int, ...], tuple[int, ...] | None]:
    """(address of the first element, shape, strides in elements) of a capsule's tensor."""
    t = capsule_tensor(capsule)
    assert t != ffi.NULL
    address = int(ffi.cast("uintptr_t", t.data)) + t.byte_offset
    shape = tuple(t.shape[k] for k in range(t.ndim))
    strides = None if t.strides == ffi.NULL else tuple(t.strides[k] for k in range(t.ndim))
    return address, shape, strides
