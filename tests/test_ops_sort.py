"""Sorting and selection (sort, argsort, argpartition, topk, searchsorted) on every dtype their
CPU kernels declare, against NumPy exactly: ascending is np.argsort(kind="stable") (nan last,
-0.0 == 0.0); descending is the stable order of decreasing value with nan first
(torch.sort(stable=True));
topk is the first k of that order (largest=False: of the ascending order); argpartition is checked
by the partition property (and against np.argpartition for distinct values), and gives the stable
ascending order it documents; searchsorted is np.searchsorted. bfloat16 goes through
PyTorch. Layouts come from arrays.strided_arrays (sliced, reversed, transposed, broadcast)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import ALL_NUMPY, FLOAT_NUMPY, kernel_dtypes, strided_arrays, strided_bfloat16
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor
from ctensor import ops

ALL_CT = ALL_NUMPY + ["bfloat16"]
EXAMPLES = settings(max_examples=25, deadline=None)


def elements(dtype: str):
    """Values of `dtype` with repeats, both zeros, NaN and infinities drawn often."""
    if dtype == "bfloat16":
        dtype = "float32"
    base = hnp.from_dtype(np.dtype(dtype), allow_subnormal=False)
    if dtype in FLOAT_NUMPY:
        return st.one_of(st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0]), base)
    if dtype == "bool":
        return base
    return st.one_of(st.sampled_from([0, 1]), base)


def draw_array(data, dtype: str, min_dims=1, **kwargs):
    if dtype == "bfloat16":
        return data.draw(strided_bfloat16(min_dims=min_dims, elements=elements(dtype), **kwargs))
    return data.draw(strided_arrays(dtype, min_dims=min_dims, elements=elements(dtype), **kwargs))


def as_numpy(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.float().numpy() if a.dtype == torch.bfloat16 else a.numpy()
    return np.asarray(a)


def reference_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    xm = np.moveaxis(x, axis, -1)
    if descending:
        rank = np.unique(xm.ravel(), return_inverse=True, equal_nan=True)[1].reshape(xm.shape)
        order = np.argsort(-rank, axis=-1, kind="stable")
    else:
        order = np.argsort(xm, axis=-1, kind="stable")
    return np.moveaxis(order, -1, axis)


def assert_exact(actual, expected: np.ndarray, dtype: str) -> None:
    assert str(actual.dtype).replace("torch.", "") == dtype, (actual.dtype, dtype)
    a = as_numpy(actual)
    assert a.shape == expected.shape, (a.shape, expected.shape)
    np.testing.assert_array_equal(a, expected)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(expected))  # -0.0 kept


def test_declared_dtypes():
    for op in ["sort", "argsort", "argpartition", "topk", "searchsorted"]:
        assert sorted(kernel_dtypes(op)) == sorted(ALL_CT), op


@pytest.mark.parametrize("dtype", ALL_CT)
@pytest.mark.parametrize("descending", [False, True])
@EXAMPLES
@given(data=st.data())
def test_sort_argsort(dtype, descending, data):
    x = draw_array(data, dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    ref = as_numpy(x)
    order = reference_argsort(ref, axis, descending)
    assert_exact(ops.argsort(x, axis=axis, descending=descending), order, "int64")
    expected = np.take_along_axis(ref, order, axis=axis)
    assert_exact(ops.sort(x, axis=axis, descending=descending, stable=False), expected, dtype)


@pytest.mark.parametrize("dtype", ALL_CT)
@pytest.mark.parametrize("largest", [False, True])
@EXAMPLES
@given(data=st.data())
def test_topk(dtype, largest, data):
    x = draw_array(data, dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    k = data.draw(st.integers(0, x.shape[axis]))
    ref = as_numpy(x)
    order = np.take(reference_argsort(ref, axis, largest), np.arange(k), axis=axis)
    values, indices = ops.topk(x, k=k, axis=axis, largest=largest)
    assert_exact(indices, order, "int64")
    assert_exact(values, np.take_along_axis(ref, order, axis=axis), dtype)


def test_topk_matches_torch():
    t = torch.tensor([[1.0, 3.0, 3.0, float("nan"), -2.0], [0.0, -0.0, 5.0, 5.0, 1.0]])
    for largest in (True, False):
        values, indices = ops.topk(t, k=3, largest=largest)
        ref = torch.topk(t, 3, largest=largest, sorted=True)
        torch.testing.assert_close(values, ref.values, equal_nan=True)
        expected = [[3, 1, 2], [2, 3, 4]] if largest else [[4, 0, 1], [0, 1, 4]]
        assert indices.tolist() == expected


@pytest.mark.parametrize("dtype", ALL_CT)
@pytest.mark.parametrize("side", ["left", "right"])
@EXAMPLES
@given(data=st.data())
def test_searchsorted(dtype, side, data):
    n = data.draw(st.integers(0, 12))
    x1 = draw_array(data, dtype, shape=(n,))
    x1_ref = np.sort(as_numpy(x1))  # numpy's order: nan last
    x1 = torch.from_numpy(x1_ref).to(torch.bfloat16) if dtype == "bfloat16" else x1_ref
    x2 = draw_array(data, dtype, min_dims=0)
    expected = np.searchsorted(x1_ref, as_numpy(x2), side=side)
    assert_exact(ops.searchsorted(x1, x2, side=side), np.asarray(expected), "int64")


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float16", "float32", "int64", "float64"])
@pytest.mark.parametrize("axis", [0, -1])
def test_large_parallel(dtype, axis):
    """Many lanes and long lanes (several radix passes, several threads)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((600, 300)) * 1000).astype(dtype)
    if dtype.startswith("float"):
        x[rng.random(x.shape) < 0.01] = np.nan
    for descending in (False, True):
        order = reference_argsort(x, axis, descending)
        np.testing.assert_array_equal(ops.argsort(x, axis=axis, descending=descending), order)
    bound = 2**40 if dtype in ("int64", "float64") else 60000
    long = rng.integers(-bound, bound, 200_000).astype(dtype)
    np.testing.assert_array_equal(ops.sort(long), np.sort(long))
    values, indices = ops.topk(long, k=50)
    np.testing.assert_array_equal(indices, reference_argsort(long, 0, True)[:50])


def dense_rank(x: np.ndarray) -> np.ndarray:
    """Each element's rank among the distinct values of x (nan last, -0.0 == 0.0)."""
    return np.unique(x.ravel(), return_inverse=True, equal_nan=True)[1].reshape(x.shape)


def assert_partition(x: np.ndarray, indices: np.ndarray, kth: list[int], axis: int) -> None:
    """indices partition x along axis at every kth as numpy.argpartition's contract: a
    permutation of each lane; the element at k is the sorted one; none before it is larger,
    none after it smaller (nan counts as the largest)."""
    n = x.shape[axis]
    lanes = np.moveaxis(indices, axis, -1)
    np.testing.assert_array_equal(
        np.sort(lanes, axis=-1), np.broadcast_to(np.arange(n), lanes.shape)
    )
    rank = np.moveaxis(np.take_along_axis(dense_rank(x), indices, axis), axis, -1)
    sorted_rank = np.sort(np.moveaxis(dense_rank(x), axis, -1), axis=-1)
    for k in kth:
        k = k % n
        np.testing.assert_array_equal(rank[..., k], sorted_rank[..., k])
        assert (rank[..., :k] <= rank[..., k : k + 1]).all()
        assert (rank[..., k + 1 :] >= rank[..., k : k + 1]).all()


@pytest.mark.parametrize("dtype", ALL_CT)
@EXAMPLES
@given(data=st.data())
def test_argpartition(dtype, data):
    x = draw_array(data, dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    if n == 0:
        with pytest.raises(ValueError):
            ops.argpartition(x, kth=0, axis=axis)
        return
    kth = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3))
    got = as_numpy(ops.argpartition(x, kth=kth if len(kth) > 1 else kth[0], axis=axis))
    assert got.dtype == np.int64 and got.shape == x.shape
    ref = as_numpy(x)
    assert_partition(ref, got, kth, axis)
    # numpy's own result satisfies the same check, and the documented one is the stable order
    assert_partition(ref, np.argpartition(ref, kth, axis=axis), kth, axis)
    np.testing.assert_array_equal(got, reference_argsort(ref, axis, False))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_argpartition_distinct_values_match_numpy(data):
    """Distinct values: the element at kth and the set of indices on each side are
    np.argpartition's, nan (at most one, so still distinct) last."""
    n = data.draw(st.integers(1, 40))
    x = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).permutation(n).astype(float)
    if data.draw(st.booleans()):
        x[data.draw(st.integers(0, n - 1))] = np.nan
    k = data.draw(st.integers(-n, n - 1))
    got = ops.argpartition(x, kth=k)
    want = np.argpartition(x, k)
    k %= n
    assert got[k] == want[k]
    assert set(got[:k].tolist()) == set(want[:k].tolist())
    assert set(got[k + 1 :].tolist()) == set(want[k + 1 :].tolist())


def test_argpartition_matches_torch_topk_smallest():
    """The first k of an argpartition at k - 1 are torch.topk(largest=False)'s k indices."""
    t = torch.tensor([[4.0, 1.0, float("nan"), 3.0, 0.5, 2.0], [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]])
    idx = ops.argpartition(t.numpy(), kth=2, axis=1)
    ref = torch.topk(t, 3, largest=False, sorted=True).indices
    for row in range(2):
        assert set(idx[row, :3].tolist()) == set(ref[row].tolist())


def test_argpartition_errors():
    x = np.arange(6.0).reshape(2, 3)
    for bad in (3, -4, [0, 3]):
        with pytest.raises(ValueError, match="kth"):
            ops.argpartition(x, kth=bad)
    with pytest.raises(ValueError):
        ops.argpartition(np.float64(1.0), kth=0)
    with pytest.raises(ValueError):
        ops.argpartition(x, kth=0, axis=2)
    with pytest.raises((ValueError, TypeError)):
        ops.argpartition(x)


def test_errors():
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError):
        ops.sort(np.float64(1.0))
    with pytest.raises(ValueError):
        ops.argsort(x, axis=2)
    with pytest.raises(ValueError):
        ops.topk(x, k=4)
    with pytest.raises(ValueError):
        ops.topk(x, k=-1)
    with pytest.raises((ValueError, TypeError)):
        ops.topk(x)
    with pytest.raises(ValueError):
        ops.searchsorted(x, x)
    with pytest.raises(ValueError):
        ops.searchsorted(x[0], x, side="middle")
    with pytest.raises(ctensor.CTensorError):
        ops.sort(x, axis=-3)


# ----- long lanes: the bucket sort (values only, 4- and 8-byte dtypes, lanes >= 2^18) and the
# one-pass topk (lanes >= 16384, k <= n / 64); each must give exactly the stable order. -----

LONG_DTYPES = ["float32", "float64", "int32", "int64", "uint32", "uint64"]


def long_pattern(kind: str, n: int, dtype: str, rng) -> np.ndarray:
    """A lane of n values of dtype shaped to reach one branch of the long-lane paths."""
    floating = dtype.startswith("float")
    if kind == "normal":
        x = rng.standard_normal(n) * (1.0 if floating else 1e6)
    elif kind == "equal":  # every key alike: no bucket pass at all
        x = np.full(n, 3.0)
    elif kind == "sorted":
        x = np.sort(rng.standard_normal(n) * 1e5)
    elif kind == "reversed":
        x = np.sort(rng.standard_normal(n) * 1e5)[::-1]
    elif kind == "duplicates":  # few distinct keys: buckets of one digit each
        x = rng.integers(0, 5, n).astype(np.float64)
    elif kind == "one_digit":  # all keys in one top digit: the split moves to lower bits
        x = 1.0 + rng.random(n) * 2.0**-12 if floating else 2**20 + rng.integers(0, 1000, n)
    elif kind == "heavy":  # one value makes up most of the lane: a bucket larger than the rest
        x = np.where(rng.random(n) < 0.9, 7.0, rng.standard_normal(n) * 1e3)
    elif kind == "wide":  # the whole range of the dtype
        info = np.iinfo(dtype) if not floating else None
        if floating:
            x = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
        else:
            return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    else:
        raise AssertionError(kind)
    if not floating and dtype.startswith("uint"):
        x = np.abs(x)
    x = x.astype(dtype)
    if floating and kind in ("normal", "duplicates", "heavy"):
        x[rng.random(n) < 0.01] = np.nan
        x[rng.random(n) < 0.01] = 0.0
        x[rng.random(n) < 0.01] = -0.0
        x[rng.random(n) < 0.001] = np.inf
        x[rng.random(n) < 0.001] = -np.inf
    return x


def check_sort(x: np.ndarray, descending: bool, axis: int = -1) -> None:
    expected = np.take_along_axis(x, reference_argsort(x, axis, descending), axis=axis)
    assert_exact(
        ops.sort(x, axis=axis, descending=descending, stable=False), expected, str(x.dtype)
    )


@pytest.mark.parametrize("dtype", LONG_DTYPES)
@pytest.mark.parametrize(
    "kind", ["normal", "equal", "sorted", "reversed", "duplicates", "one_digit", "heavy", "wide"]
)
def test_sort_long_lane(dtype, kind):
    rng = np.random.default_rng(abs(hash((dtype, kind))) % 2**32)
    x = long_pattern(kind, 2**18 + 3, dtype, rng)
    for descending in (False, True):
        check_sort(x, descending)


@pytest.mark.parametrize("kind", ["normal", "duplicates", "one_digit", "heavy"])
def test_sort_long_lane_2_22(kind):
    x = long_pattern(kind, 2**22, "float32", np.random.default_rng(3))
    for descending in (False, True):
        check_sort(x, descending)


def test_sort_long_zeros_keep_their_order():
    """-0.0 and 0.0 are equal: they keep their input order; so do NaNs with payloads."""
    rng = np.random.default_rng(11)
    n = 2**18
    x = rng.standard_normal(n).astype(np.float32)
    x[rng.random(n) < 0.2] = 0.0
    x[rng.random(n) < 0.2] = -0.0
    payloads = (0x7FC00000 + rng.integers(0, 2**22, n)).astype(np.uint32).view(np.float32)
    nan_at = rng.random(n) < 0.05
    x[nan_at] = payloads[nan_at] * np.where(rng.random(n) < 0.5, -1, 1)[nan_at]
    for descending in (False, True):
        order = reference_argsort(x, 0, descending)
        got = ops.sort(x, descending=descending)
        np.testing.assert_array_equal(got.view(np.uint32), x[order].view(np.uint32))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_sort_long_lane_threads(threads):
    saved = ctensor.get_num_threads()
    ctensor.set_num_threads(threads)
    try:
        rng = np.random.default_rng(threads)
        for dtype in ("float32", "int64"):
            check_sort(long_pattern("normal", 2**18 + 17, dtype, rng), False)
    finally:
        ctensor.set_num_threads(saved)


def test_sort_long_strided_and_many_lanes():
    """Lanes that are not contiguous (the buckets go to the workspace, not the output), and
    several long lanes at once (one thread each)."""
    rng = np.random.default_rng(5)
    x = long_pattern("normal", 2**19, "float32", rng)
    check_sort(x[::2], False)
    check_sort(x[::-2], True)
    two = long_pattern("normal", 2**19, "float64", rng).reshape(2**18, 2)
    check_sort(two, False, axis=0)
    check_sort(np.ascontiguousarray(two.T), True, axis=1)
    out = np.empty_like(x)
    ops.sort(x, out=out)
    np.testing.assert_array_equal(out, np.sort(x))


def check_topk(x: np.ndarray, k: int, largest: bool, axis: int = -1) -> None:
    order = np.take(reference_argsort(x, axis, largest), np.arange(k), axis=axis)
    values, indices = ops.topk(x, k=k, axis=axis, largest=largest)
    assert_exact(indices, order, "int64")
    assert_exact(values, np.take_along_axis(x, order, axis=axis), str(x.dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "uint16", "float16"])
@pytest.mark.parametrize("kind", ["normal", "equal", "sorted", "reversed", "duplicates", "heavy"])
def test_topk_long_lane(dtype, kind):
    rng = np.random.default_rng(abs(hash((dtype, kind))) % 2**32)
    n = 50_000
    base = long_pattern(kind, n, "float64", rng)
    with np.errstate(invalid="ignore", over="ignore"):
        x = base.astype(dtype) if dtype.startswith("float") else np.nan_to_num(base).astype(dtype)
    for k in (1, 2, 100, n // 64, n // 64 + 1, n // 2 + 1, n):
        for largest in (True, False):
            check_topk(x, k, largest)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "uint16", "float16"])
@pytest.mark.parametrize(
    "n,k",
    [
        (32, 1),
        (64, 1),
        (64, 2),
        (1024, 1),
        (1024, 32),
        (1024, 33),
        (4096, 64),
        (4096, 65),
        (5000, 7),
    ],
)
def test_topk_short_lanes_small_k(dtype, n, k):
    """Lanes each on one thread, with k <= 64 and k <= n / 32: the k best kept in order (ties by
    index, nan largest); (1024, 33) and (4096, 65) sort the lane instead."""
    rng = np.random.default_rng(n + k)
    for kind in ("normal", "equal", "sorted", "reversed", "duplicates", "heavy", "many"):
        rows = 2**17 // n if kind == "many" else max(2, 4096 // n)  # parallel over lanes, or not
        pattern = "duplicates" if kind == "many" else kind
        base = np.stack([long_pattern(pattern, n, "float64", rng) for _ in range(rows)])
        with np.errstate(invalid="ignore", over="ignore"):
            x = (
                base.astype(dtype)
                if dtype.startswith("float")
                else np.nan_to_num(base).astype(dtype)
            )
        for largest in (True, False):
            check_topk(x, k, largest, axis=1)
            check_topk(np.ascontiguousarray(x.T), k, largest, axis=0)
    values = np.zeros((2, 3 * k), dtype)
    indices = np.zeros((2, 2 * k), np.int64)
    x = x[:2]
    ops.topk(x, k=k, axis=1, out=(values[:, ::3], indices[:, ::2]))
    order = reference_argsort(x, 1, True)[:, :k]
    np.testing.assert_array_equal(indices[:, ::2], order)
    np.testing.assert_array_equal(values[:, ::3], np.take_along_axis(x, order, axis=1))
    assert not values[:, 1::3].any() and not indices[:, 1::2].any()


def test_topk_long_ties_nan_and_threads():
    rng = np.random.default_rng(9)
    n = 2**17
    x = rng.integers(0, 3, n).astype(np.float32)  # ties everywhere: the lower index wins
    x[rng.random(n) < 0.001] = np.nan
    x[rng.random(n) < 0.3] = -0.0
    saved = ctensor.get_num_threads()
    try:
        for threads in (1, 2, 3):
            ctensor.set_num_threads(threads)
            for k in (1, 50, 500, n // 64):
                for largest in (True, False):
                    check_topk(x, k, largest)
    finally:
        ctensor.set_num_threads(saved)
    two = rng.standard_normal((3, 40_000)).astype(np.float32)
    check_topk(two, 7, True, axis=1)
    check_topk(np.ascontiguousarray(two.T), 7, False, axis=0)
    check_topk(two[:, ::-2], 9, True, axis=1)


# ----- the vector sort (sort_vector.c, AVX2) of 32- and 64-bit keys: sort (values only) of 4- and
# 8-byte dtypes on lanes shorter than the bucket sort's (64-bit: up to 8192), and argsort/topk of
# 32-bit keys on lanes up to 256 (each key above its index, one 64-bit key); a sorting network up
# to 256 keys, quicksort with vector partitions above. Lengths around every power of two the
# network pads to. -----

VECTOR_DTYPES = ["float32", "int32", "uint32", "float64", "int64", "uint64"]
VECTOR_LENGTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 255, 256, 257, 258]
VECTOR_LENGTHS += [300, 511, 512, 513, 1000, 4097, 8192, 8193, 70_001]


@pytest.mark.parametrize("dtype", VECTOR_DTYPES)
@pytest.mark.parametrize("n", VECTOR_LENGTHS)
def test_sort_vector_lengths(dtype, n):
    rng = np.random.default_rng(n)
    rows = max(1, 3000 // n)
    for kind in ("normal", "equal", "sorted", "reversed", "duplicates", "heavy", "wide"):
        x = np.stack([long_pattern(kind, n, dtype, rng) for _ in range(rows)])
        for descending in (False, True):
            check_sort(x, descending)
            if n <= 300:  # the paired keys of argsort and topk, ties in index order
                order = reference_argsort(x, 1, descending)
                np.testing.assert_array_equal(ops.argsort(x, axis=1, descending=descending), order)
                k = (n + 1) // 2
                values, indices = ops.topk(x, k=k, axis=1, largest=descending)
                np.testing.assert_array_equal(indices, order[:, :k])
                np.testing.assert_array_equal(values, np.take_along_axis(x, order[:, :k], axis=1))


@pytest.mark.parametrize("dtype", VECTOR_DTYPES)
def test_sort_vector_extremes_and_layouts(dtype):
    """The type's extreme keys (0 and all ones, where the network's padding sits), nan payloads
    and signed zeros in their input order, lanes along axis 0 and reversed, and a strided out."""
    rng = np.random.default_rng(5)
    n = 700
    if dtype.startswith("float"):
        x = rng.standard_normal((6, n)).astype(np.float32)
        x[rng.random(x.shape) < 0.2] = 0.0
        x[rng.random(x.shape) < 0.2] = -0.0
        x[rng.random(x.shape) < 0.05] = np.inf
        x[rng.random(x.shape) < 0.05] = -np.inf
        payloads = (0x7FC00000 + rng.integers(0, 2**22, x.shape)).astype(np.uint32)
        nan_at = rng.random(x.shape) < 0.1
        x[nan_at] = (
            payloads.view(np.float32)[nan_at] * np.where(rng.random(x.shape) < 0.5, -1, 1)[nan_at]
        )
        bits = np.uint32
    else:
        info = np.iinfo(dtype)
        extremes = np.array([info.min, info.max, info.min + 1, info.max - 1, 0, 1], dtype)
        x = rng.choice(extremes, (6, n))
        bits = np.dtype(dtype)
    if dtype == "float64":
        x = x.astype(np.float64)
        bits = np.uint64
    for descending in (False, True):
        for lanes, axis in ((x, 1), (np.ascontiguousarray(x.T), 0), (x[:, ::-1], 1)):
            order = reference_argsort(lanes, axis, descending)
            expected = np.take_along_axis(lanes, order, axis=axis)
            got = ops.sort(lanes, axis=axis, descending=descending)
            np.testing.assert_array_equal(got.view(bits), expected.view(bits))
        out = np.zeros((6, 2 * n), dtype)
        ops.sort(x, axis=1, descending=descending, out=out[:, ::2])
        expected = np.take_along_axis(x, reference_argsort(x, 1, descending), axis=1)
        np.testing.assert_array_equal(out[:, ::2].view(bits), expected.view(bits))
        assert not out[:, 1::2].any()  # the gaps of the strided out are left alone


def test_sort_vector_many_equal_keys():
    """Runs whose pivot is often the largest key (the pass that splits off equal keys), and
    keys all alike but for one."""
    rng = np.random.default_rng(9)
    for n in (257, 1024, 5000):
        x = np.full((4, n), 2.0, np.float32)
        x[0, rng.integers(0, n)] = 1.0
        x[1, rng.integers(0, n)] = 3.0
        x[2] = rng.integers(0, 2, n)
        x[3, : n // 2] = -0.0
        for descending in (False, True):
            check_sort(x, descending)


_LONG_ISA_SCRIPT = r"""
import sys
import numpy as np
from ctensor import ops

rng = np.random.default_rng(13)
results = {}
for dtype in ("float32", "float64", "int16", "uint8", "float16"):
    x = (rng.standard_normal(40_000) * 50).astype(dtype)
    if dtype.startswith("float"):
        x[rng.random(x.size) < 0.01] = np.nan
    results[f"in_topk_{dtype}"] = x
    for largest in (True, False):
        values, indices = ops.topk(x, k=100, largest=largest)
        results[f"topk_{dtype}_{largest}"] = indices
for dtype in ("float32", "float64", "int32", "uint64"):
    x = (rng.standard_normal(2**18 + 5) * 1e3).astype(dtype)
    if dtype.startswith("float"):
        x[rng.random(x.size) < 0.01] = np.nan
        x[rng.random(x.size) < 0.01] = -0.0
    results[f"in_sort_{dtype}"] = x
    results[f"sort_{dtype}"] = ops.sort(x, descending=True)
    results[f"sort_strided_{dtype}"] = ops.sort(x[::-3])
for dtype in ("float32", "int32"):
    x = (rng.standard_normal(3 * 700) * 1e3).astype(dtype)
    if dtype == "float32":
        x[rng.random(x.size) < 0.05] = np.nan
        x[rng.random(x.size) < 0.05] = -0.0
    results[f"in_rows_{dtype}"] = x
    results[f"rows_{dtype}"] = ops.sort(x.reshape(3, 700), axis=1, descending=True)
np.savez(sys.argv[1], **results)
"""


def _long_isa_expected(saved: dict) -> dict:
    """The stable orders of the inputs _LONG_ISA_SCRIPT saved (keys "in_topk_<dtype>" and
    "in_sort_<dtype>"), under the names of its results."""
    expected = {}
    for key, x in saved.items():
        if key.startswith("in_topk_"):
            dtype = key.removeprefix("in_topk_")
            for largest in (True, False):
                expected[f"topk_{dtype}_{largest}"] = reference_argsort(x, 0, largest)[:100]
        elif key.startswith("in_sort_"):
            dtype = key.removeprefix("in_sort_")
            expected[f"sort_{dtype}"] = x[reference_argsort(x, 0, True)]
            strided = x[::-3]
            expected[f"sort_strided_{dtype}"] = strided[reference_argsort(strided, 0, False)]
        elif key.startswith("in_rows_"):
            dtype = key.removeprefix("in_rows_")
            rows = x.reshape(3, 700)
            order = reference_argsort(rows, 1, True)
            expected[f"rows_{dtype}"] = np.take_along_axis(rows, order, axis=1)
    return expected


def test_every_isa_copy(tmp_path):
    """topk's threshold test, the bucket sort's key and value loops and the short lanes' sort
    (the vector sort from AVX2 on, (key, index) passes on the generic level) have a copy per
    instruction set: each gives the stable order."""
    from arrays import results_under_isa

    for isa in ("generic", "avx2", "avx512"):
        got = results_under_isa(_LONG_ISA_SCRIPT, tmp_path / f"{isa}.npz", isa)
        expected = _long_isa_expected(got)
        # 5 topk dtypes x 2 directions, 4 sort dtypes x 2 layouts, 2 dtypes of short rows
        assert len(expected) == 20
        assert {k for k in got if not k.startswith("in_")} == expected.keys()
        for key, value in expected.items():
            np.testing.assert_array_equal(got[key], value, err_msg=f"{isa}: {key}")
            if value.dtype.kind == "f":  # -0.0 where the stable order puts it
                np.testing.assert_array_equal(np.signbit(got[key]), np.signbit(value), key)
