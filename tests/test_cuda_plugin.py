"""The CUDA plugin where there may be no GPU (CI): built wherever nvcc and the headers of
cuBLASLt and cuDNN are, installed beside libctensor, loaded at import, and either running or
unavailable with the reason; it is linked to neither the CUDA runtime (static) nor cuBLASLt and
cuDNN (opened at run time, test_cuda_vendor_libraries.py), so it needs only the NVIDIA driver to
load, and it exports only the plugin entry points. test_cuda_device.py runs its kernels where
there is a GPU."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import ctensor


def _cuda_backend() -> ctensor.BackendInfo:
    found = [b for b in ctensor.backends() if b.name == "cuda"]
    assert found, (
        f"no cuda backend among {[b.name for b in ctensor.backends()]} (an editable install "
        "discovers no plugin of its build tree: set CTENSOR_PLUGIN_PATH=build/kernels/cuda)"
    )
    return found[0]


def _plugin_path_entries() -> list[Path]:
    """CTENSOR_PLUGIN_PATH's entries (folders or plugin files), absolute: the library resolved
    the relative ones against this process's working directory at import."""
    value = os.environ.get("CTENSOR_PLUGIN_PATH", "")
    return [Path(entry).resolve() for entry in value.split(os.pathsep) if entry]


#: What an unavailable plugin may say: no driver or device, or a vendor library missing.
UNAVAILABLE_REASONS = (
    "no CUDA device",
    "cuBLASLt (libcublasLt.so.13) not found",
    "cuDNN (libcudnn.so.9) not found",
)


def test_plugin_is_installed_and_loaded_or_says_why() -> None:
    backend = _cuda_backend()
    assert backend.device_type == "cuda"
    path = Path(backend.path).resolve()
    assert path.name == "libctensor_cuda.so"
    # Installed with the package: ctensor-plugins beside libctensor. A plugin given through
    # CTENSOR_PLUGIN_PATH (one from a build tree, which a developer's editable install needs)
    # comes from one of its entries: that folder, or that file.
    installed = (Path(ctensor.get_lib_dir()) / "ctensor-plugins").resolve()
    allowed = [installed, *_plugin_path_entries()]
    assert path.parent in allowed or path in allowed, (path, allowed)
    if backend.state == "loaded":
        assert backend.device_count >= 1 and backend.reason == ""
    else:
        assert backend.state == "unavailable" and backend.device_count == 0
        assert backend.reason.startswith(UNAVAILABLE_REASONS), backend.reason


def test_import_never_fails_and_prints_nothing_without_a_gpu() -> None:
    script = "import ctensor; print([b.state for b in ctensor.backends() if b.name == 'cuda'])"
    # From another working directory: the child gets CTENSOR_PLUGIN_PATH with absolute entries,
    # so that it discovers the plugin this process did.
    env = dict(os.environ)
    if "CTENSOR_PLUGIN_PATH" in env:
        env["CTENSOR_PLUGIN_PATH"] = os.pathsep.join(map(str, _plugin_path_entries()))
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd="/", env=env, check=True
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
