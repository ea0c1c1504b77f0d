"""The explicitly vectorised float32 loops (kernels/cpu/math/vector_math*): exp, tanh and erf over
the whole float32 range against float64 NumPy in ulps, special values, lengths that leave every
tail (1..70), strided inputs (the scalar copy), softmax/log_softmax rows and layer_norm/rms_norm
rows against float64 references, and every instruction-set copy (CTENSOR_CPU_ISA, in a child
process) against the others."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import results_under_isa

import ctensor
from ctensor import ops

FLT_MAX = float(np.finfo(np.float32).max)


def exp_ulp_error(x: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - exp(x)| in ulps of the float32 nearest to exp(x), computed in float64; overflowing
    and nan references must be matched exactly."""
    with np.errstate(over="ignore", invalid="ignore"):
        ref = np.exp(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
    finite = np.isfinite(ref32)
    err = np.zeros(x.shape)
    ulp = np.spacing(ref32[finite]).astype(np.float64)  # 2^-149 for subnormal results
    err[finite] = np.abs(got[finite].astype(np.float64) - ref[finite]) / ulp
    # exp(x) beyond FLT_MAX (after rounding): inf, or FLT_MAX when just past the rounding point
    over = ~finite & ~np.isnan(ref32)
    err[over] = np.where(
        np.isinf(got[over]) | ((got[over] == FLT_MAX) & (ref[over] < 3.41e38)), 0.0, np.inf
    )
    nan = np.isnan(ref32)
    err[nan] = np.where(np.isnan(got[nan]), 0.0, np.inf)
    return err


def float32_sweep(step: int) -> np.ndarray:
    """Every `step`-th float32 bit pattern (both signs, nan and inf included), plus every float
    in [-1, 1] x 2^k for the exponents exp is interesting for, densely."""
    bits = np.arange(0, 2**32, step, dtype=np.uint64).astype(np.uint32)
    dense = np.linspace(-104.5, 89.5, 2_000_001, dtype=np.float32)
    return np.concatenate([bits.view(np.float32), dense])


def test_exp_float32_whole_range_within_one_ulp():
    x = float32_sweep(997)
    err = exp_ulp_error(x, ops.exp(x))
    worst = int(np.argmax(err))
    assert err[worst] <= 1.02, f"exp({x[worst]!r}): {err[worst]} ulp"


SPECIALS = np.array(
    [
        np.nan,
        -np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        1e-45,
        -1e-45,
        1e-30,
        88.72283,
        88.72284,
        89.0,
        100.0,
        3e38,
        -87.33654,
        -87.34,
        -103.97207,
        -103.97209,
        -104.0,
        -150.0,
        -3e38,
        0.34657359,
        -0.34657359,
        1.0,
        -1.0,
    ],
    np.float32,
)


@pytest.mark.parametrize("n", list(range(1, 71)) + [127, 1000, 4099])
def test_exp_special_values_in_body_and_tail(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 30).astype(np.float32)
    # place the specials at the start (vector body) and at the end (tail)
    k = min(n, len(SPECIALS))
    x[:k] = SPECIALS[:k]
    x[n - k :] = SPECIALS[len(SPECIALS) - k :]
    got = ops.exp(x)
    err = exp_ulp_error(x, got)
    assert err.max() <= 1.02, x[np.argmax(err)]
    # overflow gives inf exactly, underflow 0 (positive), nan stays nan
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    assert np.all(np.isinf(got[ref > 3.41e38]))
    assert np.all(got[ref < 7e-46] == 0.0) and not np.signbit(got[ref < 7e-46]).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))


# exp's fast path (a vector whose every 2^n is a normal float, n in [-126, 127]) meets the
# values it hands back to the full path: n = 127 and n = -126 at the edges, then n = 128,
# n = -127 and below, overflow, underflow to subnormals and zero, nan and infinities.
EDGES = np.array(
    [
        88.0,
        87.9,
        -87.3,
        -87.33,
        88.3,
        88.5,
        88.72,
        -88.0,
        -95.0,
        -103.9,
        -110.0,
        np.nan,
        np.inf,
        -np.inf,
    ],
    np.float32,
)


@pytest.mark.parametrize("lane", range(16))
def test_exp_one_lane_off_the_fast_path(lane):
    """Each vector holds ordinary values and one value at `lane` of every 16 (every lane of an
    AVX2 block of two vectors, and of an SSE2 block of four) that the fast path cannot scale:
    every result within an ulp, overflow inf, underflow 0, nan nan."""
    rng = np.random.default_rng(lane)
    x = rng.uniform(-80, 80, 16 * 64).astype(np.float32)
    x[lane::16] = np.resize(EDGES, len(x[lane::16]))
    got = ops.exp(x)
    err = exp_ulp_error(x, got)
    assert err.max() <= 1.02, (x[np.argmax(err)], got[np.argmax(err)])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))


@pytest.mark.parametrize("step", [2, 3, -1])
def test_exp_strided_matches_contiguous_within_one_ulp(step):
    rng = np.random.default_rng(5)
    base = (rng.standard_normal(301) * 40).astype(np.float32)
    base[::17] = SPECIALS[: len(base[::17])]
    x = base[::step]
    got = ops.exp(x)
    assert exp_ulp_error(x, got).max() <= 1.02
    t = torch.from_numpy(base.reshape(7, 43)).T  # transposed: a strided inner loop
    got_t = ops.exp(t).numpy()
    assert exp_ulp_error(t.numpy(), got_t).max() <= 1.02


def test_exp_in_place_and_other_float_dtypes_unchanged():
    x = np.linspace(-20, 20, 1001, dtype=np.float32)
    expected = ops.exp(x.copy())
    ops.exp(x, out=x)
    np.testing.assert_array_equal(x, expected)
    for dtype in ("float16", "float64"):
        y = np.linspace(-10, 10, 77).astype(dtype)
        rtol = 2e-3 if dtype == "float16" else 1e-15
        np.testing.assert_allclose(ops.exp(y), np.exp(y), rtol=rtol)


# ----- softmax / log_softmax rows -----


def softmax_ref(x, axis=-1, log=False):
    t = torch.from_numpy(np.ascontiguousarray(x).astype(np.float64))
    f = F.log_softmax if log else F.softmax
    return f(t, dim=axis).numpy()


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("n", list(range(1, 71)) + [1000, 4099, 40000])
def test_softmax_float32_rows(n, log):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((3, n)) * 8).astype(np.float32)
    got = (ops.log_softmax if log else ops.softmax)(x, axis=-1)
    expected = softmax_ref(x, log=log)
    if log:
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-5)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_float32_special_rows(log):
    n = 37
    x = np.zeros((6, n), np.float32)
    x[0, 5] = -np.inf  # one -inf: exp 0 (log: -inf)
    x[1, :] = -np.inf  # all -inf: nan, as torch
    x[2, 30] = np.nan  # nan anywhere: the whole row nan
    x[3, 36] = np.inf  # +inf: nan (inf - inf), as torch
    x[4, :] = np.linspace(-1e30, 80, n)  # huge spread: underflowing exponentials
    x[5, :] = 1e4  # large equal values
    op = ops.log_softmax if log else ops.softmax
    got = op(x, axis=-1)
    expected = (F.log_softmax if log else F.softmax)(torch.from_numpy(x).double(), dim=-1).numpy()
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_float32_row_maximum_anywhere(log):
    # The row maximum is taken over several blocks of 16 at once, in separate chains: one large
    # value (exp overflows unless it is the shift) or one nan at every position of a row long
    # enough for the chains, and in its tail.
    n = 211
    x = np.zeros((2 * n, n), np.float32)
    for p in range(n):
        x[p, p] = 500.0
        x[n + p, p] = np.nan
    op = ops.log_softmax if log else ops.softmax
    got = op(x, axis=-1)
    expected = (F.log_softmax if log else F.softmax)(torch.from_numpy(x).double(), dim=-1).numpy()
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_float32_strided_and_other_axes(log):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((9, 70)) * 5).astype(np.float32)
    op = ops.log_softmax if log else ops.softmax
    for view, axis in ((x[:, ::2], -1), (x[::2, 3:], -1), (x, 0), (x.T, -1), (x[:, 1:], 0)):
        np.testing.assert_allclose(
            op(view, axis=axis), softmax_ref(view, axis, log), rtol=1e-5, atol=1e-6
        )


def test_softmax_long_row_split_across_pieces():
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((2, 300_000)) * 4).astype(np.float32)
    for log in (False, True):
        got = (ops.log_softmax if log else ops.softmax)(x, axis=-1)
        atol = 1e-4 if log else 1e-9
        np.testing.assert_allclose(got, softmax_ref(x, log=log), rtol=1e-5, atol=atol)


# ----- layer_norm / rms_norm rows -----


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("n", list(range(1, 71)) + [1024, 4099])
def test_layer_norm_float32_rows(n, affine):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((3, n)) * 3 + 2).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32) if affine[0] else None
    b = rng.standard_normal(n).astype(np.float32) if affine[1] else None

    def t(a):
        return None if a is None else torch.from_numpy(a).double()

    got = ops.layer_norm(x, w, b, normalized_shape=[n], eps=1e-5)
    expected = F.layer_norm(t(x), [n], t(w), t(b), eps=1e-5).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    got = ops.rms_norm(x, w, normalized_shape=[n], eps=1e-5)
    expected = F.rms_norm(t(x), [n], t(w), eps=1e-5).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_layer_norm_float32_large_mean_small_spread():
    # The mean rounded to float32 shifts every output alike (by up to half an input ulp over the
    # standard deviation, as in torch's float32 layer_norm), but its error must not leak into
    # the variance: the outputs keep unit spread.
    rng = np.random.default_rng(2)
    x = (1e4 + rng.standard_normal((4, 1000)) * 1e-1).astype(np.float32)
    got = ops.layer_norm(x, normalized_shape=[1000], eps=1e-12).astype(np.float64)
    expected = F.layer_norm(torch.from_numpy(x).double(), [1000], eps=1e-12).numpy()
    shift = np.abs(got.mean(axis=1)).max()
    assert shift < 0.5 * 2**-10 / 0.1 * 1.01
    np.testing.assert_allclose(
        got - got.mean(axis=1, keepdims=True), expected, rtol=1e-4, atol=1e-4
    )
    c = np.full((2, 33), 7.25, np.float32)  # constant rows: zero variance
    np.testing.assert_array_equal(ops.layer_norm(c, normalized_shape=[33]), np.zeros_like(c))


# ----- tanh and erf: computed in double (vector_math.h), correctly rounded but within 0.02 ulp --
# ----- of a tie ----------------------------------------------------------------------------------

IN_DOUBLE = {"tanh": torch.tanh, "erf": torch.erf}  # float64 references


def in_double_ulp_error(name: str, x: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - f(x)| in ulps of the float32 nearest to f(x), f computed in float64 (torch); nan
    references must be matched by nan."""
    with np.errstate(invalid="ignore"):
        ref = IN_DOUBLE[name](torch.from_numpy(x.astype(np.float64))).numpy()
    ref32 = ref.astype(np.float32)
    err = np.zeros(x.shape)
    nan = np.isnan(ref)
    ulp = np.spacing(np.abs(ref32[~nan])).astype(np.float64)
    err[~nan] = np.abs(got[~nan].astype(np.float64) - ref[~nan]) / ulp
    err[nan] = np.where(np.isnan(got[nan]), 0.0, np.inf)
    return err


# (x, f(x)) pairs: signed zeros, saturation to +-1 (tanh from about 9.01, erf from 3.9193),
# the smallest subnormal, and nan last
IN_DOUBLE_SPECIAL = {
    "tanh": (
        [0.0, -0.0, np.inf, -np.inf, 9.02, -9.02, 3e38, -1e-45, np.nan],
        [0.0, -0.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1e-45, np.nan],
    ),
    "erf": (
        [0.0, -0.0, np.inf, -np.inf, 3.92, -3.9, 4.5, -3e38, 1.25, -1e-45, 1e-30, np.nan],
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            1.0,
            -0.99999994,
            1.0,
            -1.0,
            0.92290014,
            -1e-45,
            1.1283791e-30,
            np.nan,
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(IN_DOUBLE))
def test_in_double_float32_whole_range_within_half_an_ulp(name):
    fn = getattr(ops, name)
    bits = np.arange(0, 2**32, 997, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), np.linspace(-10, 10, 2_000_001, dtype=np.float32)])
    got = fn(x)
    err = in_double_ulp_error(name, x, got)
    worst = int(np.argmax(err))
    assert err[worst] <= 0.501, f"{name}({x[worst]!r}): {err[worst]} ulp"
    finite = ~np.isnan(x)  # the sign of x, zeros included
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(x[finite]))
    special, expected = (np.array(v, np.float32) for v in IN_DOUBLE_SPECIAL[name])
    for n in (len(special), 64 + len(special)):  # in the scalar tail, and in whole vectors
        y = np.concatenate([np.ones(n - len(special), np.float32), special])
        got = fn(y)[-len(special) :]
        assert np.isnan(got[-1])
        np.testing.assert_array_equal(got[:-1].view(np.uint32), expected[:-1].view(np.uint32))


@pytest.mark.parametrize("name", sorted(IN_DOUBLE))
@pytest.mark.parametrize("step", [1, 3, -1])
def test_in_double_every_tail_and_strided_bitwise(name, step):
    """Contiguous runs (vectors, then the scalar tail) and strided ones (the scalar copy) give
    the same bits: the same double arithmetic, none of it fused."""
    fn = getattr(ops, name)
    rng = np.random.default_rng(5)
    for n in range(1, 71):
        x = (rng.standard_normal(3 * n) * 2).astype(np.float32)
        view = x[::step][:n]
        np.testing.assert_array_equal(
            fn(view).view(np.uint32), fn(np.ascontiguousarray(view)).view(np.uint32)
        )
        one_by_one = np.concatenate([fn(view[i : i + 1]) for i in range(n)])
        np.testing.assert_array_equal(fn(view).view(np.uint32), one_by_one.view(np.uint32))


# ----- every instruction-set copy -----

_ISA_SCRIPT = r"""
import sys
import numpy as np
from ctensor import ops

rng = np.random.default_rng(7)
results = {}
for n in list(range(1, 71)) + [1000, 4099]:
    x = (rng.standard_normal((3, n)) * 20).astype(np.float32)
    x[0, : min(n, 4)] = np.array([np.nan, np.inf, -np.inf, -120.0], np.float32)[: min(n, 4)]
    w = rng.standard_normal(n).astype(np.float32)
    results[f"exp_{n}"] = ops.exp(x)
    results[f"softmax_{n}"] = ops.softmax(x[1:], axis=-1)
    results[f"log_softmax_{n}"] = ops.log_softmax(x[1:], axis=-1)
    results[f"layer_norm_{n}"] = ops.layer_norm(x[1:], w, w, normalized_shape=[n])
    results[f"rms_norm_{n}"] = ops.rms_norm(x[1:], w, normalized_shape=[n])
x = np.concatenate([np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32),
                    np.linspace(-105, 90, 100003, dtype=np.float32)])
results["exp_sweep_x"] = x
results["exp_sweep"] = ops.exp(x)
results["tanh_sweep"] = ops.tanh(x)
results["erf_sweep"] = ops.erf(x)
np.savez(sys.argv[1], **results)
"""


def _isa_results(tmp_path, isa: str | None) -> dict[str, np.ndarray]:
    return results_under_isa(_ISA_SCRIPT, tmp_path / f"vm-{isa or 'default'}.npz", isa)


def test_every_isa_copy_agrees_within_an_ulp(tmp_path):
    best = _isa_results(tmp_path, None)
    for isa in ("generic", "avx2", "avx512"):
        forced = _isa_results(tmp_path, isa)
        assert forced.keys() == best.keys()
        sweep = forced["exp_sweep_x"]
        assert exp_ulp_error(sweep, forced["exp_sweep"]).max() <= 1.02, isa
        for key, value in best.items():
            if key.startswith(("layer_norm", "rms_norm", "tanh", "erf")):
                # the same operations in the same order for every vector width: bitwise equal
                np.testing.assert_array_equal(forced[key], value, err_msg=f"{isa}: {key}")
            else:
                # exp differs by fused multiply-adds only: an ulp, a few for softmax's sums
                np.testing.assert_allclose(
                    forced[key],
                    value,
                    rtol=4e-7 if key.startswith("exp") else 2e-6,
                    atol=1e-6 if "log" in key else 0,
                    equal_nan=True,
                    err_msg=f"{isa}: {key}",
                )


# ----- huge outputs: non-temporal stores (CT_VECTOR_MATH_STREAM_BYTES) -----


def misaligned_empty(shape) -> np.ndarray:
    """A C-contiguous float32 array starting 4 bytes past a 64-byte boundary."""
    count = int(np.prod(shape))
    buffer = np.empty(count + 32, np.float32)
    start = (-buffer.ctypes.data // 4) % 16 + 1
    return buffer[start : start + count].reshape(shape)


def test_exp_huge_output_streams_with_the_same_bits():
    rng = np.random.default_rng(21)
    x = (rng.standard_normal(5_000_003) * 30).astype(np.float32)
    x[::100_001] = np.nan
    out = misaligned_empty(x.shape)
    ops.exp(x, out=out)
    pieces = np.concatenate([ops.exp(x[i : i + 99_991]) for i in range(0, x.size, 99_991)])
    np.testing.assert_array_equal(out.view(np.uint32), pieces.view(np.uint32))


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm", "rms_norm"])
@pytest.mark.parametrize("shape", [(2100, 1023), (420, 5003)])
def test_rows_of_a_huge_output_stream_with_the_same_bits(op, shape):
    """On one thread, whose share of the output is then over the streaming threshold (8 MB):
    odd rows (every alignment of a row start), and rows longer than softmax's buffer of
    exponentials (4096), which rescale the output in place."""
    before = ctensor.get_num_threads()
    try:
        ctensor.set_num_threads(1)
        _huge_rows_stream_with_the_same_bits(op, shape)
    finally:
        ctensor.set_num_threads(before)


def _huge_rows_stream_with_the_same_bits(op, shape):
    rng = np.random.default_rng(22)
    rows, n = shape
    x = (rng.standard_normal((rows, n)) * 4).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)

    def run(a, out=None):
        if op in ("softmax", "log_softmax"):
            return getattr(ops, op)(a, axis=-1, out=out)
        if op == "layer_norm":
            return ops.layer_norm(a, w, w, normalized_shape=[n], out=out)
        return ops.rms_norm(a, w, normalized_shape=[n], out=out)

    out = misaligned_empty(x.shape)
    run(x, out)
    pieces = np.concatenate([run(x[i : i + 20]) for i in range(0, rows, 20)])
    np.testing.assert_array_equal(out.view(np.uint32), pieces.view(np.uint32))


@pytest.mark.parametrize("n", [15, 16, 17, 31, 33, 47, 100, 1000])
def test_maps_peel_to_the_output_vector_boundary(n):
    """The vectorised maps (exp, softmax's scaling, layer_norm's normalising) write one part
    vector up to the output's next vector boundary, then whole aligned blocks: every output start
    within 64 bytes gives the bits of the aligned call, and nothing around the output is written."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((2, n)) * 4).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    ref_exp = ops.exp(x)
    ref_softmax = ops.softmax(x, axis=-1)
    ref_norm = ops.layer_norm(x, w, normalized_shape=[n])
    for start in range(16):
        for op, ref in (("exp", ref_exp), ("softmax", ref_softmax), ("layer_norm", ref_norm)):
            guard = np.full(2 * n + 64, -7.0, np.float32)
            out = guard[start : start + 2 * n].reshape(2, n)
            if op == "exp":
                ops.exp(x, out=out)
            elif op == "softmax":
                ops.softmax(x, axis=-1, out=out)
            else:
                ops.layer_norm(x, w, normalized_shape=[n], out=out)
            np.testing.assert_array_equal(out, ref, err_msg=f"{op} at offset {start}")
            assert (guard[:start] == -7.0).all() and (guard[start + 2 * n :] == -7.0).all()


@pytest.mark.parametrize("n", [16, 17, 31, 100, 1000, 4099])
def test_in_place_maps_read_no_output(n):
    """An in-place map computes its first and last (unaligned) blocks before storing anything:
    exp in place gives the out-of-place bits at every start within 64 bytes, as does softmax,
    whose last pass scales its output in place."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((3, n)) * 4).astype(np.float32)
    want_exp, want_softmax = ops.exp(x), ops.softmax(x, axis=-1)
    for start in range(16):
        guard = np.full(3 * n + 32, -7.0, np.float32)
        y = guard[start : start + 3 * n].reshape(3, n)
        y[...] = x
        ops.exp(y, out=y)
        np.testing.assert_array_equal(y.view(np.uint32), want_exp.view(np.uint32))
        ops.softmax(x, axis=-1, out=y)
        np.testing.assert_array_equal(y.view(np.uint32), want_softmax.view(np.uint32))
        assert (guard[:start] == -7.0).all() and (guard[start + 3 * n :] == -7.0).all()
