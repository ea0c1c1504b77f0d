"""Vector-Jacobian products from the registry's gradient entries.

Each operator's entry (``ctensor.op_info(name)["gradient"]``, ``ct_op_gradient`` in C) is a small
program of registered operators. :func:`vjp` runs it: every value it computes comes from a
ctensor operator, on whatever arrays the caller passed (NumPy, torch, ...), so the same entry
gives the gradient on every device that has the operators it names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._call import call
from ._registry import OpSpec, get_spec

__all__ = [
    "NotDifferentiableError",
    "Program",
    "differentiable_ops",
    "gradient_entry",
    "run_op",
    "vjp",
]


class NotDifferentiableError(ValueError):
    """Raised by :func:`vjp` for an operator whose entry has no gradient."""


def gradient_entry(name: str) -> dict:
    """The gradient entry of operator ``name``, as the registry's JSON gives it."""
    entry = get_spec(name).schema["gradient"]
    if "error" in entry:
        raise RuntimeError(f"{name}: its gradient row is broken: {entry['error']}")
    return entry


def differentiable_ops() -> list[str]:
    """Names of the operators whose entries give some input a cotangent, sorted."""
    from ._registry import all_specs

    return sorted(
        name for name, spec in all_specs().items() if spec.schema["gradient"].get("differentiable")
    )


def _as_list(value: Any, count: int, what: str, name: str) -> list:
    if count == 1 and not isinstance(value, (list, tuple)):
        return [value]
    if not isinstance(value, (list, tuple)) or len(value) != count:
        raise ValueError(f"{name}: expected {count} {what}, got {value!r:.80}")
    return list(value)


def run_op(spec: OpSpec, inputs: list, attrs: dict) -> list:
    """Runs ``spec`` through ctensor's own call path: ``inputs`` has one entry per input
    parameter (the variadic one as a list); returns one entry per output parameter."""
    args = list(inputs)
    if spec.variadic_input and args and isinstance(args[-1], (list, tuple)):
        args = [*args[:-1], *args[-1]]
    return _output_list(spec, call(spec, args, None, dict(attrs)))


class Program:
    """One run of a gradient entry: the forward call's values and the steps computed so far.

    ``runner(spec, inputs, attrs)`` runs one operator (inputs one per parameter, the variadic one
    as a list) and returns its outputs one per parameter: :func:`run_op` by default;
    ``ctensor.torch`` passes one that calls ``torch.ops.ctensor`` so that the steps are recorded
    by torch's autograd and compilers. ``outputs``: the forward's outputs when the caller has
    them already (otherwise the forward runs again when a step reads one)."""

    def __init__(
        self,
        spec: OpSpec,
        entry: dict,
        inputs: list,
        cotangents: list,
        attrs: dict,
        runner: Any = run_op,
        outputs: list | None = None,
    ):
        self.spec = spec
        self.runner = runner
        self.entry = entry
        self.inputs = inputs
        self.cotangents = cotangents
        self.attrs = attrs
        self.outputs = outputs
        self.steps: dict[int, list] = {}

    def forward_attr(self, name: str) -> Any:
        if name in self.attrs:
            return self.attrs[name]
        for attr in self.spec.attrs:
            if attr["name"] == name:
                return attr["default"]
        raise KeyError(name)  # pragma: no cover - the C parser checked the name

    def forward_outputs(self) -> list:
        if self.outputs is None:
            self.outputs = self.runner(self.spec, self.inputs, self.attrs)
        return self.outputs

    def value(self, ref: dict | None) -> Any:
        if ref is None:
            return None
        if "input" in ref:
            return self.inputs[ref["input"]]
        if "cotangent" in ref:
            return self.cotangents[ref["cotangent"]]
        if "step" in ref:
            return self.step(ref["step"])[ref["output"]]
        return self.forward_outputs()[ref["output"]]

    def step(self, index: int) -> list:
        done = self.steps.get(index)
        if done is not None:
            return done
        step = self.entry["steps"][index]
        spec = get_spec(step["op"])
        args = [self.value(ref) for ref in step["inputs"]]
        attrs = {}
        for attr in step["attrs"]:
            if "forward" in attr:
                attrs[attr["name"]] = self.forward_attr(attr["forward"])
            elif "dtype_of" in attr:
                attrs[attr["name"]] = _dtype_name(self.inputs[attr["dtype_of"]])
            else:
                attrs[attr["name"]] = attr["value"]
        outputs = self.runner(spec, args, attrs)
        self.steps[index] = outputs
        return outputs


def _output_list(spec: OpSpec, result: Any) -> list:
    """One entry per output parameter (the variadic one as a list) of a call's result."""
    flat = list(result) if isinstance(result, (tuple, list)) else [result]
    if spec.variadic_output:
        fixed = len(spec.outputs) - 1
        return [*flat[:fixed], flat[fixed:]]
    return flat


def _dtype_name(array: Any) -> str:
    dtype = getattr(array, "dtype", None)
    if isinstance(dtype, type):  # MXNet NDArrays give NumPy's scalar type (numpy.float32)
        return dtype.__name__
    text = str(dtype)
    return text.removeprefix("torch.")


def vjp(name: str, inputs: Sequence, cotangents: Any, **attrs: Any) -> list:
    """The vector-Jacobian product of operator ``name`` at ``inputs``.

    ``inputs``: one entry per input parameter of the op (None for an absent optional input; the
    variadic parameter as a list). ``cotangents``: one array per output (a single array for a
    one-output op), shaped as that output; None for an output that takes no cotangent. The
    keyword arguments are the forward call's attributes.

    Returns one cotangent per input, shaped as that input (a list for a variadic input), or None
    where the input is absent or not differentiable. Every value is computed by the registered
    operators the gradient entry names, on the arrays' own framework and device. Raises
    :class:`NotDifferentiableError` for an op with no gradient.
    """
    spec = get_spec(name)
    entry = gradient_entry(name)
    if not entry["differentiable"]:
        raise NotDifferentiableError(f"{name} is not differentiable: {entry['note']}")
    inputs = _as_list(inputs, len(spec.inputs), "inputs", name)
    cotangents = _as_list(cotangents, len(spec.outputs), "cotangents", name)
    for index, needed in enumerate(entry["output_takes_cotangent"]):
        if needed and cotangents[index] is None:
            output = spec.outputs[index]["name"]
            raise ValueError(f"{name}: the gradient reads the cotangent of output {output!r}")
    for cotangent in cotangents:
        kind = str(getattr(cotangent, "dtype", "float"))
        if any(word in kind for word in ("int", "bool")):
            raise NotDifferentiableError(
                f"{name}: a cotangent of dtype {kind}: integer and bool results have no derivative"
            )
    program = Program(spec, entry, inputs, cotangents, attrs)
    grads: list = []
    for index, ref in enumerate(entry["input_grads"]):
        absent = inputs[index] is None
        grads.append(None if ref is None or absent else program.value(ref))
    return grads
