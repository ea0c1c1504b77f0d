"""The README stays true: its op table is the registry's, and CI runs its test command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _section(start: str, end: str) -> str:
    match = re.search(re.escape(start) + r"\n(.*?)" + re.escape(end), README, re.S)
    assert match, f"README lacks the {start} ... {end} markers"
    return match.group(1).strip()


def test_op_table_is_generated_from_the_registry():
    generated = subprocess.run(
        # The devices CI has (the cuda plugin registers kernels only where there is a GPU;
        # test_cuda_device.py checks that it registers the opencl column's kernel set).
        [sys.executable, "-m", "ctensor", "--markdown-ops", "--devices", "cpu,opencl"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    assert _section("<!-- ops-table-start -->", "<!-- ops-table-end -->") == generated, (
        "README's op table is stale: regenerate it with "
        "`python -m ctensor --markdown-ops --devices cpu,opencl`"
    )


def test_every_registered_op_is_in_the_table():
    import ctensor

    table = _section("<!-- ops-table-start -->", "<!-- ops-table-end -->")
    listed = set(re.findall(r"^\| `([a-z0-9_]+)` \|", table, re.M))
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
    clang_format = "git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror"
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
