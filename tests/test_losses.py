"""The losses (capi/ops/loss_ops.c): cross_entropy, nll_loss, binary_cross_entropy_with_logits,
mse_loss and smooth_l1_loss against float64 NumPy references written here and against
torch.nn.functional (torch checks the references' semantics; ctensor is compared with them within
its dtype's tolerance), over drawn shapes, class axes, layouts (sliced, reversed, transposed,
broadcast), reductions, ignore_index, label smoothing, weights, probability targets, zero-size
batches and every float dtype; plus the edge cases: out-of-range class indices, everything
ignored, empty means, extreme logits and thread-count independence.

Tolerance: a loss is a sum of rounded terms, so the absolute slack is K * eps_c * S with eps_c the
epsilon of the compute type (float32 for float16/bfloat16) and S the sum of the terms'
magnitudes (the reference recomputed on |values|), plus the output dtype's rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import any_layout, bfloat16_tensor, kernel_signatures, to_float64
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from ctensor import ops

DTYPES = ["float16", "bfloat16", "float32", "float64"]
SETTINGS = settings(max_examples=80, deadline=None)
EPS_C = {"float16": 2.0**-23, "bfloat16": 2.0**-23, "float32": 2.0**-23, "float64": 2.0**-52}
EPS_OUT = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
K = 64.0


# ---------------------------------------------------------------- float64 references


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Along the last axis."""
    if x.size == 0:
        return x.copy()
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def reduce(per: np.ndarray, reduction: str, denominator: float):
    if reduction == "none":
        return per
    if reduction == "sum":
        return np.float64(per.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.float64(per.sum()) / np.float64(denominator)


def class_loss(x, target, weight, axis, reduction, ignore_index, smoothing, nll=False):
    """cross_entropy (nll False) or nll_loss in float64; x, target float64/int NumPy arrays."""
    axis = 0 if x.ndim == 1 else axis % x.ndim
    xm = np.moveaxis(x, axis, -1)
    classes = xm.shape[-1]
    w = np.ones(classes) if weight is None else weight
    logp = xm if nll else log_softmax(xm)
    if target.dtype.kind == "f":
        q = (1 - smoothing) * np.moveaxis(target, axis, -1) + smoothing / classes
        per = -(w * q * logp).sum(-1)
        return reduce(per, reduction, per.size)
    y = target.astype(np.int64)
    keep = np.ones(y.shape, bool) if ignore_index is None else y != ignore_index
    ys = np.where(keep, y, 0)
    wy = np.where(keep, w[ys], 0.0)
    picked = np.take_along_axis(logp, ys[..., None], -1)[..., 0]
    per = np.where(keep, -wy * picked, 0.0)
    if smoothing:
        per = np.where(keep, (1 - smoothing) * per - smoothing / classes * (w * logp).sum(-1), 0.0)
    return reduce(per, reduction, wy.sum())


def log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def bce(x, t, w, pw, reduction):
    lw = 1.0 if pw is None else 1.0 + (pw - 1.0) * t
    per = (1 - t) * x - lw * log_sigmoid(x)
    per = np.broadcast_to(per if w is None else per * w, x.shape)
    return reduce(per, reduction, per.size)


def mse(x, t, reduction):
    per = (x - t) ** 2
    return reduce(per, reduction, per.size)


def smooth_l1(x, t, reduction, beta):
    d = np.abs(x - t)
    with np.errstate(invalid="ignore", divide="ignore"):
        per = np.where(d < beta, 0.5 * d * d / (beta or 1.0), d - 0.5 * beta)
    return reduce(per, reduction, per.size)


# ---------------------------------------------------------------- helpers


def f64(a):
    return None if a is None else to_float64(a)


def as_torch(a):
    if a is None:
        return None
    if isinstance(a, torch.Tensor):
        return a.to(torch.float64) if a.is_floating_point() else a.to(torch.int64)
    a = np.asarray(a)
    return torch.from_numpy(a.astype(np.float64 if a.dtype.kind == "f" else np.int64))


def check(got, reference, magnitude, dtype: str, torch_value=None):
    """ctensor's result against the float64 reference (and the reference against torch)."""
    reference = np.asarray(reference, np.float64)
    if torch_value is not None:
        np.testing.assert_allclose(
            np.asarray(torch_value, np.float64), reference, rtol=1e-9, atol=1e-9, equal_nan=True
        )
    got64 = f64(got)
    assert got64.shape == reference.shape, (got64.shape, reference.shape)
    slack = K * EPS_C[dtype] * np.asarray(magnitude, np.float64) + 2 * EPS_OUT[dtype] * np.abs(
        reference
    )
    finite = np.isfinite(reference)
    assert np.array_equal(np.isnan(got64), np.isnan(reference)), (got64, reference)
    err = np.abs(np.where(finite, got64 - reference, 0.0))
    bound = np.where(finite, slack + EPS_OUT[dtype], 0.0)
    assert np.all(err <= bound), f"{dtype}: error {err.max()} > {bound.max()}\n{got64}\n{reference}"


def class_magnitude(x, weight, classes: int, reduction: str, samples) -> float:
    """A bound on the magnitude of a class-axis loss's terms: per sample, classes times (the
    largest |logit| + log(classes) + 1), times the weights' spread; times the sample count for a
    sum."""
    biggest = float(np.max(np.abs(x), initial=0.0))
    w = np.ones(1) if weight is None else weight
    spread = float(w.max() / w.min())
    per = classes * (biggest + np.log(classes) + 1.0) * spread
    return per * max(1, int(np.prod(samples))) if reduction == "sum" else per


def floats(lo: float, hi: float, dtype: str):
    width = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64}[dtype]
    return st.floats(lo, hi, width=width, allow_subnormal=False)


def draw_float(data, dtype: str, shape, lo=-4.0, hi=4.0):
    return data.draw(any_layout(dtype, shape=tuple(shape), elements=floats(lo, hi, dtype)))


def vector(data, dtype: str, n: int, lo: float, hi: float):
    values = np.array(data.draw(st.lists(st.floats(lo, hi), min_size=n, max_size=n)), np.float64)
    if dtype == "bfloat16":
        return bfloat16_tensor(values)
    return values.astype(dtype)


def class_targets(data, shape, classes: int, ignore, int_dtype: str, like_torch: bool):
    size = int(np.prod(shape)) if shape else 1
    values = np.array(
        data.draw(st.lists(st.integers(0, classes - 1), min_size=size, max_size=size)), np.int64
    )
    if ignore is not None and size:
        mask = np.array(data.draw(st.lists(st.booleans(), min_size=size, max_size=size)))
        values = np.where(mask, ignore, values)
    values = values.reshape(shape).astype(int_dtype)
    if data.draw(st.booleans()) and values.ndim:  # a strided view
        values = np.repeat(values, 2, axis=-1)[..., ::2]
    return torch.from_numpy(values.copy()) if like_torch else values


@st.composite
def class_cases(draw, nll: bool = False):
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(1, 3))
    classes = draw(st.integers(1, 6))
    axis = 0 if ndim == 1 else draw(st.integers(0, ndim - 1))
    shape = [draw(st.integers(0 if k == 0 else 1, 4)) for k in range(ndim)]
    shape[axis] = classes
    kind = draw(st.sampled_from(["int64", "int32"] if nll else ["int64", "int32", "prob"]))
    attrs = {
        "axis": draw(st.sampled_from([axis, axis - ndim]))
        if ndim > 1
        else draw(st.sampled_from([0, 1, -1])),
        "reduction": draw(st.sampled_from(["mean", "sum", "none"])),
    }
    if kind != "prob":
        attrs["ignore_index"] = draw(st.sampled_from([None, -100, 0, classes - 1]))
    if not nll:
        attrs["label_smoothing"] = draw(st.sampled_from([0.0, 0.0, 0.25, 1.0]))
    return dtype, shape, axis, kind, draw(st.booleans()), attrs


def torch_class(fn, x, target, weight, axis, attrs, **extra):
    tx = as_torch(x)
    tt = as_torch(target)
    if x.ndim > 1:
        tx = torch.movedim(tx, axis, 1)
        if tt.is_floating_point():
            tt = torch.movedim(tt, axis, 1)
    ignore = attrs.get("ignore_index")
    kwargs = {"weight": as_torch(weight), "reduction": attrs["reduction"], **extra}
    if not tt.is_floating_point():
        kwargs["ignore_index"] = -100 if ignore is None else ignore
    return fn(tx, tt, **kwargs).numpy()


# ---------------------------------------------------------------- cross_entropy, nll_loss


@SETTINGS
@given(case=class_cases(), data=st.data())
def test_cross_entropy(case, data):
    dtype, shape, axis, kind, weighted, attrs = case
    x = draw_float(data, dtype, shape)
    samples = [e for k, e in enumerate(shape) if k != axis]
    like_torch = dtype == "bfloat16"
    if kind == "prob":
        target = draw_float(data, dtype, shape, 0.0, 1.0)
    else:
        target = class_targets(data, samples, shape[axis], attrs["ignore_index"], kind, like_torch)
    weight = vector(data, dtype, shape[axis], 0.1, 2.0) if weighted else None
    got = ops.cross_entropy(x, target, weight, **attrs)
    args = (f64(x), np.asarray(target) if kind != "prob" else f64(target), f64(weight))
    call = (axis, attrs["reduction"], attrs.get("ignore_index"), attrs["label_smoothing"])
    reference = class_loss(*args, *call)
    magnitude = class_magnitude(args[0], args[2], shape[axis], attrs["reduction"], samples)
    expected = torch_class(
        F.cross_entropy, *args, axis, attrs, label_smoothing=attrs["label_smoothing"]
    )
    check(got, reference, magnitude, dtype, expected)


@SETTINGS
@given(case=class_cases(nll=True), data=st.data())
def test_nll_loss(case, data):
    dtype, shape, axis, kind, weighted, attrs = case
    x = draw_float(data, dtype, shape, -6.0, 0.0)
    samples = [e for k, e in enumerate(shape) if k != axis]
    target = class_targets(
        data, samples, shape[axis], attrs["ignore_index"], kind, dtype == "bfloat16"
    )
    weight = vector(data, dtype, shape[axis], 0.1, 2.0) if weighted else None
    got = ops.nll_loss(x, target, weight, **attrs)
    args = (f64(x), np.asarray(target), f64(weight))
    call = (axis, attrs["reduction"], attrs["ignore_index"], 0.0)
    reference = class_loss(*args, *call, nll=True)
    magnitude = class_magnitude(args[0], args[2], shape[axis], attrs["reduction"], samples)
    check(got, reference, magnitude, dtype, torch_class(F.nll_loss, *args, axis, attrs))


def test_large_logits_are_stable():
    x = np.array([[1e4, -1e4, 0.0], [-3e4, -3e4 + 1, -3e4 + 2]], np.float32)
    y = np.array([1, 0])
    got = ops.cross_entropy(x, y, reduction="none")
    want = F.cross_entropy(
        torch.from_numpy(x.astype(np.float64)), torch.from_numpy(y), reduction="none"
    )
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)
    assert np.all(np.isfinite(got))


def test_out_of_range_class_is_an_error_and_writes_nothing():
    x = np.random.default_rng(0).standard_normal((4, 3))
    out = np.full(4, 7.0)
    for bad in (3, -1):
        y = np.array([0, 1, bad, 2])
        with pytest.raises(ctensor.InvalidArgumentError, match="out of range"):
            ops.cross_entropy(x, y, reduction="none", out=out)
        assert np.all(out == 7.0)
        with pytest.raises(ctensor.InvalidArgumentError, match="out of range"):
            ops.nll_loss(x, y)
        g = np.full((4, 3), 5.0)
        with pytest.raises(ctensor.InvalidArgumentError, match="out of range"):
            ops.cross_entropy_backward(np.float64(1.0), x, y, out=(g, np.zeros(4)))
        assert np.all(g == 5.0)
    # an index equal to ignore_index may lie outside [0, C)
    y = np.array([0, 1, -100, 2])
    torch_value = F.cross_entropy(torch.from_numpy(x), torch.from_numpy(y))
    np.testing.assert_allclose(ops.cross_entropy(x, y, ignore_index=-100), torch_value.numpy())


def test_all_ignored_and_empty_means_are_nan():
    x = np.random.default_rng(1).standard_normal((3, 4))
    y = np.array([2, 2, 2])
    for smoothing in (0.0, 0.3):
        got = ops.cross_entropy(x, y, ignore_index=2, label_smoothing=smoothing)
        want = F.cross_entropy(
            torch.from_numpy(x), torch.from_numpy(y), ignore_index=2, label_smoothing=smoothing
        )
        assert np.isnan(got) and np.isnan(want.item())
    assert np.isnan(ops.nll_loss(x, y, ignore_index=2))
    assert ops.cross_entropy(x, y, ignore_index=2, reduction="sum") == 0.0
    empty = np.zeros((0, 4))
    assert np.isnan(ops.cross_entropy(empty, np.zeros(0, np.int64)))
    assert np.isnan(ops.cross_entropy(empty, empty))
    assert ops.cross_entropy(empty, np.zeros(0, np.int64), reduction="sum") == 0.0
    assert ops.cross_entropy(empty, np.zeros(0, np.int64), reduction="none").shape == (0,)
    assert np.isnan(ops.mse_loss(empty, empty))
    assert np.isnan(ops.binary_cross_entropy_with_logits(empty, empty))
    assert ops.smooth_l1_loss(empty, empty, reduction="sum") == 0.0


def test_bad_arguments_are_errors():
    x = np.zeros((2, 3))
    y = np.array([0, 1])
    with pytest.raises(ctensor.InvalidArgumentError, match="ignore_index"):
        ops.cross_entropy(x, np.zeros((2, 3)), ignore_index=1)
    with pytest.raises(ctensor.InvalidArgumentError, match="label_smoothing"):
        ops.cross_entropy(x, y, label_smoothing=1.5)
    with pytest.raises(ctensor.InvalidArgumentError, match="reduction"):
        ops.cross_entropy(x, y, reduction="average")
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.cross_entropy(x, np.array([0, 1, 2]))
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.cross_entropy(x, y, np.ones(4))
    with pytest.raises(ctensor.UnsupportedDTypeError):
        ops.nll_loss(x, np.zeros(2))
    with pytest.raises(ctensor.UnsupportedDTypeError):
        ops.cross_entropy(x, np.array([0, 1], np.uint8))
    with pytest.raises(ctensor.InvalidArgumentError, match="beta"):
        ops.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.binary_cross_entropy_with_logits(x, np.zeros(3))
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.binary_cross_entropy_with_logits(x, x, np.ones((4, 2, 3)))


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3000, 37)).astype(np.float32)
    y = rng.integers(0, 37, 3000)
    t = rng.random((3000, 37)).astype(np.float32)
    before = ctensor.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            ctensor.set_num_threads(threads)
            results.append(
                [
                    np.asarray(ops.cross_entropy(x, y, label_smoothing=0.1)),
                    np.asarray(ops.cross_entropy(x, t, reduction="sum")),
                    np.asarray(ops.mse_loss(x, t)),
                    np.asarray(ops.binary_cross_entropy_with_logits(x, t)),
                    np.asarray(ops.cross_entropy_backward(np.float32(1.0), x, y)[0]),
                ]
            )
    finally:
        ctensor.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            assert np.array_equal(a, b)


def test_declared_signatures():
    floats = ["float16", "bfloat16", "float32", "float64"]
    signatures = kernel_signatures("cross_entropy")
    for f in floats:
        for y in ("int32", "int64", f):
            assert (f, y, f, f) in signatures
    assert {s[0] for s in kernel_signatures("mse_loss")} == set(floats)


# ---------------------------------------------------------------- element-wise losses


@st.composite
def point_cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=3))
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    return dtype, shape, reduction


def broadcast_shape_of(data, shape):
    """A shape that broadcasts to `shape` (some dims 1, some leading dims dropped)."""
    drop = data.draw(st.integers(0, len(shape)))
    return [1 if data.draw(st.booleans()) else e for e in shape[drop:]]


@SETTINGS
@given(case=point_cases(), data=st.data())
def test_binary_cross_entropy_with_logits(case, data):
    dtype, shape, reduction = case
    x = draw_float(data, dtype, shape, -6.0, 6.0)
    t = draw_float(data, dtype, shape, 0.0, 1.0)
    w = draw_float(data, dtype, broadcast_shape_of(data, shape), 0.125, 2.0)
    pw = draw_float(data, dtype, broadcast_shape_of(data, shape), 0.125, 3.0)
    w = w if data.draw(st.booleans()) else None
    pw = pw if data.draw(st.booleans()) else None
    got = ops.binary_cross_entropy_with_logits(x, t, w, pw, reduction=reduction)
    args = [f64(a) for a in (x, t, w, pw)]
    reference = bce(*args, reduction)
    magnitude = bce(np.abs(args[0]) + 2.0, args[1], args[2], args[3], reduction)
    expected = F.binary_cross_entropy_with_logits(
        as_torch(x), as_torch(t), as_torch(w), pos_weight=as_torch(pw), reduction=reduction
    )
    check(got, reference, np.abs(magnitude) + np.abs(reference), dtype, expected.numpy())


@SETTINGS
@given(case=point_cases(), data=st.data(), beta=st.sampled_from([0.0, 0.5, 1.0, 2.0]))
def test_mse_and_smooth_l1(case, data, beta):
    dtype, shape, reduction = case
    x = draw_float(data, dtype, shape)
    t = draw_float(data, dtype, broadcast_shape_of(data, shape))
    if data.draw(st.booleans()):
        x, t = t, x  # the target may be the larger operand
    args = (f64(x), f64(t))
    with pytest.warns(UserWarning) if np.shape(args[0]) != np.shape(args[1]) else _nothing():
        want_mse = F.mse_loss(as_torch(x), as_torch(t), reduction=reduction).numpy()
    reference = mse(*args, reduction)
    check(ops.mse_loss(x, t, reduction=reduction), reference, np.abs(reference), dtype, want_mse)
    with pytest.warns(UserWarning) if np.shape(args[0]) != np.shape(args[1]) else _nothing():
        want = F.smooth_l1_loss(as_torch(x), as_torch(t), reduction=reduction, beta=beta)
    reference = smooth_l1(*args, reduction, beta)
    got = ops.smooth_l1_loss(x, t, reduction=reduction, beta=beta)
    check(got, reference, np.abs(reference) + 8.0, dtype, want.numpy())


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
