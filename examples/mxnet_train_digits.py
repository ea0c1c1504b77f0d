"""Train a small CNN on scikit-learn's digits where every operator is a ``ctensor.mxnet`` op.

The model (``ctensor.mxnet.models.digits_cnn``: conv2d, relu, max_pool2d, dropout, linear,
cross_entropy) runs each operator as an MXNet custom operator in MXNet's engine, recorded by
``mx.autograd.record()``; ``loss.backward()`` runs the gradient registry's steps (ctensor ops);
Adam updates the weights in MXNet (``mx.nd.adam_update``). The data is
``sklearn.datasets.load_digits`` (bundled, no download) with a fixed stratified split (1347
train, 450 test images) and fixed seeds.

    python examples/mxnet_train_digits.py             # train, print the test accuracy
    python examples/mxnet_train_digits.py --check     # float64: loss per step vs MXNet's ops
    python examples/mxnet_train_digits.py --quick     # a few steps (the tests)

``--check`` trains the same model built from MXNet's own ops (``MXNET_OPS``: Convolution,
Pooling, FullyConnected, log_softmax and pick; same initial weights, same batches, the same
dropout mask drawn from ctensor's Philox stream) side by side in float64 and prints the worst
relative difference of the losses over the first ``--check-steps`` steps; it exits with status
1 above 1e-9.
"""

from __future__ import annotations

import sys
import time

import mxnet as mx

import ctensor
from ctensor.example_support import (
    compare_losses,
    digits_arrays,
    digits_parser,
    index_batches,
    run_example,
)
from ctensor.mxnet.models import (
    CTENSOR_OPS,
    MXNET_OPS,
    Adam,
    digits_cnn,
    digits_loss,
    init_weights,
)

BATCH = 64
LEARNING_RATE = 3e-3
TOLERANCE = 1e-9


def build(dtype: str, seed: int) -> dict:
    """The model's weights as NDArrays with gradients attached."""
    weights = {name: mx.nd.array(w, dtype=dtype) for name, w in init_weights(dtype, seed).items()}
    for weight in weights.values():
        weight.attach_grad()
    return weights


def data(dtype: str, seed: int) -> tuple:
    return tuple(
        mx.nd.array(a, dtype=a.dtype) for a in digits_arrays(dtype, seed=seed)
    )  # images in dtype, labels int64


def train_step(ops, weights: dict, optimizer: Adam, images, labels, offset: int) -> float:  # noqa: ANN001
    """One step: forward and loss under autograd, backward, Adam; returns the loss."""
    with mx.autograd.record():
        loss = digits_loss(ops, weights, images, labels, offset)
    loss.backward()
    optimizer.step()
    return float(loss.asscalar())


def accuracy(ops, weights: dict, images, labels) -> float:  # noqa: ANN001
    """Share of correctly classified images (no dropout)."""
    logits = digits_cnn(ops, weights, images, training=False)
    predicted = logits.asnumpy().argmax(axis=1)
    return float((predicted == labels.asnumpy()).mean())


def train(
    dtype: str = "float32", *, epochs: int = 20, steps: int | None = None, seed: int = 0
) -> dict:
    """Trains the ctensor model; returns its losses per step, test accuracy and seconds."""
    x_train, y_train, x_test, y_test = data(dtype, seed)
    weights = build(dtype, seed)
    optimizer = Adam(weights, lr=LEARNING_RATE)
    losses: list[float] = []
    start = time.perf_counter()
    for epoch in range(epochs):
        for batch in index_batches(len(y_train), BATCH, epoch, seed):
            if steps is not None and len(losses) == steps:
                break
            index = mx.nd.array(batch, dtype="int64")
            images, labels = x_train.take(index), y_train.take(index)
            losses.append(train_step(CTENSOR_OPS, weights, optimizer, images, labels, len(losses)))
    seconds = time.perf_counter() - start
    return {
        "losses": losses,
        "accuracy": accuracy(CTENSOR_OPS, weights, x_test, y_test),
        "seconds": seconds,
    }


def check(steps: int = 50, seed: int = 0) -> list[float]:
    """Relative difference of the float64 loss at each of the first ``steps`` steps between the
    ctensor model and the same model on MXNet's own ops."""
    x_train, y_train, _, _ = data("float64", seed)
    models = [(ops, build("float64", seed)) for ops in (CTENSOR_OPS, MXNET_OPS)]
    optimizers = [Adam(weights, lr=LEARNING_RATE) for _, weights in models]

    def step_losses(batch: object, offset: int) -> list[float]:
        index = mx.nd.array(batch, dtype="int64")
        images, labels = x_train.take(index), y_train.take(index)
        return [
            train_step(ops, weights, optimizer, images, labels, offset)
            for (ops, weights), optimizer in zip(models, optimizers, strict=True)
        ]

    return compare_losses(
        steps, lambda epoch: index_batches(len(y_train), BATCH, epoch, seed), step_losses
    )


def main(argv: list[str] | None = None) -> int:
    parser = digits_parser(__doc__.split("\n\n")[0], reference="MXNet's own ops")
    args = parser.parse_args(argv)
    if args.threads:
        ctensor.set_num_threads(args.threads)  # ctensor's kernels (MXNet's own: its settings)
    return run_example(args, check, train, TOLERANCE)


if __name__ == "__main__":
    sys.exit(main())
