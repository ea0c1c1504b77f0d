"""Regression tests for index, size and window arithmetic inside the CPU kernels that overflowed
int64 or read out of range for extreme (but valid) shapes, attributes and index values: each
case compares with NumPy or expects a clean ctensor error, never a wrong value or a wild access.

Huge extents come from stride-0 broadcast views (``np.broadcast_to``), which cost no memory.
"""

from __future__ import annotations

import numpy as np
import pytest

import ctensor
from ctensor import ops

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


# ----------------------------------------------------------------------------------------------
# Pooling windows
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool2d_divisor_of_a_window_of_more_than_2_63_taps(dtype):
    # A 2**32 x 2**32 window around a 1 x 1 input: the window size (count_include_pad) 2**64
    # overflowed int64 to 0 and the mean was inf.
    x = np.full((1, 1, 1, 1), 3.0, dtype)
    attrs = dict(kernel_size=[2**32, 2**32], padding=[2**31, 2**31])
    out = ops.avg_pool2d(x, **attrs)
    np.testing.assert_allclose(out, np.full((1, 1, 1, 1), 3.0 * 2.0**-64), rtol=1e-6)
    grad = ops.avg_pool2d_backward(np.ones((1, 1, 1, 1), dtype), x, **attrs)
    np.testing.assert_allclose(grad, np.full((1, 1, 1, 1), 2.0**-64), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32])
def test_max_pool2d_with_a_window_of_more_than_2_63_taps(dtype):
    # The threading cost (outputs x kernel taps) was an int64 product that overflowed.
    x = np.full((1, 1, 1, 1), 5, dtype)
    out = ops.max_pool2d(x, kernel_size=[2**32, 2**32], padding=[2**31, 2**31])
    np.testing.assert_array_equal(out, x)
