"""ctensor.jax under jax.jit, op by op: every shape-static and workspace operator of the
registry (forward and backward) on the cases of tests/torch_cases.py (the conformance suite's
inputs: float32, float64 and integer or bool signatures; backward ops on inputs recorded from
the gradient programs), jitted, against eager ``ctensor.ops`` on the same values and, for
float64 cases, against the conformance suite's float64 NumPy reference. Runs with 64-bit types
enabled (JAX holds int64 and float64 only then)."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import assert_close
from torch_cases import all_cases

import ctensor
from ctensor._registry import all_specs, get_spec
from ctensor.conformance import references
from ctensor.conformance.tolerances import compare, input_scale, tolerance_class
from ctensor.torch._arguments import ctensor_attrs

jax = pytest.importorskip("jax")
jnp = jax.numpy
ctensor_jax = pytest.importorskip("ctensor.jax")

STATIC_OPS = sorted(name for name, spec in all_specs().items() if not spec.is_dynamic)


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _numpy(value):  # noqa: ANN001, ANN202
    """A case argument (torch tensor, list of them, None) as C-ordered NumPy arrays."""
    if value is None:
        return None
    if isinstance(value, list):
        return [_numpy(v) for v in value]
    return np.array(value.detach().numpy(), order="C")


def _flat(result) -> list:  # noqa: ANN001
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _jax_args(args: list) -> list:
    return [
        None
        if a is None
        else [jnp.asarray(v) for v in a]
        if isinstance(a, list)
        else jnp.asarray(a)
        for a in args
    ]


def _check_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if actual.dtype.kind in "fc":
        assert_close(actual, expected, str(actual.dtype))
    else:
        np.testing.assert_array_equal(actual, expected)


def test_every_static_op_has_a_case():
    assert [name for name in STATIC_OPS if not all_cases()[name]] == []


@pytest.mark.parametrize("name", STATIC_OPS)
def test_jit_matches_eager_and_reference(name):
    spec = get_spec(name)
    function = getattr(ctensor_jax, name)
    for case in all_cases()[name]:
        args = [_numpy(a) for a in case.args]
        attrs = ctensor_attrs(spec, case.kwargs)
        expected = [np.asarray(r) for r in _flat(getattr(ctensor.ops, name)(*args, **attrs))]
        present = [i for i, a in enumerate(args) if a is not None]

        def run(*arrays, attrs=attrs, args=args, present=present, function=function):  # noqa: ANN001, ANN202
            full = list(args)
            for i, value in zip(present, arrays, strict=True):
                full[i] = value
            return function(*full, **attrs)

        jitted = jax.jit(run)(*_jax_args([args[i] for i in present]))
        actual = [np.asarray(r) for r in _flat(jitted)]
        assert len(actual) == len(expected), case
        for a, e in zip(actual, expected, strict=True):
            _check_close(a, e)
        if name in references.NUMPY and all(
            e.dtype == np.float64 for e in expected
        ):  # the suite's float64 reference
            _check_reference(spec, case, args, attrs, actual)


def _check_reference(spec, case, args, attrs, actual) -> None:  # noqa: ANN001
    values = []
    for a in args:
        for v in a if isinstance(a, list) else [a]:
            values.append(v)
    full = {a["name"]: a["default"] for a in spec.attrs}
    full.update(attrs)
    with np.errstate(all="ignore"):
        refs = references.NUMPY[spec.name](values, full, ["float64"] * len(actual))
    scale = input_scale(spec.name, values) if tolerance_class(spec.name) == "accumulating" else 0
    for a, r in zip(actual, refs, strict=True):
        ok, text, _ = compare(a, np.asarray(r), "float64", spec.name, scale)
        assert ok, f"{case}: {text}"
