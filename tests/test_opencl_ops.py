"""The OpenCL backend's reductions, linear algebra, nn, shape, sorting and dynamic ops against
the CPU backend (the reference), over drawn shapes, dtypes and layouts (sliced, reversed,
transposed, broadcast strides at byte offsets into larger device buffers). Float inputs stay
in a moderate range so that the order of accumulation cannot turn a finite sum into an
overflow; nan handling has tests of its own."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import assert_close, kernel_signatures, strided_arrays
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from opencl_arrays import DEVICE, device_like, require_opencl

import ctensor

DTYPES = ["bool", "int32", "int64", "float16", "float32", "float64"]


def setup_module() -> None:
    require_opencl()


def moderate(dtype: str):
    if dtype == "bool":
        return st.booleans()
    if dtype.startswith("int"):
        return st.integers(-1000, 1000)
    return st.floats(-100, 100, width=int(dtype[5:]), allow_subnormal=False)


def arrays(data, dtype: str, shape=None, **kw) -> np.ndarray:
    return data.draw(strided_arrays(dtype, shape=shape, elements=moderate(dtype), **kw))


def opencl_dtypes(name: str, position: int = 0) -> list[str]:
    return sorted({s[position] for s in kernel_signatures(name, "opencl")})


def same(name: str, inputs: list, rtol_scale: float = 16, **attrs) -> None:
    """Runs `name` on the CPU and on OpenCL (inputs copied with their layout) and compares."""
    op = getattr(ctensor.ops, name)
    expected = op(*inputs, **attrs)
    got = op(*[_to_device(x) for x in inputs], **attrs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert isinstance(g, ctensor.DeviceArray) and g.dtype == str(e.dtype)
        assert_close(np.asarray(g), e, rtol_scale=rtol_scale)


def _to_device(x):
    if x is None:
        return None
    if isinstance(x, list):
        return [device_like(item) for item in x]
    return device_like(x)


REDUCTIONS = ["sum", "prod", "mean", "max", "min", "any", "all"]


@pytest.mark.parametrize("name", REDUCTIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_reductions(name: str, data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes(name)))
    needs_identity = name in ("max", "min")
    x = arrays(data, dtype, max_dims=3, min_side=1 if needs_identity else 0)
    if name == "prod" and dtype.startswith("float"):
        x = np.clip(x, -2, 2).astype(dtype)
    axis = data.draw(
        st.one_of(
            st.none(), st.lists(st.integers(0, max(x.ndim - 1, 0)), unique=True, max_size=x.ndim)
        )
    )
    if x.ndim == 0:
        axis = None
    keepdims = data.draw(st.booleans())
    same(name, [x], rtol_scale=16 + x.size, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_arg_reductions(name: str, data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes(name)))
    x = arrays(data, dtype, max_dims=3, min_side=1)
    axis = None
    if x.ndim:
        axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    same(name, [x], axis=axis, keepdims=data.draw(st.booleans()))


@pytest.mark.parametrize("name", ["max", "argmax", "sum", "argmin", "min"])
def test_nan_propagates_as_on_the_cpu(name: str) -> None:
    x = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 2.0]], np.float32)
    same(name, [x], axis=1 if name.startswith("arg") else [1])
    same(name, [x], axis=None)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_matmul(data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes("matmul")))
    m, k, n = (data.draw(st.integers(0, 4)) for _ in range(3))
    kind = data.draw(st.sampled_from(["mm", "mv", "vm", "vv", "batched"]))
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    shapes = {
        "mm": ((m, k), (k, n)),
        "mv": ((m, k), (k,)),
        "vm": ((k,), (k, n)),
        "vv": ((k,), (k,)),
        "batched": (batch.input_shapes[0] + (m, k), batch.input_shapes[1] + (k, n)),
    }[kind]
    a = arrays(data, dtype, shape=shapes[0])
    b = arrays(data, dtype, shape=shapes[1])
    same("matmul", [a, b], rtol_scale=16 + 64 * k)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_softmax(name: str, data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes(name)))
    x = arrays(data, dtype, min_dims=1, max_dims=3)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    same(name, [x], rtol_scale=64, axis=axis)


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_layer_norm(data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes("layer_norm")))
    x = arrays(data, dtype, min_dims=1, max_dims=3, min_side=1)
    count = data.draw(st.integers(1, x.ndim))
    normalized = x.shape[x.ndim - count :]
    weight = arrays(data, dtype, shape=normalized) if data.draw(st.booleans()) else None
    bias = arrays(data, dtype, shape=normalized) if data.draw(st.booleans()) else None
    op = ctensor.ops.layer_norm
    expected = op(x, weight, bias, normalized_shape=list(normalized))
    got = op(
        device_like(x),
        None if weight is None else device_like(weight),
        None if bias is None else device_like(bias),
        normalized_shape=list(normalized),
    )
    # (x - mean) * rstd loses digits when x is close to its mean: an absolute floor per dtype.
    floor = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[str(x.dtype)]
    assert_close(np.asarray(got), expected, rtol_scale=256, atol=floor * 100)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_conv2d(data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes("conv2d")))
    groups = data.draw(st.integers(1, 2))
    cin, cout = groups * data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    stride = [data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))]
    padding = [data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1))]
    dilation = [data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))]
    h, w = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    assume(h + 2 * padding[0] >= dilation[0] * (kh - 1) + 1)
    assume(w + 2 * padding[1] >= dilation[1] * (kw - 1) + 1)
    x = arrays(data, dtype, shape=(data.draw(st.integers(0, 2)), cin, h, w))
    weight = arrays(data, dtype, shape=(cout, cin // groups, kh, kw))
    bias = arrays(data, dtype, shape=(cout,)) if data.draw(st.booleans()) else None
    same(
        "conv2d",
        [x, weight, bias],
        rtol_scale=512,
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_pools(name: str, data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes(name)))
    rank = data.draw(st.sampled_from([3, 4]))
    shape = (2,) * (rank - 3) + (
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 7)),
        data.draw(st.integers(1, 7)),
    )
    x = arrays(data, dtype, shape=shape)
    if name == "adaptive_avg_pool2d":
        attrs = {"output_size": [data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))]}
    else:
        kernel = [data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))]
        attrs = {
            "kernel_size": kernel,
            "stride": [data.draw(st.integers(1, 2))] * 2,
            "padding": [data.draw(st.integers(0, k + 2)) for k in kernel],  # beyond torch's k / 2
            "ceil_mode": data.draw(st.booleans()),
        }
        if name == "max_pool2d":
            attrs["dilation"] = [data.draw(st.integers(1, 2))] * 2
        else:
            attrs["count_include_pad"] = data.draw(st.booleans())
            attrs["divisor_override"] = data.draw(st.one_of(st.none(), st.integers(1, 5)))
    try:
        getattr(ctensor.ops, name)(x, **attrs)
    except (ctensor.InvalidArgumentError, ctensor.ShapeMismatchError):
        assume(False)  # a window larger than the padded input: refused on both devices
    same(name, [x], rtol_scale=64, **attrs)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_permute_dims_and_concat(data) -> None:
    dtype = data.draw(st.sampled_from(DTYPES))
    x = arrays(data, dtype, max_dims=4)
    axes = data.draw(st.permutations(range(x.ndim)))
    same("permute_dims", [x], axes=list(axes))
    if x.ndim:
        axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
        other = list(x.shape)
        other[axis] = data.draw(st.integers(0, 3))
        y = arrays(data, dtype, shape=tuple(other))
        same("concat", [[x, y, x]], axis=axis)
    same("concat", [[x, arrays(data, dtype, max_dims=2)]], axis=None)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_sort_argsort_and_topk(data) -> None:
    dtype = data.draw(st.sampled_from(opencl_dtypes("sort")))
    elements = (
        st.sampled_from([0.0, -0.0, 1.0, -2.5, np.nan, np.inf, 3.0])
        if dtype.startswith("float")
        else moderate(dtype)
    )
    x = data.draw(strided_arrays(dtype, min_dims=1, max_dims=3, elements=elements))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    descending = data.draw(st.booleans())
    same("sort", [x], axis=axis, descending=descending)
    same("argsort", [x], axis=axis, descending=descending)
    k = data.draw(st.integers(0, x.shape[axis]))
    same("topk", [x], k=k, axis=axis, largest=data.draw(st.booleans()))
    same("topk", [x], k=k, axis=axis, largest=False)
    if x.shape[axis]:
        kth = data.draw(st.lists(st.integers(0, x.shape[axis] - 1), min_size=1, max_size=3))
        same("argpartition", [x], kth=kth, axis=axis)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_dynamic_ops(data) -> None:
    dtype = data.draw(st.sampled_from(DTYPES))
    elements = st.sampled_from([0, 1, 2, -1]).map(lambda v: np.array(v).astype(dtype).item())
    if dtype.startswith("float"):
        elements = st.sampled_from([0.0, -0.0, 1.5, np.nan, -3.0])
    x = data.draw(strided_arrays(dtype, max_dims=3, elements=elements))
    if x.ndim:
        same("nonzero", [x])
    same("unique_values", [x])
    lead = data.draw(st.integers(0, x.ndim))
    mask = data.draw(strided_arrays("bool", shape=x.shape[:lead]))
    same("boolean_mask", [x, mask])


def test_foundation_and_listed_ops_are_registered() -> None:
    listed = [
        "sum",
        "mean",
        "max",
        "argmax",
        "matmul",
        "softmax",
        "permute_dims",
        "conv2d",
        "nonzero",
        "unique_values",
        "boolean_mask",
        "log_softmax",
        "layer_norm",
        "max_pool2d",
        "avg_pool2d",
        "concat",
        "sort",
        "argsort",
        "argpartition",
        "topk",
        "prod",
        "min",
        "any",
        "all",
        "argmin",
    ]
    for name in listed:
        cpu = {tuple(s) for s in kernel_signatures(name, "cpu")}
        wanted = {s for s in cpu if set(s) <= set(DTYPES)}
        missing = wanted - set(kernel_signatures(name, "opencl"))
        assert not missing, f"{name}: no OpenCL kernel for {sorted(missing)}"


def test_dynamic_results_live_on_the_device() -> None:
    x = ctensor.asarray(np.array([[0, 3], [4, 0]], np.int32), device=DEVICE)
    rows, cols = ctensor.ops.nonzero(x)
    assert isinstance(rows, ctensor.DeviceArray) and rows.device == (4, 0)
    np.testing.assert_array_equal(np.asarray(rows), [0, 1])
    np.testing.assert_array_equal(np.asarray(cols), [1, 0])


@pytest.mark.parametrize("order", [2.0, 3.0, 0.5])
def test_vector_norm_keeps_a_nan_that_smaller_moduli_follow(order):
    """The scaled sum keeps its running maximum: once that is nan, a later modulus (which no
    comparison puts above nan) must not replace it, or a lane [nan, 0, ...] gave 0."""
    x = np.array([[np.nan, 0.0, 0.0, 0.0], [0.0, np.nan, 0.0, 1.0], [1.0, 2.0, 0.0, 3.0]])
    for dtype in ("float32", "float64"):
        got = ctensor.ops.vector_norm(device_like(x.astype(dtype)), axis=[-1], ord=order)
        want = np.sum(np.abs(x) ** order, axis=-1) ** (1 / order)
        np.testing.assert_allclose(got.to_numpy(), want.astype(dtype), rtol=1e-6)
