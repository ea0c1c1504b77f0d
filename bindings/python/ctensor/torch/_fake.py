"""Fake (meta) kernels: output shapes and dtypes from ``ct_op_infer``, never touching data.

The input dtypes are first resolved as the real call resolves them (``OpSpec.choose_dtypes``:
the kernel the call would run), then ``ct_op_infer`` runs on views without data. Symbolic
extents (torch.compile's dynamic shapes) are kept symbolic for elementwise operators, whose
result has the broadcast shape; other operators see their inputs' extents as concrete values
(a guard on each, as ``int()`` of a SymInt records), since the C inference needs numbers.
Extents a dynamic operator only knows from the data (-1 from ``ct_op_infer``) become torch's
data-dependent sizes (``new_dynamic_size``).
"""

from __future__ import annotations

from typing import Any

import torch

from .._dtypes import to_dtype_name
from .._errors import DeviceMismatchError
from .._infer import infer
from .._registry import OpSpec

__all__ = ["VALUE_ONLY_ATTRS", "fake_outputs", "infer"]


def _device_name(device: torch.device) -> str:
    return "cuda" if device.type == "cuda" else "cpu"


def _concrete(shape: Any) -> tuple[int, ...]:
    return tuple(int(extent) for extent in shape)


#: Integer attributes that select values, never sizes (the Philox stream's ``seed`` and
#: ``offset``, a loss's ``ignore_index``, a pooling's ``divisor_override``): a SymInt given for
#: one stays symbolic, so one graph serves every value (a dropout offset advanced every step).
#: tests/test_torch_compile.py lists the ops that have them, so that a new one gets checked.
VALUE_ONLY_ATTRS = frozenset({"seed", "offset", "ignore_index", "divisor_override"})


def _infer_symbolic_attrs(
    spec: OpSpec, dtypes: list[str | None], shapes: list, attrs: dict
) -> list[tuple[str, tuple[int, ...]]]:
    """``infer`` where integer attributes may be SymInts (torch.compile makes an int argument
    that changes between calls dynamic). One of ``VALUE_ONLY_ATTRS`` is inferred on its hint
    and records no guard; any other may shape the outputs (an axis, topk's ``k``, one_hot's
    ``num_classes``) and is specialized (``int()``: a guard on its value)."""
    concrete = {}
    for name, value in attrs.items():
        if isinstance(value, torch.SymInt):
            hint = value.node.hint
            value = hint if name in VALUE_ONLY_ATTRS and hint is not None else int(value)
        concrete[name] = value
    return infer(spec, dtypes, shapes, concrete)


def fake_outputs(spec: OpSpec, tensors: list, attrs: dict, device: Any = None) -> list:
    """Empty tensors shaped as the call's outputs (one per output, the variadic ones flat), on
    the device of the first input (or ``device`` for an op without inputs)."""
    present = [t for t in tensors if t is not None]
    if present:
        device = present[0].device
        for t in present[1:]:
            if t.device != device:
                # As the kernel would: ctensor runs a call on one device. (A call mixing meta
                # and CPU tensors reaches the Meta kernel, which must not answer for the CPU.)
                raise DeviceMismatchError(
                    f"{spec.name}: inputs on {device} and {t.device}; a call runs on one device"
                )
    device = torch.device("cpu") if device is None else torch.device(device)
    dtypes = tuple(None if t is None else to_dtype_name(t.dtype) for t in tensors)
    chosen = spec.choose_dtypes(_device_name(device), dtypes) if dtypes else ()
    resolved = [target or dtype for target, dtype in zip(chosen, dtypes, strict=True)]
    symbolic = None
    if spec.elementwise and present:
        symbolic = torch.broadcast_shapes(*(t.shape for t in present))
        shapes = [None if t is None else (1,) * t.dim() for t in tensors]
    else:
        shapes = [None if t is None else _concrete(t.shape) for t in tensors]
    outputs = []
    for dtype, shape in _infer_symbolic_attrs(spec, resolved, shapes, attrs):
        if symbolic is not None:
            shape = symbolic
        elif any(extent < 0 for extent in shape):
            context = torch.library.get_ctx()
            shape = tuple(context.new_dynamic_size() if e < 0 else e for e in shape)
        outputs.append(torch.empty(shape, dtype=getattr(torch, dtype), device=device))
    return outputs
