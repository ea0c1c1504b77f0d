"""The README stays true: its op table (docs/operators.md) is the registry's, and CI runs its test
command."""

from __future__ import annotations

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


def test_op_table_is_generated_from_the_registry():
    generated = subprocess.run(
        # The devices CI has (the cuda plugin registers kernels only where there is a GPU;
        # test_cuda_device.py checks that it registers the opencl column's kernel set).
        [sys.executable, "-m", "ctensor", "--operators-page"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert OPERATORS.read_text() == generated, (
        "docs/operators.md is stale: regenerate it with "
        "`python -m ctensor --operators-page > docs/operators.md`"
    )


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
