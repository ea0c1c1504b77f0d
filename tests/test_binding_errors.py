"""One table from ct_status to exception classes; every error carries the C library's message."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import ctensor
from ctensor import ops
from ctensor._lib import ffi, lib
from ctensor.testing import CountedCapsule, capsule_name


def c_message() -> str:
    """This thread's last C error message, read straight from the library."""
    return ffi.string(lib.ct_last_error()).decode()


ARGUMENT_ERRORS = {
    "CT_ERROR_INVALID_ARGUMENT": ctensor.InvalidArgumentError,
    "CT_ERROR_SHAPE_MISMATCH": ctensor.ShapeMismatchError,
    "CT_ERROR_UNKNOWN_ATTRIBUTE": ctensor.UnknownAttributeError,
    "CT_ERROR_ATTRIBUTE_TYPE": ctensor.AttributeTypeError,
    "CT_ERROR_DEVICE_MISMATCH": ctensor.DeviceMismatchError,
    "CT_ERROR_NULL_POINTER": ctensor.NullPointerError,
    "CT_ERROR_INVALID_SHAPE": ctensor.InvalidShapeError,
    "CT_ERROR_SIZE_OVERFLOW": ctensor.SizeOverflowError,
    "CT_ERROR_ALIASING": ctensor.AliasingError,
    "CT_ERROR_WORKSPACE_TOO_SMALL": ctensor.WorkspaceTooSmallError,
    "CT_ERROR_WRONG_ARITY": ctensor.WrongArityError,
}


def test_every_status_has_its_own_class():
    statuses = [getattr(lib, name) for name in dir(lib) if name.startswith("CT_ERROR_")]
    assert len(statuses) >= 18
    classes = set()
    for status in statuses:
        cls = ctensor.STATUS_TO_ERROR[status]
        assert issubclass(cls, ctensor.CTensorError)
        assert cls.status == status
        error = cls("message")
        assert error.status == status
        assert error.status_name == ffi.string(lib.ct_status_name(status)).decode()
        classes.add(cls)
    assert len(classes) == len(statuses)


@pytest.mark.parametrize("name", sorted(ARGUMENT_ERRORS))
def test_argument_errors_are_value_errors(name):
    cls = ARGUMENT_ERRORS[name]
    assert ctensor.STATUS_TO_ERROR[getattr(lib, name)] is cls
    assert issubclass(cls, ValueError)


def test_builtin_bases():
    assert issubclass(ctensor.UnsupportedDTypeError, TypeError)
    assert issubclass(ctensor.AttributeTypeError, TypeError)
    assert issubclass(ctensor.OutOfMemoryError, MemoryError)
    assert issubclass(ctensor.UnknownOpError, AttributeError)
    assert issubclass(ctensor.UnknownOpError, LookupError)
    assert issubclass(ctensor.ReadOnlyOutputError, ValueError)
    assert issubclass(ctensor.InputTypeError, TypeError)


def test_shape_mismatch_carries_the_c_message():
    with pytest.raises(ctensor.ShapeMismatchError) as info:
        ops.add(np.ones((2, 3)), np.ones((4,)))
    error = info.value
    assert error.status == lib.CT_ERROR_SHAPE_MISMATCH
    assert error.status_name == "CT_ERROR_SHAPE_MISMATCH"
    assert str(error) == error.message == c_message()
    assert "add" in str(error)


def test_unknown_op():
    with pytest.raises(AttributeError) as info:
        ops.definitely_not_an_op  # noqa: B018
    assert isinstance(info.value, ctensor.UnknownOpError)
    assert "definitely_not_an_op" in str(info.value)
    assert str(info.value) == c_message()
    assert not hasattr(ops, "nope")
    with pytest.raises(ctensor.UnknownOpError) as info:
        ctensor.op_info("nope")
    assert info.value.status == lib.CT_ERROR_UNKNOWN_OP
    assert str(info.value) == c_message()


def test_unknown_attribute_comes_from_c():
    with pytest.raises(ctensor.UnknownAttributeError) as info:
        ops.sum(np.ones(3), bogus=1)
    assert isinstance(info.value, ValueError)
    assert "bogus" in str(info.value)
    assert str(info.value) == c_message()


@pytest.mark.parametrize(
    "call",
    [
        lambda a: ops.softmax(a, axis=1.5),
        lambda a: ops.sum(a, keepdims="yes"),
        lambda a: ops.sum(a, axis="0"),
        lambda a: ops.permute_dims(a, axes=[0.5, 1.0]),
    ],
)
def test_mistyped_attribute_comes_from_c(call):
    with pytest.raises(ctensor.AttributeTypeError) as info:
        call(np.ones((2, 2)))
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    assert str(info.value) == c_message()


def test_attribute_of_no_c_type_raises_the_same_class():
    with pytest.raises(ctensor.AttributeTypeError, match="keepdims"):
        ops.sum(np.ones(3), keepdims=object())


def test_required_attribute_missing():
    with pytest.raises(ctensor.InvalidArgumentError) as info:
        ops.permute_dims(np.ones((2, 3)))
    assert "axes" in str(info.value)
    assert str(info.value) == c_message()


def test_bad_attribute_value_is_invalid_argument():
    with pytest.raises(ctensor.InvalidArgumentError) as info:
        ops.sum(np.ones((2, 3)), axis=5)
    assert str(info.value) == c_message()


def test_unsupported_dtype_comes_from_c():
    with pytest.raises(ctensor.UnsupportedDTypeError) as info:
        ops.floor(np.ones(3, np.complex64))  # NumPy has no complex floor either
    assert isinstance(info.value, TypeError)
    assert str(info.value) == c_message()
    with pytest.raises(ctensor.UnsupportedDTypeError):
        ops.softmax(np.ones(3, np.int32))  # not elementwise: no promotion, C refuses
    with pytest.raises(ctensor.UnsupportedDTypeError):
        ops.where(np.ones(3, np.int8), np.ones(3), np.zeros(3))  # condition must be bool


def test_unknown_dtype_name():
    with pytest.raises(ctensor.UnsupportedDTypeError) as info:
        ops.astype(np.ones(3), dtype="float33")
    assert "float33" in str(info.value)
    assert str(info.value) == c_message()


def test_bfloat16_result_for_numpy_inputs_is_a_clear_error_without_ml_dtypes(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # `import ml_dtypes` fails
    capsule = torch.utils.dlpack.to_dlpack(torch.ones(3, dtype=torch.bfloat16))
    with pytest.raises(ctensor.UnsupportedDTypeError, match="bfloat16.*ml_dtypes"):
        ops.negative(capsule)  # a raw capsule gives NumPy results
    with pytest.raises(ctensor.UnsupportedDTypeError, match="bfloat16.*ml_dtypes"):
        ops.astype(np.ones(3), dtype="bfloat16")


def test_bfloat16_result_for_numpy_inputs_is_an_ml_dtypes_array():
    import ml_dtypes

    capsule = torch.utils.dlpack.to_dlpack(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
    result = ops.negative(capsule)
    assert type(result) is np.ndarray and result.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(result.astype(np.float32), [-1.5, 2.0])


def _fake_device_capsule(array, device_type):
    counted = CountedCapsule(array, device_type=device_type)
    return counted


def test_mixed_devices():
    fake = _fake_device_capsule(np.arange(3.0), lib.CT_DEVICE_CUDA)
    with pytest.raises(ctensor.DeviceMismatchError) as info:
        ops.add(np.ones(3), fake.capsule)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == c_message()
    assert fake.deleter_calls == 1  # consumed even though the call failed
    assert capsule_name(fake.capsule) == "used_dltensor"
    fake = _fake_device_capsule(np.arange(3.0), lib.CT_DEVICE_CUDA)
    with pytest.raises(ctensor.DeviceMismatchError):
        ops.add(fake.capsule, np.ones(3))  # the first argument's device cannot be allocated on
    assert fake.deleter_calls == 1


def test_device_without_kernels():
    fake = _fake_device_capsule(np.arange(3.0), lib.CT_DEVICE_CUDA)
    with pytest.raises(ctensor.UnsupportedDeviceError) as info:
        ops.negative(fake.capsule)
    assert str(info.value) == c_message()


def test_torch_meta_tensor_with_a_cpu_tensor_is_a_device_mismatch():
    # Meta tensors go through torch.ops.ctensor (shapes only); next to a CPU tensor the call
    # has no one device, whether or not ctensor.torch was imported before.
    with pytest.raises(ctensor.DeviceMismatchError, match="meta"):
        ops.add(torch.ones(3), torch.ones(3, device="meta"))
    with pytest.raises(ctensor.DeviceMismatchError, match="meta"):
        ops.add(torch.ones(3, device="meta"), torch.ones(3))
    assert ops.add(torch.ones(3, device="meta"), torch.ones(3, device="meta")).is_meta


def test_inputs_that_are_not_arrays():
    with pytest.raises(ctensor.InputTypeError) as info:
        ops.add([1.0, 2.0], np.ones(2))
    assert isinstance(info.value, TypeError)
    assert "x1" in str(info.value)
    with pytest.raises(ctensor.InputTypeError, match="no Python scalars"):
        ops.sum(3.0)
    with pytest.raises(ctensor.InputTypeError, match="required"):
        ops.add(None, np.ones(2))
    with pytest.raises(TypeError):
        ops.add(np.ones(2))  # Python's own arity check


def test_scalar_that_does_not_fit_raises_like_numpy():
    with pytest.raises(OverflowError):
        np.add(np.ones(3, np.uint8), 300)
    with pytest.raises(OverflowError):
        ops.add(np.ones(3, np.uint8), 300)


def test_library_error_state_is_clean_after_an_error():
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.add(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(ops.add(np.ones(2), np.ones(2)), np.full(2, 2.0))
