"""The OpenCL plugin as a backend: listed by ctensor.backends(), absent with its reason when the
runtime is hidden (import ctensor still works), and program binaries cached on disk so that a
second process compiles nothing. Each case runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from opencl_arrays import require_opencl


def setup_module() -> None:
    require_opencl()


def _run(code: str, **env: str) -> dict:
    environment = dict(os.environ)
    environment.update(env)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


_BACKENDS = """
    import json, ctensor
    entry = [b for b in ctensor.backends() if b.name == "opencl"][0]
    import numpy as np
    print(json.dumps({"state": entry.state, "reason": entry.reason,
                      "devices": entry.device_count,
                      "devices_listed": ctensor.op_info("add")["devices"],
                      "cpu_add": ctensor.ops.add(np.ones(2), np.ones(2)).tolist()}))
"""


def test_listed_as_loaded_with_its_devices() -> None:
    info = _run(_BACKENDS)
    assert info["state"] == "loaded" and info["reason"] == "" and info["devices"] >= 1
    assert "opencl" in info["devices_listed"]


def test_missing_runtime_library_leaves_the_backend_unavailable_with_a_reason() -> None:
    info = _run(_BACKENDS, CTENSOR_OPENCL_LIBRARY="/nonexistent/libOpenCL.so.1")
    assert info["state"] == "unavailable"
    assert "no OpenCL runtime" in info["reason"] and "/nonexistent" in info["reason"]
    assert info["devices_listed"] == ["cpu"]
    assert info["cpu_add"] == [2.0, 2.0]


def test_runtime_without_platforms_leaves_the_backend_unavailable(tmp_path: Path) -> None:
    info = _run(_BACKENDS, OCL_ICD_VENDORS=str(tmp_path), OPENCL_VENDOR_PATH=str(tmp_path))
    assert info["state"] == "unavailable"
    assert "no OpenCL platform" in info["reason"]
    assert info["devices_listed"] == ["cpu"]


_COMPILE = """
    import json, numpy as np, ctensor
    x = ctensor.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device="opencl:0")
    y = ctensor.ops.tanh(ctensor.ops.add(x, x))
    s = ctensor.ops.sum(y, axis=[1])
    print(json.dumps({"sum": np.asarray(s).tolist()}))
"""


def _entries(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_ino for p in directory.iterdir()}


def test_program_binaries_are_cached_on_disk_for_the_next_process(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _run(_COMPILE, CTENSOR_OPENCL_CACHE_DIR=str(cache))
    files = _entries(cache)
    assert len(files) >= 3 and all(name.endswith(".bin") for name in files)
    # A second process finds every binary: it compiles nothing, so it rewrites no file (a
    # compile would store its binary again under a new inode).
    second = _run(_COMPILE, CTENSOR_OPENCL_CACHE_DIR=str(cache))
    assert second == first
    assert _entries(cache) == files


def test_cache_location_follows_xdg_cache_home(tmp_path: Path) -> None:
    environment = {"XDG_CACHE_HOME": str(tmp_path)}
    os.environ.pop("CTENSOR_OPENCL_CACHE_DIR", None)
    _run(_COMPILE, **environment)
    assert list((tmp_path / "ctensor" / "opencl").glob("*.bin"))


def test_a_damaged_cache_file_is_recompiled(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _run(_COMPILE, CTENSOR_OPENCL_CACHE_DIR=str(cache))
    for path in cache.iterdir():
        path.write_bytes(b"not a program binary")
    assert _run(_COMPILE, CTENSOR_OPENCL_CACHE_DIR=str(cache)) == first
    assert all(p.stat().st_size > 100 for p in cache.iterdir())


def test_plugin_init_refuses_a_smaller_host_table_and_describes_itself_otherwise() -> None:
    """ct_plugin_init's first step (kernels/common/plugin_entry.c, shared with the CUDA plugin):
    NULL pointers and a host table smaller than the plugin's are refused before anything is
    touched; the message goes through the host's set_error."""
    import ctypes

    import ctensor
    from ctensor._lib import lib

    path = [b for b in ctensor.backends() if b.name == "opencl"][0].path
    plugin = ctypes.CDLL(path)
    set_error_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_char_p)
    messages: list[bytes] = []

    def set_error(status: int, text: bytes) -> int:  # the format only: it is variadic
        messages.append(text)
        return status

    class Host(ctypes.Structure):
        _fields_ = [
            ("struct_size", ctypes.c_size_t),
            ("abi_version", ctypes.c_uint32),
            ("library_version", ctypes.c_char_p),
            ("kernel_register", ctypes.c_void_p),
            ("set_error", set_error_type),
            ("last_error", ctypes.c_void_p),
            ("op_find", ctypes.c_void_p),
            ("op_get_schema", ctypes.c_void_p),
        ]

    class Info(ctypes.Structure):
        _fields_ = [
            ("struct_size", ctypes.c_size_t),
            ("name", ctypes.c_char_p),
            ("version", ctypes.c_char_p),
            ("device_type", ctypes.c_int32),
            ("device_count", ctypes.c_int32),
            ("memory", ctypes.c_void_p),
            ("plugin_data", ctypes.c_void_p),
        ]

    init = plugin.ct_plugin_init
    init.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    info = Info(struct_size=ctypes.sizeof(Info))
    assert init(None, ctypes.addressof(info)) == lib.CT_ERROR_NULL_POINTER
    host = Host(struct_size=ctypes.sizeof(Host) - 8, set_error=set_error_type(set_error))
    assert init(ctypes.addressof(host), None) == lib.CT_ERROR_NULL_POINTER
    assert init(ctypes.addressof(host), ctypes.addressof(info)) == lib.CT_ERROR_ABI_MISMATCH
    assert messages and b"needs a host table of %zu bytes" in messages[-1]
    assert info.name is None and info.version is None and info.memory is None
