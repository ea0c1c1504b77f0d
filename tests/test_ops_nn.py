"""Deep-learning ops (normalisation, pooling, interpolation, transposed convolution) against
torch.nn.functional in float64.

Inputs are drawn in their dtype (float16/float32/float64 as NumPy views with any layout,
bfloat16 as torch tensors), then the reference runs torch.nn.functional on the float64 copy.

Tolerances. Besides the dtype's own rtol (the one rounding of the stored result, from
tests/arrays.py), normalisations get an absolute tolerance of
8·eps_c·(|x| + |mean|)·rstd·max(|weight|, 1) + |bias|·eps_c, eps_c the epsilon of the compute type
(float32 for float16/bfloat16/float32), a bound on the error of (x - mean)·rstd computed in that
type; sums over k terms (average pooling, interpolation, transposed convolution) get
k·eps_c·Σ|terms|.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import FLOATS, assert_close, kernel_dtypes, strided_arrays, strided_bfloat16, to_float64
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor

SETTINGS = settings(max_examples=30, deadline=None)
EPS_C = {
    "float16": float(np.finfo(np.float32).eps),
    "bfloat16": float(np.finfo(np.float32).eps),
    "float32": float(np.finfo(np.float32).eps),
    "float64": float(np.finfo(np.float64).eps),
}
# The spacing of each dtype's subnormals: a result that underflows into them is rounded to a
# multiple of it (float32: 1e-5 * 1.2e-38 is 83.9 of them, rounded to 84).
SUBNORMAL = {
    "float16": 2.0**-24,
    "bfloat16": 2.0**-133,
    "float32": 2.0**-149,
    "float64": 2.0**-1074,
}


def finite(dtype: str, bound: float = 4.0):
    width = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64}[dtype]
    return st.floats(-bound, bound, width=width, allow_subnormal=False)


@st.composite
def arrays(draw, dtype: str, shape, elements=None):
    """An input of `dtype` and `shape` with a drawn layout: NumPy for float16/32/64, torch for
    bfloat16."""
    if elements is None:
        elements = finite(dtype)
    if dtype == "bfloat16":
        return draw(strided_bfloat16(shape=tuple(shape), elements=elements))
    return draw(strided_arrays(dtype, shape=tuple(shape), elements=elements))


def t64(a) -> torch.Tensor | None:
    return None if a is None else torch.from_numpy(np.ascontiguousarray(to_float64(a)))


def test_declared_dtypes():
    for op in ["layer_norm", "rms_norm", "group_norm", "batch_norm"]:
        assert kernel_dtypes(op) == FLOATS


# ----------------------------------------------------------------------------------------------
# normalisation
# ----------------------------------------------------------------------------------------------


def norm_atol(dtype: str, x64: np.ndarray, weight, bias, axes, rms: bool, eps: float) -> float:
    """The bound of the module docstring, from the float64 input."""
    if x64.size == 0:
        return 0.0
    mean = 0.0 if rms else x64.mean(axis=axes, keepdims=True)
    var = (x64**2).mean(axis=axes, keepdims=True) if rms else x64.var(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    w = 1.0 if weight is None else max(float(np.max(np.abs(to_float64(weight)), initial=0)), 1.0)
    b = 0.0 if bias is None else float(np.max(np.abs(to_float64(bias)), initial=0))
    e = EPS_C[dtype]
    return float(np.max(8 * e * (np.abs(x64) + np.abs(mean)) * rstd * w, initial=0) + b * e) + (
        1e-300 if dtype == "float64" else 1e-6
    )


@st.composite
def layer_norm_case(draw, dtype: str):
    shape = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    count = draw(st.integers(1, len(shape)))
    normalized = shape[len(shape) - count :]
    x = draw(arrays(dtype, shape))
    weight = draw(st.none() | arrays(dtype, normalized))
    bias = draw(st.none() | arrays(dtype, normalized))
    return x, weight, bias, normalized


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_layer_norm(dtype, data):
    x, weight, bias, normalized = data.draw(layer_norm_case(dtype))
    eps = data.draw(st.sampled_from([1e-5, 1e-2]))
    result = ctensor.ops.layer_norm(x, weight, bias, normalized_shape=normalized, eps=eps)
    expected = F.layer_norm(t64(x), normalized, t64(weight), t64(bias), eps=eps).numpy()
    axes = tuple(range(x.ndim - len(normalized), x.ndim))
    atol = norm_atol(dtype, to_float64(x), weight, bias, axes, False, eps)
    assert_close(result, expected, dtype, atol=atol)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_rms_norm(dtype, data):
    x, weight, _, normalized = data.draw(layer_norm_case(dtype))
    eps = data.draw(st.sampled_from([None, 1e-5, 0.5]))
    result = ctensor.ops.rms_norm(x, weight, normalized_shape=normalized, eps=eps)
    # torch's default eps is that of the compute type: the float64 reference must use it.
    ref_eps = eps if eps is not None else EPS_C[dtype]
    expected = F.rms_norm(t64(x), normalized, t64(weight), eps=ref_eps).numpy()
    axes = tuple(range(x.ndim - len(normalized), x.ndim))
    atol = norm_atol(dtype, to_float64(x), weight, None, axes, True, ref_eps)
    assert_close(result, expected, dtype, atol=atol)


def test_rms_norm_default_eps_is_torchs():
    for dtype in [torch.float16, torch.bfloat16, torch.float32, torch.float64]:
        x = torch.full((2, 4), 1e-3, dtype=dtype)
        assert torch.equal(ctensor.ops.rms_norm(x, normalized_shape=[4]), F.rms_norm(x, [4]))


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_group_norm(dtype, data):
    groups = data.draw(st.integers(1, 3))
    shape = [
        data.draw(st.integers(0, 3)),
        groups * data.draw(st.integers(1, 3)),
        *data.draw(st.lists(st.integers(0, 4), max_size=2)),
    ]
    x = data.draw(arrays(dtype, shape))
    weight = data.draw(st.none() | arrays(dtype, shape[1:2]))
    bias = data.draw(st.none() | arrays(dtype, shape[1:2]))
    result = ctensor.ops.group_norm(x, weight, bias, num_groups=groups, eps=1e-5)
    # torch.group_norm: F.group_norm refuses one value per group in Python, the op does not.
    expected = torch.group_norm(t64(x), groups, t64(weight), t64(bias), 1e-5, False).numpy()
    x64 = to_float64(x)
    grouped = x64.reshape(shape[0], groups, -1) if x64.size else x64
    atol = norm_atol(dtype, grouped, weight, bias, (2,) if x64.size else (), False, 1e-5)
    assert_close(result, expected, dtype, atol=atol)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_batch_norm(dtype, data):
    shape = [
        data.draw(st.integers(0, 3)),
        data.draw(st.integers(1, 4)),
        *data.draw(st.lists(st.integers(0, 4), max_size=2)),
    ]
    c = shape[1:2]
    x = data.draw(arrays(dtype, shape))
    mean = data.draw(arrays(dtype, c))
    var = data.draw(arrays(dtype, c, elements=finite(dtype, 4).map(abs)))
    weight = data.draw(st.none() | arrays(dtype, c))
    bias = data.draw(st.none() | arrays(dtype, c))
    eps = 1e-3
    result = ctensor.ops.batch_norm(x, mean, var, weight, bias, eps=eps)
    expected = F.batch_norm(t64(x), t64(mean), t64(var), t64(weight), t64(bias), eps=eps).numpy()
    e = EPS_C[dtype]
    w = 1.0 if weight is None else max(float(np.max(np.abs(to_float64(weight)))), 1.0)
    b = 0.0 if bias is None else float(np.max(np.abs(to_float64(bias))))
    atol = 8 * e * (4 + 4) / np.sqrt(eps) * w + b * e + 1e-300
    assert_close(result, expected, dtype, atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norms_nan_inf(dtype):
    x = np.array([[1.0, np.nan, 2.0, 3.0], [1.0, np.inf, 2.0, 3.0], [1.0, 5.0, 2.0, 3.0]], dtype)
    xt = torch.from_numpy(x)
    pairs = [
        (ctensor.ops.layer_norm(x, normalized_shape=[4]), F.layer_norm(xt, [4])),
        (ctensor.ops.rms_norm(x, normalized_shape=[4]), F.rms_norm(xt, [4])),
        (ctensor.ops.group_norm(x, num_groups=2), F.group_norm(xt, 2)),
        (
            ctensor.ops.batch_norm(x, x[0], np.abs(x[1]), x[2], x[2]),
            F.batch_norm(xt, xt[0], xt[1].abs(), xt[2], xt[2]),
        ),
    ]
    for ours, theirs in pairs:
        assert_close(ours, theirs.numpy(), dtype)


def test_norm_errors():
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.layer_norm(x, normalized_shape=[3])
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.layer_norm(x, normalized_shape=[])
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.layer_norm(x, np.zeros(3, np.float32), normalized_shape=[4])
    with pytest.raises(ValueError):
        ctensor.ops.group_norm(x, num_groups=2)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.group_norm(x, np.zeros(4, np.float32), num_groups=3)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.batch_norm(x, np.zeros(4, np.float32), np.ones(3, np.float32))
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.batch_norm(
            np.zeros(3, np.float32), np.zeros(3, np.float32), np.ones(3, np.float32)
        )
    with pytest.raises(ValueError):
        ctensor.ops.layer_norm(x, normalized_shape=[4], eps=-1.0)


# ----------------------------------------------------------------------------------------------
# pooling
# ----------------------------------------------------------------------------------------------


def pair(draw, lo: int, hi: int):
    """An int or a pair of ints, as torch accepts."""
    return draw(st.integers(lo, hi) | st.tuples(st.integers(lo, hi), st.integers(lo, hi)))


def both(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


def pool_out(size, k, s, p, d, ceil_mode):
    n = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = n // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


@st.composite
def pool_case(draw, dtype: str, dilation: bool):
    kernel = pair(draw, 1, 3)
    stride = draw(st.none() | st.just([]) | st.integers(1, 3) | st.tuples(*[st.integers(1, 3)] * 2))
    padding = draw(
        st.integers(0, both(kernel)[0] // 2).map(lambda v: (v, 0))
        | st.just(0)
        | st.just((min(both(kernel)) // 2,) * 2)
    )
    dil = pair(draw, 1, 2) if dilation else 1
    ceil_mode = draw(st.booleans())
    lead = draw(st.sampled_from([[], [0], [1], [2]]))
    channels = draw(st.integers(1, 3))
    k, p, d = both(kernel), both(padding), both(dil)
    s = k if stride is None or stride == [] else both(stride)
    spatial = []
    for i in range(2):
        lo = d[i] * (k[i] - 1) + 1 - 2 * p[i]
        size = draw(st.integers(max(lo, 1), max(lo, 1) + 5))
        assert pool_out(size, k[i], s[i], p[i], d[i], ceil_mode) >= 1
        spatial.append(size)
    elements = finite(dtype) | st.just(float("nan")) | st.just(float("inf"))
    x = draw(arrays(dtype, [*lead, channels, *spatial], elements=finite(dtype)))
    if draw(st.booleans()) and dtype != "bfloat16":  # specials in a few places
        x = np.array(x)
        flat = x.reshape(-1)
        for _ in range(draw(st.integers(0, 3))):
            if flat.size:
                flat[draw(st.integers(0, flat.size - 1))] = draw(elements)
    return x, kernel, stride, padding, dil, ceil_mode


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_max_pool2d(dtype, data):
    x, kernel, stride, padding, dilation, ceil_mode = data.draw(pool_case(dtype, True))
    result = ctensor.ops.max_pool2d(
        x,
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        dilation=dilation,
        ceil_mode=ceil_mode,
    )
    expected = F.max_pool2d(
        t64(x),
        kernel,
        stride if stride is not None else [],
        padding,
        dilation,
        ceil_mode=ceil_mode,
    ).numpy()
    assert_close(result, expected, dtype, atol=0.0)  # exact: a max rounds nothing


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_avg_pool2d(dtype, data):
    x, kernel, stride, padding, _, ceil_mode = data.draw(pool_case(dtype, False))
    count_include_pad = data.draw(st.booleans())
    divisor = data.draw(st.none() | st.sampled_from([1, 3, -2]))
    result = ctensor.ops.avg_pool2d(
        x,
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor,
    )
    expected = F.avg_pool2d(
        t64(x),
        kernel,
        stride if stride is not None else [],
        padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor,
    ).numpy()
    k = both(kernel)[0] * both(kernel)[1]
    magnitude = float(
        np.nanmax(np.abs(np.where(np.isinf(to_float64(x)), 0, to_float64(x))), initial=0)
    )
    assert_close(result, expected, dtype, atol=k * EPS_C[dtype] * magnitude * k + 1e-300)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_adaptive_avg_pool2d(dtype, data):
    lead = data.draw(st.sampled_from([[], [0], [2]]))
    shape = [
        *lead,
        data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 9)),
        data.draw(st.integers(1, 9)),
    ]
    x = data.draw(arrays(dtype, shape))
    size = data.draw(st.integers(0, 5) | st.tuples(st.integers(1, 5), st.integers(0, 10)))
    result = ctensor.ops.adaptive_avg_pool2d(x, output_size=size)
    expected = F.adaptive_avg_pool2d(t64(x), size).numpy()
    k = shape[-1] * shape[-2]
    assert_close(result, expected, dtype, atol=k * EPS_C[dtype] * 4 + 1e-300)


def test_pool_errors():
    x = np.zeros((1, 2, 5, 5), np.float32)
    with pytest.raises(ValueError):
        ctensor.ops.max_pool2d(x, kernel_size=0)
    with pytest.raises(ValueError):
        ctensor.ops.max_pool2d(x, kernel_size=2, padding=-1)
    with pytest.raises(ValueError):
        ctensor.ops.avg_pool2d(x, kernel_size=2, stride=0)
    with pytest.raises(ValueError):
        ctensor.ops.avg_pool2d(x, kernel_size=2, divisor_override=0)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.max_pool2d(x, kernel_size=6)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.max_pool2d(np.zeros((5, 5), np.float32), kernel_size=2)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.adaptive_avg_pool2d(np.zeros((1, 0, 5, 5), np.float32), output_size=2)
    with pytest.raises(ValueError):
        ctensor.ops.adaptive_avg_pool2d(x, output_size=[1, 2, 3])


# ----------------------------------------------------------------------------------------------
# interpolate
# ----------------------------------------------------------------------------------------------


@st.composite
def interpolate_case(draw, dtype: str):
    # Two or more channels: torch takes its channels-last kernel (float index arithmetic even
    # for float64) for inputs that are also channels-last contiguous, as (N, 1, H, W) is.
    shape = [
        draw(st.integers(0, 2)),
        draw(st.integers(2, 3)),
        draw(st.integers(1, 6)),
        draw(st.integers(2, 6)),
    ]
    mode = draw(st.sampled_from(["nearest", "bilinear"]))
    align = None if mode == "nearest" else draw(st.sampled_from([None, False, True]))
    if draw(st.booleans()):
        size = draw(st.integers(1, 13) | st.tuples(st.integers(1, 13), st.integers(1, 13)))
        kwargs = {"size": size}
    else:
        factor = st.sampled_from([0.5, 0.7, 1.0, 1.3, 1.5, 2.0, 2.5, 3.0, 17 / 7])
        scale = draw(factor | st.tuples(factor, factor))
        sizes = both(scale) if isinstance(scale, tuple) else (scale, scale)
        if any(int(s * n) < 1 for s, n in zip(sizes, shape[2:], strict=True)):
            scale = 2.0
        kwargs = {"scale_factor": scale}
    x = draw(arrays(dtype, shape, elements=finite(dtype) | st.just(float("nan"))))
    return x, mode, align, kwargs


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_interpolate(dtype, data):
    x, mode, align, kwargs = data.draw(interpolate_case(dtype))
    result = ctensor.ops.interpolate(x, mode=mode, align_corners=align, **kwargs)
    with np.errstate(invalid="ignore"):
        expected = F.interpolate(t64(x), mode=mode, align_corners=align, **kwargs).numpy()
    if mode == "nearest":  # copies: the same source indices give the same values
        np.testing.assert_array_equal(to_float64(result), expected)
    else:
        # torch evaluates in another order (ulp-level differences) and, as here, stores the
        # weights in the dtype: 4-term sums of |x| <= 4 plus the weights' rounding.
        weight_eps = {"float16": 2.0**-11, "bfloat16": 2.0**-8}.get(dtype, 0.0)
        atol = 8 * EPS_C[dtype] * 4 + 2 * weight_eps * 4 + 1e-300
        assert_close(result, expected, dtype, atol=atol)


def test_interpolate_matches_torch_float32():
    """float32 input against torch's own float32 result: nearest bit for bit."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    for mode, align in [("nearest", None), ("bilinear", False), ("bilinear", True)]:
        for kwargs in [
            {"size": (9, 4)},
            {"size": 11},
            {"scale_factor": (1.7, 0.6)},
            {"scale_factor": 17 / 7},
        ]:
            ours = ctensor.ops.interpolate(x, mode=mode, align_corners=align, **kwargs)
            theirs = F.interpolate(torch.from_numpy(x), mode=mode, align_corners=align, **kwargs)
            if mode == "nearest":
                np.testing.assert_array_equal(ours, theirs.numpy())
            else:
                np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-6, atol=1e-6)


def test_interpolate_errors():
    x = np.zeros((1, 2, 4, 4), np.float32)
    with pytest.raises(ValueError):
        ctensor.ops.interpolate(x)
    with pytest.raises(ValueError):
        ctensor.ops.interpolate(x, size=2, scale_factor=2.0)
    with pytest.raises(ValueError):
        ctensor.ops.interpolate(x, size=2, mode="bicubic")
    with pytest.raises(ValueError):
        ctensor.ops.interpolate(x, size=2, align_corners=True)
    with pytest.raises(ValueError):
        ctensor.ops.interpolate(x, scale_factor=-1.0)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.interpolate(x, scale_factor=0.1)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.interpolate(np.zeros((2, 4, 4), np.float32), size=2)


# ----------------------------------------------------------------------------------------------
# conv_transpose2d
# ----------------------------------------------------------------------------------------------


@st.composite
def conv_transpose2d_case(draw, dtype: str):
    groups = draw(st.integers(1, 3))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride, dilation = both(pair(draw, 1, 3)), both(pair(draw, 1, 2))
    output_padding = tuple(draw(st.integers(0, max(stride[i], dilation[i]) - 1)) for i in range(2))
    padding = both(pair(draw, 0, 2))
    spatial = []
    for i in range(2):
        lo = 1
        while (lo - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + (
            output_padding[i] + 1
        ) < 1:
            lo += 1
        spatial.append(draw(st.integers(lo, lo + 3)))
    x = draw(arrays(dtype, [draw(st.integers(0, 2)), groups * cg, *spatial]))
    w = draw(arrays(dtype, [groups * cg, og, *kernel]))
    bias = draw(st.none() | arrays(dtype, [groups * og]))
    attrs = {
        "stride": stride,
        "padding": padding,
        "output_padding": output_padding,
        "groups": groups,
        "dilation": dilation,
    }
    return x, w, bias, attrs


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_conv_transpose2d(dtype, data):
    x, w, bias, attrs = data.draw(conv_transpose2d_case(dtype))
    result = ctensor.ops.conv_transpose2d(x, w, bias, **attrs)
    expected = F.conv_transpose2d(t64(x), t64(w), t64(bias), **attrs).numpy()
    # Every output element sums at most C_in/groups · kH · kW products, plus the bias.
    magnitude = F.conv_transpose2d(
        t64(x).abs(), t64(w).abs(), None if bias is None else t64(bias).abs(), **attrs
    ).numpy()
    k = w.shape[0] // attrs["groups"] * w.shape[2] * w.shape[3] + 1
    atol = k * EPS_C[dtype] * float(np.max(magnitude, initial=0)) + SUBNORMAL[dtype]
    assert_close(result, expected, dtype, atol=atol)


def test_conv_transpose2d_nan_inf():
    x = np.ones((1, 1, 3, 3))
    x[0, 0, 1, 1] = np.nan
    x[0, 0, 0, 0] = np.inf
    w = np.ones((1, 2, 2, 2))
    ours = ctensor.ops.conv_transpose2d(x, w, stride=2)
    theirs = F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), stride=2).numpy()
    assert_close(ours, theirs, "float64")


def test_conv_transpose2d_errors():
    x = np.zeros((1, 4, 3, 3), np.float32)
    w = np.zeros((4, 2, 3, 3), np.float32)
    with pytest.raises(ValueError):
        ctensor.ops.conv_transpose2d(x, w, output_padding=1)
    with pytest.raises(ValueError):
        ctensor.ops.conv_transpose2d(x, w, groups=0)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv_transpose2d(x, w, groups=3)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv_transpose2d(x, np.zeros((3, 2, 3, 3), np.float32))
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv_transpose2d(x, w, np.zeros(3, np.float32))
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv_transpose2d(x, w, padding=3)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv_transpose2d(x, np.zeros((4, 0, 3, 3), np.float32))


# ----- padding larger than half the kernel (ONNX allows it, torch refuses): a NumPy reference --


def pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape."""
    numerator = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = numerator // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def numpy_pool(x, mode, k, s, p, d, ceil_mode, count_include_pad=True, divisor=None):
    """max_pool2d / avg_pool2d of x (..., H, W) in float64 by their definition: windows of k
    taps d apart every s, over x padded with p elements (-inf for max, 0 for avg) on both
    sides; an avg window's divisor counts the taps inside the padded extent (torch's rule) or
    only those inside x; a window with no element of x gives -inf (max) or 0 (avg)."""
    x = np.asarray(x, dtype=np.float64)
    h, w = x.shape[-2:]
    oh = pool_out_size(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow = pool_out_size(w, k[1], s[1], p[1], d[1], ceil_mode)
    out = np.zeros((*x.shape[:-2], oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = [i * s[0] - p[0] + a * d[0] for a in range(k[0])]
            cols = [j * s[1] - p[1] + b * d[1] for b in range(k[1])]
            inside_r = [r for r in rows if 0 <= r < h]
            inside_c = [c for c in cols if 0 <= c < w]
            window = x[..., inside_r, :][..., inside_c]
            if mode == "max":
                flat = window.reshape(*x.shape[:-2], -1)
                if flat.shape[-1] == 0:
                    out[..., i, j] = -np.inf
                else:
                    out[..., i, j] = np.max(flat, axis=-1)  # nan propagates
                continue
            if not inside_r or not inside_c:
                continue  # 0
            total = window.sum(axis=(-1, -2))
            padded_r = [r for r in rows if -p[0] <= r < h + p[0]]
            padded_c = [c for c in cols if -p[1] <= c < w + p[1]]
            if divisor is not None:
                n = divisor
            elif count_include_pad:
                n = len(padded_r) * len(padded_c)
            else:
                n = len(inside_r) * len(inside_c)
            out[..., i, j] = total / n
    return out


@st.composite
def wide_pool_case(draw, dtype: str, dilation: bool):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    p = (draw(st.integers(0, 5)), draw(st.integers(0, 5)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) if dilation else (1, 1)
    lead = draw(st.sampled_from([[], [2]]))
    shape = [*lead, draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 5))]
    x = draw(strided_arrays(dtype, shape=tuple(shape), elements=finite(dtype)))
    return x, k, s, p, d, draw(st.booleans())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@SETTINGS
@given(data=st.data())
def test_max_pool2d_any_padding_matches_numpy(dtype, data):
    x, k, s, p, d, ceil_mode = data.draw(wide_pool_case(dtype, True))
    h, w = x.shape[-2:]
    if (
        min(
            pool_out_size(h, k[0], s[0], p[0], d[0], ceil_mode),
            pool_out_size(w, k[1], s[1], p[1], d[1], ceil_mode),
        )
        < 1
    ):
        with pytest.raises(ctensor.ShapeMismatchError):
            ctensor.ops.max_pool2d(x, kernel_size=k, stride=s, padding=p, dilation=d)
        return
    got = ctensor.ops.max_pool2d(
        x, kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil_mode
    )
    np.testing.assert_array_equal(got, numpy_pool(x, "max", k, s, p, d, ceil_mode))
    if p[0] <= k[0] // 2 and p[1] <= k[1] // 2:  # where torch takes it too
        want = F.max_pool2d(t64(x), k, s, p, d, ceil_mode=ceil_mode).numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@SETTINGS
@given(data=st.data())
def test_avg_pool2d_any_padding_matches_numpy(dtype, data):
    x, k, s, p, _, ceil_mode = data.draw(wide_pool_case(dtype, False))
    count_include_pad = data.draw(st.booleans())
    divisor = data.draw(st.none() | st.sampled_from([1, 3]))
    h, w = x.shape[-2:]
    if (
        min(
            pool_out_size(h, k[0], s[0], p[0], 1, ceil_mode),
            pool_out_size(w, k[1], s[1], p[1], 1, ceil_mode),
        )
        < 1
    ):
        return
    got = ctensor.ops.avg_pool2d(
        x,
        kernel_size=k,
        stride=s,
        padding=p,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor,
    )
    want = numpy_pool(x, "avg", k, s, p, (1, 1), ceil_mode, count_include_pad, divisor)
    assert_close(got, want, dtype, atol=1e-5 if dtype == "float32" else 1e-12)


def test_pool_windows_entirely_in_padding():
    x = np.arange(4.0).reshape(1, 1, 2, 2)
    got = ctensor.ops.max_pool2d(x, kernel_size=1, padding=1)
    want = np.full((1, 1, 4, 4), -np.inf)
    want[..., 1:3, 1:3] = x
    np.testing.assert_array_equal(got, want)
    for count_include_pad in (True, False):
        avg = ctensor.ops.avg_pool2d(
            x, kernel_size=1, padding=1, count_include_pad=count_include_pad
        )
        np.testing.assert_array_equal(avg, np.where(np.isinf(want), 0.0, want))
    # backward: windows in the padding send nothing back; the others as torch's interior
    g = np.ones((1, 1, 4, 4))
    np.testing.assert_array_equal(
        ctensor.ops.max_pool2d_backward(g, x, kernel_size=1, padding=1), np.ones_like(x)
    )
    np.testing.assert_array_equal(
        ctensor.ops.avg_pool2d_backward(g, x, kernel_size=1, padding=1), np.ones_like(x)
    )


# ----- integer max pooling: the padding is the dtype's minimum ---------------------------------

INT_POOL_DTYPES = ["int8", "uint8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]


def test_max_pool2d_registered_for_integers():
    assert set(INT_POOL_DTYPES) <= set(kernel_dtypes("max_pool2d"))
    with pytest.raises(TypeError):
        ctensor.ops.avg_pool2d(np.zeros((1, 2, 2), np.int32), kernel_size=2)


@pytest.mark.parametrize("dtype", INT_POOL_DTYPES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_integer_max_pool2d_matches_numpy(dtype, data):
    info = np.iinfo(dtype)
    values = st.integers(int(info.min), int(info.max))
    k = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    s = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    p = (data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3)))
    d = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    ceil_mode = data.draw(st.booleans())
    shape = (
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 5)),
        data.draw(st.integers(1, 5)),
    )
    x = data.draw(strided_arrays(dtype, shape=shape, elements=values))
    h, w = shape[-2:]
    if (
        min(
            pool_out_size(h, k[0], s[0], p[0], d[0], ceil_mode),
            pool_out_size(w, k[1], s[1], p[1], d[1], ceil_mode),
        )
        < 1
    ):
        return
    got = ctensor.ops.max_pool2d(
        x, kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil_mode
    )
    assert got.dtype == np.dtype(dtype)
    # the float64 reference on the values' ranks (exact for 64-bit values too), -inf -> minimum
    order = np.unique(x)
    ranks = np.searchsorted(order, x).astype(np.float64)
    want = numpy_pool(ranks, "max", k, s, p, d, ceil_mode)
    expected = np.where(np.isinf(want), info.min, order[np.clip(want, 0, None).astype(np.int64)])
    np.testing.assert_array_equal(got, expected.astype(dtype))
    if (
        dtype in ("int8", "uint8", "int16", "int32", "int64")
        and p[0] <= k[0] // 2
        and p[1] <= k[1] // 2
    ):
        t = torch.from_numpy(np.array(x))  # a writable copy: x may be a read-only view
        np.testing.assert_array_equal(got, F.max_pool2d(t, k, s, p, d, ceil_mode=ceil_mode).numpy())
