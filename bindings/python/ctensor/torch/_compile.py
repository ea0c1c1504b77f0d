"""``torch.compile`` of plain ``ctensor.ops`` calls: Dynamo traces them as ``torch.ops.ctensor``.

Dynamo cannot trace into a ``ctensor.ops`` function: the commonest ones are FastOps (a C type)
and the call path behind them runs C through cffi. ``register_polyfills`` gives Dynamo two
polyfills (``torch.compiler.substitute_in_graph``), which it inlines in place of the originals
while tracing; eager calls never see them:

- ``FastOp.__call__`` (the slot every FastOp shares): calls the op's Python function
  (``FastOp.fallback``), which takes the same arguments and hands them, normalised, to
- ``ctensor._call.call``: made as the ``torch.ops.ctensor.<name>`` call (``_route.torch_call``),
  which Dynamo puts in the graph like any custom op; its fake kernel gives the output shapes.

A call ``torch_call`` cannot make (no torch tensor among the inputs, ``backend=``, ``device=``)
runs eagerly: a graph break, or an error under ``fullgraph=True``. The Python frames of such an
eager call (the op's function, then ``call`` and everything it calls) are marked for Dynamo to
skip, with everything they call: Dynamo would otherwise compile them as frames of their own
and trace ctensor's C calls with fake tensors.

Registration needs ``torch._dynamo``, whose import costs about a second; it happens when both
``ctensor`` and ``torch._dynamo`` are imported, whichever comes first (``ctensor._torch_hook``),
so a program that never compiles never pays for it, and one that compiles needs no import of
``ctensor.torch`` of its own.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
import torch._dynamo

from .. import _call
from .. import ops as _ops
from .._lib import FastOp
from ._route import routable, torch_call

__all__ = ["register_polyfills"]

_lock = threading.Lock()
_registered = False


def register_polyfills() -> None:
    """Registers the polyfills with Dynamo, once per process."""
    global _registered
    with _lock:
        if _registered:
            return
        _register()
        _registered = True


def _skip_frames() -> None:
    """Marks the frames of eager ctensor.ops calls for Dynamo to skip, with their callees."""
    from torch._dynamo.eval_frame import set_code_exec_strategy
    from torch._dynamo.types import FrameAction, FrameExecStrategy

    skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
    functions = [_call.call]
    for name in _ops.__all__:
        op = getattr(_ops, name)
        functions.append(op.fallback if isinstance(op, FastOp) else op)
    for function in functions:
        set_code_exec_strategy(function.__code__, skip)


def _register() -> None:
    _skip_frames()
    eager_call = torch._dynamo.disable(
        _call.call,
        reason="a ctensor.ops call without torch tensors, or with backend= or device=, "
        "runs eagerly",
    )

    @torch.compiler.substitute_in_graph(FastOp.__call__)
    def fast_op_call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return self.fallback(*args, **kwargs)

    @torch.compiler.substitute_in_graph(_call.call)
    def call(spec: Any, args: Any, out: Any, attrs: Any, fast_op_declined: bool = False) -> Any:
        if routable(spec, args, out, attrs):
            return torch_call(spec, args, out, attrs)
        return eager_call(spec, args, out, attrs, fast_op_declined)
