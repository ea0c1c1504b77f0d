"""The C fast path of ops.<name>(..., out=): NumPy arrays read without DLPack, and what it hands
back to the general path (unaligned, byte-swapped, read-only, optional inputs)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import pytest
import torch
from arrays import assert_close, ops_functions_entered, snapshot, unchanged
from hypothesis import given
from hypothesis import strategies as st

import ctensor
from ctensor import _dlpack, ops
from ctensor._lib import ffi, lib


def test_numpy_arrays_are_read_directly_on_this_numpy():
    # The import-time check compares the direct reader with NumPy's __array_interface__; if
    # NumPy's struct layout ever changes, the direct path turns itself off and this test says so.
    assert _dlpack.NUMPY_DIRECT is True


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.int32).reshape(3, 4)[::-1, ::2],
        np.zeros((), np.float32),
        np.zeros((0, 5), np.float64),
        np.ones((2, 3), np.float16).T,
        np.arange(10, dtype=np.uint8)[2:7],
    ],
    ids=["negative-and-step", "0-d", "empty", "transposed", "offset"],
)
def test_direct_view_matches_the_array_interface(array):
    view = ffi.new("ct_tensor*")
    strides = ffi.new("int64_t[]", lib.CT_MAX_NDIM)
    assert _dlpack._direct_matches_interface(array, view, strides)


def test_direct_reader_declines_what_dlpack_must_handle():
    view = ffi.new("ct_tensor*")
    strides = ffi.new("int64_t[]", lib.CT_MAX_NDIM)
    swapped = np.arange(4, dtype=">f4")
    unaligned = np.frombuffer(np.zeros(17, np.uint8).tobytes(), np.float32, 4, offset=1)
    read_only = np.zeros(3)
    read_only.flags.writeable = False
    complex_values = np.zeros(3, np.complex64)
    assert lib.ctpy_numpy_view(id(swapped), view, strides, 0) == 1
    assert lib.ctpy_numpy_view(id(unaligned), view, strides, 0) == 1
    assert lib.ctpy_numpy_view(id(complex_values), view, strides, 0) == 1
    assert lib.ctpy_numpy_view(id(read_only), view, strides, 0) == 0  # fine as an input
    assert lib.ctpy_numpy_view(id(read_only), view, strides, 1) == 1  # never as an output
    assert lib.ctpy_numpy_view(id([1, 2]), view, strides, 0) == 1


def test_in_place_out_runs_once():
    a = np.arange(5, dtype=np.float32)
    b = np.ones(5, np.float32)
    assert ops.add(a, b, out=a) is a
    assert_close(a, np.arange(5) + 1.0)
    pair = (a,)
    assert ops.multiply(a, b, out=pair) is a  # a one-element tuple out= gives the array


def test_calls_the_fast_path_hands_back_still_work():
    a = np.arange(4, dtype=np.float32)
    swapped = np.arange(4, dtype=">f4")
    out = np.empty(4, np.float32)
    assert ops.add(swapped.astype(np.float32), a, out=out) is out
    assert_close(out, np.arange(4) * 2.0)
    unaligned = np.frombuffer(np.zeros(17, np.uint8).tobytes(), np.float32, 4, offset=1)
    with pytest.raises(ctensor.InvalidArgumentError, match="aligned"):
        ops.add(unaligned, a, out=out)  # ctensor.h: typed data must be aligned
    assert ops.add(np.require(unaligned, requirements="A"), a, out=out) is out
    assert_close(out, np.arange(4.0))
    mixed = np.empty(4, np.float64)
    assert ops.add(a, np.ones(4), out=mixed) is mixed  # promotion: the general path casts
    assert_close(mixed, np.arange(4) + 1.0)
    assert ops.add(a, 1.5, out=out) is out  # a Python scalar
    assert_close(out, np.arange(4) + 1.5)


def test_errors_of_the_fast_path_leave_out_untouched():
    a = np.arange(4, dtype=np.float32)
    out = np.full(3, 7.0, np.float32)
    before = snapshot(out)
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.add(a, a, out=out)
    assert unchanged(out, before)
    read_only = np.zeros(4, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ctensor.ReadOnlyOutputError):
        ops.add(a, a, out=read_only)
    base = np.arange(8, dtype=np.float32)
    with pytest.raises(ctensor.AliasingError):
        ops.add(base[1:5], a, out=base[:4])
    np.testing.assert_array_equal(base, np.arange(8))


@given(size=st.sampled_from([1, 7, 4096, 4097, 70_000]), step=st.sampled_from([1, 2, -1]))
def test_small_and_large_calls_agree(size, step):
    # Calls of up to 4096 elements keep the GIL, larger ones release it: same results.
    x = np.linspace(-2, 2, size * abs(step), dtype=np.float32)[::step]
    out = np.empty(x.shape, np.float32)
    assert ops.tanh(x, out=out) is out
    assert_close(out, np.tanh(x.astype(np.float64)))


# ----------------------------------------------------------------------------------------------
# ops.<name> as C objects (FastOp) and the layout cache behind their out= form
# ----------------------------------------------------------------------------------------------


def test_operators_are_c_objects_that_look_like_functions():
    import inspect
    import pickle

    assert isinstance(ops.add, ctensor._native.FastOp)
    assert inspect.isroutine(ops.add) and callable(ops.add.fallback)
    assert str(inspect.signature(ops.add)) == str(inspect.signature(ops.add.fallback))
    assert ops.add.__name__ == "add" and ops.add.__module__ == "ctensor.ops"
    assert "add" in repr(ops.add) and ops.add.__doc__ == ops.add.fallback.__doc__
    assert pickle.loads(pickle.dumps(ops.add)) is ops.add

    class Holder:
        negate = ops.negative  # not bound as a method

    assert_close(Holder().negate(np.ones(3)), -np.ones(3))


def test_cached_layouts_run_on_each_calls_buffers():
    rng = np.random.default_rng(5)
    layouts = [(7,), (3, 5), (2, 3, 4), (11,), (4, 4), (1, 9), (6, 2), (5, 5), (2, 2, 2), (13,)]
    for _ in range(3):  # more layouts than the cache holds, cycled: hits, misses and evictions
        for shape in layouts:
            a, b = rng.standard_normal(shape), rng.standard_normal(shape)
            out = np.empty(shape)
            assert ops.add(a, b, out=out) is out
            np.testing.assert_array_equal(out, a + b)
            t = a.T  # the same shape reversed with other strides: another key
            out_t = np.empty(t.shape)
            assert ops.multiply(t, t, out=out_t) is out_t
            np.testing.assert_array_equal(out_t, t * t)


def test_a_cached_layout_still_checks_aliasing():
    x = np.arange(10.0)
    y = np.ones(9)
    other = np.zeros(10)
    ops.add(x[1:], y, out=other[:-1])  # this layout, without overlap: planned and cached
    assert_close(other[:-1], x[1:] + 1)
    before = snapshot(x)
    with pytest.raises(ctensor.AliasingError):
        ops.add(x[1:], y, out=x[:-1])  # same layout, output overlapping an input
    assert unchanged(x, before)
    ops.add(x, x, out=x)  # exactly the same view: in place is allowed
    assert_close(x, np.arange(10.0) * 2)


def test_the_fast_form_hands_everything_else_to_the_python_function():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_close(ops.add(a, 1.0), a + 1)  # a scalar input, no out=
    out = np.empty(2, np.float32)
    assert ops.sum(a, out=out, axis=1) is out  # an attribute
    assert_close(out, a.sum(axis=1))
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.add(a, a, out=np.empty((3, 2), np.float32))
    with pytest.raises(TypeError):
        ops.add(a, out=np.empty_like(a))  # too few inputs: the Python signature says so


# ----------------------------------------------------------------------------------------------
# ops.<name>(...) without out=: new outputs allocated from C too
# ----------------------------------------------------------------------------------------------


def _framework_arrays(framework, *arrays):
    if framework == "torch":
        return tuple(torch.from_numpy(a) for a in arrays)
    return arrays


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_new_outputs_are_allocated_from_c_once_a_type_was_seen(framework):
    a, b = _framework_arrays(
        framework, np.arange(6, dtype=np.float32).reshape(2, 3), np.full(3, 0.5, np.float32)
    )
    ops.add(a, b)  # the first call of an array type registers its allocator (Python path)
    result, entered = ops_functions_entered(lambda: ops.add(a, b))
    assert entered == []  # no Python frame of ops.add: FastOp ran the whole call
    assert type(result) is type(a) and tuple(result.shape) == (2, 3)
    assert_close(np.asarray(result), np.asarray(a) + np.asarray(b))
    again = ops.add(a, b)  # a cached layout, new buffers
    assert again is not result
    assert np.asarray(again).ctypes.data != np.asarray(result).ctypes.data
    assert_close(np.asarray(again), np.asarray(result))


def _new_output_calls(rng):
    """(op name, inputs) pairs whose inputs' layouts differ pairwise: shapes, broadcasting,
    dtypes, strides, byte offsets, 0-d."""
    base = rng.standard_normal((4, 6))
    return [
        ("add", (base[:, :5], base[:, 1:])),
        ("add", (base[:3, :1], base[0, :4])),  # broadcast to (3, 4)
        ("add", (base.T, base.T)),  # strides reversed
        ("add", (base[:, :5].astype(np.float32), base[:, 1:].astype(np.float32))),
        ("add", (base[::2, ::3], base[1::2, 1::3])),
        ("add", (base[1:, 1:], base[:-1, :-1])),  # a byte offset
        ("multiply", (base[0, :4].copy(), base[1, :4].copy())),
        ("multiply", ((base * 10).astype(np.int32), (base * 3).astype(np.int32))),
        ("negative", (np.array(2.5),)),  # 0-d
        ("exp", (base[:2],)),
        ("where", (base > 0, base, -base)),
        ("greater", (base[:, :2], base[:, 2:4])),  # bool output
    ]


def _reference(name, inputs):
    fn = {
        "add": np.add,
        "multiply": np.multiply,
        "negative": np.negative,
        "exp": np.exp,
        "where": np.where,
        "greater": np.greater,
    }[name]
    return fn(*inputs)


def test_new_output_layouts_seen_before_get_their_own_shape_dtype_and_framework():
    # Calls without out= keep, per input layout, what infer said and how to allocate: every
    # call must still get its own result shape and dtype, in the caller's framework, for more
    # layouts than are kept (hits, misses, evictions), and for NumPy and torch inputs of the
    # very same layouts one after another.
    rng = np.random.default_rng(23)
    calls = _new_output_calls(rng)
    for framework in ("numpy", "torch"):  # registers each type's allocator (Python path)
        ops.exp(*_framework_arrays(framework, np.ones(3)))
    for _ in range(3):
        for name, inputs in calls:
            expected = _reference(name, inputs)
            for framework in ("numpy", "torch", "numpy"):
                given = _framework_arrays(framework, *inputs)
                op = getattr(ops, name)
                result, entered = ops_functions_entered(partial(op, *given))
                assert type(result) is type(given[0]), (name, framework)
                got = np.asarray(result)
                assert got.shape == expected.shape and got.dtype == expected.dtype, name
                assert_close(got, expected)
                assert entered == [], name  # FastOp ran the whole call, from C


def test_torch_results_without_out_are_ordinary_tensors():
    x = torch.linspace(0, 1, 8)
    for _ in range(3):  # the first call, then calls from the output cache
        result = ops.exp(x)
        assert not result.requires_grad and not result.is_neg()
        assert result.untyped_storage().resizable()  # allocated by torch.empty, not wrapped
        result.resize_(20)  # a caller may grow it, as any tensor torch allocated
        assert result.shape == (20,)
        assert_close(result[:8].numpy(), np.exp(x.numpy()))


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_calls_the_c_path_declines_still_get_their_answer_or_error(framework):
    a32, a64 = _framework_arrays(
        framework, np.linspace(-1, 1, 12, dtype=np.float32), np.linspace(0, 2, 12)
    )
    ops.add(a32, a32)
    # dtypes that need a cast: promoted on the Python path, as NumPy does
    result, entered = ops_functions_entered(lambda: ops.add(a32, a64))
    assert entered == ["add"]
    assert np.asarray(result).dtype == np.float64
    assert_close(np.asarray(result), np.asarray(a32).astype(np.float64) + np.asarray(a64))
    # a shape error is raised by the Python path, with its message
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.add(a32, a64[:5])
    # a Python scalar is an input the C path does not read
    assert_close(np.asarray(ops.multiply(a32, 2.0)), np.asarray(a32) * 2)


def test_torch_views_with_lazy_bits_are_resolved_without_out():
    x = torch.linspace(-1, 1, 8)
    ops.add(x, x)
    negated = x._neg_view()  # memory holds x; torch reads -x
    assert_close(ops.add(negated, torch.zeros(8)).numpy(), -x.numpy())
    grad = torch.ones(8, requires_grad=True)
    with torch.no_grad():  # read plainly (with grad mode on, the call goes through autograd)
        result = ops.add(grad, x)
    assert not result.requires_grad
    assert_close(result.numpy(), 1 + x.numpy())


@pytest.mark.parametrize("size", [7, 1 << 16])
def test_new_outputs_from_several_threads(size):
    # Small calls keep the GIL, large ones let it go; a thread that finds the C path busy takes
    # the Python path. Every result must be its own call's.
    rng = np.random.default_rng(11)
    inputs = [rng.standard_normal(size) for _ in range(8)]
    ops.exp(inputs[0])

    def work(x):
        return [ops.exp(x) for _ in range(20)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, inputs))
    for x, outs in zip(inputs, results, strict=True):
        for out in outs:
            assert_close(out, np.exp(x))
