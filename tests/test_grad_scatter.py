"""Gradients of put_along_axis, gather_nd, scatter_nd, index_select and index_add, end to end
through check_vjp (torch.autograd and central finite differences) on drawn shapes, axes and
repeated indices, for every reduction; and their backward ops on float16, bfloat16 and float32
against the float64 ones.

torch's scatter_reduce backward is the reference of add, multiply, max and min (max and min share
the cotangent evenly among ties, as torch does; the test builds ties on purpose). For "none"
with repeated indices ctensor gives the cotangent to the value kept (the last one), the
derivative of its deterministic forward, where torch gives it to every repeat: those cases are
checked against finite differences only."""

from __future__ import annotations

import numpy as np
import torch
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

from ctensor import ops

REDUCTIONS = ["none", "add", "multiply", "max", "min"]
TORCH_REDUCE = {"add": "sum", "multiply": "prod", "max": "amax", "min": "amin"}
SETTINGS = settings(max_examples=25, deadline=None)


def distinct_values(rng, shape):
    """Values away from each other and from zero: finite differences see no kink."""
    count = int(np.prod(shape))
    values = (rng.permutation(4 * count + 8)[:count] - 2 * count - 4 + 0.5) / (count + 2)
    return values.reshape(shape)


@st.composite
def along_axis_case(draw):
    ndim = draw(st.integers(1, 3))
    xshape = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    axis = draw(st.integers(-ndim, ndim - 1))
    a = axis % ndim
    ishape = [draw(st.integers(1, 5)) if d == a else n for d, n in enumerate(xshape)]
    if ndim > 1 and draw(st.booleans()):  # an indices extent of 1 repeats along x
        d = draw(st.sampled_from([d for d in range(ndim) if d != a]))
        ishape[d] = 1
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    indices = rng.integers(-xshape[a], xshape[a], ishape)
    wshape = [i if d == a else n for d, (i, n) in enumerate(zip(ishape, xshape, strict=True))]
    vshape = wshape[1:] if ndim > 1 and draw(st.booleans()) else wshape  # values broadcast
    x = distinct_values(rng, xshape)
    values = distinct_values(rng, vshape) * 1.3
    return x, indices, values, axis, seed


def torch_put_along_axis(x, indices, values, axis, reduction):
    a = axis % x.ndim
    shape = [indices.shape[d] if d == a else x.shape[d] for d in range(x.ndim)]
    index = torch.as_tensor(np.broadcast_to(indices % x.shape[a], shape).copy())
    src = values.expand(shape)
    if reduction == "none":
        return x.scatter(a, index, src)
    return x.scatter_reduce(a, index, src, TORCH_REDUCE[reduction], include_self=True)


def has_repeats(indices, shape, axis):
    a = axis % len(shape)
    full = np.broadcast_to(
        indices % shape[a], [indices.shape[d] if d == a else shape[d] for d in range(len(shape))]
    )
    lanes = np.moveaxis(full, a, -1).reshape(-1, full.shape[a])
    return any(len(set(lane)) != len(lane) for lane in lanes)


@SETTINGS
@given(case=along_axis_case(), reduction=st.sampled_from(REDUCTIONS))
def test_put_along_axis_vjp(case, reduction):
    x, indices, values, axis, seed = case
    attrs = {"axis": axis, "reduction": reduction}
    if reduction == "none" and has_repeats(indices, x.shape, axis):
        check_vjp("put_along_axis", [x, indices, values], attrs, None, seed=seed)
        return
    check_vjp(
        "put_along_axis",
        [x, indices, values],
        attrs,
        lambda x, i, v: torch_put_along_axis(x, i.numpy(), v, axis, reduction),
        seed=seed,
    )


def test_put_along_axis_max_min_share_ties_as_torch():
    x = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    indices = np.array([[0, 0, 2, 1], [1, 1, 1, 0]])
    values = np.array([[1.0, 0.5, 3.0, 4.0], [0.5, 0.5, 0.25, 0.5]])
    for reduction in ("max", "min"):
        check_vjp(
            "put_along_axis",
            [x, indices, values],
            {"axis": 1, "reduction": reduction},
            lambda x, i, v, r=reduction: x.scatter_reduce(1, i, v, TORCH_REDUCE[r]),
            fd=False,  # ties: the derivative has a kink, torch's subgradient is the reference
        )


def test_put_along_axis_multiply_with_zeros_as_torch():
    x = np.array([[0.0, 2.0, 3.0], [1.5, 0.0, -1.0]])
    indices = np.array([[0, 0, 1, 2], [1, 1, 0, 2]])
    values = np.array([[1.5, 0.0, 0.0, 2.0], [0.0, 3.0, 0.0, 2.5]])
    check_vjp(
        "put_along_axis",
        [x, indices, values],
        {"axis": 1, "reduction": "multiply"},
        lambda x, i, v: x.scatter_reduce(1, i, v, "prod"),
    )


@st.composite
def nd_case(draw, batch=True):
    ndim = draw(st.integers(1, 3))
    xshape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    b = draw(st.integers(0, ndim - 1)) if batch else 0
    k = draw(st.integers(1, ndim - b))
    extra = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    columns = [rng.integers(-xshape[b + m], xshape[b + m], xshape[:b] + extra) for m in range(k)]
    indices = np.stack(columns, -1)
    return distinct_values(rng, xshape), indices, b, seed


def torch_gather_nd(x, indices, b):
    k = indices.shape[-1]
    if b == 0:
        return x[tuple(torch.as_tensor(indices[..., m]) for m in range(k))]
    return torch.stack([torch_gather_nd(x[i], indices[i], b - 1) for i in range(x.shape[0])])


@SETTINGS
@given(case=nd_case())
def test_gather_nd_vjp(case):
    x, indices, b, seed = case
    check_vjp(
        "gather_nd",
        [x, indices],
        {"batch_dims": b},
        lambda x, i: torch_gather_nd(x, i.numpy(), b),
        seed=seed,
    )


def torch_scatter_nd(x, indices, updates, reduction):
    k = indices.shape[-1]
    tuples = indices.reshape(-1, k)
    slabs = updates.reshape((tuples.shape[0],) + tuple(x.shape[k:]))
    out = x
    for i in range(tuples.shape[0]):
        where = tuple(int(j) for j in tuples[i])
        current = out[where]
        new = {
            "none": lambda c, u: u,
            "add": torch.add,
            "multiply": torch.mul,
            "max": torch.maximum,
            "min": torch.minimum,
        }[reduction](current, slabs[i])
        out = out.index_put(tuple(torch.tensor(j) for j in where), new)
    return out


@SETTINGS
@given(case=nd_case(batch=False), reduction=st.sampled_from(REDUCTIONS))
def test_scatter_nd_vjp(case, reduction):
    x, indices, _, seed = case
    k = indices.shape[-1]
    rng = np.random.default_rng(seed + 1)
    updates = distinct_values(rng, indices.shape[:-1] + x.shape[k:]) * 1.7
    # torch.maximum / minimum split ties; the sequential torch reference here is exact for
    # every reduction (its "none" keeps the last update, as ctensor)
    check_vjp(
        "scatter_nd",
        [x, indices, updates],
        {"reduction": reduction},
        lambda x, i, u: torch_scatter_nd(x, i.numpy() % np.array(x.shape[:k]), u, reduction),
        seed=seed,
    )


@st.composite
def select_case(draw):
    ndim = draw(st.integers(1, 3))
    xshape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    axis = draw(st.integers(-ndim, ndim - 1))
    n = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    indices = rng.integers(-xshape[axis], xshape[axis], n)
    return distinct_values(rng, xshape), indices, axis, seed


@SETTINGS
@given(case=select_case())
def test_index_select_vjp(case):
    x, indices, axis, seed = case
    a = axis % x.ndim
    check_vjp(
        "index_select",
        [x, indices],
        {"axis": axis},
        lambda x, i: torch.index_select(x, a, i % x.shape[a]),
        seed=seed,
    )


@SETTINGS
@given(case=select_case(), alpha=st.sampled_from([1.0, -2.5]))
def test_index_add_vjp(case, alpha):
    x, indices, axis, seed = case
    a = axis % x.ndim
    sshape = list(x.shape)
    sshape[a] = indices.size
    source = distinct_values(np.random.default_rng(seed + 1), sshape)
    check_vjp(
        "index_add",
        [x, indices, source],
        {"axis": axis, "alpha": alpha},
        lambda x, i, s: x.index_add(a, i % x.shape[a], s, alpha=alpha),
        seed=seed,
    )


def test_backward_ops_in_low_precision_match_float64():
    rng = np.random.default_rng(5)
    x = distinct_values(rng, (3, 5))
    indices = rng.integers(-5, 5, (3, 4))
    values = distinct_values(rng, (3, 4))
    grad = rng.standard_normal((3, 5))
    for reduction in REDUCTIONS:
        out64 = ops.put_along_axis(x, indices, values, axis=1, reduction=reduction)
        want = ops.put_along_axis_backward(
            grad, x, indices, values, out64, axis=1, reduction=reduction
        )
        for dtype, tol in (("float32", 1e-5), ("float16", 2e-2)):
            args = [a.astype(dtype) for a in (grad, x)] + [indices, values.astype(dtype)]
            out = ops.put_along_axis(*args[1:], axis=1, reduction=reduction)
            got = ops.put_along_axis_backward(*args, out, axis=1, reduction=reduction)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(
                    np.asarray(g, np.float64), np.asarray(w), rtol=tol, atol=tol * 4
                )
    # bfloat16 through torch tensors: repeated tuples add up
    tuples = np.array([[[0, 1], [2, 2]], [[0, 1], [0, 1]], [[-1, 4], [2, 2]]])
    want = np.asarray(ops.gather_nd_backward(grad[:, :2], x, tuples))
    got = ops.gather_nd_backward(
        torch.tensor(grad[:, :2], dtype=torch.bfloat16),
        torch.tensor(x, dtype=torch.bfloat16),
        torch.from_numpy(tuples),
    )
    assert got.dtype == torch.bfloat16 and tuple(got.shape) == (3, 5)
    np.testing.assert_allclose(got.float().numpy(), want, rtol=2e-2, atol=3e-2)
