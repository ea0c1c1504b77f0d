"""scaled_dot_product_attention and its backward op against a float64 NumPy reference and torch.

Inputs are drawn in their dtype with any layout (bfloat16 as torch tensors); the references see
the same rounded values in float64. Tolerances: the dtype's rtol (the result rounds once) plus
K·eps·S, with S the float64 value of the same formula on magnitudes (|v|, |q|, |k|, |grad_out|,
the weights) times (1 + the largest |score| of the row, whose rounding moves the weights), and
eps the compute type's epsilon (float32 for float16/bfloat16/float32); the backward reads the
forward's rounded out, so there eps is the dtype's own.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import FLOATS, any_layout, assert_close, kernel_dtypes, to_float64
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from ctensor import ffi, lib

SDPA = "scaled_dot_product_attention"
SETTINGS = settings(max_examples=30, deadline=None)
K = 32.0
EPS = {
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "float32": 2.0**-23,
    "float64": 2.0**-52,
}
TORCH_DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}


def eps_compute(dtype: str) -> float:
    return EPS["float64"] if dtype == "float64" else EPS["float32"]


# ----------------------------------------------------------------------------------------------
# the float64 reference
# ----------------------------------------------------------------------------------------------


def repeat_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """Key/value heads repeated for grouped-query attention (torch's repeat_interleave)."""
    if x.ndim >= 3 and x.shape[-3] not in (0, heads):
        return np.repeat(x, heads // x.shape[-3], axis=-3)
    return x


def sum_heads(x: np.ndarray, heads: int) -> np.ndarray:
    if x.ndim >= 3 and x.shape[-3] != heads:
        return x.reshape(x.shape[:-3] + (heads, x.shape[-3] // heads) + x.shape[-2:]).sum(-3)
    return x


def reference(q, k, v, mask, causal, scale, g=None):
    """out, logsumexp, the weights and magnitude bounds (and the cotangents of q, k, v with
    their bounds when g is given), in float64, for float64 inputs."""
    e = q.shape[-1]
    scale = (1.0 / math.sqrt(e) if e else 1.0) if scale is None else scale
    heads = q.shape[-3] if q.ndim >= 3 else 1
    kr, vr = repeat_heads(k, heads), repeat_heads(v, heads)
    s = np.einsum("...ie,...je->...ij", q, kr) * scale
    s_abs = np.einsum("...ie,...je->...ij", np.abs(q), np.abs(kr)) * scale
    allowed = np.ones(s.shape, bool)
    if mask is not None:
        if mask.dtype == bool:
            allowed = allowed & mask
        else:
            s = s + mask
            s_abs = s_abs + np.abs(mask)
    if causal:
        allowed = allowed & np.tril(np.ones(s.shape[-2:], bool))
    s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True, initial=-np.inf)
    seen = np.isfinite(m)
    p = np.where(seen, np.exp(s - np.where(seen, m, 0.0)), 0.0)
    total = p.sum(-1, keepdims=True)
    p = p / np.where(total > 0, total, 1.0)
    lse = np.where(seen, m + np.log(np.where(total > 0, total, 1.0)), -np.inf)[..., 0]
    spread = 1.0 + np.where(allowed, s_abs, 0.0).max(-1, keepdims=True, initial=0.0)
    out = p @ vr
    out_mag = (p @ np.abs(vr)) * spread
    result = {"out": out, "lse": lse, "out_mag": out_mag, "lse_mag": np.abs(lse) + spread[..., 0]}
    if g is not None:
        dp = g @ np.swapaxes(vr, -1, -2)
        d = (g * out).sum(-1, keepdims=True)
        ds = p * (dp - d) * scale
        dp_abs = np.abs(g) @ np.abs(np.swapaxes(vr, -1, -2))
        d_abs = (np.abs(g) * np.abs(out)).sum(-1, keepdims=True)
        ds_abs = p * (dp_abs + d_abs) * scale * spread
        result.update(
            gq=ds @ kr,
            gk=sum_heads(np.swapaxes(ds, -1, -2) @ q, k.shape[-3] if k.ndim >= 3 else 1),
            gv=sum_heads(np.swapaxes(p, -1, -2) @ g, v.shape[-3] if v.ndim >= 3 else 1),
            gq_mag=ds_abs @ np.abs(kr),
            gk_mag=sum_heads(
                np.swapaxes(ds_abs, -1, -2) @ np.abs(q), k.shape[-3] if k.ndim >= 3 else 1
            ),
            gv_mag=sum_heads(
                np.swapaxes(p * spread, -1, -2) @ np.abs(g), v.shape[-3] if v.ndim >= 3 else 1
            ),
        )
    return result


def check(result, expected, magnitude, dtype: str, eps: float) -> None:
    # Fully masked rows have an infinite log-sum-exp: assert_close matches infinities by sign,
    # so only the finite magnitudes size the tolerance of the others.
    magnitude = np.asarray(magnitude, np.float64)
    atol = K * eps * np.max(magnitude[np.isfinite(magnitude)], initial=0.0)
    assert_close(result, expected, dtype, atol=float(atol) + 1e-300)


# ----------------------------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------------------------


def finite(dtype: str, bound: float = 2.0):
    width = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64}[dtype]
    return st.floats(-bound, bound, width=width, allow_subnormal=False)


def mask_shape(draw, full: tuple) -> tuple:
    """A shape that broadcasts to `full`: some leading dims dropped, some extents 1."""
    drop = draw(st.integers(0, len(full) - 2))
    return tuple(s if draw(st.booleans()) else 1 for s in full[drop:])


@st.composite
def attention_case(draw, dtype: str, big: bool = False):
    batch = tuple(draw(st.lists(st.integers(0 if not big else 1, 2), min_size=0, max_size=2)))
    gqa = draw(st.booleans())
    hkv = draw(st.integers(1, 2))
    hq = hkv * (draw(st.integers(1, 3)) if gqa else 1)
    sizes = [0, 1, 2, 3, 5, 8, 13] if not big else [97, 130, 200, 270]
    lq, lk = draw(st.sampled_from(sizes)), draw(st.sampled_from(sizes))
    e, ev = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    q = draw(any_layout(dtype, shape=batch + (hq, lq, e), elements=finite(dtype)))
    k = draw(any_layout(dtype, shape=batch + (hkv, lk, e), elements=finite(dtype)))
    v = draw(any_layout(dtype, shape=batch + (hkv, lk, ev), elements=finite(dtype)))
    kind = draw(st.sampled_from(["none", "causal", "bool", "float"]))
    mask = None
    if kind in ("bool", "float"):
        shape = mask_shape(draw, batch + (hq, lq, lk))
        if kind == "bool":
            mask = np.asarray(draw(any_layout("bool", shape=shape)))
            if dtype == "bfloat16":
                mask = torch.from_numpy(fresh(mask))
        else:
            mask = draw(any_layout(dtype, shape=shape, elements=finite(dtype, 3.0)))
    scale = draw(st.none() | st.floats(0.05, 2.0))
    attrs = {"is_causal": kind == "causal", "scale": scale, "enable_gqa": gqa}
    return q, k, v, mask, attrs


def fresh(a: np.ndarray) -> np.ndarray:
    """A compact copy with plain strides (NumPy keeps odd strides of extent-1 dims)."""
    return np.array(a, order="C", copy=True)


def mask64(mask):
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool:
        return mask.numpy()
    if isinstance(mask, np.ndarray) and mask.dtype == bool:
        return mask
    return to_float64(mask)


def test_declared_dtypes():
    assert kernel_dtypes(SDPA) == FLOATS
    assert kernel_dtypes(SDPA + "_backward") == FLOATS


# ----------------------------------------------------------------------------------------------
# forward
# ----------------------------------------------------------------------------------------------


def run_forward(dtype, case):
    q, k, v, mask, attrs = case
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, mask, **attrs)
    want = reference(
        to_float64(q),
        to_float64(k),
        to_float64(v),
        mask64(mask),
        attrs["is_causal"],
        attrs["scale"],
    )
    assert str(lse.dtype).replace("torch.", "") == ("float64" if dtype == "float64" else "float32")
    check(out, want["out"], want["out_mag"], dtype, eps_compute(dtype))
    lse_dtype = "float64" if dtype == "float64" else "float32"
    check(lse, want["lse"], want["lse_mag"], lse_dtype, eps_compute(dtype))
    return out, lse, want


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_forward_matches_reference(dtype, data):
    run_forward(dtype, data.draw(attention_case(dtype)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_forward_across_tiles(dtype, data):
    """Sequences longer than one tile of queries (96) and keys (256)."""
    run_forward(dtype, data.draw(attention_case(dtype, big=True)))


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_forward_matches_torch(data):
    """float64: torch.nn.functional.scaled_dot_product_attention on the same inputs."""
    q, k, v, mask, attrs = data.draw(attention_case("float64"))
    out, _ = ctensor.ops.scaled_dot_product_attention(q, k, v, mask, **attrs)
    t = [torch.from_numpy(fresh(a)) for a in (q, k, v)]
    tm = None if mask is None else torch.from_numpy(fresh(mask))
    # zero-size cases included: torch gives zeros for rows without keys, as ctensor
    expected = F.scaled_dot_product_attention(*t, attn_mask=tm, **attrs)
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-10, atol=1e-12)


def test_fully_masked_rows_give_zeros_as_torch():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 6, 4)) for _ in range(3))
    mask = rng.random((6, 6)) < 0.5
    mask[2] = False
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, mask)
    t = [torch.from_numpy(a).requires_grad_(True) for a in (q, k, v)]
    expected = F.scaled_dot_product_attention(*t, attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(out, expected.detach().numpy(), rtol=1e-12, atol=1e-14)
    assert np.all(out[:, :, 2] == 0) and np.all(lse[:, :, 2] == -np.inf)
    g = rng.standard_normal(out.shape)
    expected.backward(torch.from_numpy(g))
    grads = ctensor.ops.scaled_dot_product_attention_backward(g, q, k, v, mask, out, lse)
    for got, want in zip(grads, t, strict=True):
        np.testing.assert_allclose(got, want.grad.numpy(), rtol=1e-10, atol=1e-12)
    # an additive mask of -inf: the same
    additive = np.where(mask, 0.0, -np.inf)
    out2, lse2 = ctensor.ops.scaled_dot_product_attention(q, k, v, additive)
    np.testing.assert_array_equal(out2, out)
    np.testing.assert_array_equal(lse2, lse)


def test_causal_with_more_queries_than_keys_is_top_left():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((1, 2, 7, 4))
    k, v = rng.standard_normal((1, 2, 3, 4)), rng.standard_normal((1, 2, 3, 5))
    out, _ = ctensor.ops.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = [torch.from_numpy(a) for a in (q, k, v)]
    expected = F.scaled_dot_product_attention(*t, is_causal=True)
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-12, atol=1e-14)
    # row 0 sees key 0 only
    np.testing.assert_allclose(out[..., 0, :], v[..., 0, :], rtol=1e-14)


def test_errors():
    q = np.zeros((1, 4, 3, 8), np.float32)
    k = np.zeros((1, 2, 5, 8), np.float32)
    v = np.zeros((1, 2, 5, 6), np.float32)
    mask = np.ones((3, 5), bool)
    ops = ctensor.ops
    with pytest.raises(ctensor.CTensorError, match="not both"):
        ops.scaled_dot_product_attention(q, q, q, np.ones((3, 3), bool), is_causal=True)
    with pytest.raises(ctensor.CTensorError, match="batch dims"):
        ops.scaled_dot_product_attention(q, k, v)
    with pytest.raises(ctensor.CTensorError, match="multiple"):
        ops.scaled_dot_product_attention(
            q, k[:, :1].repeat(3, 1), v[:, :1].repeat(3, 1), enable_gqa=True
        )
    with pytest.raises(ctensor.CTensorError, match="last dim"):
        ops.scaled_dot_product_attention(q, k[..., :4], v, enable_gqa=True)
    with pytest.raises(ctensor.CTensorError, match="broadcast"):
        ops.scaled_dot_product_attention(q, k, v, np.ones((4, 5), bool), enable_gqa=True)
    with pytest.raises(ctensor.CTensorError, match="attn_mask must be bool"):
        ops.scaled_dot_product_attention(q, k, v, mask.astype(np.float64), enable_gqa=True)
    with pytest.raises(ctensor.CTensorError, match="dropout_p"):
        ops.scaled_dot_product_attention(q, k, v, enable_gqa=True, dropout_p=1.5)
    out, lse = ops.scaled_dot_product_attention(q, k, v, mask, enable_gqa=True)
    with pytest.raises(ctensor.CTensorError, match="logsumexp"):
        ops.scaled_dot_product_attention_backward(
            out, q, k, v, mask, out, lse.astype(np.float64), enable_gqa=True
        )
    with pytest.raises(ctensor.CTensorError, match="grad_out"):
        ops.scaled_dot_product_attention_backward(
            out[..., :2], q, k, v, mask, out, lse, enable_gqa=True
        )


# ----------------------------------------------------------------------------------------------
# backward
# ----------------------------------------------------------------------------------------------


def run_backward(dtype, case, data):
    q, k, v, mask, attrs = case
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, mask, **attrs)
    g = data.draw(any_layout(dtype, shape=tuple(out.shape), elements=finite(dtype)))
    grads = ctensor.ops.scaled_dot_product_attention_backward(g, q, k, v, mask, out, lse, **attrs)
    want = reference(
        to_float64(q),
        to_float64(k),
        to_float64(v),
        mask64(mask),
        attrs["is_causal"],
        attrs["scale"],
        to_float64(g),
    )
    # the backward reads the forward's out rounded to the dtype
    eps = eps_compute(dtype) if dtype in ("float32", "float64") else EPS[dtype]
    for got, name, x in zip(grads, ("gq", "gk", "gv"), (q, k, v), strict=True):
        assert tuple(got.shape) == tuple(x.shape)
        check(got, want[name], want[name + "_mag"], dtype, eps)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_backward_matches_reference(dtype, data):
    run_backward(dtype, data.draw(attention_case(dtype)), data)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_backward_across_tiles(dtype, data):
    run_backward(dtype, data.draw(attention_case(dtype, big=True)), data)


def torch_sdpa(attrs):
    def fn(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **attrs)

    return fn


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_backward_is_autograd(data):
    """ctensor.autodiff through the gradient row against torch.autograd and finite differences."""
    q, k, v, mask, attrs = data.draw(attention_case("float64"))
    if min(np.size(q), np.size(k), np.size(v)) == 0:
        return
    inputs = [fresh(a) for a in (q, k, v)]
    m = None if mask is None else fresh(mask)
    constants = (3,) if m is not None and m.dtype != bool else ()
    check_vjp(SDPA, [*inputs, m], attrs, torch_sdpa(attrs), constants=constants)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_backward_is_autograd_low_precision(dtype):
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 4, 9, 8)), rng.standard_normal((2, 2, 11, 8))
    v = rng.standard_normal((2, 2, 11, 5))
    attrs = {"is_causal": True, "scale": None, "enable_gqa": True}
    check_vjp(SDPA, [q, k, v, None], attrs, torch_sdpa(attrs), dtype=dtype, fd=False)


# ----------------------------------------------------------------------------------------------
# workspace, threads, instruction sets
# ----------------------------------------------------------------------------------------------


def workspace_bytes(op: str, shapes: list, dtype: str = "float32") -> int:
    status, size, message = workspace_query(op, shapes, dtype)
    assert status == 0, message
    return size


def workspace_query(op: str, shapes: list, dtype: str = "float32") -> tuple[int, int, str]:
    """(status, bytes, error message) of ct_op_workspace on views of these shapes."""
    from conformance import dtypes as dt

    keep = [ffi.new("char[]", 8)]
    views = []
    for shape in shapes:
        if shape is None:
            views.append(ffi.NULL)
            continue
        view = ffi.new("ct_tensor*")
        dt.set_ct_dtype(view.dtype, dtype)
        view.device.device_type = 1
        view.data = keep[0]
        view.ndim = len(shape)
        extents = ffi.new("int64_t[]", list(shape))
        keep.append(extents)
        view.shape = extents
        views.append(view)
        keep.append(view)
    handle = ffi.new("const ct_op**")
    assert lib.ct_op_find(op.encode(), handle) == 0
    array = ffi.new("ct_tensor*[]", views)
    size, alignment = ffi.new("uint64_t*"), ffi.new("uint64_t*")
    status = lib.ct_op_workspace(
        handle[0], array, len(views), ffi.NULL, 0, ffi.NULL, 0, size, alignment
    )
    message = ffi.string(lib.ct_last_error()).decode() if status else ""
    return status, int(size[0]), message


@pytest.mark.parametrize("threads", [1, 2])
def test_workspace_is_tiles_not_scores(threads):
    """At L = 4096 the scratch is a few tiles per thread, far below one L x L score matrix."""
    before = ctensor.get_num_threads()
    ctensor.set_num_threads(threads)
    try:
        shape = (1, 8, 4096, 64)
        scores = 4096 * 4096 * 4
        forward = workspace_bytes(SDPA, [shape, shape, shape, None])
        assert 0 < forward <= threads * 1536 * 1024 and forward < scores / 16
        lse = shape[:-1]
        backward = workspace_bytes(
            SDPA + "_backward", [shape, shape, shape, shape, None, shape, lse]
        )
        # the backward also holds grad_query's accumulators of one head (L x E)
        assert 0 < backward <= threads * (2048 * 1024 + 4096 * 65 * 4) and backward < scores / 8
    finally:
        ctensor.set_num_threads(before)


def test_workspace_of_huge_head_dims_is_a_size_error():
    """A head dim of 2^60 (a broadcast view) makes tiles past 64 bits: the query fails with the
    size status and names the op, instead of answering a wrapped size the kernel overruns."""
    big, one = (1, 1, 1, 2**60), (1, 1, 1, 1)
    lse = (1, 1, 1)
    for op, shapes in [
        (SDPA, [big, big, one, None]),
        (SDPA + "_backward", [one, big, big, one, None, one, lse]),
    ]:
        status, _, message = workspace_query(op, shapes)
        assert status == lib.CT_ERROR_SIZE_OVERFLOW, (op, status, message)
        assert SDPA in message
    q = np.broadcast_to(np.ones(one, np.float32), big)
    with pytest.raises((ctensor.CTensorError, MemoryError, ValueError)):
        ctensor.ops.scaled_dot_product_attention(q, q, np.ones(one, np.float32))


@pytest.mark.parametrize("kv_heads", [1, 2])
@pytest.mark.parametrize("causal", [False, True])
def test_results_do_not_depend_on_the_thread_count(kv_heads, causal):
    """Bitwise the same on 1, 2 and 3 threads; with one key head on several threads the backward
    splits the work by key tiles and query tiles, and adds the same terms in the same order."""
    rng = np.random.default_rng(5)
    batch = 2 if kv_heads == 2 else 1
    q = rng.standard_normal((batch, 4, 300, 16)).astype(np.float32)
    k = rng.standard_normal((batch, kv_heads, 700, 16)).astype(np.float32)
    v = rng.standard_normal((batch, kv_heads, 700, 8)).astype(np.float32)
    g = rng.standard_normal((batch, 4, 300, 8)).astype(np.float32)
    attrs = {"enable_gqa": True, "is_causal": causal, "dropout_p": 0.2, "seed": 3}
    before = ctensor.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            ctensor.set_num_threads(threads)
            out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, **attrs)
            grads = ctensor.ops.scaled_dot_product_attention_backward(
                g, q, k, v, None, out, lse, **attrs
            )
            results.append([out, lse, *grads])
    finally:
        ctensor.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    # and they are right
    want = reference(
        q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), None, causal, None
    )
    check(results[0][1], want["lse"], want["lse_mag"], "float32", EPS["float32"])


_ISA_SCRIPT = """
import numpy as np, torch, torch.nn.functional as F
import ctensor
rng = np.random.default_rng(7)
for dtype in ("float32", "float64"):
    q = rng.standard_normal((1, 3, 130, 24)).astype(dtype)
    k = rng.standard_normal((1, 3, 270, 24)).astype(dtype)
    v = rng.standard_normal((1, 3, 270, 20)).astype(dtype)
    g = rng.standard_normal((1, 3, 130, 20)).astype(dtype)
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, is_causal=True)
    grads = ctensor.ops.scaled_dot_product_attention_backward(g, q, k, v, None, out, lse,
                                                              is_causal=True)
    t = [torch.from_numpy(a.astype(np.float64)).requires_grad_(True) for a in (q, k, v)]
    o = F.scaled_dot_product_attention(*t, is_causal=True)
    o.backward(torch.from_numpy(g.astype(np.float64)))
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(out, o.detach().numpy(), rtol=tol, atol=tol)
    for got, want in zip(grads, t):
        np.testing.assert_allclose(got, want.grad.numpy(), rtol=10 * tol, atol=10 * tol)
print("ok")
"""


@pytest.mark.parametrize("isa", ["generic", "avx2"])
def test_every_instruction_set(isa):
    """The tiles follow the micro-kernels of each set (MR x NR differ)."""
    env = dict(os.environ, CTENSOR_CPU_ISA=isa)
    done = subprocess.run(
        [sys.executable, "-c", _ISA_SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


# ----------------------------------------------------------------------------------------------
# dropout
# ----------------------------------------------------------------------------------------------

PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def philox_x0(index: np.ndarray, offset: int, seed: int) -> np.ndarray:
    """Word x0 of Philox-4x32-10 for counters (lo(i), hi(i), lo(offset), hi(offset)) and key
    (lo(seed), hi(seed)), in NumPy (Random123's rounds)."""
    m32 = np.uint64(0xFFFFFFFF)
    index = np.asarray(index, np.uint64)
    c0, c1 = index & m32, index >> np.uint64(32)
    c2 = np.full_like(c0, offset & 0xFFFFFFFF)
    c3 = np.full_like(c0, offset >> 32)
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for r in range(10):
        if r:
            k0, k1 = (k0 + PHILOX_W0) & 0xFFFFFFFF, (k1 + PHILOX_W1) & 0xFFFFFFFF
        p0, p1 = np.uint64(PHILOX_M0) * c0, np.uint64(PHILOX_M1) * c2
        c0, c1, c2, c3 = (
            (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0),
            p1 & m32,
            (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1),
            p0 & m32,
        )
    return c0


def keep_mask(shape: tuple, p: float, seed: int, offset: int) -> np.ndarray:
    """The dropout rule: element i kept iff (x0 >> 8) * 2^-24 >= (float32)p."""
    x0 = philox_x0(np.arange(int(np.prod(shape))), offset, seed)
    u = ((x0 >> np.uint64(8)).astype(np.float64) * 2.0**-24).astype(np.float32)
    return (u >= np.float32(p)).reshape(shape)


def test_philox_known_answers():
    """Random123's philox4x32 10 vectors: the NumPy twin above is Philox-4x32-10."""
    assert int(philox_x0(np.array([0]), 0, 0)[0]) == 0x6627E8D5
    # counter (-1, -1, -1, -1), key (-1, -1): x0 = 0x408f276d
    assert int(philox_x0(np.array([2**64 - 1]), 2**64 - 1, 2**64 - 1)[0]) == 0x408F276D


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=15, deadline=None)
@given(data=st.data(), p=st.sampled_from([0.1, 0.5, 0.9]), seed=st.integers(-(2**63), 2**63 - 1))
def test_dropout_is_dropout_of_the_weights(dtype, data, p, seed):
    """out = dropout(softmax(scores), p, seed, offset) v: keep from the Philox stream (the
    dropout op's mask, and the NumPy twin's), and the backward is that function's VJP."""
    q, k, v, mask, attrs = data.draw(attention_case(dtype))
    offset = data.draw(st.integers(-(2**63), 2**63 - 1))  # uint64 values as their int64 bits
    attrs = {**attrs, "dropout_p": p, "seed": seed, "offset": offset}
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, mask, **attrs)
    q64, k64, v64, m64 = to_float64(q), to_float64(k), to_float64(v), mask64(mask)
    heads = q64.shape[-3]
    base = reference(q64, k64, v64, m64, attrs["is_causal"], attrs["scale"])
    weights_shape = q64.shape[:-1] + (k64.shape[-2],)
    keep = keep_mask(weights_shape, p, seed % 2**64, offset % 2**64)
    # the weights recomputed as the reference does, then dropped
    probs = reference_weights(q64, k64, m64, attrs)
    # the dropout op draws the same mask from the same stream
    dropped, dropout_mask = ctensor.ops.dropout(probs, p=p, seed=seed, offset=offset)
    np.testing.assert_array_equal(dropout_mask, keep)
    np.testing.assert_allclose(dropped, probs * keep / (1 - p), rtol=1e-15)
    vr = repeat_heads(v64, heads)
    expected = dropped @ vr
    check(out, expected, base["out_mag"] / (1 - p), dtype, eps_compute(dtype))
    check(lse, base["lse"], base["lse_mag"], dtype, eps_compute(dtype))
    if dtype != "float64" or min(q64.size, k64.size, v64.size) == 0:
        return
    g = np.random.default_rng(seed % 2**32).standard_normal(out.shape)
    grads = ctensor.ops.scaled_dot_product_attention_backward(g, q, k, v, mask, out, lse, **attrs)
    t = [torch.from_numpy(fresh(a)).requires_grad_(True) for a in (q64, k64, v64)]
    tm = None if m64 is None else torch.from_numpy(fresh(m64))
    w = F.scaled_dot_product_attention(
        t[0],
        t[1],
        torch.eye(k64.shape[-2], dtype=torch.float64).expand(k64.shape[:-1] + (k64.shape[-2],)),
        attn_mask=tm,
        **{a: attrs[a] for a in ("is_causal", "scale", "enable_gqa")},
    )  # the weights, as torch computes them (value = identity)
    o = (w * torch.from_numpy(keep) / (1 - p)) @ torch.from_numpy(vr).requires_grad_(False)
    o = o + 0.0 * t[2].sum()  # keep value in the graph
    (gq, gk) = torch.autograd.grad(o, t[:2], torch.from_numpy(g))
    gv = sum_heads(np.swapaxes(dropped, -1, -2) @ g, v64.shape[-3])
    np.testing.assert_allclose(grads[0], gq.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(grads[1], gk.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(grads[2], gv, rtol=1e-9, atol=1e-11)


def reference_weights(q, k, mask, attrs):
    heads = q.shape[-3]
    e = q.shape[-1]
    scale = attrs["scale"] if attrs["scale"] is not None else (1.0 / math.sqrt(e) if e else 1.0)
    s = np.einsum("...ie,...je->...ij", q, repeat_heads(k, heads)) * scale
    allowed = np.ones(s.shape, bool)
    if mask is not None:
        if mask.dtype == bool:
            allowed = allowed & mask
        else:
            s = s + mask
    if attrs["is_causal"]:
        allowed = allowed & np.tril(np.ones(s.shape[-2:], bool))
    s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True, initial=-np.inf)
    seen = np.isfinite(m)
    w = np.where(seen, np.exp(s - np.where(seen, m, 0.0)), 0.0)
    total = w.sum(-1, keepdims=True)
    return w / np.where(total > 0, total, 1.0)


def test_dropout_edges():
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((2, 3, 7, 5)).astype(np.float32) for _ in range(3))
    plain = ctensor.ops.scaled_dot_product_attention(q, k, v)
    none = ctensor.ops.scaled_dot_product_attention(q, k, v, dropout_p=0.0, seed=5)
    for a, b in zip(plain, none, strict=True):
        np.testing.assert_array_equal(a, b)
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, dropout_p=1.0, seed=5)
    assert np.all(out == 0)
    np.testing.assert_array_equal(lse, plain[1])  # logsumexp is before dropout
    # another seed or offset: another mask
    a = ctensor.ops.scaled_dot_product_attention(q, k, v, dropout_p=0.5, seed=1, offset=0)[0]
    b = ctensor.ops.scaled_dot_product_attention(q, k, v, dropout_p=0.5, seed=1, offset=1)[0]
    c = ctensor.ops.scaled_dot_product_attention(q, k, v, dropout_p=0.5, seed=2, offset=0)[0]
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
