"""ctensor's side-by-side benchmark harness: ``python -m ctensor.bench``.

Each case runs ctensor (its CPU backend, and its OpenCL backend's device beside it as
``ctensor.opencl`` when that backend is loaded) and its peers (NumPy, torch CPU, JAX where
installed) interleaved in one run, next to the machine's own limits measured in the same run
(STREAM copy/add/read and FMA peak kernels built from ``machine_limits.c`` with the system C
compiler). Every ctensor result is checked against the peers' before it is timed. The harness
prints a table of medians, speedups and the performance targets (met or missed), writes JSON and
draws PNG charts (matplotlib, the ``bench`` extra). See ``python -m ctensor.bench --help``.
"""

from __future__ import annotations

from .main import main, run

__all__ = ["main", "run"]
