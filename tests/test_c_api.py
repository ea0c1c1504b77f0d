"""The C ABI from C and C++, built against the *installed* library with pkg-config.

Each program under tests/c/ and examples/c/ is compiled in a temporary directory with
`pkg-config --cflags --libs ctensor` (PKG_CONFIG_PATH from `python -m ctensor --pkgconfigdir`,
or site-packages/ctensor/lib/pkgconfig while that command is unavailable) and run:

- examples/c/quickstart.c: built exactly as its header comment says, and strictly (-Werror);
  run plainly, under valgrind (memcheck, definite and indirect leaks are errors) and with
  AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on);
- tests/c/test_abi.c: the ABI contract (TAP-like output), plainly and under valgrind;
- tests/c/test_plan.c: plans (checked once, run many times), plainly, under valgrind and
  with the sanitizers;
- tests/c/test_profiler.c: the profiling hooks (ct_set_profiler), with threads running ops while
  profilers are swapped, plainly, under valgrind (fewer swaps) and with the sanitizers;
- tests/c/test_header_compat.c: C99, alone and next to DLPack's real header (PyTorch ships it;
  it is linked into the temporary directory, never copied into the tree);
- tests/c/test_header.cpp: the header from C++11 and C++17.

OMP_NUM_THREADS=2 keeps OpenMP pools small under valgrind. libgomp's thread pool may show as
"possibly lost"; only definite and indirect leaks fail the run.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "c" / "quickstart.c"
TEST_ABI = ROOT / "tests" / "c" / "test_abi.c"
TEST_PLAN = ROOT / "tests" / "c" / "test_plan.c"
TEST_PROFILER = ROOT / "tests" / "c" / "test_profiler.c"
HEADER_COMPAT = ROOT / "tests" / "c" / "test_header_compat.c"
HEADER_CPP = ROOT / "tests" / "c" / "test_header.cpp"

CC = os.environ.get("CC", "cc")
CXX = os.environ.get("CXX", "g++")
TIMEOUT = 600  # seconds per command; valgrind runs take a few seconds here

VALGRIND_ARGS = [
    "--error-exitcode=99",
    "--leak-check=full",
    "--errors-for-leak-kinds=definite,indirect",
]
SANITIZE = [
    "-g",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=undefined",
    "-fno-omit-frame-pointer",
]
STRICT_C = ["-Wall", "-Wextra", "-pedantic", "-Werror"]


@dataclass(frozen=True)
class PkgConfig:
    pcdir: Path
    env: dict[str, str]  # environment with PKG_CONFIG_PATH set
    cflags: list[str]
    libs: list[str]


def _run(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: int = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def _describe(result: subprocess.CompletedProcess[str], limit: int = 6000) -> str:
    cmd = result.args if isinstance(result.args, str) else shlex.join(map(str, result.args))
    return (
        f"$ {cmd}\nexit status {result.returncode}\n"
        f"--- stdout ---\n{result.stdout[-limit:]}\n--- stderr ---\n{result.stderr[-limit:]}"
    )


def _pkgconfig_dir(workdir: Path) -> Path:
    """`python -m ctensor --pkgconfigdir`, else where pip puts it inside site-packages."""
    result = _run([sys.executable, "-m", "ctensor", "--pkgconfigdir"], cwd=workdir, timeout=120)
    if result.returncode == 0 and result.stdout.strip():
        return Path(result.stdout.strip().splitlines()[-1])
    return Path(sysconfig.get_paths()["platlib"]) / "ctensor" / "lib" / "pkgconfig"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("c_api")


@pytest.fixture(scope="module")
def pkg(workdir: Path) -> PkgConfig:
    if not shutil.which("pkg-config"):
        pytest.fail("pkg-config is not installed (apt-get install pkg-config)")
    pcdir = _pkgconfig_dir(workdir)
    if not (pcdir / "ctensor.pc").is_file():
        pytest.fail(f"no ctensor.pc in {pcdir}: install the package first (pip install .)")
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.pathsep.join(
        p for p in (str(pcdir), os.environ.get("PKG_CONFIG_PATH", "")) if p
    )
    env["OMP_NUM_THREADS"] = "2"
    flags = {}
    for what in ("--cflags", "--libs"):
        result = _run(["pkg-config", what, "ctensor"], env=env)
        assert result.returncode == 0, _describe(result)
        flags[what] = shlex.split(result.stdout)
    return PkgConfig(pcdir, env, flags["--cflags"], flags["--libs"])


@pytest.fixture(scope="module")
def dlpack_include(workdir: Path) -> Path:
    """A directory with dlpack/dlpack.h: PyTorch's own copy (a test dependency), linked in."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "torch is a test dependency (pip install '.[test]'); its include/ holds DLPack's header"
        )
    torch_include = Path(list(spec.submodule_search_locations)[0]) / "include"
    candidates = [torch_include / "dlpack" / "dlpack.h", torch_include / "ATen" / "dlpack.h"]
    header = next((c for c in candidates if c.is_file()), None)
    assert header is not None, f"no DLPack header under {torch_include}"
    include = workdir / "dlpack-include"
    (include / "dlpack").mkdir(parents=True, exist_ok=True)
    link = include / "dlpack" / "dlpack.h"
    if not link.exists():
        link.symlink_to(header)
    return include


def _build(
    pkg: PkgConfig,
    source: Path,
    output: Path,
    flags: Sequence[str] = (),
    *,
    compiler: str = CC,
    libs: Sequence[str] = (),
) -> Path:
    cmd = [compiler, *flags, str(source), "-o", str(output), *pkg.cflags, *pkg.libs, *libs]
    result = _run(cmd, env=pkg.env)
    assert result.returncode == 0, "build failed\n" + _describe(result)
    return output


def _valgrind() -> str:
    path = shutil.which("valgrind") or "/usr/bin/valgrind"
    if not os.access(path, os.X_OK):
        pytest.fail("valgrind is not installed (apt-get install valgrind)")
    return path


def _run_under_valgrind(pkg: PkgConfig, program: Path) -> subprocess.CompletedProcess[str]:
    result = _run([_valgrind(), *VALGRIND_ARGS, str(program)], env=pkg.env)
    assert result.returncode == 0, "valgrind run failed\n" + _describe(result)
    assert re.search(r"ERROR SUMMARY: 0 errors", result.stderr), _describe(result)
    # Belt and braces: no definite or indirect leaks even if the exit code were lost.
    for kind in ("definitely lost", "indirectly lost"):
        match = re.search(kind + r": ([\d,]+) bytes", result.stderr)
        assert match is None or match.group(1) == "0", _describe(result)
    return result


def _not_ok_lines(stdout: str) -> str:
    return "\n".join(line for line in stdout.splitlines() if line.startswith("not ok"))


# ----------------------------------------------------------------------------------------------
# pkg-config
# ----------------------------------------------------------------------------------------------


def test_pkg_config_describes_the_installed_library(pkg: PkgConfig) -> None:
    version = _run(["pkg-config", "--modversion", "ctensor"], env=pkg.env)
    assert version.returncode == 0, _describe(version)
    assert version.stdout.strip() == importlib.metadata.version("ctensor")
    includes = [Path(f[2:]) for f in pkg.cflags if f.startswith("-I")]
    assert any(
        (d / "ctensor.h").is_file() and (d / "ctensor_backend.h").is_file() for d in includes
    ), pkg.cflags
    libdirs = [Path(f[2:]) for f in pkg.libs if f.startswith("-L")]
    assert any(
        list(d.glob("libctensor.so*")) or list(d.glob("libctensor*.dylib")) for d in libdirs
    ), pkg.libs
    assert "-lctensor" in pkg.libs


# ----------------------------------------------------------------------------------------------
# examples/c/quickstart.c
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quickstart(pkg: PkgConfig, workdir: Path) -> Path:
    """Built the way its header comment documents it, through a shell."""
    output = workdir / "quickstart"
    command = (
        f"{CC} {shlex.quote(str(QUICKSTART))} $(pkg-config --cflags --libs ctensor) "
        f"-o {shlex.quote(str(output))}"
    )
    result = subprocess.run(
        command, shell=True, capture_output=True, text=True, env=pkg.env, timeout=TIMEOUT
    )
    assert result.returncode == 0, "build failed\n" + _describe(result)
    return output


def _check_quickstart_output(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, _describe(result)
    out = result.stdout
    assert "out = [[11, 22, 33], [14, 25, 36]]" in out, out
    assert "out[0, 0] = [[14.5, 22.5], [46.5, 54.5]]" in out, out
    assert "out[0, 1] = [[-5, -5], [-5, -5]]" in out, out
    assert "indices[0] = [0, 1]" in out and "indices[1] = [1, 2]" in out, out
    # The deliberate error: status name and the per-thread message.
    assert "CT_ERROR_SHAPE_MISMATCH" in out and "broadcast" in out, out
    assert out.rstrip().endswith("all examples correct"), out


def test_quickstart_runs(quickstart: Path, pkg: PkgConfig) -> None:
    _check_quickstart_output(_run([str(quickstart)], env=pkg.env))


def test_quickstart_compiles_without_warnings(pkg: PkgConfig, workdir: Path) -> None:
    _build(pkg, QUICKSTART, workdir / "quickstart-strict", ["-std=c11", *STRICT_C])


def test_quickstart_under_valgrind(quickstart: Path, pkg: PkgConfig) -> None:
    result = _run_under_valgrind(pkg, quickstart)
    _check_quickstart_output(result)


def test_quickstart_with_sanitizers(pkg: PkgConfig, workdir: Path) -> None:
    program = _build(pkg, QUICKSTART, workdir / "quickstart-asan", ["-std=c11", *SANITIZE])
    env = dict(
        pkg.env,
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
    )
    result = _run([str(program)], env=env)
    _check_quickstart_output(result)
    assert "runtime error" not in result.stderr, _describe(result)  # UBSan reports


# ----------------------------------------------------------------------------------------------
# tests/c/test_abi.c
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def test_abi(pkg: PkgConfig, workdir: Path) -> Path:
    return _build(
        pkg, TEST_ABI, workdir / "test_abi", ["-std=c11", "-pthread", *STRICT_C], libs=["-lm"]
    )


def _check_abi_output(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, (
        f"ABI checks failed:\n{_not_ok_lines(result.stdout)}\n\n" + _describe(result, limit=3000)
    )
    assert re.search(r"^1\.\.\d+$", result.stdout, re.M), result.stdout[-2000:]
    assert "not ok" not in result.stdout


def test_abi_contract(test_abi: Path, pkg: PkgConfig) -> None:
    _check_abi_output(_run([str(test_abi)], env=pkg.env))


def test_abi_contract_under_valgrind(test_abi: Path, pkg: PkgConfig) -> None:
    _check_abi_output(_run_under_valgrind(pkg, test_abi))


def test_abi_contract_with_sanitizers(pkg: PkgConfig, workdir: Path) -> None:
    program = _build(
        pkg, TEST_ABI, workdir / "test_abi-asan", ["-std=c11", "-pthread", *SANITIZE], libs=["-lm"]
    )
    env = dict(
        pkg.env, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    )
    result = _run([str(program)], env=env)
    _check_abi_output(result)
    assert "runtime error" not in result.stderr, _describe(result)


# ----------------------------------------------------------------------------------------------
# tests/c/test_plan.c: plans (ct_plan_create / set_data / run / destroy)
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def test_plan(pkg: PkgConfig, workdir: Path) -> Path:
    return _build(pkg, TEST_PLAN, workdir / "test_plan", ["-std=c11", *STRICT_C])


def test_plan_contract(test_plan: Path, pkg: PkgConfig) -> None:
    _check_abi_output(_run([str(test_plan)], env=pkg.env))


def test_plan_contract_under_valgrind(test_plan: Path, pkg: PkgConfig) -> None:
    _check_abi_output(_run_under_valgrind(pkg, test_plan))


def test_plan_contract_with_sanitizers(pkg: PkgConfig, workdir: Path) -> None:
    program = _build(pkg, TEST_PLAN, workdir / "test_plan-asan", ["-std=c11", *SANITIZE])
    env = dict(
        pkg.env, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    )
    result = _run([str(program)], env=env)
    _check_abi_output(result)
    assert "runtime error" not in result.stderr, _describe(result)


# ----------------------------------------------------------------------------------------------
# tests/c/test_profiler.c: the profiling hooks (ct_set_profiler / ct_get_profiler)
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def test_profiler(pkg: PkgConfig, workdir: Path) -> Path:
    return _build(
        pkg, TEST_PROFILER, workdir / "test_profiler", ["-std=c11", "-pthread", *STRICT_C]
    )


def test_profiler_contract(test_profiler: Path, pkg: PkgConfig) -> None:
    _check_abi_output(_run([str(test_profiler)], env=pkg.env))


def test_profiler_contract_under_valgrind(test_profiler: Path, pkg: PkgConfig) -> None:
    # Three profiler swaps under the threads instead of forty: valgrind runs one thread at a time.
    result = _run([_valgrind(), *VALGRIND_ARGS, str(test_profiler), "3"], env=pkg.env)
    assert result.returncode == 0, "valgrind run failed\n" + _describe(result)
    assert re.search(r"ERROR SUMMARY: 0 errors", result.stderr), _describe(result)
    _check_abi_output(result)


def test_profiler_contract_with_sanitizers(pkg: PkgConfig, workdir: Path) -> None:
    program = _build(
        pkg, TEST_PROFILER, workdir / "test_profiler-asan", ["-std=c11", "-pthread", *SANITIZE]
    )
    env = dict(
        pkg.env, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    )
    result = _run([str(program)], env=env)
    _check_abi_output(result)
    assert "runtime error" not in result.stderr, _describe(result)


# ----------------------------------------------------------------------------------------------
# The header: C99 (alone, DLPack first, DLPack after) and C++
# ----------------------------------------------------------------------------------------------

C_MODES = {
    "alone": [],
    "dlpack_first": ["-DCT_TEST_DLPACK_FIRST"],
    "dlpack_after": ["-DCT_TEST_DLPACK_AFTER"],
}


@pytest.mark.parametrize("mode", list(C_MODES))
def test_header_c99(mode: str, pkg: PkgConfig, workdir: Path, dlpack_include: Path) -> None:
    include = [] if mode == "alone" else [f"-I{dlpack_include}"]
    program = _build(
        pkg,
        HEADER_COMPAT,
        workdir / f"header_c99_{mode}",
        ["-std=c99", *STRICT_C, *C_MODES[mode], *include],
        libs=["-lm"],
    )
    result = _run([str(program)], env=pkg.env)
    assert result.returncode == 0, _describe(result)
    assert "not ok" not in result.stdout, result.stdout


@pytest.mark.parametrize("std", ["c++11", "c++17"])
@pytest.mark.parametrize("mode", ["alone", "dlpack_first"])
def test_header_cpp(
    std: str, mode: str, pkg: PkgConfig, workdir: Path, dlpack_include: Path
) -> None:
    extra = [] if mode == "alone" else ["-DCT_TEST_DLPACK_FIRST", f"-I{dlpack_include}"]
    program = _build(
        pkg,
        HEADER_CPP,
        workdir / f"header_{std}_{mode}".replace("+", "p"),
        [f"-std={std}", *STRICT_C, *extra],
        compiler=CXX,
    )
    result = _run([str(program)], env=pkg.env)
    assert result.returncode == 0, _describe(result)
    assert "not ok" not in result.stdout, result.stdout
