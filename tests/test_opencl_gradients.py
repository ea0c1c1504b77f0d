"""Every gradient entry of an op the OpenCL backend has runs there: the conformance suite's
gradient checks on opencl:0 (each step on the device against the CPU backend in float64, and
float64 cotangents against finite differences of the device's own forward)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from opencl_arrays import require_opencl

import ctensor


def setup_module() -> None:
    require_opencl()


def test_every_opencl_gradient_runs_on_the_device(tmp_path):
    differentiable = ctensor.autodiff.differentiable_ops()
    on_device = [n for n in differentiable if "opencl" in ctensor.op_info(n)["devices"]]
    backward = [n for n in ctensor.list_ops() if "_backward" in n]
    report = tmp_path / "opencl.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctensor.conformance",
            "--backend",
            "opencl",
            "--device",
            "opencl:0",
            "--quick",
            "--ops",
            ",".join(on_device + backward),
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ},
    )
    data = json.loads(report.read_text())
    results = data["runs"][0]["results"]
    failures = [
        f"{r['op']}:{r['dtype']} [{r['check']}] {r['reason']}"
        for r in results
        if r["status"] == "FAIL"
    ]
    assert failures == [], "\n".join(failures)
    assert proc.returncode == 0, proc.stdout[-3000:]
    checked = {}
    for r in results:
        if r["op"] in on_device and r["status"] == "PASS" and "gradient" in r["checks"]:
            checked.setdefault(r["op"], set()).add(r["checks"]["gradient"])
    # Every differentiable forward the device has runs its whole entry there.
    assert {op: states for op, states in checked.items() if states != {"PASS"}} == {}
    float_forwards = {
        r["op"]
        for r in results
        if r["op"] in on_device and r["status"] == "PASS" and r["dtype"].startswith("float")
    }
    assert float_forwards <= set(checked), sorted(float_forwards - set(checked))
    # The device's backward kernels are all reached through their forwards.
    device_backward = [
        r for r in results if "_backward" in r["op"] and r["status"] != "NOT_SUPPORTED"
    ]
    assert device_backward and all(r["status"] == "PASS" for r in device_backward)
