"""Checked size arithmetic (issue 30, item 5): every registered op, given inputs of huge logical
extent (stride-0 broadcast views of 2**31 + 1, 2**40, 2**62 and 2**63 - 1 elements along one or
several dims, extents whose product overflows int64), either refuses the call with a status and
a message or describes outputs and scratch whose byte counts are real numbers.

- ``ct_op_infer`` of every op: an error with a message naming the op, or outputs whose extents
  are non-negative (-1 only for the data-dependent extents of dynamic ops) and whose bytes fit
  in int64.
- ``ct_op_workspace`` of every op that asks for scratch or allocates its outputs: an error with
  a message, or a byte count below 2**63 that is not smaller than the same call's on the small
  case it was grown from (a size formula that wraps around comes out small).
- Running those ops (through ``ctensor.ops``, in a child process with a time limit) on the
  variants whose outputs and scratch cannot fit this machine (at most 16 GiB of it): a
  SizeOverflowError or an OutOfMemoryError naming the op, quickly; never a crash, a hang or a
  huge allocation attempt.
  Variants whose outputs are small but whose input is huge (a reduction of a broadcast view)
  would legitimately loop over 2**40 elements: they are inferred and queried, never run.

The small cases come from the conformance suite's op table (``ctensor.conformance.op_table``),
and for the ops it has none for, from ``EXTRA_BASES`` below: a new op without either fails
``test_every_op_has_a_small_case``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ctensor import ffi, lib
from ctensor._attrs import make_attrs
from ctensor._registry import all_specs
from ctensor._run import HOST_MEMORY_BYTES
from ctensor.conformance.abi_calls import infer
from ctensor.conformance.cases import _candidates, _param_dtype, _shape_views
from ctensor.conformance.dtypes import itemsize
from ctensor.conformance.op_table import OPS

INT64_MAX = 2**63 - 1
HUGE = (2**31 + 1, 2**40, 2**62, INT64_MAX)
#: The memory the runs below assume (the binding refuses calls that need more): this machine's,
#: at most 16 GiB, so that the calls that run are the same on machines with more.
MEMORY_LIMIT = min(HOST_MEMORY_BYTES, 16 << 30)
#: Small cases per op the variants grow from.
BASES_PER_OP = 6

#: Small cases (flat input shapes, attributes) of ops the op table has no shapes for: the
#: backward ops of shape and indexing ops.
EXTRA_BASES: dict[str, list[tuple[list, dict]]] = {
    "embedding_backward": [([(3, 4), (3,), (10, 4)], {})],
    "gather_nd_backward": [([(2,), (2, 3), (2, 2)], {})],
    "index_add_backward": [([(3, 4), (3, 4), (2,), (2, 4)], {"axis": 0})],
    "index_select_backward": [([(2, 4), (3, 4), (2,)], {"axis": 0})],
    "pad_backward": [
        ([(6,), (2,)], {"pad_width": [2, 2]}),
        ([(5, 7), (3, 4)], {"pad_width": [1, 2]}),
    ],
    "permute_dims_backward": [([(4, 3)], {"axes": [1, 0]})],
    "put_along_axis_backward": [([(3, 4), (3, 4), (1, 4), (1, 4), (3, 4)], {"axis": 0})],
    "repeat_backward": [
        ([(6,), (3,)], {"repeats": [2]}),
        ([(3, 8), (3, 4)], {"repeats": [2], "axis": 1}),
    ],
    "roll_backward": [([(3, 4)], {"shift": [1], "axis": [0]})],
    "scatter_nd_backward": [([(2, 3), (2, 3), (2, 1), (2, 3), (2, 3)], {})],
    "tile_backward": [([(3, 8), (3, 4)], {"repetitions": [1, 2]})],
}

#: dtypes NumPy has, for the calls run through ctensor.ops.
NUMPY_DTYPES = {
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
}  # fmt: skip

SPECS = all_specs()
NAMES = sorted(SPECS)
SCRATCH_OPS = sorted(n for n in NAMES if SPECS[n].has_workspace or SPECS[n].is_dynamic)


def _signatures(spec) -> list[tuple[str, ...]]:  # noqa: ANN001
    """Up to two CPU kernel signatures of the op: one of float32 (or other NumPy dtypes), and
    the one whose first input has the narrowest dtype (int8 and bool views reach 2**63 - 1
    elements, where wider dtypes overflow int64 bytes and are refused early)."""
    signatures = spec.kernels.get("cpu", [])
    chosen = []
    for good in (
        lambda s: "float32" in s and set(s) <= NUMPY_DTYPES,
        lambda s: set(s) <= NUMPY_DTYPES,
        lambda s: True,
    ):
        chosen += [s for s in signatures if good(s)][:1]
    if spec.inputs:
        chosen += sorted(signatures, key=lambda s: itemsize(s[0]))[:1]
    return list(dict.fromkeys(chosen[:1] + chosen[-1:]))


def _views(spec, signature, flat: list, data: bool) -> tuple[list, list]:  # noqa: ANN001
    """ct_tensor views of the shapes in `flat` (None: an absent input): without data for infer,
    or stride-0 views of one aligned scratch element for workspace queries."""
    views, keep = _shape_views(spec, signature, flat)
    if data:
        for view in views:
            if view is None:
                continue
            strides = ffi.new("int64_t[]", [0] * max(view.ndim, 1))
            keep.append(strides)
            view.strides = strides
            view.data = _SCRATCH_ADDRESS
    return views, keep


_SCRATCH = ffi.new("char[]", 256)
_SCRATCH_ADDRESS = ffi.cast("void*", -(-int(ffi.cast("uintptr_t", _SCRATCH)) // 64) * 64)


def _workspace(spec, views: list, attrs: dict) -> tuple[int, int, int, str]:  # noqa: ANN001
    """ct_op_workspace without outputs: (status, bytes, alignment, message)."""
    keep: list = []
    attr_array, num_attrs = make_attrs(spec, attrs, keep)
    inputs = ffi.new("ct_tensor*[]", [v if v is not None else ffi.NULL for v in views] or 1)
    size, alignment = ffi.new("uint64_t*"), ffi.new("uint64_t*")
    status = lib.ct_op_workspace(
        spec.op, inputs, len(views), ffi.NULL, 0, attr_array, num_attrs, size, alignment
    )
    message = ffi.string(lib.ct_last_error()).decode("utf-8", "replace") if status else ""
    return status, size[0], alignment[0], message


def _bases(name: str) -> list[tuple[tuple[str, ...], list, dict]]:
    """Up to BASES_PER_OP small (signature, flat shapes, attrs) cases per signature that
    ct_op_infer accepts, the ones with the most distinct extents first."""
    spec = SPECS[name]
    bases = []
    for signature in _signatures(spec):
        candidates = list(EXTRA_BASES.get(name, []))
        if name in OPS or not candidates:
            candidates += list(_candidates(spec, signature, OPS.get(name, {})))
        valid = []
        for flat, attrs in candidates:
            views, _keep = _views(spec, signature, flat, data=False)
            if infer(spec, views, attrs)[0] == lib.CT_OK and (
                not spec.inputs or any(s for s in flat if s is not None)
            ):
                valid.append((signature, flat, attrs))
        valid.sort(key=lambda c: -len({e for s in c[1] if s for e in s}))
        bases += valid[:BASES_PER_OP]
    return bases


def _variants(flat: list) -> list[list]:
    """Huge versions of one case: every extent value above 1 replaced by each huge extent in
    every input at once (so that extents that must agree still do), every single dim made huge,
    and every dim of one input made huge (their product overflows)."""
    out, seen = [], {repr(flat)}

    def add(variant: list) -> None:
        if repr(variant) not in seen:
            seen.add(repr(variant))
            out.append(variant)

    values = sorted({e for s in flat if s for e in s if e > 1})
    for e in values:
        for h in HUGE:
            add([None if s is None else tuple(h if n == e else n for n in s) for s in flat])
    for i, shape in enumerate(flat):
        if not shape:
            continue
        for d in range(len(shape)):
            for h in HUGE:
                add([*flat[:i], (*shape[:d], h, *shape[d + 1 :]), *flat[i + 1 :]])
        if len(shape) > 1:
            for h in (2**31 + 1, 2**40):
                add([*flat[:i], (h,) * len(shape), *flat[i + 1 :]])
    return out


def _attr_variants(attrs: dict) -> list[dict]:
    """Huge outputs of ops without tensor inputs: a `shape` attribute of huge extents, or a
    huge `stop`."""
    out = []
    if isinstance(attrs.get("shape"), list):
        for h in HUGE:
            out += [dict(attrs, shape=[h]), dict(attrs, shape=[3, h]), dict(attrs, shape=[h, h])]
    if "stop" in attrs or "start" in attrs:
        for h in HUGE:
            out += [
                dict(attrs, start=0.0, stop=float(h)),
                dict(attrs, start=-float(h), stop=float(h)),
            ]
    return out


def _calls(name: str, flat: list, attrs: dict) -> list[tuple[list, dict]]:
    """The huge (flat shapes, attrs) calls grown from one small case."""
    return [(v, attrs) for v in _variants(flat)] + [(flat, a) for a in _attr_variants(attrs)]


BASES = {name: _bases(name) for name in NAMES}


def _names_the_op(name: str, message: str) -> bool:
    """Messages name the op, or for a backward op (conv2d_backward_input) the forward op whose
    infer it reuses."""
    return name.split("_backward")[0] in message


def test_every_op_has_a_small_case():
    missing = [name for name in NAMES if not BASES[name]]
    assert not missing, (
        f"no small case ct_op_infer accepts for {missing}: add shapes to the conformance op table "
        "or to EXTRA_BASES in this file, so that its size arithmetic is checked"
    )
    assert all(name in SPECS for name in EXTRA_BASES), "EXTRA_BASES names an op that is gone"


@pytest.mark.parametrize("name", NAMES)
def test_infer_on_huge_extents_errors_or_counts(name):
    spec = SPECS[name]
    for signature, flat, base_attrs in BASES[name]:
        for variant, attrs in _calls(name, flat, base_attrs):
            views, _keep = _views(spec, signature, variant, data=False)
            status, infos, message = infer(spec, views, attrs)
            what = f"{name}{signature} on {variant} with {attrs}"
            if status != lib.CT_OK:
                assert message, f"{what}: status {status} without a message"
                assert _names_the_op(name, message), f"{what}: {message!r} names no op"
                continue
            for dtype, shape in infos:
                assert len(shape) <= lib.CT_MAX_NDIM, what
                lowest = -1 if spec.is_dynamic else 0
                assert all(n >= lowest for n in shape), f"{what}: output extents {shape}"
                count = itemsize(dtype)
                for n in shape:
                    count *= max(n, 1)
                assert count <= INT64_MAX, f"{what}: output {shape} of {dtype} overflows int64"


@pytest.mark.parametrize("name", SCRATCH_OPS)
def test_workspace_on_huge_extents_errors_or_counts(name):
    spec = SPECS[name]
    for signature, flat, base_attrs in BASES[name]:
        views, _keep = _views(spec, signature, flat, data=True)
        status, small, _, message = _workspace(spec, views, base_attrs)
        assert status == lib.CT_OK, f"{name} on {flat} with {base_attrs}: {message}"
        for variant, attrs in _calls(name, flat, base_attrs):
            views, _keep = _views(spec, signature, variant, data=True)
            status, size, alignment, message = _workspace(spec, views, attrs)
            what = f"{name}{signature} on {variant} with {attrs}"
            if status != lib.CT_OK:
                assert message, f"{what}: status {status} without a message"
                assert _names_the_op(name, message), f"{what}: {message!r} names no op"
                continue
            assert size <= INT64_MAX, f"{what}: {size} bytes of workspace"
            assert alignment and alignment & (alignment - 1) == 0, f"{what}: alignment {alignment}"
            assert size >= small, f"{what}: {size} bytes, less than the small case's {small}"


def _too_big_to_run(spec, signature, flat: list, attrs: dict) -> bool:  # noqa: ANN001
    """Whether C reports the call's size as overflowing, or its known outputs plus workspace
    need more than this machine's memory: then running it must fail before any work."""
    views, _keep = _views(spec, signature, flat, data=False)
    status, infos, _ = infer(spec, views, attrs)
    if status != lib.CT_OK:
        return status == lib.CT_ERROR_SIZE_OVERFLOW
    views, _keep = _views(spec, signature, flat, data=True)
    status, size, _, _ = _workspace(spec, views, attrs)
    if status != lib.CT_OK:
        return status in (lib.CT_ERROR_SIZE_OVERFLOW, lib.CT_ERROR_OUT_OF_MEMORY)
    total = size
    for dtype, shape in infos:
        count = itemsize(dtype)
        for n in shape:
            count *= max(n, 0)
        total += count
    return total > MEMORY_LIMIT


def _numpy_broadcastable(flat: list, dtypes: list) -> bool:
    for shape, dtype in zip(flat, dtypes, strict=True):
        if shape is None:
            continue
        try:
            np.broadcast_to(np.zeros((), dtype), shape)
        except ValueError:  # NumPy counts a view's bytes in intp too
            return False
    return True


_RUNNER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import ctensor, ctensor._run
    name, fixed, limit, calls = json.loads(sys.stdin.read())
    ctensor._run.HOST_MEMORY_BYTES = limit
    for flat, dtypes, attrs in calls:
        arrays = [None if s is None else np.broadcast_to(np.zeros((), d), s)
                  for s, d in zip(flat, dtypes)]
        if fixed is not None:  # the tensors of a variadic input go in one list
            arrays = arrays[:fixed] + [arrays[fixed:]]
        try:
            getattr(ctensor.ops, name)(*arrays, **attrs)
            result = ["returned", ""]
        except Exception as e:
            result = [type(e).__name__, str(e)]
        print(json.dumps(result), flush=True)
    """
)


def _run_calls(name: str) -> list:
    """The huge calls of an op with scratch or allocated outputs that must fail before any
    work: (flat shapes, dtypes, attrs) whose inputs NumPy can express as broadcast views."""
    spec = SPECS[name]
    calls = []
    for signature, flat, base_attrs in BASES[name]:
        dtypes = [_param_dtype(spec, signature, k) for k in range(len(flat))]
        if not set(dtypes) <= NUMPY_DTYPES:
            continue
        for variant, attrs in _calls(name, flat, base_attrs):
            if _numpy_broadcastable(variant, dtypes) and _too_big_to_run(
                spec, signature, variant, attrs
            ):
                calls.append((variant, dtypes, attrs))
    return calls


#: Dynamic ops whose outputs depend on the data (nonzero of a broadcast view must count its
#: 2**40 elements before it knows its output) and ops whose scratch stays small have none.
RUN_CALLS = {name: calls for name in SCRATCH_OPS if (calls := _run_calls(name))}


def test_the_sort_and_unique_ops_have_calls_to_run():
    # the ops whose scratch sizes wrapped around before (issue 30)
    for name in ("sort", "argsort", "topk", "unique_all", "unique_counts", "unique_inverse"):
        assert name in RUN_CALLS, name


@pytest.mark.parametrize("name", sorted(RUN_CALLS))
def test_running_calls_too_big_for_the_machine_fails_fast(name):
    assert 0 < MEMORY_LIMIT < 2**62
    spec = SPECS[name]
    calls = RUN_CALLS[name]
    fixed = spec.num_fixed_inputs if spec.variadic_input else None
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps([name, fixed, MEMORY_LIMIT, calls]),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and len(results) == len(calls), (
        f"{name}: the child stopped (status {done.returncode}) after {len(results)} of "
        f"{len(calls)} calls, at {calls[min(len(results), len(calls) - 1)]}: "
        f"{done.stderr[-2000:]}"
    )
    for (variant, dtypes, attrs), (kind, message) in zip(calls, results, strict=True):
        what = f"{name} on {variant} of {dtypes} with {attrs}"
        assert kind in ("SizeOverflowError", "OutOfMemoryError"), f"{what}: {kind}: {message}"
        assert _names_the_op(name, message), f"{what}: {message!r} names no op"


# ----------------------------------------------------------------------------------------------
# Infer arithmetic that overflowed (each case wrapped around before it was checked)
# ----------------------------------------------------------------------------------------------


def _infer_one(name: str, shapes: list, dtypes: list, attrs: dict) -> tuple[int, list, str]:
    spec = SPECS[name]
    views, _keep = _views(spec, tuple(dtypes), shapes, data=False)
    return infer(spec, views, attrs)


@pytest.mark.parametrize(
    ("name", "shapes", "dtypes", "attrs"),
    [
        # conv_transpose2d: C_out = weight.shape[1] * groups wrapped to -2**63
        (
            "conv_transpose2d",
            [(1, 2, 3, 3), (2, 2**62, 1, 1)],
            ["float32", "float32"],
            {"groups": 2},
        ),
        # rotary_embedding: rot_dim = 2 * cos.shape[1] wrapped negative and passed the check
        # against x's last dim
        (
            "rotary_embedding",
            [(2, 4, 8), (4, 2**62), (4, 2**62)],
            ["float32", "float32", "float32"],
            {},
        ),
    ],
    ids=["conv_transpose2d_channels", "rotary_embedding_rot_dim"],
)
def test_infer_refuses_what_overflowed(name, shapes, dtypes, attrs):
    status, _, message = _infer_one(name, shapes, dtypes, attrs)
    assert status in (lib.CT_ERROR_SIZE_OVERFLOW, lib.CT_ERROR_SHAPE_MISMATCH), message
    assert name in message


def test_ceil_mode_pooling_with_a_stride_past_the_input_drops_the_last_window():
    # (size - 1) * stride overflowed int64 in ceil mode's last-window check: 3 * 2**61 rows,
    # stride 2**62 gives windows at 0 and 2**62 (floor), and ceil mode's third one would start
    # at 2**63, past the input, so it is dropped.
    rows = 3 * 2**61
    status, infos, message = _infer_one(
        "max_pool2d",
        [(1, 1, rows, 1)],
        ["int8"],
        {"kernel_size": [1], "stride": [2**62, 1], "ceil_mode": True},
    )
    assert status == lib.CT_OK, message
    assert infos[0][1] == (1, 1, 2, 1)


def test_a_stride_whose_reach_plus_one_element_overflows_is_refused():
    # Two float64 elements 2**60 - 1 elements apart: the reach (2**63 - 8 bytes) fits in int64,
    # but the byte range that also counts the last element's 8 bytes overflowed.
    spec = SPECS["negative"]
    views, keep = _views(spec, ("float64", "float64"), [(2,)], data=False)
    strides = ffi.new("int64_t[]", [2**60 - 1])
    keep.append(strides)
    views[0].strides = strides
    status, _, message = infer(spec, views, {})
    assert status == lib.CT_ERROR_SIZE_OVERFLOW, message
    assert "negative" in message


def test_a_dynamic_output_larger_than_the_machine_is_refused_before_allocating(monkeypatch):
    # The allocator callback of dynamic ops checks each output's bytes against the machine's
    # memory before asking the framework; a machine of 1000 bytes makes 1000 int64 indices
    # too big.
    import ctensor._run

    monkeypatch.setattr(ctensor._run, "HOST_MEMORY_BYTES", 1000)
    with pytest.raises(ctensor.SizeOverflowError, match=r"nonzero: .*output 0 of shape \(1000,\)"):
        ctensor.ops.nonzero(np.ones(1000, np.bool_))
    monkeypatch.undo()
    (got,) = ctensor.ops.nonzero(np.ones(1000, np.bool_))
    assert got.shape == (1000,)
