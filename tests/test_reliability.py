"""Regression tests for what a sanitized fuzz run of the C ABI found: sizes and attribute
arithmetic that wrapped around int64, views whose addresses wrap or are misaligned, and Python
errors that named neither the op nor the argument.

The C-level cases build ``ct_tensor`` views through the binding's cffi module (``ctensor.ffi``,
``ctensor.lib``) and call the ABI directly, so that nothing in the Python layer can hide them.
"""

from __future__ import annotations

import numpy as np
import pytest

import ctensor
from ctensor import ffi, lib, ops
from ctensor._run import HOST_MEMORY_BYTES

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


# ----------------------------------------------------------------------------------------------
# Scratch sizes of sort, topk and unique_* (they wrapped and the kernel wrote past the workspace)
# ----------------------------------------------------------------------------------------------

HUGE = np.broadcast_to(np.array(7, np.int8), (INT64_MAX,))


@pytest.mark.parametrize("name", ["unique_counts", "unique_all", "unique_inverse"])
def test_unique_of_a_huge_broadcast_view_is_a_size_error(name):
    with pytest.raises(ctensor.SizeOverflowError, match=name):
        getattr(ops, name)(HUGE)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ops.topk(HUGE, k=3),
        lambda: ops.sort(HUGE),
        lambda: ops.argsort(HUGE),
        lambda: ops.argpartition(HUGE, kth=1),
        lambda: ops.sort(np.broadcast_to(np.float64(1.5), (2**59,))),
    ],
    ids=["topk", "sort", "argsort", "argpartition", "sort_float64"],
)
def test_sorting_a_huge_broadcast_view_is_a_size_error(call):
    with pytest.raises(ctensor.SizeOverflowError):
        call()


def test_sort_workspace_query_reports_the_overflow_in_c():
    op = ffi.new("const ct_op**")
    assert lib.ct_op_find(b"unique_counts", op) == lib.CT_OK
    shape = ffi.new("int64_t[]", [INT64_MAX])
    strides = ffi.new("int64_t[]", [0])
    data = ffi.new("int8_t[]", 1)
    view = ffi.new("ct_tensor*")
    view.data = data
    view.device.device_type = lib.CT_DEVICE_CPU
    view.ndim = 1
    view.dtype.code, view.dtype.bits, view.dtype.lanes = lib.CT_DTYPE_INT, 8, 1
    view.shape = shape
    view.strides = strides
    inputs = ffi.new("const ct_tensor*[]", [view])
    size = ffi.new("uint64_t*")
    alignment = ffi.new("uint64_t*")
    status = lib.ct_op_workspace(op[0], inputs, 1, ffi.NULL, 0, ffi.NULL, 0, size, alignment)
    assert status == lib.CT_ERROR_SIZE_OVERFLOW
    assert "unique_counts" in ctensor._lib.last_error()


# ----------------------------------------------------------------------------------------------
# Attribute arithmetic: tril/triu offsets, conv and pool windows
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [INT64_MAX, INT64_MAX - 1, 2**62, INT64_MIN, INT64_MIN + 1, -(2**62)])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu_with_extreme_offsets_match_numpy(name, k):
    # NumPy's own tril/triu cannot take k = -2**63 (np.tri negates it): the reference is its
    # definition, element (i, j) kept where j - i <= k (tril) or j - i >= k (triu).
    def reference(x):
        offset = np.arange(x.shape[-1]) - np.arange(x.shape[-2])[:, None]
        keep = offset <= k if name == "tril" else offset >= k
        return np.where(keep, x, np.zeros_like(x))

    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(getattr(ops, name)(x, k=k), reference(x))
    batch = np.ones((2, 3, 3), np.int64)
    np.testing.assert_array_equal(getattr(ops, name)(batch, k=k), reference(batch))
    if k >= -(2**62):  # where NumPy can, it agrees
        np.testing.assert_array_equal(getattr(ops, name)(x, k=k), getattr(np, name)(x, k=k))


def test_tril_with_the_largest_offset_keeps_everything():
    np.testing.assert_array_equal(
        ops.tril(np.ones((3, 3), np.float32), k=INT64_MAX), np.ones((3, 3))
    )
    np.testing.assert_array_equal(
        ops.triu(np.ones((3, 3), np.float32), k=INT64_MAX), np.zeros((3, 3))
    )


X4 = np.ones((1, 1, 3, 3), np.float32)
W1 = np.ones((1, 1, 1, 1), np.float32)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ops.conv2d(X4, W1, padding=INT64_MAX),
        lambda: ops.conv2d(X4, W1, padding=[1, 2**62]),
        lambda: ops.conv2d(X4, np.ones((1, 1, 2, 2), np.float32), dilation=INT64_MAX),
        lambda: ops.conv_transpose2d(X4, W1, padding=INT64_MAX),
        lambda: ops.conv_transpose2d(X4, W1, stride=INT64_MAX),
        lambda: ops.conv_transpose2d(X4, np.ones((1, 1, 2, 2), np.float32), dilation=INT64_MAX),
        lambda: ops.max_pool2d(X4, kernel_size=1, padding=INT64_MAX),
        lambda: ops.max_pool2d(X4, kernel_size=2, dilation=INT64_MAX),
        lambda: ops.avg_pool2d(X4, kernel_size=1, padding=INT64_MAX),
    ],
    ids=[
        "conv2d_padding",
        "conv2d_padding_w",
        "conv2d_dilation",
        "conv_transpose2d_padding",
        "conv_transpose2d_stride",
        "conv_transpose2d_dilation",
        "max_pool2d_padding",
        "max_pool2d_dilation",
        "avg_pool2d_padding",
    ],
)
def test_window_attributes_that_overflow_are_size_errors(call):
    with pytest.raises(ctensor.SizeOverflowError, match="overflow"):
        call()


def test_conv2d_backward_ops_refuse_overflowing_padding():
    grad = np.ones((1, 1, 1, 1), np.float32)
    with pytest.raises(ctensor.SizeOverflowError):
        ops.conv2d_backward_input(grad, X4, W1, padding=INT64_MAX)
    with pytest.raises(ctensor.SizeOverflowError):
        ops.conv2d_backward_weight(grad, X4, W1, padding=INT64_MAX)


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pooling_with_the_largest_stride_has_one_window(ceil_mode):
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    out = ops.max_pool2d(x, kernel_size=2, stride=INT64_MAX, ceil_mode=ceil_mode)
    np.testing.assert_array_equal(out, np.array([[[[4.0]]]], np.float32))
    out = ops.avg_pool2d(x, kernel_size=2, stride=INT64_MAX, ceil_mode=ceil_mode)
    np.testing.assert_array_equal(out, np.array([[[[2.0]]]], np.float32))


def test_adaptive_avg_pool2d_backward_of_an_empty_output_is_zero():
    x = np.ones((2, 3, 4), np.float64)
    grad = np.ones((2, 0, 4), np.float64)
    np.testing.assert_array_equal(ops.adaptive_avg_pool2d_backward(grad, x), np.zeros_like(x))


# ----------------------------------------------------------------------------------------------
# Views at the ABI: wrapping byte offsets, INT64_MIN strides, misaligned data
# ----------------------------------------------------------------------------------------------


class _View:
    """A float64 view built by hand, with everything it points to kept alive."""

    def __init__(self, data, shape, strides=None, byte_offset=0, dtype=(lib.CT_DTYPE_FLOAT, 64)):
        # the tensor's `data` field does not own its buffer: a buffer made by `ffi.new` in the
        # call would otherwise be freed before the run writes to it
        self.data = data
        self.shape = ffi.new("int64_t[]", list(shape))
        self.strides = ffi.new("int64_t[]", list(strides)) if strides is not None else ffi.NULL
        self.tensor = ffi.new("ct_tensor*")
        self.tensor.data = data
        self.tensor.device.device_type = lib.CT_DEVICE_CPU
        self.tensor.ndim = len(shape)
        self.tensor.dtype.code, self.tensor.dtype.bits, self.tensor.dtype.lanes = (*dtype, 1)
        self.tensor.shape = self.shape
        self.tensor.strides = self.strides
        self.tensor.byte_offset = byte_offset


def _run_unary(name: str, x: _View, out: _View) -> int:
    op = ffi.new("const ct_op**")
    assert lib.ct_op_find(name.encode(), op) == lib.CT_OK
    inputs = ffi.new("const ct_tensor*[]", [x.tensor])
    outputs = ffi.new("const ct_tensor*[]", [out.tensor])
    return lib.ct_op_run(op[0], inputs, 1, outputs, 1, ffi.NULL, 0, ffi.NULL)


def _expect(status: int, want: int, *words: str) -> None:
    message = ctensor._lib.last_error()
    assert status == want, (lib.ct_status_name(status), message)
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("byte_offset", [2**64 - 8, 2**64 - 4096, 2**63, 2**63 + 8])
def test_a_byte_offset_that_wraps_is_refused(byte_offset):
    buffer = ffi.new("double[]", 8)
    out_buffer = ffi.new("double[]", 4)
    before = list(out_buffer)
    x = _View(buffer, [4], byte_offset=byte_offset)
    out = _View(out_buffer, [4])
    _expect(_run_unary("negative", x, out), lib.CT_ERROR_SIZE_OVERFLOW, "byte_offset")
    # as an output too: nothing may be written before `data`
    canary = ffi.new("double[]", [1.0] * 8)
    wrapped_out = _View(canary + 4, [4], byte_offset=2**64 - 32)
    good_in = _View(out_buffer, [4])
    _expect(_run_unary("negative", good_in, wrapped_out), lib.CT_ERROR_SIZE_OVERFLOW)
    assert list(canary) == [1.0] * 8
    assert list(out_buffer) == before


def test_strides_that_reach_below_the_address_space_are_refused():
    buffer = ffi.new("double[]", 4)
    out = _View(ffi.new("double[]", 2), [2])
    # data near address 0 with a negative stride: the second element would sit below 0
    low = ffi.cast("void*", 8)
    x = _View(low, [2], strides=[-(2**40)])
    _expect(_run_unary("negative", x, out), lib.CT_ERROR_SIZE_OVERFLOW, "address space")
    del buffer


def test_an_int64_min_stride_is_refused_before_it_is_negated():
    buffer = ffi.new("double[]", 4)
    x = _View(buffer, [2], strides=[INT64_MIN])
    out = _View(ffi.new("double[]", 2), [2])
    _expect(_run_unary("negative", x, out), lib.CT_ERROR_SIZE_OVERFLOW, "stride")


def test_misaligned_typed_data_is_refused_at_the_abi():
    raw = ffi.new("char[]", 64)
    x = _View(raw, [4], byte_offset=1)
    out = _View(ffi.new("double[]", 4), [4])
    _expect(_run_unary("negative", x, out), lib.CT_ERROR_INVALID_ARGUMENT, "aligned")
    # one-byte elements have no alignment to keep
    small = _View(raw, [4], byte_offset=1, dtype=(lib.CT_DTYPE_INT, 8))
    small_out = _View(ffi.new("int8_t[]", 4), [4], dtype=(lib.CT_DTYPE_INT, 8))
    _expect(_run_unary("negative", small, small_out), lib.CT_OK)


def test_misaligned_numpy_arrays_are_refused_with_the_rule_named():
    x = np.zeros(33, np.uint8)[1:].view(np.float64)
    assert not x.flags.aligned
    with pytest.raises(ctensor.InvalidArgumentError, match="aligned"):
        ops.add(x, x)
    out = np.zeros(33, np.uint8)[1:].view(np.float64)
    with pytest.raises(ctensor.InvalidArgumentError, match="aligned"):
        ops.add(np.ones(4), np.ones(4), out=out)
    # the documented way to a result: an aligned copy
    aligned = np.require(x, requirements="A")
    np.testing.assert_array_equal(ops.add(aligned, aligned), x + x)


def test_a_plan_refuses_a_misaligned_pointer_and_keeps_its_own():
    op = ffi.new("const ct_op**")
    assert lib.ct_op_find(b"negative", op) == lib.CT_OK
    source = ffi.new("double[]", [1.0, 2.0])
    target = ffi.new("double[]", 2)
    x = _View(source, [2])
    out = _View(target, [2])
    plan = ffi.new("ct_plan**")
    inputs = ffi.new("const ct_tensor*[]", [x.tensor])
    outputs = ffi.new("const ct_tensor*[]", [out.tensor])
    assert lib.ct_plan_create(op[0], inputs, 1, outputs, 1, ffi.NULL, 0, ffi.NULL, plan) == 0
    try:
        raw = ffi.new("char[]", 32)
        data = ffi.new("void*[]", [ffi.cast("char*", raw) + 1, ffi.NULL])
        _expect(lib.ct_plan_set_data(plan[0], data, 2), lib.CT_ERROR_INVALID_ARGUMENT, "aligned")
        assert lib.ct_plan_run(plan[0]) == lib.CT_OK
        assert list(target) == [-1.0, -2.0]
    finally:
        lib.ct_plan_destroy(plan[0])


def test_device_copies_with_wrapping_offsets_are_refused():
    cpu = ffi.new("ct_device*")
    cpu.device_type = lib.CT_DEVICE_CPU
    host = ffi.new("char[]", 8)
    buffer = ffi.new("char[]", 8)
    status = lib.ct_device_copy_from_host(cpu[0], buffer, 2**64 - 2, host, 8, ffi.NULL)
    _expect(status, lib.CT_ERROR_SIZE_OVERFLOW, "wraps")
    status = lib.ct_device_copy_to_host(cpu[0], host, buffer, 2**64 - 2, 8, ffi.NULL)
    _expect(status, lib.CT_ERROR_SIZE_OVERFLOW, "wraps")


def test_absurd_thread_counts_are_refused():
    before = ctensor.get_num_threads()
    with pytest.raises(ctensor.InvalidArgumentError, match="threads"):
        ctensor.set_num_threads(lib.CT_MAX_THREADS + 1)
    assert ctensor.get_num_threads() == before


# ----------------------------------------------------------------------------------------------
# Python: output sizes checked before allocating, errors that name the op and the argument
# ----------------------------------------------------------------------------------------------


def test_outputs_whose_bytes_overflow_int64_fail_in_infer():
    with pytest.raises(ctensor.SizeOverflowError, match="pad"):
        ops.pad(np.zeros(2, np.float32), pad_width=[2**61, 2**61])
    with pytest.raises(ctensor.SizeOverflowError, match="output"):
        ops.add(
            np.broadcast_to(np.float64(1), (2**40, 1)), np.broadcast_to(np.float64(1), (2**40,))
        )


def test_outputs_larger_than_the_machine_fail_before_allocating():
    # The reproducer: 8 TiB of float32, more than this machine has.
    assert 0 < HOST_MEMORY_BYTES < 2**43
    with pytest.raises(ctensor.SizeOverflowError, match="pad: its outputs would take 8.0 TiB"):
        ops.pad(np.zeros(2, np.float32), pad_width=[2**40, 2**40])
    pad = HOST_MEMORY_BYTES // 4  # float32: twice the memory in all
    with pytest.raises(ctensor.SizeOverflowError, match="memory"):
        ops.pad(np.zeros(2, np.float32), pad_width=[pad, pad])
    with pytest.raises(ctensor.SizeOverflowError, match="memory"):
        ops.add(np.broadcast_to(np.float32(1), (pad, 4)), np.float32(1))


@pytest.mark.parametrize(
    "call",
    [
        lambda: ops.sum(np.ones(3), axis=2**64),
        lambda: ops.pad(np.zeros(2, np.float32), pad_width=[2**64, 1]),
        lambda: ops.tril(np.ones((3, 3)), k=-(2**63) - 1),
        lambda: ops.interpolate(np.ones((1, 1, 2, 2), np.float32), scale_factor=[10**400, 2]),
    ],
    ids=["int", "int_list", "negative_int", "float_list"],
)
def test_out_of_range_numbers_name_the_op_and_attribute(call):
    with pytest.raises(ctensor.CTensorError) as info:
        call()
    assert not isinstance(info.value, OverflowError) or isinstance(info.value, ctensor.CTensorError)
    assert "attribute" in str(info.value)


def test_a_string_attribute_with_a_nul_is_refused():
    x = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(ctensor.InvalidArgumentError, match="NUL"):
        ops.interpolate(x, size=[4, 4], mode="nearest\0bilinear")
    with pytest.raises(ctensor.InvalidArgumentError, match="NUL"):
        ops.einsum([np.ones(3), np.ones(3)], subscripts="i,i\0->")


def test_text_that_is_not_utf8_names_the_op_and_attribute():
    x = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(ctensor.InvalidArgumentError, match="interpolate: attribute 'mode'"):
        ops.interpolate(x, size=[4, 4], mode="near\udcffest")
    with pytest.raises(ctensor.CTensorError, match="interpolate"):
        ops.interpolate(x, size=[4, 4], **{"mo\udcffde": "nearest"})


# ----------------------------------------------------------------------------------------------
# Class-axis losses over no samples (the sample walker divided by the zero extent: UBSan's
# "division by zero", found by the sanitized conformance run)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize(
    "x_shape, target_shape", [((0, 3), (0,)), ((2, 3, 0), (2, 0))], ids=["rows", "spatial"]
)
def test_class_losses_over_no_samples(name, x_shape, target_shape):
    x = np.zeros(x_shape)
    target = np.zeros(target_shape, np.int64)
    loss = getattr(ops, name)
    assert np.isnan(loss(x, target, reduction="mean"))
    assert loss(x, target, reduction="sum") == 0.0
    assert loss(x, target, reduction="none").shape == target_shape
    backward = getattr(ops, name + "_backward")
    grads = backward(np.ones(target_shape), x, target, reduction="none")
    grad_x = grads[0] if isinstance(grads, tuple) else grads
    assert grad_x.shape == x_shape
