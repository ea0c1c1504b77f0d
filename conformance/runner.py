"""The runner: for every op and every dtype signature the backend under test registers, run its
cases, compare with the reference and collect the ABI checks into one result per op x dtype."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

import numpy as np

from ctensor._registry import OpSpec

from . import abi_checks, references
from .calls import decoded, run_case, run_inplace
from .cases import Case, generate, large_cases
from .device import HostDevice
from .gradients import check_gradient
from .op_table import OPS
from .tolerances import compare, input_scale, summation_bounds, tolerance_class

__all__ = [
    "Target",
    "Result",
    "run_signature",
    "backward_result",
    "signature_labels",
    "reference_source",
]

PASS, FAIL, NOT_SUPPORTED, SKIP, XFAIL = "PASS", "FAIL", "NOT_SUPPORTED", "SKIP", "XFAIL"

#: The checks of every op x dtype, in report order ("allocator": dynamic ops only).
CHECKS = (
    "abi_layout",
    "abi_version",
    "infer",
    "run",
    "numerics",
    "inputs_unchanged",
    "output_bounds",
    "workspace_bounds",
    "error_status",
    "threads",
    "inplace",
    "allocator",
    "allocator_failure",
    "error_message",
    "gradient",
)


@dataclass
class Target:
    """What is under test: a backend name (its kernels only run, through ct_context.backend) on a
    device adapter."""

    backend: str
    device: object
    seed: int = 0
    cases: int = 8
    threads: int = 4
    case_seed: int | None = None  # run only the case with this seed
    # (backward op, signature) -> its runs made by gradient checks (gradients.StepRun)
    backward_runs: dict = field(default_factory=dict)


@dataclass
class Result:
    """One op x dtype row: its status, the first failure (check, reason, case and its seed), the
    worst numeric error seen, the reference used and every check's PASS/FAIL."""

    op: str
    dtype: str
    signature: tuple
    status: str = PASS
    cases: int = 0
    check: str = ""
    reason: str = ""
    seed: int | None = None
    case: str = ""
    worst_error: str = ""
    worst: float = 0.0  # in ulp (floats) or as |difference| (integers)
    reference: str = ""
    checks: dict = field(default_factory=dict)
    gradient_unsupported: str = ""  # why the gradient check could not run on this backend

    def fail(self, check: str, reason: str, case: Case | None = None) -> None:
        self.checks[check] = "FAIL"
        if self.status == FAIL:
            return
        self.status, self.check, self.reason = FAIL, check, reason
        if case is not None:
            self.seed, self.case = case.seed, case.describe()


def signature_labels(spec: OpSpec) -> dict[tuple, str]:
    """A short label per kernel signature of the op (over every backend and device): the dtypes
    at the positions where the op's signatures differ, without repeats ('float32'; 'float32,int8'
    for astype; 'float32,int64' for take)."""
    sigs = sorted({tuple(k["signature"]) for k in spec.schema.get("kernels", ())})
    if not sigs:
        return {}
    varying = [i for i in range(len(sigs[0])) if len({s[i] for s in sigs}) > 1] or [0]
    labels = {}
    for s in sigs:
        parts: list[str] = []
        for i in varying:
            if s[i] not in parts:
                parts.append(s[i])
        labels[s] = ",".join(parts)
    return labels


def reference_source(op: str, backend: str) -> str:
    """'numpy' where references.NUMPY has the op (every registered op has one); otherwise the
    built-in CPU backend ('cpu'), except for the CPU backend itself, which is compared with
    PyTorch ('torch')."""
    if op in references.NUMPY:
        return "numpy"
    return "torch" if backend == "cpu" else "cpu"


#: Whether torch imported, once per process (None: not tried yet).
_TORCH: list = []


def _torch_available() -> bool:
    if not _TORCH:
        try:
            import torch  # noqa: F401
        except ImportError:
            _TORCH.append(False)
        else:
            _TORCH.append(True)
    return _TORCH[0]


def _second_opinion(spec: OpSpec, case: Case, outcome, result) -> None:  # noqa: ANN001
    """Where torch is installed, the ops references.TORCH has are compared with torch's float64
    result too: a kernel must meet both references (a disagreement names torch)."""
    if result.reference != "numpy" or spec.name not in references.TORCH:
        return
    if not _torch_available():
        return
    expected = _reference(spec, case, "torch", outcome.infos)
    attrs = {a["name"]: a["default"] for a in spec.attrs} | case.attrs
    bounds = summation_bounds(spec.name, case.values(), attrs, [d for d, _ in outcome.infos])
    scale = 0.0
    if tolerance_class(spec.name) == "accumulating":
        scale = input_scale(spec.name, case.values())
    for i, (actual, (dtype, _)) in enumerate(zip(decoded(outcome), outcome.infos, strict=False)):
        if actual is None or actual.shape != expected[i].shape:
            continue
        ok, text, _ = compare(actual, expected[i], dtype, spec.name, scale, [], bounds[i])
        if not ok:
            result.fail("numerics", f"output {i} against torch (second opinion): {text}", case)


def _reference(spec: OpSpec, case: Case, source: str, infos: list) -> list:
    out_dtypes = [d for d, _ in infos]
    if source == "cpu":
        outcome = run_case(spec, case, HostDevice(), "cpu")
        if outcome.violations:
            raise RuntimeError(f"the CPU reference failed: {outcome.violations[0][1]}")
        return decoded(outcome)
    attrs = {a["name"]: a["default"] for a in spec.attrs}
    attrs.update(case.attrs)
    values = case.values()
    table = references.NUMPY if source == "numpy" else references.TORCH
    with np.errstate(all="ignore"):
        return [np.asarray(r) for r in table[spec.name](values, attrs, out_dtypes)]


def _complex_alternatives(spec: OpSpec, case: Case, source: str, infos: list) -> list:
    """Per output, the other references a complex result of an element-wise op may meet
    instead of the float64 one (tolerances.compare's `alternatives`): NumPy's own result in
    complex64 for complex64 outputs, since complex64 parts overflow and underflow in
    intermediate steps (a product, Smith's quotient, the modulus of sign) where complex128 does
    not; and the fused product of complex multiply and square (references.FUSED)."""
    out_dtypes = [d for d, _ in infos]
    alternatives: list = [[] for _ in out_dtypes]
    if (
        source != "numpy"
        or not any(d.startswith("complex") for d in out_dtypes)
        or (tolerance_class(spec.name) == "accumulating")
    ):
        return alternatives
    attrs = {a["name"]: a["default"] for a in spec.attrs}
    attrs.update(case.attrs)
    values = case.values()
    as64 = [v.astype(np.complex64) if v is not None and v.dtype.kind == "c" else v for v in values]
    tables = [(references.NUMPY, as64)] if "complex64" in out_dtypes else []
    if spec.name in references.FUSED:
        tables.append((references.FUSED, values))
    for table, ins in tables:
        with np.errstate(all="ignore"):
            refs = table[spec.name](ins, attrs, out_dtypes)
        for i, (r, d) in enumerate(zip(refs, out_dtypes, strict=False)):
            if d.startswith("complex"):
                alternatives[i].append(np.asarray(r))
    return alternatives


def _check_numerics(spec, case, outcome, expected, result) -> None:  # noqa: ANN001
    alternatives = _complex_alternatives(spec, case, result.reference, outcome.infos)
    attrs = {a["name"]: a["default"] for a in spec.attrs} | case.attrs
    bounds = summation_bounds(spec.name, case.values(), attrs, [d for d, _ in outcome.infos])
    scale = 0.0
    if tolerance_class(spec.name) == "accumulating":
        scale = input_scale(spec.name, case.values())
    actuals = decoded(outcome)
    for i, (actual, (dtype, shape)) in enumerate(zip(actuals, outcome.infos, strict=False)):
        ref = expected[i]
        if tuple(ref.shape) != tuple(s for s in shape if s >= 0) and not spec.is_dynamic:
            result.fail(
                "infer",
                f"infer gave output {i} shape {shape}, the reference has {tuple(ref.shape)}",
                case,
            )
            continue
        if actual is None:
            continue
        ok, text, worst = compare(actual, ref, dtype, spec.name, scale, alternatives[i], bounds[i])
        if worst >= result.worst and text:
            result.worst, result.worst_error = worst, f"output {i}: {text}"
        if not ok:
            result.fail("numerics", f"output {i}: {text}", case)


def _check_inplace(spec: OpSpec, cases: list, target: Target, result: Result) -> None:
    """Ops flagged in-place run once more with the output sharing an input, on every case
    where one can (same shape and dtype, no zero strides); the result must be the same."""
    if "inplace" not in spec.flags:
        return
    result.checks.setdefault("inplace", PASS)
    for case in cases:
        outcome = run_inplace(spec, case, target.device, target.backend)
        if outcome is None:
            continue
        for check, reason in outcome.violations:
            result.fail(check, reason, case)
        if outcome.violations:
            return
        expected = _reference(spec, case, result.reference, outcome.infos)
        alternatives = _complex_alternatives(spec, case, result.reference, outcome.infos)
        dtype = outcome.infos[0][0]
        ok, text, _ = compare(
            decoded(outcome)[0],
            expected[0],
            dtype,
            spec.name,
            input_scale(spec.name, case.values()),
            alternatives[0],
        )
        if not ok:
            result.fail("inplace", f"in place: {text}", case)
            return


def _probe_rank(case: Case) -> tuple[bool, int]:
    """Bad-input and thread checks use the largest case whose inputs are all non-empty."""
    sizes = [a.size for a in case.inputs if a is not None]
    return (all(sizes), sum(sizes))


def run_signature(spec: OpSpec, signature: tuple, label: str, target: Target) -> Result:
    """All checks of one op x dtype signature on the backend under test."""
    result = Result(spec.name, label, signature)
    result.reference = reference_source(spec.name, target.backend)
    unchecked = ""
    cases = generate(spec, signature, target.seed, target.cases)
    small = len(cases)
    cases += large_cases(spec, signature, target.seed, small)
    if target.case_seed is not None:
        cases = [c for c in cases if c.seed == target.case_seed]
        if not cases:
            result.status = SKIP  # that case belongs to another op x dtype
            return result
    if not cases:
        result.fail(
            "cases", "no attribute set or shape passed ct_op_infer; add one to op_table.OPS"
        )
        return result
    big = max(cases, key=_probe_rank)
    big_outcome = None
    for case in cases:
        result.cases += 1
        outcome = run_case(spec, case, target.device, target.backend)
        if case is big:
            big_outcome = outcome
        for check, reason in outcome.violations:
            result.fail(check, reason, case)
        if outcome.execution is None or outcome.execution.status != 0:
            continue
        try:
            expected = _reference(spec, case, result.reference, outcome.infos)
        except ModuleNotFoundError as e:  # PyTorch absent: these numerics cannot be checked
            result.checks["numerics"] = SKIP
            unchecked = f"numerics unchecked: {e.name} (the reference) is not installed"
            continue
        except Exception as e:  # noqa: BLE001 - a reference that cannot run is reported
            result.fail("reference", f"{type(e).__name__}: {e}", case)
            continue
        _check_numerics(spec, case, outcome, expected, result)
        _second_opinion(spec, case, outcome, result)
    # Bad inputs on the largest small case; threads on the largest case (a large one where
    # there is one), so that calls overlap for long.
    probe = max(cases[:small] or cases, key=_probe_rank)
    for check, reason in abi_checks.bad_input_checks(spec, probe, target):
        result.fail(check, reason, probe)
    for check, reason in abi_checks.allocator_failure_checks(spec, probe, target):
        result.fail(check, reason, probe)
    for check, reason in abi_checks.thread_check(spec, big, target, big_outcome):
        result.fail(check, reason, big)
    _check_inplace(spec, cases[:small], target, result)
    if target.case_seed is None:
        check_gradient(spec, signature, target, result, target.backward_runs)
    for check in CHECKS:
        if (
            check in ("allocator", "allocator_failure")
            and not spec.is_dynamic
            or check in ("inplace", "gradient")
        ):
            continue
        result.checks.setdefault(check, PASS)
    if unchecked and result.status == PASS:
        result.status, result.check, result.reason = SKIP, "reference", unchecked
    return result


def _backward_runs(spec: OpSpec, signature: tuple, target: Target) -> list:
    """The runs of this backward kernel that gradient checks of forward ops made."""
    return [
        run
        for (op, key), step_runs in target.backward_runs.items()
        if op == spec.name
        and len(key) == len(signature)
        and all(k is None or k == s for k, s in zip(key, signature, strict=True))
        for run in step_runs
    ]


def backward_result(spec: OpSpec, signature: tuple, label: str, target: Target) -> Result:
    """The row of a backward operator. Its cases come from its forwards: the runs of its kernel
    that gradient checks made (each compared with the CPU backend in float64), plus, where
    op_table lists the op, the usual cases and checks of any op. SKIP when neither reached it."""
    runs = _backward_runs(spec, signature, target)
    if spec.name in OPS:
        result = run_signature(spec, signature, label, target)
    else:
        result = Result(spec.name, label, signature, reference="cpu float64 (gradient steps)")
        if not runs:
            result.status, result.check = SKIP, "gradient"
            result.reason = "no gradient check of a forward op on this backend reached this kernel"
            return result
    for run in runs:
        result.cases += 1
        if run.worst >= result.worst and run.worst_error:
            result.worst, result.worst_error = run.worst, run.worst_error
        for check, reason in run.violations:
            result.fail(check, f"in a gradient: {reason}", run.case)
    for check in ("infer", "run", "numerics", "inputs_unchanged", "output_bounds"):
        result.checks.setdefault(check, PASS)
    return result


def matches(patterns: list[str], op: str, label: str) -> bool:
    """Whether `op:label` matches one of the `op[:dtype]` patterns (shell wildcards)."""
    for pattern in patterns:
        name, _, dtype = pattern.partition(":")
        if fnmatch.fnmatchcase(op, name) and (not dtype or fnmatch.fnmatchcase(label, dtype)):
            return True
    return False


def read_patterns(path: str | None) -> list[str]:
    """One `op[:dtype]` pattern per line; `#` starts a comment."""
    if not path:
        return []
    with open(path, encoding="utf-8") as f:
        return [line.split("#", 1)[0].strip() for line in f if line.split("#", 1)[0].strip()]
