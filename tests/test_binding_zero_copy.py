"""Zero-copy both ways: inputs (strided, reversed, transposed, broadcast) are read in place, and
out= writes into the caller's own buffer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from ctensor import _dlpack, ops
from ctensor._lib import configure
from ctensor.testing import tensor_address


class Recorder:
    """Wraps an array, exposes only the DLPack protocol, and keeps every capsule it hands out,
    so a test can look at exactly what the C library was given."""

    def __init__(self, array):
        self.array = array
        self.capsules = []

    def __dlpack__(self, **kwargs):
        capsule = self.array.__dlpack__(**kwargs)
        self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_out_lands_in_callers_numpy_buffer():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    out = np.full((4, 5), np.nan, np.float32)
    address = out.ctypes.data
    result = ops.add(a, b, out=out)
    assert result is out
    assert out.ctypes.data == address
    np.testing.assert_allclose(out, a.astype(np.float64) + b, rtol=1e-6)


def test_out_lands_in_callers_torch_buffer():
    a = torch.randn(3, 7, dtype=torch.float64)
    b = torch.randn(7, dtype=torch.float64)
    out = torch.full((3, 7), float("nan"), dtype=torch.float64)
    address = out.data_ptr()
    result = ops.multiply(a, b, out=out)
    assert result is out
    assert out.data_ptr() == address
    np.testing.assert_allclose(out.numpy(), a.numpy() * b.numpy(), rtol=1e-15)


def test_out_into_a_strided_view_leaves_the_rest_untouched():
    base = np.zeros((6, 8), np.float64)
    view = base[::2, 1::3]
    x = np.arange(view.size, dtype=np.float64).reshape(view.shape)
    result = ops.negative(x, out=view)
    assert result is view
    expected = np.zeros((6, 8))
    expected[::2, 1::3] = -x
    np.testing.assert_array_equal(base, expected)


def test_in_place_into_an_input():
    a = np.arange(10, dtype=np.float32)
    b = np.full(10, 2.0, np.float32)
    address = a.ctypes.data
    ops.add(a, b, out=a)
    assert a.ctypes.data == address
    np.testing.assert_array_equal(a, np.arange(10, dtype=np.float32) + 2)


def test_reversed_strided_numpy_view_is_read_in_place():
    base = np.arange(48, dtype=np.float64).reshape(6, 8)
    view = base[::2, ::-1]
    recorder = Recorder(view)
    result = ops.negative(recorder)
    np.testing.assert_array_equal(result, -view)
    assert isinstance(result, np.ndarray)
    # The C library saw the view itself: its first element, its extents, its negative strides.
    (capsule,) = recorder.capsules
    address, shape, strides = tensor_address(capsule)
    assert address == view.__array_interface__["data"][0]
    assert shape == view.shape
    assert strides == tuple(s // view.itemsize for s in view.strides)
    assert strides[1] < 0


def test_reversed_view_in_a_reduction_matches_float64_reference():
    base = np.random.default_rng(1).standard_normal((5, 9)).astype(np.float32)
    view = base[::2, ::-1]
    result = ops.sum(view, axis=1, keepdims=True)
    expected = view.astype(np.float64).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(result, expected, rtol=1e-5)


def test_transposed_torch_tensor_is_read_in_place(monkeypatch):
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    tt = t.T
    assert not tt.is_contiguous()
    seen = []
    real = _dlpack._to_dlpack or torch.utils.dlpack.to_dlpack

    def recording_to_dlpack(tensor):
        capsule = real(tensor)
        seen.append(capsule)
        return capsule

    ops.add(t, t)  # make sure the torch readers are set up, then watch them
    monkeypatch.setattr(_dlpack, "_to_dlpack", recording_to_dlpack)  # the Python path
    configure(tensor_type=torch.Tensor, to_dlpack=recording_to_dlpack)  # the C fast paths
    try:
        result = ops.matmul(tt, t)
    finally:
        configure(tensor_type=torch.Tensor, to_dlpack=real)
    assert isinstance(result, torch.Tensor)
    np.testing.assert_allclose(result.numpy(), tt.double().numpy() @ t.double().numpy(), rtol=1e-6)
    # First capsule: the transposed input, same memory and strides as torch's view.
    address, shape, strides = tensor_address(seen[0])
    assert address == tt.data_ptr()
    assert shape == tuple(tt.shape)
    assert strides == tuple(tt.stride())


def test_zero_stride_broadcast_input():
    row = np.arange(3, dtype=np.float64)
    wide = np.broadcast_to(row, (4, 3))  # zero stride, read-only
    result = ops.multiply(wide, np.full((4, 3), 2.0))
    np.testing.assert_array_equal(result, np.broadcast_to(row * 2, (4, 3)))


def test_zero_size_and_zero_dim_inputs():
    empty = ops.add(np.ones((0, 3), np.float32), np.ones(3, np.float32))
    assert empty.shape == (0, 3) and empty.dtype == np.float32
    scalar = ops.add(np.asarray(2.0), np.asarray(3.0))
    assert scalar.shape == () and float(scalar) == 5.0
    torch_empty = ops.add(torch.ones(0, 2), torch.ones(0, 2))
    assert isinstance(torch_empty, torch.Tensor) and tuple(torch_empty.shape) == (0, 2)


def test_torch_results_are_compact():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).T
    result = ops.exp(t)
    assert result.is_contiguous()
    assert all(s > 0 for s in result.stride())
    np.testing.assert_allclose(result.numpy(), np.exp(t.numpy().astype(np.float64)), rtol=1e-6)


def test_no_copy_is_made_when_dtypes_already_match(monkeypatch):
    from ctensor import _promotion

    def forbidden(*args, **kwargs):
        raise AssertionError("a cast (copy) was made")

    monkeypatch.setattr(_promotion, "cast", forbidden)
    a = np.ones((2, 3), np.float32)[:, ::-1]
    ops.add(a, a)
    ops.sum(np.ones(4, np.int8))  # not elementwise, one input: passed as is
    with pytest.raises(AssertionError, match="copy"):
        ops.add(np.ones(3, np.float32), np.ones(3, np.float64))


_steps = st.sampled_from([-3, -2, -1, 1, 2, 3])


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 7),
    cols=st.integers(1, 7),
    s0=_steps,
    s1=_steps,
    transpose=st.booleans(),
    dtype=st.sampled_from(["float32", "float64", "int32", "int64"]),
)
def test_strided_views_match_numpy(rows, cols, s0, s1, transpose, dtype):
    base = (np.arange(rows * cols * 9, dtype=np.float64) % 17 - 8).astype(dtype)
    base = base.reshape(rows * 3, cols * 3)
    x = base[::s0, ::s1][:rows, :cols]
    y = base[1 :: abs(s0), ::-s1][:rows, :cols]
    if transpose:
        x, y = x.T, y.T
    result = ops.add(x, y)
    np.testing.assert_array_equal(result, np.add(x, y))
    assert result.dtype == np.add(x, y).dtype


def test_out_returns_the_same_object_for_a_one_tuple():
    a = np.ones(3)
    out = np.empty(3)
    assert ops.negative(a, out=(out,)) is out
    assert ctensor.ops.negative(a, out=[out]) is out


class _Sub(np.ndarray):
    """A NumPy subclass: not read by the C fast paths, so it exercises the general path."""


@pytest.mark.parametrize(
    "op,args,attrs",
    [
        ("add", (np.arange(6.0).reshape(2, 3), np.arange(3.0)), {}),
        ("sum", (np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::-1],), {"axis": 1}),
        ("matmul", (np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)), {}),
        ("sqrt", (np.arange(5, dtype=np.int8),), {}),
        ("multiply", (np.arange(4, dtype=np.int16), np.arange(4, dtype=np.float32)), {}),
    ],
)
def test_fast_and_general_paths_agree(op, args, attrs):
    function = getattr(ops, op)
    fast = function(*args, **attrs)
    general = function(*[a.view(_Sub) for a in args], **attrs)
    assert type(general) is np.ndarray
    assert fast.dtype == general.dtype
    np.testing.assert_array_equal(fast, general)
    out_fast = np.empty_like(fast)
    out_general = np.empty_like(fast).view(_Sub)
    assert function(*args, out=out_fast, **attrs) is out_fast
    assert function(*args, out=out_general, **attrs) is out_general
    np.testing.assert_array_equal(out_fast, np.asarray(out_general))
