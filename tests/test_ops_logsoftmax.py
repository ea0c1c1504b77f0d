"""log_softmax (torch.nn.functional.log_softmax) and logsumexp (torch.logsumexp /
scipy.special.logsumexp): every declared dtype against float64 references, strided layouts,
0-d and zero-size arrays, +-inf and nan lanes, axis variants and errors."""

import numpy as np
import pytest
import torch
from arrays import (
    FLOATS,
    assert_close,
    kernel_dtypes,
    strided_arrays,
    strided_bfloat16,
    to_float64,
    tolerance,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor

SETTINGS = settings(max_examples=30, deadline=None)
# float16/bfloat16/float32 compute in float32: x - max - log(sum) carries a few float32 ulps of
# the inputs' magnitude (up to 30) as an absolute error.
ATOL = {"float16": 2e-4, "bfloat16": 2e-3, "float32": 1e-5, "float64": 1e-12}


def special_floats(width):
    finite = st.floats(-30, 30, width=width, allow_subnormal=False)
    return st.one_of(finite, finite, finite, st.sampled_from([np.inf, -np.inf, np.nan]))


def draw_array(data, dtype, finite=False, **kw):
    if dtype == "bfloat16":
        el = st.floats(-30, 30, width=32) if finite else special_floats(32)
        return data.draw(strided_bfloat16(elements=el, **kw))
    width = {"float16": 16, "float32": 32, "float64": 64}[dtype]
    el = st.floats(-30, 30, width=width, allow_subnormal=False) if finite else special_floats(width)
    return data.draw(strided_arrays(dtype, elements=el, **kw))


def torch_log_softmax(x, axis):
    t = torch.from_numpy(np.array(to_float64(x), order="C"))
    return torch.log_softmax(t, dim=axis).numpy()


def lse_ref(x, axis, keepdims):
    """scipy.special.logsumexp in float64: the maximum taken as 0 where it is not finite."""
    x64 = to_float64(x)
    ax = None if axis is None else tuple(axis)
    with np.errstate(all="ignore"):
        if x64.size == 0:
            m = np.zeros(np.sum(x64, axis=ax, keepdims=True).shape)
        else:
            m = np.max(x64, axis=ax, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        r = np.log(np.sum(np.exp(x64 - m), axis=ax, keepdims=True)) + m
    if not keepdims:
        r = np.squeeze(r, axis=ax if ax is not None else tuple(range(x64.ndim)))
    return r


def test_declared_dtypes():
    assert sorted(kernel_dtypes("log_softmax")) == sorted(FLOATS)
    assert sorted(kernel_dtypes("logsumexp")) == sorted(FLOATS)


# ----- log_softmax -----


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_log_softmax_matches_torch(dtype, data):
    x = draw_array(data, dtype, finite=data.draw(st.booleans()))
    ndim = max(x.ndim, 1)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    got = ctensor.ops.log_softmax(x, axis=axis)
    assert tuple(got.shape) == tuple(x.shape)
    assert str(got.dtype).replace("torch.", "") == dtype
    assert_close(got, torch_log_softmax(x, axis), dtype, atol=ATOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
def test_log_softmax_special_lanes(dtype):
    inf, nan = np.inf, np.nan
    rows = np.array(
        [
            [1.0, 2.0, 3.0, -inf],  # finite lane with a -inf element: -inf there
            [nan, 1.0, 2.0, 3.0],  # nan lane -> all nan
            [-inf, -inf, -inf, -inf],  # all -inf -> nan (torch)
            [inf, 1.0, 2.0, 3.0],  # +inf -> nan (inf - inf)
            [0.0, 0.0, 0.0, 0.0],
        ]
    )
    x = torch.tensor(rows, dtype=torch.bfloat16) if dtype == "bfloat16" else rows.astype(dtype)
    expected = torch_log_softmax(x, 1)
    assert np.isnan(expected[1]).all() and np.isnan(expected[2]).all()
    got = ctensor.ops.log_softmax(x, axis=1)
    assert_close(got, expected, dtype, atol=ATOL[dtype])
    assert_close(ctensor.ops.log_softmax(x.T, axis=0), expected.T, dtype, atol=ATOL[dtype])


@pytest.mark.parametrize("shape,axis", [((3, 70000), 1), ((70000, 3), 0), ((2, 3, 40000), 2)])
def test_log_softmax_long_axes(shape, axis):
    # Long lanes take the split path (pieces along the axis) and the vector mode.
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) * 10
    for dtype in ["float32", "float64"]:
        xd = x.astype(dtype)
        assert_close(
            ctensor.ops.log_softmax(xd, axis=axis),
            torch_log_softmax(xd, axis),
            dtype,
            atol=ATOL[dtype] * 4,
        )


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_log_softmax_zero_d_and_empty(dtype):
    assert ctensor.ops.log_softmax(np.array(3.5, dtype=dtype)).item() == 0.0
    assert ctensor.ops.log_softmax(np.array(3.5, dtype=dtype), axis=0).item() == 0.0
    assert np.isnan(ctensor.ops.log_softmax(np.array(np.nan, dtype=dtype)).item())
    for shape, axis in [((0,), 0), ((0, 3), 1), ((3, 0), 1), ((3, 0), 0)]:
        got = ctensor.ops.log_softmax(np.zeros(shape, dtype=dtype), axis=axis)
        assert got.shape == shape and got.dtype == np.dtype(dtype)


def test_log_softmax_default_axis_and_out():
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    assert_close(ctensor.ops.log_softmax(x), torch_log_softmax(x, -1))
    out = np.empty_like(x)
    ctensor.ops.log_softmax(x, axis=0, out=out)
    assert_close(out, torch_log_softmax(x, 0))


def test_log_softmax_errors():
    x = np.zeros((2, 3), dtype=np.float32)
    for axis in [2, -3]:
        with pytest.raises(ValueError):
            ctensor.ops.log_softmax(x, axis=axis)
    with pytest.raises(ValueError):
        ctensor.ops.log_softmax(np.array(1.0), axis=1)
    with pytest.raises(TypeError):
        ctensor.ops.log_softmax(x, axis=0.5)
    with pytest.raises(TypeError):
        ctensor.ops.log_softmax(np.zeros(3, dtype=np.int32))


# ----- logsumexp -----


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_logsumexp_matches_reference(dtype, data):
    x = draw_array(data, dtype, finite=data.draw(st.booleans()))
    if x.ndim == 0 or data.draw(st.booleans()):
        axis = None
    else:
        axis = data.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, max_size=x.ndim))
        axis = [a - x.ndim if data.draw(st.booleans()) else a for a in axis]
    keepdims = data.draw(st.booleans())
    got = ctensor.ops.logsumexp(x, axis=axis, keepdims=keepdims)
    expected = lse_ref(x, axis, keepdims)
    assert str(got.dtype).replace("torch.", "") == dtype
    assert_close(got, expected, dtype, atol=max(tolerance(dtype)[1], 1e-13))


@pytest.mark.parametrize("dtype", FLOATS)
def test_logsumexp_special(dtype):
    inf, nan = np.inf, np.nan
    rows = np.array(
        [
            [-inf, -inf, -inf],  # -inf
            [inf, 1.0, 2.0],  # +inf
            [inf, -inf, 0.0],  # +inf
            [inf, inf, 0.0],  # +inf
            [nan, 1.0, inf],  # nan
            [-inf, 1.0, 1.0],  # 1 + log 2
            [0.5, 0.5, 0.5],
        ]
    )
    x = torch.tensor(rows, dtype=torch.bfloat16) if dtype == "bfloat16" else rows.astype(dtype)
    expected = lse_ref(x, [1], False)
    np.testing.assert_array_equal(expected[:5], [-inf, inf, inf, inf, nan])
    assert_close(ctensor.ops.logsumexp(x, axis=[1]), expected, dtype)
    assert_close(ctensor.ops.logsumexp(x.T, axis=[0]), expected, dtype)  # rows mode
    assert_close(ctensor.ops.logsumexp(x, axis=[-1], keepdims=True), expected[:, None], dtype)
    # torch agrees on every row
    t = torch.from_numpy(to_float64(x))
    assert_close(ctensor.ops.logsumexp(x, axis=[1]), torch.logsumexp(t, 1).numpy(), dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_logsumexp_zero_d_and_empty(dtype):
    assert ctensor.ops.logsumexp(np.array(2.5, dtype=dtype)).item() == 2.5
    r = ctensor.ops.logsumexp(np.zeros((0,), dtype=dtype))
    assert r.shape == () and r.item() == -np.inf
    r = ctensor.ops.logsumexp(np.zeros((3, 0), dtype=dtype), axis=[1])
    assert r.shape == (3,) and (r == -np.inf).all()
    r = ctensor.ops.logsumexp(np.zeros((3, 0), dtype=dtype), axis=[0], keepdims=True)
    assert r.shape == (1, 0)


@pytest.mark.parametrize("shape,axis", [((4, 100000), [1]), ((100000, 4), [0]), ((300, 700), None)])
def test_logsumexp_large(shape, axis):
    # Large reductions are cut into pieces merged in parallel; the rescaling must stay exact.
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape) * 20
    for dtype in ["float32", "float64"]:
        xd = x.astype(dtype)
        assert_close(
            ctensor.ops.logsumexp(xd, axis=axis), lse_ref(xd, axis, False), dtype, atol=1e-12
        )


def test_logsumexp_errors():
    x = np.zeros((2, 3))
    for axis in [[2], [-3]]:
        with pytest.raises(ValueError):
            ctensor.ops.logsumexp(x, axis=axis)
    with pytest.raises(ValueError):
        ctensor.ops.logsumexp(x, axis=[0, 0])
    with pytest.raises(TypeError):
        ctensor.ops.logsumexp(np.zeros(3, dtype=np.int64))
    with pytest.raises(TypeError):
        ctensor.ops.logsumexp(x, keepdims="yes")
