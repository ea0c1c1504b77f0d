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
