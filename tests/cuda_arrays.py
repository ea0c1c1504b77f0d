"""Whether this machine can run the CUDA tests. test_cuda_plugin.py needs a build with the
cuda plugin (one made where nvcc was on the PATH); test_cuda_device.py also needs the plugin
loaded with a device, and CuPy and PyTorch with CUDA. tests/conftest.py leaves a module
uncollected otherwise and says why in pytest's header."""

from __future__ import annotations

import shutil

import ctensor


def cuda_plugin_absent_reason() -> str | None:
    """None when this build has the cuda plugin, or nvcc is on the PATH (then a missing plugin
    is a broken build, which test_cuda_plugin.py reports), else why its tests cannot run."""
    if any(b.name == "cuda" for b in ctensor.backends()) or shutil.which("nvcc"):
        return None
    return "this build has no cuda plugin and nvcc is not on the PATH"


def cuda_unavailable_reason() -> str | None:
    """None when the CUDA device tests can run here, else why not."""
    backend = next((b for b in ctensor.backends() if b.name == "cuda"), None)
    if backend is None:
        return "this build has no cuda plugin"
    if backend.state != "loaded":
        return f"the cuda plugin is {backend.state}: {backend.reason}"
    try:
        import cupy  # noqa: F401
        import torch
    except ImportError as error:
        return f"CuPy or PyTorch is missing: {error}"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    return None
