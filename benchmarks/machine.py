"""The machine's own limits, measured in the same run as the operators.

``machine_limits.c`` (next to this file) is compiled at run time with the system C compiler
(``$CC`` or ``cc``, ``-O3 -march=native -fopenmp``) into a cache directory and loaded with
ctypes. It gives STREAM-style copy, add and read kernels and an FMA-peak kernel; the harness
times them like any other case, so their medians come from the same conditions.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["MachineKernels", "BuildError", "build"]

_SOURCE = Path(__file__).with_name("machine_limits.c")
_FLAGS = ["-O3", "-march=native", "-ffp-contract=fast", "-fopenmp", "-shared", "-fPIC"]


class BuildError(RuntimeError):
    """The C compiler could not build the machine-limit kernels."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "ctensor-bench"
    try:
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError:
        return Path(tempfile.mkdtemp(prefix="ctensor-bench-"))


def build(compiler: str | None = None) -> Path:
    """Compiles machine_limits.c (once per source, compiler and flags) and returns the library."""
    cc = shlex.split(compiler or os.environ.get("CC") or "cc")
    source = _SOURCE.read_bytes()
    key = hashlib.sha256(source + " ".join(cc + _FLAGS).encode()).hexdigest()[:16]
    target = _cache_dir() / f"machine_limits-{key}.so"
    if target.exists():
        return target
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    command = [*cc, *_FLAGS, str(_SOURCE), "-o", str(partial)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as e:
        raise BuildError(f"cannot run {cc[0]!r}: {e}") from e
    if result.returncode != 0:
        raise BuildError(f"{' '.join(command)} failed:\n{result.stderr.strip()}")
    os.replace(partial, target)
    return target


class MachineKernels:
    """ctypes handles on the built kernels."""

    def __init__(self, path: Path | None = None, threads: int = 0):
        self.path = path or build()
        lib = ctypes.CDLL(str(self.path))
        f32p = ctypes.POINTER(ctypes.c_float)
        lib.ml_set_threads.argtypes = [ctypes.c_int]
        lib.ml_copy.argtypes = [f32p, f32p, ctypes.c_int64]
        lib.ml_add.argtypes = [f32p, f32p, f32p, ctypes.c_int64]
        lib.ml_read.argtypes = [f32p, ctypes.c_int64]
        lib.ml_read.restype = ctypes.c_float
        lib.ml_fma_peak.argtypes = [ctypes.c_int64, f32p]
        lib.ml_fma_peak.restype = ctypes.c_double
        lib.ml_set_threads(threads)
        self._lib = lib
        self._sink = ctypes.c_float(0.0)
        self._f32p = f32p

    def _ptr(self, array: np.ndarray):  # noqa: ANN202
        if array.dtype != np.float32 or not array.flags.c_contiguous:
            raise ValueError("the machine kernels take contiguous float32 arrays")
        return array.ctypes.data_as(self._f32p)

    def copy(self, dst: np.ndarray, src: np.ndarray):  # noqa: ANN201
        """A no-argument callable running dst[:] = src."""
        fn, d, s, n = self._lib.ml_copy, self._ptr(dst), self._ptr(src), src.size
        return lambda: fn(d, s, n)

    def add(self, dst: np.ndarray, a: np.ndarray, b: np.ndarray):  # noqa: ANN201
        """A no-argument callable running dst[:] = a + b."""
        fn, d, x, y, n = self._lib.ml_add, self._ptr(dst), self._ptr(a), self._ptr(b), a.size
        return lambda: fn(d, x, y, n)

    def read(self, src: np.ndarray):  # noqa: ANN201
        """A no-argument callable summing src (one read stream)."""
        fn, s, n = self._lib.ml_read, self._ptr(src), src.size
        return lambda: fn(s, n)

    def fma_flops(self, iters: int) -> float:
        """Runs the FMA-peak kernel for ``iters`` rounds; returns the flops it did."""
        return float(self._lib.ml_fma_peak(iters, ctypes.byref(self._sink)))

    def fma(self, iters: int):  # noqa: ANN201
        """A no-argument callable running the FMA-peak kernel."""
        fn, sink = self._lib.ml_fma_peak, ctypes.byref(self._sink)
        return lambda: fn(iters, sink)
