"""put_along_axis, gather_nd, scatter_nd, index_select, index_add and their backward ops on a
CUDA GPU (torch.cuda tensors in and out) against the CPU backend, with repeated and negative
indices and every reduction, strided views, and the index errors that leave the output
untouched. Collected only where ctensor's cuda plugin has a device (tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ctensor
from ctensor import ops

REDUCTIONS = ["none", "add", "multiply", "max", "min"]


def cuda(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def assert_same(got: torch.Tensor, want) -> None:
    assert isinstance(got, torch.Tensor) and got.is_cuda
    got, want = got.cpu().numpy(), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    rtol = 2e-3 if want.dtype == np.float16 else 1e-6 if want.dtype == np.float32 else 1e-12
    scale = max(1.0, float(np.max(np.abs(want.astype(np.float64))))) if want.size else 1.0
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol * scale
    )


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "bool"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_forward_ops_match_cpu(dtype, index_dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 6, 3)) * 3).astype(dtype)
    indices = rng.integers(-6, 6, (5, 9, 3)).astype(index_dtype)
    values = (rng.standard_normal((5, 9, 3)) * 3).astype(dtype)
    for reduction in ["none", "max", "min"] if dtype == "bool" else REDUCTIONS:
        got = ops.put_along_axis(cuda(x), cuda(indices), cuda(values), axis=1, reduction=reduction)
        assert_same(got, ops.put_along_axis(x, indices, values, axis=1, reduction=reduction))
    tuples = np.stack([rng.integers(-5, 5, (7, 2)), rng.integers(-6, 6, (7, 2))], -1)
    tuples = tuples.astype(index_dtype)
    assert_same(ops.gather_nd(cuda(x), cuda(tuples)), ops.gather_nd(x, tuples))
    updates = (rng.standard_normal((7, 2, 3)) * 3).astype(dtype)
    for reduction in ["none", "max", "min"] if dtype == "bool" else REDUCTIONS:
        got = ops.scatter_nd(cuda(x), cuda(tuples), cuda(updates), reduction=reduction)
        assert_same(got, ops.scatter_nd(x, tuples, updates, reduction=reduction))
    select = rng.integers(-6, 6, 10).astype(index_dtype)
    assert_same(
        ops.index_select(cuda(x), cuda(select), axis=1), ops.index_select(x, select, axis=1)
    )
    if dtype != "bool":
        source = (rng.standard_normal((5, 10, 3)) * 3).astype(dtype)
        got = ops.index_add(cuda(x), cuda(select), cuda(source), axis=1, alpha=2.0)
        assert_same(got, ops.index_add(x, select, source, axis=1, alpha=2.0))


def test_strided_views_match_cpu():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((8, 12)).astype(np.float32)
    x = torch.from_numpy(base).cuda()[::2, 1::2]
    indices = rng.integers(-6, 6, (4, 9))
    values = torch.from_numpy(rng.standard_normal((9, 4)).astype(np.float32)).cuda().T
    for reduction in REDUCTIONS:
        got = ops.put_along_axis(x, cuda(indices), values, axis=1, reduction=reduction)
        want = ops.put_along_axis(
            base[::2, 1::2], indices, values.cpu().numpy(), axis=1, reduction=reduction
        )
        assert_same(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_backward_ops_match_cpu(dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5)).astype(dtype)
    indices = rng.integers(-5, 5, (4, 7))
    values = rng.standard_normal((4, 7)).astype(dtype)
    grad = rng.standard_normal((4, 5)).astype(dtype)
    for reduction in REDUCTIONS:
        out = np.asarray(ops.put_along_axis(x, indices, values, axis=1, reduction=reduction))
        args = [grad, x, indices, values, out]
        got = ops.put_along_axis_backward(*[cuda(a) for a in args], axis=1, reduction=reduction)
        want = ops.put_along_axis_backward(*args, axis=1, reduction=reduction)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    tuples = rng.integers(-4, 4, (6, 1))
    updates = rng.standard_normal((6, 5)).astype(dtype)
    for reduction in REDUCTIONS:
        out = np.asarray(ops.scatter_nd(x, tuples, updates, reduction=reduction))
        args = [grad, x, tuples, updates, out]
        got = ops.scatter_nd_backward(*[cuda(a) for a in args], reduction=reduction)
        want = ops.scatter_nd_backward(*args, reduction=reduction)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    g = rng.standard_normal((6, 5)).astype(dtype)
    assert_same(
        ops.gather_nd_backward(cuda(g), cuda(x), cuda(tuples)), ops.gather_nd_backward(g, x, tuples)
    )
    select = rng.integers(-4, 4, 6)
    assert_same(
        ops.index_select_backward(cuda(g), cuda(x), cuda(select), axis=0),
        ops.index_select_backward(g, x, select, axis=0),
    )
    got = ops.index_add_backward(cuda(grad), cuda(x), cuda(select), cuda(g), axis=0, alpha=-0.5)
    want = ops.index_add_backward(grad, x, select, g, axis=0, alpha=-0.5)
    for a, b in zip(got, want, strict=True):
        assert_same(a, b)


def test_out_of_range_index_is_an_error_and_leaves_the_output_untouched():
    x = cuda(np.arange(12, dtype=np.float32).reshape(3, 4))
    out = torch.full((3, 4), 7.0, device="cuda")
    with pytest.raises(ctensor.InvalidArgumentError, match=r"put_along_axis: index 4 .*\[-4, 4\)"):
        ops.put_along_axis(
            x, cuda(np.array([[0], [4], [1]])), cuda(np.ones((3, 1), np.float32)), axis=1, out=out
        )
    with pytest.raises(ctensor.InvalidArgumentError, match="index_add: index -4"):
        ops.index_add(
            x, cuda(np.array([-4], np.int32)), cuda(np.ones((1, 4), np.float32)), axis=0, out=out
        )
    assert bool((out == 7.0).all())
