"""The binding's extension module, ctensor._native: ``ffi`` and ``lib`` (cffi: the C ABI of
libctensor and the binding's C functions), ``FastOp`` (the type of the ``ctensor.ops``
functions), ``Replay`` (the base type of bound calls) and ``configure`` (what the fast paths may
read and call themselves)."""

from __future__ import annotations

from ._native import FastOp, Replay, configure, ffi, lib

__all__ = ["FastOp", "Replay", "configure", "ffi", "lib", "last_error"]


def last_error() -> str:
    """This thread's last C error message (read right after the failing call)."""
    return ffi.string(lib.ct_last_error()).decode("utf-8", "replace")
