"""The CUDA plugin where there may be no GPU (CI): built whenever nvcc is there, installed beside
libctensor, loaded at import, and either running or unavailable with the reason; it depends on
the NVIDIA driver alone (the CUDA runtime is linked statically) and exports only the plugin
entry points. test_cuda_device.py runs its kernels where there is a GPU."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import ctensor

NVCC = shutil.which("nvcc")


def _cuda_backend() -> ctensor.BackendInfo:
    found = [b for b in ctensor.backends() if b.name == "cuda"]
    assert found, f"no cuda backend among {[b.name for b in ctensor.backends()]}"
    return found[0]


def _require_built() -> None:
    # Collected where the plugin exists or nvcc is on the PATH (conftest.py): a build with nvcc
    # and no plugin is a broken build.
    assert NVCC or any(b.name == "cuda" for b in ctensor.backends())


def test_plugin_is_installed_and_loaded_or_says_why() -> None:
    _require_built()
    backend = _cuda_backend()
    assert backend.device_type == "cuda"
    assert Path(backend.path).name == "libctensor_cuda.so"
    assert Path(backend.path).parent.name == "ctensor-plugins"
    if backend.state == "loaded":
        assert backend.device_count >= 1 and backend.reason == ""
    else:
        assert backend.state == "unavailable" and backend.device_count == 0
        assert "CUDA" in backend.reason


def test_import_never_fails_and_prints_nothing_without_a_gpu() -> None:
    _require_built()
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


def test_plugin_needs_no_cuda_runtime_library_and_exports_two_symbols() -> None:
    _require_built()
    dynamic = _elf_dynamic(_cuda_backend().path)
    needed = [line.split()[1] for line in dynamic.splitlines() if line.strip().startswith("NEEDED")]
    assert needed and not [n for n in needed if "cudart" in n or n.startswith("libcuda")], needed
    exported = sorted(
        line.split()[-1]
        for line in dynamic.splitlines()
        if " g " in line and ".text" in line and "DF" in line
    )
    assert exported == ["ct_plugin_abi_version", "ct_plugin_init"]


def test_kernels_are_registered_exactly_when_a_device_is_there() -> None:
    _require_built()
    loaded = _cuda_backend().state == "loaded"
    for name in ("add", "sum", "matmul", "softmax", "conv2d", "sort", "nonzero"):
        info = ctensor.op_info(name)
        assert ("cuda" in info["devices"]) == loaded, info["devices"]
        assert ("cuda" in info["signatures"]) == loaded, info["signatures"].keys()
