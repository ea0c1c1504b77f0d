"""examples/mxnet_train_digits.py: a few training steps, and its float64 check against the same
model on MXNet's own ops (the full run's figures are in docs/mxnet.md)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "mxnet_train_digits.py"


def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_quick_training_lowers_the_loss():
    output = _run("--quick")
    first, last = map(float, re.search(r"loss (\S+) -> (\S+)", output).groups())
    assert last < first
    assert 0.0 <= float(re.search(r"test accuracy: (\S+)", output).group(1)) <= 1.0


def test_check_matches_mxnet_ops_in_float64():
    output = _run("--check", "--check-steps", "10")
    worst = float(re.search(r"worst relative loss difference (\S+)", output).group(1))
    assert "check: 10 steps" in output
    assert worst <= 1e-9
