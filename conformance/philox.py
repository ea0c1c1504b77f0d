"""Philox-4x32-10 and ctensor's random distributions in vectorised NumPy, bit for bit as
kernels/common/philox.h computes them on every device.

Written from the algorithm (Random123) and the stream rule of philox.h, independently of the C
text: the conformance suite compares a backend's random ops with these arrays exactly, so a
backend with another stream (another counter layout, another rounding of a distribution) fails.
Every float operation below is one NumPy float32 or float64 operation, exactly rounded as the
header's are.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "bernoulli",
    "dropout",
    "normal",
    "philox4x32_10",
    "stream_words",
    "uniform",
]

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint32(0x9E3779B9)
_W1 = np.uint32(0xBB67AE85)
_LOW32 = np.uint64(0xFFFFFFFF)
_U32 = np.uint32
_F32 = np.float32
_F64 = np.float64


def philox4x32_10(counter: tuple, key: tuple) -> tuple[np.ndarray, ...]:
    """Philox-4x32-10 of counter words (c0, c1, c2, c3) and key words (k0, k1): arrays (or
    scalars) broadcast together, as uint32. Returns the 4 output words."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint32) for c in counter)
    k0, k1 = (np.asarray(k, dtype=np.uint32) for k in key)
    c0, c1, c2, c3, k0, k1 = np.broadcast_arrays(c0, c1, c2, c3, k0, k1)
    k0 = k0.copy()
    k1 = k1.copy()
    with np.errstate(over="ignore"):
        for r in range(10):
            if r:
                k0 = k0 + _W0
                k1 = k1 + _W1
            p0 = _M0 * c0.astype(np.uint64)
            p1 = _M1 * c2.astype(np.uint64)
            hi0, lo0 = (p0 >> np.uint64(32)).astype(_U32), (p0 & _LOW32).astype(_U32)
            hi1, lo1 = (p1 >> np.uint64(32)).astype(_U32), (p1 & _LOW32).astype(_U32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def stream_words(seed: int, offset: int, count: int) -> tuple[np.ndarray, ...]:
    """The 4 words of elements 0..count-1 of the stream (seed, offset): key (lo32(seed),
    hi32(seed)), counter (lo32(i), hi32(i), lo32(offset), hi32(offset))."""
    seed &= (1 << 64) - 1
    offset &= (1 << 64) - 1
    i = np.arange(count, dtype=np.uint64)
    return philox4x32_10(
        (
            (i & _LOW32).astype(_U32),
            (i >> np.uint64(32)).astype(_U32),
            _U32(offset & 0xFFFFFFFF),
            _U32(offset >> 32),
        ),
        (_U32(seed & 0xFFFFFFFF), _U32(seed >> 32)),
    )


# ----- 16-bit formats (round to nearest even) -----


def f32_to_f16_bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, _F32).astype(np.float16).view(np.uint16)  # NumPy rounds to even


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    b = np.asarray(x, _F32).view(np.uint32).astype(np.uint64)
    nan = (b & np.uint64(0x7FFFFFFF)) > np.uint64(0x7F800000)
    rounded = (b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    quiet = (b >> np.uint64(16)) | np.uint64(0x40)
    return np.where(nan, quiet, rounded).astype(np.uint16)


def bf16_bits_to_f32(h: np.ndarray) -> np.ndarray:
    return (np.asarray(h, np.uint32) << np.uint32(16)).view(_F32)


def _below_bits(bits: np.ndarray, sign: int, dtype: type) -> np.ndarray:
    """The next value toward -inf of finite values given by their bits (as the header)."""
    bits = np.asarray(bits).astype(np.uint64)
    sign_bit = np.uint64(sign)
    zero = (bits & ~sign_bit) == 0
    stepped = np.where(bits & sign_bit, bits + np.uint64(1), bits - np.uint64(1))
    return np.where(zero, sign_bit | np.uint64(1), stepped).astype(dtype)


# ----- uniform -----


def _uniform01(words: tuple, dtype: str) -> np.ndarray:
    x0, x1 = words[0], words[1]
    if dtype == "float64":
        top = ((x0.astype(np.uint64) << np.uint64(32)) | x1.astype(np.uint64)) >> np.uint64(11)
        return top.astype(_F64) * _F64(2.0**-53)
    shift, scale = {"float32": (8, 2.0**-24), "float16": (21, 2.0**-11), "bfloat16": (24, 2.0**-8)}[
        dtype
    ]
    return (x0 >> _U32(shift)).astype(_F32) * _F32(scale)


def _round16(value: float, dtype: str) -> np.float32:
    """A float32 rounded to the 16-bit dtype, as a float32 (low and high of the 16-bit types)."""
    f = np.asarray(_F32(value))
    if dtype == "float16":
        return _F32(f.astype(np.float16))
    return _F32(bf16_bits_to_f32(f32_to_bf16_bits(f)))


def uniform(
    seed: int, offset: int, shape: tuple, dtype: str, low: float = 0.0, high: float = 1.0
) -> np.ndarray:
    """random_uniform's result (a NumPy array of `dtype`; bfloat16 as its uint16 bits)."""
    count = int(np.prod(shape, dtype=np.int64))
    words = stream_words(seed, offset, count)
    u = _uniform01(words, dtype)
    if dtype == "float64":
        lo, hi = _F64(low), _F64(high)
        r = lo + (hi - lo) * u
        below = _below_bits(np.asarray(hi).view(np.uint64), 1 << 63, np.uint64).view(_F64)
        return np.where(r < hi, r, below).reshape(shape)
    lo, hi = _F32(low), _F32(high)
    if dtype != "float32":
        lo, hi = _round16(lo, dtype), _round16(hi, dtype)
    r = lo + (hi - lo) * u
    if dtype == "float32":
        below = _below_bits(np.asarray(hi).view(np.uint32), 1 << 31, np.uint32).view(_F32)
        return np.where(r < hi, r, below).reshape(shape)
    if dtype == "float16":
        bits = f32_to_f16_bits(r)
        back = bits.view(np.float16).astype(_F32)
        hi_bits = f32_to_f16_bits(np.asarray([hi]))
    else:
        bits = f32_to_bf16_bits(r)
        back = bf16_bits_to_f32(bits)
        hi_bits = f32_to_bf16_bits(np.asarray([hi]))
    below = _below_bits(hi_bits, 0x8000, np.uint16)
    bits = np.where(back < hi, bits, below).astype(np.uint16).reshape(shape)
    return bits.view(np.float16) if dtype == "float16" else bits


# ----- normal -----

_LOG_G = [
    -0.074732959270477294921875,
    0.128196656703948974609375,
    -0.132620394229888916015625,
    0.14196668565273284912109375,
    -0.16608588397502899169921875,
    0.20001174509525299072265625,
    -0.2500157654285430908203125,
    0.33333337306976318359375,
    -0.49999988079071044921875,
]
_SIN_F32 = [
    -0.000003598843250074423849582672119140625,
    0.00016044118092395365238189697265625,
    -0.004681753925979137420654296875,
    0.079692624509334564208984375,
    -0.645964086055755615234375,
    1.57079637050628662109375,
]
_COS_F32 = [
    0.000000471087474807063699699938297271728515625,
    -0.000025202041797456331551074981689453125,
    0.0009192602592520415782928466796875,
    -0.020863480865955352783203125,
    0.2536695003509521484375,
    -1.2337005138397216796875,
    1.0,
]
_SIN_F64 = [
    -4.377065467313742e-14,
    6.0669357311061955e-12,
    -6.688035109811468e-10,
    5.692172921967927e-08,
    -3.598843235212085e-06,
    0.00016044118478735983,
    -0.004681754135318688,
    0.07969262624616705,
    -0.6459640975062463,
    1.5707963267948966,
]
_COS_F64 = [
    -5.294400200734623e-13,
    6.565963114979473e-11,
    -6.386603083791852e-09,
    4.710874778818172e-07,
    -2.5202042373060607e-05,
    0.0009192602748394266,
    -0.02086348076335296,
    0.25366950790104803,
    -1.2337005501361697,
    1.0,
]


def _horner(coefficients: list, t: np.ndarray, dtype: type) -> np.ndarray:
    p = np.full(t.shape, dtype(coefficients[0]), dtype)
    for c in coefficients[1:]:
        p = p * t + dtype(c)
    return p


def _log_f32(x: np.ndarray) -> np.ndarray:
    b = x.view(np.uint32)
    e = (b >> _U32(23)).astype(np.int32) - 127
    m = ((b & _U32(0x7FFFFF)) | _U32(0x3F800000)).view(_F32)
    big = m > _F32(1.41421353816986083984375)
    m = np.where(big, m * _F32(0.5), m)
    e = np.where(big, e + 1, e)
    f = m - _F32(1.0)
    g = _horner(_LOG_G, f, _F32)
    log1p_f = f + (f * f) * g
    ef = e.astype(_F32)
    return ef * _F32(0.693145751953125) + (
        log1p_f + ef * _F32(0.000001428606765330187045037746429443359375)
    )


def _sqrt_f32(y: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        g = (_U32(0x5F375A86) - (y.view(np.uint32) >> _U32(1))).view(_F32)
        h = _F32(0.5) * y
        for _ in range(3):
            g = g * (_F32(1.5) - h * (g * g))
        return np.where(y == 0, _F32(0.0), y * g)


def _cos_2pi_f32(x: np.ndarray) -> np.ndarray:
    quadrant = x >> _U32(30)
    v = (x >> _U32(8)) & _U32(0x3FFFFF)
    flip = v > _U32(0x200000)
    w = np.where(flip, _U32(0x400000) - v, v).astype(_F32) * _F32(2.0**-22)
    t = w * w
    sin = w * _horner(_SIN_F32, t, _F32)
    cos = _horner(_COS_F32, t, _F32)
    use_sin = ((quadrant & _U32(1)) == 1) ^ flip
    c = np.where(use_sin, sin, cos)
    return np.where((quadrant == 1) | (quadrant == 2), -c, c)


def normal_f32(words: tuple) -> np.ndarray:
    x0, x1 = words[0], words[1]
    u1 = ((x0 >> _U32(8)) + _U32(1)).astype(_F32) * _F32(2.0**-24)
    radius = _sqrt_f32(_F32(-2.0) * _log_f32(u1))
    return radius * _cos_2pi_f32(x1)


def _top53(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    return ((hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)) >> np.uint64(11)


def _log_f64(x: np.ndarray) -> np.ndarray:
    b = x.view(np.uint64)
    e = (b >> np.uint64(52)).astype(np.int64) - 1023
    m = ((b & np.uint64(0xFFFFFFFFFFFFF)) | np.uint64(0x3FF0000000000000)).view(_F64)
    big = m > _F64(1.4142135623730951)
    m = np.where(big, m * _F64(0.5), m)
    e = np.where(big, e + 1, e)
    f = m - _F64(1.0)
    s = f / (_F64(2.0) + f)
    t = s * s
    p = _horner([2.0 / (2 * k + 1) for k in range(11, 0, -1)], t, _F64)
    log1p_f = _F64(2.0) * s + (s * t) * p
    ed = e.astype(_F64)
    return ed * _F64(0.6931471526622772) + (log1p_f + ed * _F64(2.7897668087737545e-08))


def _cos_2pi_f64(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    u = _top53(hi, lo)
    quadrant = u >> np.uint64(51)
    v = u & np.uint64(0x7FFFFFFFFFFFF)
    half = np.uint64(0x4000000000000)
    flip = v > half
    w = np.where(flip, np.uint64(2) * half - v, v).astype(_F64) * _F64(2.0**-51)
    t = w * w
    sin = w * _horner(_SIN_F64, t, _F64)
    cos = _horner(_COS_F64, t, _F64)
    use_sin = ((quadrant & np.uint64(1)) == 1) ^ flip
    c = np.where(use_sin, sin, cos)
    return np.where((quadrant == 1) | (quadrant == 2), -c, c)


def normal_f64(words: tuple) -> np.ndarray:
    x0, x1, x2, x3 = words
    u1 = (_top53(x0, x1) + np.uint64(1)).astype(_F64) * _F64(2.0**-53)
    radius = np.sqrt(_F64(-2.0) * _log_f64(u1))
    return radius * _cos_2pi_f64(x2, x3)


def normal(
    seed: int, offset: int, shape: tuple, dtype: str, mean: float = 0.0, std: float = 1.0
) -> np.ndarray:
    """random_normal's result (bfloat16 as its uint16 bits)."""
    count = int(np.prod(shape, dtype=np.int64))
    words = stream_words(seed, offset, count)
    if dtype == "float64":
        return (_F64(mean) + _F64(std) * normal_f64(words)).reshape(shape)
    r = _F32(mean) + _F32(std) * normal_f32(words)
    if dtype == "float32":
        return r.reshape(shape)
    if dtype == "float16":
        return f32_to_f16_bits(r).view(np.float16).reshape(shape)
    return f32_to_bf16_bits(r).reshape(shape)


# ----- bernoulli and dropout -----


def bernoulli(seed: int, offset: int, shape: tuple, p) -> np.ndarray:  # noqa: ANN001
    """random_bernoulli's draws as bool: uniform_f32(x0) < float32(p), p a float or an array
    of probabilities broadcast to `shape`."""
    count = int(np.prod(shape, dtype=np.int64))
    u = _uniform01(stream_words(seed, offset, count), "float32").reshape(shape)
    return u < np.asarray(p).astype(_F32)


def dropout(x: np.ndarray, p: float, seed: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """dropout's (out, mask) in training mode: keep iff uniform_f32(x0) >= float32(p); kept
    values times float(1 / (1 - p)) in x's compute type (float32 for the 16-bit types), dropped
    ones exactly 0; p == 1 drops everything."""
    x = np.asarray(x)
    u = _uniform01(stream_words(seed, offset, x.size), "float32").reshape(x.shape)
    mask = u >= _F32(p)
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
    if x.dtype == np.float64:
        out = np.where(mask, x * _F64(scale), _F64(0.0))
    else:
        out = np.where(mask, x.astype(_F32) * _F32(scale), _F32(0.0)).astype(x.dtype)
    return out, mask
