"""One table from ct_status to Python exception classes.

Every class derives from :class:`CTensorError`, which carries ``status`` (the negative
``ct_status`` int), ``status_name`` (e.g. ``"CT_ERROR_SHAPE_MISMATCH"``) and the C library's
message. Each class also derives from the built-in exception a Python user would expect, so
``except ValueError`` catches argument errors and ``except TypeError`` catches dtype errors.
"""

from __future__ import annotations

from ._lib import ffi, last_error, lib

__all__ = [
    "CTensorError",
    "InvalidArgumentError",
    "UnsupportedDTypeError",
    "UnsupportedDeviceError",
    "ContiguousRequiredError",
    "OutOfMemoryError",
    "BackendError",
    "UnknownOpError",
    "ABIMismatchError",
    "ShapeMismatchError",
    "UnknownAttributeError",
    "AttributeTypeError",
    "DeviceMismatchError",
    "NullPointerError",
    "InvalidShapeError",
    "SizeOverflowError",
    "AliasingError",
    "WorkspaceTooSmallError",
    "WrongArityError",
    "BackendUnavailableError",
    "ReadOnlyOutputError",
    "AutogradError",
    "STATUS_TO_ERROR",
    "check",
    "error_for_status",
    "status_name",
]


class CTensorError(Exception):
    """Base class of every error ctensor raises; ``status`` is the C ``ct_status`` value."""

    status: int = 0

    def __init__(self, message: str = "", status: int | None = None):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message

    @property
    def status_name(self) -> str:
        return status_name(self.status)


class InvalidArgumentError(CTensorError, ValueError):
    """CT_ERROR_INVALID_ARGUMENT: a value is out of its domain (bad axis, bad mode...)."""

    status = lib.CT_ERROR_INVALID_ARGUMENT


class UnsupportedDTypeError(CTensorError, TypeError):
    """CT_ERROR_UNSUPPORTED_DTYPE: no kernel for these element types."""

    status = lib.CT_ERROR_UNSUPPORTED_DTYPE


class UnsupportedDeviceError(CTensorError, RuntimeError):
    """CT_ERROR_UNSUPPORTED_DEVICE: no kernel for this device."""

    status = lib.CT_ERROR_UNSUPPORTED_DEVICE


class ContiguousRequiredError(CTensorError, ValueError):
    """CT_ERROR_CONTIGUOUS_REQUIRED: the kernel needs a compact input."""

    status = lib.CT_ERROR_CONTIGUOUS_REQUIRED


class OutOfMemoryError(CTensorError, MemoryError):
    """CT_ERROR_OUT_OF_MEMORY: an allocation (or the caller's allocator) failed."""

    status = lib.CT_ERROR_OUT_OF_MEMORY


class BackendError(CTensorError, RuntimeError):
    """CT_ERROR_BACKEND: the device runtime reported an error."""

    status = lib.CT_ERROR_BACKEND


class UnknownOpError(CTensorError, AttributeError, LookupError):
    """CT_ERROR_UNKNOWN_OP: no operator of that name (``ctensor.ops.nope`` raises it too, so it
    is also an AttributeError; ``hasattr(ctensor.ops, "nope")`` is False)."""

    status = lib.CT_ERROR_UNKNOWN_OP


class ABIMismatchError(CTensorError, RuntimeError):
    """CT_ERROR_ABI_MISMATCH: struct_size or version not understood."""

    status = lib.CT_ERROR_ABI_MISMATCH


class ShapeMismatchError(CTensorError, ValueError):
    """CT_ERROR_SHAPE_MISMATCH: shapes do not broadcast or do not fit the op."""

    status = lib.CT_ERROR_SHAPE_MISMATCH


class UnknownAttributeError(CTensorError, ValueError):
    """CT_ERROR_UNKNOWN_ATTRIBUTE: the op has no attribute of that name."""

    status = lib.CT_ERROR_UNKNOWN_ATTRIBUTE


class AttributeTypeError(CTensorError, TypeError, ValueError):
    """CT_ERROR_ATTRIBUTE_TYPE: an attribute value has the wrong type."""

    status = lib.CT_ERROR_ATTRIBUTE_TYPE


class DeviceMismatchError(CTensorError, ValueError):
    """CT_ERROR_DEVICE_MISMATCH: tensors of one call live on different devices."""

    status = lib.CT_ERROR_DEVICE_MISMATCH


class NullPointerError(CTensorError, ValueError):
    """CT_ERROR_NULL_POINTER: a required pointer is NULL."""

    status = lib.CT_ERROR_NULL_POINTER


class InvalidShapeError(CTensorError, ValueError):
    """CT_ERROR_INVALID_SHAPE: negative extent, ndim out of range, bad strides."""

    status = lib.CT_ERROR_INVALID_SHAPE


class SizeOverflowError(CTensorError, ValueError):
    """CT_ERROR_SIZE_OVERFLOW: element or byte count does not fit in int64; raised too, before
    anything is allocated, for results on the host larger than the machine's memory."""

    status = lib.CT_ERROR_SIZE_OVERFLOW


class AliasingError(CTensorError, ValueError):
    """CT_ERROR_ALIASING: an output overlaps itself, another output or an input."""

    status = lib.CT_ERROR_ALIASING


class WorkspaceTooSmallError(CTensorError, ValueError):
    """CT_ERROR_WORKSPACE_TOO_SMALL: the workspace is smaller or less aligned than asked."""

    status = lib.CT_ERROR_WORKSPACE_TOO_SMALL


class WrongArityError(CTensorError, ValueError):
    """CT_ERROR_WRONG_ARITY: wrong number of inputs or outputs."""

    status = lib.CT_ERROR_WRONG_ARITY


class BackendUnavailableError(CTensorError, RuntimeError):
    """CT_ERROR_BACKEND_UNAVAILABLE: a backend's device or driver is absent on this machine."""

    status = lib.CT_ERROR_BACKEND_UNAVAILABLE


class ReadOnlyOutputError(InvalidArgumentError):
    """``out=`` names memory that must not be written (a read-only NumPy array, a DLPack
    tensor flagged READ_ONLY, an immutable JAX array). Raised before anything is written."""


class AutogradError(InvalidArgumentError, RuntimeError):
    """A write into PyTorch tensors that torch itself refuses (with a RuntimeError, so this is
    one too): ``out=`` on a call that autograd would have to record (an argument requires grad
    while grad mode is on), ``out=`` naming a leaf that requires grad, or an inference tensor
    outside ``torch.inference_mode``. Raised before anything is written."""


#: The one table: ct_status value -> exception class.
STATUS_TO_ERROR: dict[int, type[CTensorError]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        UnsupportedDTypeError,
        UnsupportedDeviceError,
        ContiguousRequiredError,
        OutOfMemoryError,
        BackendError,
        UnknownOpError,
        ABIMismatchError,
        ShapeMismatchError,
        UnknownAttributeError,
        AttributeTypeError,
        DeviceMismatchError,
        NullPointerError,
        InvalidShapeError,
        SizeOverflowError,
        AliasingError,
        WorkspaceTooSmallError,
        WrongArityError,
        BackendUnavailableError,
    )
}


def status_name(status: int) -> str:
    """The C library's name for a status, e.g. ``"CT_ERROR_SHAPE_MISMATCH"``."""
    return ffi.string(lib.ct_status_name(status)).decode()


def error_for_status(status: int, message: str) -> CTensorError:
    """The exception for a failing status, with the given message."""
    cls = STATUS_TO_ERROR.get(status, CTensorError)
    return cls(message or status_name(status), status)


def check(status: int) -> None:
    """Raises the mapped exception, with this thread's C message, when ``status`` is not CT_OK.
    Call it right after the C call, on the same thread."""
    if status != 0:
        raise error_for_status(status, last_error())
