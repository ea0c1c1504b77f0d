"""Unary element-wise ops (negative abs exp log sqrt tanh sigmoid relu) on every dtype their
kernels declare, against a float64 NumPy reference (integers: NumPy's own result in that dtype).

Float results are compared with the float64 result rounded once to the result dtype. Ops that
are correctly rounded (negative, abs, relu, sqrt; low-precision dtypes compute in float32, which
has more than 2p+2 bits, so the double rounding is innocuous) must match exactly, signed zeros
included; transcendental ones within arrays.TOLERANCE."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import (
    COMPLEX,
    FLOAT_NUMPY,
    FLOATS,
    INTEGER,
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

UNARY = ["negative", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu"]

# float64 references (float inputs)
FLOAT_REF = {
    "negative": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0.0),  # nan propagates through np.maximum
}
EXACT = {"negative", "abs", "relu", "sqrt"}
SIGNED_ZERO = {"negative", "abs", "sqrt"}  # sqrt(-0.0) = -0.0, abs(-0.0) = +0.0

# integer / bool references, in the input dtype (NumPy wraps)
INT_REF = {
    "negative": np.negative,
    "abs": np.abs,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
}

# complex dtypes: test_ops_complex.py
UNARY_CASES = [(op, dt) for op in UNARY for dt in kernel_dtypes(op) if dt not in COMPLEX]
FLOAT_CASES = [(op, dt) for op, dt in UNARY_CASES if dt in FLOATS]


def call(op, x, **kw):
    with np.errstate(all="ignore"):
        return getattr(ctensor.ops, op)(x, **kw)


def reference(op, dtype, x):
    """Expected values: float64 NumPy (as float64, rounded to dtype) for floats; NumPy in dtype
    for integers and bool."""
    if dtype in FLOATS:
        with np.errstate(all="ignore"):
            return round_to_dtype(FLOAT_REF[op](to_float64(x)), dtype)
    if dtype == "bool":
        assert op == "abs"
        return np.array(x, copy=True)
    with np.errstate(all="ignore"):
        return INT_REF[op](np.asarray(x))


def check_unary(op, dtype, x):
    before = snapshot(x)
    got = call(op, x)
    assert dtype_name(got) == dtype, f"{op}({dtype}) gave {dtype_name(got)}"
    assert tuple(got.shape) == tuple(x.shape)
    assert type(got) is type(x) or (isinstance(x, np.ndarray) and isinstance(got, np.ndarray))
    expected = reference(op, dtype, x)
    if dtype in FLOATS and op not in EXACT:
        assert_close(got, expected, dtype)
    else:
        assert_close(got, expected, dtype, rtol_scale=0.0, atol=0.0)
    if dtype in FLOATS and op in SIGNED_ZERO:
        assert_signs_of_zeros(got, expected, f"{op}({dtype})")
    # the input is read, never written
    assert unchanged(x, before), "the input was written"


@pytest.mark.parametrize("op,dtype", UNARY_CASES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_unary_random_layouts(op, dtype, data):
    """Hypothesis inputs (nan/inf/-0.0/integer limits included) in compact, sliced, reversed,
    transposed and broadcast layouts, 0-d and zero-size included."""
    check_unary(op, dtype, data.draw(any_layout(dtype), label="x"))


def special_values(dtype):
    if dtype == "bool":
        return np.array([False, True])
    if dtype in INTEGER:
        info = np.iinfo(dtype)
        vals = {
            info.min,
            info.min + 1,
            0,
            1,
            2,
            info.max - 1,
            info.max,
            info.max // 2,
            info.max // 2 + 1,
        }
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
        2.0,
        -2.0,
        1e-3,
        10.0,
        -10.0,
        11.09,
        20.0,
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
    ]
    return np.array(vals, dtype=np.float64)


@pytest.mark.parametrize("op,dtype", UNARY_CASES)
def test_unary_special_values(op, dtype):
    """nan, +-inf, -0.0, subnormals, overflow/underflow boundaries, integer limits; as 1-d,
    as 0-d arrays, reversed, and as zero-size arrays."""
    vals = special_values(dtype)
    if dtype == "bfloat16":
        x = bfloat16_tensor(vals)
        check_unary(op, dtype, x)
        check_unary(op, dtype, x.flip(0))
        check_unary(op, dtype, x[::3])
        for k in range(len(vals)):
            check_unary(op, dtype, x[k])  # 0-d
        check_unary(op, dtype, bfloat16_tensor(np.zeros((0, 3))))
        return
    with np.errstate(all="ignore"):
        x = vals.astype(dtype)
    check_unary(op, dtype, x)
    check_unary(op, dtype, x[::-1])
    check_unary(op, dtype, x[::3])
    for k in range(len(x)):
        check_unary(op, dtype, np.array(x[k]))  # 0-d
    check_unary(op, dtype, np.zeros((0, 3), dtype))
    check_unary(op, dtype, np.zeros((4, 0), dtype).T)


def test_domain_errors_give_nan_in_the_right_places():
    x = np.array([-1.0, -0.0, 0.0, 1.0, -np.inf, np.inf, np.nan, -1e-30, 4.0])
    for dtype in FLOAT_NUMPY:
        xd = x.astype(dtype)
        got_log = to_float64(call("log", xd))
        got_sqrt = to_float64(call("sqrt", xd))
        tiny_is_nan = dtype != "float16"  # -1e-30 is -0.0 in float16
        np.testing.assert_array_equal(np.isnan(got_log), [1, 0, 0, 0, 1, 0, 1, tiny_is_nan, 0])
        np.testing.assert_array_equal(got_log[[1, 2]], [-np.inf, -np.inf])
        np.testing.assert_array_equal(got_log[5], np.inf)
        np.testing.assert_array_equal(np.isnan(got_sqrt), [1, 0, 0, 0, 1, 0, 1, tiny_is_nan, 0])
        np.testing.assert_array_equal(got_sqrt[[1, 2, 3, 5, 8]], [-0.0, 0.0, 1.0, np.inf, 2.0])
        assert np.signbit(got_sqrt[1])


def all_float16():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def all_bfloat16():
    bits = np.arange(1 << 16, dtype=np.int32).astype(np.int16)
    return torch.from_numpy(bits).view(torch.bfloat16)


@pytest.mark.parametrize("op", [op for op in UNARY if "float16" in kernel_dtypes(op)])
def test_unary_exhaustive_float16(op):
    """All 65536 float16 bit patterns, contiguous and reversed."""
    x = all_float16()
    check_unary(op, "float16", x)
    check_unary(op, "float16", x[::-1])


@pytest.mark.parametrize("op", [op for op in UNARY if "bfloat16" in kernel_dtypes(op)])
def test_unary_exhaustive_bfloat16(op):
    """All 65536 bfloat16 bit patterns (torch tensors), contiguous and strided."""
    x = all_bfloat16()
    check_unary(op, "bfloat16", x)
    check_unary(op, "bfloat16", x.reshape(256, 256).T)


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "tanh"])
@pytest.mark.parametrize("dtype", ["bool"] + INTEGER)
def test_unary_integer_inputs_promote_as_numpy(op, dtype):
    """np.sqrt(int8) is float16, np.exp(int16) float32, np.log(int64) float64, ...: ctensor picks
    the same loop (float kernels only) and gives NumPy's dtype and values."""
    if dtype == "bool":
        x = np.array([False, True, True, False])
    else:
        x = np.array([0, 1, 2, 3, 7, 100, np.iinfo(dtype).max], dtype=dtype)
    with np.errstate(all="ignore"):
        expected = getattr(np, op)(x)
    got = call(op, x)
    assert got.dtype == expected.dtype, f"{op}({dtype}) gave {got.dtype}, NumPy {expected.dtype}"
    assert_close(got, expected.astype(np.float64), str(expected.dtype))


def test_sqrt_int8_is_float16():
    got = call("sqrt", np.array([4, 9, 127], np.int8))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.sqrt(np.array([4, 9, 127], np.int8)))


@pytest.mark.parametrize("dtype", [d for d in FLOATS if d != "bfloat16"])
def test_relu_and_sigmoid_nan_inf(dtype):
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -1.0], dtype=dtype)
    relu = to_float64(call("relu", x))
    np.testing.assert_array_equal(relu, [np.nan, np.inf, 0.0, 0.0, 0.0, 0.0])
    sig = to_float64(call("sigmoid", x))
    np.testing.assert_array_equal(sig, [np.nan, 1.0, 0.0, 0.5, 0.5, sig[5]])
    assert_close(sig[5:], [1.0 / (1.0 + np.e)], dtype)


def test_negative_of_bool_is_a_type_error():
    """NumPy refuses boolean negative (use ~); ctensor must not silently compute in int8."""
    x = np.array([True, False])
    with pytest.raises(TypeError):
        np.negative(x)
    with pytest.raises(TypeError) as info:
        ctensor.ops.negative(x)
    assert isinstance(info.value, ctensor.CTensorError)


def test_unary_torch_in_torch_out_noncontiguous():
    base = torch.linspace(-3, 3, 24, dtype=torch.float32).reshape(4, 6)
    view = base.T[::2]
    got = ctensor.ops.tanh(view)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    assert_close(got, np.tanh(view.double().numpy()), "float32")
