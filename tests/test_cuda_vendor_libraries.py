"""The CUDA plugin opens cuBLASLt and cuDNN at run time (kernels/cuda/cu_vendor.h): found by
soname through the dynamic loader, else in the NVIDIA wheels installed beside the ctensor package;
missing, too old or lacking an entry point, the plugin is unavailable with the reason, and
`import ctensor` still works. Checked without a GPU: stand-in libraries exporting the listed entry
points (kernels/cuda/cu_blaslt_symbols.h, cu_dnn_symbols.h) are built here with the C compiler,
and a copy of the plugin is loaded from a folder laid out as an installed package."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ctensor

CUDA_SOURCES = Path(__file__).resolve().parents[1] / "kernels" / "cuda"
PROBE = (
    "import json, ctensor; print(json.dumps("
    "[[b.path, b.state, b.reason] for b in ctensor.backends() if b.name == 'cuda']))"
)
NO_DEVICE = "no CUDA device"


def _plugin() -> Path:
    found = [b for b in ctensor.backends() if b.name == "cuda"]
    assert found, "this build has no cuda plugin"
    return Path(found[0].path)


def _symbols(listing: str) -> list[str]:
    text = (CUDA_SOURCES / listing).read_text()
    return re.findall(r"^CT_CU_SYMBOL\((\w+)\)", text, flags=re.MULTILINE)


def _stand_in(folder: Path, soname: str, listing: str, version: int, omit: str = "") -> None:
    """Builds `folder/soname` exporting every entry point of `listing` (each returning 0, the
    libraries' success status), the *GetVersion one returning `version`, and not `omit`."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to build the stand-in libraries"
    lines = []
    for name in _symbols(listing):
        if name == omit:
            continue
        result = version if name.endswith("GetVersion") else 0
        lines.append(f"unsigned long {name}(void) {{ return {result}ul; }}")
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"{soname}.c"
    source.write_text("\n".join(lines) + "\n")
    subprocess.run(
        [cc, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(folder / soname), str(source)],
        check=True,
    )


def _installed_copy(root: Path) -> Path:
    """A site-packages folder under `root` holding a copy of the plugin where the installed
    package keeps it: <site>/ctensor/lib/ctensor-plugins/libctensor_cuda.so."""
    plugins = root / "site" / "ctensor" / "lib" / "ctensor-plugins"
    plugins.mkdir(parents=True)
    shutil.copy2(_plugin(), plugins / _plugin().name)
    return plugins


def _load(
    plugins: Path, library_path: Path | None, variables: dict[str, str] | None = None
) -> tuple[str, str]:
    """(state, reason) of the plugin copy in `plugins`, loaded in a fresh process with only
    `library_path` (or nothing) on LD_LIBRARY_PATH, and `variables` set (the caller's
    CTENSOR_CUBLASLT_LIBRARY and CTENSOR_CUDNN_LIBRARY are dropped)."""
    dropped = ("CTENSOR_CUBLASLT_LIBRARY", "CTENSOR_CUDNN_LIBRARY")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(variables or {}, CTENSOR_PLUGIN_PATH=str(plugins))
    env["LD_LIBRARY_PATH"] = str(library_path) if library_path else ""
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True
    )
    assert result.stderr == ""
    copies = [entry[1:] for entry in json.loads(result.stdout) if Path(entry[0]).parent == plugins]
    assert len(copies) == 1, result.stdout
    state, reason = copies[0]
    return state, reason


def _loadable_by_soname(soname: str) -> bool:
    """Whether the dynamic loader finds `soname` with an empty LD_LIBRARY_PATH."""
    script = f"import ctypes; ctypes.CDLL({soname!r})"
    env = dict(os.environ, LD_LIBRARY_PATH="")
    return (
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True).returncode == 0
    )


def _working_or_no_device(state: str, reason: str) -> None:
    """Both libraries were accepted: the plugin went on to look for devices."""
    assert (state, reason) == ("loaded", "") or (
        state == "unavailable" and reason.startswith(NO_DEVICE)
    ), (
        state,
        reason,
    )


@pytest.fixture
def stand_ins(tmp_path: Path) -> Path:
    """Acceptable cuBLASLt 13 and cuDNN 9 stand-ins in one folder."""
    folder = tmp_path / "libs"
    _stand_in(folder, "libcublasLt.so.13", "cu_blaslt_symbols.h", 130100)
    _stand_in(folder, "libcudnn.so.9", "cu_dnn_symbols.h", 92000)
    return folder


def test_the_libraries_on_the_loader_path_are_used(tmp_path: Path, stand_ins: Path) -> None:
    _working_or_no_device(*_load(_installed_copy(tmp_path), stand_ins))


def test_the_wheels_beside_the_package_are_used(tmp_path: Path, stand_ins: Path) -> None:
    plugins = _installed_copy(tmp_path)
    site = plugins.parents[2]
    for soname, folder in (
        ("libcublasLt.so.13", "nvidia/cu13/lib"),
        ("libcudnn.so.9", "nvidia/cudnn/lib"),
    ):
        (site / folder).mkdir(parents=True)
        shutil.copy2(stand_ins / soname, site / folder / soname)
    _working_or_no_device(*_load(plugins, None))


def test_a_missing_library_is_the_reason(tmp_path: Path) -> None:
    plugins = _installed_copy(tmp_path)
    state, reason = _load(plugins, None)
    if _loadable_by_soname("libcublasLt.so.13"):
        # This machine has cuBLASLt on the system's path: then cuDNN is the one missing, or both
        # are there and the reason is the device's.
        assert state == "loaded" or not reason.startswith("cuBLASLt"), reason
        return
    assert state == "unavailable"
    assert reason.startswith("cuBLASLt (libcublasLt.so.13) not found"), reason
    assert "pip install nvidia-cublas" in reason
    assert str(plugins.parents[2] / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13") in reason


def test_the_variables_name_the_files_to_open(tmp_path: Path, stand_ins: Path) -> None:
    plugins = _installed_copy(tmp_path)
    named = {
        "CTENSOR_CUBLASLT_LIBRARY": str(stand_ins / "libcublasLt.so.13"),
        "CTENSOR_CUDNN_LIBRARY": str(stand_ins / "libcudnn.so.9"),
    }
    _working_or_no_device(*_load(plugins, None, named))
    missing = str(tmp_path / "nowhere" / "libcudnn.so.9")
    state, reason = _load(plugins, stand_ins, dict(named, CTENSOR_CUDNN_LIBRARY=missing))
    assert state == "unavailable"
    assert reason.startswith(
        f"cuDNN (libcudnn.so.9) not found: CTENSOR_CUDNN_LIBRARY={missing} cannot be opened ("
    ), reason


def test_a_library_of_another_major_version_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "libs"
    _stand_in(folder, "libcublasLt.so.13", "cu_blaslt_symbols.h", 120900)
    _stand_in(folder, "libcudnn.so.9", "cu_dnn_symbols.h", 92000)
    state, reason = _load(_installed_copy(tmp_path), folder)
    assert state == "unavailable"
    assert reason.startswith("cuBLASLt 12.9 was found; the plugin needs cuBLASLt 13"), reason


def test_a_library_without_an_entry_point_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "libs"
    missing = _symbols("cu_dnn_symbols.h")[-1]
    _stand_in(folder, "libcublasLt.so.13", "cu_blaslt_symbols.h", 130100)
    _stand_in(folder, "libcudnn.so.9", "cu_dnn_symbols.h", 92000, omit=missing)
    state, reason = _load(_installed_copy(tmp_path), folder)
    assert state == "unavailable"
    assert (
        reason
        == f"cuDNN (libcudnn.so.9) has no entry point {missing}: it is older than the plugin needs"
    )
