"""The backward operators of convolutions, pooling and interpolate against torch.autograd.

Each backward op gets torch tensors of one dtype (float16, bfloat16, float32, float64; layouts
drawn: compact, every other element, channels-last) and is compared with torch.autograd.grad of
the forward in float64 on the same (already rounded) values. Tolerance: the dtype's one rounding
of the result (rtol, or in the subnormal range the subnormal spacing) plus k·eps_acc·bound,
where k is the number of terms a result element sums, eps_acc the accumulator's machine epsilon
(float32 for the 16-bit types) and bound the same backward op applied to the magnitudes |inputs|
(Higham's γ_k bound, as tests/test_ops_matmul_conv.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gradcheck import check_vjp
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import ctensor

DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-13}
ACC_EPS = {
    "float16": 1.2e-7,
    "bfloat16": 1.2e-7,
    "float32": 1.2e-7,
    "float64": 2.3e-16,
}
# The spacing of each dtype's subnormals: a result that underflows into them is rounded to a
# multiple of it, an absolute error (at most half of it; the whole spacing is used so that the
# float64 term does not underflow to 0) that rtol·|result| does not cover.
SUBNORMAL = {
    "float16": 2.0**-24,
    "bfloat16": 2.0**-133,
    "float32": 2.0**-149,
    "float64": 2.0**-1074,
}


def layout(tensor: torch.Tensor, kind: str) -> torch.Tensor:
    """The same values in another layout: compact, every other element of a buffer twice as
    wide in W, or channels-last."""
    if kind == "sliced":
        big = torch.zeros(tensor.shape[:-1] + (2 * tensor.shape[-1],), dtype=tensor.dtype)
        big[..., ::2] = tensor
        return big[..., ::2]
    if kind == "channels_last" and tensor.ndim == 4:
        return tensor.contiguous(memory_format=torch.channels_last)
    return tensor.contiguous()


LAYOUTS = st.sampled_from(["compact", "sliced", "channels_last"])


def random(shape, dtype: str, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float64).to(DTYPES[dtype])


def f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float64)


def vjp(forward, inputs: list[torch.Tensor], grad_out: torch.Tensor) -> list[torch.Tensor]:
    """torch.autograd's cotangents of `inputs` (float64) for output cotangent grad_out."""
    leaves = [f64(t).requires_grad_(True) for t in inputs]
    out = forward(*leaves)
    return list(torch.autograd.grad(out, leaves, f64(grad_out), allow_unused=True))


def check(actual, expected, bound, terms: int, dtype: str, extra: float = 0.0):
    assert actual.dtype == DTYPES[dtype]
    assert tuple(actual.shape) == tuple(expected.shape)
    got = actual.detach().to(torch.float64).numpy()
    want = expected.detach().numpy()
    atol = (terms * ACC_EPS[dtype] + extra) * bound.detach().numpy() + 1e-300
    err = np.abs(got - want)
    limit = RTOL[dtype] * np.abs(want) + SUBNORMAL[dtype] + atol
    bad = ~(err <= limit)
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} off; worst {err[bad].max()} vs {limit[bad].min()}"
    )


# ----------------------------------------------------------------------------------------------
# conv2d and conv_transpose2d
# ----------------------------------------------------------------------------------------------


@st.composite
def conv_cases(draw, transpose: bool = False):
    groups = draw(st.integers(1, 3))
    cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    dilation = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    padding = [draw(st.integers(0, 2)), draw(st.integers(0, 2))]
    n = draw(st.integers(1, 3))
    if transpose:
        # input (N, C_in, H, W), weight (C_in, C_out / groups, kH, kW)
        output_padding = [draw(st.integers(0, max(stride[k], dilation[k]) - 1)) for k in range(2)]
        hw = []
        for k, kern in enumerate((kh, kw)):
            low = 1
            while (low - 1) * stride[k] - 2 * padding[k] + dilation[k] * (
                kern - 1
            ) + output_padding[k] + 1 < 1:
                low += 1
            hw.append(draw(st.integers(low, low + 5)))
        return {
            "x_shape": (n, cg * groups, *hw),
            "w_shape": (cg * groups, og, kh, kw),
            "attrs": {
                "stride": stride,
                "padding": padding,
                "output_padding": output_padding,
                "groups": groups,
                "dilation": dilation,
            },
        }
    hw = []
    for k, kern in enumerate((kh, kw)):
        span = dilation[k] * (kern - 1) + 1
        low = max(1, span - 2 * padding[k])
        hw.append(draw(st.integers(low, low + 7)))
    return {
        "x_shape": (n, cg * groups, *hw),
        "w_shape": (og * groups, cg, kh, kw),
        "attrs": {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups},
    }


def conv_out_shape(case) -> tuple:
    x = torch.zeros(case["x_shape"], dtype=torch.float64)
    w = torch.zeros(case["w_shape"], dtype=torch.float64)
    if "output_padding" in case["attrs"]:
        return tuple(F.conv_transpose2d(x, w, **case["attrs"]).shape)
    return tuple(F.conv2d(x, w, **case["attrs"]).shape)


@pytest.mark.parametrize("dtype", list(DTYPES))
@settings(max_examples=20, deadline=None)
@given(case=conv_cases(), seed=st.integers(0, 2**32 - 1), lx=LAYOUTS, lg=LAYOUTS, lw=LAYOUTS)
def test_conv2d_backward(dtype, case, seed, lx, lg, lw):
    gen = torch.Generator().manual_seed(seed)
    attrs = case["attrs"]
    x = layout(random(case["x_shape"], dtype, gen), lx)
    w = layout(random(case["w_shape"], dtype, gen), lw)
    g = layout(random(conv_out_shape(case), dtype, gen), lg)
    grad_x = ctensor.ops.conv2d_backward_input(g, x, w, **attrs)
    grad_w = ctensor.ops.conv2d_backward_weight(g, x, w, **attrs)

    def forward(a, b):
        return F.conv2d(a, b, **attrs)

    want_x, want_w = vjp(forward, [x, w], g)
    bound_x, bound_w = vjp(forward, [x.abs(), w.abs()], g.abs())
    kh, kw = case["w_shape"][2:]
    out = conv_out_shape(case)
    check(grad_x, want_x, bound_x, out[1] * kh * kw, dtype)
    check(grad_w, want_w, bound_w, out[0] * out[2] * out[3], dtype)


@pytest.mark.parametrize("dtype", list(DTYPES))
@settings(max_examples=20, deadline=None)
@given(case=conv_cases(True), seed=st.integers(0, 2**32 - 1), lx=LAYOUTS, lg=LAYOUTS)
def test_conv_transpose2d_backward(dtype, case, seed, lx, lg):
    gen = torch.Generator().manual_seed(seed)
    attrs = case["attrs"]
    x = layout(random(case["x_shape"], dtype, gen), lx)
    w = random(case["w_shape"], dtype, gen)
    g = layout(random(conv_out_shape(case), dtype, gen), lg)
    grad_x = ctensor.ops.conv_transpose2d_backward_input(g, x, w, **attrs)
    conv_attrs = {k: attrs[k] for k in ("stride", "padding", "dilation", "groups")}
    grad_w = ctensor.ops.conv2d_backward_weight(x, g, w, **conv_attrs)

    def forward(a, b):
        return F.conv_transpose2d(a, b, **attrs)

    want_x, want_w = vjp(forward, [x, w], g)
    bound_x, bound_w = vjp(forward, [x.abs(), w.abs()], g.abs())
    kh, kw = case["w_shape"][2:]
    check(grad_x, want_x, bound_x, case["w_shape"][1] * kh * kw, dtype)
    check(
        grad_w, want_w, bound_w, case["x_shape"][0] * case["x_shape"][2] * case["x_shape"][3], dtype
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 16, 12, 12), (3, 8, 9, 7), (2, 5, 41, 37)])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_backward_resnet_like(dtype, shape, stride):
    """3 × 3 windows with padding 1 (the flip path at stride 1 runs the forward's Winograd or
    direct kernels), and the GEMM + col2im path at stride 2; (2, 5, 41, 37) at stride 1 has
    enough positions for the weight's cotangent to split them into chunks (the last padded)."""
    gen = torch.Generator().manual_seed(1)
    x = random(shape, dtype, gen)
    w = random((shape[1] + 4, shape[1], 3, 3), dtype, gen)
    attrs = {"stride": stride, "padding": 1}
    g = random(F.conv2d(x, w, **attrs).shape, dtype, gen)

    def forward(a, b):
        return F.conv2d(a, b, **attrs)

    want_x, want_w = vjp(forward, [x, w], g)
    bound_x, bound_w = vjp(forward, [x.abs(), w.abs()], g.abs())
    check(
        ctensor.ops.conv2d_backward_input(g, x, w, **attrs), want_x, bound_x, 9 * w.shape[0], dtype
    )
    check(
        ctensor.ops.conv2d_backward_weight(g, x, w, **attrs),
        want_w,
        bound_w,
        g.shape[0] * g.shape[2] * g.shape[3],
        dtype,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "attrs",
    [
        {"stride": [2, 1], "padding": [1, 2], "dilation": [2, 3], "groups": 2},
        {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1},
        {"stride": [3, 1], "padding": [2, 1], "dilation": [1, 2], "groups": 3},
    ],
)
@pytest.mark.parametrize("kind", ["compact", "sliced"])
def test_conv2d_backward_weight_wide_rows(dtype, attrs, kind):
    """Rows wide enough for the weight cotangent's 8 x 8 tiles (float32, compact rows), with the
    padding, dilation and groups that make some tiles fall back to one element at a time."""
    gen = torch.Generator().manual_seed(2)
    x = layout(random((2, 6, 19, 29), dtype, gen), kind)
    w = random((12, 6 // attrs["groups"], 3, 4), dtype, gen)
    g = random(F.conv2d(f64(x), f64(w), **attrs).shape, dtype, gen)

    def forward(b):
        return F.conv2d(f64(x), b, **attrs)

    (want,) = vjp(forward, [w], g)
    (bound,) = vjp(lambda b: F.conv2d(f64(x).abs(), b, **attrs), [w], g.abs())
    got = ctensor.ops.conv2d_backward_weight(g, x, w, **attrs)
    check(got, want, bound, g.shape[0] * g.shape[2] * g.shape[3], dtype)


def test_conv2d_backward_rejects_bad_shapes():
    x = np.ones((1, 2, 5, 5), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv2d_backward_input(np.ones((1, 3, 4, 4), np.float32), x, w)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv2d_backward_weight(np.ones((1, 2, 3, 3), np.float32), x, w)
    with pytest.raises(ctensor.ShapeMismatchError):  # more rows than conv2d's output
        ctensor.ops.conv2d_backward_weight(np.ones((1, 3, 4, 3), np.float32), x, w)


# ----------------------------------------------------------------------------------------------
# pooling
# ----------------------------------------------------------------------------------------------


@st.composite
def pool_cases(draw, dilation: bool):
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    padding = [draw(st.integers(0, kh // 2)), draw(st.integers(0, kw // 2))]
    dil = [draw(st.integers(1, 3)), draw(st.integers(1, 3))] if dilation else [1, 1]
    ceil_mode = draw(st.booleans())
    hw = []
    for k, kern in enumerate((kh, kw)):
        span = dil[k] * (kern - 1) + 1
        hw.append(draw(st.integers(max(1, span - 2 * padding[k]), span + 8)))
    batch = draw(st.sampled_from([(), (1,), (2,)]))
    shape = (*batch, draw(st.integers(1, 3)), *hw)
    attrs = {"kernel_size": [kh, kw], "stride": stride, "padding": padding, "ceil_mode": ceil_mode}
    if dilation:
        attrs["dilation"] = dil
    return shape, attrs


def has_padding_only_window(shape, attrs) -> bool:
    """Whether some max_pool2d window holds no input element (dilation or ceil_mode can make
    one): torch sends its cotangent past the window (reading out of bounds), ctensor drops it."""
    out = F.max_pool2d(torch.zeros(shape), **attrs).shape[-2:]
    for k in range(2):
        size, kern = shape[-2 + k], attrs["kernel_size"][k]
        s, p, d = attrs["stride"][k], attrs["padding"][k], attrs["dilation"][k]
        for o in range(out[k]):
            if not any(0 <= o * s - p + a * d < size for a in range(kern)):
                return True
    return False


@pytest.mark.parametrize("dtype", list(DTYPES))
@settings(max_examples=25, deadline=None)
@given(
    case=pool_cases(True),
    seed=st.integers(0, 2**32 - 1),
    lx=LAYOUTS,
    lg=LAYOUTS,
    ties=st.booleans(),
)
def test_max_pool2d_backward(dtype, case, seed, lx, lg, ties):
    shape, attrs = case
    assume(not has_padding_only_window(shape, attrs))
    gen = torch.Generator().manual_seed(seed)
    x = random(shape, dtype, gen)
    if ties:  # few distinct values: the first maximum of each window must win, as torch's
        x = torch.round(x * 2).to(DTYPES[dtype])
    x = layout(x, lx)
    out_shape = F.max_pool2d(f64(x), **attrs).shape
    g = layout(random(out_shape, dtype, gen), lg)
    got = ctensor.ops.max_pool2d_backward(g, x, **attrs)
    (want,) = vjp(lambda a: F.max_pool2d(a, **attrs), [x], g)
    (bound,) = vjp(lambda a: F.max_pool2d(a, **attrs), [x], g.abs())
    windows = int(np.prod(out_shape))
    check(got, want, bound, windows, dtype)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", [(2, 3, 10, 38), (1, 2, 7, 17), (3, 4, 4), (1, 2, 4, 70)])
def test_max_pool2d_backward_2x2_rows(dtype, shape):
    """2 x 2 windows at stride 2 (the vectorised paths: 16 or 8 windows at a time, masked or
    scalar tails, an odd last row and column left at zero), with ties, NaN, infinities and
    signed zeros."""
    gen = torch.Generator().manual_seed(len(shape) + shape[-1])
    x = torch.round(torch.randn(shape, generator=gen, dtype=torch.float64) * 2)
    flat = x.view(-1)
    picks = torch.randperm(flat.numel(), generator=gen)[:12]
    flat[picks[:4]] = float("nan")
    flat[picks[4:6]] = float("inf")
    flat[picks[6:8]] = -float("inf")
    flat[picks[8:10]] = -0.0
    x = x.to(DTYPES[dtype])
    g = random(F.max_pool2d(f64(x), 2).shape, dtype, gen)
    got = ctensor.ops.max_pool2d_backward(g, x, kernel_size=2)
    (want,) = vjp(lambda a: F.max_pool2d(a, 2), [x], g)
    assert torch.equal(got.to(torch.float64), want)


def test_max_pool2d_backward_drops_padding_only_windows():
    x = torch.randn(2, 3, 4, 1)
    attrs = {"kernel_size": [1, 2], "stride": [2, 2], "padding": [0, 1], "dilation": [1, 2]}
    assert has_padding_only_window(x.shape, attrs)
    assert torch.isinf(ctensor.ops.max_pool2d(x, **attrs)).all()
    g = torch.randn(2, 3, 2, 1)
    assert torch.equal(ctensor.ops.max_pool2d_backward(g, x, **attrs), torch.zeros_like(x))
    # ceil_mode: the last window of each row starts inside the input, so it is not empty
    x = torch.randn(1, 1, 5, 5)
    got = ctensor.ops.max_pool2d_backward(torch.ones(1, 1, 3, 3), x, kernel_size=2, ceil_mode=True)
    (want,) = vjp(lambda a: F.max_pool2d(a, 2, ceil_mode=True), [x], torch.ones(1, 1, 3, 3))
    assert torch.equal(got.double(), want)


def test_max_pool2d_backward_nan_goes_to_the_last_nan():
    x = torch.tensor([[[[1.0, float("nan")], [float("nan"), 5.0]]]])
    g = torch.tensor([[[[3.0]]]])
    got = ctensor.ops.max_pool2d_backward(g, x, kernel_size=2)
    (want,) = torch.autograd.grad(F.max_pool2d(x.requires_grad_(True), 2), x, g)
    assert torch.equal(got, want) and got[0, 0, 1, 0] == 3.0


@pytest.mark.parametrize("dtype", list(DTYPES))
@settings(max_examples=25, deadline=None)
@given(
    case=pool_cases(False),
    seed=st.integers(0, 2**32 - 1),
    lx=LAYOUTS,
    lg=LAYOUTS,
    count_include_pad=st.booleans(),
    divisor=st.sampled_from([None, 1, 3]),
)
def test_avg_pool2d_backward(dtype, case, seed, lx, lg, count_include_pad, divisor):
    shape, attrs = case
    attrs = {**attrs, "count_include_pad": count_include_pad, "divisor_override": divisor}
    gen = torch.Generator().manual_seed(seed)
    x = layout(random(shape, dtype, gen), lx)
    torch_attrs = dict(attrs)
    out_shape = F.avg_pool2d(f64(x), **torch_attrs).shape
    g = layout(random(out_shape, dtype, gen), lg)
    got = ctensor.ops.avg_pool2d_backward(g, x, **attrs)
    (want,) = vjp(lambda a: F.avg_pool2d(a, **torch_attrs), [x], g)
    (bound,) = vjp(lambda a: F.avg_pool2d(a, **torch_attrs), [x], g.abs())
    kh, kw = attrs["kernel_size"]
    check(got, want, bound, kh * kw + 2, dtype)


@pytest.mark.parametrize("dtype", list(DTYPES))
@settings(max_examples=25, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 12), st.integers(1, 12)),
    size=st.tuples(st.integers(1, 7), st.integers(1, 7)),
    seed=st.integers(0, 2**32 - 1),
    lx=LAYOUTS,
    lg=LAYOUTS,
)
# float16: results near -4.1e-6 are subnormal, rounded to a multiple of 2^-24 (6e-8), 4e-3 off
@example(shape=(2, 3, 12, 8), size=(1, 6), seed=298109, lx="compact", lg="compact")
def test_adaptive_avg_pool2d_backward(dtype, shape, size, seed, lx, lg):
    gen = torch.Generator().manual_seed(seed)
    x = layout(random(shape, dtype, gen), lx)
    g = layout(random(shape[:2] + size, dtype, gen), lg)
    got = ctensor.ops.adaptive_avg_pool2d_backward(g, x)
    (want,) = vjp(lambda a: F.adaptive_avg_pool2d(a, size), [x], g)
    (bound,) = vjp(lambda a: F.adaptive_avg_pool2d(a, size), [x], g.abs())
    check(got, want, bound, 16, dtype)


def test_pool_backward_rejects_bad_shapes():
    x = np.ones((1, 2, 6, 6), np.float32)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.max_pool2d_backward(np.ones((1, 2, 2, 2), np.float32), x, kernel_size=2)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.avg_pool2d_backward(np.ones((1, 3, 3, 3), np.float32), x, kernel_size=2)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.adaptive_avg_pool2d_backward(np.ones((1, 3, 3, 3), np.float32), x)


# ----------------------------------------------------------------------------------------------
# interpolate
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(DTYPES))
@settings(max_examples=25, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 9), st.integers(1, 9)),
    mode=st.sampled_from(["nearest", "bilinear-ac", "bilinear"]),
    by_scale=st.booleans(),
    size=st.tuples(st.integers(1, 20), st.integers(1, 20)),
    scale=st.tuples(
        st.sampled_from([0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0]),
        st.sampled_from([0.5, 1.0, 1.3, 2.0, 3.0]),
    ),
    seed=st.integers(0, 2**32 - 1),
    lx=LAYOUTS,
    lg=LAYOUTS,
)
def test_interpolate_backward(dtype, shape, mode, by_scale, size, scale, seed, lx, lg):
    attrs = {"mode": "bilinear" if mode.startswith("bilinear") else "nearest"}
    if mode == "bilinear-ac":
        attrs["align_corners"] = True
    if by_scale:
        assume(all(int(np.floor(s * e)) >= 1 for s, e in zip(scale, shape[2:], strict=True)))
        attrs["scale_factor"] = list(scale)
        torch_attrs = {**attrs, "scale_factor": tuple(scale)}
    else:
        attrs["size"] = list(size)
        torch_attrs = {**attrs, "size": size}
    gen = torch.Generator().manual_seed(seed)
    x = layout(random(shape, dtype, gen), lx)
    out_shape = F.interpolate(f64(x), **torch_attrs).shape
    g = layout(random(out_shape, dtype, gen), lg)
    got = ctensor.ops.interpolate_backward(g, x, **attrs)
    # the forward computes its source weights in the compute type (float32 but for float64):
    # the reference in float32 arithmetic on the same values, then float64 for the comparison
    ref_dtype = torch.float64 if dtype == "float64" else torch.float32
    leaf = x.detach().to(ref_dtype).requires_grad_(True)
    (want,) = torch.autograd.grad(F.interpolate(leaf, **torch_attrs), leaf, g.to(ref_dtype))
    leaf = x.detach().to(ref_dtype).requires_grad_(True)
    (bound,) = torch.autograd.grad(F.interpolate(leaf, **torch_attrs), leaf, g.abs().to(ref_dtype))
    terms = (out_shape[2] // shape[2] + 2) * (out_shape[3] // shape[3] + 2)
    # float16/bfloat16 round the weights to their own precision, as the forward
    extra = {"float16": 2e-3, "bfloat16": 1.6e-2}.get(dtype, 0.0)
    check(got, want.to(torch.float64), bound.to(torch.float64), 4 * terms, dtype, extra)


# ----------------------------------------------------------------------------------------------
# the gradient rows, end to end: ctensor.autodiff.vjp against torch.autograd and finite
# differences of ctensor's forward (tests/gradcheck.py)
# ----------------------------------------------------------------------------------------------

VJP_DTYPES = st.sampled_from(["float64", "float32", "float16", "bfloat16"])


def normal(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.standard_normal(shape)


@settings(max_examples=20, deadline=None)
@given(case=conv_cases(), bias=st.booleans(), dtype=VJP_DTYPES, seed=st.integers(0, 2**16))
def test_conv2d_vjp(case, bias, dtype, seed):
    rng = np.random.default_rng(seed)
    attrs = case["attrs"]
    x, w = normal(rng, case["x_shape"]), normal(rng, case["w_shape"])
    b = normal(rng, case["w_shape"][:1]) if bias else None
    check_vjp("conv2d", [x, w, b], attrs, lambda x, w, b: F.conv2d(x, w, b, **attrs), dtype=dtype)


@settings(max_examples=20, deadline=None)
@given(case=conv_cases(True), bias=st.booleans(), dtype=VJP_DTYPES, seed=st.integers(0, 2**16))
def test_conv_transpose2d_vjp(case, bias, dtype, seed):
    rng = np.random.default_rng(seed)
    attrs = case["attrs"]
    x, w = normal(rng, case["x_shape"]), normal(rng, case["w_shape"])
    b = normal(rng, (case["w_shape"][1] * attrs["groups"],)) if bias else None
    check_vjp(
        "conv_transpose2d",
        [x, w, b],
        attrs,
        lambda x, w, b: F.conv_transpose2d(x, w, b, **attrs),
        dtype=dtype,
    )


@settings(max_examples=20, deadline=None)
@given(
    case=pool_cases(True),
    dtype=st.sampled_from(["float64", "float32", "float16"]),
    seed=st.integers(0, 2**16),
)
def test_max_pool2d_vjp(case, dtype, seed):
    """Distinct values, exact in float16 (multiples of 1/8 below 256): finite differences at a
    tie see half the cotangent on each side, where the subgradient takes one."""
    shape, attrs = case
    assume(not has_padding_only_window(shape, attrs))
    count = int(np.prod(shape))
    x = (np.random.default_rng(seed).permutation(count) - count / 2).reshape(shape) / 8
    check_vjp("max_pool2d", [x], attrs, lambda x: F.max_pool2d(x, **attrs), dtype=dtype)


@settings(max_examples=20, deadline=None)
@given(
    case=pool_cases(False),
    count_include_pad=st.booleans(),
    divisor=st.sampled_from([None, 2]),
    dtype=VJP_DTYPES,
    seed=st.integers(0, 2**16),
)
def test_avg_pool2d_vjp(case, count_include_pad, divisor, dtype, seed):
    shape, attrs = case
    attrs = {**attrs, "count_include_pad": count_include_pad, "divisor_override": divisor}
    x = normal(np.random.default_rng(seed), shape)
    check_vjp("avg_pool2d", [x], attrs, lambda x: F.avg_pool2d(x, **attrs), dtype=dtype)


@settings(max_examples=20, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 9), st.integers(1, 9)),
    size=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    dtype=VJP_DTYPES,
    seed=st.integers(0, 2**16),
)
def test_adaptive_avg_pool2d_vjp(shape, size, dtype, seed):
    x = normal(np.random.default_rng(seed), shape)
    check_vjp(
        "adaptive_avg_pool2d",
        [x],
        {"output_size": list(size)},
        lambda x: F.adaptive_avg_pool2d(x, size),
        dtype=dtype,
    )


@settings(max_examples=20, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 7), st.integers(1, 7)),
    mode=st.sampled_from(["nearest", "bilinear", "bilinear-ac"]),
    size=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    dtype=st.sampled_from(["float64", "float32"]),
    seed=st.integers(0, 2**16),
)
def test_interpolate_vjp(shape, mode, size, dtype, seed):
    attrs = {"size": list(size), "mode": "bilinear" if mode != "nearest" else "nearest"}
    if mode == "bilinear-ac":
        attrs["align_corners"] = True
    torch_attrs = {**attrs, "size": size}
    x = normal(np.random.default_rng(seed), shape)
    check_vjp("interpolate", [x], attrs, lambda x: F.interpolate(x, **torch_attrs), dtype=dtype)


@settings(max_examples=20, deadline=None)
@given(
    k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.tuples(st.integers(0, 4), st.integers(0, 4)),
    shape=st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 5)),
    count_include_pad=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_pool_vjp_with_padding_beyond_half_the_kernel(
    k, stride, padding, shape, count_include_pad, seed
):
    """Padding torch refuses (ONNX allows): the gradient entries against finite differences
    alone (windows entirely in the padding are constants: -inf or 0, and get no gradient)."""
    count = int(np.prod(shape))
    x = (np.random.default_rng(seed).permutation(count) - count / 2).reshape(shape) / 8
    attrs = {"kernel_size": list(k), "stride": list(stride), "padding": list(padding)}
    try:
        out = ctensor.ops.max_pool2d(x, **attrs)
    except ctensor.ShapeMismatchError:
        assume(False)  # a window larger than the padded input
    if np.isfinite(out).all():  # -inf outputs have no finite difference
        check_vjp("max_pool2d", [x], attrs, None, dtype="float64", seed=seed)
    avg = {**attrs, "count_include_pad": count_include_pad}
    check_vjp("avg_pool2d", [x], avg, None, dtype="float64", seed=seed)
