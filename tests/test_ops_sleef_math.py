"""float32 and float64 elementary functions through SLEEF (kernels/cpu/math/sleef_math*): random
bit patterns over each type's whole range, the values around the bounds past which the C library
takes over, and special values, against NumPy in a wider precision, in ulps; every tail length
and strided, reversed and in-place layouts against the contiguous result, bit for bit; and the
generic instruction set (the C library's functions) against the default one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from arrays import results_under_isa, sleef_loaded, sleef_runs

from ctensor import ops

# ctensor operator -> NumPy function
FUNCTIONS = {
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "erf": np.frompyfunc(math.erf, 1, 1),
}
# Where sleef_math_avx2.c hands elements to the C library (and where older SLEEF documentation
# bounds the trigonometric functions), and a little either side.
BOUNDS = [5e9, 1e14, 1e28, 1.84e19, 1.34e154, 88.5, 88.8, 89.4, 709.0, 709.9, 1e38, 1e307]
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-30, -1e-30, 1e-300]


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """The function in a wider precision (float64 for float32, long double for float64; erf
    through the C library's double erf), as float64 or long double."""
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        if name == "erf":
            return FUNCTIONS[name](x.astype(np.float64)).astype(np.float64)
        return FUNCTIONS[name](x.astype(wide))


def ulp_error(name: str, x: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - f(x)| in ulps of the nearest value of x's type; a nan, infinite or zero reference
    must be matched exactly (sign included), and a finite one by a finite result."""
    ref = reference(name, x)
    with np.errstate(over="ignore"):
        rounded = ref.astype(x.dtype)
    err = np.zeros(x.shape)
    finite = np.isfinite(rounded) & (rounded != 0)
    ulp = np.spacing(np.abs(rounded[finite])).astype(np.longdouble)
    diff = np.abs(got[finite].astype(np.longdouble) - ref[finite].astype(np.longdouble))
    err[finite] = np.where(np.isfinite(got[finite]), (diff / ulp).astype(np.float64), np.inf)
    exact = ~finite
    same = (got[exact] == rounded[exact]) & (np.signbit(got[exact]) == np.signbit(rounded[exact]))
    same |= np.isnan(got[exact]) & np.isnan(rounded[exact])
    err[exact] = np.where(same, 0.0, np.inf)
    return err


def sweep(dtype, count: int, seed: int) -> np.ndarray:
    """Random bit patterns of dtype (finite or not), the bounds and their neighbours, and the
    special values."""
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        x = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        x = rng.integers(0, 2**64, count, dtype=np.uint64).view(np.float64)
    near = []
    for b in BOUNDS:
        if b < float(np.finfo(dtype).max):
            v = dtype(b)
            near += [np.nextafter(v, dtype(0)), v, np.nextafter(v, dtype(np.inf))]
    edges = np.array(near + SPECIALS, dtype)
    return np.concatenate([x, edges, -edges])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_whole_range_within_the_bound(name, dtype):
    """SLEEF's bound is 1 ulp (1.0001 for float32 tanh and atanh, 1.001 for asinh and acosh);
    2 allows the C library's functions where they take over (glibc's sinhf is 2 ulp off near
    89) and, for float64 erf, the reference's own rounding. Where SLEEF does not run (a build
    without it, a CPU without AVX2) every element is the C library's, held to the 2 ulps only
    (glibc's sinhf is 1.03 ulp off at the 99.9th percentile)."""
    x = sweep(dtype, 200_000 if dtype == np.float32 else 100_000, seed=len(name))
    err = ulp_error(name, x, getattr(ops, name)(x))
    worst = int(np.argmax(err))
    assert err[worst] <= 2.0, f"{name}({x[worst]!r}): {err[worst]} ulp"
    # and within 1.01 ulp in the bulk, away from where the C library takes over
    bulk = np.abs(x) < 80 if name in ("sinh", "cosh") else np.ones(x.shape, bool)
    if sleef_runs() and not (name == "erf" and dtype == np.float64):
        assert np.percentile(err[bulk], 99.9) <= 1.01


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["sin", "tanh", "log1p", "cosh", "acosh", "erf"])
def test_layouts_and_tails_give_the_contiguous_bits(name, dtype):
    """Strided and reversed runs are gathered a vector at a time and tails padded, so every
    layout gives the bits the contiguous run gives, for every tail length; in place too."""
    rng = np.random.default_rng(7)
    base = (rng.standard_normal(200) * 4).astype(dtype)
    if name == "acosh":
        base = np.abs(base) + 1
    base[::17] = dtype(1e30) if dtype == np.float32 else dtype(1e200)  # some past the bounds
    for n in list(range(1, 20)) + [63, 64, 65]:
        for view in (base[:n], base[: 3 * n : 3], base[n - 1 :: -1] if n > 0 else base[:0]):
            want = getattr(ops, name)(np.ascontiguousarray(view))
            np.testing.assert_array_equal(getattr(ops, name)(view), want, err_msg=f"n={n}")
            inplace = np.array(view, copy=True)
            getattr(ops, name)(inplace, out=inplace)
            np.testing.assert_array_equal(inplace, want, err_msg=f"in place, n={n}")


_ISA_SCRIPT = """
import sys
import numpy as np
from ctensor import ops
rng = np.random.default_rng(3)
out = {}
for dt in (np.float32, np.float64):
    x = (rng.standard_normal(4099) * 10).astype(dt)
    for name in NAMES:
        arg = np.abs(x) + 1 if name == "acosh" else x
        arg = np.tanh(x) if name in ("asin", "acos", "atanh") else arg
        out[f"{name}_{np.dtype(dt).name}"] = getattr(ops, name)(arg.astype(dt))
        out[f"x_{name}_{np.dtype(dt).name}"] = arg.astype(dt)
np.savez(sys.argv[1], **out)
""".replace("NAMES", repr(list(FUNCTIONS)))


def test_generic_instruction_set_agrees_and_sleef_runs_where_built(tmp_path):
    """The generic set keeps the C library's functions, the AVX2 set SLEEF's AVX2 ones (on an
    AVX-512 machine the default set runs SLEEF's AVX-512F ones): all within the bound of the true
    value, so of each other within 2 ulps. Where the build linked SLEEF and the CPU has AVX2,
    the default set must be SLEEF's (it differs from the C library's in some last bits)."""
    best = results_under_isa(_ISA_SCRIPT, tmp_path / "best.npz", None)
    generic = results_under_isa(_ISA_SCRIPT, tmp_path / "generic.npz", "generic")
    avx2 = results_under_isa(_ISA_SCRIPT, tmp_path / "avx2.npz", "avx2")
    differs = 0
    for key, value in best.items():
        if key.startswith("x_"):
            continue
        name = key.rsplit("_", 1)[0]
        x = best[f"x_{key}"]
        assert ulp_error(name, x, generic[key]).max() <= 2.0, f"generic {key}"
        assert ulp_error(name, x, avx2[key]).max() <= 2.0, f"avx2 {key}"
        assert ulp_error(name, x, value).max() <= 2.0, key
        differs += int(np.count_nonzero(generic[key] != value))
    if sleef_loaded():
        assert differs > 0, "SLEEF is linked but the default instruction set does not use it"
