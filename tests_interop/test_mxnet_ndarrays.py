"""MXNet 1.9 NDArrays next to ctensor: read and written in place, results as NDArrays, bool
capsules read as bool, and MXNet's own DLPack import unharmed by ``import ctensor``.

Regression tests of issue 29: ``import ctensor`` broke ``mx.nd.from_dlpack`` (``ArgumentError:
argument 1: TypeError: wrong type``: argtypes set on ``ctypes.pythonapi``); NDArrays were
refused (``InputTypeError ... got NDArray``); MXNet's bool capsules (uint, 1 bit) were refused;
``out=`` returned the used capsule instead of an array.
"""

from __future__ import annotations

import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest

import ctensor
from ctensor import ops
from ctensor._dlpack import capsule_tensor
from ctensor._lib import lib
from ctensor._mxnet import assign_result
from ctensor.testing import tensor_address


def data_address(array: mx.nd.NDArray) -> int:
    """The address of an NDArray's first element, as MXNet exports it."""
    return tensor_address(mx.nd.to_dlpack_for_read(array))[0]


@pytest.fixture
def exported(monkeypatch):  # noqa: ANN201
    """The addresses of every NDArray ctensor exports (inputs and outputs), in order."""
    seen: list[int] = []
    for name in ("to_dlpack_for_read", "to_dlpack_for_write"):
        original = getattr(mx.nd, name)

        def spy(array, original=original):  # noqa: ANN001, ANN202
            capsule = original(array)
            seen.append(tensor_address(capsule)[0])
            return capsule

        monkeypatch.setattr(mx.nd, name, spy)
    return seen


# --- MXNet's own DLPack import after import ctensor ----------------------------------------

_FROM_DLPACK_AFTER_IMPORT = """
import ctensor, ctensor.testing
import numpy as np
import mxnet as mx
a = mx.nd.array([1.0, 2.0, 3.0])
b = mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(a))
c = mx.nd.from_dlpack(np.arange(3.0).__dlpack__())
d = mx.nd.from_dlpack(ctensor.asarray(np.arange(2.0), device="cpu").__dlpack__())
del a
print(b.asnumpy().tolist(), c.asnumpy().tolist(), d.asnumpy().tolist())
"""


def test_from_dlpack_works_after_import_ctensor():
    # A fresh process: ctensor first, then MXNet, as a user's script would.
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", _FROM_DLPACK_AFTER_IMPORT],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[1.0, 2.0, 3.0] [0.0, 1.0, 2.0] [0.0, 1.0]"


def test_from_dlpack_works_in_this_process_after_ctensor_calls():
    ops.add(mx.nd.ones(2), mx.nd.ones(2))
    imported = mx.nd.from_dlpack(np.arange(4.0).__dlpack__())
    np.testing.assert_array_equal(imported.asnumpy(), np.arange(4.0))
    device_array = ctensor.asarray(np.arange(3.0), device="cpu")
    np.testing.assert_array_equal(mx.nd.from_dlpack(device_array.__dlpack__()).asnumpy(), [0, 1, 2])


def test_import_ctensor_leaves_ctypes_pythonapi_alone():
    code = (
        "import ctypes, ctensor, ctensor.testing\n"
        "names = ['PyCapsule_New', 'PyCapsule_IsValid', 'PyCapsule_GetPointer']\n"
        "api = ctypes.pythonapi\n"
        "print([getattr(api, n).argtypes for n in names])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[None, None, None]"


# --- NDArrays as inputs, out= and results ----------------------------------------------------


def test_ndarray_inputs_are_read_in_place(exported):
    a = mx.nd.array([1.0, 2.0, 3.0])
    b = mx.nd.array([10.0, 20.0, 30.0])
    result = ops.add(a, b)
    assert exported[:2] == [data_address(a), data_address(b)]
    np.testing.assert_array_equal(result.asnumpy(), [11.0, 22.0, 33.0])


def test_out_ndarray_is_written_in_place_and_returned(exported):
    a = mx.nd.array([1.0, 2.0, 3.0])
    out = mx.nd.zeros(3)
    before = data_address(out)
    result = ops.multiply(a, a, out=out)
    assert result is out
    assert exported[-1] == before == data_address(out)
    np.testing.assert_array_equal(out.asnumpy(), [1.0, 4.0, 9.0])


def test_in_place_update_of_an_ndarray_view():
    base = mx.nd.arange(6).reshape((3, 2))
    row = base[1]  # a view of the same memory
    assert data_address(row) == data_address(base) + 2 * 4
    ops.add(row, mx.nd.full((2,), 100.0), out=row)
    np.testing.assert_array_equal(base.asnumpy(), [[0, 1], [102, 103], [4, 5]])


def test_results_are_ndarrays_written_where_mxnet_allocated_them(exported):
    a = mx.nd.ones((2, 3), dtype="float64")
    result = ops.multiply(a, 2.0)
    assert type(result) is mx.nd.NDArray
    assert result.ctx == a.ctx and result.dtype == np.float64
    assert exported[-1] == data_address(result)  # the output was written in place
    np.testing.assert_array_equal(result.asnumpy(), np.full((2, 3), 2.0))
    # MXNet computes on the result as on any of its arrays.
    np.testing.assert_array_equal((result + 1).asnumpy(), np.full((2, 3), 3.0))


def test_results_of_many_ops_match_mxnet():
    x = mx.nd.array(np.linspace(-2, 2, 12).reshape(3, 4), dtype="float32")
    w = mx.nd.array(np.arange(8.0).reshape(4, 2), dtype="float32")
    np.testing.assert_allclose(ops.matmul(x, w).asnumpy(), mx.nd.dot(x, w).asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(ops.exp(x).asnumpy(), mx.nd.exp(x).asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(
        ops.sum(x, axis=1).asnumpy(), mx.nd.sum(x, axis=1).asnumpy(), rtol=1e-6
    )
    np.testing.assert_allclose(
        ops.softmax(x, axis=-1).asnumpy(), mx.nd.softmax(x, axis=-1).asnumpy(), rtol=1e-6
    )


def test_zero_d_and_empty_results():
    total = ops.sum(mx.nd.array([1.0, 2.0, 3.5]))
    assert isinstance(total, mx.nd.NDArray) and total.shape == ()
    assert float(total.asnumpy()) == 6.5
    nothing = mx.nd.empty((2, 0))  # MXNet's legacy shapes read 0 as unknown in zeros()
    empty = ops.add(nothing, nothing)
    assert isinstance(empty, mx.nd.NDArray) and empty.shape == (2, 0)


def test_mx_np_ndarrays_give_mx_np_results():
    x = mx.np.ones((2, 3))
    result = ops.add(x, x)
    assert type(result) is mx.np.ndarray
    np.testing.assert_array_equal(result.asnumpy(), np.full((2, 3), 2.0))


def test_mixed_ndarray_and_numpy_arguments():
    # The first array argument says where results live.
    assert isinstance(ops.add(mx.nd.ones(2), np.ones(2, np.float32)), mx.nd.NDArray)
    assert isinstance(ops.add(np.ones(2, np.float32), mx.nd.ones(2)), np.ndarray)
    out = np.zeros(2, np.float32)
    assert ops.add(mx.nd.ones(2), mx.nd.ones(2), out=out) is out


def test_out_tuple_of_ndarrays():
    x = mx.nd.array([3.0, 1.0, 2.0])
    values, indices = mx.nd.zeros(2), mx.nd.zeros(2, dtype="int64")
    result = ops.topk(x, k=2, out=(values, indices))
    assert result[0] is values and result[1] is indices
    np.testing.assert_array_equal(values.asnumpy(), [3.0, 2.0])
    np.testing.assert_array_equal(indices.asnumpy(), [0, 2])


def test_result_dtype_mxnet_cannot_hold_is_a_clear_error():
    with pytest.raises(ctensor.UnsupportedDTypeError, match="MXNet NDArrays cannot hold"):
        ops.astype(mx.nd.ones(2), dtype="uint16")
    out = np.zeros(2, np.uint16)
    assert ops.astype(mx.nd.ones(2), dtype="uint16", out=out) is out
    np.testing.assert_array_equal(out, [1, 1])


def test_sparse_ndarrays_are_refused():
    sparse = mx.nd.sparse.zeros("csr", (2, 2))
    with pytest.raises(ctensor.InvalidArgumentError, match="sparse"):
        ops.negative(sparse)


# --- bool ------------------------------------------------------------------------------------


def test_mxnet_exports_bool_as_one_bit_unsigned():
    capsule = mx.nd.to_dlpack_for_read(mx.nd.array([1, 0], dtype="bool"))
    tensor = capsule_tensor(capsule)
    assert (tensor.dtype.code, tensor.dtype.bits) == (lib.CT_DTYPE_UINT, 1)


def test_bool_capsules_are_read_as_bool():
    flags = mx.nd.array([1, 0, 1], dtype="bool")
    result = ops.logical_not(mx.nd.to_dlpack_for_read(flags))  # a raw capsule: NumPy result
    assert result.dtype == np.bool_
    np.testing.assert_array_equal(result, [False, True, False])


def test_bool_ndarrays_in_results_and_out():
    flags = mx.nd.array([1, 0, 1], dtype="bool")
    np.testing.assert_array_equal(ops.logical_not(flags).asnumpy(), [False, True, False])
    chosen = ops.where(flags, mx.nd.array([1.0, 2.0, 3.0]), mx.nd.zeros(3))
    np.testing.assert_array_equal(chosen.asnumpy(), [1.0, 0.0, 3.0])
    less = ops.less(mx.nd.array([1.0, 5.0]), mx.nd.array([2.0, 2.0]))
    assert isinstance(less, mx.nd.NDArray) and less.dtype == np.bool_
    np.testing.assert_array_equal(less.asnumpy(), [True, False])
    out = mx.nd.zeros(2, dtype="bool")
    assert ops.greater(mx.nd.array([1.0, 5.0]), mx.nd.array([2.0, 2.0]), out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), [False, True])


# --- the helper for MXNet operators ---------------------------------------------------------


@pytest.mark.parametrize(
    ("req", "expected"), [("null", 1.0), ("write", 5.0), ("inplace", 5.0), ("add", 6.0)]
)
def test_assign_result_follows_req(req, expected):
    dst = mx.nd.ones(3)
    assign_result(dst, req, ops.add(mx.nd.full((3,), 2.0), mx.nd.full((3,), 3.0)))
    np.testing.assert_array_equal(dst.asnumpy(), np.full(3, expected))


def test_assign_result_refuses_an_unknown_req():
    with pytest.raises(ctensor.InvalidArgumentError, match="req"):
        assign_result(mx.nd.ones(1), "overwrite", mx.nd.ones(1))
