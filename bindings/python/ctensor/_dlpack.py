"""Reading DLPack producers and capsules as ``ct_tensor*`` views, without copying.

Objects with ``__dlpack__`` are asked for a versioned capsule (``max_version=(1, 0)``) and fall
back to a plain ``__dlpack__()`` on TypeError; PyTorch tensors go through
``torch.utils.dlpack.to_dlpack``, which is about ten times cheaper than ``Tensor.__dlpack__``.
A capsule we asked for is never renamed: dropping our last reference lets the producer's capsule
destructor call its deleter. A raw capsule handed to us by the caller is *consumed*, as the
DLPack protocol says: renamed to ``used_dltensor``/``used_dltensor_versioned`` at once, and its
deleter called exactly once when the call is done (see :class:`Call.release`).
"""

from __future__ import annotations

import datetime as _datetime
import sys
from typing import Any

import numpy as np

from ._errors import InvalidArgumentError, ReadOnlyOutputError, UnsupportedDTypeError
from ._lib import ffi, lib

__all__ = ["InputTypeError", "Exported", "export", "release_consumed", "CapsuleType"]

#: The type of PyCapsule objects.
CapsuleType = type(_datetime.datetime_CAPI)  # type: ignore[attr-defined]

_READ_ONLY = lib.DLPACK_FLAG_BITMASK_READ_ONLY
_OPEN = lib.ctpy_capsule_open
_VOIDP = "void*"
_VIEW = "ctpy_capsule_view*"


class InputTypeError(InvalidArgumentError, TypeError):
    """An argument is not something ctensor can read as a tensor (no ``__dlpack__``, not a
    DLPack capsule, or a Python scalar where the op takes no scalars)."""


class Exported:
    """One tensor view handed to C, with what keeps its memory alive."""

    __slots__ = ("tensor", "owner", "managed", "versioned", "flags", "device")

    def __init__(self, view: Any, owner: Any):
        self.tensor = view.tensor  # ct_tensor* inside the producer's managed tensor
        self.owner = owner  # the capsule (its destructor frees what we read)
        self.managed = None
        self.versioned = view.versioned
        self.flags = view.flags
        t = self.tensor
        self.device = (t.device.device_type, t.device.device_id)


def _open(capsule: Any, consume: int, what: str) -> Any:
    view = ffi.new(_VIEW)
    rc = _OPEN(ffi.cast(_VOIDP, id(capsule)), consume, view)
    if rc != 0:
        if rc == lib.CTPY_CAPSULE_USED:
            raise InvalidArgumentError(
                f"{what}: this DLPack capsule was already consumed (a capsule can be read once)"
            )
        if rc == lib.CTPY_CAPSULE_NOT_A_CAPSULE:
            raise InputTypeError(f"{what}: __dlpack__() did not return a capsule")
        raise InvalidArgumentError(
            f"{what}: not a DLPack capsule (expected one named 'dltensor' or 'dltensor_versioned')"
        )
    return view


def _call_dlpack(obj: Any, what: str, writable: bool) -> Any:
    try:
        try:
            return obj.__dlpack__(max_version=(1, 0))
        except TypeError:
            return obj.__dlpack__()
    except BufferError as e:
        text = str(e)
        if "dtype" in text.lower():
            raise UnsupportedDTypeError(f"{what}: {text}") from e
        if writable and ("readonly" in text.lower() or "read-only" in text.lower()):
            raise ReadOnlyOutputError(f"{what} is read-only: {text}") from e
        raise InvalidArgumentError(f"{what}: cannot be read through DLPack: {text}") from e


_KINDS: dict[type, str] = {}
_to_dlpack: Any = None


def _kind_of(tp: type) -> str:
    """How to read objects of this type: "torch", "numpy", "jax" or "dlpack" (cached)."""
    global _to_dlpack
    kind = "dlpack"
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(tp, torch.Tensor):
        import torch.utils.dlpack

        _to_dlpack = torch.utils.dlpack.to_dlpack
        kind = "torch"
    elif issubclass(tp, np.ndarray):
        kind = "numpy"
    elif tp.__module__.split(".", 1)[0] in ("jax", "jaxlib"):
        kind = "jax"
    _KINDS[tp] = kind
    return kind


def export(obj: Any, what: str, consumed: list, writable: bool = False) -> Exported:
    """A ``ct_tensor*`` view of ``obj``. Raw capsules are consumed: they are appended to
    ``consumed`` and must be released with :func:`release_consumed` when the call is done."""
    tp = type(obj)
    if tp is CapsuleType:
        view = _open(obj, 1, what)
        exported = Exported(view, obj)
        exported.managed = view.managed
        consumed.append(exported)
        if writable and exported.flags & _READ_ONLY:
            raise ReadOnlyOutputError(f"{what} is a DLPack tensor flagged READ_ONLY")
        return exported
    kind = _KINDS.get(tp)
    if kind is None:
        kind = _kind_of(tp)
    if kind == "torch":
        if writable and obj.requires_grad:
            raise InvalidArgumentError(
                f"{what} requires grad; writing into it in place would break autograd"
            )
        try:
            capsule = _to_dlpack(obj.detach() if obj.requires_grad else obj)
        except (RuntimeError, BufferError, TypeError) as e:
            raise InvalidArgumentError(f"{what}: cannot be read through DLPack: {e}") from e
        return Exported(_open(capsule, 0, what), capsule)
    if not hasattr(obj, "__dlpack__"):
        raise InputTypeError(
            f"{what} must be an array with __dlpack__ (NumPy, PyTorch, JAX, CuPy) or a DLPack "
            f"capsule, got {tp.__name__}"
        )
    if writable:
        if kind == "jax":
            raise ReadOnlyOutputError(f"{what} is a JAX array; JAX arrays are immutable")
        if kind == "numpy" and not obj.flags.writeable:
            raise ReadOnlyOutputError(f"{what} is a read-only NumPy array")
    capsule = _call_dlpack(obj, what, writable)
    exported = Exported(_open(capsule, 0, what), capsule)
    if writable and exported.flags & _READ_ONLY:
        raise ReadOnlyOutputError(f"{what} is flagged READ_ONLY by its producer")
    return exported


def release_consumed(consumed: list) -> None:
    """Calls the deleter of every consumed raw capsule, once."""
    for exported in consumed:
        managed, exported.managed = exported.managed, None
        if managed is not None:
            lib.ctpy_managed_release(managed, exported.versioned)
