"""ctensor.profile(): runs recorded through the C ABI's profiling hooks (names, shapes, dtypes,
backend, device, threads), Chrome trace output, nesting and restoring, uninstalling; and
ctensor.ops calls named under torch.profiler."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
import torch

import ctensor
from ctensor._lib import ffi, lib


def installed_profiler() -> tuple:
    """(user_data, begin, end) of the profiler installed in libctensor, as integers."""
    p = ffi.new("ct_profiler*")
    p.struct_size = ffi.sizeof("ct_profiler")
    assert lib.ct_get_profiler(p) == lib.CT_OK
    return tuple(int(ffi.cast("uintptr_t", x)) for x in (p.user_data, p.begin, p.end))


NOTHING = (0, 0, 0)


@pytest.fixture(autouse=True)
def no_profiler_left() -> None:
    assert installed_profiler() == NOTHING
    yield
    assert installed_profiler() == NOTHING


def test_events_name_shapes_dtypes_backend() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones(3, dtype=np.float32)
    i = np.array([2, 0], dtype=np.int64)
    out = np.empty((2, 3), dtype=np.float32)
    with ctensor.profile() as prof:
        ctensor.ops.add(a, b)  # FastOp, new output
        ctensor.ops.add(a, b, out=out)  # FastOp, out=
        ctensor.ops.matmul(a, a.T.astype(np.float64))  # general path: a cast first
        ctensor.ops.sum(a, axis=1)  # attributes
        ctensor.ops.take(a, i, axis=1)
    names = [e["name"] for e in prof.events]
    assert names == ["add", "add", "astype", "matmul", "sum", "take"], names
    by_name = {e["name"]: e for e in prof.events}
    assert by_name["add"]["shapes"] == [(2, 3), (3,)]
    assert by_name["add"]["dtypes"] == ["float32", "float32"]
    assert by_name["matmul"]["shapes"] == [(2, 3), (3, 2)]
    assert by_name["matmul"]["dtypes"] == ["float64", "float64"]
    assert by_name["sum"]["shapes"] == [(2, 3)]
    assert by_name["take"]["dtypes"] == ["float32", "int64"]
    for e in prof.events:
        assert e["backend"] == "cpu" and e["device"] == "cpu:0"
        assert e["source"] in ("op_run", "plan_run")
        assert e["status"] == 0
        assert 0 < e["begin_ns"] <= e["end_ns"]
        assert e["thread_id"] == threading.get_native_id()
    ids = [e["call_id"] for e in prof.events]
    assert len(set(ids)) == len(ids) and all(x > 0 for x in ids)
    np.testing.assert_array_equal(out, a + b)  # the profiled runs computed


def test_bound_calls_report_plan_runs() -> None:
    a = np.ones(4, dtype=np.float32)
    out = np.empty(4, dtype=np.float32)
    bound = ctensor.bind(ctensor.ops.multiply, a, a, out=out)
    with ctensor.profile() as prof:
        bound()
        bound()
    assert [(e["name"], e["source"]) for e in prof.events] == [("multiply", "plan_run")] * 2


def test_zero_dim_and_optional_inputs() -> None:
    x = np.float64(2.0)
    scalar = np.asarray(x)
    with ctensor.profile() as prof:
        ctensor.ops.exp(scalar)
        ctensor.ops.clip(np.arange(4.0), None, np.asarray(2.0))
    exp, clip = prof.events
    assert exp["shapes"] == [()] and exp["dtypes"] == ["float64"]
    assert clip["name"] == "clip"
    assert clip["shapes"][1] is None and clip["dtypes"][1] is None  # absent optional input
    assert clip["shapes"][2] == ()


def test_failing_kernel_is_recorded_with_its_status() -> None:
    a = np.arange(3, dtype=np.float32)
    with ctensor.profile() as prof:
        with pytest.raises(ctensor.InvalidArgumentError, match="out of range"):
            ctensor.ops.take(a, np.array([7], dtype=np.int64))
        with pytest.raises(ctensor.ShapeMismatchError):
            ctensor.ops.add(a, np.ones(4, dtype=np.float32))  # fails its checks: no run
    # The fast path's failed run is run again by the Python path, which raises: both are runs.
    assert {(e["name"], e["status"]) for e in prof.events} == {
        ("take", lib.CT_ERROR_INVALID_ARGUMENT)
    }


def test_chrome_trace_file(tmp_path) -> None:
    path = tmp_path / "trace.json"
    a = np.ones((4, 5), dtype=np.float32)
    with ctensor.profile(path) as prof:
        ctensor.ops.relu(a)
        ctensor.ops.sum(a, axis=0)
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    assert trace == json.loads(json.dumps(prof.chrome_trace()))
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in complete] == ["relu", "sum"]
    for event, record in zip(complete, prof.events, strict=True):
        assert set(event) >= {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}
        assert event["ts"] == record["begin_ns"] / 1000
        assert event["dur"] == (record["end_ns"] - record["begin_ns"]) / 1000 >= 0
        assert isinstance(event["pid"], int) and event["tid"] == record["thread_id"]
        assert event["args"]["backend"] == "cpu" and event["args"]["device"] == "cpu:0"
        assert event["args"]["dtypes"] == ["float32"]
    assert complete[0]["args"]["shapes"] == [[4, 5]]
    metadata = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert metadata and metadata[0]["args"]["name"] == "ctensor"


def test_no_events_outside_a_profile() -> None:
    a = np.ones(3, dtype=np.float32)
    with ctensor.profile() as prof:
        ctensor.ops.negative(a)
    assert installed_profiler() == NOTHING  # uninstalled on exit
    ctensor.ops.negative(a)
    ctensor.ops.add(a, a)
    assert [e["name"] for e in prof.events] == ["negative"]
    with ctensor.profile() as later:
        ctensor.ops.abs(a)
    assert [e["name"] for e in later.events] == ["abs"]
    assert [e["name"] for e in prof.events] == ["negative"]


def test_nested_profiles() -> None:
    a = np.ones(3, dtype=np.float32)
    with ctensor.profile() as outer:
        ctensor.ops.negative(a)
        installed = installed_profiler()
        with ctensor.profile() as inner:
            ctensor.ops.abs(a)
            assert installed_profiler() == installed  # one C profiler for both
        ctensor.ops.exp(a)
        assert installed_profiler() == installed
    assert [e["name"] for e in outer.events] == ["negative", "abs", "exp"]
    assert [e["name"] for e in inner.events] == ["abs"]
    assert outer.events[1] == inner.events[0]


def test_an_active_profile_cannot_be_entered_again() -> None:
    prof = ctensor.profile()
    with prof, pytest.raises(RuntimeError, match="already active"):
        prof.__enter__()
    with prof:  # once ended, it may record again
        ctensor.ops.abs(np.ones(2))
    assert [e["name"] for e in prof.events] == ["abs"]


def test_a_c_profiler_installed_before_is_restored() -> None:
    seen = []

    @ffi.callback("void(void*, const ct_profile_event*)")
    def begin(user_data, event):  # noqa: ANN001
        seen.append(ffi.string(event.op_name).decode())

    theirs = ffi.new("ct_profiler*")
    theirs.struct_size = ffi.sizeof("ct_profiler")
    theirs.begin = begin
    assert lib.ct_set_profiler(theirs) == lib.CT_OK
    try:
        before = installed_profiler()
        a = np.ones(2)
        ctensor.ops.abs(a)
        with ctensor.profile() as prof:
            ctensor.ops.exp(a)
        assert installed_profiler() == before
        ctensor.ops.negative(a)
    finally:
        assert lib.ct_set_profiler(ffi.NULL) == lib.CT_OK
    assert seen == ["abs", "negative"]
    assert [e["name"] for e in prof.events] == ["exp"]


def test_threads_every_begin_has_an_end() -> None:
    n_threads, n_calls = 4, 50
    barrier = threading.Barrier(n_threads)
    ops = [ctensor.ops.add, ctensor.ops.multiply, ctensor.ops.subtract, ctensor.ops.maximum]
    errors = []

    def work(k: int) -> None:
        try:
            a = np.full((3, 4), k, dtype=np.float32)
            barrier.wait()
            for _ in range(n_calls):
                ops[k](a, a)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with ctensor.profile() as prof:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    events = prof.events
    assert len(events) == n_threads * n_calls
    assert all(e["status"] == 0 and e["begin_ns"] <= e["end_ns"] for e in events)
    assert len({e["call_id"] for e in events}) == len(events)
    tids_by_op = {}
    for e in events:
        tids_by_op.setdefault(e["name"], set()).add(e["thread_id"])
    assert sorted(tids_by_op) == sorted(op.__name__ for op in ops)
    assert all(len(tids) == 1 for tids in tids_by_op.values())  # each op on its own thread
    assert len(set.union(*tids_by_op.values())) == n_threads  # distinct thread ids
    trace = prof.chrome_trace()
    assert {e["tid"] for e in trace["traceEvents"] if e["ph"] == "X"} == set.union(
        *tids_by_op.values()
    )


def test_profiles_on_overlapping_threads() -> None:
    """Profiles entered and left on several threads at once: each records its own thread's runs,
    and the last one out uninstalls."""
    n_threads = 3
    barrier = threading.Barrier(n_threads)
    results: dict[int, list] = {}
    errors = []

    def work(k: int) -> None:
        try:
            a = np.full(5, k, dtype=np.float64)
            for _ in range(5):
                barrier.wait()
                with ctensor.profile() as prof:
                    ctensor.ops.exp(a)
                    ctensor.ops.sqrt(a)
                mine = [e for e in prof.events if e["thread_id"] == threading.get_native_id()]
                results.setdefault(k, []).append([e["name"] for e in mine])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {k: [["exp", "sqrt"]] * 5 for k in range(n_threads)}


def test_torch_tensors_and_torch_profiler() -> None:
    a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    b = torch.ones(3)
    out = torch.empty(2, 3)
    ctensor.ops.add(a, b)  # the first torch call configures the fast path
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as tprof, ctensor.profile() as prof:
        ctensor.ops.add(a, b)  # FastOp declines under the torch profiler
        ctensor.ops.add(a, b, out=out)
        ctensor.ops.relu(a)
        ctensor.ops.sum(a, axis=1)
    keys = {e.key: e.count for e in tprof.key_averages()}
    assert keys.get("ctensor::add") == 2, keys
    assert keys.get("ctensor::relu") == 1 and keys.get("ctensor::sum") == 1, keys
    assert [e["name"] for e in prof.events] == ["add", "add", "relu", "sum"]
    assert prof.events[0]["shapes"] == [(2, 3), (3,)]
    torch.testing.assert_close(out, a + b)
    # Off again: calls are not named and the fast path runs them.
    assert not torch.autograd.profiler._is_profiler_enabled
    torch.testing.assert_close(ctensor.ops.add(a, b), a + b)


def test_torch_profiler_names_calls_on_numpy_arrays_too() -> None:
    """Under torch.profiler, calls the Python path runs are named whatever the arrays."""
    a = np.ones((2, 2))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tprof:
        ctensor.ops.sum(a, axis=0)
    assert "ctensor::sum" in {e.key for e in tprof.key_averages()}


def test_torch_ops_ctensor_forward_and_backward_under_both_profilers() -> None:
    import ctensor.torch  # noqa: F401 - registers torch.ops.ctensor

    x = torch.randn(1, 2, 5, 5, requires_grad=True)
    w = torch.randn(3, 2, 3, 3, requires_grad=True)
    torch.ops.ctensor.conv2d(x, w, padding=[1])
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as tprof, ctensor.profile() as prof:
        y = torch.ops.ctensor.conv2d(x, w, padding=[1])
        torch.ops.ctensor.relu(y).sum().backward()
    counts = {e.key: e.count for e in tprof.key_averages() if e.key.startswith("ctensor::")}
    # Each op once: the Python path's record_function inside the dispatcher's own record of
    # the same name is not counted twice.
    assert counts == {
        "ctensor::conv2d": 1,
        "ctensor::relu": 1,
        "ctensor::relu_backward": 1,
        "ctensor::conv2d_backward_input": 1,
        "ctensor::conv2d_backward_weight": 1,
    }, counts
    assert [e["name"] for e in prof.events] == [
        "conv2d",
        "relu",
        "relu_backward",
        "conv2d_backward_input",
        "conv2d_backward_weight",
    ]
    assert prof.events[0]["shapes"] == [(1, 2, 5, 5), (3, 2, 3, 3), None]
