"""ABI checks beyond one correct call: struct layout and version negotiation (once per run),
documented statuses for bad input (per op x dtype), and concurrent runs from several threads
agreeing with a serial run (per op x dtype). Each check yields (check name, reason) per
violation; nothing means it passed."""

from __future__ import annotations

import threading

import numpy as np

from ctensor._dtypes import DTYPES
from ctensor._lib import ffi, lib
from ctensor._registry import OpSpec

from .abi_calls import execute, status_name
from .calls import free_placed, place_case, run_case
from .dtypes import itemsize, set_ct_dtype

__all__ = [
    "PLUGIN_ABI_MAJOR",
    "layout_checks",
    "version_checks",
    "bad_input_checks",
    "thread_check",
    "allocator_failure_checks",
]

#: CT_PLUGIN_ABI_MAJOR of ctensor_plugin.h, the plugin ABI this suite checks against.
PLUGIN_ABI_MAJOR = 1

# DLPack's layout (LP64) and the fixed-layout structs of ctensor.h: (struct, size, {field: offset}).
_LAYOUT = [
    ("ct_device", 8, {"device_type": 0, "device_id": 4}),
    ("ct_dtype", 4, {"code": 0, "bits": 1, "lanes": 2}),
    (
        "ct_tensor",
        48,
        {
            "data": 0,
            "device": 8,
            "ndim": 16,
            "dtype": 20,
            "shape": 24,
            "strides": 32,
            "byte_offset": 40,
        },
    ),
    ("ct_attr_value", 24, {"type": 0, "reserved": 4, "count": 8, "value": 16}),
    ("ct_attr", 32, {"name": 0, "value": 8}),
    ("ct_tensor_info", 8 + 8 * 64, {"dtype": 0, "ndim": 4, "shape": 8}),
    ("ct_allocator", 24, {"struct_size": 0, "user_data": 8, "allocate": 16}),
    (
        "ct_context",
        48,
        {
            "struct_size": 0,
            "stream": 8,
            "workspace": 16,
            "workspace_size": 24,
            "allocator": 32,
            "backend": 40,
        },
    ),
    ("ct_param_schema", 24, {"name": 0, "doc": 8, "flags": 16, "reserved": 20}),
    ("ct_attr_schema", 48, {"name": 0, "doc": 8, "type": 16, "flags": 20, "default_value": 24}),
    (
        "ct_op_schema",
        72,
        {
            "struct_size": 0,
            "name": 8,
            "doc": 16,
            "category": 24,
            "flags": 28,
            "num_inputs": 32,
            "num_outputs": 36,
            "num_attrs": 40,
            "inputs": 48,
            "outputs": 56,
            "attrs": 64,
        },
    ),
    (
        "ct_kernel_info",
        32,
        {
            "struct_size": 0,
            "backend": 8,
            "device_type": 16,
            "signature_length": 20,
            "signature": 24,
        },
    ),
    ("ct_profiler", 32, {"struct_size": 0, "user_data": 8, "begin": 16, "end": 24}),
    (
        "ct_profile_event",
        80,
        {
            "struct_size": 0,
            "call_id": 8,
            "op": 16,
            "op_name": 24,
            "backend": 32,
            "device": 40,
            "source": 48,
            "num_inputs": 52,
            "inputs": 56,
            "num_outputs": 64,
            "reserved": 68,
            "outputs": 72,
        },
    ),
    (
        "ct_backend_info",
        64,
        {
            "struct_size": 0,
            "name": 8,
            "version": 16,
            "path": 24,
            "state": 32,
            "status": 36,
            "reason": 40,
            "device_type": 48,
            "device_count": 52,
            "abi_version": 56,
        },
    ),
]


def layout_checks() -> list[tuple[str, str]]:
    """The binding's view of ctensor.h against the published layout."""
    problems = []
    for struct, size, fields in _LAYOUT:
        if ffi.sizeof(struct) != size:
            problems.append(
                ("abi_layout", f"sizeof({struct}) is {ffi.sizeof(struct)}, expected {size}")
            )
        for name, offset in fields.items():
            if ffi.offsetof(struct, name) != offset:
                problems.append(
                    (
                        "abi_layout",
                        f"{struct}.{name} at offset "
                        f"{ffi.offsetof(struct, name)}, expected {offset}",
                    )
                )
    return problems


def version_checks(backend_info: dict | None) -> list[tuple[str, str]]:
    """libctensor's ABI major against this binding's header; a plugin's negotiated version and
    load state."""
    problems = []
    version = lib.ct_abi_version()
    if version >> 16 != lib.CT_ABI_VERSION_MAJOR:
        problems.append(
            (
                "abi_version",
                f"libctensor reports ABI {version >> 16}."
                f"{version & 0xFFFF}, the header is {lib.CT_ABI_VERSION_MAJOR}.x",
            )
        )
    if backend_info is not None and backend_info.get("path"):
        if backend_info["abi_version"] >> 16 != PLUGIN_ABI_MAJOR:
            problems.append(
                (
                    "abi_version",
                    f"plugin built for ABI "
                    f"{backend_info['abi_version'] >> 16}, expected "
                    f"{PLUGIN_ABI_MAJOR}",
                )
            )
        if backend_info["state"] != 0:
            problems.append(("abi_version", f"plugin not loaded: {backend_info['reason']}"))
    return problems


# ---------------------------------------------------------------------- bad input -------------


def _copy_view(view):  # noqa: ANN001, ANN202
    new = ffi.new("ct_tensor*")
    ffi.memmove(new, view, ffi.sizeof("ct_tensor"))
    return new


def _outputs_untouched(device, placed) -> bool:  # noqa: ANN001
    return all(np.array_equal(device.read(t.buffer), t.expected) for t in placed.outputs)


def _unregistered_dtype(spec: OpSpec, target) -> str | None:  # noqa: ANN001
    taken = {
        tuple(k["signature"])[0]
        for k in spec.schema.get("kernels", ())
        if k["backend"] == target.backend
    }
    for name in DTYPES + ("complex64",):
        if name not in taken:
            return name
    return None


def bad_input_checks(spec: OpSpec, case, target) -> list[tuple[str, str]]:  # noqa: ANN001
    """Wrong dtype, wrong output shape, NULL input, self-overlapping output and a too small
    workspace must each return their documented status and leave the outputs untouched."""
    device, backend = target.device, target.backend
    problems = []
    keep: list = []  # shape and stride arrays of the altered views

    def attempt(
        name: str,
        expected: int,
        mutate,
        check: str = "error_status",
        context_size: int | None = None,
    ) -> None:  # noqa: ANN001
        placed = place_case(spec, case, device)
        if placed.infer_status != 0:
            free_placed(device, placed, None)
            return
        inputs, outputs = list(placed.inputs), list(placed.outputs)
        shrink = mutate(inputs, outputs)
        if shrink is False:
            free_placed(device, placed, None)
            return
        views_in = [_Wrap(v) if isinstance(v, ffi.CData) else v for v in inputs]
        execution = execute(
            spec,
            device,
            views_in,
            [_Wrap(v) if isinstance(v, ffi.CData) else v for v in outputs],
            case.attrs,
            backend,
            workspace_shrink=shrink or 0,
            dynamic_outputs=len(placed.infos) if spec.is_dynamic else 0,
            context_size=context_size,
        )
        untouched = _outputs_untouched(device, placed)
        free_placed(device, placed, execution)
        if shrink and execution.workspace[0] == 0:
            return  # asks for no workspace: nothing can be too small
        if execution.status != 0 and not execution.message:
            problems.append(
                ("error_message", f"{name}: {status_name(execution.status)} with no message")
            )
        if execution.status != expected:
            problems.append(
                (
                    check,
                    f"{name}: expected {status_name(expected)}, got "
                    f"{status_name(execution.status)} ({execution.message})",
                )
            )
        elif not untouched:
            problems.append(
                (check, f"{name}: returned {status_name(expected)} but wrote an output")
            )

    def wrong_dtype(inputs, outputs):  # noqa: ANN001, ANN202
        bad = _unregistered_dtype(spec, target)
        first = next((k for k, t in enumerate(inputs) if t is not None), None)
        if bad is None or first is None:
            return False
        view = _copy_view(inputs[first].view)
        if bad == "complex64":
            _complex(view)
        else:
            set_ct_dtype(view.dtype, bad)
        _align_start(view, bad)
        inputs[first] = view
        return None

    def wrong_shape(inputs, outputs):  # noqa: ANN001, ANN202
        if not outputs:
            return False
        t = outputs[0]
        view = _copy_view(t.view)
        shape = ffi.new("int64_t[]", [n + 1 for n in t.shape] + [2])
        view.shape = shape
        view.ndim = len(t.shape) or 1
        view.strides = ffi.NULL
        outputs[0] = view
        keep.append(shape)
        return None

    def null_input(inputs, outputs):  # noqa: ANN001, ANN202
        first = next((k for k, t in enumerate(inputs) if t is not None), None)
        if first is None or spec.inputs[min(first, len(spec.inputs) - 1)].get("optional"):
            return False
        inputs[first] = _NullTensor()
        return None

    def aliasing(inputs, outputs):  # noqa: ANN001, ANN202
        t = next((o for o in outputs if any(n > 1 for n in o.shape)), None)
        if t is None:
            return False
        view = _copy_view(t.view)
        strides = ffi.new("int64_t[]", [0] * len(t.shape))
        view.strides = strides
        keep.append(strides)
        outputs[outputs.index(t)] = view
        return None

    def overlapping_input(inputs, outputs):  # noqa: ANN001, ANN202
        """The output shifted one element into the input it has the shape and dtype of."""
        t = inputs[0] if inputs else None
        if (
            not outputs
            or t is None
            or t.strides is not None
            or t.shape != outputs[0].shape
            or t.dtype != outputs[0].dtype
            or not any(n > 1 for n in t.shape)
        ):
            return False
        view = _copy_view(t.view)
        view.byte_offset += itemsize(t.dtype)
        outputs[0] = view
        return None

    def small_workspace(inputs, outputs):  # noqa: ANN001, ANN202
        return 1

    def unchanged(inputs, outputs):  # noqa: ANN001, ANN202
        return None

    attempt("wrong dtype", lib.CT_ERROR_UNSUPPORTED_DTYPE, wrong_dtype)
    attempt("wrong output shape", lib.CT_ERROR_SHAPE_MISMATCH, wrong_shape)
    attempt("NULL input", lib.CT_ERROR_NULL_POINTER, null_input)
    attempt("self-overlapping output", lib.CT_ERROR_ALIASING, aliasing)
    attempt("output overlapping an input", lib.CT_ERROR_ALIASING, overlapping_input)
    attempt("workspace one byte too small", lib.CT_ERROR_WORKSPACE_TOO_SMALL, small_workspace)
    attempt("ct_context.struct_size 0", lib.CT_ERROR_ABI_MISMATCH, unchanged, "abi_version", 0)
    return problems


class _Wrap:
    """A raw view standing in for a placed Tensor."""

    def __init__(self, view):  # noqa: ANN001
        self.view = view


class _NullTensor:
    view = ffi.NULL


def _align_start(view, dtype: str) -> None:  # noqa: ANN001
    """Moves a relabelled view's first element down to the alignment of its new ``dtype``, so
    that the only thing wrong with it is the dtype: a misaligned start is refused with
    CT_ERROR_INVALID_ARGUMENT before any kernel looks at the dtype. The kernel must refuse the
    dtype without reading, so where the view points does not matter beyond that."""
    size = itemsize(dtype)
    alignment = max(size // 2 if dtype.startswith("complex") else size, 1)
    misalignment = (int(ffi.cast("uintptr_t", view.data)) + view.byte_offset) % alignment
    if misalignment:
        view.byte_offset += (
            -misalignment if view.byte_offset >= misalignment else (alignment - misalignment)
        )


def _complex(view) -> None:  # noqa: ANN001
    view.dtype.code = lib.CT_DTYPE_COMPLEX
    view.dtype.bits = 64
    view.dtype.lanes = 1


# ---------------------------------------------------------------------- threads ---------------


def _revalued(spec: OpSpec, case, index: int):  # noqa: ANN001, ANN202
    """The case with other values (same shapes, layouts and attributes): what thread `index`
    of the concurrency check runs, so that a kernel sharing state between calls (a static
    scratch buffer) mixes up distinct results instead of writing identical bytes."""
    from .cases import build
    from .op_table import OPS

    flat = [None if a is None else tuple(a.shape) for a in case.inputs]
    entry = OPS.get(spec.name, {})
    seed = (case.seed * 31 + index) & 0xFFFFFFFF
    return build(
        spec, case.signature, case.index, seed, flat, case.attrs, entry, 0, 0, case.layouts
    )


def thread_check(spec: OpSpec, case, target, serial=None) -> list[tuple[str, str]]:  # noqa: ANN001
    """`target.threads` threads run the case at once, thread i with its own buffers and its own
    values (thread 0 the case itself, the others the case re-drawn); each must give the bytes a
    serial run of its values gives (`serial`: the case's outcome already at hand)."""
    if serial is None:
        serial = run_case(spec, case, target.device, target.backend)
    if serial.violations:
        return []
    variants = [case] + [_revalued(spec, case, i) for i in range(1, target.threads)]
    serials = [serial]
    for variant in variants[1:]:
        outcome = run_case(spec, variant, target.device, target.backend)
        serials.append(outcome if not outcome.violations else None)
    results: list = [None] * target.threads
    barrier = threading.Barrier(target.threads)

    def work(i: int) -> None:
        barrier.wait()
        results[i] = run_case(spec, variants[i], target.device, target.backend)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(target.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, r in enumerate(results):
        if serials[i] is None:
            continue  # these values are not a valid call of their own
        if r is None or r.violations:
            reason = r.violations[0][1] if r is not None else "the thread raised"
            return [("threads", f"thread {i}: {reason}")]
        for a, b in zip(r.outputs, serials[i].outputs, strict=False):
            if (a is None) != (b is None) or (
                a is not None and (a.shape != b.shape or a.tobytes() != b.tobytes())
            ):
                return [
                    (
                        "threads",
                        f"thread {i} computed another result than a serial run of its values "
                        f"(calls overlapping on {target.threads} threads)",
                    )
                ]
    return []


# ---------------------------------------------------------------------- allocator failure -----


def allocator_failure_checks(spec: OpSpec, case, target) -> list[tuple[str, str]]:  # noqa: ANN001
    """Dynamic ops: the caller's allocator fails on each output in turn. The kernel must return
    the allocator's status (CT_ERROR_OUT_OF_MEMORY) with a message, ask for nothing more after
    the failure (what it got is the caller's to free; anything more would leak) and write
    neither the failed output's buffer nor the inputs."""
    if not spec.is_dynamic:
        return []
    problems: list[tuple[str, str]] = []
    n = len(spec.outputs) if not spec.variadic_output else None
    index = 0
    while n is None or index < n:
        placed = place_case(spec, case, target.device)
        if placed.infer_status != 0:
            free_placed(target.device, placed, None)
            return problems
        n = len(placed.infos)
        if index >= n:
            free_placed(target.device, placed, None)
            break
        execution = execute(
            spec,
            target.device,
            placed.inputs,
            [],
            case.attrs,
            target.backend,
            dynamic_outputs=n,
            fail_output=index,
        )
        alloc = execution.allocator
        what = f"the allocator failing on output {index}"
        if alloc.decoy is not None:
            if execution.status != lib.CT_ERROR_OUT_OF_MEMORY:
                problems.append(
                    (
                        "allocator_failure",
                        f"{what}: expected CT_ERROR_OUT_OF_MEMORY, got "
                        f"{status_name(execution.status)}",
                    )
                )
            elif not execution.message:
                problems.append(("error_message", f"{what}: CT_ERROR_OUT_OF_MEMORY, no message"))
            if alloc.after_failure:
                problems.append(
                    (
                        "allocator_failure",
                        f"{what}: {alloc.after_failure} more allocation(s) asked for after it",
                    )
                )
            t = alloc.decoy
            if not np.array_equal(target.device.read(t.buffer), t.expected):
                problems.append(
                    ("allocator_failure", f"{what}: wrote into output {index} all the same")
                )
        for k, t in enumerate(placed.inputs):
            if t is not None and not np.array_equal(target.device.read(t.buffer), t.expected):
                problems.append(("allocator_failure", f"{what}: input {k} was modified"))
        free_placed(target.device, placed, execution)
        index += 1
        if problems:
            break
    return problems
