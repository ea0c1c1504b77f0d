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

__all__ = ["Case", "generate", "large_cases", "LAYOUTS", "case_seed"]

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


def _seeded_shape_sets(spec: OpSpec, entry: dict, seed: int) -> list:
    """The table's shape sets, and for ops without a table entry for shapes (element-wise and
    broadcasting ops), two more drawn from the suite seed: a random rank (1 to 4) and extents
    (1 to 6), and for two inputs a random broadcasting pair (each dim 1 on either side, or a
    missing leading dim). So --seed varies shapes, not only values."""
    sets = list(_shape_sets(spec, entry))
    if "shapes" in entry or len(spec.inputs) not in (1, 2):
        return sets
    rng = np.random.default_rng(zlib.crc32(f"{seed}:shapes:{spec.name}".encode()))
    for _ in range(2):
        shape = tuple(int(n) for n in rng.integers(1, 7, size=int(rng.integers(1, 5))))
        if len(spec.inputs) == 1:
            sets.append((shape,))
            continue
        a = tuple(n if rng.random() < 0.7 else 1 for n in shape)
        b = tuple(n if rng.random() < 0.7 else 1 for n in shape)
        b = b[int(rng.integers(0, len(b) + 1)) :] if rng.random() < 0.5 else b
        sets.append((a, b) if rng.random() < 0.5 else (b, a))
    return sets


def _shape_sets(spec: OpSpec, entry: dict) -> list:
    if "shapes" in entry:
        return entry["shapes"]
    n = len(spec.inputs)
    if n == 1:
        return UNARY_SHAPES
    if n == 2:
        return BINARY_SHAPES
    return [tuple([(3, 4)] * n)]


#: The axis values crossed with keepdims for every op whose schema has both (infer drops those
#: out of range for a case's rank): every single axis, negative ones, pairs, all, None.
AXIS_LISTS = [None, [0], [1], [2], [-1], [-2], [0, 1], [0, 2], [1, 2], [0, 1, 2]]
AXIS_INTS = [None, 0, 1, 2, -1, -2]


def _schema_attr_sets(spec: OpSpec) -> list[dict]:
    """Attribute combinations the schema implies: for ops with `axis` and `keepdims`, every axis
    with keepdims off and on (a kernel that gets keepdims right only on the last axis fails)."""
    types = {a["name"]: a["type"] for a in spec.attrs}
    if "axis" not in types or types.get("keepdims") != "bool":
        return []
    axes = AXIS_LISTS if types["axis"] == "int_list" else AXIS_INTS
    return [{"axis": a, "keepdims": k} for k in (False, True) for a in axes]


def _attr_sets(entry: dict, signature: tuple[str, ...], spec: OpSpec | None = None) -> list[dict]:
    sets = [a(signature) if callable(a) else dict(a) for a in entry.get("attrs", [{}])]
    if spec is not None and not entry.get("no_schema_attrs"):
        for extra in _schema_attr_sets(spec):
            if extra not in sets:
                sets.append(extra)
    return sets


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


def _candidates(spec: OpSpec, signature, entry: dict, seed: int = 0):  # noqa: ANN001, ANN202
    """(flat input shapes with None for absent, attrs) pairs, before infer filtering."""
    sets = _attr_sets(entry, signature, spec)
    for shapes, attrs in itertools.product(_seeded_shape_sets(spec, entry, seed), sets):
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
    # a broadcast input repeats its values: ties again (sort, topk, max have no derivative there)
    entry["no_broadcast"] = tuple(range(16))
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
    for flat, attrs in _candidates(spec, signature, entry, seed):
        views, _keep = _shape_views(spec, signature, flat)
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
            cases.append(build(spec, signature, index, cs, flat, attrs, entry, r, seed))
            index += 1
    return cases


def _index_extent(spec: OpSpec, entry: dict, flat, attrs, k: int):  # noqa: ANN001, ANN202
    """The valid index range of an index input (take, take_along_axis, embedding, ... and their
    backward ops, whose inputs are grad_out then the forward's)."""
    source = entry["domains"][k][1]
    shape = flat[source]
    op = spec.name.removesuffix("_backward")
    first = 1 if op != spec.name else 0  # where the forward's inputs start
    if op == "embedding":
        return 0, shape[0]
    if op in ("gather_nd", "scatter_nd"):
        # every component indexes its own dim: the smallest extent keeps all of them valid
        b = attrs.get("batch_dims", 0)
        k = flat[first + 1][-1]
        n = min(shape[b : b + k]) if k else 1
        return -n, n
    if op in ("put_along_axis", "index_select", "index_add"):
        n = shape[attrs["axis"]]
        return -n, n
    axis = attrs.get("axis", -1 if op == "take_along_axis" else None)
    n = int(np.prod(shape)) if axis is None else shape[axis]
    # take_along_axis_backward's kernels take negative indices; the forward's table keeps its
    # cases in [0, n)
    return (-n, n) if op == "take" or op != spec.name else (0, n)


def _derived(spec: OpSpec, signature, entry: dict, attrs: dict, inputs: list, k: int):  # noqa: ANN001, ANN202
    """Input k as the forward's result on other inputs of the case (entry["derived"][k] =
    (forward op, input positions)): a backward op's `out` consistent with its x and values."""
    from .references import NUMPY  # the references import this module's dependencies only

    forward, positions = entry["derived"][k]
    dtype = _param_dtype(spec, signature, k)
    full = {a["name"]: a["default"] for a in spec.attrs}
    full.update(attrs)
    values = [
        dt.to_values(np.array(inputs[p]), _param_dtype(spec, signature, p)) for p in positions
    ]
    with np.errstate(all="ignore"):
        result = NUMPY[forward](values, full, [dtype])[0]
    return dt.from_values(np.asarray(result), dtype)


def build(
    spec: OpSpec,
    signature,  # noqa: ANN001
    index: int,
    cs: int,
    flat,  # noqa: ANN001
    attrs,  # noqa: ANN001
    entry: dict,
    round_: int,
    shift: int = 0,
    chosen_layouts: list | None = None,
) -> Case:
    """Case `index` (seed cs) of (flat input shapes, attrs). Input k's layout cycles through
    LAYOUTS with the index, the round and `shift` (the suite seed: --seed varies layouts too),
    unless `chosen_layouts` names them."""
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
        if k in entry.get("derived", {}):
            inputs.append(None)  # made below, from the inputs it depends on
            dtypes_.append(dtype)
            layouts.append(None)
            continue
        domain = entry.get("domains", {}).get(k, "default")
        if isinstance(domain, tuple) and domain[0] == "index_of":
            low, high = _index_extent(spec, entry, flat, attrs, k)
            domain = ("index", low, max(high, low + 1))
        stored = _values(rng, dtype, tuple(shape), domain, edges, spec.name)
        layout = LAYOUTS[(index + k + round_ + shift) % len(LAYOUTS)]
        if chosen_layouts is not None:
            layout = chosen_layouts[k]
        if domain == "sorted" and layout in ("broadcast",):
            layout = "compact"
        if layout == "broadcast" and k in entry.get("no_broadcast", ()):
            layout = "strided"
        view, used = _apply_layout(stored, layout, rng)
        inputs.append(view)
        dtypes_.append(dtype)
        layouts.append(used)
    for k in entry.get("derived", {}):
        if k < len(flat) and flat[k] is not None:
            stored = _derived(spec, signature, entry, attrs, inputs, k)
            layout = LAYOUTS[(index + k + round_ + shift) % len(LAYOUTS)]
            if chosen_layouts is not None:
                layout = chosen_layouts[k]
            if layout == "broadcast":  # a broadcast view would change its values
                layout = "strided"
            inputs[k], layouts[k] = _apply_layout(stored, layout, rng)
    return Case(
        spec.name,
        tuple(signature),
        index,
        cs,
        inputs,
        dtypes_,
        attrs,
        strided_output=(index % 3 == 2) if chosen_layouts is None else bool(rng.random() < 0.5),
        layouts=layouts,
    )


# ---------------------------------------------------------------------- large cases -----------

#: Elements of a large case's inputs (drawn per case): above every blocking threshold, and
#: shapes of odd extents, so no size is a multiple of a vector width.
LARGE_ELEMENTS = (10_000, 20_000)
#: The most output elements a large case may make (outer products grow fast).
LARGE_OUTPUTS = 1_000_000
#: Lane length of long reductions, per float width: float16 sums must stay finite.
LONG_LANES = {16: (20_001, 30_000), 32: (150_001, 250_000), 64: (150_001, 250_000)}
#: Ops given long-lane cases: one axis of a (lanes, n) or (n, lanes) input, as the attribute.
LONG_REDUCTIONS = (
    "sum",
    "mean",
    "var",
    "std",
    "logsumexp",
    "vector_norm",
    "cumulative_sum",
    "softmax",
    "log_softmax",
    "max",
    "min",
    "argmax",
    "argmin",
)
#: Ops whose long case is a long contraction: (x1 shape, x2 shape) of a lane length n.
LONG_CONTRACTIONS = {
    "matmul": lambda n: [(2, n), (n, 3)],
    "vecdot": lambda n: [(2, n), (2, n)],
}
#: The values of long lanes: a narrow band (width 2^-10 around a value drawn in [0.3, 0.45]),
#: where a running sum in the dtype drifts (every addition rounds the same way once the sum's
#: ulp exceeds the band) while pairwise, blocked or wider accumulation stays within bound.
LONG_BAND = 2.0**-10

#: Dims grown to make a large case: (which inputs: "all" or "first", which dim).
_GROWTH = [("all", 0), ("first", 0), ("all", -1), ("first", -1), ("all", -2), ("first", 1)]


def _grow(flat: list, how: str, dim: int, f: int) -> list:
    """Every chosen extent n > 1 becomes n * f + 1 (equal extents stay equal, 1 stays 1)."""
    out = []
    for k, shape in enumerate(flat):
        if shape is None or len(shape) == 0 or (how == "first" and k > 0):
            out.append(shape)
            continue
        shape = list(shape)
        d = dim if dim >= 0 else len(shape) + dim
        if 0 <= d < len(shape) and shape[d] > 1:
            shape[d] = shape[d] * f + 1
        out.append(tuple(shape))
    return out


def _elements(flat: list) -> int:
    return sum(int(np.prod(s)) for s in flat if s is not None)


def _shape_views(spec: OpSpec, signature, flat: list) -> tuple[list, list]:  # noqa: ANN001
    """CPU views without data (what ``infer`` reads) of the shapes in ``flat`` (None: an absent
    input) in the signature's dtypes, and the extents arrays that must outlive them."""
    views, keep = [], []
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
    return views, keep


def _infer_ok(spec: OpSpec, signature, flat: list, attrs: dict) -> bool:  # noqa: ANN001
    views, _keep = _shape_views(spec, signature, flat)
    status, infos, _ = infer(spec, views, attrs)
    if status != 0:
        return False
    return sum(int(np.prod([max(n, 0) for n in shape])) for _, shape in infos) <= LARGE_OUTPUTS


def _large_shapes(spec: OpSpec, signature, entry: dict, rng) -> tuple | None:  # noqa: ANN001
    """(flat shapes, attrs) of about `target` input elements that infer accepts: for ops
    without table shapes a (rows, columns) matrix (and a broadcast row for two inputs); else
    the table's largest valid set grown along a dim (see _GROWTH) until large enough."""
    target = int(rng.integers(*LARGE_ELEMENTS))
    attr_sets = _attr_sets(entry, signature)
    if "shapes" not in entry and len(spec.inputs) in (1, 2):
        rows = int(rng.integers(67, 110)) | 1
        cols = (target // rows) | 1
        if len(spec.inputs) == 1:
            flat = [(rows, cols)]
        else:
            flat = [(rows, cols), (rows, cols) if rng.random() < 0.5 else (cols,)]
        for attrs in attr_sets:
            if _infer_ok(spec, signature, flat, attrs):
                return flat, attrs
        return None
    bases = []
    for flat, attrs in _candidates(spec, signature, entry):
        if any(s is not None and 0 in s for s in flat) or not _elements(flat):
            continue
        bases.append((flat, attrs))
    bases.sort(key=lambda b: -_elements(b[0]))
    for how, dim in _GROWTH:
        for flat, attrs in bases:
            if not _infer_ok(spec, signature, flat, attrs):
                continue
            f = 1
            while _elements(_grow(flat, how, dim, f)) < target and f < 100_000:
                f = max(f + 1, int(f * 1.5))
            grown = _grow(flat, how, dim, f)
            if grown == flat or _elements(grown) < LARGE_ELEMENTS[0]:
                continue
            if _infer_ok(spec, signature, grown, attrs):
                return grown, attrs
    # ops with no tensor input: a large `shape` attribute
    for flat, attrs in bases or [([], a) for a in attr_sets]:
        if isinstance(attrs.get("shape"), list):
            grown = dict(attrs, shape=[int(rng.integers(97, 150)) | 1, target // 128 | 1])
            if _infer_ok(spec, signature, flat, grown):
                return flat, grown
    return None


def _long_case(spec: OpSpec, signature, rng) -> tuple | None:  # noqa: ANN001
    """(flat shapes, attrs, domain) of a long reduction or contraction, or None."""
    bits = dt.itemsize(signature[0]) * 8
    if not dt.is_float(signature[0]) or bits not in LONG_LANES:
        return None
    n = int(rng.integers(*LONG_LANES[bits])) | 1
    low = float(rng.uniform(0.3, 0.45))
    domain = ("range", low, low + LONG_BAND)
    if spec.name in LONG_CONTRACTIONS:
        return LONG_CONTRACTIONS[spec.name](n), {}, domain
    if spec.name not in LONG_REDUCTIONS:
        return None
    types = {a["name"]: a["type"] for a in spec.attrs}
    lanes_first = rng.random() < 0.5
    flat = [(2, n)] if lanes_first else [(n, 2)]
    axis = -1 if lanes_first else 0
    attrs = {"axis": [axis] if types.get("axis") == "int_list" else axis}
    if "keepdims" in types:
        attrs["keepdims"] = bool(rng.random() < 0.5)
    return flat, attrs, domain


def large_cases(spec: OpSpec, signature: tuple[str, ...], seed: int, first_index: int) -> list:
    """The large cases of one op x signature: one of LARGE_ELEMENTS input elements (shapes,
    layouts and values drawn from the seed), and for the ops of LONG_REDUCTIONS and
    LONG_CONTRACTIONS on float signatures one long lane of narrow-band values. Their indices
    start at `first_index` (after the small cases), so --case finds them by seed too."""
    entry = OPS.get(spec.name, {})
    out = []
    index = first_index
    cs = case_seed(seed, spec.name, signature, index)
    rng = np.random.default_rng(cs)
    found = _large_shapes(spec, signature, entry, rng)
    if found is not None:
        flat, attrs = found
        layouts = [LAYOUTS[int(rng.integers(0, len(LAYOUTS)))] for _ in flat]
        out.append(build(spec, signature, index, cs, flat, attrs, entry, 0, 0, layouts))
        index += 1
    cs = case_seed(seed, spec.name, signature, index)
    rng = np.random.default_rng(cs)
    long = _long_case(spec, signature, rng)
    if long is not None:
        flat, attrs, domain = long
        long_entry = dict(entry, edges=False, domains=dict.fromkeys(range(len(flat)), domain))
        layouts = [("compact", "strided", "reversed")[int(rng.integers(0, 3))] for _ in flat]
        out.append(build(spec, signature, index, cs, flat, attrs, long_entry, 0, 0, layouts))
    return out
