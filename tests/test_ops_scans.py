"""Cumulative ops (cumulative_sum, cumulative_prod) on every dtype their CPU kernels declare,
against NumPy 2's np.cumulative_sum / np.cumulative_prod: integers and bools exactly (int64 /
uint64 results, wrapping), floats against a float64 reference with the tolerances of
arrays.assert_close. Layouts come from arrays.strided_arrays (sliced, reversed, transposed,
broadcast, 0-d, zero-size); bfloat16 goes through PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import (
    ALL_NUMPY,
    COMPLEX,
    FLOAT_NUMPY,
    assert_close,
    kernel_dtypes,
    strided_arrays,
    strided_bfloat16,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from ctensor import ops

OPS = {"cumulative_sum": np.cumulative_sum, "cumulative_prod": np.cumulative_prod}
EXAMPLES = settings(max_examples=30, deadline=None)


def elements(dtype: str):
    """Floats k/4 with |k| <= 32: partial sums and products of a lane stay representable (or
    nearly) in every float dtype, so the comparison checks the scan, not cancellation."""
    if dtype in FLOAT_NUMPY or dtype == "bfloat16":
        return st.integers(-32, 32).map(lambda k: k / 4)
    return None


def draw_axis(data, ndim: int):
    choices = st.integers(-max(ndim, 1), max(ndim, 1) - 1)
    if ndim <= 1:
        choices = st.one_of(st.none(), choices)
    return data.draw(choices)


def call(op: str, x, axis, include_initial: bool):
    kwargs = {"include_initial": include_initial}
    if axis is not None:
        kwargs["axis"] = axis
    return getattr(ops, op)(x, **kwargs)


def test_declared_dtypes():
    expected = sorted(ALL_NUMPY + ["bfloat16"] + COMPLEX)
    for op in OPS:
        assert sorted(kernel_dtypes(op)) == expected


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", ALL_NUMPY)
@EXAMPLES
@given(data=st.data())
def test_against_numpy(op, dtype, data):
    x = data.draw(strided_arrays(dtype, elements=elements(dtype)))
    axis = draw_axis(data, x.ndim)
    include_initial = data.draw(st.booleans())
    got = call(op, x, axis, include_initial)
    expected = OPS[op](x, axis=axis, include_initial=include_initial)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape
    if dtype in FLOAT_NUMPY:
        ref = OPS[op](x.astype(np.float64), axis=axis, include_initial=include_initial)
        assert_close(got, ref, dtype=dtype)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op", sorted(OPS))
@EXAMPLES
@given(data=st.data())
def test_bfloat16(op, data):
    x = data.draw(strided_bfloat16(elements=elements("bfloat16")))
    axis = draw_axis(data, x.dim())
    include_initial = data.draw(st.booleans())
    got = call(op, x, axis, include_initial)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    ref = OPS[op](x.double().numpy(), axis=axis, include_initial=include_initial)
    assert_close(got, ref, dtype="bfloat16")


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_integer_wraparound(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.max, info.max, info.min, 3, info.max, 7], dtype=dtype)
    for op, ref in OPS.items():
        np.testing.assert_array_equal(getattr(ops, op)(x), ref(x))
        np.testing.assert_array_equal(
            getattr(ops, op)(x, include_initial=True), ref(x, include_initial=True)
        )


@pytest.mark.parametrize("dtype", FLOAT_NUMPY)
def test_nan_inf_and_sequential_order(dtype):
    x = np.array([[1.0, np.nan, 2.0, np.inf], [np.inf, -np.inf, 0.0, 1.0]], dtype=dtype)
    for op, ref in OPS.items():
        with np.errstate(invalid="ignore"):
            expected = ref(x.astype(np.float64), axis=1)
        assert_close(getattr(ops, op)(x, axis=1), expected, dtype=dtype)
    # Long lane: small increments on a large start accumulate sequentially.
    x = np.array([1.0] + [2.0**-30] * 2000, dtype=np.float64)
    assert_close(ops.cumulative_sum(x), np.cumulative_sum(x), dtype="float64")


@pytest.mark.parametrize("op", sorted(OPS))
def test_zero_d_and_zero_size(op):
    ref = OPS[op]
    for include_initial in (False, True):
        for axis in (None, 0, -1):
            x = np.array(5, dtype=np.int16)
            got = call(op, x, axis, include_initial)
            expected = ref(x, axis=axis, include_initial=include_initial)
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
        for shape, axis in (((0,), 0), ((2, 0), 1), ((0, 3), 1), ((0, 3), 0), ((2, 0, 3), -2)):
            x = np.zeros(shape, dtype=np.float32)
            got = call(op, x, axis, include_initial)
            expected = ref(x, axis=axis, include_initial=include_initial)
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op", sorted(OPS))
def test_axis_errors(op):
    f = getattr(ops, op)
    with pytest.raises(ValueError):
        f(np.ones((2, 3)))  # axis is required beyond 1-D
    with pytest.raises(ctensor.CTensorError):
        f(np.ones((2, 3)), axis=None)
    for x, axis in (
        (np.ones((2, 3)), 2),
        (np.ones((2, 3)), -3),
        (np.ones(4), 1),
        (np.array(1.0), 1),
        (np.array(1.0), -2),
    ):
        with pytest.raises(ValueError):
            f(x, axis=axis)


@pytest.mark.parametrize("op", sorted(OPS))
def test_out_and_strided_output(op):
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    out = np.zeros((4, 8), dtype=np.int64)[::-1, ::2].T  # (4, 4): transposed, reversed, step 2
    got = getattr(ops, op)(x, axis=0, include_initial=True, out=out)
    expected = OPS[op](x, axis=0, include_initial=True)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(got, expected)
