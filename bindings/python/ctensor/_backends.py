"""Backends: the built-in CPU backend and plugins (shared modules built against
``ctensor_plugin.h``).

Importing this module discovers the plugins on the default search path (``CTENSOR_PLUGIN_PATH``,
then the ``ctensor-plugins`` directory beside libctensor); a plugin that fails or whose device is
absent is recorded and skipped, so ``import ctensor`` never fails because of one.
``backends()`` lists every backend with its state and the reason for it; ``load_backend(path)``
loads one more by path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ._errors import check
from ._lib import ffi, lib
from ._registry import DEVICE_NAMES, refresh_kernels

__all__ = ["BackendInfo", "backends", "load_backend"]

_STATES = {
    lib.CT_BACKEND_LOADED: "loaded",
    lib.CT_BACKEND_UNAVAILABLE: "unavailable",
    lib.CT_BACKEND_FAILED: "failed",
}


@dataclass(frozen=True)
class BackendInfo:
    """One row of the backend table."""

    name: str  #: backend name ("cpu", a plugin's own name, or its file name if it failed early)
    version: str  #: the backend's own version string ("" if unknown)
    path: str | None  #: file it was loaded from; None for the built-in CPU backend
    state: str  #: "loaded", "unavailable" (device or driver absent) or "failed"
    reason: str  #: why it is unavailable or failed; "" when loaded
    device_type: str  #: device it serves, e.g. "cpu", "cuda", "opencl" ("unknown" if not said)
    device_count: int  #: devices of that type it found
    abi_version: str  #: plugin ABI it was built for, "major.minor"


def _text(pointer) -> str | None:  # noqa: ANN001
    return None if pointer == ffi.NULL else ffi.string(pointer).decode("utf-8", "replace")


def _info(index: int) -> BackendInfo:
    info = ffi.new("ct_backend_info*")
    info.struct_size = ffi.sizeof("ct_backend_info")
    check(lib.ct_backend_get_info(index, info))
    device = info.device_type
    return BackendInfo(
        name=_text(info.name) or "",
        version=_text(info.version) or "",
        path=_text(info.path),
        state=_STATES.get(info.state, str(info.state)),
        reason=_text(info.reason) or "",
        device_type=DEVICE_NAMES.get(device, "unknown" if device == 0 else f"device_{device}"),
        device_count=int(info.device_count),
        abi_version=f"{info.abi_version >> 16}.{info.abi_version & 0xFFFF}",
    )


def backends() -> list[BackendInfo]:
    """Every backend the library knows: the built-in CPU backend first, then each plugin load
    attempt (failed and unavailable ones included, with their reason)."""
    count = ffi.new("int32_t*")
    check(lib.ct_backend_count(count))
    return [_info(i) for i in range(count[0])]


def load_backend(path: str | os.PathLike) -> BackendInfo:
    """Loads the plugin at ``path`` and returns its entry. Loading the same file again returns
    the first entry. Raises BackendUnavailableError when its device or driver is absent,
    ABIMismatchError when it was built for another major plugin ABI version, BackendError when
    it cannot be opened or its init fails (the entry stays in ``backends()`` either way)."""
    index = ffi.new("int32_t*")
    status = lib.ct_backend_load(os.fsencode(path), index)
    check(status)
    refresh_kernels()
    return _info(index[0])


def _discover() -> None:
    """Loads the plugins on the default search path; never raises (failures are recorded in the
    backend table, see backends())."""
    lib.ct_backend_discover(ffi.NULL, ffi.NULL)  # a status, never an exception: not checked


_discover()
