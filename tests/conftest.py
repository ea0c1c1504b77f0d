"""Hypothesis settings shared by every test file.

`allow_subnormal=False` (used so that flush-to-zero differences between float16 conversions do not
count as errors) makes Hypothesis reject a share of float16 draws; that share varies from run to
run, so the filter health check would fail at random. Large conv2d/matmul/reduction draws are
slow to generate on a 2-core machine for the same kind of reason. Both are expected here, not
signs of a broken strategy, so those two checks are turned off; every other one stays on.

test_cuda_device.py needs a CUDA GPU with CuPy and PyTorch: where there is none it is not
collected, and pytest's header says why. test_cuda_plugin.py (the plugin is built, installed, and
loaded or unavailable with its reason) and test_cuda_vendor_libraries.py (cuBLASLt and cuDNN
opened at run time) run wherever the plugin was built or could be (nvcc and the vendor headers
are there), or where CTENSOR_REQUIRE_CUDA_PLUGIN=1 asks for them (.ci/run).
test_cuda_gemm_mapping.py (the plugin's GEMMs on a stand-in cuBLASLt, on the host) runs wherever
nvcc and the vendor headers are.

The OpenCL tests (test_opencl_*.py, and the tests marked `opencl`) need an OpenCL runtime with a
device (PoCL on CI): where the opencl backend is not loaded they are skipped with its reason, so
README's test command passes on a fresh machine; CTENSOR_REQUIRE_OPENCL=1 (set by .ci/run) turns
those skips into failures."""

import os

import pytest
from cuda_arrays import (
    cuda_compiler_absent_reason,
    cuda_plugin_absent_reason,
    cuda_unavailable_reason,
)
from hypothesis import HealthCheck, settings
from opencl_arrays import REQUIRE_VARIABLE, opencl_unavailable_reason

settings.register_profile(
    "ctensor",
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("ctensor")

_CUDA_UNAVAILABLE = cuda_unavailable_reason()
_CUDA_PLUGIN_ABSENT = cuda_plugin_absent_reason()
collect_ignore = ["test_cuda_device.py", "test_cuda_scatter.py"] if _CUDA_UNAVAILABLE else []
if _CUDA_PLUGIN_ABSENT:
    collect_ignore += ["test_cuda_plugin.py", "test_cuda_vendor_libraries.py"]
_CUDA_COMPILER_ABSENT = cuda_compiler_absent_reason()
if _CUDA_COMPILER_ABSENT:
    collect_ignore.append("test_cuda_gemm_mapping.py")


_OPENCL_UNAVAILABLE = opencl_unavailable_reason()
_OPENCL_REQUIRED = os.environ.get(REQUIRE_VARIABLE, "") not in ("", "0")


def pytest_configure(config) -> None:  # noqa: ANN001
    config.addinivalue_line("markers", "opencl: the test needs the opencl backend with a device")


def _needs_opencl(item) -> bool:  # noqa: ANN001
    return item.path.name.startswith("test_opencl_") or item.get_closest_marker("opencl")


def pytest_collection_modifyitems(config, items) -> None:  # noqa: ANN001
    """Skips the OpenCL tests, with the reason, where the backend cannot run them (unless
    CTENSOR_REQUIRE_OPENCL asks for them: they then run and fail with the reason)."""
    if not _OPENCL_UNAVAILABLE or _OPENCL_REQUIRED:
        return
    skip = pytest.mark.skip(
        reason=f"OpenCL unavailable: {_OPENCL_UNAVAILABLE} ({REQUIRE_VARIABLE}=1 fails instead)"
    )
    for item in items:
        if _needs_opencl(item):
            item.add_marker(skip)


def pytest_report_header() -> list[str]:
    plugin = f"not collected, {_CUDA_PLUGIN_ABSENT}" if _CUDA_PLUGIN_ABSENT else "collected"
    device = f"not collected, {_CUDA_UNAVAILABLE}" if _CUDA_UNAVAILABLE else "collected"
    compiler = f"not collected, {_CUDA_COMPILER_ABSENT}" if _CUDA_COMPILER_ABSENT else "collected"
    if not _OPENCL_UNAVAILABLE:
        opencl = "run"
    elif _OPENCL_REQUIRED:
        opencl = f"required by {REQUIRE_VARIABLE}, will fail: {_OPENCL_UNAVAILABLE}"
    else:
        opencl = f"skipped, {_OPENCL_UNAVAILABLE}"
    return [
        f"CUDA plugin tests (test_cuda_plugin.py, test_cuda_vendor_libraries.py): {plugin}",
        f"CUDA device tests (test_cuda_device.py, test_cuda_scatter.py): {device}",
        f"CUDA host tests (test_cuda_gemm_mapping.py): {compiler}",
        f"OpenCL tests (test_opencl_*.py and `opencl` marks): {opencl}",
    ]
