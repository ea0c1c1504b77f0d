"""out=: checked by the C library, written in place, refused when read-only."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import ctensor
from ctensor import ops
from ctensor.testing import CountedCapsule, capsule_name


def test_wrong_shape_is_refused_and_out_untouched():
    out = np.full(4, 7.0)
    with pytest.raises(ctensor.ShapeMismatchError) as info:
        ops.add(np.ones(3), np.ones(3), out=out)
    assert isinstance(info.value, ValueError)
    assert "out" in str(info.value)
    np.testing.assert_array_equal(out, np.full(4, 7.0))


def test_wrong_dtype_is_refused_and_out_untouched():
    out = np.full(3, 7.0, np.float32)
    with pytest.raises(ctensor.UnsupportedDTypeError) as info:
        ops.add(np.ones(3), np.ones(3), out=out)
    assert isinstance(info.value, TypeError)
    np.testing.assert_array_equal(out, np.full(3, 7.0, np.float32))


def test_read_only_numpy_out_is_refused():
    out = np.full(3, 5.0)
    out.flags.writeable = False
    with pytest.raises(ctensor.ReadOnlyOutputError) as info:
        ops.add(np.ones(3), np.ones(3), out=out)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, ctensor.CTensorError)
    assert "read-only" in str(info.value).lower() or "READ_ONLY" in str(info.value)
    np.testing.assert_array_equal(out, np.full(3, 5.0))


def test_read_only_versioned_capsule_out_is_refused_and_consumed():
    target = np.full(3, 5.0)
    target.flags.writeable = False
    capsule = target.__dlpack__(max_version=(1, 0))  # numpy flags it READ_ONLY
    refs = sys.getrefcount(target)
    with pytest.raises(ctensor.ReadOnlyOutputError):
        ops.add(np.ones(3), np.ones(3), out=capsule)
    assert capsule_name(capsule) == "used_dltensor_versioned"
    assert sys.getrefcount(target) == refs - 1  # numpy's deleter ran exactly once
    np.testing.assert_array_equal(target, np.full(3, 5.0))


def test_read_only_flag_on_a_foreign_capsule_out():
    target = np.full(3, 5.0)
    counted = CountedCapsule(target, versioned=True, read_only=True)
    with pytest.raises(ctensor.ReadOnlyOutputError):
        ops.add(np.ones(3), np.ones(3), out=counted.capsule)
    assert counted.deleter_calls == 1
    np.testing.assert_array_equal(target, np.full(3, 5.0))


def test_writable_capsule_out_is_written_and_consumed():
    target = np.zeros(4)
    counted = CountedCapsule(target)
    result = ops.add(np.arange(4.0), np.ones(4), out=counted.capsule)
    assert result is counted.capsule
    np.testing.assert_array_equal(target, np.arange(4.0) + 1)
    assert counted.deleter_calls == 1
    assert capsule_name(counted.capsule) == "used_dltensor"


def test_partial_overlap_with_an_input_is_an_aliasing_error():
    a = np.arange(6.0)
    before = a.copy()
    with pytest.raises(ctensor.AliasingError) as info:
        ops.add(a[:-1], a[:-1], out=a[1:])
    assert isinstance(info.value, ValueError)
    np.testing.assert_array_equal(a, before)


def test_self_overlapping_out_is_an_aliasing_error():
    base = np.zeros(3)
    out = np.lib.stride_tricks.as_strided(base, shape=(4, 3), strides=(0, 8), writeable=True)
    with pytest.raises(ctensor.AliasingError):
        ops.add(np.ones((4, 3)), np.ones((4, 3)), out=out)
    np.testing.assert_array_equal(base, np.zeros(3))


def test_torch_out_requiring_grad_is_refused():
    out = torch.zeros(3, requires_grad=True)
    with pytest.raises(ctensor.InvalidArgumentError, match="grad"):
        ops.add(torch.ones(3), torch.ones(3), out=out)


def test_dynamic_op_takes_no_out():
    with pytest.raises(ctensor.InvalidArgumentError, match="no out="):
        ops.nonzero(np.array([1, 0, 1]), out=np.empty(2, np.int64))


def test_out_of_another_framework_than_the_inputs():
    a = torch.arange(4, dtype=torch.float32)
    out = np.zeros(4, np.float32)
    assert ops.add(a, a, out=out) is out
    np.testing.assert_array_equal(out, np.arange(4, dtype=np.float32) * 2)


def test_out_must_be_an_array():
    with pytest.raises(ctensor.InputTypeError):
        ops.add(np.ones(3), np.ones(3), out=[1.0, 2.0, 3.0])


def test_conv2d_with_out_and_workspace():
    x = torch.randn(2, 3, 9, 9, dtype=torch.float64)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    out = torch.empty(2, 4, 5, 5, dtype=torch.float64)
    address = out.data_ptr()
    result = ops.conv2d(x, w, stride=2, padding=1, out=out)
    assert result is out and out.data_ptr() == address
    expected = torch.nn.functional.conv2d(x, w, stride=2, padding=1)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
