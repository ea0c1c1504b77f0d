"""Attributes: keyword arguments of an operator call encoded as a ``ct_attr`` array.

The schema's attribute type guides the conversion (an int for an int list is a list of one;
dtypes from NumPy/PyTorch dtypes, Python types or names). A value of another type is passed
with its own type, and unknown names are passed as given, so that the C library's message
(``CT_ERROR_ATTRIBUTE_TYPE``, ``CT_ERROR_UNKNOWN_ATTRIBUTE``) reaches the user. Encoded arrays
are cached per op and value (they are only read by C, so threads may share them).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ._dtypes import code_bits, to_dtype_name
from ._errors import AttributeTypeError, InvalidArgumentError
from ._lib import ffi, lib
from ._registry import OpSpec

__all__ = ["VALUE_ONLY_ATTRS", "attrs_for", "make_attrs"]

#: Integer attributes that select values, never sizes (the Philox stream's ``seed`` and
#: ``offset``, a loss's ``ignore_index``, a pooling's ``divisor_override``): output shapes and
#: dtypes never depend on their values, so a framework's compiled graph may take them as
#: runtime values (a SymInt in ``ctensor.torch``, a traced integer in ``ctensor.jax``).
#: tests/test_torch_compile.py lists the ops that have them, so that a new one gets checked.
VALUE_ONLY_ATTRS = frozenset({"seed", "offset", "ignore_index", "divisor_override"})

_new = ffi.new
_NULL = ffi.NULL

_ATTR_TYPE_WORDS = {
    "int": "an int",
    "float": "a float",
    "bool": "a bool",
    "string": "a string",
    "int_list": "an int or a sequence of ints",
    "float_list": "a float or a sequence of floats",
    "dtype": "a dtype",
}


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_dtype_like(value: Any) -> bool:
    if isinstance(value, (np.dtype, type)):
        return True
    tp = type(value)
    return tp.__module__ == "torch" and tp.__name__ == "dtype"


def _encode_text(spec: OpSpec, what: str, text: str) -> bytes:
    """UTF-8 for C: text that does not encode, or that holds a NUL (C would stop reading there),
    is refused with the op and the attribute named."""
    if not isinstance(text, str):
        raise AttributeTypeError(f"{spec.name}: {what} must be a str, got {type(text).__name__}")
    if "\0" in text:
        raise InvalidArgumentError(
            f"{spec.name}: {what} holds a NUL character at index {text.index(chr(0))}: {text!r}"
        )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(
            f"{spec.name}: {what} is not valid UTF-8 text ({e.reason} at index {e.start}): {text!r}"
        ) from e


def _set_attr(spec: OpSpec, name: str, value: Any, slot: Any, keep: list) -> None:
    """Fills one ct_attr_value from a Python value. The schema type guides the conversion; a
    value of another type is passed with its own type so that the C library reports the
    mismatch (CT_ERROR_ATTRIBUTE_TYPE), and unknown names pass through to get
    CT_ERROR_UNKNOWN_ATTRIBUTE."""
    expected = spec.attr_types.get(name)
    if value is None:
        slot.type = lib.CT_ATTR_NONE
    elif isinstance(value, (bool, np.bool_)):
        slot.type = lib.CT_ATTR_BOOL
        slot.value.b = int(value)
    elif expected == "float_list" and _is_real(value):
        _set_attr(spec, name, [value], slot, keep)  # one number for a float list: a list of one
    elif expected == "float" and _is_int(value):
        # an int for a float attribute is a float (2**64 is a fine alpha; float() raises
        # OverflowError only beyond float64's range)
        slot.type = lib.CT_ATTR_FLOAT
        slot.value.f = float(value)
    elif _is_int(value):
        slot.type = lib.CT_ATTR_INT
        slot.value.i = operator.index(value)
    elif isinstance(value, (float, np.floating)):
        slot.type = lib.CT_ATTR_FLOAT
        slot.value.f = float(value)
    elif isinstance(value, str) and expected != "dtype":
        data = _new("char[]", _encode_text(spec, f"attribute '{name}'", value))
        keep.append(data)
        slot.type = lib.CT_ATTR_STRING
        slot.value.s = data
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        if not isinstance(items, list):
            items = [items]
        if all(_is_int(v) for v in items) and expected != "float_list":
            array = _new("int64_t[]", [operator.index(v) for v in items])
            slot.type = lib.CT_ATTR_INT_LIST
            slot.value.ints = array
        elif all(_is_real(v) for v in items):
            array = _new("double[]", [float(v) for v in items])
            slot.type = lib.CT_ATTR_FLOAT_LIST
            slot.value.floats = array
        else:
            raise AttributeTypeError(
                f"{spec.name}: attribute '{name}' takes "
                f"{_ATTR_TYPE_WORDS.get(expected or '', 'a value')}, got a sequence holding "
                f"{', '.join(sorted({type(v).__name__ for v in items}))}"
            )
        keep.append(array)
        slot.count = len(items)
    elif expected == "dtype" or _is_dtype_like(value):
        code, bits = code_bits(to_dtype_name(value))
        slot.type = lib.CT_ATTR_DTYPE
        slot.value.dtype.code = code
        slot.value.dtype.bits = bits
        slot.value.dtype.lanes = 1
    elif expected is None:
        slot.type = lib.CT_ATTR_NONE  # the C library reports the unknown name
    else:
        raise AttributeTypeError(
            f"{spec.name}: attribute '{name}' takes {_ATTR_TYPE_WORDS.get(expected, expected)}, "
            f"got {type(value).__name__}"
        )


def make_attrs(spec: OpSpec, attrs: dict, keep: list) -> tuple[Any, int]:
    if not attrs:
        return _NULL, 0
    array = _new("ct_attr[]", len(attrs))
    for i, (name, value) in enumerate(attrs.items()):
        entry = array[i]
        encoded = _new("char[]", _encode_text(spec, "an attribute name", name))
        keep.append(encoded)
        entry.name = encoded
        try:
            _set_attr(spec, name, value, entry.value, keep)
        except OverflowError as e:
            kind = spec.attr_types.get(name)
            what = "float64's range" if kind in ("float", "float_list") else "64 bits"
            raise AttributeTypeError(
                f"{spec.name}: attribute '{name}' does not fit in {what}: {e}"
            ) from e
    return array, len(attrs)


# Attribute arrays are cached per op and value (they are only read by C, so threads may share).
_ATTR_CACHE_SIZE = 256


def _key_value(value: Any) -> Any:
    """A value as the cache tells it apart: Python takes 0.0 == -0.0 and (1, 2) == (1.0, 2.0)
    == (True, 2), which the C library does not (softplus with beta -0.0 is -inf, with 0.0 +inf;
    a float in an int list is refused), so a float carries its sign and a tuple its items'
    types."""
    kind = type(value)
    if kind is float:
        return (value, math.copysign(1.0, value))
    if kind is tuple:
        return tuple((type(v), _key_value(v)) for v in value)
    return value


def attrs_for(spec: OpSpec, attrs: dict) -> tuple[Any, int, list]:
    """(ct_attr array, count, what keeps its strings and lists alive). The caller holds the
    whole tuple for the duration of the call: another thread may drop it from the cache."""
    try:
        key = tuple((name, type(value), _key_value(value)) for name, value in attrs.items())
        hash(key)
    except TypeError:
        key = None
    cache = spec.attr_cache
    if key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    keep: list = []
    array, count = make_attrs(spec, attrs, keep)
    entry = (array, count, keep)
    if key is not None:
        if len(cache) >= _ATTR_CACHE_SIZE:
            cache.clear()
        cache[key] = entry
    return entry
