"""NumPy from 1.23 on: out=, read-only inputs, bool, bfloat16 (ml_dtypes), masked arrays, DLPack
capsule versions and scalar promotion behave the same on every NumPy version.

Regression tests of issue 29: before NumPy 2.1 every out= failed (``__dlpack__() got an
unexpected keyword argument 'max_version'``) and read-only inputs failed; ml_dtypes bfloat16
arrays were refused; a capsule of DLPack major version 2 was read as 1.x; masked arrays lost
their mask.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ctensor
from ctensor import ops
from ctensor._dlpack import export_numpy
from ctensor._lib import lib
from ctensor.testing import CountedCapsule, capsule_name, tensor_address

BF16 = np.dtype(ml_dtypes.bfloat16)


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (same memory)."""
    view = array.view()
    view.flags.writeable = False
    return view


def named(text: str):  # noqa: ANN201 - the `what` callback of export_numpy
    return lambda: text


# --- out= ---------------------------------------------------------------------------------


def test_out_is_written_in_place_and_returned():
    a, b = np.arange(6.0).reshape(2, 3), np.full((2, 3), 2.0)
    out = np.empty((2, 3))
    result = ops.multiply(a, b, out=out)
    assert result is out
    np.testing.assert_array_equal(out, a * b)


def test_out_of_a_call_with_attributes():
    a = np.arange(12.0).reshape(3, 4)
    out = np.empty(4)
    assert ops.sum(a, axis=0, out=out) is out
    np.testing.assert_array_equal(out, a.sum(axis=0))


def test_out_that_is_a_strided_view():
    base = np.zeros((4, 6))
    view = base[::2, 1::2]
    ops.add(np.ones((2, 3)), np.full((2, 3), 4.0), out=view)
    np.testing.assert_array_equal(base[::2, 1::2], np.full((2, 3), 5.0))
    assert base.sum() == 30.0  # nothing else written


def test_out_with_promotion_and_a_python_scalar():
    a = np.arange(4, dtype=np.int32)
    out = np.empty(4, np.float64)
    assert ops.add(a, 0.5, out=out) is out
    np.testing.assert_array_equal(out, a + 0.5)


def test_out_tuple_of_a_multi_output_op():
    x = np.array([3.0, 1.0, 2.0])
    values, indices = np.empty(2), np.empty(2, np.int64)
    result = ops.topk(x, k=2, out=(values, indices))
    assert result[0] is values and result[1] is indices
    np.testing.assert_array_equal(values, [3.0, 2.0])
    np.testing.assert_array_equal(indices, [0, 2])


def test_matmul_into_out_on_every_numpy():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    out = np.empty((2, 4))
    assert ops.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b)


# --- read-only arrays --------------------------------------------------------------------------


def test_read_only_inputs_on_the_fast_and_general_paths():
    a = read_only(np.arange(6.0).reshape(2, 3))
    b = read_only(np.full((2, 3), 3.0))
    np.testing.assert_array_equal(ops.add(a, b), a + b)
    np.testing.assert_array_equal(ops.sum(a, axis=1), a.sum(axis=1))  # attributes
    np.testing.assert_allclose(ops.matmul(a, b.T), a @ b.T)
    np.testing.assert_array_equal(ops.add(a, 1), a + 1)  # a Python scalar


def test_read_only_broadcast_view_is_read_in_place():
    row = np.arange(3.0)
    wide = np.broadcast_to(row, (4, 3))  # read-only, zero strides
    assert not wide.flags.writeable
    np.testing.assert_array_equal(ops.multiply(wide, np.ones((4, 3))), np.tile(row, (4, 1)))


def test_read_only_input_is_exported_without_a_copy():
    a = read_only(np.arange(10.0)[::2])
    capsule = export_numpy(a, False, named("x"))
    data, shape, strides = tensor_address(capsule)
    assert data == address(a)
    assert shape == (5,) and strides == (2,)


def test_read_only_out_is_refused_and_untouched():
    frozen = read_only(np.zeros(3))
    with pytest.raises(ctensor.ReadOnlyOutputError, match="read-only"):
        ops.add(np.ones(3), np.ones(3), out=frozen)
    np.testing.assert_array_equal(frozen, np.zeros(3))


def test_read_only_view_of_writable_memory_is_refused_as_out():
    base = np.zeros(4)
    view = base[:]
    view.flags.writeable = False
    with pytest.raises(ctensor.ReadOnlyOutputError):
        ops.negative(np.ones(4), out=view)
    with pytest.raises(ctensor.ReadOnlyOutputError):
        ops.sum(np.ones((2, 4)), axis=0, out=view)
    np.testing.assert_array_equal(base, np.zeros(4))


def test_read_only_array_never_exported_as_an_output():
    with pytest.raises(ctensor.ReadOnlyOutputError):
        export_numpy(read_only(np.zeros(2)), True, named("out"))


# --- bool ------------------------------------------------------------------------------------


def test_bool_inputs_results_and_out():
    a = np.array([True, False, True])
    np.testing.assert_array_equal(ops.logical_not(a), [False, True, False])
    less = ops.less(np.arange(3), np.ones(3, np.int64))
    assert less.dtype == np.bool_
    np.testing.assert_array_equal(less, [True, False, False])
    out = np.empty(3, np.bool_)
    assert ops.logical_and(a, np.array([True, True, False]), out=out) is out
    np.testing.assert_array_equal(out, [True, False, False])
    np.testing.assert_array_equal(ops.where(a, np.arange(3.0), -1.0), [0.0, -1.0, 2.0])


# --- bfloat16 (ml_dtypes) ------------------------------------------------------------------


def test_bfloat16_input_is_read_in_place():
    x = np.array([1.5, -2.0, 3.25], BF16)
    capsule = export_numpy(x, False, named("x"))
    data, shape, _ = tensor_address(capsule)
    assert data == address(x) and shape == (3,)
    from ctensor._dlpack import capsule_tensor

    tensor = capsule_tensor(capsule)
    assert (tensor.dtype.code, tensor.dtype.bits) == (lib.CT_DTYPE_BFLOAT, 16)


def test_bfloat16_results_are_ml_dtypes_arrays():
    x = np.array([1.5, -2.0, 3.25, 0.0], BF16)
    y = np.array([0.5, 0.5, -1.0, 2.0], BF16)
    result = ops.add(x, y)
    assert type(result) is np.ndarray and result.dtype == BF16
    np.testing.assert_array_equal(result.astype(np.float32), [2.0, -1.5, 2.25, 2.0])
    np.testing.assert_array_equal(ops.negative(x).astype(np.float32), [-1.5, 2.0, -3.25, 0.0])


def test_bfloat16_out_is_written_in_place():
    x = np.array([1.0, 2.0, 4.0], BF16)
    out = np.zeros(3, BF16)
    assert ops.multiply(x, x, out=out) is out
    np.testing.assert_array_equal(out.astype(np.float32), [1.0, 4.0, 16.0])


def test_bfloat16_strided_and_read_only():
    x = np.arange(8, dtype=np.float32).astype(BF16)[::2]
    frozen = read_only(x)
    np.testing.assert_array_equal(ops.add(frozen, x).astype(np.float32), [0.0, 4.0, 8.0, 12.0])


def test_bfloat16_promotes_as_pytorch_does():
    x = np.array([1.0, 2.0], BF16)
    assert ops.add(x, np.ones(2, np.float32)).dtype == np.float32
    assert ops.add(x, np.ones(2, np.int8)).dtype == BF16
    assert ops.add(x, 1.5).dtype == BF16


def test_bfloat16_cast_from_float32_to_numpy():
    result = ops.astype(np.array([1.0, 3.0], np.float32), dtype="bfloat16")
    assert result.dtype == BF16
    np.testing.assert_array_equal(result.astype(np.float32), [1.0, 3.0])


# --- masked arrays ---------------------------------------------------------------------------


def test_masked_arrays_are_refused_as_inputs_and_out():
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    with pytest.raises(ctensor.InputTypeError, match="masked array"):
        ops.add(masked, 1.0)
    with pytest.raises(ctensor.InputTypeError, match="masked array"):
        ops.add(np.ones(3), masked)
    out = np.ma.masked_array(np.zeros(3), mask=[False, True, False])
    with pytest.raises(ctensor.InputTypeError, match="masked array"):
        ops.add(np.ones(3), np.ones(3), out=out)
    np.testing.assert_array_equal(out.data, np.zeros(3))


class _Subclass(np.ndarray):
    pass


def test_other_ndarray_subclasses_are_still_read():
    sub = np.ones((2, 2)).view(_Subclass)
    np.testing.assert_array_equal(ops.add(np.ones((2, 2)), sub), np.full((2, 2), 2.0))


# --- DLPack capsule versions ----------------------------------------------------------------


def test_capsule_of_major_version_2_is_refused_unconsumed():
    x = np.arange(3.0)
    counted = CountedCapsule(x, versioned=True)
    counted._managed.version.major = 2
    with pytest.raises(ctensor.InvalidArgumentError, match="major version") as info:
        ops.negative(counted.capsule)
    assert isinstance(info.value, BufferError)
    assert capsule_name(counted.capsule) == "dltensor_versioned"  # still its producer's
    assert counted.deleter_calls == 0


def test_capsule_of_major_version_2_is_refused_as_out():
    out = np.zeros(3)
    counted = CountedCapsule(out, versioned=True)
    counted._managed.version.major = 2
    with pytest.raises(ctensor.InvalidArgumentError, match="major version"):
        ops.negative(np.ones(3), out=counted.capsule)
    np.testing.assert_array_equal(out, np.zeros(3))
    assert counted.deleter_calls == 0


def test_capsule_of_a_later_minor_version_is_read():
    x = np.arange(3.0)
    counted = CountedCapsule(x, versioned=True)
    counted._managed.version.minor = 7
    np.testing.assert_array_equal(ops.negative(counted.capsule), -x)
    assert counted.deleter_calls == 1
    assert capsule_name(counted.capsule) == "used_dltensor_versioned"


class _OldProducer:
    """A producer whose __dlpack__ predates max_version (as NumPy before 2.1)."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __dlpack__(self, stream=None):  # noqa: ANN001, ANN204
        return self.array.__dlpack__()

    def __dlpack_device__(self):  # noqa: ANN204
        return (1, 0)


def test_producer_without_max_version_as_input_and_out():
    out = np.zeros(3)
    ops.add(_OldProducer(np.arange(3.0)), np.ones(3), out=_OldProducer(out))
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


# --- scalar promotion: NEP 50 on every NumPy --------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "scalar", "expected"),
    [
        (np.int8, 1, np.int8),
        (np.uint8, 200, np.uint8),
        (np.int8, 1.5, np.float64),
        (np.int16, True, np.int16),
        (np.float32, 1.0, np.float32),
        (np.float16, 2.5, np.float16),
        (np.float32, 1j, np.complex64),
        (np.float64, 1j, np.complex128),
        (np.int32, 1j, np.complex128),
        (np.bool_, 1, np.int64),
        (np.bool_, 1.0, np.float64),
        (np.bool_, True, np.bool_),
    ],
)
def test_python_scalars_are_weak_as_nep_50_says(dtype, scalar, expected):
    result = ops.add(np.ones(2, dtype), scalar)
    assert result.dtype == np.dtype(expected)


def test_python_int_out_of_range_is_an_overflow_error():
    # NumPy 1.x wraps (or warns); ctensor raises on every version, as NumPy 2 does.
    with pytest.raises(OverflowError):
        ops.add(np.ones(2, np.int8), 1000)
    with pytest.raises(OverflowError):
        ops.multiply(np.ones(2, np.uint8), -1)


def test_scalar_promotion_matches_numpy_2():
    from ctensor._dtypes import DTYPES, scalar_dtype

    values = [True, 0, -1, 300, 2**40, 1.5, 1e300, 1j]
    others = [name for name in DTYPES if name != "bfloat16"]
    if np.__version__.startswith("1."):
        # NumPy 1.x looks at the values; NEP 50 does not.
        assert scalar_dtype(300, "int8") == "int8" and scalar_dtype(1e300, "float16") == "float16"
        assert scalar_dtype(-1, "uint8") == "uint8" and scalar_dtype(1.5, "int64") == "float64"
    else:
        for other in others:
            for value in values:
                expected = np.result_type(np.dtype(other), value).name
                assert scalar_dtype(value, other) == expected, (other, value)


def test_package_accepts_numpy_1_23_and_later():
    # MXNet 1.9.1 imports only with NumPy <= 1.23.5: a higher floor made pip refuse to install
    # ctensor next to it (ResolutionImpossible). .ci/run installs the wheel next to mxnet.
    from importlib.metadata import requires

    numpy_requirements = [r for r in requires("ctensor") or [] if r.startswith("numpy")]
    assert numpy_requirements == ["numpy>=1.23"]
