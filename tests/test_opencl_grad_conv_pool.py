"""The OpenCL backend's conv2d and pooling backward operators against the CPU backend's (the
reference), over drawn shapes, attributes, dtypes and layouts (device copies keep the host
view's strides and byte offset)."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import assert_close, kernel_signatures, strided_arrays
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from opencl_arrays import device_like, require_opencl

import ctensor


def setup_module() -> None:
    require_opencl()


def opencl_dtypes(name: str) -> list[str]:
    return sorted({s[0] for s in kernel_signatures(name, "opencl")})


def arrays(data, dtype: str, shape) -> np.ndarray:
    elements = st.floats(-8, 8, width=int(dtype[5:]), allow_subnormal=False)
    return data.draw(strided_arrays(dtype, shape=shape, elements=elements))


def same(name: str, inputs: list, rtol_scale: float, **attrs) -> None:
    op = getattr(ctensor.ops, name)
    expected = op(*inputs, **attrs)
    got = op(*[device_like(x) for x in inputs], **attrs)
    assert isinstance(got, ctensor.DeviceArray) and got.dtype == str(expected.dtype)
    magnitude = float(np.max(np.abs(expected.astype(np.float64)), initial=1.0))
    eps = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-14}[str(expected.dtype)]
    assert_close(np.asarray(got), expected, rtol_scale=rtol_scale, atol=64 * eps * magnitude)


def test_backward_ops_are_registered() -> None:
    for name in [
        "conv2d_backward_input",
        "conv2d_backward_weight",
        "max_pool2d_backward",
        "avg_pool2d_backward",
        "adaptive_avg_pool2d_backward",
    ]:
        assert set(opencl_dtypes(name)) == {"float16", "float32", "float64"}, name


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_conv2d_backward(data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes("conv2d_backward_input")))
    groups = data.draw(st.integers(1, 2))
    cin, cout = groups * data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    stride = [data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))]
    padding = [data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))]
    dilation = [data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))]
    h, w = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7))
    assume(h + 2 * padding[0] >= dilation[0] * (kh - 1) + 1)
    assume(w + 2 * padding[1] >= dilation[1] * (kw - 1) + 1)
    n = data.draw(st.integers(1, 2))
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    x = arrays(data, dtype, (n, cin, h, w))
    weight = arrays(data, dtype, (cout, cin // groups, kh, kw))
    grad = arrays(data, dtype, (n, cout, oh, ow))
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    same("conv2d_backward_input", [grad, x, weight], 512, **attrs)
    same("conv2d_backward_weight", [grad, x, weight], 512, **attrs)


@pytest.mark.parametrize(
    "name", ["max_pool2d_backward", "avg_pool2d_backward", "adaptive_avg_pool2d_backward"]
)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_pool_backward(name: str, data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes(name)))
    rank = data.draw(st.sampled_from([3, 4]))
    shape = (2,) * (rank - 3) + (
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 8)),
        data.draw(st.integers(1, 8)),
    )
    x = arrays(data, dtype, shape)
    if data.draw(st.booleans()):  # ties: the first maximum of a window wins on both devices
        x = np.round(x)
    forward = name.removesuffix("_backward")
    if forward == "adaptive_avg_pool2d":
        attrs = {"output_size": [data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))]}
    else:
        kernel = [data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))]
        attrs = {
            "kernel_size": kernel,
            "stride": [data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))],
            "padding": [data.draw(st.integers(0, k + 2)) for k in kernel],  # beyond torch's k / 2
            "ceil_mode": data.draw(st.booleans()),
        }
        if forward == "max_pool2d":
            attrs["dilation"] = [data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))]
        else:
            attrs["count_include_pad"] = data.draw(st.booleans())
            attrs["divisor_override"] = data.draw(st.one_of(st.none(), st.integers(1, 5)))
    try:
        out_shape = getattr(ctensor.ops, forward)(x, **attrs).shape
    except (ctensor.InvalidArgumentError, ctensor.ShapeMismatchError):
        assume(False)  # a window larger than the padded input: refused on both devices
    grad = arrays(data, dtype, out_shape)
    backward_attrs = {} if forward == "adaptive_avg_pool2d" else attrs
    same(name, [grad, x], 64, **backward_attrs)
