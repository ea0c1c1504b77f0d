"""Checks a ctensor result against a peer's before anything is timed."""

from __future__ import annotations

from typing import Any

import numpy as np

from .peers import to_numpy

__all__ = ["compare"]


def compare(got: Any, want: Any, rule: tuple[float, float] | str) -> str | None:
    """None when ``got`` matches ``want`` under ``rule`` ((rtol, atol) or "exact"); else what
    differs, in words."""
    if isinstance(want, tuple) or isinstance(got, tuple):
        got_t = got if isinstance(got, tuple) else (got,)
        want_t = want if isinstance(want, tuple) else (want,)
        if len(got_t) != len(want_t):
            return f"{len(got_t)} results, expected {len(want_t)}"
        for i, (g, w) in enumerate(zip(got_t, want_t, strict=True)):
            problem = compare(g, w, rule)
            if problem:
                return f"result {i}: {problem}"
        return None
    g, w = np.asarray(to_numpy(got)), np.asarray(to_numpy(want))
    if g.shape != w.shape:
        return f"shape {g.shape}, expected {w.shape}"
    if rule == "exact":
        if g.dtype.kind == "f" or w.dtype.kind == "f":
            same = np.array_equal(g, w, equal_nan=True)
        else:
            same = np.array_equal(g.astype(np.int64), w.astype(np.int64))
        if same:
            return None
        bad = int(np.count_nonzero(g != w))
        return f"{bad} of {w.size} elements differ (exact comparison)"
    rtol, atol = rule
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    error = np.abs(g64 - w64)
    allowed = atol + rtol * np.abs(w64)
    nan_mismatch = np.isnan(g64) != np.isnan(w64)
    bad = (error > allowed) & ~np.isnan(w64) | nan_mismatch
    if not bad.any():
        return None
    worst = float(np.where(bad & np.isfinite(error), error, 0.0).max())
    nans = int(np.count_nonzero(nan_mismatch))
    return (
        f"{int(np.count_nonzero(bad))} of {w.size} elements outside rtol={rtol:g}, "
        f"atol={atol:g} (worst finite error {worst:.3g}; {nans} NaN where the peer has "
        "none or the reverse)"
    )
