"""Train a small CNN on scikit-learn's digits where every operator is a ``torch.ops.ctensor`` op.

The model (``ctensor.torch.models.DigitsCNN``: conv2d, relu, max_pool2d, dropout, linear,
cross_entropy) runs its forward and loss under ``torch.compile(fullgraph=True)``; its backward
is the compiled backward graph, made of the ctensor ops of the gradient registry; a torch
optimizer (Adam) updates the weights. The data is ``sklearn.datasets.load_digits`` (bundled, no
download) with a fixed stratified split (1347 train, 450 test images) and fixed seeds.

    python examples/torch_train_digits.py             # train, print the test accuracy
    python examples/torch_train_digits.py --check     # float64: loss per step vs torch's ops
    python examples/torch_train_digits.py --quick     # a few steps (the tests)

``--check`` trains the same model built from torch's own ops (``TORCH_OPS``: same initial
weights, same batches, the same dropout mask drawn from ctensor's Philox stream, all arithmetic
torch's) side by side in float64 and prints the worst relative difference of the losses over
the first ``--check-steps`` steps; it exits with status 1 above 1e-9.
"""

from __future__ import annotations

import sys
import time

import torch

from ctensor.example_support import compare_losses, digits_parser, run_example
from ctensor.torch.models import (
    CTENSOR_OPS,
    TORCH_OPS,
    DigitsCNN,
    digits_batches,
    digits_split,
    make_train_step,
)

BATCH = 64
LEARNING_RATE = 3e-3
TOLERANCE = 1e-9


def build(ops, dtype: torch.dtype, seed: int) -> DigitsCNN:  # noqa: ANN001
    """The CNN on ``ops`` with the initial weights that ``seed`` gives."""
    torch.manual_seed(seed)
    return DigitsCNN(ops, seed=seed).to(dtype)


def accuracy(model: DigitsCNN, images: torch.Tensor, labels: torch.Tensor) -> float:
    """Share of correctly classified images (eval mode: no dropout)."""
    model.eval()
    with torch.no_grad():
        predicted = model(images).argmax(dim=1)
    model.train()
    return (predicted == labels).double().mean().item()


def train(
    dtype: torch.dtype = torch.float32, *, epochs: int = 20, steps: int | None = None, seed: int = 0
) -> dict:
    """Trains the ctensor model; returns its losses per step, test accuracy and seconds."""
    x_train, y_train, x_test, y_test = digits_split(dtype, seed=seed)
    model = build(CTENSOR_OPS, dtype, seed)
    step = make_train_step(model, torch.optim.Adam(model.parameters(), lr=LEARNING_RATE))
    losses: list[float] = []
    start = time.perf_counter()
    for epoch in range(epochs):
        for batch in digits_batches(len(y_train), BATCH, epoch, seed):
            if steps is not None and len(losses) == steps:
                break
            losses.append(step(x_train[batch], y_train[batch], len(losses)).item())
    seconds = time.perf_counter() - start
    return {
        "losses": losses,
        "accuracy": accuracy(model, x_test, y_test),
        "seconds": seconds,
    }


def check(steps: int = 50, seed: int = 0) -> list[float]:
    """Relative difference of the float64 loss at each of the first ``steps`` steps between the
    compiled ctensor model and the same model on torch's own ops (eager)."""
    dtype = torch.float64
    x_train, y_train, _, _ = digits_split(dtype, seed=seed)
    models = [build(CTENSOR_OPS, dtype, seed), build(TORCH_OPS, dtype, seed)]
    models[1].load_state_dict(models[0].state_dict())
    train_steps = [
        make_train_step(model, torch.optim.Adam(model.parameters(), lr=LEARNING_RATE), compile=c)
        for model, c in zip(models, (True, False), strict=True)
    ]

    def step_losses(batch: torch.Tensor, offset: int) -> list[float]:
        return [s(x_train[batch], y_train[batch], offset).item() for s in train_steps]

    return compare_losses(
        steps, lambda epoch: digits_batches(len(y_train), BATCH, epoch, seed), step_losses
    )


def main(argv: list[str] | None = None) -> int:
    parser = digits_parser(__doc__.split("\n\n")[0], reference="torch's own ops")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    return run_example(args, check, train, TOLERANCE, getattr(torch, args.dtype))


if __name__ == "__main__":
    sys.exit(main())
