"""The README stays true: its op table (docs/operators.md) is the registry's, and CI runs its test
command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
OPERATORS = ROOT / "docs" / "operators.md"


def _table() -> str:
    match = re.search(r"^\| op \|.*?(?=\n\n|\Z)", OPERATORS.read_text(), re.S | re.M)
    assert match, f"{OPERATORS} lacks the op table"
    return match.group(0)


def _loaded_devices() -> set[str]:
    import ctensor

    return {b.name for b in ctensor.backends() if b.state == "loaded"}


def _devices_seen(page: str, devices: set[str]) -> str:
    """The page with each table row's devices column cut to `devices`: the page lists the
    backends CI runs (cpu, opencl), and a machine without one of them (no OpenCL runtime)
    generates its rows without it."""
    out = []
    for line in page.splitlines():
        if line.startswith("| `"):
            cells = line.split(" | ")
            shown = [d for d in cells[-1].rstrip(" |").split(", ") if d in devices]
            cells[-1] = ", ".join(shown) + " |"
            line = " | ".join(cells)
        out.append(line)
    return "\n".join(out)


def test_op_table_is_generated_from_the_registry():
    generated = subprocess.run(
        # The devices CI has (the cuda plugin registers kernels only where there is a GPU;
        # test_cuda_device.py checks that it registers the opencl column's kernel set and the
        # cumulative ops).
        [sys.executable, "-m", "ctensor", "--operators-page"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    devices = _loaded_devices()
    assert "cpu" in devices
    assert _devices_seen(OPERATORS.read_text(), devices) == _devices_seen(generated, devices), (
        "docs/operators.md is stale: regenerate it with "
        "`python -m ctensor --operators-page > docs/operators.md`"
    )


def test_op_table_check_ignores_backends_this_machine_lacks():
    row = "| `add` | shape_static | x1, x2 | — | all | cpu, opencl |"
    assert _devices_seen(row, {"cpu"}) == "| `add` | shape_static | x1, x2 | — | all | cpu |"
    assert _devices_seen(row, {"cpu", "opencl"}) == row


def _pytest_without_pocl(tmp_path, *extra_env: tuple[str, str]) -> subprocess.CompletedProcess:
    """README's test command's OpenCL part (one OpenCL test file) on a machine whose OpenCL ICD
    loader finds no platform (OCL_ICD_VENDORS: an empty directory), PoCL being hidden."""
    vendors = tmp_path / "no-icd-vendors"
    vendors.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "CTENSOR_REQUIRE_OPENCL"}
    env.update({"OCL_ICD_VENDORS": str(vendors), **dict(extra_env)})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-rs",
            "-p",
            "no:cacheprovider",
            str(ROOT / "tests" / "test_opencl_runtime.py"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )


def test_opencl_tests_skip_with_the_reason_without_an_opencl_platform(tmp_path):
    proc = _pytest_without_pocl(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "skipped" in proc.stdout and "OpenCL unavailable" in proc.stdout, proc.stdout[-3000:]
    assert "passed" not in proc.stdout.splitlines()[-1]


def test_ci_makes_a_missing_opencl_platform_fail(tmp_path):
    proc = _pytest_without_pocl(tmp_path, ("CTENSOR_REQUIRE_OPENCL", "1"))
    assert proc.returncode == 1, proc.stdout[-3000:]
    last = proc.stdout.splitlines()[-1]  # the tests' fixtures require the backend: errors
    assert ("failed" in last or "error" in last) and "skipped" not in last, last
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    tests_at = ci.index(next(c for c in commands if "pytest" in c))
    assert "export CTENSOR_REQUIRE_OPENCL=1" in ci[:tests_at]


def test_readme_points_to_the_op_table():
    assert "docs/operators.md" in README


def test_every_registered_op_is_in_the_table():
    import ctensor

    listed = set(re.findall(r"^\| `([a-z0-9_]+)` \|", _table(), re.M))
    assert listed == set(ctensor.list_ops())


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    test_command = next(c for c in commands if "pytest" in c)
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci.splitlines()


def test_ci_checks_style_before_the_tests_with_the_pinned_tools():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    tests_at = ci.index(next(c for c in commands if "pytest" in c))
    clang_format = (
        "git ls-files '*.c' '*.h' '*.cc' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror"
    )
    for check in ("ruff check .", "ruff format --check .", clang_format):
        assert check in ci and ci.index(check) < tests_at, check
    # One place for the versions: pyproject.toml's style extra pins both tools exactly, and the
    # contributing guide installs the same ones.
    pyproject = (ROOT / "pyproject.toml").read_text()
    style = re.search(r"^style = \[(.*)\]$", pyproject, re.M)
    assert style, "pyproject.toml lacks the style extra"
    pins = re.findall(r'"([^"]+)"', style.group(1))
    assert sorted(p.split("==")[0] for p in pins) == ["clang-format", "ruff"]
    assert all("==" in p for p in pins)
    contributing = (ROOT / "docs" / "contributing.md").read_text()
    assert "pip install " + " ".join(pins) in contributing


def test_readme_and_docs_link_only_to_files_that_exist():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
