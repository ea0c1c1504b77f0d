"""Between a ``torch.ops.ctensor`` call and ctensor's call path: arguments and results.

The torch schema (``_schema``) takes the variadic input as one list of tensors and attributes
under their torch names (``arg_name``: a trailing underscore on reserved names) with
``torch.dtype`` values, and returns a Tensor, a tuple of them, or, for a variadic output, a list
(the last entry of the tuple when fixed outputs come before it). ctensor's call path
(``ctensor._call.call``) takes every input flat, attributes by their ctensor names, and returns
its results flat. The modules of ``ctensor.torch`` convert between the two here.
"""

from __future__ import annotations

from typing import Any

import torch

from .._dtypes import to_dtype_name
from .._registry import OpSpec
from ._schema import arg_name

__all__ = ["ctensor_attrs", "flat_inputs", "flat_outputs", "op_results", "torch_kwargs"]


def flat_inputs(spec: OpSpec, args: tuple | list) -> list:
    """A torch call's positional arguments as ctensor's inputs: the variadic list spread, and
    None for each trailing optional input the dispatcher left out."""
    if spec.variadic_input:
        return [*args[:-1], *args[-1]]
    missing = len(spec.inputs) - len(args)
    return [*args, *[None] * missing] if missing > 0 else list(args)


def flat_outputs(spec: OpSpec, result: Any) -> tuple:
    """A torch op's result as one flat tuple of tensors (the variadic output's list spread)."""
    if isinstance(result, torch.Tensor):
        return (result,)
    if spec.variadic_output and not isinstance(result, list):
        return (*result[:-1], *result[-1])
    return tuple(result)


def op_results(spec: OpSpec, results: Any) -> Any:
    """ctensor's results (one tensor, or a flat sequence of them) as the torch schema returns
    them: a Tensor, a tuple, the variadic output a list."""
    flat = [results] if isinstance(results, torch.Tensor) else list(results)
    if spec.variadic_output:
        fixed = len(spec.outputs) - 1
        return flat if fixed == 0 else (*flat[:fixed], flat[fixed:])
    return flat[0] if len(spec.outputs) == 1 else tuple(flat)


def ctensor_attrs(spec: OpSpec, kwargs: dict) -> dict:
    """The attributes of a torch call (keyword arguments) under their ctensor names; None for an
    optional dtype attribute means the registry's default and is left out, and keywords that
    are not attributes (a factory op's ``device``) too."""
    attrs = {}
    names = _attrs_by_torch_name(spec)
    for key, value in kwargs.items():
        attr = names.get(key)
        if attr is None:
            continue
        if value is None and attr["type"] == "dtype":
            continue
        attrs[attr["name"]] = value
    return attrs


#: Per operator: its attributes by torch argument name, made once (kernels read it every call).
_TORCH_NAMES: dict[str, dict[str, dict]] = {}


def _attrs_by_torch_name(spec: OpSpec) -> dict[str, dict]:
    names = _TORCH_NAMES.get(spec.name)
    if names is None:
        names = _TORCH_NAMES[spec.name] = {arg_name(a["name"]): a for a in spec.attrs}
    return names


def _torch_value(kind: str | None, value: Any) -> Any:
    if kind == "dtype" and value is not None and not isinstance(value, torch.dtype):
        return getattr(torch, to_dtype_name(value))
    if kind == "int_list" and isinstance(value, int):
        return [value]
    if kind == "float_list" and isinstance(value, (int, float)):
        return [value]
    return value


def torch_kwargs(spec: OpSpec, attrs: dict) -> dict:
    """Attributes by ctensor name as a torch call's keyword arguments: torch names, a dtype (a
    name or NumPy dtype) a ``torch.dtype``, one number for a list attribute a list of one."""
    kinds = spec.attr_types
    return {arg_name(name): _torch_value(kinds.get(name), value) for name, value in attrs.items()}
