"""The conformance suite (python -m ctensor.conformance): the built-in CPU backend passes every
case; the report's format; op/skip/xfail selection; and the suite's own tools (ULP comparison,
bfloat16 storage, case reproducibility)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ctensor._registry import OpSpec, registry_json
from ctensor.conformance import SUITE_VERSION
from ctensor.conformance import dtypes as cdt
from ctensor.conformance.cases import generate
from ctensor.conformance.tolerances import compare


def run_suite(tmp_path, *args: str) -> tuple[int, dict, str]:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ctensor.conformance", "--report", str(report), *args],
        capture_output=True, text=True, timeout=900, env={**os.environ},
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc.returncode, data, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def cpu_report(tmp_path_factory):
    return run_suite(tmp_path_factory.mktemp("cpu"))


def test_builtin_cpu_backend_has_no_failure(cpu_report):
    rc, data, text = cpu_report
    failures = [f"{r['op']}:{r['dtype']} [{r['check']}] {r['reason']}"
                for run in data["runs"] for r in run["results"] if r["status"] == "FAIL"]
    assert failures == [], "\n".join(failures)
    assert rc == 0, text[-3000:]
    assert data["failed"] is False


def test_every_cpu_kernel_is_exercised(cpu_report):
    _, data, _ = cpu_report
    results = data["runs"][0]["results"]
    seen = {(r["op"], tuple(r["signature"])) for r in results if r["status"] == "PASS"}
    for op in registry_json()["ops"]:
        for kernel in op["kernels"]:
            if kernel["backend"] == "cpu":
                assert (op["name"], tuple(kernel["signature"])) in seen, op["name"]
    assert all(r["cases"] > 0 for r in results if r["status"] == "PASS")


def test_report_format(cpu_report):
    _, data, text = cpu_report
    assert data["suite_version"] == SUITE_VERSION
    assert len(data["abi_version"]) == 2 and data["abi_version"][0] >= 1
    run = data["runs"][0]
    assert run["backend"] == "cpu" and run["device"] == "cpu" and run["plugin"] is None
    assert sum(run["summary"].values()) == len(run["results"])
    first = run["results"][0]
    for key in ("op", "dtype", "signature", "status", "cases", "check", "reason", "seed",
                "worst_error", "reference", "checks"):
        assert key in first
    for check in ("abi_layout", "abi_version", "infer", "run", "numerics", "inputs_unchanged",
                  "output_bounds", "workspace_bounds", "error_status", "threads"):
        assert first["checks"][check] == "PASS"
    assert "PASS" in text and "FAIL: 0" in text


def test_op_selection_skips_and_xfails(tmp_path):
    skips = tmp_path / "skips.txt"
    skips.write_text("# not now\nexp:float16\n")
    xfails = tmp_path / "xfails.txt"
    xfails.write_text("add:int8  # expected to fail, but passes\n")
    rc, data, _ = run_suite(tmp_path, "--ops", "exp,add:int*", "--skips-file", str(skips),
                            "--xfails-file", str(xfails), "--quick")
    assert rc == 0
    status = {(r["op"], r["dtype"]): r["status"] for r in data["runs"][0]["results"]}
    assert status[("exp", "float16")] == "SKIP"
    assert status[("exp", "float32")] == "PASS"
    assert status[("add", "int8")] == "PASS"
    assert {op for op, _ in status} == {"exp", "add"}
    assert all(d.startswith("int") for op, d in status if op == "add")


def test_ulp_comparison():
    one = np.array([1.0])
    next_up = np.array([np.nextafter(np.float32(1), np.float32(2))], dtype=np.float64)
    assert compare(next_up, one, "float32", "exp")[0]
    far = np.array([1.0 + 2.0**-23 * 5])
    ok, text = compare(far, one, "float32", "exp")
    assert not ok and "5 ulp" in text
    assert compare(np.array([np.nan]), np.array([np.nan]), "float16", "exp")[0]
    assert not compare(np.array([np.inf]), np.array([65504.0 * 2]), "float32", "exp")[0]
    assert compare(np.array([-0.0]), np.array([0.0]), "float64", "exp")[0]
    assert not compare(np.array([3], dtype=np.int8), np.array([4]), "int8", "add")[0]


def test_bfloat16_storage_rounds_to_nearest_even():
    values = np.array([1.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, np.nan, -np.inf, 3.0e38])
    back = cdt.to_values(cdt.from_values(values, "bfloat16"), "bfloat16")
    assert back[0] == 1.0 and back[1] == 1.0 and back[2] == 1.0 + 2.0**-6
    assert np.isnan(back[3]) and back[4] == -np.inf and np.isfinite(back[5])


def test_cases_are_reproducible_and_cover_layouts():
    spec = next(OpSpec(o) for o in registry_json()["ops"] if o["name"] == "add")
    a = generate(spec, ("float32",) * 3, 7, 12)
    b = generate(spec, ("float32",) * 3, 7, 12)
    assert [c.seed for c in a] == [c.seed for c in b]
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x.inputs, y.inputs, strict=True):
            assert u.tobytes() == v.tobytes() and u.strides == v.strides
    layouts = {layout for c in a for layout in c.layouts}
    assert {"strided", "reversed", "broadcast"} <= layouts
    shapes = {tuple(i.shape) for c in a for i in c.inputs}
    assert () in shapes and any(0 in s for s in shapes)
    edge = np.concatenate([c.values()[0].ravel() for c in a])
    assert np.isnan(edge).any() and np.isinf(edge).any()
