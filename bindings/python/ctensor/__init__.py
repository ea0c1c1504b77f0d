"""ctensor: framework-neutral tensor operators with a stable C ABI.

``ctensor.ops.<name>`` calls an operator on NumPy arrays, PyTorch tensors, JAX and CuPy arrays or
raw DLPack capsules without copying them; results are allocated in the caller's framework, or
written into ``out=``. ``ctensor.list_ops()`` and ``ctensor.op_info(name)`` describe the registry.
"""

from __future__ import annotations

import importlib.resources
import os

# _backends first: importing it discovers plugins, before ops are bound to the registry.
from . import _backends, _torch_hook, autodiff, ops  # noqa: F401
from ._backends import BackendInfo, backends, load_backend
from ._bind import BoundCall, bind
from ._device_array import DeviceArray, asarray
from ._dlpack import InputTypeError
from ._errors import (
    STATUS_TO_ERROR,
    ABIMismatchError,
    AliasingError,
    AttributeTypeError,
    AutogradError,
    BackendError,
    BackendUnavailableError,
    ContiguousRequiredError,
    CTensorError,
    DeviceMismatchError,
    InvalidArgumentError,
    InvalidShapeError,
    NullPointerError,
    OutOfMemoryError,
    ReadOnlyOutputError,
    ShapeMismatchError,
    SizeOverflowError,
    UnknownAttributeError,
    UnknownOpError,
    UnsupportedDeviceError,
    UnsupportedDTypeError,
    WorkspaceTooSmallError,
    WrongArityError,
    check,
)
from ._lib import ffi, lib
from ._profile import profile
from ._registry import list_ops, op_info

__all__ = [
    "ABI_VERSION",
    "__version__",
    "abi_version",
    "asarray",
    "autodiff",
    "BackendInfo",
    "backends",
    "bind",
    "BoundCall",
    "get_include",
    "get_lib_dir",
    "get_num_threads",
    "get_pkgconfig_dir",
    "list_ops",
    "load_backend",
    "op_info",
    "ops",
    "profile",
    "set_num_threads",
    "STATUS_TO_ERROR",
    "CTensorError",
    "ABIMismatchError",
    "AliasingError",
    "AttributeTypeError",
    "AutogradError",
    "BackendError",
    "BackendUnavailableError",
    "ContiguousRequiredError",
    "DeviceArray",
    "DeviceMismatchError",
    "InputTypeError",
    "InvalidArgumentError",
    "InvalidShapeError",
    "NullPointerError",
    "OutOfMemoryError",
    "ReadOnlyOutputError",
    "ShapeMismatchError",
    "SizeOverflowError",
    "UnknownAttributeError",
    "UnknownOpError",
    "UnsupportedDTypeError",
    "UnsupportedDeviceError",
    "WorkspaceTooSmallError",
    "WrongArityError",
]

#: The ABI version of the header this binding was compiled against: (major, minor).
ABI_VERSION: tuple[int, int] = (lib.CT_ABI_VERSION_MAJOR, lib.CT_ABI_VERSION_MINOR)

#: The release version of the loaded libctensor.
__version__: str = ffi.string(lib.ct_version_string()).decode()


def abi_version() -> tuple[int, int]:
    """The ABI version of the loaded libctensor: (major, minor)."""
    version = lib.ct_abi_version()
    return (version >> 16, version & 0xFFFF)


if abi_version()[0] != ABI_VERSION[0]:  # pragma: no cover - needs a mismatched library
    raise ImportError(
        f"libctensor has ABI {abi_version()}, but this binding was built for {ABI_VERSION}: "
        "reinstall ctensor"
    )


def get_num_threads() -> int:
    """Number of threads the CPU kernels use."""
    n = ffi.new("int32_t*")
    check(lib.ct_get_num_threads(n))
    return int(n[0])


def set_num_threads(n: int) -> None:
    """Sets the number of threads the CPU kernels use (n <= 0: the default)."""
    n = max(int(n), 0)  # every n <= 0 means the default (the C argument is an int32_t)
    if n > lib.CT_MAX_THREADS:
        raise InvalidArgumentError(
            f"set_num_threads: {n} threads is more than the {lib.CT_MAX_THREADS} ctensor accepts"
        )
    check(lib.ct_set_num_threads(n))


_HERE = os.path.dirname(os.path.abspath(__file__))


def _installed_dir(folder: str, member: str) -> str:
    """The directory that holds the package's installed file ``folder/member``.

    In a normal install that is ``folder`` inside the package. In an editable install
    (``pip install -e .``: meson-python's import hook) the package directory is the source tree
    and holds no build outputs; the hook maps every installed file to where the build (or the
    source tree) has it, and ``importlib.resources`` reads that map: the answer is the directory
    the file really is in (the build directory for libctensor and ctensor.pc, ``capi`` for the
    headers)."""
    try:
        resource = importlib.resources.files(__name__).joinpath(*folder.split("/"), member)
    except (ModuleNotFoundError, TypeError, ValueError):
        resource = None
    if isinstance(resource, os.PathLike) and os.path.exists(resource):
        return os.path.dirname(os.path.abspath(os.fspath(resource)))
    return os.path.join(_HERE, *folder.split("/"))


def get_include() -> str:
    """Directory holding ctensor.h, ctensor_backend.h and ctensor_plugin.h."""
    return _installed_dir("include", "ctensor.h")


def get_lib_dir() -> str:
    """Directory holding libctensor."""
    return _installed_dir("lib", "libctensor.so")


def get_pkgconfig_dir() -> str:
    """Directory holding ctensor.pc (for PKG_CONFIG_PATH). In an editable install it is the
    build directory, where ctensor-uninstalled.pc (which pkg-config prefers to ctensor.pc)
    gives the build directory's library and the source tree's headers."""
    return _installed_dir("lib/pkgconfig", "ctensor.pc")


# torch.compile support for plain ctensor.ops calls, registered once torch._dynamo is loaded.
_torch_hook.install()
