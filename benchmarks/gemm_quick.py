"""matmul and conv2d GFLOP/s of ctensor, torch and NumPy in one process, interleaved; a stopgap
until the benchmark harness (issue 5) covers them.

    python benchmarks/gemm_quick.py [--threads N] [--rounds R]

Each case is checked against NumPy/torch first. Timings are medians over repetitions, taken in
rounds that alternate the libraries, so that load from other processes hits all of them alike;
`--cpu-time` reports GFLOP per CPU-second of this process instead of per wall-clock second
(steadier on a shared machine, meaningful for one thread)."""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F

import ctensor

MATMUL_SIZES = [256, 512, 1024, 2048]
CONV_SHAPES = [  # ResNet-50 3x3 convolutions, batch 8, padding 1
    ((8, 64, 56, 56), (64, 64, 3, 3)),
    ((8, 128, 28, 28), (128, 128, 3, 3)),
    ((8, 256, 14, 14), (256, 256, 3, 3)),
    ((8, 512, 7, 7), (512, 512, 3, 3)),
]


def median_seconds(fn, reps: int, clock) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = clock()
        fn()
        times.append(clock() - start)
    return float(np.median(times))


def run_case(label: str, flops: float, fns: dict, rounds: int, clock) -> None:
    reps = max(3, int(2e9 / flops))
    rates: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            rates[name].append(flops / median_seconds(fn, reps, clock) / 1e9)
    medians = {name: float(np.median(r)) for name, r in rates.items()}
    ours = medians["ctensor"]
    cells = "  ".join(f"{name} {rate:7.1f}" for name, rate in medians.items())
    ratios = "  ".join(
        f"x{name} {ours / rate:4.2f}" for name, rate in medians.items() if name != "ctensor"
    )
    print(f"{label:<34} {cells}   {ratios}", flush=True)


def matmul_case(n: int, rng, rounds: int, clock) -> None:
    a, b = (rng.standard_normal((n, n), np.float32) for _ in range(2))
    out = np.empty((n, n), np.float32)
    ta, tb, tout = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(out)
    np.testing.assert_allclose(ctensor.ops.matmul(a, b), a @ b, rtol=1e-3, atol=1e-3)
    fns = {
        "ctensor": lambda: ctensor.ops.matmul(a, b, out=out),
        "torch": lambda: torch.matmul(ta, tb, out=tout),
        "numpy": lambda: np.matmul(a, b, out=out),
    }
    run_case(f"matmul {n}", 2.0 * n**3, fns, rounds, clock)


def conv2d_case(x_shape, w_shape, rng, rounds: int, clock) -> None:
    x = rng.standard_normal(x_shape, np.float32)
    w = rng.standard_normal(w_shape, np.float32)
    out = np.empty((x_shape[0], w_shape[0], x_shape[2], x_shape[3]), np.float32)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    expected = F.conv2d(tx, tw, padding=1).numpy()
    np.testing.assert_allclose(ctensor.ops.conv2d(x, w, padding=1), expected, rtol=1e-3, atol=1e-3)
    flops = 2.0 * np.prod(out.shape) * np.prod(w_shape[1:])
    fns = {
        "ctensor": lambda: ctensor.ops.conv2d(x, w, padding=1, out=out),
        "torch": lambda: F.conv2d(tx, tw, padding=1),
    }
    run_case(f"conv2d {x_shape} {w_shape[2:]}", flops, fns, rounds, clock)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu-time", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ctensor.set_num_threads(args.threads)
    clock = time.process_time if args.cpu_time else time.perf_counter
    print(f"GFLOP/s, float32, {args.threads} threads, medians of {args.rounds} rounds")
    rng = np.random.default_rng(0)
    for n in MATMUL_SIZES:
        matmul_case(n, rng, args.rounds, clock)
    for x_shape, w_shape in CONV_SHAPES:
        conv2d_case(x_shape, w_shape, rng, args.rounds, clock)


if __name__ == "__main__":
    main()
