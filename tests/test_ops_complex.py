"""complex64 and complex128: element-wise arithmetic and functions, comparisons, where, astype,
sum/mean/prod, matmul, vecdot (conjugating x1) and einsum, against NumPy.

Finite inputs are checked against NumPy in complex128 rounded once to the dtype, within
arrays.TOLERANCE (per part; complex64 as float32). Special values (every pair of 0, -0, +-1,
+-inf, nan, ... as real and imaginary parts) are checked against NumPy in the same dtype: exp,
log, sqrt and the trigonometric functions call the C library as NumPy's npymath does, so they
match bit for bit, signed zeros and branch cuts included. NumPy fuses multiply-adds in its complex
multiply and square loops where the machine has FMA; ctensor computes the plain formula
(ar*br - ai*bi, ar*bi + ai*br), so those special values are checked against that formula written
out in NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from arrays import (
    ALL_NUMPY,
    COMPLEX,
    assert_close,
    broadcastable_shapes,
    kernel_dtypes,
    kernel_signatures,
    snapshot,
    strided_arrays,
    unchanged,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor
from ctensor import ops

PART = {"complex64": "float32", "complex128": "float64"}

INVERSE = ["asin", "acos", "atan", "asinh", "acosh", "atanh"]
UNARY_SAME = [
    "negative",
    "positive",
    "exp",
    "log",
    "sqrt",
    "square",
    "reciprocal",
    "sign",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    *INVERSE,
    "expm1",
    "log1p",
    "log2",
    "log10",
]
PREDICATES = ["isnan", "isinf", "isfinite"]
ARITH = ["add", "subtract", "multiply", "divide"]
COMPARE = ["equal", "not_equal"]
REDUCE = ["sum", "mean", "prod"]
# C library functions NumPy also calls, and NumPy's own formulas on them (expm1, log1p, log2,
# log10): bit-for-bit equal on special values.
LIBM = [
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    *INVERSE,
    "expm1",
    "log1p",
    "log2",
    "log10",
]

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -0.75, np.inf, -np.inf, np.nan, 1e30, -1e30]
SPECIAL_GRID = np.array([complex(re, im) for re in SPECIAL for im in SPECIAL])


def numpy_op(op):
    return {"abs": np.abs}.get(op, getattr(np, op))


def call(op, *args, **kw):
    with np.errstate(all="ignore"):
        return getattr(ops, op)(*args, **kw)


def reference(op, dtype, *args, **kw):
    """NumPy in complex128 on the inputs, rounded once to `dtype`'s result dtype."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wide = [np.asarray(a).astype(np.complex128) for a in args]
        return numpy_op(op)(*wide, **kw)


def finite(dtype, magnitude=1e3):
    """Finite complex elements with parts of at most `magnitude` (no overflow in products)."""
    width = 64 if dtype == "complex64" else 128
    return st.complex_numbers(
        max_magnitude=magnitude,
        allow_nan=False,
        allow_infinity=False,
        allow_subnormal=False,
        width=width,
    )


def any_complex(dtype):
    """Complex elements including nan and infinite parts."""
    return hnp.from_dtype(np.dtype(dtype), allow_subnormal=False)


def same_bits(got, expected) -> bool:
    """Equal part by part, nan where nan, signed zeros alike."""
    got = np.ascontiguousarray(np.atleast_1d(np.asarray(got)))
    expected = np.ascontiguousarray(np.atleast_1d(np.asarray(expected)))
    g = got.view(PART[str(got.dtype)])
    e = expected.view(PART[str(expected.dtype)])
    return np.array_equal(g, e, equal_nan=True) and np.array_equal(
        np.signbit(g)[~np.isnan(e)], np.signbit(e)[~np.isnan(e)]
    )


# ------------------------------------------------------------------------------------------------
# What the registry declares
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
def test_registry_declares_complex_kernels_exactly(dtype):
    part = PART[dtype]
    for op in UNARY_SAME:
        assert (dtype, dtype) in kernel_signatures(op), op
    for op in PREDICATES:
        assert (dtype, "bool") in kernel_signatures(op), op
    assert (dtype, part) in kernel_signatures("abs")
    for op in ARITH + ["matmul", "vecdot"]:
        assert (dtype, dtype, dtype) in kernel_signatures(op), op
    for op in COMPARE:
        assert (dtype, dtype, "bool") in kernel_signatures(op), op
    for op in REDUCE:
        assert (dtype, dtype) in kernel_signatures(op), op
    assert ("bool", dtype, dtype, dtype) in kernel_signatures("where")
    astype = kernel_signatures("astype")
    for other in ALL_NUMPY + ["bfloat16", *COMPLEX]:
        assert (dtype, other) in astype and (other, dtype) in astype, other


@pytest.mark.parametrize(
    "op",
    [
        "maximum",
        "minimum",
        "floor",
        "less",
        "greater_equal",
        "max",
        "argmax",
        "sort",
        "erf",
        "logsumexp",
        "var",
        "atan2",
        "remainder",
        "relu",
        "clip",
    ],
)
def test_ops_without_complex_kernels_refuse_complex(op):
    assert "complex64" not in kernel_dtypes(op) and "complex128" not in kernel_dtypes(op)
    x = np.ones(3, np.complex64)
    args = {
        "atan2": (x, x),
        "remainder": (x, x),
        "maximum": (x, x),
        "minimum": (x, x),
        "less": (x, x),
        "greater_equal": (x, x),
    }.get(op, (x,))
    with pytest.raises(ctensor.UnsupportedDTypeError):
        call(op, *args)


# ------------------------------------------------------------------------------------------------
# Unary
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", UNARY_SAME + ["abs"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_unary_random_layouts(op, dtype, data):
    growing = ("exp", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh")
    magnitude = 20.0 if op in growing else 1e3
    x = data.draw(strided_arrays(dtype, elements=finite(dtype, magnitude)), label="x")
    before = snapshot(x)
    got = call(op, x)
    expected = reference(op, dtype, x)
    out_dtype = PART[dtype] if op == "abs" else dtype
    assert str(got.dtype) == out_dtype
    assert_close(got, expected.astype(out_dtype), dtype=out_dtype, rtol_scale=4)
    assert unchanged(x, before)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", LIBM + ["negative", "positive", "reciprocal", "sign"])
def test_unary_special_values_match_numpy_bit_for_bit(op, dtype):
    x = SPECIAL_GRID.astype(dtype)
    got = call(op, x)
    with np.errstate(all="ignore"):
        expected = getattr(np, op)(x)
    bad = [
        (x[i], got[i], expected[i])
        for i in range(x.size)
        if not same_bits(got[i : i + 1], expected[i : i + 1])
    ]
    assert not bad, f"{op} {dtype}: {len(bad)} mismatches, e.g. {bad[:4]}"


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sqrt_and_log_branch_cuts(dtype):
    x = np.array([-4 + 0j, complex(-4, -0.0), -1e-30 + 0j, complex(-1e-30, -0.0)], dtype)
    for op in ("sqrt", "log"):
        got = call(op, x)
        assert same_bits(got, getattr(np, op)(x)), op
    assert np.signbit(np.asarray(call("sqrt", x)).imag).tolist() == [False, True, False, True]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_abs_special_values_and_no_overflow(dtype):
    x = SPECIAL_GRID.astype(dtype)
    got = call("abs", x)
    assert str(got.dtype) == PART[dtype]
    assert_close(got, np.abs(x), dtype=PART[dtype])
    big = np.finfo(PART[dtype]).max / 2
    huge = np.array([complex(big, big), complex(-big, 0)], dtype)
    assert np.all(np.isfinite(np.asarray(call("abs", huge))))
    assert_close(call("abs", huge), np.abs(huge.astype(np.complex128)).astype(PART[dtype]))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_square_special_values_follow_the_plain_formula(dtype):
    x = SPECIAL_GRID.astype(dtype)
    re, im = x.real, x.imag
    expected = np.empty_like(x)
    with np.errstate(all="ignore"):
        expected.real = re * re - im * im
        expected.imag = re * im + im * re
    assert same_bits(call("square", x), expected)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", PREDICATES)
def test_predicates(op, dtype):
    x = SPECIAL_GRID.astype(dtype)
    got = call(op, x)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, getattr(np, op)(x))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sign_is_z_over_abs(dtype):
    x = np.array([3 + 4j, -3 - 4j, 0j, 1e-30j, complex(np.inf, 2), complex(-1, -np.inf)], dtype)
    got = call("sign", x)
    assert_close(got, np.sign(x))
    np.testing.assert_allclose(np.abs(np.asarray(got)[:2]), 1.0, rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# Binary
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", ARITH + COMPARE)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_binary_random_layouts_with_broadcasting(op, dtype, data):
    shapes = data.draw(broadcastable_shapes(2), label="shapes")
    elements = finite(dtype, 1e3)
    if op in COMPARE:  # equal values must occur
        elements = st.sampled_from([0j, 1 + 1j, -2.5j, 3.0 + 0j, complex(1, -0.0)])
    x1 = data.draw(strided_arrays(dtype, shape=shapes.input_shapes[0], elements=elements))
    x2 = data.draw(strided_arrays(dtype, shape=shapes.input_shapes[1], elements=elements))
    before = snapshot(x1), snapshot(x2)
    got = call(op, x1, x2)
    assert got.shape == shapes.result_shape
    if op in COMPARE:
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, getattr(np, op)(x1, x2))
    else:
        assert str(got.dtype) == dtype
        expected = reference(op, dtype, x1, x2).astype(dtype)
        assert_close(got, expected, rtol_scale=4, atol=1e-12 if dtype == "complex128" else 1e-5)
    assert unchanged(x1, before[0]) and unchanged(x2, before[1])


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", ["add", "subtract", "divide", "equal", "not_equal"])
def test_binary_special_values_all_pairs_match_numpy(op, dtype):
    x1 = np.repeat(SPECIAL_GRID, SPECIAL_GRID.size).astype(dtype)
    x2 = np.tile(SPECIAL_GRID, SPECIAL_GRID.size).astype(dtype)
    got = call(op, x1, x2)
    with np.errstate(all="ignore"):
        expected = getattr(np, op)(x1, x2)
    if op in COMPARE:
        np.testing.assert_array_equal(got, expected)
    else:
        assert same_bits(got, expected)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_multiply_special_values_follow_the_plain_formula(dtype):
    x1 = np.repeat(SPECIAL_GRID, SPECIAL_GRID.size).astype(dtype)
    x2 = np.tile(SPECIAL_GRID, SPECIAL_GRID.size).astype(dtype)
    expected = np.empty_like(x1)
    with np.errstate(all="ignore"):
        expected.real = x1.real * x2.real - x1.imag * x2.imag
        expected.imag = x1.real * x2.imag + x1.imag * x2.real
    assert same_bits(call("multiply", x1, x2), expected)


def test_divide_by_zero_is_smiths_algorithm():
    x1 = np.array([1 + 1j, 1 + 0j, 0j, complex(np.nan, 1)])
    with np.errstate(all="ignore"):
        assert same_bits(call("divide", x1, np.zeros(4, complex)), x1 / np.zeros(4, complex))


@pytest.mark.parametrize(
    ("a", "b", "result"),
    [
        ("complex64", "float64", "complex128"),
        ("complex64", "float32", "complex64"),
        ("complex64", "int64", "complex128"),
        ("complex64", "int16", "complex64"),
        ("complex64", "complex128", "complex128"),
        ("float16", "complex64", "complex64"),
        ("bool", "complex128", "complex128"),
        ("uint64", "complex64", "complex128"),
    ],
)
def test_promotion_follows_numpy_2(a, b, result):
    x1 = np.arange(1, 4).astype(a)
    x2 = (np.arange(1, 4) * (1 - 1j if "complex" in b else 1)).astype(b)
    for op in ARITH:
        got = call(op, x1, x2)
        assert str(got.dtype) == result == str(getattr(np, op)(x1, x2).dtype), op
        assert_close(got, reference(op, result, x1, x2).astype(result), rtol_scale=4)


def test_python_scalars_are_weak():
    x32 = np.ones(3, np.float32)
    assert call("add", x32, 1j).dtype == np.complex64
    assert call("multiply", np.ones(3, np.complex64), 2.0).dtype == np.complex64
    assert call("add", np.ones(3, np.int8), 1 + 2j).dtype == np.complex128
    assert_close(call("add", x32, 1j), x32 + 1j)


def test_integers_and_floats_divide_into_complex_when_paired_with_complex():
    got = call("divide", np.array([1, 2, 3]), np.array([1j, 2j, 4]))
    assert got.dtype == np.complex128
    assert_close(got, np.array([1, 2, 3]) / np.array([1j, 2j, 4]))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_where_random_values(dtype):
    rng = np.random.default_rng(0)
    cond = rng.random((4, 5)) > 0.5
    x1 = (rng.standard_normal((4, 5)) + 1j * rng.standard_normal((4, 5))).astype(dtype)
    x2 = (rng.standard_normal((5,)) + 1j).astype(dtype)[::-1]
    got = call("where", cond, x1, x2)
    assert str(got.dtype) == dtype
    np.testing.assert_array_equal(got, np.where(cond, x1, x2))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_zero_size_and_0d(dtype):
    empty = np.zeros((0, 3), dtype)
    assert call("add", empty, np.ones(3, dtype)).shape == (0, 3)
    assert call("exp", empty).shape == (0, 3)
    assert call("abs", empty).dtype == np.dtype(PART[dtype])
    z = np.array(1 + 2j, dtype)
    got = call("multiply", z, z)
    assert got.shape == () and str(got.dtype) == dtype
    assert_close(got, z * z)
    assert_close(call("sqrt", z), np.sqrt(z))


@pytest.mark.parametrize("dtype", COMPLEX)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_permute_dims_moves_whole_complex_values(dtype, data):
    x = data.draw(strided_arrays(dtype, elements=any_complex(dtype)), label="x")
    axes = data.draw(st.permutations(range(x.ndim)), label="axes")
    got = call("permute_dims", x, axes=tuple(axes))
    assert same_bits(got, np.permute_dims(x, axes))


# ------------------------------------------------------------------------------------------------
# astype
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("target", ALL_NUMPY + COMPLEX)
def test_astype_from_complex_keeps_the_real_part(dtype, target):
    values = [0j, 1 + 0j, 0 + 1j, 3.75 + 2j, 100.5 - 7j, complex(0, -0.0)]
    if not target.startswith("uint") and target != "bool":  # NumPy wraps negatives: undefined
        values += [-3.75 + 2j, -120.25 + 1j]
    if "float" in target or "complex" in target:
        values += [complex(np.nan, 1), complex(np.inf, np.nan), complex(-np.inf, 5), 1e-3 + 1e3j]
    x = np.array(values, dtype)
    got = call("astype", x, dtype=target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's ComplexWarning
        expected = x.astype(target)
    assert str(got.dtype) == target
    if target in COMPLEX or target in ("float32", "float64", "float16"):
        np.testing.assert_array_equal(np.asarray(got), expected)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("source", ALL_NUMPY)
def test_astype_to_complex_has_zero_imaginary_part(dtype, source):
    x = np.array([0, 1, 7, 100], source) if source != "bool" else np.array([True, False])
    if source.startswith("float"):
        x = np.array([0.0, -0.0, 1.5, -2.25, np.inf, np.nan], source)
    got = call("astype", x, dtype=dtype)
    assert str(got.dtype) == dtype
    assert same_bits(got, x.astype(dtype))


def test_astype_complex_and_bfloat16_through_torch():
    x = torch.tensor([1.5 + 2j, -3.25 - 1j], dtype=torch.complex64)
    got = call("astype", x, dtype="bfloat16")
    assert got.dtype == torch.bfloat16
    assert got.float().tolist() == [1.5, -3.25]
    back = call("astype", got, dtype="complex128")
    assert back.dtype == torch.complex128
    assert back.tolist() == [1.5 + 0j, -3.25 + 0j]


# ------------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------------


@st.composite
def axes_for(draw, ndim):
    if draw(st.booleans()) or ndim == 0:
        return None
    return tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", REDUCE)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_reductions_random_layouts(op, dtype, data):
    magnitude = 1.5 if op == "prod" else 1e3
    x = data.draw(strided_arrays(dtype, max_side=6, elements=finite(dtype, magnitude)), label="x")
    axis = data.draw(axes_for(x.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    got = call(op, x, axis=axis, keepdims=keepdims)
    expected = reference(op, dtype, x, axis=axis, keepdims=keepdims).astype(dtype)
    assert str(got.dtype) == dtype
    scale = max(float(np.abs(x).sum()), 1.0) if op != "prod" else 1.0
    tol = 2e-6 if dtype == "complex64" else 1e-12
    assert_close(got, expected, rtol_scale=8, atol=tol * scale)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_of_empty_axes(dtype):
    x = np.zeros((0, 3), dtype)
    np.testing.assert_array_equal(call("sum", x, axis=0), np.zeros(3, dtype))
    np.testing.assert_array_equal(call("prod", x, axis=0), np.ones(3, dtype))
    got = np.asarray(call("mean", x, axis=0))
    assert np.all(np.isnan(got.real)) and np.all(np.isnan(got.imag))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_large_sums_are_pairwise_accurate(dtype):
    rng = np.random.default_rng(1)
    n = 100_003
    x = (rng.random(n) + 1j * rng.random(n)).astype(dtype)
    exact = x.astype(np.complex128).sum()
    for got in (call("sum", x), call("sum", x.reshape(-1, 1)[::1], axis=0)[0]):
        assert abs(complex(got) - exact) <= 4 * np.finfo(PART[dtype]).eps * abs(exact)
    assert_close(call("mean", x), np.array(exact / n).astype(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sum_nan_and_inf_parts(dtype):
    x = np.array([complex(np.inf, 1), complex(1, np.nan), 2 + 2j], dtype)
    with np.errstate(all="ignore"):
        assert same_bits(call("sum", x), x.sum())
        y = np.array([complex(np.inf, 0), complex(-np.inf, 1)], dtype)
        assert same_bits(call("sum", y), y.sum())


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", ["cumulative_sum", "cumulative_prod"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_scans_random_layouts(op, dtype, data):
    magnitude = 1.5 if op == "cumulative_prod" else 1e3
    x = data.draw(strided_arrays(dtype, min_dims=1, elements=finite(dtype, magnitude)), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    include_initial = data.draw(st.booleans(), label="include_initial")
    got = call(op, x, axis=axis, include_initial=include_initial)
    expected = reference(op, dtype, x, axis=axis, include_initial=include_initial).astype(dtype)
    assert str(got.dtype) == dtype
    scale = max(float(np.abs(x).sum()), 1.0) if op == "cumulative_sum" else 1.0
    tol = 2e-6 if dtype == "complex64" else 1e-12
    assert_close(got, expected, rtol_scale=8, atol=tol * scale)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_truth_of_complex_values(dtype):
    """A complex value is true where either part is non-zero (nan included)."""
    x = SPECIAL_GRID.astype(dtype)
    y = x[::-1]
    for op in ("logical_and", "logical_or", "logical_xor"):
        np.testing.assert_array_equal(call(op, x, y), getattr(np, op)(x, y))
    np.testing.assert_array_equal(call("logical_not", x), np.logical_not(x))
    grid = x.reshape(len(SPECIAL), -1)
    for op in ("any", "all"):
        for axis in (None, 0, 1):
            expected = getattr(np, op)(grid, axis=axis)
            np.testing.assert_array_equal(call(op, grid, axis=axis), expected)
    zeros = np.array([0j, complex(-0.0, 0), complex(0, -0.0)], dtype)
    assert not bool(call("any", zeros)) and bool(call("all", np.array([1e-30j], dtype)))


# ------------------------------------------------------------------------------------------------
# matmul, vecdot, einsum
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_matmul_batched_broadcast_layouts(dtype, data):
    m, k, n = (data.draw(st.integers(1, 6)) for _ in range(3))
    batch = data.draw(broadcastable_shapes(2, max_dims=2, max_side=3))
    shape1 = (k,) if data.draw(st.booleans()) else batch.input_shapes[0] + (m, k)
    shape2 = (k,) if data.draw(st.booleans()) else batch.input_shapes[1] + (k, n)
    x1 = data.draw(strided_arrays(dtype, shape=shape1, elements=finite(dtype, 10)))
    x2 = data.draw(strided_arrays(dtype, shape=shape2, elements=finite(dtype, 10)))
    got = call("matmul", x1, x2)
    expected = reference("matmul", dtype, x1, x2).astype(dtype)
    assert str(got.dtype) == dtype
    assert_close(got, expected, rtol_scale=8, atol=(1e-4 if dtype == "complex64" else 1e-11) * k)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_matmul_large_blocked(dtype):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((70, 45)) + 1j * rng.standard_normal((70, 45))).astype(dtype)
    b = (rng.standard_normal((45, 90)) + 1j * rng.standard_normal((45, 90))).astype(dtype)
    got = call("matmul", a, b.T.copy().T)
    assert_close(
        got,
        (a.astype(complex) @ b.astype(complex)).astype(dtype),
        rtol_scale=20,
        atol=1e-4 if dtype == "complex64" else 1e-12,
    )


@pytest.mark.parametrize("dtype", COMPLEX)
def test_vecdot_conjugates_the_first_operand(dtype):
    rng = np.random.default_rng(3)
    x1 = (rng.standard_normal((3, 4, 5)) + 1j * rng.standard_normal((3, 4, 5))).astype(dtype)
    x2 = (rng.standard_normal((4, 5)) + 1j * rng.standard_normal((4, 5))).astype(dtype)
    for axis in (-1, -2):
        a, b = (x1, x2[::-1]) if axis == -1 else (np.swapaxes(x1, 1, 2), np.swapaxes(x2, 0, 1))
        got = call("vecdot", a, b, axis=axis)
        expected = np.vecdot(a.astype(complex), b.astype(complex), axis=axis).astype(dtype)
        assert_close(got, expected, rtol_scale=8, atol=1e-5 if dtype == "complex64" else 1e-12)
    self_dot = np.asarray(call("vecdot", x1, x1))
    assert np.all(self_dot.imag == 0) and np.all(self_dot.real > 0)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_einsum_does_not_conjugate(dtype):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype)
    b = (rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))).astype(dtype)
    assert_close(
        call("einsum", [a, b], subscripts="ij,jk->ik"),
        np.einsum("ij,jk->ik", a, b),
        rtol_scale=8,
        atol=1e-5 if dtype == "complex64" else 1e-12,
    )
    assert_close(
        call("einsum", [a], subscripts="ij->i"),
        a.sum(axis=1),
        rtol_scale=8,
        atol=1e-5 if dtype == "complex64" else 1e-12,
    )


# ------------------------------------------------------------------------------------------------
# PyTorch tensors through DLPack
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_torch_complex_in_and_out(dtype):
    x1 = torch.randn(4, 6, dtype=dtype)[:, ::2]
    x2 = torch.randn(3, dtype=dtype)
    got = call("multiply", x1, x2)
    assert isinstance(got, torch.Tensor) and got.dtype == dtype
    torch.testing.assert_close(got, x1 * x2)
    out = torch.empty(4, 3, dtype=dtype)
    result = call("divide", x1, x2, out=out)
    assert result.data_ptr() == out.data_ptr()
    torch.testing.assert_close(out, x1 / x2)
    a = call("abs", x1)
    assert a.dtype == (torch.float32 if dtype == torch.complex64 else torch.float64)
    torch.testing.assert_close(a, x1.abs())
    m = torch.randn(2, 3, 4, dtype=dtype)
    torch.testing.assert_close(call("matmul", m, m.transpose(1, 2)), m @ m.transpose(1, 2))
    torch.testing.assert_close(call("sum", m, axis=(0, 2)), m.sum(dim=(0, 2)))


def test_torch_bfloat16_with_complex_promotes_to_complex64():
    x = torch.ones(3, dtype=torch.bfloat16)
    y = torch.full((3,), 1 + 1j, dtype=torch.complex64)
    got = call("add", x, y)
    assert got.dtype == torch.complex64 == (x + y).dtype
    torch.testing.assert_close(got, x + y)
