"""The CUDA plugin where there may be no GPU (CI): built wherever nvcc and the headers of
cuBLASLt and cuDNN are, installed beside libctensor, loaded at import, and either running or
unavailable with the reason; it is linked to neither the CUDA runtime (static) nor cuBLASLt and
cuDNN (opened at run time, test_cuda_vendor_libraries.py), so it needs only the NVIDIA driver to
load, and it exports only the plugin entry points. test_cuda_device.py runs its kernels where
there is a GPU."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import ctensor


def _cuda_backend() -> ctensor.BackendInfo:
    found = [b for b in ctensor.backends() if b.name == "cuda"]
    assert found, f"no cuda backend among {[b.name for b in ctensor.backends()]}"
    return found[0]


#: What an unavailable plugin may say: no driver or device, or a vendor library missing.
UNAVAILABLE_REASONS = (
    "no CUDA device",
    "cuBLASLt (libcublasLt.so.13) not found",
    "cuDNN (libcudnn.so.9) not found",
)


def test_plugin_is_installed_and_loaded_or_says_why() -> None:
    backend = _cuda_backend()
    assert backend.device_type == "cuda"
    assert Path(backend.path).name == "libctensor_cuda.so"
    assert Path(backend.path).parent.name == "ctensor-plugins"
    if backend.state == "loaded":
        assert backend.device_count >= 1 and backend.reason == ""
    else:
        assert backend.state == "unavailable" and backend.device_count == 0
        assert backend.reason.startswith(UNAVAILABLE_REASONS), backend.reason


def test_import_never_fails_and_prints_nothing_without_a_gpu() -> None:
    script = "import ctensor; print([b.state for b in ctensor.backends() if b.name == 'cuda'])"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd="/", check=True
    )
    assert result.stderr == ""
    assert result.stdout.strip() in ("['loaded']", "['unavailable']")


def _elf_dynamic(path: str) -> str:
    objdump = shutil.which("objdump")
    assert objdump, "objdump (binutils, installed with gcc) is needed to read the plugin's ELF"
    return subprocess.run(
        [objdump, "-p", "-T", path], capture_output=True, text=True, check=True
    ).stdout


def test_plugin_needs_no_cuda_library_and_exports_two_symbols() -> None:
    dynamic = _elf_dynamic(_cuda_backend().path)
    needed = [line.split()[1] for line in dynamic.splitlines() if line.strip().startswith("NEEDED")]
    nvidia = ("cudart", "libcuda", "cublas", "cudnn")
    assert needed and not [n for n in needed if any(lib in n for lib in nvidia)], needed
    exported = sorted(
        line.split()[-1]
        for line in dynamic.splitlines()
        if " g " in line and ".text" in line and "DF" in line
    )
    assert exported == ["ct_plugin_abi_version", "ct_plugin_init"]


def test_kernels_are_registered_exactly_when_a_device_is_there() -> None:
    loaded = _cuda_backend().state == "loaded"
    for name in ("add", "sum", "matmul", "softmax", "conv2d", "sort", "nonzero"):
        info = ctensor.op_info(name)
        assert ("cuda" in info["devices"]) == loaded, info["devices"]
        assert ("cuda" in info["signatures"]) == loaded, info["signatures"].keys()
