"""Torch schema strings made from ctensor's operator schema (``ct_op_schema_json``).

Tensor inputs come first, positionally, in the registry's order: a required input is ``Tensor``,
an optional one ``Tensor?`` (defaulting to None when no required input follows it) and the
variadic input ``Tensor[]``. Attributes follow, keyword-only, typed as torch types with the
registry's defaults (a list attribute also takes one number: ``int[1]``); a ``dtype``
attribute is a ``ScalarType`` (optional ones default to None, which means the registry's
default). An operator that can be called without tensor inputs (none, or only optional ones,
as random_bernoulli's ``probs``) takes ``Device? device`` as torch's factory functions do.
Outputs are ``Tensor``, a tuple of them, or ``Tensor[]`` for the variadic output.
"""

from __future__ import annotations

import json
import keyword
import math
from typing import Any

from .._registry import OpSpec

__all__ = ["arg_name", "is_factory", "torch_schema"]

#: Names a torch schema or call reserves: they get a trailing underscore, as Python keywords do.
_RESERVED = frozenset({"out", "self", "device"})

_SCALAR_TYPES = {
    "int": "SymInt",
    "float": "float",
    "bool": "bool",
    "string": "str",
    # A list of size 1: torch then also takes one number, as a list of one, which ctensor reads
    # as its int_list attributes say ("(sH, sW), or one value for both", "one count for all");
    # lists of any length still pass as they are.
    "int_list": "int[1]",
    "float_list": "float[1]",
    "dtype": "ScalarType",
}


def arg_name(name: str, reserved: frozenset = frozenset()) -> str:
    """The torch argument name of a ctensor input or attribute (``reserved``: more names that
    get the trailing underscore)."""
    if keyword.iskeyword(name) or name in _RESERVED or name in reserved:
        return name + "_"
    return name


def _literal(value: Any, kind: str) -> str:
    """A default value as the schema parser reads it."""
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v, kind) for v in value) + "]"
    if isinstance(value, bool):
        return "True" if value else "False"
    if kind in ("float", "float_list"):
        number = float(value)
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        return repr(number)
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def is_factory(spec: OpSpec) -> bool:
    """Whether the op can be called without tensor inputs (every input optional, none
    variadic): it then takes a ``device`` argument, and its kernel serves every dispatch key."""
    return all(inp.get("optional") and not inp.get("variadic") for inp in spec.inputs)


def _attr_text(attr: dict, reserved: frozenset) -> str:
    kind = attr["type"]
    name = arg_name(attr["name"], reserved)
    base = _SCALAR_TYPES[kind]
    if kind == "dtype":
        return f"ScalarType {name}" if attr.get("required") else f"ScalarType? {name}=None"
    if attr.get("nullable"):
        default = attr.get("default")
        text = "None" if default is None else _literal(default, kind)
        return f"{base}? {name}={text}"
    if attr.get("required"):
        return f"{base} {name}"
    return f"{base} {name}={_literal(attr['default'], kind)}"


def _returns(spec: OpSpec) -> str:
    types = ["Tensor[]" if out.get("variadic") else "Tensor" for out in spec.outputs]
    if len(types) == 1:
        return types[0]
    return "(" + ", ".join(types) + ")"


def torch_schema(spec: OpSpec, with_device: bool = True, reserved: frozenset = frozenset()) -> str:
    """The schema of ``torch.ops.ctensor.<spec.name>``, e.g.
    ``softmax(Tensor x, *, SymInt axis=-1) -> Tensor``. ``with_device``: whether an op callable
    without tensor inputs takes ``device`` (its ``out`` overload does not: the results say
    where). ``reserved``: attribute names that get a trailing underscore besides the usual
    ones."""
    params: list[str] = []
    for index, inp in enumerate(spec.inputs):
        name = arg_name(inp["name"])
        if inp.get("variadic"):
            params.append(f"Tensor[] {name}")
        elif inp.get("optional"):
            trailing = index >= spec.num_required_inputs
            params.append(f"Tensor? {name}=None" if trailing else f"Tensor? {name}")
        else:
            params.append(f"Tensor {name}")
    keywords = [_attr_text(attr, reserved) for attr in spec.attrs]
    if is_factory(spec) and with_device:
        keywords.append("Device? device=None")
    if keywords:
        params.append("*")
        params.extend(keywords)
    return f"{spec.name}({', '.join(params)}) -> {_returns(spec)}"
