"""Arrays in device memory that ctensor owns (``DeviceArray``), and pyopencl interop.

``ctensor.asarray(x, device="opencl:0")`` uploads a host array into a ``DeviceArray``: a compact
row-major buffer allocated through ``ct_device_allocate`` on the backend that serves the device
(for OpenCL, ``data`` is a ``cl_mem``). It exports itself through DLPack (``__dlpack__``,
``__dlpack_device__``), so ctensor's ops read it without copies and allocate their results as
``DeviceArray`` objects on the same device; ``numpy.asarray(arr)`` or ``arr.to_numpy()``
downloads it.

``pyopencl.array.Array`` objects have no ``__dlpack__``; ctensor reads them (inputs and ``out=``)
as DLPack views of their ``cl_mem`` (``base_data``) at their byte ``offset`` with their strides,
runs on their queue, and allocates results as pyopencl arrays on that queue: no copy through
the host in either direction.
"""

from __future__ import annotations

import ctypes
import re
import sys
from typing import Any

import numpy as np

from ._dtypes import code_bits, numpy_dtype, to_dtype_name
from ._errors import InvalidArgumentError, check
from ._lib import ffi, lib
from ._pyapi import capsule_get_pointer, capsule_is_valid, capsule_new

__all__ = ["DeviceArray", "asarray", "opencl_capsule", "parse_device"]

_DEVICE_NAMES = {
    "cpu": lib.CT_DEVICE_CPU,
    "cuda": lib.CT_DEVICE_CUDA,
    "opencl": lib.CT_DEVICE_OPENCL,
}
_DEVICE_PATTERN = re.compile(r"^([a-z]+)(?::(\d+))?$")


def parse_device(device: Any) -> tuple[int, int]:
    """A DLPack (device_type, device_id) from "opencl:0", "opencl", "cpu" or such a tuple."""
    if isinstance(device, tuple) and len(device) == 2:
        return (int(device[0]), int(device[1]))
    match = _DEVICE_PATTERN.match(str(device).strip().lower())
    if not match or match.group(1) not in _DEVICE_NAMES:
        raise InvalidArgumentError(
            f"unknown device {device!r}: expected 'cpu', 'opencl', 'opencl:<index>' or "
            "'cuda:<index>'"
        )
    return (_DEVICE_NAMES[match.group(1)], int(match.group(2) or 0))


def _ct_device(device: tuple[int, int]) -> Any:
    value = ffi.new("ct_device*")
    value.device_type, value.device_id = device
    return value[0]


class _Buffer:
    """Owns one ct_device_allocate allocation; frees it when the last array using it goes."""

    __slots__ = ("device", "handle", "nbytes")

    def __init__(self, device: tuple[int, int], nbytes: int):
        self.device = device
        self.nbytes = nbytes
        self.handle = 0
        data = ffi.new("void**")
        check(lib.ct_device_allocate(_ct_device(device), nbytes, data))
        self.handle = int(ffi.cast("uintptr_t", data[0]))

    def __del__(self) -> None:
        if self.handle:
            lib.ct_device_free(_ct_device(self.device), ffi.cast("void*", self.handle))
            self.handle = 0


# --- DLPack capsules of device memory ------------------------------------------------------

_NAME = b"dltensor"

# Managed tensors handed out and not yet released: address -> what keeps them (and the memory
# they view) alive. The deleter (a consumer is done) or the capsule's destructor (nobody
# consumed it) drops the entry.
_LIVE: dict[int, tuple] = {}


@ffi.callback("void(DLManagedTensor*)")
def _deleter(managed: Any) -> None:
    _LIVE.pop(int(ffi.cast("uintptr_t", managed)), None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule: int) -> None:
    if capsule_is_valid(capsule, _NAME):
        _LIVE.pop(capsule_get_pointer(capsule, _NAME) or 0, None)


_DESTRUCTOR = ctypes.cast(_capsule_destructor, ctypes.c_void_p)


def _capsule(
    handle: int,
    device: tuple[int, int],
    shape: tuple[int, ...],
    dtype: str,
    strides: tuple[int, ...] | None,
    byte_offset: int,
    owner: Any,
) -> Any:
    """A legacy "dltensor" capsule viewing device memory ``handle`` (kept alive by ``owner``)."""
    managed = ffi.new("DLManagedTensor*")
    shape_array = ffi.new("int64_t[]", list(shape) or [0])
    strides_array = ffi.new("int64_t[]", list(strides) or [0]) if strides is not None else None
    tensor = managed.dl_tensor
    tensor.data = ffi.cast("void*", handle)
    tensor.device.device_type, tensor.device.device_id = device
    tensor.ndim = len(shape)
    tensor.dtype.code, tensor.dtype.bits = code_bits(dtype)
    tensor.dtype.lanes = 1
    tensor.shape = shape_array
    tensor.strides = strides_array if strides_array is not None else ffi.NULL
    tensor.byte_offset = byte_offset
    managed.manager_ctx = ffi.NULL
    managed.deleter = _deleter
    address = int(ffi.cast("uintptr_t", managed))
    _LIVE[address] = (managed, shape_array, strides_array, owner)
    return capsule_new(address, _NAME, _DESTRUCTOR.value)


# --- ctensor's own device arrays ---------------------------------------------------------------


class DeviceArray:
    """An array in device memory owned by ctensor (see the module docstring): compact row-major
    as ``empty``/``asarray`` make it, or a strided view into the same buffer (``as_strided``)."""

    __slots__ = ("_buffer", "shape", "dtype", "device", "strides", "byte_offset", "__weakref__")

    def __init__(
        self,
        buffer: _Buffer,
        shape: tuple[int, ...],
        dtype: str,
        strides: tuple[int, ...] | None = None,
        byte_offset: int = 0,
    ):
        self._buffer = buffer
        self.shape = tuple(int(n) for n in shape)
        self.dtype = dtype
        self.device = buffer.device
        #: element strides (None: compact row-major), as DLPack's
        self.strides = None if strides is None else tuple(int(s) for s in strides)
        #: bytes from the start of the buffer to the first element, as DLPack's
        self.byte_offset = int(byte_offset)

    def as_strided(
        self,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        byte_offset: int = 0,
        dtype: Any = None,
    ) -> DeviceArray:
        """A view of the same buffer: element ``i`` at ``byte_offset + itemsize * sum(i * s)``
        (strides in elements, zero and negative allowed), reading the bytes as ``dtype``
        (default: this array's). The view must stay in the buffer."""
        name = self.dtype if dtype is None else to_dtype_name(dtype)
        itemsize = code_bits(name)[1] // 8
        low = high = byte_offset
        if all(int(n) > 0 for n in shape):
            for extent, stride in zip(shape, strides, strict=True):
                span = (int(extent) - 1) * int(stride) * itemsize
                low, high = (low + span, high) if span < 0 else (low, high + span)
            if low < 0 or high + itemsize > self._buffer.nbytes:
                raise InvalidArgumentError(
                    f"a view of shape {tuple(shape)}, strides {tuple(strides)} and byte offset "
                    f"{byte_offset} reaches outside the buffer of {self._buffer.nbytes} bytes"
                )
        return DeviceArray(self._buffer, tuple(shape), name, tuple(strides), byte_offset)

    @classmethod
    def empty(cls, shape: tuple[int, ...], dtype: Any, device: Any) -> DeviceArray:
        """An uninitialised array on ``device`` ("opencl:0" or a DLPack tuple)."""
        name = to_dtype_name(dtype)
        itemsize = code_bits(name)[1] // 8
        count = 1
        for extent in shape:
            count *= int(extent)
        return cls(_Buffer(parse_device(device), count * itemsize), tuple(shape), name)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    @property
    def nbytes(self) -> int:
        return self.size * (code_bits(self.dtype)[1] // 8)

    @property
    def data_handle(self) -> int:
        """The device handle (for OpenCL, the cl_mem) as an int; 0 for an empty array."""
        return self._buffer.handle

    def __repr__(self) -> str:
        return (
            f"DeviceArray(shape={self.shape}, dtype={self.dtype}, "
            f"device={_device_text(self.device)})"
        )

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Any = None,
        dl_device: Any = None,
        copy: Any = None,
    ) -> Any:
        if dl_device is not None and tuple(dl_device) != self.device:
            raise BufferError(
                f"a DeviceArray on {_device_text(self.device)} cannot be exported "
                f"to device {tuple(dl_device)} without a copy"
            )
        if copy:
            raise BufferError("DeviceArray exports views only (copy=True is not supported)")
        return _capsule(
            self._buffer.handle,
            self.device,
            self.shape,
            self.dtype,
            self.strides,
            self.byte_offset,
            self,
        )

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the array (waits for work queued on the device's default queue)."""
        dtype = numpy_dtype(self.dtype)
        if self.strides is None and self.byte_offset == 0:
            result = np.empty(self.shape, dtype)
            self._download(result, result.nbytes)
            return result
        # A view: the whole buffer, then the same view of the host copy.
        raw = np.empty(self._buffer.nbytes, np.uint8)
        self._download(raw, raw.nbytes)
        if self.size == 0:
            return np.empty(self.shape, dtype)
        strides = self.strides
        if strides is None:
            strides, step = [], 1
            for extent in reversed(self.shape):
                strides.insert(0, step)
                step *= extent
        itemsize = dtype.itemsize
        first = raw[self.byte_offset : self.byte_offset + itemsize].view(dtype)
        view = np.lib.stride_tricks.as_strided(
            first, self.shape, tuple(s * itemsize for s in strides)
        )
        return np.array(view, copy=True)

    def _download(self, host: np.ndarray, nbytes: int) -> None:
        if nbytes:
            check(
                lib.ct_device_copy_to_host(
                    _ct_device(self.device),
                    ffi.cast("void*", host.ctypes.data),
                    ffi.cast("void*", self._buffer.handle),
                    0,
                    nbytes,
                    ffi.NULL,
                )
            )

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        result = self.to_numpy()
        return result if dtype is None else result.astype(dtype, copy=False)


def _device_text(device: tuple[int, int]) -> str:
    for name, code in _DEVICE_NAMES.items():
        if code == device[0]:
            return f"{name}:{device[1]}"
    return str(device)


def asarray(x: Any, device: Any = None, dtype: Any = None) -> Any:
    """``x`` on ``device``: a DeviceArray for a device such as "opencl:0" (uploaded from host
    data, or ``x`` itself when it is already there), a NumPy array for "cpu" or None."""
    target = parse_device(device) if device is not None else (lib.CT_DEVICE_CPU, 0)
    if isinstance(x, DeviceArray):
        if target == x.device and (dtype is None or to_dtype_name(dtype) == x.dtype):
            return x
        x = x.to_numpy()
    host = np.asarray(x, dtype=numpy_dtype(to_dtype_name(dtype)) if dtype is not None else None)
    if target[0] == lib.CT_DEVICE_CPU:
        return host
    host = np.ascontiguousarray(host)
    name = to_dtype_name(host.dtype)
    array = DeviceArray.empty(host.shape, name, target)
    if host.nbytes:
        check(
            lib.ct_device_copy_from_host(
                _ct_device(target),
                ffi.cast("void*", array.data_handle),
                0,
                ffi.cast("void*", host.ctypes.data),
                host.nbytes,
                ffi.NULL,
            )
        )
    return array


# --- pyopencl arrays --------------------------------------------------------------------------


def is_pyopencl_array(tp: type) -> bool:
    """Whether ``tp`` is pyopencl.array.Array (or a subclass)."""
    module = sys.modules.get("pyopencl.array")
    return module is not None and issubclass(tp, module.Array)


def opencl_device_id(cl_device: Any) -> int:
    """The ctensor OpenCL device index (devices of all platforms, in order) of a
    pyopencl.Device."""
    import pyopencl

    index = 0
    for platform in pyopencl.get_platforms():
        for candidate in platform.get_devices():
            if candidate.int_ptr == cl_device.int_ptr:
                return index
            index += 1
    raise InvalidArgumentError(f"the pyopencl device {cl_device.name!r} is not one ctensor lists")


_DEVICE_IDS: dict[int, int] = {}


def opencl_capsule(array: Any) -> Any:
    """A DLPack capsule viewing a pyopencl array in place: its cl_mem, byte offset and strides."""
    queue_device = array.queue.device if array.queue is not None else array.context.devices[0]
    device_id = _DEVICE_IDS.get(queue_device.int_ptr)
    if device_id is None:
        device_id = _DEVICE_IDS[queue_device.int_ptr] = opencl_device_id(queue_device)
    itemsize = array.dtype.itemsize
    if any(stride % itemsize for stride in array.strides):
        raise InvalidArgumentError("a pyopencl array whose strides are not whole elements")
    strides = tuple(stride // itemsize for stride in array.strides)
    base = array.base_data
    handle = base.int_ptr if base is not None else 0
    return _capsule(
        handle,
        (lib.CT_DEVICE_OPENCL, device_id),
        tuple(array.shape),
        to_dtype_name(array.dtype),
        strides,
        int(array.offset),
        array,
    )
