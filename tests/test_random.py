"""The Philox-4x32-10 stream (kernels/common/philox.h) and the ops built on it: random_uniform,
random_normal, random_bernoulli, dropout (and dropout_backward), plus arange.

- The header on its own, compiled as C and C++, against Random123's published known-answer
  vectors, and its distributions against the NumPy twin conformance/philox.py bit for bit.
- Every op on the CPU against that twin bit for bit (any seed, offset, shape, output strides),
  against torch where torch's semantics are deterministic (dropout without training or with
  p in {0, 1}, arange, bernoulli with p in {0, 1}), and independent of the thread count.
- Statistics with fixed seeds: moments within bounds derived from the sample size, a
  chi-square test of uniform bins, a Kolmogorov-Smirnov test of normals, bernoulli frequencies,
  dropout's keep rate and scale.
- Offsets shift the stream; errors are clear.
tests/test_opencl_random.py checks that opencl:0 gives the same bits.
"""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import torch
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from ctensor.conformance import philox as ref

ROOT = Path(__file__).resolve().parent.parent
PHILOX_H = ROOT / "kernels" / "common" / "philox.h"
CC = os.environ.get("CC", "cc")
CXX = os.environ.get("CXX", "g++")

# Random123's known-answer vectors for philox4x32 with 10 rounds: the three "philox4x32 10" lines
# of tests/kat_vectors in https://github.com/DEShawResearch/random123 (columns: counter, 4 words;
# key, 2 words; expected output, 4 words):
#   philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000
#       -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8
#   philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
#       -> 408f276d 41c83b0e a20bc7c6 6d5451fd
#   philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0
#       -> d16cfe09 94fdcceb 5001e420 24126ea1
KAT_PHILOX4X32_10 = [
    (
        (0x00000000, 0x00000000, 0x00000000, 0x00000000),
        (0x00000000, 0x00000000),
        (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8),
    ),
    (
        (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
        (0xFFFFFFFF, 0xFFFFFFFF),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]

_KAT_DRIVER = r"""
#include <stdio.h>
#include "philox.h"

int main(void) {
  static const ct_philox_u32 cases[][6] = {CASES};
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const ct_philox_u32 *c = cases[i];
    const ct_philox4 r = ct_philox4x32_10(c[0], c[1], c[2], c[3], c[4], c[5]);
    printf("%08x %08x %08x %08x\n", (unsigned)r.x[0], (unsigned)r.x[1], (unsigned)r.x[2],
           (unsigned)r.x[3]);
  }
  return 0;
}
"""


def _kat_outputs(tmp_path: Path, compiler: list[str], suffix: str) -> list[tuple[int, ...]]:
    cases = ", ".join(
        "{" + ", ".join(f"0x{w:08x}u" for w in ctr + key) + "}" for ctr, key, _ in KAT_PHILOX4X32_10
    )
    src = tmp_path / f"kat{suffix}"
    src.write_text(_KAT_DRIVER.replace("CASES", cases))
    exe = tmp_path / f"kat{suffix}.exe"
    subprocess.run(
        [
            *compiler,
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{PHILOX_H.parent}",
            str(src),
            "-o",
            str(exe),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return [tuple(int(w, 16) for w in line.split()) for line in out.splitlines()]


@pytest.mark.parametrize(
    ("compiler", "suffix"),
    [([CC, "-std=c99", "-pedantic", "-ffp-contract=off"], ".c"), ([CXX, "-std=c++11"], ".cpp")],
    ids=["c99", "c++11"],
)
def test_philox_known_answer_vectors(tmp_path: Path, compiler: list[str], suffix: str) -> None:
    got = _kat_outputs(tmp_path, compiler, suffix)
    assert got == [expected for _, _, expected in KAT_PHILOX4X32_10]


# ----- the header's distributions against the NumPy reference (conformance/philox.py) -----

_DIST_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "philox.h"

/* Writes, for elements 0..n-1 of the stream (seed, offset): the 4 words, then each
 * distribution's raw bits, as a binary file of consecutive arrays. */
int main(int argc, char** argv) {
  if (argc != 7) return 2;
  const ct_philox_u64 seed = strtoull(argv[1], NULL, 0), offset = strtoull(argv[2], NULL, 0);
  const long n = strtol(argv[3], NULL, 0);
  const float lo = strtof(argv[4], NULL), hi = strtof(argv[5], NULL);
  const float lo16 = ct_philox_f16_to_f32(ct_philox_f32_to_f16(lo));
  const float hi16 = ct_philox_f16_to_f32(ct_philox_f32_to_f16(hi));
  const float lob = ct_philox_bf16_to_f32(ct_philox_f32_to_bf16(lo));
  const float hib = ct_philox_bf16_to_f32(ct_philox_f32_to_bf16(hi));
  FILE* out = fopen(argv[6], "wb");
  for (int pass = 0; pass < 9; ++pass) {
    for (long i = 0; i < n; ++i) {
      const ct_philox4 w = ct_philox_element(seed, offset, (ct_philox_u64)i);
      union { float f; double d; ct_philox_u16 h; ct_philox_u32 u[4]; } v;
      size_t size = 4;
      switch (pass) {
        case 0: for (int k = 0; k < 4; ++k) v.u[k] = w.x[k]; size = 16; break;
        case 1: v.f = ct_philox_uniform_range_f32(w.x[0], lo, hi); break;
        case 2: v.h = ct_philox_uniform_range_f16(w.x[0], lo16, hi16); size = 2; break;
        case 3: v.h = ct_philox_uniform_range_bf16(w.x[0], lob, hib); size = 2; break;
        case 4: v.d = ct_philox_uniform_range_f64(w.x[0], w.x[1], lo, hi); size = 8; break;
        case 5: v.f = ct_philox_normal_f32(w.x[0], w.x[1]); break;
        case 6: v.d = ct_philox_normal_f64(w.x[0], w.x[1], w.x[2], w.x[3]); size = 8; break;
        case 7: v.f = ct_philox_normal_range_f32(w.x[0], w.x[1], lo, hi); break;
        default: v.d = ct_philox_normal_range_f64(w.x[0], w.x[1], w.x[2], w.x[3], lo, hi); size = 8;
      }
      fwrite(&v, size, 1, out);
    }
  }
  fclose(out);
  return 0;
}
"""


@pytest.fixture(scope="module")
def dist_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("philox")
    src = tmp / "dist.c"
    src.write_text(_DIST_DRIVER)
    exe = tmp / "dist"
    # -O2 -march=native: a machine with FMA would contract a * b + c here if the header let it.
    flags = ["-std=c11", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror"]
    native = subprocess.run(
        [CC, "-march=native", "-E", "-x", "c", "/dev/null"], capture_output=True
    )
    if native.returncode == 0:
        flags.append("-march=native")
    subprocess.run(
        [CC, *flags, f"-I{PHILOX_H.parent}", str(src), "-o", str(exe), "-lm"],
        check=True,
        capture_output=True,
        text=True,
    )
    return exe


@pytest.mark.parametrize(
    ("seed", "offset", "low", "high"),
    [
        (0, 0, 0.0, 1.0),
        (0x123456789ABCDEF0, 7, -3.0, 5.5),
        ((1 << 64) - 1, (1 << 64) - 1, 1.0, 1.5),
    ],
)
def test_header_matches_numpy_reference(
    dist_driver: Path, tmp_path: Path, seed: int, offset: int, low: float, high: float
) -> None:
    n = 20000
    out = tmp_path / "values.bin"
    subprocess.run(
        [str(dist_driver), str(seed), str(offset), str(n), repr(low), repr(high), str(out)],
        check=True,
    )
    raw = out.read_bytes()
    sizes = [16, 4, 2, 2, 8, 4, 8, 4, 8]
    parts, start = [], 0
    for size in sizes:
        parts.append(raw[start : start + size * n])
        start += size * n
    assert start == len(raw)
    words = np.frombuffer(parts[0], np.uint32).reshape(n, 4)
    expected_words = np.stack(ref.stream_words(seed, offset, n), axis=1)
    np.testing.assert_array_equal(words, expected_words)
    shape = (n,)
    pairs = [
        (
            np.frombuffer(parts[1], np.uint32),
            ref.uniform(seed, offset, shape, "float32", low, high),
        ),
        (
            np.frombuffer(parts[2], np.uint16),
            ref.uniform(seed, offset, shape, "float16", low, high),
        ),
        (
            np.frombuffer(parts[3], np.uint16),
            ref.uniform(seed, offset, shape, "bfloat16", low, high),
        ),
        (
            np.frombuffer(parts[4], np.uint64),
            ref.uniform(seed, offset, shape, "float64", np.float32(low), np.float32(high)),
        ),
        (np.frombuffer(parts[5], np.uint32), ref.normal(seed, offset, shape, "float32")),
        (np.frombuffer(parts[6], np.uint64), ref.normal(seed, offset, shape, "float64")),
        (np.frombuffer(parts[7], np.uint32), ref.normal(seed, offset, shape, "float32", low, high)),
        (
            np.frombuffer(parts[8], np.uint64),
            ref.normal(seed, offset, shape, "float64", np.float32(low), np.float32(high)),
        ),
    ]
    for k, (got, want) in enumerate(pairs):
        want_bits = np.ascontiguousarray(want).view(got.dtype)
        mismatches = np.flatnonzero(got != want_bits)
        assert mismatches.size == 0, (
            k,
            mismatches[:5],
            got[mismatches[:5]],
            want_bits[mismatches[:5]],
        )


# ----- the ops on the CPU against the NumPy twin -----

FLOATS = ["float16", "bfloat16", "float32", "float64"]
SETTINGS = settings(max_examples=25, deadline=None)
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64, 1: np.uint8}
TORCH_DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "bool": torch.bool,
}

seeds = st.integers(-(2**63), 2**63 - 1)
offsets = st.one_of(st.integers(0, 8), st.integers(-(2**63), 2**63 - 1))
shapes = st.lists(st.integers(0, 7), min_size=0, max_size=3).map(tuple)


def raw(a) -> np.ndarray:  # noqa: ANN001
    """The stored bits of a result (NumPy or torch, any float dtype) as unsigned integers."""
    if isinstance(a, torch.Tensor):
        if a.dtype == torch.bfloat16:
            flat = a.contiguous().reshape(-1).view(torch.int16).numpy().view(np.uint16)
            return flat.reshape(tuple(a.shape))
        a = a.numpy()
    a = np.asarray(a)
    a = a if a.flags.c_contiguous else a.copy()
    return a.view(UINT[a.itemsize]) if a.dtype != bool else a


def run(op: str, dtype: str, *inputs, **attrs):  # noqa: ANN002, ANN003, ANN201
    """Calls a zero-input op (or one with inputs) returning dtype; bfloat16 results go to a
    torch tensor (NumPy cannot hold them)."""
    if dtype != "bfloat16":
        return getattr(ctensor.ops, op)(*inputs, dtype=dtype, **attrs)
    shape = attrs.get("shape")
    if shape is None:
        shape = np.shape(inputs[0])
    out = torch.empty(tuple(shape), dtype=torch.bfloat16)
    return getattr(ctensor.ops, op)(*inputs, dtype=dtype, out=out, **attrs)


def expect_bits(got, want: np.ndarray) -> None:  # noqa: ANN001
    g, w = raw(got), raw(want)
    assert g.shape == w.shape
    mismatch = np.flatnonzero(g.reshape(-1) != w.reshape(-1))
    assert mismatch.size == 0, (
        mismatch[:5],
        g.reshape(-1)[mismatch[:5]],
        w.reshape(-1)[mismatch[:5]],
    )


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(
    shape=shapes,
    seed=seeds,
    offset=offsets,
    bounds=st.sampled_from([(0.0, 1.0), (-3.0, 5.5), (1.0, 1.001), (-1e30, 1e30), (-2.0, -1.75)]),
)
def test_uniform_matches_twin(dtype, shape, seed, offset, bounds) -> None:
    low, high = bounds
    if dtype in ("float16",) and abs(high) > 6e4:
        low, high = -6e4, 6e4
    if dtype in ("float16", "bfloat16") and ref._round16(low, dtype) == ref._round16(high, dtype):
        with pytest.raises(ctensor.InvalidArgumentError, match="low < high"):
            run("random_uniform", dtype, shape=shape, seed=seed, low=low, high=high)
        return
    got = run("random_uniform", dtype, shape=shape, seed=seed, offset=offset, low=low, high=high)
    want = ref.uniform(seed, offset, shape, dtype, low, high)
    expect_bits(got, want)
    values = got.float().numpy() if isinstance(got, torch.Tensor) else got.astype(np.float64)
    lo = ref._round16(low, dtype) if dtype in ("float16", "bfloat16") else low
    assert np.all(values >= np.float32(lo) if dtype != "float64" else values >= low)
    assert np.all(values < high) or dtype != "float64"


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(
    shape=shapes,
    seed=seeds,
    offset=offsets,
    moments=st.sampled_from([(0.0, 1.0), (3.0, 0.5), (-1.0, 0.0)]),
)
def test_normal_matches_twin(dtype, shape, seed, offset, moments) -> None:
    mean, std = moments
    got = run("random_normal", dtype, shape=shape, seed=seed, offset=offset, mean=mean, std=std)
    expect_bits(got, ref.normal(seed, offset, shape, dtype, mean, std))


@pytest.mark.parametrize("out_dtype", ["bool", *FLOATS])
@SETTINGS
@given(data=st.data(), seed=seeds, offset=offsets)
def test_bernoulli_matches_twin(out_dtype, data, seed, offset) -> None:
    shape = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple))
    mode = data.draw(st.sampled_from(["p", "probs", "broadcast"]))
    if mode == "p":
        p = data.draw(st.sampled_from([0.0, 0.3, 0.5, 1.0]))
        got = run("random_bernoulli", out_dtype, shape=shape, p=p, seed=seed, offset=offset)
    else:
        probs_shape = shape if mode == "probs" else shape[len(shape) // 2 :]
        p = np.random.default_rng(seed & 0xFFFF).uniform(-0.2, 1.2, probs_shape)
        p = p.astype(data.draw(st.sampled_from([np.float32, np.float64, np.float16])))
        got = run("random_bernoulli", out_dtype, p, shape=shape, seed=seed, offset=offset)
    bits = ref.bernoulli(seed, offset, shape, p)
    want = bits if out_dtype == "bool" else torch.tensor(bits, dtype=TORCH_DTYPES[out_dtype])
    if isinstance(got, torch.Tensor) or out_dtype == "bool":
        expect_bits(
            got,
            want.numpy() if isinstance(want, torch.Tensor) and out_dtype != "bfloat16" else want,
        )
    else:
        expect_bits(got, bits.astype(out_dtype))


def test_bernoulli_shape_from_probs_and_torch_extremes() -> None:
    probs = np.array([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    got = ctensor.ops.random_bernoulli(probs, seed=3)
    assert got.dtype == bool and got.shape == (2, 3)
    np.testing.assert_array_equal(got, torch.bernoulli(torch.tensor(probs)).numpy().astype(bool))
    # the default p is 0.5 and the default dtype bool (as jax.random.bernoulli)
    expect_bits(ctensor.ops.random_bernoulli(shape=(50,), seed=4), ref.bernoulli(4, 0, (50,), 0.5))


def _strided_x(rng: np.random.Generator, dtype: str, shape: tuple, layout: str):  # noqa: ANN202
    base = rng.standard_normal((shape[0], 2 * shape[1])) * 3
    x = base[:, ::2] if layout == "strided" else base[:, : shape[1]]
    if layout == "transposed":
        x = np.ascontiguousarray(base[:, : shape[1]].T).T
    if dtype == "bfloat16":
        return torch.from_numpy(np.array(x)).to(torch.bfloat16)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["compact", "strided", "transposed"])
@pytest.mark.parametrize(
    ("p", "training"), [(0.5, True), (0.1, True), (0.0, True), (1.0, True), (0.4, False)]
)
def test_dropout_matches_twin_and_torch(dtype, layout, p, training) -> None:
    rng = np.random.default_rng(17)
    x = _strided_x(rng, dtype, (5, 9), layout)
    out, mask = ctensor.ops.dropout(x, p=p, seed=99, offset=3, training=training)
    xt = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.array(x))
    x64 = xt.double().numpy()
    want_out, want_mask = ref.dropout(
        x64.astype(np.float32 if dtype != "float64" else np.float64), p, 99, 3
    )
    if not training:
        want_out, want_mask = x64, np.ones(x64.shape, bool)
        torch_out = torch.nn.functional.dropout(xt, p=p, training=False)
        expect_bits(out, torch_out if dtype == "bfloat16" else torch_out.numpy())
    np.testing.assert_array_equal(mask, want_mask)
    expected = torch.from_numpy(np.asarray(want_out)).to(TORCH_DTYPES[dtype])
    expect_bits(out, expected if dtype == "bfloat16" else expected.numpy())
    if training and p in (0.0, 1.0):  # torch is deterministic there (its p = 1 gives x * 0: -0.0)
        torch_out = torch.nn.functional.dropout(xt, p=p, training=True)
        outt = out if isinstance(out, torch.Tensor) else torch.from_numpy(out)
        assert torch.equal(outt, torch_out)
    if training and 0 < p < 1:  # kept values are x / (1 - p), as torch's
        kept = torch.from_numpy(np.asarray(mask))
        scale = torch.tensor(1 / (1 - p), dtype=torch.float64).to(
            torch.float32 if dtype != "float64" else torch.float64
        )
        torch_kept = (xt.to(scale.dtype) * scale).to(xt.dtype)[kept]
        outt = out if isinstance(out, torch.Tensor) else torch.from_numpy(out)
        assert torch.equal(outt[kept], torch_kept)


def test_dropout_drops_inf_and_nan_to_zero() -> None:
    x = np.array([np.inf, -np.inf, np.nan] * 20, np.float32)
    out, mask = ctensor.ops.dropout(x, p=0.5, seed=1)
    assert 0 < mask.sum() < mask.size
    assert np.all(out[~mask] == 0)
    np.testing.assert_array_equal(np.isnan(out[mask]), np.isnan(x[mask]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("p", "training"), [(0.3, True), (0.0, True), (0.6, False)])
def test_dropout_gradient(dtype, p, training) -> None:
    x = np.random.default_rng(2).standard_normal((4, 6))
    _, mask = ctensor.ops.dropout(x, p=p, seed=5, offset=1, training=training)
    scale = 1 / (1 - p) if training else 1.0
    mask_t = torch.from_numpy(mask)

    def torch_fn(xt):  # noqa: ANN001, ANN202
        return (xt * mask_t * scale, mask_t)

    check_vjp(
        "dropout",
        [x],
        {"p": p, "seed": 5, "offset": 1, "training": training},
        torch_fn,
        dtype=dtype,
    )


def test_dropout_backward_op() -> None:
    g = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    mask = np.array([True, False, True, True])
    got = ctensor.ops.dropout_backward(g, mask, p=0.25)
    np.testing.assert_array_equal(got, np.where(mask, g * np.float32(1 / 0.75), 0))
    np.testing.assert_array_equal(
        ctensor.ops.dropout_backward(g, mask, p=0.25, training=False), np.where(mask, g, 0)
    )
    np.testing.assert_array_equal(ctensor.ops.dropout_backward(g, mask, p=1.0), np.zeros_like(g))


# ----- strides, threads, zero sizes -----


@pytest.mark.parametrize("op", ["random_uniform", "random_normal"])
def test_output_strides_do_not_change_the_stream(op) -> None:
    want = getattr(ctensor.ops, op)(shape=(4, 6), seed=8)
    for out in (
        np.empty((4, 12), np.float32)[:, ::2],
        np.empty((6, 4), np.float32).T,
        np.empty((4, 6), np.float32)[::-1][::-1],
    ):
        got = getattr(ctensor.ops, op)(shape=(4, 6), seed=8, out=out)
        expect_bits(got, want)
    base = np.empty((4, 6), np.float32)
    reversed_view = base[::-1, ::-1]
    getattr(ctensor.ops, op)(shape=(4, 6), seed=8, out=reversed_view)
    expect_bits(reversed_view, want)  # element (i, j) of the view is still index i * 6 + j


def _every_op(n: int) -> list:
    x = np.linspace(-3, 3, n, dtype=np.float32).reshape(-1, 100)
    probs = np.linspace(0, 1, 100)
    return [
        ctensor.ops.random_uniform(shape=(n,), seed=1, offset=2),
        ctensor.ops.random_uniform(shape=(n // 100, 100), dtype="float64", seed=1),
        ctensor.ops.random_normal(shape=(n,), seed=1, mean=2.0),
        ctensor.ops.random_normal(shape=(n,), dtype="float16", seed=1),
        ctensor.ops.random_bernoulli(probs, shape=(n // 100, 100), seed=7),
        *ctensor.ops.dropout(x, p=0.3, seed=5),
        ctensor.ops.arange(start=0, stop=n, dtype="float32"),
    ]


def test_results_do_not_depend_on_the_thread_count() -> None:
    n = 400_000  # large enough for every op to split its range across threads
    before = ctensor.get_num_threads()
    try:
        ctensor.set_num_threads(1)
        one = _every_op(n)
        ctensor.set_num_threads(2)
        two = _every_op(n)
    finally:
        ctensor.set_num_threads(before)
    for a, b in zip(one, two, strict=True):
        expect_bits(a, b)
    expect_bits(one[0], ref.uniform(1, 2, (n,), "float32"))


def test_zero_size_and_scalar_shapes() -> None:
    assert ctensor.ops.random_uniform(shape=(0, 3), seed=1).shape == (0, 3)
    assert ctensor.ops.random_normal(shape=(), seed=1).shape == ()
    expect_bits(ctensor.ops.random_normal(shape=(), seed=1), ref.normal(1, 0, (), "float32"))
    out, mask = ctensor.ops.dropout(np.zeros((0, 2)), seed=1)
    assert out.shape == mask.shape == (0, 2)
    assert ctensor.ops.arange(start=3, stop=3, dtype="int64").shape == (0,)


# ----- statistics (fixed seeds; bounds from the sample size) -----

N = 200_000


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_uniform_moments_and_chi_square(dtype) -> None:
    u = run("random_uniform", dtype, shape=(N,), seed=2024)
    values = u.double().numpy() if isinstance(u, torch.Tensor) else u.astype(np.float64)
    assert values.min() >= 0 and values.max() < 1
    # mean 1/2 and variance 1/12, within 6 standard errors (4th central moment 1/80)
    assert abs(values.mean() - 0.5) < 6 * math.sqrt(1 / 12 / N)
    assert abs(values.var() - 1 / 12) < 6 * math.sqrt((1 / 80 - 1 / 144) / N)
    # bins of equal width, each holding the same number of representable values
    bins = {"float16": 64, "bfloat16": 16}.get(dtype, 100)
    counts = np.bincount(np.floor(values * bins).astype(int), minlength=bins)
    assert scipy.stats.chisquare(counts).pvalue > 1e-4


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_moments_and_kolmogorov_smirnov(dtype) -> None:
    z = ctensor.ops.random_normal(shape=(N,), dtype=dtype, seed=77).astype(np.float64)
    assert abs(z.mean()) < 6 / math.sqrt(N)
    assert abs(z.var() - 1) < 6 * math.sqrt(2 / N)
    assert abs(scipy.stats.skew(z)) < 6 * math.sqrt(6 / N)
    assert abs(scipy.stats.kurtosis(z)) < 6 * math.sqrt(24 / N)
    assert scipy.stats.kstest(z, "norm").pvalue > 1e-4
    shifted = ctensor.ops.random_normal(shape=(N,), dtype=dtype, seed=77, mean=3.0, std=2.0)
    assert abs(shifted.mean() - 3) < 6 * 2 / math.sqrt(N)
    assert abs(shifted.std() - 2) < 6 * 2 * math.sqrt(0.5 / N)
    assert scipy.stats.kstest(shifted.astype(np.float64), "norm", args=(3.0, 2.0)).pvalue > 1e-4


def test_normal_tails_are_finite_and_reach_far() -> None:
    z = ctensor.ops.random_normal(shape=(2_000_000,), dtype="float32", seed=5)
    assert np.all(np.isfinite(z)) and np.abs(z).max() > 4.5


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.9])
def test_bernoulli_frequency(p) -> None:
    draws = ctensor.ops.random_bernoulli(shape=(N,), p=p, seed=31)
    assert abs(draws.mean() - p) < 6 * math.sqrt(p * (1 - p) / N)
    probs = np.full((N,), p)
    assert abs(ctensor.ops.random_bernoulli(probs, seed=32).mean() - p) < 6 * math.sqrt(
        p * (1 - p) / N
    )


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_keep_rate_and_scale(p) -> None:
    x = np.ones(N, np.float32)
    out, mask = ctensor.ops.dropout(x, p=p, seed=13)
    assert abs(mask.mean() - (1 - p)) < 6 * math.sqrt(p * (1 - p) / N)
    np.testing.assert_array_equal(out[mask], np.float32(1 / (1 - p)))
    assert np.all(out[~mask] == 0)
    assert abs(out.mean() - 1) < 6 * math.sqrt(p / (1 - p) / N)  # unbiased, as torch's


# ----- offsets and seeds -----


def test_offsets_shift_the_stream() -> None:
    n = 4096
    streams = [ctensor.ops.random_uniform(shape=(n,), seed=21, offset=k) for k in range(4)]
    for k, s in enumerate(streams):
        expect_bits(s, ref.uniform(21, k, (n,), "float32"))
        for other in streams[k + 1 :]:
            # different counters: equal values only by chance (2^-24 each)
            assert np.sum(s == other) <= 2
    # element i at offset o is Philox at counter (i, o): two calls with different offsets never
    # share a counter, whatever their sizes
    words = ref.philox4x32_10((np.arange(n, dtype=np.uint32), 0, 1, 0), (21, 0))[0]
    expect_bits(streams[1], ((words >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)))


def test_seeds_are_64_bit() -> None:
    # the attribute holds the uint64's bits: -1 is 2^64 - 1, whose key words are both 0xffffffff
    got = ctensor.ops.random_uniform(shape=(8,), seed=-1, offset=-1)
    expect_bits(got, ref.uniform(2**64 - 1, 2**64 - 1, (8,), "float32"))
    words = ref.philox4x32_10(
        (np.arange(8, dtype=np.uint32), 0, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF)
    )
    expect_bits(got, (words[0] >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24))
    a = ctensor.ops.random_uniform(shape=(64,), seed=1)
    b = ctensor.ops.random_uniform(shape=(64,), seed=1 + 2**32)  # the high key word matters
    assert np.sum(a == b) <= 1


# ----- arange -----


@SETTINGS
@given(
    start=st.integers(-50, 50),
    stop=st.one_of(st.none(), st.integers(-50, 50)),
    step=st.integers(-7, 7).filter(bool),
    dtype=st.sampled_from(
        ["int8", "uint8", "int16", "int32", "int64", "uint64", "float32", "float64"]
    ),
)
def test_arange_integers_match_numpy_and_torch(start, stop, step, dtype) -> None:
    kwargs = {"start": start, "step": step, "dtype": dtype}
    if stop is not None:
        kwargs["stop"] = stop
    want = (
        np.arange(start, stop, step, dtype=np.int64)
        if stop is not None
        else np.arange(0, start, step, dtype=np.int64)
    )
    if dtype.startswith("u") and want.size and want.min() < 0:
        with pytest.raises(ctensor.InvalidArgumentError):
            ctensor.ops.arange(**kwargs)
        return
    got = ctensor.ops.arange(**kwargs)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want.astype(dtype))
    if dtype in ("int64", "float64") and want.size:  # torch refuses empty ranges
        t = torch.arange(
            0 if stop is None else start,
            start if stop is None else stop,
            step,
            dtype=TORCH_DTYPES.get(dtype, torch.int64),
        )
        np.testing.assert_array_equal(got, t.numpy())


@SETTINGS
@given(
    start=st.floats(-100, 100),
    span=st.floats(-100, 100),
    step=st.floats(0.01, 10) | st.floats(-10, -0.01),
    dtype=st.sampled_from(FLOATS),
)
def test_arange_floats(start, span, step, dtype) -> None:
    stop = start + span
    length = max(0, math.ceil((stop - start) / step))
    if length > 20000:
        return
    out = torch.empty((length,), dtype=torch.bfloat16) if dtype == "bfloat16" else None
    got = ctensor.ops.arange(start=start, stop=stop, step=step, dtype=dtype, out=out)
    values = got.double().numpy() if isinstance(got, torch.Tensor) else got.astype(np.float64)
    assert values.shape == (length,) == np.arange(start, stop, step).shape
    exact = np.float64(start) + np.arange(length) * np.float64(step)
    rounded = exact if dtype == "float64" else exact.astype(np.float32)
    expected = torch.from_numpy(np.asarray(rounded)).to(TORCH_DTYPES[dtype])
    expect_bits(got, expected if dtype == "bfloat16" else expected.numpy())
    np.testing.assert_allclose(
        values,
        np.arange(start, stop, step),
        rtol=1e-2 if dtype in ("float16", "bfloat16") else 1e-5,
        atol=0.5 if dtype == "bfloat16" else 0.1 if dtype == "float16" else 1e-4,
    )


# ----- errors -----


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: ctensor.ops.dropout(np.ones(3), p=1.5, seed=1), ctensor.InvalidArgumentError),
        (lambda: ctensor.ops.dropout(np.ones(3), p=-0.1, seed=1), ctensor.InvalidArgumentError),
        (
            lambda: ctensor.ops.dropout(np.ones(3), p=float("nan"), seed=1),
            ctensor.InvalidArgumentError,
        ),
        (lambda: ctensor.ops.dropout(np.ones(3, np.int32), seed=1), ctensor.UnsupportedDTypeError),
        (lambda: ctensor.ops.dropout(np.ones(3)), ctensor.CTensorError),  # seed is required
        (
            lambda: ctensor.ops.dropout_backward(np.ones(3), np.ones(3, bool), p=2.0),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.random_bernoulli(shape=(3,), p=1.01, seed=1),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.random_bernoulli(np.ones(3), p=0.5, seed=1),
            ctensor.InvalidArgumentError,
        ),
        (lambda: ctensor.ops.random_bernoulli(seed=1), ctensor.InvalidArgumentError),
        (
            lambda: ctensor.ops.random_bernoulli(np.ones(3), shape=(2,), seed=1),
            ctensor.ShapeMismatchError,
        ),
        (
            lambda: ctensor.ops.random_bernoulli(shape=(3,), seed=1, dtype="int32"),
            ctensor.UnsupportedDTypeError,
        ),
        (
            lambda: ctensor.ops.random_uniform(shape=(3,), seed=1, dtype="int32"),
            ctensor.UnsupportedDTypeError,
        ),
        (
            lambda: ctensor.ops.random_uniform(shape=(3,), seed=1, low=1.0, high=1.0),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.random_uniform(shape=(3,), seed=1, low=2.0, high=1.0),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.random_uniform(shape=(3,), seed=1, high=float("inf")),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.random_uniform(
                shape=(3,), seed=1, dtype="float16", low=1.0, high=1.0001
            ),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.random_uniform(shape=(3,), seed=1, low=-3e38, high=3e38),
            ctensor.InvalidArgumentError,
        ),
        (lambda: ctensor.ops.random_uniform(shape=(-1, 3), seed=1), ctensor.InvalidShapeError),
        (
            lambda: ctensor.ops.random_normal(shape=(3,), seed=1, std=-1.0),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.random_normal(shape=(3,), seed=1, mean=float("nan")),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.arange(start=0, stop=5, step=0, dtype="int32"),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.arange(start=0, stop=5, step=0.0, dtype="float32"),
            ctensor.InvalidArgumentError,
        ),
        (lambda: ctensor.ops.arange(start=0, stop=5, dtype="bool"), ctensor.UnsupportedDTypeError),
        (
            lambda: ctensor.ops.arange(start=0.5, stop=5, dtype="int32"),
            ctensor.InvalidArgumentError,
        ),
        (lambda: ctensor.ops.arange(start=0, stop=300, dtype="int8"), ctensor.InvalidArgumentError),
        (
            lambda: ctensor.ops.arange(start=0, stop=float("inf"), dtype="float64"),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.arange(start=0, stop=1e300, step=1e-300, dtype="float64"),
            ctensor.SizeOverflowError,
        ),
        (lambda: ctensor.ops.random_uniform(np.ones(2), shape=(2,), seed=1), TypeError),
        (
            lambda: ctensor.ops.random_bernoulli(np.ones(3), seed=1, device="cpu"),
            ctensor.InvalidArgumentError,
        ),
        (
            lambda: ctensor.ops.random_uniform(
                shape=(2,), seed=1, out=np.empty(2, np.float32), device="opencl:0"
            ),
            ctensor.InvalidArgumentError,
        ),
    ],
)
def test_errors(call, error) -> None:
    with pytest.raises(error):
        call()


def test_out_is_checked_and_left_alone_on_error() -> None:
    out = np.full((3,), 7.0, np.float32)
    with pytest.raises(ctensor.InvalidArgumentError):
        ctensor.ops.random_uniform(shape=(3,), seed=1, low=2.0, high=1.0, out=out)
    np.testing.assert_array_equal(out, 7.0)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.random_uniform(shape=(4,), seed=1, out=out)
    with pytest.raises(ctensor.UnsupportedDTypeError):
        ctensor.ops.random_uniform(shape=(3,), seed=1, dtype="float64", out=out)


def test_device_cpu_is_numpy() -> None:
    got = ctensor.ops.random_uniform(shape=(5,), seed=3, device="cpu")
    assert isinstance(got, np.ndarray)
    expect_bits(got, ref.uniform(3, 0, (5,), "float32"))
