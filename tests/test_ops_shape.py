"""Shape and indexing ops: concat, stack, flip, roll, tile, repeat, take, take_along_axis, slice,
pad, broadcast_to, tril, triu, embedding, one_hot, matrix_transpose.

They only move elements, so every dtype must match its NumPy reference (torch's for the
deep-learning ops) bit for bit, NaN and inf included; inputs have arbitrary layouts (sliced,
reversed, transposed, broadcast), 0-d and zero-size shapes. bfloat16 goes through torch tensors
and is compared after an exact widening to float32."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import ALL_NUMPY, COMPLEX, dtype_name, kernel_dtypes, strided_arrays, strided_bfloat16
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor

ops = ctensor.ops
DTYPES = ALL_NUMPY + ["bfloat16"]
SETTINGS = settings(max_examples=15, deadline=None)
INDEX_DTYPES = ["int32", "int64"]
# Copy ops with complex kernels too (pad's constant is real).
COMPLEX_COPY_OPS = [
    "broadcast_to",
    "concat",
    "flip",
    "matrix_transpose",
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
WITH_COMPLEX = DTYPES + COMPLEX
COPY_OPS = [
    "broadcast_to",
    "concat",
    "flip",
    "matrix_transpose",
    "pad",
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


def draw_array(data, dtype, **kw):
    """(input for ctensor, float32/NumPy view of the same values for the reference)."""
    if dtype == "bfloat16":
        t = data.draw(strided_bfloat16(**kw))
        return t, t.float().numpy()
    a = data.draw(strided_arrays(dtype, **kw))
    return a, a


def check(actual, expected, dtype):
    """Exact comparison (NaN positions included) and the dtype of the result."""
    assert dtype_name(actual) == dtype
    got = actual.float().numpy() if dtype == "bfloat16" else np.asarray(actual)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    np.testing.assert_array_equal(got, expected.astype(got.dtype))


def test_every_op_declares_all_13_dtypes_and_complex_where_it_is_a_copy():
    for op in COPY_OPS:
        expected = set(WITH_COMPLEX if op in COMPLEX_COPY_OPS else DTYPES)
        assert set(kernel_dtypes(op)) == expected, op
    assert set(kernel_dtypes("embedding")) == set(INDEX_DTYPES)
    assert set(kernel_dtypes("one_hot")) == set(INDEX_DTYPES)
    weights = {sig[1] for sig in ctensor.op_info("embedding")["signatures"]["cpu"]}
    assert weights == set(DTYPES)


# ---------------------------------------------------------------------------------------------
# concat / stack
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_concat(dtype, data):
    ndim = data.draw(st.integers(1, 3))
    base = data.draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    flat = data.draw(st.booleans())
    axis = data.draw(st.integers(-ndim, ndim - 1))
    arrays, refs = [], []
    for _ in range(data.draw(st.integers(1, 3))):
        shape = list(base)
        if flat:
            shape = data.draw(st.lists(st.integers(0, 4), min_size=0, max_size=3))
        else:
            shape[axis] = data.draw(st.integers(0, 4))
        a, r = draw_array(data, dtype, shape=tuple(shape))
        arrays.append(a)
        refs.append(r)
    if flat:
        check(ops.concat(arrays, axis=None), np.concatenate(refs, axis=None), dtype)
    else:
        check(ops.concat(arrays, axis=axis), np.concatenate(refs, axis=axis), dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_stack(dtype, data):
    shape = data.draw(st.lists(st.integers(0, 4), min_size=0, max_size=3))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    count = data.draw(st.integers(1, 3))
    pairs = [draw_array(data, dtype, shape=tuple(shape)) for _ in range(count)]
    out = ops.stack([a for a, _ in pairs], axis=axis)
    check(out, np.stack([r for _, r in pairs], axis=axis), dtype)


def test_concat_promotes_and_checks_shapes():
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    b = np.linspace(0, 1, 3, dtype=np.float32).reshape(1, 3)
    out = ops.concat([a, b], axis=0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.concatenate([a, b]))
    with pytest.raises(ValueError):
        ops.concat([a, b.reshape(3, 1)], axis=0)
    with pytest.raises(ValueError):
        ops.concat([np.float32(1.0)], axis=0)
    with pytest.raises(ValueError):
        ops.stack([a, a[:1]])
    with pytest.raises(ValueError):
        ops.concat([a, a], axis=2)


# ---------------------------------------------------------------------------------------------
# flip / roll / matrix_transpose / broadcast_to
# ---------------------------------------------------------------------------------------------


def axes_subset(data, ndim):
    if ndim == 0 or data.draw(st.booleans()):
        return None
    axes = data.draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return [a - ndim if data.draw(st.booleans()) else a for a in axes]


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_flip(dtype, data):
    x, r = draw_array(data, dtype)
    axis = axes_subset(data, r.ndim)
    expected = np.flip(r, axis=None if axis is None else tuple(axis))
    check(ops.flip(x, axis=axis), expected, dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_roll(dtype, data):
    x, r = draw_array(data, dtype)
    if r.ndim == 0 or data.draw(st.booleans()):
        shift = data.draw(st.integers(-30, 30))
        check(ops.roll(x, shift=shift), np.roll(r, shift), dtype)
        return
    axis = data.draw(st.lists(st.integers(-r.ndim, r.ndim - 1), min_size=1, max_size=4))
    shift = data.draw(st.lists(st.integers(-12, 12), min_size=len(axis), max_size=len(axis)))
    check(ops.roll(x, shift=shift, axis=axis), np.roll(r, shift, axis), dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_matrix_transpose(dtype, data):
    x, r = draw_array(data, dtype, min_dims=2)
    check(ops.matrix_transpose(x), np.swapaxes(r, -1, -2), dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_broadcast_to(dtype, data):
    shape = data.draw(st.lists(st.integers(0, 4), max_size=3))
    x, r = draw_array(data, dtype, shape=tuple(s if data.draw(st.booleans()) else 1 for s in shape))
    target = data.draw(st.lists(st.integers(0, 3), max_size=2)) + shape
    check(ops.broadcast_to(x, shape=target), np.broadcast_to(r, target), dtype)


# ---------------------------------------------------------------------------------------------
# tile / repeat / slice / pad / tril / triu
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_tile(dtype, data):
    x, r = draw_array(data, dtype, max_dims=3)
    reps = data.draw(st.lists(st.integers(0, 3), max_size=4))
    check(ops.tile(x, repetitions=reps), np.tile(r, reps), dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_repeat(dtype, data):
    x, r = draw_array(data, dtype, max_dims=3)
    axis = (
        None
        if r.ndim == 0 or data.draw(st.booleans())
        else data.draw(st.integers(-r.ndim, r.ndim - 1))
    )
    n = r.size if axis is None else r.shape[axis]
    if data.draw(st.booleans()):
        repeats = data.draw(st.integers(0, 3))
    else:
        repeats = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        if n == 1:
            repeats = repeats[0]
    check(ops.repeat(x, repeats=repeats, axis=axis), np.repeat(r, repeats, axis=axis), dtype)


BIG = 2**63 - 1


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_slice(dtype, data):
    x, r = draw_array(data, dtype)
    count = data.draw(st.integers(0, r.ndim))
    bound = st.one_of(st.none(), st.integers(-8, 8))
    starts = data.draw(st.lists(bound, min_size=count, max_size=count))
    stops = data.draw(st.lists(bound, min_size=count, max_size=count))
    steps = data.draw(st.lists(st.integers(-3, 3).filter(bool), min_size=count, max_size=count))
    key = tuple(slice(a, b, s) for a, b, s in zip(starts, stops, steps, strict=True))

    def c(v, low):  # None as the extreme that Python's rules treat as missing
        return v if v is not None else (-BIG - 1 if low else BIG)

    start = [c(a, s > 0) for a, s in zip(starts, steps, strict=True)]
    stop = [c(b, s < 0) for b, s in zip(stops, steps, strict=True)]
    check(ops.slice(x, start=start, stop=stop, step=steps), r[key], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@SETTINGS
@given(data=st.data())
def test_pad(dtype, data):
    mode = data.draw(st.sampled_from(["constant", "reflect", "edge"]))
    x, r = draw_array(data, dtype, max_dims=3, min_side=0 if mode == "constant" else 1)
    widths = [data.draw(st.tuples(st.integers(0, 6), st.integers(0, 6))) for _ in range(r.ndim)]
    flat = [w for pair in widths for w in pair]
    if r.ndim == 0:  # numpy.pad refuses 0-d arrays; nothing to pad
        check(ops.pad(x, pad_width=flat, mode=mode), r, dtype)
        return
    if mode == "constant":
        value = data.draw(st.sampled_from([0, 1] if dtype == "bool" else [0, 1, 7]))
        if dtype in ("float16", "float32", "float64", "bfloat16"):
            value = data.draw(st.sampled_from([0.0, -2.5, float("nan"), float("inf")]))
        expected = np.pad(r, widths, mode="constant", constant_values=value)
        check(ops.pad(x, pad_width=flat, value=value), expected, dtype)
    else:
        check(ops.pad(x, pad_width=flat, mode=mode), np.pad(r, widths, mode=mode), dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@SETTINGS
@given(data=st.data())
def test_tril_triu(dtype, data):
    x, r = draw_array(data, dtype, min_dims=2)
    k = data.draw(st.integers(-5, 5))
    check(ops.tril(x, k=k), np.tril(r, k), dtype)
    check(ops.triu(x, k=k), np.triu(r, k), dtype)


# ---------------------------------------------------------------------------------------------
# take / take_along_axis / embedding / one_hot
# ---------------------------------------------------------------------------------------------


def draw_indices(data, n, index_dtype, max_dims=2, low=None):
    """An index array of a drawn shape with values in [low, n) (low default -n); empty if n == 0."""
    shape = data.draw(st.lists(st.integers(0, 3), max_size=max_dims))
    if n == 0:
        return np.zeros(shape[:-1] + [0] if shape else [0], dtype=index_dtype)
    size = int(np.prod(shape))
    values = st.integers(-n if low is None else low, n - 1)
    drawn = data.draw(st.lists(values, min_size=size, max_size=size))
    return np.array(drawn, dtype=np.int64).astype(index_dtype).reshape(shape)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_take(dtype, index_dtype, data):
    x, r = draw_array(data, dtype, max_dims=3)
    axis = (
        None
        if r.ndim == 0 or data.draw(st.booleans())
        else data.draw(st.integers(-r.ndim, r.ndim - 1))
    )
    n = r.size if axis is None else r.shape[axis]
    idx = draw_indices(data, n, index_dtype)
    check(ops.take(x, idx, axis=axis), np.take(r, idx, axis=axis), dtype)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", WITH_COMPLEX)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_take_along_axis(dtype, index_dtype, data):
    x, r = draw_array(data, dtype, min_dims=1, max_dims=3, min_side=1)
    axis = data.draw(st.integers(-r.ndim, r.ndim - 1))
    n = r.shape[axis]
    shape = [data.draw(st.sampled_from([1, s])) for s in r.shape]
    shape[axis] = data.draw(st.integers(0, 4))
    size = int(np.prod(shape))
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size)))
    idx = idx.astype(index_dtype).reshape(shape)
    check(ops.take_along_axis(x, idx, axis=axis), np.take_along_axis(r, idx, axis=axis), dtype)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_embedding(dtype, index_dtype, data):
    rows = data.draw(st.integers(1, 5))
    w, r = draw_array(data, dtype, shape=(rows, data.draw(st.integers(0, 4))))
    idx = draw_indices(data, rows, index_dtype, max_dims=3, low=0)
    out = ops.embedding(torch.from_numpy(idx) if dtype == "bfloat16" else idx, w)
    check(out, r[idx], dtype)
    if dtype in ("float32", "float64", "bfloat16"):
        weight = w if dtype == "bfloat16" else torch.from_numpy(w.copy())
        expected = torch.nn.functional.embedding(torch.from_numpy(idx).long(), weight)
        check(out, expected.float().numpy() if dtype == "bfloat16" else expected.numpy(), dtype)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_one_hot(index_dtype, data):
    classes = data.draw(st.integers(1, 6))
    idx = draw_indices(data, classes, index_dtype, max_dims=3, low=0)
    view = data.draw(st.sampled_from(["compact", "reversed", "broadcast"]))
    if view == "reversed" and idx.ndim:
        idx = idx[..., ::-1]
    elif view == "broadcast":
        idx = np.broadcast_to(idx, (2,) + idx.shape)
    out = ops.one_hot(idx, num_classes=classes)
    expected = torch.nn.functional.one_hot(torch.from_numpy(idx.astype(np.int64)), classes)
    assert out.shape == tuple(expected.shape)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, expected.numpy())
    t = ops.one_hot(torch.from_numpy(idx.copy()).long(), num_classes=classes)
    assert torch.equal(t, expected)


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------


def test_index_errors_leave_the_output_untouched():
    x = np.arange(12.0).reshape(3, 4)
    out = np.full((2, 4), -1.0)
    for bad in ([0, 3], [-4, 0]):
        with pytest.raises(ValueError, match="out of range"):
            ops.take(x, np.array(bad), axis=0, out=out)
        np.testing.assert_array_equal(out, -1.0)
    with pytest.raises(ValueError, match="out of range"):
        ops.take(x, np.array([12]))
    with pytest.raises(ValueError, match="out of range"):
        ops.take(np.zeros((0, 2)), np.array([0]), axis=0)
    with pytest.raises(ValueError, match="out of range"):
        ops.take_along_axis(x, np.array([[4]]), axis=1)
    w = np.ones((3, 2), np.float32)
    e_out = np.zeros((2, 2), np.float32)
    for bad in ([0, 3], [-1, 0]):  # torch: negative indices are errors too
        with pytest.raises(ValueError, match="out of range"):
            ops.embedding(np.array(bad), w, out=e_out)
        np.testing.assert_array_equal(e_out, 0.0)
    with pytest.raises(ValueError, match="out of range"):
        ops.one_hot(np.array([0, 3]), num_classes=3)
    with pytest.raises(ValueError, match="out of range"):
        ops.one_hot(np.array([-1]), num_classes=3)


def test_attribute_errors():
    x = np.zeros((2, 3), np.float32)
    cases = [
        lambda: ops.one_hot(np.array([0, 1]), num_classes=-1),
        lambda: ops.slice(x, start=[0], stop=[2], step=[0]),
        lambda: ops.slice(x, start=[0, 0, 0]),
        lambda: ops.pad(x, pad_width=[1], mode="wrap"),
        lambda: ops.pad(x, pad_width=[1, 2, 3]),
        lambda: ops.pad(x, pad_width=[-1]),
        lambda: ops.pad(np.zeros((0, 2)), pad_width=[1], mode="reflect"),
        lambda: ops.pad(np.zeros(2, np.int8), pad_width=[1], value=300.0),
        lambda: ops.pad(np.zeros(2, np.int32), pad_width=[1], value=float("nan")),
        lambda: ops.broadcast_to(x, shape=[3, 3]),
        lambda: ops.broadcast_to(x, shape=[3]),
        lambda: ops.tile(x, repetitions=[-1]),
        lambda: ops.repeat(x, repeats=[1, 2], axis=1),
        lambda: ops.repeat(x, repeats=[-1]),
        lambda: ops.repeat(x, repeats=1, axis=2),
        lambda: ops.matrix_transpose(np.zeros(3)),
        lambda: ops.tril(np.zeros(3)),
        lambda: ops.triu(np.zeros(3)),
        lambda: ops.flip(x, axis=[0, 0]),
        lambda: ops.flip(x, axis=[2]),
        lambda: ops.roll(x, shift=[1, 2, 3], axis=[0, 1]),
        lambda: ops.roll(x, shift=1, axis=[2]),
        lambda: ops.take(x, np.array([0]), axis=2),
        lambda: ops.take_along_axis(x, np.zeros((2,), np.int64), axis=0),
        lambda: ops.take_along_axis(x, np.zeros((3, 3), np.int64), axis=1),
        lambda: ops.embedding(np.array([0]), np.zeros(3)),
        lambda: ops.stack([x], axis=3),
    ]
    for i, case in enumerate(cases):
        with pytest.raises(ctensor.CTensorError) as info:
            case()
        assert isinstance(info.value, ValueError), i


def test_take_rejects_float_indices():
    with pytest.raises(ctensor.CTensorError) as info:
        ops.take(np.zeros(3), np.zeros(2, np.float32))
    assert isinstance(info.value, TypeError)
