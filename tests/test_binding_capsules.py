"""Raw DLPack capsules, legacy and versioned: read without copying, consumed exactly once."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest
import torch

import ctensor
from ctensor import ops
from ctensor.testing import CountedCapsule, capsule_name


@pytest.mark.parametrize("versioned", [False, True])
def test_numpy_capsule_is_consumed_once(versioned):
    source = np.arange(5.0)
    refs = sys.getrefcount(source)
    capsule = source.__dlpack__(max_version=(1, 0)) if versioned else source.__dlpack__()
    assert sys.getrefcount(source) == refs + 1  # the capsule's manager holds the array
    result = ops.negative(capsule)
    assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(result, -source)
    assert capsule_name(capsule) == ("used_dltensor_versioned" if versioned else "used_dltensor")
    assert sys.getrefcount(source) == refs  # deleter ran once
    del capsule
    gc.collect()
    assert sys.getrefcount(source) == refs  # and not again when the capsule dies


@pytest.mark.parametrize("versioned", [False, True])
def test_counted_deleter_runs_exactly_once(versioned):
    counted = CountedCapsule(np.arange(6, dtype=np.int32).reshape(2, 3), versioned=versioned)
    result = ops.add(counted.capsule, np.ones((2, 3), np.int32))
    np.testing.assert_array_equal(result, np.arange(6).reshape(2, 3) + 1)
    assert counted.deleter_calls == 1
    gc.collect()
    assert counted.deleter_calls == 1


def test_deleter_runs_when_the_call_fails():
    counted = CountedCapsule(np.arange(3.0))
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.add(counted.capsule, np.ones(4))
    assert counted.deleter_calls == 1


def test_capsule_is_left_unconsumed_when_arguments_are_rejected_before_reading():
    # Arguments are checked before any capsule is opened: a rejected call leaves the capsule as
    # it was (its producer's destructor still owns the cleanup).
    counted = CountedCapsule(np.arange(3.0))
    with pytest.raises(ctensor.InputTypeError):
        ops.add(counted.capsule, "not an array")
    assert counted.deleter_calls == 0
    assert capsule_name(counted.capsule) == "dltensor"
    with pytest.raises(ctensor.InputTypeError):
        ops.add(np.ones(3), counted.capsule, out=[1, 2, 3])
    assert counted.deleter_calls == 0
    # ... and it can still be used afterwards.
    np.testing.assert_array_equal(ops.negative(counted.capsule), -np.arange(3.0))
    assert counted.deleter_calls == 1


def test_a_consumed_capsule_cannot_be_used_again():
    counted = CountedCapsule(np.arange(3.0))
    ops.negative(counted.capsule)
    with pytest.raises(ctensor.InvalidArgumentError, match="already consumed"):
        ops.negative(counted.capsule)
    assert counted.deleter_calls == 1


def test_same_capsule_twice_in_one_call():
    counted = CountedCapsule(np.arange(3.0))
    with pytest.raises(ctensor.InvalidArgumentError, match="already consumed"):
        ops.add(counted.capsule, counted.capsule)
    assert counted.deleter_calls == 1


def test_torch_capsule_is_consumed_and_released():
    t = torch.arange(4, dtype=torch.float32)
    alive = weakref.ref(t)
    capsule = torch.utils.dlpack.to_dlpack(t)
    del t
    gc.collect()
    assert alive() is not None  # the capsule keeps the tensor
    result = ops.sqrt(capsule)
    assert isinstance(result, np.ndarray)  # raw capsule: NumPy results
    np.testing.assert_allclose(result, np.sqrt(np.arange(4.0)), rtol=1e-6)
    gc.collect()
    assert alive() is None  # torch's deleter ran
    assert capsule_name(capsule) == "used_dltensor"


def test_capsule_with_null_strides_is_compact():
    counted = CountedCapsule(np.arange(6.0).reshape(2, 3), null_strides=True)
    result = ops.sum(counted.capsule, axis=1)
    np.testing.assert_array_equal(result, [3.0, 12.0])
    assert counted.deleter_calls == 1


def test_capsule_of_another_kind_is_refused_untouched():
    import datetime

    foreign = datetime.datetime_CAPI
    with pytest.raises(ctensor.InvalidArgumentError, match="not a DLPack capsule"):
        ops.negative(foreign)
    assert capsule_name(foreign) == "datetime.datetime_CAPI"


def test_read_only_versioned_capsule_is_a_fine_input():
    source = np.arange(4.0)
    source.flags.writeable = False
    result = ops.add(source, source)  # numpy read-only arrays export as versioned READ_ONLY
    np.testing.assert_array_equal(result, np.arange(4.0) * 2)
    counted = CountedCapsule(np.arange(4.0), versioned=True, read_only=True)
    np.testing.assert_array_equal(ops.negative(counted.capsule), -np.arange(4.0))
    assert counted.deleter_calls == 1


def test_dlpack_object_without_max_version_falls_back():
    class OldProducer:
        def __init__(self, array):
            self.array = array
            self.calls = []

        def __dlpack__(self, stream=None):  # no max_version: an older producer
            self.calls.append(stream)
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    producer = OldProducer(np.arange(3.0))
    np.testing.assert_array_equal(ops.negative(producer), -np.arange(3.0))
    assert producer.calls == [None]


def test_many_calls_leave_no_references_behind():
    a = np.arange(6.0).reshape(2, 3)
    t = torch.arange(6.0).reshape(2, 3)
    out = np.empty((2, 3))
    refs = (sys.getrefcount(a), sys.getrefcount(out))
    for _ in range(300):
        ops.add(a, a, out=out)
        ops.multiply(a, 2.0)
        ops.nonzero(a)
        ops.add(t, t)
        ops.add(a.astype(np.int32), a)  # promotion: a cast through astype
    gc.collect()
    assert (sys.getrefcount(a), sys.getrefcount(out)) == refs
    assert t._version == 0  # inputs are never written
