"""What the tests of the training examples share: the examples' folder, loading an example as a
module, and the ctensor ops that the digits CNN's forward and backward run (whatever framework
traces it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: The ctensor ops of the digits CNN's forward.
DIGITS_FORWARD = frozenset({"conv2d", "relu", "max_pool2d", "dropout", "linear", "cross_entropy"})

#: The ctensor ops of its backward (the gradient registry's).
DIGITS_BACKWARD = frozenset(
    {
        "conv2d_backward_input",
        "conv2d_backward_weight",
        "relu_backward",
        "max_pool2d_backward",
        "dropout_backward",
        "matmul_backward",
        "cross_entropy_backward",
    }
)


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` as a module (the examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
