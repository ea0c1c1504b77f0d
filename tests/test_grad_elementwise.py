"""The element-wise backward operators (capi/ops/elementwise_grad_table.h) against
torch.autograd: every op on float64, float32, float16 and bfloat16, with hypothesis-drawn shapes,
strides (sliced, reversed, transposed, broadcast views) and broadcasting, their attributes, and
PyTorch's choices at the edge points (relu and abs at 0, ties of maximum and minimum, hardswish at
+-3, leaky_relu and elu at 0, pow and atan2 at zero, nan)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from arrays import TOLERANCE
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor

F = torch.nn.functional
DTYPES = ["float64", "float32", "float16", "bfloat16"]
TORCH_DTYPE = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}

# ----- the ops: forward (torch), input domain, and how the backward op is called -----

# Backward ops of one input from x: name -> (torch forward, (low, high) of x, attribute strategy).
# Domains stay where the derivative is well conditioned (a float32 kernel and a float64 reference
# of the same rounded input then agree to a few ulps); the edge tests cover the rest.
NO_ATTRS = st.just({})


def hardsigmoid(x: torch.Tensor) -> torch.Tensor:
    """torch's hardsigmoid with an exact derivative: torch's hardsigmoid_backward multiplies by
    1/6 rounded to float32 even in float64, where ctensor divides by 6; the same kinks (0 at
    +-3) and 0 at nan."""
    return torch.where(torch.isnan(x), x * 0, F.relu6(x + 3) / 6)


FROM_X = {
    "abs_backward": (torch.abs, (-3, 3), NO_ATTRS),
    "log1p_backward": (torch.log1p, (-0.9, 5), NO_ATTRS),
    "log2_backward": (torch.log2, (0.05, 5), NO_ATTRS),
    "log10_backward": (torch.log10, (0.05, 5), NO_ATTRS),
    "asin_backward": (torch.asin, (-0.9, 0.9), NO_ATTRS),
    "acos_backward": (torch.acos, (-0.9, 0.9), NO_ATTRS),
    "atan_backward": (torch.atan, (-5, 5), NO_ATTRS),
    "asinh_backward": (torch.asinh, (-5, 5), NO_ATTRS),
    "acosh_backward": (torch.acosh, (1.1, 5), NO_ATTRS),
    "atanh_backward": (torch.atanh, (-0.9, 0.9), NO_ATTRS),
    "erf_backward": (torch.erf, (-3, 3), NO_ATTRS),
    "silu_backward": (F.silu, (-8, 8), NO_ATTRS),
    "selu_backward": (F.selu, (-4, 4), NO_ATTRS),
    "hardswish_backward": (F.hardswish, (-5, 5), NO_ATTRS),
    "hardsigmoid_backward": (hardsigmoid, (-5, 5), NO_ATTRS),
    "mish_backward": (F.mish, (-8, 8), NO_ATTRS),
    "leaky_relu_backward": (
        F.leaky_relu,
        (-3, 3),
        st.fixed_dictionaries({"negative_slope": st.sampled_from([0.01, 0.2, -0.5, 1.5])}),
    ),
    "elu_backward": (
        F.elu,
        (-4, 3),
        st.fixed_dictionaries({"alpha": st.sampled_from([1.0, 0.5, 2.0])}),
    ),
    "softplus_backward": (
        F.softplus,
        (-6, 6),
        st.fixed_dictionaries(
            {"beta": st.sampled_from([1.0, 0.5, 2.0]), "threshold": st.sampled_from([20.0, 2.0])}
        ),
    ),
    "gelu_backward": (
        F.gelu,
        (-5, 5),
        st.fixed_dictionaries({"approximate": st.sampled_from(["none", "tanh"])}),
    ),
}

# Backward ops of one input from the result: name -> (torch forward, domain of x, the forward's
# inverse). The reference is torch.autograd at x = inverse(out) in float64, out being the rounded
# result the backward op is given.
FROM_OUT = {
    "relu_backward": (torch.relu, (-3, 3), lambda y: y),
    "expm1_backward": (torch.expm1, (-3, 3), torch.log1p),
    "tan_backward": (torch.tan, (-1.2, 1.2), torch.atan),
    "tanh_backward": (torch.tanh, (-3, 3), torch.atanh),
    "sigmoid_backward": (torch.sigmoid, (-6, 6), torch.logit),
}

# Backward ops of two inputs: name -> (torch forward, domain of x1, domain of x2, outputs).
BINARY = {
    "maximum_backward": (torch.maximum, (-2, 2), (-2, 2), 2),
    "minimum_backward": (torch.minimum, (-2, 2), (-2, 2), 2),
    "pow_backward": (torch.pow, (0.2, 3), (-2, 3), 2),
    "atan2_backward": (torch.atan2, (-3, 3), (-3, 3), 2),
    "logaddexp_backward": (torch.logaddexp, (-4, 4), (-4, 4), 2),
    "copysign_backward": (torch.copysign, (-3, 3), (-3, 3), 1),
}

ALL_BACKWARD = sorted([*FROM_X, *FROM_OUT, *BINARY, "where_backward"])

# float32 kernels compute in float32: a few ulps more than the float64 reference of the same
# inputs, hence the scale on TOLERANCE's float32 rtol (float16/bfloat16 compute in float32 and
# round once, TOLERANCE's own bound).
RTOL_SCALE = {"float64": 1.0, "float32": 8.0, "float16": 1.0, "bfloat16": 1.0}


def tolerances(dtype: str, reference: np.ndarray, scale: float = 1.0) -> tuple[float, float]:
    """(rtol, atol): the dtype's rtol (scaled), and an atol of that many units of the largest
    reference value, for elements where a sum of terms cancels (gelu's and silu's derivatives
    cross zero)."""
    rtol = TOLERANCE[dtype][0] * RTOL_SCALE[dtype] * scale
    finite = np.abs(reference[np.isfinite(reference)])
    magnitude = float(finite.max()) if finite.size else 1.0
    return rtol, rtol * max(magnitude, 1.0)


def assert_grad_close(actual, expected: np.ndarray, dtype: str, scale: float = 1.0) -> None:
    actual = np.asarray(actual.detach().double() if hasattr(actual, "detach") else actual)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    rtol, atol = tolerances(dtype, expected, scale)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def autograd(fn, inputs: list[torch.Tensor], grad: torch.Tensor) -> list[np.ndarray]:
    """torch.autograd's cotangents of fn(*inputs) in float64 (the inputs' values as given)."""
    leaves = [t.detach().double().requires_grad_(True) for t in inputs]
    outs = torch.autograd.grad(fn(*leaves), leaves, grad.double(), allow_unused=True)
    return [
        o.numpy() if o is not None else np.zeros(t.shape) for o, t in zip(outs, leaves, strict=True)
    ]


# ----- layouts -----

LAYOUTS = ["compact", "sliced", "reversed", "transposed"]


def laid_out(values: np.ndarray, dtype: str, layout: str) -> torch.Tensor:
    """A torch tensor of `dtype` holding `values` as a view with the given layout."""
    t = torch.from_numpy(np.array(values, dtype=np.float64)).to(TORCH_DTYPE[dtype])
    if layout == "sliced" and t.ndim:
        big = torch.zeros((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype)
        big[..., ::2] = t
        return big[..., ::2]
    if layout == "reversed" and t.ndim:
        return t.flip(-1).contiguous().flip(-1)
    if layout == "transposed" and t.ndim >= 2:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t


@st.composite
def operand(draw, shape, domain, dtype):
    """A tensor of `shape` with values uniform in `domain`, in a drawn layout."""
    seed = draw(st.integers(0, 2**32 - 1))
    values = np.random.default_rng(seed).uniform(domain[0], domain[1], size=shape)
    return laid_out(values, dtype, draw(st.sampled_from(LAYOUTS)))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)


# ----- the registry -----


def test_every_backward_op_is_registered_for_every_float_dtype() -> None:
    for name in ALL_BACKWARD:
        info = ctensor.op_info(name)
        signatures = {tuple(s) for s in info["signatures"]["cpu"]}
        for dtype in DTYPES:
            assert any(s[0] == dtype for s in signatures), f"{name}: no {dtype} kernel"


# ----- random values, layouts and attributes against torch.autograd -----


@pytest.mark.parametrize("name", sorted(FROM_X))
@settings(max_examples=12, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), shape=shapes)
def test_backward_from_x_matches_torch_autograd(name, data, dtype, shape) -> None:
    forward, domain, attrs_strategy = FROM_X[name]
    attrs = data.draw(attrs_strategy)
    x = data.draw(operand(shape, domain, dtype))
    g = data.draw(operand(shape, (-2, 2), dtype))
    (expected,) = autograd(lambda t: forward(t, **attrs), [x], g)
    actual = getattr(ctensor.ops, name)(g, x, **attrs)
    assert actual.dtype == x.dtype
    assert_grad_close(actual, expected, dtype)


@pytest.mark.parametrize("name", sorted(FROM_OUT))
@settings(max_examples=12, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), shape=shapes)
def test_backward_from_result_matches_torch_autograd(name, data, dtype, shape) -> None:
    forward, domain, inverse = FROM_OUT[name]
    x = data.draw(operand(shape, domain, dtype))
    out = forward(x.double()).to(x.dtype)
    g = data.draw(operand(shape, (-2, 2), dtype))
    (expected,) = autograd(forward, [inverse(out.double())], g)
    actual = getattr(ctensor.ops, name)(g, out)
    assert_grad_close(actual, expected, dtype)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=12, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=5),
)
def test_binary_backward_matches_torch_autograd_at_the_broadcast_shape(
    name, data, dtype, shapes
) -> None:
    forward, domain1, domain2, outputs = BINARY[name]
    (shape1, shape2), result_shape = shapes
    x1 = data.draw(operand(shape1, domain1, dtype))
    x2 = data.draw(operand(shape2, domain2, dtype))
    if name in ("maximum_backward", "minimum_backward"):
        # ties: the same values in both inputs in places
        x2 = torch.where(torch.rand(shape2) < 0.3, torch.zeros((), dtype=x2.dtype), x2)
        x1 = torch.where(torch.rand(shape1) < 0.3, torch.zeros((), dtype=x1.dtype), x1)
    g = data.draw(operand(result_shape, (-2, 2), dtype))
    b1 = torch.broadcast_to(x1, result_shape)
    b2 = torch.broadcast_to(x2, result_shape)
    expected = autograd(forward, [b1, b2], g)
    actual = getattr(ctensor.ops, name)(g, x1, x2)
    actual = actual if isinstance(actual, tuple) else (actual,)
    assert len(actual) == outputs
    for k in range(outputs):
        assert_grad_close(actual[k], expected[k], dtype)


@settings(max_examples=20, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=5),
)
def test_where_backward_matches_torch_autograd(data, dtype, shapes) -> None:
    (shape_c, shape1, shape2), result_shape = shapes
    seed = data.draw(st.integers(0, 2**32 - 1))
    condition = torch.from_numpy(np.asarray(np.random.default_rng(seed).random(shape_c) < 0.5))
    if condition.ndim and data.draw(st.booleans()):
        condition = condition.flip(-1)
    x1 = data.draw(operand(shape1, (-2, 2), dtype))
    x2 = data.draw(operand(shape2, (-2, 2), dtype))
    g = data.draw(operand(result_shape, (-2, 2), dtype))
    b1 = torch.broadcast_to(x1, result_shape)
    b2 = torch.broadcast_to(x2, result_shape)
    expected = autograd(lambda a, b: torch.where(condition, a, b), [b1, b2], g)
    grad_x1, grad_x2 = ctensor.ops.where_backward(g, condition)
    assert tuple(grad_x1.shape) == tuple(result_shape)
    assert_grad_close(grad_x1, expected[0], dtype)
    assert_grad_close(grad_x2, expected[1], dtype)


# ----- edge points: PyTorch's values exactly (float64) -----

NAN, INF = math.nan, math.inf


def exact(name, inputs, torch_fn, **attrs):
    """The backward op on float64 edge values, against torch.autograd, nan and signs included."""
    tensors = [torch.tensor(v, dtype=torch.float64) for v in inputs]
    g = torch.tensor([1.0] * len(inputs[0]), dtype=torch.float64)
    if name in FROM_OUT:
        forward, _, inverse = FROM_OUT[name]
        expected = autograd(forward, [inverse(forward(tensors[0]))], g)
        actual = getattr(ctensor.ops, name)(g, forward(tensors[0]))
    else:
        expected = autograd(lambda *t: torch_fn(*t, **attrs), tensors, g)
        actual = getattr(ctensor.ops, name)(g, *tensors, **attrs)
    actual = actual if isinstance(actual, tuple) else (actual,)
    for a, e in zip(actual, expected[: len(actual)], strict=True):
        np.testing.assert_array_equal(np.asarray(a), e)


def test_relu_abs_and_the_piecewise_linear_activations_at_their_kinks() -> None:
    exact("relu_backward", [[-1.0, 0.0, -0.0, 2.0, NAN]], None)
    exact("abs_backward", [[-1.0, 0.0, -0.0, 2.0, NAN]], torch.abs)
    exact("hardswish_backward", [[-3.5, -3.0, -2.5, 0.0, 2.5, 3.0, 3.5, NAN]], F.hardswish)
    exact("hardsigmoid_backward", [[-3.5, -3.0, -2.5, 0.0, 2.5, 3.0, 3.5, NAN]], hardsigmoid)
    exact("leaky_relu_backward", [[-1.0, 0.0, 1.0, NAN]], F.leaky_relu, negative_slope=0.2)
    exact("elu_backward", [[-1.0, 0.0, 1.0, NAN]], F.elu, alpha=0.5)
    exact("selu_backward", [[-1.0, 0.0, 1.0, NAN]], F.selu)


def test_maximum_and_minimum_split_ties_and_pass_nan_to_both() -> None:
    values = [[1.0, 2.0, 3.0, NAN, 1.0, NAN], [1.0, 1.0, 4.0, 1.0, NAN, NAN]]
    exact("maximum_backward", values, torch.maximum)
    exact("minimum_backward", values, torch.minimum)


def test_pow_atan2_copysign_and_logaddexp_at_zeros_and_infinities() -> None:
    exact(
        "pow_backward",
        [[0.0, 0.0, 0.0, 0.0, -2.0, 2.0, 4.0], [2.0, 0.0, -1.0, 0.5, 3.0, 0.0, 0.5]],
        torch.pow,
    )
    exact("atan2_backward", [[0.0, 1.0, 0.0, 2.0, INF], [0.0, 0.0, 1.0, 3.0, 1.0]], torch.atan2)
    exact(
        "copysign_backward",
        [[0.0, -0.0, 2.0, -2.0, NAN], [-1.0, 1.0, -1.0, 3.0, -1.0]],
        lambda a, b: torch.copysign(a, b.detach()),
    )
    exact(
        "logaddexp_backward",
        [[INF, -INF, 0.0, 800.0], [INF, -INF, 0.0, -800.0]],
        torch.logaddexp,
    )


def test_saturating_activations_give_exact_zeros_far_out() -> None:
    exact("silu_backward", [[-800.0, 800.0, 0.0]], F.silu)
    exact("mish_backward", [[-800.0, 800.0, 0.0]], F.mish)
    exact("softplus_backward", [[-800.0, 20.0, 20.5, 0.0]], F.softplus)
    exact("sigmoid_backward", [[-800.0, 800.0, 0.0]], None)
    exact("tanh_backward", [[-800.0, 800.0, 0.0]], None)
    for form in ("none", "tanh"):
        actual = ctensor.ops.gelu_backward(
            torch.ones(3, dtype=torch.float64),
            torch.tensor([-40.0, 40.0, 0.0], dtype=torch.float64),
            approximate=form,
        )
        np.testing.assert_array_equal(np.asarray(actual), [0.0, 1.0, 0.5])


def test_gelu_backward_rejects_an_unknown_approximation() -> None:
    x = np.ones(3)
    with pytest.raises(ctensor.CTensorError, match="approximate"):
        ctensor.ops.gelu_backward(x, x, approximate="fast")


def test_backward_ops_reject_a_non_bool_condition_and_unbroadcastable_shapes() -> None:
    with pytest.raises(ctensor.UnsupportedDTypeError, match="condition must be bool"):
        ctensor.ops.where_backward(np.ones(3), np.ones(3))
    with pytest.raises(ctensor.CTensorError, match="broadcast"):
        ctensor.ops.maximum_backward(np.ones(3), np.ones(3), np.ones(4))


# ----- gradient entries end to end: ctensor.autodiff.vjp against torch and finite differences -----

# Forward ops with one input: name -> (torch forward, domain of x, attribute strategy).
UNARY_ROWS = {
    "negative": (torch.neg, (-3, 3), NO_ATTRS),
    "positive": (torch.positive, (-3, 3), NO_ATTRS),
    "abs": (torch.abs, (-3, 3), NO_ATTRS),
    "square": (torch.square, (-3, 3), NO_ATTRS),
    "relu": (torch.relu, (-3, 3), NO_ATTRS),
    "exp": (torch.exp, (-3, 3), NO_ATTRS),
    "expm1": (torch.expm1, (-3, 3), NO_ATTRS),
    "log": (torch.log, (0.1, 5), NO_ATTRS),
    "log1p": (torch.log1p, (-0.9, 5), NO_ATTRS),
    "log2": (torch.log2, (0.1, 5), NO_ATTRS),
    "log10": (torch.log10, (0.1, 5), NO_ATTRS),
    "sqrt": (torch.sqrt, (0.1, 5), NO_ATTRS),
    "reciprocal": (torch.reciprocal, (0.3, 4), NO_ATTRS),
    "sin": (torch.sin, (-4, 4), NO_ATTRS),
    "cos": (torch.cos, (-4, 4), NO_ATTRS),
    "tan": (torch.tan, (-1.2, 1.2), NO_ATTRS),
    "asin": (torch.asin, (-0.9, 0.9), NO_ATTRS),
    "acos": (torch.acos, (-0.9, 0.9), NO_ATTRS),
    "atan": (torch.atan, (-4, 4), NO_ATTRS),
    "sinh": (torch.sinh, (-3, 3), NO_ATTRS),
    "cosh": (torch.cosh, (-3, 3), NO_ATTRS),
    "tanh": (torch.tanh, (-3, 3), NO_ATTRS),
    "asinh": (torch.asinh, (-4, 4), NO_ATTRS),
    "acosh": (torch.acosh, (1.2, 4), NO_ATTRS),
    "atanh": (torch.atanh, (-0.9, 0.9), NO_ATTRS),
    "erf": (torch.erf, (-3, 3), NO_ATTRS),
    "sigmoid": (torch.sigmoid, (-6, 6), NO_ATTRS),
    **{name[: -len("_backward")]: FROM_X[name] for name in FROM_X if name != "abs_backward"},
}
# Forward ops with two inputs: name -> (torch forward, domain of x1, domain of x2).
BINARY_ROWS = {
    "add": (torch.add, (-3, 3), (-3, 3)),
    "subtract": (torch.subtract, (-3, 3), (-3, 3)),
    "multiply": (torch.multiply, (-3, 3), (-3, 3)),
    "divide": (torch.divide, (-3, 3), (0.5, 3)),
    "maximum": (torch.maximum, (-3, 3), (-3, 3)),
    "minimum": (torch.minimum, (-3, 3), (-3, 3)),
    "pow": (torch.pow, (0.2, 3), (-2, 3)),
    "atan2": (torch.atan2, (-3, 3), (-3, 3)),
    "hypot": (torch.hypot, (-3, 3), (-3, 3)),
    "logaddexp": (torch.logaddexp, (-4, 4), (-4, 4)),
    "remainder": (torch.remainder, (-5, 5), (0.7, 3)),
}
NOT_DIFFERENTIABLE = [
    "sign", "floor", "ceil", "trunc", "round", "isnan", "isinf", "isfinite", "logical_not",
    "bitwise_invert", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
]  # fmt: skip
VJP_DTYPES = ["float64", "float32", "float16", "bfloat16"]


def _values(rng: np.random.Generator, shape, domain) -> np.ndarray:
    return np.asarray(rng.uniform(domain[0], domain[1], size=shape))


def test_every_elementwise_op_has_a_gradient_row() -> None:
    covered = {*UNARY_ROWS, *BINARY_ROWS, *NOT_DIFFERENTIABLE, "copysign", "where"}
    elementwise = {
        name
        for name in ctensor.list_ops()
        if "elementwise" in ctensor.op_info(name)["flags"]
        and not name.endswith("_backward")
        and name not in ("astype", "clip", "sum_to_shape")
    }
    assert elementwise <= covered, sorted(elementwise - covered)
    for name in covered:
        entry = ctensor.op_info(name)["gradient"]
        assert "error" not in entry, (name, entry)
        assert entry["differentiable"] == (name not in NOT_DIFFERENTIABLE), name
    for name in NOT_DIFFERENTIABLE:
        assert ctensor.op_info(name)["gradient"]["note"], f"{name}: no reason given"


# The kinks of the piecewise activations that the drawn x can round onto exactly (the slope
# jumps there; the kernels take torch's one-sided choice, which the exact tests at the kinks
# check): name -> points(attrs). softplus turns linear above threshold / beta.
KINKS = {
    "hardswish": lambda attrs: [-3.0, 3.0],
    "hardsigmoid": lambda attrs: [-3.0, 3.0],
    "softplus": lambda attrs: [attrs["threshold"] / attrs["beta"]],
}


@pytest.mark.parametrize("name", sorted(UNARY_ROWS))
@settings(max_examples=4, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(VJP_DTYPES), shape=shapes)
def test_unary_vjp_matches_torch_and_finite_differences(name, data, dtype, shape) -> None:
    forward, domain, attrs_strategy = UNARY_ROWS[name]
    attrs = data.draw(attrs_strategy)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = _values(rng, shape, domain)
    _check_unary_vjp(name, attrs, x, dtype)


def _check_unary_vjp(name: str, attrs: dict, x: np.ndarray, dtype: str) -> None:
    for kink in KINKS.get(name, lambda _: [])(attrs):
        # finite differences across a kink average the two one-sided slopes; rounding to
        # bfloat16 (spacing 1/64 near 3) lands on ±3 often enough to fail a run now and then
        x = np.where(np.abs(x - kink) < 0.05, x + 0.1, x)
    check_vjp(name, [x], attrs, lambda t: UNARY_ROWS[name][0](t, **attrs), dtype=dtype)


@pytest.mark.parametrize(
    ("name", "attrs"),
    [
        ("hardswish", {}),
        ("hardsigmoid", {}),
        ("softplus", {"beta": 1.0, "threshold": 2.0}),
        ("softplus", {"beta": 0.5, "threshold": 2.0}),
    ],
)
def test_unary_vjp_with_inputs_on_the_kinks(name, attrs) -> None:
    """Hypothesis found bfloat16 inputs that round onto hardsigmoid's and hardswish's kink at
    ±3 (finite differences gave the mean of the two slopes there): such inputs are moved off
    the kinks before the finite-difference check; the kinks keep their own exact test."""
    x = np.array([[-3.0, 3.0, 2.0, 4.0], [-3.004, 2.999, 1.0, 0.5]])
    _check_unary_vjp(name, attrs, x, "bfloat16")


@pytest.mark.parametrize("name", sorted(BINARY_ROWS))
@settings(max_examples=4, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(VJP_DTYPES),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
)
def test_binary_vjp_reduces_to_each_input_shape(name, data, dtype, shapes) -> None:
    forward, domain1, domain2 = BINARY_ROWS[name]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x1 = _values(rng, shapes.input_shapes[0], domain1)
    x2 = _values(rng, shapes.input_shapes[1], domain2)
    if name == "remainder":  # finite differences across a jump of x1 - floor(x1 / x2) * x2
        q = x1 / x2
        x1 = np.where(np.abs(q - np.round(q)) < 0.05, x1 + 0.2 * x2, x1)
    check_vjp(name, [x1, x2], {}, forward, dtype=dtype)


@settings(max_examples=12, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(VJP_DTYPES),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=4),
)
def test_where_vjp_leaves_the_condition_without_a_cotangent(data, dtype, shapes) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    condition = np.asarray(rng.random(shapes.input_shapes[0]) < 0.5)
    x1 = _values(rng, shapes.input_shapes[1], (-2, 2))
    x2 = _values(rng, shapes.input_shapes[2], (-2, 2))
    grads = check_vjp("where", [condition, x1, x2], {}, torch.where, dtype=dtype)
    assert grads[0] is None


@settings(max_examples=12, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(VJP_DTYPES),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
)
def test_copysign_vjp_gives_x1_a_cotangent_and_x2_none(data, dtype, shapes) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    (shape1, shape2), result_shape = shapes
    x1 = laid_out(_values(rng, shape1, (-3, 3)), dtype, "compact")
    x2 = laid_out(_values(rng, shape2, (-3, 3)), dtype, "compact")
    g = laid_out(_values(rng, result_shape, (-2, 2)), dtype, "compact")
    grad_x1, grad_x2 = ctensor.autodiff.vjp("copysign", [x1, x2], [g])
    assert grad_x2 is None  # torch gives zeros: the sign of x2 is piecewise constant
    (expected,) = autograd(lambda a: torch.copysign(a, x2.double()), [x1], g)
    assert_grad_close(grad_x1, expected, dtype)


@pytest.mark.parametrize("name", NOT_DIFFERENTIABLE)
def test_vjp_of_a_not_differentiable_op_is_refused(name) -> None:
    x = np.array([1.5, -2.0, 3.0])
    arity = len(ctensor.op_info(name)["inputs"])
    inputs = [x.astype(np.int32) if name.startswith("bitwise") else x] * arity
    with pytest.raises(ctensor.autodiff.NotDifferentiableError):
        ctensor.autodiff.vjp(name, inputs, [np.ones(3)])
