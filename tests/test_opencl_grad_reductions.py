"""The OpenCL backward ops of sum, mean, prod, max, min, vector_norm and matmul (and vector_norm
itself) against the CPU ones (which test_grad_reductions.py and test_grad_linalg.py check against
torch.autograd), over drawn shapes, axes, keepdims, dtypes and layouts (sliced, reversed,
transposed views at byte offsets into larger device buffers)."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import assert_close, strided_arrays
from hypothesis import given, settings
from hypothesis import strategies as st
from opencl_arrays import device_like, require_opencl

import ctensor
from ctensor import ops

FLOATS = ["float16", "float32", "float64"]
SETTINGS = settings(max_examples=25, deadline=None)


def setup_module() -> None:
    require_opencl()


def test_registered_on_opencl():
    for name in ["sum", "mean", "prod", "max", "min", "matmul", "vector_norm"]:
        sigs = set(ctensor.op_info(name + "_backward")["dtypes"]["opencl"])
        assert set(FLOATS) <= sigs, name


def draw_array(data, dtype, shape, small_integers=False):
    elements = st.integers(-2, 2).map(float) if small_integers else st.floats(-2, 2, width=32)
    return data.draw(strided_arrays(dtype, shape=shape, elements=elements))


def compare(got, expected, dtype):
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(got, expected, strict=True):
        assert isinstance(g, ctensor.DeviceArray) and g.dtype == str(e.dtype) == dtype
        assert_close(np.asarray(g), e, rtol_scale=16, atol=1e-3 if dtype == "float16" else None)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min"])
@SETTINGS
@given(data=st.data())
def test_reduction_backward_matches_cpu(name, data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)))
    ndim = len(shape)
    if ndim and data.draw(st.booleans()):
        axis = tuple(
            data.draw(
                st.lists(
                    st.integers(-ndim, ndim - 1),
                    min_size=1,
                    max_size=ndim,
                    unique_by=lambda a: a % ndim,
                )
            )
        )
    else:
        axis = None
    keepdims = data.draw(st.booleans())
    x = draw_array(data, dtype, shape, small_integers=name in ("max", "min", "prod"))
    out = getattr(ops, name)(x, axis=axis, keepdims=keepdims)
    g = draw_array(data, dtype, np.shape(out))
    args = [g, x] + ([np.asarray(out)] if name in ("max", "min") else [])
    expected = getattr(ops, name + "_backward")(*args, axis=axis, keepdims=keepdims)
    got = getattr(ops, name + "_backward")(
        *[device_like(a) for a in args], axis=axis, keepdims=keepdims
    )
    compare(got, expected, dtype)


@SETTINGS
@given(data=st.data())
def test_matmul_backward_matches_cpu(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    batch = data.draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    n1 = data.draw(st.integers(1, 2 + len(batch)))
    n2 = data.draw(st.integers(1, 2 + len(batch)))

    def operand_batch(nd):
        dims = batch[len(batch) - (nd - 2) :] if nd > 2 else []
        return [1 if data.draw(st.booleans()) else e for e in dims]

    s1 = tuple(operand_batch(n1) + ([m, k] if n1 > 1 else [k]))
    s2 = tuple(operand_batch(n2) + ([k, n] if n2 > 1 else [k]))
    x1 = draw_array(data, dtype, s1)
    x2 = draw_array(data, dtype, s2)
    g = draw_array(data, dtype, np.matmul(x1, x2).shape)
    expected = ops.matmul_backward(g, x1, x2)
    got = ops.matmul_backward(device_like(g), device_like(x1), device_like(x2))
    compare(got, expected, dtype)


def test_max_backward_ties_and_nan_on_opencl():
    x = np.array([[3.0, 1.0, 3.0, 3.0], [0.0, np.nan, 5.0, np.nan]], np.float32)
    g = np.array([6.0, 4.0], np.float32)
    out = ops.max(x, axis=1)
    got = ops.max_backward(device_like(g), device_like(x), device_like(np.asarray(out)), axis=1)
    np.testing.assert_array_equal(np.asarray(got), [[2.0, 0, 2.0, 2.0], [0, 2.0, 0, 2.0]])


@pytest.mark.parametrize("ord", [2.0, 1.0, 0.0, float("inf"), float("-inf"), 3.0, 0.5, -1.0])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_vector_norm_and_backward_match_cpu(ord, data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    ndim = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))
    keepdims = data.draw(st.booleans())
    x = draw_array(data, dtype, shape, small_integers=ord in (float("inf"), float("-inf")))
    out = ops.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    got = ops.vector_norm(device_like(x), axis=axis, keepdims=keepdims, ord=ord)
    compare(got, out, dtype)
    g = draw_array(data, dtype, np.shape(out))
    args = [g, x, np.asarray(out)]
    expected = ops.vector_norm_backward(*args, axis=axis, keepdims=keepdims, ord=ord)
    got = ops.vector_norm_backward(
        *[device_like(a) for a in args], axis=axis, keepdims=keepdims, ord=ord
    )
    compare(got, expected, dtype)


def test_vector_norm_special_values_on_opencl():
    inf, nan = float("inf"), float("nan")
    x = np.array([[0.0, -3.0, inf, 2.0], [1e200, 2e200, 0.0, -2e200], [1.0, nan, 0.0, 2.0]])
    for ord in (2.0, 1.0, 0.0, inf, -inf, 3.0, -1.0):
        expected = ops.vector_norm(x, axis=1, ord=ord)
        got = np.asarray(ops.vector_norm(device_like(x), axis=1, ord=ord))
        np.testing.assert_allclose(got, expected, rtol=1e-14, err_msg=str(ord))
