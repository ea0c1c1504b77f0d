"""ctensor as torch ops (``ctensor.torch``): the per-call overhead of ``torch.ops.ctensor.add``
on 8 floats against ``torch.add`` and against ``torch.ops.aten.add.Tensor`` (torch's own op
through the same ``torch.ops`` calling path), and a training step of the digits CNN
(``ctensor.torch.models.DigitsCNN``, batch 64 of 8 x 8 images: forward, backward and an SGD
step) built from ``torch.ops.ctensor`` ops under ``torch.compile(fullgraph=True)``, against
the same model on torch's own ops, eager and compiled.

Implementations beside ``ctensor``: ``torch`` (torch's own op, or the model on torch's ops in
eager mode), ``torch.aten`` (``torch.ops.aten.add.Tensor``) and ``torch.compile`` (the model on
torch's ops, compiled). The models start from the same parameters and take the same batch and
dropout mask (ctensor's, for both op sets), so the first step's loss is checked against both
torch models; the steps timed after it keep training each model on that batch.
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


def _training(env: Env) -> Case:
    torch = env.torch
    from ctensor.torch import models

    with torch.random.fork_rng():
        torch.manual_seed(0)
        state = models.DigitsCNN(models.TORCH_OPS).state_dict()

    def train_step(ops: Any, compiled: bool) -> Any:
        model = models.DigitsCNN(ops)
        model.load_state_dict(state)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        return models.make_train_step(model, optimizer, compile=compiled)

    ns = {
        "x": torch.from_numpy(env.normal((_BATCH, 1, 8, 8))),
        "target": torch.from_numpy(env.rng.integers(0, _CLASSES, _BATCH).astype(np.int64)),
        "ct_step": train_step(models.CTENSOR_OPS, True),
        "eager_step": train_step(models.TORCH_OPS, False),
        "compiled_step": train_step(models.TORCH_OPS, True),
    }
    return Case(
        name="torch/digits_cnn/train_step",
        group="torch",
        unit="steps/s",
        work=1.0,
        impls={
            "ctensor": Impl("ct_step(x, target, 0)", ns),
            "torch": Impl("eager_step(x, target, 0)", ns),
            "torch.compile": Impl("compiled_step(x, target, 0)", ns),
        },
        description="ctensor.torch.models.DigitsCNN training step (batch 64 of 1x8x8, forward "
        "+ backward + SGD, dropout on): torch.ops.ctensor ops under "
        "torch.compile(fullgraph=True) against torch's own ops, eager (torch) and compiled "
        "(torch.compile)",
        reference={"torch": (1e-4, 1e-5), "torch.compile": (1e-4, 1e-5)},
        targets=[Target("<= 1.0x torch eager step time", "speedup", "torch", 1.0)],
    )


def build(env: Env) -> list[Case]:
    if env.torch is None:
        return []
    import ctensor.torch  # noqa: F401 - registers torch.ops.ctensor

    return [_overhead(env), _training(env)]
