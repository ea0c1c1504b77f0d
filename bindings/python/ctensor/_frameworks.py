"""Allocating results in the caller's framework, on the caller's device.

The framework of a call is the one of its first array argument: NumPy in, NumPy out; PyTorch in,
PyTorch out (same device); JAX in, JAX out (allocated by NumPy, then handed to JAX without a copy
on the CPU); CuPy in, CuPy out; MXNet in, MXNet out (same context, see _mxnet); pyopencl in,
pyopencl out (same queue); ctensor's DeviceArray in, DeviceArray out (same device). A raw DLPack
capsule, or an array from another producer, gives NumPy results when it lives on the CPU. Every
array allocated here is compact row-major (PyTorch results that keep a channels_last input's
memory format are dense too, see _torch_rules), so no framework is ever handed negative
strides.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _mxnet
from ._device_array import is_pyopencl_array
from ._dtypes import KEY_NAME, numpy_dtype, torch_dtype
from ._errors import UnsupportedDeviceError
from ._lib import ffi, lib
from ._numpy_export import capsule_tensor, export_numpy
from ._scratch import host_scratch

__all__ = ["Framework", "NUMPY", "framework_of", "framework_of_type"]

_CPU = lib.CT_DEVICE_CPU


class Framework:
    """How to allocate arrays of one framework and hand them to C."""

    name = "numpy"
    #: Whether results go through finish() (JAX) before they are returned.
    finishes = False

    def capsule(self, array: Any) -> Any:
        """A DLPack capsule of an array this framework allocated (writable, compact)."""
        return array.__dlpack__()

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        return np.empty(shape, numpy_dtype(dtype))

    def scratch(self, nbytes: int, like: Any) -> Any:
        """Scratch memory (workspace) on the same device as ``like``."""
        return host_scratch(nbytes)

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

    def fast_allocator(self, like: Any) -> tuple[Any, dict[int, Any]] | None:
        """(prepare, {dtype key: dtype object}) for the C fast path (ctpy_fast_new) to allocate
        results itself; None where it must not. ``prepare(shape, dtype)`` answers how to allocate
        an array: ``(callable, args, kwargs or None)``, which the fast path calls, and keeps in
        its output cache entries for later calls whose inputs have the same layouts."""
        return None


class _NumPy(Framework):
    name = "numpy"

    def capsule(self, array: Any) -> Any:
        return export_numpy(array, True, _result)  # bool before NumPy 1.25, bfloat16

    def fast_allocator(self, like: Any) -> tuple[Any, dict[int, Any]] | None:
        return _numpy_empty_call, {
            key: np.dtype(name) for key, name in KEY_NAME.items() if name != "bfloat16"
        }


class _Torch(Framework):
    name = "torch"

    def __init__(self) -> None:
        self._dtypes: dict[str, Any] = {}
        self._to_dlpack: Any = None

    def _dtype(self, name: str) -> Any:
        dtype = self._dtypes.get(name)
        if dtype is None:
            dtype = self._dtypes[name] = torch_dtype(name)
        return dtype

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        empty = sys.modules["torch"].empty
        return empty(*_torch_sizes(shape), dtype=self._dtype(dtype), device=like.device)

    def scratch(self, nbytes: int, like: Any) -> Any:
        torch = sys.modules["torch"]
        if like.device.type == "cpu":
            return torch.from_numpy(host_scratch(nbytes))
        return torch.empty(nbytes, dtype=torch.uint8, device=like.device)

    def data_ptr(self, array: Any) -> int:
        return array.data_ptr()

    def capsule(self, array: Any) -> Any:
        to_dlpack = self._to_dlpack
        if to_dlpack is None:
            to_dlpack = self._to_dlpack = _torch_to_dlpack()
        return to_dlpack(array)

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        torch = sys.modules["torch"]
        if dtype != "bfloat16":
            # NumPy's range check (OverflowError), then a tensor on the right device.
            value = np.asarray(value, numpy_dtype(dtype)).item()
        if like.device.type == "cuda":
            # Filled on the device, on torch's current stream: no copy from host memory (which
            # would also put a host pointer into a captured CUDA graph).
            try:
                return torch.full((), value, dtype=self._dtype(dtype), device=like.device)
            except RuntimeError:  # a dtype torch cannot fill on CUDA (its unsigned types)
                pass
        return torch.tensor(value, dtype=self._dtype(dtype), device=like.device)

    def fast_allocator(self, like: Any) -> tuple[Any, dict[int, Any]] | None:
        torch = sys.modules["torch"]
        empty = torch.empty
        device = like.device

        def prepare(shape: tuple[int, ...], dtype: Any) -> tuple[Any, tuple, dict]:
            return empty, _torch_sizes(shape), {"dtype": dtype, "device": device}

        return prepare, {key: self._dtype(name) for key, name in KEY_NAME.items()}

    def stream(self, like: Any) -> int:
        if like.device.type == "cuda":
            torch = sys.modules["torch"]
            return torch.cuda.current_stream(like.device).cuda_stream
        return 0


def _aligned_empty(shape: tuple[int, ...], dtype: np.dtype, align: int = 64) -> np.ndarray:
    """A compact NumPy array whose data is ``align``-byte aligned (JAX adopts such buffers
    without copying)."""
    count = 1
    for extent in shape:
        count *= extent
    nbytes = count * dtype.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    offset = -raw.__array_interface__["data"][0] % align
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


class _Bfloat16Buffer:
    """A NumPy uint16 array standing for bfloat16 data (NumPy has no bfloat16): C sees it as
    bfloat16 through a capsule whose dtype is rewritten, and JAX adopts it as bfloat16."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def __dlpack__(self, **kwargs: Any) -> Any:
        capsule = self.array.__dlpack__()
        managed = ffi.cast(
            "DLManagedTensor*",
            lib.ctpy_capsule_get_pointer(ffi.cast("void*", id(capsule)), b"dltensor"),
        )
        managed.dl_tensor.dtype.code = lib.CT_DTYPE_BFLOAT
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (lib.CT_DEVICE_CPU, 0)


class _Jax(Framework):
    """JAX arrays are immutable: results are allocated by NumPy on the CPU, 64-byte aligned, and
    handed to JAX through DLPack, which adopts them without a copy."""

    name = "jax"
    finishes = True

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        if dtype == "bfloat16":
            return _Bfloat16Buffer(_aligned_empty(shape, np.dtype(np.uint16)))
        return _aligned_empty(shape, numpy_dtype(dtype))

    def capsule(self, array: Any) -> Any:
        if isinstance(array, np.ndarray):
            return export_numpy(array, True, _result)
        return array.__dlpack__()

    def data_ptr(self, array: Any) -> int:
        if isinstance(array, _Bfloat16Buffer):
            array = array.array
        return array.__array_interface__["data"][0]

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        if dtype == "bfloat16":
            buffer = _Bfloat16Buffer(_aligned_empty((), np.dtype(np.uint16)))
            as_float32 = np.asarray(value, np.float32).view(np.uint32)
            # Round to nearest even, as a float32 -> bfloat16 conversion does.
            rounded = (as_float32 + 0x7FFF + ((as_float32 >> 16) & 1)) >> 16
            buffer.array[()] = rounded.astype(np.uint16)
            return buffer
        return np.asarray(value, numpy_dtype(dtype))

    def finish(self, array: Any) -> Any:
        import jax.dlpack

        return jax.dlpack.from_dlpack(array)


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

        exact = np.asarray(value, numpy_dtype(dtype))[()]  # NumPy's range check, exact value
        with cupy.cuda.Device(like.device.id):
            # Filled on the device, on the current stream: no copy from host memory (which
            # would also put a host pointer into a captured CUDA graph).
            return cupy.full((), exact, exact.dtype)

    def capsule(self, array: Any) -> Any:
        # A result this framework just allocated from CuPy's pool on its current stream of the
        # device, which is the stream the call runs on (see _streams): nothing to order, which
        # DLPack's stream -1 says. A bare __dlpack__() would name the legacy default stream,
        # which CuPy would make wait for its current one whenever the two differ.
        return array.__dlpack__(stream=-1)

    def stream(self, like: Any) -> int:
        import cupy

        return cupy.cuda.get_current_stream(like.device.id).ptr


class _DeviceArrays(Framework):
    """ctensor's own DeviceArray (device memory through ct_device_allocate)."""

    name = "ctensor"

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        from ._device_array import DeviceArray

        return DeviceArray.empty(shape, dtype, like.device)

    def scratch(self, nbytes: int, like: Any) -> Any:
        return self.empty((nbytes,), "uint8", like)

    def data_ptr(self, array: Any) -> int:
        return array.data_handle

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        from ._device_array import asarray

        return asarray(np.asarray(value, numpy_dtype(dtype)), like.device)


class _PyOpenCL(Framework):
    """pyopencl.array.Array: results on the input's queue; ops run on that queue."""

    name = "pyopencl"

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        import pyopencl.array

        return pyopencl.array.empty(like.queue, shape, numpy_dtype(dtype))

    def scratch(self, nbytes: int, like: Any) -> Any:
        return self.empty((nbytes,), "uint8", like)

    def capsule(self, array: Any) -> Any:
        from ._device_array import opencl_capsule

        return opencl_capsule(array)

    def data_ptr(self, array: Any) -> int:
        return array.base_data.int_ptr + array.offset if array.size else 0

    def scalar(self, value: Any, dtype: str, like: Any) -> Any:
        import pyopencl.array

        return pyopencl.array.to_device(like.queue, np.asarray(value, numpy_dtype(dtype)))

    def stream(self, like: Any) -> int:
        return like.queue.int_ptr if like.queue is not None else 0


class _MXNet(Framework):
    """MXNet NDArrays (see _mxnet): results allocated by MXNet on the first array's context and
    written in place through ``mx.nd.to_dlpack_for_write``."""

    name = "mxnet"

    def empty(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        return _mxnet.empty(shape, dtype, like)

    def capsule(self, array: Any) -> Any:
        return _mxnet.write_capsule(array, _result)

    def data_ptr(self, array: Any) -> int:
        if isinstance(array, np.ndarray):  # host scratch
            return array.__array_interface__["data"][0]
        capsule = self.capsule(array)
        tensor = capsule_tensor(capsule)
        return int(ffi.cast("uintptr_t", tensor.data)) + tensor.byte_offset

    def scratch(self, nbytes: int, like: Any) -> Any:
        if like.ctx.device_type == "cpu":
            return host_scratch(nbytes)
        return _mxnet.empty((nbytes,), "uint8", like)


def _result() -> str:
    return "a result array"


def _numpy_empty_call(shape: tuple[int, ...], dtype: np.dtype) -> tuple[Any, tuple, None]:
    """How the fast path allocates a NumPy result: np.empty(shape, dtype)."""
    return np.empty, (shape, dtype), None


def _torch_sizes(shape: tuple[int, ...]) -> tuple:
    """torch.empty's positional arguments for ``shape``: the sizes themselves where there are
    any, which torch 2.13 parses 1.1 us faster than a tuple (1.5 against 2.6 us for 8 elements,
    most of a tiny call without out=)."""
    return shape if shape else (shape,)


def _torch_to_dlpack() -> Any:
    import torch.utils.dlpack

    return torch.utils.dlpack.to_dlpack


NUMPY = _NumPy()
MXNET = _MXNet()
TORCH = _Torch()
JAX = _Jax()
CUPY = _CuPy()
DEVICE_ARRAYS = _DeviceArrays()
PYOPENCL = _PyOpenCL()

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
    elif root == "ctensor" and tp.__name__ == "DeviceArray":
        fw = DEVICE_ARRAYS
    elif root == "pyopencl" and is_pyopencl_array(tp):
        fw = PYOPENCL
    elif root == "mxnet" and _mxnet.is_ndarray_type(tp):
        fw = MXNET
    _BY_TYPE[tp] = fw
    return fw


def framework_of_type(tp: type) -> Framework | None:
    """The framework that allocates results for arrays of type ``tp``, or None for a producer
    ctensor allocates nothing for (a raw capsule, a foreign array type)."""
    fw = _BY_TYPE.get(tp, False)
    if fw is False:
        fw = _framework_of_type(tp)
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
        f"{device[1]}): ctensor allocates results for NumPy, PyTorch, JAX (CPU), CuPy, MXNet, "
        "pyopencl and ctensor.DeviceArray arrays; "
        "pass out= to write into your own memory",
        lib.CT_ERROR_UNSUPPORTED_DEVICE,
    )
