"""Whether this machine can run the CUDA tests: the cuda plugin loaded with a device, and CuPy
and PyTorch with CUDA importable. tests/conftest.py leaves test_cuda_device.py uncollected
otherwise and says why in pytest's header."""

from __future__ import annotations

import ctensor


def cuda_unavailable_reason() -> str | None:
    """None when the CUDA device tests can run here, else why not."""
    backend = next((b for b in ctensor.backends() if b.name == "cuda"), None)
    if backend is None:
        return "the cuda plugin is not installed (nvcc was not found at build time)"
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
