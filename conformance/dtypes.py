"""Dtypes as the suite handles them: NumPy storage types (bfloat16 is stored as uint16 bits),
conversion between stored bits and float64 values, and the edge values of each dtype."""

from __future__ import annotations

import numpy as np

from ctensor._dtypes import DTYPES, code_bits

__all__ = [
    "DTYPES",
    "FLOATS",
    "INTEGERS",
    "storage",
    "to_values",
    "from_values",
    "itemsize",
    "is_float",
    "is_int",
    "is_complex",
    "part_dtype",
    "make_complex",
    "edge_values",
    "limits",
    "set_ct_dtype",
]

FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEXES = ("complex64", "complex128")
INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def is_float(name: str) -> bool:
    return name in FLOATS


def is_int(name: str) -> bool:
    return name in INTEGERS


def is_complex(name: str) -> bool:
    return name in COMPLEXES


def part_dtype(name: str) -> str:
    """The float dtype of each part of a complex dtype."""
    return {"complex64": "float32", "complex128": "float64"}[name]


def storage(name: str) -> np.dtype:
    """The NumPy dtype that holds `name`'s bytes (uint16 for bfloat16)."""
    return np.dtype(np.uint16) if name == "bfloat16" else np.dtype(name)


def itemsize(name: str) -> int:
    return storage(name).itemsize


def set_ct_dtype(slot, name: str) -> None:  # noqa: ANN001 - a ct_dtype cdata
    code, bits = code_bits(name)
    slot.code = code
    slot.bits = bits
    slot.lanes = 1


def _bf16_from_f64(values: np.ndarray) -> np.ndarray:
    """Rounds float64 values to bfloat16 bits (through float32, nearest-even; NaN stays NaN)."""
    f32 = np.asarray(values, dtype=np.float64).astype(np.float32)
    bits = f32.view(np.uint32).astype(np.uint64)
    # uint64 constants: NumPy 1.x promotes a 0-d uint64 array with a Python int to float64.
    one, sixteen = np.uint64(1), np.uint64(16)
    rounded = (bits + np.uint64(0x7FFF) + ((bits >> sixteen) & one)) >> sixteen
    nan = np.isnan(f32)
    return np.where(nan, (bits >> sixteen) | np.uint64(0x40), rounded).astype(np.uint16)


def from_values(values, name: str) -> np.ndarray:  # noqa: ANN001
    """Stored array of dtype `name` from values (floats are rounded to nearest, integers wrap)."""
    values = np.asarray(values)
    if name == "bfloat16":
        return _bf16_from_f64(values.astype(np.float64))
    if name == "bool":
        return values.astype(bool)
    if is_int(name) and values.dtype.kind == "c":
        values = values.real
    if is_int(name) and values.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return (
                values.astype(np.int64).astype(name)
                if name != "uint64"
                else values.astype(np.uint64)
            )
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(storage(name))


def to_values(stored: np.ndarray, name: str) -> np.ndarray:
    """The values of a stored array: float64 for floats, complex128 for complex, the integer or
    bool array otherwise."""
    if name == "bfloat16":
        return (stored.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if is_float(name):
        return stored.astype(np.float64)
    if is_complex(name):
        return stored.astype(np.complex128)
    return stored


def make_complex(re, im) -> np.ndarray:  # noqa: ANN001
    """complex128 values from their parts (re + 1j * im would turn an infinite part into nan)."""
    re, im = np.broadcast_arrays(np.asarray(re, np.float64), np.asarray(im, np.float64))
    out = np.empty(re.shape, np.complex128)
    out.real, out.imag = re, im
    return out


def limits(name: str) -> tuple[int, int]:
    info = np.iinfo(name)
    return int(info.min), int(info.max)


def _float_info(name: str) -> tuple[float, float, float]:
    """(max, smallest normal, smallest subnormal) of a float dtype."""
    if name == "bfloat16":
        return 3.3895313892515355e38, 1.1754943508222875e-38, 9.183549615799121e-41
    info = np.finfo(name)
    return float(info.max), float(info.smallest_normal), float(info.smallest_subnormal)


def edge_values(name: str) -> np.ndarray:
    """Values every case mixes in: NaN, +-inf, -0.0, subnormals and extremes for floats; the
    limits, 0 and +-1 for integers; both values for bool; for complex every pair of the part
    dtype's edge values as (real, imaginary), so that each part is drawn independently. Returned
    as values (see to_values)."""
    if name == "bool":
        return np.array([False, True])
    if is_int(name):
        lo, hi = limits(name)
        vals = [lo, hi, 0, 1] + ([-1] if lo < 0 else [])
        return np.array(vals, dtype=name)
    if is_complex(name):
        parts = edge_values(part_dtype(name))
        re, im = np.meshgrid(parts, parts, indexing="ij")
        return make_complex(re.ravel(), im.ravel())
    big, normal, sub = _float_info(name)
    return np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, sub, -sub, normal, big, -big, 1.0, -1.0])
