"""Data-dependent ops (nonzero, unique_values, boolean_mask) and permute_dims, on every dtype their
CPU kernels declare, against NumPy 2 exactly: np.nonzero, np.unique (sorted; one NaN, last;
-0.0 == 0.0), x[mask] and np.permute_dims. bfloat16 goes through PyTorch (torch in, torch out).

Layouts come from arrays.strided_arrays (sliced, reversed, transposed, broadcast, 0-d and
zero-size); large inputs cross the kernels' parallel grain so the chunked count/scan/fill paths
run on several threads."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import ALL_NUMPY, COMPLEX, FLOAT_NUMPY, assert_close, kernel_dtypes, strided_arrays
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor
from ctensor import ops

ALL_CT = ALL_NUMPY + ["bfloat16"]
DYNAMIC = [
    "nonzero",
    "unique_values",
    "boolean_mask",
    "permute_dims",
    "argwhere",
    "unique_counts",
    "unique_inverse",
    "unique_all",
]
EXAMPLES = settings(max_examples=30, deadline=None)


def special_elements(dtype: str):
    """Values of `dtype` with zeros (both signs), NaN and infinities drawn often."""
    base = hnp.from_dtype(np.dtype(dtype), allow_subnormal=False)
    if dtype in FLOAT_NUMPY:
        specials = st.sampled_from([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0])
        return st.one_of(specials, base)
    if dtype == "bool":
        return base
    return st.one_of(st.just(0), st.just(1), base)


def reference_unique(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values, one NaN last (np.unique; NumPy 2's unique_values is unsorted)."""
    return np.unique(np.asarray(x).ravel(), equal_nan=True)


def assert_same_values(actual, expected, dtype: str) -> None:
    """Exact comparison (NaN == NaN), dtype and shape included."""
    if isinstance(actual, torch.Tensor):
        assert str(actual.dtype).replace("torch.", "") == dtype
        actual = actual.float().numpy() if dtype == "bfloat16" else actual.numpy()
    else:
        assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected, strict=False)
    if dtype != "bfloat16":
        assert_close(actual, expected.astype(actual.dtype))


def reverse_dims(t: torch.Tensor) -> torch.Tensor:
    return t.permute(*reversed(range(t.dim())))


def torch_bfloat16(values, layout: str) -> torch.Tensor:
    """A bfloat16 tensor of float32 `values` with a layout torch can express."""
    t = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).to(torch.bfloat16)
    if layout == "transposed" and t.dim() > 1:
        t = reverse_dims(reverse_dims(t).contiguous())
    elif layout == "sliced" and t.dim() > 0:
        big = torch.zeros(tuple(2 * s for s in t.shape), dtype=torch.bfloat16)
        big[tuple(slice(None, None, 2) for _ in t.shape)] = t
        t = big[tuple(slice(None, None, 2) for _ in t.shape)]
    return t


# ------------------------------------------------------------------------------------------------
# Registry
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", DYNAMIC)
def test_every_dtype_is_declared(op):
    complex_too = COMPLEX if op == "permute_dims" else []  # a copy; nonzero etc. have none
    assert sorted(kernel_dtypes(op)) == sorted(ALL_CT + complex_too)


# ------------------------------------------------------------------------------------------------
# nonzero
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_NUMPY)
@EXAMPLES
@given(data=st.data())
def test_nonzero_matches_numpy(dtype, data):
    x = data.draw(strided_arrays(dtype, min_dims=1, elements=special_elements(dtype)))
    got = ops.nonzero(x)
    expected = np.nonzero(x)
    assert isinstance(got, tuple) and len(got) == x.ndim
    for g, e in zip(got, expected, strict=False):
        assert_same_values(g, e, "int64")


@pytest.mark.parametrize("dtype", FLOAT_NUMPY)
def test_nonzero_nan_counts_and_negative_zero_does_not(dtype):
    x = np.array([[0.0, -0.0, np.nan], [np.inf, -np.nan, 0.0]], dtype)
    got = ops.nonzero(x)
    assert [g.tolist() for g in got] == [[0, 1, 1], [2, 0, 1]]


def test_nonzero_zero_size():
    for shape in [(0,), (3, 0), (0, 4, 2)]:
        got = ops.nonzero(np.ones(shape, np.float32))
        assert len(got) == len(shape)
        for g in got:
            assert g.dtype == np.int64 and g.shape == (0,)
    got = ops.nonzero(np.zeros((4, 5), np.int16))
    assert [g.shape for g in got] == [(0,), (0,)]


def test_nonzero_0d_is_rejected():
    for x in (np.array(1.0), np.array(0, np.int8), torch.tensor(True)):
        with pytest.raises(ctensor.CTensorError) as info:
            ops.nonzero(x)
        assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("shape", [(1_000_003,), (513, 517), (7, 130, 150), (140_000, 1)])
@pytest.mark.parametrize("dtype", ["bool", "float32", "int64", "float16"])
def test_nonzero_large_parallel(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = (rng.random(shape) < 0.3).astype(dtype)
    if dtype.startswith("float"):
        x[rng.random(shape) < 0.01] = np.nan
    for view in (x, x[::-1], x.T):
        got = ops.nonzero(view)
        for g, e in zip(got, np.nonzero(view), strict=False):
            np.testing.assert_array_equal(g, e)


# ------------------------------------------------------------------------------------------------
# unique_values
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_NUMPY)
@EXAMPLES
@given(data=st.data())
def test_unique_values_matches_numpy(dtype, data):
    x = data.draw(strided_arrays(dtype, elements=special_elements(dtype)))
    got = ops.unique_values(x)
    assert got.ndim == 1
    assert_same_values(got, reference_unique(x), dtype)


@pytest.mark.parametrize("dtype", FLOAT_NUMPY)
def test_unique_values_one_nan_last_and_signed_zeros_merge(dtype):
    x = np.array([np.nan, 2.0, -0.0, -np.nan, 0.0, -np.inf, np.nan, -2.0, np.inf, 2.0], dtype)
    got = ops.unique_values(x)
    assert got.dtype == np.dtype(dtype)
    assert got[:-1].tolist() == [-np.inf, -2.0, 0.0, 2.0, np.inf]
    assert np.isnan(got[-1])


def test_unique_values_zero_size_and_0d():
    for dtype in ["bool", "int8", "int16", "int32", "float16", "float64"]:
        got = ops.unique_values(np.zeros((3, 0), dtype))
        assert got.shape == (0,) and got.dtype == np.dtype(dtype)
        got = ops.unique_values(np.array(7, dtype))
        np.testing.assert_array_equal(got, np.array([7], dtype))


@pytest.mark.parametrize("dtype", ["int16", "int64", "float32", "float64"])
def test_unique_values_broadcast_view_reads_each_element_once(dtype):
    # 3e8 elements as seen, 3 in memory: the kernel sorts only what a zero stride does not repeat
    x = np.broadcast_to(np.array([[3], [1], [3]], dtype), (3, 10**8))
    assert_same_values(ops.unique_values(x), np.array([1, 3], dtype), dtype)


@pytest.mark.parametrize(
    "dtype",
    [
        "int8",
        "uint8",
        "int16",
        "uint16",
        "float16",
        "int32",
        "uint32",
        "float32",
        "int64",
        "uint64",
        "float64",
        "bool",
    ],
)
def test_unique_values_large(dtype):
    rng = np.random.default_rng(3)
    n = 300_000
    if dtype == "bool":
        x = rng.random(n) < 0.5
    elif dtype.startswith("float"):
        x = (rng.standard_normal(n) * 1000).astype(dtype)
        x[rng.random(n) < 0.001] = np.nan
        x[:5] = [0.0, -0.0, np.inf, -np.inf, -np.nan]
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    for view in (x, x[::-3], x.reshape(600, 500).T):
        assert_same_values(ops.unique_values(view), reference_unique(view), dtype)
    # few distinct values, many repeats (radix levels where all keys share a byte)
    few = rng.integers(-3, 4, n).astype(dtype) if dtype != "bool" else x
    assert_same_values(ops.unique_values(few), reference_unique(few), dtype)


# ------------------------------------------------------------------------------------------------
# boolean_mask
# ------------------------------------------------------------------------------------------------


@st.composite
def array_and_mask(draw, dtype):
    x = draw(strided_arrays(dtype, elements=special_elements(dtype)))
    k = draw(st.integers(0, x.ndim))
    mask = draw(strided_arrays("bool", shape=x.shape[:k]))
    return x, mask


@pytest.mark.parametrize("dtype", ALL_NUMPY)
@EXAMPLES
@given(data=st.data())
def test_boolean_mask_matches_numpy(dtype, data):
    x, mask = data.draw(array_and_mask(dtype))
    got = ops.boolean_mask(x, mask)
    assert_same_values(got, x[mask], dtype)


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "uint64"])
def test_boolean_mask_0d_mask(dtype):
    for x in (np.arange(6, dtype=dtype).reshape(2, 3), np.array(5, dtype), np.zeros((0, 2), dtype)):
        for value in (True, False):
            mask = np.array(value)
            got = ops.boolean_mask(x, mask)
            assert got.shape == (int(value),) + x.shape
            assert_same_values(got, x[mask], dtype)


def test_boolean_mask_zero_size_rows():
    x = np.ones((3, 0, 2), np.float32)
    mask = np.array([True, False, True])
    got = ops.boolean_mask(x, mask)
    assert got.shape == (2, 0, 2)
    got = ops.boolean_mask(np.ones((0, 4), np.int32), np.zeros((0,), bool))
    assert got.shape == (0, 4)


def test_boolean_mask_errors():
    with pytest.raises(ctensor.CTensorError):
        ops.boolean_mask(np.ones((3, 4)), np.ones((4,), bool))
    with pytest.raises(ctensor.CTensorError):
        ops.boolean_mask(np.ones((3, 4)), np.ones((3, 4, 1), bool))
    with pytest.raises(TypeError):
        ops.boolean_mask(np.ones((3, 4)), np.ones((3,), np.int32))
    # A 0-d mask adds a dimension: on a 64-d array the result would need 65.
    with pytest.raises(ctensor.CTensorError, match="up to 64"):
        ops.boolean_mask(np.ones((1,) * 64), np.array(True))


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64"])
@pytest.mark.parametrize("layout", ["full", "rows", "blocks"])
def test_boolean_mask_large_parallel(dtype, layout):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((400, 300, 4)).astype(dtype)
    mask_shape = {"full": x.shape, "rows": x.shape[:1], "blocks": x.shape[:2]}[layout]
    mask = rng.random(mask_shape) < 0.4
    for xv, mv in ((x, mask), (x[::-1], mask[::-1]), (x.transpose(1, 0, 2).swapaxes(0, 1), mask)):
        got = ops.boolean_mask(xv, mv)
        np.testing.assert_array_equal(got, xv[mv])


# ------------------------------------------------------------------------------------------------
# permute_dims
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_NUMPY)
@EXAMPLES
@given(data=st.data())
def test_permute_dims_matches_numpy(dtype, data):
    x = data.draw(strided_arrays(dtype, elements=special_elements(dtype)))
    axes = data.draw(st.permutations(range(x.ndim)))
    axes = [a - x.ndim if data.draw(st.booleans()) else a for a in axes]
    got = ops.permute_dims(x, axes=tuple(axes))
    assert_same_values(got, np.permute_dims(x, axes), dtype)


def test_permute_dims_large_and_errors():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 300, 50)).astype(np.float32)
    for axes in [(2, 0, 1), (1, 2, 0), (0, 2, 1), (2, 1, 0), (-1, -3, -2)]:
        np.testing.assert_array_equal(ops.permute_dims(x, axes=axes), np.permute_dims(x, axes))
    with pytest.raises(ValueError):
        ops.permute_dims(x, axes=(0, 0, 1))
    with pytest.raises(ValueError):
        ops.permute_dims(x, axes=(0, 1))


# ------------------------------------------------------------------------------------------------
# PyTorch in, PyTorch out (bfloat16 included)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int32", "uint8", "bool"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_torch_tensors(dtype, data):
    np_dtype = "float32" if dtype == "bfloat16" else dtype
    values = data.draw(
        hnp.arrays(
            np_dtype,
            hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5),
            elements=special_elements(np_dtype),
        )
    )
    layout = data.draw(st.sampled_from(["compact", "sliced", "transposed"]))
    if dtype == "bfloat16":
        x = torch_bfloat16(values, layout)
        ref = x.float().numpy()  # bfloat16 -> float32 is exact
    else:
        x = torch.from_numpy(np.ascontiguousarray(values))
        if layout == "transposed" and x.dim() > 1:
            x = reverse_dims(reverse_dims(x).contiguous())
        ref = x.numpy()

    got = ops.nonzero(x)
    assert all(isinstance(g, torch.Tensor) and g.dtype == torch.int64 for g in got)
    for g, e in zip(got, np.nonzero(ref), strict=False):
        np.testing.assert_array_equal(g.numpy(), e)

    got = ops.unique_values(x)
    assert isinstance(got, torch.Tensor)
    assert_same_values(got, reference_unique(ref), dtype)

    mask_np = data.draw(hnp.arrays("bool", ref.shape[: data.draw(st.integers(0, ref.ndim))]))
    got = ops.boolean_mask(x, torch.from_numpy(mask_np))
    assert isinstance(got, torch.Tensor)
    assert_same_values(got, ref[mask_np], dtype)

    axes = data.draw(st.permutations(range(x.dim())))
    got = ops.permute_dims(x, axes=tuple(axes))
    assert isinstance(got, torch.Tensor)
    assert_same_values(got, np.permute_dims(ref, axes), dtype)


def test_torch_bfloat16_unique_specials():
    x = torch.tensor(
        [float("nan"), -0.0, 1.5, 0.0, float("-inf"), 1.5, float("nan")], dtype=torch.bfloat16
    )
    got = ops.unique_values(x)
    assert got.dtype == torch.bfloat16
    assert got[:-1].float().tolist() == [float("-inf"), 0.0, 1.5]
    assert torch.isnan(got[-1])


# ------------------------------------------------------------------------------------------------
# Thread counts give the same results; a failing framework allocation is an exception, not a crash
# ------------------------------------------------------------------------------------------------


def test_one_thread_and_many_agree():
    rng = np.random.default_rng(11)
    x = (rng.random((700, 600)) < 0.2) * rng.integers(1, 9, (700, 600))
    before = ctensor.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3):
            ctensor.set_num_threads(n)
            results.append(
                (
                    ops.nonzero(x),
                    ops.unique_values(x.astype(np.float64)),
                    ops.boolean_mask(x, x > 4),
                )
            )
    finally:
        ctensor.set_num_threads(before)
    for nz, uq, bm in results[1:]:
        for a, b in zip(nz, results[0][0], strict=False):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(uq, results[0][1])
        np.testing.assert_array_equal(bm, results[0][2])


class _AllocationFailure(MemoryError):
    pass


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_framework_allocation_error_propagates(framework, monkeypatch):
    """The framework's empty() raising inside the allocator callback (here forced by patching it:
    a real out-of-memory cannot be provoked portably) surfaces as that exception; the kernel
    stops at the failing output and the library keeps working."""
    from ctensor import _frameworks

    cls = _frameworks._Torch if framework == "torch" else _frameworks.Framework
    original = cls.empty
    calls = []

    def failing_empty(self, shape, dtype, like):
        calls.append(shape)
        if len(calls) == 2:
            raise _AllocationFailure("no memory for you")
        return original(self, shape, dtype, like)

    monkeypatch.setattr(cls, "empty", failing_empty)
    x = np.array([[0, 3], [4, 0]], np.int32)
    if framework == "torch":
        x = torch.from_numpy(x)
    with pytest.raises(_AllocationFailure):
        ops.nonzero(x)  # output 0 allocated, output 1 fails
    assert len(calls) == 2
    calls.clear()
    calls.append("skip")  # the next allocation is the second call: it fails
    with pytest.raises(_AllocationFailure):
        ops.unique_values(x)
    monkeypatch.undo()
    got = ops.nonzero(x)
    assert [np.asarray(g).tolist() for g in got] == [[0, 1], [1, 0]]


# ------------------------------------------------------------------------------------------------
# argwhere, unique_counts, unique_inverse, unique_all
# ------------------------------------------------------------------------------------------------


def reference_unique_all(x: np.ndarray):
    """values, first indices, inverse (shape of x), counts as np.unique (stable: first
    occurrence; one NaN; -0.0 == 0.0)."""
    x = np.asarray(x)
    values, index, inverse, counts = np.unique(
        x.ravel(), return_index=True, return_inverse=True, return_counts=True, equal_nan=True
    )
    return values, index, inverse.reshape(x.shape), counts


@pytest.mark.parametrize("dtype", ALL_NUMPY)
@EXAMPLES
@given(data=st.data())
def test_argwhere_matches_numpy(dtype, data):
    x = data.draw(strided_arrays(dtype, elements=special_elements(dtype)))
    assert_same_values(ops.argwhere(x), np.argwhere(x), "int64")


@pytest.mark.parametrize("shape", [(1_000_003,), (513, 517), (7, 130, 150)])
def test_argwhere_large_parallel(shape):
    rng = np.random.default_rng(3)
    x = (rng.random(shape) < 0.3).astype(np.float32)
    assert_same_values(ops.argwhere(x), np.argwhere(x), "int64")
    assert_same_values(ops.argwhere(x.T), np.argwhere(x.T), "int64")


@pytest.mark.parametrize("dtype", ALL_NUMPY)
@EXAMPLES
@given(data=st.data())
def test_unique_all_counts_inverse_match_numpy(dtype, data):
    x = data.draw(strided_arrays(dtype, elements=special_elements(dtype)))
    values, index, inverse, counts = reference_unique_all(x)
    got = ops.unique_all(x)
    assert len(got) == 4
    assert_same_values(got[0], values, dtype)
    assert_same_values(got[1], index, "int64")
    assert_same_values(got[2], inverse, "int64")
    assert_same_values(got[3], counts, "int64")
    got_values, got_counts = ops.unique_counts(x)
    assert_same_values(got_values, values, dtype)
    assert_same_values(got_counts, counts, "int64")
    got_values, got_inverse = ops.unique_inverse(x)
    assert_same_values(got_values, values, dtype)
    assert_same_values(got_inverse, inverse, "int64")


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_unique_all_and_argwhere_torch(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    specials = st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 2.5])
    values = data.draw(hnp.arrays(np.float32, shape, elements=specials))
    layout = data.draw(st.sampled_from(["compact", "sliced", "transposed"]))
    t = torch_bfloat16(values, layout)
    if dtype == "float32":
        t = t.float()
    ref = t.float().numpy()
    expected = reference_unique_all(ref)
    got = ops.unique_all(t)
    assert all(isinstance(g, torch.Tensor) for g in got)
    assert_same_values(got[0], expected[0], dtype)
    for g, e in zip(got[1:], expected[1:], strict=True):
        assert_same_values(g, e, "int64")
    assert_same_values(ops.argwhere(t), np.argwhere(ref), "int64")


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float16", "int32", "float32", "uint64"])
def test_unique_all_large(dtype):
    rng = np.random.default_rng(11)
    x = rng.integers(0, 100, (300, 700)).astype(dtype)[:, ::-2]
    expected = reference_unique_all(x)
    got = ops.unique_all(x)
    for g, e, d in zip(got, expected, [dtype, "int64", "int64", "int64"], strict=True):
        assert_same_values(g, e, d)


def test_unique_all_zero_size_and_0d():
    for shape in [(0,), (3, 0)]:
        got = ops.unique_all(np.ones(shape, np.float32))
        assert [g.shape for g in got] == [(0,), (0,), shape, (0,)]
    values, index, inverse, counts = ops.unique_all(np.array(np.nan, np.float64))
    assert np.isnan(values).tolist() == [True]
    assert index.tolist() == [0] and inverse.shape == () and int(inverse) == 0
    assert counts.tolist() == [1]
