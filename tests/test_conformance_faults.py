"""The conformance suite against the example plugin's run-time planted faults (CT_EXAMPLE_FAULT,
examples/plugin/example_plugin.c): one per class that slips past a suite of tiny cases (a
size threshold, float32 accumulation, an attribute combination, a race, an ignored allocator
failure, an error without a message). The clean plugin passes; each fault fails exactly its
op's rows, on the check that names its class."""

from __future__ import annotations

import ast
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ctensor

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "plugin" / "example_plugin.c"


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> Path:
    """The example plugin built as a vendor would: against the installed headers (the source
    tree's capi/ where the package is an editable install without them)."""
    out = tmp_path_factory.mktemp("faults")
    include = ctensor.get_include()
    if not os.path.exists(os.path.join(include, "ctensor_plugin.h")):
        include = str(ROOT / "capi")
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "a C compiler is needed to build the example plugin"
    subprocess.run(
        [
            compiler,
            "-shared",
            "-fPIC",
            "-O2",
            "-o",
            str(out / "libctensor_example.so"),
            str(EXAMPLE),
            f"-I{include}",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


def run_suite(plugin_dir: Path, fault: str | None, *args: str) -> tuple[int, dict, str, str]:
    """The suite over ./libctensor_example.so, run from the plugin's directory."""
    env = {k: v for k, v in os.environ.items() if k != "CT_EXAMPLE_FAULT"}
    if fault:
        env["CT_EXAMPLE_FAULT"] = fault
    report = plugin_dir / f"report-{fault}.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctensor.conformance",
            "--plugin",
            "./libctensor_example.so",
            "--report",
            str(report),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=plugin_dir,
    )
    return proc.returncode, json.loads(report.read_text()), proc.stdout, proc.stderr


def case_shapes(case: str) -> list:
    """The input shapes of a report's case description ("... shapes [...], layouts ...")."""
    return ast.literal_eval(case.split("shapes ", 1)[1].split(", layouts", 1)[0])


def rows(data: dict, status: str) -> dict:
    return {(r["op"], r["dtype"]): r for r in data["runs"][0]["results"] if r["status"] == status}


def test_the_clean_plugin_passes_and_reports_only_its_own_ops(plugin_dir):
    rc, data, out, err = run_suite(plugin_dir, None)
    assert rc == 0, out[-3000:]
    assert rows(data, "FAIL") == {}
    ops = {r["op"] for r in data["runs"][0]["results"]}
    assert ops == {"add", "multiply", "relu", "relu_backward", "sum", "nonzero"}
    assert ("add", "int8") in rows(data, "NOT_SUPPORTED")  # an op it has, a dtype it lacks
    assert "Warning" not in err, err[-2000:]
    assert str(plugin_dir) not in out  # no absolute paths on the console
    assert "(libctensor_example.so)" in out


def test_show_unsupported_lists_the_ops_the_plugin_never_registered(plugin_dir):
    rc, data, _, _ = run_suite(plugin_dir, None, "--ops", "add,exp", "--show-unsupported")
    assert rc == 0
    assert ("exp", "float32") in rows(data, "NOT_SUPPORTED")


# fault -> (the op it is planted in, the check that must catch it)
FAULTS = {
    "size": ("add", "numerics"),
    "accumulation": ("sum", "numerics"),
    "attribute": ("sum", "numerics"),
    "race": ("relu", "threads"),
    "allocator": ("nonzero", "allocator_failure"),
    "message": ("nonzero", "error_message"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_suite_catches_each_planted_fault(plugin_dir, fault):
    op, check = FAULTS[fault]
    rc, data, out, err = run_suite(plugin_dir, fault, "--ops", op)
    assert rc == 1, out[-3000:]
    failed = rows(data, "FAIL")
    assert failed and {o for o, _ in failed} == {op}, out[-3000:]
    for r in failed.values():
        assert r["checks"][check] == "FAIL", (r["check"], r["reason"])
        assert r["seed"] is not None
    rerun = [line.strip() for line in out.splitlines() if line.strip().startswith("rerun:")]
    assert rerun and all("--plugin libctensor_example.so" in line for line in rerun)
    if fault == "size":  # wrong beyond 1024 elements: only a large case shows it
        assert set(failed) == {("add", "float32"), ("add", "float64"), ("add", "int32")}
        for r in failed.values():
            assert max(math.prod(s) for s in case_shapes(r["case"])) > 1024
    if fault == "accumulation":  # float32 only, on its long lane
        assert set(failed) == {("sum", "float32")}
        (shape,) = case_shapes(failed[("sum", "float32")]["case"])
        assert max(shape) > 100_000
    if fault == "attribute":  # keepdims with an explicit axis other than the last
        for r in failed.values():
            assert "'keepdims': True" in r["case"] and "'axis': [" in r["case"]
    assert "Warning" not in err, err[-2000:]
