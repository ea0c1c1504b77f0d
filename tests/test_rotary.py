"""rotary_embedding against a float64 NumPy reference and Hugging Face's / GPT-J's torch code
(apply_rotary_pos_emb with rotate_half; rotate_every_two for interleaved pairs), over drawn
shapes, layouts, partial rotary (rot_dim < dim), position_ids (absent, int32, int64, broadcast)
and every float dtype; its errors; its gradient (the rotation by -theta) against torch.autograd
and finite differences.

Tolerance: one pair's result a*cos - b*sin is computed in the compute type (float32 for
float16/bfloat16) and rounded once to the dtype: the dtype's rtol plus an absolute slack of
4 * eps_c * max|x| for the cancellation of the two products (|cos|, |sin| <= 1) and the spacing
of the dtype's subnormals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import FLOATS, any_layout, assert_close, kernel_dtypes, kernel_signatures, to_float64
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor

SETTINGS = settings(max_examples=40, deadline=None)
EPS_C = {
    "float16": float(np.finfo(np.float32).eps),
    "bfloat16": float(np.finfo(np.float32).eps),
    "float32": float(np.finfo(np.float32).eps),
    "float64": float(np.finfo(np.float64).eps),
}


# The spacing of each dtype's subnormals: a result that underflows into them rounds to a
# multiple of it.
SUBNORMAL = {
    "float16": 2.0**-24,
    "bfloat16": 2.0**-133,
    "float32": 2.0**-149,
    "float64": 2.0**-1074,
}


def slack(dtype: str, x) -> float:
    """The absolute tolerance: the cancellation of a*cos - b*sin in the compute type, and a
    result's rounding among the dtype's subnormals."""
    magnitude = float(np.max(np.abs(to_float64(x)), initial=0))
    return 4 * EPS_C[dtype] * magnitude + SUBNORMAL[dtype]


def tables(max_pos: int, half: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """The cos and sin tables of the transformer models: angle p * base^(-i / half)."""
    inv_freq = base ** (-np.arange(half, dtype=np.float64) / max(half, 1))
    angles = np.arange(max_pos, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.cos(angles), np.sin(angles)


def reference(x, cos, sin, pos, interleaved: bool) -> np.ndarray:
    """float64 NumPy: pairs (i, i + half) or (2i, 2i + 1) rotated by the angles of their rows."""
    x = to_float64(x)
    cos, sin = to_float64(cos), to_float64(sin)
    half = cos.shape[1]
    pos = np.arange(x.shape[-2]) if pos is None else np.asarray(pos)
    c, s = cos[pos], sin[pos]
    out = x.copy()
    if interleaved:
        a, b = x[..., 0 : 2 * half : 2], x[..., 1 : 2 * half : 2]
        out[..., 0 : 2 * half : 2] = a * c - b * s
        out[..., 1 : 2 * half : 2] = b * c + a * s
    else:
        a, b = x[..., :half], x[..., half : 2 * half]
        out[..., :half] = a * c - b * s
        out[..., half : 2 * half] = b * c + a * s
    return out


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Hugging Face transformers' rotate_half."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    """GPT-J's rotate_every_two."""
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def torch_rotary(x, cos, sin, pos, interleaved: bool) -> torch.Tensor:
    """The models' torch code: full-width cos/sin gathered per position (duplicated halves for
    rotate_half, each entry twice for interleaved pairs), the rotary part rotated, the rest
    passed through (GPT-NeoX's partial rotary)."""
    half = cos.shape[1]
    pos = torch.arange(x.shape[-2]) if pos is None else pos
    c, s = cos[pos], sin[pos]
    if interleaved:
        c, s = c.repeat_interleave(2, dim=-1), s.repeat_interleave(2, dim=-1)
        rotate = rotate_every_two
    else:
        c, s = torch.cat((c, c), dim=-1), torch.cat((s, s), dim=-1)
        rotate = rotate_half
    rot, rest = x[..., : 2 * half], x[..., 2 * half :]
    return torch.cat((rot * c + rotate(rot) * s, rest), dim=-1)


def test_declared_dtypes():
    assert kernel_dtypes("rotary_embedding") == FLOATS
    index_dtypes = {s[3] for s in kernel_signatures("rotary_embedding")}
    assert index_dtypes == {"int32", "int64"}


@st.composite
def cases(draw, dtype: str):
    """(x, cos, sin, position_ids or None, interleaved)."""
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    seq = draw(st.integers(0, 5))
    dim = draw(st.integers(0, 9))
    half = draw(st.integers(0, dim // 2))
    interleaved = draw(st.booleans())
    with_pos = draw(st.booleans())
    max_pos = seq + draw(st.integers(0 if not with_pos else 1, 4))
    elements = st.floats(-4, 4, width=32, allow_subnormal=False)
    x = draw(any_layout(dtype, shape=(*lead, seq, dim), elements=elements))
    cos, sin = tables(max_pos, half, base=draw(st.sampled_from([10000.0, 10.0])))
    layout = draw(st.sampled_from(["compact", "transposed", "sliced"]))
    if layout == "transposed":
        cos, sin = np.ascontiguousarray(cos.T).T, np.ascontiguousarray(sin.T).T
    elif layout == "sliced":
        cos = np.repeat(cos, 2, axis=1)[:, ::2]
        sin = np.repeat(sin, 2, axis=1)[::-1][::-1][:, ::2]
    if dtype == "bfloat16":
        cos = torch.from_numpy(np.ascontiguousarray(cos)).to(torch.bfloat16)
        sin = torch.from_numpy(np.ascontiguousarray(sin)).to(torch.bfloat16)
    else:
        cos, sin = cos.astype(dtype), sin.astype(dtype)
    pos = None
    if with_pos:
        full = (*lead, seq)
        keep = draw(st.integers(0, len(full)))
        shape = [e if draw(st.booleans()) else 1 for e in full[len(full) - keep :]]
        index_dtype = draw(st.sampled_from([np.int32, np.int64]))
        pos = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).integers(
            0, max_pos, size=shape, dtype=index_dtype
        )
        if pos.ndim >= 1 and draw(st.booleans()):
            pos = np.repeat(pos, 2, axis=-1)[..., ::2]  # a strided view
    return x, cos, sin, pos, interleaved


def call(x, cos, sin, pos, interleaved: bool):
    args = [x, cos, sin] if pos is None else [x, cos, sin, pos]
    return ctensor.ops.rotary_embedding(*args, interleaved=interleaved)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_against_numpy(dtype, data):
    x, cos, sin, pos, interleaved = data.draw(cases(dtype))
    got = call(x, cos, sin, pos, interleaved)
    want = reference(x, cos, sin, pos, interleaved)
    assert_close(got, want, dtype=dtype, atol=slack(dtype, x))


@SETTINGS
@given(data=st.data())
def test_against_torch_models(data):
    x, cos, sin, pos, interleaved = data.draw(cases("float64"))
    got = np.asarray(call(x, cos, sin, pos, interleaved))

    def t(a):
        return torch.from_numpy(np.array(a))

    want = torch_rotary(
        t(x),
        t(cos),
        t(sin),
        None if pos is None else t(pos).long(),
        interleaved,
    ).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_partial_rotary_passes_the_rest_through():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 10))
    cos, sin = tables(4, 3)
    for interleaved in (False, True):
        y = np.asarray(ctensor.ops.rotary_embedding(x, cos, sin, interleaved=interleaved))
        np.testing.assert_array_equal(y[..., 6:], x[..., 6:])
        # position 0 is the identity rotation
        np.testing.assert_array_equal(y[:, 0], x[:, 0])
    # rot_dim 0: a copy
    y = np.asarray(ctensor.ops.rotary_embedding(x, cos[:, :0], sin[:, :0]))
    np.testing.assert_array_equal(y, x)


def test_position_ids_broadcast_over_heads():
    """(batch, heads, seq, dim) with position_ids (batch, 1, seq), as Hugging Face passes them
    after unsqueeze; each batch row its own offset (a KV-cache decode step)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4, 8))
    cos, sin = tables(16, 4)
    pos = (np.arange(4)[None, :] + np.array([[5], [9]]))[:, None, :]
    y = np.asarray(ctensor.ops.rotary_embedding(x, cos, sin, pos))
    np.testing.assert_allclose(y, reference(x, cos, sin, pos, False), rtol=1e-14, atol=1e-15)


def test_thread_count_does_not_change_results():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 8, 32, 64)).astype(np.float32)
    cos, sin = tables(32, 32)
    cos, sin = cos.astype(np.float32), sin.astype(np.float32)
    before = ctensor.get_num_threads()
    try:
        ctensor.set_num_threads(1)
        one = np.asarray(ctensor.ops.rotary_embedding(x, cos, sin, interleaved=True))
        ctensor.set_num_threads(2)
        two = np.asarray(ctensor.ops.rotary_embedding(x, cos, sin, interleaved=True))
    finally:
        ctensor.set_num_threads(before)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("bad", [-1, 8, 1000])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_out_of_range_position_is_an_error_before_writing(bad, index_dtype):
    x = np.ones((2, 5, 4))
    cos, sin = tables(8, 2)
    pos = np.array([0, 1, 2, 3, 4], dtype=index_dtype)
    pos[3] = bad
    out = np.full_like(x, 7.0)
    with pytest.raises(ctensor.InvalidArgumentError, match=f"position {bad} is out of range"):
        ctensor.ops.rotary_embedding(x, cos, sin, pos, out=out)
    assert np.all(out == 7.0)


def test_shape_and_dtype_errors():
    x = np.ones((2, 5, 8))
    cos, sin = tables(8, 4)
    op = ctensor.ops.rotary_embedding
    with pytest.raises(ctensor.ShapeMismatchError, match="exceeds x's last dim"):
        op(x, *tables(8, 5))
    with pytest.raises(ctensor.ShapeMismatchError, match="only 4 rows"):
        op(x, *tables(4, 4))
    with pytest.raises(ctensor.ShapeMismatchError, match="2-D of one shape"):
        op(x, cos, sin[:, :3])
    with pytest.raises(ctensor.ShapeMismatchError, match="2-D of one shape"):
        op(x, cos[None], sin[None])
    with pytest.raises(ctensor.ShapeMismatchError, match="at least 2 dims"):
        op(np.ones(8), cos, sin)
    with pytest.raises(ctensor.ShapeMismatchError, match="broadcast to x.shape"):
        op(x, cos, sin, np.zeros((2, 4), dtype=np.int64))
    with pytest.raises(ctensor.ShapeMismatchError, match="broadcast to x.shape"):
        op(x, cos, sin, np.zeros((1, 2, 5), dtype=np.int64))
    with pytest.raises(ctensor.UnsupportedDTypeError, match="int32 or int64"):
        op(x, cos, sin, np.zeros(5))
    # mixed float dtypes promote as NumPy's (the binding casts before the C call)
    assert op(x.astype(np.float32), cos, sin).dtype == np.float64
    # with position_ids a single vector is fine: x (dim,), position_ids ()
    y = np.asarray(op(np.ones(8), cos, sin, np.array(3)))
    np.testing.assert_allclose(y, reference(np.ones((1, 8)), cos, sin, [3], False)[0])


def test_gradient_row():
    info = ctensor.op_info("rotary_embedding")["gradient"]
    assert "negative(sin)" in info["formula"] and "not differentiable" in info["note"]


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("with_pos", [False, True])
def test_vjp(dtype, interleaved, with_pos):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 5, 10))
    cos, sin = tables(7, 4)
    pos = rng.integers(0, 7, size=(2, 1, 5)) if with_pos else None

    def torch_fn(x, cos, sin, pos):
        return torch_rotary(x, cos, sin, pos, interleaved)

    check_vjp(
        "rotary_embedding",
        [x, cos, sin, pos],
        {"interleaved": interleaved},
        torch_fn,
        dtype=dtype,
        constants=(1, 2),
    )
