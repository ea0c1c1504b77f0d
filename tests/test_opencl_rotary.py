"""The OpenCL backend's rotary_embedding (kernels/opencl/cl_rotary.c) against the CPU kernel
(checked against NumPy and torch in test_rotary.py) and the float64 NumPy reference, over the
drawn cases of test_rotary (layouts at byte offsets into device buffers, partial rotary,
position_ids absent, int32 or int64, broadcast), in float16, float32 and float64; its
out-of-range error; the gradient row end to end on opencl:0."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import assert_close, kernel_signatures
from hypothesis import given, settings
from hypothesis import strategies as st
from opencl_arrays import device_like, require_opencl
from test_rotary import cases, reference, slack, tables

import ctensor

DTYPES = ["float16", "float32", "float64"]
SETTINGS = settings(max_examples=30, deadline=None)


def setup_module() -> None:
    require_opencl()


def test_declared_signatures():
    got = sorted(kernel_signatures("rotary_embedding", "opencl"))
    want = sorted((f, f, f, i, f) for f in DTYPES for i in ("int32", "int64"))
    assert got == want


def call(x, cos, sin, pos, interleaved, device: bool):
    wrap = device_like if device else (lambda a: a)
    args = [wrap(x), wrap(cos), wrap(sin)] + ([] if pos is None else [wrap(pos)])
    return ctensor.ops.rotary_embedding(*args, interleaved=interleaved)


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(data=st.data())
def test_against_cpu_and_numpy(dtype, data):
    x, cos, sin, pos, interleaved = data.draw(cases(dtype))
    got = call(x, cos, sin, pos, interleaved, True)
    assert isinstance(got, ctensor.DeviceArray) and got.dtype == dtype
    got = np.asarray(got)
    cpu = np.asarray(call(x, cos, sin, pos, interleaved, False))
    atol = slack(dtype, x)
    # the device may contract a * c - b * s into one fma: within the same bound as the CPU's
    assert_close(got, cpu, dtype=dtype, rtol_scale=2, atol=2 * atol)
    assert_close(got, reference(x, cos, sin, pos, interleaved), dtype=dtype, atol=atol)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_out_of_range_position(index_dtype):
    x = np.ones((2, 5, 4), dtype=np.float32)
    cos, sin = (t.astype(np.float32) for t in tables(8, 2))
    pos = np.array([0, 1, 8, 3, 4], dtype=index_dtype)
    out = device_like(np.full_like(x, 7.0))
    with pytest.raises(ctensor.InvalidArgumentError, match="position 8 is out of range"):
        ctensor.ops.rotary_embedding(
            device_like(x), device_like(cos), device_like(sin), device_like(pos), out=out
        )
    assert np.all(np.asarray(out) == 7.0)


def test_gradient_on_device():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 10))
    cos, sin = tables(9, 4)
    pos = rng.integers(0, 9, size=(2, 1, 5))
    g = rng.standard_normal(x.shape)
    for interleaved in (False, True):
        cpu = ctensor.autodiff.vjp(
            "rotary_embedding", [x, cos, sin, pos], g, interleaved=interleaved
        )
        dev = ctensor.autodiff.vjp(
            "rotary_embedding",
            [device_like(a) for a in (x, cos, sin, pos)],
            device_like(g),
            interleaved=interleaved,
        )
        assert dev[1] is None and dev[2] is None and dev[3] is None
        np.testing.assert_allclose(np.asarray(dev[0]), np.asarray(cpu[0]), rtol=1e-13, atol=1e-13)
