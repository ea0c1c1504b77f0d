"""Reference results. NUMPY holds a float64 NumPy reference per op (floats arrive as float64
values, integers and bools as themselves; results are cast to the output dtype by the caller);
the deep-learning ops NumPy has no function for (convolutions, pooling, interpolate and their
backward operators) are in nn_references.py, the backward operators of the shape and indexing
ops in shape_grad_references.py; both register them here. TORCH holds PyTorch's
float64 results of those ops: a second opinion, used only where torch is installed (see
runner._second_opinion).

Every function takes (inputs, attrs, out_dtypes) -- attrs with the schema's defaults filled in --
and returns the list of outputs."""

from __future__ import annotations

import math

import numpy as np

from . import philox

__all__ = ["NUMPY", "TORCH", "FUSED"]

NUMPY: dict = {}
TORCH: dict = {}
#: Complex multiply and square with each part one fused multiply-add (fma(ar, br, -ai*bi),
#: fma(ar, bi, ai*br)), as NumPy's loops compute them where the machine has FMA (and GPU
#: compilers by default): a second reference of those ops (see runner), which differs from the
#: plain formula of NUMPY only where a part's product overflows and meets an infinity.
FUSED: dict = {}


def _ref(table: dict, *names: str):  # noqa: ANN202
    def register(fn):  # noqa: ANN001, ANN202
        for name in names:
            table[name] = fn
        return fn

    return register


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f"


def _is_inexact(a: np.ndarray) -> bool:
    """Float or complex (complex arrives as complex128 values)."""
    return a.dtype.kind in "fc"


def _plain_product(fn):  # noqa: ANN001, ANN202
    """Complex multiply and square by the plain formula (ar*br - ai*bi, ar*bi + ai*br) in the
    output dtype's parts, ctensor's definition. NumPy's own loops fuse these multiply-adds where
    the machine has FMA, and a float64 computation of complex64 does not overflow where float32
    does: both change only special values, where a part's product overflows to inf and meets
    another inf (inf - inf is nan). Other dtypes go to `fn`."""

    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        if not out[0].startswith("complex"):
            return fn(ins, attrs, out)
        x = [np.asarray(v, out[0]) for v in ins]
        a, b = x if len(x) == 2 else (x[0], x[0])
        r = np.empty(np.broadcast_shapes(a.shape, b.shape), out[0])
        r.real = a.real * b.real - a.imag * b.imag
        r.imag = a.real * b.imag + a.imag * b.real
        return [r]

    return run


@_ref(FUSED, "multiply", "square")
def _fused_product(ins, attrs, out):  # noqa: ANN001, ANN202
    """Products in long double (x87 extended on x86-64: exact for float32 parts, and no overflow
    for float64 parts), the other product rounded to the part dtype, one final rounding."""
    part, ld = (np.float32 if out[0] == "complex64" else np.float64), np.longdouble
    x = [np.asarray(v, out[0]) for v in ins]
    a, b = np.broadcast_arrays(*(x if len(x) == 2 else (x[0], x[0])))
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    r = np.empty(a.shape, out[0])
    r.real = (ar.astype(ld) * br.astype(ld) - (ai * bi).astype(ld)).astype(part)
    r.imag = (ar.astype(ld) * bi.astype(ld) + (ai * br).astype(ld)).astype(part)
    return [r]


def _axes(axis, ndim: int):  # noqa: ANN001, ANN202
    if axis is None:
        return None
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    return tuple(a % max(ndim, 1) for a in axes)


# ------------------------------------------------------------------ element-wise ---------------

_UNARY_FLOAT = {
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atanh": np.arctanh,
    "cos": np.cos,
    "cosh": np.cosh,
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log10": np.log10,
    "log1p": np.log1p,
    "log2": np.log2,
    "sin": np.sin,
    "sinh": np.sinh,
    "sqrt": np.sqrt,
    "tan": np.tan,
    "tanh": np.tanh,
    "reciprocal": np.reciprocal,
}
_erf = np.frompyfunc(math.erf, 1, 1)


def _unary(fn):  # noqa: ANN001, ANN202
    return lambda ins, attrs, out: [fn(ins[0])]


for _name, _fn in _UNARY_FLOAT.items():
    NUMPY[_name] = _unary(_fn)
NUMPY["erf"] = _unary(lambda x: np.asarray(_erf(x), dtype=np.float64))


def _rounding(fn):  # noqa: ANN001, ANN202
    return lambda ins, attrs, out: [fn(ins[0]) if _is_float(ins[0]) else ins[0]]


NUMPY["ceil"] = _rounding(np.ceil)
NUMPY["floor"] = _rounding(np.floor)
NUMPY["trunc"] = _rounding(np.trunc)
NUMPY["round"] = _rounding(np.round)
NUMPY["abs"] = _unary(lambda x: x if x.dtype == bool else np.abs(x))
NUMPY["negative"] = _unary(np.negative)
NUMPY["positive"] = _unary(lambda x: x.copy())
NUMPY["square"] = _plain_product(_unary(lambda x: x * x))


def _sign(x: np.ndarray) -> np.ndarray:
    """np.sign as NumPy 2 defines it: z / |z| for complex (0 at 0). NumPy 1.x's np.sign of a
    complex number is the sign of its real part, so it is written out there as NumPy 2
    computes it."""
    if x.dtype.kind != "c" or not np.__version__.startswith("1."):
        return np.sign(x)
    re, im = x.real, x.imag

    def divided(by: np.ndarray) -> np.ndarray:  # part by part: NumPy 1.x's complex division
        by = np.where(by == 0, 1, by)  # overflows for subnormal divisors
        return re / by + 1j * (im / by)

    with np.errstate(all="ignore"):
        modulus = np.abs(x)
        plain = np.where(modulus == 0, 0, divided(modulus))
    # An infinite |z| (an infinite part, or finite parts whose modulus overflows): the unit
    # vector along the real axis when the real part is infinite, else along the imaginary axis;
    # NaN when both parts are infinite.
    one_inf = np.where(np.isinf(re), np.sign(re) + 0j, 1j * np.sign(im))
    both = np.isinf(re) & np.isinf(im)
    infinite = np.where(both, complex(np.nan, np.nan), one_inf)
    return np.where(np.isinf(modulus), infinite, plain).astype(x.dtype)


NUMPY["sign"] = _unary(_sign)
NUMPY["isfinite"] = _unary(lambda x: np.isfinite(x) if _is_inexact(x) else np.ones(x.shape, bool))
NUMPY["isinf"] = _unary(lambda x: np.isinf(x) if _is_inexact(x) else np.zeros(x.shape, bool))
NUMPY["isnan"] = _unary(lambda x: np.isnan(x) if _is_inexact(x) else np.zeros(x.shape, bool))
NUMPY["logical_not"] = _unary(lambda x: np.logical_not(x))
NUMPY["bitwise_invert"] = _unary(np.invert)
NUMPY["relu"] = _unary(
    lambda x: (
        np.where(x > 0, x, np.where(np.isnan(x), x, 0))
        if _is_float(x)
        else np.maximum(x, 0).astype(x.dtype)
    )
)
NUMPY["sigmoid"] = _unary(lambda x: 1.0 / (1.0 + np.exp(-x)))
NUMPY["silu"] = _unary(lambda x: x / (1.0 + np.exp(-x)))
# x itself from 3 on: x * 6 / 6 would overflow for the largest values
NUMPY["hardswish"] = _unary(lambda x: np.where(x >= 3.0, x, x * np.clip(x + 3.0, 0.0, 6.0) / 6.0))
NUMPY["hardsigmoid"] = _unary(lambda x: np.clip(x + 3.0, 0.0, 6.0) / 6.0)
NUMPY["mish"] = _unary(lambda x: x * np.tanh(np.log1p(np.exp(x))))
_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805
NUMPY["selu"] = _unary(lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(x)))


@_ref(NUMPY, "elu")
def _elu(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    return [np.where(x > 0, x, attrs["alpha"] * np.expm1(x))]


@_ref(NUMPY, "leaky_relu")
def _leaky(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    return [np.where(x > 0, x, attrs["negative_slope"] * x)]


@_ref(NUMPY, "gelu")
def _gelu(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    if attrs["approximate"] == "tanh":
        return [0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))]
    return [0.5 * x * (1.0 + np.asarray(_erf(x / math.sqrt(2.0)), dtype=np.float64))]


@_ref(NUMPY, "softplus")
def _softplus(ins, attrs, out):  # noqa: ANN001, ANN202
    x, beta = ins[0], attrs["beta"]
    return [np.where(beta * x > attrs["threshold"], x, np.log1p(np.exp(beta * x)) / beta)]


def _binary(fn):  # noqa: ANN001, ANN202
    return lambda ins, attrs, out: [fn(ins[0], ins[1])]


def _bool_as(fn):  # noqa: ANN001, ANN202
    """Bool inputs computed as int then turned back to bool (add is or, multiply is and)."""

    def run(a, b):  # noqa: ANN001, ANN202
        if a.dtype == bool:
            return fn(a.astype(np.int64), b.astype(np.int64)) != 0
        return fn(a, b)

    return run


NUMPY["add"] = _binary(_bool_as(np.add))
NUMPY["subtract"] = _binary(np.subtract)
NUMPY["multiply"] = _plain_product(_binary(_bool_as(np.multiply)))
NUMPY["divide"] = _binary(
    lambda a, b: np.true_divide(
        *(v if v.dtype.kind == "c" else v.astype(np.float64) for v in (a, b))
    )
)
NUMPY["maximum"] = _binary(np.maximum)
NUMPY["minimum"] = _binary(np.minimum)
NUMPY["atan2"] = _binary(np.arctan2)
NUMPY["copysign"] = _binary(np.copysign)
NUMPY["hypot"] = _binary(np.hypot)
NUMPY["logaddexp"] = _binary(np.logaddexp)
for _name, _fn in {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}.items():
    NUMPY[_name] = _binary(_fn)


def _int_div(fn):  # noqa: ANN001, ANN202
    """floor_divide / remainder: integer division by zero gives 0, as NumPy."""

    def run(a, b):  # noqa: ANN001, ANN202
        if _is_float(a):
            return fn(a, b)
        safe = np.where(b == 0, 1, b).astype(b.dtype)
        return np.where(b == 0, 0, fn(a, safe)).astype(a.dtype)

    return run


NUMPY["floor_divide"] = _binary(_int_div(np.floor_divide))
NUMPY["remainder"] = _binary(_int_div(np.remainder))
NUMPY["pow"] = _binary(np.power)


def _shift(fn):  # noqa: ANN001, ANN202
    def run(a, b):  # noqa: ANN001, ANN202
        bits = a.dtype.itemsize * 8
        bad = (b < 0) | (b >= bits)
        safe = np.where(bad, 0, b).astype(a.dtype)
        # in a's dtype: an int64 fill would turn uint64 results into float64 (and round them)
        fill = np.where(a < 0, -1, 0).astype(a.dtype) if fn is np.right_shift else a.dtype.type(0)
        return np.where(bad, fill, fn(a, safe)).astype(a.dtype)

    return run


NUMPY["bitwise_left_shift"] = _binary(_shift(np.left_shift))
NUMPY["bitwise_right_shift"] = _binary(_shift(np.right_shift))


@_ref(NUMPY, "clip")
def _clip(ins, attrs, out):  # noqa: ANN001, ANN202
    x, lo, hi = ins
    shape = np.broadcast_shapes(*[a.shape for a in ins if a is not None])
    r = np.broadcast_to(x, shape).copy()
    if lo is not None:
        r = np.where(np.isnan(lo) if _is_float(lo) else False, lo, np.maximum(r, lo))
    if hi is not None:
        r = np.where(np.isnan(hi) if _is_float(hi) else False, hi, np.minimum(r, hi))
    return [r]


@_ref(NUMPY, "where")
def _where(ins, attrs, out):  # noqa: ANN001, ANN202
    return [np.where(ins[0], ins[1], ins[2])]


@_ref(NUMPY, "astype")
def _astype(ins, attrs, out):  # noqa: ANN001, ANN202
    """Floats to integers truncate toward zero, nan gives 0, out-of-range values saturate.
    Complex to integers or floats converts the real part (NumPy drops the imaginary part), so
    complex to integers follows the same rules as floats."""
    x, target = ins[0], out[0]
    if target == "bool":
        return [x != 0]
    if x.dtype.kind == "c" and not target.startswith("complex"):
        x = x.real.copy()
    if _is_float(x) and target.startswith(("int", "uint")):
        info = np.iinfo(target)
        t = np.trunc(np.where(np.isnan(x), 0.0, x))
        hi, lo = t >= float(info.max), t <= float(info.min)
        mid = np.where(hi | lo, 0.0, t).astype(target)
        return [np.where(hi, info.max, np.where(lo, info.min, mid)).astype(target)]
    return [x.astype(np.int64) if x.dtype == bool else x]


# ------------------------------------------------------------------ reductions -----------------


def _acc(x: np.ndarray, out: str) -> np.ndarray:
    if _is_float(x):
        return x
    return x.astype(out) if out in ("int64", "uint64", "float64") else x


def _reducer(fn, empty_ok: bool = True):  # noqa: ANN001, ANN202
    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        x = _acc(ins[0], out[0])
        return [fn(x, axis=_axes(attrs["axis"], x.ndim), keepdims=attrs["keepdims"])]

    return run


def exact_sum(x: np.ndarray, axis=None, keepdims: bool = False) -> np.ndarray:  # noqa: ANN001
    """The sum of real floats over `axis`, exactly rounded to float64 (math.fsum per lane): the
    reference long reductions are held to (see tolerances.py); other dtypes as np.sum."""
    if x.dtype.kind != "f" or x.size == 0:
        return np.sum(x, axis=axis, keepdims=keepdims)
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % max(x.ndim, 1) for a in axis)
    kept = [k for k in range(x.ndim) if k not in axes]
    lanes = np.transpose(x, kept + list(axes)).reshape(int(np.prod([x.shape[k] for k in kept])), -1)
    sums = np.array([math.fsum(lane) for lane in lanes], dtype=np.float64)
    out = sums.reshape([x.shape[k] for k in kept])
    if keepdims:
        out = out.reshape([1 if k in axes else n for k, n in enumerate(x.shape)])
    return out


NUMPY["sum"] = _reducer(exact_sum)


@_ref(NUMPY, "sum_to_shape")
def _sum_to_shape(ins, attrs, out):  # noqa: ANN001, ANN202
    x, like = ins
    lead = x.ndim - like.ndim
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(like.shape) if n == 1 and x.shape[lead + k] != 1
    )
    return [np.sum(x, axis=axes).reshape(like.shape)]


NUMPY["prod"] = _reducer(np.prod)
NUMPY["max"] = _reducer(np.max)
NUMPY["min"] = _reducer(np.min)
NUMPY["all"] = _reducer(np.all)
NUMPY["any"] = _reducer(np.any)


def _mean(x, axis, keepdims):  # noqa: ANN001, ANN202
    if x.dtype.kind == "c":
        return np.mean(x, axis=axis, keepdims=keepdims)
    x = x.astype(np.float64)
    n = x.size if axis is None else int(np.prod([x.shape[a] for a in axis]))
    with np.errstate(all="ignore"):
        return exact_sum(x, axis, keepdims) / np.float64(n)


NUMPY["mean"] = _reducer(_mean)


@_ref(NUMPY, "var", "std")
def _var(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0].astype(np.longdouble)  # extended precision where the platform has it
    axis = _axes(attrs["axis"], x.ndim)
    n = x.size if axis is None else int(np.prod([x.shape[a] for a in axis]))
    mean = np.mean(x, axis=axis, keepdims=True) if n else np.full([1] * x.ndim, np.nan)
    sq = np.sum((x - mean) ** 2, axis=axis, keepdims=attrs["keepdims"])
    v = sq / max(n - attrs["correction"], 0) if n else sq * np.nan
    return [v]


NUMPY["var"] = lambda ins, attrs, out: [_var(ins, attrs, out)[0].astype(np.float64)]
NUMPY["std"] = lambda ins, attrs, out: [np.sqrt(_var(ins, attrs, out)[0]).astype(np.float64)]


def _norm_terms(a: np.ndarray, p: float, axis, keepdims: bool) -> np.ndarray:  # noqa: ANN001
    """The p-norm of the moduli a (float64) over axis, as the array API's vector_norm."""
    if p == np.inf:
        return np.max(a, axis=axis, keepdims=keepdims, initial=0.0)
    if p == -np.inf:
        return np.min(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(np.float64)
    if p > 0:  # scaled by the maximum, as the kernels, so that no power overflows
        m = np.max(a, axis=axis, keepdims=True, initial=0.0)
        safe = np.where((m == 0) | ~np.isfinite(m), 1.0, m)
        s = np.sum((a / safe) ** p, axis=axis, keepdims=True)
        r = np.where(m == 0, 0.0, safe * s ** (1.0 / p))
        r = np.where(np.isinf(m), np.inf, r)
        r = np.where(np.any(np.isnan(a), axis=axis, keepdims=True), np.nan, r)
        if not keepdims:
            r = np.squeeze(r, axis=axis) if axis is not None else r.reshape(())
        return r
    return np.sum(a**p, axis=axis, keepdims=keepdims) ** (1.0 / p)


@_ref(NUMPY, "vector_norm")
def _vector_norm(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    a = np.abs(x).astype(np.float64)
    with np.errstate(all="ignore"):
        return [_norm_terms(a, attrs["ord"], _axes(attrs["axis"], x.ndim), attrs["keepdims"])]


@_ref(NUMPY, "logsumexp")
def _logsumexp(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    axis = _axes(attrs["axis"], x.ndim)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    s = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    big = np.any(x == np.inf, axis=axis, keepdims=True)
    s = np.where(big, np.inf, s)
    s = np.where(np.any(np.isnan(x), axis=axis, keepdims=True), np.nan, s)
    if not attrs["keepdims"]:
        s = np.squeeze(s, axis=axis) if axis is not None else s.reshape(())
    return [s]


def _arg(fn):  # noqa: ANN001, ANN202
    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        x, axis = ins[0], attrs["axis"]
        if _is_float(x):  # the first nan counts as the extreme
            x = np.where(np.isnan(x), np.inf if fn is np.argmax else -np.inf, x)
            nan = np.isnan(ins[0])
            if axis is None:
                r = np.argmax(nan) if nan.any() else fn(x)
                return [np.asarray(r).reshape([1] * ins[0].ndim if attrs["keepdims"] else [])]
            r = np.where(nan.any(axis=axis), np.argmax(nan, axis=axis), fn(x, axis=axis))
            return [np.expand_dims(r, axis) if attrs["keepdims"] else r]
        if axis is None:
            r = fn(x)
            return [np.asarray(r).reshape([1] * x.ndim if attrs["keepdims"] else [])]
        return [fn(x, axis=axis, keepdims=attrs["keepdims"])]

    return run


NUMPY["argmax"] = _arg(np.argmax)
NUMPY["argmin"] = _arg(np.argmin)


def _scan(fn, identity):  # noqa: ANN001, ANN202
    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        x = _acc(ins[0], out[0])
        if x.ndim == 0:
            x = x.reshape(1)
        axis = 0 if attrs["axis"] is None else attrs["axis"] % x.ndim
        r = fn(x, axis=axis)
        if attrs["include_initial"]:
            shape = list(x.shape)
            shape[axis] = 1
            r = np.concatenate([np.full(shape, identity, dtype=r.dtype), r], axis=axis)
        return [r]

    return run


NUMPY["cumulative_sum"] = _scan(np.cumsum, 0)
NUMPY["cumulative_prod"] = _scan(np.cumprod, 1)


@_ref(NUMPY, "softmax")
def _softmax(ins, attrs, out):  # noqa: ANN001, ANN202
    """As torch: x - max(x), so an infinite maximum gives nan."""
    x, axis = ins[0], attrs["axis"]
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return [e / np.sum(e, axis=axis, keepdims=True)]


@_ref(NUMPY, "log_softmax")
def _log_softmax(ins, attrs, out):  # noqa: ANN001, ANN202
    x, axis = ins[0], attrs["axis"]
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return [shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))]


# ------------------------------------------------------------------ linear algebra -------------


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == bool:
        return np.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
    return np.matmul(a, b)


NUMPY["matmul"] = _binary(_mm)


@_ref(NUMPY, "vecdot")
def _vecdot(ins, attrs, out):  # noqa: ANN001, ANN202
    a, b = ins
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    axis = attrs["axis"] % len(shape)
    if a.dtype == bool:
        return [np.any(a & b, axis=axis)]
    # numpy.vecdot and the array API conjugate x1 (no-op for real dtypes).
    return [np.sum(np.conj(a) * b, axis=axis, dtype=a.dtype)]


@_ref(NUMPY, "linear")
def _linear(ins, attrs, out):  # noqa: ANN001, ANN202
    x, w, b = ins
    r = x @ w.T
    return [r + b if b is not None else r]


@_ref(NUMPY, "einsum")
def _einsum(ins, attrs, out):  # noqa: ANN001, ANN202
    ops = ins[0] if isinstance(ins[0], list) else ins
    if ops[0].dtype == bool:
        return [np.einsum(attrs["subscripts"], *[o.astype(np.int64) for o in ops]) != 0]
    return [np.einsum(attrs["subscripts"], *ops, dtype=ops[0].dtype)]


# ------------------------------------------------------------------ shape and indexing ---------


def _variadic(ins) -> list:  # noqa: ANN001
    return ins[0] if isinstance(ins[0], list) else ins


NUMPY["broadcast_to"] = lambda ins, attrs, out: [np.broadcast_to(ins[0], attrs["shape"]).copy()]
NUMPY["flip"] = lambda ins, attrs, out: [np.flip(ins[0], _axes(attrs["axis"], ins[0].ndim))]
NUMPY["matrix_transpose"] = lambda ins, attrs, out: [np.swapaxes(ins[0], -1, -2)]
NUMPY["permute_dims"] = lambda ins, attrs, out: [np.transpose(ins[0], attrs["axes"])]
NUMPY["tile"] = lambda ins, attrs, out: [np.tile(ins[0], attrs["repetitions"])]
NUMPY["tril"] = lambda ins, attrs, out: [np.tril(ins[0], attrs["k"])]
NUMPY["triu"] = lambda ins, attrs, out: [np.triu(ins[0], attrs["k"])]
NUMPY["stack"] = lambda ins, attrs, out: [np.stack(_variadic(ins), axis=attrs["axis"])]


@_ref(NUMPY, "concat")
def _concat(ins, attrs, out):  # noqa: ANN001, ANN202
    arrays = _variadic(ins)
    if attrs["axis"] is None:
        return [np.concatenate([a.reshape(-1) for a in arrays])]
    return [np.concatenate(arrays, axis=attrs["axis"])]


@_ref(NUMPY, "repeat")
def _repeat(ins, attrs, out):  # noqa: ANN001, ANN202
    reps = attrs["repeats"]
    return [np.repeat(ins[0], reps[0] if len(reps) == 1 else reps, axis=attrs["axis"])]


@_ref(NUMPY, "roll")
def _roll(ins, attrs, out):  # noqa: ANN001, ANN202
    axis = attrs["axis"]
    shift = attrs["shift"]
    if axis is None:
        return [np.roll(ins[0], shift[0])]
    return [
        np.roll(
            ins[0],
            shift if len(shift) > 1 else shift[0] if len(axis) == 1 else [shift[0]] * len(axis),
            axis=tuple(axis),
        )
    ]


@_ref(NUMPY, "slice")
def _slice(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    n = max(len(attrs["start"]), len(attrs["stop"]), len(attrs["step"]))

    def get(name: str, k: int):  # noqa: ANN202
        vals = attrs[name]
        v = vals[k] if k < len(vals) else None
        # INT64_MIN and INT64_MAX stand for a missing start or stop (never for a step)
        return None if v is None or (name != "step" and v in (-(2**63), 2**63 - 1)) else v

    index = tuple(slice(get("start", k), get("stop", k), get("step", k)) for k in range(n))
    return [x[index]]


@_ref(NUMPY, "pad")
def _pad(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    w = list(attrs["pad_width"])
    if len(w) == 1:
        pairs = [(w[0], w[0])] * x.ndim
    elif len(w) == 2:
        pairs = [(w[0], w[1])] * x.ndim
    else:
        pairs = [(w[2 * k], w[2 * k + 1]) for k in range(x.ndim)]
    if attrs["mode"] == "constant":
        value = attrs["value"]
        if not _is_float(x):
            value = np.array(value).astype(x.dtype) if x.dtype != bool else bool(value)
        return [np.pad(x, pairs, mode="constant", constant_values=value)]
    return [np.pad(x, pairs, mode=attrs["mode"])]


@_ref(NUMPY, "take")
def _take(ins, attrs, out):  # noqa: ANN001, ANN202
    return [np.take(ins[0], ins[1], axis=attrs["axis"])]


@_ref(NUMPY, "take_along_axis")
def _take_along(ins, attrs, out):  # noqa: ANN001, ANN202
    return [np.take_along_axis(ins[0], ins[1], axis=attrs["axis"])]


_SCATTER_UFUNCS = {
    "add": np.add,
    "multiply": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def _scatter_into(out, index, values, reduction):  # noqa: ANN001, ANN202
    """out[index] = reduce(out[index], values), repeated positions applied in row-major order
    of the index (ufunc.at accumulates in order). NumPy's fancy assignment keeps whichever
    write its iteration reaches last, which follows the index array's memory order (a
    transposed index writes column by column), so "none" picks the row-major last write
    itself: the kernels' rule, whatever the layout."""
    if reduction != "none":
        _SCATTER_UFUNCS[reduction].at(out, index, values)
        return out
    *index, values = np.broadcast_arrays(*index, values)
    positions = []
    for axis_index, n in zip(index, out.shape, strict=True):
        axis_index = np.asarray(axis_index, np.int64).ravel()
        if axis_index.size and (axis_index.min() < -n or axis_index.max() >= n):
            raise IndexError(f"index out of range for an axis of {n}")
        positions.append(axis_index % n if n else axis_index)
    if not positions or not positions[0].size:
        return out
    flat = np.ravel_multi_index(tuple(positions), out.shape)
    # the first of each position in reversed order is its last write in row-major order
    targets, first = np.unique(flat[::-1], return_index=True)
    out.reshape(-1)[targets] = np.ravel(values)[::-1][first]
    return out


def along_axis_index(shape, indices, axis):  # noqa: ANN001, ANN201
    """NumPy's fancy index of put_along_axis: the indices along axis, aranges elsewhere."""
    axis = axis % len(shape)
    index = []
    for d, n in enumerate(shape):
        if d == axis:
            index.append(indices)
        else:
            s = [1] * len(shape)
            s[d] = n
            index.append(np.arange(n).reshape(s))
    return tuple(index)


@_ref(NUMPY, "put_along_axis")
def _put_along_axis(ins, attrs, out):  # noqa: ANN001, ANN202
    x, indices, values = ins
    index = along_axis_index(x.shape, indices, attrs["axis"])
    shape = np.broadcast_shapes(*(i.shape for i in index))
    values = np.broadcast_to(values, shape)
    return [_scatter_into(x.copy(), index, values, attrs["reduction"])]


def gather_nd_reference(x, indices, batch_dims=0):  # noqa: ANN001, ANN201
    """ONNX GatherND."""
    b, k = batch_dims, indices.shape[-1]
    result = np.empty(indices.shape[:-1] + x.shape[b + k :], x.dtype)
    for bi in np.ndindex(indices.shape[:b]):
        tuples = indices[bi]
        result[bi] = x[bi][tuple(tuples[..., m] for m in range(k))]
    return result


def scatter_nd_reference(x, indices, updates, reduction="none"):  # noqa: ANN001, ANN201
    """ONNX ScatterND: the updates applied one tuple after the other, in row-major order."""
    out = x.copy()
    k = indices.shape[-1]
    tuples = indices.reshape(-1, k)
    slabs = updates.reshape((tuples.shape[0],) + x.shape[k:])
    for i in range(tuples.shape[0]):
        where = tuple(tuples[i])
        out[where] = (
            slabs[i] if reduction == "none" else _SCATTER_UFUNCS[reduction](out[where], slabs[i])
        )
    return out


@_ref(NUMPY, "gather_nd")
def _gather_nd(ins, attrs, out):  # noqa: ANN001, ANN202
    return [gather_nd_reference(ins[0], ins[1], attrs["batch_dims"])]


@_ref(NUMPY, "scatter_nd")
def _scatter_nd(ins, attrs, out):  # noqa: ANN001, ANN202
    return [scatter_nd_reference(ins[0], ins[1], ins[2], attrs["reduction"])]


@_ref(NUMPY, "index_select")
def _index_select(ins, attrs, out):  # noqa: ANN001, ANN202
    return [np.take(ins[0], ins[1].reshape(-1), axis=attrs["axis"])]


def index_add_reference(x, indices, source, axis, alpha=1.0):  # noqa: ANN001, ANN201
    """torch.index_add: source slices added in index order."""
    out = x.copy()
    axis = axis % x.ndim
    # integers: alpha wraps to x's dtype, as the products and sums do
    scale = alpha if _is_float(x) else np.array(int(alpha), np.int64).astype(x.dtype)[()]
    source = np.moveaxis(source, axis, 0)
    view = np.moveaxis(out, axis, 0)
    with np.errstate(over="ignore"):  # integers wrap, as the kernels' do
        for i, j in enumerate(indices.reshape(-1)):
            view[j] = view[j] + source[i] * scale
    return out


@_ref(NUMPY, "index_add")
def _index_add(ins, attrs, out):  # noqa: ANN001, ANN202
    return [index_add_reference(ins[0], ins[1], ins[2], attrs["axis"], attrs["alpha"])]


@_ref(NUMPY, "embedding")
def _embedding(ins, attrs, out):  # noqa: ANN001, ANN202
    return [ins[1][ins[0]]]


@_ref(NUMPY, "one_hot")
def _one_hot(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    return [(x[..., None] == np.arange(attrs["num_classes"])).astype(np.int64)]


@_ref(NUMPY, "searchsorted")
def _searchsorted(ins, attrs, out):  # noqa: ANN001, ANN202
    return [np.searchsorted(ins[0], ins[1], side=attrs["side"]).astype(np.int64)]


# ------------------------------------------------------------------ sorting ----------------------


def _order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    xm = np.moveaxis(x, axis, -1)
    if descending:
        rank = np.unique(xm.ravel(), return_inverse=True, equal_nan=True)[1].reshape(xm.shape)
        order = np.argsort(-rank, axis=-1, kind="stable")
    else:
        order = np.argsort(xm, axis=-1, kind="stable")
    return np.moveaxis(order, -1, axis)


@_ref(NUMPY, "argsort")
def _argsort(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0] if ins[0].ndim else ins[0].reshape(1)
    r = _order(x, attrs["axis"], attrs["descending"])
    return [r.reshape(ins[0].shape)]


@_ref(NUMPY, "sort")
def _sort(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0] if ins[0].ndim else ins[0].reshape(1)
    order = _order(x, attrs["axis"], attrs["descending"])
    return [np.take_along_axis(x, order, attrs["axis"]).reshape(ins[0].shape)]


@_ref(NUMPY, "argpartition")
def _argpartition(ins, attrs, out):  # noqa: ANN001, ANN202
    # the documented result: the stable ascending argsort (a partition for every kth, nan last)
    return [_order(ins[0], attrs["axis"], False)]


@_ref(NUMPY, "topk")
def _topk(ins, attrs, out):  # noqa: ANN001, ANN202
    x, axis, k = ins[0], attrs["axis"], attrs["k"]
    x1 = x if x.ndim else x.reshape(1)
    order = _order(x1, axis, attrs["largest"])
    order = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x1, order, axis)
    shape = list(x.shape)
    if x.ndim:
        shape[axis] = k
    return [values.reshape(shape), order.reshape(shape).astype(np.int64)]


# ------------------------------------------------------------------ dynamic ----------------------

NUMPY["nonzero"] = lambda ins, attrs, out: [i.astype(np.int64) for i in np.nonzero(ins[0])]
NUMPY["argwhere"] = lambda ins, attrs, out: [np.argwhere(ins[0]).astype(np.int64)]
NUMPY["boolean_mask"] = lambda ins, attrs, out: [ins[0][ins[1]]]


def _unique(ins):  # noqa: ANN001, ANN202
    x = ins[0].reshape(-1)
    if x.dtype == bool:
        x8 = x.astype(np.int8)
        v, i, inv, c = np.unique(x8, True, True, True)
        return v.astype(bool), i, inv, c
    return np.unique(x, True, True, True, equal_nan=True)


NUMPY["unique_values"] = lambda ins, attrs, out: [_unique(ins)[0]]
NUMPY["unique_counts"] = lambda ins, attrs, out: [_unique(ins)[0], _unique(ins)[3]]
NUMPY["unique_inverse"] = lambda ins, attrs, out: [
    _unique(ins)[0],
    _unique(ins)[2].reshape(ins[0].shape),
]
NUMPY["unique_all"] = lambda ins, attrs, out: [
    _unique(ins)[0],
    _unique(ins)[1],
    _unique(ins)[2].reshape(ins[0].shape),
    _unique(ins)[3],
]


# ------------------------------------------------------------------ normalisation ----------------


@_ref(NUMPY, "batch_norm")
def _batch_norm(ins, attrs, out):  # noqa: ANN001, ANN202
    x, mean, var, w, b = ins
    shape = [1, -1] + [1] * (x.ndim - 2)
    r = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + attrs["eps"])
    if w is not None:
        r = r * w.reshape(shape)
    if b is not None:
        r = r + b.reshape(shape)
    return [r]


@_ref(NUMPY, "layer_norm")
def _layer_norm(ins, attrs, out):  # noqa: ANN001, ANN202
    x, w, b = ins
    axes = tuple(range(x.ndim - len(attrs["normalized_shape"]), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    r = (x - mean) / np.sqrt(var + attrs["eps"])
    if w is not None:
        r = r * w
    return [r + b if b is not None else r]


@_ref(NUMPY, "rms_norm")
def _rms_norm(ins, attrs, out):  # noqa: ANN001, ANN202
    x, w = ins
    axes = tuple(range(x.ndim - len(attrs["normalized_shape"]), x.ndim))
    eps = attrs["eps"]
    if eps is None:
        eps = float(np.finfo(np.float64 if out[0] == "float64" else np.float32).eps)
    r = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return [r * w if w is not None else r]


@_ref(NUMPY, "group_norm")
def _group_norm(ins, attrs, out):  # noqa: ANN001, ANN202
    x, w, b = ins
    n, c = x.shape[0], x.shape[1]
    g = attrs["num_groups"]
    xg = x.reshape(n, g, -1)
    mean = xg.mean(axis=-1, keepdims=True)
    var = ((xg - mean) ** 2).mean(axis=-1, keepdims=True)
    r = ((xg - mean) / np.sqrt(var + attrs["eps"])).reshape(x.shape)
    shape = [1, c] + [1] * (x.ndim - 2)
    if w is not None:
        r = r * w.reshape(shape)
    return [r + b.reshape(shape) if b is not None else r]


@_ref(NUMPY, "softmax_backward")
def _softmax_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, y = ins
    axis = attrs["axis"] if y.ndim else None
    return [y * (g - np.sum(g * y, axis=axis, keepdims=True))]


@_ref(NUMPY, "log_softmax_backward")
def _log_softmax_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, y = ins
    axis = attrs["axis"] if y.ndim else None
    return [g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)]


def _norm_rows_backward(g, x, w, rms: bool, eps: float):  # noqa: ANN001, ANN202
    """(rows, n) float64 g, x and w (broadcast): grad_input and the per-element terms of the
    weight and bias gradients, g * xhat and g."""
    n = x.shape[1]
    mean = 0.0 if rms else x.mean(1, keepdims=True)
    var = (x * x).mean(1, keepdims=True) if rms else ((x - mean) ** 2).mean(1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * rstd
    gw = g * w
    gx = gw - xhat * (gw * xhat).sum(1, keepdims=True) / n
    if not rms:
        gx = gx - gw.sum(1, keepdims=True) / n
    return gx * rstd, g * xhat, g


@_ref(NUMPY, "layer_norm_backward", "rms_norm_backward")
def _trailing_norm_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x, w = ins
    shape = tuple(attrs["normalized_shape"])
    rms = len(out) == 2
    eps = attrs["eps"]
    if eps is None:
        eps = float(np.finfo(np.float64 if out[0] == "float64" else np.float32).eps)
    n = int(np.prod(shape))
    rows = x.size // n if n else 0
    weight = np.ones(n) if w is None else w.reshape(1, n)
    gx, gwx, gb = _norm_rows_backward(g.reshape(rows, n), x.reshape(rows, n), weight, rms, eps)
    results = [gx.reshape(x.shape), gwx.sum(0).reshape(shape), gb.sum(0).reshape(shape)]
    return results[: len(out)]


@_ref(NUMPY, "group_norm_backward")
def _group_norm_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x, w = ins
    n, c = x.shape[0], x.shape[1]
    groups = attrs["num_groups"]
    weight = np.ones(c) if w is None else w
    spatial = x[0, 0].size if x.size else 0
    wide = np.broadcast_to(
        np.repeat(weight, spatial).reshape(1, groups, -1), (n, groups, c // groups * spatial)
    )
    gx, gwx, gb = _norm_rows_backward(
        g.reshape(n * groups, -1),
        x.reshape(n * groups, -1),
        wide.reshape(n * groups, -1),
        False,
        attrs["eps"],
    )
    return [
        gx.reshape(x.shape),
        gwx.reshape(n, c, -1).sum((0, 2)),
        gb.reshape(n, c, -1).sum((0, 2)),
    ]


def _channels_last(a):  # noqa: ANN001, ANN202
    """(N, C, *) as (C, N * prod(*))."""
    return np.moveaxis(a, 1, 0).reshape(a.shape[1], -1)


@_ref(NUMPY, "batch_norm_backward")
def _batch_norm_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x, w, mean, istd = ins
    c = x.shape[1]
    if not attrs["training"]:
        istd = 1.0 / np.sqrt(istd + attrs["eps"])
    gr, xr = _channels_last(g), _channels_last(x)
    weight = np.ones((c, 1)) if w is None else w.reshape(c, 1)
    xhat = (xr - mean.reshape(c, 1)) * istd.reshape(c, 1)
    gx = gr
    if attrs["training"]:
        count = xr.shape[1]
        gx = (
            gr - gr.sum(1, keepdims=True) / count - xhat * (gr * xhat).sum(1, keepdims=True) / count
        )
    gx = gx * weight * istd.reshape(c, 1)
    shape = (c, x.shape[0]) + x.shape[2:]
    return [np.moveaxis(gx.reshape(shape), 0, 1), (gr * xhat).sum(1), gr.sum(1)]


@_ref(NUMPY, "batch_norm_training")
def _batch_norm_training(ins, attrs, out):  # noqa: ANN001, ANN202
    x, rm, rv, w, b = ins
    c = x.shape[1]
    xr = _channels_last(x)
    count = xr.shape[1]
    mean = xr.mean(1)
    var = ((xr - mean.reshape(c, 1)) ** 2).mean(1)
    istd = 1.0 / np.sqrt(var + attrs["eps"])
    shape = [1, c] + [1] * (x.ndim - 2)
    r = (x - mean.reshape(shape)) * istd.reshape(shape)
    if w is not None:
        r = r * w.reshape(shape)
    if b is not None:
        r = r + b.reshape(shape)
    m = attrs["momentum"]
    rm = np.zeros(c) if rm is None else rm
    rv = np.ones(c) if rv is None else rv
    return [r, mean, istd, (1 - m) * rm + m * mean, (1 - m) * rv + m * var * count / (count - 1)]


@_ref(NUMPY, "rotary_embedding")
def _rotary_embedding(ins, attrs, out):  # noqa: ANN001, ANN202
    x, cos, sin, pos = ins
    half = cos.shape[1]
    if pos is None:
        pos = np.arange(x.shape[-2])
    c, s = cos[pos], sin[pos]  # (..., half) broadcasting over x.shape[:-1]
    if attrs["interleaved"]:
        a, b = x[..., 0 : 2 * half : 2], x[..., 1 : 2 * half : 2]
        rotated = np.stack([a * c - b * s, b * c + a * s], axis=-1).reshape(
            a.shape[:-1] + (2 * half,)
        )
    else:
        a, b = x[..., :half], x[..., half : 2 * half]
        rotated = np.concatenate([a * c - b * s, b * c + a * s], axis=-1)
    return [np.concatenate([rotated, x[..., 2 * half :]], axis=-1)]


# ------------------------------------------------------------------ torch (second opinion) -------


def _torch():  # noqa: ANN202
    import torch

    return torch


def _t(a):  # noqa: ANN001, ANN202
    return None if a is None else _torch().from_numpy(np.ascontiguousarray(a))


def _pair(v):  # noqa: ANN001, ANN202
    return None if v is None else (list(v) * 2 if len(v) == 1 else list(v))


@_ref(TORCH, "conv2d")
def _conv2d(ins, attrs, out):  # noqa: ANN001, ANN202
    f = _torch().nn.functional
    return [
        f.conv2d(
            _t(ins[0]),
            _t(ins[1]),
            _t(ins[2]),
            _pair(attrs["stride"]),
            _pair(attrs["padding"]),
            _pair(attrs["dilation"]),
            attrs["groups"],
        ).numpy()
    ]


@_ref(TORCH, "conv_transpose2d")
def _conv_t(ins, attrs, out):  # noqa: ANN001, ANN202
    f = _torch().nn.functional
    return [
        f.conv_transpose2d(
            _t(ins[0]),
            _t(ins[1]),
            _t(ins[2]),
            _pair(attrs["stride"]),
            _pair(attrs["padding"]),
            _pair(attrs["output_padding"]),
            attrs["groups"],
            _pair(attrs["dilation"]),
        ).numpy()
    ]


def _pool_padded(x, attrs, value):  # noqa: ANN001, ANN202
    """(x, padding) for torch's pooling: padding beyond half the kernel (which ctensor takes, as
    ONNX, and torch refuses) is applied to x explicitly with `value` (-inf for max, 0 for avg)
    and the pool's own padding becomes 0: the same windows where ceil_mode is off (and, for
    avg, where count_include_pad is on)."""
    kernel, padding = _pair(attrs["kernel_size"]), _pair(attrs["padding"])
    if all(p <= k // 2 for p, k in zip(padding, kernel, strict=True)):
        return x, padding
    assert not attrs["ceil_mode"] and attrs.get("count_include_pad", True)
    pads = (padding[1], padding[1], padding[0], padding[0])
    return _torch().nn.functional.pad(x, pads, value=value), (0, 0)


def _avg_pool_of(x, attrs):  # noqa: ANN001, ANN202
    x, padding = _pool_padded(x, attrs, 0.0)
    return _torch().nn.functional.avg_pool2d(
        x,
        _pair(attrs["kernel_size"]),
        _pair(attrs["stride"]),
        padding,
        attrs["ceil_mode"],
        attrs["count_include_pad"],
        attrs["divisor_override"],
    )


def _max_pool_of(x, attrs):  # noqa: ANN001, ANN202
    torch = _torch()
    # the padding value: -inf, an integer dtype's minimum
    low = -np.inf if x.dtype.is_floating_point else torch.iinfo(x.dtype).min
    x, padding = _pool_padded(x, attrs, low)
    return _torch().nn.functional.max_pool2d(
        x,
        _pair(attrs["kernel_size"]),
        _pair(attrs["stride"]),
        padding,
        _pair(attrs["dilation"]),
        attrs["ceil_mode"],
    )


@_ref(TORCH, "avg_pool2d")
def _avg_pool(ins, attrs, out):  # noqa: ANN001, ANN202
    return [_avg_pool_of(_t(ins[0]), attrs).numpy()]


@_ref(TORCH, "max_pool2d")
def _max_pool(ins, attrs, out):  # noqa: ANN001, ANN202
    x = ins[0]
    if x.dtype.kind == "u":  # torch has no unsigned max_pool2d: int64 of the same order
        flip = np.uint64(1 << 63)
        shifted = (x.astype(np.uint64) ^ flip).view(np.int64)
        pooled = _max_pool_of(_t(shifted), attrs).numpy()
        return [(pooled.view(np.uint64) ^ flip).astype(x.dtype)]
    return [_max_pool_of(_t(x), attrs).numpy()]


@_ref(TORCH, "adaptive_avg_pool2d")
def _adaptive(ins, attrs, out):  # noqa: ANN001, ANN202
    f = _torch().nn.functional
    return [f.adaptive_avg_pool2d(_t(ins[0]), _pair(attrs["output_size"])).numpy()]


def _vjp(forward, inputs, grad):  # noqa: ANN001, ANN202
    """torch.autograd's float64 cotangents of `inputs` for the output cotangent `grad`."""
    torch = _torch()
    leaves = [_t(a).double().requires_grad_(True) for a in inputs]
    return [g.numpy() for g in torch.autograd.grad(forward(*leaves), leaves, _t(grad).double())]


def _conv_kwargs(attrs):  # noqa: ANN001, ANN202
    return {
        "stride": _pair(attrs["stride"]),
        "padding": _pair(attrs["padding"]),
        "dilation": _pair(attrs["dilation"]),
        "groups": attrs["groups"],
    }


@_ref(TORCH, "conv2d_backward_input")
def _conv2d_backward_input(ins, attrs, out):  # noqa: ANN001, ANN202
    f, kwargs = _torch().nn.functional, _conv_kwargs(attrs)
    return _vjp(lambda x: f.conv2d(x, _t(ins[2]).double(), **kwargs), [ins[1]], ins[0])


@_ref(TORCH, "conv2d_backward_weight")
def _conv2d_backward_weight(ins, attrs, out):  # noqa: ANN001, ANN202
    # grad_out may cover the first rows and columns of conv2d's output only: zeros elsewhere.
    f, kwargs = _torch().nn.functional, _conv_kwargs(attrs)
    full = f.conv2d(_t(ins[1]).double(), _t(ins[2]).double(), **kwargs).shape
    grad = np.zeros(full)
    grad[:, :, : ins[0].shape[2], : ins[0].shape[3]] = ins[0]
    return _vjp(lambda w: f.conv2d(_t(ins[1]).double(), w, **kwargs), [ins[2]], grad)


@_ref(TORCH, "conv_transpose2d_backward_input")
def _conv_t_backward_input(ins, attrs, out):  # noqa: ANN001, ANN202
    f = _torch().nn.functional
    kwargs = {
        "stride": _pair(attrs["stride"]),
        "padding": _pair(attrs["padding"]),
        "output_padding": _pair(attrs["output_padding"]),
        "groups": attrs["groups"],
        "dilation": _pair(attrs["dilation"]),
    }
    return _vjp(lambda x: f.conv_transpose2d(x, _t(ins[2]).double(), **kwargs), [ins[1]], ins[0])


@_ref(TORCH, "max_pool2d_backward")
def _max_pool_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    return _vjp(lambda x: _max_pool_of(x, attrs), [ins[1]], ins[0])


@_ref(TORCH, "avg_pool2d_backward")
def _avg_pool_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    return _vjp(lambda x: _avg_pool_of(x, attrs), [ins[1]], ins[0])


@_ref(TORCH, "adaptive_avg_pool2d_backward")
def _adaptive_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    f = _torch().nn.functional
    size = tuple(ins[0].shape[-2:])
    return _vjp(lambda x: f.adaptive_avg_pool2d(x, size), [ins[1]], ins[0])


@_ref(TORCH, "interpolate_backward")
def _interpolate_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    f, torch = _torch().nn.functional, _torch()
    kwargs = {"mode": attrs["mode"]}
    if attrs["size"] is not None:
        kwargs["size"] = _pair(attrs["size"])
    else:
        kwargs["scale_factor"] = _pair(attrs["scale_factor"])
    if attrs["mode"] == "bilinear":
        kwargs["align_corners"] = bool(attrs["align_corners"])
    # The source weights in the compute type (float32 below float64), as the forward.
    dtype = torch.float64 if out[0] == "float64" else torch.float32
    x = _t(ins[1]).to(dtype).requires_grad_(True)
    (grad,) = torch.autograd.grad(f.interpolate(x, **kwargs), x, _t(ins[0]).to(dtype))
    return [grad.double().numpy()]


@_ref(TORCH, "interpolate")
def _interpolate(ins, attrs, out):  # noqa: ANN001, ANN202
    f = _torch().nn.functional
    kwargs = {"mode": attrs["mode"]}
    if attrs["size"] is not None:
        kwargs["size"] = _pair(attrs["size"])
    else:
        kwargs["scale_factor"] = _pair(attrs["scale_factor"])
    if attrs["mode"] == "bilinear":
        kwargs["align_corners"] = bool(attrs["align_corners"])
    # The source index is computed in the compute type (float32 below float64), as torch does.
    x = _t(ins[0]) if out[0] == "float64" else _t(ins[0].astype(np.float32))
    return [f.interpolate(x, **kwargs).double().numpy()]


# ------------------------------------------------------------ element-wise backward ops
# capi/ops/elementwise_grad_table.h: torch's backward formulas (edge points included), with
# 1 - x * x computed as (1 - x) * (1 + x) as the kernels do. Inputs: grad_out, then x, out or
# x1 and x2 (where_backward: the condition); results at the broadcast shape.


def _grad(fn):  # noqa: ANN001, ANN202
    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        g, *rest = (np.asarray(v, np.float64) if v.dtype != bool else v for v in ins)
        result = fn(g, *rest, attrs)
        shape = np.broadcast_shapes(*(v.shape for v in ins))
        return [
            np.broadcast_to(r, shape) for r in (result if isinstance(result, tuple) else (result,))
        ]

    return run


def _one_minus_square(x):  # noqa: ANN001, ANN202
    return (1.0 - x) * (1.0 + x)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GRAD_REFERENCES = {
    "abs_backward": lambda g, x, a: g * np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0)),
    "relu_backward": lambda g, y, a: np.where(y <= 0, 0.0, g),
    "expm1_backward": lambda g, y, a: g * (y + 1.0),
    "log1p_backward": lambda g, x, a: g / (x + 1.0),
    "log2_backward": lambda g, x, a: g / (x * math.log(2.0)),
    "log10_backward": lambda g, x, a: g / (x * math.log(10.0)),
    "tan_backward": lambda g, y, a: g * (1.0 + y * y),
    "asin_backward": lambda g, x, a: g / np.sqrt(_one_minus_square(x)),
    "acos_backward": lambda g, x, a: -g / np.sqrt(_one_minus_square(x)),
    "atan_backward": lambda g, x, a: g / (x * x + 1.0),
    "tanh_backward": lambda g, y, a: g * _one_minus_square(y),
    "asinh_backward": lambda g, x, a: g / np.sqrt(x * x + 1.0),
    "acosh_backward": lambda g, x, a: g / np.sqrt((x - 1.0) * (x + 1.0)),
    "atanh_backward": lambda g, x, a: g / _one_minus_square(x),
    "erf_backward": lambda g, x, a: g * 2.0 / math.sqrt(math.pi) * np.exp(-x * x),
    "sigmoid_backward": lambda g, y, a: g * (1.0 - y) * y,
    "silu_backward": lambda g, x, a: (
        g / (1.0 + np.exp(-x)) * (1.0 + x * (1.0 - 1.0 / (1.0 + np.exp(-x))))
    ),
    "selu_backward": lambda g, x, a: np.where(
        x <= 0, g * _SELU_ALPHA * _SELU_SCALE * np.exp(x), g * _SELU_SCALE
    ),
    "hardswish_backward": lambda g, x, a: np.where(
        (x > -3) & (x < 3), g * (x / 3.0 + 0.5), np.where(x <= -3, 0.0, g)
    ),
    "hardsigmoid_backward": lambda g, x, a: np.where((x > -3) & (x < 3), g / 6.0, 0.0),
    "mish_backward": lambda g, x, a: (
        g
        * (
            np.tanh(np.log1p(np.exp(x)))
            + x / (1.0 + np.exp(-x)) * (1.0 - np.tanh(np.log1p(np.exp(x))) ** 2)
        )
    ),
    "leaky_relu_backward": lambda g, x, a: np.where(x > 0, g, g * a["negative_slope"]),
    "elu_backward": lambda g, x, a: np.where(x <= 0, g * a["alpha"] * np.exp(x), g),
    "softplus_backward": lambda g, x, a: np.where(
        x * a["beta"] > a["threshold"],
        g,
        g * np.exp(x * a["beta"]) / (np.exp(x * a["beta"]) + 1.0),
    ),
    "maximum_backward": lambda g, x1, x2, a: (
        np.where(x1 == x2, g / 2, np.where(x1 < x2, 0.0, g)),
        np.where(x1 == x2, g / 2, np.where(x1 > x2, 0.0, g)),
    ),
    "minimum_backward": lambda g, x1, x2, a: (
        np.where(x1 == x2, g / 2, np.where(x1 > x2, 0.0, g)),
        np.where(x1 == x2, g / 2, np.where(x1 < x2, 0.0, g)),
    ),
    "pow_backward": lambda g, x1, x2, a: (
        np.where(x2 == 0, 0.0, g * (x2 * x1 ** (x2 - 1.0))),
        np.where((x1 == 0) & (x2 >= 0), 0.0, g * (x1**x2 * np.log(x1))),
    ),
    "atan2_backward": lambda g, x1, x2, a: (
        g * x2 * _atan2_reciprocal(x1, x2),
        g * -x1 * _atan2_reciprocal(x1, x2),
    ),
    "logaddexp_backward": lambda g, x1, x2, a: (
        g / (1.0 + np.exp(x2 - x1)),
        g / (1.0 + np.exp(x1 - x2)),
    ),
    "copysign_backward": lambda g, x1, x2, a: g * np.where(x1 == 0, 0.0, np.copysign(x1, x2) / x1),
    "where_backward": lambda g, c, a: (np.where(c, g, 0.0), np.where(c, 0.0, g)),
}


def _atan2_reciprocal(x1, x2):  # noqa: ANN001, ANN202
    r = x1 * x1 + x2 * x2
    return np.where(r == 0, 0.0, 1.0 / np.where(r == 0, 1.0, r))


def _gelu_backward(g, x, attrs):  # noqa: ANN001, ANN202
    if attrs["approximate"] == "tanh":
        kappa = 0.044715
        t = np.tanh(_SQRT_2_OVER_PI * (x + kappa * x**3))
        return g * (
            0.5 * (1.0 + t)
            + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3.0 * kappa * x * x)
        )
    cdf = 0.5 * (1.0 + np.asarray(_erf(x / math.sqrt(2.0)), dtype=np.float64))
    return g * (cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))


_GRAD_REFERENCES["gelu_backward"] = _gelu_backward
for _name, _fn in _GRAD_REFERENCES.items():
    NUMPY[_name] = _grad(_fn)


# ------------------------------------------------------------------ reduction and linalg gradients


def _reduced_axes(attrs, ndim: int) -> tuple:
    axis = _axes(attrs["axis"], ndim)
    return tuple(range(ndim)) if axis is None else axis


def _unreduce(a: np.ndarray, ndim: int, attrs) -> np.ndarray:
    """A reduced-shape array with the reduced dims re-inserted (extent 1)."""
    axes = _reduced_axes(attrs, ndim)
    return np.expand_dims(a, axes) if axes and not attrs["keepdims"] else a


def _group_size(x: np.ndarray, attrs) -> int:
    return int(np.prod([x.shape[a] for a in _reduced_axes(attrs, x.ndim)]))


@_ref(NUMPY, "sum_backward")
def _sum_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x = ins[0], ins[1]
    return [np.array(np.broadcast_to(_unreduce(g, x.ndim, attrs), x.shape))]


@_ref(NUMPY, "mean_backward")
def _mean_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x = ins[0], ins[1]
    n = max(_group_size(x, attrs), 1)
    return [np.array(np.broadcast_to(_unreduce(g, x.ndim, attrs) / n, x.shape))]


@_ref(NUMPY, "prod_backward")
def _prod_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """torch's rule: no zero, g * prod / x; one zero, it takes g * the others' product."""
    g, x = ins[0], ins[1].astype(np.float64)
    axes = _reduced_axes(attrs, x.ndim)
    gb = _unreduce(g, x.ndim, attrs)
    zeros = np.sum(x == 0, axis=axes, keepdims=True)
    product = np.prod(np.where(x == 0, 1.0, x), axis=axes, keepdims=True)
    with np.errstate(all="ignore"):
        r = np.where(
            zeros == 0, gb * (product / x), np.where((zeros == 1) & (x == 0), gb * product, 0)
        )
    return [np.array(np.broadcast_to(r, x.shape))]


@_ref(NUMPY, "max_backward", "min_backward")
def _extremum_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """Split evenly among the ties (torch.amax); a nan extremum among the nans."""
    g, x, o = ins
    axes = _reduced_axes(attrs, x.ndim)
    ob = _unreduce(o, x.ndim, attrs)
    mask = np.where(np.isnan(ob), np.isnan(x), x == ob)
    count = np.sum(mask, axis=axes, keepdims=True)
    with np.errstate(all="ignore"):
        r = np.where(mask, _unreduce(g, x.ndim, attrs) / count, 0.0)
    return [np.array(np.broadcast_to(r, x.shape))]


@_ref(NUMPY, "vector_norm_backward")
def _vector_norm_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """torch's linalg_vector_norm_backward (the CPU kernel's doc), 0 where the norm is 0."""
    g, x, o = ins
    p = attrs["ord"]
    gb, ob = _unreduce(g, x.ndim, attrs), _unreduce(o, x.ndim, attrs)
    sign, a = np.sign(np.nan_to_num(x, nan=0.0)), np.abs(x)
    with np.errstate(all="ignore"):
        if p == 0:
            r = np.zeros(x.shape)
        elif p == 1:
            r = sign * gb
        elif p == 2:
            r = np.where(ob == 0, 0.0, gb * (x / ob))
        elif np.isinf(p):
            mask = (a == ob) | np.isnan(a)
            count = np.sum(mask, axis=_reduced_axes(attrs, x.ndim), keepdims=True)
            r = np.where(mask, sign * (gb / count), 0.0)
        elif p < 1:
            r = np.where(x == 0, 0.0, sign * a ** (p - 1)) * (gb * ob ** (1 - p))
        elif p < 2:
            r = sign * a ** (p - 1) * np.where(ob == 0, 0.0, gb / ob ** (p - 1))
        else:
            r = x * a ** (p - 2) * np.where(ob == 0, 0.0, gb / ob ** (p - 1))
    return [np.array(np.broadcast_to(r, x.shape))]


@_ref(NUMPY, "logsumexp_backward")
def _logsumexp_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x, o = ins
    with np.errstate(all="ignore"):
        r = _unreduce(g, x.ndim, attrs) * np.exp(x - _unreduce(o, x.ndim, attrs))
    return [np.array(np.broadcast_to(r, x.shape))]


@_ref(NUMPY, "var_backward", "std_backward")
def _moment_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """2 (x - mean) / (N - correction) (torch; without axis and N - correction <= 0, nan where x
    is the mean and inf elsewhere); std's scales grad_out by 1 / (2 std), 0 where std is 0."""
    g, x = ins[0], ins[1]
    if x.size == 0:
        return [np.zeros(x.shape)]
    axes = _reduced_axes(attrs, x.ndim)
    gb = _unreduce(g, x.ndim, attrs)
    with np.errstate(all="ignore"):
        if len(ins) == 3:
            ob = _unreduce(ins[2], x.ndim, attrs)
            gb = np.where(ob == 0, 0.0, gb / (2.0 * ob))
        mean = np.mean(x, axis=axes, keepdims=True) if axes else x
        dof = _group_size(x, attrs) - attrs["correction"]
        if dof <= 0 and attrs["axis"] is None:
            r = gb * np.where(x == mean, np.nan, np.inf)
        else:
            r = (2.0 * gb / dof) * (x - mean)
    return [np.array(np.broadcast_to(r, x.shape))]


def _scan_lanes(ins, attrs):  # noqa: ANN001, ANN202
    """grad_out, x (and out) with the scanned axis first; the axis."""
    x = ins[1].reshape(1) if ins[1].ndim == 0 else ins[1]
    axis = 0 if attrs["axis"] is None else attrs["axis"] % x.ndim
    moved = [np.moveaxis(a.reshape(1) if a.ndim == 0 else a, axis, 0) for a in ins]
    moved[1] = np.moveaxis(x, axis, 0)
    return moved, axis


@_ref(NUMPY, "cumulative_sum_backward")
def _cumsum_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    (g, x), axis = _scan_lanes(ins, attrs)
    g = g[1:] if attrs["include_initial"] else g
    r = np.flip(np.cumsum(np.flip(g, 0), axis=0), 0)
    return [np.moveaxis(r, 0, axis).reshape(ins[1].shape)]


@_ref(NUMPY, "cumulative_prod_backward")
def _cumprod_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """grad_x[i] = out[i - 1] * s[i], s[i] = g[i] + x[i + 1] s[i + 1] (no division)."""
    (g, x, o), axis = _scan_lanes(ins, attrs)
    shift = 1 if attrs["include_initial"] else 0
    n = x.shape[0]
    r = np.zeros(x.shape)
    s = np.zeros(x.shape[1:])
    with np.errstate(all="ignore"):
        for i in reversed(range(n)):
            s = g[i + shift] + (x[i + 1] * s if i + 1 < n else 0.0)
            before = i - 1 + shift
            r[i] = (o[before] if before >= 0 else 1.0) * s
    return [np.moveaxis(r, 0, axis).reshape(ins[1].shape)]


def _sum_to(t: np.ndarray, shape: tuple) -> np.ndarray:
    t = t.sum(axis=tuple(range(t.ndim - len(shape)))) if t.ndim > len(shape) else t
    axes = tuple(d for d, e in enumerate(shape) if e == 1 and t.shape[d] != 1)
    return t.sum(axis=axes, keepdims=True) if axes else t


@_ref(NUMPY, "matmul_backward")
def _matmul_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, a, b = ins
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = np.expand_dims(g, -1) if b.ndim == 1 else g
    g2 = np.expand_dims(g2, -2) if a.ndim == 1 else g2
    ga = _sum_to(g2 @ np.swapaxes(b2, -1, -2), a2.shape).reshape(a.shape)
    gb = _sum_to(np.swapaxes(a2, -1, -2) @ g2, b2.shape).reshape(b.shape)
    return [ga, gb]


def _einsum_expand(subscripts: str, ops: list) -> str:
    """The spec with each "..." as fresh letters, right-aligned by each operand's dims (NumPy's
    broadcast), and an explicit output (NumPy's implicit rule: the "..." dims, then the letters
    used once, sorted)."""
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    names = inputs.split(",")
    covered = [op.ndim - len(n.replace("...", "")) for n, op in zip(names, ops, strict=True)]
    ell = max(covered, default=0)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    fresh = "".join(c for c in alphabet if c not in subscripts)[:ell]
    names = [n.replace("...", fresh[ell - k :]) for n, k in zip(names, covered, strict=True)]
    letters = "".join(names)
    if arrow:
        output = output.replace("...", fresh)
    else:
        once = [c for c in set(letters) - set(fresh) if letters.count(c) == 1]
        output = fresh + "".join(sorted(once, key=lambda c: (c.islower(), c)))
    return ",".join(names) + "->" + output


def _einsum_letters(subscripts: str, ops: list) -> tuple[list, str, dict]:
    """Each operand's letters, the output's (NumPy's implicit rule), each letter's extent."""
    subscripts = _einsum_expand(subscripts, ops)
    inputs, _, output = subscripts.replace(" ", "").partition("->")
    names = inputs.split(",")
    if "->" not in subscripts:
        once = [c for c in set(inputs) - {","} if inputs.count(c) == 1]
        output = "".join(sorted(once, key=lambda c: (c.islower(), c)))
    extent: dict = {}
    for name, op in zip(names, ops, strict=True):
        for c, e in zip(name, op.shape, strict=True):
            extent[c] = max(extent.get(c, 1), e)
    return names, output, extent


@_ref(NUMPY, "einsum_backward")
def _einsum_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """Every product of the sum, by letter assignment: grad_i[its letters] += g[output letters]
    * the other operand at its letters (extent-1 dims broadcast)."""
    g, ops = ins[0], list(ins[1] if isinstance(ins[1], list) else ins[1:])
    names, output, extent = _einsum_letters(attrs["subscripts"], ops)
    letters = sorted(extent)
    grads = [np.zeros(op.shape) for op in ops]

    def at(op, name, assign):  # noqa: ANN001, ANN202
        return tuple(0 if e == 1 else assign[c] for c, e in zip(name, op.shape, strict=True))

    for values in np.ndindex(*[extent[c] for c in letters]):
        assign = dict(zip(letters, values, strict=True))
        gv = g[tuple(assign[c] for c in output)]
        for i, op in enumerate(ops):
            term = gv
            for j, other in enumerate(ops):
                if j != i:
                    term = term * other[at(other, names[j], assign)]
            grads[i][at(op, names[i], assign)] += term
    return grads


# ------------------------------------------------------------------ attention --------------------


def _attention_scores(q, k, mask, attrs):  # noqa: ANN001, ANN202
    """scale q k^T + mask (bool: -inf where false; causal: -inf above the diagonal), with key
    heads repeated for grouped-query attention, and the keys repeated as the scores need."""
    if attrs["enable_gqa"] and q.ndim >= 3 and k.shape[-3] and q.shape[-3] != k.shape[-3]:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
    e = q.shape[-1]
    scale = attrs["scale"] if attrs["scale"] is not None else (1.0 / math.sqrt(e) if e else 1.0)
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    if attrs["is_causal"]:
        lq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((lq, lk), bool)), s, -np.inf)
    return s


def _repeat_kv(x, q, attrs):  # noqa: ANN001, ANN202
    if attrs["enable_gqa"] and q.ndim >= 3 and x.shape[-3] and q.shape[-3] != x.shape[-3]:
        return np.repeat(x, q.shape[-3] // x.shape[-3], axis=-3)
    return x


def _sum_kv(x, k):  # noqa: ANN001, ANN202
    """Sums a gradient over each key head's group of query heads."""
    if x.ndim >= 3 and x.shape[-3] != k.shape[-3]:
        group = x.shape[-3] // k.shape[-3]
        x = x.reshape(x.shape[:-3] + (k.shape[-3], group) + x.shape[-2:]).sum(-3)
    return x


def _attention_dropout(p, v, attrs):  # noqa: ANN001, ANN202
    """The weights p (batch dims broadcast with v's) times the dropout factor: element i of the
    weights, in row-major order over (batch..., heads, queries, keys), kept iff the Philox
    stream (seed, offset)'s float32 uniform i is >= (float32)dropout_p (the dropout op's rule,
    philox.py), then scaled by 1 / (1 - dropout_p); all dropped from dropout_p 1 up. Without
    dropout_p, the weights as they are."""
    dropout_p = attrs.get("dropout_p", 0.0)
    if not dropout_p > 0:
        return p
    shape = np.broadcast_shapes(p.shape[:-2], v.shape[:-2]) + p.shape[-2:]
    u = philox.uniform(attrs["seed"], attrs["offset"], shape, "float32")
    scale = 0.0 if dropout_p >= 1 else 1.0 / (1.0 - dropout_p)
    return np.where(u >= np.float32(dropout_p), np.broadcast_to(p, shape) * scale, 0.0)


@_ref(NUMPY, "scaled_dot_product_attention")
def _attention(ins, attrs, out):  # noqa: ANN001, ANN202
    """softmax(scores), dropped out as the dropout op drops (the logsumexp is before dropout),
    times v."""
    q, k, v, mask = ins
    s = _attention_scores(q, k, mask, attrs)
    m = s.max(-1, keepdims=True, initial=-np.inf)
    finite = np.isfinite(m)
    p = np.exp(s - np.where(finite, m, 0.0))
    total = p.sum(-1, keepdims=True)
    p = np.where(finite, p / np.where(total > 0, total, 1.0), 0.0)
    lse = np.where(finite, m + np.log(np.where(total > 0, total, 1.0)), -np.inf)[..., 0]
    vr = _repeat_kv(v, q, attrs)
    return [np.matmul(_attention_dropout(p, vr, attrs), vr), lse]


@_ref(NUMPY, "scaled_dot_product_attention_backward")
def _attention_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    """The backward op's formula from its inputs: P = exp(scores - logsumexp), Z the dropout
    factors (keep / (1 - dropout_p), or 1), D = rowsum(dO O), dS = scale P (Z dO V^T - D),
    dV = (Z P)^T dO."""
    g, q, k, v, mask, o, lse = ins
    e = q.shape[-1]
    scale = attrs["scale"] if attrs["scale"] is not None else (1.0 / math.sqrt(e) if e else 1.0)
    s = _attention_scores(q, k, mask, attrs)
    lse = lse[..., None]
    p = np.where(np.isfinite(lse), np.exp(s - np.where(np.isfinite(lse), lse, 0.0)), 0.0)
    kr, vr = _repeat_kv(k, q, attrs), _repeat_kv(v, q, attrs)
    dropped = _attention_dropout(p, vr, attrs)
    z = _attention_dropout(np.ones(p.shape), vr, attrs)
    dp = np.matmul(g, np.swapaxes(vr, -1, -2)) * z
    ds = p * (dp - (g * o).sum(-1, keepdims=True)) * scale
    gq = np.matmul(ds, kr)
    gk = _sum_kv(np.matmul(np.swapaxes(ds, -1, -2), q), k)
    gv = _sum_kv(np.matmul(np.swapaxes(dropped, -1, -2), g), v)
    return [gq, gk, gv]


# ---------------------------------------------------------------- losses


def _loss_reduce(per, mode: str, denominator: float):  # noqa: ANN001, ANN202
    if mode == "none":
        return per
    total = per.sum()
    if mode == "sum":
        return total
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.float64(total) / np.float64(denominator)


def _class_loss_parts(x, target, w, attrs, nll: bool):  # noqa: ANN001, ANN202
    """Per sample (classes moved last): the log-probabilities, the weights, the smoothed target
    distribution q (None for class indices), the kept mask and the class indices, the sample
    losses and the mean's denominator."""
    axis = 0 if x.ndim == 1 else attrs["axis"] % x.ndim
    xm = np.moveaxis(x, axis, -1)
    classes = xm.shape[-1]
    weight = np.ones(classes) if w is None else w
    if nll:
        logp = xm
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            m = xm.max(-1, keepdims=True) if xm.size else xm.sum(-1, keepdims=True)
            logp = xm - m - np.log(np.exp(xm - m).sum(-1, keepdims=True))
    smoothing = attrs.get("label_smoothing", 0.0)
    if target.dtype.kind == "f":
        q = (1 - smoothing) * np.moveaxis(target, axis, -1) + smoothing / classes
        per = -(weight * q * logp).sum(-1)
        return logp, weight, q, None, None, per, float(per.size), axis
    ignore = attrs["ignore_index"]
    y = np.asarray(target).astype(np.int64)
    keep = np.ones(y.shape, bool) if ignore is None else y != ignore
    ys = np.where(keep, y, 0)
    picked = np.take_along_axis(logp, ys[..., None], -1)[..., 0]
    wy = np.where(keep, weight[ys], 0.0)
    per = np.where(keep, -wy * picked, 0.0)
    if smoothing:
        spread = -(weight * logp).sum(-1)
        per = np.where(keep, (1 - smoothing) * per + smoothing / classes * spread, 0.0)
    return logp, weight, None, keep, ys, per, float(wy.sum()), axis


@_ref(NUMPY, "cross_entropy", "nll_loss")
def _class_loss(ins, attrs, out):  # noqa: ANN001, ANN202
    x, target, w = ins
    parts = _class_loss_parts(x, target, w, attrs, "label_smoothing" not in attrs)
    return [_loss_reduce(parts[5], attrs["reduction"], parts[6])]


@_ref(NUMPY, "cross_entropy_backward", "nll_loss_backward")
def _class_loss_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x, target, w = ins
    nll = "label_smoothing" not in attrs
    logp, weight, q, keep, ys, per, denominator, axis = _class_loss_parts(x, target, w, attrs, nll)
    mode = attrs["reduction"]
    with np.errstate(invalid="ignore", divide="ignore"):
        gs = np.asarray(g, np.float64) if mode == "none" else np.full(per.shape, float(g))
        if mode == "mean":
            gs = gs / denominator
    gs = gs[..., None]
    classes = logp.shape[-1]
    smoothing = attrs.get("label_smoothing", 0.0)
    if q is not None:
        p = np.exp(logp)
        gx = gs * (p * (weight * q).sum(-1, keepdims=True) - weight * q)
        gt = gs * (1 - smoothing) * weight * (-logp)
        return [np.moveaxis(gx, -1, axis), np.moveaxis(gt, -1, axis)]
    onehot = np.arange(classes) == ys[..., None]
    wy = weight[ys][..., None]
    if nll:
        gx = -gs * wy * onehot
    else:
        p = np.exp(logp)
        a = (1 - smoothing) * wy + smoothing / classes * weight.sum()
        gx = gs * (p * a - (1 - smoothing) * wy * onehot - smoothing / classes * weight)
    gx = np.where(keep[..., None], gx, 0.0)
    results = [np.moveaxis(gx, -1, axis)]
    if not nll:
        results.append(np.zeros(np.shape(target)))
    return results


def _log_sigmoid(x):  # noqa: ANN001, ANN202
    return -np.logaddexp(0.0, -x)


def _pointwise_loss(kind: str, ins, attrs):  # noqa: ANN001, ANN202
    x, t = ins[0], ins[1]
    if kind == "mse":
        return (x - t) ** 2
    if kind == "smooth_l1":
        d, beta = np.abs(x - t), attrs["beta"]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(d < beta, 0.5 * d * d / (beta if beta else 1.0), d - 0.5 * beta)
    w, pw = ins[2], ins[3]
    lw = 1.0 if pw is None else 1.0 + (pw - 1.0) * t
    loss = (1 - t) * x - lw * _log_sigmoid(x)
    return np.broadcast_to(loss if w is None else loss * w, x.shape)


_POINTWISE_KINDS = {
    "binary_cross_entropy_with_logits": "bce",
    "mse_loss": "mse",
    "smooth_l1_loss": "smooth_l1",
}


@_ref(NUMPY, *_POINTWISE_KINDS)
def _pointwise_loss_ref(ins, attrs, out):  # noqa: ANN001, ANN202
    kind = "bce" if len(ins) == 4 else "smooth_l1" if "beta" in attrs else "mse"
    per = np.asarray(_pointwise_loss(kind, ins, attrs), np.float64)
    return [_loss_reduce(per, attrs["reduction"], float(per.size))]


@_ref(
    NUMPY,
    "binary_cross_entropy_with_logits_backward",
    "mse_loss_backward",
    "smooth_l1_loss_backward",
)
def _pointwise_loss_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, x, t = ins[0], ins[1], ins[2]
    shape = np.broadcast_shapes(np.shape(x), np.shape(t))
    size = int(np.prod(shape))
    mode = attrs["reduction"]
    with np.errstate(invalid="ignore", divide="ignore"):
        gs = np.broadcast_to(np.asarray(g, np.float64), shape)
        if mode == "mean":
            gs = gs / size
    d = x - t
    if len(ins) == 5:
        w = 1.0 if ins[3] is None else ins[3]
        pw = 1.0 if ins[4] is None else ins[4]
        lw = 1.0 + (pw - 1.0) * t
        sig = 1.0 / (1.0 + np.exp(-x))
        gx = gs * w * (lw * sig - pw * t)
        gt = gs * w * (-x - (pw - 1.0) * _log_sigmoid(x))
        return [np.broadcast_to(gx, shape), np.broadcast_to(gt, shape)]
    if "beta" in attrs:
        beta = attrs["beta"]
        with np.errstate(invalid="ignore", divide="ignore"):
            slope = np.where(np.abs(d) < beta, d / (beta if beta else 1.0), np.sign(d))
        return [np.broadcast_to(slope * gs, shape)]
    return [np.broadcast_to(2.0 * d * gs, shape)]


# ---------------------------------------------------------------- random numbers and arange
# Bit-exact twins of the kernels (conformance/philox.py); results in the compute type, which the
# comparison rounds to the output dtype exactly as the kernels do (float32 to float16 or
# bfloat16, to nearest even).


def _philox_values(values: np.ndarray, dtype: str) -> np.ndarray:
    """philox.py's results as values: bfloat16 bits as float32, others as they are."""
    return philox.bf16_bits_to_f32(values) if dtype == "bfloat16" else values


@_ref(NUMPY, "random_uniform")
def _random_uniform(ins, attrs, out):  # noqa: ANN001, ANN202
    shape = tuple(attrs["shape"])
    r = philox.uniform(attrs["seed"], attrs["offset"], shape, out[0], attrs["low"], attrs["high"])
    return [_philox_values(r, out[0])]


@_ref(NUMPY, "random_normal")
def _random_normal(ins, attrs, out):  # noqa: ANN001, ANN202
    shape = tuple(attrs["shape"])
    r = philox.normal(attrs["seed"], attrs["offset"], shape, out[0], attrs["mean"], attrs["std"])
    return [_philox_values(r, out[0])]


@_ref(NUMPY, "random_bernoulli")
def _random_bernoulli(ins, attrs, out):  # noqa: ANN001, ANN202
    probs = ins[0]
    shape = tuple(attrs["shape"]) if attrs["shape"] is not None else probs.shape
    p = np.asarray(probs, np.float64) if probs is not None else attrs["p"]
    p = 0.5 if p is None else p
    bits = philox.bernoulli(attrs["seed"], attrs["offset"], shape, p)
    return [bits if out[0] == "bool" else bits.astype(np.float64)]


def _dropout_scale(p: float, training: bool, dtype: str) -> np.floating:
    scale = 1.0 if not training else 0.0 if p >= 1 else 1.0 / (1.0 - p)
    return np.float64(scale) if dtype == "float64" else np.float32(scale)


@_ref(NUMPY, "dropout")
def _dropout(ins, attrs, out):  # noqa: ANN001, ANN202
    x = np.asarray(ins[0])
    compute = np.float64 if out[0] == "float64" else np.float32
    if not attrs["training"]:
        return [x, np.ones(x.shape, bool)]
    u = philox.uniform(attrs["seed"], attrs["offset"], x.shape, "float32")
    mask = u >= np.float32(attrs["p"])
    scale = _dropout_scale(attrs["p"], True, out[0])
    with np.errstate(all="ignore"):
        kept = x.astype(compute) * scale
    return [np.where(mask, kept, compute(0)), mask]


@_ref(NUMPY, "dropout_backward")
def _dropout_backward(ins, attrs, out):  # noqa: ANN001, ANN202
    g, mask = np.asarray(ins[0]), np.asarray(ins[1], bool)
    compute = np.float64 if out[0] == "float64" else np.float32
    scale = _dropout_scale(attrs["p"], attrs["training"], out[0])
    with np.errstate(all="ignore"):
        kept = g.astype(compute) * scale
    return [np.where(np.broadcast_to(mask, g.shape), kept, compute(0))]


@_ref(NUMPY, "arange")
def _arange(ins, attrs, out):  # noqa: ANN001, ANN202
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if stop is None:
        start, stop = 0.0, start
    length = max(0, math.ceil((stop - start) / step))
    i = np.arange(length, dtype=np.float64)
    if out[0] in ("float16", "bfloat16", "float32", "float64"):
        v = np.float64(start) + i * np.float64(step)
        return [v if out[0] == "float64" else v.astype(np.float32)]
    return [np.int64(start) + np.arange(length, dtype=np.int64) * np.int64(step)]


# The NumPy references of the deep-learning ops and of the shape and indexing ops' backward
# operators register themselves in NUMPY.
from . import nn_references, shape_grad_references  # noqa: E402, F401
