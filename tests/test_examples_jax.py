"""The JAX example: examples/jax_train_digits.py and ctensor.jax.models.

The jitted training step's loss and gradient are XLA FFI calls of ctensor operators only (plus
the reshape of the model's flatten, a view, and its cotangent's); the CNN reaches 97 % test
accuracy on scikit-learn's digits; in float64 its loss matches the same model on
jax.numpy/jax.lax step by step; the command line runs.
"""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ctensor.example_support import digits_arrays
from ctensor.jax import models
from ctensor.jax.models import CTENSOR_OPS, JAX_OPS, model_primitives

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


digits = _load("jax_train_digits")

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
    forward = {"conv2d", "relu", "max_pool2d", "dropout", "linear", "cross_entropy"}
    backward = {
        "conv2d_backward_input",
        "conv2d_backward_weight",
        "relu_backward",
        "max_pool2d_backward",
        "dropout_backward",
        "matmul_backward",
        "cross_entropy_backward",
    }
    assert forward | backward <= ops
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
