"""``python -m ctensor.bench.cuda``: ctensor's CUDA backend side by side with CuPy and PyTorch on
one GPU, in one process, as ratios against the reference each case has a target for.

Every implementation of a case works on the same device buffers (CuPy arrays for ctensor and
CuPy, zero-copy torch views of them for PyTorch) and writes into a preallocated output where the
library allows it. Before timing, each result is checked against the first peer's. Timing uses
CUDA events on the legacy default stream, which all three libraries use unless told otherwise: a
sample is ``number`` back-to-back calls between two events (``number`` chosen so that a sample
lasts at least ``--min-sample`` seconds), samples of the implementations are interleaved, and the
result is the median time per call.

Each case has a reference and a target (the CUDA backend's acceptance): matmul and conv2d against
torch (cuBLAS, cuDNN; at least 0.95), sort against CuPy (CUB; at least 0.9), element-wise ops and
reductions against the device's copy bandwidth (at least 0.9), softmax and layer_norm against
torch (at least 1.0). The copy bandwidth is a ``cudaMemcpyAsync`` device to device, through
CuPy, timed in the same run and moving the same bytes as the case (it copies half of them: each
is read once and written once). A ratio is the reference's time over ctensor's, so above 1 means
ctensor is faster; for the copy reference it is ctensor's share of the copy bandwidth.

``--record`` writes the table to ``benchmarks/results/cuda/<gpu>.txt`` (under the current
directory, the repository root; ``--record DIR`` elsewhere); ``--check`` exits with status 1
when a case misses its target. Without a GPU, CuPy and PyTorch with CUDA, or ctensor's cuda
backend, it says which is missing and exits with status 2.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Case", "main", "record_path", "rows_of", "table"]

#: The pseudo-implementation that measures the device's copy bandwidth for a case.
MEMCPY = "cudaMemcpy"
#: The columns of the table: the peers, then the copy bandwidth.
REFERENCES = ("cupy", "torch", "copy")


@dataclass
class Case:
    """One benchmark: implementations by name (ctensor first, then peers, and ``MEMCPY`` when
    the copy bandwidth is the reference), the work per call (bytes moved or flops), the
    acceptance target as (reference, least ratio) or None, and a check of each result against
    the first peer's."""

    name: str
    impls: dict[str, Callable[[], Any]]
    work: float
    unit: str  # "GB/s" or "TFLOP/s"
    target: tuple[str, float] | None = None
    rtol: float = 1e-5
    atol: float = 1e-6
    medians: dict[str, float] = field(default_factory=dict)


def _time(cupy: Any, fn: Callable[[], Any], number: int) -> float:
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(number):
        fn()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / 1000.0 / number


def _measure(cupy: Any, case: Case, repeats: int, min_sample: float) -> None:
    numbers = {}
    for name, fn in case.impls.items():
        fn()
        once = max(_time(cupy, fn, 1), 1e-7)
        numbers[name] = max(1, int(min_sample / once))
    samples: dict[str, list[float]] = {name: [] for name in case.impls}
    for _ in range(repeats):
        for name, fn in case.impls.items():
            samples[name].append(_time(cupy, fn, numbers[name]))
    case.medians = {name: statistics.median(values) for name, values in samples.items()}


def _check(cupy: Any, torch: Any, case: Case) -> None:
    import numpy as np

    def host(value: Any) -> Any:
        if isinstance(value, tuple):
            return tuple(host(v) for v in value)
        if isinstance(value, torch.Tensor):
            return value.detach().cpu().numpy()
        return cupy.asnumpy(value)

    peers = [name for name in case.impls if name not in ("ctensor", MEMCPY)]
    if not peers:
        return
    reference_name = peers[0]
    reference = host(case.impls[reference_name]())
    got = host(case.impls["ctensor"]())
    pairs = zip(got, reference, strict=True) if isinstance(got, tuple) else [(got, reference)]
    for mine, theirs in pairs:
        np.testing.assert_allclose(
            np.asarray(mine, np.float64),
            np.asarray(theirs, np.float64),
            rtol=case.rtol,
            atol=case.atol,
            err_msg=f"{case.name}: ctensor differs from {reference_name}",
        )


class _Copier:
    """``cudaMemcpyAsync`` device to device of ``nbytes`` on the current stream, between two
    buffers shared by every case (sized for the largest)."""

    def __init__(self, cupy: Any, nbytes: int):
        self.cupy = cupy
        self.src = cupy.ones(nbytes, cupy.uint8)
        self.dst = cupy.empty(nbytes, cupy.uint8)

    def of(self, work_bytes: float) -> Callable[[], None]:
        """A copy moving ``work_bytes`` (reading and writing half of them each)."""
        runtime = self.cupy.cuda.runtime
        nbytes = int(work_bytes) // 2
        if nbytes > self.src.size:
            raise ValueError(f"a copy of {nbytes} bytes needs a larger buffer")
        src, dst = self.src.data.ptr, self.dst.data.ptr
        kind = runtime.memcpyDeviceToDevice
        stream = self.cupy.cuda.get_current_stream

        def copy() -> None:
            runtime.memcpyAsync(dst, src, nbytes, kind, stream().ptr)

        return copy


def _cases(cupy: Any, torch: Any, ct: Any, quick: bool) -> list[Case]:
    f32 = cupy.float32
    rng = cupy.random.default_rng(0)
    tv = torch.as_tensor  # zero-copy views of CuPy arrays (__cuda_array_interface__)
    n = 1 << (24 if quick else 26)
    side = 4096 if quick else 8192
    a, b, c = (rng.standard_normal(n, dtype=f32) for _ in range(3))
    ta, tb, tc = tv(a, device="cuda"), tv(b, device="cuda"), tv(c, device="cuda")
    m = rng.standard_normal((side, side), dtype=f32)
    row = rng.standard_normal(side, dtype=f32)
    out_m = cupy.empty_like(m)
    tm, trow, tout_m = tv(m, device="cuda"), tv(row, device="cuda"), tv(out_m, device="cuda")
    copier = _Copier(cupy, 6 * n)  # add moves the most: 12 n bytes
    copy_target = ("copy", 0.9)

    def bandwidth(
        name: str, impls: dict, work: float, target: Any = copy_target, **kw: Any
    ) -> Case:
        return Case(name, {**impls, MEMCPY: copier.of(work)}, work, "GB/s", target, **kw)

    cases = [
        bandwidth(
            "copy",
            {
                "ctensor": lambda: ct.ops.positive(a, out=c),
                "cupy": lambda: (cupy.copyto(c, a), c)[1],
                "torch": lambda: tc.copy_(ta),
            },
            8.0 * n,
        ),
        bandwidth(
            "add",
            {
                "ctensor": lambda: ct.ops.add(a, b, out=c),
                "cupy": lambda: cupy.add(a, b, out=c),
                "torch": lambda: torch.add(ta, tb, out=tc),
            },
            12.0 * n,
        ),
        bandwidth(
            "add_broadcast",
            {
                "ctensor": lambda: ct.ops.add(m, row, out=out_m),
                "cupy": lambda: cupy.add(m, row, out=out_m),
                "torch": lambda: torch.add(tm, trow, out=tout_m),
            },
            8.0 * side * side,
        ),
        bandwidth(
            "exp",
            {
                "ctensor": lambda: ct.ops.exp(a, out=c),
                "cupy": lambda: cupy.exp(a, out=c),
                "torch": lambda: torch.exp(ta, out=tc),
            },
            8.0 * n,
            rtol=2e-6,
        ),
        bandwidth(
            "sum",
            {
                "ctensor": lambda: ct.ops.sum(a),
                "cupy": lambda: cupy.sum(a),
                "torch": lambda: torch.sum(ta),
            },
            4.0 * n,
            rtol=1e-4,
            atol=0.5,
        ),
        bandwidth(
            "sum_axis0",
            {
                "ctensor": lambda: ct.ops.sum(m, axis=0),
                "cupy": lambda: cupy.sum(m, axis=0),
                "torch": lambda: torch.sum(tm, 0),
            },
            4.0 * side * side,
            rtol=1e-4,
            atol=1e-3,
        ),
        bandwidth(
            "sum_axis1",
            {
                "ctensor": lambda: ct.ops.sum(m, axis=1),
                "cupy": lambda: cupy.sum(m, axis=1),
                "torch": lambda: torch.sum(tm, 1),
            },
            4.0 * side * side,
            rtol=1e-4,
            atol=1e-3,
        ),
        bandwidth(
            "max",
            {
                "ctensor": lambda: ct.ops.max(a),
                "cupy": lambda: cupy.max(a),
                "torch": lambda: torch.max(ta),
            },
            4.0 * n,
        ),
        bandwidth(
            "argmax_axis1",
            {
                "ctensor": lambda: ct.ops.argmax(m, axis=1),
                "cupy": lambda: cupy.argmax(m, axis=1),
                "torch": lambda: torch.argmax(tm, 1),
            },
            4.0 * side * side,
        ),
        bandwidth(
            "transpose_copy",
            {
                "ctensor": lambda: ct.ops.permute_dims(m, axes=[1, 0]),
                "cupy": lambda: cupy.ascontiguousarray(m.T),
                "torch": lambda: tm.T.contiguous(),
            },
            8.0 * side * side,
            target=None,  # a layout change, not in the acceptance: shown against the copy
        ),
        bandwidth(
            "softmax",
            {"ctensor": lambda: ct.ops.softmax(m, axis=-1), "torch": lambda: torch.softmax(tm, -1)},
            8.0 * side * side,
            target=("torch", 1.0),
            rtol=1e-4,
            atol=1e-7,
        ),
        bandwidth(
            "layer_norm",
            {
                "ctensor": lambda: ct.ops.layer_norm(m, normalized_shape=[side]),
                "torch": lambda: torch.nn.functional.layer_norm(tm, [side]),
            },
            8.0 * side * side,
            target=("torch", 1.0),
            rtol=1e-3,
            atol=1e-4,
        ),
    ]
    for size in [1024, 2048] if quick else [1024, 4096, 8192]:
        x, y = (
            rng.standard_normal((size, size), dtype=f32),
            rng.standard_normal((size, size), dtype=f32),
        )
        tx, ty = tv(x, device="cuda"), tv(y, device="cuda")
        cases.append(
            Case(
                f"matmul {size}",
                {
                    "ctensor": lambda x=x, y=y: ct.ops.matmul(x, y),
                    "cupy": lambda x=x, y=y: cupy.matmul(x, y),
                    "torch": lambda tx=tx, ty=ty: torch.matmul(tx, ty),
                },
                2.0 * size**3,
                "TFLOP/s",
                ("torch", 0.95),
                rtol=1e-3,
                atol=1e-2,
            )
        )
    images = rng.standard_normal((32, 64, 56, 56), dtype=f32)
    weight = rng.standard_normal((64, 64, 3, 3), dtype=f32) * 0.05
    ti, tw = tv(images, device="cuda"), tv(weight, device="cuda")
    conv = torch.nn.functional.conv2d
    cases.append(
        Case(
            "conv2d 32x64x56x56 3x3",
            {
                "ctensor": lambda: ct.ops.conv2d(images, weight, padding=1),
                "torch": lambda: conv(ti, tw, padding=1),
            },
            2.0 * 32 * 64 * 56 * 56 * 64 * 9,
            "TFLOP/s",
            ("torch", 0.95),
            rtol=1e-3,
            atol=1e-3,
        )
    )
    cases.append(
        bandwidth(
            "max_pool2d 2x2",
            {
                "ctensor": lambda: ct.ops.max_pool2d(images, kernel_size=2),
                "torch": lambda: torch.nn.functional.max_pool2d(ti, 2),
            },
            4.0 * images.size * 1.25,
            target=None,
        )
    )
    flags = rng.random(n) < 0.5
    tflags = tv(flags, device="cuda")
    cases.append(
        bandwidth(
            "nonzero",
            {
                "ctensor": lambda: ct.ops.nonzero(flags),
                "cupy": lambda: cupy.nonzero(flags),
                "torch": lambda: torch.nonzero(tflags, as_tuple=True),
            },
            float(n),
            target=None,  # reads its output size back to the host (a dynamic op)
        )
    )
    # One lane of float32 keys, sorted by CUB's radix sort in CuPy (and in ctensor's plugin).
    keys = rng.standard_normal(1 << (20 if quick else 24), dtype=f32)
    tkeys = tv(keys, device="cuda")
    cases.append(
        Case(
            f"sort 2^{keys.size.bit_length() - 1}",
            {
                "ctensor": lambda: ct.ops.sort(keys),
                "cupy": lambda: cupy.sort(keys),
                "torch": lambda: torch.sort(tkeys).values,
            },
            8.0 * keys.size,
            "GB/s",
            ("cupy", 0.9),
        )
    )
    # float32 products in float32 (not TF32), as ctensor computes them.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return cases


def rows_of(case: Case) -> dict:
    """A case's measured row: ctensor's time and rate, the ratio against each reference
    (reference time / ctensor's; None where the case has no such reference), and its target
    with whether it was met."""
    mine = case.medians["ctensor"]
    scale = 1e9 if case.unit == "GB/s" else 1e12
    ratios = {}
    for reference in REFERENCES:
        impl = MEMCPY if reference == "copy" else reference
        ratios[reference] = case.medians[impl] / mine if impl in case.medians else None
    met = None
    if case.target is not None:
        reference, least = case.target
        met = ratios[reference] is not None and ratios[reference] >= least
    return {
        "case": case.name,
        "seconds": mine,
        "rate": case.work / mine / scale,
        "unit": case.unit,
        "ratios": ratios,
        "target": list(case.target) if case.target else None,
        "met": met,
        "medians": dict(case.medians),
    }


def _column_line() -> str:
    columns = "".join(f"{'vs ' + r:>9}" for r in REFERENCES)
    return f"{'case':24} {'ms':>9} {'rate':>10} {'':7}{columns}  {'target':14} result"


def _row_line(row: dict) -> str:
    cells = "".join(
        f"{'-' if row['ratios'][r] is None else format(row['ratios'][r], '.2f'):>9}"
        for r in REFERENCES
    )
    if row["target"] is None:
        target, result = "-", ""
    else:
        target = f"{row['target'][0]} >= {row['target'][1]:.2f}"
        result = "met" if row["met"] else "BELOW"
    line = (
        f"{row['case']:24} {row['seconds'] * 1e3:9.4f} {row['rate']:10.1f} "
        f"{row['unit']:7}{cells}  {target:14} {result}"
    )
    return line.rstrip()


def _summary(rows: list[dict]) -> str:
    missed = [row["case"] for row in rows if row["met"] is False]
    targets = sum(row["met"] is not None for row in rows)
    below = f"; below: {', '.join(missed)}" if missed else ""
    return f"targets met: {targets - len(missed)} of {targets}{below}"


_EXPLANATION = [
    "ratio = reference's time / ctensor's (copy: ctensor's share of cudaMemcpy's bandwidth "
    "moving the same bytes); above 1 means ctensor is faster",
    "",
]


def table(rows: list[dict], header: list[str]) -> str:
    """The text table of measured rows, under ``header`` lines (what ``--record`` writes)."""
    lines = [*header, *_EXPLANATION, _column_line()]
    lines += [_row_line(row) for row in rows]
    lines += ["", _summary(rows)]
    return "\n".join(lines) + "\n"


def record_path(device_name: str, directory: str) -> str:
    """Where ``--record`` writes the table of a run on the GPU ``device_name``: ``<gpu>.txt`` in
    ``directory``, the name lower-cased without its vendor ("NVIDIA H200" -> "h200.txt")."""
    name = re.sub(r"^nvidia\s+", "", device_name.strip().lower())
    slug = re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"
    return os.path.join(directory, f"{slug}.txt")


def _unavailable() -> tuple[Any, Any, str | None]:
    """(cupy, torch, None), or (None, None, why this machine cannot run the benchmark)."""
    import ctensor

    backend = next((b for b in ctensor.backends() if b.name == "cuda"), None)
    if backend is None:
        return None, None, "the cuda backend is not running here: this build has no cuda plugin"
    if backend.state != "loaded":
        return (
            None,
            None,
            f"the cuda backend is not running here: {backend.state}: {backend.reason}",
        )
    try:
        import cupy
        import torch
    except ImportError as error:
        return None, None, f"needs CuPy and PyTorch with CUDA: {error}"
    if not torch.cuda.is_available():
        return None, None, "needs CuPy and PyTorch with CUDA: PyTorch sees no CUDA device"
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - CuPy's CUDARuntimeError without a device
        return None, None, f"needs CuPy and PyTorch with CUDA: CuPy sees no CUDA device: {error}"
    return cupy, torch, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ctensor.bench.cuda",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer samples")
    parser.add_argument("--repeats", type=int, default=None, help="samples per implementation")
    parser.add_argument("--min-sample", type=float, default=0.02, metavar="SECONDS")
    parser.add_argument("--cases", help="only cases whose name contains this text")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    parser.add_argument(
        "--record",
        nargs="?",
        const=os.path.join("benchmarks", "results", "cuda"),
        metavar="DIR",
        help="write the table to DIR/<gpu>.txt (default DIR: benchmarks/results/cuda)",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit with status 1 when a case misses its target"
    )
    args = parser.parse_args(argv)
    cupy, torch, why = _unavailable()
    if why is not None:
        print(f"python -m ctensor.bench.cuda cannot run here: {why}", file=sys.stderr)
        return 2
    import ctensor

    repeats = args.repeats or (5 if args.quick else 11)
    cases = [
        c
        for c in _cases(cupy, torch, ctensor, args.quick)
        if not args.cases or args.cases in c.name
    ]
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    device = properties["name"].decode()
    header = [
        f"device: {device} (compute capability {properties['major']}.{properties['minor']}, "
        f"{properties['totalGlobalMem'] / 2**30:.0f} GiB); ctensor {ctensor.__version__}, "
        f"CuPy {cupy.__version__}, PyTorch {torch.__version__} (CUDA {torch.version.cuda})",
        f"run: python -m ctensor.bench.cuda {' '.join(argv if argv is not None else sys.argv[1:])}"
        f" on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"median of {repeats} interleaved samples",
    ]
    print("\n".join([*header, *_EXPLANATION, _column_line()]), flush=True)
    rows = []
    for case in cases:
        _check(cupy, torch, case)
        _measure(cupy, case, repeats, args.min_sample)
        rows.append(rows_of(case))
        print(_row_line(rows[-1]), flush=True)
    print(f"\n{_summary(rows)}")
    text = table(rows, header)
    if args.record:
        path = record_path(device, args.record)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"recorded in {path}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "device": device,
                    "cupy": cupy.__version__,
                    "torch": torch.__version__,
                    "repeats": repeats,
                    "rows": rows,
                },
                handle,
                indent=1,
            )
    if args.check and any(row["met"] is False for row in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
