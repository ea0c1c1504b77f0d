"""The benchmark harness (python -m ctensor.bench) in --quick mode: the command runs, the JSON
has its structure, results are checked before timing and a wrong answer is never timed; the
OpenCL backend's implementation (ctensor.opencl) is checked and timed beside the CPU whenever
``ctensor.backends()`` reports it loaded (CI installs PoCL), and is absent, with the reason,
otherwise. No timing thresholds: only structure and correctness checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ctensor
from ctensor import ops
from ctensor.bench import opencl, report, runner
from ctensor.bench.case import CTENSOR_IMPLS, Case, Impl, Target

OPENCL_LOADED = any(
    b.device_type == "opencl" and b.state == "loaded" and b.device_count > 0
    for b in ctensor.backends()
)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    # a directory that does not exist yet: the harness makes it
    path = tmp_path_factory.mktemp("bench") / "run" / "results.json"
    command = [
        sys.executable,
        "-m",
        "ctensor.bench",
        "--quick",
        "--threads",
        "1",
        "--cases",
        "overhead/add/numpy/out",
        "--cases",
        "elementwise/add/",
        "--cases",
        "nn/argmax",
        "--cases",
        "sum/accuracy",
        "--cases",
        "torch/overhead/add",
        "--cases",
        "jax/overhead/add",
        "--json",
        str(path),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=600, check=False, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    with open(path, encoding="utf-8") as f:
        return json.load(f), done.stdout


def test_quick_run_writes_the_selected_cases_and_the_machine_limits(quick_run):
    document, stdout = quick_run
    names = [c["name"] for c in document["cases"]]
    assert "overhead/add/numpy/out" in names
    assert any(n.startswith("elementwise/add/") for n in names)
    assert any(n.startswith("nn/argmax/") for n in names)
    assert "torch/overhead/add/8" in names
    assert "jax/overhead/add/8" in names  # a jitted ctensor.jax call beside XLA's jnp.add
    assert {"stream_copy", "stream_add", "stream_read", "fma_peak"} <= set(document["limits"])
    assert all(v > 0 for v in document["limits"].values())
    meta = document["meta"]
    assert meta["threads"] == 1 and meta["quick"] is True
    assert meta["settle_s"] == 0.0  # one thread: nothing spins between samples
    assert meta["ctensor"] and meta["numpy"] == np.__version__
    assert "targets met:" in stdout and "overhead/add/numpy/out" in stdout
    # torch's own op through torch.ops: a column of its own, beside torch's
    header = next(line for line in stdout.splitlines() if line.startswith("case "))
    assert header.index(" torch ") < header.index(" torch.aten ")


def test_every_ctensor_result_was_checked_and_timed(quick_run):
    document, _ = quick_run
    for case in document["cases"]:
        if case["group"] == "machine":
            assert case["checks"] == {}
            continue
        assert case["checks"]["ctensor"]["status"] == "ok", case["checks"]
        assert case["checks"]["ctensor"]["checked_against"], case["name"]
        for name, entry in case["results"].items():
            assert entry["median_s"] > 0 and len(entry["samples_s"]) == document["meta"]["repeats"]
            assert entry["calls_per_sample"] >= 1
            if case["unit"] != "ns":
                assert entry["throughput"] > 0, name
        assert set(case["speedup"]["ctensor"]) == set(case["results"]) - set(CTENSOR_IMPLS)


def test_targets_and_accuracy_are_judged(quick_run):
    document, _ = quick_run
    by_name = {c["name"]: c for c in document["cases"]}
    overhead = by_name["overhead/add/numpy/out"]
    assert "ctensor.bind" in overhead["results"]
    assert {t["impl"] for t in overhead["targets"]} == {"ctensor", "ctensor.bind"}
    for case in document["cases"]:
        for target in case["targets"]:
            assert target["ratio"] > 0 and target["met"] == (target["ratio"] >= target["threshold"])
    (accuracy,) = document["accuracy"]
    assert accuracy["met"] in (True, False) and len(accuracy["rows"]) == 2
    assert document["summary"]["total"] == sum(len(c["targets"]) for c in document["cases"]) + 1


def test_the_opencl_backend_is_checked_and_timed_beside_the_cpu_when_loaded(quick_run):
    document, stdout = quick_run
    assert document["meta"]["opencl"]["available"] is OPENCL_LOADED
    if not OPENCL_LOADED:
        # absent backend: no column, and the reason once above the table
        assert all(
            "ctensor.opencl" not in c["results"] and "ctensor.opencl" not in c["checks"]
            for c in document["cases"]
        )
        assert stdout.count("ctensor.opencl not run:") == 1
        return
    header = stdout.splitlines()[1]
    assert "ctensor.opencl" in header and stdout.count("ctensor.opencl on opencl:0") == 1
    by_prefix = {c["name"].rsplit("/", 1)[0]: c for c in document["cases"]}
    for prefix in ("elementwise/add", "nn/argmax"):
        case = by_prefix[prefix]
        check = case["checks"]["ctensor.opencl"]
        assert check["status"] == "ok" and check["checked_against"], check
        entry = case["results"]["ctensor.opencl"]
        assert entry["median_s"] > 0 and entry["throughput"] > 0
        assert len(entry["samples_s"]) == document["meta"]["repeats"]
        speedup = case["speedup"]["ctensor.opencl"]
        assert speedup["ctensor"] > 0  # beside the CPU backend
        assert set(speedup) - {"ctensor"} == set(case["results"]) - set(CTENSOR_IMPLS)
        assert all(t["impl"] == "ctensor" for t in case["targets"])  # targets stay on the CPU


def test_an_opencl_result_left_in_its_out_buffer_cannot_pass():
    device, reason = opencl.find(ctensor)
    assert (device is not None) is OPENCL_LOADED, reason
    if device is None:
        assert reason
        return
    a = np.linspace(0, 1, 16, dtype=np.float32)
    ns = {
        "ops": ops,
        "np": np,
        "a": a,
        "c": np.empty_like(a),
        "sync": device.sync,
        "da": device.upload(a),
        "dc": device.empty_like(a),
    }
    ops.add(ns["da"], ns["da"], out=ns["dc"])  # the right answer, written before the check
    right = Case(
        "test/add",
        "test",
        "ns",
        0.0,
        {
            "ctensor.opencl": Impl("sync(ops.add(da, da, out=dc))", ns),
            "numpy": Impl("np.add(a, a, out=c)", ns),
        },
        reference={"numpy": (1e-6, 0.0)},
    )
    record = runner.run_case(right, repeats=2, min_sample_s=0.0)
    assert record["checks"]["ctensor.opencl"]["status"] == "ok"
    assert len(record["results"]["ctensor.opencl"]["samples_s"]) == 2
    lazy = Case(
        "test/add",
        "test",
        "ns",
        0.0,
        {"ctensor.opencl": Impl("sync(dc)", ns), "numpy": Impl("np.add(a, a, out=c)", ns)},
        reference={"numpy": (1e-6, 0.0)},
    )
    record = runner.run_case(lazy, repeats=2, min_sample_s=0.0)
    assert record["checks"]["ctensor.opencl"]["status"] == "wrong"
    assert "ctensor.opencl" not in record["results"]


def _case(ct_expr: str) -> Case:
    a = np.linspace(0, 1, 16, dtype=np.float32)
    ns = {"ops": ops, "np": np, "a": a, "c": np.empty_like(a)}
    return Case(
        "test/add",
        "test",
        "ns",
        0.0,
        {"ctensor": Impl(ct_expr, ns), "numpy": Impl("np.add(a, a, out=c)", ns)},
        reference={"numpy": (1e-6, 0.0)},
        targets=[Target("as fast as numpy", "speedup", "numpy", 1.0)],
    )


def test_a_wrong_answer_is_reported_and_never_timed():
    case = _case("ops.multiply(a, a)")
    record = runner.run_case(case, repeats=2, min_sample_s=0.0)
    check = record["checks"]["ctensor"]
    assert check["status"] == "wrong" and "vs numpy" in check["detail"]
    assert "ctensor" not in record["results"] and "numpy" in record["results"]
    runner.judge_targets(case, record, {})
    (target,) = record["targets"]
    assert target["met"] is False and target["ratio"] is None
    text = report.table({"cases": [record]})
    assert "WRONG" in text and "MISSED" in text


def test_an_implementation_that_writes_nothing_cannot_pass_on_a_peers_result():
    # numpy writes the right answer into c first; "c" alone would then look right, but out=
    # buffers are filled with a sentinel before each implementation is evaluated.
    record = runner.run_case(_case("c"), repeats=2, min_sample_s=0.0)
    assert record["checks"]["ctensor"]["status"] == "wrong"
    assert "ctensor" not in record["results"]


def test_a_failing_call_is_reported_as_an_error():
    record = runner.run_case(_case("ops.add(a, a, out=np.empty(3, np.float32))"), 2, 0.0)
    assert record["checks"]["ctensor"]["status"] == "error"
    assert "ShapeMismatchError" in record["checks"]["ctensor"]["detail"]
    assert "ctensor" not in record["results"]


def test_a_right_answer_is_timed():
    record = runner.run_case(_case("ops.add(a, a)"), repeats=3, min_sample_s=0.0)
    assert record["checks"]["ctensor"]["status"] == "ok"
    assert len(record["results"]["ctensor"]["samples_s"]) == 3


def test_every_sample_waits_for_other_threads_to_settle(monkeypatch):
    """With settle_s, each timed sample follows a pause of that length (timing.py: other
    libraries' thread pools spin after their calls); calibration samples do not."""
    from ctensor.bench import timing

    pauses: list[float] = []
    monkeypatch.setattr(timing.time, "sleep", pauses.append)
    record = runner.run_case(_case("ops.add(a, a)"), repeats=3, min_sample_s=0.0, settle_s=0.125)
    assert len(record["results"]["ctensor"]["samples_s"]) == 3
    assert pauses == [0.125] * 3 * len(record["results"])


def test_a_case_can_ask_for_a_longer_pause(monkeypatch):
    """A case whose peers spin longer (matmul: OpenBLAS) pauses for its own settle_s, never for
    less than the run's, and not at all in a run without pauses (one thread)."""
    from ctensor.bench import timing

    pauses: list[float] = []
    monkeypatch.setattr(timing.time, "sleep", pauses.append)
    case = _case("ops.add(a, a)")
    case.settle_s = 0.25
    for run_settle, expected in [(0.125, 0.25), (0.5, 0.5), (0.0, None)]:
        pauses.clear()
        record = runner.run_case(case, repeats=2, min_sample_s=0.0, settle_s=run_settle)
        assert pauses == ([expected] * 2 * len(record["results"]) if expected else [])
        assert record["settle_s"] == (expected or 0.0)


def test_charts_are_drawn_when_matplotlib_is_installed(quick_run, tmp_path):
    document, _ = quick_run
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            report.charts(document, str(tmp_path))
        return
    paths = report.charts(document, str(tmp_path))
    assert os.path.join(str(tmp_path), "targets.png") in paths
    for path in paths:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_cuda_benchmark_runs_or_says_why_not(tmp_path):
    sys.path.insert(0, os.path.dirname(__file__))
    from cuda_arrays import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    record = tmp_path / "results"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctensor.bench.cuda",
            "--quick",
            "--cases",
            "add",
            "--repeats",
            "1",
            "--json",
            os.devnull,
            "--record",
            str(record),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if reason is None:
        assert run.returncode == 0, run.stderr
        assert "add" in run.stdout and "GB/s" in run.stdout and "vs copy" in run.stdout
        (written,) = record.iterdir()
        assert written.suffix == ".txt" and "targets met" in written.read_text()
    else:
        # A clean refusal: status 2, one line saying what is missing, nothing recorded.
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.startswith("python -m ctensor.bench.cuda cannot run here: ")
        assert "needs CuPy and PyTorch" in run.stderr or "cuda backend is not running" in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1 and not record.exists()


def test_the_cuda_benchmark_table_gives_ratios_against_the_targets():
    from ctensor.bench import cuda

    add = cuda.Case("add", {}, 12e9, "GB/s", ("copy", 0.9))
    add.medians = {"ctensor": 0.010, "cupy": 0.009, "torch": 0.012, cuda.MEMCPY: 0.0095}
    row = cuda.rows_of(add)
    assert row["ratios"] == pytest.approx({"cupy": 0.9, "torch": 1.2, "copy": 0.95})
    assert row["rate"] == pytest.approx(1200.0) and row["met"] is True
    matmul = cuda.Case("matmul 4096", {}, 2.0 * 4096**3, "TFLOP/s", ("torch", 0.95))
    matmul.medians = {"ctensor": 0.010, "torch": 0.009}
    slow = cuda.rows_of(matmul)
    assert slow["ratios"] == pytest.approx({"cupy": None, "torch": 0.9, "copy": None})
    assert slow["met"] is False
    shown = cuda.Case("transpose_copy", {}, 8e9, "GB/s")
    shown.medians = {"ctensor": 0.01, cuda.MEMCPY: 0.005}
    untargeted = cuda.rows_of(shown)
    assert untargeted["met"] is None
    text = cuda.table([row, slow, untargeted], ["device: a GPU"])
    lines = text.splitlines()
    assert lines[0] == "device: a GPU"
    (add_line,) = [line for line in lines if line.startswith("add ")]
    assert add_line.split()[-7:] == ["0.90", "1.20", "0.95", "copy", ">=", "0.90", "met"]
    (matmul_line,) = [line for line in lines if line.startswith("matmul 4096")]
    assert matmul_line.split()[-7:] == ["-", "0.90", "-", "torch", ">=", "0.95", "BELOW"]
    (transpose_line,) = [line for line in lines if line.startswith("transpose_copy")]
    assert transpose_line.split()[-4:] == ["-", "-", "0.50", "-"]
    assert lines[-1] == "targets met: 1 of 2; below: matmul 4096"


def test_the_cuda_benchmark_records_under_the_gpus_name():
    from ctensor.bench import cuda

    assert cuda.record_path("NVIDIA H200", "results") == os.path.join("results", "h200.txt")
    assert cuda.record_path("NVIDIA H100 80GB HBM3", "r") == os.path.join("r", "h100-80gb-hbm3.txt")
