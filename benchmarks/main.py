"""The command line and the run: build the cases, check and time them, report."""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import os
import platform
import sys
from typing import Any

__all__ = ["main", "run"]

_GROUP_MODULES = (
    "cases_machine",
    "cases_overhead",
    "cases_memory",
    "cases_compute",
    "cases_nn",
    "cases_data",
    "cases_torch",
    "cases_jax",
)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def _matches(name: str, patterns: list[str] | None) -> bool:
    if not patterns:
        return True
    return any(p in name or fnmatch.fnmatch(name, p) for p in patterns)


def run(
    patterns: list[str] | None = None,
    quick: bool = False,
    threads: int = 2,
    repeats: int | None = None,
    min_sample_s: float | None = None,
    log: Any = sys.stderr,
    seed: int = 0,
    settle_s: float | None = None,
) -> dict:
    """Runs the cases whose names contain (or glob-match) one of ``patterns`` and returns the
    JSON document. Machine-limit cases always run when a case of theirs is selected. Each sample
    waits ``settle_s`` first, then makes one untimed call (default: 0.1 s with more than one
    thread, no pause with one thread or ``quick``), so that no other library's threads are still
    spinning (timing.py)."""
    from . import peers

    how = peers.configure(threads)
    import importlib

    import numpy as np

    import ctensor
    from ctensor import ops

    from . import accuracy, report, runner
    from .env import Env
    from .machine import BuildError, MachineKernels
    from .opencl import find as find_opencl

    machine_error = None
    try:
        machine = MachineKernels(threads=threads)
    except (BuildError, OSError) as e:
        machine, machine_error = None, str(e)
        print(f"machine-limit kernels unavailable: {e}", file=log)
    torch = peers.load("torch")
    jnp = peers.load("jax")
    jax = importlib.import_module("jax") if jnp is not None else None
    opencl, opencl_text = find_opencl(ctensor)
    if opencl is None:
        print(f"ctensor.opencl not run: {opencl_text}", file=log)
    env = Env(
        ctensor=ctensor,
        ops=ops,
        torch=torch,
        jax=jax,
        jnp=jnp,
        machine=machine,
        quick=quick,
        rng=np.random.default_rng(seed),
        opencl=opencl,
    )
    repeats = repeats or (3 if quick else 11)
    min_sample_s = min_sample_s if min_sample_s is not None else (0.002 if quick else 0.05)
    if settle_s is None:
        settle_s = 0.1 if threads > 1 and not quick else 0.0
    document: dict = {
        "meta": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": platform.machine(),
            "cpu": _cpu_model(),
            "cpus": os.cpu_count(),
            "load_average_start": _load(),
            "threads": threads,
            "thread_settings": how,
            "quick": quick,
            "repeats": repeats,
            "min_sample_s": min_sample_s,
            "settle_s": settle_s,
            "python": platform.python_version(),
            "ctensor": ctensor.__version__,
            "numpy": np.__version__,
            "torch": getattr(torch, "__version__", None),
            "jax": getattr(jax, "__version__", None),
            "machine_kernels": str(machine.path) if machine else machine_error,
            # The ctensor.opencl implementations' device, or why they are absent.
            "opencl": {"available": opencl is not None, "detail": opencl_text},
            "statistic": "median over repeats of (sample time / calls per sample); "
            "implementations of a case interleaved round-robin",
        },
        "limits": {},
        "cases": [],
        "accuracy": [],
    }
    cases = []
    for module_name in _GROUP_MODULES:
        module = importlib.import_module(f".{module_name}", __package__)
        for case in module.build(env):
            if case.limit or _matches(case.name, patterns):
                cases.append((case, module_name))
    selected = [c for c, _ in cases if not c.limit]
    cases = [c for c, _ in cases if not c.limit or selected]
    for case in cases:
        print(f"{case.name} ...", file=log, flush=True)
        record = runner.run_case(case, repeats, min_sample_s, log, settle_s)
        if case.limit and "machine" in record["results"]:
            document["limits"][case.limit] = record["results"]["machine"].get("throughput")
        document["cases"].append(record)
    for case, record in zip(cases, document["cases"], strict=True):
        runner.judge_targets(case, record, document["limits"])
    if _matches("reduction/sum/accuracy", patterns):
        document["accuracy"].append(accuracy.sum_accuracy(ops, env.rng, 1 << (16 if quick else 24)))
    document["meta"]["load_average_end"] = _load()
    document["summary"] = report.summarize(document)
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ctensor.bench",
        description="ctensor (CPU, and its OpenCL backend when loaded) next to NumPy, torch "
        "and JAX, and the machine's limits, in one interleaved run.",
    )
    parser.add_argument(
        "--cases",
        action="append",
        metavar="PATTERN",
        help="run the cases whose name contains PATTERN or matches it as a glob "
        "(repeatable; e.g. --cases matmul --cases 'nn/*')",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes and few repetitions (a smoke test, not a measurement)",
    )
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    parser.add_argument("--charts", metavar="DIR", help="draw PNG charts into DIR (matplotlib)")
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="threads for every library and the machine kernels (default 2)",
    )
    parser.add_argument(
        "--repeats", type=int, help="samples per implementation (default 11, quick 3)"
    )
    parser.add_argument(
        "--min-sample",
        type=float,
        metavar="SECONDS",
        help="least duration of one sample (default 0.05, quick 0.002)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        metavar="SECONDS",
        help="pause before each sample, so that the previous library's threads "
        "stop spinning (default 0.1 with more than one thread, else 0)",
    )
    parser.add_argument("--list", action="store_true", help="list the case names and exit")
    args = parser.parse_args(argv)
    if args.list:
        return _list(args)
    document = run(
        args.cases, args.quick, args.threads, args.repeats, args.min_sample, settle_s=args.settle
    )
    from . import report

    print(report.table(document))
    if args.json:
        report.write_json(document, args.json)
        print(f"\nJSON: {args.json}")
    if args.charts:
        try:
            paths = report.charts(document, args.charts)
            print(f"charts: {', '.join(paths)}")
        except ImportError:
            print(
                "charts: matplotlib is not installed (pip install 'ctensor[bench]')",
                file=sys.stderr,
            )
            return 1
    return 0


def _list(args: argparse.Namespace) -> int:
    import importlib

    import numpy as np

    import ctensor

    from . import peers
    from .env import Env

    env = Env(
        ctensor,
        ctensor.ops,
        peers.load("torch"),
        None,
        None,
        None,
        args.quick,
        np.random.default_rng(0),
    )
    for module_name in _GROUP_MODULES[1:]:
        module = importlib.import_module(f".{module_name}", __package__)
        for case in module.build(env):
            if _matches(case.name, args.cases):
                print(case.name)
    return 0
