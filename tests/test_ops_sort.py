"""Sorting and selection (sort, argsort, topk, searchsorted) on every dtype their CPU kernels
declare, against NumPy exactly: ascending is np.argsort(kind="stable") (nan last, -0.0 == 0.0);
descending is the stable order of decreasing value with nan first (torch.sort(stable=True));
topk is the first k of that order; searchsorted is np.searchsorted. bfloat16 goes through
PyTorch. Layouts come from arrays.strided_arrays (sliced, reversed, transposed, broadcast)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import ALL_NUMPY, FLOAT_NUMPY, kernel_dtypes, strided_arrays, strided_bfloat16
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor
from ctensor import ops

ALL_CT = ALL_NUMPY + ["bfloat16"]
EXAMPLES = settings(max_examples=25, deadline=None)


def elements(dtype: str):
    """Values of `dtype` with repeats, both zeros, NaN and infinities drawn often."""
    if dtype == "bfloat16":
        dtype = "float32"
    base = hnp.from_dtype(np.dtype(dtype), allow_subnormal=False)
    if dtype in FLOAT_NUMPY:
        return st.one_of(st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0]), base)
    if dtype == "bool":
        return base
    return st.one_of(st.sampled_from([0, 1]), base)


def draw_array(data, dtype: str, min_dims=1, **kwargs):
    if dtype == "bfloat16":
        return data.draw(strided_bfloat16(min_dims=min_dims, elements=elements(dtype), **kwargs))
    return data.draw(strided_arrays(dtype, min_dims=min_dims, elements=elements(dtype), **kwargs))


def as_numpy(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.float().numpy() if a.dtype == torch.bfloat16 else a.numpy()
    return np.asarray(a)


def reference_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    xm = np.moveaxis(x, axis, -1)
    if descending:
        rank = np.unique(xm.ravel(), return_inverse=True, equal_nan=True)[1].reshape(xm.shape)
        order = np.argsort(-rank, axis=-1, kind="stable")
    else:
        order = np.argsort(xm, axis=-1, kind="stable")
    return np.moveaxis(order, -1, axis)


def assert_exact(actual, expected: np.ndarray, dtype: str) -> None:
    assert str(actual.dtype).replace("torch.", "") == dtype, (actual.dtype, dtype)
    a = as_numpy(actual)
    assert a.shape == expected.shape, (a.shape, expected.shape)
    np.testing.assert_array_equal(a, expected)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(expected))  # -0.0 kept


def test_declared_dtypes():
    for op in ["sort", "argsort", "topk", "searchsorted"]:
        assert sorted(kernel_dtypes(op)) == sorted(ALL_CT), op


@pytest.mark.parametrize("dtype", ALL_CT)
@pytest.mark.parametrize("descending", [False, True])
@EXAMPLES
@given(data=st.data())
def test_sort_argsort(dtype, descending, data):
    x = draw_array(data, dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    ref = as_numpy(x)
    order = reference_argsort(ref, axis, descending)
    assert_exact(ops.argsort(x, axis=axis, descending=descending), order, "int64")
    expected = np.take_along_axis(ref, order, axis=axis)
    assert_exact(ops.sort(x, axis=axis, descending=descending, stable=False), expected, dtype)


@pytest.mark.parametrize("dtype", ALL_CT)
@pytest.mark.parametrize("largest", [False, True])
@EXAMPLES
@given(data=st.data())
def test_topk(dtype, largest, data):
    x = draw_array(data, dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    k = data.draw(st.integers(0, x.shape[axis]))
    ref = as_numpy(x)
    order = np.take(reference_argsort(ref, axis, largest), np.arange(k), axis=axis)
    values, indices = ops.topk(x, k=k, axis=axis, largest=largest)
    assert_exact(indices, order, "int64")
    assert_exact(values, np.take_along_axis(ref, order, axis=axis), dtype)


def test_topk_matches_torch():
    t = torch.tensor([[1.0, 3.0, 3.0, float("nan"), -2.0], [0.0, -0.0, 5.0, 5.0, 1.0]])
    for largest in (True, False):
        values, indices = ops.topk(t, k=3, largest=largest)
        ref = torch.topk(t, 3, largest=largest, sorted=True)
        torch.testing.assert_close(values, ref.values, equal_nan=True)
        expected = [[3, 1, 2], [2, 3, 4]] if largest else [[4, 0, 1], [0, 1, 4]]
        assert indices.tolist() == expected


@pytest.mark.parametrize("dtype", ALL_CT)
@pytest.mark.parametrize("side", ["left", "right"])
@EXAMPLES
@given(data=st.data())
def test_searchsorted(dtype, side, data):
    n = data.draw(st.integers(0, 12))
    x1 = draw_array(data, dtype, shape=(n,))
    x1_ref = np.sort(as_numpy(x1))  # numpy's order: nan last
    x1 = torch.from_numpy(x1_ref).to(torch.bfloat16) if dtype == "bfloat16" else x1_ref
    x2 = draw_array(data, dtype, min_dims=0)
    expected = np.searchsorted(x1_ref, as_numpy(x2), side=side)
    assert_exact(ops.searchsorted(x1, x2, side=side), np.asarray(expected), "int64")


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float16", "float32", "int64", "float64"])
@pytest.mark.parametrize("axis", [0, -1])
def test_large_parallel(dtype, axis):
    """Many lanes and long lanes (several radix passes, several threads)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((600, 300)) * 1000).astype(dtype)
    if dtype.startswith("float"):
        x[rng.random(x.shape) < 0.01] = np.nan
    for descending in (False, True):
        order = reference_argsort(x, axis, descending)
        np.testing.assert_array_equal(ops.argsort(x, axis=axis, descending=descending), order)
    bound = 2**40 if dtype in ("int64", "float64") else 60000
    long = rng.integers(-bound, bound, 200_000).astype(dtype)
    np.testing.assert_array_equal(ops.sort(long), np.sort(long))
    values, indices = ops.topk(long, k=50)
    np.testing.assert_array_equal(indices, reference_argsort(long, 0, True)[:50])


def test_errors():
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError):
        ops.sort(np.float64(1.0))
    with pytest.raises(ValueError):
        ops.argsort(x, axis=2)
    with pytest.raises(ValueError):
        ops.topk(x, k=4)
    with pytest.raises(ValueError):
        ops.topk(x, k=-1)
    with pytest.raises((ValueError, TypeError)):
        ops.topk(x)
    with pytest.raises(ValueError):
        ops.searchsorted(x, x)
    with pytest.raises(ValueError):
        ops.searchsorted(x[0], x, side="middle")
    with pytest.raises(ctensor.CTensorError):
        ops.sort(x, axis=-3)
