"""The Autograd kernel of a ``torch.ops.ctensor`` op, usable by ``torch.func`` transforms.

``torch.library.register_autograd`` (torch 2.13) builds an ``autograd.Function`` and applies
it from the op's Autograd kernel; under ``torch.func.grad``, ``vjp`` or ``jacrev`` that apply
goes to functorch, which refuses it ("it must override the setup_context staticmethod",
pytorch/pytorch#168393) or finds no kernel for it at the Autograd key. Inside the dispatcher,
though, functorch's grad level has already unwrapped the tensors, as it does for a C++ autograd
kernel: this kernel applies a single-level Function (``_SingleLevelFunction``, what functorch
itself applies for an ``autograd.Function`` under grad) that records the node at that level,
and so composes with every transform and with nested ones. The Function takes tensors only: a
list of tensors (the variadic input) is spread, and the result's list (the variadic output)
too, then both are rebuilt for the op's ``setup_context`` and ``backward``
(``ctensor.torch._autograd``), which see the call as the dispatcher gave it.

A call that records nothing (grad mode off, or no input requiring grad, and no forward-mode AD)
on plain CPU or CUDA tensors (or Parameters), with no TorchDispatchMode and no functorch
transform active, runs the op's kernel at once instead of redispatching below autograd through
Python, which is most of a small call's cost. Every other call (FakeTensor, functional tensors,
``torch.func``, tracing, meta tensors, inputs requiring grad) takes the dispatcher's path.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.autograd.forward_ad as _forward_ad

from .._registry import OpSpec
from ._arguments import flat_outputs, op_results
from ._schema import is_factory

__all__ = ["register_autograd_kernel"]

_PLAIN = (torch.Tensor, torch.nn.Parameter)
_grad_enabled = torch._C.is_grad_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack
_functorch_level = torch._C._functorch.peek_interpreter_stack

_SingleLevelFunction = torch.autograd.function._SingleLevelFunction
_single_level_allowed = torch._functorch.utils.enable_single_level_autograd_function
_transforms_active = torch._C._are_functorch_transforms_active


def _direct(tensors: tuple | list) -> bool:
    """Whether a call on ``tensors`` (None for an absent input, a list for the variadic one) may
    skip the dispatcher below autograd: it records no gradient and nothing else would see it
    (no mode, no transform, no tensor subclass but Parameter, no wrapper), on a device ctensor
    runs on."""
    if _dispatch_modes() or _functorch_level() is not None or _forward_ad._current_level >= 0:
        return False
    grad = _grad_enabled()
    for t in tensors:
        if type(t) not in _PLAIN:
            if t is None:
                continue
            if type(t) is list and _direct_list(t, grad):
                continue
            return False
        if grad and t.requires_grad or not (t.is_cpu or t.is_cuda):
            return False
    return True


def _direct_list(tensors: list, grad: bool) -> bool:
    for t in tensors:
        if type(t) not in _PLAIN or grad and t.requires_grad or not (t.is_cpu or t.is_cuda):
            return False
    return True


class _Call:
    """What the Function needs besides the tensors: the dispatch key set below autograd, the
    keyword arguments and where the variadic input's list sits in the flat arguments."""

    __slots__ = ("keyset", "kwargs", "list_at", "list_length")

    def __init__(self, keyset: Any, kwargs: dict, list_at: int, list_length: int):
        self.keyset = keyset
        self.kwargs = kwargs
        self.list_at = list_at
        self.list_length = list_length

    def structured(self, flat: tuple) -> list:
        """The op's arguments from the flat ones (the list rebuilt)."""
        if self.list_at < 0:
            return list(flat)
        end = self.list_at + self.list_length
        return [*flat[: self.list_at], list(flat[self.list_at : end]), *flat[end:]]


def register_autograd_kernel(
    library: torch.library.Library,
    spec: OpSpec,
    backward: Any,
    setup_context: Any,
    direct: Any = None,
) -> None:
    """Registers ``backward`` and ``setup_context`` (the functions torch.library.register_autograd
    takes) as the Autograd kernel of ``torch.ops.ctensor.<spec.name>``; ``direct``, the op's CPU
    and CUDA kernel (None: none), runs the calls that need nothing else."""
    if is_factory(spec):
        direct = None  # its device comes from its arguments, the dispatcher's business
    op = getattr(torch.ops.ctensor, spec.name).default
    fixed_outputs = len(spec.outputs) - 1 if spec.variadic_output else len(spec.outputs)
    variadic_out = spec.variadic_output

    def forward(*args: Any) -> Any:
        call = args[-1]
        with torch._C._AutoDispatchBelowAutograd():
            result = op.redispatch(
                call.keyset & torch._C._after_autograd_keyset,
                *call.structured(args[:-1]),
                **call.kwargs,
            )
        flat = flat_outputs(spec, result)
        return flat[0] if len(flat) == 1 else flat

    def setup(ctx: Any, inputs: tuple, output: Any) -> None:
        call = inputs[-1]
        flat = (output,) if isinstance(output, torch.Tensor) else tuple(output)
        ctx.ctensor_call = call
        ctx.ctensor_num_outputs = len(flat)
        setup_context(ctx, call.structured(inputs[:-1]), op_results(spec, flat), call.kwargs)

    def backward_flat(ctx: Any, *grads: Any) -> Any:
        call = ctx.ctensor_call
        needs = ctx.needs_input_grad
        try:
            ctx.needs_input_grad = tuple(call.structured(needs[:-1]))
            result = backward(ctx, *_structured_grads(grads))
        finally:
            ctx.needs_input_grad = needs
        result = list(result) if isinstance(result, tuple) else [result]
        flat: list = []
        for index, value in enumerate(result):
            if index == call.list_at:
                flat.extend(value if value is not None else [None] * call.list_length)
            else:
                flat.append(value)
        return (*flat, None)

    def _structured_grads(grads: tuple) -> tuple:
        if not variadic_out:
            return grads
        return (*grads[:fixed_outputs], list(grads[fixed_outputs:]))

    function = type(
        f"CtensorBackward_{spec.name}",
        (_SingleLevelFunction,),
        {
            "forward": staticmethod(forward),
            "setup_context": staticmethod(setup),
            "backward": staticmethod(backward_flat),
        },
    )
    list_at = spec.num_fixed_inputs if spec.variadic_input else -1

    num_inputs = len(spec.inputs)

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        if direct is not None and _direct(args):
            return direct(*args, **kwargs)
        if len(args) < num_inputs:  # the dispatcher leaves out trailing absent optional inputs
            args = (*args, *[None] * (num_inputs - len(args)))
        length = len(args[list_at]) if list_at >= 0 else 0
        call = _Call(keyset, kwargs, list_at, length)
        flat = [*args[:list_at], *args[list_at], *args[list_at + 1 :]] if list_at >= 0 else args
        # Under forward-mode AD (a dual level is open: torch.func.jvp, jacfwd) the Function
        # is applied too, so that a tangent meets its jvp, which ctensor does not define (an
        # error, not a silently missing tangent).
        if (
            torch.is_grad_enabled()
            and any(isinstance(t, torch.Tensor) and t.requires_grad for t in flat)
        ) or _forward_ad._current_level >= 0:
            if _transforms_active():
                with _single_level_allowed():
                    result = function.apply(*flat, call)
            else:
                result = function.apply(*flat, call)
            return op_results(spec, result)
        with torch._C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & torch._C._after_autograd_keyset, *args, **kwargs)

    library.impl(spec.name, kernel, "Autograd", with_keyset=True)
