"""MXNet 1.x NDArrays as ctensor arrays, without copies.

MXNet 1.9 NDArrays have no ``__dlpack__``: ctensor reads an input through
``mx.nd.to_dlpack_for_read`` (which waits for MXNet's pending writes to it) and an ``out=``
array through ``mx.nd.to_dlpack_for_write`` (which waits for every pending read and write), then
writes into its memory in place. Results of calls whose first array argument is an NDArray are
NDArrays allocated by MXNet on that array's context (``mx.nd.empty``; ``mx.np.empty`` for
``mx.np.ndarray``) and written in place through the same export. MXNet exports its bool arrays
as 1-bit unsigned integers (one byte each), which ctensor reads as bool. The dtypes NDArrays
hold are float16/32/64, int8, uint8, int32, int64 and bool: a result of another dtype is refused
with UnsupportedDTypeError (pass ``out=`` an array that can hold it, or cast first). Sparse
NDArrays are refused.

Nothing here imports mxnet: an NDArray's own module is used once one is seen.

For ``ctensor.mxnet`` (operators running in MXNet's engine) and other callers:
``ctensor.ops.<name>(*ndarrays, out=ndarrays)`` works directly on NDArrays; ``assign_result``
applies MXNet's ``req`` ("write", "inplace", "add", "null") to a computed result.
"""

from __future__ import annotations

import sys
from typing import Any

from ._dtypes import numpy_dtype
from ._errors import InvalidArgumentError, UnsupportedDTypeError

__all__ = [
    "HOLDS",
    "assign_result",
    "empty",
    "is_ndarray_type",
    "read_capsule",
    "write_capsule",
]

#: The ctensor dtypes MXNet 1.9 NDArrays hold.
HOLDS = frozenset({"bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"})


def _mx() -> Any:
    """The mxnet module (already imported: an NDArray exists)."""
    return sys.modules["mxnet"]


def is_ndarray_type(tp: type) -> bool:
    """Whether ``tp`` is MXNet's NDArray (or a subclass: mx.np.ndarray, sparse arrays); false
    without importing anything when mxnet is not loaded."""
    if not tp.__module__.startswith("mxnet"):
        return False
    ndarray = sys.modules.get("mxnet.ndarray.ndarray")
    return ndarray is not None and issubclass(tp, ndarray.NDArray)


def _dense(array: Any, what: Any) -> None:
    stype = getattr(array, "stype", "default")
    if stype != "default":
        raise InvalidArgumentError(
            f"{what()} is a sparse MXNet NDArray (stype {stype!r}); ctensor reads dense arrays "
            "only: pass array.tostype('default')"
        )


def _export(array: Any, what: Any, exporter: str) -> Any:
    _dense(array, what)
    try:
        return getattr(_mx().nd, exporter)(array)
    except Exception as e:  # noqa: BLE001 - MXNetError and friends, reported as ours
        raise InvalidArgumentError(f"{what()}: MXNet cannot export it through DLPack: {e}") from e


def read_capsule(array: Any, what: Any) -> Any:
    """A DLPack capsule of an NDArray input (waits for MXNet's pending writes to it)."""
    return _export(array, what, "to_dlpack_for_read")


def write_capsule(array: Any, what: Any) -> Any:
    """A DLPack capsule of an NDArray ``out=`` array (waits for every pending use of it)."""
    return _export(array, what, "to_dlpack_for_write")


def empty(shape: tuple[int, ...], dtype: str, like: Any) -> Any:
    """A new NDArray (an mx.np.ndarray for one) like ``like``: same context and kind."""
    if dtype not in HOLDS:
        raise UnsupportedDTypeError(
            f"the result would be {dtype}, which MXNet NDArrays cannot hold; pass out= an array "
            "that can (a NumPy array, say), or cast the inputs first"
        )
    mx = _mx()
    np_type = sys.modules.get("mxnet.numpy")
    if np_type is not None and isinstance(like, np_type.ndarray):
        return np_type.empty(shape, dtype=numpy_dtype(dtype), ctx=like.ctx)
    return mx.nd.empty(shape, ctx=like.ctx, dtype=numpy_dtype(dtype))


def assign_result(dst: Any, req: str, result: Any) -> None:
    """Stores ``result`` into ``dst`` as MXNet's ``req`` says (``CustomOp.assign`` semantics):
    "null" leaves it, "write" and "inplace" copy, "add" adds. Prefer computing straight into
    ``dst`` with ``out=dst`` for "write" and "inplace": this is for the other cases."""
    if req == "null":
        return
    if req in ("write", "inplace"):
        dst[:] = result
    elif req == "add":
        dst[:] += result
    else:
        raise InvalidArgumentError(f"unknown MXNet req {req!r}")
