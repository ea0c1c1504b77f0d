"""float16 and bfloat16 conversions (kernels/cpu/engine/half.h, through astype), bit for bit.

float16 against NumPy's conversions (correctly rounded, ties to even, directly from float64);
bfloat16 against torch for float32 sources (torch rounds float32 to nearest even) and against
an exact rounding (arrays.round_to_bfloat16) for float64 sources, where torch itself goes through
float32 and can round twice. NaN results only need to be NaN."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import round_to_bfloat16

import ctensor

RNG = np.random.default_rng(20240611)
# NumPy warns when its reference conversions overflow to inf: that is the point here
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


def astype(x, dtype):
    with np.errstate(all="ignore"):
        return ctensor.ops.astype(x, dtype=dtype)


def assert_same_bits(got_bits, want_bits, got_nan, want_nan, inputs, what):
    got_bits, want_bits = np.asarray(got_bits), np.asarray(want_bits)
    np.testing.assert_array_equal(got_nan, want_nan, err_msg=f"{what}: nan positions differ")
    keep = ~np.asarray(want_nan)
    bad = np.flatnonzero(got_bits[keep] != want_bits[keep])
    if bad.size:
        k = bad[:8]
        raise AssertionError(
            f"{what}: {bad.size} of {keep.sum()} differ, e.g. inputs "
            f"{np.asarray(inputs)[keep][k]!r} gave bits "
            f"{[hex(int(b)) for b in got_bits[keep][k]]}, expected "
            f"{[hex(int(b)) for b in want_bits[keep][k]]}"
        )


def all_float16():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def all_bfloat16():
    bits = np.arange(1 << 16, dtype=np.int32).astype(np.int16)
    return torch.from_numpy(bits).view(torch.bfloat16)


# ---------------------------------------------------------------------------------- float16 ------


@pytest.mark.parametrize("dst", ["float32", "float64"])
def test_all_float16_patterns_widen_exactly(dst):
    x = all_float16()
    for view in (x, x[::-1]):
        got = astype(view, dst)
        want = view.astype(dst)
        bits = f"uint{np.dtype(dst).itemsize * 8}"
        assert got.dtype == np.dtype(dst)
        assert_same_bits(
            got.view(bits),
            want.view(bits),
            np.isnan(got),
            np.isnan(want),
            view,
            f"float16 -> {dst}",
        )


def float16_midpoints():
    """Midpoints between all adjacent finite float16 values (subnormals included, and the one
    past 65504 at 65520), both signs, as float64 (exact)."""
    h = all_float16()
    h = np.unique(h[np.isfinite(h) & ~np.signbit(h)].astype(np.float64))
    h = np.append(h, 65536.0)  # the next value float16 would have: 65520 is the overflow tie
    mid = (h[:-1] + h[1:]) / 2
    return np.concatenate([mid, -mid])


def test_float32_to_float16_halfway_cases_and_neighbours():
    mid = float16_midpoints().astype(np.float32)  # exact: 12 significant bits
    assert np.array_equal(mid.astype(np.float64), float16_midpoints())
    up = np.nextafter(mid, np.float32(np.inf))
    down = np.nextafter(mid, np.float32(-np.inf))
    halves = all_float16()[np.isfinite(all_float16())].astype(np.float32)
    x = np.concatenate([mid, up, down, halves])
    got = astype(x, "float16")
    want = x.astype(np.float16)
    assert_same_bits(
        got.view(np.uint16),
        want.view(np.uint16),
        np.isnan(got),
        np.isnan(want),
        x,
        "float32 -> float16 (midpoints)",
    )


def test_float32_to_float16_boundaries():
    f32 = np.float32
    x = np.array(
        [
            65504.0,
            65519.99,
            np.nextafter(f32(65520), f32(0)),
            65520.0,
            65536.0,
            1e10,
            3.4e38,
            np.inf,
            -np.inf,
            -65520.0,
            -65519.99,
            2.0**-14,
            np.nextafter(f32(2.0**-14), f32(0)),
            2.0**-24,
            2.0**-25,
            np.nextafter(f32(2.0**-25), f32(1)),
            3 * 2.0**-25,
            2.0**-26,
            1e-45,
            -1e-45,
            1e-40,
            0.0,
            -0.0,
            -(2.0**-25),
            5.96e-8,
            6.1e-5,
            np.nan,
            -np.nan,
        ],
        dtype=np.float32,
    )
    got = astype(x, "float16")
    want = x.astype(np.float16)
    assert_same_bits(
        got.view(np.uint16),
        want.view(np.uint16),
        np.isnan(got),
        np.isnan(want),
        x,
        "float32 -> float16 (boundaries)",
    )
    assert got[2] == 65504 and np.isinf(got[3]) and got[14] == 0 and got[15] == 2.0**-24
    assert got[16] == 2.0**-23 and np.signbit(got[22])


def test_float32_to_float16_random_bit_patterns():
    bits = RNG.integers(0, 1 << 32, 1 << 21, dtype=np.uint64).astype(np.uint32)
    # and a dense sweep of the float16 range: exponents 2^-26 .. 2^16
    sweep = RNG.integers(0x32800000, 0x47800000, 1 << 20, dtype=np.uint32)
    sub = RNG.integers(0, 0x38800000, 1 << 18, dtype=np.uint32)  # below 2^-14: subnormal halves
    x = np.concatenate([bits, sweep, sub, sub | 0x80000000]).view(np.float32)
    for view in (x, x[::-3]):
        got = astype(view, "float16")
        want = view.astype(np.float16)
        assert_same_bits(
            got.view(np.uint16),
            want.view(np.uint16),
            np.isnan(got),
            np.isnan(want),
            view,
            "float32 -> float16 (random)",
        )


def test_float64_to_float16_rounds_once():
    """Values a hair above/below a float16 midpoint: via float32 they would land exactly on the
    midpoint and round to even; the direct conversion (NumPy's) rounds away from it."""
    mid = float16_midpoints()
    x = np.concatenate(
        [
            mid,
            mid * (1 + 2.0**-40),
            mid * (1 - 2.0**-40),
            np.nextafter(mid, np.inf),
            np.nextafter(mid, -np.inf),
            mid * (1 + 2.0**-25),
            mid * (1 - 2.0**-25),
            [
                65519.999999,
                65520.0,
                65520.0000001,
                2.0**-25 * (1 + 2.0**-50),
                2.0**-25,
                1e-300,
                1e300,
                np.inf,
                -np.inf,
                np.nan,
                -0.0,
                5e-324,
            ],
        ]
    )
    got = astype(x, "float16")
    want = x.astype(np.float16)
    assert_same_bits(
        got.view(np.uint16),
        want.view(np.uint16),
        np.isnan(got),
        np.isnan(want),
        x,
        "float64 -> float16",
    )
    assert astype(np.array([1 + 2.0**-11 + 2.0**-40]), "float16")[0] == 1 + 2.0**-10
    assert astype(np.array([2.0**-25 * (1 + 2.0**-50)]), "float16")[0] == 2.0**-24


def test_float64_to_float16_random():
    mant = RNG.integers(0, 1 << 52, 1 << 19, dtype=np.uint64)
    expo = RNG.integers(1023 - 27, 1023 + 17, 1 << 19, dtype=np.uint64)
    sign = RNG.integers(0, 2, 1 << 19, dtype=np.uint64) << np.uint64(63)
    x = (sign | (expo << np.uint64(52)) | mant).view(np.float64)
    got = astype(x, "float16")
    want = x.astype(np.float16)
    assert_same_bits(
        got.view(np.uint16),
        want.view(np.uint16),
        np.isnan(got),
        np.isnan(want),
        x,
        "float64 -> float16 (random)",
    )


# --------------------------------------------------------------------------------- bfloat16 ------


def bf16_bits(t):
    return t.view(torch.int16).numpy().view(np.uint16)


@pytest.mark.parametrize("dst", ["float32", "float64"])
def test_all_bfloat16_patterns_widen_exactly(dst):
    x = all_bfloat16()
    for view in (x, x.reshape(256, 256).T):
        got = astype(view, getattr(torch, dst))
        want = view.to(getattr(torch, dst))
        assert got.dtype == getattr(torch, dst)
        ibits = torch.int32 if dst == "float32" else torch.int64
        assert_same_bits(
            got.contiguous().view(ibits).numpy(),
            want.contiguous().view(ibits).numpy(),
            torch.isnan(got).numpy(),
            torch.isnan(want).numpy(),
            view.float().numpy(),
            f"bfloat16 -> {dst}",
        )


def bfloat16_midpoints():
    b = all_bfloat16().double().numpy()
    b = np.unique(b[np.isfinite(b) & ~np.signbit(b)])
    b = np.append(b, 2.0**128)  # the overflow tie
    mid = (b[:-1] + b[1:]) / 2
    return np.concatenate([mid, -mid])


def test_float32_to_bfloat16_vs_torch():
    mid = bfloat16_midpoints()
    with np.errstate(over="ignore"):
        mid32 = mid.astype(np.float32)  # exact except the overflow tie (becomes inf: fine)
    randbits = RNG.integers(0, 1 << 32, 1 << 21, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate(
        [
            mid32,
            np.nextafter(mid32, np.float32(np.inf)),
            np.nextafter(mid32, np.float32(-np.inf)),
            randbits,
            np.array(
                [
                    np.nan,
                    -np.inf,
                    np.inf,
                    0.0,
                    -0.0,
                    3.4028235e38,
                    1e-45,
                    2.0**-126,
                    2.0**-133,
                    2.0**-134,
                    3 * 2.0**-134,
                ],
                np.float32,
            ),
        ]
    )
    t = torch.from_numpy(x)
    for view in (t, t[1::3]):
        got = astype(view, torch.bfloat16)
        want = view.to(torch.bfloat16)
        assert got.dtype == torch.bfloat16
        assert_same_bits(
            bf16_bits(got),
            bf16_bits(want),
            torch.isnan(got).numpy(),
            torch.isnan(want).numpy(),
            view.numpy(),
            "float32 -> bfloat16",
        )


def test_float64_to_bfloat16_rounds_once():
    mid = bfloat16_midpoints()
    mid = mid[np.isfinite(mid)]
    x = np.concatenate(
        [
            mid,
            mid * (1 + 2.0**-40),
            mid * (1 - 2.0**-40),
            np.nextafter(mid, np.inf),
            np.nextafter(mid, -np.inf),
            [1e300, -1e300, 5e-324, 1e-45, 2.0**-134 * (1 + 2.0**-45), np.inf, np.nan],
        ]
    )
    got = astype(torch.from_numpy(x), torch.bfloat16)
    want = round_to_bfloat16(x)
    got64 = got.double().numpy()
    assert_same_bits(
        got64.view(np.uint64),
        want.view(np.uint64),
        np.isnan(got64),
        np.isnan(want),
        x,
        "float64 -> bfloat16",
    )
    assert got64[np.flatnonzero(x == 1e-45)[0]] == 0.0
    assert got64[-3] == 2.0**-133  # a hair above the tie between 0 and the smallest subnormal


def test_float16_bfloat16_cross_conversions():
    """float16 -> bfloat16 on all 65536 halves (exact reference) and bfloat16 -> float16 on all
    65536 bfloat16 values (NumPy's float64 -> float16, correctly rounded)."""
    h = all_float16()
    got = astype(torch.from_numpy(h), torch.bfloat16).double().numpy()
    want = round_to_bfloat16(h.astype(np.float64))
    assert_same_bits(
        got.view(np.uint64),
        want.view(np.uint64),
        np.isnan(got),
        np.isnan(want),
        h,
        "float16 -> bfloat16",
    )
    b = all_bfloat16()
    got = astype(b, torch.float16).numpy()
    with np.errstate(over="ignore"):
        want = b.double().numpy().astype(np.float16)
    assert_same_bits(
        got.view(np.uint16),
        want.view(np.uint16),
        np.isnan(got),
        np.isnan(want),
        b.float().numpy(),
        "bfloat16 -> float16",
    )
