"""Gradient checks: every differentiable op's gradient entry, run step by step on the backend
under test.

For each forward op x float signature, a few cases of the forward (op_table's shapes and
attributes, values without edge values) are run forward on the backend; cotangents are drawn
for the outputs the entry reads; then every step of the entry runs on the backend as an
ordinary case (placed, run, inputs and guard bytes checked). Two things are compared:

- each step's outputs with the same step run by the built-in CPU backend in float64 on the same
  inputs: this is how backward operators are checked "like any op" (their rows in the report
  come from here, since only a forward's cases give them consistent shapes);
- for float64 signatures, the input cotangents with central finite differences of
  <cotangents, forward(inputs)>, the forward being the backend's own: a backward kernel that
  disagrees with its own forward fails the forward's "gradient" check.

A step whose op has no kernel on the backend leaves the forward's gradient NOT_SUPPORTED there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ctensor._lib import lib
from ctensor._registry import OpSpec, registry_json

from . import dtypes as dt
from .calls import decoded, run_case
from .cases import Case, gradient_cases
from .device import HostDevice
from .tolerances import compare, input_scale

__all__ = ["BackwardRows", "check_gradient", "GRADIENT_CASES", "FD_ELEMENTS"]

#: Cases per forward op x signature, and elements perturbed per input by finite differences.
GRADIENT_CASES = 2
FD_ELEMENTS = 4
FD_STEP = 1e-6
FD_RTOL, FD_ATOL = 1e-5, 1e-6


@dataclass
class StepRun:
    """One run of a backward-operator step: its signature and what went wrong (check, reason)."""

    case: Case
    violations: list = field(default_factory=list)
    worst: float = 0.0
    worst_error: str = ""


#: (op, signature) -> the runs of that backward op's kernel made by gradient checks.
BackwardRows = dict


_SPECS: dict = {}


def get_spec(name: str) -> OpSpec:
    """The op as the registry is now (plugins loaded after import included)."""
    generation = lib.ct_registry_generation()
    if _SPECS.get("") != generation:
        _SPECS.clear()
        _SPECS.update({op["name"]: OpSpec(op) for op in registry_json()["ops"]})
        _SPECS[""] = generation
    return _SPECS[name]


class _Skip(Exception):
    """The backend lacks a kernel a step needs."""


def _param_dtypes(values: list) -> list:
    """One dtype per parameter (a variadic parameter's first tensor's), None when absent."""
    out = []
    for v in values:
        if isinstance(v, list):
            out.append(v[0][1] if v else None)
        else:
            out.append(None if v is None else v[1])
    return out


def _flat(values: list) -> list:
    """Call tensors: a variadic parameter's list spread in place."""
    out = []
    for v in values:
        out.extend(v if isinstance(v, list) else [v])
    return out


def _grouped(spec: OpSpec, flat: list, count: int) -> list:
    """Per parameter (of `count`): the last one a list when it is variadic."""
    variadic = spec.variadic_input if count == len(spec.inputs) else spec.variadic_output
    if not variadic:
        return list(flat)
    return [*flat[: count - 1], list(flat[count - 1 :])]


def _stored(values: np.ndarray, dtype: str) -> np.ndarray:
    return dt.from_values(values, dtype)


def _run(spec: OpSpec, inputs: list, attrs: dict, device, backend: str, seed: int, index: int):  # noqa: ANN001, ANN202
    """Runs op on stored inputs ((array, dtype) or None) as a compact case: (case, outcome)."""
    case = Case(
        spec.name,
        tuple(d for _, d in (i for i in inputs if i is not None)),
        index,
        seed,
        [None if i is None else i[0] for i in inputs],
        [None if i is None else i[1] for i in inputs],
        attrs,
        strided_output=False,
        layouts=["compact" if i is not None else None for i in inputs],
    )
    return case, run_case(spec, case, device, backend)


def _has_kernel(spec: OpSpec, device_kind: str, backend: str, dtypes: list) -> bool:
    """Whether `backend` registers a kernel of op for these input dtypes (one per parameter;
    None for an absent optional input matches anything)."""
    for kernel in spec.schema.get("kernels", ()):
        if kernel["backend"] != backend or kernel["device"] != device_kind:
            continue
        inputs = kernel["signature"][: len(dtypes)]
        if all(d is None or d == k for d, k in zip(dtypes, inputs, strict=True)):
            return True
    return False


def _step_attrs(entry_step: dict, forward: OpSpec, attrs: dict, inputs: list) -> dict:
    out = {}
    for attr in entry_step["attrs"]:
        if "forward" in attr:
            name = attr["forward"]
            default = next(a["default"] for a in forward.attrs if a["name"] == name)
            out[attr["name"]] = attrs.get(name, default)
        elif "dtype_of" in attr:
            out[attr["name"]] = inputs[attr["dtype_of"]][1]
        else:
            out[attr["name"]] = attr["value"]
    return out


class _Program:
    """One gradient entry run on the backend; values are (stored array, dtype) pairs."""

    def __init__(self, forward: OpSpec, entry: dict, case: Case, target, rows: BackwardRows):  # noqa: ANN001
        self.forward = forward
        self.entry = entry
        self.case = case
        self.target = target
        self.rows = rows
        self.flat_inputs = [
            None if a is None else (np.ascontiguousarray(a), d)
            for a, d in zip(case.inputs, case.input_dtypes, strict=True)
        ]
        self.inputs = _grouped(forward, self.flat_inputs, len(forward.inputs))
        self.outputs: list = []
        self.cotangents: list = []
        self.steps: list = []

    def value(self, ref: dict | None):  # noqa: ANN201
        if ref is None:
            return None
        if "input" in ref:
            return self.inputs[ref["input"]]
        if "cotangent" in ref:
            return self.cotangents[ref["cotangent"]]
        if "step" in ref:
            return self.steps[ref["step"]][ref["output"]]
        return self.outputs[ref["output"]]

    def run_forward(self, rng: np.random.Generator) -> str | None:
        outcome = run_case(self.forward, self.case, self.target.device, self.target.backend)
        if outcome.violations:
            return None  # the forward's own row reports it
        takes = self.entry["output_takes_cotangent"]
        if any(t and not dt.is_float(d) for t, (d, _) in zip(takes, outcome.infos, strict=False)):
            return None  # an integer or bool result: no derivative (ctensor.h: Gradients)
        flat = [
            (_stored(v, d), d) for v, (d, _) in zip(decoded(outcome), outcome.infos, strict=True)
        ]
        self.outputs = _grouped(self.forward, flat, len(self.forward.outputs))
        for output, takes in zip(self.outputs, self.entry["output_takes_cotangent"], strict=True):
            if not takes:
                self.cotangents.append(None)
            elif isinstance(output, list):
                self.cotangents.append(
                    [(_stored(rng.standard_normal(a.shape), d), d) for a, d in output]
                )
            else:
                stored, dtype = output
                self.cotangents.append((_stored(rng.standard_normal(stored.shape), dtype), dtype))
        return "ok"

    def run_steps(self) -> tuple[list, list]:
        """Runs every step. Returns (what stopped the program, numeric disagreements with the
        CPU backend), each a list of (check, reason)."""
        fatal, numeric = [], []
        for s, step in enumerate(self.entry["steps"]):
            spec = get_spec(step["op"])
            params = [self.value(ref) for ref in step["inputs"]]
            dtypes = _param_dtypes(params)
            attrs = _step_attrs(step, self.forward, self.case.attrs, self.inputs)
            if not _has_kernel(spec, self.target.device.kind, self.target.backend, dtypes):
                raise _Skip(f"{step['op']} has no kernel for {dtypes} on the backend")
            inputs = _flat(params)
            seed = self.case.seed ^ (s + 1)
            case, outcome = _run(
                spec, inputs, attrs, self.target.device, self.target.backend, seed, s
            )
            run = StepRun(case, list(outcome.violations))
            if not outcome.violations:
                values = decoded(outcome)
                self._compare_with_cpu(spec, inputs, attrs, outcome, values, run)
                flat = [(_stored(v, d), d) for v, (d, _) in zip(values, outcome.infos, strict=True)]
                self.steps.append(_grouped(spec, flat, len(spec.outputs)))
            signature = tuple(dtypes) + tuple(d for d, _ in outcome.infos[: len(spec.outputs)])
            if "_backward" in spec.name:
                self.rows.setdefault((spec.name, signature), []).append(run)
            found = [(c, f"step {s} ({step['op']}): {r}") for c, r in run.violations]
            if outcome.violations:
                fatal.extend(found)
                break
            numeric.extend(found)
        return fatal, numeric

    def _compare_with_cpu(self, spec, inputs, attrs, outcome, values, run) -> None:  # noqa: ANN001
        """The step against the CPU backend in float64 on the same (widened) inputs."""
        wide = [
            None
            if i is None
            else (_stored(dt.to_values(i[0], i[1]), "float64"), "float64")
            if dt.is_float(i[1])
            else i
            for i in inputs
        ]
        _, reference = _run(spec, wide, attrs, HostDevice(), "cpu", run.case.seed, run.case.index)
        if reference.violations:
            run.violations.append(("reference", f"CPU float64: {reference.violations[0][1]}"))
            return
        scale = input_scale(
            spec.name, [None if i is None else dt.to_values(i[0], i[1]) for i in inputs]
        )
        for k, (actual, ref, (dtype, _)) in enumerate(
            zip(values, decoded(reference), outcome.infos, strict=True)
        ):
            ok, text, worst = compare(actual, ref, dtype, spec.name, scale, [])
            if worst >= run.worst and text:
                run.worst, run.worst_error = worst, f"output {k}: {text}"
            if not ok:
                run.violations.append(("numerics", f"output {k} vs CPU float64: {text}"))

    def cotangent_of(self, index: int):  # noqa: ANN201
        return self.value(self.entry["input_grads"][index])


def _objective(forward: OpSpec, case: Case, cotangents: list, target) -> float:  # noqa: ANN001
    outcome = run_case(forward, case, target.device, target.backend)
    if outcome.violations:
        raise RuntimeError(outcome.violations[0][1])
    total = 0.0
    for value, cot in zip(decoded(outcome), cotangents, strict=True):
        if cot is not None:
            total += float(np.sum(value * dt.to_values(*cot)))
    return total


def _flat_cotangents(program: _Program) -> list:
    """The cotangent of each call tensor of the forward (None where there is none)."""
    out = []
    for index, value in enumerate(program.inputs):
        grad = program.cotangent_of(index) if value is not None else None
        if isinstance(value, list):
            out.extend(grad if grad is not None else [None] * len(value))
        else:
            out.append(grad)
    return out


def _finite_differences(program: _Program, rng: np.random.Generator) -> list:
    """Compares each float input's cotangent with central differences at a few elements."""
    problems = []
    case = program.case
    grads = _flat_cotangents(program)
    for index, item in enumerate(program.flat_inputs):
        if item is None:
            continue
        array, dtype = item
        grad = grads[index]
        if grad is None or not dt.is_float(dtype) or array.size == 0:
            continue
        got = dt.to_values(*grad).reshape(-1)
        chosen = rng.choice(array.size, size=min(FD_ELEMENTS, array.size), replace=False)
        for flat in chosen:
            h = FD_STEP * max(1.0, abs(float(array.reshape(-1)[flat])))
            estimates = []
            for sign in (1.0, -1.0):
                moved = array.copy()
                moved.reshape(-1)[flat] += sign * h
                inputs = [None if x is None else x[0] for x in program.flat_inputs]
                inputs[index] = moved
                trial = Case(
                    case.op,
                    case.signature,
                    case.index,
                    case.seed,
                    inputs,
                    case.input_dtypes,
                    case.attrs,
                    False,
                    ["compact" if a is not None else None for a in inputs],
                )
                estimates.append(
                    _objective(program.forward, trial, _flat(program.cotangents), program.target)
                )
            want = (estimates[0] - estimates[1]) / (2 * h)
            scale = max(1.0, abs(want))
            if not abs(got[flat] - want) <= FD_RTOL * abs(want) + FD_ATOL * scale:
                problems.append(
                    (
                        "gradient",
                        f"input {index} element {flat}: the gradient gives {got[flat]:.9g}, "
                        f"finite differences of the forward {want:.9g}",
                    )
                )
                return problems
    return problems


def check_gradient(spec: OpSpec, signature: tuple, target, result, rows: BackwardRows) -> None:  # noqa: ANN001
    """The forward row's "gradient" check (PASS, FAIL or NOT_SUPPORTED), and the step runs of
    backward ops recorded in `rows`."""
    entry = spec.schema.get("gradient") or {}
    if not entry.get("differentiable"):
        return
    # Only float inputs take cotangents: a signature whose differentiable inputs are all
    # integers or bools has no gradient to check.
    params = signature[: len(spec.inputs)]
    if not any(
        ref is not None and dt.is_float(params[min(i, len(params) - 1)])
        for i, ref in enumerate(entry["input_grads"])
    ):
        return
    cases = gradient_cases(spec, signature, target.seed, GRADIENT_CASES)
    checked = 0
    for case in cases:
        rng = np.random.default_rng(case.seed)
        program = _Program(spec, entry, case, target, rows)
        if program.run_forward(rng) is None:
            continue
        try:
            problems, numeric = program.run_steps()
        except _Skip as e:
            result.checks["gradient"] = "NOT_SUPPORTED"
            result.gradient_unsupported = str(e)
            return
        # float64: the cotangents against finite differences of the backend's own forward (a
        # wrong step shows there, whichever op it is); narrower floats: the steps against the
        # CPU backend in float64.
        if not problems:
            float64 = all(d == "float64" for d in signature if dt.is_float(d))
            problems = _finite_differences(program, rng) if float64 else numeric
        for check, reason in problems:
            result.fail("gradient", f"{check}: {reason}", case)
        checked += 1
        if problems:
            return
    if checked:
        result.checks.setdefault("gradient", "PASS")
