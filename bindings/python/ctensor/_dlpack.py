"""Reading DLPack producers and capsules as ``ct_tensor*`` views, without copying.

Objects with ``__dlpack__`` are asked for a versioned capsule (``max_version=(1, 0)``) and fall
back to a plain ``__dlpack__()`` on TypeError; those on a CUDA device are passed the stream the
call runs on (``stream=``; see _streams, which also says how torch tensors are ordered). NumPy
inputs take the cheaper legacy capsule first (a read-only array refuses it and is asked again
for a versioned one, which carries the READ_ONLY flag); PyTorch tensors go through
``torch.utils.dlpack.to_dlpack``, about ten times cheaper than ``Tensor.__dlpack__``.

A capsule we asked for is never renamed: dropping our last reference lets the producer's capsule
destructor call its deleter. A raw capsule handed to us by the caller is *consumed*, as the
DLPack protocol says: renamed to ``used_dltensor``/``used_dltensor_versioned`` when it is
opened, and its deleter called exactly once when the call is done, failed or not.

Capsules are opened in C, many at a time (``ctpy_open`` on a ``ctpy_frame``), holding the GIL.
"""

from __future__ import annotations

import datetime as _datetime
import sys
from typing import Any

import numpy as np

from ._device_array import is_pyopencl_array, opencl_capsule
from ._errors import InvalidArgumentError, ReadOnlyOutputError, UnsupportedDTypeError
from ._lib import configure, ffi, lib
from ._mxnet import is_ndarray_type, read_capsule, write_capsule
from ._numpy_export import capsule_tensor, export_numpy
from ._torch_rules import refuse_write

__all__ = [
    "CAPSULE",
    "capsule_tensor",
    "export_numpy",
    "CapsuleType",
    "DLPACK",
    "DLPackVersionError",
    "InputTypeError",
    "JAX",
    "MASKED",
    "MXNET",
    "NONE",
    "NUMPY",
    "NUMPY_SCALAR",
    "PYOPENCL",
    "SCALAR",
    "TORCH",
    "capsule_of",
    "kind_of",
    "mark_written",
    "open_error",
    "output_capsule_of",
]

#: The type of PyCapsule objects.
CapsuleType = type(_datetime.datetime_CAPI)  # type: ignore[attr-defined]


class DLPackVersionError(InvalidArgumentError, BufferError):
    """A versioned DLPack capsule whose major version ctensor does not know: its tensor may be
    laid out differently, so it is refused (a BufferError, as the DLPack protocol asks)."""


class InputTypeError(InvalidArgumentError, TypeError):
    """An argument is not something ctensor can read as a tensor (no ``__dlpack__``, not a
    DLPack capsule, or a Python scalar where the op takes no scalars)."""


# How objects of a type are read (cached per type).
NONE, SCALAR, CAPSULE, NUMPY, NUMPY_SCALAR, TORCH, JAX, DLPACK, OTHER, PYOPENCL, MXNET, MASKED = (
    range(12)
)

_KINDS: dict[type, int] = {
    type(None): NONE,
    bool: SCALAR,
    int: SCALAR,
    float: SCALAR,
    complex: SCALAR,
    CapsuleType: CAPSULE,
    np.ndarray: NUMPY,
}
_to_dlpack: Any = None
#: torch's autograd version bump (``torch._C._increment_version``, which
#: ``torch.autograd.graph.increment_version`` wraps), once a torch tensor has been seen.
increment_version: Any = None
configure(ndarray_type=np.ndarray)


def kind_of(tp: type) -> int:
    """How to read objects of type ``tp`` (see the constants above)."""
    kind = _KINDS.get(tp)
    if kind is not None:
        return kind
    global _to_dlpack, increment_version
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(tp, torch.Tensor):
        import torch.autograd.graph
        import torch.utils.dlpack

        _to_dlpack = torch.utils.dlpack.to_dlpack
        # The wrapper costs three times the bump itself (an isinstance through torch's
        # metaclass); it is the fallback where torch._C lacks the bump.
        increment_version = getattr(torch._C, "_increment_version", None) or getattr(
            torch.autograd.graph, "increment_version", None
        )
        # Let the C fast paths read plain tensors themselves and mark the ones they write.
        configure(
            tensor_type=torch.Tensor,
            to_dlpack=_to_dlpack,
            increment_version=increment_version,
            grad_enabled=torch.is_grad_enabled,
        )
        kind = TORCH
    elif issubclass(tp, np.ndarray):
        masked = sys.modules.get("numpy.ma")
        kind = MASKED if masked is not None and issubclass(tp, masked.MaskedArray) else NUMPY
    elif issubclass(tp, np.generic):
        kind = NUMPY_SCALAR
    elif issubclass(tp, (bool, int, float, complex)):
        kind = SCALAR
    elif is_ndarray_type(tp):
        kind = MXNET
    elif tp.__module__.split(".", 1)[0] in ("jax", "jaxlib") and hasattr(tp, "__dlpack__"):
        kind = JAX
    elif hasattr(tp, "__dlpack__"):
        kind = DLPACK
    elif is_pyopencl_array(tp):
        kind = PYOPENCL
    else:
        kind = OTHER
    _KINDS[tp] = kind
    return kind


def _call_dlpack(obj: Any, what: Any, writable: bool, stream: int | None = None) -> Any:
    try:
        if stream is None:  # a producer off CUDA devices: no stream, as DLPack asks
            try:
                return obj.__dlpack__(max_version=(1, 0))
            except TypeError:
                return obj.__dlpack__()
        try:
            return obj.__dlpack__(stream=stream, max_version=(1, 0))
        except TypeError:  # a producer older than DLPack 1.0's max_version
            return obj.__dlpack__(stream=stream)
    except BufferError as e:
        text = str(e)
        lowered = text.lower()
        if "dtype" in lowered or "data type" in lowered:
            raise UnsupportedDTypeError(f"{what()}: {text}") from e
        if writable and ("readonly" in lowered or "read-only" in lowered):
            raise ReadOnlyOutputError(f"{what()} is read-only: {text}") from e
        raise InvalidArgumentError(f"{what()}: cannot be read through DLPack: {text}") from e


def has_lazy_bits(tensor: Any) -> bool:
    """True for a torch tensor whose memory torch conjugates or negates on access (``z.conj()``,
    ``z.conj().imag``): DLPack exports the raw memory, so such tensors are resolved (inputs) or
    refused (outputs)."""
    return bool(tensor.is_conj() or tensor.is_neg())


def torch_tensors(objs: Any) -> tuple:
    """The PyTorch tensors among ``objs`` (a sequence)."""
    return tuple(o for o in objs if kind_of(type(o)) == TORCH)


def mark_written(objs: Any) -> None:
    """Advances the autograd version counter of the PyTorch tensors among ``objs`` (a sequence),
    which a call has just written into, as torch's own ``out=`` and in-place ops do: autograd
    then refuses a backward pass that needs their old values (``one of the variables needed for
    gradient computation has been modified by an inplace operation``) instead of computing it
    from the new ones. The C fast paths do the same for the tensors they write."""
    if increment_version is not None:
        tensors = torch_tensors(objs)
        if tensors:
            increment_version(tensors)


def capsule_of(obj: Any, kind: int, what: Any, stream: int | None = None) -> Any:
    """A DLPack capsule of an input (``what()`` names it in errors). ``stream``: the
    ``__dlpack__(stream=)`` for a producer on a CUDA device (see _streams), else None."""
    if kind == NUMPY:
        return export_numpy(obj, False, what)
    if kind == TORCH:
        if obj.requires_grad:
            obj = obj.detach()
        if has_lazy_bits(obj):
            obj = obj.resolve_conj().resolve_neg()  # the values torch shows, not the raw memory
        try:
            return _to_dlpack(obj)
        except (RuntimeError, BufferError, TypeError) as e:
            raise InvalidArgumentError(f"{what()}: cannot be read through DLPack: {e}") from e
    if kind in (DLPACK, JAX):
        return _call_dlpack(obj, what, False, stream)
    if kind == PYOPENCL:
        return opencl_capsule(obj)
    if kind == MXNET:
        return read_capsule(obj, what)
    if kind == MASKED:
        raise _masked(what)
    raise InputTypeError(
        f"{what()} must be an array with __dlpack__ (NumPy, PyTorch, JAX, CuPy), an MXNet "
        f"NDArray or a DLPack capsule, got {type(obj).__name__}"
    )


def output_capsule_of(obj: Any, kind: int, what: Any, stream: int | None = None) -> Any:
    """A DLPack capsule of an ``out=`` array, refusing memory that must not be written.
    ``stream`` as for capsule_of."""
    if kind == NUMPY:
        return export_numpy(obj, True, what)
    if kind == TORCH:
        refuse_write(obj, what())  # what torch refuses: inference tensors, autograd's tensors
        if obj.requires_grad:
            obj = obj.detach()  # grad mode is off: written as torch writes it (same storage)
        if has_lazy_bits(obj):
            raise InvalidArgumentError(
                f"{what()} has torch's lazy conjugate or negative bit (a view such as "
                "z.conj() or z.conj().imag): its memory does not hold the values torch shows; "
                "write into a plain tensor"
            )
        try:
            return _to_dlpack(obj)
        except (RuntimeError, BufferError, TypeError) as e:
            raise InvalidArgumentError(f"{what()}: cannot be read through DLPack: {e}") from e
    if kind == JAX:
        raise ReadOnlyOutputError(f"{what()} is a JAX array; JAX arrays are immutable")
    if kind == DLPACK:
        return _call_dlpack(obj, what, True, stream)
    if kind == PYOPENCL:
        return opencl_capsule(obj)
    if kind == MXNET:
        return write_capsule(obj, what)
    if kind == MASKED:
        raise _masked(what)
    raise InputTypeError(
        f"{what()} must be an array with __dlpack__, an MXNet NDArray or a DLPack capsule, got "
        f"{type(obj).__name__}"
    )


def _masked(what: Any) -> InputTypeError:
    return InputTypeError(
        f"{what()} is a NumPy masked array: ctensor reads arrays through DLPack, which has no "
        "mask, so the masked values would be used as if they were valid; pass "
        "array.filled(value) or array.data (and handle the mask yourself)"
    )


def open_error(code: int, what: str) -> Exception:
    """The error for a capsule ``ctpy_open`` could not read (``code`` from its meta entry)."""
    if code == lib.CTPY_CAPSULE_USED:
        return InvalidArgumentError(
            f"{what}: this DLPack capsule was already consumed (a capsule can be read once)"
        )
    if code == lib.CTPY_CAPSULE_NOT_A_CAPSULE:
        return InputTypeError(f"{what}: __dlpack__() did not return a capsule")
    if code == lib.CTPY_CAPSULE_NULL:
        return InvalidArgumentError(f"{what}: the DLPack capsule holds a NULL tensor")
    if code == lib.CTPY_CAPSULE_VERSION:
        return DLPackVersionError(
            f"{what}: a DLPack capsule of a major version ctensor cannot read (it reads "
            f"'dltensor_versioned' capsules of major version {lib.CTPY_DLPACK_MAJOR} and legacy "
            "'dltensor' capsules); the capsule was left to its producer, unconsumed"
        )
    return InvalidArgumentError(
        f"{what}: not a DLPack capsule (expected one named 'dltensor' or 'dltensor_versioned')"
    )


_INTERFACE_CODES = {
    "b": lib.CT_DTYPE_BOOL,
    "i": lib.CT_DTYPE_INT,
    "u": lib.CT_DTYPE_UINT,
    "f": lib.CT_DTYPE_FLOAT,
}


def _direct_matches_interface(x: np.ndarray, view: Any, strides: Any) -> bool:
    """Whether ctpy_numpy_view read ``x`` as NumPy's own ``__array_interface__`` describes it
    (data address, shape, strides in bytes, dtype kind and size): the same description on every
    NumPy version, where the DLPack export differs (bool, read-only arrays, zero-size arrays)."""
    if lib.ctpy_numpy_view(id(x), view, strides, 0) != 0:
        return False
    interface = x.__array_interface__
    shape = list(interface["shape"])
    itemsize = x.dtype.itemsize
    expected = interface["strides"]
    if expected is None:  # compact row-major
        expected, step = [0] * len(shape), itemsize
        for d in reversed(range(len(shape))):
            expected[d] = step
            step *= shape[d]
    mine = [s * itemsize for s in ffi.unpack(view.strides, view.ndim)] if view.ndim else []
    typestr = interface["typestr"]
    return (
        int(ffi.cast("intptr_t", view.data)) == interface["data"][0]
        and view.ndim == len(shape)
        and view.dtype.code == _INTERFACE_CODES.get(typestr[1], -1)
        and view.dtype.bits == 8 * int(typestr[2:])
        and view.dtype.lanes == 1
        and (list(ffi.unpack(view.shape, view.ndim)) if view.ndim else []) == shape
        and (
            0 in shape  # no element: strides say nothing
            or all(n == 1 or a == b for n, a, b in zip(shape, mine, expected, strict=True))
        )
    )


def _enable_numpy_direct() -> bool:
    """Lets the C fast paths read NumPy arrays without exporting a DLPack capsule (the fields of
    NumPy's array struct), after checking on a few arrays that they read exactly what NumPy's
    ``__array_interface__`` says; leaves it off otherwise."""
    lib.ctpy_numpy_direct(1)
    view = ffi.new("ct_tensor*")
    strides = ffi.new("int64_t[]", lib.CT_MAX_NDIM)
    samples = [
        np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2],
        np.arange(5, dtype=np.float32)[::-1],
        np.zeros((2, 0, 3), np.bool_),
        np.zeros((), np.float64),
        np.ones((2, 3), np.float16).T,
        np.arange(6, dtype=np.uint64).reshape(1, 6, 1),
        np.arange(4, dtype=np.int8),
    ]
    try:
        ok = all(_direct_matches_interface(x, view, strides) for x in samples)
    except Exception:  # noqa: BLE001 - any surprise keeps the DLPack path
        ok = False
    if not ok:
        lib.ctpy_numpy_direct(0)
    return ok


#: Whether NumPy arrays are read directly by the C fast paths (see _enable_numpy_direct).
NUMPY_DIRECT = _enable_numpy_direct()
