"""ctensor's operators as JAX functions that run under ``jax.jit``, ``vmap`` and ``grad``.

``ctensor.jax.<name>(*arrays, **attrs)`` for every operator of the registry, with
``ctensor.ops``'s calling convention (without ``out=``). Shape-static and workspace operators
(forward and backward) are XLA custom calls (the ``ctensor_op`` FFI target, a C++ handler built
with ctensor against jaxlib's FFI headers): output shapes and dtypes come from ``ct_op_infer``
at trace time, attributes travel as FFI attributes, workspace comes from XLA's scratch
allocator, and on CUDA the call runs on XLA's stream. Dynamic operators run eagerly on concrete
arrays and raise :class:`TracingError` under tracing. Plain ``ctensor.ops`` calls whose inputs
are JAX tracers are routed here, so they work inside ``jax.jit`` too. docs/jax.md has the
details (vmap rules, dtypes, the FFI version).

Importing this module registers the target with JAX; it raises ImportError when ctensor was
built without the handler (jaxlib's headers were not found at build time).
"""

from __future__ import annotations

from typing import Any

from .._errors import BackendUnavailableError
from ._xla import api_version, ensure_registered

try:
    ensure_registered()
except BackendUnavailableError as error:
    raise ImportError(str(error)) from error

from ._call import TracingError, call, vmap_method  # noqa: E402
from ._ops import build_all as _build_all  # noqa: E402

_OPS = _build_all()
globals().update(_OPS)
__all__ = sorted(_OPS) + ["TracingError", "api_version", "call", "vmap_method"]


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"module 'ctensor.jax' has no attribute {name!r}")
    from .._ops import unknown_op

    raise unknown_op(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_OPS))
