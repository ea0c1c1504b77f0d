"""Autograd of ``torch.ops.ctensor`` from the registry's gradient entries.

Every operator gets the same two functions (``setup_context`` and ``backward``, as
``torch.library.register_autograd`` takes them; ``_function`` makes them the op's Autograd
kernel, one that ``torch.func`` transforms accept): the forward saves the inputs and outputs its
entry reads; the backward runs the entry's program
(``ctensor.autodiff.Program``) with each step a ``torch.ops.ctensor`` call, so torch records the
steps like any other op (higher-order gradients, ``torch.compile``'s backward graphs). No
operator has Python of its own here. Integer and bool outputs, and outputs whose cotangent the
entry ignores, are marked non-differentiable, as torch's own ops do; the backward of an
operator whose entry has no gradient raises ``ctensor.autodiff.NotDifferentiableError`` with
the entry's reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._registry import OpSpec
from ..autodiff import NotDifferentiableError, Program
from ._arguments import ctensor_attrs, flat_outputs, torch_kwargs
from ._function import register_autograd_kernel

__all__ = ["register_autograd", "run_torch_op"]


def run_torch_op(spec: OpSpec, inputs: list, attrs: dict) -> list:
    """A gradient step as a ``torch.ops.ctensor`` call: inputs one per parameter (the variadic
    one a list), attributes by ctensor name; returns one entry per output parameter."""
    result = getattr(torch.ops.ctensor, spec.name)(*inputs, **torch_kwargs(spec, attrs))
    if len(spec.outputs) == 1:
        return [result]
    return list(result)


def _is_differentiable_dtype(tensor: Any) -> bool:
    return tensor.is_floating_point() or tensor.is_complex()


def _save(values: list, keep: list, variadic: bool, tensors: list) -> list:
    """Appends the kept ``values`` (one per parameter, the last a list of tensors when
    ``variadic``) to ``tensors``, and returns how to read them back: per parameter
    ``("one", kept)``, or ``("list", length)`` with length -1 when the list is not kept."""
    layout: list = []
    last = len(values) - 1
    for index, value in enumerate(values):
        if variadic and index == last:
            layout.append(("list", len(value) if keep[index] else -1))
            if keep[index]:
                tensors.extend(value)
        else:
            layout.append(("one", keep[index]))
            if keep[index]:
                tensors.append(value)
    return layout


def register_autograd(
    library: torch.library.Library, spec: OpSpec, kernel: Callable | None = None
) -> None:
    """Registers the autograd of ``spec`` on ``torch.ops.ctensor.<spec.name>``; ``kernel``, the
    op's CPU and CUDA kernel, is called at once where nothing needs the dispatcher (see
    ``_function``)."""
    entry = spec.schema["gradient"]
    differentiable = bool(entry.get("differentiable"))
    num_inputs = len(spec.inputs)
    saved_inputs = list(entry.get("saved_inputs") or [False] * num_inputs)
    for step in entry.get("steps", ()):
        for attr in step["attrs"]:
            if "dtype_of" in attr:
                saved_inputs[attr["dtype_of"]] = True
    saved_outputs = list(entry.get("saved_outputs") or [False] * len(spec.outputs))
    takes_cotangent = list(entry.get("output_takes_cotangent") or [True] * len(spec.outputs))
    variadic_in = spec.variadic_input
    variadic_out = spec.variadic_output

    def setup_context(
        ctx: Any, inputs: tuple, output: Any, keyword_only_inputs: dict | None = None
    ) -> None:
        per_output = [output] if len(spec.outputs) == 1 else list(output)
        outputs = flat_outputs(spec, output)
        frozen = [t for t in outputs if not _is_differentiable_dtype(t)]
        if not differentiable:
            frozen = list(outputs)
        else:
            # An output whose cotangent the entry ignores (batch_norm_training's statistics,
            # attention's logsumexp) is not differentiable, as torch's output_differentiability
            # makes such outputs of its own ops: a loss made of it raises instead of getting a
            # silently wrong gradient.
            for index, value in enumerate(per_output):
                if not takes_cotangent[index]:
                    frozen.extend(value if isinstance(value, list) else [value])
        if frozen:
            ctx.mark_non_differentiable(*frozen)
        ctx.attrs = ctensor_attrs(spec, keyword_only_inputs or {})
        if not differentiable:
            return
        tensors: list = []
        layout = _save(list(inputs[:num_inputs]), saved_inputs, variadic_in, tensors)
        layout += _save(per_output, saved_outputs, variadic_out, tensors)
        ctx.layout = layout
        ctx.present = [value is not None for value in inputs[:num_inputs]]
        ctx.list_length = len(inputs[num_inputs - 1]) if variadic_in else 0
        ctx.save_for_backward(*tensors)

    def backward(ctx: Any, *grads: Any) -> Any:
        if not differentiable:
            raise NotDifferentiableError(
                f"ctensor::{spec.name} is not differentiable: {entry.get('note', '')}"
            )
        saved = iter(ctx.saved_tensors)
        values: list = []
        for kind, keep in ctx.layout:
            if kind == "list":
                values.append([next(saved) for _ in range(keep)] if keep >= 0 else None)
            else:
                values.append(next(saved) if keep else None)
        inputs, outputs = values[:num_inputs], values[num_inputs:]
        cotangents = list(grads)
        program = Program(spec, entry, inputs, cotangents, ctx.attrs, run_torch_op, outputs)
        needs = ctx.needs_input_grad
        result = []
        for index, ref in enumerate(entry["input_grads"]):
            is_list = variadic_in and index == num_inputs - 1
            wanted = is_list or needs[index]
            if ref is not None and wanted and ctx.present[index]:
                result.append(program.value(ref))
            else:
                result.append([None] * ctx.list_length if is_list else None)
        return tuple(result) if len(result) != 1 else result[0]

    # Not torch.library.register_autograd: its Function does not work under torch.func.grad.
    register_autograd_kernel(library, spec, backward, setup_context, kernel)
