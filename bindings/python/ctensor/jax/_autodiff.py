"""Gradients of the ``ctensor.jax`` functions.

``differentiable(name, raw_fn)`` gives the public function of operator ``name`` from its raw
function (``_ops``). This placeholder returns ``raw_fn`` unchanged; the gradient registry's
``jax.custom_vjp`` rules replace it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["differentiable"]


def differentiable(name: str, raw_fn: Callable[..., Any]) -> Callable[..., Any]:
    """The public function of operator ``name`` (today: ``raw_fn`` itself)."""
    return raw_fn
