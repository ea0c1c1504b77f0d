"""Runs cases: checks every ctensor result against its peers, times all implementations of a
case interleaved, and judges the targets."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ctensor import DeviceArray

from .case import CTENSOR_IMPLS, Case
from .check import compare
from .opencl import IMPL as OPENCL
from .opencl import fill, sentinel
from .peers import to_numpy
from .timing import Timed, interleaved

__all__ = ["run_case", "judge_targets"]


def _poison(case: Case, namespace: dict) -> None:
    """Fills the case's out= buffers (NumPy arrays and DeviceArrays) with a sentinel (see
    Case.outputs)."""
    for name in case.outputs:
        buffer = namespace.get(name)
        if isinstance(buffer, np.ndarray) and buffer.flags.writeable:
            value = sentinel(buffer.dtype)
            if value is not None:
                buffer.fill(value)
        elif isinstance(buffer, DeviceArray):
            value = sentinel(np.dtype(buffer.dtype))
            if value is not None:
                fill(buffer, value)


def _evaluate(case: Case, name: str) -> Any:
    """The result of one implementation, copied (out= buffers are shared between them)."""
    impl = case.impls[name]
    _poison(case, impl.namespace)
    result = eval(impl.expr, impl.namespace)  # noqa: S307 - the harness's own expressions
    convert = case.convert.get(name)
    return copy_result(convert(result) if convert else to_numpy(result))


def copy_result(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(copy_result(v) for v in value)
    return np.array(value, copy=True)


def _check(case: Case, results: dict) -> dict[str, dict]:
    """Per ctensor implementation: {"status": "ok" | "wrong" | "error", "detail": ...}."""
    checks: dict[str, dict] = {}
    peers: dict[str, Any] = {}
    for peer in case.reference:
        if peer in case.impls:
            try:
                peers[peer] = _evaluate(case, peer)
            except Exception as e:  # noqa: BLE001 - a broken peer is reported, not fatal
                results.setdefault(peer, {})["error"] = f"{type(e).__name__}: {e}"
    for name in case.impls:
        if name not in CTENSOR_IMPLS:
            continue
        try:
            got = _evaluate(case, name)
        except Exception as e:  # noqa: BLE001 - reported in the table
            checks[name] = {"status": "error", "detail": f"{type(e).__name__}: {e}"}
            continue
        problems = []
        for peer, want in peers.items():
            problem = compare(got, want, case.reference[peer])
            if problem:
                problems.append(f"vs {peer}: {problem}")
        checks[name] = {
            "status": "wrong" if problems else "ok",
            "detail": "; ".join(problems),
            "checked_against": sorted(peers),
        }
    return checks


def run_case(
    case: Case, repeats: int, min_sample_s: float, log: Any = sys.stderr, settle_s: float = 0.0
) -> dict:
    """Checks and times one case (pausing ``settle_s`` before each sample, see timing.py);
    returns its JSON record."""
    results: dict[str, dict] = {}
    checks = _check(case, results)
    items = []
    for name, impl in case.impls.items():
        if name in CTENSOR_IMPLS and checks.get(name, {}).get("status") != "ok":
            continue  # a wrong answer is never timed
        if "error" in results.get(name, {}):
            continue
        items.append(Timed(name, impl.expr, impl.namespace))
    if settle_s > 0 and case.settle_s is not None:
        settle_s = max(settle_s, case.settle_s)
    try:
        interleaved(items, repeats, min_sample_s, settle_s)
    except Exception as e:  # noqa: BLE001 - one failing case does not end the run
        print(f"  {case.name}: timing failed: {type(e).__name__}: {e}", file=log)
        for item in items:
            results.setdefault(item.name, {})["error"] = f"{type(e).__name__}: {e}"
        items = []
    for item in items:
        median = item.median
        entry = {"median_s": median, "samples_s": item.samples, "calls_per_sample": item.number}
        if case.unit != "ns" and median > 0:
            entry["throughput"] = case.work / median / _UNIT_SCALE[case.unit]
        results[item.name] = entry
    ratios = {}
    for name in CTENSOR_IMPLS:
        mine = results.get(name, {}).get("median_s")
        if not mine:
            continue
        ratios[name] = {
            peer: r["median_s"] / mine
            for peer, r in results.items()
            if peer not in CTENSOR_IMPLS and r.get("median_s")
        }
        if name == OPENCL and results.get("ctensor", {}).get("median_s"):
            # the OpenCL device beside the CPU backend: CPU time / OpenCL time
            ratios[name]["ctensor"] = results["ctensor"]["median_s"] / mine
    return {
        "name": case.name,
        "group": case.group,
        "unit": case.unit,
        "work": case.work,
        "description": case.description,
        "limit": case.limit,
        "results": results,
        "checks": checks,
        "speedup": ratios,
        "targets": [],
        "settle_s": settle_s,
    }


_UNIT_SCALE = {"GB/s": 1e9, "GFLOP/s": 1e9, "Melem/s": 1e6, "steps/s": 1.0, "ns": 1.0}


def judge_targets(case: Case, record: dict, limits: dict[str, float]) -> None:
    """Fills record["targets"]: each target's measured ratio and whether it is met. A target
    whose ctensor implementation was wrong or failed is missed."""
    results = record["results"]
    for target in case.targets:
        entry = {
            "text": target.text,
            "impl": target.impl,
            "threshold": target.ratio,
            "ratio": None,
            "met": False,
        }
        mine = results.get(target.impl, {})
        check = record["checks"].get(target.impl, {})
        if check.get("status") != "ok":
            entry["note"] = f"ctensor result {check.get('status', 'missing')}"
        elif target.kind == "speedup":
            peer = results.get(target.peer, {}).get("median_s")
            if peer and mine.get("median_s"):
                entry["ratio"] = peer / mine["median_s"]
        elif target.kind == "machine":
            if target.peer.startswith("limit:"):
                limit = limits.get(target.peer[len("limit:") :])
            else:
                limit = results.get(target.peer, {}).get("throughput")
            if limit and mine.get("throughput"):
                entry["ratio"] = mine["throughput"] / limit
        if entry["ratio"] is not None:
            entry["met"] = entry["ratio"] >= target.ratio
        elif "note" not in entry:
            entry["note"] = "not measured"
        record["targets"].append(entry)
