"""Cases from an op's schema: for one kernel signature (one dtype per input parameter, then per
output), input shapes and attribute sets (schema-derived, refined by op_table), input values
(random values of each input's domain with the dtype's edge values mixed in) and layouts
(compact, strided, reversed = negative strides, broadcast = a zero stride, transposed).

Every case is reproducible from (op, signature, seed, case index): the random generator of case
i is seeded with those, so a failing case's seed is enough to rerun it."""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass, field

import numpy as np

from ctensor._lib import ffi
from ctensor._registry import OpSpec

from . import dtypes as dt
from .abi_calls import infer
from .op_table import BINARY_SHAPES, GRADIENT_DOMAINS, OPS, UNARY_SHAPES
from .tolerances import tolerance_class

__all__ = ["Case", "generate", "LAYOUTS", "case_seed"]

LAYOUTS = ("compact", "strided", "reversed", "broadcast", "transposed")
#: Share of elements replaced by edge values.
EDGE_SHARE = 0.2


@dataclass
class Case:
    """One call: stored input arrays (numpy views carrying the layout; None for absent
    inputs), their dtypes, the attributes passed, and whether outputs are strided."""

    op: str
    signature: tuple[str, ...]
    index: int
    seed: int
    inputs: list
    input_dtypes: list
    attrs: dict
    strided_output: bool
    layouts: list = field(default_factory=list)

    def values(self) -> list:
        """The inputs as values (dtypes.to_values; None for absent inputs)."""
        return [
            None if a is None else dt.to_values(np.array(a), d)
            for a, d in zip(self.inputs, self.input_dtypes, strict=True)
        ]

    def describe(self) -> str:
        shapes = [None if a is None else tuple(a.shape) for a in self.inputs]
        return (
            f"case {self.index} (seed {self.seed}): shapes {shapes}, layouts {self.layouts}, "
            f"attrs {self.attrs}"
        )


def case_seed(seed: int, op: str, signature: tuple[str, ...], index: int) -> int:
    return zlib.crc32(f"{seed}:{op}:{','.join(signature)}:{index}".encode())


def _shape_sets(spec: OpSpec, entry: dict) -> list:
    if "shapes" in entry:
        return entry["shapes"]
    n = len(spec.inputs)
    if n == 1:
        return UNARY_SHAPES
    if n == 2:
        return BINARY_SHAPES
    return [tuple([(3, 4)] * n)]


def _attr_sets(entry: dict, signature: tuple[str, ...]) -> list[dict]:
    sets = entry.get("attrs", [{}])
    return [a(signature) if callable(a) else dict(a) for a in sets]


# ---------------------------------------------------------------------- values ----------------


def _base_values(rng: np.random.Generator, dtype: str, shape, domain) -> np.ndarray:  # noqa: ANN001
    """Values (see dtypes.to_values) of one input, before edge values and storage rounding."""
    if dtype == "bool":
        p = 0.3 if domain == "few" else 0.5
        return rng.random(shape) < p
    if dt.is_complex(dtype) and domain != "few":
        # Real and imaginary parts drawn independently, each as a value of the part dtype.
        part = dt.part_dtype(dtype)
        return dt.make_complex(
            _base_values(rng, part, shape, domain), _base_values(rng, part, shape, domain)
        )
    kind, low, high = "range", None, None
    if isinstance(domain, tuple):
        kind, low, high = domain
    elif domain == "small":
        low, high = (-3, 4) if dt.is_int(dtype) else (-2.0, 2.0)
    elif domain == "positive":
        low, high = (1, 10) if dt.is_int(dtype) else (0.1, 3.0)
    elif domain == "exponent":
        low, high = (0, 5) if dt.is_int(dtype) else (-3.0, 3.0)
    elif domain == "few":
        return rng.choice(np.array([0, 0, 1, 2]), size=shape).astype(
            dt.storage(dtype) if dtype != "bfloat16" else np.float64
        )
    elif domain == "ties":
        values = rng.integers(-3, 4, size=shape)
        if not dt.is_float(dtype):
            lo = dt.limits(dtype)[0]
            values = np.where(values < lo, -values, values)
            return values.astype(dtype)
        return values.astype(np.float64) * 0.5
    elif domain == "shift":
        bits = dt.itemsize(dtype) * 8
        return rng.integers(0, bits, size=shape).astype(dtype)
    if dt.is_int(dtype):
        lo, hi = dt.limits(dtype)
        if low is None:
            low, high = (-50, 51) if lo < 0 else (0, 101)
        return rng.integers(max(low, lo), min(high, hi), size=shape, endpoint=False).astype(dtype)
    if low is None:
        values = rng.standard_normal(shape) * 2.0
        return values * np.where(rng.random(shape) < 0.1, 50.0, 1.0)
    if kind == "index":
        return rng.integers(low, high, size=shape).astype(np.float64)
    return rng.uniform(low, high, size=shape)


def _values(rng, dtype: str, shape, domain, edges: bool, op: str) -> np.ndarray:  # noqa: ANN001
    values = _base_values(rng, dtype, shape, domain)
    if edges and domain in ("default", "ties") and values.size:
        pool = dt.edge_values(dtype)
        if (dt.is_float(dtype) or dt.is_complex(dtype)) and tolerance_class(op) == "accumulating":
            # Infinities and the largest values make sums depend on their order: left out.
            big = np.isinf(pool) | (np.abs(pool) > 1e4)
            pool = pool[~big]
        mask = rng.random(shape) < EDGE_SHARE
        picks = pool[rng.integers(0, len(pool), size=shape)]
        values = np.where(mask, picks, values)
    stored = dt.from_values(values, dtype)
    if domain == "sorted":
        order = np.argsort(dt.to_values(stored, dtype), axis=-1, kind="stable")
        stored = np.take_along_axis(stored, order, axis=-1) if stored.ndim else stored
    return stored


# ---------------------------------------------------------------------- layouts ---------------


def _apply_layout(stored: np.ndarray, layout: str, rng) -> tuple[np.ndarray, str]:  # noqa: ANN001
    """A view of the same values (or, for broadcast, of values constant along one axis) with the
    given memory layout."""
    shape = stored.shape
    if stored.ndim == 0 or stored.size == 0 and layout != "strided":
        return stored, "compact"
    if layout == "strided":
        base = np.zeros(tuple(2 * n + 1 for n in shape), dtype=stored.dtype)
        view = base[tuple(slice(1, None, 2) for _ in shape)]
        view[...] = stored
        return view, layout
    if layout == "reversed":
        base = np.ascontiguousarray(stored[tuple(slice(None, None, -1) for _ in shape)])
        return base[tuple(slice(None, None, -1) for _ in shape)], layout
    if layout == "broadcast":
        axes = [k for k, n in enumerate(shape) if n > 1]
        if not axes:
            return stored, "compact"
        axis = axes[int(rng.integers(0, len(axes)))]
        return np.broadcast_to(np.take(stored, [0], axis=axis), shape), layout
    if layout == "transposed" and stored.ndim >= 2:
        return np.ascontiguousarray(stored.T).T, layout
    return stored, "compact"


# ---------------------------------------------------------------------- cases -----------------


def _param_dtype(spec: OpSpec, signature, k: int) -> str:
    return signature[min(k, len(spec.inputs) - 1)]


def _candidates(spec: OpSpec, signature, entry: dict):  # noqa: ANN001, ANN202
    """(flat input shapes with None for absent, attrs) pairs, before infer filtering."""
    for shapes, attrs in itertools.product(_shape_sets(spec, entry), _attr_sets(entry, signature)):
        flat = []
        for s in shapes:
            if isinstance(s, list):
                flat.extend(s)
            else:
                flat.append(s)
        yield flat, attrs


def gradient_cases(spec: OpSpec, signature: tuple[str, ...], seed: int, count: int) -> list[Case]:
    """Cases for gradient checks: as generate's, with no edge values, and float inputs drawn
    away from ties (where a derivative has a kink), so that finite differences hold; only
    non-empty cases, the largest first."""
    entry = dict(OPS.get(spec.name, {}))
    entry["edges"] = False
    domains = dict(entry.get("domains", {}))
    for k in range(16):  # flat input positions (a variadic input's tensors share one dtype)
        if dt.is_float(_param_dtype(spec, signature, k)) and domains.get(k, "default") in (
            "default",
            "ties",
            "few",
        ):
            domains[k] = "small"  # moderate values: exp, pow and the like stay finite
    domains.update(GRADIENT_DOMAINS.get(spec.name, {}))
    entry["domains"] = domains
    cases = generate(spec, signature, seed ^ 0x9E3779B9, 4 * count, entry)
    cases = [c for c in cases if all(a is None or a.size for a in c.inputs)]
    cases.sort(key=lambda c: -sum(a.size for a in c.inputs if a is not None))
    return cases[:count]


def generate(
    spec: OpSpec, signature: tuple[str, ...], seed: int, count: int, entry: dict | None = None
) -> list[Case]:
    """Up to `count` cases for one kernel signature: every valid (shapes, attrs) combination
    once, in order, then more with other layouts and values until `count` is reached. `entry`
    replaces the op's op_table entry."""
    entry = OPS.get(spec.name, {}) if entry is None else entry
    valid = []
    for flat, attrs in _candidates(spec, signature, entry):
        views = []
        keep = []
        for k, shape in enumerate(flat):
            if shape is None:
                views.append(None)
                continue
            view = ffi.new("ct_tensor*")
            dt.set_ct_dtype(view.dtype, _param_dtype(spec, signature, k))
            view.device.device_type = 1
            view.ndim = len(shape)
            arr = ffi.new("int64_t[]", list(shape) or [0])
            keep.append(arr)
            view.shape = arr
            views.append(view)
        status, _, _ = infer(spec, views, attrs)
        if status == 0:
            valid.append((flat, attrs))
    cases: list[Case] = []
    if not valid:
        return cases
    rounds = max(1, -(-count // len(valid)))
    index = 0
    for r in range(rounds):
        for flat, attrs in valid:
            if index >= count and r > 0:
                break
            cs = case_seed(seed, spec.name, signature, index)
            cases.append(build(spec, signature, index, cs, flat, attrs, entry, r))
            index += 1
    return cases


def _index_extent(spec: OpSpec, entry: dict, flat, attrs, k: int):  # noqa: ANN001, ANN202
    """The valid index range of an index input (take, take_along_axis, embedding)."""
    source = entry["domains"][k][1]
    shape = flat[source]
    if spec.name == "embedding":
        return 0, shape[0]
    if spec.name in ("gather_nd", "scatter_nd"):
        # every component indexes its own dim: the smallest extent keeps all of them valid
        b = attrs.get("batch_dims", 0)
        k = flat[1][-1]
        n = min(shape[b : b + k]) if k else 1
        return -n, n
    if spec.name in ("put_along_axis", "index_select", "index_add"):
        n = shape[attrs["axis"]]
        return -n, n
    axis = attrs.get("axis", -1 if spec.name == "take_along_axis" else None)
    n = int(np.prod(shape)) if axis is None else shape[axis]
    return (-n, n) if spec.name == "take" else (0, n)


def build(
    spec: OpSpec, signature, index: int, cs: int, flat, attrs, entry: dict, round_: int
) -> Case:  # noqa: ANN001
    rng = np.random.default_rng(cs)
    edges = entry.get("edges", True)
    inputs, dtypes_, layouts = [], [], []
    for k, shape in enumerate(flat):
        dtype = _param_dtype(spec, signature, k)
        if shape is None:
            inputs.append(None)
            dtypes_.append(None)
            layouts.append(None)
            continue
        domain = entry.get("domains", {}).get(k, "default")
        if isinstance(domain, tuple) and domain[0] == "index_of":
            low, high = _index_extent(spec, entry, flat, attrs, k)
            domain = ("index", low, max(high, low + 1))
        stored = _values(rng, dtype, tuple(shape), domain, edges, spec.name)
        layout = LAYOUTS[(index + k + round_) % len(LAYOUTS)]
        if domain == "sorted" and layout in ("broadcast",):
            layout = "compact"
        view, used = _apply_layout(stored, layout, rng)
        inputs.append(view)
        dtypes_.append(dtype)
        layouts.append(used)
    return Case(
        spec.name,
        tuple(signature),
        index,
        cs,
        inputs,
        dtypes_,
        attrs,
        strided_output=(index % 3 == 2),
        layouts=layouts,
    )
