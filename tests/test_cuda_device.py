"""The CUDA backend on a real GPU, through CuPy and PyTorch buffers: zero-copy in and out
(pointer identity), strided views read in place, results against NumPy, the caller's stream,
clear errors for memory that is not the device's, 64-bit indexing, and the whole conformance
suite. Collected only where ctensor's cuda plugin has a device (tests/conftest.py)."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cupy
import numpy as np
import pytest
import torch
from graph_cases import graph_cases

import ctensor
from ctensor import ffi, lib
from ctensor._call import call
from ctensor._device_array import _capsule
from ctensor._registry import get_spec
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


def _cuda_only_signatures() -> dict[str, set[tuple[str, ...]]]:
    """The kernels CUDA has beyond OpenCL's: the cumulative ops (cu_scan.cu), conv_transpose2d
    and its input cotangent (cuDNN's backward-data and forward convolutions, cu_conv_pool.cu),
    and linear (cuBLASLt's bias epilogue, cu_matmul.cu)."""
    scan = {(d, "int64") for d in ("bool", "int32", "int64")}
    scan |= {(d, d) for d in ("float16", "float32", "float64")}
    floats = ("float16", "float32", "float64")
    return {
        "cumulative_sum": scan,
        "cumulative_prod": scan,
        "cumulative_sum_backward": {(d,) * 3 for d in floats},
        "cumulative_prod_backward": {(d,) * 4 for d in floats},
        "conv_transpose2d": {(d,) * 4 for d in floats},
        "conv_transpose2d_backward_input": {(d,) * 4 for d in floats},
        "linear": {(d,) * 4 for d in floats},
    }


def _opencl_ops_on_the_operators_page() -> set[str]:
    """The ops whose devices column in docs/operators.md (generated where CI runs, with the
    opencl plugin loaded) names opencl."""
    page = Path(__file__).resolve().parents[1] / "docs" / "operators.md"
    ops = set()
    for line in page.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 2 and cells[1].startswith("`") and "opencl" in cells[-2].split(", "):
            ops.add(cells[1].strip("`"))
    assert ops, f"no opencl ops read from {page}"
    return ops


def test_registers_the_opencl_backends_kernel_set() -> None:
    # docs/operators.md shows the devices CI has; it promises that cuda registers the same
    # (op, signature) set as opencl, plus the ops _cuda_only_signatures lists. Without the opencl
    # plugin (a GPU machine without an OpenCL runtime) the ops are compared with the page's.
    extra = _cuda_only_signatures()
    opencl = next((b for b in ctensor.backends() if b.name == "opencl"), None)
    if opencl is None or opencl.state != "loaded":
        cuda_ops = {n for n in ctensor.list_ops() if "cuda" in ctensor.op_info(n)["devices"]}
        assert cuda_ops == _opencl_ops_on_the_operators_page() | set(extra)
        return
    for name in ctensor.list_ops():
        signatures = ctensor.op_info(name)["signatures"]
        cuda = {tuple(s) for s in signatures.get("cuda", [])}
        reference = {tuple(s) for s in signatures.get("opencl", [])} | extra.get(name, set())
        assert cuda == reference, f"{name}: cuda {sorted(cuda)} != {sorted(reference)}"


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


# --- streams as DLPack specifies them, zero copy with CuPy ---------------------------------------


def test_cupy_on_a_side_stream_is_read_and_written_in_place_on_that_stream() -> None:
    # ctensor runs on CuPy's current stream and asks CuPy's arrays for their capsules with it
    # (__dlpack__(stream=...)): CuPy's pending writes on that stream come first, nothing waits
    # on the host, and every buffer is used in place, out= included.
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        a = cupy.zeros(1 << 24, dtype=cupy.float32)
        for _ in range(10):
            a += 1
        out = cupy.empty_like(a)
        result = ctensor.ops.multiply(a, a, out=out)
        assert result is out and result.data.ptr == out.data.ptr
        fresh = ctensor.ops.add(a, a)
        assert isinstance(fresh, cupy.ndarray) and fresh.device.id == a.device.id
        scaled = ctensor.ops.multiply(a, 0.5)  # a Python scalar: filled on the device
    stream.synchronize()
    assert float(out.min()) == float(out.max()) == 100.0
    assert float(fresh.min()) == float(fresh.max()) == 20.0
    assert float(scaled.min()) == float(scaled.max()) == 5.0


def test_cupy_views_and_outputs_keep_their_pointers() -> None:
    base = cupy.arange(64 * 48, dtype=cupy.float32).reshape(64, 48)
    view = base[3:, ::2]
    out_base = cupy.zeros((64, 48), dtype=cupy.float32)
    out = out_base[3:, ::2]  # a strided out= is written in place, not through a copy
    ctensor.ops.negative(view, out=out)
    assert out.data.ptr == out_base.data.ptr + (3 * 48) * 4
    np.testing.assert_array_equal(cupy.asnumpy(out), -cupy.asnumpy(view))
    assert not cupy.asnumpy(out_base)[:3].any() and not cupy.asnumpy(out_base)[3:, 1::2].any()


def test_torch_tensors_are_ordered_after_torchs_stream_in_a_cupy_call() -> None:
    # The call's framework is CuPy (its first array), on a CuPy stream; the torch tensor was
    # written by torch on another stream: ctensor makes its stream wait for torch's.
    torch_stream = torch.cuda.Stream()
    with torch.cuda.stream(torch_stream):
        t = torch.zeros(1 << 24, device="cuda")
        for _ in range(10):
            t += 1
    cupy_stream = cupy.cuda.Stream(non_blocking=True)
    with cupy_stream, torch.cuda.stream(torch_stream):
        a = cupy.ones(1 << 24, dtype=cupy.float32)
        out = cupy.empty_like(a)
        ctensor.ops.add(a, t, out=out)
    cupy_stream.synchronize()
    assert float(out.min()) == float(out.max()) == 11.0


# --- CUDA graphs: every op flagged graph-safe captures, and replays as it runs eagerly ------------

_GRAPH_CASES, _NO_CUDA_KERNEL = graph_cases("cuda")
# CUgraphNodeType values (cuda.h) that a graph-safe op must not leave in a graph: host
# callbacks and stream-ordered allocations (scratch comes from ct_context.workspace).
_NODE_NAMES = {3: "HOST", 10: "MEM_ALLOC", 11: "MEM_FREE"}


def _graph_node_types(graph: torch.cuda.CUDAGraph) -> list[int]:
    """The node types of a captured graph (``keep_graph=True``), through the driver API."""
    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuGraphGetNodes.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    driver.cuGraphNodeGetType.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    handle = ctypes.c_void_p(graph.raw_cuda_graph())
    count = ctypes.c_size_t(0)
    assert driver.cuGraphGetNodes(handle, None, ctypes.byref(count)) == 0
    nodes = (ctypes.c_void_p * max(count.value, 1))()
    assert driver.cuGraphGetNodes(handle, nodes, ctypes.byref(count)) == 0
    types = []
    for node in nodes[: count.value]:
        kind = ctypes.c_int(-1)
        assert driver.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind)) == 0
        types.append(kind.value)
    return types


def _torch_dtype(array: np.ndarray) -> torch.dtype:
    return torch.from_numpy(np.zeros(1, np.asarray(array).dtype)).dtype


@pytest.mark.parametrize("case", _GRAPH_CASES, ids=lambda case: case.op)
def test_graph_safe_ops_capture_in_a_cuda_graph_and_replay_as_eager(case) -> None:  # noqa: ANN001
    """CT_OP_FLAG_GRAPH_SAFE promises no host synchronisation and no allocation: the call is
    captured by torch.cuda.graph in "global" mode (a stream synchronisation, a copy to pageable
    memory or a cudaMalloc fails the capture), the graph holds no host or memory-allocation
    node, and its replay writes what the eager call wrote."""
    spec = get_spec(case.op)
    hosts = call(spec, list(case.inputs), None, dict(case.attrs))  # shapes and dtypes
    hosts = hosts if isinstance(hosts, tuple) else (hosts,)
    inputs = [None if a is None else torch.from_numpy(a).cuda() for a in case.inputs]

    def outputs() -> tuple:
        return tuple(torch.empty(np.shape(h), dtype=_torch_dtype(h), device="cuda") for h in hosts)

    def run(outs: tuple) -> None:
        call(spec, list(inputs), outs if len(outs) > 1 else outs[0], dict(case.attrs))

    eager = outputs()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as torch's graph docs ask
        run(eager)
    torch.cuda.current_stream().wait_stream(side)
    captured = outputs()
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph, capture_error_mode="global"):
        run(captured)
    found = {_NODE_NAMES[t] for t in _graph_node_types(graph) if t in _NODE_NAMES}
    assert not found, f"{case.op} left {sorted(found)} nodes in the captured graph"
    for got, want in zip(captured, eager, strict=True):  # differ from eager before the replay
        if want.dtype == torch.bool:
            got.copy_(~want)
        elif want.is_floating_point():
            got.fill_(float("nan"))
        else:
            got.copy_(want + 1)
    graph.replay()
    torch.cuda.synchronize()
    exact = "deterministic" in ctensor.op_info(case.op)["flags"]
    for got, want in zip(captured, eager, strict=True):
        if exact:
            torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        else:  # atomics may add in another order
            torch.testing.assert_close(got, want, equal_nan=True)


def test_dynamic_ops_are_not_graph_safe_and_the_others_have_cuda_cases() -> None:
    # Ops that read their output sizes back to the host cannot be captured; every other op
    # flagged graph-safe with a CUDA kernel is among the captured cases.
    dynamic = [n for n in ctensor.list_ops() if ctensor.op_info(n)["category"] == "dynamic"]
    assert dynamic and not [n for n in dynamic if "graph_safe" in ctensor.op_info(n)["flags"]]
    captured = {case.op for case in _GRAPH_CASES}
    for name in _NO_CUDA_KERNEL:
        assert not ctensor.op_info(name)["signatures"].get("cuda"), name
    assert len(captured) + len(_NO_CUDA_KERNEL) == len(
        [n for n in ctensor.list_ops() if "graph_safe" in ctensor.op_info(n)["flags"]]
    )


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


# ----- sort, argsort, topk, argpartition, unique_values (kernels/cuda/cu_sort.cu,
# cu_radix_sort.cu): CUB radix sorts of order-preserving keys in the workspace -----

SORT_DTYPES = ["bool", "int32", "int64", "float16", "float32", "float64"]


def _sort_values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Few distinct values (many ties), the extremes, and for floats nan, -0.0, 0.0, +-inf."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    x = rng.integers(-6, 6, shape).astype(dtype)
    flat = x.reshape(-1)
    picks = rng.integers(0, flat.size, (6, max(1, flat.size // 50)))
    if np.issubdtype(x.dtype, np.integer):
        flat[picks[0]] = np.iinfo(x.dtype).min
        flat[picks[1]] = np.iinfo(x.dtype).max
    else:
        flat[picks[0]] = np.nan
        flat[picks[1]] = -np.nan  # a nan with the sign bit set ties with every nan
        flat[picks[2]] = -0.0
        flat[picks[3]] = 0.0
        flat[picks[4]] = np.inf
        flat[picks[5]] = -np.inf
    return x


def _reference_argsort(host: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """ctensor's order: stable; ascending puts nan last, descending puts nan first; -0.0 == 0.0."""
    if not descending:
        return np.argsort(host, axis=axis, kind="stable")
    x = np.moveaxis(host, axis, -1)
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        order = np.lexsort((np.where(nan, 0, -x.astype(np.float64)), ~nan))
    else:
        order = np.lexsort((~x,))  # bitwise not reverses bool and signed int order exactly
    return np.moveaxis(order, -1, axis)


def _check_sort(x: cupy.ndarray, axis: int) -> None:
    host = cupy.asnumpy(x)
    for descending in (False, True):
        want = _reference_argsort(host, axis, descending)
        got = ctensor.ops.argsort(x, axis=axis, descending=descending)
        np.testing.assert_array_equal(cupy.asnumpy(got), want, f"{host.dtype} {descending}")
        values = cupy.asnumpy(ctensor.ops.sort(x, axis=axis, descending=descending))
        assert _bits(values).tobytes() == _bits(np.take_along_axis(host, want, axis)).tobytes()


def _bits(a: np.ndarray) -> np.ndarray:
    """The array's bit patterns (so that -0.0 differs from 0.0 and nan payloads count)."""
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("n", [1 << 16, 1 << 20])
def test_sort_of_one_long_lane_matches_numpy(dtype, n) -> None:
    # One lane: cub::DeviceRadixSort over the whole device. Values are compared bit for bit
    # (re-read from x by index, so -0.0 and nan payloads survive).
    x = cupy.asarray(_sort_values(np.random.default_rng(n), dtype, (n,)))
    _check_sort(x, 0)


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((4096, 33), 1),  # many short lanes: the segmented sort
        ((4096, 32), 1),  # the longest lanes the rank kernel takes
        ((300, 1000), -1),
        ((3, 40000), 1),  # few long lanes: a device-wide sort per lane
        ((500, 7, 3), 0),  # a strided axis
        ((2, 70000), 1),
    ],
)
def test_sort_along_any_axis_matches_numpy(dtype, shape, axis) -> None:
    x = cupy.asarray(_sort_values(np.random.default_rng(len(shape)), dtype, shape))
    _check_sort(x, axis)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float16"])
def test_sort_reads_and_writes_strided_views(dtype) -> None:
    base = cupy.asarray(_sort_values(np.random.default_rng(3), dtype, (300, 900)))
    for view, axis in [(base[::2, ::3], 1), (base.T, 1), (base[5:, 7:], 0), (base[::3].T, 0)]:
        _check_sort(view, axis)
        out = cupy.zeros((view.shape[1], view.shape[0]), dtype=cupy.int64).T  # strided output
        ctensor.ops.argsort(view, axis=axis, out=out)
        np.testing.assert_array_equal(
            cupy.asnumpy(out), _reference_argsort(cupy.asnumpy(view), axis, False)
        )


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_topk_and_argpartition_of_long_lanes_match_numpy(dtype) -> None:
    host = _sort_values(np.random.default_rng(4), dtype, (5, 50000))
    x = cupy.asarray(host)
    for largest in (True, False):
        order = _reference_argsort(host, 1, largest)[:, :100]
        values, indices = ctensor.ops.topk(x, k=100, axis=1, largest=largest)
        np.testing.assert_array_equal(cupy.asnumpy(indices), order)
        np.testing.assert_array_equal(cupy.asnumpy(values), np.take_along_axis(host, order, 1))
    got = ctensor.ops.argpartition(x, kth=[3, -1], axis=1)
    np.testing.assert_array_equal(cupy.asnumpy(got), _reference_argsort(host, 1, False))


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_unique_values_matches_numpy(dtype) -> None:
    host = _sort_values(np.random.default_rng(5), dtype, (300, 700))[:, ::2]
    got = cupy.asnumpy(ctensor.ops.unique_values(cupy.asarray(host)))
    # -0.0 and 0.0 are one value (either may stand for it), and so are all nans. The reference
    # sorts floats as float64 (exact): NumPy 2.4's unique misorders this float16 sample.
    wide = host.astype(np.float64) if host.dtype.kind == "f" else host
    np.testing.assert_array_equal(got, np.unique(wide, equal_nan=True))


def test_nonzero_and_boolean_mask_match_numpy() -> None:
    rng = np.random.default_rng(6)
    host = rng.integers(-1, 2, (300, 200, 3)).astype(np.float32)
    x = cupy.asarray(host)
    for got, want in zip(ctensor.ops.nonzero(x[:, ::2]), np.nonzero(host[:, ::2]), strict=True):
        np.testing.assert_array_equal(cupy.asnumpy(got), want)
    mask = host[:, :, 0] > 0
    got = ctensor.ops.boolean_mask(x, cupy.asarray(mask))
    np.testing.assert_array_equal(cupy.asnumpy(got), host[mask])
    got = ctensor.ops.boolean_mask(x[:, :, 1], cupy.asarray(mask))
    np.testing.assert_array_equal(cupy.asnumpy(got), host[:, :, 1][mask])


# ----- cumulative_sum, cumulative_prod and their backward (kernels/cuda/cu_scan.cu) -----


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((1 << 20,), 0),  # one lane in chunks: totals, carries, chunks
        ((20000, 3), 0),  # few long strided lanes in chunks
        ((300, 1000), 1),  # a block per lane
        ((1000, 300), 0),
        ((4000, 20), 1),  # a thread per lane
        ((40, 40000), 0),  # a thread per lane along a strided axis
        ((7, 0), 1),
    ],
)
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_ops_match_the_cpu(dtype, shape, axis, include_initial) -> None:
    rng = np.random.default_rng(7)
    for name in ("cumulative_sum", "cumulative_prod"):
        if dtype == "bool":
            host = rng.integers(0, 2, shape).astype(bool)
        elif dtype.startswith("int"):
            host = rng.integers(-3, 4, shape).astype(dtype)  # products wrap
        elif name == "cumulative_sum":  # positive, and below float16's largest over 2^20 terms
            host = rng.uniform(0.0, 0.1, shape).astype(dtype)
        else:  # products that stay normal numbers over 2^20 factors
            host = rng.uniform(0.999, 1.001, shape).astype(dtype)
        op = getattr(ctensor.ops, name)
        got = cupy.asnumpy(op(cupy.asarray(host), axis=axis, include_initial=include_initial))
        want = np.asarray(op(host, axis=axis, include_initial=include_initial))
        assert got.dtype == want.dtype
        if dtype in ("bool", "int32", "int64"):
            np.testing.assert_array_equal(got, want)  # wrapping arithmetic, in any order
        else:
            # A block per lane adds in a tree's order within tiles of 256, in the wide
            # accumulator: one rounding of the output apart, and the accumulator's error.
            rtol = {"float16": 4e-3, "float32": 1e-6, "float64": 1e-9}[dtype]
            np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_backward_ops_match_the_cpu(dtype, include_initial) -> None:
    rng = np.random.default_rng(8)
    # The sum's backward is the forward scan run backwards (a tree's order within tiles, in
    # double); the product's walks each lane as the CPU does (its bits).
    rtol, atol = {"float16": (2e-3, 1e-6), "float32": (1e-6, 1e-10), "float64": (1e-12, 1e-12)}[
        dtype
    ]
    for shape, axis in [((40, 300), 0), ((40, 300), 1), ((1 << 18,), 0), ((9000, 2), 0)]:
        host = rng.uniform(-1.5, 1.5, shape).astype(dtype)
        host.reshape(-1)[10] = 0.0
        attrs = {"axis": axis, "include_initial": include_initial}
        out = np.asarray(ctensor.ops.cumulative_prod(host, **attrs))
        g = rng.standard_normal(out.shape).astype(dtype)
        want = ctensor.ops.cumulative_sum_backward(g, host, **attrs)
        got = ctensor.ops.cumulative_sum_backward(cupy.asarray(g), cupy.asarray(host), **attrs)
        np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=rtol, atol=atol)
        want = ctensor.ops.cumulative_prod_backward(g, host, out, **attrs)
        got = ctensor.ops.cumulative_prod_backward(
            cupy.asarray(g), cupy.asarray(host), cupy.asarray(out), **attrs
        )
        np.testing.assert_array_equal(cupy.asnumpy(got), want)  # the CPU's operations


# ----- GEMMs on cuBLASLt (kernels/cuda/cu_blaslt.cu) -------------------------------------------

#: Per dtype: (the output's rounding unit, the accumulator's). float16 and float32 accumulate in
#: float32 (no TF32: its 2^-11 would fail these bounds), float64 in float64.
_GEMM_EPS = {
    "float16": (2.0**-11, 2.0**-24),
    "float32": (2.0**-24, 2.0**-24),
    "float64": (2.0**-53, 2.0**-53),
}


def _assert_gemm_close(got, want, scale, terms: int, dtype: str, what: str) -> None:  # noqa: ANN001
    """The dot-product error bound: |got - want| <= 4 (u |want| + terms v scale), u the output's
    rounding unit, v the accumulator's, scale the product of the absolute values (float64)."""
    rounding, accumulate = _GEMM_EPS[dtype]
    got = cupy.asnumpy(got).astype(np.float64) if isinstance(got, cupy.ndarray) else got
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    tol = 4 * (rounding * np.abs(want) + max(terms, 1) * accumulate * scale) + 1e-300
    err = np.abs(got - want)
    worst = np.unravel_index(np.argmax(err - tol), err.shape) if err.size else ()
    assert (err <= tol).all(), (
        f"{what} {dtype}: error {err[worst]:.3g} > {tol[worst]:.3g} at {worst} "
        f"(got {got[worst]!r}, want {want[worst]!r})"
    )


def _device(rng, shape, dtype: str, view=None):  # noqa: ANN001, ANN202
    """(a CuPy array of `shape` as a view `view` of a fresh buffer, its values as float64)."""
    base = cupy.asarray(rng.standard_normal(shape).astype(dtype))
    array = view(base) if view else base
    return array, cupy.asnumpy(array).astype(np.float64)


# (name, x1 base shape, x1 view, x2 base shape, x2 view, out: None or (base shape, view))
_MATMUL_CASES = [
    ("row-major", (65, 33), None, (33, 47), None, None),
    ("transposed operands", (33, 65), lambda a: a.T, (47, 33), lambda b: b.T, None),
    (
        "leading dims and offsets",
        (130, 40),
        lambda a: a[::2, 3:36],
        (33, 60),
        lambda b: b[:, 1:48],
        None,
    ),
    (
        "no unit stride (the kernel)",
        (65, 66),
        lambda a: a[:, ::2],
        (66, 47),
        lambda b: b[::2],
        None,
    ),
    ("broadcast batches", (3, 1, 17, 24), None, (4, 24, 9), None, None),
    ("shared right operand", (5, 7, 24), None, (24, 9), None, None),
    ("shared left operand", (17, 24), None, (6, 24, 9), None, None),
    ("vector times batch", (24,), None, (3, 24, 9), None, None),
    ("batch times vector", (3, 17, 24), None, (24,), None, None),
    ("dot", (24,), None, (24,), None, None),
    ("column-major out", (65, 33), None, (33, 47), None, ((47, 65), lambda o: o.T)),
    (
        "batches as a loop",
        (3, 1, 17, 24),
        None,
        (4, 24, 9),
        None,
        ((4, 3, 17, 9), lambda o: o.transpose(1, 0, 2, 3)),
    ),
    ("empty contraction", (5, 0), None, (0, 4), None, None),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("case", _MATMUL_CASES, ids=[c[0] for c in _MATMUL_CASES])
def test_matmul_on_cublaslt_matches_float64_numpy(dtype, case) -> None:  # noqa: ANN001
    """Row- and column-major operands (transposes), leading dims larger than the matrix,
    unaligned offsets, broadcast and shared batches (one strided-batched call or one folded
    GEMM), 1-D operands, a column-major and a non-collapsible output (a loop of calls), and the
    layouts cuBLASLt cannot take (the hand-written kernel): all within float64's dot-product
    error bound."""
    name, s1, v1, s2, v2, out_spec = case
    rng = np.random.default_rng(3)
    x1, h1 = _device(rng, s1, dtype, v1)
    x2, h2 = _device(rng, s2, dtype, v2)
    want = np.matmul(h1, h2)
    scale = np.matmul(np.abs(h1), np.abs(h2))
    if out_spec is None:
        got = ctensor.ops.matmul(x1, x2)
    else:
        shape, view = out_spec
        out = view(cupy.full(shape, np.nan, dtype=dtype))
        got = ctensor.ops.matmul(x1, x2, out=out)
        assert got.data.ptr == out.data.ptr
    _assert_gemm_close(got, want, scale, h1.shape[-1], dtype, name)


def _sum_to(x, shape):  # noqa: ANN001, ANN202
    """x summed over the broadcast dims that take it to `shape` (NumPy's broadcasting undone)."""
    x = x.sum(axis=tuple(range(x.ndim - len(shape))))
    return x.sum(
        axis=tuple(i for i, e in enumerate(shape) if e == 1 and x.shape[i] != 1), keepdims=True
    )


def _matmul_grads(g, x1, x2):  # noqa: ANN001, ANN202
    """torch.matmul's cotangents in float64: (grad_x1, grad_x2)."""
    a = x1[None, :] if x1.ndim == 1 else x1
    b = x2[:, None] if x2.ndim == 1 else x2
    gg = np.expand_dims(g, -2) if x1.ndim == 1 else g
    gg = np.expand_dims(gg, -1) if x2.ndim == 1 else gg
    ga = _sum_to(np.matmul(gg, np.swapaxes(b, -1, -2)), a.shape).reshape(x1.shape)
    gb = _sum_to(np.matmul(np.swapaxes(a, -1, -2), gg), b.shape).reshape(x2.shape)
    return ga, gb


_BACKWARD_CASES = [
    ("row-major", (17, 24), None, (24, 9), None),
    ("transposed operands", (24, 17), lambda a: a.T, (9, 24), lambda b: b.T),
    ("shared weight (folded sum)", (5, 7, 24), None, (24, 9), None),
    ("broadcast both ways (summed loop)", (3, 1, 17, 24), None, (4, 24, 9), None),
    ("vector times batch", (24,), None, (3, 24, 9), None),
    ("batch times vector", (3, 17, 24), None, (24,), None),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("case", _BACKWARD_CASES, ids=[c[0] for c in _BACKWARD_CASES])
def test_matmul_backward_on_cublaslt_matches_float64_numpy(dtype, case) -> None:  # noqa: ANN001
    """Both cotangents, with the batch dims an operand was broadcast along summed: folded into
    the contraction, a loop of accumulating calls, or (float16) the hand-written kernel."""
    name, s1, v1, s2, v2 = case
    rng = np.random.default_rng(4)
    x1, h1 = _device(rng, s1, dtype, v1)
    x2, h2 = _device(rng, s2, dtype, v2)
    g, hg = _device(rng, np.matmul(h1, h2).shape, dtype)
    gx1, gx2 = ctensor.ops.matmul_backward(g, x1, x2)
    want1, want2 = _matmul_grads(hg, h1, h2)
    scale1, scale2 = _matmul_grads(np.abs(hg), np.abs(h1), np.abs(h2))
    terms = hg.size  # at most every element of grad_out in one sum
    _assert_gemm_close(gx1, want1, scale1, terms, dtype, f"{name}: grad_x1")
    _assert_gemm_close(gx2, want2, scale2, terms, dtype, f"{name}: grad_x2")


# (name, x shape, x view, weight shape, weight view, bias: None, or a view of a (2 * n,) buffer)
_LINEAR_CASES = [
    ("bias epilogue", (4, 6, 32), None, (48, 32), None, lambda b: b[:48]),
    ("one row", (32,), None, (48, 32), None, lambda b: b[:48]),
    ("weight transposed", (4, 6, 32), None, (32, 48), lambda w: w.T, lambda b: b[:48]),
    (
        "batch as a strided call",
        (6, 4, 32),
        lambda x: x.transpose(1, 0, 2),
        (48, 32),
        None,
        lambda b: b[:48],
    ),
    ("strided bias (the kernel)", (4, 6, 32), None, (48, 32), None, lambda b: b[::2]),
    ("contraction of 1 (the kernel)", (5, 1), None, (7, 1), None, lambda b: b[:7]),
    ("no bias", (4, 6, 32), None, (48, 32), None, None),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("case", _LINEAR_CASES, ids=[c[0] for c in _LINEAR_CASES])
def test_linear_on_cublaslt_matches_float64_numpy(dtype, case) -> None:  # noqa: ANN001
    """linear = x @ weight^T + bias: cuBLASLt's BIAS epilogue, or the tiled kernel adding the
    bias before its one rounding where the epilogue does not fit."""
    name, sx, vx, sw, vw, vb = case
    rng = np.random.default_rng(5)
    x, hx = _device(rng, sx, dtype, vx)
    w, hw = _device(rng, sw, dtype, vw)
    want = np.matmul(hx, hw.T)
    scale = np.matmul(np.abs(hx), np.abs(hw.T))
    if vb is None:
        got = ctensor.ops.linear(x, w)
    else:
        b, hb = _device(rng, (2 * hw.shape[0],), dtype, vb)
        got = ctensor.ops.linear(x, w, b)
        want, scale = want + hb, scale + np.abs(hb)
    _assert_gemm_close(got, want, scale, hx.shape[-1], dtype, name)


def _cuda_workspace(op: str, shapes: list, dtype: str) -> tuple[int, int]:
    """(bytes, alignment) that ct_op_workspace reports for tensors of these shapes on cuda:0."""
    torch_dtype = getattr(torch, dtype)
    return _workspace(op, [torch.empty(s, dtype=torch_dtype, device="cuda:0") for s in shapes])


def test_gemm_ops_ask_for_cublaslts_recommended_workspace() -> None:
    # cuBLAS recommends 32 MiB of workspace from Hopper on and 4 MiB before; the call's
    # workspace (from the caller's framework) is what cuBLASLt's heuristic and matmul get.
    major = int(cupy.cuda.Device(0).compute_capability) // 10
    expected = (32 if major >= 9 else 4) << 20
    for op, shapes in [
        ("matmul", [(8, 4), (4, 5)]),
        ("linear", [(8, 4), (5, 4), (5,)]),
        ("matmul_backward", [(8, 5), (8, 4), (4, 5)]),
    ]:
        for dtype in ("float16", "float32", "float64"):
            assert _cuda_workspace(op, shapes, dtype) == (expected, 256), (op, dtype)
    # Integer products run on the hand-written kernel, which needs none; nor does an empty one.
    assert _cuda_workspace("matmul", [(8, 4), (4, 5)], "int32")[0] == 0
    assert _cuda_workspace("matmul", [(0, 4), (4, 5)], "float32")[0] == 0


def test_gemm_plans_are_shared_across_threads_and_the_cache_is_bounded() -> None:
    # More distinct problems than the plan cache keeps (1024), from four threads on streams of
    # their own: plans are built, shared and dropped concurrently, every result stays right.
    rng = np.random.default_rng(6)
    host_a = rng.standard_normal((1100, 8)).astype(np.float32)
    host_b = rng.standard_normal((8, 8)).astype(np.float32)
    a, b = cupy.asarray(host_a), cupy.asarray(host_b)

    def work(rows: range) -> list:
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            results = [(m, ctensor.ops.matmul(a[:m], b)) for m in rows]
        stream.synchronize()
        return [(m, cupy.asnumpy(r)) for m, r in results]

    with ThreadPoolExecutor(4) as pool:
        done = [
            r for part in pool.map(work, [range(i, 1101, 4) for i in range(1, 5)]) for r in part
        ]
    assert len(done) == 1100
    want64 = host_a.astype(np.float64) @ host_b.astype(np.float64)
    scale = np.abs(host_a.astype(np.float64)) @ np.abs(host_b.astype(np.float64))
    for m, got in done:
        _assert_gemm_close(got, want64[:m], scale[:m], 8, "float32", f"{m} rows")
