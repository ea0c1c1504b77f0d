"""The OpenCL argsort and take_along_axis_backward (what the gradients of sort and topk run)
against the CPU backend, over drawn shapes, axes, dtypes, layouts (sliced, reversed, transposed,
broadcast views at byte offsets into larger device buffers), ties, signed zeros and nan, and the
gradient rows of sort and topk end to end on the device."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import kernel_signatures, strided_arrays
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from opencl_arrays import device_like, require_opencl

import ctensor
from ctensor import ops

FLOATS = ["float16", "float32", "float64"]
SETTINGS = settings(max_examples=40, deadline=None)


def setup_module() -> None:
    require_opencl()


def signatures(name: str, backend: str) -> set:
    return {tuple(s) for s in kernel_signatures(name, backend)}


def test_registered_on_opencl():
    sort_dtypes = {s[0] for s in signatures("sort", "opencl")}
    assert signatures("argsort", "opencl") == {(d, "int64") for d in sort_dtypes}
    # int64 indices (argsort's and topk's); int32 ones need a take_along_axis the device lacks.
    wanted = {(f, f, "int64", f) for f in FLOATS}
    assert signatures("take_along_axis_backward", "opencl") == wanted
    assert wanted <= signatures("take_along_axis_backward", "cpu")


def tied_elements(dtype: str):
    """Few distinct values, so that lanes have ties; floats with -0.0, 0.0, nan and infinities."""
    if dtype.startswith("float"):
        return st.sampled_from([0.0, -0.0, 1.0, -2.5, np.nan, np.inf, -np.inf, 3.0])
    if dtype == "bool":
        return st.booleans()
    return st.integers(-3, 3)


@SETTINGS
@given(data=st.data())
def test_argsort_matches_cpu(data):
    dtype = data.draw(st.sampled_from(sorted({s[0] for s in signatures("argsort", "opencl")})))
    x = data.draw(strided_arrays(dtype, min_dims=1, max_dims=3, elements=tied_elements(dtype)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    descending = data.draw(st.booleans())
    got = ops.argsort(device_like(x), axis=axis, descending=descending)
    assert isinstance(got, ctensor.DeviceArray) and got.dtype == "int64"
    want = ops.argsort(x, axis=axis, descending=descending)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_argsort_order_of_ties_and_nan():
    x = np.array([2.0, np.nan, -0.0, 1.0, 0.0, np.nan, 2.0, -np.inf], np.float32)
    up = np.asarray(ops.argsort(device_like(x)))
    np.testing.assert_array_equal(up, [7, 2, 4, 3, 0, 6, 1, 5])
    down = np.asarray(ops.argsort(device_like(x), descending=True))
    np.testing.assert_array_equal(down, [1, 5, 0, 6, 3, 2, 4, 7])


@st.composite
def take_along_case(draw):
    """x's shape, an axis, and an indices shape that broadcasts with x off the axis."""
    x_shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    axis = draw(st.integers(-len(x_shape), len(x_shape) - 1))
    k = axis % len(x_shape)
    i_shape = []
    for d, n in enumerate(x_shape):
        if d == k:
            i_shape.append(draw(st.integers(0, 5)) if n else 0)
        elif n == 1:
            i_shape.append(draw(st.integers(0, 3)))
        else:
            i_shape.append(draw(st.sampled_from([n, 1])))
    return tuple(x_shape), axis, tuple(i_shape)


@SETTINGS
@given(data=st.data(), case=take_along_case())
def test_take_along_axis_backward_matches_cpu(data, case):
    x_shape, axis, i_shape = case
    dtype = data.draw(st.sampled_from(FLOATS))
    n = x_shape[axis]
    x = np.zeros(x_shape, dtype)
    # Few distinct indices, negative ones included: repeated indices add up.
    elements = st.integers(-n, n - 1) if n else st.just(0)
    indices = data.draw(strided_arrays("int64", shape=i_shape, elements=elements))
    out_shape = ops.take_along_axis(x, indices, axis=axis).shape
    g = data.draw(strided_arrays(dtype, shape=out_shape, elements=st.floats(-2, 2, width=16)))
    got = ops.take_along_axis_backward(
        device_like(g), device_like(x), device_like(indices), axis=axis
    )
    want = ops.take_along_axis_backward(g, x, indices, axis=axis)
    assert isinstance(got, ctensor.DeviceArray) and got.dtype == dtype
    # The same sums in the same order as the CPU kernel: bit for bit.
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("bad", [3, -4, 100])
def test_take_along_axis_backward_rejects_out_of_range_indices(bad):
    x = np.zeros((2, 3), np.float32)
    indices = np.array([[0, bad], [1, 2]], np.int64)
    g = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match=f"index {bad} is out of range \\[-3, 3\\)"):
        ops.take_along_axis_backward(g, x, indices, axis=1)
    with pytest.raises(ValueError, match=f"index {bad} is out of range \\[-3, 3\\)"):
        ops.take_along_axis_backward(device_like(g), device_like(x), device_like(indices), axis=1)


def test_take_along_axis_backward_into_an_empty_x():
    # grad_x has no elements: nothing to compute, as on the CPU (the index is not looked at).
    x = np.zeros((2, 0), np.float32)
    g = np.ones((2, 1), np.float32)
    indices = np.zeros((2, 1), np.int64)
    want = ops.take_along_axis_backward(g, x, indices, axis=1)
    got = ops.take_along_axis_backward(device_like(g), device_like(x), device_like(indices), axis=1)
    assert np.asarray(got).shape == want.shape == (2, 0)


@SETTINGS
@given(data=st.data())
def test_sort_and_topk_gradients_on_the_device(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    x = data.draw(strided_arrays(dtype, min_dims=1, max_dims=3, elements=tied_elements(dtype)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    descending = data.draw(st.booleans())
    g = data.draw(strided_arrays(dtype, shape=x.shape, elements=st.floats(-2, 2, width=16)))
    attrs = {"axis": axis, "descending": descending}
    (got,) = ctensor.autodiff.vjp("sort", [device_like(x)], device_like(g), **attrs)
    (want,) = ctensor.autodiff.vjp("sort", [x], g, **attrs)
    assert isinstance(got, ctensor.DeviceArray)
    np.testing.assert_array_equal(np.asarray(got), want)

    k = data.draw(st.integers(0, x.shape[axis]))
    shape = list(x.shape)
    shape[axis] = k
    gv = data.draw(strided_arrays(dtype, shape=tuple(shape), elements=st.floats(-2, 2, width=16)))
    attrs = {"k": k, "axis": axis, "largest": descending}
    (got,) = ctensor.autodiff.vjp("topk", [device_like(x)], [device_like(gv), None], **attrs)
    (want,) = ctensor.autodiff.vjp("topk", [x], [gv, None], **attrs)
    assert isinstance(got, ctensor.DeviceArray)
    np.testing.assert_array_equal(np.asarray(got), want)
