"""The generated ``ctensor.ops`` namespace: one function per registered operator, made at import
from the registry's schema (``ct_op_schema_json``), with its signature and docstring.

An operator whose commonest call can run from C is a FastOp (a type of the native extension):
arrays passed positionally, with or without ``out=``, run in one crossing; FastOp hands every
other call to the operator's Python function (``FastOp.fallback``), which calls ``_call.call``
once. Nothing about an operator is written by hand here.
"""

from __future__ import annotations

import inspect
import keyword
from typing import Any

from ._call import FAST_ALLOCATORS as _FAST_ALLOCATORS
from ._call import call
from ._dtypes import DTYPE_INDEX
from ._errors import UnknownOpError, error_for_status
from ._frame import output_capacity as _output_capacity
from ._lib import FastOp, configure, ffi, last_error, lib
from ._registry import OpSpec, all_specs

__all__ = ["call", "make_op", "build_all", "unknown_op"]

_CT_OK = lib.CT_OK

_RESERVED = {"out", "attrs", "_spec", "_call"}


def _py_name(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name) or name in _RESERVED:
        return name + "_"
    return name


def _attr_default_text(attr: dict) -> str:
    if attr.get("required"):
        return "required"
    return repr(attr.get("default"))


def _signature(spec: OpSpec, keyword_only: tuple = ("out",)) -> inspect.Signature:
    """The signature the generated function has (see make_op), with the attributes spelled out:
    required inputs and the variadic one positional-only, then optional inputs, then the
    ``keyword_only`` parameters (default None; ``ctensor.jax`` has none) and the attributes
    keyword-only."""
    P = inspect.Parameter
    head, optional = [], []
    for i, inp in enumerate(spec.inputs):
        name = _py_name(inp["name"])
        if not inp.get("variadic") and inp.get("optional") and i >= spec.num_required_inputs:
            optional.append(P(name, P.POSITIONAL_OR_KEYWORD, default=None))
        else:
            head.append(P(name, P.POSITIONAL_ONLY))
    params = head + optional + [P(name, P.KEYWORD_ONLY, default=None) for name in keyword_only]
    for attr in spec.attrs:
        default = P.empty if attr.get("required") else attr.get("default")
        params.append(P(_py_name(attr["name"]), P.KEYWORD_ONLY, default=default))
    return inspect.Signature(params)


def _parameter_text(spec: OpSpec, tail: list[str]) -> tuple[str, list[str], str | None]:
    """The generated function's parameter list as source text: required inputs then the
    variadic one positional-only, optional inputs (``name=None``), then ``tail``. Also returns
    the non-variadic inputs' names in schema order (what the call packs) and the variadic
    input's name (None without one)."""
    required, optional, call_args = [], [], []
    variadic = None
    for i, inp in enumerate(spec.inputs):
        name = _py_name(inp["name"])
        if inp.get("variadic"):
            variadic = name
        elif inp.get("optional") and i >= spec.num_required_inputs:
            optional.append(f"{name}=None")
            call_args.append(name)
        else:
            required.append(name)
            call_args.append(name)
    # Required inputs are positional-only; optional ones may also be given by keyword.
    head = required + ([variadic] if variadic is not None else [])
    params = ", ".join(head + (["/"] if head else []) + optional + tail)
    return params, call_args, variadic


def _docstring(spec: OpSpec) -> str:
    lines = [f"{spec.name}{_signature(spec)}", ""]
    if spec.doc:
        lines += [spec.doc.strip(), ""]
    lines.append(
        f"Category: {spec.category}." + (f" Flags: {', '.join(spec.flags)}." if spec.flags else "")
    )
    lines += ["", "Parameters", "----------"]
    for inp in spec.inputs:
        kind = "sequence of arrays" if inp.get("variadic") else "array"
        if inp.get("optional"):
            kind += ", optional"
        lines.append(f"{_py_name(inp['name'])} : {kind}")
        if inp.get("doc"):
            lines.append(f"    {inp['doc']}")
    many = len(spec.outputs) > 1 or spec.variadic_output
    if spec.is_dynamic:
        lines += [
            "out : not accepted",
            "    The op allocates its outputs (their size depends on the data).",
        ]
    else:
        lines += [
            f"out : {'tuple of arrays' if many else 'array'}, optional",
            "    Write the result into this memory (checked by the C library) and return it.",
        ]
    lines += [
        "backend : str, optional",
        "    Run the kernel of this backend and no other (a name from ctensor.backends()); "
        "by default the kernel registered last for the dtypes runs.",
    ]
    if spec.num_required_inputs == 0:
        lines += [
            "device : str or (device_type, device_id), optional",
            '    Where a call without array arguments runs and allocates its results ("cpu", '
            '"opencl:0", "cuda:0"): a ctensor.DeviceArray off the CPU; by default the CPU '
            "(NumPy arrays).",
        ]
    for attr in spec.attrs:
        kind = attr["type"].replace("_", " ")
        if attr.get("nullable"):
            kind += " or None"
        lines.append(
            f"{_py_name(attr['name'])} : {kind}, "
            + ("required" if attr.get("required") else f"default {attr.get('default')!r}")
        )
        if attr.get("doc"):
            lines.append(f"    {attr['doc']}")
    lines += ["", "Returns", "-------"]
    for output in spec.outputs:
        kind = "tuple of arrays" if output.get("variadic") else "array"
        lines.append(f"{output['name']} : {kind}")
        if output.get("doc"):
            lines.append(f"    {output['doc']}")
    if spec.kernels:
        lines += ["", "Dtypes", "------"]
        for device, sigs in sorted(spec.kernels.items()):
            firsts = sorted({s[0] for s in sigs if s}, key=lambda d: DTYPE_INDEX.get(d, 99))
            lines.append(f"{device}: {', '.join(firsts)}")
            for sig in sigs:
                n_in = len(spec.inputs)
                lines.append(f"    ({', '.join(sig[:n_in])}) -> ({', '.join(sig[n_in:])})")
    lines += [
        "",
        "Inputs are read through DLPack without copies; results are allocated in the "
        "framework and on the device of the first array argument.",
    ]
    return "\n".join(lines)


def make_op(spec: OpSpec):  # noqa: ANN201
    """The Python function for one operator."""
    params, call_args, variadic = _parameter_text(spec, ["*", "out=None", "**attrs"])
    packed = f"({', '.join(call_args)}{',' if len(call_args) == 1 else ''})"
    if variadic is not None:
        packed = f"{packed} + tuple({variadic})"
    fast_op = variadic is None and spec.fast
    # A FastOp hands this function the calls it does not run. Without attributes it has read
    # the arguments and declined them (their types, devices or dtypes need the general path),
    # so call() does not try the fast path on them again.
    declined = ", not attrs" if fast_op else ""
    source = (
        f"def {_py_name(spec.name)}({params}):\n"
        f"    return _call(_spec, {packed}, out, attrs{declined})\n"
    )
    namespace: dict[str, Any] = {"_spec": spec, "_call": call}
    exec(compile(source, f"<ctensor.ops.{spec.name}>", "exec"), namespace)  # noqa: S102
    function = namespace[_py_name(spec.name)]
    if fast_op:
        # The commonest call runs from C (FastOp); the Python function takes every other.
        _describe_function(function, spec)
        capacity = _output_capacity(spec)
        function = FastOp(spec.name, function, len(call_args), spec.single_output, capacity)
    return _describe_function(function, spec)


def _describe_function(function: Any, spec: OpSpec) -> Any:
    function.__name__ = spec.name
    function.__qualname__ = spec.name
    function.__module__ = "ctensor.ops"
    function.__doc__ = _docstring(spec)
    function.__signature__ = _signature(spec)
    function.spec = spec
    return function


def _configure_fast_path() -> None:
    """Gives FastOp the allocators by input type (_FAST_ALLOCATORS, which _call fills)."""
    configure(allocators=_FAST_ALLOCATORS)


_configure_fast_path()


def build_all() -> dict[str, Any]:
    """A function per registered operator, by name."""
    return {name: make_op(spec) for name, spec in sorted(all_specs().items())}


def unknown_op(name: str) -> UnknownOpError:
    """The error for an operator name the registry does not have, with the C library's message."""
    found = ffi.new("const ct_op**")
    status = lib.ct_op_find(str(name).encode("utf-8", "replace"), found)
    if status == _CT_OK:  # registered after import (not possible with built-ins today)
        return UnknownOpError(
            f"operator {name!r} is not bound; reload ctensor", lib.CT_ERROR_UNKNOWN_OP
        )
    error = error_for_status(status, last_error())
    if not isinstance(error, UnknownOpError):  # pragma: no cover
        return UnknownOpError(str(error), lib.CT_ERROR_UNKNOWN_OP)
    return error
