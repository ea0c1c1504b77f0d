"""Per-dtype tolerances: the one place that says how close a result must be to the reference.

Integers and bools must match exactly. Floats are compared after rounding the float64
reference to the output dtype, in units in the last place (ULP) of that dtype: a result passes
when it is within ULPS[class][dtype] ULP of the rounded reference, or when its absolute error is
within ULPS[class][dtype] * eps(dtype) * scale, where scale is 1 for element-wise ops (the usual
absolute floor near zero, where a ULP is tiny) and the largest finite |reference| of the case for
ops that accumulate (reductions, products, norms, convolutions) the largest finite |value| among
the reference and the inputs (squared for var), since their rounding errors grow with the
magnitude of the terms rather than of the result. NaN must meet NaN; infinities must match
exactly; -0.0 equals 0.0.

Scatter-add ops (SCATTER_ADD) sum a varying number of contributions into each output element:
with many equal indices thousands land on one element, and a kernel adding them one after
another in the element type (as torch's CPU index_add does) has an error that grows with that
number. Their float results may in addition be off by the accumulation bound of each element,
gamma(k) * sum(|contributions|) with gamma(k) = k*u / (1 - k*u), u = eps/2 the unit roundoff
and k the element's number of contributions (x included for the forward scatters): the
classical bound of recursive summation of k terms (each term rounded once more, as alpha *
value is), valid for any order of summation; the float64 reference's own error (the same bound
with u = 2**-53) is added. accumulation_bound computes it; both k and the sums come from the
reference itself run on ones and on the inputs' absolute values. The dot-product ops
(DOT_PRODUCTS) take the same bound of their K products, and vector_norm that of its sum of
positive terms (vector_norm_bound). SUMMATION_BOUNDS maps each of these ops to its bound
function, and summation_bounds looks an op's up.

Complex results are compared as NumPy sees complex values, by modulus: a value is NaN when
either part is NaN, and NaN meets NaN whatever the other parts hold; otherwise a part that is
infinite in the result or the reference must be exactly the other's; the rest passes when
|result - reference| <= ULPS[class][dtype] * eps(part dtype) * scale, scale being max(1,
|reference|) for element-wise ops (relative to the modulus, with the same absolute floor near
zero as floats) and the accumulating scale above (moduli) for accumulating ops. This is the rule
of tests/arrays.py's complex comparison. docs/conformance.md states the same table."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import dtypes as dt
from . import references

__all__ = [
    "EPS",
    "ULPS",
    "ACCUMULATING",
    "EXACT",
    "SCATTER_ADD",
    "DOT_PRODUCTS",
    "SUMMATION_BOUNDS",
    "summation_bounds",
    "vector_norm_bound",
    "tolerance_class",
    "accumulation_bound",
    "compare",
]

#: Machine epsilon per float dtype.
EPS = {
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "float32": 2.0**-23,
    "float64": 2.0**-52,
    "complex64": 2.0**-23,
    "complex128": 2.0**-52,
}

#: Allowed error in ULP of the output dtype (for complex: in eps of the part dtype times the
#: modulus scale), per op class and dtype.
ULPS = {
    "elementwise": {
        "float16": 2,
        "bfloat16": 2,
        "float32": 4,
        "float64": 4,
        "complex64": 8,
        "complex128": 8,
    },
    "accumulating": {
        "float16": 16,
        "bfloat16": 16,
        "float32": 64,
        "float64": 64,
        "complex64": 64,
        "complex128": 64,
    },
}

#: Ops whose results accumulate many rounded terms.
ACCUMULATING = frozenset(
    {
        "sum",
        "prod",
        "cross_entropy",
        "nll_loss",
        "binary_cross_entropy_with_logits",
        "mse_loss",
        "smooth_l1_loss",
        "mean",
        "var",
        "std",
        "logsumexp",
        "cumulative_sum",
        "cumulative_prod",
        "softmax",
        "log_softmax",
        "matmul",
        "vecdot",
        "linear",
        "einsum",
        "conv2d",
        "conv_transpose2d",
        "avg_pool2d",
        "adaptive_avg_pool2d",
        "batch_norm",
        "group_norm",
        "layer_norm",
        "rms_norm",
        "softmax_backward",
        "log_softmax_backward",
        "layer_norm_backward",
        "rms_norm_backward",
        "group_norm_backward",
        "batch_norm_backward",
        "batch_norm_training",
        "interpolate",
        "prod_backward",
        "var_backward",
        "std_backward",
        "cumulative_sum_backward",
        "cumulative_prod_backward",
        "matmul_backward",
        "scaled_dot_product_attention",
        "scaled_dot_product_attention_backward",
        "einsum_backward",
        "conv2d_backward_input",
        "conv2d_backward_weight",
        "conv_transpose2d_backward_input",
        "max_pool2d_backward",
        "avg_pool2d_backward",
        "adaptive_avg_pool2d_backward",
        "interpolate_backward",
        "sum_to_shape",
        # scatters with an add or multiply reduction and rotary's rotations sum rounded terms
        "index_add",
        "scatter_nd",
        "put_along_axis",
        "rotary_embedding",
        "vector_norm",
    }
)


#: Ops whose float results must match the reference bit for bit: the random ops (their stream
#: is fixed by kernels/common/philox.h, reproduced in conformance/philox.py) and arange.
EXACT = frozenset(
    {
        "random_uniform",
        "random_normal",
        "random_bernoulli",
        "dropout",
        "dropout_backward",
        "arange",
    }
)


#: Scatter-add ops: each output element sums the contributions its indices send it, {op:
#: reduction attribute that must be "add" for the bound to apply, or None where it always adds}.
#: Their float outputs may be off by accumulation_bound as well.
SCATTER_ADD = {
    "take_backward": None,
    "take_along_axis_backward": None,
    "index_select_backward": None,
    "gather_nd_backward": None,
    "embedding_backward": None,
    "index_add": None,
    "put_along_axis": "reduction",
    "scatter_nd": "reduction",
}


#: Ops whose every output element is a sum of products of input elements (a dot product over
#: K terms, plus a bias term for linear). Their float and complex results may in addition be
#: off by the classical dot-product bound, gamma(K) * sum |a| |b| (complex: sqrt(2) *
#: gamma(K + 2) * sum |a| |b|), valid for any summation order; K and the sums come from the
#: reference as for SCATTER_ADD (run on ones, and on the absolute inputs).
DOT_PRODUCTS = frozenset({"matmul", "vecdot", "linear"})


def accumulation_bound(counts: np.ndarray, magnitudes: np.ndarray, dtype: str) -> np.ndarray:
    """Per element, the error a sum of `counts` terms whose absolute values sum to `magnitudes`
    may carry in `dtype` (recursive summation in any order, gamma(k) * sum |terms|), plus the
    float64 reference's own; inf where k * u >= 1 (no bound holds there)."""
    k = np.real(np.asarray(counts)).astype(np.float64)
    factor = 1.0
    if dtype.startswith("complex"):  # complex products round their parts: two more terms
        k, factor = k + 2, np.sqrt(2.0)
    total = np.zeros(k.shape)
    for u in (EPS[dtype] / 2, 2.0**-53):
        with np.errstate(divide="ignore", invalid="ignore"):
            gamma = np.where(k * u < 1, k * u / np.maximum(1 - k * u, 1e-300), np.inf)
        total = total + factor * gamma * np.abs(np.real(np.asarray(magnitudes)))
    return np.where(np.isnan(total), np.inf, total)


def _linear_bounds(op: str, reduction: str | None = None):  # noqa: ANN202
    """The summation bound of a scatter-add or a dot-product op: per output, the
    accumulation_bound of its case, or None (a reduction attribute other than add, an output
    neither float nor complex). The op's NumPy reference (looked up at each call), linear in
    the contributions (in each factor of a product), gives each element's number of terms when
    run on ones (alpha 1) and the sum of their absolute values when run on the absolute inputs
    (|alpha|)."""

    def bounds(values: list, attrs: dict, out_dtypes: list) -> list:
        if op not in references.NUMPY or (reduction is not None and attrs.get(reduction) != "add"):
            return [None] * len(out_dtypes)

        def floats(fill):  # noqa: ANN001, ANN202
            return [
                fill(np.asarray(v, np.complex128 if v.dtype.kind == "c" else np.float64))
                if v is not None and v.dtype.kind in "fc"
                else v
                for v in values
            ]

        table = references.NUMPY[op]
        ones, absolute = dict(attrs), dict(attrs)
        if "alpha" in attrs:
            ones["alpha"], absolute["alpha"] = 1.0, abs(attrs["alpha"])
        with np.errstate(all="ignore"):
            counts = table(floats(np.ones_like), ones, out_dtypes)
            magnitudes = table(floats(np.abs), absolute, out_dtypes)
        return [
            accumulation_bound(np.asarray(c), np.asarray(m), d)
            if d.startswith(("float", "bfloat", "complex"))
            else None
            for c, m, d in zip(counts, magnitudes, out_dtypes, strict=False)
        ]

    return bounds


def vector_norm_bound(x: np.ndarray, attrs: dict, dtype: str) -> np.ndarray | None:
    """vector_norm's: the sum of n positive terms |x|^p is off by at most gamma(n) relatively,
    and its 1/p-th power by gamma(n) / |p|; so gamma(n) * max(1, 1 / |p|) * |result|, n from
    the reference on ones (n^(1/p)). None for ord 0 and +-inf (a count, a max, a min)."""
    p = float(attrs.get("ord", 2.0))
    if p == 0 or not np.isfinite(p) or not dtype.startswith(("float", "bfloat")):
        return None
    with np.errstate(all="ignore"):
        ones = np.ones_like(np.asarray(x, np.float64))
        counts = np.asarray(references.NUMPY["vector_norm"]([ones], attrs, [dtype])[0]) ** p
        result = np.asarray(
            references.NUMPY["vector_norm"]([np.asarray(x, np.float64)], attrs, [dtype])[0]
        )
        return accumulation_bound(np.rint(counts), max(1.0, 1.0 / abs(p)) * np.abs(result), dtype)


#: Per op, its summation bound: a function of the case (inputs, attributes with their defaults,
#: output dtypes) giving, per output, the per-element error its float (and complex) results may
#: carry beyond the per-dtype tolerance, or None. The scatter-add ops (SCATTER_ADD) and the
#: dot-product ops (DOT_PRODUCTS) take accumulation_bound of their sums, vector_norm
#: vector_norm_bound; every other op has none.
SUMMATION_BOUNDS: dict[str, Callable[[list, dict, list], list]] = {
    **{op: _linear_bounds(op, reduction) for op, reduction in SCATTER_ADD.items()},
    **{op: _linear_bounds(op) for op in sorted(DOT_PRODUCTS)},
    "vector_norm": lambda values, attrs, out_dtypes: [
        vector_norm_bound(values[0], attrs, out_dtypes[0])
    ],
}


def summation_bounds(op: str, values: list, attrs: dict, out_dtypes: list) -> list:
    """Per output of a case of `op`, its SUMMATION_BOUNDS bound (None: none applies)."""
    bound = SUMMATION_BOUNDS.get(op)
    return [None] * len(out_dtypes) if bound is None else bound(values, attrs, out_dtypes)


def tolerance_class(op: str) -> str:
    """Backward operators accumulate (a cotangent sums over everything an input touched)."""
    return "accumulating" if op in ACCUMULATING or "_backward" in op else "elementwise"


def _ordered(bits: np.ndarray, nbits: int) -> np.ndarray:
    """Float bit patterns mapped to integers whose difference counts ULPs."""
    b = bits.astype(np.int64)
    sign = np.int64(1) << (nbits - 1)
    return (
        np.where(b & sign, -(b & (sign - 1)), b)
        if nbits < 64
        else np.where(
            bits.view(np.int64) < 0,
            -(bits.view(np.int64) & np.int64(0x7FFFFFFFFFFFFFFF)),
            bits.view(np.int64),
        )
    )


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| of ordered bit patterns (int64) as float64, exact where both have one sign (an
    int64 difference of float64 patterns converted first would round to multiples of 1024);
    across signs, where the int64 difference could overflow, in float64."""
    a, b = a.astype(np.int64), b.astype(np.int64)
    same = (a >= 0) == (b >= 0)
    with np.errstate(over="ignore"):
        exact = np.abs(np.where(same, a - b, 0)).astype(np.float64)
    return np.where(same, exact, np.abs(a.astype(np.float64) - b.astype(np.float64)))


def _as_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    stored = dt.from_values(values, dtype)
    if dtype == "bfloat16":
        return stored
    return stored.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[stored.itemsize])


def input_scale(op: str, inputs: list) -> float:
    """The magnitude of an accumulating op's terms: the largest finite |input| (the modulus for
    complex; squared for var, whose terms are squares)."""
    scale = 0.0
    for a in inputs:
        if a is not None and a.size and a.dtype.kind in "fiucb":  # bools count as 0 and 1
            v = np.abs(a) if a.dtype.kind == "c" else np.abs(a.astype(np.float64))
            scale = max(scale, float(np.max(v[np.isfinite(v)], initial=0.0)))
    return scale * scale if op == "var" else scale


def compare(
    actual: np.ndarray,
    reference: np.ndarray,
    dtype: str,
    op: str,
    scale: float = 0.0,
    alternatives: tuple | list = (),
    bound: np.ndarray | None = None,
) -> tuple[bool, str, float]:
    """(ok, text, worst error): the worst error in ULP for floats, as |difference| for integers
    (nan/inf mismatches count as infinitely far). `actual` holds the output's values
    (dtypes.to_values), `reference` the reference values in any dtype; `scale` the input_scale
    of accumulating ops; `alternatives` other references each element of a complex result may
    meet instead (see runner._complex_alternatives); `bound` a per-element accumulation bound
    (accumulation_bound) a real float result may be off by beyond the per-dtype tolerance."""
    if actual.shape != reference.shape:
        return False, f"shape {actual.shape}, reference {reference.shape}", np.inf
    if actual.size == 0:
        return True, "", 0.0
    if dt.is_complex(dtype):
        return _compare_complex(actual, reference, dtype, op, scale, alternatives, bound)
    if not dt.is_float(dtype):
        expected = dt.from_values(reference, dtype)
        bad = actual != expected
        if not bad.any():
            return True, "exact", 0.0
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        worst = float(np.max(diff))
        return (
            False,
            (
                f"{int(bad.sum())} of {bad.size} elements differ (worst by {worst:g}); "
                f"at {i}: {expected[i].item()!r} expected, got {actual[i].item()!r}"
            ),
            worst,
        )
    ref = dt.to_values(dt.from_values(reference.astype(np.float64), dtype), dtype)
    act = actual.astype(np.float64)
    nan_a, nan_r = np.isnan(act), np.isnan(ref)
    nbits = dt.itemsize(dtype) * 8
    with np.errstate(invalid="ignore", over="ignore"):
        ulp = _ulp_distance(
            _ordered(_as_bits(act, dtype), nbits), _ordered(_as_bits(ref, dtype), nbits)
        )
        ulp = np.where(ref == act, 0, ulp)
        err = np.abs(act - ref)
    limit = 0 if op in EXACT else ULPS[tolerance_class(op)][dtype]
    finite = np.isfinite(ref)
    if tolerance_class(op) == "accumulating":
        scale = max(1e-300, scale, float(np.max(np.abs(ref[finite]), initial=0.0)))
    else:
        scale = 1.0
    allowed = limit * EPS[dtype] * scale
    if bound is not None:
        allowed = allowed + np.broadcast_to(bound, err.shape)
    ok = (ulp <= limit) | (err <= allowed)
    ok &= ~(nan_a ^ nan_r)
    ok |= nan_a & nan_r
    ok &= np.where(np.isinf(ref) | np.isinf(act), act == ref, True) | (nan_a & nan_r)
    if ok.all():
        worst = float(np.max(np.where(nan_r, 0, ulp))) if ulp.size else 0.0
        return True, f"{worst:.0f} ulp", worst
    bad = ~ok
    i = tuple(int(k) for k in np.argwhere(bad)[0])
    worst = float(np.max(np.where(bad & (nan_r | nan_a), np.inf, np.where(bad, ulp, 0))))
    text = (
        f"{int(bad.sum())} of {bad.size} elements off, worst {worst:.0f} ulp (limit {limit}); "
        f"at {i}: {float(act[i])!r}, reference {float(ref[i])!r}"
    )
    if bound is not None:
        text += f" (accumulation bound there {float(np.broadcast_to(bound, err.shape)[i]):.3g})"
    return False, text, worst


def _complex_errors(
    act: np.ndarray,
    reference: np.ndarray,
    dtype: str,
    op: str,
    scale: float,
    bound: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(ok, error in eps of the modulus scale) per element of a complex result (act, complex128)
    against one reference: NaN-ness first (either part), then infinite parts exactly, then the
    error relative to the modulus (see the module's docstring); inf where an element is off
    because of a nan or an infinite part."""
    ref = dt.to_values(dt.from_values(np.asarray(reference).astype(np.complex128), dtype), dtype)
    limit, eps = ULPS[tolerance_class(op)][dtype], EPS[dtype]
    nan_a, nan_r = np.isnan(act), np.isnan(ref)
    with np.errstate(invalid="ignore", over="ignore"):
        if tolerance_class(op) == "accumulating":
            finite = np.isfinite(ref)
            unit = eps * max(1e-300, scale, float(np.max(np.abs(ref[finite]), initial=0.0)))
            units = np.full(ref.shape, unit)
        else:
            units = eps * np.maximum(1.0, np.where(np.isfinite(ref), np.abs(ref), 1.0))
        err = np.abs(act - ref) / units
        # Elements with an infinite part: each infinite part exactly, each finite part on its own.
        part_err = np.zeros(ref.shape)
        for part in (np.real, np.imag):
            pa, pr = part(act), part(ref)
            inf = np.isinf(pa) | np.isinf(pr)
            part_err = np.maximum(
                part_err, np.where(inf, np.where(pa == pr, 0.0, np.inf), np.abs(pa - pr) / units)
            )
    infinite = np.isinf(act) | np.isinf(ref)
    err = np.where(infinite, part_err, err)
    err = np.where(nan_a | nan_r, np.where(nan_a & nan_r, 0.0, np.inf), err)
    ok = err <= limit
    if bound is not None:  # the accumulation bound, in the same units, on top of the limit
        with np.errstate(invalid="ignore"):
            ok |= np.isfinite(err) & (err <= limit + np.broadcast_to(bound, err.shape) / units)
    return ok, err


def _compare_complex(
    actual: np.ndarray,
    reference: np.ndarray,
    dtype: str,
    op: str,
    scale: float,
    alternatives: tuple | list,
    bound: np.ndarray | None = None,
) -> tuple[bool, str, float]:
    """compare() for complex outputs; an element passes against the reference or any of the
    alternative references (each within the accumulation bound too, when given)."""
    act = np.asarray(actual).astype(np.complex128)
    ok, err = _complex_errors(act, reference, dtype, op, scale, bound)
    for alternative in alternatives:
        ok_alt, err_alt = _complex_errors(act, alternative, dtype, op, scale, bound)
        ok, err = ok | ok_alt, np.minimum(err, err_alt)
    if ok.all():
        worst = float(np.max(err))
        return True, f"{worst:.0f} eps", worst
    bad = ~ok
    i = tuple(int(k) for k in np.argwhere(bad)[0])
    worst = float(np.max(np.where(bad, err, 0)))
    ref = complex(np.asarray(reference).astype(np.complex128)[i])
    text = (
        f"{int(bad.sum())} of {bad.size} elements off, worst {worst:.0f} eps of the modulus "
        f"(limit {ULPS[tolerance_class(op)][dtype]}); at {i}: {complex(act[i])!r}, "
        f"reference {ref!r}"
    )
    return False, text, worst
