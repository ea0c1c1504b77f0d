"""Each ctensor operator as an MXNet custom operator (``mx.operator.CustomOpProp``/``CustomOp``).

``register(spec)`` registers ``ctensor_<name>`` with MXNet; ``mx.nd.Custom`` then runs it in
MXNet's engine (on MXNet's custom-operator worker thread, ordered against every other op on the
same arrays) and records it under ``mx.autograd.record()``. A call passes two string keyword
arguments, as MXNet requires of custom operators:

- ``ctensor_attrs``: the attributes as JSON (``attrs_text``);
- ``ctensor_layout``: how the flat NDArray inputs map to the op's input parameters, one count
  per parameter (0: an absent optional input, the variadic one its length), and after ``|`` the
  number of outputs (``layout_text``).

Shapes and dtypes come from ``ct_op_infer`` (``_infer.plan``). The forward runs the op through
ctensor's call path with ``out=`` the memory of MXNet's output arrays where ``req`` is
``write`` (no copy); ``add`` accumulates a scratch result into the output, ``null`` computes
into scratch. The backward runs the op's gradient entry (``ctensor.autodiff.Program``), each
step a ctensor call on the NDArrays' memory; a single-output step whose value is an input's
gradient writes straight into MXNet's gradient array. Every input and output stays alive until
the backward (MXNet's default ``declare_backward_dependency``): MXNet's Python bridge for
custom operators fails on an array it released (storage type -1), so the entry's narrower
list of saved arrays cannot be declared.

A Python exception raised inside the engine cannot carry its message through MXNet: MXNet
prints it and reports a failed check at the next synchronisation (``MXNetError``). The
exception itself is kept: ``ctensor.mxnet.last_error()`` returns it.
"""

from __future__ import annotations

import copy
import json
import threading
from typing import Any

import mxnet as mx
import numpy as np

from .._call import call
from .._errors import CTensorError
from .._registry import OpSpec, get_spec
from ..autodiff import NotDifferentiableError, Program
from ._infer import Plan, plan, representative_dtypes

__all__ = ["attrs_text", "last_error", "layout_text", "op_type", "register", "remember_shapes"]

_WRITE = ("write", "inplace")
_FLOAT_KINDS = ("f", "c")

_last_error: list[BaseException | None] = [None]
_error_lock = threading.Lock()


def last_error() -> BaseException | None:
    """The last exception a ctensor.mxnet operator raised inside MXNet's engine (None: none)."""
    return _last_error[0]


def _remember(error: BaseException) -> None:
    """Keeps a copy of ``error`` without its traceback: the traceback's frames hold NDArrays
    and DLPack capsules, which must not outlive MXNet (their destructors run MXNet's code)."""
    kept = copy.copy(error)
    kept.__traceback__ = None
    kept.__context__ = kept.__cause__ = None
    with _error_lock:
        _last_error[0] = kept


def op_type(spec: OpSpec) -> str:
    """The name ``spec`` is registered under with MXNet."""
    return f"ctensor_{spec.name}"


def attrs_text(attrs: dict) -> str:
    """The canonical JSON text of a call's attributes (sorted keys)."""
    return json.dumps(attrs, sort_keys=True, separators=(",", ":")) if attrs else "{}"


def layout_text(counts: tuple, num_outputs: int) -> str:
    return ",".join(map(str, counts)) + "|" + str(num_outputs)


# Parsed keyword arguments of the props (a prop is made for every call): text -> value.
_PARSED_ATTRS: dict[str, dict] = {}
_PARSED_LAYOUTS: dict[str, tuple[tuple[int, ...], int]] = {}
# Output shapes by (op, attributes, layout, input shapes), as the caller's plan found them with
# the real dtypes (MXNet's infer_shape comes without dtypes).
_SHAPES: dict[tuple, tuple] = {}


def remember_shapes(spec: OpSpec, attrs_key: str, layout: str, shapes: tuple, result: Plan) -> None:
    if len(_SHAPES) > 4096:
        _SHAPES.clear()
    _SHAPES[(spec.name, attrs_key, layout, shapes)] = result.output_shapes


def _parse_attrs(text: str) -> dict:
    found = _PARSED_ATTRS.get(text)
    if found is None:
        found = _PARSED_ATTRS[text] = json.loads(text)
    return found


def _parse_layout(text: str) -> tuple[tuple[int, ...], int]:
    found = _PARSED_LAYOUTS.get(text)
    if found is None:
        head, _, tail = text.partition("|")
        counts = tuple(int(c) for c in head.split(",")) if head else ()
        found = _PARSED_LAYOUTS[text] = (counts, int(tail))
    return found


def _dtype_name(dtype: Any) -> str:
    return np.dtype(dtype).name


class _Entry:
    """What the props and operators of one op share: the gradient entry, read once."""

    def __init__(self, spec: OpSpec):
        self.spec = spec
        entry = spec.schema["gradient"]
        self.entry = entry
        self.differentiable = bool(entry.get("differentiable"))
        num_inputs = len(spec.inputs)
        self.takes_cotangent = list(
            entry.get("output_takes_cotangent") or [True] * len(spec.outputs)
        )
        self.input_grads = list(entry.get("input_grads") or [None] * num_inputs)
        # (step, output) -> the input parameters whose gradient it is (the step may write into
        # MXNet's gradient array directly when it has one output).
        self.final_steps: dict[tuple[int, int], list[int]] = {}
        steps = entry.get("steps", ())
        for index, ref in enumerate(self.input_grads):
            if ref is not None and "step" in ref and index < spec.num_fixed_inputs:
                step_spec = get_spec(steps[ref["step"]]["op"])
                if step_spec.single_output:
                    self.final_steps.setdefault((ref["step"], ref["output"]), []).append(index)


def _per_parameter(spec: OpSpec, values: list, counts: tuple) -> list:
    """Flat arrays (one per present input) as one entry per input parameter: None for an
    absent one, the array, or a list for the variadic parameter."""
    result: list = []
    at = 0
    variadic_at = len(spec.inputs) - 1 if spec.variadic_input else -1
    for index, count in enumerate(counts):
        if index == variadic_at:
            result.append(list(values[at : at + count]))
        elif count:
            result.append(values[at])
        else:
            result.append(None)
        at += count
    return result


def _flat_indices(counts: tuple) -> list[range]:
    """Per parameter, the indices of its arrays in the flat list."""
    ranges = []
    at = 0
    for count in counts:
        ranges.append(range(at, at + count))
        at += count
    return ranges


def _flat_args(spec: OpSpec, per_parameter: list) -> list:
    """ctensor's call arguments: inputs flat, the variadic list spread at the end."""
    if spec.variadic_input:
        return [*per_parameter[:-1], *per_parameter[-1]]
    return list(per_parameter)


def _run(spec: OpSpec, args: list, out: Any, attrs: dict) -> list:
    """Runs ``spec`` (args: one per input tensor, flat) and returns its results flat."""
    result = call(spec, args, out, dict(attrs))
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _store(target: Any, req: str, value: Any) -> None:
    """Writes (``req`` write/inplace) or adds (``add``) ``value`` (an NDArray or NumPy array)
    into the NDArray ``target``, cast to its dtype."""
    if req == "null":
        return
    dtype = _dtype_name(target.dtype)
    if req == "add":
        if _dtype_name(value.dtype) != dtype:
            value = call(get_spec("astype"), [value], None, {"dtype": dtype})
        call(get_spec("add"), [target, value], target, {})
    else:
        call(get_spec("astype"), [value], target, {"dtype": dtype})


def _zero(target: Any, req: str) -> None:
    if req in _WRITE:
        target[:] = 0


class _Operator(mx.operator.CustomOp):
    """One call of an op: the forward and the backward on MXNet's arrays."""

    def __init__(self, entry: _Entry, attrs: dict, counts: tuple):
        super().__init__()
        self.entry = entry
        self.attrs = attrs
        self.counts = counts

    def forward(self, is_train: bool, req: list, in_data: list, out_data: list, aux: list) -> None:
        try:
            self._forward(req, in_data, out_data)
        except BaseException as error:
            _remember(error)
            raise

    def backward(
        self, req: list, out_grad: list, in_data: list, out_data: list, in_grad: list, aux: list
    ) -> None:
        try:
            self._backward(req, out_grad, in_data, out_data, in_grad)
        except BaseException as error:
            _remember(error)
            raise

    def _forward(self, req: list, in_data: list, out_data: list) -> None:
        spec = self.entry.spec
        args = _flat_args(spec, _per_parameter(spec, list(in_data), self.counts))
        outs = []
        later = []
        for array, kind in zip(out_data, req, strict=True):
            if kind not in _WRITE:  # add or null: computed into scratch, then stored
                scratch = mx.nd.empty(array.shape, dtype=array.dtype)
                later.append((array, kind, scratch))
                array = scratch
            outs.append(array)
        _run(spec, args, outs[0] if spec.single_output else tuple(outs), self.attrs)
        for array, kind, scratch in later:
            _store(array, kind, scratch)

    def _backward(
        self, req: list, out_grad: list, in_data: list, out_data: list, in_grad: list
    ) -> None:
        if all(kind == "null" for kind in req):
            return
        entry = self.entry
        spec = entry.spec
        if not entry.differentiable:
            floating = [a for a in out_data if np.dtype(a.dtype).kind in _FLOAT_KINDS]
            if floating or not out_data:
                raise NotDifferentiableError(
                    f"ctensor.mxnet.{spec.name} is not differentiable: {entry.entry.get('note')}"
                )
            for array, kind in zip(in_grad, req, strict=True):
                _zero(array, kind)
            return
        counts = self.counts
        # Arrays the entry does not save come as empty placeholders; the program never reads them.
        inputs = _per_parameter(spec, list(in_data), counts)
        outputs = _output_values(spec, list(out_data))
        cotangents = _output_values(spec, list(out_grad))
        for index, takes in enumerate(entry.takes_cotangent):
            if not takes:
                cotangents[index] = None
        ranges = _flat_indices(counts)
        targets: dict[tuple[int, int], Any] = {}
        for key, params in entry.final_steps.items():
            for param in params:
                flat = ranges[param]
                if len(flat) == 1 and req[flat[0]] in _WRITE:
                    targets[key] = in_grad[flat[0]]
                    break
        program = _Backward(spec, entry.entry, inputs, cotangents, self.attrs, outputs, targets)
        for param, ref in enumerate(entry.input_grads):
            flat = ranges[param]
            wanted = [k for k in flat if req[k] != "null"]
            if not wanted:
                continue
            if ref is None:
                for k in wanted:
                    _zero(in_grad[k], req[k])
                continue
            value = program.value(ref)
            values = value if isinstance(value, list) else [value]
            for k, item in zip(flat, values, strict=True):
                if req[k] == "null" or item is in_grad[k]:
                    continue
                _store(in_grad[k], req[k], item)


def _output_values(spec: OpSpec, arrays: list) -> list:
    """Flat output arrays as one entry per output parameter (the variadic one a list)."""
    if spec.variadic_output:
        fixed = len(spec.outputs) - 1
        return [*arrays[:fixed], arrays[fixed:]]
    return arrays


class _Backward(Program):
    """A gradient entry's program whose steps are ctensor calls on NDArrays and NumPy arrays;
    ``targets``: per (step, output), the gradient NDArray that step writes directly."""

    def __init__(self, spec, entry, inputs, cotangents, attrs, outputs, targets):  # noqa: ANN001
        super().__init__(spec, entry, inputs, cotangents, attrs, self._run_step, outputs)
        self.targets = targets
        self.current = -1

    def step(self, index: int) -> list:
        self.current = index
        return super().step(index)

    def _run_step(self, spec: OpSpec, inputs: list, attrs: dict) -> list:
        args = _flat_args(spec, inputs) if spec.variadic_input else list(inputs)
        target = self.targets.get((self.current, 0)) if spec.single_output else None
        if target is not None:
            try:
                _run(spec, args, target, attrs)
            except CTensorError:
                pass  # its shape or dtype is not the gradient's: computed, then copied
            else:
                return [target]
        results = _run(spec, args, None, attrs)
        if spec.variadic_output:
            fixed = len(spec.outputs) - 1
            return [*results[:fixed], results[fixed:]]
        return results


def register(spec: OpSpec) -> None:
    """Registers ``spec`` as the MXNet custom operator ``ctensor_<name>``."""
    entry = _Entry(spec)
    names = [inp["name"] for inp in spec.inputs]
    output_names = [out["name"] for out in spec.outputs]
    variadic_at = len(spec.inputs) - 1 if spec.variadic_input else -1

    class Prop(mx.operator.CustomOpProp):
        def __init__(self, ctensor_attrs: str = "{}", ctensor_layout: str = "") -> None:
            super().__init__(need_top_grad=True)
            self.attrs_key = ctensor_attrs
            self.layout = ctensor_layout
            self.attrs = _parse_attrs(ctensor_attrs)
            self.counts, self.num_outputs = _parse_layout(ctensor_layout)
            self.shapes: tuple | None = None

        def list_arguments(self) -> list[str]:
            arguments = []
            for index, count in enumerate(self.counts):
                if index == variadic_at:
                    arguments += [f"{names[index]}{k}" for k in range(count)]
                elif count:
                    arguments.append(names[index])
            return arguments

        def list_outputs(self) -> list[str]:
            if self.num_outputs == len(output_names):
                return list(output_names)
            fixed = output_names[:-1]
            return fixed + [f"{output_names[-1]}{k}" for k in range(self.num_outputs - len(fixed))]

        def _dtypes_present(self) -> tuple:
            present = []
            for index, count in enumerate(self.counts):
                present += [True] * count if index == variadic_at else [bool(count)]
            return tuple(present)

        def _full(self, per_array: list) -> tuple:
            """Per input tensor, as ctensor counts them (None for absent inputs)."""
            values = iter(per_array)
            return tuple(next(values) if present else None for present in self._dtypes_present())

        def infer_shape(self, in_shape: list) -> tuple:
            shapes = self._full([tuple(s) for s in in_shape])
            self.shapes = shapes
            found = _SHAPES.get((spec.name, self.attrs_key, self.layout, shapes))
            if found is None:  # not called through ctensor.mxnet (a symbol): without dtypes
                dtypes = representative_dtypes(spec, self._dtypes_present())
                found = plan(spec, self.attrs_key, self.attrs, shapes, dtypes).output_shapes
            return in_shape, [list(s) for s in found], []

        def infer_type(self, in_type: list) -> tuple:
            dtypes = self._full([_dtype_name(t) for t in in_type])
            shapes = self.shapes
            if shapes is None:
                raise RuntimeError(f"ctensor_{spec.name}: dtypes asked before shapes")
            result = plan(spec, self.attrs_key, self.attrs, shapes, dtypes)
            return in_type, [np.dtype(d).type for d in result.output_dtypes], []

        def create_operator(self, ctx: Any, in_shapes: list, in_dtypes: list) -> _Operator:
            return _Operator(entry, self.attrs, self.counts)

    Prop.__name__ = Prop.__qualname__ = f"{spec.name}_prop"
    mx.operator.register(op_type(spec))(Prop)
