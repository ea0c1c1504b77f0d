"""The ``out`` overloads: ``torch.ops.ctensor.<name>.out(..., out=tensor)`` writes the results
into the caller's tensors, as ctensor's ``out=`` and torch's ``out=`` variants do.

Every operator whose output sizes follow from its inputs' (not the dynamic ones) gets one. Its
schema is the functional one with the results as mutable keyword arguments (``Tensor(a!) out``;
several results are named ``<output>_out``, a variadic one is a ``Tensor(a!)[]``) and no return
value, the form torch's functionalization (``auto_functionalize``) takes under
``torch.compile``. The tensors must already have the shapes and dtypes of the results (ctensor
checks, and raises ShapeMismatchError otherwise; nothing is resized). These overloads have no
autograd: like torch's own ``out=`` variants, they do not record gradients.
"""

from __future__ import annotations

import string
from typing import Any

from .._call import call
from .._errors import ShapeMismatchError
from .._registry import OpSpec
from ._arguments import ctensor_attrs, flat_inputs
from ._fake import fake_outputs
from ._schema import arg_name, torch_schema

__all__ = ["has_out_overload", "out_names", "out_schema", "make_out_kernel", "make_out_fake"]

#: Keywords that torch's auto_functionalized (what runs an ``out`` overload under
#: ``torch.compile``) passes on beside the op's own and so collide with them: an attribute of
#: that name (interpolate's and pad's ``mode``) is ``mode_`` in the ``out`` overload.
_FUNCTIONALIZE_RESERVED = frozenset({"mode"})


def has_out_overload(spec: OpSpec) -> bool:
    """Whether the op gets an ``out`` overload: its output sizes follow from its inputs'."""
    return not spec.is_dynamic


def out_names(spec: OpSpec) -> list[str]:
    """The keyword names of the result tensors of the ``out`` overload."""
    if len(spec.outputs) == 1:
        return ["out"]
    return ["out" if o["name"] == "out" else arg_name(o["name"]) + "_out" for o in spec.outputs]


def out_schema(spec: OpSpec) -> str:
    """``name.out(<the functional arguments>, Tensor(a!) out) -> ()``."""
    functional = torch_schema(spec, with_device=False, reserved=_FUNCTIONALIZE_RESERVED)
    head, _ = functional.rsplit(" -> ", 1)
    params = head[len(spec.name) + 1 : -1]
    mutable = []
    for index, (output, name) in enumerate(zip(spec.outputs, out_names(spec), strict=True)):
        alias = string.ascii_lowercase[index]
        kind = f"Tensor({alias}!)[]" if output.get("variadic") else f"Tensor({alias}!)"
        mutable.append(f"{kind} {name}")
    if "*" not in [p.strip() for p in params.split(",")]:
        mutable.insert(0, "*")
    params = ", ".join(p for p in [params, *mutable] if p)
    return f"{spec.name}.out({params}) -> ()"


def _split(spec: OpSpec, args: tuple, kwargs: dict) -> tuple[list, tuple, dict]:
    """(flat inputs, flat result tensors, attribute keywords) of an ``out`` call."""
    inputs = flat_inputs(spec, args)
    results: list = []
    rest = dict(kwargs)
    for output, name in zip(spec.outputs, out_names(spec), strict=True):
        value = rest.pop(name)
        results.extend(value if output.get("variadic") else [value])
    for attr in spec.attrs:
        renamed = arg_name(attr["name"], _FUNCTIONALIZE_RESERVED)
        if renamed in rest:
            rest[arg_name(attr["name"])] = rest.pop(renamed)
    return inputs, tuple(results), rest


def make_out_kernel(spec: OpSpec):  # noqa: ANN201
    def out_kernel(*args: Any, **kwargs: Any) -> None:
        inputs, results, rest = _split(spec, args, kwargs)
        call(spec, inputs, results, ctensor_attrs(spec, rest))

    return out_kernel


def make_out_fake(spec: OpSpec):  # noqa: ANN201
    """Checks the result tensors' shapes and dtypes against ``ct_op_infer`` (what the kernel's
    call would check), writing nothing."""

    def out_fake(*args: Any, **kwargs: Any) -> None:
        inputs, results, rest = _split(spec, args, kwargs)
        present = any(t is not None for t in inputs)
        device = results[0].device if results and not present else None
        expected = fake_outputs(spec, inputs, ctensor_attrs(spec, rest), device)
        if len(expected) != len(results):
            raise ShapeMismatchError(
                f"{spec.name}.out: {len(results)} result tensors for {len(expected)} results"
            )
        for index, (want, got) in enumerate(zip(expected, results, strict=True)):
            if want.dtype != got.dtype or want.shape != got.shape:
                raise ShapeMismatchError(
                    f"{spec.name}.out: result {index} is {got.dtype} {tuple(got.shape)}; the "
                    f"op produces {want.dtype} {tuple(want.shape)} here"
                )

    return out_fake
