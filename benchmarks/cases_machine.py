"""The machine's limits as cases of their own: STREAM copy, add and read on 2^25 float32
elements (quick: 2^18) and the FMA peak, built from machine_limits.c for this run."""

from __future__ import annotations

import numpy as np

from .case import Case, Impl
from .env import Env

__all__ = ["build"]

_F32 = 4


def build(env: Env) -> list[Case]:
    mk = env.machine
    if mk is None:
        return []
    n = 1 << (18 if env.quick else 25)
    a, b = env.normal((n,)), env.normal((n,))
    c = np.empty_like(a)
    iters = 20_000 if env.quick else 2_000_000
    flops = mk.fma_flops(iters)
    return [
        Case(
            "machine/stream_copy",
            "machine",
            "GB/s",
            2 * n * _F32,
            {"machine": Impl("kernel()", {"kernel": mk.copy(c, a)})},
            f"c = a on {n} float32",
            limit="stream_copy",
        ),
        Case(
            "machine/stream_add",
            "machine",
            "GB/s",
            3 * n * _F32,
            {"machine": Impl("kernel()", {"kernel": mk.add(c, a, b)})},
            f"c = a + b on {n} float32",
            limit="stream_add",
        ),
        Case(
            "machine/stream_read",
            "machine",
            "GB/s",
            n * _F32,
            {"machine": Impl("kernel()", {"kernel": mk.read(a)})},
            f"sum of {n} float32",
            limit="stream_read",
        ),
        Case(
            "machine/fma_peak",
            "machine",
            "GFLOP/s",
            flops,
            {"machine": Impl("kernel()", {"kernel": mk.fma(iters)})},
            "float32 vector FMA chains, all threads",
            limit="fma_peak",
        ),
    ]
