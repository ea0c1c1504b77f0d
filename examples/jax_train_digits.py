"""Train a small CNN on scikit-learn's digits where every operator is a ``ctensor.jax`` op.

The model (``ctensor.jax.models.digits_cnn``: conv2d, relu, max_pool2d, dropout, linear,
cross_entropy, the CNN of ``examples/torch_train_digits.py``) runs under ``jax.jit``; its
gradient is ``jax.value_and_grad``, whose backward is made of the ctensor.jax ops of the
gradient registry (XLA FFI calls, like the forward); an Adam update in jax.numpy follows, in
the same jitted step. The data is ``sklearn.datasets.load_digits`` (bundled, no download) with
a fixed stratified split (1347 train, 450 test images) and fixed seeds.

    python examples/jax_train_digits.py             # train, print the test accuracy
    python examples/jax_train_digits.py --check     # float64: loss per step vs jax.numpy/lax
    python examples/jax_train_digits.py --quick     # a few steps (the tests)

Dropout's Philox offset is the step number, a traced argument of the jitted step (ctensor.jax
passes value-only attributes such as ``offset`` to the XLA call as operands): every step draws
a new mask, and the step compiles once (the run prints the count).

``--check`` trains the same model built from jax.numpy and jax.lax (``JAX_OPS``: same initial
weights, same batches, the same dropout mask drawn from ctensor's Philox stream, all arithmetic
XLA's) side by side in float64 (``jax_enable_x64``) and prints the worst relative difference of
the losses over the first ``--check-steps`` steps; it exits with status 1 above 1e-9.
"""

from __future__ import annotations

import os
import sys
import time

BATCH = 64
LEARNING_RATE = 3e-3
TOLERANCE = 1e-9


def _parser():  # noqa: ANN202
    from ctensor.example_support import digits_parser

    return digits_parser(__doc__.split("\n\n")[0], reference="jax.numpy/jax.lax")


def train(dtype: str = "float32", *, epochs: int = 20, steps: int | None = None, seed: int = 0):  # noqa: ANN201
    """Trains the ctensor.jax model; returns its losses per step, test accuracy, seconds and
    how many times the training step compiled."""
    import jax
    import jax.numpy as jnp

    from ctensor.example_support import digits_arrays, index_batches
    from ctensor.jax import models

    x_train, y_train, x_test, y_test = digits_arrays(dtype, seed=seed)
    params = models.init_digits_cnn(seed, dtype)
    state = models.adam_init(params)
    step = models.make_train_step(models.CTENSOR_OPS, LEARNING_RATE)
    losses: list[float] = []
    start = time.perf_counter()
    for epoch in range(epochs):
        for batch in index_batches(len(y_train), BATCH, epoch, seed):
            if steps is not None and len(losses) == steps:
                break
            offset = len(losses)  # a new dropout mask each step
            params, state, loss = step(params, state, x_train[batch], y_train[batch], offset)
            losses.append(float(loss))
    seconds = time.perf_counter() - start

    @jax.jit
    def predict(params: dict, images: jax.Array) -> jax.Array:
        logits = models.digits_cnn(models.CTENSOR_OPS, params, images, training=False)
        return jnp.argmax(logits, axis=1)

    predicted = predict(params, jnp.asarray(x_test))
    accuracy = float(jnp.mean(predicted == jnp.asarray(y_test)))
    return {
        "losses": losses,
        "accuracy": accuracy,
        "seconds": seconds,
        "compilations": step._cache_size(),
    }


def check(steps: int = 50, seed: int = 0) -> list[float]:
    """Relative difference of the float64 loss at each of the first ``steps`` steps between the
    ctensor.jax model and the same model on jax.numpy/jax.lax, both jitted (jax_enable_x64
    must be on)."""
    from ctensor.example_support import compare_losses, digits_arrays, index_batches
    from ctensor.jax import models

    x_train, y_train, _, _ = digits_arrays("float64", seed=seed)
    params = models.init_digits_cnn(seed, "float64")
    runs = [
        [models.make_train_step(ops, LEARNING_RATE), params, models.adam_init(params)]
        for ops in (models.CTENSOR_OPS, models.JAX_OPS)
    ]

    def step_losses(batch: object, offset: int) -> list[float]:
        losses = []
        for run in runs:
            step, params, state = run
            run[1], run[2], loss = step(params, state, x_train[batch], y_train[batch], offset)
            losses.append(float(loss))
        return losses

    return compare_losses(
        steps, lambda epoch: index_batches(len(y_train), BATCH, epoch, seed), step_losses
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.threads:
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "")
            + f" --xla_cpu_multi_thread_eigen={'true' if args.threads > 1 else 'false'}"
            + f" intra_op_parallelism_threads={args.threads}"
        ).strip()
        import ctensor

        ctensor.set_num_threads(args.threads)
    import jax

    if args.check or args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    from ctensor.example_support import run_example

    return run_example(args, check, train, TOLERANCE)


if __name__ == "__main__":
    sys.exit(main())
