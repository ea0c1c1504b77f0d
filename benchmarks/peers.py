"""The peer libraries: which are installed, and setting every library's thread count.

JAX reads its thread settings from ``XLA_FLAGS`` when it is first imported, so ``configure``
must run before anything imports it. OpenBLAS (NumPy's matmul) is set through threadpoolctl
when installed, else through the ``*openblas*set_num_threads*`` function of the OpenBLAS that
NumPy loaded. The OpenCL device (PoCL in CI, on the same CPU cores) is opened when ctensor is
imported, before any of this runs, so its threads are not set here: PoCL uses every core unless
``POCL_CPU_MAX_CU_NUM`` is set before Python starts; the report records which.
"""

from __future__ import annotations

import ctypes
import importlib
import os
from typing import Any

__all__ = ["configure", "load", "to_numpy"]


def _openblas_threads(n: int) -> str:
    try:
        import threadpoolctl

        threadpoolctl.threadpool_limits(n, user_api="blas")
        return "threadpoolctl"
    except ImportError:
        pass
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        paths = set()
    for path in sorted(paths):
        try:
            blas = ctypes.CDLL(path)
        except OSError:
            continue
        for name in (
            "scipy_openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_",
            "openblas_set_num_threads",
        ):
            setter = getattr(blas, name, None)
            if setter is not None:
                setter(ctypes.c_int(n))
                return name
    return "unchanged"


def configure(threads: int) -> dict[str, str]:
    """Sets ``threads`` for ctensor, OpenBLAS, torch (when installed) and JAX (before import).
    Returns how each library was set, for the report."""
    import numpy  # noqa: F401 - loads OpenBLAS

    import ctensor

    how: dict[str, str] = {}
    ctensor.set_num_threads(threads)
    how["ctensor"] = f"set_num_threads({threads})"
    how["numpy"] = _openblas_threads(threads)
    pocl = os.environ.get("POCL_CPU_MAX_CU_NUM")
    how["opencl"] = f"POCL_CPU_MAX_CU_NUM={pocl}" if pocl else "device default (PoCL: all cores)"
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + f" --xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}"
        + f" intra_op_parallelism_threads={threads}"
    ).strip()
    how["jax"] = "XLA_FLAGS"
    try:
        import torch

        torch.set_num_threads(threads)
        how["torch"] = f"set_num_threads({threads})"
    except ImportError:
        pass
    return how


def load(name: str) -> Any:
    """The module of a peer library, or None when it is not installed (or fails to import)."""
    try:
        return importlib.import_module({"jax": "jax.numpy"}.get(name, name))
    except Exception:  # noqa: BLE001 - a broken install counts as absent
        return None


def to_numpy(value: Any) -> Any:
    """A result of any library as NumPy (tuples element-wise)."""
    import numpy as np

    if isinstance(value, (tuple, list)):
        return tuple(to_numpy(v) for v in value)
    if hasattr(value, "detach"):  # torch
        return value.detach().cpu().numpy()
    return np.asarray(value)
