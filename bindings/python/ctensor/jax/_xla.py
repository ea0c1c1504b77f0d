"""Loads ctensor's XLA FFI handler (``ctensor/jax/_xla_handler*.so``, built from
bindings/python/xla) with ctypes and registers it with JAX, once: the custom-call target
``ctensor_op`` (instantiate and execute stages) on the CPU, and on CUDA when JAX has a CUDA
backend, plus the type of the per-instance state the handler keeps.

The shared object is found as a module path (``importlib.util.find_spec``), so an editable
install finds it in the build directory; it has no ``PyInit`` and is never imported. The
capsules handed to ``jax.ffi`` are made through a private ``ctypes.PyDLL`` handle rather than
``jax.ffi.pycapsule``, which sets ``argtypes`` on ``ctypes.pythonapi.PyCapsule_New`` for the
whole process (that global change breaks MXNet's DLPack import).

XLA's FFI ABI is versioned (major.minor, ``api_version()``): XLA checks on every call that the
handler's version and struct sizes fit the running jaxlib and fails the call with an error
(never a crash) when they do not; rebuilding ctensor against the installed jaxlib clears it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import threading

from .._errors import BackendUnavailableError

__all__ = ["TARGET", "api_version", "ensure_registered", "library_path"]

#: The custom-call target every ctensor.jax call emits.
TARGET = "ctensor_op"
_STATE_TYPE = "ctensor_call_state"

_lock = threading.Lock()
_library: ctypes.CDLL | None = None
_registered = False

_pydll = ctypes.PyDLL(None)
_capsule_new = _pydll.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)


def library_path() -> str | None:
    """Path of the handler's shared object, or None when ctensor was built without it."""
    spec = importlib.util.find_spec("ctensor.jax._xla_handler")
    return None if spec is None else spec.origin


def _load() -> ctypes.CDLL:
    global _library
    if _library is None:
        path = library_path()
        if path is None:
            raise BackendUnavailableError(
                "ctensor.jax needs ctensor's XLA FFI handler, which this build of ctensor does "
                "not have: it is built when jaxlib's FFI headers (jax.ffi.include_dir()) are "
                "found at build time; reinstall ctensor with jaxlib installed "
                "(meson option -Dxla_ffi=enabled makes its absence an error)"
            )
        library = ctypes.CDLL(path)
        library.ctensor_xla_api_version.restype = ctypes.c_uint32
        library.ctensor_xla_state_type_id.restype = ctypes.c_void_p
        library.ctensor_xla_state_type_info.restype = ctypes.c_void_p
        _library = library
    return _library


def api_version() -> tuple[int, int]:
    """The XLA FFI API version (major, minor) of the headers the handler was compiled with."""
    version = _load().ctensor_xla_api_version()
    return version >> 16, version & 0xFFFF


def _capsule(address: int) -> object:
    return _capsule_new(address, None, None)


def _function_address(library: ctypes.CDLL, name: str) -> int:
    return ctypes.cast(getattr(library, name), ctypes.c_void_p).value


def _platforms() -> list[str]:
    """XLA platforms to register on: the CPU always, CUDA when JAX has a CUDA backend."""
    import jax

    platforms = ["cpu"]
    try:
        if jax.devices("cuda"):
            platforms.append("CUDA")
    except RuntimeError:
        pass
    return platforms


def ensure_registered() -> None:
    """Registers the target and its state type with JAX (once per process)."""
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        import jax.ffi

        library = _load()
        instantiate = _capsule(_function_address(library, "ctensor_xla_instantiate"))
        for platform in _platforms():
            jax.ffi.register_ffi_type(
                _STATE_TYPE,
                {
                    "type_id": _capsule(library.ctensor_xla_state_type_id()),
                    "type_info": _capsule(library.ctensor_xla_state_type_info()),
                },
                platform=platform,
            )
            execute = "ctensor_xla_execute_cpu" if platform == "cpu" else "ctensor_xla_execute_cuda"
            jax.ffi.register_ffi_target(
                TARGET,
                {
                    "instantiate": instantiate,
                    "execute": _capsule(_function_address(library, execute)),
                },
                platform=platform,
                api_version=1,
            )
        _registered = True
