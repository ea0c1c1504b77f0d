"""Binary element-wise ops (add subtract multiply divide maximum minimum pow), comparisons
(equal less greater) and where, on every dtype their kernels declare, with broadcasting and
arbitrary layouts, against a float64 NumPy reference (integers: NumPy in that dtype, wrapping).

+ - * / max min are correctly rounded for every float dtype (float16/bfloat16 compute in float32,
enough bits for the double rounding to be innocuous), so they must match the float64 result
rounded once to the dtype exactly, signed zeros included for + - * /; pow within
arrays.TOLERANCE."""

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
    kernel_signatures,
    round_to_dtype,
    snapshot,
    strided_arrays,
    to_float64,
    unchanged,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor

ARITH = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow"]
COMPARE = ["equal", "less", "greater"]
BINARY = ARITH + COMPARE

FLOAT_REF = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "pow": np.power,
    "equal": np.equal,
    "less": np.less,
    "greater": np.greater,
}
SIGNED_ZERO = {"add", "subtract", "multiply", "divide"}

# complex dtypes: test_ops_complex.py
BINARY_CASES = [(op, dt) for op in BINARY for dt in kernel_dtypes(op) if dt not in COMPLEX]
WHERE_DTYPES = sorted({sig[1] for sig in kernel_signatures("where")} - set(COMPLEX))


def call(op, *args, **kw):
    with np.errstate(all="ignore"):
        return getattr(ctensor.ops, op)(*args, **kw)


def expected_dtype(op, dtype):
    if op in COMPARE:
        return "bool"
    if op == "divide" and dtype not in FLOATS:
        return "float64"
    return dtype


def reference(op, dtype, x1, x2):
    if dtype in FLOATS:
        a, b = to_float64(x1), to_float64(x2)
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        # Materialise both operands: with a scalar exponent NumPy rewrites x ** 0.5 as sqrt(x)
        # (so (-inf) ** 0.5 is nan), unlike its element-wise loop and C99 pow (inf), which
        # ctensor follows.
        full_a, full_b = (
            np.array(v, copy=True) for v in np.broadcast_arrays(np.atleast_1d(a), np.atleast_1d(b))
        )
        with np.errstate(all="ignore"):
            r = FLOAT_REF[op](full_a, full_b).reshape(shape)
        return r if op in COMPARE else round_to_dtype(r, dtype)
    with np.errstate(all="ignore"):
        return FLOAT_REF[op](np.asarray(x1), np.asarray(x2))  # NumPy in dtype; divide -> float64


def check_binary(op, dtype, x1, x2):
    b1, b2 = snapshot(x1), snapshot(x2)
    got = call(op, x1, x2)
    want_dtype = expected_dtype(op, dtype)
    assert dtype_name(got) == want_dtype, f"{op}({dtype}) gave {dtype_name(got)}"
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    assert tuple(got.shape) == shape
    expected = reference(op, dtype, x1, x2)
    if op == "pow" and want_dtype in FLOATS:
        assert_close(got, expected, want_dtype)
    else:
        assert_close(got, expected, want_dtype, rtol_scale=0.0, atol=0.0)
    if op in SIGNED_ZERO and want_dtype in FLOATS:
        assert_signs_of_zeros(got, expected, f"{op}({dtype})")
    assert unchanged(x1, b1) and unchanged(x2, b2), "an input was written"


def exponent_elements(op, dtype):
    """pow on signed integers: non-negative exponents (negative ones are an error, tested
    separately)."""
    if op == "pow" and dtype in SIGNED:
        return st.integers(0, np.iinfo(dtype).max)
    return None


@pytest.mark.parametrize("op,dtype", BINARY_CASES)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_binary_random_layouts(op, dtype, data):
    """Broadcastable shapes (0-d and zero-size included); each operand compact, sliced,
    reversed, transposed or broadcast (zero strides); nan/inf/-0.0/integer limits."""
    shapes = data.draw(broadcastable_shapes(2), label="shapes").input_shapes
    x1 = data.draw(any_layout(dtype, shape=shapes[0]), label="x1")
    x2 = data.draw(
        any_layout(dtype, shape=shapes[1], elements=exponent_elements(op, dtype)), label="x2"
    )
    check_binary(op, dtype, x1, x2)


def special_values(dtype):
    if dtype == "bool":
        return np.array([False, True])
    if dtype in INTEGER:
        info = np.iinfo(dtype)
        vals = {info.min, info.min + 1, 0, 1, 2, 3, info.max - 1, info.max}
        if info.min < 0:
            vals |= {-1, -2}
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
            -2.0,
            3.0,
            1e-5,
            65504.0,
            -65504.0,
            3e38,
            1e300,
            -1e-300,
        ],
        dtype=np.float64,
    )


def special_operands(dtype, values):
    if dtype == "bfloat16":
        return bfloat16_tensor(values)
    with np.errstate(all="ignore"):
        return values.astype(dtype)


@pytest.mark.parametrize("op,dtype", BINARY_CASES)
def test_binary_special_values_all_pairs(op, dtype):
    """Every pair of special values (outer product by broadcasting (n,1) against (1,n)), as
    0-d operands, and zero-size broadcasts."""
    vals = special_values(dtype)
    x = special_operands(dtype, vals)
    exps = special_operands(dtype, vals[vals >= 0]) if op == "pow" and dtype in SIGNED else x
    check_binary(op, dtype, x[:, None], exps[None, :])
    backwards = exps.flip(0) if dtype == "bfloat16" else exps[::-1]
    check_binary(op, dtype, x[::2, None], backwards[None, :])
    check_binary(op, dtype, x[1], exps[-1])  # 0-d with 0-d
    check_binary(op, dtype, x[:0, None], exps[None, :])  # (0, n)
    check_binary(op, dtype, x[:, None][:, :0], exps[:1])  # (n, 0) with (1,)


@pytest.mark.parametrize("dtype", [d for d in FLOATS if d in kernel_dtypes("maximum")])
def test_nan_semantics(dtype):
    """maximum/minimum propagate nan from either side; comparisons with nan are false."""
    a = special_operands(dtype, np.array([np.nan, 1.0, np.nan, -np.inf, np.nan]))
    b = special_operands(dtype, np.array([1.0, np.nan, np.nan, np.nan, -np.inf]))
    for op in ["maximum", "minimum"]:
        assert np.isnan(to_float64(call(op, a, b))).all(), op
        assert np.isnan(to_float64(call(op, b, a))).all(), op
    for op in COMPARE:
        got = call(op, a, b)
        assert dtype_name(got) == "bool"
        assert not np.asarray(got).any(), op
    np.testing.assert_array_equal(call("equal", a, a), ~np.isnan(to_float64(a)))


@pytest.mark.parametrize("dtype", ["bool"] + INTEGER)
def test_divide_of_integers_is_float64(dtype):
    if dtype == "bool":
        x1, x2 = np.array([True, False, True, False]), np.array([True, True, False, False])
    else:
        info = np.iinfo(dtype)
        x1 = np.array([7, info.max, info.min, 0, 1, 0], dtype=dtype)
        x2 = np.array([2, 3, 1, 5, 0, 0], dtype=dtype)
    got = call("divide", x1, x2)
    with np.errstate(all="ignore"):
        expected = np.divide(x1, x2)
    assert got.dtype == np.float64 == expected.dtype
    assert_close(got, expected, "float64", rtol_scale=0.0, atol=0.0)


@pytest.mark.parametrize("dtype", WHERE_DTYPES)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_where_random_layouts(dtype, data):
    """where moves bits: the result must be bit-identical to NumPy's/torch's where."""
    shapes = data.draw(broadcastable_shapes(3), label="shapes").input_shapes
    cond = data.draw(strided_arrays("bool", shape=shapes[0]), label="condition")
    x1 = data.draw(any_layout(dtype, shape=shapes[1]), label="x1")
    x2 = data.draw(any_layout(dtype, shape=shapes[2]), label="x2")
    before = [np.array(cond, copy=True), snapshot(x1), snapshot(x2)]
    if dtype == "bfloat16":  # results go to the first argument's framework: pass torch
        got = call("where", torch.from_numpy(np.array(cond)), x1, x2)
    else:
        got = call("where", cond, x1, x2)
    assert dtype_name(got) == dtype
    assert tuple(got.shape) == np.broadcast_shapes(*shapes)
    if dtype == "bfloat16":
        expected = torch.where(torch.from_numpy(np.array(cond)), x1, x2)
        assert torch.equal(got.view(torch.int16), expected.view(torch.int16))
    else:
        expected = np.where(cond, x1, x2)
        if expected.dtype.kind == "f":
            bits = f"uint{expected.dtype.itemsize * 8}"
            np.testing.assert_array_equal(got.view(bits), expected.view(bits))
        else:
            np.testing.assert_array_equal(got, expected)
    assert np.array_equal(cond, before[0]) and unchanged(x1, before[1]) and unchanged(x2, before[2])


def test_where_zero_size_and_0d():
    c = np.array(True)
    assert call("where", c, np.float32(1.5), np.float32(2.5)) == np.float32(1.5)
    got = call("where", np.zeros((0, 1), bool), np.ones((1, 4), np.int16), np.ones(4, np.int16))
    assert got.shape == (0, 4) and got.dtype == np.int16


@pytest.mark.parametrize("dtype", [d for d in kernel_dtypes("pow") if d in INTEGER])
def test_integer_pow_matches_numpy(dtype):
    """Integer pow wraps as NumPy's np.power in that dtype (large exponents included)."""
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    base = np.concatenate(
        [
            np.array([0, 1, 2, 3, info.max, info.min], dtype=dtype),
            rng.integers(info.min, info.max, 200, dtype=dtype, endpoint=True),
        ]
    )
    exps = np.concatenate(
        [
            np.array([0, 1, 2, 63, 64, 65], dtype=dtype),
            rng.integers(0, min(info.max, 200), 200, dtype=dtype, endpoint=True),
        ]
    )
    got = call("pow", base, exps)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.power(base, exps))
    # every base with every small exponent
    small = np.arange(0, 20, dtype=dtype)
    np.testing.assert_array_equal(
        call("pow", base[:, None], small[None, :]), np.power(base[:, None], small[None, :])
    )


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_binary_torch_noncontiguous_float32(data):
    """torch in -> torch out, including transposed and expanded views."""
    shapes = data.draw(broadcastable_shapes(2, min_dims=2), label="shapes").input_shapes
    a = torch.from_numpy(data.draw(hnp.arrays(np.float32, shapes[0][::-1])))
    a = a.permute(*reversed(range(a.ndim)))  # transposed
    b = torch.from_numpy(data.draw(hnp.arrays(np.float32, shapes[1])))
    got = call("multiply", a, b)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    with np.errstate(all="ignore"):
        expected = round_to_dtype(a.double().numpy() * b.double().numpy(), "float32")
    assert_close(got, expected, "float32", rtol_scale=0.0, atol=0.0)


@pytest.mark.parametrize("dtype", ["float32", "int16", "float16", "bfloat16", "uint64"])
def test_large_strided_broadcast_runs_split_across_threads(dtype):
    """Big enough for the CPU engine to split the work (threads, chunks of the outer loops):
    transposed, reversed, sliced and zero-stride operands together, against NumPy."""
    rng = np.random.default_rng(3)
    a64 = rng.integers(-50, 50, (31, 1, 1030)).astype(np.float64)
    b64 = rng.integers(1, 9, (2 * 47, 1030)).astype(np.float64)
    c = rng.integers(0, 2, (1030,)).astype(bool)
    if dtype == "uint64":
        a64 = np.abs(a64)
    if dtype == "bfloat16":
        a = bfloat16_tensor(a64).flip(2)
        b = bfloat16_tensor(b64)[::2]
        a_np, b_np = a.double().numpy(), b.double().numpy()
        cond = torch.from_numpy(c)
    else:
        a = a64.astype(dtype)[:, :, ::-1]
        b = np.ascontiguousarray(b64.astype(dtype).T).T[::2]  # column-major, sliced
        a_np, b_np = a.astype(np.float64), b.astype(np.float64)
        cond = c
    for op in ["add", "multiply", "maximum", "less"]:
        got = call(op, a, b)
        assert tuple(got.shape) == (31, 47, 1030)
        want = FLOAT_REF[op](a_np, b_np)
        if op not in COMPARE and dtype in INTEGER:
            want = FLOAT_REF[op](np.asarray(a), np.asarray(b))
        elif op not in COMPARE:
            want = round_to_dtype(want, dtype)
        assert_close(got, want, expected_dtype(op, dtype), rtol_scale=0.0, atol=0.0)
    got = call("where", cond, a, b)
    assert_close(got, np.where(c, a_np, b_np), dtype, rtol_scale=0.0, atol=0.0)
