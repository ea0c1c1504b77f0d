"""The OpenCL backend in the harness: the ``ctensor.opencl`` implementation of a case runs
ctensor's op on ``DeviceArray`` inputs (and ``out=``) on device ``opencl:0``, next to the CPU
backend's ``ctensor`` implementation. In CI the device is PoCL, which runs on the same CPU cores:
a functional comparison, not a GPU speed claim.

An op on device arrays enqueues its kernels and returns. ``sync(result)`` waits until the
device's default queue (the one ctensor's ops use without a stream) has finished
(``ct_device_synchronize``) and returns ``result``; every ``ctensor.opencl`` expression is wrapped
in it (``Env.opencl_expr``), so a timed call includes the completion of the device work and the
check reads a finished result (``DeviceArray.to_numpy`` downloads after the queued work too).
Uploads happen once, when a case is built, and are never timed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["IMPL", "OpenCL", "fill", "find", "sentinel"]

#: The implementation name of a case's OpenCL variant.
IMPL = "ctensor.opencl"
_DEVICE = "opencl:0"


def sentinel(dtype: np.dtype) -> Any:
    """The value out= buffers are filled with before a check (NaN, or all ones bits for
    integers); None for other dtypes (left as they are)."""
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "i":
        return -1
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return None


class OpenCL:
    """Device ``opencl:0`` of a loaded OpenCL backend: uploads, out= buffers, ``sync`` and which
    ops the backend registers (``info`` is its ``ctensor.backends()`` entry)."""

    def __init__(self, ctensor: Any, info: Any):
        self.ctensor = ctensor
        self.info = info
        self._device = ctensor.ffi.new("ct_device*")
        self._device.device_type, self._device.device_id = ctensor.lib.CT_DEVICE_OPENCL, 0
        self._supported: dict[str, bool] = {}

    def describe(self) -> str:
        """The backend for the report, e.g. "opencl:0 (opencl 0.1.0, 1 device)"."""
        info = self.info
        return (
            f"{_DEVICE} ({info.name} {info.version}, {info.device_count} "
            f"device{'s' if info.device_count != 1 else ''})"
        )

    def supports(self, op: str) -> bool:
        """Whether the backend registers ``op`` (``op_info(op)["devices"]`` names opencl)."""
        if op not in self._supported:
            self._supported[op] = "opencl" in self.ctensor.op_info(op).get("devices", ())
        return self._supported[op]

    def upload(self, array: np.ndarray) -> Any:
        """A DeviceArray copy of ``array`` on the device."""
        return self.ctensor.asarray(array, device=_DEVICE)

    def empty_like(self, array: np.ndarray) -> Any:
        """An uninitialised DeviceArray with ``array``'s shape and dtype (an out= buffer)."""
        return self.ctensor.DeviceArray.empty(array.shape, array.dtype, _DEVICE)

    def sync(self, result: Any = None) -> Any:
        """Waits for the work queued on the device's default queue; returns ``result``."""
        self.ctensor.check(
            self.ctensor.lib.ct_device_synchronize(self._device[0], self.ctensor.ffi.NULL)
        )
        return result


def fill(buffer: Any, value: Any) -> None:
    """Writes ``value`` into every element of ``buffer``, a compact DeviceArray (an out= buffer
    made by ``OpenCL.empty_like``)."""
    import ctensor

    ffi, lib = ctensor.ffi, ctensor.lib
    host = np.full(buffer.shape, value, dtype=np.dtype(buffer.dtype))
    device = ffi.new("ct_device*")
    device.device_type, device.device_id = buffer.device
    if host.nbytes:
        ctensor.check(
            lib.ct_device_copy_from_host(
                device[0],
                ffi.cast("void*", buffer.data_handle),
                buffer.byte_offset,
                ffi.cast("void*", host.ctypes.data),
                host.nbytes,
                ffi.NULL,
            )
        )


def find(ctensor: Any) -> tuple[OpenCL | None, str]:
    """The OpenCL device when ctensor's OpenCL backend is loaded with a device, else None; and
    the report's text: the device, or why the ``ctensor.opencl`` column is absent."""
    reason = "no opencl backend plugin was found"
    for info in ctensor.backends():
        if info.device_type != "opencl":
            continue
        if info.state == "loaded" and info.device_count > 0:
            device = OpenCL(ctensor, info)
            return device, device.describe()
        reason = f"opencl backend {info.state}: {info.reason or 'no device'}"
    return None, reason
