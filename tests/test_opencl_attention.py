"""The OpenCL backend's scaled_dot_product_attention and its backward (kernels/opencl/
cl_attention.c) against the float64 NumPy reference of test_attention.py and the CPU kernel,
over its drawn cases (batch dims, grouped-query heads, causal with L_q != L_k, boolean and
additive masks broadcast, any layout at byte offsets into device buffers, empty sequences) in
float16, float32 and float64, sequences spanning several tiles, dropout (the same Philox mask as
the CPU), fully masked rows, and the gradient row end to end on opencl:0."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import any_layout, kernel_signatures, to_float64
from hypothesis import given, settings
from hypothesis import strategies as st
from opencl_arrays import device_like, require_opencl
from test_attention import (
    EPS,
    attention_case,
    check,
    eps_compute,
    finite,
    keep_mask,
    mask64,
    reference,
    reference_weights,
    repeat_heads,
)

import ctensor

SDPA = "scaled_dot_product_attention"
DTYPES = ["float16", "float32", "float64"]
SETTINGS = settings(max_examples=15, deadline=None)


def setup_module() -> None:
    require_opencl()


def test_declared_signatures():
    forward = sorted(kernel_signatures(SDPA, "opencl"))
    want = []
    for f in DTYPES:
        lse = "float64" if f == "float64" else "float32"
        for m in ("bool", f):
            want.append((f, f, f, m, f, lse))
    assert forward == sorted(want)
    backward = sorted(kernel_signatures(SDPA + "_backward", "opencl"))
    assert backward == sorted((f, f, f, f, m, f, lse, f, f, f) for f, _, _, m, _, lse in want)


def on_device(a):
    return None if a is None else device_like(np.asarray(a))


def forward(case, device: bool):
    q, k, v, mask, attrs = case
    args = [q, k, v, mask]
    if device:
        args = [on_device(a) for a in args]
    return ctensor.ops.scaled_dot_product_attention(*args, **attrs)


def check_forward(dtype, case):
    q, k, v, mask, attrs = case
    out, lse = forward(case, True)
    assert isinstance(out, ctensor.DeviceArray) and out.dtype == dtype
    lse_dtype = "float64" if dtype == "float64" else "float32"
    assert lse.dtype == lse_dtype
    want = reference(
        to_float64(q),
        to_float64(k),
        to_float64(v),
        mask64(mask),
        attrs["is_causal"],
        attrs["scale"],
    )
    check(np.asarray(out), want["out"], want["out_mag"], dtype, eps_compute(dtype))
    # rows with no key: -inf exactly there; elsewhere within the bound of the finite rows
    lse_h, empty = np.asarray(lse), np.isneginf(want["lse"])
    np.testing.assert_array_equal(np.isneginf(lse_h), empty)
    check(
        lse_h[~empty], want["lse"][~empty], want["lse_mag"][~empty], lse_dtype, eps_compute(dtype)
    )
    cpu_out, cpu_lse = forward(case, False)
    check(np.asarray(out), to_float64(cpu_out), 2 * want["out_mag"], dtype, eps_compute(dtype))
    return out, lse


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(data=st.data())
def test_forward(dtype, data):
    check_forward(dtype, data.draw(attention_case(dtype)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_forward_across_tiles(dtype, data):
    """Sequences of 97 to 270: several query tiles and key tiles of the kernels."""
    check_forward(dtype, data.draw(attention_case(dtype, big=True)))


def check_backward(dtype, case, data):
    q, k, v, mask, attrs = case
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, mask, **attrs)
    out, lse = np.asarray(out), np.asarray(lse)
    g = data.draw(any_layout(dtype, shape=tuple(out.shape), elements=finite(dtype)))
    grads = ctensor.ops.scaled_dot_product_attention_backward(
        *[on_device(a) for a in (g, q, k, v, mask, out, lse)], **attrs
    )
    cpu = ctensor.ops.scaled_dot_product_attention_backward(g, q, k, v, mask, out, lse, **attrs)
    want = reference(
        to_float64(q),
        to_float64(k),
        to_float64(v),
        mask64(mask),
        attrs["is_causal"],
        attrs["scale"],
        to_float64(g),
    )
    eps = eps_compute(dtype) if dtype in ("float32", "float64") else EPS[dtype]
    for got, c, name, x in zip(grads, cpu, ("gq", "gk", "gv"), (q, k, v), strict=True):
        assert isinstance(got, ctensor.DeviceArray) and tuple(got.shape) == tuple(x.shape)
        check(np.asarray(got), want[name], want[name + "_mag"], dtype, eps)
        check(np.asarray(got), to_float64(c), 2 * want[name + "_mag"], dtype, eps)


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(data=st.data())
def test_backward(dtype, data):
    check_backward(dtype, data.draw(attention_case(dtype)), data)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_backward_across_tiles(dtype, data):
    check_backward(dtype, data.draw(attention_case(dtype, big=True)), data)


def test_causal_with_more_queries_than_keys_and_fully_masked_rows():
    """Top-left causal alignment with L_q > L_k, and a boolean mask that leaves some rows no key:
    those rows give zeros and logsumexp -inf, as on the CPU."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 40, 8)).astype(np.float32)
    k = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    v = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    out, lse = forward((q, k, v, None, {"is_causal": True}), True)
    cpu_out, cpu_lse = forward((q, k, v, None, {"is_causal": True}), False)
    np.testing.assert_allclose(np.asarray(out), np.asarray(cpu_out), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(lse), np.asarray(cpu_lse), rtol=1e-5, atol=1e-6)
    mask = rng.random((40, 6)) > 0.5
    mask[[3, 17, 39]] = False
    out, lse = forward((q, k, v, mask, {}), True)
    out, lse = np.asarray(out), np.asarray(lse)
    assert np.all(out[:, :, [3, 17, 39]] == 0)
    assert np.all(lse[:, :, [3, 17, 39]] == -np.inf)
    cpu_out, _ = forward((q, k, v, mask, {}), False)
    np.testing.assert_allclose(out, np.asarray(cpu_out), rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(out.shape).astype(np.float32)
    grads = ctensor.ops.scaled_dot_product_attention_backward(
        *[on_device(a) for a in (g, q, k, v, mask, out, lse)]
    )
    cpu = ctensor.ops.scaled_dot_product_attention_backward(g, q, k, v, mask, out, lse)
    for got, want in zip(grads, cpu, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=10, deadline=None)
@given(data=st.data(), p=st.sampled_from([0.1, 0.5, 0.9]), seed=st.integers(-(2**63), 2**63 - 1))
def test_dropout_matches_the_cpu_and_the_philox_mask(dtype, data, p, seed):
    q, k, v, mask, attrs = data.draw(attention_case(dtype))
    offset = data.draw(st.integers(-(2**63), 2**63 - 1))  # uint64 values as their int64 bits
    attrs = {**attrs, "dropout_p": p, "seed": seed, "offset": offset}
    out, lse = forward((q, k, v, mask, attrs), True)
    q64, k64, v64, m64 = to_float64(q), to_float64(k), to_float64(v), mask64(mask)
    base = reference(q64, k64, v64, m64, attrs["is_causal"], attrs["scale"])
    keep = keep_mask(q64.shape[:-1] + (k64.shape[-2],), p, seed % 2**64, offset % 2**64)
    expected = (reference_weights(q64, k64, m64, attrs) * keep / (1 - p)) @ repeat_heads(
        v64, q64.shape[-3]
    )
    check(np.asarray(out), expected, base["out_mag"] / (1 - p), dtype, eps_compute(dtype))
    check(np.asarray(lse), base["lse"], base["lse_mag"], dtype, eps_compute(dtype))
    cpu_out, cpu_lse = forward((q, k, v, mask, attrs), False)
    check(
        np.asarray(out), to_float64(cpu_out), base["out_mag"] / (1 - p), dtype, eps_compute(dtype)
    )
    g = np.random.default_rng(seed % 2**32).standard_normal(np.shape(out)).astype(dtype)
    o, lse_h = np.asarray(cpu_out), np.asarray(cpu_lse)
    grads = ctensor.ops.scaled_dot_product_attention_backward(
        *[on_device(a) for a in (g, q, k, v, mask, o, lse_h)], **attrs
    )
    cpu = ctensor.ops.scaled_dot_product_attention_backward(g, q, k, v, mask, o, lse_h, **attrs)
    tol = 1e-9 if dtype == "float64" else 2e-4
    for got, want in zip(grads, cpu, strict=True):
        want = np.asarray(want)
        scale = max(1.0, float(np.max(np.abs(want), initial=0)))
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol * scale)


def test_gradient_row_on_device():
    """ctensor.autodiff.vjp runs the forward's gradient entry on opencl:0 (GQA, additive mask)."""
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 4, 9, 6))
    k = rng.standard_normal((2, 2, 11, 6))
    v = rng.standard_normal((2, 2, 11, 5))
    mask = rng.standard_normal((4, 1, 11))
    attrs = {"enable_gqa": True, "scale": 0.3}
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, mask, **attrs)
    g = rng.standard_normal(np.shape(out))
    cpu = ctensor.autodiff.vjp(SDPA, [q, k, v, mask], [g, None], **attrs)
    dev = ctensor.autodiff.vjp(
        SDPA, [on_device(a) for a in (q, k, v, mask)], [on_device(g), None], **attrs
    )
    assert dev[3] is None
    for got, want in zip(dev[:3], cpu[:3], strict=True):
        assert isinstance(got, ctensor.DeviceArray)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)
