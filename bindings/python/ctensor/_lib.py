"""The compiled cffi module: ``ffi`` and ``lib`` (the C ABI of libctensor)."""

from __future__ import annotations

from ._capi import ffi, lib

__all__ = ["ffi", "lib", "last_error"]


def last_error() -> str:
    """This thread's last C error message (read right after the failing call)."""
    return ffi.string(lib.ct_last_error()).decode("utf-8", "replace")
