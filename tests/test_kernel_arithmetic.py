"""Regression tests for index, size and window arithmetic inside the CPU kernels that overflowed
int64 or read out of range for extreme (but valid) shapes, attributes and index values: each
case compares with NumPy or expects a clean ctensor error, never a wrong value or a wild access.

Huge extents come from stride-0 broadcast views (``np.broadcast_to``), which cost no memory.
"""

from __future__ import annotations

import numpy as np
import pytest

import ctensor
from ctensor import ffi, lib, ops
from ctensor._attrs import make_attrs
from ctensor._registry import get_spec

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

_DTYPES = {
    "float16": (lib.CT_DTYPE_FLOAT, 16),
    "float32": (lib.CT_DTYPE_FLOAT, 32),
    "int32": (lib.CT_DTYPE_INT, 32),
    "int64": (lib.CT_DTYPE_INT, 64),
}


def _broadcast_view(shape, dtype, keep):
    """A C view of `shape` whose strides are all 0 (one element's storage). The arrays it points
    at go into `keep`: the owning cdata objects ffi.new returns, since a struct field read back
    (view.shape) is a plain pointer that keeps nothing alive."""
    data = ffi.new("int64_t[]", 1)
    extents = ffi.new("int64_t[]", list(shape))
    strides = ffi.new("int64_t[]", [0] * len(shape))
    keep += [data, extents, strides]
    view = ffi.new("ct_tensor*")
    view.data = data
    view.device.device_type = lib.CT_DEVICE_CPU
    view.ndim = len(shape)
    view.dtype.code, view.dtype.bits = _DTYPES[dtype]
    view.dtype.lanes = 1
    view.shape = extents
    view.strides = strides
    return view


def _workspace_query(name, inputs, **attrs):
    """ct_op_workspace for broadcast views of (shape, dtype) (outputs described by infer): the
    status, the bytes asked for and the message."""
    keep: list = []
    op = ffi.new("const ct_op**")
    assert lib.ct_op_find(name.encode(), op) == lib.CT_OK
    views = [_broadcast_view(shape, dtype, keep) for shape, dtype in inputs]
    array, count = make_attrs(get_spec(name), attrs, keep)
    size, alignment = ffi.new("uint64_t*"), ffi.new("uint64_t*")
    status = lib.ct_op_workspace(
        op[0],
        ffi.new("const ct_tensor*[]", views),
        len(views),
        ffi.NULL,
        0,
        array,
        count,
        size,
        alignment,
    )
    return status, size[0], ctensor._lib.last_error() if status != lib.CT_OK else ""


# ----------------------------------------------------------------------------------------------
# Pooling windows
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool2d_divisor_of_a_window_of_more_than_2_63_taps(dtype):
    # A 2**32 x 2**32 window around a 1 x 1 input: the window size (count_include_pad) 2**64
    # overflowed int64 to 0 and the mean was inf.
    x = np.full((1, 1, 1, 1), 3.0, dtype)
    attrs = dict(kernel_size=[2**32, 2**32], padding=[2**31, 2**31])
    out = ops.avg_pool2d(x, **attrs)
    np.testing.assert_allclose(out, np.full((1, 1, 1, 1), 3.0 * 2.0**-64), rtol=1e-6)
    grad = ops.avg_pool2d_backward(np.ones((1, 1, 1, 1), dtype), x, **attrs)
    np.testing.assert_allclose(grad, np.full((1, 1, 1, 1), 2.0**-64), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32])
def test_max_pool2d_with_a_window_of_more_than_2_63_taps(dtype):
    # The threading cost (outputs x kernel taps) was an int64 product that overflowed.
    x = np.full((1, 1, 1, 1), 5, dtype)
    out = ops.max_pool2d(x, kernel_size=[2**32, 2**32], padding=[2**31, 2**31])
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize(
    "name, shapes, dtype, attrs",
    [
        # H · H_out = 3 · 2**61: the last window's end (i + 1) · H passes INT64_MAX
        ("adaptive_avg_pool2d", [(1, 1, 3, 1)], np.float16, {"output_size": [2**61, 1]}),
        ("adaptive_avg_pool2d", [(1, 1, 2**60, 1)], np.float32, {"output_size": [2**60, 1]}),
        ("adaptive_avg_pool2d", [(2, 3, 5, 7)], np.float64, {"output_size": [2**62, 2**62]}),
        # grad_out of H_out = 4 over an input of H = 2**61: 4 · 2**61 = 2**63
        ("adaptive_avg_pool2d_backward", [(1, 1, 4, 1), (1, 1, 2**61, 1)], np.float16, {}),
        ("adaptive_avg_pool2d_backward", [(1, 1, 2**61, 1), (1, 1, 2**61, 1)], np.float16, {}),
    ],
    ids=["forward_small_input", "forward_huge_input", "forward_huge_planes", "backward", "both"],
)
def test_adaptive_avg_pool2d_whose_window_bounds_pass_int64_fails_cleanly(
    name, shapes, dtype, attrs
):
    # The window bounds floor(i · H / H_out) and ceil((i + 1) · H / H_out) formed i · H in
    # int64, which wraps once H · H_out passes INT64_MAX; they are now computed without it
    # (ct_mul_div). Such a call has an output (grad_input) of 2**31 elements or more, or more
    # than 2**32 window elements to add (H + H_out > 2**32 when H · H_out > 2**63), so none can
    # run to a result in a test: those of the first kind, these, must be refused with a size
    # error naming the op before anything is allocated or run (the inputs are stride-0 views).
    arrays = [np.broadcast_to(np.ones((), dtype), shape) for shape in shapes]
    with pytest.raises((ctensor.SizeOverflowError, ctensor.OutOfMemoryError), match=name):
        getattr(ops, name)(*arrays, **attrs)


# ----------------------------------------------------------------------------------------------
# Convolution column ranges
# ----------------------------------------------------------------------------------------------


def _conv2d_reference(x, w, stride, padding):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h + 2 * padding[0] - kh) // stride[0] + 1
    ow = (wd + 2 * padding[1] - kw) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    for i, j in np.ndindex(oh, ow):
        for a, b in np.ndindex(kh, kw):
            ih, iw = i * stride[0] - padding[0] + a, j * stride[1] - padding[1] + b
            if 0 <= ih < h and 0 <= iw < wd:
                out[:, :, i, j] += x[:, :, ih, iw] @ w[:, :, a, b].T
    return out


@pytest.mark.parametrize("op", ["conv2d", "conv2d_backward_input", "conv2d_backward_weight"])
@pytest.mark.parametrize("stride", [[1, INT64_MAX], [2, 2**62 + 1]])
def test_conv2d_with_a_stride_near_int64_max(op, stride):
    # Each kernel column's range of valid output columns was (W - shift + stride - 1) / stride,
    # which overflowed: conv2d read the input where it should have read zeros and the backward
    # ops lost their taps.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 2, 3, 4))
    w = rng.standard_normal((3, 2, 2, 3))
    ref = _conv2d_reference(x, w, stride, [0, 0])
    if op == "conv2d":
        np.testing.assert_allclose(ops.conv2d(x, w, stride=stride), ref, atol=1e-12)
        return
    g = rng.standard_normal(ref.shape)
    # The reference gradient from the forward, which is linear in x and in w.
    if op == "conv2d_backward_input":
        basis = np.eye(x.size).reshape(x.size, *x.shape)
        want = np.array([(_conv2d_reference(e, w, stride, [0, 0]) * g).sum() for e in basis])
        got = ops.conv2d_backward_input(g, x, w, stride=stride)
        np.testing.assert_allclose(got, want.reshape(x.shape), atol=1e-12)
    else:
        basis = np.eye(w.size).reshape(w.size, *w.shape)
        want = np.array([(_conv2d_reference(x, e, stride, [0, 0]) * g).sum() for e in basis])
        got = ops.conv2d_backward_weight(g, x, w, stride=stride)
        np.testing.assert_allclose(got, want.reshape(w.shape), atol=1e-12)


# ----------------------------------------------------------------------------------------------
# Workspace sizes of huge (broadcast) operands
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, inputs, attrs",
    [
        ("tile_backward", [((2**61,), "float16")] * 2, {"repetitions": [1]}),
        ("repeat_backward", [((2**61,), "float16")] * 2, {"repeats": 1}),
        ("pad_backward", [((2**61,), "float16"), ((2**61 - 2,), "float16")], {"pad_width": [1, 1]}),
        (
            "embedding_backward",
            [((2**60, 1), "float16"), ((2**60,), "int32"), ((3, 1), "float16")],
            {},
        ),
        (
            "interpolate_backward",
            [((1, 1, 1, 2**60), "float16"), ((1, 1, 1, 2**61), "float16")],
            {"size": [1, 2**60]},
        ),
        (
            "scaled_dot_product_attention",
            [((1, 1, 2**58), "float32")] * 2 + [((1, 1, 1), "float32")],
            {},
        ),
    ],
    ids=["tile", "repeat", "pad", "embedding", "interpolate", "attention"],
)
def test_workspace_of_a_huge_view_is_a_size_error(name, inputs, attrs):
    # The float32 accumulator (or the index tables) of 2**61 float16 elements is 2**63 bytes:
    # the size overflowed int64 and came back as a wrapped value.
    status, size, message = _workspace_query(name, inputs, **attrs)
    assert (status, size) == (lib.CT_ERROR_SIZE_OVERFLOW, 0)
    assert name in message


# ----------------------------------------------------------------------------------------------
# arange's integer words
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "start, stop, step, dtype, want",
    [
        (0.0, 1.0, 1e300, "int64", [0]),  # a step never taken, beyond int64: was converted
        (-(2.0**63), 2.0**63 - 1024, 2.0**64 - 2048, "int64", [-(2**63), 2**63 - 2048]),
        (2.0**64 - 2048, 0.0, -(2.0**64 - 2048), "uint64", [2**64 - 2048]),
        (2.0**64 - 4096, 2.0**64 - 2048, 1024.0, "uint64", [2**64 - 4096, 2**64 - 3072]),
    ],
)
def test_integer_arange_with_64_bit_extremes(start, stop, step, dtype, want):
    out = ops.arange(start=start, stop=stop, step=step, dtype=dtype)
    np.testing.assert_array_equal(out, np.array(want, dtype))


@pytest.mark.parametrize("dtype, start", [("uint64", 2.0**64), ("int64", 2.0**63)])
def test_integer_arange_past_the_dtype_is_refused(dtype, start):
    # 2**64 (uint64) and 2**63 (int64) passed the range check (its bound, the largest value,
    # rounds up to them in float64) and came out as 2**63 and INT64_MIN.
    with pytest.raises(ctensor.InvalidArgumentError, match="arange: values from"):
        ops.arange(start=start, stop=start + 2.0**20, step=2.0**20, dtype=dtype)


# ----------------------------------------------------------------------------------------------
# slice_backward's steps
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("step", [INT64_MAX, 2**62, INT64_MIN + 1, -(2**62)])
def test_slice_backward_with_a_step_taken_once(step):
    # One element per dim: the step is never taken, but its product with the byte stride
    # overflowed int64 (slice itself already skipped it).
    x = np.zeros((3, 4), np.float64)
    grad = np.full((1, 1), 7.0)
    got = ops.slice_backward(
        grad, x, start=[1, 2], stop=[2, 3] if step > 0 else [0, 1], step=[step, step]
    )
    want = np.zeros((3, 4))
    want[1, 2] = 7.0
    np.testing.assert_array_equal(got, want)
