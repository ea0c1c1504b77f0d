"""The call path from Python: ``call(spec, args, out, attrs)`` runs one operator call.

A call of ``ctensor.ops.<name>`` first meets its FastOp (C): arrays of the commonest types,
positional, with or without ``out=`` and without attributes, run from there in one crossing.
Every call FastOp declines or does not take comes here, once:

1. the fast path from Python (``ctpy_fast_call``/``ctpy_fast_new``, the same C reader), for the
   calls FastOp does not take (attributes); after FastOp declined, only when Python scalars of
   an elementwise op were made 0-d arrays of their weak dtype (NEP 50), which it may take now;
2. the general path: calls on torch tensors first meet torch's rules (``_torch_rules``:
   autograd, writes into inference tensors or tensors that require grad, memory format); then
   inputs and outputs are read as DLPack views (``_read_inputs``,
   ``_read_outputs``) and opened; calls that need nothing more run at once (``_open_and_run``);
3. otherwise the type resolution of the views (``_promotion``) says which dtypes the kernel runs
   in; Python scalars become 0-d arrays, inputs are cast (by ctensor's own ``astype``), signed
   and uint64 integers compare exactly;
4. ``ct_op_infer`` gives the outputs' shapes and dtypes; outputs are allocated in the caller's
   framework and device unless ``out=`` names them (the C library checks them); the workspace is
   asked for when a kernel needs one; ``ct_op_run`` runs (``_run``).

No state is shared between calls except read-mostly caches, so many threads may call at once
(cffi releases the GIL while C runs).
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import numpy as np

from . import _dlpack
from ._attrs import attrs_for
from ._dlpack import (
    CapsuleType,
    InputTypeError,
    capsule_of,
    export_numpy,
    kind_of,
    mark_written,
    open_error,
    output_capsule_of,
    torch_tensors,
)
from ._errors import (
    AttributeTypeError,
    CTensorError,
    InvalidArgumentError,
    ReadOnlyOutputError,
    WrongArityError,
)
from ._frame import (
    MAX_TENSORS,
    Frame,
    fail,
    input_name,
    out_name,
    output_capacity,
    pool_pop,
    release,
    tensor_name,
)
from ._frameworks import NUMPY, Framework, framework_of
from ._lib import ffi, lib
from ._profile import recorded_call, torch_profiling
from ._promotion import promote_call, resolve_types, weak_scalars
from ._registry import OpSpec
from ._run import execute, prepare_context
from ._streams import (
    call_stream,
    jax_uses_cuda,
    needs_torch_order,
    order_torch,
    producer_stream,
)
from ._torch_rules import PLAIN, layout_framework, route

__all__ = ["call", "FAST_ALLOCATORS"]

_WORKSPACE_TOO_SMALL = lib.CT_ERROR_WORKSPACE_TOO_SMALL
_UNSUPPORTED_DTYPE = lib.CT_ERROR_UNSUPPORTED_DTYPE
_CPU = lib.CT_DEVICE_CPU
_KINDS = _dlpack._KINDS
_K_NONE = _dlpack.NONE
_K_SCALAR = _dlpack.SCALAR
_K_CAPSULE = _dlpack.CAPSULE
_K_NUMPY = _dlpack.NUMPY
_K_NUMPY_SCALAR = _dlpack.NUMPY_SCALAR
_K_TORCH = _dlpack.TORCH
_K_JAX = _dlpack.JAX
_K_DLPACK = _dlpack.DLPACK
_modules = sys.modules
_run = lib.ct_op_run
_ctpy_open = lib.ctpy_open
_ctpy_infer = lib.ctpy_infer
_run_fast = lib.ctpy_run_fast
_fast_call = lib.ctpy_fast_call
_fast_new = lib.ctpy_fast_new
_NEED_PYTHON = lib.CTPY_FAST_NEED_PYTHON
_FAST_READ_ONLY = lib.CTPY_FAST_READ_ONLY
_NULL = ffi.NULL
_unpack = ffi.unpack
_NO_OUTPUTS: tuple = ((), 0, False)
_OPENED = object()  # _open_and_run: the views are open, the general path goes on

# The caller's framework by (type of the first array argument, packed device).
_FW_CACHE: dict[tuple, Framework] = {}
# (allocate, dtypes) for ctpy_fast_new, by type of the first input, for inputs in host memory
# (CPU device 0; ctpy_fast_new checks). Filled by _framework_of; FastOp reads it too.
FAST_ALLOCATORS: dict[tuple, tuple] = {}
# JAX array types by whether they are tracers (the abstract arrays of jit, vmap and grad).
_JAX_TRACERS: dict[type, bool] = {}


class _TracedCall(Exception):
    """Raised by _read_inputs on a JAX tracer: the call runs as a ctensor.jax call instead."""


def call(
    spec: OpSpec, args: tuple | list, out: Any, attrs: dict | None, fast_op_declined: bool = False
) -> Any:
    """Runs ``spec`` on the input objects ``args`` (one per input tensor; None for absent optional
    inputs; the variadic input's sequence flattened at the end). ``backend="name"`` among the
    keyword arguments picks the backend whose kernel must run the call (ct_context.backend).
    ``fast_op_declined``: the operator's FastOp read these arguments and did not run the call,
    so the fast path is not tried again on them."""
    if torch_profiling():  # under torch.profiler the call shows as "ctensor::<name>"
        return recorded_call(call, spec, args, out, attrs, fast_op_declined)
    backend = attrs.pop("backend", None) if attrs and "backend" in attrs else None
    device = attrs.pop("device", None) if attrs and "device" in attrs else None
    try:
        frame = pool_pop()
    except IndexError:
        frame = Frame()
    try:
        if backend is not None:
            spec = _on_backend(spec, backend, frame)
        if device is not None:
            target = _device_of_call(spec, args, out, device)
            if target[0] != _CPU:
                return _call_on_device(spec, args, attrs, frame, target)
        return _call(spec, args, out, attrs, frame, fast_op_declined)
    except (_TracedCall, AttributeTypeError) as error:
        # An AttributeTypeError for an attribute given as a JAX tracer (a traced dropout offset
        # inside jax.jit, on inputs that are not traced): ctensor.jax takes such attributes.
        if isinstance(error, AttributeTypeError) and not _has_traced_attr(attrs):
            raise
        if backend is not None or device is not None:
            raise InvalidArgumentError(
                f"{spec.name}: backend= and device= are not available inside jax.jit, vmap or "
                "grad (the call runs as an XLA custom call on XLA's device)"
            ) from None
    finally:
        release(frame)
    return _traced_call(spec, args, out, attrs)


def _has_traced_attr(attrs: dict | None) -> bool:
    if not attrs or "jax" not in sys.modules:
        return False
    return any(_is_jax_tracer(type(value)) for value in attrs.values())


def _is_jax_tracer(tp: type) -> bool:
    traced = _JAX_TRACERS.get(tp)
    if traced is None:
        import jax

        traced = _JAX_TRACERS[tp] = issubclass(tp, jax.core.Tracer)
    return traced


def _traced_call(spec: OpSpec, args: tuple | list, out: Any, attrs: dict | None) -> Any:
    """A call with JAX tracers among its inputs (inside jax.jit, vmap or grad), whose memory
    DLPack cannot reach: it runs as ``ctensor.jax.<name>`` (an XLA custom call, with its
    gradient), arguments passed in that function's order."""
    if out is not None:
        raise InvalidArgumentError(
            f"{spec.name}: out= cannot be used inside jax.jit, vmap or grad (JAX arrays are "
            "immutable); use the returned array"
        )
    from . import jax as ctensor_jax

    head, tail = [], []
    n = spec.num_fixed_inputs
    for i, inp in enumerate(spec.inputs):
        if inp.get("variadic"):
            head.append(list(args[n:]))
        elif inp.get("optional") and i >= spec.num_required_inputs:
            tail.append(args[i])
        else:
            head.append(args[i])
    return getattr(ctensor_jax, spec.name)(*head, *tail, **(attrs or {}))


def _device_of_call(spec: OpSpec, args: tuple | list, out: Any, device: Any) -> tuple[int, int]:
    """The DLPack device that ``device=`` names, for a call without array arguments (an op
    without tensor inputs, such as random_uniform or arange, or whose optional inputs are all
    left out): where its results are allocated and its kernel runs. Without ``device=`` such a
    call runs on the CPU and returns NumPy arrays."""
    from ._device_array import parse_device

    if any(a is not None for a in args):
        raise InvalidArgumentError(
            f"{spec.name}: device= is for calls without array arguments; the arrays say where "
            "this call runs"
        )
    if out is not None:
        raise InvalidArgumentError(f"{spec.name}: pass out= or device=, not both")
    return parse_device(device)


def _call_on_device(
    spec: OpSpec, args: tuple | list, attrs: dict | None, frame: Frame, device: tuple[int, int]
) -> Any:
    """Runs a call without array arguments on ``device``: results are ctensor DeviceArrays
    there (the kernel is the device's, picked from the outputs' device)."""
    from ._device_array import DeviceArray

    like = DeviceArray.empty((0,), "uint8", device)
    fw = framework_of(like, device)
    if attrs:
        attr_entry = attrs_for(spec, attrs)  # held until the call returns
        attr_array, num_attrs = attr_entry[0], attr_entry[1]
    else:
        attr_array, num_attrs = _NULL, 0
    n = len(args)
    _read_inputs(spec, tuple(args), frame)  # absent optional inputs only
    if n:
        rc = _ctpy_open(frame.c, 0, n)
        if rc:
            raise open_error(frame.meta[-1 - rc], input_name(spec, -1 - rc))
    packed = (device[0] & 0xFF) | (device[1] << 8)
    results = execute(spec, frame, n, fw, None, like, packed, attr_array, num_attrs)
    if spec.variadic_output or len(results) != 1:
        return tuple(results)
    return results[0]


def _on_backend(spec: OpSpec, backend: Any, frame: Frame) -> OpSpec:
    """Sets the frame's backend name and returns ``spec`` as calls on one backend see it: every
    run goes through prepare_context (which passes the name) and none takes a fast path (they
    run without a context)."""
    if not isinstance(backend, str):
        raise InvalidArgumentError(
            f"{spec.name}: backend= takes a backend name (str), got {type(backend).__name__}"
        )
    name = ffi.new("char[]", backend.encode("utf-8"))
    frame.keep.append(name)
    frame.backend = name
    pinned = copy.copy(spec)
    pinned.fast = False
    pinned.has_workspace = True  # asks ct_op_workspace_with_context, which honours the name
    return pinned


def _call(
    spec: OpSpec, args: tuple, out: Any, attrs: dict | None, frame: Frame, fast_op_declined: bool
) -> Any:
    """The fast path from Python, at most once per set of arguments, then the general path."""
    if attrs:
        attr_entry = attrs_for(spec, attrs)  # held until the call returns
        attr_array, num_attrs = attr_entry[0], attr_entry[1]
    else:
        attr_array, num_attrs = _NULL, 0
    no_kernel = False
    if spec.fast:
        # Plain NumPy arrays and PyTorch tensors on the CPU, read in C in one crossing (see
        # ctpy_fast_call and ctpy_fast_new); anything else answers CTPY_FAST_NEED_PYTHON and
        # takes the general path. Python scalars of elementwise ops are made 0-d NumPy arrays
        # first when their weak dtype is plain (see weak_scalars).
        fast_args, first_type = args, type(args[0]) if args else None
        if fast_op_declined:  # FastOp read `args`: only converted scalars are new to the reader
            converted = weak_scalars(spec, args) if spec.elementwise else None
            fast_args, first_type = converted or (None, None)
        while fast_args is not None:
            if out is not None:
                status = _fast_call(frame.c, spec.op, id(fast_args), id(out), attr_array, num_attrs)
                if status == 0:
                    if type(out) in (tuple, list) and len(out) == 1 and spec.single_output:
                        return out[0]
                    return out
            else:
                fast = FAST_ALLOCATORS.get(first_type)
                if fast is None:
                    status = _NEED_PYTHON
                else:
                    results: list = []
                    status = _fast_new(
                        frame.c,
                        spec.op,
                        id(fast_args),
                        attr_array,
                        num_attrs,
                        output_capacity(spec),
                        id(fast[0]),
                        id(fast[1]),
                        id(results),
                    )
                    if status == 0:
                        if len(results) == 1 and spec.single_output:
                            return results[0]
                        return tuple(results)
            if status != _NEED_PYTHON:
                if status != _UNSUPPORTED_DTYPE and status != _WORKSPACE_TOO_SMALL:
                    raise fail(status)
                # No kernel for these views as they are; with converted scalars, the general
                # path starts afresh.
                no_kernel = fast_args is args
                break
            if fast_args is not args or not spec.elementwise:
                break
            fast_args, first_type = weak_scalars(spec, args) or (None, None)
    return _general(spec, args, out, attrs, frame, attr_array, num_attrs, no_kernel)


def _general(
    spec: OpSpec,
    args: tuple,
    out: Any,
    attrs: dict | None,
    frame: Frame,
    attr_array: Any,
    num_attrs: int,
    no_kernel: bool,
) -> Any:
    """The general path: DLPack views, type resolution, casts, allocation, workspace, run.
    ``no_kernel``: the fast path found no kernel for the views as they are (or a workspace)."""
    if "torch" in _modules:
        if _torch_data_less(args, out):
            return _torch_op_call(spec, args, out, attrs)
        # torch's autograd and write rules (the fast paths leave these calls here)
        routed = route(spec, args, out, attrs, frame.backend)
        if routed is not PLAIN:
            return routed
    n = len(args)
    scalars, first, like = _read_inputs(spec, args, frame)
    outs, n_out, many = _NO_OUTPUTS if out is None else _read_outputs(spec, out, n, frame, like)
    if like is None and n_out:
        # No array input (random_uniform, arange with out=): the output's framework gives the
        # stream and the scratch memory, on the output's device.
        like = outs[0]
    total = n + n_out
    opened = False
    # Results in a channels_last first input's memory format, where torch's own op keeps it.
    layout = (
        layout_framework(spec, like) if out is None and _KINDS.get(type(like)) == _K_TORCH else None
    )
    if scalars is None and spec.fast and not no_kernel and layout is None:
        result = _open_and_run(
            spec, frame, n, n_out, out, outs, many, first, like, attr_array, num_attrs
        )
        if result is not _OPENED:
            return result
        opened = True
    if total:
        if not opened:
            rc = _ctpy_open(frame.c, 0, total)
            if rc:
                index = -1 - rc
                raise open_error(frame.meta[index], tensor_name(spec, index, n, many))
        metas = tuple(_unpack(frame.meta, total))
    else:
        metas = ()
    resolution = resolve_types(spec, metas, n, first)
    if resolution.read_only_out >= 0:
        raise ReadOnlyOutputError(
            f"{out_name(spec, resolution.read_only_out, n_out > 1 or many)} "
            "is flagged READ_ONLY by its producer; ctensor never writes into read-only memory"
        )
    device = resolution.device

    # The caller's framework: needed to allocate results, scratch, casts and scalars.
    fw: Framework | None = None
    fw_error: CTensorError | None = None
    if (
        out is None
        or scalars is not None
        or resolution.targets is not None
        or spec.has_workspace
        or device & 0xFF != _CPU
    ):
        fw, fw_error = _framework_of(like, device)
        if layout is not None and fw is not None:
            fw = layout
    if device & 0xFF != _CPU:
        # The stream the call runs on (the producers on CUDA devices were told already), and
        # torch's pending work on the tensors ordered before it where it is another stream.
        stream = call_stream(frame, like)
        if "torch" in _modules and needs_torch_order(fw):
            tensors = torch_tensors(args) + torch_tensors(outs)
            if tensors:
                order_torch(stream, tensors)
    if (scalars is not None or resolution.targets is not None) and fw is not None:
        result = promote_call(
            spec, args, out, attrs, frame, resolution, scalars, fw, like, outs, n_out, many
        )
        if result is not None:
            return result

    if out is None:
        results = execute(spec, frame, n, fw, fw_error, like, device, attr_array, num_attrs)
        if fw.finishes:
            results = [fw.finish(r) for r in results]
        if spec.variadic_output or len(results) != 1:
            return tuple(results)
        return results[0]
    return _run_with_out(
        spec, frame, n, outs, n_out, out, many, attr_array, num_attrs, fw or NUMPY, like, device
    )


def _torch_data_less(args: tuple, out: Any) -> bool:
    """Whether a torch tensor without memory ctensor can read is among the arguments: a
    ``__torch_dispatch__`` subclass (FakeTensor, FunctionalTensor), a meta tensor, or a
    functorch wrapper (vmap's batched tensors, grad's). Only the general path asks: FastOp and
    the fast paths decline them."""
    global _TORCH_TYPES
    if _TORCH_TYPES is None:
        torch = sys.modules["torch"]
        wrapped = torch._C._functorch.is_functorch_wrapped_tensor
        _TORCH_TYPES = (torch.Tensor, torch.nn.Parameter, wrapped)
    tensor, parameter, wrapped = _TORCH_TYPES
    for value in args:
        tp = type(value)
        if tp is tensor or tp is parameter:
            if value.is_meta or wrapped(value):
                return True
        elif isinstance(value, tensor):
            return True
    if out is not None:
        return _torch_data_less(tuple(out) if type(out) in (tuple, list) else (out,), None)
    return False


_TORCH_TYPES: tuple | None = None


def _torch_op_call(spec: OpSpec, args: tuple, out: Any, attrs: dict | None) -> Any:
    """A call on data-less torch tensors, made as the ``torch.ops.ctensor.<name>`` call (see
    ctensor.torch._route): torch's dispatcher runs the op's fake, vmap or autograd rule."""
    from .torch._route import routable, torch_call

    if not routable(spec, args, out, attrs):
        raise InputTypeError(
            f"{spec.name}: these torch tensors have no memory ctensor can read (FakeTensor, "
            "meta or functorch tensors); such calls go through torch.ops.ctensor, which takes "
            "torch tensors and Python scalars only, without backend= or device="
        )
    return torch_call(spec, args, out, attrs)


def _read_inputs(spec: OpSpec, args: tuple, frame: Frame) -> tuple[list | None, int, Any]:
    """Puts a DLPack capsule of each input in frame.objects (scalars and absent optional inputs:
    0). Returns (indices of the Python scalars or None, index of the first array argument or
    -1, that array)."""
    n = len(args)
    objects = frame.objects
    keep = frame.keep
    kinds = _KINDS
    scalars = None
    first = -1
    like = None
    if n > MAX_TENSORS - 72:
        raise WrongArityError(
            f"{spec.name}: too many tensors in one call ({n})", lib.CT_ERROR_WRONG_ARITY
        )
    for i in range(n):
        obj = args[i]
        tp = type(obj)
        kind = kinds.get(tp)
        if kind is None:
            kind = kind_of(tp)
        if kind == _K_NUMPY:
            try:
                capsule = obj.__dlpack__()
            except (BufferError, TypeError):  # read-only, bfloat16, bool before NumPy 1.25
                capsule = capsule_of(obj, kind, lambda i=i: input_name(spec, i))
            keep.append(capsule)
            objects[i] = id(capsule)
        elif kind == _K_CAPSULE:
            keep.append(obj)
            objects[i] = id(obj) | 1
            frame.consumed = True
        elif kind == _K_SCALAR:
            if not spec.elementwise:
                raise InputTypeError(
                    f"{input_name(spec, i)} must be an array: {spec.name} is not elementwise, "
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
            raise InputTypeError(f"{input_name(spec, i)} is required, got None")
        else:
            if kind == _K_NUMPY_SCALAR:
                obj = np.asarray(obj)
                kind = _K_NUMPY
            elif kind == _K_JAX and _is_jax_tracer(tp):
                raise _TracedCall
            stream = None
            if kind == _K_DLPACK or (kind == _K_JAX and jax_uses_cuda()):  # maybe on CUDA
                stream = producer_stream(obj, frame, obj if first < 0 else like)
            capsule = capsule_of(obj, kind, lambda i=i: input_name(spec, i), stream)
            keep.append(capsule)
            objects[i] = id(capsule)
        if first < 0:
            first = i
            like = obj
    return scalars, first, like


def _read_outputs(
    spec: OpSpec, out: Any, n: int, frame: Frame, like: Any
) -> tuple[tuple, int, bool]:
    """Puts a DLPack capsule of each array of ``out`` in frame.objects[n:]. Returns (the
    outputs, their count, whether ``out`` is a tuple or list). ``like``: the call's first array
    argument (None: there is none, and the first output says which stream the call runs on)."""
    if spec.is_dynamic:
        raise InvalidArgumentError(
            f"{spec.name} allocates its outputs (their size depends on the data); it takes no out="
        )
    objects = frame.objects
    keep = frame.keep
    kinds = _KINDS
    many = type(out) in (tuple, list)
    outs = out if many else (out,)
    n_out = len(outs)
    if n + n_out > MAX_TENSORS - 8:
        raise WrongArityError(
            f"{spec.name}: too many outputs in one call ({n_out})", lib.CT_ERROR_WRONG_ARITY
        )
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
            capsule = export_numpy(o, True, lambda j=j: out_name(spec, j, many))
            keep.append(capsule)
            objects[n + j] = id(capsule)
            continue
        if kind in (_K_NONE, _K_SCALAR, _K_NUMPY_SCALAR):
            raise InputTypeError(f"{out_name(spec, j, many)} must be an array, got {tp.__name__}")
        stream = None
        if kind == _K_DLPACK:  # may live on a CUDA device (_streams)
            stream = producer_stream(o, frame, like if like is not None else outs[0])
        capsule = output_capsule_of(o, kind, lambda j=j: out_name(spec, j, many), stream)
        keep.append(capsule)
        objects[n + j] = id(capsule)
    return outs, n_out, many


def _open_and_run(
    spec: OpSpec,
    frame: Frame,
    n: int,
    n_out: int,
    out: Any,
    outs: tuple,
    many: bool,
    first: int,
    like: Any,
    attr_array: Any,
    num_attrs: int,
) -> Any:
    """The common case of the general path (views only, on the CPU, a kernel for the dtypes as
    they are, no workspace) in the fewest crossings: opens the views and runs. Returns the
    result, or _OPENED when the call needs more (the views are then open)."""
    if out is not None:
        status = _run_fast(frame.c, spec.op, n, n_out, attr_array, num_attrs)
        if status == 0:
            mark_written(outs)
            return outs[0] if many and n_out == 1 and spec.single_output else out
        if 0 < status < _FAST_READ_ONLY:
            index = status - 1
            raise open_error(frame.meta[index], tensor_name(spec, index, n, many))
        if status < 0 and status not in (_UNSUPPORTED_DTYPE, _WORKSPACE_TOO_SMALL):
            raise fail(status)
        return _OPENED
    if not n:
        return _OPENED  # nothing to open; the general path finds nothing either
    rc = _ctpy_open(frame.c, 0, n)
    if rc:
        raise open_error(frame.meta[-1 - rc], input_name(spec, -1 - rc))
    device = frame.meta[first] >> 40 if first >= 0 else _CPU
    fw = _FW_CACHE.get((type(like), device)) if device & 0xFF == _CPU else None
    if fw is not None:
        length = _ctpy_infer(frame.c, spec.op, n, attr_array, num_attrs, output_capacity(spec))
        if length >= 0:
            results = execute(spec, frame, n, fw, None, like, device, attr_array, num_attrs, length)
            if fw.finishes:
                results = [fw.finish(r) for r in results]
            if spec.variadic_output or len(results) != 1:
                return tuple(results)
            return results[0]
        if length != _UNSUPPORTED_DTYPE:
            raise fail(length)
    return _OPENED


def _framework_of(like: Any, device: int) -> tuple[Framework | None, CTensorError | None]:
    """(the caller's framework, None), or (None, the error) when no framework can hold arrays
    on ``device``: reported after the C library has had its say about the call. Registers the
    framework's fast allocator (FAST_ALLOCATORS) the first time."""
    fw_key = (type(like), device)
    fw = _FW_CACHE.get(fw_key)
    if fw is None:
        try:
            fw = _resolve_framework(like, device)
        except CTensorError as e:
            return None, e
        _FW_CACHE[fw_key] = fw
        if device == _CPU and type(like) is not CapsuleType and not fw.finishes:
            allocator = fw.fast_allocator(like)
            if allocator is not None:
                FAST_ALLOCATORS[type(like)] = allocator
    return fw, None


def _resolve_framework(like: Any, device: int) -> Framework:
    if like is None:
        return NUMPY
    device_tuple = (device & 0xFF, device >> 8)
    if type(like) is CapsuleType and device & 0xFF == _CPU:
        return NUMPY
    return framework_of(like, device_tuple)  # raises UnsupportedDeviceError


def _run_with_out(
    spec: OpSpec,
    frame: Frame,
    n: int,
    outs: tuple,
    n_out: int,
    out: Any,
    many: bool,
    attr_array: Any,
    num_attrs: int,
    fw: Framework,
    like: Any,
    device: int,
) -> Any:
    """Runs into the given outputs (open in the frame after the inputs), with a context when
    the op has a workspace or the call is not on the CPU."""
    tensors = frame.tensors
    outputs = tensors + n
    context = _NULL
    if spec.has_workspace or device & 0xFF != _CPU:
        context = prepare_context(
            spec, frame, n, outputs, n_out, attr_array, num_attrs, fw, like, device
        )
    status = _run(spec.op, tensors, n, outputs, n_out, attr_array, num_attrs, context)
    if status == _WORKSPACE_TOO_SMALL and context == _NULL:
        # A kernel of a shape-static op asked for scratch memory (plugins may): ask and retry.
        # Argument errors are detected before anything is written, so the retry is safe.
        context = prepare_context(
            spec, frame, n, outputs, n_out, attr_array, num_attrs, fw, like, device, True
        )
        status = _run(spec.op, tensors, n, outputs, n_out, attr_array, num_attrs, context)
    if status:
        raise fail(status)
    mark_written(outs)
    return outs[0] if many and n_out == 1 and spec.single_output else out
