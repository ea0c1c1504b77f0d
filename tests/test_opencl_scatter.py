"""put_along_axis, gather_nd, scatter_nd, index_select, index_add and their backward ops on
opencl:0 against the CPU backend, over drawn shapes, axes, reductions, repeated and negative
indices, zero-size arrays and layouts (sliced, reversed, transposed, broadcast views at byte
offsets into larger device buffers); the index errors, which leave the output untouched; and the
gradient rows end to end on the device."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import kernel_signatures, strided_arrays
from hypothesis import given, settings
from hypothesis import strategies as st
from opencl_arrays import DEVICE, device_like, require_opencl

import ctensor
from ctensor import ops

REDUCTIONS = ["none", "add", "multiply", "max", "min"]
DTYPES = ["float32", "float64", "float16", "int32", "int64", "bool"]
SETTINGS = settings(max_examples=25, deadline=None)
NEW_OPS = ["put_along_axis", "gather_nd", "scatter_nd", "index_select", "index_add"]


def setup_module() -> None:
    require_opencl()


def elements(dtype: str):
    if dtype == "bool":
        return st.booleans()
    if dtype.startswith("float"):
        return st.floats(-2, 2, width=16).map(lambda v: v if v != 0 else 0.5)
    return st.integers(-3, 5)


def reductions_of(dtype: str) -> list[str]:
    return ["none", "max", "min"] if dtype == "bool" else REDUCTIONS


def assert_same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    # float16 accumulates in float32 on the device, in double on the CPU: both round once
    rtol = 2e-3 if want.dtype == np.float16 else 1e-6 if want.dtype == np.float32 else 1e-12
    scale = max(1.0, float(np.max(np.abs(want.astype(np.float64))))) if want.size else 1.0
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol * scale
    )


def test_registered_on_opencl():
    for op in NEW_OPS:
        signatures = {tuple(s) for s in kernel_signatures(op, "opencl")}
        for dtype in ("float16", "float32", "int32", "int64"):
            for index in ("int32", "int64"):
                assert signatures & {s for s in signatures if s[0] == dtype and s[1] == index}
    for op in [
        "put_along_axis_backward",
        "scatter_nd_backward",
        "gather_nd_backward",
        "index_select_backward",
        "index_add_backward",
    ]:
        dtypes = {s[0] for s in kernel_signatures(op, "opencl")}
        assert {"float16", "float32"} <= dtypes


@st.composite
def along_axis(draw):
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(1, 3))
    xshape = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    axis = draw(st.integers(-ndim, ndim - 1))
    a = axis % ndim
    ishape = []
    for d, n in enumerate(xshape):
        if d == a:
            ishape.append(draw(st.integers(0, 5)) if n else 0)
        elif n == 1:
            ishape.append(draw(st.integers(1, 3)))
        else:
            ishape.append(draw(st.sampled_from([n, 1])))
    wshape = [i if d == a or xshape[d] == 1 else xshape[d] for d, i in enumerate(ishape)]
    vshape = tuple(draw(st.sampled_from([n, 1])) for n in wshape)
    x = draw(strided_arrays(dtype, shape=tuple(xshape), elements=elements(dtype)))
    values = draw(strided_arrays(dtype, shape=vshape, elements=elements(dtype)))
    n = max(xshape[a], 1)
    idx_dtype = draw(st.sampled_from(["int32", "int64"]))
    indices = draw(strided_arrays(idx_dtype, shape=tuple(ishape), elements=st.integers(-n, n - 1)))
    return x, indices, values, axis, draw(st.sampled_from(reductions_of(dtype)))


@SETTINGS
@given(case=along_axis())
def test_put_along_axis_matches_cpu(case):
    x, indices, values, axis, reduction = case
    got = ops.put_along_axis(
        device_like(x), device_like(indices), device_like(values), axis=axis, reduction=reduction
    )
    assert isinstance(got, ctensor.DeviceArray)
    assert_same(got, ops.put_along_axis(x, indices, values, axis=axis, reduction=reduction))


@st.composite
def nd(draw, batch=True):
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(1, 3))
    xshape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    b = draw(st.integers(0, ndim - 1)) if batch else 0
    k = draw(st.integers(1, ndim - b))
    extra = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    ishape = xshape[:b] + extra
    count = int(np.prod(ishape))
    columns = [
        np.array(
            draw(
                st.lists(
                    st.integers(-xshape[b + m], xshape[b + m] - 1), min_size=count, max_size=count
                )
            ),
            np.int64,
        ).reshape(ishape)
        for m in range(k)
    ]
    indices = np.stack(columns, -1).astype(draw(st.sampled_from(["int32", "int64"])))
    x = draw(strided_arrays(dtype, shape=xshape, elements=elements(dtype)))
    return x, indices, b, dtype


@SETTINGS
@given(case=nd())
def test_gather_nd_matches_cpu(case):
    x, indices, b, _ = case
    got = ops.gather_nd(device_like(x), device_like(indices), batch_dims=b)
    assert_same(got, ops.gather_nd(x, indices, batch_dims=b))


@SETTINGS
@given(case=nd(batch=False), data=st.data())
def test_scatter_nd_matches_cpu(case, data):
    x, indices, _, dtype = case
    k = indices.shape[-1]
    updates = data.draw(
        strided_arrays(dtype, shape=indices.shape[:-1] + x.shape[k:], elements=elements(dtype))
    )
    reduction = data.draw(st.sampled_from(reductions_of(dtype)))
    got = ops.scatter_nd(
        device_like(x), device_like(indices), device_like(updates), reduction=reduction
    )
    assert_same(got, ops.scatter_nd(x, indices, updates, reduction=reduction))


@SETTINGS
@given(data=st.data())
def test_index_select_and_index_add_match_cpu(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    ndim = data.draw(st.integers(1, 3))
    xshape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    axis = data.draw(st.integers(-ndim, ndim - 1))
    n = xshape[axis]
    count = data.draw(st.integers(0, 6))
    indices = np.array(
        data.draw(st.lists(st.integers(-n, n - 1), min_size=count, max_size=count)),
        data.draw(st.sampled_from(["int32", "int64"])),
    )
    x = data.draw(strided_arrays(dtype, shape=xshape, elements=elements(dtype)))
    got = ops.index_select(device_like(x), device_like(indices), axis=axis)
    assert_same(got, ops.index_select(x, indices, axis=axis))
    if dtype == "bool":
        return
    sshape = list(xshape)
    sshape[axis] = count
    source = data.draw(strided_arrays(dtype, shape=tuple(sshape), elements=elements(dtype)))
    alpha = data.draw(st.sampled_from([1.0, 2.0, -1.0]))
    got = ops.index_add(
        device_like(x), device_like(indices), device_like(source), axis=axis, alpha=alpha
    )
    assert_same(got, ops.index_add(x, indices, source, axis=axis, alpha=alpha))


@SETTINGS
@given(case=along_axis())
def test_backward_ops_match_cpu(case):
    x, indices, values, axis, reduction = case
    if x.dtype.kind != "f" or x.dtype == np.float16:
        x, values = x.astype(np.float32), values.astype(np.float32)
    out = np.asarray(ops.put_along_axis(x, indices, values, axis=axis, reduction=reduction))
    grad = np.random.default_rng(0).standard_normal(x.shape).astype(x.dtype)
    args = [grad, x, indices, values, out]
    got = ops.put_along_axis_backward(
        *[device_like(a) for a in args], axis=axis, reduction=reduction
    )
    want = ops.put_along_axis_backward(*args, axis=axis, reduction=reduction)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)
    # index_select_backward and index_add_backward on a few of the same indices
    flat = np.ascontiguousarray(indices).reshape(-1)[:4]
    w_shape = list(x.shape)
    w_shape[axis % x.ndim] = flat.size
    g = np.ones(w_shape, x.dtype)
    assert_same(
        ops.index_select_backward(device_like(g), device_like(x), device_like(flat), axis=axis),
        ops.index_select_backward(g, x, flat, axis=axis),
    )
    got = ops.index_add_backward(
        device_like(grad), device_like(x), device_like(flat), device_like(g), axis=axis, alpha=-1.5
    )
    want = ops.index_add_backward(grad, x, flat, g, axis=axis, alpha=-1.5)
    for g_, w_ in zip(got, want, strict=True):
        assert_same(g_, w_)


def test_scatter_nd_and_gather_nd_backward_match_cpu():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 3, 2)).astype(np.float32)
    indices = np.stack([rng.integers(-4, 4, (5, 2)), rng.integers(-3, 3, (5, 2))], -1)
    updates = rng.standard_normal((5, 2, 2)).astype(np.float32)
    for reduction in REDUCTIONS:
        out = np.asarray(ops.scatter_nd(x, indices, updates, reduction=reduction))
        grad = rng.standard_normal(x.shape).astype(np.float32)
        args = [grad, x, indices, updates, out]
        got = ops.scatter_nd_backward(*[device_like(a) for a in args], reduction=reduction)
        want = ops.scatter_nd_backward(*args, reduction=reduction)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    g = rng.standard_normal((4, 5, 2)).astype(np.float32)
    tuples = rng.integers(-3, 3, (4, 5, 1))
    assert_same(
        ops.gather_nd_backward(device_like(g), device_like(x), device_like(tuples), batch_dims=1),
        ops.gather_nd_backward(g, x, tuples, batch_dims=1),
    )


def test_out_of_range_indices_are_errors_and_leave_the_output_untouched():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = ctensor.asarray(np.full((3, 4), 7.0, np.float32), device=DEVICE)
    with pytest.raises(ctensor.InvalidArgumentError, match=r"put_along_axis: index 4 .*\[-4, 4\)"):
        ops.put_along_axis(
            device_like(x),
            device_like(np.array([[0], [4], [1]])),
            device_like(np.ones((3, 1), np.float32)),
            axis=1,
            out=out,
        )
    with pytest.raises(ctensor.InvalidArgumentError, match=r"scatter_nd: index -4 .*\[-3, 3\)"):
        ops.scatter_nd(
            device_like(x),
            device_like(np.array([[0], [-4]], np.int32)),
            device_like(np.ones((2, 4), np.float32)),
            out=out,
        )
    with pytest.raises(ctensor.InvalidArgumentError, match="index_add: index 3"):
        ops.index_add(
            device_like(x),
            device_like(np.array([3])),
            device_like(np.ones((1, 4), np.float32)),
            axis=0,
            out=out,
        )
    np.testing.assert_array_equal(np.asarray(out), 7.0)
    small = ctensor.asarray(np.full((1, 4), 7.0, np.float32), device=DEVICE)
    with pytest.raises(ctensor.InvalidArgumentError, match="index_select: index 3"):
        ops.index_select(device_like(x), device_like(np.array([3])), axis=0, out=small)
    np.testing.assert_array_equal(np.asarray(small), 7.0)


def test_gradient_rows_run_on_the_device():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    indices = rng.integers(-4, 4, (3, 5))
    values = rng.standard_normal((3, 5)).astype(np.float32)
    cotangent = rng.standard_normal((3, 4)).astype(np.float32)
    for reduction in REDUCTIONS:
        attrs = {"axis": 1, "reduction": reduction}
        want = ctensor.autodiff.vjp("put_along_axis", [x, indices, values], [cotangent], **attrs)
        got = ctensor.autodiff.vjp(
            "put_along_axis",
            [device_like(x), device_like(indices), device_like(values)],
            [device_like(cotangent)],
            **attrs,
        )
        for g, w in zip(got, want, strict=True):
            if w is not None:
                assert_same(g, w)
