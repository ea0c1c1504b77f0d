"""DLPack capsules of NumPy arrays, zero copy, on every NumPy from 1.23 on, and reading the
tensor inside a capsule.

NumPy 2.1 added ``__dlpack__(max_version=...)`` (versioned capsules, READ_ONLY flagged); before,
``__dlpack__()`` refuses read-only arrays and (before 1.25) bool arrays, and no NumPy exports
ml_dtypes' bfloat16. ``export_numpy`` reads all of them, without a copy, on every version.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import InvalidArgumentError, ReadOnlyOutputError, UnsupportedDTypeError
from ._lib import ffi, lib

__all__ = ["NUMPY_VERSIONED", "capsule_tensor", "export_numpy"]


def capsule_tensor(capsule: Any) -> Any:
    """The ``DLTensor*`` (as ``ct_tensor*``) inside a capsule that was not consumed, or NULL.
    For tests and debugging: the capsule must stay alive while the pointer is used."""
    handle = ffi.cast("void*", id(capsule))
    if lib.ctpy_capsule_is_valid(handle, b"dltensor_versioned"):
        managed = ffi.cast(
            "DLManagedTensorVersioned*", lib.ctpy_capsule_get_pointer(handle, b"dltensor_versioned")
        )
        return ffi.addressof(managed, "dl_tensor")
    if lib.ctpy_capsule_is_valid(handle, b"dltensor"):
        managed = ffi.cast("DLManagedTensor*", lib.ctpy_capsule_get_pointer(handle, b"dltensor"))
        return ffi.addressof(managed, "dl_tensor")
    return ffi.NULL


def _numpy_takes_max_version() -> bool:
    try:
        np.empty(0).__dlpack__(max_version=(1, 0))
    except TypeError:
        return False
    return True


#: Whether NumPy's __dlpack__ takes max_version (NumPy 2.1 on).
NUMPY_VERSIONED = _numpy_takes_max_version()


def _numpy_exports_bool() -> bool:
    try:
        np.zeros(1, np.bool_).__dlpack__()
    except (BufferError, TypeError):
        return False
    return True


_UNSIGNED = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16)}
# dtype -> the DLPack code its same-size unsigned view is exported under (see export_numpy).
_RECODED: dict[Any, int] = {} if _numpy_exports_bool() else {np.dtype(np.bool_): lib.CT_DTYPE_BOOL}


def _recode_of(dtype: np.dtype) -> int | None:
    code = _RECODED.get(dtype)
    if code is None and dtype.kind == "V" and dtype.itemsize == 2 and dtype.name == "bfloat16":
        code = _RECODED[dtype] = lib.CT_DTYPE_BFLOAT  # ml_dtypes.bfloat16
    return code


class _WritableInterface:
    """Presents an array's memory through ``__array_interface__`` with the read-only bit clear,
    so that NumPy before 2.1 exports it (legacy capsules cannot say READ_ONLY). Used for inputs
    only, which ctensor never writes; it keeps the array alive."""

    __slots__ = ("__array_interface__", "array")

    def __init__(self, array: np.ndarray):
        interface = dict(array.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface
        self.array = array


def _set_code(capsule: Any, code: int) -> None:
    """Rewrites the dtype code of the tensor in a capsule NumPy just made for us."""
    tensor = capsule_tensor(capsule)
    if tensor != ffi.NULL:
        tensor.dtype.code = code


def export_numpy(x: np.ndarray, output: bool, what: Any) -> Any:
    """A DLPack capsule of NumPy array ``x`` (``what()`` names it in errors), without a copy:

    - an output must be writable (ReadOnlyOutputError otherwise, before anything is exported);
    - a read-only input is exported versioned with READ_ONLY (NumPy 2.1 on), or before 2.1
      through a legacy capsule of the same memory (it is an input: nothing writes it);
    - bfloat16 (ml_dtypes) arrays, and bool arrays where NumPy cannot export bool (before 1.25),
      are exported as their unsigned integer view of the same size, and the capsule's dtype
      code is set back to bfloat16 or bool.
    """
    code = _recode_of(x.dtype)
    base = x if code is None else x.view(_UNSIGNED[x.dtype.itemsize])
    try:
        if x.flags.writeable:
            capsule = base.__dlpack__()
        elif output:
            raise ReadOnlyOutputError(
                f"{what()} is a read-only NumPy array; ctensor never writes into read-only memory"
            )
        elif NUMPY_VERSIONED:
            capsule = base.__dlpack__(max_version=(1, 0))  # flagged READ_ONLY
        else:
            capsule = np.asarray(_WritableInterface(base)).__dlpack__()
    except (BufferError, TypeError) as e:
        text = str(e)
        lowered = text.lower()
        if "dtype" in lowered or "data type" in lowered:
            raise UnsupportedDTypeError(f"{what()}: {text}") from e
        raise InvalidArgumentError(f"{what()}: cannot be read through DLPack: {text}") from e
    if code is not None:
        _set_code(capsule, code)
    return capsule
