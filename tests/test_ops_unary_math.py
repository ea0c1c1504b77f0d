"""Unary math ops (positive sign expm1 log1p log2 log10 square reciprocal, trigonometric and
hyperbolic functions, floor ceil trunc round, isnan isinf isfinite logical_not bitwise_invert
erf) and activations (leaky_relu elu selu gelu silu softplus hardswish) on every dtype their
kernels declare.

Float results are compared with the float64 result (NumPy; torch float64 for erf and the
activations) rounded once to the result dtype: exactly, signed zeros included, for the
correctly rounded ops; within arrays.TOLERANCE for the others. Integers and bool are compared
with NumPy's own result in that dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import (
    COMPLEX,
    FLOATS,
    INTEGER,
    TOLERANCE,
    any_layout,
    assert_close,
    assert_signs_of_zeros,
    bfloat16_tensor,
    dtype_name,
    kernel_dtypes,
    round_to_dtype,
    snapshot,
    to_float64,
    unchanged,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor


def torch64(fn):
    def ref(x, **kw):
        return fn(torch.from_numpy(np.asarray(x, dtype=np.float64)), **kw).numpy()

    return ref


def hardswish(x):
    """torch's x * relu6(x + 3) / 6, except x itself from 3 up: torch's x * 6 / 6 overflows to
    inf for huge x (float32 from 5.7e37), ctensor's does not."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        return np.where(x >= 3, x, x * np.clip(x + 3, 0, 6) / 6)


# float64 references (float inputs); activations take their attributes as keywords
FLOAT_REF = {
    "positive": np.positive,
    "sign": np.sign,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "log2": np.log2,
    "log10": np.log10,
    "square": np.square,
    "reciprocal": np.reciprocal,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": np.round,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "logical_not": np.logical_not,
    "erf": torch64(torch.erf),
    "leaky_relu": torch64(F.leaky_relu),
    "elu": torch64(F.elu),
    "selu": torch64(F.selu),
    "gelu": torch64(F.gelu),
    "silu": torch64(F.silu),
    "softplus": torch64(F.softplus),
    "hardswish": hardswish,
    "hardsigmoid": torch64(F.hardsigmoid),
    "mish": torch64(F.mish),
}
# integer / bool references, in the input dtype
INT_REF = {
    "positive": np.positive,
    "sign": np.sign,
    "square": np.square,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": np.round,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "logical_not": np.logical_not,
    "bitwise_invert": np.invert,
}
BOOL_OUT = {"isnan", "isinf", "isfinite", "logical_not"}
EXACT = {"positive", "sign", "square", "reciprocal", "floor", "ceil", "trunc", "round"} | BOOL_OUT
SIGNED_ZERO = {"positive", "sign", "floor", "ceil", "trunc", "round", "reciprocal"}
# gelu's 1 + erf / 1 + tanh cancels for negative x: an absolute error of a few eps * |x|
INPUT_SCALED = {"gelu"}
ATTR_CASES = {
    "leaky_relu": [{}, {"negative_slope": 0.2}, {"negative_slope": -1.5}],
    "elu": [{}, {"alpha": 0.5}, {"alpha": 2.0}],
    "gelu": [{}, {"approximate": "none"}, {"approximate": "tanh"}],
    "softplus": [{}, {"beta": 2.0}, {"beta": 0.5, "threshold": 5.0}],
}

OPS = list(FLOAT_REF) + ["bitwise_invert"]
# complex dtypes: test_ops_complex.py
CASES = [(op, dt) for op in OPS for dt in kernel_dtypes(op) if dt not in COMPLEX]
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def call(op, x, **kw):
    with np.errstate(all="ignore"):
        return getattr(ctensor.ops, op)(x, **kw)


def out_dtype(op, dtype):
    if op == "round" and dtype == "bool":
        return "float16"  # NumPy: np.round(bool) goes through rint's float16 loop
    return "bool" if op in BOOL_OUT else dtype


def reference(op, dtype, x, **kw):
    if dtype in FLOATS:
        with np.errstate(all="ignore"):
            r = FLOAT_REF[op](to_float64(x), **kw)
        return r if op in BOOL_OUT else round_to_dtype(r, dtype)
    with np.errstate(all="ignore"):
        return INT_REF[op](np.asarray(x))


def check(op, dtype, x, **kw):
    before = snapshot(x)
    got = call(op, x, **kw)
    want = out_dtype(op, dtype)
    assert dtype_name(got) == want, f"{op}({dtype}) gave {dtype_name(got)}"
    assert tuple(got.shape) == tuple(x.shape)
    assert type(got) is type(x) or (isinstance(x, np.ndarray) and isinstance(got, np.ndarray))
    expected = reference(op, dtype, x, **kw)
    if dtype in FLOATS and op in INPUT_SCALED:
        g, e, x64 = to_float64(got), np.asarray(expected), to_float64(x)
        rtol, atol = TOLERANCE[dtype]
        with np.errstate(invalid="ignore"):
            bound = rtol * np.abs(e) + atol + 4 * EPS[dtype] * np.abs(x64)
            ok = (g == e) | (np.isnan(g) & np.isnan(e)) | (np.abs(g - e) <= bound)
        assert ok.all(), f"{op}({dtype}): {g[~ok]} != {e[~ok]} for x = {x64[~ok]}"
    elif dtype in FLOATS and op not in EXACT:
        assert_close(got, expected, dtype)
    else:
        assert_close(got, expected, want, rtol_scale=0.0, atol=0.0)
    if dtype in FLOATS and op in SIGNED_ZERO:
        assert_signs_of_zeros(got, expected, f"{op}({dtype})")
    assert unchanged(x, before), "the input was written"


@pytest.mark.parametrize("op,dtype", CASES)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_unary_math_random_layouts(op, dtype, data):
    """Hypothesis inputs (nan/inf/-0.0/integer limits) in compact, sliced, reversed, transposed
    and broadcast layouts, 0-d and zero-size included; activations with drawn attributes."""
    x = data.draw(any_layout(dtype), label="x")
    kw = data.draw(st.sampled_from(ATTR_CASES.get(op, [{}])), label="attrs")
    check(op, dtype, x, **kw)


def special_values(dtype):
    if dtype == "bool":
        return np.array([False, True])
    if dtype in INTEGER:
        info = np.iinfo(dtype)
        vals = {info.min, info.min + 1, 0, 1, 2, info.max - 1, info.max, info.max // 2}
        if info.min < 0:
            vals |= {-1, -2, info.min // 2}
        return np.array(sorted(vals), dtype=dtype)
    vals = [
        np.nan,
        -np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        -2.5,
        3.5,
        -3.0,
        3.0,
        -2.0,
        2.0,
        1e-3,
        0.999,
        -0.999,
        1.001,
        10.0,
        -10.0,
        20.0,
        21.0,
        -20.0,
        88.7,
        -88.7,
        100.0,
        -100.0,
        709.0,
        -745.0,
        1e300,
        -1e300,
        65504.0,
        -65504.0,
        6.1e-5,
        6e-8,
        -6e-8,
        1e-40,
        3e38,
        -3e38,
        8388609.0,
        -8388609.5,
        1e16 + 2,
    ]
    return np.array(vals, dtype=np.float64)


@pytest.mark.parametrize("op,dtype", CASES)
def test_unary_math_special_values(op, dtype):
    """nan, +-inf, -0.0, halves (rounding), domain edges, overflow boundaries, integer limits;
    1-d, reversed, sliced, 0-d and zero-size."""
    vals = special_values(dtype)
    for kw in ATTR_CASES.get(op, [{}]):
        if dtype == "bfloat16":
            x = bfloat16_tensor(vals)
            views = [x, x.flip(0), x[::3], x[5], bfloat16_tensor(np.zeros((0, 3)))]
        else:
            with np.errstate(all="ignore"):
                x = vals.astype(dtype)
            views = [
                x,
                x[::-1],
                x[::3],
                np.array(x[-1]),
                np.zeros((0, 3), dtype),
                np.zeros((4, 0), dtype).T,
            ]
        for view in views:
            check(op, dtype, view, **kw)
        for k in range(len(vals)):
            check(op, dtype, x[k] if dtype == "bfloat16" else np.array(x[k]), **kw)  # 0-d


def all_float16():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def all_bfloat16():
    return torch.from_numpy(np.arange(1 << 16, dtype=np.int32).astype(np.int16)).view(
        torch.bfloat16
    )


@pytest.mark.parametrize("op", [op for op in OPS if "float16" in kernel_dtypes(op)])
def test_unary_math_exhaustive_float16(op):
    """All 65536 float16 bit patterns, contiguous and reversed."""
    x = all_float16()
    check(op, "float16", x)
    check(op, "float16", x[::-1])


@pytest.mark.parametrize("op", [op for op in OPS if "bfloat16" in kernel_dtypes(op)])
def test_unary_math_exhaustive_bfloat16(op):
    """All 65536 bfloat16 bit patterns (torch tensors), contiguous and transposed."""
    x = all_bfloat16()
    check(op, "bfloat16", x)
    check(op, "bfloat16", x.reshape(256, 256).T)


def test_dtype_coverage_is_numpys():
    """The kernels declare exactly what NumPy (torch for the activations) defines."""
    numeric = set(INTEGER + FLOATS)

    def declared(op):
        return set(kernel_dtypes(op))

    assert declared("positive") == numeric | set(COMPLEX)
    assert declared("sign") == numeric | set(COMPLEX)
    assert declared("square") == numeric | set(COMPLEX)
    assert declared("round") == {"bool"} | numeric
    for op in ["floor", "ceil", "trunc"]:
        assert declared(op) == {"bool"} | numeric, op
    for op in ["isnan", "isinf", "isfinite", "logical_not"]:
        assert declared(op) == {"bool"} | numeric | set(COMPLEX), op
    assert declared("bitwise_invert") == {"bool"} | set(INTEGER)
    for op in [
        "erf",
        "leaky_relu",
        "elu",
        "selu",
        "gelu",
        "silu",
        "softplus",
        "hardswish",
        "hardsigmoid",
        "mish",
    ]:
        assert declared(op) == set(FLOATS), op
    for op in [
        "expm1",
        "log1p",
        "log2",
        "log10",
        "reciprocal",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
    ]:
        assert declared(op) == set(FLOATS + COMPLEX), op


@pytest.mark.parametrize("op", ["reciprocal", "sin", "expm1", "log2", "atanh"])
@pytest.mark.parametrize("dtype", ["bool"] + INTEGER)
def test_integer_inputs_promote_to_float(op, dtype):
    """Float-only ops take integer and bool inputs in the float dtype NumPy would pick for a
    float loop (int8 -> float16, int16 -> float32, int32/int64 -> float64); reciprocal never
    computes in integers (NumPy's integer reciprocal truncates 1/x to 0)."""
    x = np.array([0, 1, 2, 3], dtype=dtype) if dtype != "bool" else np.array([False, True])
    expected_dtype = np.sqrt(x).dtype
    got = call(op, x)
    assert got.dtype == expected_dtype, f"{op}({dtype}) gave {got.dtype}"
    with np.errstate(all="ignore"):
        want = FLOAT_REF[op](x.astype(np.float64))
    assert_close(got, round_to_dtype(want, str(expected_dtype)), str(expected_dtype))


def test_round_halves_to_even_and_keeps_integers():
    x = np.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, -0.0], np.float32)
    got = call("round", x)
    np.testing.assert_array_equal(got, [-4, -2, -2, -0.0, 0, 2, 2, 4, 4, -0.0])
    assert np.signbit(got[3]) and np.signbit(got[-1])
    i = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 7], np.int64)
    np.testing.assert_array_equal(call("round", i), i)
    assert call("round", i).dtype == np.int64


def test_round_of_bool_is_float16_as_numpy():
    x = np.array([True, False, True])
    got = call("round", x)
    assert got.dtype == np.round(x).dtype == np.float16
    np.testing.assert_array_equal(got, [1.0, 0.0, 1.0])


def test_gelu_invalid_approximate_is_a_value_error():
    with pytest.raises(ValueError) as info:
        ctensor.ops.gelu(np.ones(3, np.float32), approximate="erf")
    assert isinstance(info.value, ctensor.CTensorError)
    with pytest.raises(ctensor.CTensorError):
        ctensor.ops.gelu(np.ones(3, np.float32), approximate="")


@pytest.mark.parametrize(
    "op", ["gelu", "silu", "elu", "hardswish", "softplus", "leaky_relu", "hardsigmoid", "mish"]
)
def test_activations_reject_integers_like_torch(op):
    """DL activations are float-only; integers promote to float like the other float-only
    ops do, and the values match torch in that float dtype."""
    x = np.array([-3, -1, 0, 1, 3], np.int32)
    got = call(op, x)
    assert got.dtype == np.float64
    assert_close(got, FLOAT_REF[op](x.astype(np.float64)), "float64")


def test_bitwise_invert_bool_is_logical_not():
    x = np.array([True, False])
    got = call("bitwise_invert", x)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, [False, True])
    assert got.view(np.uint8).tolist() == [0, 1]


def test_activation_torch_in_torch_out():
    base = torch.linspace(-6, 6, 48, dtype=torch.float32).reshape(6, 8)
    view = base.T[::2]
    for op, fn, kw in [
        ("gelu", F.gelu, {"approximate": "tanh"}),
        ("silu", F.silu, {}),
        ("hardsigmoid", F.hardsigmoid, {}),
        ("mish", F.mish, {}),
        ("softplus", F.softplus, {"beta": 2.0}),
        ("elu", F.elu, {"alpha": 0.3}),
        ("leaky_relu", F.leaky_relu, {"negative_slope": 0.1}),
    ]:
        got = getattr(ctensor.ops, op)(view, **kw)
        assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
        torch.testing.assert_close(got, fn(view, **kw))


@pytest.mark.parametrize("n", [1, 255, 256, 257, 1000, 4099])
@pytest.mark.parametrize(
    "op,kw",
    [
        ("gelu", {}),
        ("gelu", {"approximate": "tanh"}),
        ("softplus", {}),
        ("softplus", {"beta": 0.5, "threshold": 5.0}),
    ],
)
def test_float32_activation_chunks(op, kw, n):
    """float32 gelu (a loop per form, over erf and tanh computed in double) and softplus (its
    elementary functions over chunks of 256 elements): every chunk and vector boundary, special
    values, against torch in float64; strided, reversed and in-place calls give the same bits."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(2 * n) * 6).astype(np.float32)
    special = np.array(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 100.0, -100.0, 3e38, -3e38, 1e-30], np.float32
    )
    x[rng.integers(0, 2 * n, min(n, len(special)))] = special[: min(n, len(special))]
    fn = {"gelu": F.gelu, "softplus": F.softplus}[op]
    contiguous = getattr(ctensor.ops, op)(x, **kw)
    reference = fn(torch.from_numpy(x).double(), **kw).numpy()
    np.testing.assert_array_equal(np.isnan(contiguous), np.isnan(reference))
    infinite = np.isinf(reference)
    np.testing.assert_array_equal(contiguous[infinite], reference[infinite])
    finite = np.isfinite(reference)
    scale = np.abs(x[finite]).astype(np.float64) if op == "gelu" else np.abs(reference[finite])
    np.testing.assert_array_less(
        np.abs(contiguous[finite] - reference[finite]), 4e-7 * np.maximum(scale, 1e-30) + 1e-37
    )
    for view in (x[::2], x[::-1]):
        np.testing.assert_array_equal(
            getattr(ctensor.ops, op)(view, **kw).view(np.uint32),
            getattr(ctensor.ops, op)(view.copy(), **kw).view(np.uint32),
        )
    inplace = x.copy()
    getattr(ctensor.ops, op)(inplace, out=inplace, **kw)
    np.testing.assert_array_equal(inplace.view(np.uint32), contiguous.view(np.uint32))


# float32 activations over the library's own exponentials (vector_math.h: exp within an ulp,
# expm1 in double): the largest error in ulps of the float64 result, and its bound (torch's own
# float32 sigmoid and silu reach 2.38 and 2.27 over this sweep)
ACTIVATION_ULPS = {
    "sigmoid": (torch.sigmoid, 2.5),
    "silu": (F.silu, 2.5),
    "elu": (F.elu, 1.0),
    "selu": (F.selu, 2.0),
    "leaky_relu": (F.leaky_relu, 1.0),
    "hardswish": (F.hardswish, 2.0),
    "hardsigmoid": (F.hardsigmoid, 1.0),
    "mish": (F.mish, 3.0),  # torch's own float32 mish reaches 2.51 here
}


@pytest.mark.parametrize("op", sorted(ACTIVATION_ULPS))
def test_float32_activations_within_ulps(op):
    """Every magnitude from 1e-30 (where expm1 must not cancel) to 80, both signs; strided
    runs (the loops' other path) give the contiguous bits."""
    fn, bound = ACTIVATION_ULPS[op]
    magnitudes = np.geomspace(1e-30, 80, 400_001).astype(np.float32)
    x = np.concatenate([magnitudes, -magnitudes, np.float32([0.0, -0.0])])
    got = getattr(ctensor.ops, op)(x).astype(np.float64)
    reference = fn(torch.from_numpy(x.astype(np.float64))).numpy()
    ulp = np.spacing(np.abs(reference).astype(np.float32)).astype(np.float64)
    err = np.abs(got - reference) / ulp
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{op}({x[worst]!r}): {err[worst]:.2f} ulp"
    zeros = x[-2:]
    assert_signs_of_zeros(getattr(ctensor.ops, op)(zeros), fn(torch.from_numpy(zeros)).numpy(), op)
    np.testing.assert_array_equal(
        getattr(ctensor.ops, op)(x[::3]).view(np.uint32),
        getattr(ctensor.ops, op)(x[::3].copy()).view(np.uint32),
    )
