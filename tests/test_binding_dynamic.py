"""Dynamic-allocating ops: the kernel asks the binding's allocator callback for each output,
which creates it in the caller's framework; failures in the callback come back as exceptions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ctensor
from ctensor import _frameworks, ops


def test_nonzero_matches_numpy():
    x = np.array([[0, 1, 0], [2, 0, 3]])
    result = ops.nonzero(x)
    assert isinstance(result, tuple) and len(result) == 2
    for got, want in zip(result, np.nonzero(x), strict=True):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


def test_nonzero_is_always_a_tuple():
    (indices,) = ops.nonzero(np.array([0.0, 3.0, 0.0, 1.0]))
    np.testing.assert_array_equal(indices, [1, 3])
    empty = ops.nonzero(np.zeros((2, 2)))
    assert len(empty) == 2 and all(e.shape == (0,) for e in empty)


def test_unique_values_and_boolean_mask_match_numpy():
    x = np.array([3, 1, 3, 2, 1, 7], np.int32)
    result = ops.unique_values(x)
    np.testing.assert_array_equal(result, np.unique(x))
    assert result.dtype == np.int32
    data = np.arange(12.0).reshape(3, 4)
    mask = data % 3 == 0
    np.testing.assert_array_equal(ops.boolean_mask(data, mask), data[mask])


def test_an_exception_in_the_allocator_is_raised_after_the_run(monkeypatch):
    class Boom(RuntimeError):
        pass

    def failing_empty(self, shape, dtype, like):
        raise Boom("no memory for you")

    # Patch the class, not the instance: undo must leave no instance attribute behind.
    monkeypatch.setattr(type(_frameworks.NUMPY), "empty", failing_empty)
    with pytest.raises(Boom, match="no memory for you"):
        ops.nonzero(np.array([0, 1, 1]))
    monkeypatch.undo()
    (indices,) = ops.nonzero(np.array([0, 1, 1]))  # nothing left behind
    np.testing.assert_array_equal(indices, [1, 2])


def test_memory_error_in_the_allocator(monkeypatch):
    def failing_empty(self, shape, dtype, like):
        raise MemoryError("out of memory")

    monkeypatch.setattr(type(_frameworks.TORCH), "empty", failing_empty)
    with pytest.raises(MemoryError):
        ops.unique_values(torch.tensor([1, 2, 2]))


def test_dynamic_results_in_torch():
    x = torch.tensor([5.0, -1.0, 5.0, 2.0])
    result = ops.unique_values(x)
    assert isinstance(result, torch.Tensor)
    assert torch.equal(result, torch.unique(x))


def test_dynamic_op_with_capsule_input_gives_numpy():
    capsule = np.array([0, 4, 0, 2]).__dlpack__()
    (indices,) = ops.nonzero(capsule)
    assert isinstance(indices, np.ndarray)
    np.testing.assert_array_equal(indices, [1, 3])


def test_errors_of_dynamic_ops_come_from_c():
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.boolean_mask(np.ones((2, 3)), np.ones((3, 2), bool))
