"""Whether this machine can run the CUDA tests. test_cuda_plugin.py needs a build with the
cuda plugin (one made where nvcc and the headers of cuBLASLt and cuDNN were found);
test_cuda_device.py also needs the plugin loaded with a device, and CuPy and PyTorch with CUDA.
tests/conftest.py leaves a module uncollected otherwise and says why in pytest's header;
CTENSOR_REQUIRE_CUDA_PLUGIN=1 (set by .ci/run) collects test_cuda_plugin.py regardless, so that
a plugin missing from the build fails there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import ctensor

#: Set to 1 to make a build without the cuda plugin fail test_cuda_plugin.py, not skip it.
REQUIRE_PLUGIN_VARIABLE = "CTENSOR_REQUIRE_CUDA_PLUGIN"

#: The build's probe for the headers of cuBLASLt and cuDNN (kernels/cuda/meson.build runs it).
VENDOR_HEADERS_PROBE = (
    Path(__file__).resolve().parents[1] / "kernels" / "cuda" / "vendor_headers.py"
)


def _vendor_headers_missing() -> str | None:
    """Why the build would leave the plugin out for want of headers, or None when it finds them."""
    probe = subprocess.run(
        [sys.executable, str(VENDOR_HEADERS_PROBE)], capture_output=True, text=True, check=False
    )
    return probe.stderr.strip() if probe.returncode else None


def cuda_plugin_absent_reason() -> str | None:
    """None when this build has the cuda plugin, when CTENSOR_REQUIRE_CUDA_PLUGIN asks for its
    tests, or when nvcc and the vendor headers are both here (then a missing plugin is a broken
    build, which test_cuda_plugin.py reports), else why its tests cannot run."""
    if any(b.name == "cuda" for b in ctensor.backends()):
        return None
    if os.environ.get(REQUIRE_PLUGIN_VARIABLE, "") not in ("", "0"):
        return None
    if not shutil.which("nvcc"):
        return "this build has no cuda plugin and nvcc is not on the PATH"
    missing = _vendor_headers_missing()
    if missing:
        return f"this build has no cuda plugin: nvcc is on the PATH, but there are {missing}"
    return None


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


def cuda_compiler_absent_reason() -> str | None:
    """None when nvcc and the headers of cuBLASLt and cuDNN are here, so that
    test_cuda_gemm_mapping.py can compile the plugin's GEMM code for the host, else why not."""
    if not shutil.which("nvcc"):
        return "nvcc is not on the PATH"
    missing = _vendor_headers_missing()
    return f"nvcc is on the PATH, but there are {missing}" if missing else None
