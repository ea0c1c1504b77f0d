"""--isolate: each op runs in its own `python -m ctensor.conformance` process, so that a kernel
that crashes (a segfault, an abort) fails its own op x dtype rows with check `crash` instead of
ending the whole run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from ctensor._registry import OpSpec, registry_json

from .runner import NOT_SUPPORTED, SKIP, Result, matches, signature_labels
from .suite import PROGRESS, BackendRun, Options, selected

__all__ = ["run_isolated"]


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"status {rc}"


def _from_json(row: dict) -> Result:
    return Result(
        row["op"],
        row["dtype"],
        tuple(row["signature"]),
        row["status"],
        row["cases"],
        row["check"] or "",
        row["reason"] or "",
        row["seed"],
        row["case"] or "",
        row["worst_error"] or "",
        0.0,
        row["reference"] or "",
        row["checks"],
    )


def _run_op(
    spec: OpSpec, wanted: list, options: Options, child_args: list[str], tmp: str
) -> list[Result]:
    """Runs one op in children until one finishes: a child that dies fails the signature it
    was running (it says which on stderr) and the next child skips it."""
    crashed: dict[str, Result] = {}
    report = os.path.join(tmp, f"{spec.name}.json")
    skips = os.path.join(tmp, f"{spec.name}.skips")
    for _ in range(len(wanted) + 1):
        with open(skips, "w", encoding="utf-8") as f:
            f.write("\n".join(options.skips + [f"{spec.name}:{lb}" for lb in crashed]) + "\n")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "ctensor.conformance",
                *child_args,
                "--skips-file",
                skips,
                "--only-op",
                spec.name,
                "--report",
                report,
                "-q",
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode in (0, 1) and os.path.exists(report):
            with open(report, encoding="utf-8") as f:
                rows = json.load(f)["runs"][0]["results"]
            return [crashed.get(r["dtype"]) or _from_json(r) for r in rows]
        running = [
            line.split(PROGRESS, 1)[1].strip()
            for line in proc.stderr.splitlines()
            if PROGRESS in line
        ]
        label = running[-1].partition(":")[2] if running else None
        if label is None or label in crashed:
            break
        sig = next(sig for sig, lb in wanted if lb == label)
        result = Result(spec.name, label, sig)
        result.fail(
            "crash",
            f"the process died ({_signal_name(proc.returncode)}) running {spec.name}:{label}",
        )
        crashed[label] = result
    # The op could not even start: every signature of the backend fails.
    out = []
    for sig, label in wanted:
        result = Result(spec.name, label, sig)
        result.fail("crash", f"the process died before running {spec.name}")
        out.append(result)
    return out


def run_isolated(backend: dict, device: str, options: Options, child_args: list[str]) -> BackendRun:
    """Runs every selected op in child processes given `child_args` (the target and options of
    this run, --ops included, --skips-file not); collects the children's reports."""
    start = time.time()
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="ct-conformance-") as tmp:
        for schema in registry_json()["ops"]:
            spec = OpSpec(schema)
            own = {
                tuple(k["signature"])
                for k in schema.get("kernels", ())
                if k["backend"] == backend["name"]
            }
            rows = [
                (sig, lb)
                for sig, lb in sorted(signature_labels(spec).items(), key=lambda kv: kv[1])
                if selected(options, spec.name, lb)
            ]
            wanted = [(sig, lb) for sig, lb in rows if sig in own]
            if not own and not options.show_unsupported:
                continue  # an op this backend never registered (see suite.run_backend)
            if wanted:
                results.extend(_run_op(spec, wanted, options, child_args, tmp))
                continue
            for sig, label in rows:  # nothing to run: no child needed
                status = SKIP if matches(options.skips, spec.name, label) else NOT_SUPPORTED
                results.append(Result(spec.name, label, sig, status))
    return BackendRun(backend, device, results, time.time() - start)
