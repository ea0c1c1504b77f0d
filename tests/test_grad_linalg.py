"""Backward operators of matmul and einsum against torch.autograd in float64.

matmul_backward: operands of 1 to 4 dimensions with broadcast batch dimensions (missing or of
extent 1 on either side), 1-D operands, zero extents, in contiguous, sliced and transposed
layouts, on float16, bfloat16, float32 and float64. einsum_backward: one- and two-operand
subscripts with contractions, batch letters, diagonals (repeated letters), letters only one
operand has, implicit outputs and broadcast (extent-1) letters; random specs with "..."
(broadcast ellipsis dims, implicit and explicit outputs) and one to four operands."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import einsum_problems
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from ctensor import ops

SETTINGS = settings(max_examples=60, deadline=None)
DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
TOL = {
    "float16": (5e-3, 4e-3),
    "bfloat16": (4e-2, 3e-2),
    "float32": (2e-5, 2e-6),
    "float64": (1e-11, 1e-13),
}


def assert_grad_close(got, expected, dtype):
    got = got.double().numpy()
    expected = expected.detach().double().numpy()
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    rtol, atol = TOL[dtype]
    magnitude = np.abs(expected).max() if expected.size else 1.0
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol * max(magnitude, 1.0))


def layout_tensor(values: np.ndarray, dtype: str, layout: str) -> torch.Tensor:
    t = torch.from_numpy(np.asarray(values)).to(DTYPES[dtype])
    if layout == "sliced" and t.ndim > 0:
        big = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
        big[..., ::2] = t
        return big[..., ::2]
    if layout == "transposed" and t.ndim > 1:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t


@st.composite
def matmul_case(draw):
    m, k, n = (draw(st.integers(0 if draw(st.booleans()) else 1, 5)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    n1 = draw(st.integers(1, 2 + len(batch)))
    n2 = draw(st.integers(1, 2 + len(batch)))

    def operand_batch(nd):
        dims = batch[len(batch) - max(nd - 2, 0) :] if nd > 2 else []
        return [1 if draw(st.booleans()) else e for e in dims]

    s1 = operand_batch(n1) + ([m, k] if n1 > 1 else [k])
    s2 = operand_batch(n2) + ([k, n] if n2 > 1 else [k])
    return {
        "s1": tuple(s1),
        "s2": tuple(s2),
        "dtype": draw(st.sampled_from(list(DTYPES))),
        "layouts": (
            draw(st.sampled_from(["contiguous", "sliced", "transposed"])),
            draw(st.sampled_from(["contiguous", "sliced", "transposed"])),
            draw(st.sampled_from(["contiguous", "sliced", "transposed"])),
        ),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


@SETTINGS
@given(case=matmul_case())
def test_matmul_backward(case):
    rng = np.random.default_rng(case["seed"])
    dtype = case["dtype"]
    l1, l2, lg = case["layouts"]
    x1 = layout_tensor(rng.uniform(-1, 1, case["s1"]), dtype, l1)
    x2 = layout_tensor(rng.uniform(-1, 1, case["s2"]), dtype, l2)
    r1 = x1.double().requires_grad_(True)
    r2 = x2.double().requires_grad_(True)
    y = torch.matmul(r1, r2)
    g = layout_tensor(rng.uniform(-1, 1, tuple(y.shape)), dtype, lg)
    e1, e2 = torch.autograd.grad(y, (r1, r2), g.double())
    got1, got2 = ops.matmul_backward(g, x1, x2)
    assert got1.dtype == x1.dtype and got2.dtype == x2.dtype
    assert_grad_close(got1, e1, dtype)
    assert_grad_close(got2, e2, dtype)


def test_matmul_backward_large_float32():
    rng = np.random.default_rng(1)
    x1 = torch.from_numpy(rng.standard_normal((3, 70, 90))).float()
    x2 = torch.from_numpy(rng.standard_normal((90, 110))).float()
    g = torch.from_numpy(rng.standard_normal((3, 70, 110))).float()
    r1, r2 = x1.double().requires_grad_(True), x2.double().requires_grad_(True)
    e1, e2 = torch.autograd.grad(torch.matmul(r1, r2), (r1, r2), g.double())
    got1, got2 = ops.matmul_backward(g, x1, x2)
    np.testing.assert_allclose(got1.numpy(), e1.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got2.numpy(), e2.numpy(), rtol=1e-4, atol=1e-4)


def test_matmul_backward_errors():
    with pytest.raises(ctensor.CTensorError, match="grad_out"):
        ops.matmul_backward(torch.zeros(2, 2), torch.zeros(2, 3), torch.zeros(3, 4))
    with pytest.raises(ctensor.CTensorError, match="grad_out"):
        ops.einsum_backward(torch.zeros(2), [torch.zeros(2, 3)], subscripts="ij->j")


# ----- einsum ----------------------------------------------------------------------------------

SUBSCRIPTS = [
    "ij,jk->ik",
    "bij,bjk->bik",
    "ij,jk",
    "ij,kj->ik",
    "i,i",
    "i,i->i",
    "i,j->ij",
    "ij,j->i",
    "bi,i->b",
    "ijk,ikl->jl",
    "ij,ij->ij",
    "ij,jk->",
    "ii->i",
    "ii->",
    "ii",
    "iij->j",
    "ij->ji",
    "ij->",
    "ij->j",
    "ij",
    "ii,ij->j",
    "ab,bc->ca",
]


def einsum_shapes(subscripts, extent, ones):
    inputs = subscripts.split("->")[0].split(",")
    return [
        tuple(1 if (ch in ones and j == 0) else extent[ch] for ch in op)
        for j, op in enumerate(inputs)
    ]


@pytest.mark.parametrize("subscripts", SUBSCRIPTS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_einsum_backward(subscripts, data):
    letters = sorted(set(subscripts) - set(",->"))
    extent = {ch: data.draw(st.integers(1, 4)) for ch in letters}
    # a letter of extent 1 in the first of two operands broadcasts (only where it is not repeated)
    operands = subscripts.split("->")[0].split(",")
    ones = set()
    if len(operands) == 2 and data.draw(st.booleans()):
        candidates = [ch for ch in operands[0] if operands[0].count(ch) == 1 and ch in operands[1]]
        if candidates:
            ones = {data.draw(st.sampled_from(candidates))}
    dtype = data.draw(st.sampled_from(list(DTYPES)))
    layout = data.draw(st.sampled_from(["contiguous", "sliced", "transposed"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    shapes = einsum_shapes(subscripts, extent, ones)
    xs = [layout_tensor(rng.uniform(-1, 1, s), dtype, layout) for s in shapes]
    refs = [x.double().requires_grad_(True) for x in xs]
    expanded = [r.expand(*[extent[ch] for ch in op]) for r, op in zip(refs, operands, strict=True)]
    y = torch.einsum(subscripts, *expanded)
    g = layout_tensor(rng.uniform(-1, 1, tuple(y.shape)), dtype, layout)
    expected = torch.autograd.grad(y, refs, g.double())
    got = ops.einsum_backward(g, xs, subscripts=subscripts)
    assert len(got) == len(xs)
    for gi, ei, xi in zip(got, expected, xs, strict=True):
        assert gi.dtype == xi.dtype
        assert_grad_close(gi, ei, dtype)


# ----- gradient entries end to end (ctensor.autodiff.vjp, check_vjp) ---------------------------


def numpy_layout(values: np.ndarray, layout: str) -> np.ndarray:
    if layout == "sliced" and values.ndim:
        big = np.zeros((*values.shape[:-1], 2 * values.shape[-1]))
        big[..., ::2] = values
        return big[..., ::2]
    if layout == "transposed" and values.ndim > 1:
        return np.swapaxes(np.swapaxes(values, -1, -2).copy(), -1, -2)
    return values


@settings(max_examples=30, deadline=None)
@given(case=matmul_case(), vjp_dtype=st.sampled_from(["float64", "float32"]))
def test_matmul_vjp(case, vjp_dtype):
    rng = np.random.default_rng(case["seed"])
    l1, l2, _ = case["layouts"]
    x1 = numpy_layout(rng.uniform(-1, 1, case["s1"]), l1)
    x2 = numpy_layout(rng.uniform(-1, 1, case["s2"]), l2)
    check_vjp("matmul", [x1, x2], {}, torch.matmul, dtype=vjp_dtype, seed=case["seed"])


@settings(max_examples=25, deadline=None)
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    sizes=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    bias=st.booleans(),
    layout=st.sampled_from(["contiguous", "sliced", "transposed"]),
    vjp_dtype=st.sampled_from(["float64", "float32"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_linear_vjp(lead, sizes, bias, layout, vjp_dtype, seed):
    rng = np.random.default_rng(seed)
    n_in, n_out = sizes
    x = numpy_layout(rng.uniform(-1, 1, (*lead, n_in)), layout)
    w = numpy_layout(rng.uniform(-1, 1, (n_out, n_in)), layout)
    b = rng.uniform(-1, 1, (n_out,)) if bias else None
    check_vjp(
        "linear",
        [x, w, b],
        {},
        lambda x, w, b: torch.nn.functional.linear(x, w, b),
        dtype=vjp_dtype,
        seed=seed,
    )


@settings(max_examples=25, deadline=None)
@given(
    shapes=st.sampled_from(
        [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((4, 3), (4, 3)), ((1, 4), (3, 4)), ((5,), (2, 5))]
    ),
    axis=st.sampled_from([-1, 0]),
    vjp_dtype=st.sampled_from(["float64", "float32"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_vecdot_vjp(shapes, axis, vjp_dtype, seed):
    rng = np.random.default_rng(seed)
    x1, x2 = (rng.uniform(-1, 1, s) for s in shapes)
    try:
        ops.vecdot(x1, x2, axis=axis)
    except (ctensor.CTensorError, ValueError):
        return  # the axis is not shared by both operands with one length
    check_vjp(
        "vecdot",
        [x1, x2],
        {"axis": axis},
        lambda a, b: torch.linalg.vecdot(a, b, dim=axis),
        dtype=vjp_dtype,
        seed=seed,
    )


def test_matrix_transpose_vjp():
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4))
    check_vjp("matrix_transpose", [x], {}, lambda t: t.transpose(-1, -2))


@pytest.mark.parametrize("subscripts", SUBSCRIPTS)
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_einsum_vjp(subscripts, data):
    letters = sorted(set(subscripts) - set(",->"))
    extent = {ch: data.draw(st.integers(1, 4)) for ch in letters}
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    layout = data.draw(st.sampled_from(["contiguous", "sliced", "transposed"]))
    shapes = einsum_shapes(subscripts, extent, set())
    xs = [numpy_layout(rng.uniform(-1, 1, s), layout) for s in shapes]
    check_vjp(
        "einsum",
        [xs],
        {"subscripts": subscripts},
        lambda operands: torch.einsum(subscripts, *operands),
        dtype=data.draw(st.sampled_from(["float64", "float32"])),
    )


# ----- einsum: ellipsis and more than two operands ----------------------------------------------


@settings(max_examples=120, deadline=None)
@given(problem=einsum_problems(min_batch=1), data=st.data())
def test_einsum_backward_ellipsis_and_operands(problem, data):
    spec, shapes = problem
    dtype = data.draw(st.sampled_from(["float64", "float32"]))
    layout = data.draw(st.sampled_from(["contiguous", "sliced", "transposed"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    xs = [layout_tensor(rng.uniform(-1, 1, s), dtype, layout) for s in shapes]
    refs = [x.double().requires_grad_(True) for x in xs]
    y = torch.einsum(spec, *refs)
    g = layout_tensor(rng.uniform(-1, 1, tuple(y.shape)), dtype, layout)
    expected = torch.autograd.grad(y, refs, g.double(), allow_unused=True)
    got = ops.einsum_backward(g, xs, subscripts=spec)
    assert len(got) == len(xs)
    for gi, ei, xi in zip(got, expected, xs, strict=True):
        assert gi.dtype == xi.dtype
        assert_grad_close(gi, torch.zeros_like(xi) if ei is None else ei, dtype)


@settings(max_examples=25, deadline=None)
@given(problem=einsum_problems(min_extent=1, min_batch=1), data=st.data())
def test_einsum_vjp_ellipsis_and_operands(problem, data):
    spec, shapes = problem
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    xs = [rng.uniform(-1, 1, s) for s in shapes]
    check_vjp(
        "einsum",
        [xs],
        {"subscripts": spec},
        lambda operands: torch.einsum(spec, *operands),
        dtype=data.draw(st.sampled_from(["float64", "float32"])),
    )
