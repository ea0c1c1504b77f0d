"""The conformance rows of the shape and indexing backward ops (references in
conformance/shape_grad_references.py, cases in op_table.py): each runs its own cases against a
float64 NumPy reference, and those cases tell a right kernel from a wrong one. A planted fault
is simulated by swapping the reference for a wrong kernel's rule: the CPU kernel, which is
right, must then fail the numerics check. So the cases hold repeated indices (a kernel that
writes instead of adding), negative indices (one that wraps them wrongly) and clip's ties (one
that compares strictly)."""

from __future__ import annotations

import numpy as np
import pytest

from ctensor._registry import OpSpec, registry_json
from ctensor.conformance import references
from ctensor.conformance.calls import decoded, run_case
from ctensor.conformance.cases import Case, generate
from ctensor.conformance.device import HostDevice
from ctensor.conformance.op_table import OPS
from ctensor.conformance.runner import Target, run_signature, signature_labels
from ctensor.conformance.shape_grad_references import read_sources
from ctensor.conformance.tolerances import compare, summation_bounds, vector_norm_bound

SHAPE_GRAD_OPS = [
    "clip_backward",
    "concat_backward",
    "embedding_backward",
    "gather_nd_backward",
    "index_add_backward",
    "index_select_backward",
    "pad_backward",
    "permute_dims_backward",
    "put_along_axis_backward",
    "repeat_backward",
    "roll_backward",
    "scatter_nd_backward",
    "slice_backward",
    "stack_backward",
    "take_along_axis_backward",
    "take_backward",
    "tile_backward",
]
SPECS = {o["name"]: OpSpec(o) for o in registry_json()["ops"]}


def _row(name: str):  # noqa: ANN202
    """The op's float64 row (int64 indices) on the CPU backend."""
    spec = SPECS[name]
    labels = signature_labels(spec)
    signature = next(s for s, label in labels.items() if label in ("float64", "float64,int64"))
    return run_signature(spec, signature, labels[signature], Target("cpu", HostDevice()))


@pytest.mark.parametrize("name", SHAPE_GRAD_OPS)
def test_each_backward_op_passes_its_own_cases_against_numpy(name):
    result = _row(name)
    assert name in OPS and result.reference == "numpy"
    assert result.status == "PASS", (result.check, result.reason, result.case)
    assert result.cases >= len(OPS[name].get("attrs", [{}]))
    for check in ("infer", "run", "numerics", "inputs_unchanged", "output_bounds"):
        assert result.checks[check] == "PASS"


def _sources(forward: str, ins: list, attrs: dict):  # noqa: ANN202
    """(the flat element of x each cotangent element came from, x) for a read's backward op."""
    x, rest = (ins[2], [ins[1]]) if forward == "embedding" else (ins[1], list(ins[2:]))
    sources = read_sources(forward, x.shape, rest, attrs)
    return np.broadcast_to(sources, ins[0].shape).reshape(-1), x


def _writes_instead_of_adding(forward: str):  # noqa: ANN202
    """The rule of a kernel that stores each cotangent at its source instead of adding it."""

    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        sources, x = _sources(forward, ins, attrs)
        grad = np.zeros(x.size)
        keep = sources >= 0
        grad[sources[keep]] = np.asarray(ins[0], np.float64).reshape(-1)[keep]
        return [grad.reshape(x.shape)]

    return run


def _drops_a_contribution(forward: str):  # noqa: ANN202
    """The rule of a kernel that adds every cotangent but the first one landing on each
    element of x."""

    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        sources, x = _sources(forward, ins, attrs)
        g = np.asarray(ins[0], np.float64).reshape(-1).copy()
        keep = sources >= 0
        g[np.unique(sources, return_index=True)[1]] = 0.0
        grad = np.zeros(x.size)
        np.add.at(grad, sources[keep], g[keep])
        return [grad.reshape(x.shape)]

    return run


def _wraps_negative_indices_wrongly(name: str):  # noqa: ANN202
    """The rule of a kernel that maps index -k to -k + 1 (so -1 to 0)."""
    right = references.NUMPY[name]

    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        ins = list(ins)
        ins[2] = np.where(ins[2] < 0, ins[2] + 1, ins[2])
        return right(ins, attrs, out)

    return run


def _clip_strictly(ins, attrs, out):  # noqa: ANN001, ANN202
    """clip_backward comparing strictly: x at a bound gets nothing."""
    g, x, lo, hi = ins
    shape = np.broadcast_shapes(*(v.shape for v in ins if v is not None))
    keep = np.ones(shape, bool)
    if attrs["wrt"] != "x":
        return references.NUMPY["clip_backward"](ins, attrs, out)
    with np.errstate(invalid="ignore"):
        if lo is not None:
            keep = keep & (x > lo)
        if hi is not None:
            keep = keep & (x < hi)
    return [np.where(keep, np.broadcast_to(g, shape), 0.0)]


PLANTED = {
    "take_backward: writes": ("take_backward", _writes_instead_of_adding("take")),
    "take_along_axis_backward: writes": (
        "take_along_axis_backward",
        _writes_instead_of_adding("take_along_axis"),
    ),
    "index_select_backward: writes": (
        "index_select_backward",
        _writes_instead_of_adding("index_select"),
    ),
    "gather_nd_backward: writes": ("gather_nd_backward", _writes_instead_of_adding("gather_nd")),
    "embedding_backward: writes": ("embedding_backward", _writes_instead_of_adding("embedding")),
    "tile_backward: writes": ("tile_backward", _writes_instead_of_adding("tile")),
    "repeat_backward: writes": ("repeat_backward", _writes_instead_of_adding("repeat")),
    "clip_backward: strict": ("clip_backward", _clip_strictly),
    "take_backward: drops one": ("take_backward", _drops_a_contribution("take")),
    "embedding_backward: drops one": ("embedding_backward", _drops_a_contribution("embedding")),
}
for _name in [
    "take_backward",
    "take_along_axis_backward",
    "index_select_backward",
    "gather_nd_backward",
    "index_add_backward",
    "put_along_axis_backward",
    "scatter_nd_backward",
]:
    PLANTED[f"{_name}: negative indices"] = (_name, _wraps_negative_indices_wrongly(_name))


@pytest.mark.parametrize("fault", sorted(PLANTED))
def test_a_kernel_with_a_planted_fault_would_fail(fault, monkeypatch):
    name, wrong_rule = PLANTED[fault]
    monkeypatch.setitem(references.NUMPY, name, wrong_rule)
    result = _row(name)
    assert result.status == "FAIL" and result.checks["numerics"] == "FAIL", fault
    assert result.check == "numerics", (result.check, result.reason)


def _equal_indices(g: np.ndarray):  # noqa: ANN202
    """take_backward's case where every element of g came from x[3]: a broadcast (zero-stride)
    index, so that all of g's contributions land on one element of x."""
    spec = SPECS["take_backward"]
    indices = np.broadcast_to(np.array(3, np.int64), g.shape)
    x = np.zeros(7, np.float32)
    case = Case(
        "take_backward",
        ("float32", "float32", "int64", "float32"),
        0,
        0,
        [g.astype(np.float32), x, indices],
        ["float32", "float32", "int64"],
        {"axis": None},
        False,
        ["compact", "compact", "broadcast"],
    )
    values = case.values()
    (expected,) = references.NUMPY["take_backward"](values, case.attrs, ["float32"])
    (bound,) = summation_bounds("take_backward", values, case.attrs, ["float32"])
    return spec, case, expected, bound


def test_thousands_of_equal_indices_meet_the_accumulation_bound():
    """A float32 kernel adding 3319 cotangents in order in float32 (as torch's CPU index_add
    does) drifts past the plain accumulating limit but within the accumulation bound, which
    grows with the number of contributions; the CPU kernel meets it too."""
    g = np.random.default_rng(29).uniform(-2, 2, 3319).astype(np.float32)
    spec, case, expected, bound = _equal_indices(g)
    assert bound[3] > 0 and np.all(bound[np.arange(7) != 3] == 0)
    in_order = np.zeros(7, np.float32)
    np.add.at(in_order, np.full(g.size, 3), g)  # one element after another, in float32
    assert compare(in_order, expected, "float32", "take_backward")[0] is False
    assert compare(in_order, expected, "float32", "take_backward", bound=bound)[0] is True
    outcome = run_case(spec, case, HostDevice(), "cpu")
    assert outcome.violations == [] and outcome.execution.status == 0
    actual = decoded(outcome)[0]
    ok, text, _ = compare(actual, expected, "float32", "take_backward", bound=bound)
    assert ok, text


def test_a_dropped_contribution_among_thousands_fails_the_bound():
    """The bound is tight enough that a kernel losing one of 2000 same-signed contributions
    fails (the bound there, about k * u * sum, is under half the smallest contribution)."""
    g = np.random.default_rng(7).uniform(0.5, 1.0, 2000).astype(np.float32)
    spec, case, expected, bound = _equal_indices(g)
    dropped = np.zeros(7)
    dropped[3] = float(np.sum(g[1:], dtype=np.float64))
    ok, text, _ = compare(dropped, expected, "float32", "take_backward", bound=bound)
    assert not ok and "accumulation bound" in text
    actual = decoded(run_case(spec, case, HostDevice(), "cpu"))[0]
    assert compare(actual, expected, "float32", "take_backward", bound=bound)[0]


@pytest.mark.parametrize("name", ["put_along_axis_backward", "scatter_nd_backward"])
def test_the_scatters_out_is_the_forward_result_of_the_case(name):
    """cases.build derives `out` from x, indices and values, so that max and min meet ties."""
    spec = SPECS[name]
    forward = name.removesuffix("_backward")
    signature = ("float32", "float32", "int64", "float32", "float32", "float32", "float32")
    ties = 0
    for case in generate(spec, signature, 0, 30):
        x, indices, values, out = case.values()[1:5]
        attrs = {a["name"]: a["default"] for a in spec.attrs} | case.attrs
        (expected,) = references.NUMPY[forward]([x, indices, values], attrs, ["float32"])
        np.testing.assert_allclose(out, expected.astype(np.float32), rtol=1e-6)
        if attrs["reduction"] in ("max", "min") and out.size:
            ties += int(np.sum(x == out))
    assert ties > 0


def test_every_op_has_a_numpy_reference_and_every_backward_op_its_own_cases():
    names = list(SPECS)
    assert [n for n in names if n not in references.NUMPY] == []
    assert [n for n in names if "_backward" in n and n not in OPS] == []


def test_put_along_axis_reference_keeps_the_row_major_last_write_for_any_index_layout():
    """NumPy's fancy assignment writes a transposed index column by column; the reference (and
    every kernel) keeps the last write in row-major order of the index, whatever its layout."""
    import ctensor

    x = np.full((1, 5), -1, np.int8)
    indices = np.asfortranarray(np.array([[-4, 1], [-1, 4], [-1, -4]], np.int32))
    values = np.array([[-1], [-23], [33]], np.int8)
    attrs = {"axis": -1, "reduction": "none"}
    want = np.array([[-1, 33, -1, -1, 33]], np.int8)
    got = references.NUMPY["put_along_axis"]([x, indices, values], attrs, ["int8"])[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        np.asarray(ctensor.ops.put_along_axis(x, indices, values, **attrs)), want
    )
    with pytest.raises(IndexError):
        references.NUMPY["put_along_axis"]([x, indices + 10, values], attrs, ["int8"])


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_dot_product_bound_takes_a_long_sum_and_not_a_narrow_accumulator(dtype):
    """matmul over K = 6000: the dot-product bound gamma(K) * sum |a||b| takes a float64 sum in
    any order (here float64 pairwise against the exactly rounded one), and a float32 one fails."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (2, 6000))
    b = rng.uniform(-2, 2, (6000, 3))
    if dtype == "complex128":
        a, b = a + 1j * rng.uniform(-2, 2, a.shape), b + 1j * rng.uniform(-2, 2, b.shape)
    exact = references.NUMPY["matmul"]([a, b], {}, [dtype])[0]
    (bound,) = summation_bounds("matmul", [a, b], {}, [dtype])
    in_order = np.array([[np.sum(a[i] * b[:, j]) for j in range(3)] for i in range(2)])
    narrow = (a.astype(np.complex64 if dtype == "complex128" else np.float32)) @ b.astype(
        np.complex64 if dtype == "complex128" else np.float32
    )
    assert compare(in_order, exact, dtype, "matmul", 0.0, [], bound)[0]
    assert not compare(narrow.astype(exact.dtype), exact, dtype, "matmul", 0.0, [], bound)[0]


def test_vector_norm_bound_takes_a_long_sum_and_not_a_narrow_accumulator():
    """The 2-norm of 200000 float64 values: a sum of squares in another order passes, a float32
    sum of squares fails."""
    x = np.random.default_rng(4).uniform(-2, 2, 200000)
    attrs = {"ord": 2.0, "axis": None, "keepdims": False}
    exact = references.NUMPY["vector_norm"]([x], attrs, ["float64"])[0]
    bound = vector_norm_bound(x, attrs, "float64")
    other_order = np.sqrt(np.sum(np.sort(x**2)[::-1]))
    narrow = np.sqrt(np.sum((x * x).astype(np.float32), dtype=np.float32))
    assert compare(np.asarray(other_order), exact, "float64", "vector_norm", 0.0, [], bound)[0]
    assert not compare(
        np.asarray(narrow, np.float64), exact, "float64", "vector_norm", 0.0, [], bound
    )[0]
    assert vector_norm_bound(x, {**attrs, "ord": float("inf")}, "float64") is None
