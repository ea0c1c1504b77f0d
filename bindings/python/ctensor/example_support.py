"""What the training examples share, whatever framework runs them.

- ``digits_arrays``: scikit-learn's bundled digits (no download) as NumPy arrays with a fixed
  stratified split;
- ``index_batches``: the index batches of one epoch, a permutation fixed by (seed, epoch);
- ``ctensor_op_set``, ``masked_dropout``: the parts of the models' op sets that are the same
  for every framework (ctensor's namespaces share names, attributes and results);
- ``example_parser``, ``digits_parser``, ``run_example``, ``run_check``, ``compare_losses``,
  ``relative_difference``: the command line of the examples, their training report and their
  ``--check`` mode, which trains the model on ctensor's ops and on the framework's own ops side
  by side in float64 and compares the losses step by step.

Nothing here imports a framework: ``ctensor.torch.models`` and the JAX and MXNet examples
convert the arrays to their own tensors.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

__all__ = [
    "digits_arrays",
    "index_batches",
    "ctensor_op_set",
    "masked_dropout",
    "example_parser",
    "digits_parser",
    "run_example",
    "run_check",
    "compare_losses",
    "relative_difference",
]


def digits_arrays(
    dtype: str | np.dtype = "float32", *, test_size: float = 0.25, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits (1797 images of 8x8) as (x_train, y_train, x_test, y_test):
    images (N, 1, 8, 8) scaled to [0, 1] in ``dtype``, labels int64; a fixed stratified split
    (``seed``): 1347 training and 450 test images with the default ``test_size``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(dtype)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    train, test = train_test_split(
        np.arange(len(labels)), test_size=test_size, random_state=seed, stratify=digits.target
    )
    return images[train], labels[train], images[test], labels[test]


def index_batches(count: int, batch_size: int, epoch: int, seed: int = 0) -> list[np.ndarray]:
    """Index batches (int64) of one epoch over ``count`` samples: a permutation fixed by
    (seed, epoch), cut into full batches (the remainder is dropped, so every step has the same
    shape, and a jitted step compiles once)."""
    order = np.random.default_rng(seed * 1_000_003 + epoch).permutation(count)
    return [order[i : i + batch_size] for i in range(0, count - batch_size + 1, batch_size)]


def ctensor_op_set(ops: Any, name: str, **more: Callable) -> SimpleNamespace:
    """The models' op set on a ctensor namespace (``ctensor.jax``, ``ctensor.mxnet``,
    ``torch.ops.ctensor``): conv2d, relu, max_pool2d, linear, cross_entropy and dropout (its
    first result) with the signatures the models call, plus the functions in ``more``."""

    def dropout(x: Any, p: float, seed: Any, offset: Any, training: bool) -> Any:
        return ops.dropout(x, p=p, seed=seed, offset=offset, training=training)[0]

    return SimpleNamespace(
        name=name,
        conv2d=lambda x, weight, bias, padding: ops.conv2d(x, weight, bias, padding=[padding] * 2),
        relu=lambda x: ops.relu(x),
        max_pool2d=lambda x, size: ops.max_pool2d(x, kernel_size=[size, size]),
        linear=lambda x, weight, bias: ops.linear(x, weight, bias),
        cross_entropy=lambda logits, target: ops.cross_entropy(logits, target),
        dropout=dropout,
        **more,
    )


def masked_dropout(
    keep_mask: Callable[[Any, float, Any, Any], Any], cast: Callable[[Any, Any], Any]
) -> Callable[..., Any]:
    """A reference op set's dropout ``(x, p, seed, offset, training)``: the mask that
    ``keep_mask(x, p, seed, offset)`` gives (ctensor's, for the same seed and offset), cast to
    x's dtype by ``cast(mask, x)``, applied with the framework's arithmetic
    (``x * mask * (1 / (1 - p))``); x itself outside training or for p = 0."""

    def dropout(x: Any, p: float, seed: Any, offset: Any, training: bool) -> Any:
        if not training or p == 0.0:
            return x
        return x * cast(keep_mask(x, p, seed, offset), x) * (1.0 / (1.0 - p))

    return dropout


def example_parser(
    description: str, *, quick: str, check_steps: int, reference: str
) -> argparse.ArgumentParser:
    """The options the training examples take: ``--quick`` (``quick`` says what it does),
    ``--dtype``, ``--check`` (float64 losses against ``reference``, the framework's own ops),
    ``--check-steps`` (default ``check_steps``), ``--threads`` (the framework's CPU threads) and
    ``--seed``; each example adds its own ``--steps``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--check", action="store_true", help=f"float64 loss vs {reference}")
    parser.add_argument("--check-steps", type=int, default=check_steps)
    parser.add_argument("--threads", type=int, default=None, help="the framework's CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    return parser


def digits_parser(description: str, reference: str) -> argparse.ArgumentParser:
    """``example_parser`` of the digits examples (``--quick``: 20 steps, 10 checked; 50 checked
    steps by default; ``reference``: the framework's own ops) with ``--epochs`` (21 steps each)
    and ``--steps`` (stop early), the options ``run_example`` reads."""
    parser = example_parser(
        description, quick="20 steps (and --check: 10)", check_steps=50, reference=reference
    )
    parser.add_argument("--epochs", type=int, default=20, help="epochs (21 steps each)")
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    return parser


def run_example(
    args: argparse.Namespace,
    check: Callable[[int, int], list[float]],
    train: Callable[..., dict],
    tolerance: float,
    dtype: Any = None,
) -> int:
    """The end of an example's ``main()`` once ``args`` (``example_parser``'s, plus ``--epochs``
    and ``--steps``) are parsed and the framework is set up: ``--quick`` (20 steps, at most 10
    checked), then ``--check`` (``run_check`` with ``tolerance``), or else
    ``train(dtype, epochs=, steps=, seed=)`` (``dtype``: ``args.dtype`` unless given) and its
    report (the loss, seconds, compilations of the step where the result counts them, test
    accuracy). Returns the exit status."""
    if args.quick:
        args.steps = 20 if args.steps is None else args.steps
        args.check_steps = min(args.check_steps, 10)

    if args.check:
        return run_check(check, args.check_steps, args.seed, tolerance)

    result = train(
        args.dtype if dtype is None else dtype, epochs=args.epochs, steps=args.steps, seed=args.seed
    )
    losses = result["losses"]
    print(f"steps: {len(losses)}, loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    print(f"train time: {result['seconds']:.1f} s")
    if "compilations" in result:
        print(f"training step compiled: {result['compilations']} time(s)")
    print(f"test accuracy: {result['accuracy']:.4f}")
    return 0


def compare_losses(
    steps: int,
    batches: Callable[[int], list],
    step_losses: Callable[[Any, int], Sequence[float]],
) -> list[float]:
    """The relative difference of two models' losses at each of the first ``steps`` training
    steps: ``batches(epoch)`` gives one epoch's index batches, ``step_losses(batch, offset)``
    trains both models one step on a batch (``offset``: the step number, dropout's offset) and
    returns their two losses."""
    differences: list[float] = []
    epoch = 0
    while len(differences) < steps:
        for batch in batches(epoch):
            if len(differences) == steps:
                break
            differences.append(relative_difference(*step_losses(batch, len(differences))))
        epoch += 1
    return differences


def run_check(check: Callable[[int, int], list[float]], steps: int, seed: int, limit: float) -> int:
    """Runs an example's ``check(steps, seed)`` (the relative loss differences per step),
    prints the worst one, and returns the exit status: 1 when it is above ``limit``."""
    start = time.perf_counter()
    differences = check(steps, seed)
    worst = max(differences)
    print(
        f"check: {len(differences)} steps, float64, worst relative loss difference "
        f"{worst:.3e} (step {differences.index(worst)}), {time.perf_counter() - start:.1f} s"
    )
    return 0 if worst <= limit else 1


def relative_difference(a: float, b: float) -> float:
    """|a - b| / max(|a|, |b|), 0 when both are 0."""
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale
