"""Binary math ops (floor_divide remainder atan2 hypot logaddexp copysign), bitwise ops (and or xor,
shifts), comparisons (not_equal less_equal greater_equal), logical ops (and or xor) and clip,
on every dtype their kernels declare, with broadcasting and arbitrary layouts.

References: NumPy in the input dtype for integers and bool (wrapping, division by zero and
shift edge cases included); for floats, floor_divide and remainder against NumPy's own loop in
the compute dtype (float32 for float16/bfloat16, as NumPy's float16 loop), exactly; atan2,
hypot and logaddexp against float64 within arrays.TOLERANCE; copysign, comparisons, logical ops
and clip exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import (
    COMPLEX,
    FLOATS,
    INTEGER,
    SIGNED,
    any_layout,
    assert_close,
    assert_signs_of_zeros,
    bfloat16_tensor,
    broadcastable_shapes,
    dtype_name,
    kernel_dtypes,
    round_to_dtype,
    sleef_runs,
    snapshot,
    to_float64,
    unchanged,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor

REF = {
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "copysign": np.copysign,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": np.left_shift,
    "bitwise_right_shift": np.right_shift,
    "not_equal": np.not_equal,
    "less_equal": np.less_equal,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}
BOOL_OUT = {"not_equal", "less_equal", "greater_equal", "logical_and", "logical_or", "logical_xor"}
IN_COMPUTE_DTYPE = {"floor_divide", "remainder"}  # NumPy's algorithm, exact
TOLERANT = {"atan2", "hypot", "logaddexp"}
SIGNED_ZERO = {"floor_divide", "remainder", "copysign", "atan2"}

# complex dtypes: test_ops_complex.py
CASES = [(op, dt) for op in REF for dt in kernel_dtypes(op) if dt not in COMPLEX]
CLIP_DTYPES = kernel_dtypes("clip")


def call(op, *args, **kw):
    with np.errstate(all="ignore"):
        return getattr(ctensor.ops, op)(*args, **kw)


def full(a, shape):
    return np.array(np.broadcast_to(a, shape), copy=True)


def reference(op, dtype, x1, x2):
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    if dtype not in FLOATS:
        with np.errstate(all="ignore"):
            return REF[op](full(np.asarray(x1), shape), full(np.asarray(x2), shape))
    a, b = full(to_float64(x1), shape), full(to_float64(x2), shape)
    with np.errstate(all="ignore"):
        if op in BOOL_OUT:
            return REF[op](a, b)
        if op in IN_COMPUTE_DTYPE:
            compute = np.float64 if dtype == "float64" else np.float32
            r = REF[op](a.astype(compute), b.astype(compute)).astype(np.float64)
        else:
            r = REF[op](a, b)
    return round_to_dtype(r, dtype)


def check(op, dtype, x1, x2):
    b1, b2 = snapshot(x1), snapshot(x2)
    got = call(op, x1, x2)
    want = "bool" if op in BOOL_OUT else dtype
    assert dtype_name(got) == want, f"{op}({dtype}) gave {dtype_name(got)}"
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    assert tuple(got.shape) == shape
    expected = reference(op, dtype, x1, x2)
    if op in TOLERANT and dtype in FLOATS:
        assert_close(got, expected, dtype)
    else:
        assert_close(got, expected, want, rtol_scale=0.0, atol=0.0)
    if op in SIGNED_ZERO and dtype in FLOATS:
        assert_signs_of_zeros(got, expected, f"{op}({dtype})")
    assert unchanged(x1, b1) and unchanged(x2, b2), "an input was written"


def second_elements(op, dtype):
    """Shift counts: mostly small (the interesting range), sometimes anything (negative and
    >= width included: defined as NumPy, never C's undefined behaviour)."""
    if op.startswith("bitwise_") and "shift" in op:
        info = np.iinfo(dtype)
        return st.one_of(
            st.integers(0, 8 * np.dtype(dtype).itemsize + 1),
            st.integers(int(info.min), int(info.max)),
        )
    return None


@pytest.mark.parametrize("op,dtype", CASES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_binary_math_random_layouts(op, dtype, data):
    """Broadcastable shapes (0-d and zero-size included); each operand compact, sliced,
    reversed, transposed or broadcast; nan/inf/-0.0/integer limits."""
    shapes = data.draw(broadcastable_shapes(2), label="shapes").input_shapes
    x1 = data.draw(any_layout(dtype, shape=shapes[0]), label="x1")
    x2 = data.draw(
        any_layout(dtype, shape=shapes[1], elements=second_elements(op, dtype)), label="x2"
    )
    check(op, dtype, x1, x2)


def special_values(dtype):
    if dtype == "bool":
        return np.array([False, True])
    if dtype in INTEGER:
        info = np.iinfo(dtype)
        bits = 8 * np.dtype(dtype).itemsize
        vals = {
            info.min,
            info.min + 1,
            0,
            1,
            2,
            3,
            7,
            bits - 1,
            bits,
            bits + 1,
            info.max - 1,
            info.max,
        }
        if info.min < 0:
            vals |= {-1, -2, -3, -bits}
        return np.array(sorted(vals), dtype=dtype)
    return np.array(
        [
            np.nan,
            np.inf,
            -np.inf,
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -2.5,
            3.0,
            -7.0,
            1e-3,
            1e30,
            -1e30,
            65504.0,
            6e-8,
            3e38,
        ],
        dtype=np.float64,
    )


@pytest.mark.parametrize("op,dtype", CASES)
def test_binary_math_special_values_all_pairs(op, dtype):
    """Every pair of special values (outer product via broadcasting), plus a reversed and a
    0-d operand: division by zero, MIN // -1, shifts by negative and too large counts,
    nan/inf/-0.0."""
    vals = special_values(dtype)
    if dtype == "bfloat16":
        x = bfloat16_tensor(vals)
        check(op, dtype, x[:, None], x[None, :])
        check(op, dtype, x.flip(0), x)
        check(op, dtype, x[3], x)
        return
    with np.errstate(all="ignore"):
        x = vals.astype(dtype)
    check(op, dtype, x[:, None], x[None, :])
    check(op, dtype, x[::-1], x)
    check(op, dtype, np.array(x[-1]), x)
    check(op, dtype, x, np.zeros((0, 1), dtype))


def test_dtype_coverage_is_numpys():
    ints, floats, numeric = set(INTEGER), set(FLOATS), set(INTEGER + FLOATS)
    every = numeric | {"bool"}

    def declared(op):
        return set(kernel_dtypes(op))

    assert declared("floor_divide") == numeric and declared("remainder") == numeric
    for op in ["atan2", "hypot", "copysign", "logaddexp"]:
        assert declared(op) == floats, op
    for op in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        assert declared(op) == ints | {"bool"}, op
    for op in ["bitwise_left_shift", "bitwise_right_shift"]:
        assert declared(op) == ints, op
    for op in BOOL_OUT:
        with_complex = op in ("not_equal", "logical_and", "logical_or", "logical_xor")
        assert declared(op) == (every | set(COMPLEX) if with_complex else every), op
    assert set(CLIP_DTYPES) == every


@pytest.mark.parametrize("dtype", SIGNED)
def test_integer_division_edges_match_numpy(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.min, 7, -7, 7, -7, 0, info.max], dtype)
    b = np.array([-1, 0, 2, 2, -2, -2, 0, -1], dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(call("floor_divide", a, b), np.floor_divide(a, b))
        np.testing.assert_array_equal(call("remainder", a, b), np.remainder(a, b))
    assert call("floor_divide", a, b).tolist()[:2] == [info.min, 0]
    assert call("remainder", a, b).tolist()[2:6] == [1, 1, -1, -1]


def _random_bits(rng, dtype, n):
    """n values of dtype with uniformly random bit patterns: every magnitude and sign,
    subnormals, infinities and NaNs."""
    if dtype == "float32":
        return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64)


def _ulps(got, exact, dtype):
    """|got - exact| in units of the last place of exact rounded to dtype (subnormal spacing at
    the bottom of the range)."""
    spacing = np.spacing(np.abs(exact.astype(dtype))).astype(np.longdouble)
    spacing = np.maximum(spacing, np.longdouble(np.finfo(dtype).smallest_subnormal))
    return np.abs(got.astype(np.longdouble) - exact) / spacing


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_division_and_sleef_functions_over_random_bits(dtype):
    """The float32 and float64 vector loops (SLEEF's fmod, atan2 and hypot) over random bit
    patterns of both operands, and over pairs whose quotient overflows (where SLEEF's fmod gives
    NaN and the C library's does not), contiguous and strided (vectors, buffered runs, tails):
    floor_divide and remainder bit for bit as NumPy's, signs of zeros included; atan2 and hypot
    within 1 ulp of the long-double result (2 where the C library's run instead: glibc's atan2f
    measured 1.36), with the C library's non-finite results."""
    bound = 1.0 if sleef_runs() else 2.0
    rng = np.random.default_rng(7)
    n = 100_003
    tiny = np.asarray(1e-30 if dtype == "float32" else 1e-290, dtype)
    a, b = _random_bits(rng, dtype, n), _random_bits(rng, dtype, n)
    with np.errstate(all="ignore"):
        small = _random_bits(rng, dtype, n) * tiny
    pairs = [(a, b), (a, small), (small, a), (a[1::3], b[2::3])]
    for x, y in pairs:
        with np.errstate(all="ignore"):
            for op, ref in [("floor_divide", np.floor_divide), ("remainder", np.remainder)]:
                got, want = call(op, x, y), ref(x, y)
                np.testing.assert_array_equal(got, want, err_msg=op)
                assert_signs_of_zeros(got, want, op)
            wide = np.longdouble
            for op, ref in [("atan2", np.arctan2), ("hypot", np.hypot)]:
                got, exact = call(op, x, y), ref(x.astype(wide), y.astype(wide))
                rounded = exact.astype(dtype)
                finite = np.isfinite(rounded)
                np.testing.assert_array_equal(got[~finite], rounded[~finite], err_msg=op)
                assert _ulps(got[finite], exact[finite], dtype).max() <= bound, op


@pytest.mark.parametrize("dtype", INTEGER)
def test_shift_edges_match_numpy(dtype):
    bits = 8 * np.dtype(dtype).itemsize
    signed = np.iinfo(dtype).min < 0
    counts = np.array(
        list(range(0, bits + 3))
        + ([-1, -bits, np.iinfo(dtype).min] if signed else [np.iinfo(dtype).max]),
        dtype,
    )
    values = np.array(
        [1, 3, np.iinfo(dtype).max, np.iinfo(dtype).min] + ([-1, -5] if signed else []), dtype
    )
    for op, ref in [("bitwise_left_shift", np.left_shift), ("bitwise_right_shift", np.right_shift)]:
        got = call(op, values[:, None], counts[None, :])
        np.testing.assert_array_equal(got, ref(values[:, None], counts[None, :]), err_msg=op)
    if signed:
        assert call("bitwise_right_shift", np.array([-5], dtype), np.array([bits], dtype)) == -1


# ----- clip -----


def clip_reference(dtype, x, lo, hi):
    if dtype in FLOATS:
        r = to_float64(x)
        with np.errstate(invalid="ignore"):
            if lo is not None:
                r = np.maximum(r, to_float64(lo))
            if hi is not None:
                r = np.minimum(r, to_float64(hi))
        return round_to_dtype(r, dtype)
    r = np.asarray(x)
    if lo is not None:
        r = np.maximum(r, np.asarray(lo))
    if hi is not None:
        r = np.minimum(r, np.asarray(hi))
    return r


@pytest.mark.parametrize("dtype", CLIP_DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_clip_random_layouts(dtype, data):
    """x, min and max broadcast together, each in its own layout; either bound may be absent;
    nan anywhere gives nan (NumPy's and the array API's clip)."""
    shapes = data.draw(broadcastable_shapes(3), label="shapes").input_shapes
    x = data.draw(any_layout(dtype, shape=shapes[0]), label="x")
    which = data.draw(st.sampled_from(["both", "min", "max", "none"]), label="bounds")
    lo = hi = None
    if which in ("both", "min"):
        lo = data.draw(any_layout(dtype, shape=shapes[1]), label="min")
    if which in ("both", "max"):
        hi = data.draw(any_layout(dtype, shape=shapes[2]), label="max")
    before = [snapshot(v) for v in (x, lo, hi) if v is not None]
    got = call("clip", x, lo, hi)
    present = [tuple(v.shape) for v in (x, lo, hi) if v is not None]
    assert tuple(got.shape) == np.broadcast_shapes(*present)
    assert dtype_name(got) == dtype
    expected = np.broadcast_to(clip_reference(dtype, x, lo, hi), got.shape)
    assert_close(got, expected, dtype, rtol_scale=0.0, atol=0.0)
    inputs = [v for v in (x, lo, hi) if v is not None]
    assert all(unchanged(v, b) for v, b in zip(inputs, before, strict=True))


def test_clip_scalars_nan_and_keywords():
    x = np.array([-3.0, -0.5, 0.5, 3.0, np.nan], np.float32)
    np.testing.assert_array_equal(call("clip", x, -1.0, 1.0), [-1, -0.5, 0.5, 1, np.nan])
    np.testing.assert_array_equal(call("clip", x, max=0.0), [-3, -0.5, 0, 0, np.nan])
    np.testing.assert_array_equal(call("clip", x, min=0.0), [0, 0, 0.5, 3, np.nan])
    assert call("clip", x, -1.0, 1.0).dtype == np.float32
    got = call("clip", x[:4], np.array([np.nan, 0, 0, 0], np.float32), 1.0)
    np.testing.assert_array_equal(got, [np.nan, 0, 0.5, 1])
    # min > max gives max, as NumPy
    np.testing.assert_array_equal(
        call("clip", np.arange(4, dtype=np.int16), 3, 1),
        np.clip(np.arange(4, dtype=np.int16), 3, 1),
    )
    i = np.array([-200, 0, 200], np.int32)
    got = call("clip", i, np.int32(-5), np.int32(5))
    assert got.dtype == np.int32 and got.tolist() == [-5, 0, 5]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.float16])
def test_clip_vector_loops_match_numpy(dtype):
    """Long runs take the vectorised loops (scalar bounds, contiguous bounds, one bound): nans
    in x and in the bounds anywhere in a vector, bounds crossed (min > max gives max), every
    tail length, and out= in place."""
    rng = np.random.default_rng(3)
    floating = np.dtype(dtype).kind == "f"
    for n in (7, 8, 9, 31, 64, 1001):
        x = (
            (rng.standard_normal(n) * 50).astype(dtype)
            if floating
            else rng.integers(0, 200, n).astype(dtype)
        )
        lo = (
            (rng.standard_normal(n) * 20).astype(dtype)
            if floating
            else rng.integers(0, 100, n).astype(dtype)
        )
        hi = lo + dtype(30) if floating else (lo + rng.integers(0, 60, n)).astype(dtype)
        if floating:
            x[::13] = np.nan
            lo[5::17] = np.nan
            hi[3::19] = np.nan
        hi[::11] = lo[::11] - dtype(1)  # crossed
        lo_s, hi_s = dtype(10), dtype(60)
        np.testing.assert_array_equal(call("clip", x, lo_s, hi_s), np.clip(x, lo_s, hi_s))
        np.testing.assert_array_equal(call("clip", x, lo, hi), np.minimum(np.maximum(x, lo), hi))
        np.testing.assert_array_equal(call("clip", x, lo_s, None), np.maximum(x, lo_s))
        np.testing.assert_array_equal(call("clip", x, None, hi), np.minimum(x, hi))
        inplace = x.copy()
        call("clip", inplace, lo_s, hi_s, out=inplace)
        np.testing.assert_array_equal(inplace, np.clip(x, lo_s, hi_s))


def test_clip_torch_bfloat16():
    x = bfloat16_tensor(np.linspace(-4, 4, 24).reshape(4, 6)).T
    lo = bfloat16_tensor(np.array([-1.0, -2.0, -3.0, np.nan]))
    got = call("clip", x, lo, bfloat16_tensor(np.array(2.5)))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    expected = torch.clamp(torch.maximum(x, lo), max=2.5)
    assert_close(got, expected.double().numpy(), "bfloat16", rtol_scale=0.0, atol=0.0)
    assert torch.isnan(got[:, 3]).all()


def test_mixed_dtypes_promote_as_numpy():
    a = np.array([7, -7, 9], np.int8)
    b = np.array([2.0, 2.0, -4.0], np.float32)
    for op in ["floor_divide", "remainder", "less_equal", "logical_xor"]:
        got = call(op, a, b)
        want = REF[op](a, b)
        assert got.dtype == want.dtype, op
        np.testing.assert_array_equal(got, want)
    got = call("bitwise_and", np.array([True, False]), np.array([3, 3], np.uint8))
    assert got.dtype == np.uint8 and got.tolist() == [1, 0]
    assert call("floor_divide", np.array([True, True]), np.array([True, True])).dtype == np.int8


def test_logaddexp_edges_and_promotion_match_numpy():
    """Same-signed infinities (inf, inf) = inf and (-inf, -inf) = -inf, not nan; nan propagates;
    no overflow far beyond exp's range; integer and bool inputs promote as NumPy's."""
    x1 = np.array([np.inf, -np.inf, np.inf, -np.inf, np.nan, 1.0, 1e300, -1e300, 0.0, 800.0])
    x2 = np.array([np.inf, -np.inf, -np.inf, 5.0, 1.0, np.nan, 1e300, -1e300, -0.0, 800.0])
    for dtype in ["float32", "float64"]:
        with np.errstate(all="ignore"):
            a, b = x1.astype(dtype), x2.astype(dtype)
            want = np.logaddexp(a, b)
        got = call("logaddexp", a, b)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-15)
    for a, b in [
        (np.array([1, 2, -3], np.int32), np.array([4, -5, 6], np.int32)),
        (np.array([1, 2], np.int8), np.array([3.0, 4.0], np.float16)),
        (np.array([True, False]), np.array([True, True])),
    ]:
        want = np.logaddexp(a, b)
        got = call("logaddexp", a, b)
        assert got.dtype == want.dtype, (a.dtype, b.dtype, got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-3 if want.dtype == np.float16 else 1e-12)
