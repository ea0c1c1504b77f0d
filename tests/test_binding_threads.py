"""Concurrency: cffi releases the GIL around C calls; eight Python threads calling ops at once
get the same results as serial calls, and each its own error messages."""

from __future__ import annotations

import threading

import numpy as np
import torch

import ctensor
from ctensor import ops

THREADS = 8
ROUNDS = 30


def _workload(seed: int):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((17, 33)).astype(np.float32)
    b = rng.standard_normal((33,)).astype(np.float32)
    m = rng.standard_normal((33, 9))
    i8 = rng.integers(-100, 100, (40,), dtype=np.int8)
    t = torch.from_numpy(rng.standard_normal((2, 3, 8, 8)))
    w = torch.from_numpy(rng.standard_normal((4, 3, 3, 3)))
    mask = rng.integers(0, 2, (17, 33)).astype(bool)
    return [
        lambda: ops.add(a, b),
        lambda: ops.multiply(a[:, ::-1], 2.5),
        lambda: ops.matmul(a.astype(np.float64), m),
        lambda: ops.sum(a, axis=1),
        lambda: ops.softmax(a, axis=0),
        lambda: ops.sqrt(i8.astype(np.uint8)),  # promotion: uint8 -> float16 through astype
        lambda: ops.add(i8, np.int16(3) * np.ones(40, np.int16)),
        lambda: ops.nonzero(mask),  # dynamic: allocator callback
        lambda: ops.boolean_mask(a, mask),
        lambda: ops.conv2d(t, w, padding=1).numpy(),  # workspace
    ]


def _as_list(result):
    if isinstance(result, tuple):
        return [np.asarray(r) for r in result]
    return [np.asarray(result)]


def test_eight_threads_match_serial_results():
    workloads = [_workload(seed) for seed in range(THREADS)]
    expected = [[_as_list(f()) for f in work] for work in workloads]
    failures: list[BaseException] = []
    mismatches: list[str] = []
    start = threading.Barrier(THREADS)

    def worker(index: int):
        try:
            start.wait()
            for _ in range(ROUNDS):
                for k, f in enumerate(workloads[index]):
                    got = _as_list(f())
                    want = expected[index][k]
                    if len(got) != len(want) or not all(
                        g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
                        for g, w in zip(got, want, strict=True)
                    ):
                        mismatches.append(f"thread {index} op {k}")
        except BaseException as e:  # noqa: BLE001
            failures.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]
    assert not mismatches, mismatches[:10]


def _mismatch_message(index: int) -> str:
    try:
        ops.add(np.ones(index + 2), np.ones(index + 20))
    except ctensor.ShapeMismatchError as e:
        return str(e)
    raise AssertionError("no error")


def test_each_thread_reads_its_own_error_message():
    expected = [_mismatch_message(i) for i in range(THREADS)]
    assert len(set(expected)) == THREADS  # every thread's message is distinct
    failures: list[str] = []
    start = threading.Barrier(THREADS)

    def worker(index: int):
        start.wait()
        left, right = np.ones(index + 2), np.ones(index + 20)
        for _ in range(200):
            try:
                ops.add(left, right)
            except ctensor.ShapeMismatchError as e:
                if str(e) != expected[index]:
                    failures.append(f"thread {index} got: {e}")
            else:
                failures.append(f"thread {index}: no error")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:5]


def test_threads_calling_with_raw_capsules_release_each_once():
    from ctensor.testing import CountedCapsule

    capsules = [[CountedCapsule(np.arange(10.0) + i) for _ in range(50)] for i in range(THREADS)]
    results: list = [None] * THREADS

    def worker(index: int):
        results[index] = [ops.negative(c.capsule) for c in capsules[index]]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(THREADS):
        assert all(c.deleter_calls == 1 for c in capsules[i])
        for r in results[i]:
            np.testing.assert_array_equal(r, -(np.arange(10.0) + i))
