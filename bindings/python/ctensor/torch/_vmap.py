"""vmap rules of ``torch.ops.ctensor`` (``torch.library.register_vmap``), chosen from the schema.

Every op with tensor inputs gets one of three rules; each returns its outputs with the batch
dimension first:

- elementwise ops (``OpSpec.elementwise``): each batched input gets its batch dimension moved to
  the front, then unit dimensions after it up to the largest logical rank of the call, so that
  the op's own broadcasting lines every input up as it would without the batch; one call.
- ops along an ``axis`` attribute whose dimensions other than the axis keep their order (one
  tensor input, as the reductions, softmax, sorts and scans, or one list of tensors, as concat
  and stack): the batch dimension moves to the front (unbatched list entries are expanded) and a
  non-negative axis shifts by one; negative axes name the same dimensions as before. One call.
  ``axis=None`` (which flattens or means every axis) and 0-d slices take the loop below.
- every other op: a loop over the batch (each input's slice, one call each, outputs stacked),
  which is correct for any op whose outputs have the same shape for every slice; an empty
  batch gives empty outputs shaped by the op's fake kernel.

Rules call ``torch.ops.ctensor`` ops again, so vmap composes with ``torch.func.grad``, ``vjp`` and
nested vmaps, and the backward ops have rules of their own.
"""

from __future__ import annotations

from typing import Any

import torch

from .._registry import OpSpec

__all__ = ["register_vmap", "rule_kind"]


def rule_kind(spec: OpSpec) -> str:
    """``"elementwise"``, ``"axis"`` or ``"loop"``: the rule ``spec`` gets."""
    if spec.elementwise and not spec.variadic_input:
        return "elementwise"
    axis = next((a for a in spec.attrs if a["name"] == "axis"), None)
    one_input = len(spec.inputs) == 1 and not spec.inputs[0].get("optional")
    if axis is not None and axis["type"] in ("int", "int_list") and one_input:
        return "axis"
    return "loop"


def _zeros_like_structure(result: Any) -> Any:
    """out_dims for ``result``: 0 for each tensor, in the same structure."""
    if isinstance(result, torch.Tensor):
        return 0
    if isinstance(result, list):
        return [0] * len(result)
    return tuple(_zeros_like_structure(r) for r in result)


def _elementwise_rule(op: Any) -> Any:
    def rule(info: Any, in_dims: tuple, *args: Any, **kwargs: Any) -> Any:
        rank = 0
        for value, dim in zip(args, in_dims, strict=True):
            if isinstance(value, torch.Tensor):
                rank = max(rank, value.dim() - (dim is not None))
        moved = []
        for value, dim in zip(args, in_dims, strict=True):
            if dim is not None:
                value = value.movedim(dim, 0)
                missing = rank - (value.dim() - 1)
                if missing:
                    value = value.reshape(value.shape[0], *([1] * missing), *value.shape[1:])
            moved.append(value)
        result = op(*moved, **kwargs)
        return result, _zeros_like_structure(result)

    return rule


def _shift(axis: Any) -> Any:
    if isinstance(axis, int):
        return axis + 1 if axis >= 0 else axis
    return [a + 1 if a >= 0 else a for a in axis]


def _batch_first(value: torch.Tensor, dim: int | None, size: int) -> torch.Tensor:
    if dim is None:
        return value.unsqueeze(0).expand(size, *value.shape)
    return value.movedim(dim, 0)


def _axis_rule(spec: OpSpec, op: Any, loop: Any) -> Any:
    default = next(a for a in spec.attrs if a["name"] == "axis").get("default")

    def rule(info: Any, in_dims: tuple, *args: Any, **kwargs: Any) -> Any:
        axis = kwargs.get("axis", default)
        (value,), (dim,) = args, in_dims
        logical_scalar = isinstance(value, torch.Tensor) and value.dim() == 1
        if axis is None or logical_scalar:  # a 0-d slice takes axis 0 as its only axis
            return loop(info, in_dims, *args, **kwargs)
        if isinstance(value, torch.Tensor):
            value = value.movedim(dim, 0)
        else:  # the list of concat, stack
            value = [_batch_first(v, d, info.batch_size) for v, d in zip(value, dim, strict=True)]
        result = op(value, **{**kwargs, "axis": _shift(axis)})
        return result, _zeros_like_structure(result)

    return rule


def _select(value: Any, dim: Any, index: int) -> Any:
    if isinstance(value, (list, tuple)):
        return [_select(v, d, index) for v, d in zip(value, dim, strict=True)]
    if dim is None:
        return value
    return value.select(dim, index)


def _stack(results: list) -> Any:
    first = results[0]
    if isinstance(first, torch.Tensor):
        return torch.stack(results)
    stacked = [_stack([r[k] for r in results]) for k in range(len(first))]
    return stacked if isinstance(first, list) else tuple(stacked)


def _slice_on_meta(value: Any, dim: Any) -> Any:
    """A meta tensor shaped as one slice of ``value`` (batched in ``dim``)."""
    if isinstance(value, (list, tuple)):
        return [_slice_on_meta(v, d) for v, d in zip(value, dim, strict=True)]
    if not isinstance(value, torch.Tensor):
        return value
    shape = list(value.shape)
    if dim is not None:
        del shape[dim]
    return torch.empty(shape, dtype=value.dtype, device="meta")


def _empty_batch(op: Any, args: tuple, in_dims: tuple, kwargs: dict) -> Any:
    """The results of a batch of none: empty, shaped as one slice's results would be (the op's
    fake kernel gives those, on meta tensors)."""
    device = next(t.device for t in _tensors(args))
    one = op(*(_slice_on_meta(a, d) for a, d in zip(args, in_dims, strict=True)), **kwargs)

    def empty(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return torch.empty((0, *value.shape), dtype=value.dtype, device=device)
        batched = [empty(v) for v in value]
        return batched if isinstance(value, list) else tuple(batched)

    return empty(one)


def _tensors(values: tuple) -> list:
    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(_tensors(value))
    return found


def _loop_rule(op: Any) -> Any:
    def rule(info: Any, in_dims: tuple, *args: Any, **kwargs: Any) -> Any:
        if info.batch_size == 0:  # no slice to call the op on
            result = _empty_batch(op, args, in_dims, kwargs)
            return result, _zeros_like_structure(result)
        results = [
            op(*(_select(a, d, i) for a, d in zip(args, in_dims, strict=True)), **kwargs)
            for i in range(info.batch_size)
        ]
        result = _stack(results)
        return result, _zeros_like_structure(result)

    return rule


def register_vmap(library: torch.library.Library, spec: OpSpec) -> None:
    """Registers the vmap rule of ``torch.ops.ctensor.<spec.name>`` (an op with tensor inputs)."""
    op = getattr(torch.ops.ctensor, spec.name).default
    kind = rule_kind(spec)
    loop = _loop_rule(op)
    if kind == "elementwise":
        rule = _elementwise_rule(op)
    elif kind == "axis":
        rule = _axis_rule(spec, op, loop)
    else:
        rule = loop
    torch.library.register_vmap(f"ctensor::{spec.name}", rule, lib=library)
