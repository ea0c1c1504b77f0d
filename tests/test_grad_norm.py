"""Backward ops of softmax, log_softmax and the normalisations, and batch_norm_training, against
torch.autograd in float64.

Inputs are drawn in their dtype (float16/float32/float64 as NumPy views with any layout,
bfloat16 as torch tensors); the reference runs torch on the float64 copies. Tolerances: the
dtype's rtol (one rounding of the result) plus an absolute bound K·eps_c·S, eps_c the epsilon of
the compute type (float32 for float16/bfloat16/float32) and S the float64 value of the same
formula with every term replaced by its magnitude and the normalised input's own error,
(|x| + |mean|)·rstd, added to it (the error of x - mean computed in the compute type).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import FLOATS, assert_close, kernel_dtypes, strided_arrays, strided_bfloat16, to_float64
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor

SETTINGS = settings(max_examples=25, deadline=None)
EPS_C = {
    "float16": float(np.finfo(np.float32).eps),
    "bfloat16": float(np.finfo(np.float32).eps),
    "float32": float(np.finfo(np.float32).eps),
    "float64": float(np.finfo(np.float64).eps),
}
K = 32.0
# The spacing of each dtype's subnormals: a result that underflows into them is rounded to a
# multiple of it.
SUBNORMAL = {
    "float16": 2.0**-24,
    "bfloat16": 2.0**-133,
    "float32": 2.0**-149,
    "float64": 2.0**-1074,
}
OPS = [
    "softmax_backward",
    "log_softmax_backward",
    "layer_norm_backward",
    "rms_norm_backward",
    "group_norm_backward",
    "batch_norm_backward",
    "batch_norm_training",
]


def finite(dtype: str, bound: float = 4.0):
    width = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64}[dtype]
    return st.floats(-bound, bound, width=width, allow_subnormal=False)


@st.composite
def arrays(draw, dtype: str, shape, elements=None):
    if elements is None:
        elements = finite(dtype)
    if dtype == "bfloat16":
        return draw(strided_bfloat16(shape=tuple(shape), elements=elements))
    return draw(strided_arrays(dtype, shape=tuple(shape), elements=elements))


def t64(a, grad: bool = False) -> torch.Tensor | None:
    if a is None:
        return None
    t = torch.from_numpy(np.ascontiguousarray(to_float64(a)))
    return t.requires_grad_(grad)


def as_dtype(values: np.ndarray, dtype: str):
    """float64 values rounded into `dtype` (a torch tensor for bfloat16)."""
    if dtype == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(values)).to(torch.bfloat16)
    return np.ascontiguousarray(values).astype(dtype)


def check(result, expected, dtype: str, scale, reference_error=0.0) -> None:
    """result against the float64 `expected` within the dtype's rtol and K·eps_c·scale (plus a
    few subnormal spacings: results that underflow, and `reference_error`, a bound on the float64
    reference's own error where that exceeds its rtol). Expected values that round to infinity
    in the dtype are that infinity."""
    atol = K * EPS_C[dtype] * np.asarray(scale, np.float64) + 64 * SUBNORMAL[dtype]
    atol = atol + np.asarray(reference_error, np.float64)
    assert np.all(np.isfinite(atol)), "the tolerance must bound something"
    expected = np.asarray(expected, np.float64)
    rounded = torch.from_numpy(expected.copy()).to(getattr(torch, dtype))
    expected = np.where(torch.isinf(rounded).numpy(), np.copysign(np.inf, expected), expected)
    assert_close(result, expected, dtype, atol=float(np.max(atol, initial=0.0)))


def test_declared_dtypes():
    for op in OPS:
        assert kernel_dtypes(op) == FLOATS, op


# ----------------------------------------------------------------------------------------------
# softmax, log_softmax
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("log", [False, True])
@SETTINGS
@given(data=st.data())
def test_softmax_backward(dtype, log, data):
    shape = data.draw(st.lists(st.integers(0, 5), min_size=0, max_size=4))
    axis = data.draw(st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))
    x = data.draw(arrays(dtype, shape))
    g = data.draw(arrays(dtype, shape))
    dim = axis % max(len(shape), 1)
    forward = ctensor.ops.log_softmax if log else ctensor.ops.softmax
    out = forward(x, axis=axis)
    op = ctensor.ops.log_softmax_backward if log else ctensor.ops.softmax_backward
    result = op(g, out, axis=axis)
    # torch's backward from the same (rounded) output, in float64
    y64, g64 = t64(out), t64(g)
    if len(shape) == 0:
        y64, g64 = y64.reshape(1), g64.reshape(1)
    if log:
        expected = torch._log_softmax_backward_data(g64, y64, dim, torch.float64)
        e = y64.exp()
        scale = g64.abs() + e * g64.abs().sum(dim, keepdim=True)
    else:
        expected = torch._softmax_backward_data(g64, y64, dim, torch.float64)
        scale = y64.abs() * (g64.abs() + (g64 * y64).abs().sum(dim, keepdim=True))
    check(result, expected.reshape(shape).numpy(), dtype, scale.numpy())


@pytest.mark.parametrize("log", [False, True])
@SETTINGS
@given(data=st.data())
def test_softmax_backward_is_autograd(log, data):
    """float64: the VJP of torch's softmax / log_softmax at x."""
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(arrays("float64", shape))
    g = data.draw(arrays("float64", shape))
    xt = t64(x, True)
    f = torch.log_softmax if log else torch.softmax
    (expected,) = torch.autograd.grad(f(xt, dim=axis), xt, t64(g))
    out = (ctensor.ops.log_softmax if log else ctensor.ops.softmax)(x, axis=axis)
    op = ctensor.ops.log_softmax_backward if log else ctensor.ops.softmax_backward
    np.testing.assert_allclose(op(g, out, axis=axis), expected.numpy(), rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# layer_norm, rms_norm, group_norm: tolerances
# ----------------------------------------------------------------------------------------------


def norm_scales(x64, g64, w64, rows_shape, rms: bool, eps: float):
    """Magnitude bounds of grad_input and of the per-element terms of grad_weight, grad_bias.
    x64, g64 (rows, n) float64; w64 (rows, n) or None."""
    n = x64.shape[1]
    if x64.size == 0:
        return np.zeros(rows_shape), np.zeros(x64.shape), np.zeros(x64.shape)
    mean = np.zeros((x64.shape[0], 1)) if rms else x64.mean(1, keepdims=True)
    var = (x64**2).mean(1, keepdims=True) if rms else x64.var(1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = np.abs(x64 - mean) * rstd
    err = (np.abs(x64) + np.abs(mean)) * rstd  # the error of xhat, in eps_c
    gw = np.abs(g64) * (1.0 if w64 is None else np.maximum(np.abs(w64), 1.0))
    m_gw = gw.mean(1, keepdims=True) if n else 0
    m_gwx = (gw * (xhat + err)).mean(1, keepdims=True) if n else 0
    gx = rstd * (gw + m_gw + (xhat + err) * m_gwx + err * m_gwx)
    return gx.reshape(rows_shape), np.abs(g64) * (xhat + err), np.abs(g64)


@st.composite
def layer_norm_case(draw, dtype: str):
    shape = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    count = draw(st.integers(1, len(shape)))
    normalized = shape[len(shape) - count :]
    x = draw(arrays(dtype, shape))
    g = draw(arrays(dtype, shape))
    weight = draw(st.none() | arrays(dtype, normalized))
    return x, g, weight, normalized


def weight_or_ones(weight, shape) -> torch.Tensor:
    w = t64(weight) if weight is not None else torch.ones(shape, dtype=torch.float64)
    return w.requires_grad_(True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rms", [False, True])
@SETTINGS
@given(data=st.data())
def test_layer_rms_norm_backward(dtype, rms, data):
    x, g, weight, normalized = data.draw(layer_norm_case(dtype))
    no_eps = [0.0] if dtype in ("float32", "float64") else []
    eps = data.draw(st.sampled_from([None, 1e-5, 0.5] if rms else [1e-5, 1e-2, *no_eps]))
    if eps == 0.0 and int(np.prod(normalized)) < 2:
        eps = 1e-5
    if not rms and eps == 0.0:
        # no eps: a constant row has no finite gradient; keep rows spread out
        x = as_dtype(to_float64(x) + np.arange(to_float64(x).size).reshape(np.shape(x)), dtype)
    xt, wt = t64(x, True), weight_or_ones(weight, normalized)
    if rms:
        ref_eps = eps if eps is not None else EPS_C[dtype]
        out = F.rms_norm(xt, normalized, wt, eps=ref_eps)
        expected = torch.autograd.grad(out, (xt, wt), t64(g), allow_unused=True)
        result = ctensor.ops.rms_norm_backward(g, x, weight, normalized_shape=normalized, eps=eps)
    else:
        ref_eps = eps
        bt = torch.zeros(normalized, dtype=torch.float64, requires_grad=True)
        out = F.layer_norm(xt, normalized, wt, bt, eps=eps)
        expected = torch.autograd.grad(out, (xt, wt, bt), t64(g), allow_unused=True)
        result = ctensor.ops.layer_norm_backward(g, x, weight, normalized_shape=normalized, eps=eps)
    assert len(result) == len(expected)
    n = int(np.prod(normalized))
    rows = int(np.prod(np.shape(x))) // n if n else 0
    x64, g64 = to_float64(x).reshape(rows, n), to_float64(g).reshape(rows, n)
    w64 = None if weight is None else np.broadcast_to(to_float64(weight).reshape(1, n), (rows, n))
    s_in, s_w, s_b = norm_scales(x64, g64, w64, np.shape(x), rms, ref_eps)
    expected = [
        e if e is not None else torch.zeros(normalized, dtype=torch.float64) for e in expected
    ]
    check(result[0], expected[0].numpy(), dtype, s_in)
    check(result[1], expected[1].numpy(), dtype, s_w.sum(0).reshape(normalized))
    if not rms:
        check(result[2], expected[2].numpy(), dtype, s_b.sum(0).reshape(normalized))


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_group_norm_backward(dtype, data):
    groups = data.draw(st.integers(1, 3))
    shape = [
        data.draw(st.integers(0, 3)),
        groups * data.draw(st.integers(1, 3)),
        *data.draw(st.lists(st.integers(0, 4), max_size=2)),
    ]
    x = data.draw(arrays(dtype, shape))
    g = data.draw(arrays(dtype, shape))
    weight = data.draw(st.none() | arrays(dtype, shape[1:2]))
    eps = data.draw(st.sampled_from([1e-5, 0.1]))
    result = ctensor.ops.group_norm_backward(g, x, weight, num_groups=groups, eps=eps)
    c = shape[1]
    xt, wt = t64(x, True), weight_or_ones(weight, [c])
    bt = torch.zeros(c, dtype=torch.float64, requires_grad=True)
    out = torch.group_norm(xt, groups, wt, bt, eps, False)
    expected = torch.autograd.grad(out, (xt, wt, bt), t64(g), allow_unused=True)
    expected = [e if e is not None else torch.zeros(c, dtype=torch.float64) for e in expected]
    n = shape[0]
    size = int(np.prod(shape))
    per_group = size // (n * groups) if n else 0
    x64 = to_float64(x).reshape(n * groups, per_group)
    g64 = to_float64(g).reshape(n * groups, per_group)
    w64 = None
    if weight is not None:
        spatial = per_group * groups // c
        w64 = np.broadcast_to(
            np.repeat(to_float64(weight), spatial).reshape(1, groups, per_group),
            (n, groups, per_group),
        ).reshape(n * groups, per_group)
    if size:
        s_in, s_w, s_b = norm_scales(x64, g64, w64, shape, False, eps)
        s_w = s_w.reshape(n, c, -1).sum((0, 2))
        s_b = s_b.reshape(n, c, -1).sum((0, 2))
        t_in, t_w = torch_group_underflow(x64, w64, eps, n, per_group * groups // c)
    else:
        # torch's grad_weight is nan over empty groups; a sum over no elements is 0 here
        s_in, s_w, s_b = np.zeros(shape), np.zeros(c), np.zeros(c)
        expected = [expected[0], torch.zeros(c), torch.zeros(c)]
        t_in = t_w = 0.0
    check(result[0], expected[0].numpy(), dtype, s_in, t_in)
    check(result[1], expected[1].numpy(), dtype, s_w, t_w)
    check(result[2], expected[2].numpy(), dtype, s_b)


def test_group_norm_backward_subnormal_products():
    """As test_batch_norm_training_subnormal_products for group_norm: torch rounds
    ds = sum(g x) = -2.0e-316 before scaling by rstd = 316 (grad_weight 274 spacings off)."""
    x = np.array([1.66131416e-158, -2.16802355e-158]).reshape(1, 2, 1)
    g = np.array([-1.20244390e-158, 1.34641543e-158]).reshape(1, 2, 1)
    result = ctensor.ops.group_norm_backward(g, x, np.ones(2), num_groups=1, eps=1e-5)
    xt, wt = t64(x, True), weight_or_ones(np.ones(2), [2])
    out = torch.group_norm(xt, 1, wt, None, 1e-5, False)
    expected = torch.autograd.grad(out, (xt, wt), t64(g))
    x64, w64 = x.reshape(1, 2), np.ones((1, 2))
    s_in, s_w, _ = norm_scales(x64, g.reshape(1, 2), w64, [1, 2, 1], False, 1e-5)
    t_in, t_w = torch_group_underflow(x64, w64, 1e-5, 1, 1)
    check(result[0], expected[0].numpy(), "float64", s_in.reshape(x.shape), t_in)
    check(result[1], expected[1].numpy(), "float64", s_w.reshape(1, 2, -1).sum((0, 2)), t_w)


def torch_group_underflow(x64, w64, eps: float, n: int, spatial: int):
    """As torch_batch_underflow for torch's float64 group_norm backward (x64, w64: one row per
    (sample, group)): torch sums ds = g x and db = g per (sample, channel) unscaled, so each
    ds carries up to (spatial + 1) s / 2 of subnormal rounding (with db·mean), grown by rstd in
    grad_weight (summed over the n samples) and, through ds·w summed over the group, by
    |w| rstd^3 |x - mean| in grad_input. Returns the largest of each (check takes the max)."""
    s = SUBNORMAL["float64"]  # keep s as the last factor: s / 2 underflows to 0
    mean = x64.mean(1, keepdims=True)
    r = 1.0 / np.sqrt(x64.var(1, keepdims=True) + eps)
    wmax = 1.0 if w64 is None else np.maximum(np.abs(w64), 1.0).max(1, keepdims=True)
    gx = float(np.max(2 * wmax * r**3 * np.abs(x64 - mean), initial=0.0)) * s
    gw = (n * (spatial + 2) * float(np.max(r, initial=0.0))) * s
    return gx, gw


# ----------------------------------------------------------------------------------------------
# batch_norm (inference), batch_norm_training, batch_norm_backward
# ----------------------------------------------------------------------------------------------


@st.composite
def batch_case(draw, dtype: str, training: bool):
    shape = [
        draw(st.integers(1 if training else 0, 3)),
        draw(st.integers(1, 4)),
        *draw(st.lists(st.integers(1 if training else 0, 3), max_size=2)),
    ]
    if training and int(np.prod(shape)) // shape[1] < 2:
        shape[0] = 2
    x = draw(arrays(dtype, shape))
    g = draw(arrays(dtype, shape))
    c = shape[1]
    weight = draw(st.none() | arrays(dtype, [c]))
    bias = draw(st.none() | arrays(dtype, [c]))
    return x, g, weight, bias


def batch_scales(x64, g64, w64, mean, istd, training: bool):
    """As norm_scales, with rows the channels: x64, g64 (N, C, *) float64."""
    c = x64.shape[1]
    xr = np.moveaxis(x64, 1, 0).reshape(c, -1)
    gr = np.abs(np.moveaxis(g64, 1, 0).reshape(c, -1))
    m, r = mean.reshape(c, 1), istd.reshape(c, 1)
    w = np.ones((c, 1)) if w64 is None else np.maximum(np.abs(w64), 1.0).reshape(c, 1)
    xhat = np.abs(xr - m) * r
    err = (np.abs(xr) + np.abs(m)) * r
    if training and xr.shape[1]:
        gx = (
            w
            * r
            * (
                gr
                + gr.mean(1, keepdims=True)
                + (xhat + 2 * err) * (gr * (xhat + err)).mean(1, keepdims=True)
            )
        )
    else:
        gx = w * r * gr
    gx = np.moveaxis(gx.reshape((c, x64.shape[0]) + x64.shape[2:]), 0, 1)
    return gx, (gr * (xhat + err)).sum(1), gr.sum(1)


def torch_batch_underflow(x64, w64, mean, istd, training: bool):
    """Bounds on the error of torch's float64 batch_norm backward (grad_input, grad_weight) that
    its rtol does not cover: torch forms dot = sum(g (x - mean)) per channel and scales it by
    invstd only afterwards, so products g (x - mean) that underflow into float64's subnormals
    are rounded to their spacing s = 2^-1074 unscaled (under n s / 2 in dot, n the channel's
    element count; bounded here by n s), and that error grows by invstd (up to 1/sqrt(eps)) in
    grad_weight and by |w| invstd^3 |x - mean| / n per element in training's grad_input. The
    kernels scale x - mean first and do not lose these digits (see
    test_batch_norm_training_subnormal_products)."""
    c = x64.shape[1]
    n = x64.size // c if c else 0
    shape_c = [1, c] + [1] * (x64.ndim - 2)
    s = SUBNORMAL["float64"]  # s / 2 underflows to 0: keep s as the last factor
    gw = (n * istd) * s
    if not training:
        return 0.0, gw
    w = 1.0 if w64 is None else np.maximum(np.abs(w64), 1.0).reshape(shape_c)
    r = istd.reshape(shape_c)
    gx = (w * r**3 * np.abs(x64 - mean.reshape(shape_c))) * s
    return gx, gw


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_batch_norm_inference_backward(dtype, data):
    x, g, weight, _ = data.draw(batch_case(dtype, False))
    c = np.shape(x)[1]
    mean = data.draw(arrays(dtype, [c]))
    var = data.draw(arrays(dtype, [c], elements=finite(dtype, 4.0).map(abs)))
    eps = data.draw(st.sampled_from([1e-5, 0.1]))
    result = ctensor.ops.batch_norm_backward(g, x, weight, mean, var, training=False, eps=eps)
    xt, wt = t64(x, True), weight_or_ones(weight, [c])
    bt = torch.zeros(c, dtype=torch.float64, requires_grad=True)
    out = F.batch_norm(xt, t64(mean), t64(var), wt, bt, training=False, eps=eps)
    expected = torch.autograd.grad(out, (xt, wt, bt), t64(g), allow_unused=True)
    istd = 1.0 / np.sqrt(to_float64(var) + eps)
    w64 = None if weight is None else to_float64(weight)
    s_in, s_w, s_b = batch_scales(to_float64(x), to_float64(g), w64, to_float64(mean), istd, False)
    _, t_w = torch_batch_underflow(to_float64(x), w64, to_float64(mean), istd, False)
    check(result[0], expected[0].numpy(), dtype, s_in)
    check(result[1], expected[1].numpy(), dtype, s_w, t_w)
    check(result[2], expected[2].numpy(), dtype, s_b)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_batch_norm_training(dtype, data):
    x, g, weight, bias = data.draw(batch_case(dtype, True))
    c = np.shape(x)[1]
    running = data.draw(st.booleans())
    momentum = data.draw(st.sampled_from([0.1, 0.5]))
    eps = data.draw(st.sampled_from([1e-5, 0.1]))
    rm = data.draw(arrays(dtype, [c])) if running else None
    rv = data.draw(arrays(dtype, [c], elements=finite(dtype).map(abs))) if running else None
    check_batch_norm_training(dtype, x, g, weight, bias, rm, rv, momentum, eps)


def test_batch_norm_training_subnormal_products():
    """A case hypothesis found: g (x - mean) = 2.3e-316 underflows, and torch rounds it before
    scaling it by invstd = 316 (grad_weight off by about 100 subnormal spacings), while the
    kernel scales first; torch_batch_underflow bounds torch's error."""
    x = np.array([[2.12584051e-158], [0.0]])
    check_batch_norm_training("float64", x, x.copy(), None, None, None, None, 0.1, 1e-5)


def check_batch_norm_training(dtype, x, g, weight, bias, rm, rv, momentum, eps):
    c = np.shape(x)[1]
    running = rm is not None
    outs = ctensor.ops.batch_norm_training(x, rm, rv, weight, bias, momentum=momentum, eps=eps)
    assert len(outs) == 5
    xt, wt = t64(x, True), weight_or_ones(weight, [c])
    bt = (t64(bias) if bias is not None else torch.zeros(c, dtype=torch.float64)).requires_grad_()
    rm64, rv64 = (t64(rm), t64(rv)) if running else (None, None)
    out = F.batch_norm(xt, rm64, rv64, wt, bt, training=True, momentum=momentum, eps=eps)
    x64 = to_float64(x)
    axes = (0, *range(2, x64.ndim))
    mean = x64.mean(axes)
    var = x64.var(axes)
    istd = 1.0 / np.sqrt(var + eps)
    w64 = None if weight is None else to_float64(weight)
    b64 = 0.0 if bias is None else np.abs(to_float64(bias))
    shape_c = [1, c] + [1] * (x64.ndim - 2)
    wa = 1.0 if w64 is None else np.maximum(np.abs(w64), 1.0).reshape(shape_c)
    s_out = wa * (np.abs(x64) + np.abs(mean).reshape(shape_c)) * istd.reshape(shape_c)
    s_out = s_out + np.broadcast_to(b64, (c,)).reshape(shape_c)
    check(outs[0], out.detach().numpy(), dtype, s_out)
    check(outs[1], mean, dtype, np.abs(x64).max(axes))
    check(outs[2], istd, dtype, istd * 4)
    if not running:  # absent: a fresh BatchNorm's zeros and ones
        rm64, rv64 = torch.zeros(c, dtype=torch.float64), torch.ones(c, dtype=torch.float64)
        F.batch_norm(t64(x), rm64, rv64, training=True, momentum=momentum, eps=eps)
    rm_in = np.abs(to_float64(rm)) if running else 0.0
    rv_in = to_float64(rv) if running else 1.0
    check(outs[3], rm64.numpy(), dtype, rm_in + np.abs(x64).max(axes))
    check(outs[4], rv64.numpy(), dtype, rv_in + 2 * (x64**2).max(axes) * 4)
    # the backward from the saved statistics
    grads = ctensor.ops.batch_norm_backward(g, x, weight, outs[1], outs[2], eps=eps)
    expected = torch.autograd.grad(out, (xt, wt, bt), t64(g))
    s_in, s_w, s_b = batch_scales(x64, to_float64(g), w64, mean, istd, True)
    # save_mean and save_invstd were rounded to the dtype: their error moves xhat too
    rounding = (
        0.0 if dtype in ("float32", "float64") else 2.0 ** (-8 if dtype == "bfloat16" else -11)
    )
    extra = rounding / EPS_C[dtype] / K
    t_in, t_w = torch_batch_underflow(x64, w64, mean, istd, True)
    check(grads[0], expected[0].numpy(), dtype, s_in * (1 + 4 * extra), t_in)
    check(grads[1], expected[1].numpy(), dtype, s_w * (1 + 4 * extra), t_w)
    check(grads[2], expected[2].numpy(), dtype, s_b)


def test_batch_norm_training_updates_running_stats_in_place():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    rm = rng.standard_normal(3).astype(np.float32)
    rv = np.abs(rng.standard_normal(3)).astype(np.float32) + 0.5
    trm, trv = torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy())
    expected = F.batch_norm(torch.from_numpy(x), trm, trv, training=True, momentum=0.2)
    out = np.empty_like(x)
    sm, si = np.empty(3, np.float32), np.empty(3, np.float32)
    ctensor.ops.batch_norm_training(x, rm, rv, momentum=0.2, out=(out, sm, si, rm, rv))
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm, trm.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(rv, trv.numpy(), rtol=1e-6, atol=1e-7)


def test_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ctensor.CTensorError, match="more than 1 value per channel"):
        ctensor.ops.batch_norm_training(np.ones((1, 3), np.float32))
    with pytest.raises(ctensor.CTensorError, match="running_mean and running_var"):
        ctensor.ops.batch_norm_training(x, np.zeros(3, np.float32))
    with pytest.raises(ctensor.CTensorError, match="same view"):  # in place: the same view only
        rm = np.zeros(6, np.float32)
        outs = [np.empty((2, 3), np.float32)] + [np.empty(3, np.float32) for _ in range(4)]
        outs[3] = rm[1:4]
        ctensor.ops.batch_norm_training(x, rm[:3], np.ones(3, np.float32), out=tuple(outs))
    with pytest.raises(ctensor.CTensorError, match="same shape"):
        ctensor.ops.softmax_backward(x, np.ones((3, 2), np.float32))
    with pytest.raises(ctensor.CTensorError, match="normalized_shape"):
        ctensor.ops.layer_norm_backward(x, x, normalized_shape=[2])
    with pytest.raises(ctensor.CTensorError, match="num_groups"):
        ctensor.ops.group_norm_backward(x, x, num_groups=2)
    with pytest.raises(ctensor.CTensorError, match="out of bounds"):
        ctensor.ops.log_softmax_backward(x, x, axis=2)


# ----------------------------------------------------------------------------------------------
# the gradient rows, end to end: ctensor.autodiff.vjp against torch.autograd and finite
# differences (tests/gradcheck.py)
# ----------------------------------------------------------------------------------------------


@st.composite
def values(draw, shape, low=-2.0, high=2.0, spread: bool = False):
    """float64 values; `spread` keeps them apart (normalising nearly equal values is
    ill-conditioned for finite differences)."""
    shape = tuple(shape)
    v = draw(hnp.arrays(np.float64, shape, elements=st.floats(low, high)))
    if spread and v.size:
        v = v + np.arange(v.size).reshape(shape) * 0.37 % 3.0
    return v


def strided(draw, v):
    """v as a compact array or a view with other strides (sliced, reversed, transposed)."""
    if v.ndim == 0:
        return v
    layout = draw(st.sampled_from(["compact", "sliced", "reversed", "transposed"]))
    if layout == "sliced":
        big = np.zeros(tuple(2 * s for s in v.shape))
        big[tuple(slice(None, None, 2) for _ in v.shape)] = v
        return big[tuple(slice(None, None, 2) for _ in v.shape)]
    if layout == "reversed":
        return np.ascontiguousarray(v[tuple(slice(None, None, -1) for _ in v.shape)])[
            tuple(slice(None, None, -1) for _ in v.shape)
        ]
    if layout == "transposed" and v.ndim > 1:
        return np.ascontiguousarray(v.T).T
    return v


VJP_SETTINGS = settings(max_examples=12, deadline=None)
VJP_DTYPES = ["float64", "float32"]


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_softmax(dtype, op, data):
    from gradcheck import check_vjp

    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = strided(data.draw, data.draw(values(shape)))
    fn = getattr(torch, op)
    check_vjp(op, [x], {"axis": axis}, lambda t: fn(t, dim=axis), dtype=dtype)


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_layer_rms_norm(dtype, op, data):
    from gradcheck import check_vjp

    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    count = data.draw(st.integers(1, len(shape)))
    shape[-1] = max(shape[-1], 2)  # at least two values normalised together
    normalized = shape[len(shape) - count :]
    x = strided(data.draw, data.draw(values(shape, spread=True)))
    w = data.draw(st.none() | values(normalized, 0.5, 2.0))
    eps = data.draw(st.sampled_from([1e-5, 0.1]))
    attrs = {"normalized_shape": normalized, "eps": eps}
    if op == "layer_norm":
        b = data.draw(st.none() | values(normalized))
        check_vjp(
            op,
            [x, w, b],
            attrs,
            lambda t, tw, tb: F.layer_norm(t, normalized, tw, tb, eps=eps),
            dtype=dtype,
        )
    else:
        check_vjp(
            op, [x, w], attrs, lambda t, tw: F.rms_norm(t, normalized, tw, eps=eps), dtype=dtype
        )


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_group_norm(dtype, data):
    from gradcheck import check_vjp

    groups = data.draw(st.integers(1, 3))
    shape = [
        data.draw(st.integers(1, 3)),
        groups * data.draw(st.integers(1, 2)),
        *data.draw(st.lists(st.integers(2, 3), max_size=2)),
    ]
    x = strided(data.draw, data.draw(values(shape, spread=True)))
    c = shape[1]
    w = data.draw(st.none() | values([c], 0.5, 2.0))
    b = data.draw(st.none() | values([c]))
    eps = data.draw(st.sampled_from([1e-5, 0.1]))
    if x[0].size // groups < 2:
        eps = 0.5  # one value per group: the gradient is eps-dominated, keep it tame
    check_vjp(
        "group_norm",
        [x, w, b],
        {"num_groups": groups, "eps": eps},
        # torch's backward fails with no weight and a bias: ones stand in for the weight
        lambda t, tw, tb: torch.group_norm(
            t, groups, torch.ones(c, dtype=t.dtype) if tw is None else tw, tb, eps, False
        ),
        dtype=dtype,
    )


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@pytest.mark.parametrize("training", [False, True])
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_batch_norm(dtype, training, data):
    from gradcheck import check_vjp

    shape = [
        data.draw(st.integers(2, 3)),
        data.draw(st.integers(1, 3)),
        *data.draw(st.lists(st.integers(1, 3), max_size=2)),
    ]
    c = shape[1]
    x = strided(data.draw, data.draw(values(shape, spread=True)))
    w = data.draw(st.none() | values([c], 0.5, 2.0))
    b = data.draw(st.none() | values([c]))
    eps = data.draw(st.sampled_from([1e-5, 0.1]))
    mean = data.draw(values([c]))
    var = data.draw(values([c], 0.5, 2.0))
    if not training:
        check_vjp(
            "batch_norm",
            [x, mean, var, w, b],
            {"eps": eps},
            lambda t, m, v, tw, tb: F.batch_norm(t, m, v, tw, tb, training=False, eps=eps),
            dtype=dtype,
            constants=(1, 2),
        )
        return
    running = data.draw(st.booleans())
    momentum = data.draw(st.sampled_from([0.1, 0.3]))
    rm, rv = (mean, var) if running else (None, None)

    def torch_fn(t, m, v, tw, tb):
        return F.batch_norm(t, m, v, tw, tb, training=True, momentum=momentum, eps=eps)

    check_vjp(
        "batch_norm_training",
        [x, rm, rv, w, b],
        {"momentum": momentum, "eps": eps},
        torch_fn,
        dtype=dtype,
        constants=(1, 2),
    )


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm", "rms_norm"])
def test_large_rows(op):
    """Rows long and many enough for the contiguous loops' chunks, the row blocks of the weight
    sums and the streamed output (16 MB, lines split at odd row lengths), against float64."""
    rng = np.random.default_rng(1)
    rows, n = 4099, 1003
    x = rng.standard_normal((rows, n)).astype(np.float32) + 3
    g = rng.standard_normal((rows, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    x64, g64, w64 = (a.astype(np.float64) for a in (x, g, w))
    if op in ("softmax", "log_softmax"):
        out = getattr(ctensor.ops, op)(x, axis=-1)
        y64 = out.astype(np.float64)
        got = getattr(ctensor.ops, op + "_backward")(g, out, axis=-1)
        if op == "softmax":
            want = y64 * (g64 - (g64 * y64).sum(1, keepdims=True))
        else:
            want = g64 - np.exp(y64) * g64.sum(1, keepdims=True)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
        return
    rms = op == "rms_norm"
    got = getattr(ctensor.ops, op + "_backward")(g, x, w, normalized_shape=[n], eps=1e-5)
    mean = 0.0 if rms else x64.mean(1, keepdims=True)
    var = (x64**2).mean(1, keepdims=True) if rms else x64.var(1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5)
    xhat = (x64 - mean) * rstd
    gw = g64 * w64
    gx = gw - xhat * (gw * xhat).mean(1, keepdims=True)
    if not rms:
        gx = gx - gw.mean(1, keepdims=True)
    np.testing.assert_allclose(got[0], gx * rstd, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], (g64 * xhat).sum(0), rtol=1e-4, atol=1e-3)
    if not rms:
        np.testing.assert_allclose(got[2], g64.sum(0), rtol=1e-4, atol=1e-3)
