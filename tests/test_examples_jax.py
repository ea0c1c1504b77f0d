"""The JAX example: examples/jax_train_digits.py and ctensor.jax.models.

The jitted training step's loss and gradient are XLA FFI calls of ctensor operators only (plus
the reshape of the model's flatten, a view, and its cotangent's); the CNN reaches 97 % test
accuracy on scikit-learn's digits; in float64 its loss matches the same model on
jax.numpy/jax.lax step by step; the command line runs.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
from examples_support import DIGITS_BACKWARD, DIGITS_FORWARD, EXAMPLES, load_example

from ctensor.example_support import digits_arrays
from ctensor.jax import models
from ctensor.jax.models import CTENSOR_OPS, JAX_OPS, model_primitives

digits = load_example("jax_train_digits")

#: Primitives that are not ctensor operators but carry no arithmetic: the model's flatten (a
#: reshape of a row-major array) and the same reshape of its cotangent.
VIEWS = {"reshape"}


def _loss_and_grad_primitives(ops) -> dict[str, int]:  # noqa: ANN001
    x, y, _, _ = digits_arrays("float32")
    params = models.init_digits_cnn(0)
    loss = jax.value_and_grad(functools.partial(models.digits_loss, ops))
    return model_primitives(lambda p, a, b: loss(p, a, b, 7), params, x[:64], y[:64])


def test_the_jitted_loss_and_gradient_are_ctensor_ffi_calls_only():
    found = _loss_and_grad_primitives(CTENSOR_OPS)
    foreign = {name for name in found if not name.startswith("ctensor_op:")} - VIEWS
    assert not foreign, found
    ops = {name.removeprefix("ctensor_op:") for name in found if name.startswith("ctensor_op:")}
    assert ops >= DIGITS_FORWARD | DIGITS_BACKWARD
    # the first convolution's input (the images) is not differentiated
    assert found["ctensor_op:conv2d_backward_input"] == 1


def test_the_operator_check_flags_jax_ops():
    # The same check on the reference model finds XLA's own operators: it can fail.
    found = _loss_and_grad_primitives(JAX_OPS)
    assert "conv_general_dilated" in found
    assert "dot_general" in found
    assert "ctensor_op:conv2d" not in found


def test_reference_dropout_applies_ctensor_mask_with_jax_arithmetic():
    x = jnp.asarray(np.random.default_rng(0).standard_normal((64, 512)), jnp.float32)
    ours = CTENSOR_OPS.dropout(x, 0.25, 5, 3, True)
    reference = JAX_OPS.dropout(x, 0.25, 5, 3, True)
    np.testing.assert_array_equal(ours, reference)
    keep = models.dropout_keep_mask(x, 0.25, 5, 3)
    assert 0.7 < float(jnp.mean(keep)) < 0.8
    assert not np.array_equal(keep, models.dropout_keep_mask(x, 0.25, 5, 4))
    np.testing.assert_array_equal(JAX_OPS.dropout(x, 0.25, 5, 3, False), x)


def test_digits_float64_loss_matches_jax_numpy_step_by_step():
    with jax.enable_x64(True):
        differences = digits.check(12)
    assert len(differences) == 12
    assert max(differences) <= 1e-9


def test_digits_reaches_97_percent_test_accuracy():
    result = digits.train("float32")
    assert len(result["losses"]) == 20 * 21
    assert result["accuracy"] >= 0.97
    assert result["compilations"] == 1  # 420 steps, 420 dropout offsets


def test_the_training_step_compiles_once_for_every_offset():
    # The offset is a traced argument: a new dropout mask each step, one compilation, on both
    # op sets (the reference draws its mask from ctensor's dropout too).
    x, y, _, _ = digits_arrays("float32")
    for ops in (CTENSOR_OPS, JAX_OPS):
        params = models.init_digits_cnn(0)
        step = models.make_train_step(ops, 3e-3)
        state = models.adam_init(params)
        losses = []
        for offset in range(3):
            _, _, loss = step(params, state, x[:64], y[:64], offset)  # same params and batch
            losses.append(float(loss))
        assert step._cache_size() == 1
        assert len(set(losses)) == 3  # only the dropout mask differs between the steps


def test_example_command_line_quick():
    run = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "jax_train_digits.py"),
            "--quick",
            "--check",
            "--check-steps",
            "3",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "check: 3 steps, float64" in run.stdout
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "jax_train_digits.py"), "--quick", "--steps", "3"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "steps: 3" in run.stdout and "test accuracy:" in run.stdout
    assert "training step compiled: 1 time(s)" in run.stdout
