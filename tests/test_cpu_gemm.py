"""The CPU backend's packed GEMM (kernels/cpu/gemm/) behind matmul and conv2d: shapes on
and off every micro-kernel's tile edges, operand layouts the packing must absorb, batches, the
threaded paths, and each instruction set's micro-kernels.

CTENSOR_CPU_ISA=generic|avx2|avx512 (read once, at the first GEMM) caps the micro-kernel set;
a set the CPU lacks falls back to the widest one it has, so every value runs on every machine.
Each set runs the same cases in a fresh interpreter. Tile shapes: generic 4 × 8 (float32) and
4 × 4 (float64), AVX2 6 × 16 and 6 × 8, AVX-512 12 × 32 and 12 × 16; blocks of 256, 512 or 1024
in k (float32 on AVX-512: 1024).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import assert_close
from test_ops_matmul_conv import check_matmul, conv_check, k_atol

import ctensor

# (m, k, n): below, on and past each tile edge, one row or column, an empty depth, a depth of
# several k blocks, more columns than one B panel, and products big enough for the threads.
SHAPES = [
    (1, 7, 9),
    (9, 7, 1),
    (1, 1, 1),
    (4, 0, 8),
    (2, 3, 5),
    (4, 16, 8),
    (6, 16, 16),
    (7, 17, 17),
    (12, 33, 32),
    (13, 31, 33),
    (25, 1100, 47),
    (3, 300, 3100),
    (145, 257, 130),
    (200, 64, 300),
]


def _rng(seed: int = 0):
    return np.random.default_rng(seed)


def matmul_cases(dtype: str) -> None:
    rng = _rng(1)
    for m, k, n in SHAPES:
        a = rng.uniform(-2, 2, (m, k)).astype(dtype)
        b = rng.uniform(-2, 2, (k, n)).astype(dtype)
        check_matmul(a, b, ctensor.ops.matmul(a, b), dtype)
        # Transposed and reversed operands: the packing reads any strides.
        at, bt = np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T
        check_matmul(at, bt, ctensor.ops.matmul(at, bt), dtype)
        check_matmul(a[::-1], b[:, ::-1], ctensor.ops.matmul(a[::-1], b[:, ::-1]), dtype)
        # A column-major output (computed as C^T = B^T A^T) and one strided both ways (staged).
        out_t = np.zeros((n, m), dtype).T
        check_matmul(a, b, ctensor.ops.matmul(a, b, out=out_t), dtype)
        out_s = np.zeros((2 * m, 3 * n), dtype)[::2, ::3]
        check_matmul(a, b, ctensor.ops.matmul(a, b, out=out_s), dtype)
    # Broadcast batches, a zero-stride operand, batches of many small products.
    a = rng.uniform(-2, 2, (3, 1, 20, 30)).astype(dtype)
    b = rng.uniform(-2, 2, (4, 30, 25)).astype(dtype)
    check_matmul(a, b, ctensor.ops.matmul(a, b), dtype)
    col = np.broadcast_to(rng.uniform(-2, 2, (70, 1)).astype(dtype), (70, 40))
    a = rng.uniform(-2, 2, (50, 70)).astype(dtype)
    check_matmul(a, col, ctensor.ops.matmul(a, col), dtype)
    # A shared by every batch entry (packed once for all): few entries, many, and threaded.
    for a_shape, b_shape in [
        ((20, 30), (5, 30, 25)),
        ((70, 300), (6, 300, 90)),
        ((50, 200), (9, 200, 120)),
        ((13, 7), (2, 3, 7, 1100)),
    ]:
        a = rng.uniform(-2, 2, a_shape).astype(dtype)
        b = rng.uniform(-2, 2, b_shape).astype(dtype)
        check_matmul(a, b, ctensor.ops.matmul(a, b), dtype)
    a = rng.uniform(-2, 2, (64, 9, 11)).astype(dtype)
    b = rng.uniform(-2, 2, (11, 13)).astype(dtype)
    check_matmul(a, b, ctensor.ops.matmul(a, b), dtype)


def _guarded(shape, dtype, fill):
    """An array of `shape` whose last byte ends a page followed by an inaccessible page: any read
    or write past its end faults. Returns (array, keep-alive objects)."""
    itemsize = np.dtype(dtype).itemsize
    nbytes = int(np.prod(shape)) * itemsize
    page = mmap.PAGESIZE
    span = -(-nbytes // page) * page
    region = mmap.mmap(-1, span + page)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    assert libc.mprotect(base + span, page, 0) == 0  # PROT_NONE
    array = np.frombuffer(region, dtype, count=nbytes // itemsize, offset=span - nbytes)
    array = array.reshape(shape)
    array[...] = fill
    return array, region


def unpacked_cases(dtype: str) -> None:
    """Products small enough for the unpacked micro-kernels (A and B read where they lie):
    rows and columns on and off every set's tile edges (MR 4, 6, 12; NR 8, 16, 32 and their
    halves), A, B and C each ending at an inaccessible page (masked loads and stores must not
    reach past the last column or row), C a window of a larger array whose border must stay
    untouched, negative row strides, a batch sharing A, and C accumulated over einsum's outer
    index."""
    rng = _rng(6)
    for m, k, n in [
        (1, 1, 2),
        (5, 3, 7),
        (12, 9, 16),
        (13, 17, 33),
        (25, 40, 20),
        (37, 5, 64),
        (11, 64, 48),
        (24, 100, 95),
    ]:
        a_val = rng.uniform(-2, 2, (m, k)).astype(dtype)
        b_val = rng.uniform(-2, 2, (k, n)).astype(dtype)
        a, keep_a = _guarded((m, k), dtype, a_val)
        b, keep_b = _guarded((k, n), dtype, b_val)
        out, keep_c = _guarded((m, n), dtype, np.nan)
        check_matmul(a_val, b_val, ctensor.ops.matmul(a, b, out=out), dtype)
        big = np.full((m + 2, n + 5), 7.0, dtype)
        window = big[1 : m + 1, 2 : n + 2]
        check_matmul(a_val, b_val, ctensor.ops.matmul(a, b, out=window), dtype)
        border = big.copy()
        border[1 : m + 1, 2 : n + 2] = 7.0
        np.testing.assert_array_equal(border, np.full_like(big, 7.0))
        check_matmul(a_val[::-1], b_val[::-1], ctensor.ops.matmul(a[::-1], b[::-1]), dtype)
        del a, b, out
        keep_a.close(), keep_b.close(), keep_c.close()
    a = rng.uniform(-2, 2, (19, 23)).astype(dtype)
    b = rng.uniform(-2, 2, (6, 23, 29)).astype(dtype)
    check_matmul(a, b, ctensor.ops.matmul(a, b), dtype)
    x = rng.uniform(-2, 2, (3, 14, 10)).astype(dtype)
    y = rng.uniform(-2, 2, (3, 10, 21)).astype(dtype)
    got = ctensor.ops.einsum([x, y], subscripts="bij,bjk->ik")
    expected = np.einsum("bij,bjk->ik", x.astype(np.float64), y.astype(np.float64))
    magnitude = float(np.max(np.einsum("bij,bjk->ik", np.abs(x), np.abs(y)).astype(np.float64)))
    # C is stored once per value of b: float16's partial sums are rounded three times.
    rounding = 3 * float(np.finfo(dtype).eps) * magnitude
    assert_close(got, expected, dtype, atol=k_atol(dtype, 30, magnitude) + rounding)


def bfloat16_cases() -> None:
    gen = torch.Generator().manual_seed(2)
    for m, k, n in [(13, 31, 33), (145, 257, 130), (7, 0, 5)]:
        a = torch.randn((m, k), generator=gen).to(torch.bfloat16)
        b = torch.randn((n, k), generator=gen).to(torch.bfloat16).T  # transposed view
        check_matmul(a, b, ctensor.ops.matmul(a, b), "bfloat16")


def conv2d_cases(dtype: str) -> None:
    rng = _rng(3)
    cases = [
        ((2, 16, 12, 13), (24, 16, 3, 3), dict(padding=(1, 1))),
        ((1, 6, 9, 20), (10, 3, 3, 5), dict(stride=(2, 3), padding=(2, 1), groups=2)),
        ((3, 4, 5, 5), (7, 4, 1, 1), dict()),
        ((1, 3, 30, 30), (5, 3, 2, 2), dict(dilation=(2, 3), padding=(0, 2))),
        ((2, 8, 1, 1), (9, 8, 3, 3), dict(padding=(1, 1))),
        # Few positions per image (7 x 7, 5 x 5): the images folded into the GEMM's columns,
        # in chunks that cross images and run past the last one; with groups and a stride.
        ((8, 16, 7, 7), (24, 16, 3, 3), dict(padding=(1, 1))),
        ((6, 8, 5, 5), (10, 4, 3, 3), dict(padding=(1, 1), groups=2)),
        ((5, 3, 9, 9), (4, 3, 3, 3), dict(stride=(2, 2), padding=(1, 1))),
    ]
    for x_shape, w_shape, attrs in cases:
        attrs = {"stride": (1, 1), "padding": (0, 0), "dilation": (1, 1), "groups": 1, **attrs}
        x = rng.uniform(-2, 2, x_shape).astype(dtype)[:, :, :, ::-1]
        w = rng.uniform(-2, 2, w_shape).astype(dtype)
        b = rng.uniform(-2, 2, w_shape[:1]).astype(dtype)
        conv_check(x, w, None, attrs, ctensor.ops.conv2d(x, w, **attrs), dtype)
        conv_check(x, w, b, attrs, ctensor.ops.conv2d(x, w, bias=b, **attrs), dtype)
        # An output whose (H, W) do not flatten (the folded product still writes it).
        n, o = x_shape[0], w_shape[0]
        expected = F.conv2d(torch.from_numpy(x.copy()), torch.from_numpy(w), **attrs).shape
        out = np.zeros((n, o, expected[3], expected[2]), dtype).transpose(0, 1, 3, 2)
        conv_check(x, w, b, attrs, ctensor.ops.conv2d(x, w, bias=b, out=out, **attrs), dtype)


def winograd_cases() -> None:
    """float32 3x3 convolutions on the Winograd path, whose transformed input and weights are the
    GEMM's A and B as it reads them (prepacked, never packed): input channels cut into depth
    blocks by every set's blocking (1025 = 513 + 512 with AVX-512's 1024, 342 + 342 + 341 with
    AVX2's 512, five of 205 with the generic set's 256) under tiles filling two micro-panels of
    rows or more (24), tiles short of a whole micro-panel (2 x 12 = 24 of 36 rows on AVX-512), and
    output channels short of a whole micro-panel (130 of 136, 144 or 160 columns)."""
    rng = _rng(4)
    attrs = {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1), "groups": 1}
    for x_shape, out_channels in [((2, 1025, 6, 7), 136), ((2, 128, 6, 7), 130)]:
        x = rng.uniform(-1, 1, x_shape).astype(np.float32)
        w = rng.uniform(-1, 1, (out_channels, x_shape[1], 3, 3)).astype(np.float32)
        b = rng.uniform(-1, 1, out_channels).astype(np.float32)
        conv_check(x, w, b, attrs, ctensor.ops.conv2d(x, w, bias=b, **attrs), "float32")


def all_cases() -> None:
    for dtype in ["float16", "float32", "float64"]:
        matmul_cases(dtype)
        unpacked_cases(dtype)
        conv2d_cases(dtype)
    bfloat16_cases()
    winograd_cases()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_matmul_tile_edges_and_layouts(dtype):
    matmul_cases(dtype)


def _run_in_fresh_interpreter(code: str, **env_vars: str) -> None:
    """Runs `code` in a new interpreter in this directory: a fault (a read or write past a guard
    page) fails the test with the interpreter's output instead of ending the test run."""
    env = dict(os.environ, **env_vars)
    here = Path(__file__).parent
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=here, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_small_products_read_in_place(dtype):
    _run_in_fresh_interpreter(f"import test_cpu_gemm; test_cpu_gemm.unpacked_cases({dtype!r})")


def test_matmul_bfloat16_tiles():
    bfloat16_cases()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_conv2d_implicit_gemm(dtype):
    conv2d_cases(dtype)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_matmul_thread_counts(threads):
    """One thread, and more threads than cores (the shared-panel and per-item paths)."""
    before = ctensor.get_num_threads()
    try:
        ctensor.set_num_threads(threads)
        matmul_cases("float32")
        conv2d_cases("float32")
    finally:
        ctensor.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_winograd_prepacked_weights(threads):
    """The Winograd path's 16 products on one thread, shared out whole (2 threads), and with
    each product's tiles shared out (5 threads: fewer than 4 products a thread)."""
    before = ctensor.get_num_threads()
    try:
        ctensor.set_num_threads(threads)
        winograd_cases()
    finally:
        ctensor.set_num_threads(before)


@pytest.mark.parametrize("isa", ["generic", "avx2", "avx512", "unknown-name"])
def test_each_micro_kernel_set(isa):
    """Every case again in a fresh interpreter whose GEMM is capped at `isa`."""
    code = "import test_cpu_gemm; test_cpu_gemm.all_cases()"
    _run_in_fresh_interpreter(code, CTENSOR_CPU_ISA=isa)
