"""Frames: the per-call scratch memory (a ``ctpy_frame``) and the Python objects one call holds.

A frame is taken from a pool by one call on one thread and given back when the call ends
(list.pop/append are atomic), so calls share nothing mutable. It holds the DLPack views of the
call's tensors (``objects`` → ``ctpy_open`` → ``tensors``/``meta``), its ``ct_context`` and its
workspace query. Capsules a caller passed are consumed: the frame remembers it (``consumed``)
and ``ctpy_release`` calls their deleters when the call ends.
"""

from __future__ import annotations

from typing import Any

from ._dlpack import open_error
from ._errors import CTensorError, error_for_status
from ._lib import ffi, last_error, lib
from ._registry import OpSpec

__all__ = ["Frame", "pool_pop", "pool_keep", "release", "open_views"]

_NULL = ffi.NULL
_CONTEXT_SIZE = ffi.sizeof("ct_context")
MAX_TENSORS = lib.CTPY_MAX_TENSORS
MAX_OUTPUTS = lib.CTPY_MAX_OUTPUTS
_ctpy_open = lib.ctpy_open


def output_capacity(spec: OpSpec) -> int:
    """Output slots a call of this op needs: its outputs, or the most a variadic one may have."""
    return MAX_OUTPUTS if spec.variadic_output else len(spec.outputs)


class Frame:
    """A ``ctpy_frame`` and the Python objects that must outlive one call. Frames are taken from
    a pool for one call by one thread (list.pop/append are atomic), so calls share nothing."""

    __slots__ = (
        "c",
        "objects",
        "tensors",
        "meta",
        "infos",
        "summary",
        "count",
        "context",
        "ws_bytes",
        "ws_align",
        "keep",
        "consumed",
        "backend",
        "stream",
    )

    def __init__(self) -> None:
        c = ffi.new("ctpy_frame*")
        self.c = c
        self.objects = c.objects
        self.tensors = c.tensors
        self.meta = c.meta
        self.infos = c.infos
        self.summary = c.summary
        self.count = ffi.addressof(c, "num_outputs")
        self.context = ffi.addressof(c, "context")
        self.context.struct_size = _CONTEXT_SIZE
        self.ws_bytes = ffi.addressof(c, "workspace_bytes")
        self.ws_align = ffi.addressof(c, "workspace_alignment")
        self.keep: list = []
        self.consumed = False
        self.backend = _NULL  # ct_context.backend: a backend name (char[]) or NULL
        #: The cudaStream_t (int) the call runs on, once worked out (_streams.call_stream);
        #: None until then.
        self.stream: int | None = None

    def reset_context(self) -> Any:
        context = self.context
        context.stream = _NULL
        context.workspace = _NULL
        context.workspace_size = 0
        context.allocator = _NULL
        context.backend = self.backend
        return context


POOL: list[Frame] = []
POOL_SIZE = 16
pool_pop = POOL.pop
pool_append = POOL.append


def pool_keep(frame: Frame) -> None:
    """Returns a frame the fast path used (nothing held) to the pool, unless it is full."""
    if len(POOL) < POOL_SIZE:
        pool_append(frame)


def release(frame: Frame) -> None:
    """Ends a frame's call: calls the deleters of consumed capsules, drops what it kept and
    returns it to the pool."""
    frame.backend = _NULL
    frame.stream = None
    if frame.consumed:
        lib.ctpy_release(frame.c, 0, MAX_TENSORS)
        frame.consumed = False
    frame.keep.clear()
    if len(POOL) < POOL_SIZE:
        pool_append(frame)


def fail(status: int) -> CTensorError:
    """The exception for a failed C call, with this thread's message."""
    return error_for_status(status, last_error())


def input_name(spec: OpSpec, i: int) -> str:
    fixed = spec.num_fixed_inputs
    if i < fixed:
        return f"{spec.name}: input '{spec.inputs[i]['name']}'"
    return f"{spec.name}: input '{spec.inputs[-1]['name']}'[{i - fixed}]"


def out_name(spec: OpSpec, j: int, many: bool) -> str:
    return f"{spec.name}: out[{j}]" if many else f"{spec.name}: out"


def tensor_name(spec: OpSpec, index: int, n: int, many: bool) -> str:
    """Input ``index``, or output ``index - n`` when ``index >= n`` (for error messages)."""
    return input_name(spec, index) if index < n else out_name(spec, index - n, many)


def open_views(frame: Frame, start: int, count: int, what: str | None) -> None:
    """Opens capsules frame.objects[start:start+count] (see ctpy_open)."""
    rc = _ctpy_open(frame.c, start, count)
    if rc:
        raise open_error(frame.meta[-1 - rc], what or "output")
