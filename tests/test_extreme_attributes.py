"""Every registered op with extreme attribute values.

For each op (from the registry, so a new op is swept without editing this file) the sweep takes
up to BASE_CASES small valid cases of the conformance suite (float32, or the op's first dtype
signature) and, for each int, int-list, float, float-list and bool attribute in turn, replaces
it with extreme values: INT64_MAX, INT64_MIN, INT64_MAX - 1, 2**62, 2**32, 2**31, -2**31-1, -1
and 0 for integers (per element for lists), infinities, NaN, +-1e308 and the smallest subnormal
for floats, both values for bools, and values no int64 or float64 holds. Each call must either

- raise a ctensor error (a CTensorError subclass, never a raw OverflowError or ValueError of the
  Python plumbing) whose status is CT_ERROR_SIZE_OVERFLOW, CT_ERROR_INVALID_ARGUMENT, the shape
  status or one the op documents for that attribute (DOCUMENTED_STATUSES), with a message naming
  the op or the attribute; or
- return what the conformance suite's float64 NumPy reference returns for the same attributes
  (within the suite's per-dtype tolerances). Where the reference raises, only an error is
  accepted, unless DEFINED_RESULTS states the op's result for such values.

Calls whose inferred outputs exceed RUN_LIMIT_BYTES are not run (the machine is shared); the
Python layer must then refuse them before allocating when they exceed the machine's memory.
Ops with attributes that cannot be swept are listed in UNSWEPT with the reason; the coverage
test fails for a registered op that is neither swept nor listed. The same sweep runs on the
OpenCL backend (marked opencl) for the ops it has. The regression tests at the end name what
the sweep found.

`python tests/test_extreme_attributes.py op...` prints the problems of those ops (one process
per op isolates a crash while hunting).
"""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

import numpy as np
import pytest
from opencl_arrays import DEVICE, device_like

import ctensor
from ctensor import lib, ops
from ctensor._registry import all_specs
from ctensor._run import HOST_MEMORY_BYTES
from ctensor.conformance import dtypes as dt
from ctensor.conformance import references
from ctensor.conformance.abi_calls import infer
from ctensor.conformance.cases import _shape_views, generate
from ctensor.conformance.tolerances import compare, input_scale, tolerance_class

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INT_VALUES = (INT64_MAX, INT64_MIN, INT64_MAX - 1, 2**62, 2**32, 2**31, -(2**31) - 1, -1, 0)
FLOAT_VALUES = (math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324)
BOOL_VALUES = (False, True)
#: Values no int64 or float64 holds: the Python layer must refuse them with a ctensor error
#: naming the op and the attribute (CT_ERROR_ATTRIBUTE_TYPE: the value has no C type), never a raw
#: OverflowError. An int beyond int64 for a float attribute is a float (2**64 is a fine alpha).
BEYOND_INT64 = (2**63, -(2**63) - 1, 2**64)
BEYOND_FLOAT64 = (10**400, -(10**400))
SWEPT_TYPES = ("int", "int_list", "float", "float_list", "bool")

#: Calls whose inferred outputs need more bytes are checked in infer only (and, beyond the
#: machine's memory, must be refused by the Python layer before it allocates).
RUN_LIMIT_BYTES = 64 << 20

#: Statuses every attribute may give: the size status, the argument status, and the shape
#: status, which the ops document for attribute values that no longer agree with the inputs'
#: shapes (a backward op's grad_out that is not the forward's output shape for the new value, a
#: window wider than the padded input, a normalized_shape that is not x's trailing dims).
ACCEPTED_STATUSES = frozenset(
    {lib.CT_ERROR_SIZE_OVERFLOW, lib.CT_ERROR_INVALID_ARGUMENT, lib.CT_ERROR_SHAPE_MISMATCH}
)

#: Statuses an op documents for an attribute besides ACCEPTED_STATUSES: {op: {attribute:
#: statuses}}; "*" stands for every attribute of the op. A `shape` attribute with a negative
#: extent is an invalid shape (CT_ERROR_INVALID_SHAPE), as a tensor's would be.
DOCUMENTED_STATUSES: dict[str, dict[str, frozenset]] = {
    name: {"shape": frozenset({lib.CT_ERROR_INVALID_SHAPE})}
    for name in ("random_uniform", "random_normal", "random_bernoulli", "broadcast_to")
}


def _band(name: str):  # noqa: ANN202
    """tril/triu by their definition, element (i, j) kept where j - i <= k (tril) or j - i >= k
    (triu): NumPy's own cannot take k = INT64_MIN (np.tri negates it)."""

    def run(ins, attrs, out):  # noqa: ANN001, ANN202
        x, k = ins[0], attrs["k"]
        offset = np.arange(x.shape[-1]) - np.arange(x.shape[-2])[:, None]
        keep = offset <= k if name == "tril" else offset >= k
        return [np.where(keep, x, np.zeros_like(x))]

    return run


def _conv2d_backward_weight(ins, attrs, out):  # noqa: ANN001, ANN202
    """grad_out may cover only the first rows and columns of conv2d's output (the op reads the
    positions it has): a padding beyond every position those read takes only zeros, so the
    cotangent is zero, though NumPy cannot pad the input that far."""
    grad, x, w = ins
    pad = list(attrs["padding"]) * (2 if len(attrs["padding"]) == 1 else 1)
    stride = list(attrs["stride"]) * (2 if len(attrs["stride"]) == 1 else 1)
    dil = list(attrs["dilation"]) * (2 if len(attrs["dilation"]) == 1 else 1)
    for k in range(2):
        reach = (grad.shape[2 + k] - 1) * stride[k] + (w.shape[2 + k] - 1) * dil[k]
        if pad[k] > reach:
            return [np.zeros(w.shape)]
    return references.NUMPY["conv2d_backward_weight"](ins, attrs, out)


#: Results the op's documented semantics define where the NumPy reference cannot take the
#: value: {op: function(values, attrs, out_dtypes) -> outputs}.
DEFINED_RESULTS: dict = {
    "tril": _band("tril"),
    "triu": _band("triu"),
    "conv2d_backward_weight": _conv2d_backward_weight,
}

#: Ops whose attributes the sweep cannot take, with the reason.
UNSWEPT: dict[str, str] = {}


# ---------------------------------------------------------------------------- the cases -------


def _signature(spec) -> tuple[str, ...] | None:  # noqa: ANN001
    sigs = [tuple(k["signature"]) for k in spec.schema.get("kernels", ()) if k["device"] == "cpu"]
    for sig in sigs:
        if sig[0] == "float32":
            return sig
    return sigs[0] if sigs else None


#: Base cases per op: the extreme values meet this many of the op's attribute sets (a slice
#: with and without a negative step, a reduction with and without keepdims).
BASE_CASES = 3


def _base_cases(spec) -> list:  # noqa: ANN001
    """Up to BASE_CASES small cases of the conformance suite with all inputs non-empty and
    attribute sets that differ."""
    sig = _signature(spec)
    if sig is None:
        return []
    cases = generate(spec, sig, 0, 8)
    chosen: list = []
    for case in cases:
        if all(a is None or a.size for a in case.inputs) and all(
            c.attrs != case.attrs for c in chosen
        ):
            chosen.append(case)
    return chosen[:BASE_CASES] or cases[:1]


def _base_case(spec):  # noqa: ANN001, ANN202
    cases = _base_cases(spec)
    return cases[0] if cases else None


def _variants(spec, case) -> list[tuple[str, str, object]]:  # noqa: ANN001
    """(attribute, label, value) of every extreme value of every swept attribute."""
    out = []
    for attr in spec.attrs:
        name, kind = attr["name"], attr["type"]
        if kind not in SWEPT_TYPES:
            continue
        if kind == "int":
            out += [(name, repr(v), v) for v in INT_VALUES + BEYOND_INT64]
        elif kind == "bool":
            out += [(name, repr(v), v) for v in BOOL_VALUES]
        elif kind == "float":
            out += [(name, repr(v), v) for v in FLOAT_VALUES + (2**64,) + BEYOND_FLOAT64]
        else:
            pool = INT_VALUES + BEYOND_INT64 if kind == "int_list" else FLOAT_VALUES
            base = case.attrs.get(name, attr["default"])
            base = list(base) if isinstance(base, (list, tuple)) and base else [None]
            for j in range(len(base)):
                for v in pool:
                    value = [
                        v if k == j else (b if b is not None else v) for k, b in enumerate(base)
                    ]
                    out.append((name, f"{value!r}", value))
    return out


def _structured(spec, inputs: list) -> list:  # noqa: ANN001
    """The flat inputs of a case as the ops function takes them (a variadic input as a list)."""
    if not spec.variadic_input:
        return list(inputs)
    n = spec.num_fixed_inputs
    return list(inputs[:n]) + [list(inputs[n:])]


_ONE_INPUT = SimpleNamespace(inputs=[None])


def _views(case) -> tuple[list, list]:  # noqa: ANN001
    """Data-less CPU views of a case's inputs (what ct_op_infer reads)."""
    dtypes = getattr(case, "input_dtypes", None) or [
        None if a is None else a.dtype.name for a in case.inputs
    ]
    views, keep = [], []
    for a, dtype in zip(case.inputs, dtypes, strict=True):
        if a is None:
            views.append(None)
            continue
        vs, k = _shape_views(_ONE_INPUT, (dtype,), [a.shape])
        views += vs
        keep += k + vs
    return views, keep


def _output_bytes(infos: list) -> int:
    total = 0
    for dtype, shape in infos:
        total += dt.itemsize(dtype) * int(np.prod([max(n, 0) for n in shape], dtype=object))
    return total


# ---------------------------------------------------------------------------- references ------


def _reference(spec, case, attrs: dict, out_dtypes: list):  # noqa: ANN001, ANN202
    """The reference outputs, or the exception it raised."""
    full = {a["name"]: a["default"] for a in spec.attrs}
    full.update(attrs)
    for a in spec.attrs:  # a float attribute given as an int is that float (as the C library)
        if a["type"] == "float" and isinstance(full[a["name"]], int):
            full[a["name"]] = float(full[a["name"]])
    table = DEFINED_RESULTS if spec.name in DEFINED_RESULTS else references.NUMPY
    fn = table.get(spec.name)
    if fn is None:
        return LookupError(f"no reference for {spec.name}")
    try:
        with np.errstate(all="ignore"):
            return [np.asarray(r) for r in fn(case.values(), full, out_dtypes)]
    except Exception as e:  # noqa: BLE001 - a reference that cannot take the value
        return e


# ---------------------------------------------------------------------------- one call --------


def _check_error(spec, name: str, error: BaseException, beyond: bool = False) -> str | None:  # noqa: ANN001
    if not isinstance(error, ctensor.CTensorError):
        return f"raised {type(error).__name__} (not a ctensor error): {error}"
    allowed = ACCEPTED_STATUSES | DOCUMENTED_STATUSES.get(spec.name, {}).get(name, frozenset())
    if beyond:
        allowed |= {lib.CT_ERROR_ATTRIBUTE_TYPE}
    allowed |= DOCUMENTED_STATUSES.get(spec.name, {}).get("*", frozenset())
    message = str(error)
    if error.status not in allowed:
        return f"raised {error.status_name}: {message}"
    # a backward op's infer runs its forward op's, whose messages name the forward op
    names = (spec.name, spec.name.split("_backward")[0], f"'{name}'", f" {name} ")
    if not message or not any(n in message for n in names):
        return f"{error.status_name} with a message naming neither op nor attribute: {message!r}"
    return None


def check_call(spec, case, name: str, value, device: str = "cpu") -> tuple[str, str | None]:  # noqa: ANN001
    """Runs one variant: (outcome, problem or None); outcome is 'error', 'match' or 'large'."""
    attrs = dict(case.attrs)
    attrs[name] = value
    views, _keep = _views(case)
    kwargs = dict(attrs)
    args = _structured(spec, case.inputs)
    if device != "cpu":  # the same layouts in device memory
        args = _structured(spec, [None if a is None else device_like(a) for a in case.inputs])
    try:
        status, infos, message = infer(spec, views, attrs)
    except Exception as e:  # noqa: BLE001 - refused while encoding: the op call must refuse too
        problem = _check_error(spec, name, e, beyond=True)
        try:
            getattr(ops, spec.name)(*args, **kwargs)
        except Exception as call_error:  # noqa: BLE001
            problem = problem or _check_error(spec, name, call_error, beyond=True)
        else:
            problem = problem or "the op call accepted what the encoder refused"
        return "error", problem
    if status == 0 and _output_bytes(infos) > RUN_LIMIT_BYTES:
        if _output_bytes(infos) <= HOST_MEMORY_BYTES or device != "cpu":
            return "large", None
        try:
            getattr(ops, spec.name)(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            problem = _check_error(spec, name, e)
            if problem is None and not isinstance(e, ctensor.SizeOverflowError):
                problem = f"raised {type(e).__name__} for outputs beyond memory: {e}"
            return "error", problem
        return "large", f"ran with outputs of {_output_bytes(infos)} bytes"
    try:
        result = getattr(ops, spec.name)(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        # an error of the run (an index out of range for the new axis) is as good as infer's
        return "error", _check_error(spec, name, e)
    if status != 0:
        return "match", f"infer refused it ({message}), the call returned a result"
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    outputs = [o.to_numpy() if hasattr(o, "to_numpy") else np.asarray(o) for o in outputs]
    out_dtypes = [d for d, _ in infos]
    expected = _reference(spec, case, attrs, out_dtypes)
    if isinstance(expected, BaseException):
        return "match", (
            f"returned a result where the reference raised {type(expected).__name__}: {expected}"
        )
    scale = (
        input_scale(spec.name, case.values())
        if tolerance_class(spec.name) == "accumulating"
        else 0.0
    )
    for i, (actual, ref, dtype) in enumerate(zip(outputs, expected, out_dtypes, strict=False)):
        ok, text, _ = compare(dt.to_values(actual, dtype), ref, dtype, spec.name, scale, [])
        if not ok:
            return "match", f"output {i} differs from the reference: {text}"
    return "match", None


def _runs_on(spec, case, device: str) -> bool:  # noqa: ANN001
    """Whether a kernel of `device` takes the case's input dtypes."""
    dtypes = [None if a is None else a.dtype.name for a in case.inputs]
    kind = device.partition(":")[0]
    for sig in ctensor.op_info(spec.name)["signatures"].get(kind, []):
        if all(d is None or d == k for d, k in zip(dtypes, sig, strict=False)):
            return True
    return False


def sweep_op(spec, device: str = "cpu") -> list[tuple[str, str, str, str | None]]:  # noqa: ANN001
    """[(attribute, value label, outcome, problem)] of every variant of the op."""
    rows = []
    for k, case in enumerate(_base_cases(spec)):
        if device != "cpu" and not _runs_on(spec, case, device):
            continue
        for name, label, value in _variants(spec, case):
            outcome, problem = check_call(spec, case, name, value, device)
            where = f"{label} (on case {k}: attrs {case.attrs})" if problem else label
            rows.append((name, where, outcome, problem))
    return rows


def _swept_specs() -> list:
    return [
        s
        for s in all_specs().values()
        if s.name not in UNSWEPT and any(a["type"] in SWEPT_TYPES for a in s.attrs)
    ]


SWEPT = _swept_specs()


def test_every_registered_op_is_swept_or_listed():
    """A new op is swept without editing this file; one that cannot be must be listed."""
    specs = all_specs()
    assert set(UNSWEPT) <= set(specs), (
        f"UNSWEPT names ops that are not registered: {set(UNSWEPT) - set(specs)}"
    )
    for spec in specs.values():
        if spec.name in UNSWEPT:
            continue
        swept = [a["name"] for a in spec.attrs if a["type"] in SWEPT_TYPES]
        if swept:
            assert _base_case(spec) is not None, f"{spec.name}: no case to sweep {swept} on"
    assert len(SWEPT) > 100


@pytest.mark.parametrize("spec", SWEPT, ids=[s.name for s in SWEPT])
def test_extreme_attribute_values(spec):  # noqa: ANN001
    rows = sweep_op(spec)
    assert rows
    problems = [f"{name}={label}: {problem}" for name, label, _, problem in rows if problem]
    assert not problems, "\n".join(problems)


@pytest.mark.opencl
def test_extreme_attribute_values_on_opencl():
    """The same sweep on the OpenCL backend, for every swept op it has a kernel for (infer is
    shared with the CPU backend; the kernels, and what they make of extreme values, are not)."""
    problems, calls = [], 0
    for spec in SWEPT:
        rows = sweep_op(spec, DEVICE)
        calls += len(rows)
        problems += [f"{spec.name} {n}={label}: {p}" for n, label, _, p in rows if p]
    assert calls > 500
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------- regressions -----
# What the sweep found, as plain tests (on OpenCL too where it has the op).

DEVICES = ["cpu", pytest.param(DEVICE, marks=pytest.mark.opencl)]


def _on(device: str, *arrays):  # noqa: ANN002, ANN202
    return [a if device == "cpu" else device_like(a) for a in arrays]


def _host(result) -> np.ndarray:  # noqa: ANN001
    return result.to_numpy() if hasattr(result, "to_numpy") else np.asarray(result)


@pytest.mark.parametrize("bound", [INT64_MIN, INT64_MAX])
def test_slice_takes_int64_min_and_max_as_missing_bounds(bound):
    x = np.arange(5)
    np.testing.assert_array_equal(ops.slice(x, start=[bound], stop=[4]), x[:4])
    np.testing.assert_array_equal(ops.slice(x, start=[1], stop=[bound]), x[1:])
    np.testing.assert_array_equal(ops.slice(x, start=[bound], step=[-2]), x[::-2])
    np.testing.assert_array_equal(ops.slice(x, start=[3], stop=[bound], step=[-1]), x[3::-1])
    # a step of that size is a step, not a missing one
    np.testing.assert_array_equal(ops.slice(x, start=[1], step=[INT64_MAX]), x[1::INT64_MAX])
    np.testing.assert_array_equal(ops.slice(x, step=[INT64_MIN]), x[::INT64_MIN])


@pytest.mark.parametrize("device", DEVICES)
def test_conv2d_with_the_largest_stride_reads_every_column(device):
    # The valid-column range formed w + stride - 1, which wrapped: columns holding nan were
    # dropped as if they were padding.
    x = np.arange(2 * 3 * 5 * 6, dtype=np.float32).reshape(2, 3, 5, 6) / 7
    x[0, 1, 2, 1] = np.nan
    w = np.linspace(-1, 1, 4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3)
    for stride in ([1, INT64_MAX], [INT64_MAX, 1], [INT64_MAX - 1, INT64_MAX]):
        small = [min(s, 100) for s in stride]
        got = _host(ops.conv2d(*_on(device, x, w), stride=stride))
        np.testing.assert_array_equal(got, _host(ops.conv2d(*_on(device, x, w), stride=small)))
        grad = np.ones(got.shape, np.float32)
        got = _host(ops.conv2d_backward_weight(*_on(device, grad, x, w), stride=stride))
        want = ops.conv2d_backward_weight(*_on(device, grad, x, w), stride=small)
        np.testing.assert_array_equal(got, _host(want))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("value", [5e-324, 1e-60, 1e308, -1e300])
def test_float_attributes_out_of_float32_range_are_refused_for_float32(device, value):
    # In float32 (the compute precision) they become 0 or inf: nan or zeros where the value
    # defines a result. float64 inputs take them.
    for dtype in (np.float32, np.float64):
        x = np.linspace(-2, 2, 12, dtype=dtype).reshape(3, 4)
        q = x.reshape(1, 3, 4)
        calls = [
            ("beta", lambda a: ops.softplus(a, beta=value), [x]),
            (
                "alpha",
                lambda a, i, s: ops.index_add(a, i, s, axis=0, alpha=value),
                [x, np.array([0, 2]), np.ones((2, 4), dtype)],
            ),
            (
                "scale",
                lambda a, b, c: ops.scaled_dot_product_attention(a, b, c, scale=value),
                [q] * 3,
            ),
        ]
        for attr, call, arrays in calls:
            if dtype == np.float64:
                call(*_on(device, *arrays))
                continue
            with pytest.raises(ctensor.InvalidArgumentError, match=f"'{attr}'.*float32"):
                call(*_on(device, *arrays))


@pytest.mark.parametrize("device", DEVICES)
def test_a_zero_attribute_keeps_its_sign_from_call_to_call(device):
    # The attribute cache took beta=0.0 and beta=-0.0 for one key (0.0 == -0.0 in Python): the
    # second call ran with the first one's sign. As torch: log(2) / beta, so +inf and -inf.
    x = np.array([-3.0, 0.0, 2.0, 30.0], np.float32)
    for order in ((0.0, -0.0), (-0.0, 0.0)):
        for beta in order:
            got = _host(ops.softplus(*_on(device, x), beta=beta, threshold=20.0))
            np.testing.assert_array_equal(got, np.full(4, math.copysign(math.inf, beta)))
    # a float, or a bool, in an int list is refused even after the same ints ran
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(ops.sum(a, axis=(1,)), a.sum(1))
    for axis in ((1.0,), (True,)):
        with pytest.raises(ctensor.AttributeTypeError, match="sum: attribute 'axis'"):
            ops.sum(a, axis=axis)


def test_the_attention_reference_drops_out_as_the_kernel():
    # The suite's reference ignored dropout_p; it now draws the kernel's Philox mask.
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 3, 5, 4)) for _ in range(3))
    attrs = {"is_causal": False, "scale": None, "enable_gqa": False}
    plain = references.NUMPY["scaled_dot_product_attention"]([q, k, v, None], attrs, None)
    attrs.update(dropout_p=0.4, seed=7, offset=-2)
    out, lse = references.NUMPY["scaled_dot_product_attention"]([q, k, v, None], attrs, None)
    assert not np.allclose(out, plain[0])
    np.testing.assert_array_equal(lse, plain[1])
    got = ops.scaled_dot_product_attention(q, k, v, dropout_p=0.4, seed=7, offset=-2)
    np.testing.assert_allclose(got[0], out, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(out.shape)
    ins = [g, q, k, v, None, got[0], got[1]]
    want = references.NUMPY["scaled_dot_product_attention_backward"](ins, attrs, None)
    grads = ops.scaled_dot_product_attention_backward(*ins, dropout_p=0.4, seed=7, offset=-2)
    for a, b in zip(grads, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_the_conv_references_leave_output_padding_rows_out_of_the_products():
    # On the CPU backend (OpenCL has no conv_transpose2d). With output_padding,
    # conv_transpose2d's last rows and columns are reached by no input:
    # the reference widened the input with zeros there, and 0 * a nan weight made nan where
    # the kernels (and torch) give the bias.
    x = np.linspace(-1, 1, 2 * 4 * 5 * 6).reshape(2, 4, 5, 6)
    w = np.linspace(-1, 1, 4 * 3 * 3 * 3).reshape(4, 3, 3, 3)
    w[1, 2, 0, 0] = np.nan
    b = np.array([0.5, -1.0, 2.0])
    attrs = {"dilation": [2], "output_padding": [1]}
    got = ops.conv_transpose2d(x, w, b, **attrs)
    full = {"stride": [1], "padding": [0], "groups": 1, **attrs}
    want = references.NUMPY["conv_transpose2d"]([x, w, b], full, None)[0]
    assert np.isnan(got).sum() == 2 * 5 * 6  # channel 2, the rows and columns x reaches
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[:, 2, -1, :], np.full((2, 11), 2.0))
    # conv2d_backward_weight with a grad_out of the first rows only reads the input rows those
    # reach: a nan beyond them stays out
    x = np.linspace(-1, 1, 1 * 3 * 6 * 5).reshape(1, 3, 6, 5)
    x[0, 1, 5, 2] = np.nan
    w = np.ones((2, 3, 3, 3))
    g = np.ones((1, 2, 2, 3))
    got = ops.conv2d_backward_weight(g, x, w)
    full = {"stride": [1], "padding": [0], "dilation": [1], "groups": 1}
    want = references.NUMPY["conv2d_backward_weight"]([g, x, w], full, None)[0]
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_vector_norm_backward_refuses_a_nan_ord_as_its_forward(device):
    x = np.ones((3, 4), np.float32)
    g, out = np.ones(3, np.float32), np.full(3, 2.0, np.float32)
    with pytest.raises(ctensor.InvalidArgumentError, match="vector_norm: ord must not be nan"):
        ops.vector_norm(*_on(device, x), axis=[1], ord=math.nan)
    with pytest.raises(ctensor.InvalidArgumentError, match="vector_norm_backward: ord"):
        ops.vector_norm_backward(*_on(device, g, x, out), axis=[1], ord=math.nan)


def test_an_int_beyond_int64_is_a_float_for_a_float_attribute():
    x = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(ops.elu(x, alpha=2**64), ops.elu(x, alpha=float(2**64)))
    with pytest.raises(ctensor.AttributeTypeError, match="elu: attribute 'alpha'.*float64"):
        ops.elu(x, alpha=10**400)
    with pytest.raises(ctensor.AttributeTypeError, match="tril: attribute 'k'.*64 bits"):
        ops.tril(np.ones((2, 2)), k=2**64)


@pytest.mark.parametrize("n", [2**31, 2**64, INT64_MAX, -(2**63) - 5])
def test_thread_counts_beyond_int32_are_ctensor_errors_or_the_default(n):
    # they raised a raw OverflowError converting to the C int32_t
    before = ctensor.get_num_threads()
    try:
        if n > 0:
            with pytest.raises(ctensor.InvalidArgumentError, match="set_num_threads"):
                ctensor.set_num_threads(n)
            assert ctensor.get_num_threads() == before
        else:  # every n <= 0 is the default
            ctensor.set_num_threads(0)
            default = ctensor.get_num_threads()
            ctensor.set_num_threads(1)
            ctensor.set_num_threads(n)
            assert ctensor.get_num_threads() == default
    finally:
        ctensor.set_num_threads(before)


if __name__ == "__main__":  # discovery: python tests/test_extreme_attributes.py op...
    import sys

    for op in sys.argv[1:]:
        spec = all_specs()[op]
        for row in sweep_op(spec, os.environ.get("SWEEP_DEVICE", "cpu")):
            if row[3]:
                print(op, *row, sep=" | ", flush=True)
