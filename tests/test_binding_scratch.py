"""The host scratch cache of the Python binding (ctensor/_scratch.py): each thread reuses its
last workspace while no view of it is alive, and never shares one between threads or between
a call and a call nested in it."""

from __future__ import annotations

import threading

import numpy as np
import torch

from ctensor import _scratch, ops


def _base(view: np.ndarray) -> int:
    return view.__array_interface__["data"][0]


def test_a_free_buffer_is_reused():
    first = _scratch.host_scratch(1 << 20)
    address = _base(first)
    del first
    again = _scratch.host_scratch(1 << 19)
    assert _base(again) == address
    assert again.nbytes == 1 << 19


def test_a_buffer_in_use_is_not_handed_out_again():
    held = _scratch.host_scratch(1 << 20)
    other = _scratch.host_scratch(1 << 20)
    assert _base(other) != _base(held)
    held[:] = 1
    other[:] = 2
    assert (held == 1).all()


def test_a_buffer_held_through_a_torch_tensor_stays_in_use():
    """torch's CPU scratch is torch.from_numpy of the lent view, which keeps the view alive."""
    held = torch.from_numpy(_scratch.host_scratch(1 << 20))
    other = _scratch.host_scratch(1 << 20)
    assert _base(other) != held.data_ptr()
    held.fill_(1)
    other[:] = 2
    assert bool((held == 1).all())


def test_a_larger_request_replaces_the_kept_buffer():
    small = _scratch.host_scratch(4096)
    del small
    large = _scratch.host_scratch(1 << 21)
    address = _base(large)
    del large
    assert _base(_scratch.host_scratch(1 << 21)) == address


def test_buffers_above_the_limit_are_not_kept():
    kept = _scratch.host_scratch(4096)
    address = _base(kept)
    del kept
    big = _scratch.host_scratch(_scratch.KEEP_LIMIT + 1)
    del big
    assert _base(_scratch.host_scratch(4096)) == address


def test_threads_get_their_own_buffers():
    addresses = []

    def grab():
        view = _scratch.host_scratch(1 << 20)
        addresses.append(_base(view))
        barrier.wait()  # both alive at once

    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=grab) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(addresses)) == 2


def test_workspace_ops_give_right_answers_on_reused_scratch():
    """Sorts of different sizes and dtypes, NumPy and torch, one after another in one thread
    (each reusing or growing the scratch of the one before)."""
    rng = np.random.default_rng(0)
    for n in (300_000, 1 << 20, 5000, 1 << 19):
        for dtype in (np.float32, np.float64, np.int32):
            x = (rng.standard_normal(n) * 1000).astype(dtype)
            np.testing.assert_array_equal(ops.sort(x), np.sort(x))
            t = torch.from_numpy(x)
            assert torch.equal(ops.sort(t), torch.sort(t).values)


def test_concurrent_sorts_in_threads_do_not_share_scratch():
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(400_000).astype(np.float32) for _ in range(4)]
    results = [None] * 4

    def work(k):
        for _ in range(3):
            results[k] = ops.sort(inputs[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, r in zip(inputs, results, strict=True):
        np.testing.assert_array_equal(r, np.sort(x))
