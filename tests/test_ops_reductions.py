"""Reductions (sum, mean, prod, max, min, any, all, argmax, vector_norm) and softmax on every
dtype their kernels declare.

References are NumPy in float64 (float inputs), NumPy's own integer results for integer sums
(int64/uint64 wrap-around included) and maxima, np.argmax for argmax (first occurrence, first nan
wins), and torch.nn.functional.softmax in float64. Inputs come in every layout arrays.py draws
(sliced, reversed, transposed, broadcast, 0-d, zero-size), results are also written into strided
`out=` views, and low-precision dtypes go through torch tensors (torch in, torch out)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from arrays import ALL_NUMPY, COMPLEX, FLOATS, assert_close, kernel_dtypes, strided_arrays
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor

ALL_DTYPES = ALL_NUMPY + ["bfloat16"]
EPS64 = np.finfo(np.float64).eps
SPECIAL = [math.nan, math.inf, -math.inf]

SETTINGS = settings(max_examples=30, deadline=None)


# ----- helpers ----------------------------------------------------------------------------------


def sum_dtype(dtype: str) -> str:
    if dtype == "bool" or dtype.startswith("int"):
        return "int64"
    if dtype.startswith("uint"):
        return "uint64"
    return dtype


def mean_dtype(dtype: str) -> str:
    return dtype if dtype in FLOATS or dtype.startswith("complex") else "float64"


OUT_DTYPE = {
    "sum": sum_dtype,
    "prod": sum_dtype,
    "mean": mean_dtype,
    "max": lambda d: d,
    "min": lambda d: d,
    "any": lambda d: "bool",
    "all": lambda d: "bool",
}
NUMPY_OP = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min}
NO_IDENTITY = ("max", "min")
EXACT = ("max", "min", "any", "all")  # the result is one of the inputs (or a bool)


def compact_copy(x: np.ndarray) -> np.ndarray:
    """A fresh C-ordered copy (never keeps a negative stride, unlike ascontiguousarray on
    one-element arrays); torch.from_numpy takes it."""
    out = np.empty(x.shape, dtype=x.dtype)
    out[...] = x
    return out


def name_of(array) -> str:
    return str(array.dtype).replace("torch.", "")


def f64(array) -> np.ndarray:
    if isinstance(array, torch.Tensor):
        return array.detach().to(torch.float64).numpy()
    return np.asarray(array).astype(np.float64)


def elements(dtype: str, special: bool = True, bound: float = 1e4):
    """Values for `dtype`: moderate floats (sums stay far from overflow) plus nan/inf."""
    if dtype in FLOATS:
        width = 32 if dtype == "bfloat16" else np.dtype(dtype).itemsize * 8
        finite = st.floats(-bound, bound, width=width, allow_subnormal=False)
        return st.one_of(finite, st.sampled_from(SPECIAL)) if special else finite
    return None  # arrays.py's default: the whole range of the dtype


@st.composite
def axes(draw, ndim: int):
    """None, an int (maybe negative) or a tuple of distinct axes (maybe negative, any order)."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int" and ndim > 0:
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.permutations(range(ndim)))[: draw(st.integers(0, ndim))]
    return tuple(k - ndim if draw(st.booleans()) else k for k in chosen)


@st.composite
def inputs(draw, dtype: str, special: bool = True, max_side: int = 5, bound: float = 1e4):
    """A NumPy array (or a torch bfloat16 tensor) of `dtype` in a drawn layout."""
    if dtype == "bfloat16":
        values = elements(dtype, special, bound)
        x = draw(strided_arrays("float32", max_side=max_side, elements=values))
        layout = draw(st.sampled_from(["compact", "transposed", "broadcast"]))
        t = torch.from_numpy(compact_copy(x)).to(torch.bfloat16)
        if layout == "transposed" and t.dim() > 1:
            t = t.transpose(0, -1).contiguous().transpose(0, -1)
        elif layout == "broadcast" and t.dim() > 0 and t.shape[0] > 0:
            t = t[:1].expand(*t.shape)
        return t
    return draw(strided_arrays(dtype, max_side=max_side, elements=elements(dtype, special, bound)))


def normalized(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if isinstance(axis, int) else axis
    return tuple(sorted(k % ndim for k in axis)) if ndim else ()


def reduced_count(shape, axis) -> int:
    return int(np.prod([shape[k] for k in normalized(axis, len(shape))], dtype=np.int64))


def strided_out(draw, shape, dtype: str):
    """A compact output, or a reversed view with step 2 into a larger buffer (None: let ctensor
    allocate)."""
    kind = draw(st.sampled_from(["none", "compact", "strided"]))
    if kind == "none" or dtype == "bfloat16":
        return None
    if kind == "compact" or len(shape) == 0:
        return np.full(shape, 7, dtype=dtype)
    big = np.full(tuple(2 * s for s in shape), 7, dtype=dtype)
    return big[tuple(slice(None, None, -2) for _ in shape)]


def run(op, x, out=None, **kw):
    with np.errstate(all="ignore"):
        result = (
            getattr(ctensor.ops, op)(x, out=out, **kw)
            if out is not None
            else getattr(ctensor.ops, op)(x, **kw)
        )
    if out is not None:
        assert result is out
    if isinstance(x, torch.Tensor):
        assert isinstance(result, torch.Tensor), "torch in, torch out"
    return result


def expected_float(op, x64, axis, keepdims):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "Mean of empty slice"
        return NUMPY_OP[op](x64, axis=axis, keepdims=keepdims)


def float_atol(op, x64, axis, out_dtype):
    """Absolute slack for float sums and means: NumPy-level rounding error of a sum of n terms
    (n * eps * sum|x|), plus the result dtype's own absolute tolerance."""
    finite = np.where(np.isfinite(x64), np.abs(x64), 0.0)
    n = max(reduced_count(x64.shape, axis), 1)
    scale = float(np.max(np.sum(finite, axis=axis), initial=0.0))
    if op == "mean":
        scale /= n
    default = {"float16": 1e-4, "bfloat16": 1e-3, "float32": 1e-7, "float64": 0.0}[out_dtype]
    return 4 * n * EPS64 * scale + default


# ----- registration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, out_of",
    [(op, out_of) for op, out_of in OUT_DTYPE.items()]
    + [("argmax", lambda d: "int64"), ("argmin", lambda d: "int64")]
    + [("var", mean_dtype), ("std", mean_dtype)],
)
def test_registered_signatures(op, out_of):
    signatures = ctensor.op_info(op)["signatures"]["cpu"]
    dtypes = ALL_DTYPES + (COMPLEX if op in ("sum", "prod", "mean", "any", "all") else [])
    assert sorted(kernel_dtypes(op)) == sorted(dtypes)
    assert sorted(map(tuple, signatures)) == sorted((d, out_of(d)) for d in dtypes)


def test_softmax_registered_for_floats_only():
    assert sorted(kernel_dtypes("softmax")) == sorted(FLOATS)
    with pytest.raises(TypeError):
        ctensor.ops.softmax(np.arange(3, dtype=np.int32))


# ----- sum, mean, max ---------------------------------------------------------------------------


def rounded_to(want, dtype: str) -> np.ndarray:
    """A float64 reference rounded once to `dtype` and back (overflow gives inf, as ours does);
    bfloat16 through torch, NumPy having no bfloat16 (a product of 64 fours is 2^128: inf in
    bfloat16, although float64 holds it)."""
    want = np.asarray(want, dtype=np.float64)
    if dtype == "bfloat16":
        return torch.from_numpy(want.copy()).to(torch.bfloat16).double().numpy()
    with np.errstate(all="ignore"):
        return want.astype(dtype).astype(np.float64)


def check_reduction(op, dtype, x, axis, keepdims, out):
    x_np_shape = tuple(x.shape)
    if op in NO_IDENTITY and any(x_np_shape[k] == 0 for k in normalized(axis, len(x_np_shape))):
        with pytest.raises(ctensor.CTensorError) as info:
            run(op, x, axis=axis, keepdims=keepdims)
        assert isinstance(info.value, ValueError)
        return
    got = run(op, x, out=out, axis=axis, keepdims=keepdims)
    want_dtype = OUT_DTYPE[op](dtype)
    assert name_of(got) == want_dtype
    if op in ("any", "all"):
        # nan counts as true, as in NumPy
        want = getattr(np, op)(f64(x) != 0, axis=axis, keepdims=keepdims)
        assert tuple(got.shape) == np.shape(want)
        np.testing.assert_array_equal(np.asarray(got), want)
        return
    if op != "mean" and dtype not in FLOATS:
        xs = np.asarray(x)
        if op in ("sum", "prod"):
            want = NUMPY_OP[op](xs, axis=axis, keepdims=keepdims, dtype=want_dtype)
        else:
            want = NUMPY_OP[op](xs, axis=axis, keepdims=keepdims)
        assert got.shape == np.shape(want)
        np.testing.assert_array_equal(np.asarray(got), want)
        return
    x64 = f64(x)
    want = expected_float(op, x64, axis, keepdims)
    if op in EXACT:
        # exact: the extremum is one of the inputs (nan propagates)
        np.testing.assert_array_equal(f64(got), want)
        return
    if op == "prod":
        # float64 products in another order: relative error ~ n ulps of float64, then one rounding
        want = np.array(want, dtype=np.float64)
        # An infinity times factors whose running product underflows is inf or nan by the order
        # of the factors (NumPy itself gives nan for [tiny, tiny, inf] and inf for [inf, tiny,
        # tiny]): where the reversed order gives the other, either is right.
        axes = tuple(normalized(axis, x64.ndim))
        with np.errstate(all="ignore"):
            flipped = np.array(
                expected_float(op, np.flip(x64, axis=axes), axis, keepdims), dtype=np.float64
            )
        got64 = f64(got)
        order_dependent = np.isnan(want) != np.isnan(flipped)
        take = order_dependent & (np.isnan(got64) == np.isnan(flipped))
        want[take] = flipped[take]
        assert_close(got, rounded_to(want, want_dtype), want_dtype)
        return
    # the float64 result rounded once to the output dtype (overflow -> inf, like ours)
    want = rounded_to(want, want_dtype)
    assert_close(got, want, want_dtype, atol=float_atol(op, x64, axis, want_dtype))


@pytest.mark.parametrize("op", list(OUT_DTYPE))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@SETTINGS
@given(data=st.data())
def test_reduction_matches_numpy(op, dtype, data):
    # products: small factors (with zeros, nan, inf), so that float64 neither overflows nor
    # depends on the order of 0 * inf
    x = data.draw(inputs(dtype, bound=4.0 if op == "prod" else 1e4))
    axis = data.draw(axes(x.dim() if isinstance(x, torch.Tensor) else x.ndim))
    keepdims = data.draw(st.booleans())
    out_shape = np.sum(np.zeros(tuple(x.shape)), axis=axis, keepdims=keepdims).shape
    want_dtype = OUT_DTYPE[op](dtype)
    out = None if isinstance(x, torch.Tensor) else strided_out(data.draw, out_shape, want_dtype)
    check_reduction(op, dtype, x, axis, keepdims, out)


@pytest.mark.parametrize("op", list(OUT_DTYPE))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_low_precision_torch_tensors(op, dtype, data):
    """float16/bfloat16 torch tensors, including non-contiguous ones, against float64."""
    shape = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    values = data.draw(
        st.lists(
            elements(dtype, special=False, bound=2.0 if op == "prod" else 100.0),
            min_size=int(np.prod(shape)),
            max_size=int(np.prod(shape)),
        )
    )
    t = torch.tensor(values, dtype=torch.float64).reshape(shape).to(getattr(torch, dtype))
    if t.dim() > 1 and data.draw(st.booleans()):
        t = t.transpose(0, -1)
    axis = data.draw(axes(t.dim()))
    check_reduction(op, dtype, t, axis, False, None)


def test_integer_sums_wrap_like_numpy():
    big = np.array([2**62, 2**62, 2**62, -5], dtype=np.int64)
    assert ctensor.ops.sum(big) == np.sum(big)
    ubig = np.array([2**63, 2**63, 7], dtype=np.uint64)
    assert ctensor.ops.sum(ubig) == np.sum(ubig) == 7
    i8 = np.full((3, 200), 127, dtype=np.int8)
    np.testing.assert_array_equal(ctensor.ops.sum(i8, axis=1), np.full(3, 127 * 200))
    assert ctensor.ops.sum(np.array([True, True, False])) == 2
    # int means accumulate in float64, not in a wrapping integer (NumPy)
    assert ctensor.ops.mean(big) == np.mean(big)


def test_products_wrap_and_round_like_numpy():
    big = np.array([2**40, 2**40, 3, -1], dtype=np.int64)
    assert ctensor.ops.prod(big) == np.prod(big)
    u = np.array([2**63, 3], dtype=np.uint64)
    assert ctensor.ops.prod(u) == np.prod(u)
    i8 = np.full((2, 9), -3, dtype=np.int8)
    np.testing.assert_array_equal(ctensor.ops.prod(i8, axis=1), np.prod(i8, axis=1, dtype=np.int64))
    assert ctensor.ops.prod(np.array([True, False])).dtype == np.int64
    x = np.linspace(0.5, 1.5, 1001)
    assert_close(ctensor.ops.prod(x), np.prod(x), "float64")
    f32 = np.full(200, 2.0, dtype=np.float32)
    assert ctensor.ops.prod(f32) == np.float32(np.inf)  # 2**200 rounds to inf
    cols = np.linspace(0.99, 1.01, 3 * 40_000).reshape(40_000, 3)  # no partial product overflows
    assert_close(ctensor.ops.prod(cols, axis=0), np.prod(cols, axis=0), "float64", rtol_scale=1e4)


def test_min_any_all_specials():
    x = np.array([[1.0, np.nan, -3.0], [np.inf, 2.0, -np.inf], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(ctensor.ops.min(x, axis=1), np.min(x, axis=1))
    np.testing.assert_array_equal(ctensor.ops.min(x, axis=0), np.min(x, axis=0))
    np.testing.assert_array_equal(ctensor.ops.any(x, axis=1), [True, True, False])
    np.testing.assert_array_equal(ctensor.ops.all(x, axis=1), [True, True, False])
    np.testing.assert_array_equal(ctensor.ops.all(x, axis=0), np.all(x, axis=0))
    for dtype in ["int8", "uint16", "int64", "uint64"]:
        info = np.iinfo(dtype)
        v = np.array([info.max, info.min, 0], dtype=dtype)
        assert ctensor.ops.min(v) == info.min
        assert ctensor.ops.min(v[:1]) == info.max
    assert ctensor.ops.min(np.array([True, False])) == np.False_
    t = torch.tensor([[2.0, math.nan], [1.0, -1.0]], dtype=torch.bfloat16)
    assert ctensor.ops.min(t, axis=1).float().isnan().tolist() == [True, False]
    assert ctensor.ops.any(t).dtype == torch.bool


def test_bfloat16_results_past_its_range_are_inf():
    """2^128 (a product of 64 fours, the example hypothesis found) fits float64 but not bfloat16:
    inf, and the reference of check_reduction agrees."""
    x = torch.full((4, 4, 4), 4.0, dtype=torch.bfloat16)
    assert math.isinf(float(ctensor.ops.prod(x)))
    check_reduction("prod", "bfloat16", x, None, False, None)
    check_reduction(
        "sum", "bfloat16", torch.full((2,), 3e38, dtype=torch.bfloat16), None, False, None
    )


def test_empty_reductions():
    for dtype in ["bool", "int8", "uint32", "float16", "float32", "float64"]:
        x = np.zeros((0, 3), dtype=dtype)
        got = ctensor.ops.sum(x, axis=0)
        assert got.dtype == np.dtype(sum_dtype(dtype))
        np.testing.assert_array_equal(got, np.zeros(3))
        assert np.all(np.isnan(ctensor.ops.mean(x, axis=0)))
        assert np.isnan(ctensor.ops.mean(x))
        assert ctensor.ops.sum(x) == 0
        assert ctensor.ops.max(x, axis=1).shape == (0,)  # nothing to reduce into
        assert ctensor.ops.min(x, axis=1).shape == (0,)
        np.testing.assert_array_equal(ctensor.ops.prod(x, axis=0), np.ones(3))
        assert ctensor.ops.prod(x).dtype == np.dtype(sum_dtype(dtype))
        assert ctensor.ops.prod(x) == 1
        np.testing.assert_array_equal(ctensor.ops.any(x, axis=0), np.zeros(3, dtype=bool))
        np.testing.assert_array_equal(ctensor.ops.all(x, axis=0), np.ones(3, dtype=bool))
        assert not ctensor.ops.any(x) and ctensor.ops.all(x)
        assert ctensor.ops.sum(x, axis=1, keepdims=True).shape == (0, 1)
    t = torch.zeros((2, 0), dtype=torch.bfloat16)
    assert torch.equal(ctensor.ops.sum(t, axis=1), torch.zeros(2, dtype=torch.bfloat16))


def test_nan_and_inf():
    x = np.array([[1.0, np.nan, 3.0], [np.inf, 2.0, -np.inf], [np.inf, 1.0, 5.0]])
    for dtype in ["float16", "float32", "float64"]:
        xs = x.astype(dtype)
        for op in ["sum", "mean", "max"]:
            for axis in [None, 0, 1]:
                with np.errstate(all="ignore"):
                    want = getattr(np, op)(xs.astype(np.float64), axis=axis)
                assert_close(run(op, xs, axis=axis), np.asarray(want), dtype)
    t = torch.tensor([[-math.inf, -math.inf], [math.nan, 1.0]], dtype=torch.bfloat16)
    assert ctensor.ops.max(t, axis=1).float().isnan().tolist() == [False, True]
    assert ctensor.ops.max(t, axis=1)[0].item() == -math.inf


def test_output_dtypes_and_zero_dim():
    for dtype in ALL_NUMPY:
        x = np.array(3, dtype=dtype)
        assert ctensor.ops.sum(x).dtype == np.dtype(sum_dtype(dtype))
        assert ctensor.ops.mean(x).dtype == np.dtype(mean_dtype(dtype))
        assert ctensor.ops.max(x).dtype == np.dtype(dtype)
        assert ctensor.ops.min(x).dtype == np.dtype(dtype)
        assert ctensor.ops.prod(x).dtype == np.dtype(sum_dtype(dtype))
        assert ctensor.ops.all(x).dtype == np.bool_
        assert ctensor.ops.sum(x, axis=()).shape == ()
        assert ctensor.ops.max(x) == x
        assert ctensor.ops.argmax(x) == 0
        assert ctensor.ops.argmin(x) == 0


# ----- accuracy and the threaded paths ----------------------------------------------------------


def test_float64_sum_is_pairwise_accurate():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1_000_003) + 1e3  # long run: naive summation drifts ~sqrt(n) ulps
    exact = math.fsum(x.tolist())
    assert abs(float(ctensor.ops.sum(x)) - exact) <= 1e-15 * np.sum(np.abs(x))
    # the same accuracy for a reduction over an outer axis (rows mode) and a strided view
    cols = x[:999_999].reshape(333_333, 3)
    for got, column in zip(ctensor.ops.sum(cols, axis=0), cols.T, strict=True):
        assert abs(got - math.fsum(column.tolist())) <= 1e-15 * np.sum(np.abs(column))
    assert abs(ctensor.ops.sum(x[::-3]) - math.fsum(x[::-3].tolist())) <= 1e-15 * np.sum(np.abs(x))


def test_float32_sums_round_once():
    """float32 accumulates in double: the result is the exact sum rounded once (within 0.5
    ulp + a hair), better than NumPy's float32 pairwise sum."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(300_007) * 100).astype(np.float32)
    exact = math.fsum(x.astype(np.float64).tolist())
    got = ctensor.ops.sum(x)
    assert got.dtype == np.float32
    assert abs(float(got) - exact) <= 0.5000001 * np.spacing(np.float32(abs(exact)))
    h = x[:60_000].astype(np.float16)
    exact16 = math.fsum(h.astype(np.float64).tolist())
    assert float(ctensor.ops.sum(h)) == float(np.float16(exact16))


def _rounded_exact(x: np.ndarray, axis=None) -> np.ndarray:
    """float32 of the exact (math.fsum) sums of x over axis (None or 0 or 1 of a matrix)."""
    x64 = np.asarray(x, dtype=np.float64)
    if axis is None:
        return np.float32(math.fsum(x64.ravel().tolist()))
    lines = x64.T if axis == 0 else x64
    return np.array([math.fsum(line.tolist()) for line in lines], dtype=np.float32)


# the float32 loops (reduce_f32.c): 32 double lanes over 4096-element blocks, 8-row groups,
# 128-row blocks, 262144-element thread pieces; sizes straddle each
F32_SUM_SIZES = [
    *range(0, 70),
    95,
    96,
    97,
    4063,
    4064,
    4095,
    4096,
    4097,
    4127,
    8192,
    8193,
    262143,
    262144,
    262145,
    1_000_003,
]


def test_float32_sum_blocks_round_once():
    rng = np.random.default_rng(21)
    for n in F32_SUM_SIZES:
        x = (rng.standard_normal(n) * np.exp(rng.uniform(-4, 4, n))).astype(np.float32)
        exact = _rounded_exact(x)
        got = ctensor.ops.sum(x)
        assert got.dtype == np.float32
        assert float(got) == float(exact), f"n={n}"
        # NumPy's float32 pairwise sum is never closer to the exact sum
        x64 = math.fsum(x.astype(np.float64).tolist())
        assert abs(float(got) - x64) <= abs(float(np.sum(x)) - x64), f"n={n}"
        if n > 1:
            assert float(ctensor.ops.sum(x[1:])) == float(_rounded_exact(x[1:]))  # unaligned
            assert float(ctensor.ops.sum(x[::2])) == float(_rounded_exact(x[::2]))  # strided
        if n:
            assert float(ctensor.ops.mean(x)) == float(np.float32(x64 / n))


@pytest.mark.parametrize("rows", [1, 7, 8, 9, 127, 128, 129, 1000])
def test_float32_axis_sums_on_every_layout(rows):
    rng = np.random.default_rng(rows)
    for cols in [1, 3, 4, 15, 16, 17, 683, 769, 1537]:
        m = (rng.standard_normal((rows, cols)) * 10).astype(np.float32)
        views = [m, m[::2], m[:, ::2], m[::-1], m.T, np.asfortranarray(m), m[:, 1:]]
        for view in views:
            if view.size == 0:
                continue
            for axis in (0, 1):
                got = ctensor.ops.sum(view, axis=axis)
                want = _rounded_exact(view, axis)
                # double accumulation: the exact sums rounded once (rare ties aside: 1 ulp)
                np.testing.assert_allclose(got, want, rtol=1.2e-7, atol=1e-30)
                kept = ctensor.ops.sum(view, axis=axis, keepdims=True)
                np.testing.assert_array_equal(np.asarray(kept).squeeze(axis), got)
                np.testing.assert_allclose(
                    ctensor.ops.mean(view, axis=axis), want / view.shape[axis], rtol=2.4e-7
                )


def test_float32_sums_carry_nan_and_inf():
    for n in (5, 40, 5000):
        for pos in {0, n // 2, n - 1}:
            x = np.ones(n, dtype=np.float32)
            x[pos] = np.nan
            assert np.isnan(ctensor.ops.sum(x))
            x[pos] = np.inf
            assert ctensor.ops.sum(x) == np.inf
            m = np.ones((n, 3), dtype=np.float32)
            m[pos, 1] = -np.inf
            np.testing.assert_array_equal(ctensor.ops.sum(m, axis=0), [n, -np.inf, n])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int16", "uint8"])
def test_max_min_lanes_with_nan_anywhere(dtype):
    """max/min keep 32 vector lanes (maxps/minps semantics) and track nans apart: a nan at any
    position, in any lane or in the tail, is the result."""
    rng = np.random.default_rng(5)
    for n in (1, 31, 32, 63, 64, 65, 200, 1025, 70_001):
        x = (rng.standard_normal(n) * 100).astype(dtype)
        for op in ("max", "min"):
            np.testing.assert_array_equal(getattr(ctensor.ops, op)(x), getattr(np, op)(x))
        if dtype not in FLOATS:
            continue
        for pos in sorted({0, 1, 31, 32, 33, 64, n // 2, n - 2, n - 1}):
            if not 0 <= pos < n:
                continue
            y = x.copy()
            y[pos] = np.nan
            for op in ("max", "min"):
                assert np.isnan(getattr(ctensor.ops, op)(y)), f"{op} n={n} nan at {pos}"
            y[pos] = np.inf
            assert ctensor.ops.max(y) == np.inf and ctensor.ops.min(-y) == -np.inf
        special = np.full(n, -np.inf, dtype=dtype)
        assert ctensor.ops.max(special) == -np.inf
        assert ctensor.ops.min(-special) == np.inf


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_large_inputs_are_deterministic_across_threads(dtype):
    """Shapes large enough for the parallel paths (split full reductions, rows mode over an
    outer axis, many outputs): same bits with 1 thread and with the default, and correct."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((257, 1031)) * 50).astype(dtype)
    x[5, 7] = x[200, 1000] = np.max(x)  # a tie for argmax
    x[9, 3] = x[100, 500] = np.min(x)  # and for argmin
    ops = ["sum", "mean", "max", "min", "any", "all", "argmax", "argmin"]
    cases = [(op, axis) for op in ops for axis in [None, 0, 1]]
    cases += [("sum", (0, 1)), ("max", (1, 0))]
    views = [x, x.T, x[::-1, ::2]]
    default = ctensor.get_num_threads()
    try:
        for view in views:
            results = {}
            for threads in [default, 1]:
                ctensor.set_num_threads(threads)
                results[threads] = [run(op, view, axis=axis) for op, axis in cases]
            for (op, axis), a, b in zip(cases, results[default], results[1], strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{op} axis={axis} threads differ")
                if op in ("argmax", "argmin", "max", "min", "any", "all"):
                    np.testing.assert_array_equal(a, getattr(np, op)(view, axis=axis))
                elif op == "sum" and dtype == "int32":
                    np.testing.assert_array_equal(a, np.sum(view, axis=axis, dtype=np.int64))
                else:
                    x64 = view.astype(np.float64)
                    want = expected_float(op, x64, axis, False)
                    out = sum_dtype(dtype) if op == "sum" else mean_dtype(dtype)
                    assert_close(
                        a, np.asarray(want).astype(out), out, atol=float_atol(op, x64, axis, out)
                    )
    finally:
        ctensor.set_num_threads(0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_axis0_rows_are_the_same_whatever_lanes_a_thread_takes(dtype):
    """An axis-0 reduction of 4096 columns reads 1024 columns a task, or 2048 where that still
    gives every thread a task (1 thread: yes; 3 threads: no): same bits either way, and right."""
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((300, 4096)) * 1e3).astype(dtype)
    default = ctensor.get_num_threads()
    try:
        results = {}
        for threads in [1, 3]:
            ctensor.set_num_threads(threads)
            results[threads] = [run(op, x, axis=0) for op in ["sum", "mean", "max", "argmin"]]
    finally:
        ctensor.set_num_threads(default)
    for a, b in zip(results[1], results[3], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(results[1][2], np.max(x, axis=0))
    np.testing.assert_array_equal(results[1][3], np.argmin(x, axis=0))
    x64 = x.astype(np.float64)
    want = expected_float("sum", x64, 0, False)
    out = sum_dtype(dtype)
    if dtype == "int64":
        np.testing.assert_array_equal(results[1][0], np.sum(x, axis=0))
    else:
        assert_close(results[1][0], want.astype(out), out, atol=float_atol("sum", x64, 0, out))


@pytest.mark.parametrize("shape", [(2000, 1024), (3000, 700), (700, 2048)])
def test_split_axis0_sums_are_the_same_for_every_thread_count(shape):
    """Few wide tasks are cut into pieces of rows, reduced in parallel and combined in order:
    the pieces depend on the shape only, so 1, 2 and 3 threads give the same bits."""
    rng = np.random.default_rng(shape[1])
    x = (rng.standard_normal(shape) * 1e3).astype(np.float32)
    default = ctensor.get_num_threads()
    try:
        results = []
        for threads in [1, 2, 3]:
            ctensor.set_num_threads(threads)
            results.append((run("sum", x, axis=0), run("mean", x, axis=0)))
    finally:
        ctensor.set_num_threads(default)
    for sums, means in results[1:]:
        np.testing.assert_array_equal(sums, results[0][0])
        np.testing.assert_array_equal(means, results[0][1])
    want = x.astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(results[0][0], want.astype(np.float32), rtol=1.2e-7, atol=1e-3)


# ----- var, std ---------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@SETTINGS
@given(data=st.data())
def test_var_std_match_numpy(op, dtype, data):
    x = data.draw(inputs(dtype, bound=1e3))
    axis = data.draw(axes(x.dim() if isinstance(x, torch.Tensor) else x.ndim))
    keepdims = data.draw(st.booleans())
    correction = data.draw(st.sampled_from([0.0, 1.0, 2.5]))
    got = run(op, x, axis=axis, keepdims=keepdims, correction=correction)
    want_dtype = mean_dtype(dtype)
    assert name_of(got) == want_dtype
    x64 = f64(x)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty slices, ddof >= n
        want = getattr(np, op)(x64, axis=axis, keepdims=keepdims, ddof=correction)
    if want_dtype != "bfloat16":
        with np.errstate(all="ignore"):
            want = np.asarray(want).astype(want_dtype).astype(np.float64)
    finite = np.where(np.isfinite(x64), x64 * x64, 0.0)
    n = max(reduced_count(x64.shape, axis), 1)
    scale = float(np.max(np.sum(finite, axis=axis), initial=0.0))
    default = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 0.0}[want_dtype]
    atol = 16 * n * EPS64 * scale + default
    assert_close(got, want, want_dtype, atol=math.sqrt(atol) if op == "std" else atol)


def test_var_std_rules():
    x = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
    np.testing.assert_allclose(ctensor.ops.var(x, axis=1), np.var(x, axis=1))
    np.testing.assert_allclose(
        ctensor.ops.std(x, axis=1, correction=1.0), np.std(x, axis=1, ddof=1)
    )
    assert ctensor.ops.var(np.arange(10, dtype=np.int16)).dtype == np.float64
    assert ctensor.ops.std(np.array([True, False])) == 0.5
    assert np.isnan(ctensor.ops.var(np.zeros((0,))))  # empty: nan
    assert ctensor.ops.var(np.arange(3.0), correction=3.0) == np.inf  # no degrees of freedom
    assert np.isnan(ctensor.ops.var(np.ones(2), correction=2.0))  # 0 / 0
    assert np.isnan(ctensor.ops.var(np.array([np.inf, 1.0])))
    assert np.isnan(ctensor.ops.std(np.array([np.nan, 1.0])))
    big = np.random.default_rng(2).standard_normal((50_000, 3)) + 1e6  # rows mode, split
    np.testing.assert_allclose(ctensor.ops.var(big, axis=0), np.var(big, axis=0), rtol=1e-9)
    np.testing.assert_allclose(ctensor.ops.var(big.T, axis=1), np.var(big, axis=0), rtol=1e-9)
    ctensor.set_num_threads(1)
    try:
        one = ctensor.ops.var(big, axis=0)
    finally:
        ctensor.set_num_threads(0)
    np.testing.assert_array_equal(one, ctensor.ops.var(big, axis=0))
    with pytest.raises(ctensor.CTensorError) as info:
        ctensor.ops.var(x, correction=-1.0)
    assert isinstance(info.value, ValueError)


# ----- argmax -----------------------------------------------------------------------------------


def argmax_elements(dtype: str):
    """Few distinct values, so that ties (and nan, for floats) are frequent."""
    if dtype in FLOATS:
        return st.sampled_from([-math.inf, -1.5, 0.0, 2.0, 3.0, math.inf, math.nan])
    if dtype == "bool":
        return None
    info = np.iinfo(dtype)
    return st.sampled_from([int(info.min), -1 if info.min < 0 else 0, 1, 2, int(info.max)])


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@SETTINGS
@given(data=st.data())
def test_argmax_matches_numpy(op, dtype, data):
    if dtype == "bfloat16":
        x = data.draw(strided_arrays("float32", elements=argmax_elements(dtype)))
        arg = torch.from_numpy(compact_copy(x)).to(torch.bfloat16)
    else:
        x = data.draw(strided_arrays(dtype, elements=argmax_elements(dtype)))
        arg = x
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim else None
    keepdims = data.draw(st.booleans())
    try:
        want = getattr(np, op)(x, axis=axis, keepdims=keepdims)
    except ValueError:
        with pytest.raises(ctensor.CTensorError) as info:
            getattr(ctensor.ops, op)(arg, axis=axis, keepdims=keepdims)
        assert isinstance(info.value, ValueError)
        return
    out = strided_out(data.draw, np.shape(want), "int64") if dtype != "bfloat16" else None
    got = run(op, arg, out=out, axis=axis, keepdims=keepdims)
    assert name_of(got) == "int64"
    np.testing.assert_array_equal(np.asarray(got), want)


def test_argmax_first_occurrence_and_nan():
    x = np.array([1.0, 5.0, 5.0, np.nan, 7.0, np.nan])
    assert ctensor.ops.argmax(x) == 3
    assert ctensor.ops.argmax(x[:3]) == 1
    assert ctensor.ops.argmax(np.full(100, -np.inf)) == 0
    long = np.zeros(10_000, dtype=np.float32)
    long[[4321, 8000]] = 1.0
    assert ctensor.ops.argmax(long) == 4321
    long[9000] = np.nan
    assert ctensor.ops.argmax(long) == 9000
    m = np.arange(12).reshape(3, 4) % 5
    np.testing.assert_array_equal(ctensor.ops.argmax(m.T, axis=None), np.argmax(m.T))
    np.testing.assert_array_equal(ctensor.ops.argmax(m[::-1], axis=0), np.argmax(m[::-1], axis=0))


def test_argmin_first_occurrence_and_nan():
    x = np.array([3.0, -5.0, -5.0, np.nan, -7.0, np.nan])
    assert ctensor.ops.argmin(x) == 3
    assert ctensor.ops.argmin(x[:3]) == 1
    assert ctensor.ops.argmin(np.full(100, np.inf)) == 0
    long = np.zeros(10_000, dtype=np.float32)
    long[[4321, 8000]] = -1.0
    assert ctensor.ops.argmin(long) == 4321
    long[9000] = np.nan
    assert ctensor.ops.argmin(long) == 9000
    u = np.array([5, 0, 7, 0], dtype=np.uint64)
    assert ctensor.ops.argmin(u) == 1
    m = np.arange(12).reshape(3, 4) % 5
    np.testing.assert_array_equal(ctensor.ops.argmin(m.T, axis=None), np.argmin(m.T))
    np.testing.assert_array_equal(ctensor.ops.argmin(m[::-1], axis=0), np.argmin(m[::-1], axis=0))
    t = torch.tensor([[2.0, 1.0, 1.0]], dtype=torch.bfloat16)
    assert ctensor.ops.argmin(t, axis=1).tolist() == [1]


ARG_ROW_LENGTHS = [
    1,
    3,
    4,
    5,
    8,
    9,
    15,
    16,
    17,
    31,
    32,
    33,
    63,
    64,
    65,
    1023,
    1024,
    1025,
    4095,
    4096,
    4097,
]


@pytest.mark.parametrize("n", ARG_ROW_LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int16", "uint32"])
def test_argmax_rows_match_numpy(dtype, n):
    """Contiguous rows take a one-pass vector search (float32, float64, int32 and int64; float32
    and int32 rows shorter than 4096), whose last step may overlap the one before, or the vector
    extremum of each 1024-element block and then a search inside the winning block: ties (the
    first wins, within a vector, across vectors and steps, in the overlap, across blocks),
    signed zeros, infinities and nans as NumPy has them, on the lengths around each bound."""
    rng = np.random.default_rng(n)
    floating = np.dtype(dtype).kind == "f"
    info = np.finfo(dtype) if floating else np.iinfo(dtype)
    rows = []
    for _ in range(40):
        if floating:
            row = rng.standard_normal(n).astype(dtype)
        else:
            row = rng.integers(max(info.min, -1000), min(info.max, 1000), n).astype(dtype)
        kind = rng.integers(7 if floating else 4)
        if kind == 1:  # the extremes repeated, possibly in the same vector
            for top in (info.max, info.min):
                row[rng.choice(n, size=min(n, 4), replace=False)] = top
        elif kind == 2:  # all equal
            row[:] = row[0]
        elif kind == 3:  # few values: ties everywhere
            row = rng.integers(0, 3, n).astype(dtype)
        elif kind == 4:  # only zeros of both signs at the extremum
            row = -np.abs(row) - 1
            row[rng.choice(n, size=min(n, 3), replace=False)] = [-0.0, 0.0, -0.0][: min(n, 3)]
            if rng.random() < 0.5:
                row = -row
        elif kind == 5:  # nans, the first wins (one may be in the last, overlapping step)
            row[rng.choice(n, size=min(n, 2), replace=False)] = np.nan
            if rng.random() < 0.5:
                row[-1] = np.nan
        elif kind == 6:
            row[rng.integers(n)] = np.inf
            row[rng.integers(n)] = -np.inf
        rows.append(row)
    x = np.stack(rows)
    views = (x, x[:, 1:]) if n > 1 else (x,)  # aligned and unaligned rows
    for view in views:
        np.testing.assert_array_equal(ctensor.ops.argmax(view, axis=1), np.argmax(view, axis=1))
        np.testing.assert_array_equal(ctensor.ops.argmin(view, axis=1), np.argmin(view, axis=1))
    for row in rows[:8]:
        assert ctensor.ops.argmax(row) == np.argmax(row)
        assert ctensor.ops.argmin(row) == np.argmin(row)


# ----- softmax ----------------------------------------------------------------------------------


def softmax_reference(x, axis):
    t = torch.from_numpy(f64(x)) if not isinstance(x, torch.Tensor) else x.to(torch.float64)
    return torch.nn.functional.softmax(t, dim=axis).numpy()


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_softmax_matches_torch(dtype, data):
    x = data.draw(inputs(dtype, special=False, max_side=6))
    special = data.draw(st.booleans())
    ndim = x.dim() if isinstance(x, torch.Tensor) else x.ndim
    if special and np.prod(tuple(x.shape)) > 0:
        # a nan, an inf or a whole -inf lane somewhere
        x = x.clone() if isinstance(x, torch.Tensor) else np.array(x, copy=True)
        index = tuple(data.draw(st.integers(0, s - 1)) for s in x.shape)
        x[index] = data.draw(st.sampled_from(SPECIAL))
    axis = data.draw(st.integers(-max(ndim, 1), max(ndim, 1) - 1))
    out = None
    if not isinstance(x, torch.Tensor):
        out = strided_out(data.draw, tuple(x.shape), dtype)
    got = run("softmax", x, out=out, axis=axis)
    assert name_of(got) == dtype
    assert_close(got, softmax_reference(x, axis), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_special_lanes(dtype):
    rows = [[math.nan, 1.0, 2.0], [-math.inf] * 3, [math.inf, 1.0, 0.0], [-math.inf, 0.0, 1.0]]
    t = torch.tensor(rows, dtype=torch.float64)
    x = t.to(getattr(torch, dtype))
    got = ctensor.ops.softmax(x, axis=1)
    want = torch.softmax(t, dim=1)
    assert torch.equal(got.isnan(), want.isnan())
    assert_close(got, want.numpy(), dtype)
    # the default axis is the last; 0-d tensors are one lane of one element
    np.testing.assert_array_equal(f64(ctensor.ops.softmax(x)), f64(got))
    assert ctensor.ops.softmax(np.float32(-3.0)) == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize(
    "shape, axis",
    [((300_001,), 0), ((3, 40_000), 0), ((2, 3, 50_000), -1), ((2_000, 130), 0), ((130, 2_000), 1)],
)
def test_softmax_large(dtype, shape, axis):
    """Long lanes (split into parallel pieces), outer axes (vector mode) and many lanes."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    got = ctensor.ops.softmax(x, axis=axis)
    assert_close(got, softmax_reference(x, axis), dtype)
    ctensor.set_num_threads(1)
    try:
        np.testing.assert_array_equal(ctensor.ops.softmax(x, axis=axis), got)
    finally:
        ctensor.set_num_threads(0)


# ----- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: ctensor.ops.sum(np.zeros((2, 3)), axis=2),
        lambda: ctensor.ops.mean(np.zeros((2, 3)), axis=(-3,)),
        lambda: ctensor.ops.max(np.zeros((2, 3)), axis=(0, -2)),
        lambda: ctensor.ops.sum(np.zeros((2, 3)), axis=(1, 1)),
        lambda: ctensor.ops.max(np.zeros((2, 0)), axis=1),
        lambda: ctensor.ops.max(np.zeros((0,), dtype=np.int8)),
        lambda: ctensor.ops.min(np.zeros((2, 0)), axis=1),
        lambda: ctensor.ops.min(np.zeros((0,), dtype=np.uint8)),
        lambda: ctensor.ops.prod(np.zeros((2, 3)), axis=2),
        lambda: ctensor.ops.any(np.zeros((2, 3)), axis=(0, 0)),
        lambda: ctensor.ops.argmax(np.zeros((0, 3))),
        lambda: ctensor.ops.argmin(np.zeros((0, 3))),
        lambda: ctensor.ops.argmin(np.zeros((2, 0)), axis=1),
        lambda: ctensor.ops.argmin(np.zeros((2, 3)), axis=-3),
        lambda: ctensor.ops.argmax(np.zeros((0, 3)), axis=0),
        lambda: ctensor.ops.argmax(np.zeros((2, 3)), axis=2),
        lambda: ctensor.ops.argmax(np.float64(1.0), axis=1),
        lambda: ctensor.ops.softmax(np.zeros((2, 3)), axis=2),
        lambda: ctensor.ops.softmax(np.float32(1.0), axis=1),
    ],
)
def test_invalid_arguments_raise_value_errors(call):
    with pytest.raises(ctensor.CTensorError) as info:
        call()
    assert isinstance(info.value, ValueError)


# ----- vector_norm ------------------------------------------------------------------------------

NORM_ORDS = [2.0, 1.0, 0.0, math.inf, -math.inf, 3.0, 0.5, 1.5, -1.0, -2.5]


def norm_reference(x: np.ndarray, ord: float, axis, keepdims: bool) -> np.ndarray:
    """The p-norm of |x| in float64 (NumPy), as torch.linalg.vector_norm defines it."""
    a = np.abs(x).astype(np.float64)
    with np.errstate(all="ignore"):
        if ord == math.inf:
            return np.max(a, axis=axis, keepdims=keepdims)
        if ord == -math.inf:
            return np.min(a, axis=axis, keepdims=keepdims)
        if ord == 0:
            return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(np.float64)
        if ord < 0:
            return np.sum(a**ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)
        # scaled by the largest modulus, so that tiny and huge values neither underflow nor
        # overflow in the powers (as ctensor's kernels; NumPy's own norm does not scale)
        m = np.max(a, axis=axis, keepdims=True, initial=0.0)
        safe = np.where(m == 0, 1.0, m)
        r = safe * np.sum((a / safe) ** ord, axis=axis, keepdims=True) ** (1.0 / ord)
        r = np.where(m == 0, 0.0, r)
        return r if keepdims else np.squeeze(r, axis=axis)


def test_vector_norm_registered_for_floats_and_complex():
    assert sorted(kernel_dtypes("vector_norm")) == sorted(FLOATS + COMPLEX)
    assert sorted(kernel_dtypes("vector_norm_backward")) == sorted(FLOATS)


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX)
@SETTINGS
@given(data=st.data(), ord=st.sampled_from(NORM_ORDS))
def test_vector_norm_matches_numpy_and_torch(dtype, ord, data):
    if dtype in COMPLEX:
        width = 64 if dtype == "complex64" else 128
        parts = st.complex_numbers(
            max_magnitude=100, allow_nan=False, allow_infinity=False, width=width
        )
        x = data.draw(strided_arrays(dtype, max_side=5, elements=parts))
    else:
        x = data.draw(inputs(dtype, special=False, bound=100.0))
    axis = data.draw(axes(x.ndim))
    keepdims = data.draw(st.booleans())
    x64 = f64(x) if dtype not in COMPLEX else np.asarray(x).astype(np.complex128)
    empty = reduced_count(np.shape(x64), axis) == 0
    if empty and (ord < 0 or ord == math.inf):
        with pytest.raises(ValueError, match="identity"):
            run("vector_norm", x, axis=axis, ord=ord, keepdims=keepdims)
        return
    got = run("vector_norm", x, axis=axis, ord=ord, keepdims=keepdims)
    real = {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)
    assert name_of(got) == real
    want = norm_reference(
        x64, ord, normalized(axis, x64.ndim) if axis is not None else None, keepdims
    )
    assert_close(f64(got), rounded_to(want, real), real, rtol_scale=8)
    t = torch.from_numpy(np.ascontiguousarray(x64))
    dims = normalized(axis, x64.ndim) if axis is not None else None
    tiny = np.any((np.abs(x64) < 1e-30) & (x64 != 0))  # torch's powers underflow there
    if not empty and x64.ndim and axis != () and not tiny:  # torch reads dim=() as every dim
        with warnings.catch_warnings():  # torch's complex path warns about its own cast
            warnings.simplefilter("ignore", UserWarning)
            ref = torch.linalg.vector_norm(t, ord=ord, dim=dims, keepdim=keepdims).numpy()
        assert_close(f64(got), rounded_to(ref, real), real, rtol_scale=8)


def test_vector_norm_scales_instead_of_overflowing():
    """Squares of 1e200 overflow and of 1e-200 underflow in float64; the scaled sums do not
    (NumPy's norm gives inf and 0 here; torch's float64 too)."""
    for ord in (2.0, 3.0, 1.5):
        for v in (1e200, 1e-200):
            x = np.array([v, 2 * v, -2 * v])
            want = v * (1 + 2**ord + 2**ord) ** (1 / ord)
            np.testing.assert_allclose(ctensor.ops.vector_norm(x, ord=ord), want, rtol=1e-14)
    big = np.full(1000, 1e37, np.float32)  # squares overflow float32, the norm does not
    np.testing.assert_allclose(ctensor.ops.vector_norm(big), np.float32(1e37 * math.sqrt(1000)))


def test_vector_norm_special_values():
    nan, inf = math.nan, math.inf
    for ord in NORM_ORDS:
        with_nan = torch.tensor([1.0, nan, inf, 0.0], dtype=torch.float64)
        want = torch.linalg.vector_norm(with_nan, ord=ord).item()  # nan, but a count for ord 0
        got = ctensor.ops.vector_norm(with_nan.numpy(), ord=ord)
        assert got == want or (math.isnan(got) and math.isnan(want)), ord
        t = torch.tensor([0.0, -3.0, inf, 2.0])
        want = torch.linalg.vector_norm(t.double(), ord=ord).item()
        assert ctensor.ops.vector_norm(t.numpy(), ord=ord) == want, ord
        zeros = np.zeros(4)
        assert (
            ctensor.ops.vector_norm(zeros, ord=ord)
            == torch.linalg.vector_norm(torch.from_numpy(zeros), ord=ord).item()
        ), ord
    # ord 0 counts the non-zero elements, nan included
    assert ctensor.ops.vector_norm(np.array([0.0, -0.0, 2.0, nan]), ord=0.0) == 2.0
    # the modulus of complex elements, without overflow
    z = np.array([3e200 + 4e200j, 0j])
    assert ctensor.ops.vector_norm(z) == pytest.approx(5e200, rel=1e-15)
    assert ctensor.ops.vector_norm(np.array([3 + 4j], np.complex64), ord=1.0).dtype == np.float32


def test_vector_norm_empty_and_errors():
    e = np.zeros((0, 3))
    np.testing.assert_array_equal(ctensor.ops.vector_norm(e, axis=0), np.zeros(3))
    assert ctensor.ops.vector_norm(e, ord=0.0) == 0.0
    for ord in (math.inf, -math.inf, -1.0):
        with pytest.raises(ValueError, match="identity"):
            ctensor.ops.vector_norm(e, ord=ord, axis=0)
        np.testing.assert_array_equal(ctensor.ops.vector_norm(e, ord=ord, axis=1), np.zeros(0))
    with pytest.raises(ValueError, match="nan"):
        ctensor.ops.vector_norm(np.ones(3), ord=math.nan)
    with pytest.raises(ValueError):
        ctensor.ops.vector_norm(np.ones(3), axis=1)
    with pytest.raises((TypeError, ValueError, ctensor.CTensorError)):
        ctensor.ops.vector_norm(np.ones(3, np.int32).astype(bool))


def test_vector_norm_threads_do_not_change_bits():
    x = np.random.default_rng(5).standard_normal((64, 300)).astype(np.float32)
    before = ctensor.get_num_threads()
    try:
        ctensor.set_num_threads(2)
        two = ctensor.ops.vector_norm(x, axis=1, ord=3.0)
        ctensor.set_num_threads(1)
        one = ctensor.ops.vector_norm(x, axis=1, ord=3.0)
    finally:
        ctensor.set_num_threads(before)
    np.testing.assert_array_equal(one.view(np.uint32), two.view(np.uint32))
    strided = ctensor.ops.vector_norm(np.asfortranarray(x)[:, ::-1], axis=1, ord=3.0)
    np.testing.assert_allclose(strided, one, rtol=1e-6)
