"""Reports: the console table (op x dtype) with the failures spelled out under it, and the JSON
report whose format docs/conformance.md documents."""

from __future__ import annotations

import json
import os

from ctensor._lib import ffi, lib

from . import SUITE_VERSION
from .runner import FAIL, NOT_SUPPORTED, PASS, SKIP, XFAIL
from .suite import BackendRun, Options

__all__ = ["console", "to_json", "write_json"]

COLUMNS = (
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)
_CELL = {PASS: "PASS", FAIL: "FAIL", NOT_SUPPORTED: "n/s", SKIP: "skip", XFAIL: "xfail"}
_RANK = {FAIL: 4, XFAIL: 3, PASS: 2, SKIP: 1, NOT_SUPPORTED: 0}


def _shown(path: str) -> str:
    """A path relative to the working directory when below it."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else os.path.basename(path)


def _cells(run: BackendRun) -> dict[str, dict[str, str]]:
    """op -> column (the label's first dtype) -> the worst status of its signatures."""
    grid: dict[str, dict[str, str]] = {}
    for r in run.results:
        column = r.dtype.split(",")[0]
        row = grid.setdefault(r.op, {})
        if column not in row or _RANK[r.status] > _RANK[row[column]]:
            row[column] = r.status
    return grid


def console(run: BackendRun, command: str = "python -m ctensor.conformance") -> str:
    b = run.backend
    lines = [
        f"ctensor conformance {SUITE_VERSION}: backend {b['name']} {b['version']}"
        f"{' (' + _shown(b['path']) + ')' if b.get('path') else ''} on {run.device}",
        "",
    ]
    grid = _cells(run)
    width = max([len(op) for op in grid] + [2])
    lines.append(f"{'op':<{width}} " + " ".join(f"{c:>8}" for c in COLUMNS))
    for op in sorted(grid):
        row = grid[op]
        if all(s == NOT_SUPPORTED for s in row.values()):
            continue
        lines.append(
            f"{op:<{width}} " + " ".join(f"{_CELL.get(row.get(c, ''), ''):>8}" for c in COLUMNS)
        )
    failures = [r for r in run.results if r.status == FAIL]
    if failures:
        lines += ["", "FAILURES"]
        for r in failures:
            lines.append(f"{r.op}:{r.dtype}  [{r.check}] {r.reason}")
            if r.worst_error and r.worst_error != r.reason:
                lines.append(f"    worst error seen: {r.worst_error}")
            if r.seed is not None:
                lines.append(f"    first failing {r.case}")
            again = f" --case {r.seed}" if r.seed is not None else ""
            lines.append(f"    rerun: {command} --ops '{r.op}:{r.dtype}'{again}")
    unchecked = [r for r in run.results if r.status == SKIP and r.reason]
    if unchecked:
        lines += ["", "SKIPPED"] + [f"{r.op}:{r.dtype}  {r.reason}" for r in unchecked]
    counts = run.counts()
    lines += ["", "  ".join(f"{k}: {v}" for k, v in counts.items()) + f"  ({run.seconds:.0f} s)"]
    return "\n".join(lines)


def _result(r) -> dict:  # noqa: ANN001
    return {
        "op": r.op,
        "dtype": r.dtype,
        "signature": list(r.signature),
        "status": r.status,
        "cases": r.cases,
        "check": r.check or None,
        "reason": r.reason or None,
        "seed": r.seed,
        "case": r.case or None,
        "worst_error": r.worst_error or None,
        "reference": r.reference or None,
        "checks": r.checks,
        "gradient_unsupported": r.gradient_unsupported or None,
    }


def to_json(runs: list[BackendRun], options: Options) -> dict:
    version = lib.ct_abi_version()
    return {
        "suite_version": SUITE_VERSION,
        "ctensor_version": ffi.string(lib.ct_version_string()).decode(),
        "abi_version": [version >> 16, version & 0xFFFF],
        "seed": options.seed,
        "cases_per_signature": options.cases,
        "failed": any(r.status == FAIL for run in runs for r in run.results),
        "runs": [
            {
                "plugin": None
                if not run.backend.get("path")
                else {
                    "name": run.backend["name"],
                    "version": run.backend["version"],
                    "path": run.backend["path"],
                    "abi_version": [
                        run.backend["abi_version"] >> 16,
                        run.backend["abi_version"] & 0xFFFF,
                    ],
                },
                "backend": run.backend["name"],
                "backend_version": run.backend["version"],
                "device": run.device,
                "seconds": round(run.seconds, 3),
                "summary": run.counts(),
                "results": [_result(r) for r in run.results],
            }
            for run in runs
        ],
    }


def write_json(path: str, runs: list[BackendRun], options: Options) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json(runs, options), f, indent=1)
        f.write("\n")
