"""The CUDA backend on a real GPU, through CuPy and PyTorch buffers: zero-copy in and out
(pointer identity), strided views read in place, results against NumPy, the caller's stream,
clear errors for memory that is not the device's, 64-bit indexing, and the whole conformance
suite. Collected only where ctensor's cuda plugin has a device (tests/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import cupy
import numpy as np
import pytest
import torch

import ctensor
from ctensor import ffi, lib
from ctensor._device_array import _capsule
from ctensor.conformance import dtypes as cdt
from ctensor.conformance.nn_references import conv2d, conv2d_grad_input, conv2d_grad_weight


def test_cupy_in_cupy_out_and_out_is_written_in_place() -> None:
    a = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    b = cupy.arange(4, dtype=cupy.float32)
    c = ctensor.ops.add(a, b)
    assert isinstance(c, cupy.ndarray) and c.device.id == 0
    np.testing.assert_array_equal(cupy.asnumpy(c), cupy.asnumpy(a) + cupy.asnumpy(b))
    out = cupy.full((3, 4), -1, dtype=cupy.float32)
    result = ctensor.ops.multiply(a, b, out=out)
    assert result.data.ptr == out.data.ptr
    np.testing.assert_array_equal(cupy.asnumpy(out), cupy.asnumpy(a) * cupy.asnumpy(b))


def test_torch_cuda_in_torch_out_and_out_is_written_in_place() -> None:
    x = torch.randn(257, 129, device="cuda")
    y = ctensor.ops.exp(x)
    assert isinstance(y, torch.Tensor) and y.device == x.device
    torch.testing.assert_close(y, torch.exp(x))
    out = torch.empty_like(x)
    result = ctensor.ops.negative(x, out=out)
    assert result.data_ptr() == out.data_ptr()
    assert torch.equal(out, -x)


def test_strided_and_broadcast_views_are_read_in_place() -> None:
    base = cupy.random.standard_normal((64, 96)).astype(cupy.float32)
    for view in [base[:, ::3], base.T, base[::2, 5:], base[3]]:
        got = ctensor.ops.multiply(view, view)
        np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(view) ** 2)
    row = cupy.arange(96, dtype=cupy.float32)
    np.testing.assert_array_equal(
        cupy.asnumpy(ctensor.ops.subtract(base, row)), cupy.asnumpy(base) - cupy.asnumpy(row)
    )


def test_negative_strides_are_read_in_place() -> None:
    # CuPy releases before the fix of cupy/cupy#10172 export negative strides wrongly, so the
    # view is described by a capsule of ctensor's own: base[::-2, 5:] as element strides.
    base = cupy.random.standard_normal((64, 96)).astype(cupy.float32)
    view = _capsule(base.data.ptr, (2, 0), (32, 91), "float32", (-192, 1), (63 * 96 + 5) * 4, base)
    out = cupy.empty((32, 91), dtype=cupy.float32)  # a raw capsule gets no allocated result
    ctensor.ops.negative(view, out=out)
    np.testing.assert_array_equal(cupy.asnumpy(out), -cupy.asnumpy(base)[::-2, 5:])


def test_float16_and_integer_semantics_match_numpy() -> None:
    host = np.linspace(-70000, 70000, 1001).astype(np.float64)
    got = ctensor.ops.astype(cupy.asarray(host), dtype="float16")
    np.testing.assert_array_equal(cupy.asnumpy(got), host.astype(np.float16))
    a = np.array([7, -7, 7, -7, np.iinfo(np.int32).min], np.int32)
    b = np.array([2, 2, -2, -2, -1], np.int32)
    for op, ref in [("floor_divide", np.floor_divide), ("remainder", np.remainder)]:
        got = getattr(ctensor.ops, op)(cupy.asarray(a), cupy.asarray(b))
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(cupy.asnumpy(got), ref(a, b))


def test_topk_smallest_and_argpartition_match_the_cpu() -> None:
    x = cupy.asarray(np.random.default_rng(0).standard_normal((7, 33)).astype(np.float32))
    x[2, 5] = cupy.nan
    host = cupy.asnumpy(x)
    for largest in (True, False):
        values, indices = ctensor.ops.topk(x, k=5, axis=1, largest=largest)
        want_values, want_indices = ctensor.ops.topk(host, k=5, axis=1, largest=largest)
        np.testing.assert_array_equal(cupy.asnumpy(indices), want_indices)
        np.testing.assert_array_equal(cupy.asnumpy(values), want_values)
    got = ctensor.ops.argpartition(x, kth=[3, -1], axis=1)
    np.testing.assert_array_equal(
        cupy.asnumpy(got), ctensor.ops.argpartition(host, kth=[3, -1], axis=1)
    )


def test_vector_norm_integer_max_pool_and_wide_padding_match_the_cpu() -> None:
    host = np.random.default_rng(1).standard_normal((4, 5, 6))
    x = cupy.asarray(host)
    for ord in (2.0, 1.0, 0.0, float("inf"), float("-inf"), 3.0, 0.5):
        got = ctensor.ops.vector_norm(x, axis=1, ord=ord)
        want = ctensor.ops.vector_norm(host, axis=1, ord=ord)
        np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-13)
        g = np.ones_like(want)
        gx = ctensor.ops.vector_norm_backward(cupy.asarray(g), x, got, axis=1, ord=ord)
        np.testing.assert_allclose(
            cupy.asnumpy(gx), ctensor.ops.vector_norm_backward(g, host, want, axis=1, ord=ord)
        )
    ints = (host * 50).astype(np.int32)[None]
    for dtype in (np.int32, np.int64):
        attrs = {"kernel_size": 2, "stride": 3, "padding": 3}
        got = ctensor.ops.max_pool2d(cupy.asarray(ints.astype(dtype)), **attrs)
        want = ctensor.ops.max_pool2d(ints.astype(dtype), **attrs)
        np.testing.assert_array_equal(cupy.asnumpy(got), want)
    avg = {"kernel_size": 2, "stride": 2, "padding": 2, "count_include_pad": False}
    np.testing.assert_allclose(
        cupy.asnumpy(ctensor.ops.avg_pool2d(x[None], **avg)),
        ctensor.ops.avg_pool2d(host[None], **avg),
    )
    for name in ("hardsigmoid", "mish"):
        np.testing.assert_allclose(
            cupy.asnumpy(getattr(ctensor.ops, name)(x)), getattr(ctensor.ops, name)(host)
        )


def test_kernels_run_on_the_callers_stream() -> None:
    # A long CuPy kernel writes x on a non-blocking stream, then ctensor reads x on that same
    # stream without waiting: right only if ctensor's kernel is ordered after CuPy's.
    stream = cupy.cuda.Stream(non_blocking=True)
    x = cupy.zeros(1 << 26, dtype=cupy.float32)
    with stream:
        for _ in range(20):
            x += 1
        y = ctensor.ops.multiply(x, x)
    stream.synchronize()
    assert float(y.min()) == 400.0 and float(y.max()) == 400.0


def test_host_memory_claimed_as_cuda_is_refused_unless_the_gpu_reads_it() -> None:
    host = np.arange(16, dtype=np.float32)
    out = cupy.zeros(16, dtype=cupy.float32)
    fake = _capsule(host.ctypes.data, (2, 0), (16,), "float32", None, 0, host)
    pageable_memory_access = 88  # cudaDevAttrPageableMemoryAccess
    if cupy.cuda.runtime.deviceGetAttribute(pageable_memory_access, 0):
        # HMM/ATS: the device reads pageable host memory, so the kernel may.
        ctensor.ops.negative(fake, out=out)
        np.testing.assert_array_equal(cupy.asnumpy(out), -host)
    else:
        with pytest.raises(ctensor.InvalidArgumentError, match="not CUDA"):
            ctensor.ops.negative(fake, out=out)
        assert not cupy.asnumpy(out).any()


def test_unknown_device_index_is_refused() -> None:
    x = cupy.arange(4, dtype=cupy.float32)
    source = _capsule(x.data.ptr, (2, 7), (4,), "float32", None, 0, x)
    target = _capsule(x.data.ptr, (2, 7), (4,), "float32", None, 0, x)
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.negative(source, out=target)


def test_cpu_and_cuda_inputs_together_are_refused() -> None:
    with pytest.raises(ctensor.DeviceMismatchError):
        ctensor.ops.add(cupy.ones(3, cupy.float32), np.ones(3, np.float32))


def test_integer_pow_error_leaves_the_output_untouched() -> None:
    out = cupy.full(3, 7, dtype=cupy.int64)
    with pytest.raises(ctensor.InvalidArgumentError, match="negative integer powers"):
        ctensor.ops.pow(cupy.array([2, 3, 4]), cupy.array([1, -1, 2]), out=out)
    assert cupy.asnumpy(out).tolist() == [7, 7, 7]


def test_losses_match_torch_and_check_class_indices() -> None:
    """cross_entropy (ignore_index, label smoothing, weights) and its backward on torch CUDA
    tensors against torch; an out-of-range class index is an error that writes nothing."""
    x = torch.randn(64, 10, device="cuda", dtype=torch.float64)
    y = torch.randint(0, 10, (64,), device="cuda")
    y[::5] = -100
    w = torch.rand(10, device="cuda", dtype=torch.float64) + 0.5
    got = ctensor.ops.cross_entropy(x, y, w, ignore_index=-100, label_smoothing=0.1)
    want = torch.nn.functional.cross_entropy(x, y, w, label_smoothing=0.1)
    torch.testing.assert_close(got, want)
    xg = x.clone().requires_grad_()
    torch.nn.functional.cross_entropy(xg, y, w, label_smoothing=0.1).backward()
    one = torch.ones((), device="cuda", dtype=torch.float64)
    grad, _ = ctensor.ops.cross_entropy_backward(
        one, x, y, w, ignore_index=-100, label_smoothing=0.1
    )
    torch.testing.assert_close(grad, xg.grad)
    t = torch.rand(64, 10, device="cuda", dtype=torch.float64)
    got = ctensor.ops.binary_cross_entropy_with_logits(x, t, reduction="none")
    torch.testing.assert_close(
        got, torch.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none")
    )
    out = torch.full((64,), 7.0, device="cuda", dtype=torch.float64)
    y[3] = 10
    with pytest.raises(ctensor.InvalidArgumentError, match="out of range"):
        ctensor.ops.cross_entropy(x, y, reduction="none", ignore_index=-100, out=out)
    assert bool((out == 7.0).all())


def test_more_than_2_to_the_31_elements() -> None:
    n = (1 << 31) + 5
    x = cupy.zeros(n, dtype=cupy.bool_)
    x[-1] = True
    y = ctensor.ops.logical_not(x)
    assert int(cupy.count_nonzero(y)) == n - 1 and not bool(y[-1]) and bool(y[-2])


def test_conformance_suite_passes_on_cuda(tmp_path) -> None:  # noqa: ANN001
    report = tmp_path / "cuda.json"
    command = [
        sys.executable,
        "-m",
        "ctensor.conformance",
        "--backend",
        "cuda",
        "--device",
        "cuda:0",
        "--quick",
        "--report",
        str(report),
    ]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as expired:
        # A standalone run takes seconds on a GPU: show where this one stopped.
        shown = str(expired.stdout or "")[-3000:]
        pytest.fail(f"the conformance run did not finish in 300 s; its output ended with:\n{shown}")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    results = json.loads(report.read_text())
    assert not results["failed"]
    (cuda,) = results["runs"]
    assert cuda["backend"] == "cuda" and cuda["device"] == "cuda:0"
    # The same (op, dtype) cells as the OpenCL backend pass (460 on PoCL in CI).
    assert cuda["summary"]["FAIL"] == 0 and cuda["summary"]["PASS"] >= 460, cuda["summary"]


def test_registers_the_opencl_backends_kernel_set() -> None:
    # docs/operators.md shows the devices CI has; it promises that cuda registers the same
    # (op, signature) set as opencl, plus conv_transpose2d and its input cotangent (cuDNN's
    # backward-data and forward convolutions), which opencl lacks.
    opencl = next(b for b in ctensor.backends() if b.name == "opencl")
    assert opencl.state == "loaded", f"this check compares with the opencl plugin: {opencl}"
    floats = {(dtype,) * 4 for dtype in ("float16", "float32", "float64")}
    cuda_only = {"conv_transpose2d": floats, "conv_transpose2d_backward_input": floats}
    for name in ctensor.list_ops():
        signatures = ctensor.op_info(name)["signatures"]
        cuda = {tuple(s) for s in signatures.get("cuda", [])}
        reference = {tuple(s) for s in signatures.get("opencl", [])}
        if name in cuda_only and not reference:
            reference = cuda_only[name]
        assert cuda == reference, f"{name}: cuda {sorted(cuda)} != opencl {sorted(reference)}"


def test_random_ops_give_the_cpu_bits() -> None:
    # kernels/common/philox.h compiled by nvcc (intrinsics, never contracted) gives the CPU's
    # bits: every random op and dtype, and arange, through device= and through torch outputs.
    def bits(a):  # noqa: ANN001, ANN202
        a = np.asarray(a.cpu() if isinstance(a, torch.Tensor) else a)
        return (
            a if a.dtype == bool else a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])
        )

    for dtype in ["float16", "float32", "float64"]:
        for op, extra in [
            ("random_uniform", {"low": -2.0, "high": 3.0}),
            ("random_normal", {"std": 2.0}),
        ]:
            kwargs = {"shape": (33, 257), "dtype": dtype, "seed": -7, "offset": 5, **extra}
            cpu = getattr(ctensor.ops, op)(**kwargs)
            np.testing.assert_array_equal(
                bits(getattr(ctensor.ops, op)(**kwargs, device="cuda:0")), bits(cpu)
            )
            out = torch.empty((257, 33), dtype=getattr(torch, dtype), device="cuda").T
            getattr(ctensor.ops, op)(**kwargs, out=out)
            np.testing.assert_array_equal(bits(out), bits(cpu))
        x = np.random.default_rng(1).standard_normal((64, 65)).astype(dtype)
        out, mask = ctensor.ops.dropout(torch.from_numpy(x).cuda(), p=0.3, seed=4)
        want_out, want_mask = ctensor.ops.dropout(x, p=0.3, seed=4)
        np.testing.assert_array_equal(bits(out), bits(want_out))
        np.testing.assert_array_equal(bits(mask), bits(want_mask))
        probs = torch.rand(64, 65, device="cuda", dtype=getattr(torch, dtype))
        got = ctensor.ops.random_bernoulli(probs, seed=2)
        np.testing.assert_array_equal(
            bits(got), bits(ctensor.ops.random_bernoulli(probs.cpu().numpy(), seed=2))
        )
        arange = {"start": 0.5, "stop": 1000.0, "step": 0.3, "dtype": dtype}
        np.testing.assert_array_equal(
            bits(ctensor.ops.arange(**arange, device="cuda:0")), bits(ctensor.ops.arange(**arange))
        )


def _attention_case(rng, dtype, lq, lk, hq, hkv, e, ev, mask_kind):
    q = torch.from_numpy(rng.standard_normal((2, hq, lq, e))).to(dtype)
    k = torch.from_numpy(rng.standard_normal((2, hkv, lk, e))).to(dtype)
    v = torch.from_numpy(rng.standard_normal((2, hkv, lk, ev))).to(dtype)
    mask = None
    if mask_kind == "bool":
        mask = torch.from_numpy(rng.random((hq, lq, lk)) > 0.3)
    elif mask_kind == "float":
        mask = torch.from_numpy(rng.standard_normal((1, lk))).to(dtype)
    return q, k, v, mask


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize(
    "shape, attrs, mask_kind",
    [
        ((37, 70, 4, 2, 40, 24), {"enable_gqa": True, "is_causal": True}, None),
        ((70, 37, 3, 3, 8, 8), {"is_causal": True}, None),
        ((50, 90, 2, 2, 64, 64), {"scale": 0.3}, "bool"),
        ((33, 65, 2, 1, 100, 80), {"enable_gqa": True}, "float"),
        ((40, 60, 2, 2, 16, 16), {"dropout_p": 0.3, "seed": 7, "offset": 3}, None),
    ],
)
def test_attention_matches_the_cpu(dtype, shape, attrs, mask_kind) -> None:
    """scaled_dot_product_attention and its backward (kernels/cuda/cu_attention.cu) against the
    CPU kernel: several query and key tiles, GQA, causal with L_q != L_k, masks, dropout (the
    same Philox mask), every register capacity."""
    rng = np.random.default_rng(0)
    q, k, v, mask = _attention_case(rng, dtype, *shape, mask_kind)
    out, lse = ctensor.ops.scaled_dot_product_attention(q, k, v, mask, **attrs)
    cuda = [t.cuda() if t is not None else None for t in (q, k, v, mask)]
    dout, dlse = ctensor.ops.scaled_dot_product_attention(*cuda, **attrs)
    assert dout.device.type == "cuda" and dlse.dtype == lse.dtype
    tol = {torch.float16: 2e-3, torch.float32: 2e-5, torch.float64: 1e-12}[dtype]
    torch.testing.assert_close(dout.cpu(), out, rtol=tol, atol=tol)
    torch.testing.assert_close(dlse.cpu(), lse, rtol=tol, atol=tol)
    g = torch.from_numpy(rng.standard_normal(tuple(out.shape))).to(dtype)
    cpu = ctensor.ops.scaled_dot_product_attention_backward(g, q, k, v, mask, out, lse, **attrs)
    dev = ctensor.ops.scaled_dot_product_attention_backward(
        g.cuda(), *cuda[:3], cuda[3], out.cuda(), lse.cuda(), **attrs
    )
    for got, want in zip(dev, cpu, strict=True):
        scale = max(1.0, float(want.abs().max()))
        torch.testing.assert_close(got.cpu(), want, rtol=10 * tol, atol=10 * tol * scale)


def test_attention_head_size_limit_is_a_clear_error() -> None:
    q = torch.zeros((1, 1, 4, 300), device="cuda")
    with pytest.raises(ctensor.InvalidArgumentError, match="head sizes up to 256"):
        ctensor.ops.scaled_dot_product_attention(q, q, q)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_embedding_matches_the_cpu(dtype, interleaved) -> None:
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((2, 3, 50, 12))).to(dtype)
    angles = np.arange(64)[:, None] * 10000.0 ** (-np.arange(5) / 5)
    cos, sin = (torch.from_numpy(f(angles)).to(dtype) for f in (np.cos, np.sin))
    pos = torch.from_numpy(rng.integers(0, 64, size=(2, 1, 50)))
    for args in [(x, cos, sin), (x.transpose(-1, -2).contiguous().mT, cos, sin, pos)]:
        want = ctensor.ops.rotary_embedding(*args, interleaved=interleaved)
        got = ctensor.ops.rotary_embedding(*[a.cuda() for a in args], interleaved=interleaved)
        torch.testing.assert_close(got.cpu(), want, rtol=2e-3, atol=2e-3)
    with pytest.raises(ctensor.InvalidArgumentError, match="is out of range"):
        ctensor.ops.rotary_embedding(x.cuda(), cos.cuda(), sin.cuda(), (pos + 64).cuda())


# Dense element-wise kernels (kernels/cuda/cu_elementwise_fast.cuh): 16-byte vectors where every
# operand is aligned, element by element otherwise, the strided kernel for other layouts. Views
# starting at elements 1, 2, 3 take the unaligned path, odd lengths the tail after the vectors.
_DENSE_DTYPES = ["bool", "int32", "int64", "float16", "float32", "float64"]
_LENGTHS = [1, 7, 33, 4099]


def _values(rng, dtype: str, n: int) -> np.ndarray:
    if dtype == "bool":
        return rng.random(n) > 0.5
    if dtype.startswith("int"):
        return rng.integers(-1000, 1000, n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


def _view(host: np.ndarray, start: int) -> cupy.ndarray:
    """A CuPy view of `host`'s values starting at element `start` of its buffer."""
    buffer = cupy.empty(host.size + 4, dtype=host.dtype)
    buffer[start : start + host.size] = cupy.asarray(host)
    return buffer[start : start + host.size]


def _strided(host: np.ndarray) -> cupy.ndarray:
    """The same values as a view with a stride of two elements (the strided kernel)."""
    buffer = cupy.empty(2 * host.size, dtype=host.dtype)
    buffer[::2] = cupy.asarray(host)
    return buffer[::2]


@pytest.mark.parametrize("dtype", _DENSE_DTYPES)
def test_dense_elementwise_at_every_alignment_and_length(dtype: str) -> None:
    rng = np.random.default_rng(3)
    for n in _LENGTHS:
        a, b = _values(rng, dtype, n), _values(rng, dtype, n)
        cond = rng.random(n) > 0.3
        for start in range(4):
            x, y, c = _view(a, start), _view(b, (start + 1) % 4), _view(cond, start)
            if dtype == "bool":
                want = np.logical_xor(a, b)
                got = ctensor.ops.logical_xor(x, y)
            else:
                want = a + b
                got = ctensor.ops.add(x, y)
            np.testing.assert_array_equal(cupy.asnumpy(got), want)
            np.testing.assert_array_equal(cupy.asnumpy(ctensor.ops.less(x, y)), a < b)
            np.testing.assert_array_equal(
                cupy.asnumpy(ctensor.ops.where(c, x, y)), np.where(cond, a, b)
            )
            for target in ("float16", "float64", "int32"):
                got = ctensor.ops.astype(x, dtype=target)
                np.testing.assert_array_equal(
                    cupy.asnumpy(got), ctensor.ops.astype(a, dtype=target)
                )
            # A single value broadcast: the dense kernel reads it once per vector.
            scalar = cupy.asarray(b[:1].reshape(()))
            got = ctensor.ops.maximum(x, scalar)
            np.testing.assert_array_equal(cupy.asnumpy(got), np.maximum(a, b[0]))
            out = _view(np.zeros(n, dtype=a.dtype), (start + 2) % 4)
            ctensor.ops.minimum(x, y, out=out)
            np.testing.assert_array_equal(cupy.asnumpy(out), np.minimum(a, b))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dense_elementwise_math_equals_the_strided_kernel(dtype: str) -> None:
    # The same formula and conversions in both kernels: bit for bit, and within each dtype's
    # tolerance of float64 NumPy.
    rng = np.random.default_rng(4)
    host = rng.standard_normal(4099).astype(dtype)
    tol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-14}[dtype]
    for op, ref in [("exp", np.exp), ("tanh", np.tanh), ("sigmoid", None), ("gelu", None)]:
        for start in (0, 1):
            dense = cupy.asnumpy(getattr(ctensor.ops, op)(_view(host, start)))
            strided = cupy.asnumpy(getattr(ctensor.ops, op)(_strided(host)))
            np.testing.assert_array_equal(dense, strided)
            if ref is not None:
                want = ref(host.astype(np.float64))
                np.testing.assert_allclose(dense.astype(np.float64), want, rtol=tol, atol=tol)
    wide = host.astype(np.float64)
    got = ctensor.ops.pow(_view(host, 3), _view(np.full(4099, 2, dtype), 1))
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64), wide**2, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dense_elementwise_backward_equals_the_strided_kernel(dtype: str) -> None:
    # The backward ops take the same dense kernel: bit for bit the strided kernel's results, and
    # the CPU backend's within each dtype's tolerance.
    rng = np.random.default_rng(9)
    tol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-14}[dtype]

    def outputs(result):  # noqa: ANN001, ANN202
        return result if isinstance(result, tuple) else (result,)

    for n in (7, 4099):
        g, x, y = (_values(rng, dtype, n) for _ in range(3))
        cond = rng.random(n) > 0.5
        cases = [
            ("relu_backward", (g, x)),
            ("tanh_backward", (g, x)),
            ("sigmoid_backward", (g, x)),
            ("maximum_backward", (g, x, y)),
            ("where_backward", (g, cond)),
        ]
        for op, args in cases:
            cpu = outputs(getattr(ctensor.ops, op)(*args))
            strided = outputs(getattr(ctensor.ops, op)(*[_strided(a) for a in args]))
            for start in range(4):
                views = [_view(a, (start + i) % 4) for i, a in enumerate(args)]
                dense = outputs(getattr(ctensor.ops, op)(*views))
                for d, s, c in zip(dense, strided, cpu, strict=True):
                    np.testing.assert_array_equal(cupy.asnumpy(d), cupy.asnumpy(s), err_msg=op)
                    np.testing.assert_allclose(
                        cupy.asnumpy(d).astype(np.float64),
                        c.astype(np.float64),
                        rtol=tol,
                        atol=tol,
                        err_msg=op,
                    )


def test_row_and_column_broadcasts_take_whole_vectors() -> None:
    # A row broadcast along rows of a whole number of vectors (the dense kernel's two-dim form),
    # a column broadcast (one value per row), and rows that do not divide into vectors (the
    # strided kernel).
    rng = np.random.default_rng(5)
    for dtype, cols in [("float32", 64), ("float16", 48), ("float64", 10), ("float32", 37)]:
        m = rng.standard_normal((33, cols)).astype(dtype)
        row = rng.standard_normal(cols).astype(dtype)
        col = rng.standard_normal((33, 1)).astype(dtype)
        for start in (0, 2):
            dm = _view(m.ravel(), start).reshape(33, cols)
            got = ctensor.ops.add(dm, cupy.asarray(row))
            np.testing.assert_array_equal(cupy.asnumpy(got), m + row)
            got = ctensor.ops.multiply(cupy.asarray(col), dm)
            np.testing.assert_array_equal(cupy.asnumpy(got), col * m)
            got = ctensor.ops.subtract(dm[:, 1:], cupy.asarray(row[1:]))
            np.testing.assert_array_equal(cupy.asnumpy(got), m[:, 1:] - row[1:])


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "float64"])
def test_dense_reductions_at_every_alignment_are_reproducible(dtype: str) -> None:
    # Full and inner-lane reductions of contiguous views: vector loads where aligned, the same
    # chunks element by element where not, so the bits depend on neither the run nor the address.
    rng = np.random.default_rng(6)
    tol = {"int32": 0, "float16": 1e-3, "float32": 1e-6, "float64": 1e-13}[dtype]
    for n in [1, 7, 4099, 1 << 20 | 5]:
        host = _values(rng, dtype, n)
        wide = host.astype(np.float64)
        first = None
        for start in range(4):
            x = _view(host, start)
            got = cupy.asnumpy(ctensor.ops.sum(x))
            scale = np.abs(wide).sum() + 1
            np.testing.assert_allclose(float(got), wide.sum(), rtol=0, atol=tol * scale)
            assert cupy.asnumpy(ctensor.ops.sum(x)).tobytes() == got.tobytes()
            if first is None:
                first = got
            assert got.tobytes() == first.tobytes(), "the sum depends on the address"
            assert float(cupy.asnumpy(ctensor.ops.max(x))) == wide.max()
            assert int(cupy.asnumpy(ctensor.ops.argmin(x))) == int(np.argmin(host))
            mean = float(cupy.asnumpy(ctensor.ops.mean(x)))
            np.testing.assert_allclose(mean, wide.mean(), rtol=0, atol=tol * scale / n + 1e-12)
    m = _values(rng, dtype, 37 * 4099).reshape(37, 4099)
    for start in range(4):
        x = _view(m.ravel(), start).reshape(37, 4099)
        got = cupy.asnumpy(ctensor.ops.sum(x, axis=1)).astype(np.float64)
        want = m.astype(np.float64).sum(axis=1)
        scale = np.abs(m.astype(np.float64)).sum(axis=1) + 1
        assert np.all(np.abs(got - want) <= tol * scale)
        np.testing.assert_array_equal(cupy.asnumpy(ctensor.ops.argmax(x, axis=1)), m.argmax(axis=1))


def _softmax_reference(x: np.ndarray, log: bool) -> np.ndarray:
    shifted = x - x.max(axis=-1, keepdims=True)
    total = np.exp(shifted).sum(axis=-1, keepdims=True)
    return shifted - np.log(total) if log else np.exp(shifted) / total


# Row lengths around the kernels' limits: a warp with 8 or 32 register slots (256, 1024), a
# 128-thread block of 64 slots (8192, many rows), a 1024-thread block of 16 (16384), then the
# three-pass kernels; few rows, and more rows than twice the multiprocessors of current GPUs.
_ROWS = [
    (3, 1),
    (5, 31),
    (300, 256),
    (7, 257),
    (3, 1024),
    (300, 1025),
    (300, 8192),
    (3, 8193),
    (300, 8193),
    (2, 16384),
    (2, 16385),
    (1, 40000),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_softmax_rows_around_the_register_limits(dtype: str) -> None:
    rng = np.random.default_rng(7)
    tol = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}[dtype]
    for rows, cols in _ROWS:
        host = (3 * rng.standard_normal((rows, cols))).astype(dtype)
        wide = host.astype(np.float64)
        x = _view(host.ravel(), 1).reshape(rows, cols)
        for log, op in [(False, ctensor.ops.softmax), (True, ctensor.ops.log_softmax)]:
            got = cupy.asnumpy(op(x, axis=-1)).astype(np.float64)
            want = _softmax_reference(wide, log)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{rows}x{cols}")
    # An output strided along the axis takes the three-pass kernels.
    for cols in (300, 3000):
        host = rng.standard_normal((5, cols)).astype(dtype)
        out = cupy.empty((5, 2 * cols), dtype=dtype)[:, ::2]
        ctensor.ops.log_softmax(cupy.asarray(host), axis=-1, out=out)
        want = _softmax_reference(host.astype(np.float64), True)
        np.testing.assert_allclose(cupy.asnumpy(out).astype(np.float64), want, rtol=tol, atol=tol)
    host = rng.standard_normal((4, 300)).astype(dtype)
    host[1, 7] = np.nan
    host[2, :] = -np.inf
    got = cupy.asnumpy(ctensor.ops.softmax(cupy.asarray(host), axis=-1))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ctensor.ops.softmax(host, axis=-1)))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_layer_norm_rows_around_the_register_limits(dtype: str) -> None:
    rng = np.random.default_rng(8)
    tol = {"float16": 4e-3, "float32": 2e-5, "float64": 1e-11}[dtype]
    for rows, cols in _ROWS:
        host = (2 + 3 * rng.standard_normal((rows, cols))).astype(dtype)
        weight = rng.standard_normal(cols).astype(dtype)
        bias = rng.standard_normal(cols).astype(dtype)
        wide = host.astype(np.float64)
        mean = wide.mean(axis=-1, keepdims=True)
        normed = (wide - mean) / np.sqrt(((wide - mean) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
        x = _view(host.ravel(), 3).reshape(rows, cols)
        got = ctensor.ops.layer_norm(x, normalized_shape=[cols], eps=1e-5)
        np.testing.assert_allclose(
            cupy.asnumpy(got).astype(np.float64),
            normed,
            rtol=tol,
            atol=tol,
            err_msg=f"{rows}x{cols}",
        )
        args = (cupy.asarray(weight), cupy.asarray(bias))
        got = ctensor.ops.layer_norm(x, *args, normalized_shape=[cols], eps=1e-5)
        want = normed * weight.astype(np.float64) + bias.astype(np.float64)
        scale = np.abs(normed * weight.astype(np.float64)) + 1
        assert np.all(np.abs(cupy.asnumpy(got).astype(np.float64) - want) <= tol * scale)
    # Strided rows take the three-pass kernel; the same statistics.
    host = rng.standard_normal((5, 600)).astype(dtype)
    x = cupy.asarray(host)[:, ::2]
    wide = host[:, ::2].astype(np.float64)
    mean = wide.mean(axis=-1, keepdims=True)
    want = (wide - mean) / np.sqrt(((wide - mean) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    got = cupy.asnumpy(ctensor.ops.layer_norm(x, normalized_shape=[300], eps=1e-5))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


# ----- convolutions through cuDNN (kernels/cuda/cu_dnn.cu) and the plugin's own kernels -----

_EPS = {torch.float16: 2.0**-10, torch.float32: 2.0**-23, torch.float64: 2.0**-52}


def _within_sum_bound(got, want, magnitude, terms, dtype) -> None:  # noqa: ANN001
    """`got` against the float64 reference `want` of a sum of `terms` products per element:
    accumulated in float32 (float64 for float64), then rounded to the output's dtype (twice with
    a bias added after). `magnitude` is the same sum over absolute values. TF32 (10 mantissa
    bits) would exceed it for float32."""
    acc = _EPS[torch.float64] if dtype == torch.float64 else _EPS[torch.float32]
    bound = (2 * _EPS[dtype] + 2 * terms * acc) * magnitude
    err = np.abs(got.detach().cpu().double().numpy() - want)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), (
        f"{dtype}: error {err[worst]:.3g} > bound {bound[worst]:.3g} at {worst} of {want.shape}"
    )


def _f64(t) -> np.ndarray:  # noqa: ANN001
    return t.detach().cpu().double().numpy()


def _input_views(rng, shape, dtype) -> list:  # noqa: ANN001
    """A sliced (gapped) view and a channels-last copy of one (N, C, H, W) array, on the GPU."""
    n, c, h, w = shape
    base = torch.from_numpy(rng.standard_normal((n, c + 1, h + 3, w + 4))).to(dtype).cuda()
    sliced = base[:, 1:, 2 : 2 + h, 1 : 1 + w]
    return [sliced, sliced.contiguous(memory_format=torch.channels_last)]


_CONV_CASES = [
    # (input shape, weight shape, stride, padding, dilation, groups)
    ((2, 8, 17, 19), (12, 4, 3, 3), (2, 1), (1, 2), (2, 1), 2),
    ((3, 6, 12, 10), (6, 1, 5, 3), (1, 2), (2, 1), (1, 1), 6),
    ((2, 16, 9, 9), (32, 16, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((1, 3, 20, 20), (40, 3, 4, 4), (3, 3), (2, 0), (1, 2), 1),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("case", _CONV_CASES)
def test_conv2d_and_its_backward_match_float64_references(dtype, case) -> None:
    """conv2d, conv2d_backward_input and conv2d_backward_weight on strided and channels-last
    views, with groups, dilation and a bias; a packed weight goes through cuDNN, a permuted one
    through the plugin's own kernels: both within the float32-accumulation bound."""
    x_shape, w_shape, stride, padding, dilation, groups = case
    geometry = (stride, padding, dilation, groups)
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    rng = np.random.default_rng(3)
    o, cg, kh, kw = w_shape
    weight = torch.from_numpy(rng.standard_normal(w_shape)).to(dtype).cuda()
    permuted = weight.permute(2, 3, 0, 1).contiguous().permute(2, 3, 0, 1)
    bias = torch.from_numpy(rng.standard_normal(o)).to(dtype).cuda()
    for x in _input_views(rng, x_shape, dtype):
        for w in [weight, permuted]:
            got = ctensor.ops.conv2d(x, w, bias, **attrs)
            assert got.shape[:2] == (x_shape[0], o)
            want = conv2d(_f64(x), _f64(w), _f64(bias), *geometry)
            magnitude = conv2d(np.abs(_f64(x)), np.abs(_f64(w)), np.abs(_f64(bias)), *geometry)
            _within_sum_bound(got, want, magnitude, cg * kh * kw + 1, dtype)
            g = torch.from_numpy(rng.standard_normal(tuple(got.shape))).to(dtype).cuda()
            g = g.contiguous(memory_format=torch.channels_last)
            got = ctensor.ops.conv2d_backward_input(g, x, w, **attrs)
            want = conv2d_grad_input(_f64(g), x_shape, _f64(w), *geometry)
            magnitude = conv2d_grad_input(np.abs(_f64(g)), x_shape, np.abs(_f64(w)), *geometry)
            _within_sum_bound(got, want, magnitude, (o // groups) * kh * kw, dtype)
            got = ctensor.ops.conv2d_backward_weight(g, x, w, **attrs)
            want = conv2d_grad_weight(_f64(g), _f64(x), w_shape, *geometry)
            magnitude = conv2d_grad_weight(np.abs(_f64(g)), np.abs(_f64(x)), w_shape, *geometry)
            terms = x_shape[0] * g.shape[2] * g.shape[3]
            _within_sum_bound(got, want, magnitude, terms, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize(
    "stride, padding, output_padding, dilation",
    [((2, 3), (1, 0), (1, 2), (1, 1)), ((1, 1), (1, 1), (1, 1), (2, 2))],
)
def test_conv_transpose2d_and_its_input_cotangent_match_float64_references(
    dtype, stride, padding, output_padding, dilation
) -> None:
    """conv_transpose2d (cuDNN's backward-data; an output_padding of a stride or more, which
    cuDNN cannot express, runs the plugin's kernel) and conv_transpose2d_backward_input."""
    groups = 2
    rng = np.random.default_rng(5)
    weight = torch.from_numpy(rng.standard_normal((6, 4, 3, 3))).to(dtype).cuda()
    bias = torch.from_numpy(rng.standard_normal(8)).to(dtype).cuda()
    attrs = {
        "stride": stride,
        "padding": padding,
        "output_padding": output_padding,
        "groups": groups,
        "dilation": dilation,
    }
    geometry = (stride, padding, dilation, groups)
    for x in _input_views(rng, (2, 6, 7, 8), dtype):
        got = ctensor.ops.conv_transpose2d(x, weight, bias, **attrs)
        size = [
            (e - 1) * s - 2 * p + d * 2 + op + 1
            for e, s, p, d, op in zip(
                (7, 8), stride, padding, dilation, output_padding, strict=True
            )
        ]
        shape = (2, 8, *size)
        assert tuple(got.shape) == shape
        want = conv2d_grad_input(_f64(x), shape, _f64(weight), *geometry)
        want = want + _f64(bias).reshape(1, -1, 1, 1)
        magnitude = conv2d_grad_input(np.abs(_f64(x)), shape, np.abs(_f64(weight)), *geometry)
        magnitude = magnitude + np.abs(_f64(bias)).reshape(1, -1, 1, 1)
        _within_sum_bound(got, want, magnitude, 3 * 9 + 1, dtype)
        g = torch.from_numpy(rng.standard_normal(shape)).to(dtype).cuda()
        got = ctensor.ops.conv_transpose2d_backward_input(g, x, weight, **attrs)
        want = conv2d(_f64(g), _f64(weight), None, *geometry)[:, :, :7, :8]
        magnitude = conv2d(np.abs(_f64(g)), np.abs(_f64(weight)), None, *geometry)[:, :, :7, :8]
        _within_sum_bound(got, want, magnitude, 4 * 9, dtype)


def _workspace(op: str, tensors: list) -> tuple[int, int]:
    """(bytes, alignment) that ct_op_workspace asks for these CUDA tensors (None: an absent
    optional input), the outputs described by infer."""
    keep, views = [], []
    for t in tensors:
        if t is None:
            views.append(ffi.NULL)
            continue
        view = ffi.new("ct_tensor*")
        cdt.set_ct_dtype(view.dtype, str(t.dtype).removeprefix("torch."))
        view.device.device_type = 2
        view.device.device_id = t.device.index
        view.data = ffi.cast("void*", t.data_ptr())
        view.ndim = t.dim()
        shape, strides = ffi.new("int64_t[]", list(t.shape)), ffi.new("int64_t[]", t.stride())
        view.shape, view.strides = shape, strides
        keep += [view, shape, strides]
        views.append(view)
    handle = ffi.new("const ct_op**")
    assert lib.ct_op_find(op.encode(), handle) == 0
    size, alignment = ffi.new("uint64_t*"), ffi.new("uint64_t*")
    array = ffi.new("ct_tensor*[]", views)
    status = lib.ct_op_workspace(
        handle[0], array, len(views), ffi.NULL, 0, ffi.NULL, 0, size, alignment
    )
    assert status == 0, ffi.string(lib.ct_last_error()).decode()
    return int(size[0]), int(alignment[0])


def test_convolution_workspace_is_cudnns_and_its_kernels_ask_none() -> None:
    """The workspace functions report cuDNN's chosen algorithm's workspace (256-byte aligned)
    for what cuDNN runs, and nothing for what the plugin's kernels run (a permuted weight)."""
    x = torch.randn(8, 64, 56, 56, device="cuda")
    w = torch.randn(64, 64, 3, 3, device="cuda")
    g = torch.randn(8, 64, 54, 54, device="cuda")
    for op, tensors in [
        ("conv2d", [x, w, None]),
        ("conv2d_backward_input", [g, x, w]),
        ("conv2d_backward_weight", [g, x, w]),
        ("conv_transpose2d", [g, w, None]),
    ]:
        size, alignment = _workspace(op, tensors)
        assert alignment == 256 and 0 <= size < 2**31, (op, size, alignment)
    permuted = w.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    assert _workspace("conv2d", [x, permuted, None]) == (0, 1)
    torch.testing.assert_close(
        ctensor.ops.conv2d(x, permuted, padding=1),
        ctensor.ops.conv2d(x, w, padding=1),
        rtol=1e-5,
        atol=1e-4,
    )
