"""The gradient registry: every op's entry parses and is consistent, the C struct and the JSON
agree, ctensor.autodiff.vjp runs entries on NumPy and torch arrays, sum_to_shape undoes
broadcasting, and docs/gradients.md is the registry's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from gradcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor
from ctensor import ffi, lib

ROOT = Path(__file__).resolve().parent.parent
GRADIENTS_PAGE = ROOT / "docs" / "gradients.md"

SOURCES = {
    lib.CT_GRAD_NONE: None,
    lib.CT_GRAD_INPUT: "input",
    lib.CT_GRAD_OUTPUT: "output",
    lib.CT_GRAD_COTANGENT: "cotangent",
    lib.CT_GRAD_STEP: "step",
}


def _c_entry(name: str):
    op = ffi.new("const ct_op**")
    assert lib.ct_op_find(name.encode(), op) == 0
    entry = ffi.new("const ct_gradient**")
    status = lib.ct_op_gradient(op[0], entry)
    assert status == 0, f"{name}: {ffi.string(lib.ct_last_error()).decode()}"
    return entry[0]


def _c_value(value) -> dict | None:
    source = SOURCES[value.source]
    if source is None:
        return None
    if source == "step":
        return {"step": value.index, "output": value.output}
    return {source: value.index}


@pytest.mark.parametrize("name", ctensor.list_ops())
def test_every_entry_parses_and_matches_its_json(name):
    entry = _c_entry(name)
    info = ctensor.op_info(name)
    js = info["gradient"]
    assert "error" not in js, js.get("error")
    assert entry.struct_size == ffi.sizeof("ct_gradient")
    assert entry.num_inputs == len(info["inputs"]) and entry.num_outputs == len(info["outputs"])
    assert bool(entry.differentiable) == js["differentiable"]
    assert ffi.string(entry.formula).decode() == js["formula"]
    assert ffi.string(entry.note).decode() == js["note"]
    assert entry.num_steps == len(js["steps"])
    for s, step in enumerate(js["steps"]):
        c_step = entry.steps[s]
        schema = ffi.new("const ct_op_schema**")
        assert lib.ct_op_get_schema(c_step.op, schema) == 0
        assert ffi.string(schema[0].name).decode() == step["op"]
        assert c_step.num_inputs == schema[0].num_inputs == len(step["inputs"])
        assert c_step.num_outputs == schema[0].num_outputs == step["num_outputs"]
        assert [_c_value(c_step.inputs[i]) for i in range(c_step.num_inputs)] == step["inputs"]
        for value in step["inputs"]:  # only earlier steps are read
            assert value is None or "step" not in value or value["step"] < s
        assert [ffi.string(c_step.attrs[a].name).decode() for a in range(c_step.num_attrs)] == [
            a["name"] for a in step["attrs"]
        ]
    grads = [_c_value(entry.input_grads[i]) for i in range(entry.num_inputs)]
    assert grads == js["input_grads"]
    assert js["differentiable"] == any(g is not None for g in grads)
    for key in ("saved_inputs", "saved_outputs", "output_takes_cotangent"):
        count = entry.num_inputs if key == "saved_inputs" else entry.num_outputs
        assert [bool(getattr(entry, key)[i]) for i in range(count)] == js[key]


@pytest.mark.parametrize("name", ctensor.list_ops())
def test_every_forward_op_has_a_deliberate_row(name):
    js = ctensor.op_info(name)["gradient"]
    if "_backward" in name:
        assert not js["differentiable"] and "second derivatives" in js["note"]
    else:
        assert js["note"] != "no gradient row", f"{name} has no row in capi/gradients/"
        if not js["differentiable"]:
            assert js["note"], f"{name}: a row that is not differentiable must say why"


def test_float_cotangents_only_for_float_outputs():
    # An entry never asks for the cotangent of an integer output (indices).
    for name in ctensor.list_ops():
        info = ctensor.op_info(name)
        for takes, output in zip(
            info["gradient"]["output_takes_cotangent"], info["outputs"], strict=True
        ):
            if takes:
                assert "indices" not in output["name"], (name, output["name"])


def test_null_arguments_are_errors():
    op = ffi.new("const ct_op**")
    assert lib.ct_op_find(b"exp", op) == 0
    assert lib.ct_op_gradient(op[0], ffi.NULL) == lib.CT_ERROR_NULL_POINTER
    entry = ffi.new("const ct_gradient**")
    assert lib.ct_op_gradient(ffi.NULL, entry) == lib.CT_ERROR_NULL_POINTER
    fake = ffi.new("char[64]")
    status = lib.ct_op_gradient(ffi.cast("const ct_op*", fake), entry)
    assert status == lib.CT_ERROR_INVALID_ARGUMENT
    assert "not an operator handle" in ffi.string(lib.ct_last_error()).decode()


def test_abi_minor_version_announces_gradients():
    major, minor = ctensor.abi_version()
    assert (major, minor) >= (1, 2)


# ----- sum_to_shape -----


@st.composite
def _broadcast_pair(draw):
    like = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    lead = draw(st.lists(st.integers(0, 3), min_size=0, max_size=2))
    shape = lead + [n if draw(st.booleans()) else draw(st.integers(0, 4)) for n in like]
    like = [n if n == s else 1 for n, s in zip(like, shape[len(lead) :], strict=True)]
    return tuple(shape), tuple(like)


@settings(max_examples=60, deadline=None)
@given(_broadcast_pair(), st.sampled_from(["float32", "float64", "float16", "complex64"]))
def test_sum_to_shape_matches_numpy(pair, dtype):
    shape, like_shape = pair
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    if np.issubdtype(x.dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape).astype(dtype)
    like = np.zeros(like_shape, dtype)
    got = ctensor.ops.sum_to_shape(x, like)
    lead = len(shape) - len(like_shape)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(like_shape) if n == 1 and shape[lead + k] != 1
    )
    want = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64).sum(axis=axes)
    want = want.reshape(like_shape)
    assert got.shape == like_shape and got.dtype == x.dtype
    rtol = {"float16": 3e-3, "float32": 1e-6}.get(dtype, 1e-12 if dtype == "float64" else 1e-6)
    np.testing.assert_allclose(
        got, want, rtol=rtol, atol=rtol * max(1, np.abs(want).max(initial=0))
    )


def test_sum_to_shape_strided_output_and_input():
    x = np.arange(96.0).reshape(4, 6, 4)[:, ::2, ::2]  # (4, 3, 2), strided
    buffer = np.full((3, 4), -1.0)
    out = buffer[:, ::2]  # (3, 2), strided
    ctensor.ops.sum_to_shape(x, np.zeros((3, 2)), out=out)
    np.testing.assert_array_equal(out, x.sum(axis=0))
    np.testing.assert_array_equal(buffer[:, 1::2], -1.0)  # the gaps are untouched
    got = ctensor.ops.sum_to_shape(x, np.zeros((1, 2)))
    np.testing.assert_array_equal(got, x.sum(axis=(0, 1)).reshape(1, 2))


def test_sum_to_shape_refuses_shapes_that_do_not_broadcast():
    with pytest.raises(ctensor.ShapeMismatchError, match="does not broadcast"):
        ctensor.ops.sum_to_shape(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ctensor.ShapeMismatchError):
        ctensor.ops.sum_to_shape(np.zeros(3), np.zeros((2, 3)))
    # Floats and complex only: the binding promotes an int32 call to float64 (NumPy's rule).
    assert ctensor.op_info("sum_to_shape")["dtypes"]["cpu"] == [
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ]
    assert ctensor.ops.sum_to_shape(np.ones(3, np.int32), np.ones(1, np.int32)).dtype == np.float64


# ----- ctensor.autodiff.vjp -----


def test_vjp_of_astype_casts_back_on_numpy_and_torch():
    x = np.linspace(-1, 1, 6).astype(np.float32)
    g = np.arange(6, dtype=np.float64)
    (grad,) = ctensor.autodiff.vjp("astype", [x], [g], dtype="float64")
    assert grad.dtype == np.float32 and isinstance(grad, np.ndarray)
    np.testing.assert_array_equal(grad, g.astype(np.float32))
    (tgrad,) = ctensor.autodiff.vjp(
        "astype", [torch.from_numpy(x)], torch.from_numpy(g), dtype="float64"
    )
    assert isinstance(tgrad, torch.Tensor) and tgrad.dtype == torch.float32


def test_check_vjp_astype_against_torch_and_finite_differences():
    x = np.random.default_rng(1).standard_normal((3, 4))
    check_vjp("astype", [x], {"dtype": "float64"}, lambda t: t.to(torch.float64), dtype="float32")


def test_vjp_of_a_non_differentiable_op_says_why():
    with pytest.raises(ctensor.autodiff.NotDifferentiableError, match="integer output"):
        ctensor.autodiff.vjp("argsort", [np.zeros(3)], [None])


def test_vjp_checks_its_arguments():
    with pytest.raises(ValueError, match="expected 1 inputs"):
        ctensor.autodiff.vjp("astype", [np.zeros(3), np.zeros(3)], [np.zeros(3)], dtype="float64")
    with pytest.raises(ValueError, match="cotangent of output 'out'"):
        ctensor.autodiff.vjp("astype", [np.zeros(3)], [None], dtype="float64")


def test_differentiable_list_is_the_registry_s():
    names = ctensor.autodiff.differentiable_ops()
    assert "astype" in names and "argsort" not in names
    assert names == sorted(
        n for n in ctensor.list_ops() if ctensor.op_info(n)["gradient"]["differentiable"]
    )


def test_gradients_page_is_generated_from_the_registry():
    generated = subprocess.run(
        [sys.executable, "-m", "ctensor", "--gradients-page"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert GRADIENTS_PAGE.read_text() == generated, (
        "docs/gradients.md is stale: regenerate it with "
        "`python -m ctensor --gradients-page > docs/gradients.md`"
    )


# ----- every differentiable op, through ctensor.autodiff.vjp -----


def _grouped_inputs(name: str, flat: list) -> list:
    info = ctensor.op_info(name)
    if info["inputs"] and info["inputs"][-1].get("variadic"):
        fixed = len(info["inputs"]) - 1
        return [*flat[:fixed], list(flat[fixed:])]
    return list(flat)


def _float64_case(name: str):
    """The largest float64 case the conformance suite checks this op's gradient with (op_table's
    shapes and attributes, moderate values)."""
    from conformance.cases import gradient_cases
    from conformance.runner import signature_labels
    from ctensor._registry import get_spec

    spec = get_spec(name)
    signatures = [
        s
        for s in signature_labels(spec)
        if "float64" in s and all(d in ("float64", "bool", "int64") for d in s)
    ]
    assert signatures, f"{name}: no float64 kernel"
    case = gradient_cases(spec, signatures[0], 0, 1)[0]
    return [None if a is None else np.array(a) for a in case.inputs], dict(case.attrs)


# Float inputs an entry deliberately treats as constants, as torch does, though they move the
# result: batch_norm's running statistics (torch in eval mode).
CONSTANTS = {"batch_norm": (1, 2)}


@pytest.mark.parametrize("name", ctensor.autodiff.differentiable_ops())
def test_every_differentiable_op_matches_finite_differences(name):
    flat, attrs = _float64_case(name)
    inputs = _grouped_inputs(name, flat)
    check_vjp(name, inputs, attrs, None, constants=CONSTANTS.get(name, ()))
    # The same entry on torch tensors gives the same cotangents, as torch tensors.
    as_torch = [
        [torch.from_numpy(a) for a in v]
        if isinstance(v, list)
        else None
        if v is None
        else torch.from_numpy(v)
        for v in inputs
    ]
    # ctensor.ops takes a variadic parameter as one list, as vjp does
    outputs = getattr(ctensor.ops, name)(*as_torch, **attrs)
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    takes = ctensor.op_info(name)["gradient"]["output_takes_cotangent"]
    rng = np.random.default_rng(0)
    cotangents = [
        torch.from_numpy(rng.standard_normal(tuple(o.shape))) if t else None
        for o, t in zip(outputs, takes, strict=True)
    ]
    torch_grads = ctensor.autodiff.vjp(name, as_torch, cotangents, **attrs)
    numpy_grads = ctensor.autodiff.vjp(
        name, inputs, [None if c is None else c.numpy() for c in cotangents], **attrs
    )
    for got, want in zip(torch_grads, numpy_grads, strict=True):
        if want is None:
            assert got is None
            continue
        pairs = zip(got, want, strict=True) if isinstance(want, list) else [(got, want)]
        for g, w in pairs:
            assert isinstance(g, torch.Tensor)
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12)
