"""What the case builders share: the libraries, the machine kernels, the size mode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Env"]


@dataclass
class Env:
    """Libraries (``torch``/``jnp`` are None when not installed), the machine-limit kernels
    (None when they could not be built) and whether sizes are the --quick ones."""

    ctensor: Any
    ops: Any
    torch: Any
    jax: Any
    jnp: Any
    machine: Any
    quick: bool
    rng: np.random.Generator

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
