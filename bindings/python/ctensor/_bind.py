"""Bound calls: check a call once, replay it many times (as cuDNN plans and XNNPACK's
setup/run do).

``call = ctensor.bind(ctensor.ops.add, a, b, out=c)`` reads every tensor once (DLPack views
opened and held), resolves the attributes, asks for the workspace and runs the call, so every
error a plain call would raise is raised here, and keeps the checked call as a ``ct_plan``
(``ct_plan_create``). ``call()`` then runs that plan: one vectorcall into ``ct_plan_run`` (the
``ctensor._native.Replay`` base type), with no argument processing and no further checks.
``call(a2, b2, out=c2)`` runs on other buffers of exactly the same layout (device, dtype, shape,
strides, byte offset), which is checked in C before anything runs.

A bound call holds references to its arrays, so their memory stays valid; resizing one in place
(``ndarray.resize``, ``Tensor.resize_``) after binding is not supported. Bound calls take host
(CPU) memory, and inputs whose dtypes a kernel takes as they are (no implicit casts, which would
allocate on every replay): cast first, then bind.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dlpack
from ._attrs import attrs_for
from ._call import call
from ._dlpack import CAPSULE as _K_CAPSULE
from ._dlpack import NONE as _K_NONE
from ._dlpack import NUMPY_SCALAR as _K_NUMPY_SCALAR
from ._dlpack import SCALAR as _K_SCALAR
from ._dlpack import TORCH as _K_TORCH
from ._dlpack import (
    InputTypeError,
    capsule_of,
    has_lazy_bits,
    kind_of,
    mark_written,
    open_error,
    output_capsule_of,
    torch_tensors,
)
from ._errors import (
    InvalidArgumentError,
    ReadOnlyOutputError,
    ShapeMismatchError,
    UnsupportedDeviceError,
    UnsupportedDTypeError,
    WrongArityError,
    error_for_status,
)
from ._frame import MAX_TENSORS, Frame, input_name, out_name, pool_keep, pool_pop
from ._lib import Replay, ffi, last_error, lib
from ._registry import OpSpec, get_spec
from ._run import check_host_workspace

__all__ = ["BoundCall", "bind"]

_NULL = ffi.NULL
_CPU = lib.CT_DEVICE_CPU
_META_READ_ONLY = lib.CTPY_META_READ_ONLY
_run = lib.ct_op_run
_layout_diff = lib.ctpy_layout_diff
_bound_run = lib.ctpy_bound_run
_LAYOUT_MISMATCH = lib.CTPY_LAYOUT_MISMATCH
_NEED_PYTHON = lib.CTPY_FAST_NEED_PYTHON


def _spec_of(op: Any) -> OpSpec:
    spec = getattr(op, "spec", None)
    if isinstance(spec, OpSpec):
        return spec
    if isinstance(op, str):
        return get_spec(op)
    raise InputTypeError(
        f"bind takes a ctensor.ops function or an operator name, got {type(op).__name__}"
    )


def _split_backend(spec: OpSpec, attrs: dict) -> tuple[dict, str | None]:
    """``backend=`` (when it is not an attribute of the op) names the backend for
    ``ct_context.backend``; everything else is an attribute."""
    if "backend" in attrs and "backend" not in spec.attr_types:
        attrs = dict(attrs)
        backend = attrs.pop("backend")
        if backend is not None and not isinstance(backend, str):
            raise InvalidArgumentError(
                f"{spec.name}: backend= takes a backend name (str), got {type(backend).__name__}"
            )
        return attrs, backend
    return attrs, None


def _flat_inputs(spec: OpSpec, args: tuple) -> tuple:
    """The op's input objects in call order (the variadic sequence flattened at the end), as
    ``ctensor.ops.<name>`` passes them."""
    if any(inp.get("variadic") for inp in spec.inputs):
        fixed = spec.num_fixed_inputs
        head, rest = args[:fixed], args[fixed:]
        if len(rest) == 1 and isinstance(rest[0], (list, tuple)):
            rest = tuple(rest[0])
        return tuple(head) + tuple(rest)
    return tuple(args)


def _open_into(
    spec: OpSpec, frame: Any, inputs: tuple, outs: tuple, many: bool, keep: list
) -> None:
    """DLPack views of inputs then outputs, opened into ``frame`` (references kept in ``keep``).
    Raw capsules are refused: a capsule can be read only once, a bound call reads many times."""
    n = len(inputs)
    objects = frame.objects
    for i, obj in enumerate(inputs):
        kind = kind_of(type(obj))
        if kind == _K_NONE:
            if i < spec.num_fixed_inputs and spec.inputs[i].get("optional"):
                objects[i] = 0
                continue
            raise InputTypeError(f"{input_name(spec, i)} is required, got None")
        if kind == _K_CAPSULE:
            raise InputTypeError(
                f"{input_name(spec, i)}: bind takes arrays, not raw DLPack capsules (a "
                "capsule can be read only once)"
            )
        if kind == _K_SCALAR:
            raise InputTypeError(
                f"{input_name(spec, i)}: bind takes arrays; pass a Python scalar as a 0-d "
                "array of the dtype it should have"
            )
        if kind == _K_NUMPY_SCALAR:
            obj = np.asarray(obj)
            kind = kind_of(np.ndarray)
        if kind == _K_TORCH and has_lazy_bits(obj):
            raise InputTypeError(
                f"{input_name(spec, i)} has torch's lazy conjugate or negative bit; bind "
                "reads tensors in place: pass t.resolve_conj().resolve_neg()"
            )
        capsule = capsule_of(obj, kind, lambda i=i: input_name(spec, i))
        keep.append(obj)
        keep.append(capsule)
        objects[i] = id(capsule)
    for j, obj in enumerate(outs):
        kind = kind_of(type(obj))
        what = lambda j=j: out_name(spec, j, many)  # noqa: E731
        if kind in (_K_NONE, _K_SCALAR, _K_NUMPY_SCALAR, _K_CAPSULE):
            raise InputTypeError(f"{what()} must be an array, got {type(obj).__name__}")
        capsule = output_capsule_of(obj, kind, what)
        keep.append(obj)
        keep.append(capsule)
        objects[n + j] = id(capsule)
    total = n + len(outs)
    rc = lib.ctpy_open(frame.c, 0, total)
    if rc:
        index = -1 - rc
        raise open_error(
            frame.meta[index],
            input_name(spec, index) if index < n else out_name(spec, index - n, many),
        )
    for k in range(total):
        meta = frame.meta[k]
        if not meta:
            continue
        if (meta >> 40) & 0xFF != _CPU:
            raise UnsupportedDeviceError(
                f"{spec.name}: bind runs tensors in host memory; "
                f"{input_name(spec, k) if k < n else out_name(spec, k - n, many)} "
                "is on another device"
            )
        if k >= n and meta & _META_READ_ONLY:
            raise ReadOnlyOutputError(
                f"{out_name(spec, k - n, many)} is flagged READ_ONLY by its producer; "
                "ctensor never writes into read-only memory"
            )


def _bind_error(status: int) -> Exception:
    """The error of a failed first run; for dtypes, with the reason bind does not cast."""
    if status == lib.CT_ERROR_UNSUPPORTED_DTYPE:
        return UnsupportedDTypeError(
            f"{last_error()} (bind takes dtypes a kernel accepts as they are; cast the inputs "
            "first)",
            status,
        )
    return error_for_status(status, last_error())


# Plans whose tensors hold at least this many bytes run without the GIL (other Python threads
# go on meanwhile); smaller ones keep it, as releasing and taking it back costs more than them.
_RELEASE_GIL_BYTES = 1 << 16


def _tensor_bytes(tensors: Any, count: int) -> int:
    total = 0
    for k in range(count):
        t = tensors[k]
        if t == _NULL:
            continue
        numel = 1
        for d in range(t.ndim):
            numel *= t.shape[d]
        total += numel * ((t.dtype.bits * t.dtype.lanes + 7) // 8)
    return total


class BoundCall(Replay):
    """One operator call checked once and replayed: see :func:`bind`.

    ``call()`` runs it again on the bound buffers and returns the bound output(s);
    ``call(*inputs, out=...)`` runs it on other buffers of the same layout (``out`` left out:
    the bound outputs). ``call.run()`` is the lowest-overhead form: it returns the ``ct_status``
    (0 on success) instead of raising, and the result is ``call.result``."""

    __slots__ = (
        "spec",
        "result",
        "_frame",
        "_keep",
        "_n",
        "_n_out",
        "_many",
        "_context",
        "_attrs",
        "_variadic",
        "_written",
        "__weakref__",
    )

    def __init__(self, spec: OpSpec, args: tuple, out: Any, attrs: dict):
        if spec.is_dynamic:
            raise InvalidArgumentError(
                f"{spec.name} allocates its outputs (their size depends on the data); it cannot "
                "be bound"
            )
        attrs, backend = _split_backend(spec, attrs)
        inputs = _flat_inputs(spec, args)
        if out is None:
            # The first run allocates the outputs (in the inputs' framework) and reports every
            # error a plain call would.
            first = dict(attrs)
            if backend is not None:
                first["backend"] = backend
            out = call(spec, inputs, None, first or None)
        many = type(out) in (tuple, list)
        outs = tuple(out) if many else (out,)
        n, n_out = len(inputs), len(outs)
        if n + n_out > MAX_TENSORS - 8:
            raise WrongArityError(
                f"{spec.name}: too many tensors to bind ({n + n_out})", lib.CT_ERROR_WRONG_ARITY
            )
        keep: list = []
        frame = Frame()
        _open_into(spec, frame, inputs, outs, many, keep)
        attr_array, num_attrs = _NULL, 0
        if attrs:
            entry = attrs_for(spec, attrs)
            keep.append(entry)
            attr_array, num_attrs = entry[0], entry[1]
        tensors = frame.tensors
        outputs = tensors + n
        context = self._make_context(
            spec, frame, n, outputs, n_out, attr_array, num_attrs, backend, keep
        )
        plan = ffi.new("ct_plan**")
        status = lib.ct_plan_create(
            spec.op, tensors, n, outputs, n_out, attr_array, num_attrs, context, plan
        )
        if status:
            raise _bind_error(status)
        self.spec = spec
        self.result = outs[0] if (not many or (n_out == 1 and spec.single_output)) else out
        release = _tensor_bytes(tensors, n + n_out) >= _RELEASE_GIL_BYTES
        # Every replay writes the bound outputs: the torch tensors among them are marked
        # written each time (see mark_written), by the C type or by _run_on.
        self._written = torch_tensors(outs)
        increment = _dlpack.increment_version if self._written else None
        self._set_plan(
            int(ffi.cast("uintptr_t", plan[0])), self.result, release, increment, self._written
        )
        status = self.run()
        if status:
            raise _bind_error(status)
        self._frame = frame
        self._keep = keep
        self._n = n
        self._n_out = n_out
        self._many = many
        self._context = context
        self._attrs = (attr_array, num_attrs)
        self._variadic = any(inp.get("variadic") for inp in spec.inputs)

    @staticmethod
    def _make_context(
        spec: OpSpec,
        frame: Any,
        n: int,
        outputs: Any,
        n_out: int,
        attr_array: Any,
        num_attrs: int,
        backend: str | None,
        keep: list,
    ) -> Any:
        """NULL when the call needs no workspace and names no backend; else a context holding
        the backend name and the workspace (allocated once, here) of the kernel it picks."""
        context = frame.reset_context()
        if backend is not None:
            name = ffi.new("char[]", backend.encode("utf-8"))
            keep.append(name)
            context.backend = name
        bytes_ = frame.ws_bytes
        align = frame.ws_align
        status = lib.ct_op_workspace_with_context(
            spec.op, frame.tensors, n, outputs, n_out, attr_array, num_attrs, context, bytes_, align
        )
        if status:
            raise _bind_error(status)
        size, alignment = int(bytes_[0]), max(int(align[0]), 1)
        if size == 0 and backend is None:
            return _NULL
        if size:
            check_host_workspace(spec, size, _CPU, outputs, n_out)
            buffer = np.empty(size + alignment, np.uint8)
            keep.append(buffer)
            address = buffer.ctypes.data
            context.workspace = ffi.cast("void*", address + (-address) % alignment)
            context.workspace_size = size
        return context

    def _raise_status(self, status: int) -> None:
        """Raises the error of a failed replay (called by the C type)."""
        raise error_for_status(status, last_error())

    def _call_with(self, *args: Any, out: Any = None) -> Any:
        """``call(*inputs, out=...)``: the replay on other buffers (called by the C type)."""
        return self._run_on(args, out)

    def _run_on(self, args: tuple, out: Any) -> Any:
        spec = self.spec
        inputs = (_flat_inputs(spec, args) if self._variadic else args) if args else None
        n, n_out = self._n, self._n_out
        if inputs is not None and len(inputs) != n:
            raise WrongArityError(
                f"{spec.name}: bound with {n} inputs, replayed with {len(inputs)}",
                lib.CT_ERROR_WRONG_ARITY,
            )
        many = type(out) in (tuple, list)
        outs = None if out is None else (tuple(out) if many else (out,))
        if outs is not None and len(outs) != n_out:
            raise WrongArityError(
                f"{spec.name}: bound with {n_out} outputs, replayed with {len(outs)}",
                lib.CT_ERROR_WRONG_ARITY,
            )
        try:
            frame = pool_pop()
        except IndexError:
            frame = Frame()
        try:
            # Plain arrays: read, layout-checked and run in one crossing (ctpy_bound_run).
            attr_array, num_attrs = self._attrs
            status = _bound_run(
                frame.c,
                self._frame.tensors,
                spec.op,
                n,
                n_out,
                id(inputs if inputs is not None else ()),
                id(out),
                attr_array,
                num_attrs,
                self._context,
            )
            if status == 0:
                if outs is None:
                    mark_written(self._written)  # ctpy_bound_run marks given outputs only
                    return self.result
                return outs[0] if (not many or (n_out == 1 and spec.single_output)) else out
            if status >= _LAYOUT_MISMATCH:
                raise self._layout_error(status - _LAYOUT_MISMATCH)
            if status != _NEED_PYTHON:
                raise error_for_status(status, last_error())
            return self._run_in(frame, inputs, outs, out, many)
        finally:
            pool_keep(frame)

    def _layout_error(self, index: int) -> ShapeMismatchError:
        spec, n = self.spec, self._n
        what = input_name(spec, index) if index < n else out_name(spec, index - n, self._n_out > 1)
        return ShapeMismatchError(
            f"{what} does not have the layout the call was bound with (device, dtype, shape, "
            "strides and byte offset must match; bind again for another layout)",
            lib.CT_ERROR_SHAPE_MISMATCH,
        )

    def _run_in(
        self, frame: Any, inputs: tuple | None, outs: tuple | None, out: Any, many: bool
    ) -> Any:
        spec = self.spec
        n, n_out = self._n, self._n_out
        bound = self._frame.tensors
        keep: list = []
        # Unchanged sides keep the bound views: only the data pointers of the others change.
        given_inputs = inputs if inputs is not None else ()
        given_outs = outs if outs is not None else ()
        _open_into(spec, frame, given_inputs, given_outs, many or self._many, keep)
        tensors = frame.tensors
        if inputs is None:
            for j in reversed(range(n_out)):  # outputs were opened from slot 0
                tensors[n + j] = tensors[j]
            for i in range(n):
                tensors[i] = bound[i]
        elif outs is None:
            for j in range(n_out):
                tensors[n + j] = bound[n + j]
        diff = _layout_diff(bound, tensors, n + n_out)
        if diff >= 0:
            raise self._layout_error(diff)
        attr_array, num_attrs = self._attrs
        status = _run(spec.op, tensors, n, tensors + n, n_out, attr_array, num_attrs, self._context)
        if status:
            raise error_for_status(status, last_error())
        mark_written(outs if outs is not None else self._written)
        if outs is None:
            return self.result
        return outs[0] if (not many or (n_out == 1 and spec.single_output)) else out

    def __repr__(self) -> str:
        return f"<ctensor bound call {self.spec.name}: {self._n} inputs, {self._n_out} outputs>"


def bind(op: Any, *args: Any, out: Any = None, **attrs: Any) -> BoundCall:
    """Checks one call of ``op`` (a ``ctensor.ops`` function or an operator name) and returns a
    :class:`BoundCall` that replays it with the least overhead.

    Arguments are those of ``ctensor.ops.<name>``. Without ``out=`` the first run allocates the
    outputs, which every replay then overwrites and returns. Dynamic-allocating ops (whose
    output size depends on the data) cannot be bound."""
    return BoundCall(_spec_of(op), args, out, attrs)
