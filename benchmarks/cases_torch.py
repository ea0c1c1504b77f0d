"""ctensor as torch ops (``ctensor.torch``): the per-call overhead of ``torch.ops.ctensor.add``
on 8 floats against ``torch.add`` and against ``torch.ops.aten.add.Tensor`` (torch's own op
through the same ``torch.ops`` calling path), and a training step of a small CNN on 8 x 8 digit
images (batch 64: forward, backward and an SGD step) built from ``torch.ops.ctensor`` ops under
``torch.compile(fullgraph=True)``, against the same model on torch's own ops, eager and
compiled.

Implementations beside ``ctensor``: ``torch`` (torch's own op, or the model on torch's ops in
eager mode), ``torch.aten`` (``torch.ops.aten.add.Tensor``) and ``torch.compile`` (the model on
torch's ops, compiled). The models start from the same parameters and take the same batch, so
the first step's loss is checked against both torch models; the steps timed after it keep
training each model on that batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .case import Case, Impl, Target
from .env import Env

__all__ = ["build"]

_BATCH = 64
_CLASSES = 10


def _overhead(env: Env) -> Case:
    torch = env.torch
    a = torch.linspace(0.5, 1.5, 8)
    b = a.flip(0).contiguous()
    ns = {
        "torch": torch,
        "ct_add": torch.ops.ctensor.add.default,
        "aten_add": torch.ops.aten.add.Tensor,
        "a": a,
        "b": b,
    }
    return Case(
        name="torch/overhead/add/8",
        group="torch",
        unit="ns",
        work=0.0,
        impls={
            "ctensor": Impl("ct_add(a, b)", ns),
            "torch": Impl("torch.add(a, b)", ns),
            "torch.aten": Impl("aten_add(a, b)", ns),
        },
        description="torch.ops.ctensor.add.default on 8 floats (a new result) against "
        "torch.add and torch.ops.aten.add.Tensor",
        reference={"torch": (1e-6, 1e-6), "torch.aten": (1e-6, 1e-6)},
        targets=[Target("<= 1.5x torch.add time", "speedup", "torch", 1 / 1.5)],
    )


def _torch_ops(torch: Any) -> Any:
    """The layers the digits model uses, as torch's own functions."""
    functional = torch.nn.functional

    class TorchOps:
        @staticmethod
        def conv2d(x: Any, w: Any, b: Any) -> Any:
            return functional.conv2d(x, w, b, padding=1)

        @staticmethod
        def max_pool2d(x: Any) -> Any:
            return functional.max_pool2d(x, 2)

        relu = staticmethod(functional.relu)
        linear = staticmethod(functional.linear)
        cross_entropy = staticmethod(functional.cross_entropy)

    return TorchOps


def _ctensor_ops(torch: Any) -> Any:
    """The same layers as ``torch.ops.ctensor`` ops."""
    ct = torch.ops.ctensor

    class CtensorOps:
        @staticmethod
        def conv2d(x: Any, w: Any, b: Any) -> Any:
            return ct.conv2d(x, w, b, padding=[1, 1])

        @staticmethod
        def max_pool2d(x: Any) -> Any:
            return ct.max_pool2d(x, kernel_size=[2, 2])

        relu = staticmethod(ct.relu)
        linear = staticmethod(ct.linear)
        cross_entropy = staticmethod(ct.cross_entropy)

    return CtensorOps


def _digits_cnn(torch: Any, ops: Any, parameters: list) -> Any:
    """conv 1->16 3x3 (padding 1), relu, 2x2 max pool, conv 16->32, relu, max pool, linear
    128->64, relu, linear 64->10, cross entropy, on ``ops``' functions; the parameters are
    copies of ``parameters``."""

    class DigitsCNN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.params = torch.nn.ParameterList(
                [torch.nn.Parameter(p.clone()) for p in parameters]
            )

        def forward(self, x: Any, target: Any) -> Any:
            w1, b1, w2, b2, w3, b3, w4, b4 = self.params
            h = ops.max_pool2d(ops.relu(ops.conv2d(x, w1, b1)))
            h = ops.max_pool2d(ops.relu(ops.conv2d(h, w2, b2)))
            h = ops.relu(ops.linear(h.flatten(1), w3, b3))
            return ops.cross_entropy(ops.linear(h, w4, b4), target)

    return DigitsCNN()


def _train_step(torch: Any, model: Any, compiled: bool) -> Any:
    """One training step of ``model`` (its forward compiled with fullgraph=True or eager):
    returns the loss before the SGD update."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    forward = torch.compile(model, fullgraph=True) if compiled else model

    def step(x: Any, target: Any) -> Any:
        optimizer.zero_grad(set_to_none=True)
        loss = forward(x, target)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def _training(env: Env) -> Case:
    torch = env.torch
    shapes = [(16, 1, 3, 3), (16,), (32, 16, 3, 3), (32,), (64, 128), (64,), (10, 64), (10,)]
    fan_in = [9, 9, 144, 144, 128, 128, 64, 64]
    parameters = [
        torch.from_numpy(env.normal(shape) / np.float32(np.sqrt(fan)))
        for shape, fan in zip(shapes, fan_in, strict=True)
    ]
    ct_ops, torch_ops = _ctensor_ops(torch), _torch_ops(torch)
    ns = {
        "x": torch.from_numpy(env.normal((_BATCH, 1, 8, 8))),
        "target": torch.from_numpy(env.rng.integers(0, _CLASSES, _BATCH).astype(np.int64)),
        "ct_step": _train_step(torch, _digits_cnn(torch, ct_ops, parameters), True),
        "eager_step": _train_step(torch, _digits_cnn(torch, torch_ops, parameters), False),
        "compiled_step": _train_step(torch, _digits_cnn(torch, torch_ops, parameters), True),
    }
    return Case(
        name="torch/digits_cnn/train_step",
        group="torch",
        unit="steps/s",
        work=1.0,
        impls={
            "ctensor": Impl("ct_step(x, target)", ns),
            "torch": Impl("eager_step(x, target)", ns),
            "torch.compile": Impl("compiled_step(x, target)", ns),
        },
        description="digits CNN training step (batch 64 of 1x8x8, forward + backward + SGD): "
        "torch.ops.ctensor ops under torch.compile(fullgraph=True) against torch's own ops, "
        "eager (torch) and compiled (torch.compile)",
        reference={"torch": (1e-4, 1e-5), "torch.compile": (1e-4, 1e-5)},
        targets=[Target("<= 1.0x torch eager step time", "speedup", "torch", 1.0)],
    )


def build(env: Env) -> list[Case]:
    if env.torch is None:
        return []
    import ctensor.torch  # noqa: F401 - registers torch.ops.ctensor

    return [_overhead(env), _training(env)]
