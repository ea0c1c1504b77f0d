"""The OpenCL backward ops of permute_dims and concat against the CPU ones (which
test_grad_shape.py checks against torch.autograd), over drawn shapes, axes, dtypes and layouts
(sliced, reversed, transposed, broadcast views at byte offsets into larger device buffers), and
their gradient rows end to end on the device."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import strided_arrays
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from opencl_arrays import DEVICE, device_like, require_opencl

import ctensor
from ctensor import ops

FLOATS = ["float16", "float32", "float64"]
SETTINGS = settings(max_examples=25, deadline=None)


def setup_module() -> None:
    require_opencl()


def test_registered_on_opencl():
    for name in ["permute_dims_backward", "concat_backward"]:
        assert set(FLOATS) <= set(ctensor.op_info(name)["dtypes"]["opencl"]), name


def draw_array(data, dtype, shape):
    return data.draw(strided_arrays(dtype, shape=shape, elements=st.floats(-2, 2, width=16)))


def same(got, expected, dtype):
    """A copy: bit for bit."""
    assert isinstance(got, ctensor.DeviceArray) and got.dtype == dtype
    np.testing.assert_array_equal(np.asarray(got), expected)


@SETTINGS
@given(data=st.data())
def test_permute_dims_backward_matches_cpu(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    axes = list(data.draw(st.permutations(range(len(shape)))))
    axes = [a - len(shape) if data.draw(st.booleans()) else a for a in axes]
    g = draw_array(data, dtype, tuple(shape[a] for a in axes))
    got = ops.permute_dims_backward(device_like(g), axes=axes)
    same(got, ops.permute_dims_backward(g, axes=axes), dtype)


@SETTINGS
@given(data=st.data())
def test_concat_backward_matches_cpu(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    flat = data.draw(st.booleans())
    base = list(data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)))
    axis = data.draw(st.integers(-len(base), len(base) - 1))
    shapes = []
    for _ in range(data.draw(st.integers(1, 4))):
        if flat:
            shapes.append(data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)))
        else:
            s = list(base)
            s[axis] = data.draw(st.integers(0, 3))
            shapes.append(tuple(s))
    like = [np.zeros(s, dtype) for s in shapes]
    total = (sum(x.size for x in like),) if flat else np.concatenate(like, axis=axis).shape
    g = draw_array(data, dtype, total)
    attrs = {"axis": None if flat else axis}
    got = ops.concat_backward(device_like(g), [device_like(x) for x in like], **attrs)
    want = ops.concat_backward(g, like, **attrs)
    assert len(got) == len(want) == len(like)
    for a, b in zip(got, want, strict=True):
        same(a, np.asarray(b), dtype)


def test_vjp_on_the_device():
    """The rows of permute_dims and concat run on opencl:0 with the device's own kernels."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    g = rng.standard_normal((4, 2, 3)).astype(np.float32)
    (got,) = ctensor.autodiff.vjp(
        "permute_dims",
        [ctensor.asarray(x, device=DEVICE)],
        ctensor.asarray(g, device=DEVICE),
        axes=[2, 0, 1],
    )
    assert isinstance(got, ctensor.DeviceArray)
    np.testing.assert_array_equal(np.asarray(got), np.transpose(g, (1, 2, 0)))
    a, b = x[:1], x
    gc = rng.standard_normal((3, 3, 4)).astype(np.float32)
    (grads,) = ctensor.autodiff.vjp(
        "concat",
        [[ctensor.asarray(a, device=DEVICE), ctensor.asarray(b, device=DEVICE)]],
        ctensor.asarray(gc, device=DEVICE),
        axis=0,
    )
    np.testing.assert_array_equal(np.asarray(grads[0]), gc[:1])
    np.testing.assert_array_equal(np.asarray(grads[1]), gc[1:])


@pytest.mark.parametrize("dtype", FLOATS)
def test_errors_on_the_device(dtype):
    g = device_like(np.ones(5, dtype))
    with pytest.raises(ValueError, match="grad_out has shape"):
        ops.concat_backward(g, [device_like(np.zeros(2, dtype))] * 2, axis=0)
