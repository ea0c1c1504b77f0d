"""Makes ``torch.compile`` trace plain ``ctensor.ops`` calls without an import of ctensor.torch.

Dynamo learns how to trace ``ctensor.ops`` calls from the polyfills of ``ctensor.torch._compile``,
which must be registered before it traces the first one. Registering needs ``torch._dynamo``,
which ``import torch`` does not load (importing it costs about a second, so ctensor never imports
it itself): ``install()``, run by ``import ctensor``, registers at once when ``torch._dynamo`` is
already loaded, and otherwise registers right after it is (``torch.compile`` imports it), by a
finder on ``sys.meta_path`` that only answers for ``torch._dynamo`` and removes itself then.
Either way the import order of torch and ctensor does not matter, and a program that never
compiles never loads torch._dynamo because of ctensor.

This module imports nothing from torch.
"""

from __future__ import annotations

import importlib.abc
import sys
import warnings
from typing import Any

__all__ = ["install"]

_DYNAMO = "torch._dynamo"


def _register() -> None:
    """Registers ``torch.ops.ctensor`` and the polyfills (torch._dynamo is loaded)."""
    try:
        from .torch._compile import register_polyfills

        register_polyfills()
    except Exception as error:  # noqa: BLE001 - never break torch's own import
        warnings.warn(
            f"ctensor could not register its torch.compile support ({error!r}); plain "
            "ctensor.ops calls will graph-break under torch.compile",
            RuntimeWarning,
            stacklevel=2,
        )


class _DynamoFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``torch._dynamo`` is imported, it asks the other finders for
    its spec and runs ``_register`` after the module has executed."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _DYNAMO:
            return None
        _uninstall(self)
        spec = None
        for finder in sys.meta_path:  # the finders after this one, as the import would ask
            find = getattr(finder, "find_spec", None)
            if find is not None:
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module: Any) -> None:
            exec_module(module)
            _register()

        spec.loader.exec_module = exec_then_register  # this spec's loader is ours alone
        return spec


def _uninstall(finder: _DynamoFinder) -> None:
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)


def install() -> None:
    """Registers now if torch._dynamo is loaded, else once it is."""
    if _DYNAMO in sys.modules:
        _register()
        return
    if not any(isinstance(f, _DynamoFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _DynamoFinder())
