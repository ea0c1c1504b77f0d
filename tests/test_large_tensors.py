"""64-bit indexing: representative ops on an int8 tensor of 2**31 + 17 elements (issue 3).

Element offsets and counts beyond 2**31 must not wrap anywhere: an element-wise op, a full
reduction, reductions along an axis (both layouts of a 2-D view), and nonzero. Values are
checked cheaply: the tensor repeats a 256-element block with a known sum, and nonzero runs on
a mostly-zero tensor (untouched zero pages cost no memory) with a few non-zeros placed around
the 2**31 boundary. Peak memory is about 4.5 GiB."""

from __future__ import annotations

import numpy as np
import pytest

import ctensor

N = 2**31 + 17  # = 5 * 429496733
BLOCK = (np.arange(256, dtype=np.int64) * 37 % 256 - 128).astype(np.int8)  # every int8, shuffled


@pytest.fixture(scope="module")
def big():
    x = np.empty(N, np.int8)
    full = N - N % 256
    x[:full].reshape(-1, 256)[:] = BLOCK
    x[full:] = BLOCK[: N % 256]
    yield x
    del x


def pattern_at(indices):
    return BLOCK[np.asarray(indices, dtype=np.int64) % 256]


PROBES = [0, 1, 255, 256, 2**31 - 1, 2**31, 2**31 + 1, 2**31 + 5, N - 2, N - 1]


def expected_sum(count, offset=0):
    """Sum of the pattern over [offset, offset + count), exactly, without touching the data."""
    start_block = -(-offset // 256) * 256
    head = BLOCK[np.arange(offset, min(start_block, offset + count)) % 256].astype(np.int64).sum()
    rest = offset + count - start_block
    if rest <= 0:
        return int(head)
    whole, tail = divmod(rest, 256)
    return int(head + whole * BLOCK.astype(np.int64).sum() + BLOCK[:tail].astype(np.int64).sum())


def test_elementwise_on_more_than_2_31_elements(big):
    y = ctensor.ops.negative(big)
    assert y.shape == (N,) and y.dtype == np.int8
    np.testing.assert_array_equal(y[PROBES], np.negative(pattern_at(PROBES)))
    np.testing.assert_array_equal(y[-300:], np.negative(big[-300:]))
    # -(-128) wraps to -128 in int8: it sits at every index divisible by 256
    assert BLOCK[0] == -128 and (BLOCK[1:] != -128).all()
    wrapped = -(-N // 256)
    assert int(ctensor.ops.sum(y)) == -expected_sum(N) - 256 * wrapped
    del y


def test_sum_over_everything(big):
    total = ctensor.ops.sum(big)
    assert total.dtype == np.int64
    assert int(total) == expected_sum(N)


def test_sum_along_an_axis(big):
    rows = big.reshape(5, N // 5)
    got = ctensor.ops.sum(rows, axis=1)
    assert got.dtype == np.int64 and got.shape == (5,)
    assert got.tolist() == [expected_sum(N // 5, k * (N // 5)) for k in range(5)]
    cols = big.reshape(N // 5, 5)
    got = ctensor.ops.sum(cols, axis=0)
    assert got.shape == (5,)
    assert int(got.sum()) == expected_sum(N)
    # column k holds elements k, k + 5, ...: 5 is coprime with 256, so over a multiple of 256
    # rows every column sees each block entry equally often
    prefix = (N // 5) - (N // 5) % 256
    part = ctensor.ops.sum(cols[:prefix], axis=0)
    assert part.tolist() == [prefix // 256 * int(BLOCK.astype(np.int64).sum())] * 5


def test_nonzero_beyond_2_31():
    z = np.zeros(N, np.int8)  # calloc'd: untouched pages cost nothing
    where = [0, 2**31 - 1, 2**31, 2**31 + 7, N - 1]
    z[where] = [1, -1, 2, 3, 4]
    (idx,) = ctensor.ops.nonzero(z)
    assert idx.dtype == np.int64
    assert idx.tolist() == where
