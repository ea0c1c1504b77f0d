"""The Philox-4x32-10 stream (kernels/common/philox.h) and the random ops built on it.

The header is compiled here on its own, as C (as the CPU backend compiles it) and as C++, and
checked against Random123's published known-answer vectors.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

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
    from ctensor.conformance import philox as ref

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
