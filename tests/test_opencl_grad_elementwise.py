"""The OpenCL backend's element-wise backward ops (kernels/opencl/cl_elementwise_grad.c, built
from capi/ops/elementwise_grad_table.h) against torch.autograd in float64, as the CPU kernels
are checked in test_grad_elementwise.py: every op, float16, float32 and float64, hypothesis-drawn
shapes, sliced, reversed and transposed layouts at non-zero byte offsets, broadcasting and
attributes, and torch's values at the edge points. OpenCL's built-in math functions are allowed
a few ulps more than libm (up to 16 ulps in the OpenCL C specification), hence the wider
tolerance."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from opencl_arrays import DEVICE, device_like, require_opencl
from test_grad_elementwise import (
    ALL_BACKWARD,
    BINARY,
    FROM_OUT,
    FROM_X,
    assert_grad_close,
    autograd,
    operand,
    shapes,
)

import ctensor

DTYPES = ["float64", "float32", "float16"]
SCALE = 4.0  # OpenCL math functions: up to 16 ulps (float32 tolerance is already 8 x 2e-6)


def setup_module() -> None:
    require_opencl()


def on_device(t: torch.Tensor) -> ctensor.DeviceArray:
    """The tensor's values on opencl:0 with its strides (a view at a byte offset)."""
    return device_like(t.numpy())


def host(result) -> np.ndarray:
    assert isinstance(result, ctensor.DeviceArray) and result.device == (4, 0)
    return np.asarray(result).astype(np.float64)


def test_every_backward_op_has_opencl_kernels_for_the_float_dtypes() -> None:
    for name in ALL_BACKWARD:
        signatures = ctensor.op_info(name)["signatures"].get("opencl", [])
        for dtype in DTYPES:
            assert any(s[0] == dtype for s in signatures), f"{name}: no {dtype} kernel"


@pytest.mark.parametrize("name", sorted(FROM_X))
@settings(max_examples=6, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), shape=shapes)
def test_backward_from_x_on_opencl(name, data, dtype, shape) -> None:
    forward, domain, attrs_strategy = FROM_X[name]
    attrs = data.draw(attrs_strategy)
    x = data.draw(operand(shape, domain, dtype))
    g = data.draw(operand(shape, (-2, 2), dtype))
    (expected,) = autograd(lambda t: forward(t, **attrs), [x], g)
    actual = getattr(ctensor.ops, name)(on_device(g), on_device(x), **attrs)
    assert_grad_close(host(actual), expected, dtype, SCALE)


@pytest.mark.parametrize("name", sorted(FROM_OUT))
@settings(max_examples=6, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), shape=shapes)
def test_backward_from_result_on_opencl(name, data, dtype, shape) -> None:
    forward, domain, inverse = FROM_OUT[name]
    x = data.draw(operand(shape, domain, dtype))
    out = forward(x.double()).to(x.dtype)
    g = data.draw(operand(shape, (-2, 2), dtype))
    (expected,) = autograd(forward, [inverse(out.double())], g)
    actual = getattr(ctensor.ops, name)(on_device(g), on_device(out))
    assert_grad_close(host(actual), expected, dtype, SCALE)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=6, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=5),
)
def test_binary_backward_on_opencl(name, data, dtype, shapes) -> None:
    forward, domain1, domain2, outputs = BINARY[name]
    (shape1, shape2), result_shape = shapes
    x1 = data.draw(operand(shape1, domain1, dtype))
    x2 = data.draw(operand(shape2, domain2, dtype))
    if name in ("maximum_backward", "minimum_backward"):
        x1 = torch.where(torch.rand(shape1) < 0.3, torch.zeros((), dtype=x1.dtype), x1)
        x2 = torch.where(torch.rand(shape2) < 0.3, torch.zeros((), dtype=x2.dtype), x2)
    g = data.draw(operand(result_shape, (-2, 2), dtype))
    expected = autograd(
        forward, [torch.broadcast_to(x1, result_shape), torch.broadcast_to(x2, result_shape)], g
    )
    actual = getattr(ctensor.ops, name)(on_device(g), on_device(x1), on_device(x2))
    actual = actual if isinstance(actual, tuple) else (actual,)
    assert len(actual) == outputs
    for k in range(outputs):
        assert_grad_close(host(actual[k]), expected[k], dtype, SCALE)


@settings(max_examples=10, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=5),
)
def test_where_backward_on_opencl(data, dtype, shapes) -> None:
    (shape_c, shape_g), result_shape = shapes
    seed = data.draw(st.integers(0, 2**32 - 1))
    condition = np.asarray(np.random.default_rng(seed).random(shape_c) < 0.5)
    g = data.draw(operand(result_shape, (-2, 2), dtype))
    grad_x1, grad_x2 = ctensor.ops.where_backward(
        on_device(torch.broadcast_to(g, result_shape)), device_like(condition)
    )
    gb = np.broadcast_to(g.double().numpy(), result_shape)
    np.testing.assert_array_equal(host(grad_x1), np.where(condition, gb, 0.0))
    np.testing.assert_array_equal(host(grad_x2), np.where(condition, 0.0, gb))


def test_edge_points_on_opencl() -> None:
    nan = float("nan")
    x = np.array([-3.5, -3.0, -1.0, 0.0, 1.0, 3.0, nan])
    g = np.ones_like(x)
    cases = {
        "hardswish_backward": (torch.nn.functional.hardswish, {}),
        # hardsigmoid with an exact derivative (torch's backward multiplies by float32 1/6)
        "hardsigmoid_backward": (
            lambda t: torch.where(torch.isnan(t), t * 0, torch.nn.functional.relu6(t + 3) / 6),
            {},
        ),
        "leaky_relu_backward": (torch.nn.functional.leaky_relu, {"negative_slope": 0.2}),
        "elu_backward": (torch.nn.functional.elu, {"alpha": 0.5}),
        "abs_backward": (torch.abs, {}),
    }
    for name, (forward, attrs) in cases.items():
        (expected,) = autograd(
            lambda t, f=forward, a=attrs: f(t, **a), [torch.tensor(x)], torch.tensor(g)
        )
        actual = getattr(ctensor.ops, name)(device_like(g), device_like(x), **attrs)
        np.testing.assert_array_equal(host(actual), expected, err_msg=name)
    relu = ctensor.ops.relu_backward(device_like(g), device_like(np.maximum(x, 0.0)))
    np.testing.assert_array_equal(host(relu), [0, 0, 0, 0, 1, 1, 1])
    a = np.array([1.0, 2.0, 3.0, nan])
    b = np.array([1.0, 1.0, 4.0, 1.0])
    for name, forward in (("maximum_backward", torch.maximum), ("minimum_backward", torch.minimum)):
        expected = autograd(forward, [torch.tensor(a), torch.tensor(b)], torch.ones(4))
        actual = getattr(ctensor.ops, name)(device_like(np.ones(4)), device_like(a), device_like(b))
        for got, want in zip(actual, expected, strict=True):
            np.testing.assert_array_equal(host(got), want, err_msg=name)


def test_zero_size_outputs_launch_nothing() -> None:
    empty = ctensor.asarray(np.zeros((0, 3), np.float32), device=DEVICE)
    grad_x1, grad_x2 = ctensor.ops.maximum_backward(empty, empty, empty)
    assert grad_x1.shape == (0, 3) and grad_x2.shape == (0, 3)
