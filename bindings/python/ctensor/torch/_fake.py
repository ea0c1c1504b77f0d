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

from .._attrs import attrs_for
from .._dtypes import code_bits, name_of_ct, to_dtype_name
from .._errors import DeviceMismatchError, check
from .._lib import ffi, lib
from .._registry import OpSpec

__all__ = ["VALUE_ONLY_ATTRS", "fake_outputs", "infer"]

_INFO_CAPACITY = 64


def _device_name(device: torch.device) -> str:
    return "cuda" if device.type == "cuda" else "cpu"


def infer(
    spec: OpSpec, dtypes: list[str | None], shapes: list[tuple[int, ...] | None], attrs: dict
) -> list[tuple[str, tuple[int, ...]]]:
    """``ct_op_infer`` on views of these dtypes and shapes (None: an absent input); returns
    (dtype name, shape) per output, -1 where the extent depends on the data."""
    n = len(dtypes)
    views = ffi.new("ct_tensor[]", max(n, 1))
    pointers = ffi.new("ct_tensor*[]", max(n, 1))
    keep = []
    for i, (dtype, shape) in enumerate(zip(dtypes, shapes, strict=True)):
        if dtype is None:
            pointers[i] = ffi.NULL
            continue
        view = views[i]  # data stays NULL: ct_op_infer checks the layout only
        view.device.device_type = lib.CT_DEVICE_CPU
        view.ndim = len(shape)
        code, bits = code_bits(dtype)
        view.dtype.code, view.dtype.bits, view.dtype.lanes = code, bits, 1
        extents = ffi.new("int64_t[]", list(shape) or [0])
        keep.append(extents)
        view.shape = extents
        pointers[i] = views + i
    attr_entry = attrs_for(spec, attrs) if attrs else (ffi.NULL, 0, None)
    infos = ffi.new("ct_tensor_info[]", _INFO_CAPACITY)
    count = ffi.new("int32_t*")
    check(
        lib.ct_op_infer(
            spec.op, pointers, n, attr_entry[0], attr_entry[1], infos, _INFO_CAPACITY, count
        )
    )
    results = []
    for info in infos[0 : count[0]]:
        results.append((name_of_ct(info.dtype), tuple(info.shape[k] for k in range(info.ndim))))
    return results


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
