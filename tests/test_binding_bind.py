"""ctensor.bind: a call checked once and replayed (results, zero-copy, layouts, errors)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import assert_close, snapshot, strided_arrays, unchanged
from hypothesis import given
from hypothesis import strategies as st

import ctensor
from ctensor import ops


def test_replay_writes_the_bound_output_in_place():
    a = np.arange(8, dtype=np.float32)
    b = np.full(8, 2.0, np.float32)
    c = np.empty(8, np.float32)
    call = ctensor.bind(ops.add, a, b, out=c)
    address = c.ctypes.data
    assert call() is c
    assert_close(c, a.astype(np.float64) + 2.0)
    a[:] = 10.0  # the bound views read the caller's memory, not a copy
    assert call() is c
    assert_close(c, np.full(8, 12.0))
    assert c.ctypes.data == address


def test_run_returns_the_status_and_result_is_the_output():
    a = np.linspace(-1, 1, 5, dtype=np.float32)
    out = np.empty_like(a)
    call = ctensor.bind(ops.exp, a, out=out)
    out[:] = 0
    assert call.run() == 0
    assert call.result is out
    assert_close(out, np.exp(a.astype(np.float64)))


def test_without_out_the_first_run_allocates_and_replays_reuse_it():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    call = ctensor.bind(ops.sum, a, axis=1)
    first = call()
    assert isinstance(first, np.ndarray)
    assert_close(first, a.sum(axis=1))
    a += 1
    assert call() is first
    assert_close(first, a.sum(axis=1))


def test_torch_tensors_share_memory_with_the_bound_call():
    a = torch.arange(6, dtype=torch.float32)
    b = torch.ones(6)
    c = torch.empty(6)
    call = ctensor.bind(ops.multiply, a, b, out=c)
    pointer = c.data_ptr()
    a.mul_(3)
    assert call() is c
    assert c.data_ptr() == pointer
    assert_close(c, np.arange(6) * 3.0)


def test_attributes_and_multiple_outputs():
    x = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, 1.5]])
    values, indices = np.empty((2, 2)), np.empty((2, 2), np.int64)
    call = ctensor.bind("topk", x, out=(values, indices), k=2)
    got = call()
    assert got[0] is values and got[1] is indices
    assert_close(values, [[3.0, 2.0], [4.0, 1.5]])
    np.testing.assert_array_equal(indices, [[0, 2], [1, 2]])


def test_replay_on_other_buffers_of_the_same_layout():
    a, b = np.ones((3, 4), np.float32), np.ones((3, 4), np.float32)
    c = np.empty((3, 4), np.float32)
    call = ctensor.bind(ops.add, a, b, out=c)
    a2 = np.full((3, 4), 5.0, np.float32)
    b2 = np.full((3, 4), 0.5, np.float32)
    c2 = np.zeros((3, 4), np.float32)
    c_before = snapshot(c)
    assert call(a2, b2, out=c2) is c2
    assert_close(c2, np.full((3, 4), 5.5))
    assert unchanged(c, c_before)
    # New inputs, bound output.
    assert call(b2, b2) is c
    assert_close(c, np.ones((3, 4)))
    # Bound inputs, new output.
    c3 = np.zeros((3, 4), np.float32)
    assert call(out=c3) is c3
    assert_close(c3, np.full((3, 4), 2.0))


@pytest.mark.parametrize(
    "other",
    [
        np.ones((4, 3), np.float32),  # shape
        np.ones((3, 4), np.float64),  # dtype
        np.ones((3, 8), np.float32)[:, ::2],  # strides
        np.ones((3, 4), np.float32).T.copy().T,  # column-major
    ],
    ids=["shape", "dtype", "strides", "order"],
)
def test_replay_on_another_layout_is_refused_and_writes_nothing(other):
    a, b = np.ones((3, 4), np.float32), np.ones((3, 4), np.float32)
    c = np.zeros((3, 4), np.float32)
    call = ctensor.bind(ops.add, a, b, out=c)
    c2 = np.full((3, 4), 7.0, np.float32)
    with pytest.raises(ctensor.ShapeMismatchError, match="layout"):
        call(other, b, out=c2)
    np.testing.assert_array_equal(c2, np.full((3, 4), 7.0))
    with pytest.raises(ctensor.ShapeMismatchError, match="^add: out "):
        call(a, b, out=other) if other.dtype == np.float32 else call(out=other)
    with pytest.raises(ctensor.WrongArityError):
        call(a, out=c2)


def test_bind_reports_the_errors_of_a_plain_call():
    a = np.ones(3, np.float32)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.bind(ops.add, a, np.ones(4, np.float32))
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.bind(ops.add, a, a, out=np.empty(4, np.float32))
    read_only = np.zeros(3, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ctensor.ReadOnlyOutputError):
        ctensor.bind(ops.add, a, a, out=read_only)
    np.testing.assert_array_equal(read_only, np.zeros(3))
    with pytest.raises(ctensor.UnknownAttributeError):
        ctensor.bind(ops.add, a, a, nonsense=1)


def test_bind_refuses_what_it_cannot_replay():
    a = np.ones(3, np.float32)
    with pytest.raises(ctensor.InvalidArgumentError, match="cannot be bound"):
        ctensor.bind(ops.nonzero, a)
    with pytest.raises(ctensor.InputTypeError, match="scalar"):
        ctensor.bind(ops.add, a, 1.0, out=np.empty(3, np.float32))
    with pytest.raises(ctensor.InputTypeError, match="capsule"):
        ctensor.bind(ops.negative, a.__dlpack__(), out=np.empty(3, np.float32))
    with pytest.raises(ctensor.UnsupportedDTypeError, match="cast"):
        ctensor.bind(ops.add, a, np.ones(3, np.float64), out=np.empty(3, np.float64))
    with pytest.raises(ctensor.InputTypeError):
        ctensor.bind(object(), a)
    with pytest.raises(ctensor.UnknownOpError):
        ctensor.bind("no_such_op", a)


def test_bound_arrays_stay_alive():
    import gc
    import weakref

    class Owned(np.ndarray):
        pass

    a = np.arange(4, dtype=np.float64).view(Owned)
    ref = weakref.ref(a)
    out = np.empty(4)
    call = ctensor.bind(ops.negative, a, out=out)
    del a
    gc.collect()
    assert ref() is not None
    call()
    assert_close(out, -np.arange(4.0))
    del call
    gc.collect()
    assert ref() is None


def _same_layout(p, q) -> bool:
    """What bound calls compare: strides must agree on every axis longer than 1."""
    return all(n == 1 or sp == sq for n, sp, sq in zip(p.shape, p.strides, q.strides, strict=True))


@given(data=st.data(), dtype=st.sampled_from(["float32", "float64", "int32"]))
def test_bound_replays_match_plain_calls_on_any_layout(data, dtype):
    x = data.draw(strided_arrays(dtype, max_dims=3))
    y = data.draw(strided_arrays(dtype, shape=x.shape))
    out = np.empty(x.shape, dtype)
    call = ctensor.bind(ops.subtract, x, y, out=out)
    expected = ops.subtract(x, y)
    out[...] = 0
    call()
    np.testing.assert_array_equal(out, expected)
    x2, y2 = x.copy(), y.copy()  # compact copies: a different layout unless x was compact
    if _same_layout(x, x2) and _same_layout(y, y2):
        call(x2, y2)
        np.testing.assert_array_equal(out, expected)
    else:
        with pytest.raises(ctensor.ShapeMismatchError):
            call(x2, y2)


def test_bound_call_from_many_threads():
    from concurrent.futures import ThreadPoolExecutor

    a = np.arange(1000, dtype=np.float64)
    calls = [ctensor.bind(ops.multiply, a, a, out=np.empty_like(a)) for _ in range(8)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda c: [c() for _ in range(50)][-1], calls))
    for result in results:
        assert_close(result, a * a)


def test_backend_names_the_kernel_provider():
    a = np.arange(4, dtype=np.float32)
    out = np.empty(4, np.float32)
    call = ctensor.bind(ops.add, a, a, out=out, backend="cpu")
    assert call() is out
    assert_close(out, np.arange(4) * 2.0)
    with pytest.raises(ctensor.CTensorError):
        ctensor.bind(ops.add, a, a, out=np.empty(4, np.float32), backend="no-such-backend")
    with pytest.raises(ctensor.InvalidArgumentError, match="backend"):
        ctensor.bind(ops.add, a, a, out=out, backend=3)


def test_replay_takes_the_python_path_for_what_c_does_not_read():
    a = np.arange(4, dtype=np.float32)
    out = np.empty(4, np.float32)
    call = ctensor.bind(ops.add, a, a, out=out)

    class Sub(np.ndarray):
        pass

    assert call(a.view(Sub), a) is out  # a subclass: read through DLPack by the Python path
    assert_close(out, np.arange(4) * 2.0)
    read_only = np.zeros(4, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ctensor.ReadOnlyOutputError):
        call(out=read_only)
    np.testing.assert_array_equal(read_only, np.zeros(4))
    t = torch.zeros(4)
    assert call(out=t) is t  # torch tensors of the same layout are fine too
    assert_close(t, np.arange(4) * 2.0)


def test_a_replay_is_a_c_plan_and_reports_run_time_errors():
    x = np.arange(5.0)
    index = np.array([0, 1])
    out = np.full(2, -1.0)
    call = ctensor.bind(ops.take, x, index, out=out)
    assert isinstance(call, ctensor._native.Replay)  # replayed by C, not by Python code
    assert call() is out
    np.testing.assert_array_equal(out, [0.0, 1.0])
    index[1] = 99  # the kernel finds this at run time, on every replay
    with pytest.raises(ctensor.InvalidArgumentError, match="99 is out of range"):
        call()
    assert call.run() == ctensor.lib.CT_ERROR_INVALID_ARGUMENT
    index[1] = -1
    assert call() is out
    np.testing.assert_array_equal(out, [0.0, 4.0])


def test_the_plan_owns_its_attributes_and_shapes():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    axis = [0]
    out = np.empty(4, np.float32)
    call = ctensor.bind(ops.sum, x, axis=axis, out=out)
    axis[0] = 1  # the caller's list is read once, at bind time
    x += 1
    assert call() is out
    assert_close(out, x.sum(axis=0))


def test_large_bound_calls_run_beside_other_threads():
    import threading

    a = np.ones((512, 512), np.float32)
    out = np.empty_like(a)
    call = ctensor.bind(ops.matmul, a, a, out=out)
    results = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                ctensor.bind(ops.matmul, a, a, out=np.empty_like(a))().sum()
            )
        )
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for _ in range(3):
        call()
    for t in threads:
        t.join()
    assert_close(out, np.full((512, 512), 512.0))
    assert results == [512.0 * 512 * 512] * 2


def test_a_bound_call_is_collected_with_its_plan():
    import gc
    import weakref

    a = np.arange(4, dtype=np.float32)
    call = ctensor.bind(ops.add, a, a, out=np.empty(4, np.float32))
    ref = weakref.ref(call)
    call._keep.append(call)  # a reference cycle through the plan's owner
    del call
    gc.collect()
    assert ref() is None
