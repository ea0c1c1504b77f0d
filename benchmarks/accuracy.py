"""The accuracy half of the reduction target: float32 ``sum`` error no worse than NumPy's
(pairwise) sum, against an exactly rounded reference (math.fsum in float64)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["sum_accuracy"]


def sum_accuracy(ops: Any, rng: np.random.Generator, n: int) -> dict:
    """Relative errors of ctensor's and NumPy's float32 sum over ``n`` values in [0, 1) and over
    ``n`` values of mixed sign and magnitude; the target is met when ctensor's error is no
    larger than NumPy's on both."""
    inputs = {
        "uniform[0,1)": rng.random(n, dtype=np.float32),
        "mixed": (rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))).astype(np.float32),
    }
    rows = []
    met = True
    for label, x in inputs.items():
        exact = math.fsum(x.astype(np.float64).tolist())
        scale = abs(exact) or 1.0
        ct_error = abs(float(np.asarray(ops.sum(x))) - exact) / scale
        np_error = abs(float(np.sum(x)) - exact) / scale
        rows.append(
            {"input": label, "n": n, "ctensor_rel_error": ct_error, "numpy_rel_error": np_error}
        )
        met = met and ct_error <= np_error
    return {
        "name": "reduction/sum/accuracy",
        "target": "float32 sum error <= NumPy's",
        "met": met,
        "rows": rows,
    }
