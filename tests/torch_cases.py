"""The cases of tests/test_torch_ops.py and tests/test_torch_compile.py: one or a few calls of
every ``torch.ops.ctensor`` op on representative inputs (``all_cases``), and the helpers that
flatten their arguments and results.

Inputs come from the conformance suite's generators (conformance/cases.py, op_table.py), made
torch tensors: per op a float32, a float64 and an integer or bool kernel signature where the op
has one, with the suite's layouts (strided, transposed, broadcast: non-contiguous inputs), no
edge values, and no case whose results hold NaN (opcheck compares without equal_nan). A backward
op also takes the inputs its forward's gradient program passes it, recorded while the gradient
runs through the forward (two such cases where the suite has no valid one: its schema-derived
indices fall out of range).
"""

from __future__ import annotations

import functools
import zlib

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import ctensor
import ctensor.autodiff
import ctensor.torch
from ctensor._registry import all_specs, get_spec
from ctensor.conformance import dtypes as dt
from ctensor.conformance.cases import generate, gradient_cases
from ctensor.conformance.op_table import OPS
from ctensor.torch._arguments import torch_kwargs

SEED = 28
#: Dtypes of the signatures tried: half floats and complex numbers are left to other tests.
_PLAIN = frozenset({"float32", "float64", "bool", *dt.INTEGERS})


def cpu_signatures(spec) -> list[tuple[str, ...]]:  # noqa: ANN001
    seen = []
    for kernel in spec.schema["kernels"]:
        signature = tuple(kernel["signature"])
        if kernel["device"] == "cpu" and set(signature) <= _PLAIN and signature not in seen:
            seen.append(signature)
    return seen


def input_dtypes(spec, signature) -> tuple[str, ...]:  # noqa: ANN001
    return signature[: len(spec.inputs)] if spec.inputs else signature


def chosen_signatures(spec) -> list[tuple[str, ...]]:  # noqa: ANN001
    """A float32 and a float64 signature (every float input of that dtype) and one without
    float inputs, those the op has; for an op without inputs, by its outputs."""
    signatures = cpu_signatures(spec)
    chosen = []
    for want in ("float32", "float64"):
        for signature in signatures:
            floats = {d for d in input_dtypes(spec, signature) if dt.is_float(d)}
            if floats == {want}:
                chosen.append(signature)
                break
    integral = [s for s in signatures if not any(dt.is_float(d) for d in input_dtypes(spec, s))]
    if integral:
        preferred = [s for s in integral if "int64" in input_dtypes(spec, s)]
        chosen.append((preferred or integral)[0])
    return chosen or signatures[:1]


def layout_view(tensor: torch.Tensor, layout: str | None) -> torch.Tensor:
    """The same values in a torch view of the suite's layout (torch has no negative strides:
    "reversed" becomes "strided")."""
    if tensor.dim() == 0 or tensor.numel() == 0 or layout in (None, "compact"):
        return tensor
    if layout in ("strided", "reversed"):
        base = torch.zeros(tuple(2 * n + 1 for n in tensor.shape), dtype=tensor.dtype)
        view = base[tuple(slice(1, None, 2) for _ in tensor.shape)]
        view.copy_(tensor)
        return view
    if layout == "transposed" and tensor.dim() >= 2:
        axes = list(reversed(range(tensor.dim())))
        return tensor.permute(axes).contiguous().permute(axes)
    if layout == "broadcast":
        # the suite made the values constant along one axis: a zero stride there
        for axis, extent in enumerate(tensor.shape):
            first = tensor.narrow(axis, 0, 1)
            if extent > 1 and torch.equal(first.expand(tensor.shape), tensor):
                return first.expand(tensor.shape)
    return tensor


def _torch_input(array: np.ndarray, layout: str | None) -> torch.Tensor:
    return layout_view(torch.from_numpy(np.array(array, order="C")), layout)


def call_args(spec, tensors: list) -> tuple:  # noqa: ANN001
    """Flat input tensors as the torch op takes them: the variadic ones one list."""
    if not spec.variadic_input:
        return tuple(tensors)
    fixed = len(spec.inputs) - 1
    return (*tensors[:fixed], list(tensors[fixed:]))


def flat_args(args: tuple) -> list:
    """A torch call's positional arguments flat (the variadic list spread)."""
    flat = []
    for value in args:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


class Case:
    """One call of ``torch.ops.ctensor.<op>``: positional tensors (the variadic list one entry),
    keyword attributes, and where the inputs came from."""

    def __init__(self, op: str, args: tuple, kwargs: dict, origin: str) -> None:
        self.op, self.args, self.kwargs, self.origin = op, args, kwargs, origin

    def __repr__(self) -> str:
        shapes = [
            [tuple(t.shape) for t in a]
            if isinstance(a, list)
            else None
            if a is None
            else (tuple(a.shape), str(a.dtype).removeprefix("torch."), a.is_contiguous())
            for a in self.args
        ]
        return f"{self.op}{shapes} {self.kwargs} ({self.origin})"


def _unusable(case: Case) -> bool:
    """Whether the call gives a NaN (opcheck compares eager and traced outputs and gradients
    without equal_nan, so such a case could not pass it), or refuses the values (the suite's
    schema-derived cases of a backward op the suite has no entry for draw indices out of
    range: such an op takes recorded cases)."""
    try:
        outputs = flat_results(getattr(torch.ops.ctensor, case.op)(*case.args, **case.kwargs))
    except ctensor.CTensorError:
        return True
    return any(o.is_floating_point() and bool(o.isnan().any()) for o in outputs)


def _from_suite(spec, case, signature) -> Case:  # noqa: ANN001
    tensors = [
        None if a is None else _torch_input(a, layout)
        for a, layout in zip(case.inputs, case.layouts, strict=True)
    ]
    return Case(
        spec.name,
        call_args(spec, tensors),
        torch_kwargs(spec, case.attrs),
        f"suite {signature} case {case.index}",
    )


def _non_contiguous(case: Case) -> bool:
    return any(t is not None and not t.is_contiguous() for t in flat_args(case.args))


def _suite_cases(spec) -> list[Case]:  # noqa: ANN001
    """One case per chosen signature from the suite's cases without edge values (infinities and
    NaN in the inputs), then its smooth gradient cases: the first that gives no NaN, for the
    first signature the first with a non-contiguous input if one does."""
    cases = []
    entry = dict(OPS.get(spec.name, {}), edges=False)
    for number, signature in enumerate(chosen_signatures(spec)):
        found = generate(spec, signature, SEED, 6, entry) + gradient_cases(spec, signature, SEED, 3)
        made = [_from_suite(spec, case, signature) for case in found]
        if number == 0:
            made.sort(key=lambda case: not _non_contiguous(case))
        usable = next((case for case in made if not _unusable(case)), None)
        if usable is not None:
            cases.append(usable)
    return cases


class _Recorder(TorchDispatchMode):
    """Records the calls of ``torch.ops.ctensor`` ops (backward steps included)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, list] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        if func.namespace == "ctensor":
            name = func.overloadpacket.__name__
            detached = tuple(
                [t.detach().clone() for t in a]
                if isinstance(a, (list, tuple))
                else a.detach().clone()
                if isinstance(a, torch.Tensor)
                else a
                for a in args
            )
            self.calls.setdefault(name, []).append((detached, dict(kwargs)))
        return func(*args, **kwargs)


def gradient_inputs(spec, signature) -> tuple[tuple, dict] | None:  # noqa: ANN001
    """A smooth float case of a differentiable op (conformance gradient_cases): torch args
    (float inputs with a gradient require grad) and kwargs."""
    found = gradient_cases(spec, signature, SEED, 6)
    if not found:
        return None
    # the smallest of the largest few: big enough to mean something, cheap to differentiate
    case = min(found, key=lambda c: sum(a.size for a in c.inputs if a is not None))
    grads = spec.schema["gradient"]["input_grads"]
    tensors = []
    for k, array in enumerate(case.inputs):
        if array is None:
            tensors.append(None)
            continue
        tensor = torch.from_numpy(np.array(array, order="C"))
        if tensor.is_floating_point() and grads[spec.param_of(k)] is not None:
            tensor.requires_grad_(True)
        tensors.append(tensor)
    return call_args(spec, tensors), torch_kwargs(spec, case.attrs)


def flat_results(result) -> list:  # noqa: ANN001
    """A torch op's (or a ctensor.ops call's) results as one flat list."""
    if isinstance(result, torch.Tensor):
        return [result]
    return flat_args(tuple(result))


@functools.cache
def _recorded_backward_calls() -> dict[str, list]:
    """Calls of every op that the gradient programs of the differentiable ops make (float32 and
    float64 forward cases, random cotangents), by op name."""
    recorder = _Recorder()
    for name in ctensor.autodiff.differentiable_ops():
        spec = get_spec(name)
        for signature in chosen_signatures(spec)[:2]:
            made = gradient_inputs(spec, signature)
            if made is None:
                continue
            args, kwargs = made
            leaves = [t for t in flat_args(args) if t is not None and t.requires_grad]
            if not leaves:
                continue
            outputs = [
                o
                for o in flat_results(getattr(torch.ops.ctensor, name)(*args, **kwargs))
                if o.requires_grad
            ]
            generator = torch.Generator().manual_seed(zlib.crc32(name.encode()))
            cotangents = [torch.randn(o.shape, dtype=o.dtype, generator=generator) for o in outputs]
            with recorder:
                torch.autograd.grad(outputs, leaves, cotangents, allow_unused=True)
    return recorder.calls


def _recorded_cases(name: str, count: int) -> list[Case]:
    """Up to ``count`` calls of op ``name`` made by gradient programs, of different dtypes,
    without NaN; the first with its inputs in strided views (the same values)."""
    calls = _recorded_backward_calls().get(name, [])
    picked, dtypes = [], set()
    for args, kwargs in calls:
        dtype = next(t.dtype for t in flat_args(args) if t is not None)
        if not picked:
            args = tuple(
                [layout_view(t, "strided") for t in a]
                if isinstance(a, list)
                else None
                if a is None
                else layout_view(a, "strided")
                for a in args
            )
        case = Case(name, args, kwargs, "recorded from a gradient program")
        if dtype not in dtypes and not _unusable(case):
            dtypes.add(dtype)
            picked.append(case)
    return picked[:count]


@functools.cache
def all_cases() -> dict[str, list[Case]]:
    cases = {}
    backward_ops = {
        step["op"]
        for spec in all_specs().values()
        for step in spec.schema["gradient"].get("steps", ())
    }
    for name in ctensor.list_ops():
        spec = get_spec(name)
        found = _suite_cases(spec)
        if name in backward_ops:
            found += _recorded_cases(name, 1 if found else 2)
        cases[name] = found
    return cases
