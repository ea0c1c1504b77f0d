"""Float64 NumPy references of the backward operators of the shape and indexing ops and of clip
(capi/ops/shape_grad_ops.c, capi/ops/index_ops.c). They register in references.NUMPY.

The gradient of a forward that only reads elements of x (tile, repeat, pad, roll, slice,
permute_dims, concat, stack, take, take_along_axis, index_select, gather_nd, embedding) is the
adjoint of that read: the forward's own NumPy reference, run on x's flat positions (an int64
arange of x's shape), says which element of x each output position read (-1: none, pad's
constant border); grad_out is then added into zeros of x's shape at those positions
(np.bincount, in float64). Repeated indices thus add up, whatever their order.

The scatters with a reduction (put_along_axis, scatter_nd) follow their schema's documented
rule (torch's scatter_reduce backward) on the positions that land on each element of x, in
row-major order of the positions; `out`, the forward's output, is read as given (the op table
makes it the forward's result on the case's inputs)."""

from __future__ import annotations

import numpy as np

from .references import NUMPY, _ref, along_axis_index, gather_nd_reference

__all__ = ["read_sources", "scatter_landings"]


def _positions(shape) -> np.ndarray:  # noqa: ANN001
    """x's flat positions in x's shape (int64)."""
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


def _adjoint(g: np.ndarray, sources: np.ndarray, size: int) -> np.ndarray:
    """Flat array of `size` elements: the sum of g's elements at each source position (sources
    of g's shape; -1 reads nothing)."""
    src = np.broadcast_to(sources, g.shape).reshape(-1)
    weights = np.asarray(g, np.float64).reshape(-1)
    keep = src >= 0
    return np.bincount(src[keep], weights=weights[keep], minlength=size)[:size]


def read_sources(forward: str, x_shape, rest: list, attrs: dict) -> np.ndarray:  # noqa: ANN001
    """The flat position of x that each output element of a reading forward read (-1: none):
    the forward's reference run on x's positions. rest: the forward's inputs after x (the
    indices); embedding's x is its weight, read at the indices."""
    positions = _positions(x_shape)
    if forward == "embedding":
        return positions[rest[0]]
    if forward == "gather_nd":
        return gather_nd_reference(positions, rest[0], attrs["batch_dims"])
    return np.asarray(NUMPY[forward]([positions, *rest], attrs, ["int64"])[0])


def _read_adjoint(forward: str, g: np.ndarray, x_shape, rest: list, attrs: dict) -> np.ndarray:  # noqa: ANN001
    """The adjoint of a reading forward: its reference on x's positions gives each output
    element's source."""
    size = int(np.prod(x_shape, dtype=np.int64))
    sources = read_sources(forward, x_shape, rest, attrs)
    return _adjoint(g, sources, size).reshape(x_shape)


def _read_backward(forward: str):  # noqa: ANN202
    """The reference of the backward op of a forward reading x (inputs grad_out, x, then the
    forward's other inputs)."""

    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        g, x, *rest = ins
        return [_read_adjoint(forward, g, x.shape, rest, attrs)]

    return run


for _forward in (
    "tile",
    "repeat",
    "slice",
    "take",
    "take_along_axis",
    "index_select",
    "gather_nd",
):
    NUMPY[f"{_forward}_backward"] = _read_backward(_forward)


@_ref(NUMPY, "pad_backward")
def _pad_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    # the constant border reads no element of x: it carries position -1
    return [_read_adjoint("pad", ins[0], ins[1].shape, [], dict(attrs, value=-1))]


@_ref(NUMPY, "roll_backward")
def _roll_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    return [_read_adjoint("roll", ins[0], ins[0].shape, [], attrs)]


@_ref(NUMPY, "permute_dims_backward")
def _permute_dims_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    axes = [int(a) + len(attrs["axes"]) if int(a) < 0 else int(a) for a in attrs["axes"]]
    x_shape = tuple(ins[0].shape[axes.index(k)] for k in range(len(axes)))
    return [_read_adjoint("permute_dims", ins[0], x_shape, [], attrs)]


def _joined_adjoint(forward: str, ins: list, attrs: dict) -> list:
    """concat / stack: every array's positions numbered in one space, split back afterwards."""
    g, shapes = ins[0], [a.shape for a in ins[1:]]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    starts = np.cumsum([0, *sizes])
    ids = [starts[k] + _positions(s) for k, s in enumerate(shapes)]
    sources = np.asarray(NUMPY[forward](ids, attrs, ["int64"])[0])
    flat = _adjoint(g, sources, int(starts[-1]))
    return [flat[starts[k] : starts[k + 1]].reshape(s) for k, s in enumerate(shapes)]


@_ref(NUMPY, "concat_backward")
def _concat_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    return _joined_adjoint("concat", ins, attrs)


@_ref(NUMPY, "stack_backward")
def _stack_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    return _joined_adjoint("stack", ins, attrs)


@_ref(NUMPY, "embedding_backward")
def _embedding_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, indices, weight = ins
    return [_read_adjoint("embedding", g, weight.shape, [indices], attrs)]


@_ref(NUMPY, "index_add_backward")
def _index_add_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g = np.asarray(ins[0], np.float64)
    selected = np.take(g, ins[2].reshape(-1), axis=attrs["axis"])
    return [g.copy(), attrs["alpha"] * selected]


@_ref(NUMPY, "clip_backward")
def _clip_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """torch.clamp's rule as the schema states it (a nan compares false throughout)."""
    g, x, lo, hi = ins
    shape = np.broadcast_shapes(*(v.shape for v in ins if v is not None))
    with np.errstate(invalid="ignore"):
        if attrs["wrt"] == "x":
            keep = np.ones(shape, bool)
            if lo is not None:
                keep = keep & (x >= lo)
            if hi is not None:
                keep = keep & (x <= hi)
        elif attrs["wrt"] == "min":
            keep = (x < lo) & (lo < hi) if hi is not None else x < lo
        else:
            keep = (x > hi) | (hi < lo) if lo is not None else x > hi
    return [np.where(np.broadcast_to(keep, shape), np.broadcast_to(g, shape), 0.0)]


# ------------------------------------------------------------------ scatters with a reduction


def scatter_landings(forward: str, x_shape, indices: np.ndarray, values: np.ndarray, attrs):  # noqa: ANN001, ANN201
    """(flat element of x each position lands on, the value at each position, the positions'
    shape), positions in row-major order: put_along_axis's positions are x's shape with the
    axis at extent 1 broadcast with the indices' shape; scatter_nd's are every update element
    (one slab of x per index tuple)."""
    positions = _positions(x_shape)
    if forward == "put_along_axis":
        target = positions[along_axis_index(x_shape, indices, attrs["axis"])]
        return target.reshape(-1), np.broadcast_to(values, target.shape).reshape(-1), target.shape
    k = indices.shape[-1]
    tuples = indices.reshape(-1, k)
    slabs = positions[tuple(tuples[:, m] for m in range(k))]
    slabs = np.broadcast_to(slabs, (tuples.shape[0],) + tuple(x_shape[k:]))
    return slabs.reshape(-1), values.reshape(-1), values.shape


def _scatter_backward(forward: str):  # noqa: ANN202
    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        g, x, indices, values, result = (np.asarray(v) for v in ins)
        g, xv, ov = g.reshape(-1), x.reshape(-1).astype(np.float64), result.reshape(-1)
        target, v, shape = scatter_landings(forward, x.shape, indices, values, attrs)
        v = v.astype(np.float64)
        size, reduction = x.size, attrs["reduction"]
        count = np.bincount(target, minlength=size)
        gt, xt, ot = g[target], xv[target], ov[target]
        with np.errstate(all="ignore"):
            if reduction == "add":
                grad_x, grad_v = g.astype(np.float64), gt.astype(np.float64)
            elif reduction == "none":
                # the value kept is the last position landing on the element
                last = np.full(size, -1, np.int64)
                np.maximum.at(last, target, np.arange(target.size))
                grad_x = np.where(count > 0, 0.0, g)
                grad_v = np.where(last[target] == np.arange(target.size), gt, 0.0)
            elif reduction == "multiply":
                product = np.ones(size)
                np.multiply.at(product, target, v)
                nonzero = np.ones(size)
                np.multiply.at(nonzero, target, np.where(v == 0, 1.0, v))
                zeros = np.bincount(target, weights=(v == 0).astype(np.float64), minlength=size)
                grad_x = np.where(xv != 0, g * ov / np.where(xv != 0, xv, 1.0), g * product)
                single = zeros[target] == 1
                grad_v = np.where(
                    v != 0,
                    gt * ot / np.where(v != 0, v, 1.0),
                    np.where(single, gt * xt * nonzero[target], 0.0),
                )
            else:  # max, min: the cotangent shared evenly among the candidates equal to out
                matches = np.bincount(target, weights=(v == ot).astype(np.float64), minlength=size)
                grad_x = np.where(xv == ov, g / (1.0 + matches), 0.0)
                grad_v = np.where(v == ot, gt / ((xt == ot) + matches[target]), 0.0)
        return [grad_x.reshape(x.shape), grad_v.reshape(shape)]

    return run


NUMPY["put_along_axis_backward"] = _scatter_backward("put_along_axis")
NUMPY["scatter_nd_backward"] = _scatter_backward("scatter_nd")
