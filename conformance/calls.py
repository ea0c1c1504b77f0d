"""One case, start to end, on a device: place the inputs, ask infer for the outputs, place them
(compact or strided), run, read everything back and check the bytes around what the kernel may
write. Used for the backend under test and for the built-in CPU backend as a reference."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ctensor._registry import OpSpec

from . import dtypes as dt
from .abi_calls import (
    Execution,
    Tensor,
    execute,
    infer,
    place,
    read_values,
    status_name,
    untouched_outside,
)
from .cases import Case

__all__ = ["Placed", "Outcome", "place_case", "run_case", "run_inplace", "free_placed", "decoded"]


@dataclass
class Placed:
    """A case's tensors on a device."""

    inputs: list  # Tensor or None
    outputs: list  # Tensor (static ops)
    infos: list  # (dtype, shape) from infer
    infer_status: int
    infer_message: str


@dataclass
class Outcome:
    """What running a case produced and which promises it broke: violations is a list of
    (check name, reason)."""

    execution: Execution | None
    infos: list
    outputs: list = field(default_factory=list)  # stored arrays per output
    violations: list = field(default_factory=list)


def _output_strides(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides with a gap of one element everywhere (so stray writes land in a gap)."""
    out, acc = [], 2
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1) * 2
    return tuple(reversed(out))


def place_case(spec: OpSpec, case: Case, device) -> Placed:  # noqa: ANN001
    inputs = []
    for arr, dtype in zip(case.inputs, case.input_dtypes, strict=False):
        if arr is None:
            inputs.append(None)
            continue
        strides = None
        if case.layouts[len(inputs)] != "compact":
            strides = tuple(s // arr.itemsize for s in arr.strides)
        inputs.append(place(device, dtype, arr.shape, strides, arr))
    status, infos, message = infer(spec, [t.view if t else None for t in inputs], case.attrs)
    outputs = []
    if status == 0 and not spec.is_dynamic:
        for dtype, shape in infos:
            strides = _output_strides(shape) if case.strided_output and shape else None
            outputs.append(place(device, dtype, shape, strides, None))
    return Placed(inputs, outputs, infos, status, message)


def _check_inputs(device, placed: Placed, out: Outcome) -> None:  # noqa: ANN001
    for k, t in enumerate(placed.inputs):
        if t is not None and not np.array_equal(device.read(t.buffer), t.expected):
            out.violations.append(("inputs_unchanged", f"input {k} was modified by the run"))


def _read_dynamic(spec: OpSpec, device, placed: Placed, out: Outcome) -> None:  # noqa: ANN001
    alloc = out.execution.allocator
    n = len(placed.infos)
    seen: dict[int, int] = {}
    for index, dtype, shape, dev_type, dev_id in alloc.calls:
        seen[index] = seen.get(index, 0) + 1
        if index < 0 or index >= n:
            out.violations.append(
                (
                    "allocator",
                    f"leaked allocation: the kernel asked for output "
                    f"{index} of {n}, which is never handed back as an output",
                )
            )
            continue
        want_dtype, want_shape = placed.infos[index]
        if (
            dtype != want_dtype
            or len(shape) != len(want_shape)
            or any(w >= 0 and w != s for w, s in zip(want_shape, shape, strict=False))
        ):
            out.violations.append(
                (
                    "allocator",
                    f"output {index} allocated as {dtype}{shape}, "
                    f"infer said {want_dtype}{want_shape}",
                )
            )
        if (dev_type, dev_id) != (device.device_type, device.device_id):
            out.violations.append(
                ("allocator", f"output {index} allocated on device ({dev_type}, {dev_id})")
            )
    for index, times in seen.items():
        if 0 <= index < n and times > 1:
            out.violations.append(
                (
                    "allocator",
                    f"leaked allocation: output {index} allocated "
                    f"{times} times; only the last is handed back",
                )
            )
    missing = [i for i in range(n) if i not in seen]
    if missing and out.execution.status == 0:
        out.violations.append(("allocator", f"outputs {missing} never allocated"))
    for i in range(n):
        tensors = alloc.tensors.get(i)
        if not tensors:
            out.outputs.append(None)
            continue
        t = tensors[-1]
        raw, values = read_values(device, t)
        if not untouched_outside(t, raw, values):
            out.violations.append(
                (
                    "output_bounds",
                    f"a byte outside output {i} (guard bytes after the allocation) was written",
                )
            )
        out.outputs.append(values)


def run_case(spec: OpSpec, case: Case, device, backend: str | None) -> Outcome:  # noqa: ANN001
    placed = place_case(spec, case, device)
    if placed.infer_status != 0:
        free_placed(device, placed, None)
        out = Outcome(None, [])
        out.violations.append(("infer", f"ct_op_infer failed: {placed.infer_message}"))
        return out
    n_dyn = len(placed.infos) if spec.is_dynamic else 0
    execution = execute(
        spec, device, placed.inputs, placed.outputs, case.attrs, backend, dynamic_outputs=n_dyn
    )
    out = Outcome(execution, placed.infos)
    if execution.status != 0:
        out.violations.append(
            ("run", f"ct_op_run returned {status_name(execution.status)}: {execution.message}")
        )
        if not execution.message:
            out.violations.append(
                ("error_message", f"{status_name(execution.status)} came with no message")
            )
    _check_inputs(device, placed, out)
    if execution.workspace_overrun:
        out.violations.append(
            (
                "workspace_bounds",
                f"wrote past the {execution.workspace[0]} workspace bytes it asked for",
            )
        )
    if spec.is_dynamic:
        _read_dynamic(spec, device, placed, out)
    else:
        for i, t in enumerate(placed.outputs):
            raw, values = read_values(device, t)
            if not untouched_outside(t, raw, values):
                where = "a gap of the strided output" if t.strides else "the guard bytes"
                out.violations.append(("output_bounds", f"wrote outside output {i} ({where})"))
            out.outputs.append(values)
    free_placed(device, placed, execution)
    return out


def decoded(out: Outcome) -> list:
    """The outputs as values (dtypes.to_values), None where an output is missing."""
    return [
        None if v is None else dt.to_values(v, info[0])
        for v, info in zip(out.outputs, out.infos, strict=False)
    ]


def free_placed(device, placed: Placed, execution: Execution | None) -> None:  # noqa: ANN001
    """Frees a case's buffers (and the allocations of a dynamic run)."""
    tensors: list[Tensor] = [t for t in placed.inputs + placed.outputs if t is not None]
    if execution is not None and execution.allocator is not None:
        for ts in execution.allocator.tensors.values():
            tensors.extend(ts)
    if execution is not None and execution.allocator is not None and execution.allocator.decoy:
        tensors.append(execution.allocator.decoy)
    for t in tensors:
        device.free(t.buffer)


def inplace_input(spec: OpSpec, case: Case, placed: Placed) -> int | None:
    """An input the output may share exactly (CT_OP_FLAG_INPLACE): same dtype and shape as the
    single output, and no zero strides."""
    if "inplace" not in spec.flags or spec.is_dynamic or len(placed.infos) != 1:
        return None
    dtype, shape = placed.infos[0]
    for k, t in enumerate(placed.inputs):
        if (
            t is not None
            and t.dtype == dtype
            and t.shape == tuple(shape)
            and 0 not in t.element_strides()
            and case.layouts[k] != "broadcast"
        ):
            return k
    return None


def run_inplace(spec: OpSpec, case: Case, device, backend: str | None) -> Outcome | None:  # noqa: ANN001
    """The case with its output written into the input it may share; None when no input can be
    shared. The outcome's output is read from that input's buffer."""
    placed = place_case(spec, case, device)
    k = inplace_input(spec, case, placed) if placed.infer_status == 0 else None
    if k is None:
        free_placed(device, placed, None)
        return None
    target = placed.inputs[k]
    execution = execute(spec, device, placed.inputs, [target], case.attrs, backend)
    out = Outcome(execution, placed.infos)
    if execution.status != 0:
        out.violations.append(
            (
                "inplace",
                f"ct_op_run into input {k} returned "
                f"{status_name(execution.status)}: {execution.message}",
            )
        )
    raw, values = read_values(device, target)
    if not untouched_outside(target, raw, values):
        out.violations.append(
            ("inplace", f"writing in place into input {k} changed bytes outside its elements")
        )
    out.outputs.append(values)
    free_placed(device, placed, execution)
    return out
