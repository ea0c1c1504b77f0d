"""Dtypes of a call: type resolution (which dtypes the kernel runs in, which inputs are cast),
weak Python scalars (NEP 50), the scalars' 0-d arrays, and exact signed/uint64 comparisons.

Promotion reproduces NumPy 2's ufunc loop selection on the op's own kernel signatures (see
``OpSpec.choose_dtypes``); the one copy the binding ever makes is a cast, done by ctensor's own
``astype`` into a new array of the caller's framework.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._dlpack import export_numpy, mark_written
from ._dtypes import (
    DTYPE_INDEX,
    KEY_NAME,
    numpy_dtype,
    promote,
    scalar_array,
    scalar_dtype,
    to_dtype_name,
)
from ._errors import WrongArityError
from ._frame import MAX_TENSORS, Frame, input_name, open_views
from ._frameworks import NUMPY, Framework
from ._lib import lib
from ._registry import DEVICE_NAMES, OpSpec, get_spec
from ._run import run_internal, tensor_in

__all__ = ["TypeResolution", "resolve_types", "weak_scalars", "promote_call"]


def _intermediate() -> str:
    return "an array ctensor made for the call"


_CPU = lib.CT_DEVICE_CPU
_META_READ_ONLY = lib.CTPY_META_READ_ONLY
_KEY_NAME = KEY_NAME


class TypeResolution:
    """What a call needs to know about its tensors' dtypes and devices: the device, the dtypes,
    the dtypes the inputs are cast to (``targets``, None when a kernel takes them as they are)
    and the first READ_ONLY output. Cached per op (``OpSpec.type_resolutions``) by the packed
    ``meta`` words of the call's tensors (dtype, device, flags)."""

    __slots__ = ("device", "device_name", "single_device", "dtypes", "targets", "read_only_out")

    def __init__(self, spec: OpSpec, metas: tuple, n: int, first: int):
        if first >= 0:
            device = metas[first] >> 40
        else:  # no array input: the first output's device, as the C library picks the kernel
            device = metas[n] >> 40 if len(metas) > n and metas[n] else _CPU
        self.device = device
        self.device_name = DEVICE_NAMES.get(device & 0xFF, "other")
        self.single_device = all(not m or m >> 40 == device for m in metas)
        self.dtypes = tuple(_KEY_NAME.get(m & 0xFFFFFFFF) if m else None for m in metas[:n])
        targets = None
        if self.single_device and (spec.elementwise or n > 1):
            chosen = spec.choose_dtypes(self.device_name, self.dtypes)
            if any(chosen):
                targets = chosen
        self.targets = targets
        self.read_only_out = -1
        for j, m in enumerate(metas[n:]):
            if m & _META_READ_ONLY:
                self.read_only_out = j
                break


_RESOLUTION_CACHE_SIZE = 512


def resolve_types(spec: OpSpec, metas: tuple, n: int, first: int) -> TypeResolution:
    """The type resolution of a call whose tensors have these meta words (cached per op)."""
    cache = spec.type_resolutions
    found = cache.get(metas)
    if found is None:
        found = TypeResolution(spec, metas, n, first)
        if len(cache) >= _RESOLUTION_CACHE_SIZE:
            cache.clear()
        cache[metas] = found
    return found


def cast(
    frame: Frame, i: int, slot: int, target: str, fw: Framework, like: Any, device: int
) -> None:
    """Replaces input i of the frame by a new array of the caller's framework holding it cast to
    ``target``, made by ctensor's own astype op (the only copy the binding ever makes)."""
    (array,) = run_internal(
        get_spec("astype"), [frame.tensors[i]], fw, like, device, {"dtype": target}
    )
    frame.tensors[i] = tensor_in(frame, array, slot, fw)


# NumPy's comparison ufuncs compare mixed signed/uint64 integers (and Python ints of any size)
# exactly, without the detour through float64 that promotion would take.
_COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
# What `signed OP unsigned` is when the signed value is negative; mirrored for `unsigned OP
# signed`.
_NEGATIVE_LEFT = {
    "equal": False,
    "not_equal": True,
    "less": True,
    "less_equal": True,
    "greater": False,
    "greater_equal": False,
}
_NEGATIVE_RIGHT = {
    "equal": False,
    "not_equal": True,
    "less": False,
    "less_equal": False,
    "greater": True,
    "greater_equal": True,
}
_SIGNED = frozenset({"int8", "int16", "int32", "int64"})
_INT_RANGES = {
    name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
    for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
}


def needs_exact_compare(spec: OpSpec, dtypes: tuple) -> bool:
    if spec.name not in _COMPARISONS or len(dtypes) != 2:
        return False
    left, right = dtypes
    return (left in _SIGNED and right == "uint64") or (left == "uint64" and right in _SIGNED)


def exact_compare(
    spec: OpSpec,
    frame: Frame,
    dtypes: tuple,
    fw: Framework,
    like: Any,
    device: int,
    out_tensor: Any,
    attrs: dict | None,
) -> Any:
    """signed OP uint64, exactly: the signed operand wrapped to uint64 compares right wherever
    it is not negative; where it is, the answer is fixed."""
    signed_left = dtypes[0] in _SIGNED
    s_index = 0 if signed_left else 1
    signed, unsigned = frame.tensors[s_index], frame.tensors[1 - s_index]
    slot = MAX_TENSORS - 1
    (wrapped,) = run_internal(get_spec("astype"), [signed], fw, like, device, {"dtype": "uint64"})
    wrapped_t = tensor_in(frame, wrapped, slot, fw)
    operands = [wrapped_t, unsigned] if signed_left else [unsigned, wrapped_t]
    (as_unsigned,) = run_internal(spec, operands, fw, like, device, attrs)
    as_unsigned_t = tensor_in(frame, as_unsigned, slot - 1, fw)
    zero_t = tensor_in(frame, _scalar_array(0, dtypes[s_index], fw, like, device), slot - 2, fw)
    (negative,) = run_internal(get_spec("less"), [signed, zero_t], fw, like, device)
    negative_t = tensor_in(frame, negative, slot - 3, fw)
    fixed = (_NEGATIVE_LEFT if signed_left else _NEGATIVE_RIGHT)[spec.name]
    fixed_t = tensor_in(frame, _scalar_array(fixed, "bool", fw, like, device), slot - 4, fw)
    result = run_internal(
        get_spec("where"), [negative_t, fixed_t, as_unsigned_t], fw, like, device, None, out_tensor
    )
    return None if result is None else result[0]


def _scalar_array(value: Any, dtype: str, fw: Framework, like: Any, device: int) -> Any:
    """A 0-d array holding a Python scalar, readable on the call's device."""
    if dtype not in DTYPE_INDEX and dtype != "bfloat16":
        return np.asarray(value, np.dtype(dtype))  # a dtype ctensor lacks: the C library refuses it
    if dtype != "bfloat16" and (fw is NUMPY or device & 0xFF == _CPU):
        # A CPU scalar is read in place whatever the caller's framework.
        return scalar_array(value, numpy_dtype(dtype))  # OverflowError when it does not fit
    return fw.scalar(value, dtype, like)


def _wide_python_int(value: int, op: str) -> tuple[str, Any]:
    """The dtype and value a Python int that does not fit its partner's integer dtype takes in
    an op where NumPy 2 still computes exactly: float64 for true division; for comparisons the
    smallest of int64, uint64 that holds it, else an infinity of its sign (same answers)."""
    if op == "divide":
        return "float64", float(value)
    lo, hi = _INT_RANGES["int64"]
    if lo <= value <= hi:
        return "int64", value
    if 0 <= value <= _INT_RANGES["uint64"][1]:
        return "uint64", value
    return "float64", float("inf") if value > 0 else float("-inf")


_PLAIN_SCALARS = (bool, int, float)
# numpy dtype of a weak scalar by (Python type, partner's dtype object): see weak_scalars.
_WEAK_SCALAR_DTYPES: dict[tuple, np.dtype | None] = {}


def weak_scalars(spec: OpSpec, args: tuple) -> tuple[tuple, type] | None:
    """``args`` with its Python scalars made 0-d NumPy arrays of their weak dtype (NEP 50), for
    the C fast paths; None when this simple conversion does not apply (no scalar, no array, a
    scalar with no array of its promotion group, bool or bfloat16 partners, ints in ops that
    take any int exactly). The general path then handles the call."""
    first_type = None
    has_scalar = False
    for a in args:
        if type(a) in _PLAIN_SCALARS:
            has_scalar = True
        elif first_type is None:
            first_type = type(a)
    if first_type is None or not has_scalar:
        return None
    group_of = spec.group_index("cpu")
    converted = list(args)
    for i, value in enumerate(args):
        tp = type(value)
        if tp not in _PLAIN_SCALARS:
            continue
        if tp is int and (spec.name in _COMPARISONS or spec.name == "divide"):
            return None
        partners = [args[j] for j in group_of.get(i, ()) if type(args[j]) not in _PLAIN_SCALARS]
        if len(partners) != 1:
            return None
        partner_dtype = getattr(partners[0], "dtype", None)
        key = (tp, partner_dtype)
        try:
            dtype = _WEAK_SCALAR_DTYPES[key]
        except KeyError:
            dtype = _WEAK_SCALAR_DTYPES[key] = _weak_scalar_dtype(value, partner_dtype)
        except TypeError:  # an unhashable dtype attribute: not a plain array
            return None
        if dtype is None:
            return None
        converted[i] = scalar_array(value, dtype)  # OverflowError when it does not fit
    return tuple(converted), first_type


def _weak_scalar_dtype(value: Any, partner_dtype: Any) -> np.dtype | None:
    try:
        name = to_dtype_name(partner_dtype)
    except Exception:  # noqa: BLE001 - not a dtype we know: the general path decides
        return None
    if name in ("bool", "bfloat16") or name not in DTYPE_INDEX:
        return None
    dtype = scalar_dtype(value, name)
    return np.dtype(dtype) if dtype in DTYPE_INDEX and dtype != "bfloat16" else None


def scalars_to_arrays(
    spec: OpSpec,
    args: tuple | list,
    scalars: list[int],
    dtypes: tuple,
    frame: Frame,
    fw: Framework,
    like: Any,
    device: int,
    device_name: str,
) -> tuple:
    """Python scalars become 0-d arrays with the dtype NumPy 2 gives a weak scalar next to the
    arrays of its promotion group (the inputs whose dtypes must agree)."""
    dtypes = list(dtypes)
    group_of = spec.group_index(device_name)
    for i in scalars:
        group = group_of.get(i, (i,))
        partners = [dtypes[j] for j in group if j not in scalars and dtypes[j] in DTYPE_INDEX]
        other = promote(partners) if partners else None
        value = args[i]
        if other is None or other == "bool":
            dtype = scalar_dtype(value, other)  # may depend on the value (large ints)
        else:
            key = (type(value), other)
            dtype = _SCALAR_DTYPES.get(key)
            if dtype is None:
                dtype = _SCALAR_DTYPES[key] = scalar_dtype(value, other)
        if type(value) is int and (spec.name in _COMPARISONS or spec.name == "divide"):
            bounds = _INT_RANGES.get(dtype)
            if bounds is not None and not bounds[0] <= value <= bounds[1]:
                dtype, value = _wide_python_int(value, spec.name)
        array = _scalar_array(value, dtype, fw, like, device)
        capsule = (
            fw.capsule(array)
            if not isinstance(array, np.ndarray)
            else export_numpy(array, False, _intermediate)
        )
        frame.keep.append(array)
        frame.keep.append(capsule)
        frame.objects[i] = id(capsule)
        open_views(frame, i, 1, input_name(spec, i))
        dtypes[i] = dtype
    return tuple(dtypes)


# Weak scalar dtype by (Python type, dtype of the arrays it meets), for array dtypes where the
# value does not matter (NumPy checks that it fits when the 0-d array is made).
_SCALAR_DTYPES: dict[tuple[type, str], str] = {}


def promote_call(
    spec: OpSpec,
    args: tuple,
    out: Any,
    attrs: dict | None,
    frame: Frame,
    resolution: TypeResolution,
    scalars: list | None,
    fw: Framework,
    like: Any,
    outs: tuple,
    n_out: int,
    many: bool,
) -> Any:
    """The promotion step of the general path, on open views: Python scalars become 0-d arrays
    (the dtypes then resolved again), inputs are cast to the resolved dtypes in the frame, or a
    signed/uint64 comparison runs exactly. Returns the result when the call is done (an exact
    comparison), else None: the caller runs the call on the frame's (cast) views."""
    device = resolution.device
    targets = resolution.targets
    dtypes = resolution.dtypes
    if scalars is not None:
        dtypes = scalars_to_arrays(
            spec, args, scalars, resolution.dtypes, frame, fw, like, device, resolution.device_name
        )
        targets = None
        if resolution.single_device:
            chosen = spec.choose_dtypes(resolution.device_name, dtypes)
            if any(chosen):
                targets = chosen
    if targets is not None and needs_exact_compare(spec, dtypes):
        n = len(args)
        result = exact_compare(
            spec, frame, dtypes, fw, like, device, None if out is None else frame.tensors[n], attrs
        )
        if out is None:
            return fw.finish(result) if fw.finishes else result
        if n_out != 1:
            raise WrongArityError(
                f"{spec.name} produces 1 output; out= gives {n_out}", lib.CT_ERROR_WRONG_ARITY
            )
        mark_written(outs)
        return outs[0] if many else out
    if targets is not None:
        slot = MAX_TENSORS - 1
        for i, target in enumerate(targets):
            if target is not None:
                cast(frame, i, slot, target, fw, like, device)
                slot -= 1
    return None
