"""matmul and conv2d against float64 references (NumPy, torch.nn.functional.conv2d).

Tolerances. A k-term dot product accumulated in a precision of unit roundoff u is off by at most
about k·u·Σ|a_i·b_i| (Higham's γ_k bound), so besides the dtype's own rtol (the one rounding of
the stored result, from tests/arrays.py) every float comparison gets an absolute tolerance of
k·eps_acc·max(|A|·|B|), where eps_acc is the machine epsilon of the accumulator (float32 for
float16/bfloat16/float32, float64 for float64) and |A|·|B| is the product of the magnitudes
(for conv2d: the convolution of |input| with |weight|, plus |bias|). Integers compare exactly
against a reference computed in uint64 and wrapped to the dtype; bool is or-of-ands.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import COMPLEX, INTEGER, assert_close, kernel_dtypes, strided_arrays, tolerance
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor

SETTINGS = settings(max_examples=40, deadline=None)

ACC_EPS = {
    "float16": float(np.finfo(np.float32).eps),
    "bfloat16": float(np.finfo(np.float32).eps),
    "float32": float(np.finfo(np.float32).eps),
    "float64": float(np.finfo(np.float64).eps),
}

MATMUL_NUMPY_DTYPES = ["bool", *INTEGER, "float16", "float32", "float64"]
TORCH_FLOATS = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def k_atol(dtype: str, k: int, magnitude: float) -> float:
    """The dtype's atol plus the accumulation bound k·eps_acc·max(|A|·|B|)."""
    return tolerance(dtype)[1] + k * ACC_EPS[dtype] * magnitude


def elements(dtype: str):
    """Element strategy: full range for integers (so that products wrap), small floats (so that
    float16 sums stay finite)."""
    if dtype in ("float16", "float32", "float64"):
        width = {"float16": 16, "float32": 32, "float64": 64}[dtype]
        return st.floats(-4, 4, width=width, allow_subnormal=False)
    return hnp.from_dtype(np.dtype(dtype))


# ----------------------------------------------------------------------------------------------
# matmul
# ----------------------------------------------------------------------------------------------


def matmul_reference(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return (a.astype(np.int64) @ b.astype(np.int64)) != 0
    if dtype in INTEGER:  # wrap modulo 2**bits: exact in uint64, then truncate
        return (a.astype(np.uint64) @ b.astype(np.uint64)).astype(dtype)
    return a.astype(np.float64) @ b.astype(np.float64)


def check_matmul(a, b, result, dtype: str) -> None:
    """Compares a ctensor matmul result (NumPy or torch) with the float64/exact reference."""
    to_np = lambda t: t.double().numpy() if isinstance(t, torch.Tensor) else t  # noqa: E731
    a64, b64 = to_np(a), to_np(b)
    expected = matmul_reference(a64, b64, dtype)
    if dtype in ACC_EPS:
        k = a64.shape[-1]
        magnitude = float(
            np.max(np.abs(a64.astype(np.float64)) @ np.abs(b64.astype(np.float64)), initial=0.0)
        )
        assert_close(result, expected, dtype, atol=k_atol(dtype, k, magnitude))
    else:
        assert_close(result, expected, dtype)


@st.composite
def matmul_shapes(draw):
    """Operand shapes: 1-D and 2-D operands, and batches that broadcast against each other."""
    m, k, n = (
        draw(st.integers(1, 9)),
        draw(st.sampled_from([0, 1, 2, 3, 5, 8, 33, 40])),
        draw(st.integers(1, 9)),
    )
    left_vector, right_vector = draw(st.booleans()), draw(st.booleans())
    batch1, batch2 = (), ()
    if draw(st.booleans()):
        shapes = draw(
            hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)
        )
        batch1, batch2 = shapes.input_shapes
    shape1 = (k,) if left_vector else (*batch1, m, k)
    shape2 = (k,) if right_vector else (*batch2, k, n)
    return shape1, shape2


@pytest.mark.parametrize("dtype", MATMUL_NUMPY_DTYPES)
@SETTINGS
@given(data=st.data())
def test_matmul_numpy(dtype, data):
    shape1, shape2 = data.draw(matmul_shapes())
    a = data.draw(strided_arrays(dtype, shape=shape1, elements=elements(dtype)))
    b = data.draw(strided_arrays(dtype, shape=shape2, elements=elements(dtype)))
    result = ctensor.ops.matmul(a, b)
    assert isinstance(result, np.ndarray)
    assert result.dtype == np.dtype(dtype)
    check_matmul(a, b, result, dtype)


@pytest.mark.parametrize("dtype", list(TORCH_FLOATS))
@SETTINGS
@given(data=st.data())
def test_matmul_torch(dtype, data):
    shape1, shape2 = data.draw(matmul_shapes())
    a = data.draw(strided_arrays("float32", shape=shape1, elements=elements("float32")))
    b = data.draw(strided_arrays("float32", shape=shape2, elements=elements("float32")))
    ta = torch.from_numpy(a.copy(order="C")).to(TORCH_FLOATS[dtype])
    tb = torch.from_numpy(b.copy(order="C")).to(TORCH_FLOATS[dtype])
    if data.draw(st.booleans()) and tb.ndim >= 2:  # a transposed torch view
        tb = tb.mT.contiguous().mT
    result = ctensor.ops.matmul(ta, tb)
    assert isinstance(result, torch.Tensor) and result.dtype == TORCH_FLOATS[dtype]
    check_matmul(ta, tb, result, dtype)


def test_matmul_declares_every_dtype():
    assert sorted(kernel_dtypes("matmul")) == sorted([*MATMUL_NUMPY_DTYPES, "bfloat16", *COMPLEX])


@pytest.mark.parametrize("dtype", MATMUL_NUMPY_DTYPES)
def test_matmul_tiles_and_layouts(dtype):
    """Shapes across the GEMM's tile (64 × 512 bytes) and k-block (32) edges, batched for the
    parallel path, with transposed, negative-stride and broadcast (zero-stride) operands."""
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype) if dtype in INTEGER else None

    def make(shape):
        if dtype == "bool":
            return rng.random(shape) < 0.1
        if info is not None:
            return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
        return rng.uniform(-2, 2, size=shape).astype(dtype)

    a = make((3, 70, 100))
    b = make((300, 100)).T  # transposed
    check_matmul(a, b, ctensor.ops.matmul(a, b), dtype)
    a2 = make((100, 70))[::-1, ::-1].T  # negative strides both ways
    b2 = np.broadcast_to(make((100, 1)), (100, 150))  # zero column stride
    check_matmul(a2, b2, ctensor.ops.matmul(a2, b2), dtype)
    a3 = make((2, 1, 65, 37))[:, :, ::-1]
    b3 = make((5, 37, 130))[:, :, ::2]
    check_matmul(a3, b3, ctensor.ops.matmul(a3, b3), dtype)


def test_matmul_vectors_and_shapes():
    a = np.arange(5.0)
    assert ctensor.ops.matmul(a, a).shape == ()
    assert float(ctensor.ops.matmul(a, a)) == 30.0
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(ctensor.ops.matmul(x, np.arange(4.0)), x @ np.arange(4.0))
    np.testing.assert_array_equal(ctensor.ops.matmul(np.arange(3.0), x), np.arange(3.0) @ x)
    a4, b4 = np.ones((2, 1, 3, 4)), np.ones((5, 4, 6))
    assert ctensor.ops.matmul(a4, b4).shape == (2, 5, 3, 6)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "bool"])
def test_matmul_k_zero(dtype):
    a, b = np.ones((4, 0), dtype), np.ones((0, 3), dtype)
    result = ctensor.ops.matmul(a, b)
    assert result.shape == (4, 3)
    np.testing.assert_array_equal(result, np.zeros((4, 3), dtype))
    batched = ctensor.ops.matmul(np.ones((2, 4, 0), dtype), np.ones((0, 3), dtype))
    np.testing.assert_array_equal(batched, np.zeros((2, 4, 3), dtype))
    assert ctensor.ops.matmul(np.ones((0, 5), dtype), np.ones((5, 3), dtype)).shape == (0, 3)


def test_matmul_into_strided_out():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((70, 40)), rng.standard_normal((40, 150))
    out = np.zeros((150, 70)).T  # column-major output
    result = ctensor.ops.matmul(a, b, out=out)
    assert result is out
    assert_close(
        out, a @ b, "float64", atol=k_atol("float64", 40, float(np.max(np.abs(a) @ np.abs(b))))
    )


def test_matmul_wraps_integers():
    a = np.full((1, 3), 100, np.int8)
    b = np.full((3, 1), 100, np.int8)
    assert ctensor.ops.matmul(a, b)[0, 0] == np.int8(48)  # 30000 = 0x7530 wraps to 0x30
    u = np.full((1, 2), 2**63, np.uint64)
    assert ctensor.ops.matmul(u, np.ones((2, 1), np.uint64))[0, 0] == 0


def test_matmul_shape_mismatch():
    assert issubclass(ctensor.ShapeMismatchError, ValueError)
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))  # batch 2 vs 3
    with pytest.raises(ValueError):
        ctensor.ops.matmul(np.ones(3), np.ones(4))


# ----------------------------------------------------------------------------------------------
# conv2d
# ----------------------------------------------------------------------------------------------


@st.composite
def conv_cases(draw):
    groups, cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    sizes = []
    for kernel, pad, dil in zip((kh, kw), padding, dilation, strict=True):
        smallest = max(1, dil * (kernel - 1) + 1 - 2 * pad)
        sizes.append(draw(st.integers(smallest, smallest + 7)))
    n = draw(st.integers(0, 2))
    return dict(
        x_shape=(n, groups * cg, *sizes),
        w_shape=(groups * og, cg, kh, kw),
        bias=draw(st.booleans()),
        attrs=dict(stride=stride, padding=padding, dilation=dilation, groups=groups),
    )


def conv_check(x, w, b, attrs, result, dtype: str) -> None:
    """Compares with torch's float64 conv2d; the atol bound uses |x| (*) |w| + |b|."""
    as64 = lambda t: torch.from_numpy(np.array(t, np.float64, order="C"))  # noqa: E731 (a copy)
    x64, w64 = as64(x), as64(w)
    b64 = None if b is None else as64(b)
    expected = F.conv2d(x64, w64, b64, **attrs)
    magnitude = F.conv2d(x64.abs(), w64.abs(), None if b64 is None else b64.abs(), **attrs)
    k = w64.shape[1] * w64.shape[2] * w64.shape[3] + (b is not None)
    atol = k_atol(dtype, k, float(magnitude.max()) if magnitude.numel() else 0.0)
    assert_close(result, expected.numpy(), dtype, atol=atol)


def to_float64_numpy(t):
    return t.double().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float64)


def test_conv2d_declares_float_dtypes():
    assert sorted(kernel_dtypes("conv2d")) == sorted(["float16", "bfloat16", "float32", "float64"])


@settings(max_examples=80, deadline=None)
@given(case=conv_cases(), data=st.data())
def test_conv2d_float64_strided(case, data):
    """float64 NumPy inputs of any layout (sliced, reversed, transposed, broadcast)."""
    floats = st.floats(-2, 2, allow_subnormal=False)
    x = data.draw(strided_arrays("float64", shape=case["x_shape"], elements=floats))
    w = data.draw(strided_arrays("float64", shape=case["w_shape"], elements=floats))
    b = (
        data.draw(strided_arrays("float64", shape=case["w_shape"][:1], elements=floats))
        if case["bias"]
        else None
    )
    result = ctensor.ops.conv2d(x, w, bias=b, **case["attrs"])
    assert isinstance(result, np.ndarray) and result.dtype == np.float64
    conv_check(x, w, b, case["attrs"], result, "float64")


@pytest.mark.parametrize("dtype", list(TORCH_FLOATS))
@settings(max_examples=25, deadline=None)
@given(case=conv_cases(), seed=st.integers(0, 2**32 - 1), channels_last=st.booleans())
def test_conv2d_torch(dtype, case, seed, channels_last):
    """torch float16/bfloat16/float32 in, same dtype out, against float64 torch on the same
    (already rounded) inputs."""
    gen = torch.Generator().manual_seed(seed)
    tdtype = TORCH_FLOATS[dtype]
    x = torch.randn(case["x_shape"], generator=gen).to(tdtype)
    w = torch.randn(case["w_shape"], generator=gen).to(tdtype)
    b = torch.randn(case["w_shape"][:1], generator=gen).to(tdtype) if case["bias"] else None
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    result = ctensor.ops.conv2d(x, w, bias=b, **case["attrs"])
    assert isinstance(result, torch.Tensor) and result.dtype == tdtype
    conv_check(
        to_float64_numpy(x),
        to_float64_numpy(w),
        None if b is None else to_float64_numpy(b),
        case["attrs"],
        result,
        dtype,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_tiles(dtype, groups):
    """Sizes across the GEMM's tiles: 70 output channels per group, 196 positions, K = 36·2."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 8 * groups, 14, 14)).astype(dtype)[:, :, :, ::-1]
    w = rng.standard_normal((70 * groups, 8, 3, 3)).astype(dtype)
    b = rng.standard_normal(70 * groups).astype(dtype)
    attrs = dict(stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=groups)
    conv_check(x, w, b, attrs, ctensor.ops.conv2d(x, w, bias=b, **attrs), dtype)


@st.composite
def same_padding_cases(draw):
    """Stride-1 convolutions whose output rows are as wide as the input's, on planes of 32 to 1024
    positions (whole and partial last tiles of 16 to 48): the direct path's cases (AVX2, AVX-512),
    on more input channels than one of its channel blocks (32) and output channels off its tiles'
    rows (4, 6, 8, 12)."""
    h, w = draw(
        st.sampled_from(
            [(4, 8), (8, 8), (2, 16), (32, 1), (1, 32), (16, 6), (20, 20), (33, 31), (12, 8)]
        )
    )
    kh, kw = draw(st.sampled_from([1, 3, 5])), draw(st.sampled_from([1, 3]))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = (draw(st.integers(0, dilation[0] * (kh - 1))), dilation[1] * (kw - 1) // 2)
    if h + 2 * padding[0] < dilation[0] * (kh - 1) + 1:
        padding = (dilation[0] * (kh - 1), padding[1])
    groups = draw(st.integers(1, 2))
    cg, og = draw(st.sampled_from([1, 3, 40, 70])), draw(st.sampled_from([1, 5, 12, 13, 25]))
    return dict(
        x_shape=(draw(st.integers(1, 2)), groups * cg, h, w),
        w_shape=(groups * og, cg, kh, kw),
        bias=draw(st.booleans()),
        attrs=dict(stride=(1, 1), padding=padding, dilation=dilation, groups=groups),
    )


@settings(max_examples=40, deadline=None)
@given(
    case=same_padding_cases(),
    seed=st.integers(0, 2**32 - 1),
    sliced_input=st.booleans(),
    sliced_output=st.booleans(),
)
def test_conv2d_same_padding_float32(case, seed, sliced_input, sliced_output):
    """float32 same-padding convolutions (the direct path where the CPU has AVX2), also reading
    every other channel of a larger input and writing every other channel of a larger output."""
    rng = np.random.default_rng(seed)
    n, c, h, w = case["x_shape"]
    x = rng.standard_normal((n, 2 * c if sliced_input else c, h, w)).astype(np.float32)
    x = x[:, ::2] if sliced_input else x
    wt = rng.standard_normal(case["w_shape"]).astype(np.float32)
    b = rng.standard_normal(case["w_shape"][0]).astype(np.float32) if case["bias"] else None
    attrs = case["attrs"]
    oh = h + 2 * attrs["padding"][0] - attrs["dilation"][0] * (case["w_shape"][2] - 1)
    o = case["w_shape"][0]
    full = np.full((n, 2 * o if sliced_output else o, oh, w), np.nan, np.float32)
    out = full[:, ::2] if sliced_output else full
    assert ctensor.ops.conv2d(x, wt, bias=b, out=out, **attrs) is out
    conv_check(x, wt, b, attrs, out, "float32")
    if sliced_output:
        assert np.isnan(full[:, 1::2]).all()  # the channels between were not written


def test_conv2d_same_padding_reads_no_neighbour():
    """The direct path's tiles of 32 positions read past the plane (lanes that are never
    stored) and across row ends (lanes masked off): NaNs in the next image, in the channels
    between the input's and next to the rows must not reach the result."""
    rng = np.random.default_rng(3)
    full = rng.standard_normal((3, 80, 20, 20)).astype(np.float32)
    full[:, 1::2] = np.nan  # channels between those read
    full[2] = np.nan  # the image after the last one read
    x = full[:2, ::2]  # 40 channels, 400 positions: 12 full tiles and one of 16
    wt = rng.standard_normal((25, 40, 3, 3)).astype(np.float32)
    b = rng.standard_normal(25).astype(np.float32)
    attrs = dict(stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=1)
    result = ctensor.ops.conv2d(x, wt, bias=b, **attrs)
    assert np.isfinite(result).all()
    conv_check(x, wt, b, attrs, result, "float32")


def test_conv2d_strided_output():
    """An output whose (H, W) do not flatten into one stride (the GEMM runs per output row)."""
    rng = np.random.default_rng(5)
    x, w, b = (
        rng.standard_normal((2, 4, 7, 9)),
        rng.standard_normal((6, 2, 3, 2)),
        rng.standard_normal(6),
    )
    attrs = dict(stride=(1, 2), padding=(1, 0), dilation=(2, 1), groups=2)
    expected_shape = F.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), **attrs
    ).shape
    n, o, oh, ow = expected_shape
    out = np.zeros((n, o, ow, oh)).transpose(0, 1, 3, 2)
    result = ctensor.ops.conv2d(x, w, bias=b, out=out, **attrs)
    assert result is out
    conv_check(x, w, b, attrs, out, "float64")


def test_conv2d_empty_cases():
    w = np.ones((3, 2, 2, 2), np.float32)
    assert ctensor.ops.conv2d(np.ones((0, 2, 5, 5), np.float32), w).shape == (0, 3, 4, 4)
    # No input channel: the output is the bias (or zeros).
    bias = np.array([1.0, -2.0, 3.0], np.float32)
    x0, w0 = np.ones((1, 0, 4, 4), np.float32), np.ones((3, 0, 2, 2), np.float32)
    np.testing.assert_array_equal(
        ctensor.ops.conv2d(x0, w0, bias=bias),
        np.broadcast_to(bias[None, :, None, None], (1, 3, 3, 3)),
    )
    np.testing.assert_array_equal(ctensor.ops.conv2d(x0, w0), np.zeros((1, 3, 3, 3), np.float32))


def test_conv2d_rejects_bad_shapes():
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv2d(np.ones((1, 4, 5, 5)), np.ones((2, 3, 3, 3)))
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.conv2d(np.ones((1, 2, 2, 2)), np.ones((2, 2, 3, 3)))


@pytest.mark.parametrize(
    ("x_shape", "out_channels", "padding", "bias", "sliced"),
    [
        ((1, 128, 5, 5), 128, (1, 1), True, False),  # 3 x 3 tiles, the last ones half outside
        ((2, 128, 7, 9), 136, (0, 0), False, True),
        ((1, 130, 11, 6), 140, (2, 1), True, False),  # channels off the transforms' blocks
        ((3, 128, 14, 14), 160, (1, 1), True, True),
        # fused (chunks of 70 tiles run whole by one thread), panels across tile rows
        ((1, 128, 40, 70), 128, (1, 1), False, False),
        ((2, 64, 9, 11), 64, (1, 1), True, True),  # Winograd with AVX-512, direct without
        ((3, 64, 31, 33), 64, (1, 1), True, True),  # fused with AVX-512, the last chunk short
        # V of 9-10 MB, streamed to memory, the last micro-panel partly padding (1122 tiles), the
        # last channel block short (136 = 8 x 16 + 8) or the input gathered a float at a time
        ((1, 136, 65, 67), 136, (1, 1), True, False),
        ((2, 128, 45, 45), 144, (1, 1), False, True),
    ],
)
def test_conv2d_winograd(x_shape, out_channels, padding, bias, sliced):
    """float32 3x3 stride-1 convolutions with enough channels for the Winograd path (128, or 64
    with AVX-512, and 9 tiles: CT_WINOGRAD_MIN_CHANNELS* and CT_WINOGRAD_MIN_TILES in
    conv2d_winograd.c): odd and even sizes, every padding, and (sliced) every other channel of a
    reversed input written into every other channel of a larger output."""
    rng = np.random.default_rng(sum(x_shape) + out_channels)
    n, c, h, w_ = x_shape
    if sliced:
        x = rng.standard_normal((n, 2 * c, h, w_)).astype(np.float32)[:, ::2, :, ::-1]
    else:
        x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((out_channels, c, 3, 3)).astype(np.float32)
    b = rng.standard_normal(out_channels).astype(np.float32) if bias else None
    attrs = dict(stride=(1, 1), padding=padding, dilation=(1, 1), groups=1)
    shape = (n, out_channels, h + 2 * padding[0] - 2, w_ + 2 * padding[1] - 2)
    if sliced:
        big = np.full((n, 2 * out_channels) + shape[2:], np.float32(7.0))
        out = big[:, 1::2]
        result = ctensor.ops.conv2d(x, w, bias=b, out=out, **attrs)
        assert result is out
        np.testing.assert_array_equal(big[:, ::2], 7.0)
    else:
        result = ctensor.ops.conv2d(x, w, bias=b, **attrs)
    conv_check(x, w, b, attrs, result, "float32")


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_conv2d_winograd_fused_thread_counts(threads):
    """The fused Winograd chunks (64 and 128 channels, conv2d_winograd.c) on one thread, two, and
    more threads than chunks of the smaller call, each thread running its own."""
    rng = np.random.default_rng(threads)
    before = ctensor.get_num_threads()
    attrs = dict(stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=1)
    try:
        ctensor.set_num_threads(threads)
        for x_shape, out_channels in [((4, 128, 32, 16), 96), ((7, 96, 26, 14), 128)]:
            x = rng.standard_normal(x_shape).astype(np.float32)
            w = rng.standard_normal((out_channels, x_shape[1], 3, 3)).astype(np.float32)
            b = rng.standard_normal(out_channels).astype(np.float32)
            conv_check(x, w, b, attrs, ctensor.ops.conv2d(x, w, bias=b, **attrs), "float32")
    finally:
        ctensor.set_num_threads(before)


def test_conv2d_winograd_fused_bound_before_threads_grew():
    """A bound call keeps the workspace asked for when it was bound: fused Winograd, bound on one
    thread and replayed on three, runs on as many threads as that workspace has room for."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 128, 40, 36)).astype(np.float32)
    w = rng.standard_normal((128, 128, 3, 3)).astype(np.float32)
    out = np.empty((2, 128, 40, 36), np.float32)
    attrs = dict(stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=1)
    before = ctensor.get_num_threads()
    try:
        ctensor.set_num_threads(1)
        call = ctensor.bind(ctensor.ops.conv2d, x, w, out=out, **attrs)
        ctensor.set_num_threads(3)
        for _ in range(3):
            out[:] = np.nan
            assert call() is out
            conv_check(x, w, None, attrs, out, "float32")
    finally:
        ctensor.set_num_threads(before)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("where", ["input", "weight"])
@pytest.mark.parametrize("size", [(9, 9), (40, 70)])  # chunks shared; fused (one per thread)
def test_conv2d_winograd_nonfinite_as_direct(bad, where, size):
    """An infinity or a NaN gives the direct sum's answer at every position (Winograd's transforms
    would spread it to the neighbours, as NaN): such calls are computed again directly."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 128) + size).astype(np.float32)
    w = rng.standard_normal((128, 128, 3, 3)).astype(np.float32)
    if where == "input":
        x[0, 3, 4, 5] = bad
    else:
        w[7, 3, 1, 1] = bad
    attrs = dict(stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=1)
    got = ctensor.ops.conv2d(x, w, **attrs)
    expected = F.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), **attrs).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    assert np.isinf(expected).any() or np.isnan(expected).any()
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-4, atol=1e-3)
    infinite = np.isinf(expected)
    np.testing.assert_array_equal(np.sign(got[infinite]), np.sign(expected[infinite]))
