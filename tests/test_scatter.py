"""put_along_axis, gather_nd, scatter_nd, index_select and index_add on the CPU: float64 NumPy
references and torch over drawn shapes, axes, layouts (sliced, reversed, transposed, broadcast
views), negative and repeated indices with every reduction, zero-size arrays, int32 and int64
indices, integer and bool dtypes; the order repeated indices resolve in (the last value wins for
"none", sums in index order), independent of the thread count; and the errors (index out of
range, wrong index dtype, shapes that do not fit), which leave the output untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from arrays import strided_arrays, tolerance
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from conformance.references import (
    along_axis_index,
    gather_nd_reference,
    index_add_reference,
    scatter_nd_reference,
)
from ctensor import ops

REDUCTIONS = ["none", "add", "multiply", "max", "min"]
TORCH_REDUCE = {"add": "sum", "multiply": "prod", "max": "amax", "min": "amin"}
DTYPES = ["float64", "float32", "float16", "int64", "int32", "int8", "uint8", "bool"]
SETTINGS = settings(max_examples=60, deadline=None)


def elements(dtype: str):
    if dtype == "bool":
        return st.booleans()
    if dtype.startswith("float"):
        return st.floats(-2, 2, width=16).map(lambda v: v if v != 0 else 0.5)
    return st.integers(-3, 5) if not dtype.startswith("uint") else st.integers(0, 5)


def reductions_of(dtype: str) -> list[str]:
    return ["none", "max", "min"] if dtype == "bool" else REDUCTIONS


def assert_matches(got, want, dtype: str) -> None:
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    if not dtype.startswith("float"):
        np.testing.assert_array_equal(got, want)
        return
    rtol, _ = tolerance(dtype)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=4 * rtol, atol=4 * rtol * scale)


def reference_input(a: np.ndarray) -> np.ndarray:
    """What the float64 reference computes on: float inputs as float64, others as they are."""
    return a.astype(np.float64) if a.dtype.kind == "f" else np.array(a)


def index_values(draw, shape, extent: int, dtype: str) -> np.ndarray:
    """Indices in [-extent, extent) (negative ones included), few distinct: repeats are common."""
    count = int(np.prod(shape))
    values = draw(st.lists(st.integers(-extent, extent - 1), min_size=count, max_size=count))
    return strided_view(draw, np.array(values, dtype=dtype).reshape(shape))


def strided_view(draw, a: np.ndarray) -> np.ndarray:
    """a itself, or the same values as a non-contiguous view (every other element of a larger
    array, or reversed), so that the kernels read indices through arbitrary strides too."""
    layout = draw(st.sampled_from(["plain", "every_other", "reversed"]))
    if a.ndim == 0 or layout == "plain":
        return a
    if layout == "reversed":
        return np.flip(np.flip(a, -1).copy(), -1)
    return np.repeat(a, 2, axis=-1)[..., ::2]


# ----------------------------------------------------------------------- put_along_axis


@st.composite
def put_along_axis_cases(draw, dtypes=DTYPES):
    dtype = draw(st.sampled_from(dtypes))
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
    keep = draw(st.integers(0, ndim))
    vshape = [draw(st.sampled_from([n, 1])) for n in wshape[ndim - keep :]]
    x = draw(strided_arrays(dtype, shape=tuple(xshape), elements=elements(dtype)))
    values = draw(strided_arrays(dtype, shape=tuple(vshape), elements=elements(dtype)))
    index_dtype = draw(st.sampled_from(["int32", "int64"]))
    indices = index_values(draw, tuple(ishape), max(xshape[a], 1), index_dtype)
    reduction = draw(st.sampled_from(reductions_of(dtype)))
    return x, indices, values, axis, reduction


def put_along_axis_reference(x, indices, values, axis, reduction):
    x64, v64 = reference_input(x), reference_input(values)
    index = along_axis_index(x.shape, indices, axis)
    shape = np.broadcast_shapes(*(i.shape for i in index))
    out = x64.copy()
    v = np.broadcast_to(v64, shape)
    if reduction == "none":
        out[index] = v
    else:
        {"add": np.add, "multiply": np.multiply, "max": np.maximum, "min": np.minimum}[
            reduction
        ].at(out, index, v)
    return out


@SETTINGS
@given(case=put_along_axis_cases())
def test_put_along_axis_matches_numpy(case):
    x, indices, values, axis, reduction = case
    got = ops.put_along_axis(x, indices, values, axis=axis, reduction=reduction)
    assert_matches(got, put_along_axis_reference(x, indices, values, axis, reduction), x.dtype.name)


@SETTINGS
@given(case=put_along_axis_cases(dtypes=["float64", "float32", "int64"]))
def test_put_along_axis_matches_torch(case):
    x, indices, values, axis, reduction = case
    a = axis % x.ndim
    # torch's scatter takes no broadcast: expand the indices and values to the positions, and
    # only where x does not broadcast against the indices
    index = along_axis_index(x.shape, indices, axis)
    shape = np.broadcast_shapes(*(i.shape for i in index))
    if any(x.shape[d] != shape[d] for d in range(x.ndim) if d != a):
        return
    full_index = np.broadcast_to(indices, shape) % max(x.shape[a], 1)
    if reduction == "none" and full_index.size:
        # torch.scatter leaves repeated indices unspecified: compare only without repeats
        lanes = np.moveaxis(full_index, a, -1).reshape(-1, shape[a])
        if any(len(set(lane)) != len(lane) for lane in lanes):
            return
    tx = torch.from_numpy(np.array(x))
    ti = torch.from_numpy(np.ascontiguousarray(full_index).astype(np.int64))
    tv = torch.from_numpy(np.array(np.broadcast_to(values, shape)))
    if reduction == "none":
        want = tx.scatter(a, ti, tv)
    else:
        want = tx.scatter_reduce(a, ti, tv, TORCH_REDUCE[reduction], include_self=True)
    got = ops.put_along_axis(x, indices, values, axis=axis, reduction=reduction)
    assert_matches(got, want.numpy().astype(np.float64), x.dtype.name)


def test_put_along_axis_repeated_indices_last_wins_and_sums_in_order():
    x = np.zeros((2, 3), np.float32)
    indices = np.array([[1, 1, -2, 0], [2, 2, 2, 2]])
    values = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]], np.float32)
    got = np.asarray(ops.put_along_axis(x, indices, values, axis=1))
    np.testing.assert_array_equal(got, [[4.0, 3.0, 0.0], [0.0, 0.0, 8.0]])
    # float32 sums in index order: 1e8 + 1 + 1 - 1e8 is 0 (each 1 is lost), not 2
    big = np.array([[1e8, 1.0, 1.0, -1e8]], np.float32)
    got = np.asarray(
        ops.put_along_axis(
            np.zeros((1, 1), np.float32), np.zeros((1, 4), np.int64), big, axis=1, reduction="add"
        )
    )
    assert got[0, 0] == np.float32(np.float32(np.float32(1e8) + 1) + 1) - np.float32(1e8)


def test_put_along_axis_is_independent_of_the_thread_count():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    indices = rng.integers(-300, 300, (64, 2000))
    values = rng.standard_normal((64, 2000)).astype(np.float32)
    before = ctensor.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 4):
            ctensor.set_num_threads(threads)
            results.append(
                [
                    np.asarray(ops.put_along_axis(x, indices, values, axis=1, reduction=r))
                    for r in REDUCTIONS
                ]
            )
    finally:
        ctensor.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)


def test_index_add_and_scatter_nd_are_independent_of_the_thread_count():
    # long runs along a direct last dim are split across threads; repeated indices stay in order
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 2048)).astype(np.float32)
    indices = rng.integers(-50, 50, 400)
    source = rng.standard_normal((400, 2048)).astype(np.float32)
    tuples = rng.integers(-50, 50, (400, 1))
    before = ctensor.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 4):
            ctensor.set_num_threads(threads)
            results.append(
                [
                    np.asarray(ops.index_add(x, indices, source, axis=0, alpha=0.5)),
                    np.asarray(ops.scatter_nd(x, tuples, source, reduction="multiply")),
                    np.asarray(ops.scatter_nd(x, tuples, source)),
                ]
            )
    finally:
        ctensor.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    # float32 sums in index order, as a sequential loop computes them
    want = x.copy()
    for i, j in enumerate(indices):
        want[j] = want[j] + np.float32(0.5) * source[i]
    np.testing.assert_array_equal(results[0][0], want)


def test_put_along_axis_max_min_propagate_nan_and_bool_is_or_and():
    x = np.array([[1.0, np.nan, 3.0]])
    indices = np.array([[0, 2, 0]])
    values = np.array([[np.nan, 5.0, 0.5]])
    got = np.asarray(ops.put_along_axis(x, indices, values, axis=1, reduction="max"))
    want = torch.tensor(x).scatter_reduce(1, torch.tensor(indices), torch.tensor(values), "amax")
    np.testing.assert_array_equal(got, want.numpy())
    b = np.array([[True, False, False]])
    bi = np.array([[1, 1, 0]])
    bv = np.array([[True, False, False]])
    np.testing.assert_array_equal(
        np.asarray(ops.put_along_axis(b, bi, bv, axis=1, reduction="max")), [[True, True, False]]
    )
    np.testing.assert_array_equal(
        np.asarray(ops.put_along_axis(b, bi, bv, axis=1, reduction="min")), [[False, False, False]]
    )


def test_put_along_axis_bfloat16_against_torch():
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((3, 5)), dtype=torch.bfloat16)
    index = torch.tensor(rng.integers(0, 5, (3, 4)))
    src = torch.tensor(rng.standard_normal((3, 4)), dtype=torch.bfloat16)
    for reduction in REDUCTIONS:
        got = ops.put_along_axis(x, index, src, axis=1, reduction=reduction)
        if reduction == "none":
            ref = put_along_axis_reference(
                x.float().numpy(), index.numpy(), src.float().numpy(), 1, "none"
            )
        else:
            ref = x.double().scatter_reduce(1, index, src.double(), TORCH_REDUCE[reduction]).numpy()
        np.testing.assert_allclose(got.float().numpy(), ref, rtol=2e-2, atol=2e-2)


# ----------------------------------------------------------------------- gather_nd, scatter_nd


@st.composite
def nd_cases(draw, dtypes=DTYPES, batch=True):
    dtype = draw(st.sampled_from(dtypes))
    ndim = draw(st.integers(1, 4))
    xshape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    b = draw(st.integers(0, ndim - 1)) if batch else 0
    k = draw(st.integers(1, ndim - b))
    extra = draw(st.lists(st.integers(0, 4), min_size=0, max_size=2))
    ishape = xshape[:b] + tuple(extra) + (k,)
    if any(xshape[b + m] == 0 for m in range(k)):
        ishape = xshape[:b] + (0,) * max(len(extra), 1) + (k,)
    extents = [max(xshape[b + m], 1) for m in range(k)]
    index_dtype = draw(st.sampled_from(["int32", "int64"]))
    count = int(np.prod(ishape[:-1]))
    columns = [
        np.array(draw(st.lists(st.integers(-e, e - 1), min_size=count, max_size=count)))
        for e in extents
    ]
    indices = strided_view(draw, np.stack(columns, -1).reshape(ishape).astype(index_dtype))
    x = draw(strided_arrays(dtype, shape=xshape, elements=elements(dtype)))
    return x, indices, b, dtype


@SETTINGS
@given(case=nd_cases())
def test_gather_nd_matches_numpy(case):
    x, indices, b, dtype = case
    got = ops.gather_nd(x, indices, batch_dims=b)
    assert_matches(got, gather_nd_reference(reference_input(x), indices, b), dtype)


@SETTINGS
@given(case=nd_cases(batch=False), data=st.data())
def test_scatter_nd_matches_numpy(case, data):
    x, indices, _, dtype = case
    k = indices.shape[-1]
    ushape = indices.shape[:-1] + x.shape[k:]
    updates = data.draw(strided_arrays(dtype, shape=ushape, elements=elements(dtype)))
    reduction = data.draw(st.sampled_from(reductions_of(dtype)))
    got = ops.scatter_nd(x, indices, updates, reduction=reduction)
    want = scatter_nd_reference(reference_input(x), indices, reference_input(updates), reduction)
    assert_matches(got, want, dtype)


def test_gather_nd_and_scatter_nd_against_torch_indexing():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5, 3))
    idx = rng.integers(-4, 4, (6, 2))
    got = np.asarray(ops.gather_nd(x, idx))
    want = torch.tensor(x)[torch.tensor(idx[:, 0]), torch.tensor(idx[:, 1])].numpy()
    np.testing.assert_array_equal(got, want)
    updates = rng.standard_normal((6, 3))
    got = np.asarray(ops.scatter_nd(x, idx, updates, reduction="add"))
    t = torch.tensor(x).index_put(
        (torch.tensor(idx[:, 0]), torch.tensor(idx[:, 1])), torch.tensor(updates), accumulate=True
    )
    np.testing.assert_allclose(got, t.numpy(), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------- index_select, index_add


@st.composite
def select_cases(draw, dtypes=DTYPES):
    dtype = draw(st.sampled_from(dtypes))
    ndim = draw(st.integers(1, 3))
    xshape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    axis = draw(st.integers(-ndim, ndim - 1))
    n = xshape[axis % ndim]
    zero_d = draw(st.booleans()) and n > 0
    count = 1 if zero_d else (draw(st.integers(0, 6)) if n else 0)
    index_dtype = draw(st.sampled_from(["int32", "int64"]))
    indices = index_values(draw, () if zero_d else (count,), max(n, 1), index_dtype)
    x = draw(strided_arrays(dtype, shape=xshape, elements=elements(dtype)))
    return x, indices, axis, dtype


@SETTINGS
@given(case=select_cases())
def test_index_select_matches_numpy_and_torch(case):
    x, indices, axis, dtype = case
    got = ops.index_select(x, indices, axis=axis)
    want = np.take(reference_input(x), indices.reshape(-1), axis=axis)
    assert_matches(got, want, dtype)
    if dtype in ("float64", "int64", "int32"):
        t = torch.index_select(
            torch.from_numpy(np.array(x)),
            axis % x.ndim,
            torch.from_numpy(indices.reshape(-1) % max(x.shape[axis], 1)).long(),
        )
        np.testing.assert_array_equal(np.asarray(got), t.numpy())


@SETTINGS
@given(case=select_cases(dtypes=[d for d in DTYPES if d != "bool"]), data=st.data())
def test_index_add_matches_numpy_and_torch(case, data):
    x, indices, axis, dtype = case
    sshape = list(x.shape)
    sshape[axis % x.ndim] = indices.size
    source = data.draw(strided_arrays(dtype, shape=tuple(sshape), elements=elements(dtype)))
    alpha = data.draw(
        st.sampled_from([1.0, 2.0, -1.0] + ([0.5] if dtype.startswith("float") else []))
    )
    got = ops.index_add(x, indices, source, axis=axis, alpha=alpha)
    want = index_add_reference(reference_input(x), indices, reference_input(source), axis, alpha)
    assert_matches(got, want, dtype)
    if dtype in ("float64", "int64"):
        a = axis % x.ndim
        t = torch.from_numpy(np.array(x)).index_add(
            a,
            torch.from_numpy(indices.reshape(-1) % max(x.shape[a], 1)).long(),
            torch.from_numpy(np.array(source)),
            alpha=alpha if dtype == "float64" else int(alpha),
        )
        assert_matches(
            got, t.numpy().astype(np.float64) if dtype == "float64" else t.numpy(), dtype
        )


# ----------------------------------------------------------------------- errors


def test_out_of_range_indices_are_errors_naming_op_index_and_bound():
    x = np.arange(12.0).reshape(3, 4)
    cases = [
        (
            "put_along_axis",
            lambda out: ops.put_along_axis(
                x, np.array([[0], [4], [1]]), np.ones((3, 1)), axis=1, out=out
            ),
            "index 4",
            "[-4, 4)",
        ),
        (
            "put_along_axis",
            lambda out: ops.put_along_axis(
                x, np.array([[0], [-5], [1]], np.int32), np.ones((3, 1)), axis=1, out=out
            ),
            "index -5",
            "[-4, 4)",
        ),
        (
            "scatter_nd",
            lambda out: ops.scatter_nd(x, np.array([[0, 1], [2, 9]]), np.ones(2), out=out),
            "index 9",
            "[-4, 4)",
        ),
        (
            "index_add",
            lambda out: ops.index_add(x, np.array([0, 3]), np.ones((2, 4)), axis=0, out=out),
            "index 3",
            "[-3, 3)",
        ),
    ]
    for op, call, index, bound in cases:
        out = np.full((3, 4), 7.0)
        with pytest.raises(ctensor.InvalidArgumentError) as error:
            call(out)
        message = str(error.value)
        assert op in message and index in message and bound in message, message
        np.testing.assert_array_equal(out, 7.0)  # untouched
    for op, call in [
        ("gather_nd", lambda out: ops.gather_nd(x, np.array([[3, 0]]), out=out)),
        ("index_select", lambda out: ops.index_select(x, np.array([-4]), axis=0, out=out)),
    ]:
        out = np.full((1, 4) if op == "index_select" else (1,), 7.0)
        with pytest.raises(ctensor.InvalidArgumentError, match=op):
            call(out)
        np.testing.assert_array_equal(out, 7.0)


def test_wrong_index_dtype_and_shapes_are_errors():
    x = np.zeros((3, 4))
    with pytest.raises(ctensor.UnsupportedDTypeError, match="int32 or int64"):
        ops.put_along_axis(x, np.zeros((3, 1)), np.ones((3, 1)), axis=1)
    with pytest.raises(ctensor.UnsupportedDTypeError, match="int32 or int64"):
        ops.index_select(x, np.zeros(2, np.uint8), axis=0)
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.put_along_axis(x, np.zeros((2, 2), np.int64), np.ones((2, 2)), axis=1)
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.put_along_axis(x, np.zeros((3, 2), np.int64), np.ones((3, 3)), axis=1)
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.scatter_nd(x, np.zeros((2, 1), np.int64), np.ones((2, 3)))
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.gather_nd(x, np.zeros((2, 3), np.int64))
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.index_add(x, np.zeros(2, np.int64), np.ones((3, 4)), axis=0)
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.index_select(x, np.zeros((2, 2), np.int64), axis=0)
    with pytest.raises(ctensor.InvalidArgumentError, match="reduction"):
        ops.put_along_axis(x, np.zeros((3, 1), np.int64), np.ones((3, 1)), axis=1, reduction="mean")
    with pytest.raises(ctensor.UnsupportedDTypeError, match="bool"):
        ops.scatter_nd(
            np.zeros(3, bool), np.zeros((1, 1), np.int64), np.ones(1, bool), reduction="add"
        )
    # values of another dtype promote as NumPy's (the binding casts both to float64)
    mixed = ops.put_along_axis(x, np.zeros((3, 1), np.int64), np.ones((3, 1), np.float32), axis=1)
    assert np.asarray(mixed).dtype == np.float64 and np.asarray(mixed)[0, 0] == 1.0
    with pytest.raises(ctensor.InvalidArgumentError, match="whole number"):
        ops.index_add(
            np.zeros(3, np.int32), np.zeros(1, np.int64), np.ones(1, np.int32), axis=0, alpha=0.5
        )
    with pytest.raises(ctensor.InvalidArgumentError, match="batch_dims"):
        ops.gather_nd(x, np.zeros((3, 1), np.int64), batch_dims=2)
    # broadcast views name 2^64 positions: an error before any index is read
    many = np.broadcast_to(np.zeros((1, 1), np.int64), (2**44, 1))
    with pytest.raises(ctensor.SizeOverflowError, match="too many positions"):
        ops.put_along_axis(np.zeros((1, 2**20)), many, np.zeros((1, 1)), axis=0)
    # integer x converts alpha to int64: infinities and values past int64 are errors
    for alpha in (np.inf, -np.inf, np.nan, 2.0**63, -(2.0**64)):
        with pytest.raises(ctensor.InvalidArgumentError, match="whole number"):
            ops.index_add(
                np.zeros(3, np.int64),
                np.zeros(1, np.int64),
                np.ones(1, np.int64),
                axis=0,
                alpha=alpha,
            )
