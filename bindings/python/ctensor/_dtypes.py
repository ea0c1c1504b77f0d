"""Dtype names, DLPack codes, conversions from NumPy/PyTorch/string dtypes, and NumPy 2 type
promotion (extended with PyTorch's rules for bfloat16), the same on every NumPy version."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ._lib import ffi, lib

__all__ = [
    "DTYPES",
    "KEY_NAME",
    "code_bits",
    "can_cast_safe",
    "name_of_ct",
    "numpy_dtype",
    "promote",
    "scalar_array",
    "scalar_dtype",
    "to_dtype_name",
    "torch_dtype",
]

#: The dtypes ctensor computes on, in NumPy's type order (the order promotion searches).
DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
DTYPE_INDEX = {name: i for i, name in enumerate(DTYPES)}

_CODE_BITS: dict[str, tuple[int, int]] = {
    "bool": (lib.CT_DTYPE_BOOL, 8),
    "int8": (lib.CT_DTYPE_INT, 8),
    "uint8": (lib.CT_DTYPE_UINT, 8),
    "int16": (lib.CT_DTYPE_INT, 16),
    "uint16": (lib.CT_DTYPE_UINT, 16),
    "int32": (lib.CT_DTYPE_INT, 32),
    "uint32": (lib.CT_DTYPE_UINT, 32),
    "int64": (lib.CT_DTYPE_INT, 64),
    "uint64": (lib.CT_DTYPE_UINT, 64),
    "float16": (lib.CT_DTYPE_FLOAT, 16),
    "bfloat16": (lib.CT_DTYPE_BFLOAT, 16),
    "float32": (lib.CT_DTYPE_FLOAT, 32),
    "float64": (lib.CT_DTYPE_FLOAT, 64),
    "complex64": (lib.CT_DTYPE_COMPLEX, 64),
    "complex128": (lib.CT_DTYPE_COMPLEX, 128),
}
_NAME_OF: dict[tuple[int, int, int], str] = {
    (code, bits, 1): name for name, (code, bits) in _CODE_BITS.items()
}

#: dtype key (code | bits << 8 | lanes << 16, as ctpy_open packs it) -> ctensor dtype name.
KEY_NAME: dict[int, str] = {
    code | (bits << 8) | (1 << 16): name for name, (code, bits) in _CODE_BITS.items()
}

_NUMPY: dict[str, np.dtype | None] = {
    name: (None if name == "bfloat16" else np.dtype(name)) for name in DTYPES
}


def code_bits(name: str) -> tuple[int, int]:
    """DLPack (code, bits) of a dtype name known to DLPack."""
    return _CODE_BITS[name]


def name_of_ct(dtype: Any) -> str:
    """Name of a ``ct_dtype`` cdata (or a (code, bits, lanes) tuple); a descriptive string for
    dtypes ctensor has no name for."""
    key = (dtype.code, dtype.bits, dtype.lanes) if not isinstance(dtype, tuple) else dtype
    name = _NAME_OF.get(key)
    if name is None:
        return f"<dtype code {key[0]} bits {key[1]} lanes {key[2]}>"
    return name


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a ctensor dtype name. bfloat16 is ml_dtypes' bfloat16 (imported only
    when a bfloat16 NumPy array is needed), UnsupportedDTypeError where ml_dtypes is missing."""
    dt = _NUMPY.get(name)
    if dt is None:
        from ._errors import UnsupportedDTypeError

        if name == "bfloat16":
            try:
                import ml_dtypes
            except ImportError:
                raise UnsupportedDTypeError(
                    "the result would be bfloat16, which NumPy arrays hold only with ml_dtypes "
                    "(pip install ml_dtypes); or pass PyTorch tensors (or JAX arrays), or cast "
                    "the inputs to float32 first"
                ) from None
            return np.dtype(ml_dtypes.bfloat16)
        raise UnsupportedDTypeError(f"ctensor has no dtype named {name!r}")
    return dt


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def _torch_name(dtype: Any) -> str | None:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        text = str(dtype)
        return text[len("torch.") :] if text.startswith("torch.") else text
    return None


def to_dtype_name(dtype: Any) -> str:
    """Canonical ctensor name of a dtype given as a name ("float32", "bfloat16", "f4"), a NumPy
    dtype or scalar type (``np.float32``, ``float``), or a PyTorch dtype (``torch.bfloat16``).
    Unknown names raise UnsupportedDTypeError with the C library's message."""
    if isinstance(dtype, str):
        if dtype in _CODE_BITS:
            return dtype
        name = dtype
    else:
        name = _torch_name(dtype)
        if name is not None:
            return name
        name = None
    try:
        np_name = np.dtype(dtype).name
    except TypeError:
        np_name = None
    if np_name is not None and (np_name in _CODE_BITS):
        return np_name
    # Let the C library say what is wrong with the name.
    from ._errors import UnsupportedDTypeError, check

    text = name if name is not None else (np_name or repr(dtype))
    out = ffi.new("ct_dtype*")
    check(lib.ct_dtype_from_name(text.encode(), out))
    raise UnsupportedDTypeError(f"unknown dtype {text!r}")  # pragma: no cover - C accepted it


# ------------------------------------------------------------------------------------------------
# Promotion
# ------------------------------------------------------------------------------------------------

# bfloat16 with another dtype, as PyTorch promotes it (complex: bfloat16 goes in as float32).
_BF16_WITH = {
    "bool": "bfloat16",
    "int8": "bfloat16",
    "uint8": "bfloat16",
    "int16": "bfloat16",
    "uint16": "bfloat16",
    "int32": "bfloat16",
    "uint32": "bfloat16",
    "int64": "bfloat16",
    "uint64": "bfloat16",
    "float16": "float32",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
}
_PROMOTE2: dict[tuple[str, str], str] = {}
for _a in DTYPES:
    for _b in DTYPES:
        if _a == "bfloat16":
            _PROMOTE2[_a, _b] = _BF16_WITH[_b]
        elif _b == "bfloat16":
            _PROMOTE2[_a, _b] = _BF16_WITH[_a]
        else:
            _PROMOTE2[_a, _b] = np.result_type(_NUMPY[_a], _NUMPY[_b]).name

_SAFE: dict[tuple[str, str], bool] = {}
for _a in DTYPES:
    for _b in DTYPES:
        if _a == _b:
            _SAFE[_a, _b] = True
        elif _b == "bfloat16":
            _SAFE[_a, _b] = _a in ("bool", "int8", "uint8")
        elif _a == "bfloat16":
            _SAFE[_a, _b] = _b in ("float32", "float64", "complex64", "complex128")
        else:
            _SAFE[_a, _b] = bool(np.can_cast(_NUMPY[_a], _NUMPY[_b], "safe"))
del _a, _b


def promote(names: list[str] | tuple[str, ...]) -> str | None:
    """The dtype NumPy 2 promotes these to (PyTorch's rules where bfloat16 is involved); None if
    one of them is not a ctensor dtype."""
    result = names[0]
    for other in names[1:]:
        result = _PROMOTE2.get((result, other))
        if result is None:
            return None
    return result if result in DTYPE_INDEX else None


def can_cast_safe(src: str, dst: str) -> bool:
    """NumPy's 'safe' casting; bfloat16 is reached safely from bool/int8/uint8 only."""
    return _SAFE.get((src, dst), False)


_KIND = {name: np.dtype(name).kind for name in DTYPES if name != "bfloat16"}


def scalar_dtype(value: bool | int | float | complex, other: str | None) -> str:
    """The dtype a Python scalar takes next to an array of dtype ``other``: NumPy 2's weak
    scalars (NEP 50) on every NumPy version, written out here because NumPy 1.x's own
    ``result_type`` looks at the value instead; PyTorch's rule for bfloat16: any real scalar
    stays bfloat16. With no array dtype, the scalar's own default dtype."""
    if other is None or other not in DTYPE_INDEX:
        if isinstance(value, bool):
            return "bool"
        return np.asarray(value).dtype.name
    if other == "bfloat16":
        return "bfloat16" if not isinstance(value, complex) else "complex64"
    kind = _KIND[other]
    if isinstance(value, bool):
        return other
    if isinstance(value, int):
        return other if kind != "b" else "int64"  # NumPy 2's default integer
    if isinstance(value, float):
        return other if kind in "fc" else "float64"
    if kind == "c":
        return other
    return "complex64" if other in ("float16", "float32") else "complex128"


def scalar_array(value: Any, dtype: np.dtype) -> np.ndarray:
    """``np.asarray(value, dtype)`` for a Python scalar, raising OverflowError for an int that
    ``dtype`` cannot hold on every NumPy version (as NumPy 2 does; NumPy 1.x wraps it)."""
    if type(value) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dtype.name}")
    return np.asarray(value, dtype)
