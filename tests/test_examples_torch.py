"""The end-to-end examples: examples/torch_train_digits.py and examples/torch_train_tiny_lm.py.

Both models run every forward and backward operator as a ``torch.ops.ctensor`` op under
``torch.compile(fullgraph=True)``: the forward and backward graphs hold ctensor ops and views
only (``ctensor.torch.models.ALLOWED_VIEWS``), plus, in the transformer's backward graph alone,
the ``aten.add`` with which torch's autograd sums the gradients of the residual stream. In
float64 their loss at each of the first 50 (CNN) and 20 (transformer) steps matches the same
model on torch's own ops to 1e-9 relative; the CNN reaches 97 % test accuracy on
scikit-learn's digits and the transformer's loss falls. The examples' command lines run with
--quick.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from examples_support import DIGITS_BACKWARD, DIGITS_FORWARD, EXAMPLES, load_example
from torch._dynamo.testing import CompileCounter

from ctensor.torch import models
from ctensor.torch.models import (
    ACCUMULATE,
    CTENSOR_OPS,
    TORCH_OPS,
    DigitsCNN,
    TinyTransformerLM,
    foreign_operators,
    graph_operators,
)

C = torch.ops.ctensor

# torch.compile's inductor imports torch.jit, which warns that it is deprecated: torch's
# business, not these tests'.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")


digits = load_example("torch_train_digits")
tiny_lm = load_example("torch_train_tiny_lm")


def _assert_graphs_hold(found: dict[str, set], forward: set[str], backward: set[str]) -> None:
    """The forward and backward graphs of ``graph_operators`` hold these ctensor ops."""
    for kind, names in (("forward", forward), ("backward", backward)):
        held = {str(target) for target in found[kind]}
        missing = {f"ctensor.{name}.default" for name in names} - held
        assert not missing, f"{kind} graph lacks {sorted(missing)}"


# ---------------------------------------------------------------------------------------------
# Every operator of the compiled models is a ctensor op.


def test_digits_cnn_runs_on_ctensor_ops_only():
    x_train, y_train, _, _ = models.digits_split(torch.float32)
    torch.manual_seed(0)
    model = DigitsCNN(CTENSOR_OPS)
    found = graph_operators(model.loss, x_train[:64], y_train[:64], 7)
    assert foreign_operators(found) == {"forward": [], "backward": []}
    _assert_graphs_hold(found, DIGITS_FORWARD, DIGITS_BACKWARD)


def test_tiny_lm_runs_on_ctensor_ops_only():
    train_tokens, _, vocab_size = tiny_lm.data()
    torch.manual_seed(0)
    model = TinyTransformerLM(CTENSOR_OPS, vocab_size, context=tiny_lm.CONTEXT)
    batch = models.text_batches(train_tokens, 4, tiny_lm.CONTEXT, 0)
    found = graph_operators(model.loss, *batch)
    # No allowance at all in the forward graph; the backward one may hold autograd's sums.
    assert foreign_operators(found, accumulate=ACCUMULATE) == {"forward": [], "backward": []}
    forward = {"embedding", "layer_norm", "scaled_dot_product_attention", "gelu", "linear"}
    backward = {
        "embedding_backward",
        "layer_norm_backward",
        "scaled_dot_product_attention_backward",
        "gelu_backward",
        "cross_entropy_backward",
    }
    _assert_graphs_hold(found, forward, backward)


def test_the_operator_check_flags_torch_ops():
    # The same check on the reference model names torch's compute ops: it can fail.
    x_train, y_train, _, _ = models.digits_split(torch.float32)
    torch.manual_seed(0)
    found = graph_operators(DigitsCNN(TORCH_OPS).loss, x_train[:64], y_train[:64], 7)
    foreign = foreign_operators(found)
    assert "aten.convolution.default" in foreign["forward"]
    assert "aten.convolution_backward.default" in foreign["backward"]


def test_a_new_dropout_offset_each_step_compiles_once_more_only():
    # The offset is an int that changes every step: after one recompilation it is a symbolic
    # int of the graph, and later steps reuse that graph.
    x_train, y_train, _, _ = models.digits_split(torch.float32)
    torch.manual_seed(0)
    model = DigitsCNN(CTENSOR_OPS)
    counter = CompileCounter()
    torch._dynamo.reset()
    loss = torch.compile(model.loss, backend=counter, fullgraph=True)
    results = [loss(x_train[:64], y_train[:64], offset).item() for offset in range(6)]
    torch._dynamo.reset()
    assert counter.frame_count == 2
    assert len(set(results)) == 6  # each offset drew another mask


# ---------------------------------------------------------------------------------------------
# The pieces the float64 comparison rests on.


def test_reference_dropout_applies_ctensor_mask_with_torch_arithmetic():
    x = torch.randn(64, 512, dtype=torch.float64)
    ours = CTENSOR_OPS.dropout(x, 0.25, 5, 3, True)
    reference = TORCH_OPS.dropout(x, 0.25, 5, 3, True)
    assert torch.equal(ours, reference)
    keep = models.dropout_keep_mask(x, 0.25, 5, 3)
    assert 0.7 < keep.double().mean().item() < 0.8
    assert not torch.equal(keep, models.dropout_keep_mask(x, 0.25, 5, 4))
    assert torch.equal(TORCH_OPS.dropout(x, 0.25, 5, 3, False), x)


def test_linear_without_bias_backward():
    # An op called without its trailing optional input (bias) gets gradients for the others.
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    C.linear(x, w).sum().backward()
    assert torch.allclose(w.grad, x.detach().sum(0).expand(4, 3))
    assert torch.allclose(x.grad, w.detach().sum(0).expand(5, 3))


# ---------------------------------------------------------------------------------------------
# The examples' figures.


def test_digits_float64_loss_matches_torch_ops_for_50_steps():
    differences = digits.check(50)
    assert len(differences) == 50
    assert max(differences) <= 1e-9


def test_digits_reaches_97_percent_test_accuracy():
    result = digits.train(torch.float32)
    assert len(result["losses"]) == 20 * 21
    assert result["accuracy"] >= 0.97


def test_tiny_lm_float64_loss_matches_torch_ops_for_20_steps():
    differences = tiny_lm.check(20)
    assert len(differences) == 20
    assert max(differences) <= 1e-9


def test_tiny_lm_loss_falls():
    result = tiny_lm.train(torch.float32, steps=60)
    losses = result["losses"]
    assert sum(losses[-6:]) / 6 < sum(losses[:6]) / 6 - 0.5
    before, after = result["held_out"]
    assert after < before - 0.5


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("torch_train_digits.py", "test accuracy:"),
        ("torch_train_tiny_lm.py", "held-out loss:"),
    ],
)
def test_example_command_line_quick(script: str, expected: str):
    # Three steps: the figures are the other tests' business; this is the command line's.
    command = ["--quick", "--steps", "3", "--threads", "2"]
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert expected in run.stdout
    assert "steps: 3," in run.stdout


def test_example_check_flag_quick():
    run = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "torch_train_tiny_lm.py"),
            *("--quick", "--check", "--check-steps", "3"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "check: 3 steps, float64, worst relative loss difference" in run.stdout
