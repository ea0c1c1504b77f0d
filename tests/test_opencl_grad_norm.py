"""The OpenCL backend's softmax_backward, log_softmax_backward and layer_norm_backward
(kernels/opencl/cl_norm_backward.c) against the CPU backend's kernels (checked against
torch.autograd in test_grad_norm.py), over drawn shapes, axes, layouts (sliced, reversed,
transposed, broadcast strides at byte offsets into device buffers), optional weight and eps, in
float16, float32 and float64; and the gradient rows end to end on opencl:0 against
torch.autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import assert_close, kernel_dtypes, strided_arrays
from hypothesis import given, settings
from hypothesis import strategies as st
from opencl_arrays import device_like, require_opencl

import ctensor

DTYPES = ["float16", "float32", "float64"]
SETTINGS = settings(max_examples=20, deadline=None)


def setup_module() -> None:
    require_opencl()


def test_declared_dtypes():
    for op in ["softmax_backward", "log_softmax_backward", "layer_norm_backward"]:
        assert kernel_dtypes(op, "opencl") == DTYPES, op


def draw(data, dtype: str, shape) -> np.ndarray:
    width = int(dtype[5:])
    elements = st.floats(-3, 3, width=width, allow_subnormal=False)
    return data.draw(strided_arrays(dtype, shape=tuple(shape), elements=elements))


def compare(cpu, device, scale: float = 16, magnitudes=None) -> None:
    """Device results against the CPU's: the dtype's rtol, and an absolute slack of
    scale * eps_c * the magnitude of the terms (per output; default the result's largest)."""
    cpu = cpu if isinstance(cpu, tuple) else (cpu,)
    device = device if isinstance(device, tuple) else (device,)
    assert len(cpu) == len(device)
    for k, (c, d) in enumerate(zip(cpu, device, strict=True)):
        assert isinstance(d, ctensor.DeviceArray) and d.dtype == str(c.dtype)
        got, want = np.asarray(d), np.asarray(c)
        magnitude = max(1.0, float(np.max(np.abs(want.astype(np.float64)), initial=0)))
        if magnitudes is not None:
            magnitude = max(magnitude, magnitudes[k])
        eps_c = float(np.finfo(np.float32 if c.dtype != np.float64 else np.float64).eps)
        assert_close(got, want, rtol_scale=scale, atol=scale * eps_c * magnitude)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True])
@SETTINGS
@given(data=st.data())
def test_softmax_backward(dtype, log, data):
    shape = data.draw(st.lists(st.integers(0, 5), max_size=4))
    axis = data.draw(st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))
    g = draw(data, dtype, shape)
    y = draw(data, dtype, shape)
    if not log:
        y = np.abs(y) / 3
    op = ctensor.ops.log_softmax_backward if log else ctensor.ops.softmax_backward
    compare(op(g, y, axis=axis), op(device_like(g), device_like(y), axis=axis))


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(data=st.data())
def test_layer_norm_backward(dtype, data):
    shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    count = data.draw(st.integers(1, len(shape)))
    normalized = shape[len(shape) - count :]
    g = draw(data, dtype, shape)
    x = draw(data, dtype, shape)
    x = (x + np.arange(x.size, dtype=np.float64).reshape(x.shape) % 7).astype(dtype)
    w = data.draw(st.none() | st.just(draw(data, dtype, normalized)))
    eps = data.draw(st.sampled_from([1e-5, 0.1]))
    attrs = {"normalized_shape": normalized, "eps": eps}
    cpu = ctensor.ops.layer_norm_backward(g, x, w, **attrs)
    dw = None if w is None else device_like(w)
    device = ctensor.ops.layer_norm_backward(device_like(g), device_like(x), dw, **attrs)
    # the terms of grad_input: rstd * |g w| * (1 + |xhat|) per row; grad_weight and grad_bias
    # sum |g xhat| and |g| over the rows
    n = int(np.prod(normalized))
    rows = int(np.prod(shape)) // n if n else 0
    x64 = x.astype(np.float64).reshape(rows, n)
    g64 = np.abs(g.astype(np.float64)).reshape(rows, n)
    w64 = 1.0 if w is None else np.maximum(np.abs(w.astype(np.float64)).reshape(1, n), 1.0)
    magnitudes = [0.0, 0.0, 0.0]
    if x64.size:
        rstd = 1.0 / np.sqrt(x64.var(1, keepdims=True) + eps)
        xhat = np.abs(x64 - x64.mean(1, keepdims=True)) * rstd + 1.0
        magnitudes = [
            float(np.max(rstd * g64 * w64 * xhat.max(1, keepdims=True))),
            float(np.max((g64 * xhat).sum(0))),
            float(np.max(g64.sum(0))),
        ]
    compare(cpu, device, magnitudes=magnitudes)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm"])
def test_vjp_on_device(op):
    """The gradient rows run on opencl:0 and match torch.autograd (float64)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5))
    g = rng.standard_normal((3, 5))
    w, b = rng.standard_normal(5), rng.standard_normal(5)
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)
    if op == "layer_norm":
        inputs = [device_like(x), device_like(w), device_like(b)]
        attrs = {"normalized_shape": [5], "eps": 1e-5}
        expected = torch.autograd.grad(F.layer_norm(xt, [5], wt, bt), (xt, wt, bt), torch.tensor(g))
    else:
        inputs = [device_like(x)]
        attrs = {"axis": 1}
        expected = torch.autograd.grad(getattr(torch, op)(xt, 1), (xt,), torch.tensor(g))
    grads = ctensor.autodiff.vjp(op, inputs, [device_like(g)], **attrs)
    assert len(grads) == len(inputs)
    for got, want in zip(grads, expected, strict=True):
        assert isinstance(got, ctensor.DeviceArray)
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-10, atol=1e-12)
