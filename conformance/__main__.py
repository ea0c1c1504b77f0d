"""python -m ctensor.conformance: run the conformance suite over a backend and report."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from .isolate import run_isolated
from .report import console, write_json
from .runner import FAIL, read_patterns
from .suite import BackendRun, Options, builtin_cpu, discover, load_plugin, run_backend

PRESETS = {"quick": 3, "default": 8, "thorough": 32}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ctensor.conformance",
        description="Checks a ctensor backend, op by op and dtype by "
        "dtype, against float64 references and the ABI's promises.",
    )
    p.add_argument("--plugin", metavar="PATH", help="load this backend plugin and test it")
    p.add_argument(
        "--backend",
        metavar="NAME",
        help="test a loaded or discovered backend by name (default: the plugin's, "
        "else the built-in cpu)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="discover installed plugins (and CTENSOR_PLUGIN_PATH) and test every "
        "backend that loads, each on its device 0",
    )
    p.add_argument("--device", default=None, help="cpu (default), cuda:0, opencl:0, ...")
    p.add_argument(
        "--ops",
        action="append",
        default=[],
        metavar="PATTERN",
        help="op[:dtype] pattern with shell wildcards (repeatable; comma-separated)",
    )
    p.add_argument("--report", metavar="FILE.json", help="write the JSON report here")
    p.add_argument("--skips-file", metavar="F", help="op[:dtype] patterns not to run")
    p.add_argument("--xfails-file", metavar="F", help="op[:dtype] patterns expected to fail")
    p.add_argument("--seed", type=int, default=0, help="seed of every case's generator")
    p.add_argument(
        "--case",
        type=int,
        metavar="SEED",
        help="run only the case with this seed (a report's failing case)",
    )
    p.add_argument(
        "--cases",
        type=int,
        default=None,
        help="cases per op x dtype beyond one per shape/attribute set",
    )
    p.add_argument("--quick", dest="preset", action="store_const", const="quick")
    p.add_argument("--thorough", dest="preset", action="store_const", const="thorough")
    p.add_argument("--threads", type=int, default=4, help="threads of the concurrency check")
    p.add_argument(
        "--device-api",
        action="store_true",
        help="place CPU tensors through ct_device_allocate/copy too (the path every "
        "other device takes)",
    )
    p.add_argument(
        "--isolate",
        action="store_true",
        help="run each op in its own process: a kernel that crashes fails its op "
        "(check 'crash') instead of ending the run",
    )
    p.add_argument(
        "--show-unsupported",
        action="store_true",
        help="also report (NOT_SUPPORTED) the ops the backend registers no kernel for",
    )
    p.add_argument("--only-op", help=argparse.SUPPRESS)
    p.add_argument("-q", "--quiet", action="store_true", help="print the summary only")
    return p


def _targets(args: argparse.Namespace) -> list[tuple[dict, str]]:
    if args.all:
        out = []
        for info in discover():
            if info["state"] != 0:
                print(f"skipping backend {info['name']}: {info['reason']}", file=sys.stderr)
                continue
            device = "cpu" if info["device"] == "cpu" else f"{info['device']}:0"
            out.append((info, args.device or device))
        return out
    if args.plugin:
        info = load_plugin(args.plugin)
        return [
            (info, args.device or ("cpu" if info["device"] == "cpu" else f"{info['device']}:0"))
        ]
    if args.backend and args.backend != "cpu":
        for info in discover():
            if info["name"] == args.backend:
                return [(info, args.device or f"{info['device']}:0")]
        raise SystemExit(f"no backend named {args.backend!r}")
    return [(builtin_cpu(), args.device or "cpu")]


def _child_args(args: argparse.Namespace, backend: dict, device: str) -> list[str]:
    """The arguments of an --isolate child: the same backend, device and options (skips are
    passed by isolate.py, which adds the signatures that crashed)."""
    out = ["--plugin", backend["path"]] if backend.get("path") else ["--backend", backend["name"]]
    out += [
        "--device",
        device,
        "--seed",
        str(args.seed),
        "--threads",
        str(args.threads),
        *(["--case", str(args.case)] if args.case is not None else []),
        "--cases",
        str(args.cases or PRESETS[args.preset or "default"]),
    ]
    if args.xfails_file:
        out += ["--xfails-file", args.xfails_file]
    for pattern in args.ops:
        out += ["--ops", pattern]
    return (
        out
        + (["--device-api"] if args.device_api else [])
        + (["--show-unsupported"] if args.show_unsupported else [])
    )


def _shown_path(path: str) -> str:
    """A plugin path as the console shows it: relative to the working directory when below it
    (no machine-specific absolute paths in rerun commands), else as given."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else path


def rerun_command(args: argparse.Namespace, backend: dict, device: str) -> str:
    """The command that reruns this backend's run: a plugin named by --plugin as the user wrote
    it (relative paths stay relative); a discovered one by name (--backend finds it again on
    CTENSOR_PLUGIN_PATH or where it is installed)."""
    command = "python -m ctensor.conformance"
    if backend.get("path"):
        if args.plugin and not args.all:
            command += f" --plugin {_shown_path(args.plugin)}"
        else:
            command += f" --backend {backend['name']}"
    command += f" --device {device}"
    if args.seed:
        command += f" --seed {args.seed}"
    if args.cases or args.preset:
        command += f" --cases {PRESETS[args.preset] if args.preset else args.cases}"
    return command


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Edge values (NaN, infinities, the largest values) make NumPy's references and conversions
    # overflow or divide by zero on purpose, and empty reductions warn: expected, not news.
    warnings.filterwarnings(
        "ignore", category=RuntimeWarning, module=r"numpy\.|ctensor\.conformance"
    )
    options = Options(
        ops=[p.strip() for arg in args.ops for p in arg.split(",") if p.strip()],
        skips=read_patterns(args.skips_file),
        xfails=read_patterns(args.xfails_file),
        seed=args.seed,
        cases=args.cases or PRESETS[args.preset or "default"],
        threads=args.threads,
        device_api=args.device_api,
        only_op=args.only_op,
        case_seed=args.case,
        show_unsupported=args.show_unsupported,
    )
    runs: list[BackendRun] = []
    for backend, device in _targets(args):
        if args.isolate:
            run = run_isolated(backend, device, options, _child_args(args, backend, device))
        else:
            run = run_backend(backend, device, options)
        runs.append(run)
        text = console(run, rerun_command(args, backend, device))
        print(text.split("\n\n")[-1] if args.quiet else text)
        print()
    if args.report:
        write_json(args.report, runs, options)
    return 1 if any(r.status == FAIL for run in runs for r in run.results) else 0


if __name__ == "__main__":
    sys.exit(main())
