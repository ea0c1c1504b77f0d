"""Backward ops of the shape and indexing ops, clip and embedding (capi/ops/shape_grad_ops.c),
each against torch.autograd in float64 (or, where torch has no such forward, the exact adjoint:
np.bincount over the forward applied to element numbers). grad_out comes in every float dtype
with a drawn layout (sliced, reversed, transposed, broadcast); the result is compared within the
dtype's tolerance. Then the gradient rows end to end (check_vjp, once the harness is merged)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from arrays import assert_close
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor

ops = ctensor.ops
FLOATS = ["float64", "float32", "float16", "bfloat16"]
SETTINGS = settings(max_examples=12, deadline=None)
INDEX_DTYPES = ["int32", "int64"]
TORCH_DTYPE = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


def layout_array(data, shape, dtype, values=None):
    """(array for ctensor in `dtype` with a drawn layout, its values as a float64 ndarray).
    bfloat16 arrays are torch tensors (no reversed layout: torch has no negative strides)."""
    shape = tuple(shape)
    layouts = ["compact", "sliced", "transposed", "broadcast"]
    if dtype != "bfloat16":
        layouts.append("reversed")
    layout = data.draw(st.sampled_from(layouts))
    if layout == "broadcast" and shape:
        axis = data.draw(st.integers(0, len(shape) - 1))
        base_shape = tuple(1 if k == axis else s for k, s in enumerate(shape))
    elif layout == "sliced" and shape:
        base_shape = tuple(2 * s for s in shape)
    elif layout == "transposed" and len(shape) > 1:
        base_shape = shape[::-1]
    else:
        base_shape = shape
    if values is None:
        values = st.floats(-4, 4, allow_nan=False, width=16)
    base = data.draw(hnp.arrays(np.float64, base_shape, elements=values))
    arr = torch.from_numpy(base).to(torch.bfloat16) if dtype == "bfloat16" else base.astype(dtype)
    if layout == "broadcast" and shape:
        view = np.broadcast_to(arr, shape) if dtype != "bfloat16" else arr.expand(shape)
    elif layout == "sliced" and shape:
        view = arr[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "transposed" and len(shape) > 1:
        view = arr.T if dtype != "bfloat16" else arr.permute(*range(len(shape) - 1, -1, -1))
    elif layout == "reversed" and shape:
        view = arr[tuple(slice(None, None, -1) for _ in shape)]
    else:
        view = arr
    assert tuple(view.shape) == shape
    return view, to64(view)


def to64(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.to(torch.float64).numpy()
    return np.asarray(a, dtype=np.float64)


def zeros(shape, dtype):
    """A forward input of which only the shape is read, in dtype."""
    if dtype == "bfloat16":
        return torch.zeros(tuple(shape), dtype=torch.bfloat16)
    return np.zeros(shape, dtype=dtype)


def torch_grads(fn, inputs, cotangent):
    """torch.autograd.grad of fn(*inputs) (float64 ndarrays; None stays None) for cotangent."""
    ts = [
        None
        if a is None
        else torch.tensor(np.array(a, order="C"), dtype=torch.float64, requires_grad=True)
        for a in inputs
    ]
    out = fn(*ts)
    wrt = [t for t in ts if t is not None]
    grads = torch.autograd.grad(
        out, wrt, torch.tensor(np.array(cotangent, dtype=np.float64, order="C")), allow_unused=True
    )
    it = iter(grads)
    result = []
    for t in ts:
        if t is None:
            result.append(None)
            continue
        g = next(it)
        result.append(np.zeros(t.shape) if g is None else g.numpy())
    return result


def adjoint(forward, shape, cotangent):
    """The exact adjoint of an op that only reads elements: forward() applied to the element
    numbers of x, then np.bincount of the cotangent by number (-1: no element)."""
    size = int(np.prod(shape, dtype=np.int64))
    numbers = np.asarray(forward(np.arange(size, dtype=np.int64).reshape(shape)))
    keep = numbers >= 0
    sums = np.bincount(
        numbers[keep].ravel(), weights=np.asarray(cotangent)[keep].ravel(), minlength=size
    )
    return sums.reshape(shape)


def close(actual, expected, dtype, terms=1):
    """Sums of `terms` values round once in float32 (low precision), then to dtype."""
    scale = 1.0 + (np.sqrt(terms) if dtype in ("float32", "float64") else 0.0)
    assert_close(
        actual,
        np.asarray(expected, dtype=np.float64),
        dtype,
        rtol_scale=scale,
        atol=1e-3 if dtype in ("float16", "bfloat16") else None,
    )


# ---------------------------------------------------------------------------------------------
# copies: permute_dims, roll, concat, stack, slice
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_permute_dims_backward(dtype, data):
    shape = data.draw(shapes())
    axes = data.draw(st.permutations(range(len(shape))))
    axes = [a - len(shape) if data.draw(st.booleans()) else a for a in axes]
    g, g64 = layout_array(data, [shape[a] for a in axes], dtype)
    got = ops.permute_dims_backward(g, axes=axes)
    (want,) = torch_grads(lambda x: x.permute(list(axes)), [np.zeros(shape)], g64)
    close(got, want, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_roll_backward(dtype, data):
    shape = data.draw(shapes())
    g, g64 = layout_array(data, shape, dtype)
    if not shape or data.draw(st.booleans()):
        shift = data.draw(st.lists(st.integers(-9, 9), min_size=1, max_size=2))
        got = ops.roll_backward(g, shift=shift, axis=None)
        want = np.roll(g64, -sum(shift)) if shape else g64
    else:
        axis = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
        shift = data.draw(st.lists(st.integers(-9, 9), min_size=len(axis), max_size=len(axis)))
        got = ops.roll_backward(g, shift=shift, axis=axis)
        want = adjoint(lambda n: np.roll(n, shift, axis), shape, g64)
    close(got, want, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_concat_backward(dtype, data):
    flat = data.draw(st.booleans())
    base = data.draw(shapes(min_dims=1))
    axis = data.draw(st.integers(-len(base), len(base) - 1))
    shapes_ = []
    for _ in range(data.draw(st.integers(1, 3))):
        if flat:
            shapes_.append(data.draw(shapes()))
        else:
            s = list(base)
            s[axis] = data.draw(st.integers(0, 3))
            shapes_.append(tuple(s))
    xs = [np.zeros(s) for s in shapes_]
    if flat:
        fn = lambda *ts: torch.cat([t.reshape(-1) for t in ts])  # noqa: E731
        out_shape = (sum(x.size for x in xs),)
    else:
        fn = lambda *ts: torch.cat(ts, dim=axis)  # noqa: E731
        out_shape = np.concatenate(xs, axis=axis).shape
    g, g64 = layout_array(data, out_shape, dtype)
    got = ops.concat_backward(g, [zeros(s, dtype) for s in shapes_], axis=None if flat else axis)
    want = torch_grads(fn, xs, g64)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        close(a, b, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_stack_backward(dtype, data):
    shape = data.draw(shapes())
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    count = data.draw(st.integers(1, 3))
    xs = [np.zeros(shape) for _ in range(count)]
    g, g64 = layout_array(data, np.stack(xs, axis=axis).shape, dtype)
    got = ops.stack_backward(g, [zeros(shape, dtype) for _ in range(count)], axis=axis)
    want = torch_grads(lambda *ts: torch.stack(ts, dim=axis), xs, g64)
    for a, b in zip(got, want, strict=True):
        close(a, b, dtype)


def slice_attrs(data, shape):
    start, stop, step = [], [], []
    for _ in range(data.draw(st.integers(0, len(shape)))):
        start.append(data.draw(st.integers(-6, 6)))
        stop.append(data.draw(st.integers(-6, 6)))
        step.append(data.draw(st.sampled_from([1, 2, 3, -1, -2])))
    return start, stop, step


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_slice_backward(dtype, data):
    shape = data.draw(shapes())
    start, stop, step = slice_attrs(data, shape)
    key = tuple(slice(a, b, c) for a, b, c in zip(start, stop, step, strict=True))
    g, g64 = layout_array(data, np.zeros(shape)[key].shape, dtype)
    got = ops.slice_backward(g, zeros(shape, dtype), start=start, stop=stop, step=step)
    close(got, adjoint(lambda n: n[key], shape, g64), dtype)


# ---------------------------------------------------------------------------------------------
# sums: tile, repeat, pad
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_tile_backward(dtype, data):
    shape = data.draw(shapes())
    reps = data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4))
    if not reps and not shape:
        reps = [2]
    g, g64 = layout_array(data, np.tile(np.zeros(shape), reps).shape, dtype)
    got = ops.tile_backward(g, zeros(shape, dtype), repetitions=reps)
    (want,) = torch_grads(lambda x: x.tile(reps), [np.zeros(shape)], g64)
    close(got, want, dtype, terms=int(np.prod(reps)))


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_repeat_backward(dtype, data):
    shape = data.draw(shapes())
    flat = not shape or data.draw(st.booleans())
    axis = None if flat else data.draw(st.integers(-len(shape), len(shape) - 1))
    n = int(np.prod(shape)) if flat else shape[axis]
    if n == 0 or data.draw(st.booleans()):
        repeats = [data.draw(st.integers(0, 4))]
    else:
        repeats = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    out = np.repeat(np.zeros(shape), repeats, axis=axis)
    g, g64 = layout_array(data, out.shape, dtype)
    got = ops.repeat_backward(g, zeros(shape, dtype), repeats=repeats, axis=axis)
    r = torch.tensor(repeats)
    if flat:
        fn = lambda x: torch.repeat_interleave(x.reshape(-1), r if len(repeats) > 1 else repeats[0])  # noqa: E731
    else:
        fn = lambda x: torch.repeat_interleave(x, r if len(repeats) > 1 else repeats[0], dim=axis)  # noqa: E731
    (want,) = torch_grads(fn, [np.zeros(shape)], g64)
    close(got, want, dtype, terms=max(repeats) + 1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@SETTINGS
@given(data=st.data())
def test_pad_backward(dtype, mode, data):
    shape = data.draw(shapes(min_side=0 if mode == "constant" else 1))
    form = data.draw(st.sampled_from(["one", "pair", "each"] if shape else ["one", "pair"]))
    if form == "one":
        width = [data.draw(st.integers(0, 5))]
        widths = [(width[0], width[0])] * len(shape)
    elif form == "pair":
        width = data.draw(st.lists(st.integers(0, 5), min_size=2, max_size=2))
        widths = [tuple(width)] * len(shape)
    else:
        width = data.draw(
            st.lists(st.integers(0, 5), min_size=2 * len(shape), max_size=2 * len(shape))
        )
        widths = [(width[2 * k], width[2 * k + 1]) for k in range(len(shape))]
    out_shape = tuple(s + a + b for s, (a, b) in zip(shape, widths, strict=True))
    g, g64 = layout_array(data, out_shape, dtype)
    got = ops.pad_backward(g, zeros(shape, dtype), pad_width=width, mode=mode)
    if mode == "constant":
        flat = [w for a, b in reversed(widths) for w in (a, b)]
        (want,) = torch_grads(lambda x: F.pad(x, flat), [np.zeros(shape)], g64)
    else:
        kw = {"constant_values": -1} if mode == "constant" else {}
        want = adjoint(lambda n: np.pad(n, widths, mode=mode, **kw), shape, g64) if shape else g64
    close(got, want, dtype, terms=8)


def test_pad_backward_reflect_beyond_the_length_matches_numpy():
    """numpy's reflect continues past the array (pad wider than the axis): each padded copy's
    cotangent lands on its source."""
    g = np.arange(1.0, 16.0)
    got = ops.pad_backward(g, np.zeros(3), pad_width=[5, 7], mode="reflect")
    want = adjoint(lambda n: np.pad(n, (5, 7), mode="reflect"), (3,), g)
    np.testing.assert_array_equal(got, want)
    assert got.sum() == g.sum()


# ---------------------------------------------------------------------------------------------
# scatter-adds: take, take_along_axis, embedding
# ---------------------------------------------------------------------------------------------


def index_array(data, shape, n, dtype, negative=True):
    lo = -n if negative else 0
    values = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(lo, max(n - 1, lo))))
    arr = values.astype(dtype)
    if data.draw(st.booleans()) and arr.ndim:
        arr = np.ascontiguousarray(arr[..., ::-1])[..., ::-1]  # reversed layout
    return arr


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@SETTINGS
@given(data=st.data())
def test_take_backward(dtype, index_dtype, data):
    shape = data.draw(shapes(min_side=1))
    flat = not shape or data.draw(st.booleans())
    axis = None if flat else data.draw(st.integers(-len(shape), len(shape) - 1))
    n = int(np.prod(shape)) if flat else shape[axis]
    idx = index_array(data, data.draw(shapes(max_dims=2)), n, index_dtype)
    out_shape = np.take(np.zeros(shape), idx, axis=axis).shape
    g, g64 = layout_array(data, out_shape, dtype)
    got = ops.take_backward(g, zeros(shape, dtype), idx, axis=axis)
    ti = torch.from_numpy(idx.astype(np.int64))
    if flat:
        fn = lambda x: x.reshape(-1)[ti]  # noqa: E731
    else:
        fn = lambda x: x[(slice(None),) * (axis % len(shape)) + (ti,)]  # noqa: E731
    (want,) = torch_grads(fn, [np.zeros(shape)], g64)
    close(got, want, dtype, terms=max(idx.size, 1))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@SETTINGS
@given(data=st.data())
def test_take_along_axis_backward(dtype, index_dtype, data):
    shape = data.draw(shapes(min_dims=1, min_side=1))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    # x and indices broadcast in the other axes: either side may hold extent 1
    x_shape = [s if data.draw(st.booleans()) else 1 for s in shape]
    i_shape = [s if data.draw(st.booleans()) else 1 for s in shape]
    x_shape[axis] = data.draw(st.integers(1, 4))
    i_shape[axis] = data.draw(st.integers(0, 4))
    idx = index_array(data, tuple(i_shape), x_shape[axis], index_dtype)
    out_shape = [max(a, b) for a, b in zip(x_shape, i_shape, strict=True)]
    out_shape[axis] = i_shape[axis]
    g, g64 = layout_array(data, out_shape, dtype)
    got = ops.take_along_axis_backward(g, zeros(x_shape, dtype), idx, axis=axis)
    ti = torch.from_numpy(np.where(idx < 0, idx + x_shape[axis], idx).astype(np.int64))
    (want,) = torch_grads(lambda x: torch.take_along_dim(x, ti, dim=axis), [np.zeros(x_shape)], g64)
    close(got, want, dtype, terms=int(np.prod(out_shape)) + 1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@SETTINGS
@given(data=st.data())
def test_embedding_backward(dtype, index_dtype, data):
    rows = data.draw(st.integers(1, 6))
    dim = data.draw(st.sampled_from([0, 1, 3, 5, 300]))
    idx = index_array(data, data.draw(shapes(max_dims=2)), rows, index_dtype, negative=False)
    g, g64 = layout_array(data, idx.shape + (dim,), dtype)
    got = ops.embedding_backward(g, idx, zeros((rows, dim), dtype))
    ti = torch.from_numpy(idx.astype(np.int64))
    (want,) = torch_grads(lambda w: F.embedding(ti, w), [np.zeros((rows, dim))], g64)
    close(got, want, dtype, terms=idx.size + 1)


def test_index_errors_leave_a_clear_message():
    g = np.ones(3)
    with pytest.raises(ValueError, match="out of range"):
        ops.take_backward(g, np.zeros(4), np.array([0, 4, 1]), axis=0)
    with pytest.raises(ValueError, match="out of range"):
        ops.embedding_backward(np.ones((2, 3)), np.array([0, -1]), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="out of range"):
        ops.take_along_axis_backward(
            np.ones((2, 1)), np.zeros((2, 2)), np.array([[0], [2]]), axis=1
        )
    with pytest.raises(ValueError, match="grad_out has shape"):
        ops.slice_backward(np.ones(3), np.zeros(5), start=[1], stop=[3])
    with pytest.raises(ValueError, match="grad_out has shape"):
        ops.concat_backward(np.ones(6), [np.zeros(2), np.zeros(3)], axis=0)


# ---------------------------------------------------------------------------------------------
# clip
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_clip_backward(dtype, data):
    """Integer-valued operands, so ties (x == min, x == max, min == max) and min > max occur."""
    shape = data.draw(shapes(max_dims=2))
    ints = st.integers(-2, 2).map(float)
    x, x64 = layout_array(data, shape, dtype, values=ints)
    bounds = data.draw(st.sampled_from(["min", "max", "both"]))
    lo = hi = lo64 = hi64 = None
    if bounds in ("min", "both"):
        lo, lo64 = layout_array(
            data, shape[data.draw(st.integers(0, len(shape))) :], dtype, values=ints
        )
    if bounds in ("max", "both"):
        hi, hi64 = layout_array(
            data, shape[data.draw(st.integers(0, len(shape))) :], dtype, values=ints
        )
    g, g64 = layout_array(data, shape, dtype)
    want = torch_grads(lambda a, b, c: torch.clamp(a, b, c), [x64, lo64, hi64], g64)
    for wrt, expected in zip(["x", "min", "max"], want, strict=True):
        if expected is None:
            continue
        got = ops.clip_backward(g, x, lo, hi, wrt=wrt)
        summed = (
            got
            if wrt == "x"
            else ops.sum_to_shape(got, lo if wrt == "min" else hi)
            if hasattr(ops, "sum_to_shape")
            else None
        )
        if summed is None:  # before sum_to_shape lands: reduce in NumPy for the comparison
            full = to64(got)
            target = np.shape(expected)
            extra = full.ndim - len(target)
            full = full.sum(axis=tuple(range(extra)))
            full = full.sum(axis=tuple(k for k, s in enumerate(target) if s == 1), keepdims=True)
            summed = full
        close(
            to64(summed) if not isinstance(summed, np.ndarray) else summed, expected, dtype, terms=8
        )


def test_clip_backward_nan_x_and_absent_bound():
    x = np.array([np.nan, 1.0, 3.0])
    g = np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(
        ops.clip_backward(g, x, np.array(0.0), np.array(2.0), wrt="x"), [0, 2, 0]
    )
    np.testing.assert_array_equal(ops.clip_backward(g, x, None, None, wrt="x"), [1, 2, 4])
    with pytest.raises(ValueError, match="absent"):
        ops.clip_backward(g, x, None, np.array(2.0), wrt="min")
    with pytest.raises(ValueError, match="wrt"):
        ops.clip_backward(g, x, None, np.array(2.0), wrt="y")


# ---------------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------------

BACKWARD_OPS = [
    "clip_backward",
    "concat_backward",
    "embedding_backward",
    "pad_backward",
    "permute_dims_backward",
    "repeat_backward",
    "roll_backward",
    "slice_backward",
    "stack_backward",
    "take_along_axis_backward",
    "take_backward",
    "tile_backward",
]


@pytest.mark.parametrize("op", BACKWARD_OPS)
def test_backward_ops_take_every_float_dtype(op):
    sigs = ctensor.op_info(op)["signatures"]["cpu"]
    assert {s[0] for s in sigs} == set(FLOATS)


# ---------------------------------------------------------------------------------------------
# the gradient rows end to end: ctensor.autodiff.vjp against torch.autograd and float64 finite
# differences of ctensor's forward (tests/gradcheck.py)
# ---------------------------------------------------------------------------------------------

VJP_DTYPES = ["float64", "float32"]
VJP_SETTINGS = settings(max_examples=6, deadline=None)


def values(data, shape):
    return data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-3, 3, width=32)))


def by_numbers(np_forward, shape):
    """A torch forward for an op that only reads elements: x's flattened elements gathered at
    np_forward(element numbers), zero where it gives -1 (pad's constant border)."""
    size = int(np.prod(shape, dtype=np.int64))
    numbers = np.asarray(np_forward(np.arange(size, dtype=np.int64).reshape(shape)))
    where = torch.from_numpy(np.where(numbers < 0, size, numbers))

    def forward(x):
        return torch.cat([x.reshape(-1), x.new_zeros(1)])[where]

    return forward


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_permutes_and_flips(dtype, data):
    shape = data.draw(shapes(max_dims=4))
    x = values(data, shape)
    axes = list(data.draw(st.permutations(range(len(shape)))))
    check_vjp("permute_dims", [x], {"axes": axes}, lambda t: t.permute(axes), dtype=dtype)
    flip_axes = None if not shape else sorted(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    check_vjp(
        "flip",
        [x],
        {"axis": flip_axes},
        lambda t: t.flip(list(range(t.ndim)) if flip_axes is None else flip_axes),
        dtype=dtype,
    )
    if len(shape) >= 2:
        k = data.draw(st.integers(-3, 3))
        check_vjp("matrix_transpose", [x], {}, lambda t: t.transpose(-1, -2), dtype=dtype)
        check_vjp("tril", [x], {"k": k}, lambda t: torch.tril(t, k), dtype=dtype)
        check_vjp("triu", [x], {"k": k}, lambda t: torch.triu(t, k), dtype=dtype)


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_broadcast_to_and_roll(dtype, data):
    shape = data.draw(shapes(max_dims=3))
    x = values(data, tuple(s if data.draw(st.booleans()) else 1 for s in shape))
    target = data.draw(st.lists(st.integers(1, 3), max_size=2)) + list(shape)
    check_vjp("broadcast_to", [x], {"shape": target}, lambda t: t.broadcast_to(target), dtype=dtype)
    y = values(data, shape)
    if shape and data.draw(st.booleans()):
        axis = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
        shift = data.draw(st.lists(st.integers(-7, 7), min_size=len(axis), max_size=len(axis)))
    else:
        axis, shift = None, [data.draw(st.integers(-7, 7))]
    fn = by_numbers(lambda n: np.roll(n, shift, axis), shape)
    check_vjp("roll", [y], {"shift": shift, "axis": axis}, fn, dtype=dtype)


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_concat_and_stack(dtype, data):
    base = data.draw(shapes(min_dims=1))
    axis = data.draw(st.integers(-len(base), len(base) - 1))
    arrays = []
    for _ in range(data.draw(st.integers(1, 3))):
        s = list(base)
        s[axis] = data.draw(st.integers(0, 3))
        arrays.append(values(data, tuple(s)))
    check_vjp("concat", [arrays], {"axis": axis}, lambda ts: torch.cat(ts, axis), dtype=dtype)
    flat = [values(data, data.draw(shapes())) for _ in range(2)]
    check_vjp(
        "concat",
        [flat],
        {"axis": None},
        lambda ts: torch.cat([t.reshape(-1) for t in ts]),
        dtype=dtype,
    )
    same = [values(data, base) for _ in range(data.draw(st.integers(1, 3)))]
    new_axis = data.draw(st.integers(-len(base) - 1, len(base)))
    check_vjp(
        "stack", [same], {"axis": new_axis}, lambda ts: torch.stack(ts, new_axis), dtype=dtype
    )


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_slice_tile_repeat_pad(dtype, data):
    shape = data.draw(shapes(min_side=1))
    x = values(data, shape)
    start, stop, step = slice_attrs(data, shape)
    key = tuple(slice(a, b, c) for a, b, c in zip(start, stop, step, strict=True))
    attrs = {"start": start, "stop": stop, "step": step}
    check_vjp("slice", [x], attrs, by_numbers(lambda n: n[key], shape), dtype=dtype)
    reps = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    check_vjp("tile", [x], {"repetitions": reps}, lambda t: t.tile(reps), dtype=dtype)
    axis = (
        None if not shape or data.draw(st.booleans()) else data.draw(st.integers(0, len(shape) - 1))
    )
    n = x.size if axis is None else shape[axis]
    repeats = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    fn = by_numbers(lambda m: np.repeat(m, repeats, axis=axis), shape)
    check_vjp("repeat", [x], {"repeats": repeats, "axis": axis}, fn, dtype=dtype)
    mode = data.draw(st.sampled_from(["constant", "reflect", "edge"]))
    widths = [data.draw(st.integers(0, 4)) for _ in range(2 * len(shape))] or [1]
    pairs = [(widths[2 * k], widths[2 * k + 1]) for k in range(len(shape))]
    kw = {"constant_values": -1} if mode == "constant" else {}
    fn = by_numbers(lambda m: np.pad(m, pairs, mode=mode, **kw) if m.ndim else m, shape)
    check_vjp("pad", [x], {"pad_width": widths, "mode": mode, "value": 1.5}, fn, dtype=dtype)


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_take_take_along_axis_embedding(dtype, data):
    shape = data.draw(shapes(min_dims=1, min_side=1))
    x = values(data, shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    idx = index_array(data, data.draw(shapes(max_dims=2)), shape[axis], "int64")
    ax = axis % len(shape)

    def take(t, i):
        return t[(slice(None),) * ax + (i,)]

    check_vjp("take", [x, idx], {"axis": axis}, take, dtype=dtype)
    flat_idx = index_array(data, data.draw(shapes(max_dims=2)), x.size, "int32")
    check_vjp(
        "take", [x, flat_idx], {"axis": None}, lambda t, i: t.reshape(-1)[i.long()], dtype=dtype
    )
    along_shape = list(shape)
    along_shape[ax] = data.draw(st.integers(0, 4))
    along = index_array(data, tuple(along_shape), shape[ax], "int64")

    def take_along(t, i):
        return torch.take_along_dim(t, torch.where(i < 0, i + t.shape[ax], i), dim=ax)

    check_vjp("take_along_axis", [x, along], {"axis": axis}, take_along, dtype=dtype)
    table = values(data, (data.draw(st.integers(1, 5)), data.draw(st.integers(1, 4))))
    rows = index_array(data, data.draw(shapes(max_dims=2)), table.shape[0], "int32", negative=False)
    check_vjp("embedding", [rows, table], {}, lambda i, w: F.embedding(i.long(), w), dtype=dtype)


@pytest.mark.parametrize("dtype", VJP_DTYPES)
@VJP_SETTINGS
@given(data=st.data())
def test_vjp_clip(dtype, data):
    """Continuous values (finite differences need no kink within a step); broadcasting bounds."""
    shape = data.draw(shapes(max_dims=3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = 2 * rng.standard_normal(shape)
    lo = rng.standard_normal(shape[data.draw(st.integers(0, len(shape))) :]) - 1.0
    hi = rng.standard_normal(shape[data.draw(st.integers(0, len(shape))) :]) + 1.0
    which = data.draw(st.sampled_from(["min", "max", "both"]))
    lo = lo if which != "max" else None
    hi = hi if which != "min" else None
    check_vjp("clip", [x, lo, hi], {}, lambda a, b, c: torch.clamp(a, b, c), dtype=dtype)


def test_vjp_clip_ties_follow_torch():
    """At x == min or x == max, and min >= max, the cotangents go where torch.clamp's do."""
    x = np.array([-1.0, 0.0, 1.0, 2.0, 0.5, 0.5])
    lo = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 0.5])
    hi = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.5])
    check_vjp("clip", [x, lo, hi], {}, lambda a, b, c: torch.clamp(a, b, c), fd=False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_vjp_low_precision(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4))
    check_vjp("tile", [x], {"repetitions": [2, 1, 3]}, lambda t: t.tile([2, 1, 3]), dtype=dtype)
    idx = np.array([[0, 2], [2, 2]])
    check_vjp("embedding", [idx, x], {}, lambda i, w: F.embedding(i, w), dtype=dtype)
    check_vjp("concat", [[x, x[:1]]], {"axis": 0}, lambda ts: torch.cat(ts, 0), dtype=dtype)


def test_one_hot_is_not_differentiable():
    entry = ctensor.op_info("one_hot")["gradient"]
    assert not entry["differentiable"]
    with pytest.raises(ctensor.autodiff.NotDifferentiableError):
        ctensor.autodiff.vjp("one_hot", [np.array([0, 1])], [None], num_classes=2)


SHAPE_FORWARDS = [
    "broadcast_to",
    "clip",
    "concat",
    "embedding",
    "flip",
    "matrix_transpose",
    "pad",
    "permute_dims",
    "repeat",
    "roll",
    "slice",
    "stack",
    "take",
    "take_along_axis",
    "tile",
    "tril",
    "triu",
]


@pytest.mark.parametrize("op", SHAPE_FORWARDS)
def test_every_shape_op_has_a_gradient(op):
    entry = ctensor.op_info(op)["gradient"]
    assert "error" not in entry, entry
    assert entry["differentiable"], op
