"""Device arrays across the boundary: ctensor.asarray / DeviceArray (upload, download, DLPack
export), and pyopencl arrays as inputs and out= read in place (same cl_mem, their byte offset
and strides), with results on the caller's queue."""

from __future__ import annotations

import numpy as np
import pyopencl
import pyopencl.array as cla
import pytest
from opencl_arrays import DEVICE, require_opencl

import ctensor
from ctensor._device_array import opencl_capsule
from ctensor._dlpack import capsule_tensor


def setup_module() -> None:
    require_opencl()


@pytest.fixture(scope="module")
def queue():
    context = pyopencl.Context(devices=[pyopencl.get_platforms()[0].get_devices()[0]])
    return pyopencl.CommandQueue(context)


def test_asarray_round_trip_for_every_dtype() -> None:
    for dtype in ["bool", "int32", "int64", "float16", "float32", "float64", "uint8"]:
        host = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
        array = ctensor.asarray(host, device=DEVICE)
        assert isinstance(array, ctensor.DeviceArray)
        assert array.shape == (3, 4) and array.dtype == dtype and array.device == (4, 0)
        assert array.__dlpack_device__() == (4, 0)
        np.testing.assert_array_equal(np.asarray(array), host)
        np.testing.assert_array_equal(array.to_numpy(), host)


def test_asarray_device_strings() -> None:
    host = np.arange(3, dtype=np.float32)
    assert isinstance(ctensor.asarray(host, device="opencl"), ctensor.DeviceArray)
    back = ctensor.asarray(ctensor.asarray(host, device="opencl:0"), device="cpu")
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, host)
    with pytest.raises(ctensor.InvalidArgumentError, match="unknown device"):
        ctensor.asarray(host, device="tpu:0")
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.asarray(host, device="opencl:7")


def test_device_array_exports_its_cl_mem_and_offset() -> None:
    base = ctensor.asarray(np.arange(10, dtype=np.float32), device=DEVICE)
    view = base.as_strided((2, 2), (-3, 1), byte_offset=24)
    tensor = capsule_tensor(view.__dlpack__())
    assert int(ctensor.ffi.cast("uintptr_t", tensor.data)) == base.data_handle
    assert tensor.byte_offset == 24 and tensor.device.device_type == 4
    assert [tensor.strides[0], tensor.strides[1]] == [-3, 1]
    np.testing.assert_array_equal(view.to_numpy(), [[6, 7], [3, 4]])
    with pytest.raises(ctensor.InvalidArgumentError, match="outside the buffer"):
        base.as_strided((3,), (4,), byte_offset=8)


def test_pyopencl_views_are_read_in_place(queue) -> None:
    host = np.arange(20, dtype=np.float32)
    whole = cla.to_device(queue, host)
    view = whole[5:15:2]
    assert view.offset == 20
    tensor = capsule_tensor(opencl_capsule(view))
    assert int(ctensor.ffi.cast("uintptr_t", tensor.data)) == whole.base_data.int_ptr
    assert tensor.byte_offset == 20 and tensor.strides[0] == 2
    result = ctensor.ops.multiply(view, view)
    assert isinstance(result, cla.Array) and result.queue is queue
    np.testing.assert_array_equal(result.get(), host[5:15:2] ** 2)


def test_pyopencl_out_writes_into_a_view_of_a_larger_buffer(queue) -> None:
    a = cla.to_device(queue, np.arange(6, dtype=np.float32))
    out = cla.to_device(queue, np.full(16, -1, np.float32))
    target = out[4:10]
    handle = out.base_data.int_ptr
    returned = ctensor.ops.add(a, a, out=target)
    assert returned is target and out.base_data.int_ptr == handle
    expected = np.full(16, -1, np.float32)
    expected[4:10] = np.arange(6) * 2
    np.testing.assert_array_equal(out.get(), expected)


def test_pyopencl_ops_run_on_the_arrays_queue(queue) -> None:
    # Work queued on the caller's queue (an unfinished write) is ordered before the op, which
    # runs on that queue (the binding passes it as the stream).
    x = cla.empty(queue, 1 << 16, np.float32)
    x.fill(3.0)
    total = ctensor.ops.sum(x)
    assert float(total.get()) == 3.0 * (1 << 16)


def test_pyopencl_dynamic_and_reduction_results(queue) -> None:
    x = cla.to_device(queue, np.array([3, 1, 3, 0, 2], np.int64))
    np.testing.assert_array_equal(ctensor.ops.unique_values(x).get(), [0, 1, 2, 3])
    (indices,) = ctensor.ops.nonzero(x)
    np.testing.assert_array_equal(indices.get(), [0, 1, 2, 4])
    assert int(ctensor.ops.argmax(x).get()) == 0


def test_mixing_device_and_host_arrays_is_refused() -> None:
    x = ctensor.asarray(np.ones(3, np.float32), device=DEVICE)
    with pytest.raises(ctensor.DeviceMismatchError):
        ctensor.ops.add(x, np.ones(3, np.float32))
