"""Hypothesis settings shared by every test file.

`allow_subnormal=False` (used so that flush-to-zero differences between float16 conversions do not
count as errors) makes Hypothesis reject a share of float16 draws; that share varies from run to
run, so the filter health check would fail at random. Large conv2d/matmul/reduction draws are
slow to generate on a 2-core machine for the same kind of reason. Both are expected here, not
signs of a broken strategy, so those two checks are turned off; every other one stays on.

test_cuda_device.py needs a CUDA GPU with CuPy and PyTorch: where there is none it is not
collected, and pytest's header says why. test_cuda_plugin.py (the plugin is built, installed, and
loaded or unavailable with its reason) runs wherever the plugin was built or nvcc is there."""

from cuda_arrays import cuda_plugin_absent_reason, cuda_unavailable_reason
from hypothesis import HealthCheck, settings

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
    collect_ignore.append("test_cuda_plugin.py")


def pytest_report_header() -> list[str]:
    plugin = f"not collected, {_CUDA_PLUGIN_ABSENT}" if _CUDA_PLUGIN_ABSENT else "collected"
    device = f"not collected, {_CUDA_UNAVAILABLE}" if _CUDA_UNAVAILABLE else "collected"
    return [
        f"CUDA plugin tests (test_cuda_plugin.py): {plugin}",
        f"CUDA device tests (test_cuda_device.py, test_cuda_scatter.py): {device}",
    ]
