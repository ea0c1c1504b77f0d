"""The OpenCL backend's element-wise ops (generated strided and contiguous kernels) against the
CPU backend, the reference: every op and dtype signature it registers, broadcasting, 0-d and
zero-size arrays, and layouts with sliced, reversed, transposed and broadcast (zero) strides at
non-zero byte offsets. OpenCL's built-in math functions are allowed a few ulps more than libm
(the OpenCL C specification bounds them at up to 16 ulps), hence `rtol_scale`."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import assert_close, broadcastable_shapes, kernel_signatures, strided_arrays
from hypothesis import given, settings
from hypothesis import strategies as st
from opencl_arrays import DEVICE, device_like, require_opencl

import ctensor

ELEMENTWISE = sorted(
    name
    for name in ctensor.list_ops()
    if "elementwise" in ctensor.op_info(name)["flags"] and kernel_signatures(name, "opencl")
)
FOUNDATION = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "pow",
    "negative",
    "abs",
    "exp",
    "log",
    "sqrt",
    "tanh",
    "sigmoid",
    "relu",
    "equal",
    "less",
    "greater",
    "where",
    "astype",
]


def setup_module() -> None:
    require_opencl()


def test_foundation_elementwise_ops_are_registered_for_every_dtype_they_declare() -> None:
    for name in FOUNDATION:
        cpu = {tuple(s) for s in kernel_signatures(name, "cpu")}
        opencl = set(kernel_signatures(name, "opencl"))
        wanted = {
            s for s in cpu if set(s) <= {"bool", "int32", "int64", "float16", "float32", "float64"}
        }
        assert wanted <= opencl, f"{name}: missing {sorted(wanted - opencl)}"


def _compare(name: str, inputs: list[np.ndarray], attrs: dict) -> None:
    op = getattr(ctensor.ops, name)
    with np.errstate(all="ignore"):
        expected = op(*inputs, **attrs)
    got = op(*[device_like(x) for x in inputs], **attrs)
    # backward ops with two cotangents (maximum_backward, ...) return a tuple
    expected, got = (r if isinstance(r, tuple) else (r,) for r in (expected, got))
    assert len(got) == len(expected)
    for got_k, expected_k in zip(got, expected, strict=True):
        assert isinstance(got_k, ctensor.DeviceArray) and got_k.device == (4, 0)
        assert got_k.dtype == str(expected_k.dtype)
        assert_close(np.asarray(got_k), expected_k, rtol_scale=16)


@pytest.mark.parametrize("name", ELEMENTWISE)
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_matches_cpu_backend(name: str, data) -> None:
    signature = data.draw(st.sampled_from(kernel_signatures(name, "opencl")), label="signature")
    info = ctensor.op_info(name)
    arity = len(info["inputs"])
    attrs = {}
    if name == "astype":
        attrs["dtype"] = signature[1]
    shapes = data.draw(broadcastable_shapes(arity, max_dims=3, max_side=4), label="shapes")
    inputs = []
    for k in range(arity):
        elements = None
        if name in ("bitwise_left_shift", "bitwise_right_shift") and k == 1:
            elements = st.integers(-2, 70)
        if name == "pow" and k == 1 and not signature[1].startswith("float"):
            elements = st.integers(0, 70)  # negative integer exponents are refused
        inputs.append(
            data.draw(
                strided_arrays(signature[k], shape=shapes.input_shapes[k], elements=elements),
                label=f"x{k}",
            )
        )
    _compare(name, inputs, attrs)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "bool"])
def test_zero_dim_and_zero_size(dtype: str) -> None:
    for shape in [(), (0,), (3, 0, 2)]:
        x = np.ones(shape, dtype)
        _compare("add", [x, x], {})
        _compare("astype", [x], {"dtype": "float32"})


def test_byte_offset_view_into_a_larger_buffer() -> None:
    host = np.arange(40, dtype=np.float32)
    base = ctensor.asarray(host, device=DEVICE)
    view = base.as_strided((3, 4), (8, 1), byte_offset=5 * 4)
    got = ctensor.ops.multiply(view, 2.0)
    np.testing.assert_array_equal(np.asarray(got), host[5:29].reshape(3, 8)[:, :4] * 2)
    # in place into a view of the same buffer, leaving the rest untouched
    ctensor.ops.add(view, view, out=view)
    expected = host.copy()
    expected[5:29].reshape(3, 8)[:, :4] *= 2
    np.testing.assert_array_equal(base.to_numpy(), expected)


def test_python_scalars_become_device_scalars() -> None:
    x = ctensor.asarray(np.array([1.0, 2.0], np.float32), device=DEVICE)
    np.testing.assert_array_equal(np.asarray(ctensor.ops.add(x, 1)), [2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(ctensor.ops.less(x, 1.5)), [True, False])


def test_integer_pow_refuses_negative_exponents_before_writing() -> None:
    x = ctensor.asarray(np.array([2, 3], np.int32), device=DEVICE)
    out = ctensor.asarray(np.array([7, 7], np.int32), device=DEVICE)
    np.testing.assert_array_equal(np.asarray(ctensor.ops.pow(x, x)), [4, 27])
    negative = ctensor.asarray(np.array([1, -1], np.int32), device=DEVICE)
    with pytest.raises(ctensor.InvalidArgumentError, match="negative integer powers"):
        ctensor.ops.pow(x, negative, out=out)
    np.testing.assert_array_equal(out.to_numpy(), [7, 7])


def test_op_without_opencl_kernel_is_unsupported() -> None:
    x = ctensor.asarray(np.array([1.0, 2.0], np.float32), device=DEVICE)
    with pytest.raises((ctensor.UnsupportedDeviceError, ctensor.UnsupportedDTypeError)):
        ctensor.ops.cumulative_sum(x)
