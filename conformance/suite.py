"""One suite run over one backend: load the plugin if one is named, read the registry (after
loading, so the plugin's kernels are in it), and run every op x dtype the selection names."""

from __future__ import annotations

import fnmatch
import sys
import time
from dataclasses import dataclass, field

from ctensor._errors import check
from ctensor._lib import ffi, lib
from ctensor._registry import DEVICE_NAMES, OpSpec, registry_json

from . import abi_checks
from .device import open_device
from .runner import (
    FAIL,
    NOT_SUPPORTED,
    PASS,
    SKIP,
    XFAIL,
    Result,
    Target,
    backward_result,
    matches,
    run_signature,
    signature_labels,
)

__all__ = [
    "Options",
    "BackendRun",
    "load_plugin",
    "backend_infos",
    "discover",
    "run_backend",
    "selected",
]


@dataclass
class Options:
    ops: list[str] = field(default_factory=list)  # op[:dtype] patterns; empty: all
    only_op: str | None = None  # one op by exact name (--isolate's children)
    skips: list[str] = field(default_factory=list)
    xfails: list[str] = field(default_factory=list)
    seed: int = 0
    cases: int = 8
    threads: int = 4
    device_api: bool = False  # CPU tensors through ct_device_* as well
    case_seed: int | None = None  # --case: only the case with this seed
    # rows of ops the backend registers no kernel for on the device (NOT_SUPPORTED); by default
    # only the ops it has a kernel for are reported, with their unregistered dtypes
    show_unsupported: bool = False


@dataclass
class BackendRun:
    backend: dict
    device: str
    results: list[Result]
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in (PASS, FAIL, NOT_SUPPORTED, SKIP, XFAIL)}
        for r in self.results:
            out[r.status] += 1
        return out


def _text(ptr) -> str:  # noqa: ANN001
    return "" if ptr == ffi.NULL else ffi.string(ptr).decode("utf-8", "replace")


def backend_infos() -> list[dict]:
    """Every entry of the backend table (ct_backend_get_info)."""
    count = ffi.new("int32_t*")
    check(lib.ct_backend_count(count))
    out = []
    for i in range(count[0]):
        info = ffi.new("ct_backend_info*")
        info.struct_size = ffi.sizeof("ct_backend_info")
        check(lib.ct_backend_get_info(i, info))
        out.append(
            {
                "index": i,
                "name": _text(info.name),
                "version": _text(info.version),
                "path": _text(info.path) or None,
                "state": info.state,
                "status": info.status,
                "reason": _text(info.reason),
                "device_type": info.device_type,
                "device": DEVICE_NAMES.get(info.device_type, "other"),
                "device_count": info.device_count,
                "abi_version": info.abi_version,
            }
        )
    return out


def load_plugin(path: str) -> dict:
    """Loads a plugin by path; its backend table entry (loaded or not: state and reason say)."""
    index = ffi.new("int32_t*", -1)
    lib.ct_backend_load(path.encode(), index)
    if index[0] < 0:
        raise RuntimeError(f"cannot load {path}: {_text(lib.ct_last_error())}")
    return backend_infos()[index[0]]


def discover() -> list[dict]:
    """Loads the plugins installed with the package and those on CTENSOR_PLUGIN_PATH; every
    backend entry afterwards."""
    check(lib.ct_backend_discover(ffi.NULL, ffi.NULL))
    return backend_infos()


def builtin_cpu() -> dict:
    return {
        "name": "cpu",
        "version": ffi.string(lib.ct_version_string()).decode(),
        "path": None,
        "state": 0,
        "status": 0,
        "reason": "",
        "device_type": 1,
        "device": "cpu",
        "device_count": 1,
        "abi_version": lib.ct_abi_version(),
    }


#: What --isolate's children print on stderr before each op x dtype, so that the parent learns
#: which one a crash happened in.
PROGRESS = "conformance: running "


def selected(options: Options, op: str, label: str) -> bool:
    """Whether --ops (and --only-op) select this op x dtype row."""
    if options.only_op is not None and op != options.only_op:
        return False
    if not options.ops:
        return True
    return matches(options.ops, op, label) or any(
        fnmatch.fnmatchcase(op, p) for p in options.ops if ":" not in p
    )


def run_backend(backend: dict, device_text: str, options: Options, progress=None) -> BackendRun:  # noqa: ANN001
    """Runs the suite over one backend on one device."""
    start = time.time()
    device = open_device(device_text, options.device_api)
    target = Target(
        backend["name"], device, options.seed, options.cases, options.threads, options.case_seed
    )
    global_problems = abi_checks.layout_checks() + abi_checks.version_checks(backend)
    results: list[Result] = []
    # Backward ops run inside their forwards' gradient checks: their rows come after them all.
    schemas = registry_json()["ops"]
    schemas = [s for s in schemas if "_backward" not in s["name"]] + [
        s for s in schemas if "_backward" in s["name"]
    ]
    for schema in schemas:
        spec = OpSpec(schema)
        own = {
            tuple(k["signature"])
            for k in schema.get("kernels", ())
            if k["backend"] == backend["name"] and k["device"] == device.kind
        }
        if not own and not options.show_unsupported:
            continue  # an op this backend never registered: not its business
        for signature, label in sorted(signature_labels(spec).items(), key=lambda kv: kv[1]):
            if not selected(options, spec.name, label):
                continue
            if matches(options.skips, spec.name, label):
                results.append(Result(spec.name, label, signature, SKIP))
                continue
            if signature not in own:
                results.append(Result(spec.name, label, signature, NOT_SUPPORTED))
                continue
            if options.only_op is not None:
                print(f"{PROGRESS}{spec.name}:{label}", file=sys.stderr, flush=True)
            if "_backward" in spec.name:
                result = backward_result(spec, signature, label, target)
            else:
                result = run_signature(spec, signature, label, target)
            for check_name, reason in global_problems:
                result.fail(check_name, reason)
            for check_name in ("abi_layout", "abi_version"):
                result.checks.setdefault(check_name, PASS)
            if result.status == FAIL and matches(options.xfails, spec.name, label):
                result.status = XFAIL
            results.append(result)
            if progress is not None:
                progress(result)
    return BackendRun(backend, device.name, results, time.time() - start)
