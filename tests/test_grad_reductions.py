"""Backward operators of the reductions and scans (sum, mean, prod, max, min, logsumexp, var, std,
vector_norm, cumulative_sum, cumulative_prod) against torch.autograd in float64.

Inputs are drawn in the op's dtype (float16, bfloat16, float32, float64) as torch tensors in
contiguous, sliced (a step of 2) and transposed layouts, with axis None, one axis (negative too)
or a tuple, and keepdims either way; the reference differentiates the torch function of the same
values in float64, so only the backward's own rounding is measured (per-dtype tolerances). max
and min draw small integers so that ties are common; prod and cumulative_prod draw zeros."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gradcheck import check_vjp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ctensor
from ctensor import ops

SETTINGS = settings(max_examples=40, deadline=None)
DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
# (rtol, atol as a fraction of the reference's largest magnitude)
TOL = {
    "float16": (4e-3, 2e-3),
    "bfloat16": (3e-2, 1.6e-2),
    "float32": (1e-5, 1e-6),
    "float64": (1e-11, 1e-13),
}


def assert_grad_close(got, expected, dtype, scale=1.0):
    got = got.double().numpy() if isinstance(got, torch.Tensor) else np.asarray(got, np.float64)
    expected = expected.detach().double().numpy()
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    rtol, atol = TOL[dtype]
    finite = np.abs(expected[np.isfinite(expected)])
    magnitude = finite.max() if finite.size else 1.0
    np.testing.assert_allclose(
        got, expected, rtol=rtol * scale, atol=atol * scale * magnitude, equal_nan=True
    )


def layout_tensor(values: np.ndarray, dtype: str, layout: str) -> torch.Tensor:
    """A torch tensor of `dtype` holding `values`, in a contiguous, sliced or transposed view."""
    t = torch.from_numpy(values).to(DTYPES[dtype])
    if layout == "sliced" and t.ndim > 0:
        big = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
        big[..., ::2] = t
        return big[..., ::2]
    if layout == "transposed" and t.ndim > 1:
        return t.permute(*reversed(range(t.ndim))).contiguous().permute(*reversed(range(t.ndim)))
    return t


@st.composite
def reduction_case(draw, min_dims=0, max_dims=4):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=min_dims, max_size=max_dims)))
    ndim = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]) if ndim else st.just("none"))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-ndim, ndim - 1))
    else:
        picked = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
        axis = tuple(a - ndim if draw(st.booleans()) else a for a in picked)
    return {
        "shape": shape,
        "axis": axis,
        "keepdims": draw(st.booleans()),
        "dtype": draw(st.sampled_from(list(DTYPES))),
        "layout": draw(st.sampled_from(["contiguous", "sliced", "transposed"])),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


def dims_of(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(sorted(a % ndim for a in axes))


def torch_prod(x, dims, keepdim):
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, dim=d, keepdim=True)
    if not keepdim and dims:
        x = x.squeeze(dims) if x.ndim else x
    return x


def torch_reduce(name, x, dims, keepdim, correction=0.0):
    if not dims:  # nothing reduced (0-d x): the identity
        return {"logsumexp": x, "var": x * 0, "std": x * 0}.get(name, x)
    if name == "sum":
        return torch.sum(x, dim=dims, keepdim=keepdim)
    if name == "mean":
        return torch.mean(x, dim=dims, keepdim=keepdim)
    if name == "prod":
        return torch_prod(x, dims, keepdim)
    if name == "max":
        return torch.amax(x, dim=dims, keepdim=keepdim)
    if name == "min":
        return torch.amin(x, dim=dims, keepdim=keepdim)
    if name == "logsumexp":
        return torch.logsumexp(x, dim=dims, keepdim=keepdim)
    if name == "var":
        return torch.var(x, dim=dims, keepdim=keepdim, correction=correction)
    if name == "std":
        return torch.std(x, dim=dims, keepdim=keepdim, correction=correction)
    raise AssertionError(name)


def draw_values(name, shape, rng):
    if name in ("max", "min"):
        return rng.integers(-2, 3, size=shape).astype(np.float64)  # ties
    if name == "prod":
        v = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        return np.where(rng.random(shape) < 0.15, 0.0, v)  # zeros, sometimes two in a group
    return rng.uniform(-2, 2, size=shape)


REDUCTIONS = ["sum", "mean", "prod", "max", "min", "logsumexp", "var", "std"]
NEEDS_OUT = ("max", "min", "logsumexp", "std")


def run_reduction_case(name, case, correction=None):
    rng = np.random.default_rng(case["seed"])
    dtype, layout = case["dtype"], case["layout"]
    x = layout_tensor(draw_values(name, case["shape"], rng), dtype, layout)
    axis, keepdims = case["axis"], case["keepdims"]
    attrs = {"axis": axis, "keepdims": keepdims}
    if name in ("var", "std"):
        attrs["correction"] = correction
    dims = dims_of(axis, x.ndim)
    xr = x.double().requires_grad_(True)
    yr = torch_reduce(
        name, xr, dims, keepdims, **({"correction": correction} if correction is not None else {})
    )
    g64 = rng.uniform(-1, 1, size=tuple(yr.shape))
    g = layout_tensor(g64, dtype, layout)
    (expected,) = torch.autograd.grad(yr, xr, g.double())
    args = [g, x]
    if name in NEEDS_OUT:
        args.append(getattr(ops, name)(x, **attrs))
    got = getattr(ops, name + "_backward")(*args, **attrs)
    assert got.dtype == x.dtype
    assert_grad_close(got, expected, dtype, scale=8.0 if name in ("prod", "std") else 1.0)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "logsumexp"])
@SETTINGS
@given(case=reduction_case())
def test_reduction_backward(name, case):
    run_reduction_case(name, case)


@pytest.mark.parametrize("name", ["var", "std"])
@SETTINGS
@given(case=reduction_case(), correction=st.sampled_from([0.0, 1.0, 0.5]))
def test_moment_backward(name, case, correction):
    # N - correction <= 0 is tested on its own below
    dims = dims_of(case["axis"], len(case["shape"]))
    n = int(np.prod([case["shape"][d] for d in dims])) if dims else 1
    if n - correction <= 0:
        correction = 0.0
    run_reduction_case(name, case, correction)


def test_std_of_constant_group_is_zero_gradient():
    x = torch.tensor([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    g = torch.ones(2, dtype=torch.float64)
    out = ops.std(x, axis=1, correction=1.0)
    got = ops.std_backward(g, x, out, axis=1, correction=1.0)
    xr = x.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(torch.std(xr, dim=1, correction=1), xr, g)
    np.testing.assert_allclose(got.numpy(), expected.numpy())
    assert (got[0] == 0).all()


@pytest.mark.filterwarnings("ignore:var")
@pytest.mark.filterwarnings("ignore:std")
def test_var_without_degrees_of_freedom_as_torch():
    x = torch.tensor([[2.0], [3.0]], dtype=torch.float64)
    g = torch.ones(2, dtype=torch.float64)
    got = ops.var_backward(g, x, axis=1, correction=1.0)
    xr = x.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(torch.var(xr, dim=1, correction=1), xr, g)
    np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(expected.numpy()))
    x2 = torch.tensor([[2.0, 4.0]], dtype=torch.float64)
    got2 = ops.var_backward(torch.ones(1, dtype=torch.float64), x2, axis=1, correction=3.0)
    x2r = x2.clone().requires_grad_(True)
    (exp2,) = torch.autograd.grad(torch.var(x2r, dim=1, correction=3), x2r, torch.ones(1).double())
    np.testing.assert_array_equal(got2.numpy(), exp2.numpy())
    # without axis, torch gives nan where x equals the mean and inf elsewhere
    x3 = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    got3 = ops.var_backward(torch.tensor(1.0, dtype=torch.float64), x3, correction=3.0)
    x3r = x3.clone().requires_grad_(True)
    (exp3,) = torch.autograd.grad(torch.var(x3r, correction=3), x3r, torch.tensor(1.0).double())
    np.testing.assert_array_equal(got3.numpy(), exp3.numpy())


def test_max_ties_split_evenly_and_nan_takes_all():
    x = torch.tensor([[3.0, 1.0, 3.0, 3.0], [0.0, float("nan"), 5.0, float("nan")]])
    g = torch.tensor([6.0, 4.0])
    out = ops.max(x, axis=1)
    got = ops.max_backward(g, x, out, axis=1)
    np.testing.assert_array_equal(got.numpy(), [[2.0, 0, 2.0, 2.0], [0, 2.0, 0, 2.0]])
    # full reduction: torch.max without dim spreads the same way
    xr = x[:1].clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(torch.max(xr), xr, torch.tensor(6.0))
    got = ops.min_backward(torch.tensor(6.0), -x[:1], ops.min(-x[:1]))
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_prod_zeros_as_torch():
    x = torch.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    g = torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64)
    got = ops.prod_backward(g, x, axis=-1)
    np.testing.assert_array_equal(got.numpy(), [[0, 6.0, 0], [0, 0, 0], [6.0, 3.0, 2.0]])


@pytest.mark.parametrize("name", ["prod", "max", "min", "var", "std"])
def test_groups_walked_in_blocks(name):
    """Reductions over a leading axis walk up to 64 neighbouring groups together: more than one
    block, a partial last one, and a kept dim between reduced ones."""
    rng = np.random.default_rng(5)
    for shape, axis in [((3, 200), 0), ((4, 3, 130), (0, 1)), ((5, 70, 2), (0, 2))]:
        case = {
            "shape": shape,
            "axis": axis,
            "keepdims": False,
            "dtype": "float64",
            "layout": "contiguous",
            "seed": int(rng.integers(1 << 30)),
        }
        run_reduction_case(name, case, 1.0 if name in ("var", "std") else None)


def test_zero_size_and_errors():
    x = torch.zeros(0, 3)
    got = ops.sum_backward(torch.zeros(3), x, axis=0)
    assert tuple(got.shape) == (0, 3)
    got = ops.mean_backward(torch.zeros(0), x, axis=1)
    assert tuple(got.shape) == (0, 3)
    with pytest.raises(ctensor.CTensorError, match="grad_out has shape"):
        ops.sum_backward(torch.zeros(4), torch.zeros(3, 4), axis=1)
    with pytest.raises(ctensor.CTensorError):
        ops.max_backward(torch.zeros(3), torch.zeros(3, 4), torch.zeros(4), axis=1)


# ----- scans -----------------------------------------------------------------------------------


@st.composite
def scan_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=0, max_size=3)))
    ndim = len(shape)
    if ndim <= 1 and draw(st.booleans()):
        axis = None
    else:
        axis = draw(st.integers(-max(ndim, 1), max(ndim, 1) - 1))
    return {
        "shape": shape,
        "axis": axis,
        "include_initial": draw(st.booleans()),
        "dtype": draw(st.sampled_from(list(DTYPES))),
        "layout": draw(st.sampled_from(["contiguous", "sliced", "transposed"])),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


def torch_scan(name, x, axis, include_initial):
    if x.ndim == 0:
        x = x.reshape(1)
    dim = 0 if axis is None else axis
    y = torch.cumsum(x, dim=dim) if name == "cumulative_sum" else torch.cumprod(x, dim=dim)
    if include_initial:
        shape = list(y.shape)
        shape[dim] = 1
        fill = torch.zeros if name == "cumulative_sum" else torch.ones
        y = torch.cat([fill(shape, dtype=y.dtype), y], dim=dim)
    return y


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@SETTINGS
@given(case=scan_case())
def test_scan_backward(name, case):
    rng = np.random.default_rng(case["seed"])
    dtype, layout, shape = case["dtype"], case["layout"], case["shape"]
    if name == "cumulative_prod":
        values = rng.uniform(0.6, 1.4, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        values = np.where(rng.random(shape) < 0.2, 0.0, values)
    else:
        values = rng.uniform(-2, 2, size=shape)
    x = layout_tensor(np.asarray(values), dtype, layout)
    attrs = {"axis": case["axis"], "include_initial": case["include_initial"]}
    xr = x.double().requires_grad_(True)
    yr = torch_scan(name, xr, case["axis"], case["include_initial"])
    g = layout_tensor(rng.uniform(-1, 1, size=tuple(yr.shape)), dtype, layout)
    (expected,) = torch.autograd.grad(yr, xr, g.double())
    args = [g, x]
    if name == "cumulative_prod":
        args.append(ops.cumulative_prod(x, **attrs))
    got = getattr(ops, name + "_backward")(*args, **attrs)
    assert got.dtype == x.dtype
    assert_grad_close(got, expected, dtype, scale=8.0)


def test_cumulative_prod_backward_zeros_exact():
    x = torch.tensor([2.0, 0.0, 3.0, 0.0, 5.0], dtype=torch.float64)
    g = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64)
    got = ops.cumulative_prod_backward(g, x, ops.cumulative_prod(x))
    xr = x.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(torch.cumprod(xr, 0), xr, g)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


# ----- gradient entries end to end (ctensor.autodiff.vjp, check_vjp) ---------------------------


def numpy_layout(values: np.ndarray, layout: str) -> np.ndarray:
    """`values` (float64) in a contiguous, sliced or transposed NumPy view."""
    if layout == "sliced" and values.ndim:
        big = np.zeros((*values.shape[:-1], 2 * values.shape[-1]))
        big[..., ::2] = values
        return big[..., ::2]
    if layout == "transposed" and values.ndim > 1:
        return values.T.copy().T
    return values


@pytest.mark.parametrize("name", REDUCTIONS)
@settings(max_examples=12, deadline=None)
@given(
    case=reduction_case(),
    vjp_dtype=st.sampled_from(["float64", "float32"]),
    correction=st.sampled_from([0.0, 1.0]),
)
def test_vjp(name, case, vjp_dtype, correction):
    rng = np.random.default_rng(case["seed"])
    shape, axis, keepdims = case["shape"], case["axis"], case["keepdims"]
    dims = dims_of(axis, len(shape))
    if name in ("max", "min"):
        values = rng.permutation(np.prod(shape, dtype=int)).reshape(shape) * 0.25 - 1.0  # no ties
    elif name == "prod":
        values = draw_values(name, shape, rng)
    else:
        values = rng.uniform(-2, 2, size=shape)
    x = numpy_layout(np.asarray(values, dtype=np.float64), case["layout"])
    attrs = {"axis": axis, "keepdims": keepdims}
    extra = {}
    if name in ("var", "std"):
        n = int(np.prod([shape[d] for d in dims])) if dims else 1
        attrs["correction"] = correction if n > correction else 0.0
        extra["correction"] = attrs["correction"]
    check_vjp(
        name,
        [x],
        attrs,
        lambda t: torch_reduce(name, t, dims, keepdims, **extra),
        dtype=vjp_dtype,
        seed=case["seed"],
    )


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@settings(max_examples=15, deadline=None)
@given(case=scan_case(), vjp_dtype=st.sampled_from(["float64", "float32"]))
def test_scan_vjp(name, case, vjp_dtype):
    rng = np.random.default_rng(case["seed"])
    shape = case["shape"]
    values = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    if name == "cumulative_prod":
        values = np.where(rng.random(shape) < 0.2, 0.0, values)
    x = numpy_layout(np.asarray(values, dtype=np.float64), case["layout"])
    attrs = {"axis": case["axis"], "include_initial": case["include_initial"]}
    check_vjp(
        name,
        [x],
        attrs,
        lambda t: torch_scan(name, t, case["axis"], case["include_initial"]),
        dtype=vjp_dtype,
        seed=case["seed"],
    )


def test_vjp_low_precision_on_torch_tensors():
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, size=(3, 4, 5))
    for dtype in ("float16", "bfloat16"):
        check_vjp(
            "sum", [x], {"axis": [0, 2]}, lambda t: t.sum((0, 2)), dtype=dtype, array_type="torch"
        )
        check_vjp(
            "var",
            [x],
            {"axis": [1], "correction": 1.0},
            lambda t: torch.var(t, 1, correction=1),
            dtype=dtype,
            array_type="torch",
        )


@pytest.mark.parametrize("name", ["any", "all", "argmax", "argmin"])
def test_not_differentiable_rows_say_why(name):
    entry = ctensor.op_info(name)["gradient"]
    assert not entry["differentiable"]
    assert entry["note"]
    with pytest.raises(ctensor.autodiff.NotDifferentiableError):
        ctensor.autodiff.vjp(name, [np.zeros(3)], [np.zeros(())])


def test_max_row_states_the_tie_rule():
    assert "torch.amax" in ctensor.op_info("max")["gradient"]["note"]


# ----- vector_norm_backward ---------------------------------------------------------------------

NORM_ORDS = [2.0, 1.0, 0.0, float("inf"), float("-inf"), 3.0, 0.5, 1.5, -1.0]


def torch_norm_grad(x, g, ord, dims, keepdims):
    xr = x.double().detach().requires_grad_(True)
    y = torch.linalg.vector_norm(xr, ord=ord, dim=dims, keepdim=keepdims)
    (grad,) = torch.autograd.grad(y, xr, g.double(), allow_unused=True)
    return torch.zeros_like(xr) if grad is None else grad  # ord 0: torch gives no gradient


@pytest.mark.parametrize("ord", NORM_ORDS)
@settings(max_examples=25, deadline=None)
@given(case=reduction_case(min_dims=1))
def test_vector_norm_backward(ord, case):
    """Against torch.autograd of torch.linalg.vector_norm; small integers for ord +-inf (ties
    share the gradient) and zeros in every group sometimes (torch's 0 subgradient)."""
    rng = np.random.default_rng(case["seed"])
    dtype, layout = case["dtype"], case["layout"]
    if ord in (float("inf"), float("-inf")):
        values = rng.integers(-2, 3, size=case["shape"]).astype(np.float64)
    else:
        values = rng.uniform(0.5, 2, size=case["shape"]) * rng.choice([-1.0, 1.0], case["shape"])
        values = np.where(rng.random(case["shape"]) < 0.1, 0.0, values)
    x = layout_tensor(values, dtype, layout)
    axis, keepdims = case["axis"], case["keepdims"]
    dims = dims_of(axis, x.ndim)
    out = ops.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    # a norm that overflows the dtype (float16's 65504: ord 0.5 over many elements) has no
    # finite gradient to compare with torch's float64 one
    assume(bool(torch.isfinite(torch.as_tensor(out).double()).all()))
    g = layout_tensor(rng.uniform(-1, 1, size=tuple(out.shape)), dtype, layout)
    got = ops.vector_norm_backward(g, x, out, axis=axis, keepdims=keepdims, ord=ord)
    assert got.dtype == x.dtype
    expected = torch_norm_grad(x, g, ord, dims, keepdims)
    assert_grad_close(got, expected, dtype, scale=8.0)


def test_vector_norm_backward_at_zero_is_torchs_subgradient():
    zeros = torch.zeros(2, 3, dtype=torch.float64)
    for ord in NORM_ORDS:
        out = ops.vector_norm(zeros.numpy(), ord=ord, axis=1)
        got = ops.vector_norm_backward(np.ones(2), zeros.numpy(), out, ord=ord, axis=1)
        want = torch_norm_grad(zeros, torch.ones(2), ord, (1,), False).numpy()
        np.testing.assert_array_equal(got, want, err_msg=str(ord))
        np.testing.assert_array_equal(got, np.zeros((2, 3)))


@pytest.mark.parametrize("ord", [2.0, 1.0, 3.0, 0.5, float("inf")])
@settings(max_examples=10, deadline=None)
@given(case=reduction_case(min_dims=1), vjp_dtype=st.sampled_from(["float64", "float32"]))
def test_vector_norm_vjp(ord, case, vjp_dtype):
    rng = np.random.default_rng(case["seed"])
    shape, axis, keepdims = case["shape"], case["axis"], case["keepdims"]
    dims = dims_of(axis, len(shape))
    n = int(np.prod(shape))
    # distinct magnitudes away from 0: no kinks for finite differences
    values = (rng.permutation(n).reshape(shape) + 1.0) * 0.25 * rng.choice([-1.0, 1.0], shape)
    x = numpy_layout(np.asarray(values, dtype=np.float64), case["layout"])
    check_vjp(
        "vector_norm",
        [x],
        {"axis": axis, "keepdims": keepdims, "ord": ord},
        lambda t: torch.linalg.vector_norm(t, ord=ord, dim=dims, keepdim=keepdims),
        dtype=vjp_dtype,
        seed=case["seed"],
    )
