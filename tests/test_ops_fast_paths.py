"""The CPU backend's fast paths: per-ISA copies of hot loops (cpu_isa.h, forced through the
environment variable CTENSOR_CPU_ISA in a child process and compared bitwise with this
process's results; float32 exp, whose AVX2 and AVX-512 copies use fused multiply-adds, is
compared within an ulp in test_ops_vector_math.py), the keys-only radix sort of long lanes, the
contiguous layer_norm/rms_norm rows and the tiled transposing copy. Sizes straddle the vector
widths, tile and lane thresholds so that remainders are exercised."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import assert_close, results_under_isa

import ctensor
from ctensor import ops

# One script computes every ISA-dispatched path on fixed data and saves the results; the parent
# runs it once per ISA and compares the files bitwise.
_ISA_SCRIPT = r"""
import sys
import numpy as np
import torch
from ctensor import ops

rng = np.random.default_rng(7)
results = {}
for n in (1, 7, 8, 15, 16, 17, 31, 33, 63, 65, 1000, 4099):
    a = (rng.standard_normal(n) * 3).astype(np.float32)
    b = (rng.standard_normal(n) * 3).astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 6e-8, 70000.0], np.float32)
    a[: min(n, 7)] = specials[: min(n, 7)]
    h, hb = a.astype(np.float16), b.astype(np.float16)
    bf, bfb = torch.from_numpy(a).bfloat16(), torch.from_numpy(b).bfloat16()
    results[f"add_f16_{n}"] = ops.add(h, hb).view(np.uint16)
    results[f"mul_f16_{n}"] = ops.multiply(h, hb).view(np.uint16)
    results[f"add_bf16_{n}"] = ops.add(bf, bfb).view(torch.int16).numpy()
    results[f"add_f64_{n}"] = ops.add(a.astype(np.float64), 1.5).view(np.uint64)
    results[f"f32_to_f16_{n}"] = ops.astype(a * 1000, dtype="float16").view(np.uint16)
    results[f"f16_to_f32_{n}"] = ops.astype(h, dtype="float32").view(np.uint32)
    results[f"f32_to_bf16_{n}"] = ops.astype(torch.from_numpy(a), dtype="bfloat16").view(
        torch.int16).numpy()
    results[f"i32_to_f32_{n}"] = ops.astype((a * 1e6).astype(np.int32), dtype="float32").view(
        np.uint32)
    x = rng.standard_normal((3, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    results[f"layer_norm_{n}"] = ops.layer_norm(x, w, w, normalized_shape=[n]).view(np.uint32)
    results[f"rms_norm_{n}"] = ops.rms_norm(x, w, normalized_shape=[n]).view(np.uint32)
    results[f"layer_norm_f16_{n}"] = ops.layer_norm(
        x.astype(np.float16), normalized_shape=[n]).view(np.uint16)
    t = rng.standard_normal((37, n)).astype(np.float32)
    results[f"transpose_{n}"] = ops.permute_dims(t, axes=[1, 0]).view(np.uint32)
    results[f"sum_f32_{n}"] = np.asarray(ops.sum(t)).reshape(1).view(np.uint32)
    results[f"sum_axis0_f32_{n}"] = ops.sum(t, axis=0).view(np.uint32)
    results[f"sum_axis1_f32_{n}"] = ops.sum(t, axis=1).view(np.uint32)
    results[f"mean_axis0_f32_{n}"] = ops.mean(t[::2], axis=0).view(np.uint32)
    # 100 rows of 1000 or 1024 columns: one task cut into pieces (3 of 34 rows), each reading
    # its rows one after another (back to back for 1024: 4 KB apart)
    for cols in (1000, 1024):
        if n == 7:
            tall = rng.standard_normal((100, cols)).astype(np.float32)
            results[f"sum_axis0_split_f32_{cols}"] = ops.sum(tall, axis=0).view(np.uint32)
    # max/min runs: signed zeros (which zero wins depends on the lane order) and two nans with
    # different payloads (the first one wins), one in the vector part and one in the tail
    z = np.where(rng.random((5, n)) < 0.5, np.float32(0.0), np.float32(-0.0))
    z[1] += t[1]
    z[2, n // 3] = np.uint32(0x7FC00001).view(np.float32)
    z[2, -1] = np.uint32(0x7FC00002).view(np.float32)
    # the extremum is a zero in two lanes (9 and 17 of each block of 32) with opposite signs:
    # which of them wins tells the order in which the lanes are merged
    z[3] = -np.abs(t[2]) - 1
    z[3, 9::32], z[3, 17::32] = -0.0, 0.0
    z[4] = -z[3]
    for name in ("max", "min"):
        results[f"{name}_f32_{n}"] = getattr(ops, name)(z, axis=1).view(np.uint32)
    for name in ("argmax", "argmin"):
        results[f"{name}_f32_{n}"] = getattr(ops, name)(z, axis=1)
        # the one-pass searches of the other types, ties from truncation included
        for dt, d in (("f64", z.astype(np.float64)), ("i32", (t[:5] * 3).astype(np.int32)),
                      ("i64", (t[:5] * 3).astype(np.int64))):
            results[f"{name}_{dt}_{n}"] = getattr(ops, name)(d, axis=1)
    if n >= 3:
        results[f"max_pool2d_{n}"] = ops.max_pool2d(
            x.reshape(1, 3, 1, n), kernel_size=[1, 3], stride=[1, 2]).view(np.uint32)
long = rng.standard_normal(300_001).astype(np.float32)
results["sum_f32_long"] = np.asarray(ops.sum(long)).reshape(1).view(np.uint32)
wide = rng.standard_normal((300, 2000)).astype(np.float32)
results["sum_axis0_f32_wide"] = ops.sum(wide, axis=0).view(np.uint32)
np.savez(sys.argv[1], **results)
"""


def _isa_results(tmp_path, isa: str | None) -> dict[str, np.ndarray]:
    return results_under_isa(_ISA_SCRIPT, tmp_path / f"{isa or 'default'}.npz", isa)


def test_every_isa_copy_gives_the_same_bits(tmp_path):
    best = _isa_results(tmp_path, None)
    for isa in ("generic", "avx2", "avx512", "unknown-name"):
        forced = _isa_results(tmp_path, isa)
        assert forced.keys() == best.keys()
        for key, value in best.items():
            np.testing.assert_array_equal(forced[key], value, err_msg=f"{isa}: {key}")


def test_float16_paths_match_numpy():
    rng = np.random.default_rng(1)
    for n in (1, 9, 17, 1000, 4099):
        a = (rng.standard_normal(n) * 100).astype(np.float16)
        b = (rng.standard_normal(n) * 100).astype(np.float16)
        a[0], b[-1] = np.float16(np.inf), np.float16(6e-8)
        np.testing.assert_array_equal(ops.add(a, b), a + b)
        np.testing.assert_array_equal(ops.astype(a, dtype="float32"), a.astype(np.float32))
        wide = (rng.standard_normal(n) * 1e4).astype(np.float32)
        np.testing.assert_array_equal(ops.astype(wide, dtype="float16"), wide.astype(np.float16))


# ----- sort of long lanes (keys-only radix sort) -----

SORT_DTYPES = ["float32", "float64", "int32", "uint32", "int64", "uint64"]


def _sort_input(dtype: str, n: int, rng) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        x = (rng.standard_normal(n) * 10).astype(dtype)
        specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0], dtype=dtype)
        x[rng.integers(0, n, n // 3)] = rng.choice(specials, n // 3)
        # NaNs with distinct payloads and signs: their bits must come out in input order.
        bits = x.view(np.uint32 if dtype == "float32" else np.uint64)
        nan_at = rng.integers(0, n, 5)
        bits[nan_at] |= (
            np.array(0x7F800001, dtype=bits.dtype)
            if dtype == "float32"
            else (np.array(0x7FF0000000000001, dtype=bits.dtype))
        )
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x[rng.integers(0, n, n // 4)] = rng.choice(x[:8], n // 4)  # repeats
    return x


def _stable_descending(x: np.ndarray) -> np.ndarray:
    rank = np.unique(x, return_inverse=True, equal_nan=True)[1]
    return np.argsort(-rank, kind="stable")


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("n", [2047, 2048, 2049, 5000, 70001, 300001])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_long_lanes_keep_the_stable_order_bitwise(dtype, n, descending):
    rng = np.random.default_rng(n)
    x = _sort_input(dtype, n, rng)
    order = _stable_descending(x) if descending else np.argsort(x, kind="stable")
    got = ops.sort(x, descending=descending)
    uint = np.dtype(f"u{x.itemsize}")
    np.testing.assert_array_equal(got.view(uint), x[order].view(uint))


def test_sort_long_lanes_along_other_axes_and_strides():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4100)).astype(np.float32)
    x[:, ::7] = -0.0
    for view, axis in ((x, 1), (x.T, 0), (x[:, ::-2], 1), (x[::2, 1::3], -1)):
        got = ops.sort(view, axis=axis)
        expected = np.take_along_axis(view, np.argsort(view, axis=axis, kind="stable"), axis)
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


# ----- contiguous layer_norm / rms_norm rows -----


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 100, 1023])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_layer_norm_contiguous_rows(dtype, n, affine):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((5, n)) * 4 + 3).astype(dtype)
    w = rng.standard_normal(n).astype(dtype) if affine in ("weight", "both") else None
    b = rng.standard_normal(n).astype(dtype) if affine in ("bias", "both") else None
    t = lambda a: None if a is None else torch.from_numpy(a.astype(np.float64))  # noqa: E731
    got = ops.layer_norm(x, w, b, normalized_shape=[n], eps=1e-5)
    expected = F.layer_norm(t(x), [n], t(w), t(b), eps=1e-5).numpy()
    assert_close(got, expected, dtype, rtol_scale=4, atol=4 * assert_scale(dtype))
    got = ops.rms_norm(x, w, normalized_shape=[n], eps=1e-5)
    expected = F.rms_norm(t(x), [n], t(w), eps=1e-5).numpy()
    assert_close(got, expected, dtype, rtol_scale=4, atol=4 * assert_scale(dtype))


def assert_scale(dtype: str) -> float:
    return {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}[dtype]


def test_layer_norm_over_two_contiguous_dims():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6, 37)).astype(np.float32)
    w = rng.standard_normal((6, 37)).astype(np.float32)
    got = ops.layer_norm(x, w, None, normalized_shape=[6, 37])
    expected = F.layer_norm(
        torch.from_numpy(x).double(), [6, 37], torch.from_numpy(w).double()
    ).numpy()
    assert_close(got, expected, "float32", rtol_scale=4, atol=4e-6)


# ----- tiled transposing copy -----


TILE_DTYPES = ["uint8", "float16", "float32", "float64", "complex64", "complex128"]


def _tile_input(shape, dtype):
    x = (np.arange(np.prod(shape)) % 251).reshape(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * (np.arange(np.prod(shape)) % 13).reshape(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", TILE_DTYPES)
@pytest.mark.parametrize(
    "shape", [(32, 32), (33, 65), (100, 31), (31, 100), (64, 4097), (130, 200), (257, 129)]
)
def test_transpose_copy_tiles(dtype, shape):
    x = _tile_input(shape, dtype)
    np.testing.assert_array_equal(ops.permute_dims(x, axes=[1, 0]), x.T)
    np.testing.assert_array_equal(ops.permute_dims(x[::-1], axes=[1, 0]), x[::-1].T)


@pytest.mark.parametrize("dtype", TILE_DTYPES)
def test_shape_copies_take_the_tiled_transpose(dtype):
    """matrix_transpose, and the other copy ops given a transposed input, go through the same
    tiles (every element size, complex128's 16 bytes included)."""
    x = _tile_input((3, 70, 90), dtype)
    np.testing.assert_array_equal(ops.matrix_transpose(x), np.matrix_transpose(x))
    t = x.transpose(0, 2, 1)
    np.testing.assert_array_equal(ops.flip(t, axis=[1]), np.flip(t, axis=1))
    np.testing.assert_array_equal(
        ops.broadcast_to(t[0], shape=(2, 90, 70)), np.broadcast_to(t[0], (2, 90, 70))
    )
    out = np.empty((3, 90, 70), dtype)
    assert ops.matrix_transpose(x, out=out) is out
    np.testing.assert_array_equal(out, np.matrix_transpose(x))


@pytest.mark.parametrize("axes", [(0, 2, 1), (2, 1, 0), (1, 2, 0), (2, 0, 1)])
def test_transpose_copy_with_outer_dims(axes):
    x = np.arange(3 * 40 * 70, dtype=np.int32).reshape(3, 40, 70)
    np.testing.assert_array_equal(ops.permute_dims(x, axes=list(axes)), np.transpose(x, axes))
    y = x[:, ::2, 1:]
    np.testing.assert_array_equal(ops.permute_dims(y, axes=list(axes)), np.transpose(y, axes))


def test_threads_do_not_change_fast_path_results():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((300, 2000)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        ctensor.set_num_threads(threads)
        try:
            results.append(
                (
                    ops.layer_norm(x, normalized_shape=[2000]),
                    ops.permute_dims(x, axes=[1, 0]),
                    ops.sort(x[0].copy()),
                )
            )
        finally:
            ctensor.set_num_threads(0)
    for later in results[1:]:
        for a, b in zip(results[0], later, strict=True):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


# ----- max_pool2d rows (vectorised interior columns) -----


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize(
    "kernel,stride,padding,dilation",
    [(2, 2, 0, 1), (3, 1, 1, 1), (3, 2, 1, 2), ((2, 3), (1, 3), (1, 1), (1, 1))],
)
def test_max_pool2d_wide_rows_match_torch(dtype, kernel, stride, padding, dilation):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 9, 600)).astype(dtype)
    x[0, 0, 1, 5] = np.nan
    x[1, 2, 4, 300:303] = np.nan
    x[0, 1] = np.where(x[0, 1] > 0, 0.0, -0.0)
    got = ops.max_pool2d(x, kernel_size=kernel, stride=stride, padding=padding, dilation=dilation)
    expected = F.max_pool2d(torch.from_numpy(x), kernel, stride, padding, dilation).numpy()
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(64, 16, 8, 8), (3, 5, 7, 9), (2, 4, 2, 30)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
def test_max_pool2d_narrow_rows_match_torch(dtype, shape, layout):
    # 2 x 2 windows at stride 2 on rows of fewer than 16 outputs (small CNNs' shapes), nan in a
    # few windows and signed zeros in a whole plane
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 0, 1, 1] = np.nan
    x[-1, -1, 0, 0:2] = np.nan
    x[0, 1] = np.where(x[0, 1] > 0, 0.0, -0.0)
    if layout == "channels_last":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    elif layout == "strided":
        x = np.repeat(x, 2, axis=3)[..., ::2]
    got = ops.max_pool2d(x, kernel_size=[2, 2])
    expected = F.max_pool2d(torch.from_numpy(np.ascontiguousarray(x)), 2).numpy()
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("width,padding,dilation", [(4, 1, 1), (3, 2, 1), (7, 1, 2), (1, 1, 1)])
def test_conv2d_narrow_images_match_torch(dtype, width, padding, dilation):
    # rows of the packed input in pieces of a few columns, the padding inside them
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 3, 4, width)).astype(dtype)
    w = rng.standard_normal((6, 3, 3, 3)).astype(dtype)
    got = ops.conv2d(x, w, padding=[padding, padding], dilation=[dilation, dilation])
    expected = F.conv2d(
        torch.from_numpy(x).double(),
        torch.from_numpy(w).double(),
        padding=padding,
        dilation=dilation,
    ).numpy()
    tolerance = {"float16": 2e-2, "float32": 1e-4, "float64": 1e-10}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tolerance, atol=tolerance)


# ----- float32 sums: at least as accurate as NumPy's pairwise sum -----


def _adversarial_float32(n: int, rng) -> list[np.ndarray]:
    big = np.full(n, 1.0, np.float32)
    big[0] = 1e8  # every later 1.0 is below the running sum's ulp in float32
    ramp = np.arange(n, dtype=np.float32) * np.float32(1.0001)
    cancel = np.empty(n, np.float32)
    cancel[0::2], cancel[1::2] = 1e7, -1e7 + np.float32(0.5)
    wide = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    return [big, ramp, cancel, wide, rng.random(n, dtype=np.float32)]


@pytest.mark.parametrize("n", [1000, 65537, 1 << 21])
def test_float32_sum_error_no_worse_than_numpy(n):
    rng = np.random.default_rng(n)
    for x in _adversarial_float32(n, rng):
        exact = np.sum(x.astype(np.float64))  # float64 pairwise: exact enough for these
        ours = abs(float(ops.sum(x)) - exact)
        numpy = abs(float(np.sum(x)) - exact)
        assert ours <= numpy, (ours, numpy)
        # per-axis sums over rows and columns too
        m = x[: (n // 8) * 8].reshape(-1, 8)
        for axis in (0, 1):
            exact_axis = np.sum(m.astype(np.float64), axis=axis)
            err = np.abs(ops.sum(m, axis=axis).astype(np.float64) - exact_axis)
            err_np = np.abs(np.sum(m, axis=axis).astype(np.float64) - exact_axis)
            assert (err <= err_np + np.spacing(np.abs(exact_axis).astype(np.float32))).all()


def _nan_positions(n: int) -> list[int | None]:
    """No nan, then a nan in each part of the float32 max/min loop: the first block (its first
    and last vector), the main loop (first lane of a vector, last lane of the last full block)
    and the tail after the last block of 32."""
    blocks_end = n - n % 32 if n >= 64 else 0
    picks = [None, 0, 31, 40, blocks_end - 1, n - 1, n // 2]
    return [p for p in picks if p is None or 0 <= p < n]


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("n", [63, 64, 65, 95, 96, 127, 1000, 4099, 300_001])
def test_float32_max_min_runs_match_numpy(name, n):
    """Contiguous float32 max/min runs (reduce_f32.c's vector loop, with its nan check per pair
    of vectors): every value and every nan position, whole arrays and per row."""
    rng = np.random.default_rng(n)
    numpy_op, op = getattr(np, name), getattr(ops, name)
    for position in _nan_positions(n):
        x = (rng.standard_normal(n) * 100).astype(np.float32)
        x[rng.integers(0, n)] = np.inf if name == "max" else -np.inf
        if position is not None:
            x[position] = np.nan
        got, want = op(x), numpy_op(x)
        assert (np.isnan(got) and np.isnan(want)) or got == want, (position, got, want)
        rows = np.stack([x, x[::-1].copy(), np.roll(x, 33)])
        np.testing.assert_array_equal(
            op(rows, axis=1), numpy_op(rows, axis=1), err_msg=str(position)
        )


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "complex128"])
@pytest.mark.parametrize("n", [255, 256, 257, 1000, 4099])
def test_elementwise_stores_peeled_to_a_line_boundary(dtype, n):
    """Contiguous element-wise loops of 256+ elements write one by one up to the output's next
    64-byte line, then by vectors: every start within a line gives NumPy's values, and nothing
    outside the output is written."""
    itemsize = np.dtype(dtype).itemsize
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n + 64) * 100).astype(dtype)
    b = (rng.standard_normal(n + 64) * 100).astype(dtype)
    for start in range(64 // itemsize):
        guard = np.full(n + 2 * 64, 7, dtype)
        out = guard[start + 1 : start + 1 + n]
        x, y = a[start : start + n], b[start : start + n]
        ops.add(x, y, out=out)
        np.testing.assert_array_equal(out, x + y)
        ops.multiply(x, y[3:4], out=out)  # a broadcast scalar operand
        np.testing.assert_array_equal(out, x * y[3])
        ops.negative(x, out=out)
        np.testing.assert_array_equal(out, -x)
        untouched = np.concatenate([guard[: start + 1], guard[start + 1 + n :]])
        assert (untouched == 7).all()


def test_broadcast_rows_peel_each_row():
    """A (rows, n) + (n,) add calls the loop once per row, each row starting at another offset
    in its line."""
    rng = np.random.default_rng(5)
    m = rng.standard_normal((37, 301)).astype(np.float32)
    row = rng.standard_normal(301).astype(np.float32)
    out = np.empty_like(m)
    ops.add(m, row, out=out)
    np.testing.assert_array_equal(out, m + row)


# ----- huge outputs: non-temporal stores -----

# A thread writes its share of an element-wise output with non-temporal stores from 8 MiB on,
# in runs of 64 KiB or more (stream_store.h); one thread makes the whole output its share.
_STREAM_BYTES = 8 << 20


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "complex128"])
def test_huge_outputs_streamed_give_numpy_values(dtype, threads):
    """Outputs past the streaming size, starting 16 bytes into a line (stored one by one up to the
    next line, streamed from there) and ending inside a block: NumPy's values, for two inputs, a
    scalar operand and one input, and nothing outside the output."""
    itemsize = np.dtype(dtype).itemsize
    n = threads * _STREAM_BYTES // itemsize + 1000 + 3
    rng = np.random.default_rng(itemsize)
    a = (rng.standard_normal(n + 1) * 50).astype(dtype)
    b = (rng.standard_normal(n + 1) * 50).astype(dtype)
    guard = np.full(n + 2 * 64, 7, dtype)
    base = guard.ctypes.data
    # the first element on a 16-byte boundary that is not a line boundary
    first = next(
        i
        for i in range(1, 128)
        if (base + i * itemsize) % 16 == 0 and (base + i * itemsize) % 64 != 0
    )
    out = guard[first : first + n]
    x, y = a[1:], b[:n]
    ctensor.set_num_threads(threads)
    try:
        assert ops.add(x, y, out=out) is out
        np.testing.assert_array_equal(out, x + y)
        ops.multiply(x, y[5:6], out=out)  # a broadcast scalar operand
        np.testing.assert_array_equal(out, x * y[5])
        ops.negative(x, out=out)
        np.testing.assert_array_equal(out, -x)
    finally:
        ctensor.set_num_threads(0)
    untouched = np.concatenate([guard[:first], guard[first + n :]])
    assert (untouched == 7).all()


@pytest.mark.parametrize("cols", [(4 << 10) // 4 - 1, (4 << 10) // 4 + 27, (64 << 10) // 4 + 27])
def test_huge_broadcast_rows_streamed_give_numpy_values(cols):
    """A (rows, n) + (n,) add past the streaming size calls the loop once per row: rows just
    short of the streamed length (4 KiB), and rows long enough, each starting at another offset
    in its line (so that two rows share a line) and ending inside a block."""
    rng = np.random.default_rng(cols)
    m = rng.standard_normal((2 * _STREAM_BYTES // 4 // cols + 5, cols)).astype(np.float32)
    row = rng.standard_normal(cols).astype(np.float32)
    out = np.empty_like(m)
    assert ops.add(m, row, out=out) is out
    np.testing.assert_array_equal(out, m + row)


# ----- strided inputs gathered into contiguous buffers -----


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "complex128"])
@pytest.mark.parametrize("step", [2, 3, -2])
@pytest.mark.parametrize("n", [63, 64, 1023, 1024, 1025, 5000])
def test_strided_input_gathered_gives_numpy_values(dtype, step, n):
    """A contiguous output with one strided input (elements at most a line apart) and otherwise
    broadcast inputs: the engine gathers the input 4 KB at a time (strided_iter.c) so the loop
    runs its contiguous path; runs under 64 elements, wide steps and two strided inputs are
    left to the loop. Values as NumPy's, nothing outside the output written."""
    rng = np.random.default_rng(n)
    base = (rng.standard_normal(abs(step) * n + 5) * 4).astype(dtype)
    x = base[::step][:n]
    guard = np.full(n + 2, 7, dtype)
    out = guard[1:-1]
    scalar = base[4:5]
    np.testing.assert_array_equal(ops.negative(x, out=out), -x)
    np.testing.assert_array_equal(ops.multiply(x, scalar, out=out), x * scalar)
    np.testing.assert_array_equal(ops.subtract(scalar, x, out=out), scalar - x)
    if dtype in ("float32", "float64", "complex128"):
        assert_close(
            ops.exp(x, out=out),
            np.exp(x.astype(np.complex128 if dtype == "complex128" else np.float64)),
            dtype,
        )
    y = base[1::step][:n] if step > 0 else base[-2::step][:n]  # two strided inputs
    np.testing.assert_array_equal(ops.add(x, y, out=out), x + y)
    assert guard[0] == 7 and guard[-1] == 7


def test_strided_column_blocks_and_wide_steps():
    rng = np.random.default_rng(9)
    m = rng.standard_normal((300, 2 * 777)).astype(np.float32)
    np.testing.assert_array_equal(ops.multiply(m[:, ::2], 3.0), m[:, ::2] * np.float32(3.0))
    np.testing.assert_array_equal(ops.sqrt(np.abs(m[:, 1::2])), np.sqrt(np.abs(m[:, 1::2])))
    wide = rng.standard_normal(40 * 1000).astype(np.float32)[::40]  # 160 bytes apart: not gathered
    assert_close(ops.exp(wide), np.exp(wide.astype(np.float64)), "float32")
    short = m[0, :120:2]  # 60 elements: under the gathered run length
    np.testing.assert_array_equal(ops.negative(short), -short)


def _lanes_then_in_order(row: np.ndarray, pick_max: bool) -> float:
    """CT_NANPICK_LOOP's order (no nans): 32 lanes (lane k takes elements k, k + 32, ...; a later
    equal element replaces the lane's), merged into the identity in lane order (an earlier equal
    one stays), then the tail in order."""
    better = (lambda v, m: v > m) if pick_max else (lambda v, m: v < m)
    m = -np.inf if pick_max else np.inf
    n, b = len(row), 0
    if n >= 64:
        lanes = list(row[:32])
        for b in range(32, n - 31, 32):
            block = row[b : b + 32]
            lanes = [lane if better(lane, v) else v for lane, v in zip(lanes, block, strict=True)]
        b = 32 * (n // 32)
        for lane in lanes:
            m = lane if better(lane, m) else m
    for v in row[b:]:
        m = v if better(v, m) else m
    return m


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n", [64, 100, 1000])
def test_max_min_merge_lanes_in_order_when_the_extremum_is_zero(dtype, n):
    """The lanes are merged pairwise (vector max/min) unless the result is a zero, where the
    order decides between -0 and +0: each row's winning zero has the sign the in-order merge
    gives."""
    rng = np.random.default_rng(n)
    rows = []
    for _ in range(30):
        row = -np.abs(rng.standard_normal(n)) - 1
        zeros = rng.choice(n, size=4, replace=False)
        row[zeros] = rng.choice([0.0, -0.0], size=4)
        rows.append(row)
    x = np.array(rows, dtype=dtype)
    got_max = ops.max(x, axis=1)
    got_min = ops.min(-x, axis=1)
    for i, row in enumerate(x):
        want = _lanes_then_in_order(row, True)
        assert np.signbit(got_max[i]) == np.signbit(want) and got_max[i] == want, i
        want = _lanes_then_in_order(-row, False)
        assert np.signbit(got_min[i]) == np.signbit(want) and got_min[i] == want, i
