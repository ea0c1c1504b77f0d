"""The conformance suite (python -m ctensor.conformance): the built-in CPU backend passes every
case; the report's format; op/skip/xfail selection; and the suite's own tools (ULP comparison,
bfloat16 storage, case reproducibility)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ctensor
from ctensor._registry import OpSpec, registry_json
from ctensor.conformance import SUITE_VERSION
from ctensor.conformance import dtypes as cdt
from ctensor.conformance.cases import generate
from ctensor.conformance.tolerances import compare


def run_suite(tmp_path, *args: str) -> tuple[int, dict, str]:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ctensor.conformance", "--report", str(report), *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ},
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc.returncode, data, proc.stdout + proc.stderr


def _op_halves() -> list[list[str]]:
    """The registry's ops in two sets of about equal work (CPU kernel signatures), each forward
    op with its backward operators, whose rows take the runs of the forward's gradient checks."""
    families: dict[str, list] = {}
    for op in registry_json()["ops"]:
        weight = sum(k["backend"] == "cpu" for k in op["kernels"])
        family = families.setdefault(op["name"].split("_backward")[0], [[], 0])
        family[0].append(op["name"])
        family[1] += weight
    halves: list[list] = [[[], 0], [[], 0]]
    for names, weight in sorted(families.values(), key=lambda f: -f[1]):
        lighter = min(halves, key=lambda h: h[1])
        lighter[0].extend(names)
        lighter[1] += weight
    return [sorted(names) for names, _ in halves]


@pytest.fixture(scope="module")
def cpu_reports(tmp_path_factory):
    """The default CPU run, as two processes side by side over two disjoint halves of the ops
    (the machine's two cores): (rc, report, console text) of each."""
    procs = []
    for k, ops in enumerate(_op_halves()):
        report = tmp_path_factory.mktemp(f"cpu{k}") / "report.json"
        command = [sys.executable, "-m", "ctensor.conformance", "--report", str(report)]
        proc = subprocess.Popen(
            [*command, "--ops", ",".join(ops)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        procs.append((proc, report))
    out = []
    for proc, report in procs:
        text, _ = proc.communicate(timeout=900)
        out.append((proc.returncode, json.loads(report.read_text()), text))
    return out


@pytest.fixture(scope="module")
def cpu_report(cpu_reports):
    """The rows of both halves as one run's report (the first half's header)."""
    rc, data, text = cpu_reports[0]
    merged = json.loads(json.dumps(data))
    for _, other, more in cpu_reports[1:]:
        merged["runs"][0]["results"] += other["runs"][0]["results"]
        for status, count in other["runs"][0]["summary"].items():
            merged["runs"][0]["summary"][status] += count
        merged["failed"] = merged["failed"] or other["failed"]
        text += more
    return max(r for r, _, _ in cpu_reports), merged, text


def test_builtin_cpu_backend_has_no_failure(cpu_reports):
    for rc, data, text in cpu_reports:
        failures = [
            f"{r['op']}:{r['dtype']} [{r['check']}] {r['reason']}"
            for run in data["runs"]
            for r in run["results"]
            if r["status"] == "FAIL"
        ]
        assert failures == [], "\n".join(failures)
        assert rc == 0, text[-3000:]
        assert data["failed"] is False


def test_the_halves_cover_every_op_once():
    halves = _op_halves()
    names = [o["name"] for o in registry_json()["ops"]]
    assert sorted(halves[0] + halves[1]) == sorted(names)
    assert not set(halves[0]) & set(halves[1])


def test_every_cpu_row_is_checked_against_a_numpy_reference(cpu_report):
    """Backward operators included: none is compared with the CPU backend itself."""
    _, data, _ = cpu_report
    rows = data["runs"][0]["results"]
    assert {r["reference"] for r in rows} == {"numpy"}, sorted(
        {(r["op"], r["reference"]) for r in rows if r["reference"] != "numpy"}
    )


def test_every_cpu_kernel_is_exercised(cpu_report):
    _, data, _ = cpu_report
    results = data["runs"][0]["results"]
    seen = {(r["op"], tuple(r["signature"])) for r in results if r["status"] == "PASS"}
    for op in registry_json()["ops"]:
        for kernel in op["kernels"]:
            if kernel["backend"] == "cpu":
                assert (op["name"], tuple(kernel["signature"])) in seen, op["name"]
    assert all(r["cases"] > 0 for r in results if r["status"] == "PASS")


def _gradient_rows(data: dict) -> list:
    """Forward rows whose op has a gradient and whose differentiable inputs are floats."""
    rows = []
    for r in data["runs"][0]["results"]:
        entry = ctensor.op_info(r["op"])["gradient"]
        if not entry["differentiable"] or r["status"] == "NOT_SUPPORTED":
            continue
        params = r["signature"][: len(entry["input_grads"])]
        results = r["signature"][len(entry["input_grads"]) :]
        takes = entry["output_takes_cotangent"]
        if any(
            t and not results[min(k, len(results) - 1)].startswith(("float", "bfloat"))
            for k, t in enumerate(takes)
        ):
            continue  # an integer or bool result has no derivative
        if any(
            g is not None and params[i].startswith(("float", "bfloat"))
            for i, g in enumerate(entry["input_grads"])
        ):
            rows.append(r)
    return rows


def test_every_cpu_gradient_is_checked_end_to_end(cpu_report):
    """Every differentiable op x float signature ran its gradient entry on the CPU backend and
    met finite differences (float64) or the float64 steps (narrower floats)."""
    _, data, _ = cpu_report
    rows = _gradient_rows(data)
    assert len(rows) > 150
    unchecked = [
        f"{r['op']}:{r['dtype']} {r['checks'].get('gradient')}"
        for r in rows
        if r["checks"].get("gradient") != "PASS"
    ]
    assert unchecked == []
    backward = [r for r in data["runs"][0]["results"] if "_backward" in r["op"]]
    assert backward and all(r["status"] == "PASS" and r["cases"] > 0 for r in backward)


@pytest.mark.parametrize("half", [0, 1])
def test_report_format(cpu_reports, half):
    _, data, text = cpu_reports[half]
    assert data["suite_version"] == SUITE_VERSION
    assert len(data["abi_version"]) == 2 and data["abi_version"][0] >= 1
    run = data["runs"][0]
    assert run["backend"] == "cpu" and run["device"] == "cpu" and run["plugin"] is None
    assert sum(run["summary"].values()) == len(run["results"])
    first = run["results"][0]
    for key in (
        "op",
        "dtype",
        "signature",
        "status",
        "cases",
        "check",
        "reason",
        "seed",
        "worst_error",
        "reference",
        "checks",
    ):
        assert key in first
    for check in (
        "abi_layout",
        "abi_version",
        "infer",
        "run",
        "numerics",
        "inputs_unchanged",
        "output_bounds",
        "workspace_bounds",
        "error_status",
        "threads",
    ):
        assert first["checks"][check] == "PASS"
    assert "PASS" in text and "FAIL: 0" in text


def test_op_selection_skips_and_xfails(tmp_path):
    skips = tmp_path / "skips.txt"
    skips.write_text("# not now\nexp:float16\n")
    xfails = tmp_path / "xfails.txt"
    xfails.write_text("add:int8  # expected to fail, but passes\n")
    rc, data, _ = run_suite(
        tmp_path,
        "--ops",
        "exp,add:int*",
        "--skips-file",
        str(skips),
        "--xfails-file",
        str(xfails),
        "--quick",
    )
    assert rc == 0
    status = {(r["op"], r["dtype"]): r["status"] for r in data["runs"][0]["results"]}
    assert status[("exp", "float16")] == "SKIP"
    assert status[("exp", "float32")] == "PASS"
    assert status[("add", "int8")] == "PASS"
    assert {op for op, _ in status} == {"exp", "add"}
    assert all(d.startswith("int") for op, d in status if op == "add")


# ---------------------------------------------------------------- the example plugin ----------

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "plugin" / "example_plugin.c"


def build_plugin(out_dir: Path, planted_faults: bool) -> Path:
    """Builds examples/plugin against the installed headers only, as a vendor would."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "a C compiler is needed to build the example plugin"
    name = "libctensor_example_broken.so" if planted_faults else "libctensor_example.so"
    target = out_dir / name
    include = ctensor.get_include()
    if not os.path.exists(os.path.join(include, "ctensor_plugin.h")):  # an editable install
        include = str(Path(__file__).resolve().parent.parent / "capi")
    command = [
        compiler,
        "-shared",
        "-fPIC",
        "-O2",
        "-o",
        str(target),
        str(EXAMPLE),
        f"-I{include}",
    ]
    if planted_faults:
        command.append("-DCT_EXAMPLE_PLANT_FAULTS")
    subprocess.run(command, check=True, capture_output=True, text=True)
    return target


@pytest.fixture(scope="module")
def example_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("example")
    return run_suite(out, "--plugin", str(build_plugin(out, planted_faults=False)))


@pytest.fixture(scope="module")
def broken_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("broken")
    return run_suite(out, "--plugin", str(build_plugin(out, planted_faults=True)))


def _by_status(data: dict, status: str) -> dict:
    return {(r["op"], r["dtype"]): r for r in data["runs"][0]["results"] if r["status"] == status}


def test_example_plugin_passes_every_case(example_report):
    rc, data, text = example_report
    run = data["runs"][0]
    assert run["plugin"]["name"] == "example" and run["plugin"]["version"] == "1.0.0"
    assert run["plugin"]["abi_version"][0] == 1 and run["device"] == "cpu"
    failures = [
        f"{op}:{d} [{r['check']}] {r['reason']}" for (op, d), r in _by_status(data, "FAIL").items()
    ]
    assert failures == [], "\n".join(failures)
    assert rc == 0, text[-3000:]
    passed = _by_status(data, "PASS")
    assert {op for op, _ in passed} == {
        "add",
        "multiply",
        "relu",
        "relu_backward",
        "sum",
        "nonzero",
    }
    # relu's gradient entry ran on the plugin's own relu and relu_backward kernels.
    assert passed[("relu", "float64")]["checks"]["gradient"] == "PASS"
    assert passed[("relu_backward", "float64")]["cases"] >= 1
    assert {("add", "float32"), ("nonzero", "float64"), ("relu", "int32")} <= set(passed)
    # Everything the plugin does not register is NOT_SUPPORTED, not run on another backend.
    assert run["summary"]["NOT_SUPPORTED"] == len(run["results"]) - len(passed)
    assert ("add", "int8") in _by_status(data, "NOT_SUPPORTED")


def test_broken_plugin_fails_exactly_the_four_planted_faults(broken_report):
    rc, data, text = broken_report
    assert rc == 1, text[-3000:]
    assert data["failed"] is True
    assert data["runs"][0]["plugin"]["name"] == "example-broken"
    failed = _by_status(data, "FAIL")
    assert set(failed) == {
        ("add", "int32"),
        ("relu", "float32"),
        ("nonzero", "float64"),
        ("relu", "float64"),
        ("relu_backward", "float64"),
    }, "\n".join(f"{op}:{d} [{r['check']}] {r['reason']}" for (op, d), r in failed.items())
    wrong, past_end, leak = (
        failed[("add", "int32")],
        failed[("relu", "float32")],
        failed[("nonzero", "float64")],
    )
    assert wrong["check"] == "numerics" and "differ" in wrong["reason"]
    assert wrong["checks"]["output_bounds"] == "PASS" and wrong["checks"]["numerics"] == "FAIL"
    assert past_end["check"] == "output_bounds"
    assert past_end["checks"]["numerics"] == "PASS"
    assert leak["check"] == "allocator" and "leaked allocation" in leak["reason"]
    assert leak["checks"]["numerics"] == "PASS" and leak["checks"]["output_bounds"] == "PASS"
    # (d) the wrong backward kernel: relu's gradient disagrees with finite differences of the
    # plugin's own relu, and the kernel's step disagrees with the CPU backend.
    gradient, backward = failed[("relu", "float64")], failed[("relu_backward", "float64")]
    assert gradient["check"] == "gradient" and "finite differences" in gradient["reason"]
    assert gradient["checks"]["numerics"] == "PASS"
    assert backward["check"] == "numerics" and "elements off" in backward["reason"]
    for r in failed.values():
        assert r["seed"] is not None and r["case"]
    assert "FAIL: 5" in text and "add:int32" in text


def test_a_reported_seed_reproduces_the_failing_case(broken_report, tmp_path):
    _, data, _ = broken_report
    first = _by_status(data, "FAIL")[("relu", "float32")]
    plugin = data["runs"][0]["plugin"]["path"]
    rc, again, _ = run_suite(
        tmp_path, "--plugin", plugin, "--ops", "relu:float32", "--case", str(first["seed"])
    )
    (row,) = again["runs"][0]["results"]
    assert rc == 1 and row["cases"] == 1
    assert (row["check"], row["seed"], row["case"]) == (
        first["check"],
        first["seed"],
        first["case"],
    )


def test_xfails_keep_known_faults_out_of_the_exit_status(tmp_path):
    xfails = tmp_path / "xfails.txt"
    xfails.write_text(
        "# the planted faults\nadd:int32\nrelu:float32\nnonzero:*\n"
        "relu:float64  # its gradient, through the wrong backward kernel\nrelu_backward:float64\n"
    )
    rc, data, _ = run_suite(
        tmp_path, "--plugin", str(build_plugin(tmp_path, True)), "--xfails-file", str(xfails)
    )
    assert rc == 0 and data["failed"] is False
    assert set(_by_status(data, "XFAIL")) == {
        ("add", "int32"),
        ("relu", "float32"),
        ("nonzero", "float64"),
        ("relu", "float64"),
        ("relu_backward", "float64"),
    }


def test_faults_the_example_plugin_does_not_plant():
    """Input writes, workspace overruns and mistyped allocations (tests/fault_kernels.py)."""
    script = Path(__file__).resolve().parent / "fault_kernels.py"
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True
    )
    found = {
        backend: [(r["status"], r["check"]) for r in rows]
        for backend, rows in json.loads(proc.stdout).items()
    }
    assert found == {
        "writes-input": [("FAIL", "inputs_unchanged")],
        "past-workspace": [("FAIL", "workspace_bounds")],
        "wrong-alloc": [("FAIL", "allocator")],
    }


# A plugin whose exp kernel crashes (SIGSEGV).
CRASHING_PLUGIN = Path(__file__).resolve().parent / "c" / "crashing_plugin.c"


def test_isolate_turns_a_crash_into_a_failure(tmp_path):
    source = CRASHING_PLUGIN
    plugin = tmp_path / "libcrasher.so"
    include = ctensor.get_include()
    if not os.path.exists(os.path.join(include, "ctensor_plugin.h")):  # an editable install
        include = str(Path(__file__).resolve().parent.parent / "capi")
    subprocess.run(
        [
            shutil.which("cc") or "gcc",
            "-shared",
            "-fPIC",
            "-o",
            str(plugin),
            str(source),
            f"-I{include}",
        ],
        check=True,
    )
    rc, data, text = run_suite(tmp_path, "--plugin", str(plugin), "--isolate", "--ops", "exp,sin")
    assert rc == 1, text[-2000:]
    failed = _by_status(data, "FAIL")
    assert list(failed) == [("exp", "float32")]
    assert failed[("exp", "float32")]["check"] == "crash"
    assert "SIGSEGV" in failed[("exp", "float32")]["reason"]
    # sin, which the plugin never registered, is not reported
    assert {r["op"] for r in data["runs"][0]["results"]} == {"exp"}


def test_device_adapter_path_finds_the_same_faults(tmp_path):
    """--device-api places CPU tensors through ct_device_allocate/copy, as on an OpenCL or CUDA
    device (dynamic outputs then start at byte 0 of their buffer, guarded after only)."""
    rc, data, text = run_suite(
        tmp_path, "--plugin", str(build_plugin(tmp_path, True)), "--device-api"
    )
    assert rc == 1
    failed = _by_status(data, "FAIL")
    assert {key: r["check"] for key, r in failed.items()} == {
        ("add", "int32"): "numerics",
        ("relu", "float32"): "output_bounds",
        ("nonzero", "float64"): "allocator",
        ("relu", "float64"): "gradient",
        ("relu_backward", "float64"): "numerics",
    }, text[-3000:]
    assert (
        len(_by_status(data, "PASS")) == 12
    )  # relu:float64 fails now, relu_backward:float32 passes


def test_all_runs_every_discovered_backend(tmp_path):
    """README's main job: --all tests the built-in backend and each plugin that loads."""
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    build_plugin(plugin_dir, planted_faults=False)
    report = tmp_path / "all.json"
    env = {**os.environ, "CTENSOR_PLUGIN_PATH": str(plugin_dir)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctensor.conformance",
            "--all",
            "--quick",
            "--ops",
            "add,relu",
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = {run["backend"]: run for run in json.loads(report.read_text())["runs"]}
    assert list(runs)[0] == "cpu" and "example" in runs
    if set(runs) == {"cpu", "example"}:
        assert proc.returncode == 0, proc.stdout[-3000:]
    for name in ("cpu", "example"):  # other installed plugins are not this test's subject
        assert runs[name]["summary"]["PASS"] > 0 and runs[name]["summary"]["FAIL"] == 0


def test_without_torch_every_op_is_checked_against_numpy(tmp_path):
    """On a machine without PyTorch (README's main job after a bare `pip install .`) the deep
    learning ops have float64 NumPy references: checked, not SKIP."""
    (tmp_path / "torch.py").write_text(
        'raise ModuleNotFoundError("No module named \'torch\'", name="torch")\n'
    )
    report = tmp_path / "report.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctensor.conformance",
            "--all",
            "--quick",
            "--ops",
            "conv*,*pool*,interpolate*,exp:float32",
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Warning" not in proc.stderr, proc.stderr[-2000:]
    rows = json.loads(report.read_text())["runs"][0]["results"]
    assert {r["op"] for r in rows} >= {
        "conv2d",
        "conv_transpose2d",
        "conv2d_backward_input",
        "conv2d_backward_weight",
        "conv_transpose2d_backward_input",
        "max_pool2d",
        "max_pool2d_backward",
        "avg_pool2d",
        "avg_pool2d_backward",
        "adaptive_avg_pool2d",
        "adaptive_avg_pool2d_backward",
        "interpolate",
        "interpolate_backward",
        "exp",
    }
    assert [r for r in rows if r["status"] != "PASS"] == []
    assert {r["reference"] for r in rows} == {"numpy"}


def test_numpy_references_of_the_deep_learning_ops_agree_with_torch():
    """references.TORCH, the second opinion, and the NumPy references on the suite's cases."""
    import torch  # noqa: F401 - a test dependency

    from ctensor.conformance.references import NUMPY, TORCH

    specs = {o["name"]: OpSpec(o) for o in registry_json()["ops"]}
    checked = 0
    for name in sorted(TORCH):
        spec = specs[name]
        for case in generate(spec, ("float64",) * (len(spec.inputs) + len(spec.outputs)), 3, 6):
            attrs = {a["name"]: a["default"] for a in spec.attrs} | case.attrs
            out = ["float64"] * len(spec.outputs)
            with np.errstate(all="ignore"):
                expected = TORCH[name](case.values(), attrs, out)
                got = NUMPY[name](case.values(), attrs, out)
            for e, g in zip(expected, got, strict=True):
                np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9, err_msg=name)
            checked += 1
    assert checked >= 3 * len(TORCH)


def test_ulp_comparison():
    one = np.array([1.0])
    next_up = np.array([np.nextafter(np.float32(1), np.float32(2))], dtype=np.float64)
    assert compare(next_up, one, "float32", "exp")[0]
    far = np.array([1.0 + 2.0**-23 * 5])
    ok, text, worst = compare(far, one, "float32", "exp")
    assert not ok and "5 ulp" in text and worst == 5
    assert compare(np.array([np.nan]), np.array([np.nan]), "float16", "exp")[0]
    assert not compare(np.array([np.inf]), np.array([65504.0 * 2]), "float32", "exp")[0]
    assert compare(np.array([-0.0]), np.array([0.0]), "float64", "exp")[0]
    assert not compare(np.array([3], dtype=np.int8), np.array([4]), "int8", "add")[0]


def _c(*pairs):
    return cdt.make_complex([p[0] for p in pairs], [p[1] for p in pairs])


def test_complex_comparison_follows_numpy_nan_semantics_and_the_modulus():
    nan, inf = np.nan, np.inf
    # A complex value is NaN when either part is: NaN meets NaN whatever the other parts hold.
    assert compare(
        _c((nan, nan), (nan, 0), (inf, nan)), _c((nan, 0), (0, nan), (nan, 1)), "complex128", "exp"
    )[0]
    assert not compare(_c((-inf, nan)), _c((-inf, 0)), "complex128", "divide")[0]
    # Infinite parts match exactly; the finite part beside one is compared on its own.
    assert compare(_c((inf, 1.0 + 2.0**-52)), _c((inf, 1.0)), "complex128", "exp")[0]
    assert not compare(_c((inf, 1.0)), _c((-inf, 1.0)), "complex128", "exp")[0]
    assert not compare(_c((inf, 1.0)), _c((1e308, 1.0)), "complex128", "exp")[0]
    # Relative to the modulus: a part that cancels to ~0 is held to the whole value's accuracy.
    eps = 2.0**-23
    assert compare(_c((1e3, 1e3 * 6 * eps)), _c((1e3, 0.0)), "complex64", "exp")[0]
    ok, text, worst = compare(_c((1e3, 1e3 * 20 * eps)), _c((1e3, 0.0)), "complex64", "exp")
    assert not ok and "eps of the modulus" in text and 19 < worst < 21
    # Accumulating ops: the limit scales with the largest modulus of the terms.
    assert compare(_c((1.0 + 40 * eps, 0)), _c((1.0, 0)), "complex64", "sum", 1.0)[0]
    assert not compare(_c((1.0 + 100 * eps, 0)), _c((1.0, 0)), "complex64", "sum", 1.0)[0]
    # The alternative reference (NumPy's complex64 result) is met element by element.
    assert compare(
        _c((inf, -inf)),
        _c((8388608.0, -inf)),
        "complex64",
        "divide",
        alternatives=[_c((inf, -inf))],
    )[0]


def test_complex_products_meet_the_plain_or_the_fused_formula():
    from ctensor.conformance.references import FUSED, NUMPY

    for dtype, part in (("complex64", np.float32), ("complex128", np.float64)):
        big = float(np.finfo(part).max)
        a, b = _c((big, -np.inf)), _c((np.inf, big))
        with np.errstate(all="ignore"):
            (plain,) = NUMPY["multiply"]([a, b], {}, [dtype])
            (fused,) = FUSED["multiply"]([a, b], {}, [dtype])
            (square,) = FUSED["square"]([_c((big, np.inf))], {}, [dtype])
        assert np.isnan(plain.imag[0]) and fused.tolist() == [complex(np.inf, -np.inf)]
        assert square.tolist() == [complex(-np.inf, np.inf)]
        assert not compare(fused, plain, dtype, "multiply")[0]
        for result in (plain, fused):
            assert compare(result, plain, dtype, "multiply", alternatives=[fused])[0]


def test_complex_cases_draw_each_part_from_the_float_edge_values():
    pool = cdt.edge_values("complex64")
    parts = cdt.edge_values("float32")
    assert pool.size == parts.size**2
    assert np.isnan(pool.real).any() and np.isinf(pool.imag).any()
    assert (np.isinf(pool.real) & np.isfinite(pool.imag)).any()
    assert (np.signbit(pool.imag) & (pool.imag == 0)).any()  # -0.0 imaginary parts
    spec = next(OpSpec(o) for o in registry_json()["ops"] if o["name"] == "add")
    values = np.concatenate(
        [c.values()[0].ravel() for c in generate(spec, ("complex64",) * 3, 5, 32)]
    )
    assert values.dtype == np.complex128
    finite = values[np.isfinite(values)]
    assert (finite.imag != 0).mean() > 0.5  # random imaginary parts, not only real inputs
    assert (np.isnan(values.imag) & ~np.isnan(values.real)).any()
    assert (np.isinf(values.real) & ~np.isinf(values.imag)).any()


def test_complex_to_integer_conversion_takes_the_real_part_as_floats_do():
    from ctensor.conformance.references import NUMPY

    x = _c((3.7, 100.0), (np.nan, 1.0), (1e10, -5.0), (-1e10, np.inf), (-2.5, np.nan))
    (got,) = NUMPY["astype"]([x], {}, ["int16"])
    (real,) = NUMPY["astype"]([x.real.copy()], {}, ["int16"])
    assert got.dtype == np.int16 and got.tolist() == real.tolist() == [3, 0, 32767, -32768, -2]


def test_bfloat16_storage_rounds_to_nearest_even():
    values = np.array([1.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, np.nan, -np.inf, 3.0e38])
    back = cdt.to_values(cdt.from_values(values, "bfloat16"), "bfloat16")
    assert back[0] == 1.0 and back[1] == 1.0 and back[2] == 1.0 + 2.0**-6
    assert np.isnan(back[3]) and back[4] == -np.inf and np.isfinite(back[5])


def test_seeds_vary_shapes_and_layouts():
    spec = next(OpSpec(o) for o in registry_json()["ops"] if o["name"] == "add")
    first, second = (generate(spec, ("float32",) * 3, seed, 12) for seed in (0, 1))
    assert {tuple(tuple(i.shape) for i in c.inputs) for c in first} != {
        tuple(tuple(i.shape) for i in c.inputs) for c in second
    }
    assert [c.layouts for c in first] != [c.layouts for c in second]


def test_reductions_run_every_axis_with_keepdims():
    spec = next(OpSpec(o) for o in registry_json()["ops"] if o["name"] == "sum")
    pairs = {
        (tuple(c.attrs.get("axis") or ()), c.attrs.get("keepdims"))
        for c in generate(spec, ("float32", "float32"), 0, 8)
        if c.inputs[0].ndim == 3
    }
    for axis in ((0,), (1,), (2,), (-1,), (0, 2)):
        assert {(axis, False), (axis, True)} <= pairs


def test_large_and_long_cases():
    from ctensor.conformance.cases import LARGE_ELEMENTS, large_cases

    specs = {o["name"]: OpSpec(o) for o in registry_json()["ops"]}
    (large,) = large_cases(specs["exp"], ("float32", "float32"), 0, 100)
    assert LARGE_ELEMENTS[0] <= large.inputs[0].size and large.inputs[0].shape[-1] % 2 == 1
    large, long = large_cases(specs["sum"], ("float32", "float32"), 0, 100)
    assert max(long.inputs[0].shape) > 100_000 and long.index == 101
    values = long.values()[0]
    assert values.max() - values.min() <= 2.0**-10  # the narrow band
    assert large_cases(specs["sum"], ("int32", "int64"), 0, 100)[0].inputs[0].size >= 10_000
    conv = large_cases(specs["conv2d"], ("float32",) * 4, 0, 100)
    assert conv and conv[0].inputs[0].size >= LARGE_ELEMENTS[0]


def test_cases_are_reproducible_and_cover_layouts():
    spec = next(OpSpec(o) for o in registry_json()["ops"] if o["name"] == "add")
    a = generate(spec, ("float32",) * 3, 7, 40)
    b = generate(spec, ("float32",) * 3, 7, 40)
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
