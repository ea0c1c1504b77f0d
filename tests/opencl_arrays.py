"""Helpers of the OpenCL tests: device copies of NumPy arrays with the same memory layout, and
the backend's presence (the tests need PoCL or another OpenCL runtime; .ci/run installs PoCL)."""

from __future__ import annotations

import ctypes

import numpy as np

import ctensor

DEVICE = "opencl:0"


#: Set (to 1) where the OpenCL tests must run, as .ci/run does: a missing OpenCL runtime or
#: device then fails them instead of skipping them.
REQUIRE_VARIABLE = "CTENSOR_REQUIRE_OPENCL"


def opencl_unavailable_reason() -> str:
    """Why the OpenCL tests cannot run here ('' when the opencl backend is loaded with a
    device): no plugin (built without the OpenCL headers), or the backend's own reason (no
    OpenCL runtime, no platform or ICD, no device)."""
    entries = [b for b in ctensor.backends() if b.name == "opencl"]
    if not entries:
        return "the opencl plugin was not built (no OpenCL headers at build time)"
    if entries[0].state != "loaded":
        return f"opencl backend {entries[0].state}: {entries[0].reason}"
    if entries[0].device_count < 1:
        return "opencl backend loaded but without a device"
    return ""


def require_opencl() -> None:
    """Fails (never skips) with the backend's own reason when it is not loaded."""
    entries = [b for b in ctensor.backends() if b.name == "opencl"]
    assert entries, "the opencl plugin was not found (built without the OpenCL headers?)"
    assert entries[0].state == "loaded", f"opencl backend {entries[0].state}: {entries[0].reason}"


def device_like(view: np.ndarray) -> ctensor.DeviceArray:
    """A DeviceArray with exactly `view`'s strides (zero and negative included) into a device
    buffer holding the bytes `view` spans, at the matching byte offset."""
    view = np.asarray(view)
    itemsize = view.dtype.itemsize
    if view.size == 0:
        return ctensor.asarray(view, device=DEVICE)
    low = high = 0
    for extent, stride in zip(view.shape, view.strides, strict=True):
        span = (extent - 1) * stride
        if span < 0:
            low += span
        else:
            high += span
    pointer = view.__array_interface__["data"][0]
    raw = np.frombuffer(ctypes.string_at(pointer + low, high - low + itemsize), np.uint8)
    buffer = ctensor.asarray(raw, device=DEVICE)
    strides = tuple(stride // itemsize for stride in view.strides)
    return buffer.as_strided(view.shape, strides, -low, dtype=view.dtype)


def host(array) -> np.ndarray:
    """A NumPy copy of a result (DeviceArray or tuple of them)."""
    return np.asarray(array)
