"""Float64 NumPy references of the deep-learning ops NumPy has no function for: conv2d,
conv_transpose2d, the pooling ops, interpolate and their backward operators. They register in
references.NUMPY, so that every backend (the built-in CPU one included) is checked without
PyTorch; references.TORCH keeps torch's results as a second opinion where torch is installed.

Convolutions are sums over kernel taps of strided slices (each tap one einsum over channels);
their backward operators are the adjoints of the same slices. Average and adaptive pooling and
interpolation are separable linear maps, one matrix per spatial axis (out = A_h x A_w^T, their
backward A_h^T g A_w); max pooling gathers its windows. Window, index and weight arithmetic
follows the kernels' documented rules (torch's, see kernels/cpu/ops/pool_window.h and
interpolate_kernels.c)."""

from __future__ import annotations

import math

import numpy as np

from . import dtypes as dt
from .references import NUMPY, _ref

__all__ = ["conv2d", "conv2d_grad_input", "conv2d_grad_weight", "pool_output_size"]


def _pair(v, fallback=None):  # noqa: ANN001, ANN202
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        return fallback
    if isinstance(v, (int, float)):
        return (v, v)
    return (v[0], v[-1])


def _f64(a):  # noqa: ANN001, ANN202
    return None if a is None else np.asarray(a, np.float64)


# ------------------------------------------------------------------ convolutions ---------------


def _conv_attrs(attrs) -> tuple:  # noqa: ANN001
    return (
        _pair(attrs["stride"], (1, 1)),
        _pair(attrs["padding"], (0, 0)),
        _pair(attrs["dilation"], (1, 1)),
        int(attrs["groups"]),
    )


def _conv_out(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _taps(k: int, s: int, d: int, n_out: int):  # noqa: ANN202
    """Per kernel tap i, the slice of the padded input it reads for n_out outputs."""
    if n_out <= 0:
        return [slice(0, 0) for _ in range(k)]
    return [slice(i * d, i * d + s * (n_out - 1) + 1, s) for i in range(k)]


def conv2d(x, w, b, stride, padding, dilation, groups):  # noqa: ANN001, ANN201
    """NCHW convolution in float64 (the cross-correlation of torch and ONNX)."""
    x, w = _f64(x), _f64(w)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    ho, wo = _conv_out(h, kh, sh, ph, dh), _conv_out(wd, kw, sw, pw, dw)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    xg = xp.reshape(n, groups, cg, *xp.shape[2:])
    wg = w.reshape(groups, o // groups, cg, kh, kw)
    out = np.zeros((n, groups, o // groups, ho, wo))
    for i, rows in enumerate(_taps(kh, sh, dh, ho)):
        for j, cols in enumerate(_taps(kw, sw, dw, wo)):
            out += np.einsum("ngchw,goc->ngohw", xg[..., rows, cols], wg[..., i, j])
    out = out.reshape(n, o, ho, wo)
    if b is not None:
        out = out + _f64(b).reshape(1, o, 1, 1)
    return out


def _grouped_cotangent(g, n, o, ho, wo, groups):  # noqa: ANN001, ANN202
    """The output cotangent g (which may cover the first rows and columns of the (n, o, ho, wo)
    output only) in float64, split by group: (n, groups, o // groups, rows, cols). The positions
    g lacks are not widened with zeros: as in the kernels (and torch's conv_transpose2d, whose
    output_padding rows no input reaches), they take part in no product, so a nan or inf
    weight or input does not meet a 0 there."""
    g = _f64(g)[:, :, :ho, :wo]
    return g.reshape(n, groups, o // groups, *g.shape[2:])


def conv2d_grad_input(g, x_shape, w, stride, padding, dilation, groups):  # noqa: ANN001, ANN201
    """The input cotangent of conv2d (x of x_shape, weight w) for the output cotangent g; g may
    cover the first rows and columns of the output only (zeros elsewhere)."""
    w = _f64(w)
    n, c, h, wd = x_shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    ho, wo = _conv_out(h, kh, sh, ph, dh), _conv_out(wd, kw, sw, pw, dw)
    gg = _grouped_cotangent(g, n, o, ho, wo, groups)
    wg = w.reshape(groups, o // groups, cg, kh, kw)
    gxp = np.zeros((n, groups, cg, h + 2 * ph, wd + 2 * pw))
    for i, rows in enumerate(_taps(kh, sh, dh, gg.shape[-2])):
        for j, cols in enumerate(_taps(kw, sw, dw, gg.shape[-1])):
            gxp[..., rows, cols] += np.einsum("ngohw,goc->ngchw", gg, wg[..., i, j])
    return gxp.reshape(n, c, h + 2 * ph, wd + 2 * pw)[:, :, ph : ph + h, pw : pw + wd]


def conv2d_grad_weight(g, x, w_shape, stride, padding, dilation, groups):  # noqa: ANN001, ANN201
    """The weight cotangent of conv2d (input x, weight of w_shape) for the output cotangent g."""
    x = _f64(x)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w_shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    ho, wo = _conv_out(h, kh, sh, ph, dh), _conv_out(wd, kw, sw, pw, dw)
    gg = _grouped_cotangent(g, n, o, ho, wo, groups)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    xg = xp.reshape(n, groups, cg, *xp.shape[2:])
    gw = np.zeros((groups, o // groups, cg, kh, kw))
    for i, rows in enumerate(_taps(kh, sh, dh, gg.shape[-2])):
        for j, cols in enumerate(_taps(kw, sw, dw, gg.shape[-1])):
            gw[..., i, j] = np.einsum("ngchw,ngohw->goc", xg[..., rows, cols], gg)
    return gw.reshape(o, cg, kh, kw)


@_ref(NUMPY, "conv2d")
def _conv2d(ins, attrs, out):  # noqa: ANN001, ANN202
    return [conv2d(ins[0], ins[1], ins[2], *_conv_attrs(attrs))]


def _transposed_shape(x_shape, w_shape, attrs) -> tuple:  # noqa: ANN001
    """conv_transpose2d's output shape, and (stride, padding, dilation, groups)."""
    stride, padding, dilation, groups = _conv_attrs(attrs)
    extra = _pair(attrs["output_padding"], (0, 0))
    n, _, h, wd = x_shape
    _, cog, kh, kw = w_shape
    size = [
        (e - 1) * s - 2 * p + d * (k - 1) + op + 1
        for e, s, p, d, k, op in zip(
            (h, wd), stride, padding, dilation, (kh, kw), extra, strict=True
        )
    ]
    return (n, cog * groups, *size), (stride, padding, dilation, groups)


@_ref(NUMPY, "conv_transpose2d")
def _conv_transpose2d(ins, attrs, out):  # noqa: ANN001, ANN202
    """The adjoint of conv2d: conv2d's input cotangent, the input being conv_transpose2d's output
    and the cotangent its input."""
    x, w, b = ins
    shape, geometry = _transposed_shape(x.shape, w.shape, attrs)
    y = conv2d_grad_input(x, shape, w, *geometry)
    if b is not None:
        y = y + _f64(b).reshape(1, -1, 1, 1)
    return [y]


@_ref(NUMPY, "conv2d_backward_input")
def _conv2d_backward_input(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x, w = ins
    return [conv2d_grad_input(g, x.shape, w, *_conv_attrs(attrs))]


@_ref(NUMPY, "conv2d_backward_weight")
def _conv2d_backward_weight(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x, w = ins
    return [conv2d_grad_weight(g, x, w.shape, *_conv_attrs(attrs))]


@_ref(NUMPY, "conv_transpose2d_backward_input")
def _conv_transpose2d_backward_input(ins, attrs, out):  # noqa: ANN001, ANN202
    """conv_transpose2d's input cotangent: conv2d of the cotangent (the adjoint's adjoint)."""
    g, x, w = ins
    y = conv2d(g, w, None, *_conv_attrs(attrs))
    return [y[:, :, : x.shape[2], : x.shape[3]]]


# ------------------------------------------------------------------ pooling --------------------


def _pool_attrs(attrs) -> tuple:  # noqa: ANN001
    kernel = _pair(attrs["kernel_size"])
    stride = _pair(attrs["stride"], kernel)
    padding = _pair(attrs["padding"], (0, 0))
    dilation = _pair(attrs.get("dilation"), (1, 1))
    return kernel, stride, padding, dilation


def pool_output_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: floor or ceil, and with ceil_mode the last window must start
    inside the input or its left padding."""
    span = size + 2 * p - d * (k - 1) - 1
    n = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (n - 1) * s >= size + p:
        n -= 1
    return n


def _avg_matrix(size: int, k: int, s: int, p: int, ceil_mode: bool, attrs) -> np.ndarray:  # noqa: ANN001
    """avg_pool2d along one axis: out x in weights; the divisor (count_include_pad: the window
    clipped to the padded extent; else to the input) is a product of the two axes' counts, so
    each axis carries its own factor (divisor_override: 1 here, divided once at the end)."""
    n = pool_output_size(size, k, s, p, 1, ceil_mode)
    a = np.zeros((n, size))
    for i in range(n):
        start = i * s - p
        end = min(start + k, size + p)
        padded = end - start
        lo, hi = max(start, 0), min(end, size)
        if hi <= lo:
            continue
        if attrs["divisor_override"] is not None:
            a[i, lo:hi] = 1.0
        else:
            a[i, lo:hi] = 1.0 / (padded if attrs["count_include_pad"] else hi - lo)
    return a


def _avg_matrices(x_shape, attrs) -> tuple:  # noqa: ANN001
    kernel, stride, padding, _ = _pool_attrs(attrs)
    return tuple(
        _avg_matrix(x_shape[-2 + k], kernel[k], stride[k], padding[k], attrs["ceil_mode"], attrs)
        for k in range(2)
    )


def _matrix_taps(a: np.ndarray) -> list:
    """The nonzero entries of an out x in matrix as taps: per tap t, (index, weight, valid) over
    the outputs, so that a NaN only spreads to the outputs whose window holds it (a product
    with a zero weight would spread it everywhere)."""
    rows = [np.flatnonzero(r) for r in a]
    width = max((len(r) for r in rows), default=0)
    taps = []
    for t in range(width):
        valid = np.array([t < len(r) for r in rows], dtype=bool)
        index = np.array([r[t] if t < len(r) else 0 for r in rows], dtype=np.int64)
        taps.append((index, a[np.arange(len(rows)), index], valid))
    return taps


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A per-position vector shaped to broadcast along `axis` of an ndim-array."""
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def _apply_taps(x: np.ndarray, taps: list, n: int, axis: int) -> np.ndarray:
    """out[..., i, ...] = sum over taps of weight * x[..., index, ...] (valid taps only)."""
    shape = list(x.shape)
    shape[axis] = n
    out = np.zeros(shape)
    for index, weight, valid in taps:
        term = _along(weight, axis, x.ndim) * np.take(x, index, axis=axis)
        out += np.where(_along(valid, axis, x.ndim), term, 0.0)
    return out


def _adjoint_taps(g: np.ndarray, taps: list, size: int, axis: int) -> np.ndarray:
    """The adjoint of _apply_taps: each weight * g[..., i, ...] added at its index."""
    moved = np.moveaxis(g, axis, 0)
    out = np.zeros((size, *moved.shape[1:]))
    for index, weight, valid in taps:
        term = weight[valid].reshape(-1, *([1] * (moved.ndim - 1))) * moved[valid]
        np.add.at(out, index[valid], term)
    return np.moveaxis(out, 0, axis)


def _separable(x, ah, aw):  # noqa: ANN001, ANN202
    """ah x aw^T over the last two axes, with taps (see _matrix_taps)."""
    x = _f64(x)
    y = _apply_taps(x, _matrix_taps(aw), aw.shape[0], x.ndim - 1)
    return _apply_taps(y, _matrix_taps(ah), ah.shape[0], x.ndim - 2)


def _separable_adjoint(g, ah, aw):  # noqa: ANN001, ANN202
    g = _f64(g)
    y = _adjoint_taps(g, _matrix_taps(aw), aw.shape[1], g.ndim - 1)
    return _adjoint_taps(y, _matrix_taps(ah), ah.shape[1], g.ndim - 2)


def _override(y, attrs):  # noqa: ANN001, ANN202
    d = attrs.get("divisor_override")
    return y if d is None else y / float(d)


@_ref(NUMPY, "avg_pool2d")
def _avg_pool2d(ins, attrs, out):  # noqa: ANN001, ANN202
    ah, aw = _avg_matrices(ins[0].shape, attrs)
    return [_override(_separable(ins[0], ah, aw), attrs)]


@_ref(NUMPY, "avg_pool2d_backward")
def _avg_pool2d_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x = ins
    ah, aw = _avg_matrices(x.shape, attrs)
    return [_override(_separable_adjoint(g, ah, aw), attrs)]


def _adaptive_matrix(size: int, n: int) -> np.ndarray:
    """Window i covers [floor(i size / n), ceil((i + 1) size / n))."""
    a = np.zeros((n, size))
    for i in range(n):
        lo, hi = (i * size) // n, -(-((i + 1) * size) // n)
        a[i, lo:hi] = 1.0 / (hi - lo)
    return a


@_ref(NUMPY, "adaptive_avg_pool2d")
def _adaptive_avg_pool2d(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    oh, ow = _pair(attrs["output_size"])
    return [_separable(x, _adaptive_matrix(x.shape[-2], oh), _adaptive_matrix(x.shape[-1], ow))]


@_ref(NUMPY, "adaptive_avg_pool2d_backward")
def _adaptive_avg_pool2d_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x = ins
    ah = _adaptive_matrix(x.shape[-2], g.shape[-2])
    aw = _adaptive_matrix(x.shape[-1], g.shape[-1])
    return [_separable_adjoint(g, ah, aw)]


def _max_windows(shape, attrs) -> tuple:  # noqa: ANN001
    """Per axis: the input index of every (output, tap) pair and whether it is inside the
    input."""
    kernel, stride, padding, dilation = _pool_attrs(attrs)
    out = []
    for k in range(2):
        size = shape[-2 + k]
        n = pool_output_size(
            size, kernel[k], stride[k], padding[k], dilation[k], attrs["ceil_mode"]
        )
        index = (
            np.arange(n)[:, None] * stride[k]
            - padding[k]
            + np.arange(kernel[k])[None] * dilation[k]
        )
        out.append((index, (index >= 0) & (index < size)))
    return tuple(out)


def _max_low(dtype) -> float | int:  # noqa: ANN001
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


@_ref(NUMPY, "max_pool2d")
def _max_pool2d(ins, attrs, out):  # noqa: ANN001, ANN202
    """The largest value of each window, padding being -inf (an integer dtype's minimum); NaN
    wins (torch's and the kernels' rule)."""
    x = np.asarray(ins[0])
    (rows, rok), (cols, cok) = _max_windows(x.shape, attrs)
    low = _max_low(x.dtype)
    r, c = np.clip(rows, 0, x.shape[-2] - 1), np.clip(cols, 0, x.shape[-1] - 1)
    # (..., Ho, kh, Wo, kw)
    windows = x[..., r[:, :, None, None], c[None, None, :, :]]
    inside = rok[:, :, None, None] & cok[None, None, :, :]
    windows = np.where(inside, windows, x.dtype.type(low))
    return [windows.max(axis=(-3, -1))]


@_ref(NUMPY, "max_pool2d_backward")
def _max_pool2d_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """Each window's cotangent goes to the element torch's loop picks: taps in row-major order
    over the input, starting at the first one inside; a tap replaces the pick when its value is
    greater or NaN (so the last NaN, else the first maximum)."""
    g, x = _f64(ins[0]), _f64(ins[1])
    (rows, rok), (cols, cok) = _max_windows(x.shape, attrs)
    lead = x.shape[:-2]
    h, w = x.shape[-2:]
    ho, wo = rows.shape[0], cols.shape[0]
    flat = x.reshape(-1, h * w)
    best = np.full((flat.shape[0], ho, wo), -np.inf)
    # the first tap inside each window starts the scan (torch's maxindex)
    first_row = np.where(rok.any(1), rows[np.arange(ho), rok.argmax(1)], -1)
    first_col = np.where(cok.any(1), cols[np.arange(wo), cok.argmax(1)], -1)
    start = np.where(
        (first_row[:, None] >= 0) & (first_col[None, :] >= 0),
        first_row[:, None] * w + first_col[None, :],
        -1,
    )
    picks = np.broadcast_to(start, best.shape).copy()
    for i in range(rows.shape[1]):
        for j in range(cols.shape[1]):
            inside = rok[:, i][:, None] & cok[:, j][None, :]
            index = np.clip(rows[:, i], 0, h - 1)[:, None] * w + np.clip(cols[:, j], 0, w - 1)
            values = flat[:, index]
            take = inside & ((values > best) | np.isnan(values))
            best = np.where(take, values, best)
            picks = np.where(take, index, picks)
    gx = np.zeros(flat.shape)
    gflat = g.reshape(-1, ho * wo)
    rows_of = np.repeat(np.arange(flat.shape[0]), ho * wo)
    valid = picks.reshape(-1) >= 0
    np.add.at(gx, (rows_of[valid], picks.reshape(-1)[valid]), gflat.reshape(-1)[valid])
    return [gx.reshape(*lead, h, w)]


# ------------------------------------------------------------------ interpolate ---------------


def _interp_sizes(x_shape, attrs) -> tuple:  # noqa: ANN001
    if attrs["size"] is not None:
        return _pair(attrs["size"])
    scale = _pair(attrs["scale_factor"])
    return tuple(math.floor(x_shape[-2 + k] * scale[k]) for k in range(2))


def _interp_taps(size: int, n: int, k: int, attrs, out_dtype: str) -> list:  # noqa: ANN001
    """interpolate along one axis as taps (index, weight, valid) over the n outputs, with the
    kernels' (torch's) index and weight arithmetic in the compute type (float32 below float64),
    the bilinear weights rounded to the output dtype. Both bilinear taps count even where a
    weight is 0, as in the kernels' formula (a NaN there spreads)."""
    compute = np.float64 if out_dtype == "float64" else np.float32
    factor = None if attrs["scale_factor"] is None else _pair(attrs["scale_factor"])[k]
    every = np.ones(n, dtype=bool)
    if n == size:
        return [(np.arange(n), np.ones(n), every)]
    if attrs["mode"] != "bilinear":
        if n == 2 * size:
            src = np.arange(n) >> 1
        else:
            scale = np.float32(1.0 / factor) if factor else np.float32(size) / np.float32(n)
            src = np.floor(np.arange(n, dtype=np.float32) * scale).astype(np.int64)
            src = np.minimum(src, size - 1)
        return [(src, np.ones(n), every)]
    if attrs["align_corners"]:
        scale = compute(size - 1) / compute(n - 1) if n > 1 else compute(0)
        real = scale * np.arange(n, dtype=compute)
    else:
        scale = compute(1.0 / factor) if factor else compute(size) / compute(n)
        real = scale * (np.arange(n, dtype=compute) + compute(0.5)) - compute(0.5)
        real = np.maximum(real, compute(0))
    i0 = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), size - 1)
    lam = np.clip(real - i0.astype(compute), 0, 1).astype(compute)
    l1 = dt.to_values(dt.from_values(lam.astype(np.float64), out_dtype), out_dtype)
    rest = (compute(1) - l1.astype(compute)).astype(np.float64)
    l0 = dt.to_values(dt.from_values(rest, out_dtype), out_dtype)
    i1 = i0 + (i0 < size - 1)
    return [(i0, np.asarray(l0, np.float64), every), (i1, np.asarray(l1, np.float64), every)]


def _interp_all_taps(x_shape, attrs, out_dtype: str) -> tuple:  # noqa: ANN001
    sizes = _interp_sizes(x_shape, attrs)
    return tuple(
        (_interp_taps(x_shape[-2 + k], sizes[k], k, attrs, out_dtype), sizes[k]) for k in range(2)
    )


@_ref(NUMPY, "interpolate")
def _interpolate(ins, attrs, out):  # noqa: ANN001, ANN202
    x = _f64(ins[0])
    (th, nh), (tw, nw) = _interp_all_taps(x.shape, attrs, out[0])
    return [_apply_taps(_apply_taps(x, tw, nw, x.ndim - 1), th, nh, x.ndim - 2)]


@_ref(NUMPY, "interpolate_backward")
def _interpolate_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x = _f64(ins[0]), ins[1]
    (th, _), (tw, _) = _interp_all_taps(x.shape, attrs, out[0])
    y = _adjoint_taps(g, tw, x.shape[-1], g.ndim - 1)
    return [_adjoint_taps(y, th, x.shape[-2], g.ndim - 2)]
