"""Every operator of the ctensor registry, as a Python function generated at import.

``ctensor.ops.<name>(*arrays, out=None, **attrs)``: inputs are anything with ``__dlpack__``
(NumPy, PyTorch, JAX, CuPy) or raw DLPack capsules, read without copying; results come back in
the framework and on the device of the first array argument; ``out=`` writes into the caller's
memory. Each function's docstring is built from the operator's schema.

PyTorch tensors follow torch's own rules. With grad mode on, a call of a differentiable op with
an input that requires grad runs as ``torch.ops.ctensor.<name>`` (from ``ctensor.torch``), so
its result records autograd (a ``grad_fn``); under ``torch.no_grad()``/``inference_mode()``, and
for ops without a gradient, calls stay plain. ``out=`` that torch would refuse raises
``ctensor.AutogradError`` (a RuntimeError) before anything is written: on a call autograd would
record, into a tensor that requires grad while grad mode is on, or into an inference tensor
outside ``torch.inference_mode()``. Every ``out=`` write advances the tensor's version counter.
Results keep a channels_last first input's memory format where torch's own op does (elementwise
ops, conv2d, pooling, batch_norm, group_norm, interpolate).
"""

from __future__ import annotations

from typing import Any

from ._ops import build_all as _build_all
from ._ops import unknown_op as _unknown_op

_OPS = _build_all()
globals().update(_OPS)
__all__ = sorted(_OPS)


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"module 'ctensor.ops' has no attribute {name!r}")
    raise _unknown_op(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_OPS))
