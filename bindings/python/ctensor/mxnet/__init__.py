"""Every ctensor operator as an MXNet operator: ``ctensor.mxnet.<name>(*ndarrays, **attrs)``.

Importing this module registers each shape-static and workspace operator of the registry as an
MXNet custom operator (``mx.operator.CustomOpProp``, registered as ``ctensor_<name>``),
generated from the C schema (``_operator``): calls run in MXNet's engine, ordered against
MXNet's own operators on the same arrays, and ``mx.autograd.record()`` records them, with the
backward from the operator's gradient entry (``ctensor.autodiff.Program``), each step a ctensor
call. Shapes and dtypes come from ``ct_op_infer`` (``_infer``); ctensor writes the results
straight into MXNet's output arrays (``out=``, no copy).

The calling convention is ``ctensor.ops``': inputs positionally (an optional input also by
name, the variadic one as a sequence), attributes as keyword arguments, ``out=`` an NDArray (a
tuple of them for several outputs); inputs must be NDArrays on the CPU. A call returns an
NDArray, or a tuple of them for several outputs. Errors that ``ct_op_infer`` finds (arity,
shapes, dtypes, attributes) raise ctensor's exceptions at the call. An error inside the engine
(data-dependent: an index out of range) surfaces as MXNet's ``MXNetError`` at the next
synchronisation; ``last_error()`` returns ctensor's exception.

Operators whose output sizes depend on the data (category ``dynamic``: ``nonzero``,
``unique_*``, ``boolean_mask``, ...) cannot be MXNet custom operators, which need their output
shapes before running: ``ctensor.mxnet.<name>`` runs them eagerly through ctensor's call path
(waiting for the inputs), returns NDArrays, and records nothing for autograd.

See docs/mxnet.md for the design (CustomOp rather than MXNet's extension library) and its
costs.
"""

from __future__ import annotations

from typing import Any

import mxnet as mx
import numpy as np

from .. import ops as _ctensor_ops
from .._dlpack import InputTypeError
from .._dtypes import to_dtype_name
from .._errors import UnsupportedDeviceError, UnsupportedDTypeError
from .._mxnet import HOLDS
from .._ops import _py_name, _signature
from .._registry import OpSpec, all_specs
from ._infer import plan
from ._operator import (
    _run,
    attrs_text,
    last_error,
    layout_text,
    op_type,
    register,
    remember_shapes,
)

__all__ = ["dynamic_op_names", "last_error", "op_names", "op_type"]

_NDArray = mx.nd.NDArray
_Custom = mx.nd.Custom


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, tuple):
        return list(value)
    try:
        return to_dtype_name(value)
    except Exception:  # noqa: BLE001 - left for the C library to refuse by name
        return str(value)


def _normal_attrs(spec: OpSpec, attrs: dict) -> dict:
    """Attributes as JSON can carry them: dtypes by name, NumPy scalars as Python numbers."""
    kinds = spec.attr_types
    result = {}
    for name, value in attrs.items():
        if kinds.get(name) == "dtype" and value is not None:
            value = to_dtype_name(value)
        elif isinstance(value, (np.generic, tuple)):
            value = _jsonable(value)
        result[name] = value
    return result


class _Parameters:
    """How a call's positional and keyword arguments map to the op's input parameters (the
    order of ``ctensor.ops``' signature)."""

    def __init__(self, spec: OpSpec):
        signature = _signature(spec)
        by_name = {_py_name(inp["name"]): i for i, inp in enumerate(spec.inputs)}
        self.order = [by_name[p] for p in signature.parameters if p in by_name]
        self.keywords = {
            name: i
            for name, i in by_name.items()
            if signature.parameters[name].kind is signature.parameters[name].POSITIONAL_OR_KEYWORD
        }
        self.variadic_at = len(spec.inputs) - 1 if spec.variadic_input else -1
        self.count = len(spec.inputs)


def _check_array(spec: OpSpec, value: Any, name: str) -> None:
    if type(value) is not _NDArray:
        raise InputTypeError(
            f"ctensor.mxnet.{spec.name}: {name} must be an mxnet NDArray, got "
            f"{type(value).__name__}"
        )
    if value.context.device_type != "cpu":
        raise UnsupportedDeviceError(
            f"ctensor.mxnet.{spec.name}: {name} is on {value.context}; ctensor.mxnet runs on "
            "MXNet's CPU arrays"
        )


def _invoke(spec: OpSpec, parameters: _Parameters, args: tuple, out: Any, kwargs: dict) -> Any:
    values: list = [None] * parameters.count
    if len(args) > len(parameters.order):
        raise TypeError(
            f"ctensor.mxnet.{spec.name}() takes {len(parameters.order)} positional arguments "
            f"but {len(args)} were given"
        )
    for position, value in enumerate(args):
        values[parameters.order[position]] = value
    for name in [k for k in kwargs if k in parameters.keywords]:
        values[parameters.keywords[name]] = kwargs.pop(name)
    attrs = _normal_attrs(spec, kwargs)
    arrays: list = []
    per_tensor: list = []
    counts = []
    for index, value in enumerate(values):
        name = spec.inputs[index]["name"]
        if index == parameters.variadic_at:
            items = list(value) if value is not None else []
            for k, item in enumerate(items):
                _check_array(spec, item, f"{name}[{k}]")
            arrays += items
            per_tensor += items
            counts.append(len(items))
        elif value is None:
            per_tensor.append(None)
            counts.append(0)
        else:
            _check_array(spec, value, name)
            arrays.append(value)
            per_tensor.append(value)
            counts.append(1)
    shapes = tuple(None if a is None else a.shape for a in per_tensor)
    dtypes = tuple(None if a is None else np.dtype(a.dtype).name for a in per_tensor)
    attrs_key = attrs_text(attrs)
    found = plan(spec, attrs_key, attrs, shapes, dtypes)  # ctensor's errors, raised here
    if spec.is_dynamic:
        return _eager(spec, per_tensor, out, attrs)
    for dtype in found.output_dtypes:
        if dtype not in HOLDS:
            raise UnsupportedDTypeError(
                f"ctensor.mxnet.{spec.name}: the result would be {dtype}, which MXNet NDArrays "
                f"cannot hold ({', '.join(sorted(HOLDS))})"
            )
    layout = layout_text(tuple(counts), len(found.output_dtypes))
    remember_shapes(spec, attrs_key, layout, shapes, found)
    extra = {} if out is None else {"out": out}
    result = _Custom(
        *arrays, op_type=op_type(spec), ctensor_attrs=attrs_key, ctensor_layout=layout, **extra
    )
    if isinstance(result, _NDArray):
        return result
    return tuple(result)


def _eager(spec: OpSpec, per_tensor: list, out: Any, attrs: dict) -> Any:
    """A dynamic op, run at once through ctensor's call path on the NDArrays' memory."""
    if out is not None:
        raise TypeError(
            f"ctensor.mxnet.{spec.name}: out= is not accepted (the op allocates its outputs)"
        )
    results = _run(spec, per_tensor, None, attrs)
    return results[0] if spec.single_output else tuple(results)


def _make(spec: OpSpec) -> Any:
    parameters = _Parameters(spec)

    def function(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        return _invoke(spec, parameters, args, out, kwargs)

    function.__name__ = function.__qualname__ = spec.name
    function.__module__ = __name__
    function.__signature__ = _signature(spec)
    note = (
        "Runs eagerly (its output sizes depend on the data): no autograd."
        if spec.is_dynamic
        else f"An MXNet operator (ctensor_{spec.name}) with autograd from ctensor's gradient "
        "registry."
    )
    function.__doc__ = f"ctensor.mxnet.{spec.name}: {note}\n\n" + (
        getattr(_ctensor_ops, spec.name).__doc__ or ""
    )
    function.spec = spec
    return function


def _build() -> tuple[dict[str, Any], list[str], list[str]]:
    functions: dict[str, Any] = {}
    registered, dynamic = [], []
    for name, spec in sorted(all_specs().items()):
        if spec.is_dynamic:
            dynamic.append(name)
        else:
            register(spec)
            registered.append(name)
        functions[_py_name(name)] = _make(spec)
    return functions, registered, dynamic


_FUNCTIONS, _REGISTERED, _DYNAMIC = _build()
globals().update(_FUNCTIONS)
__all__ += sorted(_FUNCTIONS)


def op_names() -> list[str]:
    """Names of the ops registered as MXNet operators (``ctensor_<name>``), sorted."""
    return list(_REGISTERED)


def dynamic_op_names() -> list[str]:
    """Names of the ops that run eagerly, without autograd (their sizes depend on the data)."""
    return list(_DYNAMIC)
