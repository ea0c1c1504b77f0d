"""Element-wise ops, cross-cutting behaviour: NumPy 2 type promotion (mixed dtypes, Python
scalars; PyTorch's rules for bfloat16), in-place calls (out= exactly an input), aliasing errors
(out= partially overlapping an input or itself), integer pow with negative exponents, and dtypes
NumPy refuses. Per-op numerics live in test_ops_unary.py, test_ops_binary.py and
test_ops_astype.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import (
    ALL_NUMPY,
    FLOAT_NUMPY,
    SIGNED,
    UNSIGNED,
    assert_close,
    dtype_name,
    kernel_dtypes,
    round_to_dtype,
)
from numpy.lib.stride_tricks import as_strided

import ctensor

ARITH = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow"]
COMPARE = ["equal", "less", "greater"]
BINARY = ARITH + COMPARE
UNARY = ["negative", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu"]
NUMPY_UFUNC = {op: getattr(np, "power" if op == "pow" else op) for op in BINARY}


def call(op, *args, **kw):
    with np.errstate(all="ignore"):
        return getattr(ctensor.ops, op)(*args, **kw)


def small_values(dtype, offset):
    if dtype == "bool":
        return np.array([False, True, True, False, True, True])
    return (np.array([0, 1, 2, 3, 5, 7]) + offset).astype(dtype)


# --------------------------------------------------------------------------- promotion -----------


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("d1", ALL_NUMPY)
def test_mixed_dtype_promotion_matches_numpy(op, d1):
    """Every pair of NumPy dtypes: ctensor's result dtype is np.result_type's (NumPy's ufunc
    dtype: divide of integers is float64, comparisons bool) and the values NumPy's; where NumPy
    raises TypeError (e.g. bool - bool), ctensor raises a TypeError too."""
    for d2 in ALL_NUMPY:
        x1, x2 = small_values(d1, 0), small_values(d2, 1)
        if op == "subtract" and d1 == d2 == "bool":
            continue  # the dedicated test below
        try:
            with np.errstate(all="ignore"):
                expected = NUMPY_UFUNC[op](x1, x2)
        except TypeError:
            with pytest.raises(TypeError):
                call(op, x1, x2)
            continue
        got = call(op, x1, x2)
        assert got.dtype == expected.dtype, f"{op}({d1}, {d2}): {got.dtype} != {expected.dtype}"
        assert_close(got, expected, str(expected.dtype))


def test_promotion_examples():
    i8 = np.array([-3, 100, 127], np.int8)
    f32 = np.array([0.5, -1.25, 3.0], np.float32)
    u8 = np.array([200, 1, 255], np.uint8)
    b = np.array([True, False, True])
    i32 = np.array([2**31 - 1, -5, 7], np.int32)
    got = call("add", i8, f32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, i8.astype(np.float32) + f32)
    got = call("add", u8, i8)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, u8.astype(np.int16) + i8)
    got = call("add", b, i32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, b + i32)  # wraps as NumPy does
    got = call("multiply", np.array([2**63], np.uint64), np.array([-1], np.int64))
    assert got.dtype == np.float64 and got[0] == -(2.0**63)


def test_comparisons_of_uint64_with_int64_are_exact():
    """NumPy 2 compares uint64 with int64 exactly (no detour through float64, which would call
    2**63 and 2**63 - 1 equal)."""
    u = np.array([2**63, 2**64 - 1, 2**63, 5], np.uint64)
    i = np.array([2**63 - 1, -1, -(2**63), 5], np.int64)
    for op in COMPARE:
        expected = NUMPY_UFUNC[op](u, i)
        np.testing.assert_array_equal(call(op, u, i), expected, err_msg=f"{op}(uint64, int64)")
        np.testing.assert_array_equal(
            call(op, i, u), NUMPY_UFUNC[op](i, u), err_msg=f"{op}(int64, uint64)"
        )


SCALARS = [
    True,
    False,
    0,
    2,
    -3,
    127,
    200,
    300,
    70000,
    2**40,
    2.5,
    -0.0,
    1e10,
    1e40,
    float("inf"),
    float("nan"),
]


def check_scalars(op, dtype, scalars):
    x = small_values(dtype, 0)
    for s in scalars:
        for args in ((x, s), (s, x)):
            try:
                with np.errstate(all="ignore"):
                    expected = NUMPY_UFUNC[op](*args)
            except (OverflowError, TypeError) as e:
                with pytest.raises(type(e)):
                    call(op, *args)
                continue
            got = call(op, *args)
            what = f"{op}{tuple(type(a).__name__ for a in args)} {dtype} {s!r}"
            assert got.dtype == expected.dtype, what
            assert got.shape == expected.shape
            assert_close(got, expected, str(expected.dtype))


@pytest.mark.parametrize("op", ["add", "multiply", "subtract", "maximum", "less", "divide"])
@pytest.mark.parametrize("dtype", ALL_NUMPY)
def test_python_scalars_are_weak_as_in_numpy2(op, dtype):
    """array op scalar and scalar op array: NEP 50 weak scalars (int8 + 1 stays int8, int8 + 2.5
    is float64, float16 + 1e10 is float16 inf); where NumPy raises (int8 + 300 OverflowError,
    bool - bool TypeError) ctensor raises the same kind of error. Integer scalars here fit the
    array's dtype when used with comparisons and divide (next test for the others)."""
    scalars = SCALARS
    if op in ("less", "divide") and dtype != "bool":
        info = np.iinfo(dtype) if dtype not in FLOAT_NUMPY else None
        scalars = [
            s for s in SCALARS if type(s) is not int or info is None or info.min <= s <= info.max
        ]
    check_scalars(op, dtype, scalars)


@pytest.mark.parametrize("op", COMPARE + ["divide"])
def test_out_of_range_python_ints_with_comparisons_and_divide(op):
    """NumPy 2 compares integer arrays with any Python int exactly (int8 < 200 is True,
    uint8 == -3 is False) and true-divides integers in float64 (int8 / 200 is 0.005): no
    OverflowError there, unlike int8 + 200."""
    for dtype in SIGNED + UNSIGNED:
        info = np.iinfo(dtype)
        check_scalars(op, dtype, [info.max + 1, info.min - 1, 2**70, -(2**70)])


TORCH_OTHERS = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "uint16",
    "uint32",
    "uint64",
]


@pytest.mark.parametrize("other", TORCH_OTHERS)
@pytest.mark.parametrize("op", ["add", "multiply", "maximum", "equal"])
def test_bfloat16_promotion_follows_torch(op, other):
    """bfloat16 mixed with another dtype (torch tensors): torch.result_type's dtype, values of
    the float64 computation rounded once to it."""
    a = torch.tensor([1.5, -2.0, 3.0, 0.0, -0.0, 255.0], dtype=torch.bfloat16)
    b = torch.from_numpy(small_values(other, 1))
    for x1, x2 in ((a, b), (b, a)):
        got = call(op, x1, x2)
        assert isinstance(got, torch.Tensor)
        want_dtype = "bool" if op in COMPARE else str(torch.result_type(x1, x2))[len("torch.") :]
        assert dtype_name(got) == want_dtype, f"{op}({x1.dtype}, {x2.dtype})"
        with np.errstate(all="ignore"):
            ref = NUMPY_UFUNC[op](x1.double().numpy(), x2.double().numpy())
        if op not in COMPARE:
            ref = round_to_dtype(ref, want_dtype)
        assert_close(got, ref, want_dtype, rtol_scale=0.0, atol=0.0)


def test_torch_scalar_with_bfloat16_stays_bfloat16():
    a = torch.tensor([1.0, 2.0, 256.0], dtype=torch.bfloat16)
    got = call("add", a, 1.0)
    assert got.dtype == torch.bfloat16
    np.testing.assert_array_equal(got.double().numpy(), [2.0, 3.0, 256.0])  # 257 -> 256 (even)
    got = call("multiply", 3, a)
    assert got.dtype == torch.bfloat16
    np.testing.assert_array_equal(got.double().numpy(), [3.0, 6.0, 768.0])


def test_where_promotes_its_values():
    c = np.array([True, False, True])
    got = call("where", c, np.array([1, 2, 3], np.int8), np.array([0.5, 1.5, 2.5], np.float32))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1.0, 1.5, 3.0])
    for x, s in [
        (np.array([1, 2, 3], np.uint8), 7),
        (np.array([1, 2, 3], np.int8), 2.5),
        (np.array([1, 2, 3], np.float16), 1e9),
    ]:
        got = call("where", c, x, s)
        with np.errstate(all="ignore"):
            expected = np.where(c, x, s)
        assert got.dtype == expected.dtype, (x.dtype, s)
        np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------- in place -----------


INPLACE_CASES = [
    (op, dt)
    for op in ARITH
    for dt in ["float32", "int32", "float16", "uint8"]
    if not (op == "divide" and dt in ("int32", "uint8"))
]  # those give float64


@pytest.mark.parametrize("op,dtype", INPLACE_CASES)
def test_inplace_exact_alias(op, dtype):
    """out= the very same view as an input (allowed for element-wise ops): x1, x2, and a
    strided view; broadcasting the other operand."""
    rng = np.random.default_rng(1)
    base = (rng.integers(1, 9, (4, 6))).astype(dtype)
    other = (rng.integers(1, 4, (1, 6))).astype(dtype)
    with np.errstate(all="ignore"):
        expected = NUMPY_UFUNC[op](base, other)
    a = base.copy()
    assert call(op, a, other, out=a) is a
    assert_close(a, expected, dtype)
    b = np.broadcast_to(base, (4, 4, 6))[0].copy()
    o = np.broadcast_to(other, (4, 6)).copy()
    call(op, b, o, out=o)  # out is x2
    assert_close(o, expected, dtype)
    big = np.zeros((8, 12), dtype)
    v = big[::2, ::-2]
    v[...] = base
    call(op, v, other, out=v)  # a strided, reversed view, exactly aliased
    assert_close(v, expected, dtype)
    assert not big[1::2].any() and not big[:, ::-1][:, 1::2].any(), "wrote outside the view"


@pytest.mark.parametrize("op", UNARY)
def test_unary_inplace_exact_alias(op):
    x = np.linspace(-2, 2, 24).reshape(4, 6).astype(np.float32)
    with np.errstate(all="ignore"):
        expected = call(op, x.copy())
    view = x.T[::-1]
    expected_view = expected.T[::-1]
    call(op, view, out=view)
    assert_close(view, expected_view, "float32", rtol_scale=0.0, atol=0.0)


# ---------------------------------------------------------------------------- aliasing ----------


def aliasing_cases():
    def add_shifted(a):
        return call("add", a[:-1], a[:-1], out=a[1:])

    def add_second_shifted(a):
        return call("add", np.ones(9), a[1:], out=a[:-1])

    def add_reversed(a):
        return call("add", a[::-1], a, out=a)

    def negative_shifted(a):
        return call("negative", a[:-1], out=a[1:])

    def sqrt_every_other(a):
        return call("sqrt", a[:5], out=a[::2])

    def where_overlap(a):
        return call("where", np.ones(9, bool), a[1:], a[1:], out=a[:-1])

    def pow_overlap(a):
        return call("pow", a[:-1], 2.0, out=a[1:])

    def compare_overlap(a):
        # bool output over the float buffer's bytes
        return call("less", a[:-1], a[1:], out=a.view(np.uint8)[:9].view(bool))

    def astype_overlap(a):
        return call("astype", a[:-1], dtype="float64", out=a[1:])

    return [
        add_shifted,
        add_second_shifted,
        add_reversed,
        negative_shifted,
        sqrt_every_other,
        where_overlap,
        pow_overlap,
        compare_overlap,
        astype_overlap,
    ]


@pytest.mark.parametrize("case", aliasing_cases(), ids=lambda f: f.__name__)
def test_partial_overlap_is_an_aliasing_error_and_writes_nothing(case):
    a = np.arange(10, dtype=np.float64) + 0.5
    before = a.copy()
    with pytest.raises(ValueError) as info:
        case(a)
    assert isinstance(info.value, ctensor.CTensorError), type(info.value)
    assert isinstance(info.value, ctensor.AliasingError), type(info.value)
    np.testing.assert_array_equal(a, before)


def test_self_overlapping_output_is_an_aliasing_error():
    """An output with a zero stride overlaps itself."""
    buf = np.zeros(4, np.float32)
    out = as_strided(buf, shape=(3, 4), strides=(0, 4), writeable=True)
    with pytest.raises(ValueError) as info:
        call("add", np.ones((3, 4), np.float32), np.ones(4, np.float32), out=out)
    assert isinstance(info.value, ctensor.CTensorError)
    assert not buf.any()


def test_astype_is_not_inplace():
    """astype lacks the INPLACE flag, so even an exactly aliased out= is an overlap."""
    assert "inplace" not in ctensor.op_info("astype")["flags"]
    assert all("inplace" in ctensor.op_info(op)["flags"] for op in BINARY[:7] + UNARY)
    a = np.arange(6.0)
    with pytest.raises(ValueError) as info:
        call("astype", a, dtype="float64", out=a)
    assert isinstance(info.value, ctensor.CTensorError)


# ---------------------------------------------------------------------------- pow errors --------


@pytest.mark.parametrize("dtype", [d for d in kernel_dtypes("pow") if d in SIGNED])
def test_integer_pow_negative_exponent_is_an_error(dtype):
    """NumPy: "Integers to negative integer powers are not allowed" (ValueError). ctensor:
    InvalidArgumentError (a ValueError), with out= untouched, wherever the negative exponent
    hides (strided, broadcast, 0-d, Python scalar)."""
    base = np.array([[2, 3, 4, 5]], dtype=dtype)
    with pytest.raises(ValueError):
        np.power(base, np.array([1, -1, 2, 0], dtype))
    exps = [
        np.array([1, -1, 2, 0], dtype),
        np.array([3, 0, 1, 2, 0, 1, 1, -2], dtype)[::-2],  # the negative one in a reversed view
        np.broadcast_to(np.array([[-1]], dtype), (3, 4)),  # broadcast
        np.array(-5, dtype),  # 0-d
        -1,  # Python scalar
    ]
    for e in exps:
        shape = np.broadcast_shapes(base.shape, np.shape(e))
        out = np.full(shape, 77, dtype)
        with pytest.raises(ValueError) as info:
            call("pow", base, e, out=out)
        assert isinstance(info.value, ctensor.CTensorError)
        assert isinstance(info.value, ctensor.InvalidArgumentError)
        assert (out == 77).all(), "out= was written before the error"
        with pytest.raises(ctensor.InvalidArgumentError):
            call("pow", base, e)


@pytest.mark.parametrize("dtype", [d for d in kernel_dtypes("pow") if d in UNSIGNED])
def test_unsigned_pow_has_no_negative_exponents(dtype):
    base = np.array([2, 3, 0, 255], dtype)
    e = np.array([np.iinfo(dtype).max, 70, 0, 3], dtype)
    np.testing.assert_array_equal(call("pow", base, e), np.power(base, e))


def test_float_pow_negative_exponents_are_fine():
    got = call("pow", np.array([2.0, 4.0], np.float32), np.array([-1.0, -0.5], np.float32))
    np.testing.assert_array_equal(got, [0.5, 0.5])


# -------------------------------------------------------------------- refused dtypes -------------


@pytest.mark.parametrize(
    "op,args",
    [
        ("subtract", (np.array([True, False]), np.array([True, True]))),
        ("subtract", (np.array([True, False]), True)),
        ("negative", (np.array([True, False]),)),
        ("positive", (np.array([True, False]),)),
        ("sign", (np.array([True, False]),)),
    ],
)
def test_numpy_refused_bool_ops_raise_type_error(op, args):
    """NumPy has no boolean subtract, negative, positive or sign (TypeError); ctensor has no such
    kernel either and must not quietly compute in int8 instead."""
    with pytest.raises(TypeError):
        getattr(np, op)(*args)
    out = np.full(2, 5, np.int8)
    with pytest.raises(TypeError) as info:
        call(op, *args)
    assert isinstance(info.value, ctensor.CTensorError), type(info.value)
    with pytest.raises(TypeError):
        call(op, *args, out=out)
    assert (out == 5).all()
