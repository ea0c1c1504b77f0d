"""Device adapters: where the suite puts a case's bytes. Every buffer is addressed by a handle
(what goes into ct_tensor.data) plus byte offsets, so guard bytes work the same on every device:
allocate more, fill, run, read the whole buffer back and compare.

`HostDevice` serves the CPU with NumPy-owned memory; `BackendDevice` serves any device through
ct_device_allocate / ct_device_copy_from_host / ct_device_copy_to_host of the backend that
manages it (CUDA, OpenCL, ...)."""

from __future__ import annotations

import numpy as np

from ctensor._errors import check
from ctensor._lib import ffi, lib
from ctensor._registry import DEVICE_CODES

__all__ = ["Buffer", "HostDevice", "BackendDevice", "open_device", "ALIGNMENT"]

#: Alignment of every buffer's start (and so of offset 0).
ALIGNMENT = 256


class Buffer:
    """`size` bytes on a device. `handle` is what a tensor's `data` holds."""

    __slots__ = ("handle", "size", "owner")

    def __init__(self, handle, size: int, owner=None):  # noqa: ANN001
        self.handle = handle
        self.size = size
        self.owner = owner


def parse_device(text: str) -> tuple[str, int, int]:
    """'cpu', 'cuda:0', 'opencl:1' -> (kind, device_type code, device_id)."""
    kind, _, index = text.partition(":")
    if kind not in DEVICE_CODES:
        raise ValueError(f"unknown device {text!r}; expected cpu, cuda:N, opencl:N, ...")
    return kind, DEVICE_CODES[kind], int(index or 0)


class HostDevice:
    """The CPU: buffers are NumPy byte arrays, aligned to ALIGNMENT."""

    kind = "cpu"

    def __init__(self, device_id: int = 0):
        self.device_type = lib.CT_DEVICE_CPU
        self.device_id = device_id
        self.name = "cpu"

    def allocate(self, size: int) -> Buffer:
        raw = np.empty(size + ALIGNMENT, dtype=np.uint8)
        start = (-raw.ctypes.data) % ALIGNMENT
        view = raw[start : start + size]
        return Buffer(ffi.cast("void*", view.ctypes.data), size, view)

    def write(self, buf: Buffer, offset: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        buf.owner[offset : offset + raw.size] = raw

    def read(self, buf: Buffer, offset: int = 0, size: int | None = None) -> np.ndarray:
        size = buf.size - offset if size is None else size
        return buf.owner[offset : offset + size].copy()

    def free(self, buf: Buffer) -> None:
        buf.owner = None

    def offset_handle(self, buf: Buffer, offset: int):  # noqa: ANN201
        """A handle to `offset` bytes into `buf` (host pointers allow arithmetic)."""
        return ffi.cast("char*", buf.handle) + offset


class BackendDevice:
    """A device whose memory the suite reaches through ct_device_* (a loaded backend's memory
    functions)."""

    def __init__(self, kind: str, device_type: int, device_id: int):
        self.kind = kind
        self.device_type = device_type
        self.device_id = device_id
        self.name = f"{kind}:{device_id}"
        self._dev = ffi.new("ct_device*")
        self._dev.device_type = device_type
        self._dev.device_id = device_id

    def allocate(self, size: int) -> Buffer:
        out = ffi.new("void**")
        check(lib.ct_device_allocate(self._dev[0], max(size, 1), out))
        return Buffer(out[0], size)

    def write(self, buf: Buffer, offset: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        if raw.size:
            check(
                lib.ct_device_copy_from_host(
                    self._dev[0], buf.handle, offset, ffi.from_buffer(raw), raw.size, ffi.NULL
                )
            )

    def read(self, buf: Buffer, offset: int = 0, size: int | None = None) -> np.ndarray:
        size = buf.size - offset if size is None else size
        out = np.empty(size, dtype=np.uint8)
        if size:
            check(
                lib.ct_device_copy_to_host(
                    self._dev[0], ffi.from_buffer(out), buf.handle, offset, size, ffi.NULL
                )
            )
        return out

    def free(self, buf: Buffer) -> None:
        if buf.handle is not None:
            check(lib.ct_device_free(self._dev[0], buf.handle))
            buf.handle = None

    def offset_handle(self, buf: Buffer, offset: int):  # noqa: ANN201
        """Device handles (a cl_mem) allow no arithmetic: None unless offset is 0."""
        return buf.handle if offset == 0 else None


def open_device(text: str, device_api: bool = False):  # noqa: ANN201
    """The adapter for a --device value; `device_api` places CPU tensors through ct_device_*
    too (the path every other device takes)."""
    kind, code, index = parse_device(text)
    if kind == "cpu" and not device_api:
        return HostDevice(index)
    return BackendDevice(kind, code, index)
