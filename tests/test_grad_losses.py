"""Gradients of the losses end to end (ctensor.autodiff.vjp through the rows of
capi/gradients/loss_grads.h and the backward operators) against torch.autograd and central finite
differences (tests/gradcheck.py check_vjp), over drawn shapes, class axes, reductions,
ignore_index, label smoothing, weights, probability targets and broadcasting, in every float
dtype; plus the points torch treats specially (the kinks of smooth_l1_loss, beta = 0) and what is
not differentiable (weights, class indices)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from ctensor import ops

DTYPES = ["float64", "float32", "float16", "bfloat16"]
SETTINGS = settings(max_examples=60, deadline=None)
# Low-precision dtypes: the inputs are rounded, then torch runs in float64 on them; ctensor's
# cotangents carry the dtype's rounding of the cotangent, the scale and the result.
LOOSE = {"float16": (3e-2, 1e-2), "bfloat16": (8e-2, 4e-2)}


def tolerances(dtype: str) -> dict:
    if dtype in LOOSE:
        return {"rtol": LOOSE[dtype][0], "atol": LOOSE[dtype][1]}
    return {}


def normal(rng, shape, scale=1.5) -> np.ndarray:
    return rng.standard_normal(shape) * scale


@st.composite
def class_case(draw, nll: bool = False):
    ndim = draw(st.integers(1, 3))
    classes = draw(st.integers(2, 5))
    axis = 0 if ndim == 1 else draw(st.integers(0, ndim - 1))
    shape = [draw(st.integers(1, 3)) for _ in range(ndim)]
    shape[axis] = classes
    prob = not nll and draw(st.booleans())
    attrs = {
        "axis": axis if ndim > 1 else draw(st.sampled_from([0, 1, -1])),
        "reduction": draw(st.sampled_from(["mean", "sum", "none"])),
    }
    if not prob:
        attrs["ignore_index"] = draw(st.sampled_from([None, 0, classes - 1]))
    if not nll:
        attrs["label_smoothing"] = draw(st.sampled_from([0.0, 0.3]))
    return (
        draw(st.sampled_from(DTYPES)),
        shape,
        axis,
        prob,
        draw(st.booleans()),
        attrs,
        draw(st.integers(0, 2**31)),
    )


def class_inputs(shape, axis, prob, weighted, attrs, seed, nll=False):
    rng = np.random.default_rng(seed)
    classes = shape[axis]
    x = normal(rng, shape) if not nll else -rng.random(shape) * 3
    samples = [e for k, e in enumerate(shape) if k != axis]
    if prob:
        target = rng.random(shape)
    else:
        target = rng.integers(0, classes, samples).astype(np.int64)
        ignore = attrs.get("ignore_index")
        if ignore is not None:
            target = np.where(rng.random(samples) < 0.3, ignore, target)
            flat = target.reshape(-1)
            if flat.size and np.all(flat == ignore):  # the mean of nothing has no derivative
                flat[0] = (ignore + 1) % classes
                target = flat.reshape(target.shape)
    weight = rng.random(classes) + 0.25 if weighted else None
    return x, target, weight


def torch_class_fn(fn, axis, ndim, attrs, **extra):
    def run(x, target, weight):
        if ndim > 1:
            x = torch.movedim(x, axis, 1)
            if target.is_floating_point():
                target = torch.movedim(target, axis, 1)
        kwargs = {"weight": weight, "reduction": attrs["reduction"], **extra}
        if not target.is_floating_point():
            ignore = attrs.get("ignore_index")
            kwargs["ignore_index"] = -100 if ignore is None else ignore
        return fn(x, target, **kwargs)

    return run


@SETTINGS
@given(case=class_case())
def test_cross_entropy_gradient(case):
    dtype, shape, axis, prob, weighted, attrs, seed = case
    x, target, weight = class_inputs(shape, axis, prob, weighted, attrs, seed)
    fn = torch_class_fn(
        F.cross_entropy, axis, len(shape), attrs, label_smoothing=attrs["label_smoothing"]
    )
    grads = check_vjp(
        "cross_entropy",
        [x, target, weight],
        attrs,
        fn,
        dtype=dtype,
        constants=(2,),
        **tolerances(dtype),
    )
    if not prob:  # class indices take no cotangent: their grad_target is zeros
        g = grads[1]
        assert not np.any(g.float().numpy() if isinstance(g, torch.Tensor) else np.asarray(g))


@SETTINGS
@given(case=class_case(nll=True))
def test_nll_loss_gradient(case):
    dtype, shape, axis, prob, weighted, attrs, seed = case
    x, target, weight = class_inputs(shape, axis, prob, weighted, attrs, seed, nll=True)
    fn = torch_class_fn(F.nll_loss, axis, len(shape), attrs)
    check_vjp(
        "nll_loss",
        [x, target, weight],
        attrs,
        fn,
        dtype=dtype,
        constants=(2,),
        **tolerances(dtype),
    )


def some_broadcast(rng, shape):
    drop = int(rng.integers(0, len(shape) + 1))
    return tuple(1 if rng.random() < 0.5 else e for e in shape[drop:])


@SETTINGS
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    weighted=st.booleans(),
    positive=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_binary_cross_entropy_with_logits_gradient(
    dtype, shape, reduction, weighted, positive, seed
):
    rng = np.random.default_rng(seed)
    x = normal(rng, shape, 2.0)
    t = rng.random(shape)
    w = rng.random(some_broadcast(rng, shape)) + 0.25 if weighted else None
    pw = rng.random(some_broadcast(rng, shape)) * 2 + 0.25 if positive else None

    def fn(x, t, w, pw):
        return F.binary_cross_entropy_with_logits(x, t, w, pos_weight=pw, reduction=reduction)

    check_vjp(
        "binary_cross_entropy_with_logits",
        [x, t, w, pw],
        {"reduction": reduction},
        fn,
        dtype=dtype,
        constants=(2, 3),
        **tolerances(dtype),
    )


@SETTINGS
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    beta=st.sampled_from([0.0, 0.5, 1.0]),
    swap=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_mse_and_smooth_l1_gradients(dtype, shape, reduction, beta, swap, seed):
    rng = np.random.default_rng(seed)
    x = normal(rng, shape)
    t = normal(rng, some_broadcast(rng, shape))
    if swap:
        x, t = t, x
    # away from the kinks |x - t| = beta (and 0), where finite differences straddle two slopes
    d = np.abs(np.broadcast_arrays(x, t)[0] - np.broadcast_arrays(x, t)[1])
    if np.any(np.abs(d - beta) < 0.05) or np.any(d < 0.05):
        x = x + 0.11
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns about broadcasting
        check_vjp(
            "mse_loss",
            [x, t],
            {"reduction": reduction},
            lambda x, t: F.mse_loss(x, t, reduction=reduction),
            dtype=dtype,
            **tolerances(dtype),
        )
        d = np.abs(np.broadcast_arrays(x, t)[0] - np.broadcast_arrays(x, t)[1])
        kinks = np.any(np.abs(d - beta) < 1e-3) or np.any(d < 1e-3)
        check_vjp(
            "smooth_l1_loss",
            [x, t],
            {"reduction": reduction, "beta": beta},
            lambda x, t: F.smooth_l1_loss(x, t, reduction=reduction, beta=beta),
            dtype=dtype,
            fd=not kinks,
            **tolerances(dtype),
        )


def test_smooth_l1_kinks_as_torch():
    x = np.array([0.0, 1.0, -1.0, 0.5, 2.0])
    t = np.zeros(5)
    for beta in (0.0, 1.0):
        tx = torch.tensor(x, requires_grad=True)
        tt = torch.tensor(t, requires_grad=True)
        F.smooth_l1_loss(tx, tt, beta=beta, reduction="sum").backward()
        gx, gt = ctensor.autodiff.vjp(
            "smooth_l1_loss", [x, t], np.float64(1.0), reduction="sum", beta=beta
        )
        np.testing.assert_array_equal(gx, tx.grad.numpy())
        np.testing.assert_array_equal(gt, tt.grad.numpy())


def test_not_differentiable_inputs():
    entry = ctensor.autodiff.gradient_entry("cross_entropy")
    refs = entry["input_grads"]
    assert refs[0] is not None and refs[1] is not None and refs[2] is None  # weight: constant
    assert ctensor.autodiff.gradient_entry("nll_loss")["input_grads"][1:] == [None, None]
    bce = ctensor.autodiff.gradient_entry("binary_cross_entropy_with_logits")["input_grads"]
    assert bce[2] is None and bce[3] is None


def test_backward_ops_directly():
    """cross_entropy_backward at the mean with ignored samples and weights, against torch."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 4))
    y = np.array([0, 3, -100, 2, 1, -100])
    w = rng.random(4) + 0.5
    tx = torch.tensor(x, requires_grad=True)
    F.cross_entropy(tx, torch.tensor(y), torch.tensor(w), label_smoothing=0.2).backward()
    gx, gt = ops.cross_entropy_backward(
        np.float64(1.0), x, y, w, ignore_index=-100, label_smoothing=0.2
    )
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert gt.shape == (6,) and not np.any(gt)
    g = ops.nll_loss_backward(np.float64(2.0), x, y, w, ignore_index=-100)
    tx = torch.tensor(x, requires_grad=True)
    (2 * F.nll_loss(tx, torch.tensor(y), torch.tensor(w))).backward()
    np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-12, atol=1e-15)
