"""What the case builders share: the libraries, the machine kernels, the size mode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Env"]


@dataclass
class Env:
    """Libraries (``torch``/``jnp`` are None when not installed), the machine-limit kernels
    (None when they could not be built), whether sizes are the --quick ones and the OpenCL
    device (None when ctensor's OpenCL backend is not loaded; see opencl.py)."""

    ctensor: Any
    ops: Any
    torch: Any
    jax: Any
    jnp: Any
    machine: Any
    quick: bool
    rng: np.random.Generator
    opencl: Any = None

    def normal(self, shape: tuple, dtype: Any = np.float32) -> np.ndarray:
        return self.rng.standard_normal(shape, dtype=np.float32).astype(dtype, copy=False)

    def t(self, array: np.ndarray) -> Any:
        """A torch tensor sharing ``array``'s memory."""
        return self.torch.from_numpy(array)

    def j(self, array: np.ndarray) -> Any:
        """A JAX array holding a copy of ``array``, ready on the device."""
        return self.jnp.asarray(array).block_until_ready()

    def jit(self, fn: Any) -> Any:
        """``fn`` compiled by JAX, returning a value already computed (block_until_ready)."""
        compiled = self.jax.jit(fn)
        return lambda *args: compiled(*args).block_until_ready()

    def opencl_expr(self, op: str, expr: str) -> str | None:
        """The ``ctensor.opencl`` implementation ``expr`` (a call of ``op`` on DeviceArrays)
        wrapped in ``sync(...)``, so that evaluating it waits for the device; None when there is
        no OpenCL device or its backend does not register ``op``."""
        if self.opencl is None or not self.opencl.supports(op):
            return None
        return f"sync({expr})"

    def opencl_arrays(
        self, namespace: dict, outputs: dict[str, np.ndarray] | None = None, **arrays: np.ndarray
    ) -> None:
        """With an OpenCL device: adds ``sync``, a DeviceArray copy of each of ``arrays`` and an
        uninitialised DeviceArray shaped like each of ``outputs`` (out= buffers) to
        ``namespace``, under their keyword names. Without one: nothing."""
        if self.opencl is None:
            return
        namespace["sync"] = self.opencl.sync
        for name, array in arrays.items():
            namespace[name] = self.opencl.upload(array)
        for name, array in (outputs or {}).items():
            namespace[name] = self.opencl.empty_like(array)
