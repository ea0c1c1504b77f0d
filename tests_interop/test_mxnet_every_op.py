"""Every operator of the registry through ctensor.mxnet, on inputs from the conformance suite's
case generator: results equal ``ctensor.ops`` on the same NumPy arrays (the same kernels, so
exactly), gradients through ``mx.autograd`` equal ``ctensor.autodiff.vjp``, and every gradient
program also runs with each of its steps a ctensor.mxnet operator (which is how the
``*_backward`` operators that have no case of their own get called as MXNet operators)."""

from __future__ import annotations

import functools

import mxnet as mx
import numpy as np
import pytest

import ctensor
import ctensor.mxnet as cm
from ctensor._mxnet import HOLDS
from ctensor._registry import get_spec
from ctensor.autodiff import Program, gradient_entry
from ctensor.conformance.cases import generate

nd = mx.nd

#: Dtypes tried first when an op has several kernels MXNet can hold.
_PREFERRED = ["float64", "float32", "int64", "int32", "bool", "uint8", "int8", "float16"]


def _signatures(spec) -> list:  # noqa: ANN001
    held = [s for s in spec.kernels.get("cpu", []) if all(d in HOLDS for d in s)]
    return sorted(held, key=lambda s: [_PREFERRED.index(d) for d in s])


@functools.cache
def _case(name: str):  # noqa: ANN202
    """A conformance case whose inputs MXNet can hold: no zero-size input (MXNet 1.x's shapes
    cannot have one), preferably no 0-d one (MXNet cannot attach a gradient to those); None if
    the generator has none for the op."""
    spec = get_spec(name)
    fallback = None
    for signature in _signatures(spec):
        for case in generate(spec, signature, 0, 6):
            if any(a is not None and a.size == 0 for a in case.inputs):
                continue
            if all(a is None or a.ndim > 0 for a in case.inputs):
                return case
            fallback = fallback or case
    return fallback


def _ndarray(array: np.ndarray | None):  # noqa: ANN202
    if array is None:
        return None
    if array.ndim == 0:  # nd.array makes a 0-d array (1,): ctensor writes a 0-d NDArray
        result = nd.empty((), dtype=array.dtype)
        ctensor.ops.astype(array, dtype=array.dtype.name, out=result)
        return result
    return nd.array(array, dtype=array.dtype)


def _structured(spec, flat: list) -> list:  # noqa: ANN001
    """Flat inputs as the call takes them: the variadic ones as one list."""
    if spec.variadic_input:
        return [*flat[: spec.num_fixed_inputs], list(flat[spec.num_fixed_inputs :])]
    return list(flat)


def _tuple(result) -> tuple:  # noqa: ANN001
    return result if isinstance(result, tuple) else (result,)


def _as_numpy(value):  # noqa: ANN001, ANN202
    if isinstance(value, list):
        return [_as_numpy(v) for v in value]
    return value.asnumpy() if isinstance(value, nd.NDArray) else value


def _step_ops() -> set[str]:
    """Operators that some gradient entry runs as a step."""
    return {
        step["op"]
        for name in ctensor.list_ops()
        for step in get_spec(name).schema["gradient"].get("steps", ())
    }


def _error_of(call) -> ctensor.CTensorError | None:  # noqa: ANN001
    try:
        call()
    except ctensor.CTensorError as error:
        return error
    return None


@pytest.mark.parametrize("name", cm.op_names())
def test_forward_and_gradient_match_ctensor(name):
    spec = get_spec(name)
    case = _case(name)
    if case is None:
        # a backward operator the generator has no case for: the gradient programs run it
        # as a ctensor.mxnet operator (test_gradient_program_runs_on_mxnet_operators)
        assert name.endswith("_backward") and name in _step_ops()
        return
    arrays = [None if a is None else np.array(a, order="C") for a in case.inputs]
    expected_error = _error_of(
        lambda: getattr(ctensor.ops, name)(*_structured(spec, arrays), **case.attrs)
    )
    inputs = [_ndarray(a) for a in arrays]
    if expected_error is not None:  # the case is outside the op's domain: the same error
        error = _error_of(lambda: getattr(cm, name)(*_structured(spec, inputs), **case.attrs))
        if error is None:
            with pytest.raises(mx.base.MXNetError):
                nd.waitall()
            error = cm.last_error()
        assert type(error) is type(expected_error)
        assert str(error) == str(expected_error)
        return
    expected = _tuple(getattr(ctensor.ops, name)(*_structured(spec, arrays), **case.attrs))
    entry = spec.schema["gradient"]
    floating = [k for k, a in enumerate(inputs) if a is not None and a.dtype.__name__[0] == "f"]
    differentiable = bool(entry.get("differentiable")) and bool(floating)
    if differentiable:
        for k in floating:
            inputs[k].attach_grad()
    with mx.autograd.record():
        results = _tuple(getattr(cm, name)(*_structured(spec, inputs), **case.attrs))
    assert len(results) == len(expected)
    for result, reference in zip(results, expected, strict=True):
        assert isinstance(result, nd.NDArray)
        assert result.dtype == reference.dtype
        np.testing.assert_array_equal(result.asnumpy(), reference)
    if not differentiable:
        return
    rng = np.random.default_rng(1)
    cotangents = [
        rng.uniform(-1, 1, r.shape).astype(r.dtype) if takes and r.dtype.kind == "f" else None
        for r, takes in zip(expected, entry["output_takes_cotangent"], strict=False)
    ]
    heads = [(r, c) for r, c in zip(results, cotangents, strict=False) if c is not None]
    mx.autograd.backward([r for r, _ in heads], [_ndarray(c) for _, c in heads])
    grads = ctensor.autodiff.vjp(
        name,
        _structured(spec, arrays),
        cotangents if len(cotangents) > 1 else cotangents[0],
        **case.attrs,
    )
    flat = [*grads[: spec.num_fixed_inputs], *grads[-1]] if spec.variadic_input else grads
    for k in floating:
        if flat[k] is not None:
            np.testing.assert_allclose(inputs[k].grad.asnumpy(), flat[k], rtol=1e-12, atol=1e-14)


def _mxnet_runner(spec, inputs: list, attrs: dict) -> list:  # noqa: ANN001
    """Runs one step of a gradient program as a ctensor.mxnet call."""

    def converted(value):  # noqa: ANN001, ANN202
        if isinstance(value, list):
            return [converted(v) for v in value]
        return _ndarray(value) if isinstance(value, np.ndarray) else value

    result = _tuple(getattr(cm, spec.name)(*[converted(v) for v in inputs], **attrs))
    if spec.variadic_output:
        fixed = len(spec.outputs) - 1
        return [*result[:fixed], list(result[fixed:])]
    return list(result)


@functools.cache
def _differentiable_with_cases() -> list[str]:
    names = []
    for name in ctensor.autodiff.differentiable_ops():
        case = _case(name) if get_spec(name).category != "dynamic" else None
        if (
            case is not None
            and _error_of(
                lambda case=case, name=name: getattr(ctensor.ops, name)(
                    *_structured(
                        get_spec(name), [None if a is None else np.array(a) for a in case.inputs]
                    ),
                    **case.attrs,
                )
            )
            is None
        ):
            names.append(name)
    return names


def test_gradient_program_runs_on_mxnet_operators():
    covered = set()
    for name in _differentiable_with_cases():
        spec = get_spec(name)
        entry = gradient_entry(name)
        case = _case(name)
        arrays = _structured(spec, [None if a is None else np.array(a) for a in case.inputs])
        outputs = _tuple(getattr(ctensor.ops, name)(*arrays, **case.attrs))
        rng = np.random.default_rng(2)
        cotangents = [
            rng.uniform(-1, 1, r.shape).astype(r.dtype) if takes and r.dtype.kind == "f" else None
            for r, takes in zip(outputs, entry["output_takes_cotangent"], strict=False)
        ]
        if all(c is None for c in cotangents):
            continue
        expected = ctensor.autodiff.vjp(
            name, arrays, cotangents if len(cotangents) > 1 else cotangents[0], **case.attrs
        )
        program = Program(spec, entry, arrays, cotangents, case.attrs, _mxnet_runner)
        for index, ref in enumerate(entry["input_grads"]):
            if ref is None or expected[index] is None:
                continue
            got = _as_numpy(program.value(ref))
            if isinstance(got, list):
                for g, e in zip(got, expected[index], strict=True):
                    np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
            else:
                np.testing.assert_allclose(got, expected[index], rtol=1e-12, atol=1e-14)
        covered |= {step["op"] for step in entry["steps"]}
    assert len(covered) > 100  # most operators are steps of some gradient
    uncovered = {name for name in cm.op_names() if _case(name) is None and name not in covered}
    assert not uncovered, f"operators run by no test as ctensor.mxnet ops: {sorted(uncovered)}"
