"""Calls below the ergonomic ops API: the suite builds its own ct_tensor views, ct_context and
ct_allocator with the binding's cffi `ffi`/`lib` and calls ct_op_infer, ct_op_workspace and
ct_op_run directly, so that it sees every byte a kernel touches.

Each tensor lives in its own device buffer with GUARD bytes before and after it, all filled with
PATTERN; outputs may be strided, leaving gaps that must stay PATTERN too. After the run the whole
buffer is read back and compared with what it should hold."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ctensor._attrs import make_attrs as _make_attrs
from ctensor._lib import ffi, lib
from ctensor._registry import OpSpec

from .dtypes import itemsize, set_ct_dtype, storage

__all__ = ["GUARD", "PATTERN", "Tensor", "Execution", "infer", "execute", "status_name"]

#: Guard bytes around every tensor, workspace and allocation.
GUARD = 64
#: Byte value guard bytes and unwritten output bytes hold.
PATTERN = 0xA5

_CT_OK = lib.CT_OK


def status_name(status: int) -> str:
    return ffi.string(lib.ct_status_name(status)).decode()


def _last_error() -> str:
    return ffi.string(lib.ct_last_error()).decode("utf-8", "replace")


def _extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """(lowest, highest) element offsets a view reaches; (0, -1) when it has no elements."""
    if any(s == 0 for s in shape):
        return 0, -1
    low = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides, strict=False))
    high = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides, strict=False))
    return low, high


@dataclass
class Tensor:
    """A tensor of a case placed in a device buffer: its view struct and what the buffer should
    hold afterwards (`expected` bytes; None for outputs until the run's values are known)."""

    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # elements; None: compact, passed as NULL
    buffer: Any
    start: int  # byte offset of the element at offset 0 (GUARD - lowest * itemsize)
    region: tuple[int, int]  # lowest, highest element offsets
    expected: np.ndarray | None
    view: Any = None  # ct_tensor*
    keep: list = field(default_factory=list)
    lead: int = GUARD  # bytes before the region (0 for allocations placed at byte 0)

    def element_strides(self) -> tuple[int, ...]:
        if self.strides is not None:
            return self.strides
        out, acc = [], 1
        for n in reversed(self.shape):
            out.append(acc)
            acc *= max(n, 1)
        return tuple(reversed(out))


def _region_array(values: np.ndarray | None, dtype: str, shape, strides) -> tuple[np.ndarray, int]:
    """Bytes of the region a view spans (PATTERN where no element lies), and -lowest."""
    size = itemsize(dtype)
    low, high = _extent(shape, strides)
    count = high - low + 1
    raw = np.full(count * size, PATTERN, dtype=np.uint8)
    if values is not None and count > 0:
        typed = raw.view(storage(dtype))
        target = as_strided(typed[-low:], shape=shape, strides=[s * size for s in strides])
        target[...] = values
    return raw, -low


def place(device, dtype: str, shape, strides, values) -> Tensor:  # noqa: ANN001
    """Allocates a guarded buffer on `device` and writes `values` (stored form, may be None) in
    the view (shape, strides); strides None means compact (NULL in the view)."""
    shape = tuple(int(n) for n in shape)
    t = Tensor(dtype, shape, None if strides is None else tuple(strides), None, 0, (0, -1), None)
    es = t.element_strides()
    region, neg_low = _region_array(values, dtype, shape, es)
    total = GUARD + region.size + GUARD
    image = np.full(total, PATTERN, dtype=np.uint8)
    image[GUARD : GUARD + region.size] = region
    t.buffer = device.allocate(total)
    device.write(t.buffer, 0, image)
    t.start = GUARD + neg_low * itemsize(dtype)
    t.region = _extent(shape, es)
    t.expected = image
    t.view = _view(t, device)
    return t


def _view(t: Tensor, device) -> Any:  # noqa: ANN001
    view = ffi.new("ct_tensor*")
    view.data = t.buffer.handle
    view.device.device_type = device.device_type
    view.device.device_id = device.device_id
    view.ndim = len(t.shape)
    set_ct_dtype(view.dtype, t.dtype)
    shape = ffi.new("int64_t[]", list(t.shape) or [0])
    view.shape = shape
    t.keep.append(shape)
    if t.strides is not None:
        strides = ffi.new("int64_t[]", list(t.strides) or [0])
        view.strides = strides
        t.keep.append(strides)
    view.byte_offset = t.start
    return view


def read_values(device, t: Tensor) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
    """(the whole buffer as read back, the view's values in stored form)."""
    raw = device.read(t.buffer, 0, t.buffer.size)
    es = t.element_strides()
    low, high = t.region
    size = itemsize(t.dtype)
    if high < low:
        return raw, np.zeros(t.shape, dtype=storage(t.dtype))
    typed = raw[t.lead : t.lead + (high - low + 1) * size].view(storage(t.dtype))
    values = as_strided(typed[-low:], shape=t.shape, strides=[s * size for s in es]).copy()
    return raw, values


def untouched_outside(t: Tensor, raw: np.ndarray, values: np.ndarray) -> bool:
    """Whether every byte of an output's buffer that is not one of its elements still holds
    PATTERN (guards before and after, gaps of a strided view)."""
    region, _ = _region_array(values, t.dtype, t.shape, t.element_strides())
    expected = np.full(raw.size, PATTERN, dtype=np.uint8)
    expected[t.lead : t.lead + region.size] = region
    return bool(np.array_equal(expected, raw))


def infer(spec: OpSpec, inputs: list, attrs: dict) -> tuple[int, list, str]:
    """ct_op_infer on views (or None for absent inputs): (status, [(dtype, shape)], message)."""
    keep: list = []
    attr_array, num_attrs = _make_attrs(spec, attrs, keep)
    arr = ffi.new("ct_tensor*[]", [v if v is not None else ffi.NULL for v in inputs] or 1)
    capacity = 64
    infos = ffi.new("ct_tensor_info[]", capacity)
    count = ffi.new("int32_t*")
    status = lib.ct_op_infer(
        spec.op, arr, len(inputs), attr_array, num_attrs, infos, capacity, count
    )
    if status != _CT_OK:
        return status, [], _last_error()
    from ctensor._dtypes import name_of_ct

    out = []
    for i in range(count[0]):
        info = infos[i]
        out.append((name_of_ct(info.dtype), tuple(info.shape[k] for k in range(info.ndim))))
    return status, out, ""


class TrackingAllocator:
    """A ct_allocator that records every call, places each output in a guarded buffer and keeps
    what the kernel asked for, so that the suite can say which allocations were handed back."""

    def __init__(self, device, num_outputs: int, fail_output: int | None = None):  # noqa: ANN001
        self.device = device
        self.num_outputs = num_outputs
        # The output whose (first) allocation fails with CT_ERROR_OUT_OF_MEMORY; the call still
        # points data at a guarded decoy buffer, so that a kernel ignoring the status writes
        # there (seen) instead of through NULL (a crash).
        self.fail_output = fail_output
        self.decoy: Tensor | None = None
        self.after_failure = 0  # allocations asked for after the failed one
        self.calls: list[tuple[int, str, tuple[int, ...], int, int]] = []
        self.tensors: dict[int, list[Tensor]] = {}
        self.lock = threading.Lock()
        self.callback = ffi.callback(
            "int(void*, int32_t, const ct_tensor_info*, int32_t, int32_t, void**)",
            self._allocate,
            error=lib.CT_ERROR_OUT_OF_MEMORY,
        )
        self.struct = ffi.new("ct_allocator*")
        self.struct.struct_size = ffi.sizeof("ct_allocator")
        self.struct.allocate = self.callback

    def _allocate(self, _user, index, info, device_type, device_id, data):  # noqa: ANN001
        from ctensor._dtypes import name_of_ct

        dtype = name_of_ct(info.dtype)
        shape = tuple(int(info.shape[k]) for k in range(max(0, min(info.ndim, 64))))
        with self.lock:
            self.calls.append((int(index), dtype, shape, int(device_type), int(device_id)))
            if self.decoy is not None:
                self.after_failure += 1
        if any(n < 0 for n in shape) or dtype.startswith("<"):
            return lib.CT_ERROR_INVALID_ARGUMENT
        t = place(self.device, dtype, shape, None, None)
        if self.fail_output == int(index) and self.decoy is None:
            handle = self.device.offset_handle(t.buffer, t.start)
            if handle is None:
                t = _place_at_zero(self.device, dtype, shape)
                handle = t.buffer.handle
            self.decoy = t
            data[0] = handle
            return lib.CT_ERROR_OUT_OF_MEMORY
        handle = self.device.offset_handle(t.buffer, t.start)
        if handle is None:  # a device without pointer arithmetic: no guard before
            t = _place_at_zero(self.device, dtype, shape)
            handle = t.buffer.handle
        with self.lock:
            self.tensors.setdefault(int(index), []).append(t)
        data[0] = handle
        return _CT_OK


def _place_at_zero(device, dtype: str, shape) -> Tensor:  # noqa: ANN001
    """An allocation whose elements start at byte 0 of its buffer, with a guard after."""
    size = itemsize(dtype) * int(np.prod(shape, dtype=np.int64))
    image = np.full(size + GUARD, PATTERN, dtype=np.uint8)
    buf = device.allocate(image.size)
    device.write(buf, 0, image)
    t = Tensor(dtype, tuple(shape), None, buf, 0, (0, -1), image, lead=0)
    t.region = _extent(t.shape, t.element_strides())
    return t


@dataclass
class Execution:
    """What one ct_op_run did."""

    status: int
    message: str
    workspace: tuple[int, int] = (0, 0)  # bytes, alignment asked for
    workspace_overrun: bool = False
    allocator: TrackingAllocator | None = None


def make_context(allocator, backend: str | None, keep: list):  # noqa: ANN001, ANN201
    """A ct_context naming `backend` (None: any), with the allocator, without workspace yet."""
    ctx = ffi.new("ct_context*")
    ctx.struct_size = ffi.sizeof("ct_context")
    ctx.allocator = allocator.struct if allocator is not None else ffi.NULL
    if backend is not None:
        name = ffi.new("char[]", backend.encode())
        keep.append(name)
        ctx.backend = name
    return ctx


def execute(
    spec: OpSpec,
    device,
    inputs: list,
    outputs: list,
    attrs: dict,
    backend: str | None,
    workspace_shrink: int = 0,
    dynamic_outputs: int = 0,
    context_size: int | None = None,
    fail_output: int | None = None,
) -> Execution:  # noqa: ANN001
    """Runs the op on placed tensors (None for absent inputs). Workspace ops get a guarded
    workspace of exactly the size they ask for (minus `workspace_shrink` bytes); dynamic ops a
    TrackingAllocator expecting `dynamic_outputs` outputs. `context_size` overrides the
    context's struct_size (version negotiation checks); `fail_output` makes the allocator fail
    on that output (TrackingAllocator)."""
    keep: list = []
    attr_array, num_attrs = _make_attrs(spec, attrs, keep)
    in_views = ffi.new("ct_tensor*[]", [t.view if t is not None else ffi.NULL for t in inputs] or 1)
    out_views = ffi.new("ct_tensor*[]", [t.view for t in outputs] or 1)
    n_out = len(outputs)
    allocator = TrackingAllocator(device, dynamic_outputs, fail_output) if spec.is_dynamic else None
    ctx = make_context(allocator, backend, keep)
    bytes_ = ffi.new("uint64_t*")
    align = ffi.new("uint64_t*")
    # The workspace of the kernel this context pins (ct_op_workspace sizes the newest kernel).
    status = lib.ct_op_workspace_with_context(
        spec.op,
        in_views,
        len(inputs),
        out_views if n_out else ffi.NULL,
        n_out,
        attr_array,
        num_attrs,
        ctx,
        bytes_,
        align,
    )
    if status != _CT_OK:
        return Execution(status, _last_error())
    ws_bytes, ws_align = int(bytes_[0]), int(align[0])
    ws_buffer = None
    if ws_bytes:
        ws_buffer = device.allocate(ws_bytes + GUARD)
        device.write(ws_buffer, 0, np.full(ws_bytes + GUARD, PATTERN, dtype=np.uint8))
        ctx.workspace = ws_buffer.handle
        ctx.workspace_size = max(0, ws_bytes - workspace_shrink)
    if context_size is not None:
        ctx.struct_size = context_size
    status = lib.ct_op_run(
        spec.op,
        in_views,
        len(inputs),
        out_views if n_out else ffi.NULL,
        n_out,
        attr_array,
        num_attrs,
        ctx,
    )
    message = _last_error() if status != _CT_OK else ""
    result = Execution(status, message, (ws_bytes, ws_align), False, allocator)
    if ws_buffer is not None:
        tail = device.read(ws_buffer, ws_bytes, GUARD)
        result.workspace_overrun = bool(np.any(tail != PATTERN))
        device.free(ws_buffer)
    return result
