"""Allocating results in the caller's framework, on the caller's device.

The framework of a call is the one of its first array argument: NumPy in, NumPy out; PyTorch in,
PyTorch out (same device); JAX in, JAX out (allocated by NumPy, then handed to JAX without a copy
on the CPU); CuPy in, CuPy out. A raw DLPack capsule, or an array from another producer, gives
NumPy results when it lives on the CPU. Every array allocated here is compact row-major, so no
framework is ever handed negative strides.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ._dtypes import numpy_dtype, torch_dtype
from ._errors import UnsupportedDeviceError
from ._lib import lib

__all__ = ["Framework", "NUMPY", "framework_of"]

_CPU = lib.CT_DEVICE_CPU


class Framework:
    """How to allocate arrays of one framework and hand them to C."""

    name = "numpy"

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        return np.empty(shape, numpy_dtype(dtype))

    def scratch(self, nbytes: int, like: Any) -> Any:
        """Scratch memory (workspace) on the same device as ``like``."""
        return np.empty(nbytes, np.uint8)

    def data_ptr(self, array: Any) -> int:
        return array.__array_interface__["data"][0]

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        """A 0-d array holding a Python scalar (NumPy raises OverflowError when it does not fit)."""
        return np.asarray(value, numpy_dtype(dtype))

    def finish(self, array: Any) -> Any:
        """The result as the caller's framework wants it."""
        return array

    def stream(self, like: Any) -> int:
        """The caller's current stream on ``like``'s device (0: default / CPU)."""
        return 0


class _NumPy(Framework):
    name = "numpy"


class _Torch(Framework):
    name = "torch"

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=torch_dtype(dtype), device=like.device)

    def scratch(self, nbytes: int, like: Any) -> Any:
        torch = sys.modules["torch"]
        return torch.empty(nbytes, dtype=torch.uint8, device=like.device)

    def data_ptr(self, array: Any) -> int:
        return array.data_ptr()

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        torch = sys.modules["torch"]
        if dtype != "bfloat16":
            # NumPy's range check (OverflowError), then a tensor on the right device.
            value = np.asarray(value, numpy_dtype(dtype)).item()
        return torch.tensor(value, dtype=torch_dtype(dtype), device=like.device)

    def stream(self, like: Any) -> int:
        if like.device.type == "cuda":
            torch = sys.modules["torch"]
            return torch.cuda.current_stream(like.device).cuda_stream
        return 0


class _Jax(Framework):
    """JAX arrays are immutable: results are allocated by NumPy on the CPU and handed to JAX
    through DLPack (zero-copy when JAX accepts the alignment)."""

    name = "jax"

    def finish(self, array: Any) -> Any:
        import jax

        try:
            return jax.dlpack.from_dlpack(array)
        except Exception:  # pragma: no cover - alignment or version dependent
            import jax.numpy as jnp

            return jnp.asarray(array)


class _CuPy(Framework):
    name = "cupy"

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        import cupy

        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, numpy_dtype(dtype))

    def scratch(self, nbytes: int, like: Any) -> Any:
        import cupy

        with cupy.cuda.Device(like.device.id):
            return cupy.empty(nbytes, np.uint8)

    def data_ptr(self, array: Any) -> int:
        return array.data.ptr

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        import cupy

        with cupy.cuda.Device(like.device.id):
            return cupy.asarray(np.asarray(value, numpy_dtype(dtype)))

    def stream(self, like: Any) -> int:
        import cupy

        return cupy.cuda.get_current_stream().ptr


NUMPY = _NumPy()
TORCH = _Torch()
JAX = _Jax()
CUPY = _CuPy()

_BY_TYPE: dict[type, Framework | None] = {}


def _framework_of_type(tp: type) -> Framework | None:
    root = tp.__module__.split(".", 1)[0]
    fw: Framework | None = None
    if issubclass(tp, np.ndarray):
        fw = NUMPY
    elif root == "torch":
        fw = TORCH
    elif root in ("jax", "jaxlib"):
        fw = JAX
    elif root == "cupy":
        fw = CUPY
    _BY_TYPE[tp] = fw
    return fw


def framework_of(obj: Any, device: tuple[int, int]) -> Framework:
    """The framework results of a call whose first array argument is ``obj`` (living on the
    DLPack ``device``) are allocated in. Foreign producers and raw capsules get NumPy results on
    the CPU; elsewhere UnsupportedDeviceError (pass ``out=``)."""
    tp = type(obj)
    fw = _BY_TYPE.get(tp, False)
    if fw is False:
        fw = _framework_of_type(tp)
    if fw is not None and (fw is not JAX or device[0] == _CPU):
        return fw
    if device[0] == _CPU:
        return NUMPY
    raise UnsupportedDeviceError(
        f"cannot allocate results for a {tp.__name__} on device type {device[0]} (id "
        f"{device[1]}): ctensor allocates results for NumPy, PyTorch, JAX (CPU) and CuPy arrays; "
        "pass out= to write into your own memory",
        lib.CT_ERROR_UNSUPPORTED_DEVICE,
    )
