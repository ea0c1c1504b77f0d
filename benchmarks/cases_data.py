"""Data-dependent cases: sort, topk, nonzero and unique (elements processed per second): one long
array, and sort/topk along the rows of a matrix (many short lanes, as in a batch).

ctensor on the OpenCL device (``ctensor.opencl``) runs nonzero only: the OpenCL backend's sort,
topk and unique_values rank every element against all the others (quadratic work), which at
these sizes takes hours, so those cases say so in their description instead."""

from __future__ import annotations

import numpy as np

from .case import Case, Impl, Target
from .env import Env

__all__ = ["build"]


def build(env: Env) -> list[Case]:
    quick = env.quick
    n_sort = 1 << (14 if quick else 22)
    n_mask = 1 << (16 if quick else 24)
    x = env.normal((n_sort,))
    rows = env.normal((64, 256) if quick else (1024, 1024))
    mask = env.rng.random(n_mask) < 0.5
    ints = env.rng.integers(0, 1000, n_sort, dtype=np.int32)
    k = 100
    ns = {"ops": env.ops, "np": np, "x": x, "rows": rows, "mask": mask, "ints": ints, "k": k}
    has_torch = env.torch is not None
    if has_torch:
        torch = env.torch
        ns.update(torch=torch, tx=env.t(x), trows=env.t(rows), tmask=env.t(mask), tints=env.t(ints))

    env.opencl_arrays(ns, dmask=mask)

    def impls(
        ct: str, numpy: str | None, torch_expr: str | None, opencl: str | None = None
    ) -> dict[str, Impl]:
        found = {"ctensor": Impl(ct, ns)}
        if opencl:
            found["ctensor.opencl"] = Impl(opencl, ns)
        if numpy:
            found["numpy"] = Impl(numpy, ns)
        if torch_expr and has_torch:
            found["torch"] = Impl(torch_expr, ns)
        return found

    exact = {"numpy": "exact", **({"torch": "exact"} if has_torch else {})}
    sort_targets = [Target(">= 1.0x NumPy", "speedup", "numpy", 1.0)]
    nonzero_targets = [Target(">= 2x torch", "speedup", "torch", 2.0)] if has_torch else []
    quadratic = (
        "; not on ctensor.opencl: the OpenCL backend's {} ranks every element against "
        "all others (quadratic work, hours at this size)"
    )
    return [
        Case(
            f"data/sort/2^{int(np.log2(n_sort))}",
            "data",
            "Melem/s",
            n_sort,
            impls("ops.sort(x, stable=False)", "np.sort(x)", "torch.sort(tx).values"),
            "float32, ascending" + quadratic.format("sort"),
            exact,
            targets=sort_targets,
        ),
        Case(
            f"data/topk/2^{int(np.log2(n_sort))}",
            "data",
            "Melem/s",
            n_sort,
            impls("ops.topk(x, k=k)[0]", None, "torch.topk(tx, k).values"),
            f"float32, k={k} largest, sorted" + quadratic.format("topk"),
            {"torch": "exact"} if has_torch else {},
        ),
        Case(
            f"data/sort_rows/{rows.shape[0]}x{rows.shape[1]}",
            "data",
            "Melem/s",
            rows.size,
            impls(
                "ops.sort(rows, axis=1, stable=False)",
                "np.sort(rows, axis=1)",
                "torch.sort(trows, dim=1).values",
            ),
            "float32, each row ascending" + quadratic.format("sort"),
            exact,
        ),
        Case(
            f"data/topk_rows/{rows.shape[0]}x{rows.shape[1]}",
            "data",
            "Melem/s",
            rows.size,
            impls("ops.topk(rows, k=8, axis=1)[0]", None, "torch.topk(trows, 8, dim=1).values"),
            "float32, k=8 largest of each row, sorted" + quadratic.format("topk"),
            {"torch": "exact"} if has_torch else {},
        ),
        Case(
            f"data/nonzero/2^{int(np.log2(n_mask))}",
            "data",
            "Melem/s",
            n_mask,
            impls(
                "ops.nonzero(mask)",
                "np.nonzero(mask)",
                "torch.nonzero(tmask, as_tuple=True)",
                env.opencl_expr("nonzero", "ops.nonzero(dmask)"),
            ),
            "bool, half of them true (one index array per dimension)",
            exact,
            targets=nonzero_targets,
        ),
        Case(
            f"data/unique/2^{int(np.log2(n_sort))}",
            "data",
            "Melem/s",
            n_sort,
            impls("np.sort(ops.unique_values(ints))", "np.unique(ints)", "torch.unique(tints)"),
            "int32 drawn from 1000 values (ctensor's result sorted for the check; the sort of "
            "1000 values is timed with it)" + quadratic.format("unique_values"),
            exact,
        ),
    ]
