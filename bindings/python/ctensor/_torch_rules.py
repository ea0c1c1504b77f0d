"""What a plain ``ctensor.ops.<name>`` call on PyTorch tensors owes torch.

The C fast paths run calls on plain tensors and hand every call that torch's own rules concern
to the Python path (``ctpy_torch_declines`` and ``ctpy_torch_first_not_row_major`` in
bindings/python/src/array_view.c), where ``_call`` asks this module:

- **autograd** (:func:`route`): with grad mode on (``torch.is_grad_enabled()``), a call of a
  differentiable op with an input that requires grad runs as ``torch.ops.ctensor.<name>``
  (registered by ``ctensor.torch`` from the gradient registry), so its result has a grad_fn
  exactly as torch's own op's would. Under ``torch.no_grad()`` or ``torch.inference_mode()``,
  and for ops with no gradient, calls stay on the plain path (results without grad_fn, as
  torch's). ``out=`` on a call autograd would have to record is refused, as torch refuses it.
- **writes** (:func:`refuse_write`): ``out=`` naming a leaf that requires grad (grad mode on)
  or an inference tensor outside ``torch.inference_mode`` is refused before anything is written
  (:class:`AutogradError`, a RuntimeError as torch's own). Every write advances the tensor's
  version counter (``_dlpack.mark_written``, and the C fast paths themselves).
- **memory format** (:func:`layout_framework`): a channels_last (4-D) or channels_last_3d (5-D)
  first input gives results in that memory format where torch's own op does: elementwise ops
  whose result has the first input's shape, and the 4-D/5-D results of the NN ops in
  :data:`KEEPS_CHANNELS_LAST`. ctensor's kernels write any output strides.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from ._errors import AutogradError, InvalidArgumentError
from ._frameworks import TORCH, _Torch
from ._lib import ffi
from ._registry import OpSpec

__all__ = ["PLAIN", "KEEPS_CHANNELS_LAST", "route", "refuse_write", "layout_framework"]

#: What :func:`route` answers for a call the plain path runs.
PLAIN = object()

#: Ops that are not elementwise whose torch counterparts keep a channels_last input's memory
#: format in their results of the same rank (tests/test_torch_semantics.py checks each against
#: torch). layer_norm, softmax and the like give contiguous results in torch, so not here.
KEEPS_CHANNELS_LAST = frozenset(
    {
        "adaptive_avg_pool2d",
        "avg_pool2d",
        "batch_norm",
        "batch_norm_training",
        "conv2d",
        "group_norm",
        "interpolate",
        "max_pool2d",
    }
)

_NULL = ffi.NULL
# Set while this thread runs a call through torch.ops.ctensor: a kernel that calls ctensor.ops
# on the same tensors runs them plainly instead of going through autograd again.
_inside = threading.local()


def _differentiable(spec: OpSpec) -> bool:
    return bool(spec.schema.get("gradient", {}).get("differentiable"))


def route(spec: OpSpec, args: tuple, out: Any, attrs: dict | None, backend: Any) -> Any:
    """A call's result when torch's autograd must record it (the call then ran as
    ``torch.ops.ctensor.<name>``), else PLAIN. Raises AutogradError for ``out=`` that torch
    would refuse. ``backend``: the frame's backend name (NULL when none was asked for)."""
    torch = sys.modules["torch"]
    tensor_type = torch.Tensor
    grad_mode = torch.is_grad_enabled()
    needs_grad = False
    if grad_mode:
        for a in args:
            if isinstance(a, tensor_type) and a.requires_grad:
                needs_grad = True
                break
    if out is not None:
        many = type(out) in (tuple, list)
        for j, o in enumerate(out if many else (out,)):
            if isinstance(o, tensor_type):
                refuse_write(
                    o, f"{spec.name}: out[{j}]" if many else f"{spec.name}: out", grad_mode
                )
        if needs_grad:
            raise AutogradError(
                f"{spec.name}(): functions with out=... arguments don't support automatic "
                "differentiation, but one of the arguments requires grad; call it without out= "
                "(its result then has a grad_fn), or under torch.no_grad()"
            )
        return PLAIN
    if not needs_grad or not _differentiable(spec) or getattr(_inside, "active", False):
        return PLAIN
    return _autograd_call(spec, args, attrs, backend)


def refuse_write(tensor: Any, what: str, grad_mode: bool | None = None) -> None:
    """Raises AutogradError when torch would refuse to write into ``tensor`` in place: an
    inference tensor outside inference mode, or a tensor that requires grad while grad mode is
    on (``grad_mode``; None: ask torch). Writes under torch.no_grad() into a tensor that requires
    grad are allowed, as torch allows them (an optimizer's update)."""
    torch = sys.modules["torch"]
    if tensor.is_inference() and not torch.is_inference_mode_enabled():
        raise AutogradError(
            f"{what} is an inference tensor: Inplace update to inference tensor outside "
            "InferenceMode is not allowed; write into it under torch.inference_mode(), or into "
            "a clone"
        )
    if tensor.requires_grad and (torch.is_grad_enabled() if grad_mode is None else grad_mode):
        if tensor.is_leaf:
            raise AutogradError(
                f"{what}: a leaf Variable that requires grad is being used in an in-place "
                "operation; write into it under torch.no_grad()"
            )
        raise AutogradError(
            f"{what} requires grad: functions with out=... arguments don't support automatic "
            "differentiation; call it without out=, or under torch.no_grad()"
        )


def _autograd_call(spec: OpSpec, args: tuple, attrs: dict | None, backend: Any) -> Any:
    """Runs the call as torch.ops.ctensor.<name> (ctensor.torch._route.torch_call: the variadic
    input as one list, attributes under their torch names, Python scalars as 0-d tensors of the
    dtype ctensor gives them) and returns its result as the plain path would."""
    if backend != _NULL:
        raise InvalidArgumentError(
            f"{spec.name}: backend= picks a kernel of the plain path, but an input requires grad "
            f"and grad mode is on, so the call runs as torch.ops.ctensor.{spec.name}; call it "
            "under torch.no_grad() to pick a backend"
        )
    from .torch._route import torch_call  # registers torch.ops.ctensor on first use

    previous = getattr(_inside, "active", False)
    _inside.active = True
    try:
        return torch_call(spec, args, None, attrs)
    finally:
        _inside.active = previous


class _TorchInFormat(_Torch):
    """PyTorch results in a memory format: outputs of the first input's rank (and shape, for
    elementwise ops) are allocated in it, others as usual."""

    def __init__(self, memory_format: Any, ndim: int, shape: tuple | None):
        super().__init__()
        self._dtypes = TORCH._dtypes  # one dtype cache for every torch framework
        self.memory_format = memory_format
        self.ndim = ndim
        self.shape = shape

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        if len(shape) == self.ndim and (self.shape is None or shape == self.shape):
            return sys.modules["torch"].empty(
                shape,
                dtype=self._dtype(dtype),
                device=like.device,
                memory_format=self.memory_format,
            )
        return super().empty(shape, dtype, like)

    def fast_allocator(self, like: Any) -> None:
        return None


def layout_framework(spec: OpSpec, like: Any) -> _Torch | None:
    """The framework to allocate the results of a call whose first array argument is the torch
    tensor ``like`` in, when torch's own op would keep its channels_last or channels_last_3d
    memory format; None otherwise (plain row-major results)."""
    ndim = like.dim()
    if (ndim != 4 and ndim != 5) or not (spec.elementwise or spec.name in KEEPS_CHANNELS_LAST):
        return None
    torch = sys.modules["torch"]
    memory_format = torch.channels_last if ndim == 4 else torch.channels_last_3d
    if like.is_contiguous() or not like.is_contiguous(memory_format=memory_format):
        return None
    return _TorchInFormat(memory_format, ndim, tuple(like.shape) if spec.elementwise else None)
