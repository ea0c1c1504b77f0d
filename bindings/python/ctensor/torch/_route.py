"""A ``ctensor.ops`` call made as the ``torch.ops.ctensor`` call that computes the same thing.

``torch_call(spec, args, out, attrs)`` takes the arguments of ``ctensor._call.call`` (the input
objects in call order, the variadic input's tensors flattened at the end; ``out=``; attributes by
their ctensor names) and runs ``torch.ops.ctensor.<name>``: the variadic input becomes one list,
attributes are renamed as the torch schema names them (``arg_name``), a dtype attribute becomes a
``torch.dtype``, one number for a list attribute a list of one, and Python scalars of
elementwise ops 0-d tensors of the dtype ctensor gives them (NEP 50: the dtype of the tensor
beside them when their kind fits it). Results come back as ``ctensor.ops`` returns them (the
variadic output's tensors flat in one tuple); with ``out=`` they are copied into it.

Two callers:

- ``ctensor._call`` in eager mode, for tensors without readable memory (FakeTensor and other
  ``__torch_dispatch__`` subclasses, meta tensors, functorch's batched and grad-tracking
  wrappers: ``_call._torch_data_less``); torch's dispatcher then runs the op's fake, vmap or
  autograd rule.
- ``torch.compile``: Dynamo traces ``torch_call`` in place of ``ctensor._call.call``
  (``_compile``), so a plain ``ctensor.ops.<name>`` call becomes a ``torch.ops.ctensor`` node.

Everything here is plain Python on torch objects and constants, which Dynamo traces without a
graph break.
"""

from __future__ import annotations

from typing import Any

import torch

from .._registry import OpSpec
from ._arguments import flat_outputs, torch_kwargs

__all__ = ["routable", "torch_call"]

_SCALARS = (bool, int, float, complex)


def routable(spec: OpSpec, args: Any, out: Any, attrs: dict | None) -> bool:
    """Whether ``torch_call`` can make this call: a torch tensor among the inputs, every other
    input None or (elementwise ops) a Python scalar, torch tensors in ``out=``, and no
    ``backend=``/``device=`` (which pin a ctensor backend or device torch's op cannot)."""
    if attrs and ("backend" in attrs or "device" in attrs):
        return False
    found = False
    for value in args:
        if isinstance(value, torch.Tensor):
            found = True
        elif value is None:
            continue
        elif not (spec.elementwise and isinstance(value, _SCALARS)):
            return False
    if not found:
        return False
    if out is None:
        return True
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return all(isinstance(o, torch.Tensor) for o in outs)


def _scalar_dtype(value: Any, partner: torch.dtype) -> torch.dtype:
    """The dtype ctensor gives a Python scalar beside a tensor of dtype ``partner`` (NEP 50):
    the partner's when the scalar's kind fits it, else the default dtype of its kind."""
    if isinstance(value, bool):
        return partner
    if isinstance(value, int):
        return torch.int64 if partner == torch.bool else partner
    if isinstance(value, float):
        return partner if partner.is_floating_point or partner.is_complex else torch.float64
    if partner.is_complex:
        return partner
    if partner in (torch.float32, torch.float16, torch.bfloat16):
        return torch.complex64
    return torch.complex128


def torch_call(spec: OpSpec, args: Any, out: Any, attrs: dict | None) -> Any:
    """Runs a ``ctensor.ops`` call (``routable``) as ``torch.ops.ctensor.<name>``."""
    inputs = list(args)
    if spec.elementwise and any(isinstance(a, _SCALARS) for a in args):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        partner = tensors[0].dtype
        for t in tensors[1:]:
            partner = torch.promote_types(partner, t.dtype)
        for index, value in enumerate(args):
            if isinstance(value, _SCALARS):
                dtype = _scalar_dtype(value, partner)
                inputs[index] = torch.tensor(value, dtype=dtype, device=tensors[0].device)
    if spec.variadic_input:
        fixed = spec.num_fixed_inputs
        inputs = [*inputs[:fixed], inputs[fixed:]]
    kwargs = torch_kwargs(spec, attrs) if attrs else {}
    result = getattr(torch.ops.ctensor, spec.name)(*inputs, **kwargs)
    if spec.variadic_output:  # the variadic output's list spread, as ctensor.ops returns it
        result = flat_outputs(spec, result)
    if out is None:
        return result
    if isinstance(out, (tuple, list)):
        results = result if isinstance(result, tuple) else (result,)
        for index, target in enumerate(out):
            target.copy_(results[index])
        return out[0] if len(out) == 1 and spec.single_output else out
    out.copy_(result)
    return out
