"""vecdot (array API / np.vecdot) on every dtype its CPU kernels declare and linear
(torch.nn.functional.linear) on the float dtypes, against NumPy / float64 torch references.
Float inputs are small integers so every product and sum is exact in float16/float32/float64
(bfloat16 rounds once: tolerance); integers wrap as NumPy's; bool is or-of-ands. Layouts come
from arrays.strided_arrays (sliced, reversed, transposed, broadcast), zero-size included."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import (
    ALL_NUMPY,
    COMPLEX,
    FLOATS,
    assert_close,
    einsum_problems,
    kernel_dtypes,
    strided_arrays,
    strided_bfloat16,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor
from ctensor import ops

EXAMPLES = settings(max_examples=30, deadline=None)


def small(dtype: str):
    if dtype in FLOATS:
        return st.integers(-8, 8).map(float)
    return hnp.from_dtype(np.dtype(dtype))


def draw(data, dtype: str, shape):
    if dtype == "bfloat16":
        return data.draw(strided_bfloat16(shape=shape, elements=small(dtype)))
    return data.draw(strided_arrays(dtype, shape=shape, elements=small(dtype)))


def as_float64(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.double().numpy()
    return np.array(a, dtype=np.float64, order="C")  # a writable compact copy


def test_declared_dtypes():
    assert sorted(kernel_dtypes("vecdot")) == sorted(ALL_NUMPY + ["bfloat16"] + COMPLEX)
    assert sorted(kernel_dtypes("linear")) == sorted(FLOATS)


@pytest.mark.parametrize("dtype", ALL_NUMPY + ["bfloat16"])
@EXAMPLES
@given(data=st.data())
def test_vecdot(dtype, data):
    s1, s2 = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)
    ).input_shapes
    k = data.draw(st.integers(0, 5))
    axis = data.draw(st.integers(-min(len(s1), len(s2)) - 1, -1))
    at1, at2 = len(s1) + 1 + axis, len(s2) + 1 + axis
    s1 = s1[:at1] + (k,) + s1[at1:]
    s2 = s2[:at2] + (k,) + s2[at2:]
    x1, x2 = draw(data, dtype, s1), draw(data, dtype, s2)
    got = ops.vecdot(x1, x2, axis=axis)
    if dtype in FLOATS:
        expected = np.vecdot(as_float64(x1), as_float64(x2), axis=axis)
        assert str(got.dtype).replace("torch.", "") == dtype
        assert_close(got, expected, dtype)
    else:
        expected = np.vecdot(x1, x2, axis=axis)  # wraps (integers), or-of-ands (bool)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vecdot_nan_inf_and_large(dtype):
    x1 = np.array([[1.0, np.nan], [np.inf, 1.0], [np.inf, 0.0]], dtype)
    x2 = np.array([[1.0, 2.0], [1.0, 1.0], [-1.0, 1.0]], dtype)
    assert_close(ops.vecdot(x1, x2), np.vecdot(x1, x2))
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 200)).astype(dtype)
    b = rng.standard_normal((200,)).astype(dtype)
    assert_close(ops.vecdot(a, b), np.vecdot(a.astype(np.float64), b), rtol_scale=50, atol=1e-4)
    assert_close(ops.vecdot(a.T, a.T, axis=0), np.vecdot(a.T, a.T, axis=0), rtol_scale=50)


def test_vecdot_errors():
    with pytest.raises(ValueError):
        ops.vecdot(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError):
        ops.vecdot(np.ones((2, 3)), np.ones((2, 1)))  # the axis does not broadcast
    with pytest.raises(ValueError):
        ops.vecdot(np.ones(3), np.ones(3), axis=1)
    with pytest.raises(ctensor.CTensorError):
        ops.vecdot(np.float64(1), np.ones(3))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("with_bias", [False, True])
@EXAMPLES
@given(data=st.data())
def test_linear(dtype, with_bias, data):
    lead = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    k, n = data.draw(st.integers(0, 5)), data.draw(st.integers(0, 5))
    x = draw(data, dtype, lead + (k,))
    w = draw(data, dtype, (n, k))
    b = draw(data, dtype, (n,)) if with_bias else None
    got = ops.linear(x, w, b) if with_bias else ops.linear(x, w)
    t = [torch.from_numpy(as_float64(a)) for a in (x, w)]
    bias = torch.from_numpy(as_float64(b)) if with_bias else None
    expected = torch.nn.functional.linear(t[0], t[1], bias).numpy()
    assert str(got.dtype).replace("torch.", "") == dtype
    assert_close(got, expected, dtype)


def test_linear_matches_torch_float32():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 33, 70, generator=g)
    w = torch.randn(50, 70, generator=g)
    b = torch.randn(50, generator=g)
    torch.testing.assert_close(ops.linear(x, w, b), torch.nn.functional.linear(x, w, b))
    torch.testing.assert_close(
        ops.linear(x.transpose(0, 1), w.T.contiguous().T),
        torch.nn.functional.linear(x.transpose(0, 1), w),
    )


def test_linear_errors():
    with pytest.raises(ValueError):
        ops.linear(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError):
        ops.linear(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError):
        ops.linear(np.ones((2, 3)), np.ones((4, 3)), np.ones(3))
    with pytest.raises(ctensor.CTensorError):
        ops.linear(np.float64(2), np.ones((4, 3)))


# ------------------------------------------------------------------------------------------------
# einsum
# ------------------------------------------------------------------------------------------------

EINSUM = [
    "ij,jk->ik",
    "ij,jk",
    "bij,bjk->bik",
    "ijk,kjl->il",
    "ij,ij->ij",
    "i,j->ij",
    "i,i",
    "ij,kj->ikj",
    "ijk,i->kj",
    "ab,cd->",
    "ii->i",
    "ii",
    "iij->ji",
    "ij->",
    "ijk->kji",
    "ij",
    "ba",
    "i",
    "ij,j",
]


def einsum_shapes(subscripts: str, extent: dict) -> list[tuple[int, ...]]:
    inputs = subscripts.split("->")[0].split(",")
    return [tuple(extent[c] for c in term) for term in inputs]


@pytest.mark.parametrize("subscripts", EINSUM)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_einsum(subscripts, data):
    dtype = data.draw(st.sampled_from(ALL_NUMPY + ["bfloat16"]))
    letters = sorted(set(subscripts) - set(",->"))
    extent = {c: data.draw(st.integers(0, 4)) for c in letters}
    arrays = [draw(data, dtype, shape) for shape in einsum_shapes(subscripts, extent)]
    got = ops.einsum(arrays, subscripts=subscripts)
    if dtype in FLOATS:
        expected = np.einsum(subscripts, *[as_float64(a) for a in arrays])
        assert str(got.dtype).replace("torch.", "") == dtype
        assert_close(got, expected, dtype)
    else:
        expected = np.einsum(subscripts, *arrays)  # wraps (integers), or-of-ands (bool)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_einsum_large_float32():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((8, 40, 30)).astype(np.float32)
    b = rng.standard_normal((30, 8, 20)).astype(np.float32)
    for s, args in [("bik,kbj->bij", (a, b)), ("bik,kbj->ij", (a, b)), ("bik->k", (a,))]:
        expected = np.einsum(s, *[x.astype(np.float64) for x in args])
        assert_close(ops.einsum(list(args), subscripts=s), expected, rtol_scale=100, atol=1e-4)


def test_einsum_errors():
    x = np.ones((2, 3))
    with pytest.raises(ValueError):
        ops.einsum([x, x], subscripts="ij,jk->ik")  # 3 != 2
    with pytest.raises(ValueError):
        ops.einsum([x], subscripts="ijk")
    with pytest.raises(ValueError):
        ops.einsum([x], subscripts="ij->k")
    with pytest.raises(ValueError):
        ops.einsum([x], subscripts="ij->ii")
    with pytest.raises(ValueError):
        ops.einsum([x], subscripts="...j->j")  # "..." covers a dim: the output must name it
    with pytest.raises(ValueError):
        ops.einsum([x], subscripts="...i...")
    with pytest.raises(ValueError):
        ops.einsum([x], subscripts="..j")
    with pytest.raises(ValueError):
        ops.einsum([x], subscripts="i...jk")  # 3 letters, 2 dims
    with pytest.raises(ValueError):
        ops.einsum([np.ones((2, 3)), np.ones((4, 3))], subscripts="...i,...i")  # 2 vs 4
    with pytest.raises(ValueError):
        ops.einsum([x, x], subscripts="ij,ij,ij")
    with pytest.raises(ctensor.CTensorError):
        ops.einsum([np.ones(2)] * 17, subscripts=",".join("i" * 17))


@settings(max_examples=150, deadline=None)
@given(problem=einsum_problems(), data=st.data())
def test_einsum_ellipsis_and_operands(problem, data):
    """Ellipsis (broadcast, implicit and explicit output), 1-4 operands, traces: float64 NumPy
    and torch.einsum references; float32 within tolerance."""
    spec, shapes = problem
    dtype = data.draw(st.sampled_from(["float64", "float32"]))
    arrays = [draw(data, dtype, shape) for shape in shapes]
    expected = np.einsum(spec, *[np.asarray(a, np.float64) for a in arrays])
    got = ops.einsum(arrays, subscripts=spec)
    assert_close(got, expected, dtype)
    if dtype == "float64" and all(0 not in s for s in shapes):
        reference = torch.einsum(spec, *[torch.from_numpy(np.array(a)) for a in arrays])
        np.testing.assert_allclose(np.asarray(got), reference.numpy(), rtol=1e-12, atol=1e-12)


def test_einsum_chains():
    """Named NumPy forms with three and four operands, strided and broadcast."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 10))[:, :, ::2]
    b = rng.standard_normal((5, 6))
    c = rng.standard_normal((6, 2))
    d = rng.standard_normal((2, 1, 3))
    cases = [
        ("ijk,kl,lm->ijm", (a, b, c)),
        ("...k,kl,lm", (a, b, c)),
        ("ij...,kl,lm,m...->...i", (a.transpose(2, 0, 1)[:, :, :1], b, c, d)),
        ("...ik,kl,lm->...im", (a, b, c)),
        ("ii,ij,jk,kk->ik", (np.ones((5, 5)), b, np.ones((6, 6)), np.ones((6, 6)))),
        ("i,i,i,i->", (b[0], b[1], b[2], b[3])),
    ]
    for spec, args in cases:
        expected = np.einsum(spec, *args)
        np.testing.assert_allclose(ops.einsum(list(args), subscripts=spec), expected, 1e-12, 1e-12)
