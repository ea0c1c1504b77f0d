"""Calling operators from Python, and generating ``ctensor.ops.<name>`` from the registry.

The flow of one call:

1. inputs are read as ``ct_tensor*`` views through DLPack (no copy); Python scalars of
   elementwise ops become 0-d arrays with NumPy 2's weak-scalar dtype;
2. mixed dtypes are promoted as NumPy 2 does, and an input whose promoted dtype has no kernel is
   cast (by ctensor's own ``astype``, into a new array of the caller's framework);
3. ``ct_op_infer`` gives the outputs' shapes and dtypes; outputs are allocated in the caller's
   framework and device, unless ``out=`` names them (the C library checks them);
4. ``ct_op_workspace`` says how much scratch memory to pass (workspace and dynamic ops; other
   ops are asked only when a kernel reports it needs some);
5. ``ct_op_run`` runs, with an allocator callback for dynamic-allocating ops.

No state is shared between calls except read-mostly caches, so many threads may call at once
(cffi releases the GIL while C runs).
"""

from __future__ import annotations

import copy
import inspect
import keyword
import operator
from typing import Any

import numpy as np

from . import _dlpack
from ._dlpack import (
    CapsuleType,
    InputTypeError,
    capsule_of,
    kind_of,
    mark_written,
    open_error,
    output_capsule_of,
)
from ._dtypes import (
    DTYPE_INDEX,
    KEY_NAME,
    code_bits,
    name_of_ct,
    numpy_dtype,
    promote,
    scalar_dtype,
    to_dtype_name,
)
from ._errors import (
    AttributeTypeError,
    BackendError,
    CTensorError,
    InvalidArgumentError,
    ReadOnlyOutputError,
    UnknownOpError,
    WrongArityError,
    error_for_status,
)
from ._frameworks import NUMPY, Framework, framework_of
from ._lib import FastOp, configure, ffi, last_error, lib
from ._registry import DEVICE_NAMES, OpSpec, all_specs, get_spec

__all__ = ["call", "make_op", "build_all", "unknown_op"]

_CT_OK = lib.CT_OK
_WORKSPACE_TOO_SMALL = lib.CT_ERROR_WORKSPACE_TOO_SMALL
_OUT_OF_MEMORY = lib.CT_ERROR_OUT_OF_MEMORY
_CPU = lib.CT_DEVICE_CPU
_META_READ_ONLY = lib.CTPY_META_READ_ONLY
_CONTEXT_SIZE = ffi.sizeof("ct_context")
_ALLOCATOR_SIZE = ffi.sizeof("ct_allocator")
_KEY_NAME = KEY_NAME
_KINDS = _dlpack._KINDS
_K_NONE = _dlpack.NONE
_K_SCALAR = _dlpack.SCALAR
_K_CAPSULE = _dlpack.CAPSULE
_K_NUMPY = _dlpack.NUMPY
_K_NUMPY_SCALAR = _dlpack.NUMPY_SCALAR
_infer = lib.ct_op_infer
_run = lib.ct_op_run
_workspace = lib.ct_op_workspace
_workspace_in_context = lib.ct_op_workspace_with_context
_ctpy_open = lib.ctpy_open
_ctpy_infer = lib.ctpy_infer
_open_run = lib.ctpy_open_run
_run_fast = lib.ctpy_run_fast
_fast_call = lib.ctpy_fast_call
_NEED_PYTHON = lib.CTPY_FAST_NEED_PYTHON
_fast_new = lib.ctpy_fast_new
_FAST_READ_ONLY = lib.CTPY_FAST_READ_ONLY
_UNSUPPORTED_DTYPE = lib.CT_ERROR_UNSUPPORTED_DTYPE
_new = ffi.new
_NULL = ffi.NULL
_unpack = ffi.unpack

# ------------------------------------------------------------------------------------------------
# Attributes
# ------------------------------------------------------------------------------------------------

_ATTR_TYPE_WORDS = {
    "int": "an int",
    "float": "a float",
    "bool": "a bool",
    "string": "a string",
    "int_list": "an int or a sequence of ints",
    "float_list": "a float or a sequence of floats",
    "dtype": "a dtype",
}


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_dtype_like(value: Any) -> bool:
    if isinstance(value, (np.dtype, type)):
        return True
    tp = type(value)
    return tp.__module__ == "torch" and tp.__name__ == "dtype"


def _set_attr(spec: OpSpec, name: str, value: Any, slot: Any, keep: list) -> None:
    """Fills one ct_attr_value from a Python value. The schema type guides the conversion; a
    value of another type is passed with its own type so that the C library reports the
    mismatch (CT_ERROR_ATTRIBUTE_TYPE), and unknown names pass through to get
    CT_ERROR_UNKNOWN_ATTRIBUTE."""
    expected = spec.attr_types.get(name)
    if value is None:
        slot.type = lib.CT_ATTR_NONE
    elif isinstance(value, (bool, np.bool_)):
        slot.type = lib.CT_ATTR_BOOL
        slot.value.b = int(value)
    elif _is_int(value):
        if expected == "float_list":
            array = _new("double[]", [float(value)])
            keep.append(array)
            slot.type = lib.CT_ATTR_FLOAT_LIST
            slot.count = 1
            slot.value.floats = array
        else:
            slot.type = lib.CT_ATTR_INT
            slot.value.i = operator.index(value)
    elif isinstance(value, (float, np.floating)):
        if expected == "float_list":
            array = _new("double[]", [float(value)])
            keep.append(array)
            slot.type = lib.CT_ATTR_FLOAT_LIST
            slot.count = 1
            slot.value.floats = array
        else:
            slot.type = lib.CT_ATTR_FLOAT
            slot.value.f = float(value)
    elif isinstance(value, str) and expected != "dtype":
        data = _new("char[]", value.encode("utf-8"))
        keep.append(data)
        slot.type = lib.CT_ATTR_STRING
        slot.value.s = data
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        if not isinstance(items, list):
            items = [items]
        if all(_is_int(v) for v in items) and expected != "float_list":
            array = _new("int64_t[]", [operator.index(v) for v in items])
            slot.type = lib.CT_ATTR_INT_LIST
            slot.value.ints = array
        elif all(_is_real(v) for v in items):
            array = _new("double[]", [float(v) for v in items])
            slot.type = lib.CT_ATTR_FLOAT_LIST
            slot.value.floats = array
        else:
            raise AttributeTypeError(
                f"{spec.name}: attribute '{name}' takes "
                f"{_ATTR_TYPE_WORDS.get(expected or '', 'a value')}, got a sequence holding "
                f"{', '.join(sorted({type(v).__name__ for v in items}))}"
            )
        keep.append(array)
        slot.count = len(items)
    elif expected == "dtype" or _is_dtype_like(value):
        code, bits = code_bits(to_dtype_name(value))
        slot.type = lib.CT_ATTR_DTYPE
        slot.value.dtype.code = code
        slot.value.dtype.bits = bits
        slot.value.dtype.lanes = 1
    elif expected is None:
        slot.type = lib.CT_ATTR_NONE  # the C library reports the unknown name
    else:
        raise AttributeTypeError(
            f"{spec.name}: attribute '{name}' takes {_ATTR_TYPE_WORDS.get(expected, expected)}, "
            f"got {type(value).__name__}"
        )


def _make_attrs(spec: OpSpec, attrs: dict, keep: list) -> tuple[Any, int]:
    if not attrs:
        return _NULL, 0
    array = _new("ct_attr[]", len(attrs))
    for i, (name, value) in enumerate(attrs.items()):
        entry = array[i]
        encoded = _new("char[]", name.encode("utf-8"))
        keep.append(encoded)
        entry.name = encoded
        try:
            _set_attr(spec, name, value, entry.value, keep)
        except OverflowError as e:
            raise AttributeTypeError(
                f"{spec.name}: attribute '{name}' does not fit in 64 bits: {e}"
            ) from e
    return array, len(attrs)


# ------------------------------------------------------------------------------------------------
# Dynamic-allocating ops: the allocator callback
# ------------------------------------------------------------------------------------------------


class _AllocState:
    """What the allocator callback of one call needs and collects."""

    __slots__ = ("fw", "like", "device", "outputs", "error")

    def __init__(self, fw: Framework, like: Any, device: int):
        self.fw = fw
        self.like = like
        self.device = device
        self.outputs: dict[int, Any] = {}
        self.error: BaseException | None = None


@ffi.def_extern()
def ctpy_allocate(user_data, output_index, info, device_type, device_id, data):  # noqa: ANN001
    state = ffi.from_handle(user_data)
    try:
        if (device_type & 0xFF) | ((device_id & 0xFFFF) << 8) != state.device:
            raise BackendError(
                f"the kernel asked for output {output_index} on device ({device_type}, "
                f"{device_id}) but the call runs on ({state.device & 0xFF}, {state.device >> 8})"
            )
        if output_index in state.outputs:
            raise BackendError(f"the kernel asked for output {output_index} twice")
        shape = tuple(_unpack(info.shape, info.ndim))
        array = state.fw.empty(shape, name_of_ct(info.dtype), state.like)
        state.outputs[output_index] = array
        data[0] = ffi.cast("void*", state.fw.data_ptr(array))
        return _CT_OK
    except BaseException as e:  # noqa: BLE001 - re-raised after ct_op_run returns
        state.error = e
        return _OUT_OF_MEMORY


# ------------------------------------------------------------------------------------------------
# Frames: per-call scratch memory, pooled
# ------------------------------------------------------------------------------------------------

_MAX_TENSORS = lib.CTPY_MAX_TENSORS
_MAX_OUTPUTS = lib.CTPY_MAX_OUTPUTS
_FRAME_SIZE = ffi.sizeof("ctpy_frame")


def _output_capacity(spec: OpSpec) -> int:
    """Output slots a call of this op needs: its outputs, or the most a variadic one may have."""
    return _MAX_OUTPUTS if spec.variadic_output else len(spec.outputs)


class _Frame:
    """A ``ctpy_frame`` and the Python objects that must outlive one call. Frames are taken from
    a pool for one call by one thread (list.pop/append are atomic), so calls share nothing."""

    __slots__ = ("c", "objects", "tensors", "meta", "infos", "summary", "count", "context",
                 "ws_bytes", "ws_align", "keep", "consumed", "backend")

    def __init__(self) -> None:
        c = ffi.new("ctpy_frame*")
        self.c = c
        self.objects = c.objects
        self.tensors = c.tensors
        self.meta = c.meta
        self.infos = c.infos
        self.summary = c.summary
        self.count = ffi.addressof(c, "num_outputs")
        self.context = ffi.addressof(c, "context")
        self.context.struct_size = _CONTEXT_SIZE
        self.ws_bytes = ffi.addressof(c, "workspace_bytes")
        self.ws_align = ffi.addressof(c, "workspace_alignment")
        self.keep: list = []
        self.consumed = False
        self.backend = _NULL  # ct_context.backend: a backend name (char[]) or NULL

    def reset_context(self) -> Any:
        context = self.context
        context.stream = _NULL
        context.workspace = _NULL
        context.workspace_size = 0
        context.allocator = _NULL
        context.backend = self.backend
        return context


_POOL: list[_Frame] = []
_POOL_SIZE = 16
_pool_pop = _POOL.pop
_pool_append = _POOL.append


def _pool_keep(frame: _Frame) -> None:
    """Returns a frame the fast path used (nothing held) to the pool, unless it is full."""
    if len(_POOL) < _POOL_SIZE:
        _pool_append(frame)


def _release(frame: _Frame) -> None:
    if frame.consumed:
        lib.ctpy_release(frame.c, 0, _MAX_TENSORS)
        frame.consumed = False
    frame.keep.clear()
    if len(_POOL) < _POOL_SIZE:
        _POOL.append(frame)


# ------------------------------------------------------------------------------------------------
# Calls
# ------------------------------------------------------------------------------------------------


def _fail(status: int) -> CTensorError:
    return error_for_status(status, last_error())


def _input_name(spec: OpSpec, i: int) -> str:
    fixed = spec.num_fixed_inputs
    if i < fixed:
        return f"{spec.name}: input '{spec.inputs[i]['name']}'"
    return f"{spec.name}: input '{spec.inputs[-1]['name']}'[{i - fixed}]"


def _out_name(spec: OpSpec, j: int, many: bool) -> str:
    return f"{spec.name}: out[{j}]" if many else f"{spec.name}: out"


def _device_tuple(device: int) -> tuple[int, int]:
    return (device & 0xFF, device >> 8)


def _resolve_framework(like: Any, device: int) -> Framework:
    if like is None:
        return NUMPY
    if type(like) is CapsuleType:
        if device & 0xFF == _CPU:
            return NUMPY
        return framework_of(like, _device_tuple(device))  # raises UnsupportedDeviceError
    return framework_of(like, _device_tuple(device))


def _open(frame: _Frame, start: int, count: int, what: str | None) -> None:
    """Opens capsules frame.objects[start:start+count] (see ctpy_open)."""
    rc = _ctpy_open(frame.c, start, count)
    if rc:
        raise open_error(frame.meta[-1 - rc], what or "output")


def call(spec: OpSpec, args: tuple | list, out: Any, attrs: dict | None) -> Any:
    """Runs ``spec`` on the input objects ``args`` (one per input tensor; None for absent optional
    inputs; the variadic input's sequence flattened at the end). ``backend="name"`` among the
    keyword arguments picks the backend whose kernel must run the call (ct_context.backend)."""
    backend = attrs.pop("backend", None) if attrs and "backend" in attrs else None
    try:
        frame = _pool_pop()
    except IndexError:
        frame = _Frame()
    try:
        if backend is not None:
            spec = _on_backend(spec, backend, frame)
        return _call(spec, args, out, attrs, frame)
    finally:
        frame.backend = _NULL
        if frame.consumed:
            lib.ctpy_release(frame.c, 0, _MAX_TENSORS)
            frame.consumed = False
        frame.keep.clear()
        if len(_POOL) < _POOL_SIZE:
            _pool_append(frame)


def _on_backend(spec: OpSpec, backend: Any, frame: _Frame) -> OpSpec:
    """Sets the frame's backend name and returns ``spec`` as calls on one backend see it: every
    run goes through _prepare_context (which passes the name) and none takes a fast path (they
    run without a context)."""
    if not isinstance(backend, str):
        raise InvalidArgumentError(
            f"{spec.name}: backend= takes a backend name (str), got {type(backend).__name__}"
        )
    name = _new("char[]", backend.encode("utf-8"))
    frame.keep.append(name)
    frame.backend = name
    pinned = copy.copy(spec)
    pinned.fast = False
    pinned.has_workspace = True  # asks ct_op_workspace_with_context, which honours the name
    return pinned


class _Plan:
    """What a call needs to know about its tensors' dtypes and devices, cached per op by the
    packed ``meta`` words of its tensors (dtype, device, flags)."""

    __slots__ = ("device", "device_name", "single_device", "dtypes", "targets", "read_only_out")

    def __init__(self, spec: OpSpec, metas: tuple, n: int, first: int):
        device = metas[first] >> 40 if first >= 0 else _CPU
        self.device = device
        self.device_name = DEVICE_NAMES.get(device & 0xFF, "other")
        self.single_device = all(not m or m >> 40 == device for m in metas)
        self.dtypes = tuple(_KEY_NAME.get(m & 0xFFFFFFFF) if m else None for m in metas[:n])
        targets = None
        if self.single_device and (spec.elementwise or n > 1):
            chosen = spec.choose_dtypes(self.device_name, self.dtypes)
            if any(chosen):
                targets = chosen
        self.targets = targets
        self.read_only_out = -1
        for j, m in enumerate(metas[n:]):
            if m & _META_READ_ONLY:
                self.read_only_out = j
                break


_PLAN_CACHE_SIZE = 512


def _call(spec: OpSpec, args: tuple, out: Any, attrs: dict | None, frame: _Frame) -> Any:
    if attrs:
        attr_entry = _attrs_for(spec, attrs)  # held until the call returns
        attr_array, num_attrs = attr_entry[0], attr_entry[1]
    else:
        attr_array, num_attrs = _NULL, 0
    tried = False
    if spec.fast:
        # Plain NumPy arrays and PyTorch tensors on the CPU, read in C in one crossing (see
        # ctpy_fast_call and ctpy_fast_new); anything else answers CTPY_FAST_NEED_PYTHON and
        # takes the paths below. Python scalars of elementwise ops are made 0-d NumPy arrays
        # first when their weak dtype is plain (see _weak_scalars).
        fast_args, first_type = args, type(args[0]) if args else None
        for attempt in (0, 1):
            if out is not None:
                status = _fast_call(frame.c, spec.op, id(fast_args), id(out), attr_array,
                                    num_attrs)
                if status == 0:
                    if type(out) in (tuple, list) and len(out) == 1 and spec.single_output:
                        return out[0]
                    return out
            else:
                fast = _FAST_ALLOCATORS.get(first_type)
                if fast is None:
                    status = _NEED_PYTHON
                else:
                    capacity = _output_capacity(spec)
                    results: list = []
                    status = _fast_new(frame.c, spec.op, id(fast_args), attr_array, num_attrs,
                                       capacity, id(fast[0]), id(fast[1]), id(results))
                    if status == 0:
                        if len(results) == 1 and spec.single_output:
                            return results[0]
                        return tuple(results)
            if status != _NEED_PYTHON:
                if status != _UNSUPPORTED_DTYPE and status != _WORKSPACE_TOO_SMALL:
                    raise _fail(status)
                tried = attempt == 0  # with converted scalars, the general path starts afresh
                break
            if attempt or not spec.elementwise:
                break
            converted = _weak_scalars(spec, args)
            if converted is None:
                break
            fast_args, first_type = converted
    n = len(args)
    objects = frame.objects
    keep = frame.keep
    kinds = _KINDS
    scalars = None
    first = -1
    like = None
    if n > _MAX_TENSORS - 72:
        raise WrongArityError(f"{spec.name}: too many tensors in one call ({n})",
                              lib.CT_ERROR_WRONG_ARITY)
    for i in range(n):
        obj = args[i]
        tp = type(obj)
        kind = kinds.get(tp)
        if kind is None:
            kind = kind_of(tp)
        if kind == _K_NUMPY:
            try:
                capsule = obj.__dlpack__()
            except BufferError:
                capsule = capsule_of(obj, kind, lambda i=i: _input_name(spec, i))
            keep.append(capsule)
            objects[i] = id(capsule)
        elif kind == _K_CAPSULE:
            keep.append(obj)
            objects[i] = id(obj) | 1
            frame.consumed = True
        elif kind == _K_SCALAR:
            if not spec.elementwise:
                raise InputTypeError(
                    f"{_input_name(spec, i)} must be an array: {spec.name} is not elementwise, "
                    f"so it takes no Python scalars (got {tp.__name__})"
                )
            if scalars is None:
                scalars = []
            scalars.append(i)
            objects[i] = 0
            continue
        elif kind == _K_NONE:
            if i < spec.num_fixed_inputs and spec.inputs[i].get("optional"):
                objects[i] = 0
                continue
            raise InputTypeError(f"{_input_name(spec, i)} is required, got None")
        else:
            if kind == _K_NUMPY_SCALAR:
                obj = np.asarray(obj)
                kind = _K_NUMPY
            capsule = capsule_of(obj, kind, lambda i=i: _input_name(spec, i))
            keep.append(capsule)
            objects[i] = id(capsule)
        if first < 0:
            first = i
            like = obj

    n_out = 0
    many = False
    outs: Any = ()
    if out is not None:
        if spec.is_dynamic:
            raise InvalidArgumentError(
                f"{spec.name} allocates its outputs (their size depends on the data); it takes "
                "no out="
            )
        many = type(out) in (tuple, list)
        outs = out if many else (out,)
        n_out = len(outs)
        if n + n_out > _MAX_TENSORS - 8:
            raise WrongArityError(f"{spec.name}: too many outputs in one call ({n_out})",
                                  lib.CT_ERROR_WRONG_ARITY)
        for j in range(n_out):
            o = outs[j]
            tp = type(o)
            kind = kinds.get(tp)
            if kind is None:
                kind = kind_of(tp)
            if kind == _K_CAPSULE:
                keep.append(o)
                objects[n + j] = id(o) | 1
                frame.consumed = True
                continue
            if kind == _K_NUMPY:
                try:
                    capsule = o.__dlpack__(max_version=(1, 0))  # versioned: READ_ONLY visible
                except BufferError:
                    capsule = output_capsule_of(o, kind, lambda j=j: _out_name(spec, j, many))
                keep.append(capsule)
                objects[n + j] = id(capsule)
                continue
            if kind in (_K_NONE, _K_SCALAR, _K_NUMPY_SCALAR):
                raise InputTypeError(
                    f"{_out_name(spec, j, many)} must be an array, got {tp.__name__}"
                )
            capsule = output_capsule_of(o, kind, lambda j=j: _out_name(spec, j, many))
            keep.append(capsule)
            objects[n + j] = id(capsule)

    # Fast paths for the common case (arrays only, on the CPU, a kernel for the dtypes as they
    # are, no workspace): fewest crossings into C. Anything else takes the general path below,
    # with the capsules already open.
    total = n + n_out
    opened = False
    if scalars is None and spec.fast and not tried:
        if out is not None:
            status = _run_fast(frame.c, spec.op, n, n_out, attr_array, num_attrs)
            if status == 0:
                mark_written(outs)
                return outs[0] if many and n_out == 1 and spec.single_output else out
            if 0 < status < _FAST_READ_ONLY:
                index = status - 1
                raise open_error(frame.meta[index], _input_name(spec, index) if index < n
                                 else _out_name(spec, index - n, many))
            if status < 0 and status not in (_UNSUPPORTED_DTYPE, _WORKSPACE_TOO_SMALL):
                raise _fail(status)
            opened = True
        elif n:
            rc = _ctpy_open(frame.c, 0, n)
            if rc:
                raise open_error(frame.meta[-1 - rc], _input_name(spec, -1 - rc))
            opened = True
            device = frame.meta[first] >> 40 if first >= 0 else _CPU
            fw = _FW_CACHE.get((type(like), device)) if device & 0xFF == _CPU else None
            if fw is not None:
                capacity = _output_capacity(spec)
                length = _ctpy_infer(frame.c, spec.op, n, attr_array, num_attrs, capacity)
                if length >= 0:
                    results = _execute(spec, frame, n, fw, None, like, device, attr_array,
                                       num_attrs, length)
                    if fw.finishes:
                        results = [fw.finish(r) for r in results]
                    if spec.variadic_output or len(results) != 1:
                        return tuple(results)
                    return results[0]
                if length != _UNSUPPORTED_DTYPE:
                    raise _fail(length)

    if total:
        if not opened:
            rc = _ctpy_open(frame.c, 0, total)
            if rc:
                index = -1 - rc
                raise open_error(frame.meta[index], _input_name(spec, index) if index < n
                                 else _out_name(spec, index - n, many))
        metas = tuple(_unpack(frame.meta, total))
    else:
        metas = ()
    plans = spec.plans
    plan = plans.get(metas)
    if plan is None:
        plan = _Plan(spec, metas, n, first)
        if len(plans) >= _PLAN_CACHE_SIZE:
            plans.clear()
        plans[metas] = plan
    if plan.read_only_out >= 0:
        raise ReadOnlyOutputError(
            f"{_out_name(spec, plan.read_only_out, n_out > 1 or type(out) in (tuple, list))} "
            "is flagged READ_ONLY by its producer; ctensor never writes into read-only memory"
        )
    device = plan.device

    # The caller's framework: needed to allocate results, scratch, casts and scalars.
    fw: Framework | None = None
    fw_error: CTensorError | None = None
    if out is None or scalars is not None or plan.targets is not None or spec.has_workspace \
            or device & 0xFF != _CPU:
        fw_key = (type(like), device)
        fw = _FW_CACHE.get(fw_key)
        if fw is None:
            try:
                fw = _resolve_framework(like, device)
                _FW_CACHE[fw_key] = fw
                if device == _CPU and type(like) is not CapsuleType and not fw.finishes:
                    allocator = fw.fast_allocator(like)
                    if allocator is not None:
                        _FAST_ALLOCATORS[type(like)] = allocator
            except CTensorError as e:
                fw_error = e  # reported after the C library has had its say about the call

    if (scalars is not None or plan.targets is not None) and fw is not None:
        targets = plan.targets
        dtypes = plan.dtypes
        if scalars is not None:
            dtypes = _scalars_to_arrays(spec, args, scalars, plan.dtypes, frame, fw, like,
                                        device, plan.device_name)
            targets = None
            if plan.single_device:
                chosen = spec.choose_dtypes(plan.device_name, dtypes)
                if any(chosen):
                    targets = chosen
        if targets is not None and _needs_exact_compare(spec, dtypes):
            result = _exact_compare(spec, frame, dtypes, fw, like, device,
                                    None if out is None else frame.tensors[n], attrs)
            if out is None:
                return fw.finish(result) if fw.finishes else result
            if n_out != 1:
                raise WrongArityError(f"{spec.name} produces 1 output; out= gives {n_out}",
                                      lib.CT_ERROR_WRONG_ARITY)
            mark_written(outs)
            return outs[0] if many else out
        if targets is not None:
            slot = _MAX_TENSORS - 1
            for i, target in enumerate(targets):
                if target is not None:
                    _cast(frame, i, slot, target, fw, like, device)
                    slot -= 1

    if out is None:
        results = _execute(spec, frame, n, fw, fw_error, like, device, attr_array, num_attrs)
        if fw.finishes:
            results = [fw.finish(r) for r in results]
        if spec.variadic_output or len(results) != 1:
            return tuple(results)
        return results[0]

    tensors = frame.tensors
    outputs = tensors + n
    context = _NULL
    if spec.has_workspace or device & 0xFF != _CPU:
        context = _prepare_context(spec, frame, n, outputs, n_out, attr_array, num_attrs,
                                   fw or NUMPY, like, device)
    status = _run(spec.op, tensors, n, outputs, n_out, attr_array, num_attrs, context)
    if status == _WORKSPACE_TOO_SMALL and context == _NULL:
        # A kernel of a shape-static op asked for scratch memory (plugins may): ask and retry.
        # Argument errors are detected before anything is written, so the retry is safe.
        context = _prepare_context(spec, frame, n, outputs, n_out, attr_array, num_attrs,
                                   fw or NUMPY, like, device, True)
        status = _run(spec.op, tensors, n, outputs, n_out, attr_array, num_attrs, context)
    if status:
        raise _fail(status)
    mark_written(outs)
    return outs[0] if many and n_out == 1 and spec.single_output else out


_FW_CACHE: dict[tuple, Framework] = {}
# (allocate, dtypes) for ctpy_fast_new, by type of the first input, for inputs in host memory
# (CPU device 0; ctpy_fast_new checks).
_FAST_ALLOCATORS: dict[tuple, tuple] = {}


def _execute(spec: OpSpec, frame: _Frame, n: int, fw: Framework | None,
             fw_error: CTensorError | None, like: Any, device: int, attr_array: Any,
             num_attrs: int, length: int = -1) -> list:
    """Infers, allocates, runs. Inputs are frame.tensors[0:n]; new outputs are opened into the
    slots after them. Returns the new output arrays."""
    op = spec.op
    tensors = frame.tensors
    if length < 0:  # not inferred yet
        capacity = _output_capacity(spec)
        length = _ctpy_infer(frame.c, op, n, attr_array, num_attrs, capacity)
        if length < 0:
            raise _fail(length)
    if fw is None:
        # No framework can hold results on this device: let the C library say first whether it
        # could run the call at all (kernels are looked up by the workspace query).
        status = _workspace(op, tensors, n, _NULL, 0, attr_array, num_attrs, frame.ws_bytes,
                            frame.ws_align)
        if status:
            raise _fail(status)
        raise fw_error
    num_outputs = frame.count[0]
    keep = frame.keep
    if spec.is_dynamic:
        state = _AllocState(fw, like, device)
        handle = ffi.new_handle(state)
        allocator = _new("ct_allocator*")
        allocator.struct_size = _ALLOCATOR_SIZE
        allocator.user_data = handle
        allocator.allocate = lib.ctpy_allocate
        keep.append(handle)
        keep.append(allocator)
        context = _prepare_context(spec, frame, n, _NULL, 0, attr_array, num_attrs, fw, like,
                                   device)
        context.allocator = allocator
        status = _run(op, tensors, n, _NULL, 0, attr_array, num_attrs, context)
        if state.error is not None:
            error, state.error = state.error, None
            raise error
        if status:
            raise _fail(status)
        found = state.outputs
        if len(found) != num_outputs or any(i not in found for i in range(num_outputs)):
            raise BackendError(
                f"{spec.name}: the kernel allocated outputs {sorted(found)} of {num_outputs}",
                lib.CT_ERROR_BACKEND,
            )
        return [found[i] for i in range(num_outputs)]

    objects = frame.objects
    results = []
    values = _unpack(frame.summary, length)
    k = 0
    empty = fw.empty
    capsule_of_result = fw.capsule
    for j in range(num_outputs):
        ndim = values[k + 1]
        array = empty(tuple(values[k + 2 : k + 2 + ndim]), _KEY_NAME.get(values[k]), like)
        k += 2 + ndim
        results.append(array)
        capsule = capsule_of_result(array)
        keep.append(capsule)
        objects[n + j] = id(capsule)
    if spec.has_workspace or device & 0xFF != _CPU:
        _open(frame, n, num_outputs, None)
        outputs = tensors + n
        context = _prepare_context(spec, frame, n, outputs, num_outputs, attr_array, num_attrs,
                                   fw, like, device)
        status = _run(op, tensors, n, outputs, num_outputs, attr_array, num_attrs, context)
    else:
        status = _open_run(frame.c, op, n, num_outputs, attr_array, num_attrs, _NULL)
        if status > 0:
            raise open_error(frame.meta[status - 1], "output")
        if status == _WORKSPACE_TOO_SMALL:
            # A kernel of a shape-static op asked for scratch memory (plugins may): ask and
            # retry. Argument errors are detected before anything is written, so it is safe.
            outputs = tensors + n
            context = _prepare_context(spec, frame, n, outputs, num_outputs, attr_array,
                                       num_attrs, fw, like, device, True)
            status = _run(op, tensors, n, outputs, num_outputs, attr_array, num_attrs, context)
    if status:
        raise _fail(status)
    return results


def _prepare_context(spec: OpSpec, frame: _Frame, n: int, outputs: Any, n_out: int,
                     attr_array: Any, num_attrs: int, fw: Framework, like: Any, device: int,
                     force_workspace: bool = False) -> Any:
    """The frame's ct_context with the caller's stream and, when the kernel asks for it, scratch
    memory in the caller's framework and device."""
    context = frame.reset_context()
    if device & 0xFF != _CPU and like is not None:
        stream = fw.stream(like)
        if stream:
            context.stream = ffi.cast("void*", stream)
    if spec.has_workspace or spec.is_dynamic or force_workspace:
        status = _workspace_in_context(spec.op, frame.tensors, n, outputs, n_out, attr_array,
                                       num_attrs, context, frame.ws_bytes, frame.ws_align)
        if status:
            raise _fail(status)
        size, align = frame.ws_bytes[0], max(int(frame.ws_align[0]), 1)
        if size:
            scratch = fw.scratch(size + align, like)
            frame.keep.append(scratch)
            base = fw.data_ptr(scratch)
            context.workspace = ffi.cast("void*", (base + align - 1) // align * align)
            context.workspace_size = size
    return context


def _run_internal(spec: OpSpec, tensors: list, fw: Framework, like: Any, device: int,
                  attrs: dict | None = None, out_tensor: Any = None) -> list | None:
    """Runs ``spec`` on ct_tensor* ``tensors`` in a frame of its own: new outputs in the caller's
    framework (returned), or into ``out_tensor``."""
    attr_entry = _attrs_for(spec, attrs) if attrs else (_NULL, 0, None)  # held during the call
    attr_array, num_attrs = attr_entry[0], attr_entry[1]
    try:
        inner = _pool_pop()
    except IndexError:
        inner = _Frame()
    try:
        n = len(tensors)
        for k, tensor in enumerate(tensors):
            inner.tensors[k] = tensor
        if out_tensor is None:
            return _execute(spec, inner, n, fw, None, like, device, attr_array, num_attrs)
        inner.tensors[n] = out_tensor
        status = _run(spec.op, inner.tensors, n, inner.tensors + n, 1, attr_array, num_attrs,
                      _NULL)
        if status:
            raise _fail(status)
        return None
    finally:
        _release(inner)


def _tensor_in(frame: _Frame, array: Any, slot: int, fw: Framework) -> Any:
    """The ct_tensor* of an array the binding made, opened into ``slot`` of the frame (kept alive
    until the call ends)."""
    capsule = fw.capsule(array) if not isinstance(array, np.ndarray) else array.__dlpack__()
    frame.keep.append(array)
    frame.keep.append(capsule)
    frame.objects[slot] = id(capsule)
    _open(frame, slot, 1, "intermediate array")
    return frame.tensors[slot]


def _cast(frame: _Frame, i: int, slot: int, target: str, fw: Framework, like: Any,
          device: int) -> None:
    """Replaces input i of the frame by a new array of the caller's framework holding it cast to
    ``target``, made by ctensor's own astype op (the only copy the binding ever makes)."""
    (array,) = _run_internal(get_spec("astype"), [frame.tensors[i]], fw, like, device,
                             {"dtype": target})
    frame.tensors[i] = _tensor_in(frame, array, slot, fw)


# NumPy's comparison ufuncs compare mixed signed/uint64 integers (and Python ints of any size)
# exactly, without the detour through float64 that promotion would take.
_COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater",
                          "greater_equal"})
# What `signed OP unsigned` is when the signed value is negative; mirrored for `unsigned OP
# signed`.
_NEGATIVE_LEFT = {"equal": False, "not_equal": True, "less": True, "less_equal": True,
                  "greater": False, "greater_equal": False}
_NEGATIVE_RIGHT = {"equal": False, "not_equal": True, "less": False, "less_equal": False,
                   "greater": True, "greater_equal": True}
_SIGNED = frozenset({"int8", "int16", "int32", "int64"})
_INT_RANGES = {name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
               for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                            "uint64")}


def _needs_exact_compare(spec: OpSpec, dtypes: tuple) -> bool:
    if spec.name not in _COMPARISONS or len(dtypes) != 2:
        return False
    left, right = dtypes
    return (left in _SIGNED and right == "uint64") or (left == "uint64" and right in _SIGNED)


def _exact_compare(spec: OpSpec, frame: _Frame, dtypes: tuple, fw: Framework, like: Any,
                   device: int, out_tensor: Any, attrs: dict | None) -> Any:
    """signed OP uint64, exactly: the signed operand wrapped to uint64 compares right wherever
    it is not negative; where it is, the answer is fixed."""
    signed_left = dtypes[0] in _SIGNED
    s_index = 0 if signed_left else 1
    signed, unsigned = frame.tensors[s_index], frame.tensors[1 - s_index]
    slot = _MAX_TENSORS - 1
    (wrapped,) = _run_internal(get_spec("astype"), [signed], fw, like, device,
                               {"dtype": "uint64"})
    wrapped_t = _tensor_in(frame, wrapped, slot, fw)
    operands = [wrapped_t, unsigned] if signed_left else [unsigned, wrapped_t]
    (as_unsigned,) = _run_internal(spec, operands, fw, like, device, attrs)
    as_unsigned_t = _tensor_in(frame, as_unsigned, slot - 1, fw)
    zero_t = _tensor_in(frame, _scalar_array(0, dtypes[s_index], fw, like, device), slot - 2, fw)
    (negative,) = _run_internal(get_spec("less"), [signed, zero_t], fw, like, device)
    negative_t = _tensor_in(frame, negative, slot - 3, fw)
    fixed = (_NEGATIVE_LEFT if signed_left else _NEGATIVE_RIGHT)[spec.name]
    fixed_t = _tensor_in(frame, _scalar_array(fixed, "bool", fw, like, device), slot - 4, fw)
    result = _run_internal(get_spec("where"), [negative_t, fixed_t, as_unsigned_t], fw, like,
                           device, None, out_tensor)
    return None if result is None else result[0]


def _scalar_array(value: Any, dtype: str, fw: Framework, like: Any, device: int) -> Any:
    """A 0-d array holding a Python scalar, readable on the call's device."""
    if dtype not in DTYPE_INDEX and dtype != "bfloat16":
        return np.asarray(value, np.dtype(dtype))  # a dtype ctensor lacks: the C library refuses it
    if dtype != "bfloat16" and (fw is NUMPY or device & 0xFF == _CPU):
        # A CPU scalar is read in place whatever the caller's framework.
        return np.asarray(value, numpy_dtype(dtype))  # OverflowError when it does not fit
    return fw.scalar(value, dtype, like)


def _wide_python_int(value: int, op: str) -> tuple[str, Any]:
    """The dtype and value a Python int that does not fit its partner's integer dtype takes in
    an op where NumPy 2 still computes exactly: float64 for true division; for comparisons the
    smallest of int64, uint64 that holds it, else an infinity of its sign (same answers)."""
    if op == "divide":
        return "float64", float(value)
    lo, hi = _INT_RANGES["int64"]
    if lo <= value <= hi:
        return "int64", value
    if 0 <= value <= _INT_RANGES["uint64"][1]:
        return "uint64", value
    return "float64", float("inf") if value > 0 else float("-inf")


_PLAIN_SCALARS = (bool, int, float)
# numpy dtype of a weak scalar by (Python type, partner's dtype object): see _weak_scalars.
_WEAK_SCALAR_DTYPES: dict[tuple, np.dtype | None] = {}


def _weak_scalars(spec: OpSpec, args: tuple) -> tuple[tuple, type] | None:
    """``args`` with its Python scalars made 0-d NumPy arrays of their weak dtype (NEP 50), for
    the C fast paths; None when this simple conversion does not apply (no array, a scalar with
    no array of its promotion group, bool or bfloat16 partners, ints in ops that take any int
    exactly). The general path then handles the call."""
    first_type = None
    for a in args:
        if type(a) not in _PLAIN_SCALARS:
            first_type = type(a)
            break
    if first_type is None:
        return None
    group_of = spec.group_index("cpu")
    converted = list(args)
    for i, value in enumerate(args):
        tp = type(value)
        if tp not in _PLAIN_SCALARS:
            continue
        if tp is int and (spec.name in _COMPARISONS or spec.name == "divide"):
            return None
        partners = [args[j] for j in group_of.get(i, ()) if type(args[j]) not in _PLAIN_SCALARS]
        if len(partners) != 1:
            return None
        partner_dtype = getattr(partners[0], "dtype", None)
        key = (tp, partner_dtype)
        try:
            dtype = _WEAK_SCALAR_DTYPES[key]
        except KeyError:
            dtype = _WEAK_SCALAR_DTYPES[key] = _weak_scalar_dtype(value, partner_dtype)
        except TypeError:  # an unhashable dtype attribute: not a plain array
            return None
        if dtype is None:
            return None
        converted[i] = np.asarray(value, dtype)  # OverflowError when it does not fit, as NumPy
    return tuple(converted), first_type


def _weak_scalar_dtype(value: Any, partner_dtype: Any) -> np.dtype | None:
    try:
        name = to_dtype_name(partner_dtype)
    except Exception:  # noqa: BLE001 - not a dtype we know: the general path decides
        return None
    if name in ("bool", "bfloat16") or name not in DTYPE_INDEX:
        return None
    dtype = scalar_dtype(value, name)
    return np.dtype(dtype) if dtype in DTYPE_INDEX and dtype != "bfloat16" else None


def _scalars_to_arrays(spec: OpSpec, args: tuple | list, scalars: list[int],
                       dtypes: tuple, frame: _Frame, fw: Framework, like: Any, device: int,
                       device_name: str) -> tuple:
    """Python scalars become 0-d arrays with the dtype NumPy 2 gives a weak scalar next to the
    arrays of its promotion group (the inputs whose dtypes must agree)."""
    dtypes = list(dtypes)
    group_of = spec.group_index(device_name)
    for i in scalars:
        group = group_of.get(i, (i,))
        partners = [dtypes[j] for j in group if j not in scalars and dtypes[j] in DTYPE_INDEX]
        other = promote(partners) if partners else None
        value = args[i]
        if other is None or other == "bool":
            dtype = scalar_dtype(value, other)  # may depend on the value (large ints)
        else:
            key = (type(value), other)
            dtype = _SCALAR_DTYPES.get(key)
            if dtype is None:
                dtype = _SCALAR_DTYPES[key] = scalar_dtype(value, other)
        if type(value) is int and (spec.name in _COMPARISONS or spec.name == "divide"):
            bounds = _INT_RANGES.get(dtype)
            if bounds is not None and not bounds[0] <= value <= bounds[1]:
                dtype, value = _wide_python_int(value, spec.name)
        array = _scalar_array(value, dtype, fw, like, device)
        capsule = fw.capsule(array) if not isinstance(array, np.ndarray) else array.__dlpack__()
        frame.keep.append(array)
        frame.keep.append(capsule)
        frame.objects[i] = id(capsule)
        _open(frame, i, 1, _input_name(spec, i))
        dtypes[i] = dtype
    return tuple(dtypes)


# Weak scalar dtype by (Python type, dtype of the arrays it meets), for array dtypes where the
# value does not matter (NumPy checks that it fits when the 0-d array is made).
_SCALAR_DTYPES: dict[tuple[type, str], str] = {}

# Attribute arrays are cached per op and value (they are only read by C, so threads may share).
_ATTR_CACHE_SIZE = 256


def _attrs_for(spec: OpSpec, attrs: dict) -> tuple[Any, int, list]:
    """(ct_attr array, count, what keeps its strings and lists alive). The caller holds the
    whole tuple for the duration of the call: another thread may drop it from the cache."""
    try:
        key = tuple((name, type(value), value) for name, value in attrs.items())
        hash(key)
    except TypeError:
        key = None
    cache = spec.attr_cache
    if key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    keep: list = []
    array, count = _make_attrs(spec, attrs, keep)
    entry = (array, count, keep)
    if key is not None:
        if len(cache) >= _ATTR_CACHE_SIZE:
            cache.clear()
        cache[key] = entry
    return entry


# ------------------------------------------------------------------------------------------------
# Generated wrappers
# ------------------------------------------------------------------------------------------------

_RESERVED = {"out", "attrs", "_spec", "_call"}


def _py_name(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name) or name in _RESERVED:
        return name + "_"
    return name


def _attr_default_text(attr: dict) -> str:
    if attr.get("required"):
        return "required"
    return repr(attr.get("default"))


def _signature(spec: OpSpec) -> inspect.Signature:
    """The signature the generated function has (see make_op), with the attributes spelled out:
    required inputs and the variadic one positional-only, then optional inputs, then out= and
    the attributes keyword-only."""
    P = inspect.Parameter
    head, optional = [], []
    for i, inp in enumerate(spec.inputs):
        name = _py_name(inp["name"])
        if not inp.get("variadic") and inp.get("optional") and i >= spec.num_required_inputs:
            optional.append(P(name, P.POSITIONAL_OR_KEYWORD, default=None))
        else:
            head.append(P(name, P.POSITIONAL_ONLY))
    params = head + optional + [P("out", P.KEYWORD_ONLY, default=None)]
    for attr in spec.attrs:
        default = P.empty if attr.get("required") else attr.get("default")
        params.append(P(_py_name(attr["name"]), P.KEYWORD_ONLY, default=default))
    return inspect.Signature(params)


def _docstring(spec: OpSpec) -> str:
    lines = [f"{spec.name}{_signature(spec)}", ""]
    if spec.doc:
        lines += [spec.doc.strip(), ""]
    lines.append(
        f"Category: {spec.category}."
        + (f" Flags: {', '.join(spec.flags)}." if spec.flags else "")
    )
    lines += ["", "Parameters", "----------"]
    for inp in spec.inputs:
        kind = "sequence of arrays" if inp.get("variadic") else "array"
        if inp.get("optional"):
            kind += ", optional"
        lines.append(f"{_py_name(inp['name'])} : {kind}")
        if inp.get("doc"):
            lines.append(f"    {inp['doc']}")
    many = len(spec.outputs) > 1 or spec.variadic_output
    if spec.is_dynamic:
        lines += ["out : not accepted", "    The op allocates its outputs (their size depends "
                  "on the data)."]
    else:
        lines += [f"out : {'tuple of arrays' if many else 'array'}, optional",
                  "    Write the result into this memory (checked by the C library) and return "
                  "it."]
    lines += ["backend : str, optional",
              "    Run the kernel of this backend and no other (a name from ctensor.backends()); "
              "by default the kernel registered last for the dtypes runs."]
    for attr in spec.attrs:
        kind = attr["type"].replace("_", " ")
        if attr.get("nullable"):
            kind += " or None"
        lines.append(f"{_py_name(attr['name'])} : {kind}, "
                     + ("required" if attr.get("required") else f"default {attr.get('default')!r}"))
        if attr.get("doc"):
            lines.append(f"    {attr['doc']}")
    lines += ["", "Returns", "-------"]
    for output in spec.outputs:
        kind = "tuple of arrays" if output.get("variadic") else "array"
        lines.append(f"{output['name']} : {kind}")
        if output.get("doc"):
            lines.append(f"    {output['doc']}")
    if spec.kernels:
        lines += ["", "Dtypes", "------"]
        for device, sigs in sorted(spec.kernels.items()):
            firsts = sorted({s[0] for s in sigs if s}, key=lambda d: DTYPE_INDEX.get(d, 99))
            lines.append(f"{device}: {', '.join(firsts)}")
            for sig in sigs:
                n_in = len(spec.inputs)
                lines.append(f"    ({', '.join(sig[:n_in])}) -> ({', '.join(sig[n_in:])})")
    lines += ["", "Inputs are read through DLPack without copies; results are allocated in the "
              "framework and on the device of the first array argument."]
    return "\n".join(lines)


def make_op(spec: OpSpec):  # noqa: ANN201
    """The Python function for one operator."""
    positional = []
    call_args = []
    names = [_py_name(inp["name"]) for inp in spec.inputs]
    variadic = None
    for i, inp in enumerate(spec.inputs):
        name = names[i]
        if inp.get("variadic"):
            variadic = name
        elif inp.get("optional") and i >= spec.num_required_inputs:
            positional.append(f"{name}=None")
            call_args.append(name)
        else:
            positional.append(name)
            call_args.append(name)
    # Required inputs are positional-only; optional ones may also be given by keyword.
    required = [p for p in positional if "=" not in p]
    optional = [p for p in positional if "=" in p]
    head = list(required)
    if variadic is not None:
        head.append(variadic)
    params = ", ".join(head + (["/"] if head else []) + optional + ["*", "out=None", "**attrs"])
    packed = f"({', '.join(call_args)}{',' if len(call_args) == 1 else ''})"
    if variadic is not None:
        packed = f"{packed} + tuple({variadic})"
    source = (
        f"def {_py_name(spec.name)}({params}):\n"
        f"    return _call(_spec, {packed}, out, attrs)\n"
    )
    if variadic is None and spec.fast:
        # The commonest call (arrays, out=, no attributes) goes straight to ctpy_fast_call;
        # anything it does not take (CTPY_FAST_NEED_PYTHON, or dtypes that need casts or a
        # workspace) goes through call(), which handles every case. Errors are raised at once.
        source = (
            f"def {_py_name(spec.name)}({params}):\n"
            f"    args = {packed}\n"
            f"    if out is None or attrs:\n"
            f"        return _call(_spec, args, out, attrs)\n"
            f"    try:\n"
            f"        frame = _pool_pop()\n"
            f"    except IndexError:\n"
            f"        frame = _Frame()\n"
            f"    status = _fast_call(frame.c, _op, _id(args), _id(out), _NULL, 0)\n"
            f"    if status == 0:\n"
            f"        _pool_append(frame)\n"
            f"        if _type(out) in _SEQUENCES and len(out) == 1 and _single:\n"
            f"            return out[0]\n"
            f"        return out\n"
            f"    if status < 0 and status not in _RETRY:\n"
            f"        error = _fail(status)\n"
            f"        _pool_append(frame)\n"
            f"        raise error\n"
            f"    _pool_append(frame)\n"
            f"    return _call(_spec, args, out, attrs)\n"
        )
        fast_names = {
            "_op": spec.op, "_pool_pop": _pool_pop, "_pool_append": _pool_keep,
            "_Frame": _Frame, "_fast_call": _fast_call, "_id": id, "_NULL": _NULL,
            "_type": type, "_SEQUENCES": (tuple, list), "_single": spec.single_output,
            "_fail": _fail, "_RETRY": (_UNSUPPORTED_DTYPE, _WORKSPACE_TOO_SMALL),
        }
    else:
        fast_names = {}
    namespace: dict[str, Any] = {"_spec": spec, "_call": call, **fast_names}
    exec(compile(source, f"<ctensor.ops.{spec.name}>", "exec"), namespace)  # noqa: S102
    function = namespace[_py_name(spec.name)]
    if fast_names:
        # The commonest call runs from C (FastOp); the Python function takes every other.
        _describe_function(function, spec)
        capacity = _output_capacity(spec)
        function = FastOp(spec.name, function, len(call_args), spec.single_output, capacity)
    return _describe_function(function, spec)


def _describe_function(function: Any, spec: OpSpec) -> Any:
    function.__name__ = spec.name
    function.__qualname__ = spec.name
    function.__module__ = "ctensor.ops"
    function.__doc__ = _docstring(spec)
    function.__signature__ = _signature(spec)
    function.spec = spec
    return function


def _configure_fast_path() -> None:
    """Gives FastOp the allocators by input type (_FAST_ALLOCATORS, which _call fills)."""
    configure(allocators=_FAST_ALLOCATORS)


_configure_fast_path()


def build_all() -> dict[str, Any]:
    """A function per registered operator, by name."""
    return {name: make_op(spec) for name, spec in sorted(all_specs().items())}


def unknown_op(name: str) -> UnknownOpError:
    """The error for an operator name the registry does not have, with the C library's message."""
    found = ffi.new("const ct_op**")
    status = lib.ct_op_find(str(name).encode("utf-8", "replace"), found)
    if status == _CT_OK:  # registered after import (not possible with built-ins today)
        return UnknownOpError(f"operator {name!r} is not bound; reload ctensor",
                              lib.CT_ERROR_UNKNOWN_OP)
    error = error_for_status(status, last_error())
    if not isinstance(error, UnknownOpError):  # pragma: no cover
        return UnknownOpError(str(error), lib.CT_ERROR_UNKNOWN_OP)
    return error
