"""Running a call whose inputs are open views: infer the outputs, allocate them in the caller's
framework, ask for the workspace and the stream (``ct_context``), and run.

``execute`` is the end of the general path for calls without ``out=``; ``run_internal`` runs an
op the binding calls for itself (the casts of promotion, the steps of an exact comparison) in a
frame of its own. Dynamic-allocating ops get an allocator callback (``ctpy_allocate``) that
allocates each output in the caller's framework when the kernel asks for it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ._attrs import attrs_for
from ._dlpack import export_numpy, open_error
from ._dtypes import KEY_NAME, name_of_ct
from ._errors import BackendError, CTensorError, SizeOverflowError
from ._frame import Frame, fail, open_views, output_capacity, pool_pop, release
from ._frameworks import Framework
from ._lib import ffi, lib
from ._registry import OpSpec

__all__ = ["execute", "prepare_context", "run_internal", "tensor_in"]


def _intermediate() -> str:
    return "an array ctensor made for the call"


_CT_OK = lib.CT_OK
_WORKSPACE_TOO_SMALL = lib.CT_ERROR_WORKSPACE_TOO_SMALL
_OUT_OF_MEMORY = lib.CT_ERROR_OUT_OF_MEMORY
_CPU = lib.CT_DEVICE_CPU
_ALLOCATOR_SIZE = ffi.sizeof("ct_allocator")
_KEY_NAME = KEY_NAME
_run = lib.ct_op_run
_workspace = lib.ct_op_workspace
_workspace_in_context = lib.ct_op_workspace_with_context
_ctpy_infer = lib.ctpy_infer
_open_run = lib.ctpy_open_run
_new = ffi.new
_NULL = ffi.NULL
_unpack = ffi.unpack


def _host_memory_bytes() -> int:
    """The machine's physical memory in bytes, or 0 where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 0


#: No host allocation can hold more than this: outputs above it fail before any is allocated.
HOST_MEMORY_BYTES = _host_memory_bytes()


def _format_bytes(count: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def check_host_outputs(spec: OpSpec, values: Any, num_outputs: int, device: int) -> None:
    """Raises SizeOverflowError, before anything is allocated, when the inferred outputs of a
    call on the host need more bytes than the machine has memory (``values``: the frame's
    summary, per output its dtype key, ndim and extents). ct_op_infer already refuses outputs
    whose byte count overflows int64; this catches the sizes no host allocator can give."""
    if device & 0xFF != _CPU or not HOST_MEMORY_BYTES:
        return
    total = 0
    k = 0
    for _ in range(num_outputs):
        key, ndim = values[k], values[k + 1]
        count = max(((key >> 8) & 0xFF) // 8, 1)
        for extent in values[k + 2 : k + 2 + ndim]:
            count *= max(extent, 0)
        total += count
        k += 2 + ndim
    if total > HOST_MEMORY_BYTES:
        raise SizeOverflowError(
            f"{spec.name}: its outputs would take {_format_bytes(total)}, more than this "
            f"machine's memory ({_format_bytes(HOST_MEMORY_BYTES)}); nothing was allocated"
        )


def check_host_workspace(
    spec: OpSpec, size: int, device: int, outputs: Any = None, num_outputs: int = 0
) -> None:
    """Raises SizeOverflowError, before the workspace is allocated and the kernel runs, when
    the workspace a kernel asks for on the host, with the outputs it will fill (``outputs``:
    the ct_tensor views), needs more than the machine's memory: a call on a huge broadcast view
    can ask for hundreds of GiB, which a framework refuses with its own error naming no op, or
    overcommits until the kernel's writes exhaust the machine."""
    if device & 0xFF != _CPU or not HOST_MEMORY_BYTES or size == 0:
        return
    total = size
    for i in range(num_outputs):
        view = outputs[i]
        count = max(view.dtype.bits // 8, 1) * max(view.dtype.lanes, 1)
        for k in range(view.ndim):
            count *= max(view.shape[k], 0)
        total += count
    if total > HOST_MEMORY_BYTES:
        raise SizeOverflowError(
            f"{spec.name}: its workspace ({_format_bytes(size)}) and outputs would take "
            f"{_format_bytes(total)}, more than this machine's memory "
            f"({_format_bytes(HOST_MEMORY_BYTES)}); the workspace was not allocated"
        )


class _AllocState:
    """What the allocator callback of one call needs and collects."""

    __slots__ = ("fw", "like", "device", "outputs", "error", "op")

    def __init__(self, fw: Framework, like: Any, device: int, op: str = ""):
        self.op = op
        self.fw = fw
        self.like = like
        self.device = device
        self.outputs: dict[int, Any] = {}
        self.error: BaseException | None = None


@ffi.def_extern()
def ctpy_allocate(user_data, output_index, info, device_type, device_id, data):  # noqa: ANN001
    state = ffi.from_handle(user_data)
    try:
        if (device_type & 0xFF) | ((device_id & 0xFFFF) << 8) != state.device:
            raise BackendError(
                f"the kernel asked for output {output_index} on device ({device_type}, "
                f"{device_id}) but the call runs on ({state.device & 0xFF}, {state.device >> 8})"
            )
        if output_index in state.outputs:
            raise BackendError(f"the kernel asked for output {output_index} twice")
        shape = tuple(_unpack(info.shape, info.ndim))
        if state.device & 0xFF == _CPU and HOST_MEMORY_BYTES:
            count = max(info.dtype.bits // 8, 1)
            for extent in shape:
                count *= max(extent, 0)
            if count > HOST_MEMORY_BYTES:
                raise SizeOverflowError(
                    f"{state.op}: the kernel asked for output {output_index} of shape {shape} "
                    f"({_format_bytes(count)}), more than this machine's memory "
                    f"({_format_bytes(HOST_MEMORY_BYTES)}); nothing was allocated"
                )
        array = state.fw.empty(shape, name_of_ct(info.dtype), state.like)
        state.outputs[output_index] = array
        data[0] = ffi.cast("void*", state.fw.data_ptr(array))
        return _CT_OK
    except BaseException as e:  # noqa: BLE001 - re-raised after ct_op_run returns
        state.error = e
        return _OUT_OF_MEMORY


def execute(
    spec: OpSpec,
    frame: Frame,
    n: int,
    fw: Framework | None,
    fw_error: CTensorError | None,
    like: Any,
    device: int,
    attr_array: Any,
    num_attrs: int,
    length: int = -1,
) -> list:
    """Infers, allocates, runs. Inputs are frame.tensors[0:n]; new outputs are opened into the
    slots after them. Returns the new output arrays."""
    op = spec.op
    tensors = frame.tensors
    if length < 0:  # not inferred yet
        capacity = output_capacity(spec)
        length = _ctpy_infer(frame.c, op, n, attr_array, num_attrs, capacity)
        if length < 0:
            raise fail(length)
    if fw is None:
        # No framework can hold results on this device: let the C library say first whether it
        # could run the call at all (kernels are looked up by the workspace query).
        status = _workspace(
            op, tensors, n, _NULL, 0, attr_array, num_attrs, frame.ws_bytes, frame.ws_align
        )
        if status:
            raise fail(status)
        raise fw_error
    num_outputs = frame.count[0]
    if spec.is_dynamic:
        return _execute_dynamic(
            spec, frame, n, fw, like, device, attr_array, num_attrs, num_outputs
        )
    keep = frame.keep
    objects = frame.objects
    results = []
    values = _unpack(frame.summary, length)
    check_host_outputs(spec, values, num_outputs, device)
    k = 0
    empty = fw.empty
    capsule_of_result = fw.capsule
    for j in range(num_outputs):
        ndim = values[k + 1]
        array = empty(tuple(values[k + 2 : k + 2 + ndim]), _KEY_NAME.get(values[k]), like)
        k += 2 + ndim
        results.append(array)
        capsule = capsule_of_result(array)
        keep.append(capsule)
        objects[n + j] = id(capsule)
    if spec.has_workspace or device & 0xFF != _CPU:
        open_views(frame, n, num_outputs, None)
        outputs = tensors + n
        context = prepare_context(
            spec, frame, n, outputs, num_outputs, attr_array, num_attrs, fw, like, device
        )
        status = _run(op, tensors, n, outputs, num_outputs, attr_array, num_attrs, context)
    else:
        status = _open_run(frame.c, op, n, num_outputs, attr_array, num_attrs, _NULL)
        if status > 0:
            raise open_error(frame.meta[status - 1], "output")
        if status == _WORKSPACE_TOO_SMALL:
            # A kernel of a shape-static op asked for scratch memory (plugins may): ask and
            # retry. Argument errors are detected before anything is written, so it is safe.
            outputs = tensors + n
            context = prepare_context(
                spec, frame, n, outputs, num_outputs, attr_array, num_attrs, fw, like, device, True
            )
            status = _run(op, tensors, n, outputs, num_outputs, attr_array, num_attrs, context)
    if status:
        raise fail(status)
    return results


def _execute_dynamic(
    spec: OpSpec,
    frame: Frame,
    n: int,
    fw: Framework,
    like: Any,
    device: int,
    attr_array: Any,
    num_attrs: int,
    num_outputs: int,
) -> list:
    """Runs a dynamic-allocating op, whose kernel allocates each output through the allocator
    callback (ctpy_allocate) in the caller's framework. Returns the outputs."""
    keep = frame.keep
    state = _AllocState(fw, like, device, spec.name)
    handle = ffi.new_handle(state)
    allocator = _new("ct_allocator*")
    allocator.struct_size = _ALLOCATOR_SIZE
    allocator.user_data = handle
    allocator.allocate = lib.ctpy_allocate
    keep.append(handle)
    keep.append(allocator)
    context = prepare_context(spec, frame, n, _NULL, 0, attr_array, num_attrs, fw, like, device)
    context.allocator = allocator
    status = _run(spec.op, frame.tensors, n, _NULL, 0, attr_array, num_attrs, context)
    if state.error is not None:
        error, state.error = state.error, None
        raise error
    if status:
        raise fail(status)
    found = state.outputs
    if len(found) != num_outputs or any(i not in found for i in range(num_outputs)):
        raise BackendError(
            f"{spec.name}: the kernel allocated outputs {sorted(found)} of {num_outputs}",
            lib.CT_ERROR_BACKEND,
        )
    return [found[i] for i in range(num_outputs)]


def prepare_context(
    spec: OpSpec,
    frame: Frame,
    n: int,
    outputs: Any,
    n_out: int,
    attr_array: Any,
    num_attrs: int,
    fw: Framework,
    like: Any,
    device: int,
    force_workspace: bool = False,
) -> Any:
    """The frame's ct_context with the caller's stream and, when the kernel asks for it, scratch
    memory in the caller's framework and device. The scratch array is held by the frame until
    the call returns (``release``): it comes from the framework's pool on the call's stream, so
    a later user of the same memory is ordered after the call's kernels (see _streams)."""
    context = frame.reset_context()
    on_device = device & 0xFF != _CPU
    if on_device:
        stream = frame.stream  # set by the general path (see _streams.call_stream)
        if stream is None:
            stream = frame.stream = fw.stream(like) if like is not None else 0
        if stream:
            context.stream = ffi.cast("void*", stream)
    # Off the CPU any kernel may ask for scratch (cuBLASLt, cuDNN and CUB do), so the workspace
    # is always asked for there; on the CPU only ops of the workspace category ask.
    if spec.has_workspace or spec.is_dynamic or force_workspace or on_device:
        status = _workspace_in_context(
            spec.op,
            frame.tensors,
            n,
            outputs,
            n_out,
            attr_array,
            num_attrs,
            context,
            frame.ws_bytes,
            frame.ws_align,
        )
        if status:
            raise fail(status)
        size, align = frame.ws_bytes[0], max(int(frame.ws_align[0]), 1)
        check_host_workspace(spec, size, device, outputs, n_out)
        if size:
            if on_device and fw.name == "numpy":
                # No framework holds memory on this device (a raw capsule or a foreign
                # producer with out=): ctensor's own device memory (ct_device_allocate), which
                # synchronises, rather than host memory the kernel cannot use.
                from ._device_array import DeviceArray

                scratch = DeviceArray.empty((size + align,), "uint8", (device & 0xFF, device >> 8))
                base = scratch.data_handle
            else:
                scratch = fw.scratch(size + align, like)
                base = fw.data_ptr(scratch)
            frame.keep.append(scratch)
            context.workspace = ffi.cast("void*", (base + align - 1) // align * align)
            context.workspace_size = size
    return context


def run_internal(
    spec: OpSpec,
    tensors: list,
    fw: Framework,
    like: Any,
    device: int,
    attrs: dict | None = None,
    out_tensor: Any = None,
) -> list | None:
    """Runs ``spec`` on ct_tensor* ``tensors`` in a frame of its own: new outputs in the caller's
    framework (returned), or into ``out_tensor``."""
    attr_entry = attrs_for(spec, attrs) if attrs else (_NULL, 0, None)  # held during the call
    attr_array, num_attrs = attr_entry[0], attr_entry[1]
    try:
        inner = pool_pop()
    except IndexError:
        inner = Frame()
    try:
        n = len(tensors)
        for k, tensor in enumerate(tensors):
            inner.tensors[k] = tensor
        if out_tensor is None:
            return execute(spec, inner, n, fw, None, like, device, attr_array, num_attrs)
        inner.tensors[n] = out_tensor
        context = _NULL
        if spec.has_workspace or device & 0xFF != _CPU:  # the call's stream, scratch
            context = prepare_context(
                spec, inner, n, inner.tensors + n, 1, attr_array, num_attrs, fw, like, device
            )
        status = _run(
            spec.op, inner.tensors, n, inner.tensors + n, 1, attr_array, num_attrs, context
        )
        if status:
            raise fail(status)
        return None
    finally:
        release(inner)


def tensor_in(frame: Frame, array: Any, slot: int, fw: Framework) -> Any:
    """The ct_tensor* of an array the binding made, opened into ``slot`` of the frame (kept alive
    until the call ends)."""
    capsule = (
        fw.capsule(array)
        if not isinstance(array, np.ndarray)
        else export_numpy(array, False, _intermediate)
    )
    frame.keep.append(array)
    frame.keep.append(capsule)
    frame.objects[slot] = id(capsule)
    open_views(frame, slot, 1, "intermediate array")
    return frame.tensors[slot]
