"""``python -m ctensor.bench.cuda``: ctensor's CUDA backend side by side with CuPy and PyTorch on
one GPU, in one process, as ratios.

Every implementation of a case works on the same device buffers (CuPy arrays for ctensor and
CuPy, zero-copy torch views of them for PyTorch) and writes into a preallocated output where the
library allows it. Before timing, each result is checked against the first peer's. Timing uses
CUDA events on the legacy default stream, which all three libraries use unless told otherwise: a
sample is ``number`` back-to-back calls between two events (``number`` chosen so that a sample
lasts at least ``--min-sample`` seconds), samples of the implementations are interleaved, and the
result is the median time per call. The device's own copy bandwidth (``cudaMemcpy`` device to
device, through CuPy) is measured in the same run as the reference for memory-bound cases.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["main"]


@dataclass
class Case:
    """One benchmark: implementations by name, the work per call (bytes moved or flops), and
    a check of each result against the first peer's."""

    name: str
    impls: dict[str, Callable[[], Any]]
    work: float
    unit: str  # "GB/s" or "TFLOP/s"
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
    def host(value: Any) -> Any:
        if isinstance(value, tuple):
            return tuple(host(v) for v in value)
        if isinstance(value, torch.Tensor):
            return value.detach().cpu().numpy()
        return cupy.asnumpy(value)

    import numpy as np

    results = {name: host(fn()) for name, fn in case.impls.items()}
    reference_name = next(name for name in results if name != "ctensor")
    reference = results[reference_name]
    got = results["ctensor"]
    pairs = zip(got, reference, strict=True) if isinstance(got, tuple) else [(got, reference)]
    for mine, theirs in pairs:
        np.testing.assert_allclose(
            np.asarray(mine, np.float64),
            np.asarray(theirs, np.float64),
            rtol=case.rtol,
            atol=case.atol,
            err_msg=f"{case.name}: ctensor differs from {reference_name}",
        )


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
    cases = [
        Case(
            "copy (cudaMemcpy)",
            {
                "ctensor": lambda: ct.ops.positive(a, out=c),
                "cupy": lambda: (cupy.copyto(c, a), c)[1],
            },
            8.0 * n,
            "GB/s",
        ),
        Case(
            "add",
            {
                "ctensor": lambda: ct.ops.add(a, b, out=c),
                "cupy": lambda: cupy.add(a, b, out=c),
                "torch": lambda: torch.add(ta, tb, out=tc),
            },
            12.0 * n,
            "GB/s",
        ),
        Case(
            "add_broadcast",
            {
                "ctensor": lambda: ct.ops.add(m, row, out=out_m),
                "cupy": lambda: cupy.add(m, row, out=out_m),
                "torch": lambda: torch.add(tm, trow, out=tout_m),
            },
            8.0 * side * side,
            "GB/s",
        ),
        Case(
            "exp",
            {
                "ctensor": lambda: ct.ops.exp(a, out=c),
                "cupy": lambda: cupy.exp(a, out=c),
                "torch": lambda: torch.exp(ta, out=tc),
            },
            8.0 * n,
            "GB/s",
            rtol=2e-6,
        ),
        Case(
            "sum",
            {
                "ctensor": lambda: ct.ops.sum(a),
                "cupy": lambda: cupy.sum(a),
                "torch": lambda: torch.sum(ta),
            },
            4.0 * n,
            "GB/s",
            rtol=1e-4,
            atol=0.5,
        ),
        Case(
            "sum_axis0",
            {
                "ctensor": lambda: ct.ops.sum(m, axis=0),
                "cupy": lambda: cupy.sum(m, axis=0),
                "torch": lambda: torch.sum(tm, 0),
            },
            4.0 * side * side,
            "GB/s",
            rtol=1e-4,
            atol=1e-3,
        ),
        Case(
            "sum_axis1",
            {
                "ctensor": lambda: ct.ops.sum(m, axis=1),
                "cupy": lambda: cupy.sum(m, axis=1),
                "torch": lambda: torch.sum(tm, 1),
            },
            4.0 * side * side,
            "GB/s",
            rtol=1e-4,
            atol=1e-3,
        ),
        Case(
            "max",
            {
                "ctensor": lambda: ct.ops.max(a),
                "cupy": lambda: cupy.max(a),
                "torch": lambda: torch.max(ta),
            },
            4.0 * n,
            "GB/s",
        ),
        Case(
            "argmax_axis1",
            {
                "ctensor": lambda: ct.ops.argmax(m, axis=1),
                "cupy": lambda: cupy.argmax(m, axis=1),
                "torch": lambda: torch.argmax(tm, 1),
            },
            4.0 * side * side,
            "GB/s",
        ),
        Case(
            "transpose_copy",
            {
                "ctensor": lambda: ct.ops.permute_dims(m, axes=[1, 0]),
                "cupy": lambda: cupy.ascontiguousarray(m.T),
                "torch": lambda: tm.T.contiguous(),
            },
            8.0 * side * side,
            "GB/s",
        ),
        Case(
            "softmax",
            {"ctensor": lambda: ct.ops.softmax(m, axis=-1), "torch": lambda: torch.softmax(tm, -1)},
            8.0 * side * side,
            "GB/s",
            rtol=1e-4,
            atol=1e-7,
        ),
        Case(
            "layer_norm",
            {
                "ctensor": lambda: ct.ops.layer_norm(m, normalized_shape=[side]),
                "torch": lambda: torch.nn.functional.layer_norm(tm, [side]),
            },
            8.0 * side * side,
            "GB/s",
            rtol=1e-3,
            atol=1e-4,
        ),
    ]
    for size in [1024, 2048] if quick else [1024, 4096]:
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
            rtol=1e-3,
            atol=1e-3,
        )
    )
    cases.append(
        Case(
            "max_pool2d 2x2",
            {
                "ctensor": lambda: ct.ops.max_pool2d(images, kernel_size=2),
                "torch": lambda: torch.nn.functional.max_pool2d(ti, 2),
            },
            4.0 * images.size * 1.25,
            "GB/s",
        )
    )
    flags = rng.random(n) < 0.5
    tflags = tv(flags, device="cuda")
    cases.append(
        Case(
            "nonzero",
            {
                "ctensor": lambda: ct.ops.nonzero(flags),
                "cupy": lambda: cupy.nonzero(flags),
                "torch": lambda: torch.nonzero(tflags, as_tuple=True),
            },
            float(n),
            "GB/s",
        )
    )
    # ctensor's CUDA sort ranks each element against its whole lane (quadratic), so the case
    # is one lane of 2^16, not the CPU harness's 2^22.
    keys = rng.standard_normal(1 << 16, dtype=f32)
    tkeys = tv(keys, device="cuda")
    cases.append(
        Case(
            "sort 2^16",
            {
                "ctensor": lambda: ct.ops.sort(keys),
                "cupy": lambda: cupy.sort(keys),
                "torch": lambda: torch.sort(tkeys).values,
            },
            4.0 * keys.size,
            "GB/s",
        )
    )
    # float32 products in float32 (not TF32), as ctensor computes them.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctensor.bench.cuda", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer samples")
    parser.add_argument("--repeats", type=int, default=None, help="samples per implementation")
    parser.add_argument("--min-sample", type=float, default=0.02, metavar="SECONDS")
    parser.add_argument("--cases", help="only cases whose name contains this text")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    args = parser.parse_args(argv)
    try:
        import cupy
        import torch
    except ImportError as error:
        print(f"needs CuPy and PyTorch with CUDA: {error}", file=sys.stderr)
        return 2
    import ctensor

    backend = next((b for b in ctensor.backends() if b.name == "cuda"), None)
    if backend is None or backend.state != "loaded":
        print(f"the cuda backend is not running here: {backend}", file=sys.stderr)
        return 2
    repeats = args.repeats or (5 if args.quick else 11)
    cases = [
        c
        for c in _cases(cupy, torch, ctensor, args.quick)
        if not args.cases or args.cases in c.name
    ]
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(
        f"device: {device}; CuPy {cupy.__version__}, PyTorch {torch.__version__}; "
        f"median of {repeats} interleaved samples"
    )
    print(f"{'case':28} {'impl':8} {'ms':>9} {'rate':>14}  ctensor / peer")
    rows = []
    for case in cases:
        _check(cupy, torch, case)
        _measure(cupy, case, repeats, args.min_sample)
        mine = case.medians["ctensor"]
        for name, median in case.medians.items():
            rate = case.work / median / (1e9 if case.unit == "GB/s" else 1e12)
            ratio = "" if name == "ctensor" else f"{median / mine:.2f}"
            print(
                f"{case.name:28} {name:8} {median * 1e3:9.4f} {rate:9.1f} {case.unit:7} {ratio:>6}"
            )
            rows.append(
                {
                    "case": case.name,
                    "impl": name,
                    "seconds": median,
                    "rate": rate,
                    "unit": case.unit,
                    "ctensor_speedup": median / mine,
                }
            )
    if args.json:
        with open(args.json, "w") as handle:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
