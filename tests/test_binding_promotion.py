"""Mixed dtypes promote as NumPy 2 does (PyTorch's rules for bfloat16), with NumPy's ufunc loop
selection when the promoted dtype has no kernel, and weak Python scalars (NEP 50)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch

import ctensor
from ctensor import ops
from ctensor._dtypes import can_cast_safe, promote

NUMPY_DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
]
TOLERANCE = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}


def _sample(dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array([True, False, True, True, False])
    return np.array([0, 1, 2, 5, 7], dtype=dtype)


def _check(result, expected):
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(
            result.astype(np.float64),
            expected.astype(np.float64),
            rtol=TOLERANCE[expected.dtype.name],
        )
    else:
        np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize(
    "ct_op,np_op",
    [
        (ops.add, np.add),
        (ops.multiply, np.multiply),
        (ops.maximum, np.maximum),
        (ops.equal, np.equal),
        (ops.less, np.less),
    ],
)
def test_binary_promotion_matches_numpy(ct_op, np_op):
    for left, right in itertools.product(NUMPY_DTYPES, NUMPY_DTYPES):
        x, y = _sample(left), _sample(right)[::-1]
        _check(ct_op(x, y), np_op(x, y))


@pytest.mark.parametrize(
    "ct_op,np_op", [(ops.sqrt, np.sqrt), (ops.exp, np.exp), (ops.tanh, np.tanh), (ops.log, np.log)]
)
def test_unary_loop_selection_matches_numpy(ct_op, np_op):
    for dtype in NUMPY_DTYPES:
        x = _sample(dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # log(0)
            expected = np_op(x)
        _check(ct_op(x), expected)


def test_sqrt_of_int8_is_float16_as_in_numpy():
    assert ops.sqrt(np.arange(4, dtype=np.int8)).dtype == np.sqrt(np.arange(4, dtype=np.int8)).dtype
    assert ops.sqrt(np.arange(4, dtype=np.uint16)).dtype == np.float32
    assert ops.sqrt(np.arange(4, dtype=np.int64)).dtype == np.float64


def test_where_keeps_the_condition_bool():
    condition = np.array([True, False, True])
    x1 = np.array([1, 2, 3], np.int8)
    x2 = np.array([0.5, 1.5, 2.5], np.float32)
    _check(ops.where(condition, x1, x2), np.where(condition, x1, x2))


def test_matmul_promotes_both_operands():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    _check(ops.matmul(a, b), np.matmul(a, b))


def test_conv2d_promotes_weight_to_input():
    x = torch.randn(1, 2, 5, 5, dtype=torch.float64)
    w = torch.randn(3, 2, 3, 3, dtype=torch.float32)
    result = ops.conv2d(x, w)
    assert result.dtype == torch.float64
    expected = torch.nn.functional.conv2d(x, w.double())
    # Each element sums 18 products in some order: off by a few ulp of the sum of their
    # magnitudes, which is far more than an ulp of an element that cancels to near 0.
    magnitudes = torch.nn.functional.conv2d(x.abs(), w.double().abs()).numpy()
    np.testing.assert_allclose(
        result.numpy(), expected.numpy(), rtol=1e-12, atol=float(magnitudes.max()) * 1e-14
    )


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("scalar", [True, 3, -2, 2.5])
def test_weak_python_scalars_match_numpy(dtype, scalar):
    x = _sample(dtype)
    try:
        expected = np.add(x, scalar)
    except (OverflowError, TypeError) as e:  # e.g. uint8 + -2 in NumPy 2
        with pytest.raises(type(e)):
            ops.add(x, scalar)
        return
    _check(ops.add(x, scalar), expected)
    _check(ops.add(scalar, x), np.add(scalar, x))


def test_scalar_in_where():
    condition = np.array([True, False])
    x = np.array([1.5, 2.5], np.float32)
    _check(ops.where(condition, x, 0.0), np.where(condition, x, np.float32(0.0)))
    _check(ops.where(condition, 1, x), np.where(condition, np.float32(1), x))


@pytest.mark.parametrize(
    "left,right",
    [
        (torch.bfloat16, torch.float16),
        (torch.bfloat16, torch.int32),
        (torch.bfloat16, torch.bool),
        (torch.bfloat16, torch.float32),
        (torch.bfloat16, torch.float64),
        (torch.uint8, torch.bfloat16),
    ],
)
def test_bfloat16_promotes_as_torch(left, right):
    x = torch.ones(4, dtype=left)
    y = torch.full((4,), 2).to(right)
    result = ops.add(x, y)
    assert result.dtype == torch.promote_types(left, right)
    assert torch.equal(result.double(), (x.double() + y.double()))


def test_bfloat16_safe_casts():
    assert can_cast_safe("int8", "bfloat16") and can_cast_safe("uint8", "bfloat16")
    assert not can_cast_safe("int16", "bfloat16") and not can_cast_safe("float16", "bfloat16")
    assert can_cast_safe("bfloat16", "float32") and not can_cast_safe("bfloat16", "float16")
    assert promote(["bfloat16", "float16"]) == "float32"
    assert promote(["int64", "uint64"]) == "float64"


def test_not_elementwise_single_input_is_passed_as_is():
    # sum has kernels for every dtype: nothing to do; softmax refuses ints in C.
    assert ops.sum(np.arange(4, dtype=np.int8)).dtype == np.sum(np.arange(4, dtype=np.int8)).dtype
    with pytest.raises(ctensor.UnsupportedDTypeError):
        ops.softmax(np.arange(4, dtype=np.int8))


def test_mixed_torch_dtypes_give_torch_result_of_promoted_dtype():
    x = torch.arange(4, dtype=torch.int16)
    y = torch.arange(4, dtype=torch.float32)
    result = ops.multiply(x, y)
    assert isinstance(result, torch.Tensor) and result.dtype == torch.float32


def test_subtract_and_negative_refuse_bool_as_numpy_does():
    b = np.array([True, False])
    out = np.full(2, 5, np.int8)
    for call in (
        lambda: ops.subtract(b, b),
        lambda: ops.negative(b),
        lambda: ops.subtract(b, b, out=out),
    ):
        with pytest.raises(ctensor.UnsupportedDTypeError):
            call()
    assert (out == 5).all()
    _check(ops.pow(b, b), np.power(b, b))  # NumPy computes this one in int8: so do we
    _check(ops.subtract(b, 2), np.subtract(b, 2))


@pytest.mark.parametrize("op", ["equal", "less", "greater"])
def test_signed_with_uint64_compares_exactly(op):
    u = np.array([2**63, 2**64 - 1, 2**63, 5, 0], np.uint64)
    for signed in ("int8", "int64"):
        s = np.array([-1, -1, 100, 5, 0]).astype(signed)
        for x1, x2 in ((u, s), (s, u)):
            _check(getattr(ops, op)(x1, x2), getattr(np, op)(x1, x2))
    # With out=, torch tensors, and a raw capsule (consumed once through the several steps).
    out = np.zeros(5, bool)
    assert ops.less(s, u, out=out) is out
    np.testing.assert_array_equal(out, np.less(s, u))
    t = ops.less(torch.from_numpy(s), torch.from_numpy(u))
    assert isinstance(t, torch.Tensor)
    np.testing.assert_array_equal(t.numpy(), np.less(s, u))
    from ctensor.testing import CountedCapsule

    counted = CountedCapsule(u)
    np.testing.assert_array_equal(ops.greater(s, counted.capsule), np.greater(s, u))
    assert counted.deleter_calls == 1


@pytest.mark.parametrize("value", [200, -129, 2**40, 2**63, 2**64 + 1, -(2**70)])
def test_python_ints_out_of_range_compare_and_divide_exactly(value):
    x = np.array([-128, -1, 0, 1, 127], np.int8)
    for op in ("equal", "less", "greater", "divide"):
        with np.errstate(divide="ignore"):
            _check(getattr(ops, op)(x, value), getattr(np, op)(x, value))
            _check(getattr(ops, op)(value, x), getattr(np, op)(value, x))
    with pytest.raises(OverflowError):
        np.add(x, value)
    with pytest.raises(OverflowError):
        ops.add(x, value)  # as NumPy, other ops refuse an int that does not fit
