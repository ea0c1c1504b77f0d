"""The digits CNN of the examples on ``ctensor.mxnet`` ops, and the same model on MXNet's own ops.

A model is a function of an op set and a dict of weights (NDArrays): ``CTENSOR_OPS`` calls
``ctensor.mxnet.<name>`` for every operator (so its forward runs ctensor's kernels in MXNet's
engine and its backward the gradient registry's steps), ``MXNET_OPS`` calls MXNet's own
operators (``Convolution``, ``Pooling``, ``FullyConnected``, ``log_softmax`` + ``pick``) and is
the reference. Both take the same weights (``init_weights``: PyTorch's default initialisation,
uniform in +-1/sqrt(fan_in), from a NumPy generator), so the two variants can be compared step
by step.

- ``digits_cnn(ops, weights, images, offset, training)``: conv3x3(1->16) relu, conv3x3(16->32)
  relu, max_pool 2x2, dropout, linear(512->64) relu, linear(64->10); images (N, 1, 8, 8);
- ``digits_loss``: its mean cross entropy;
- ``Adam``: the optimizer step, in MXNet (``mx.nd.adam_update`` with the bias correction
  folded into the learning rate, as Gluon's Adam does).

Dropout draws its mask from ctensor's Philox stream (``seed``, ``offset``: pass the step number
as the offset); ``MXNET_OPS`` applies the mask ctensor's dropout draws for the same seed and
offset (its second result) with MXNet's own arithmetic.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import mxnet as mx
import numpy as np

import ctensor.mxnet as cm
from ctensor.example_support import ctensor_op_set, masked_dropout

__all__ = [
    "CTENSOR_OPS",
    "MXNET_OPS",
    "Adam",
    "digits_cnn",
    "digits_loss",
    "dropout_keep_mask",
    "init_weights",
    "WEIGHT_SHAPES",
]

nd = mx.nd


CTENSOR_OPS = ctensor_op_set(cm, "ctensor")
"""The op set of ``ctensor.mxnet`` calls."""


def dropout_keep_mask(x: Any, p: float, seed: int, offset: int) -> Any:
    """The bool mask (true: kept) that ``ctensor.mxnet.dropout`` draws for ``x`` with this seed
    and offset (it depends on x's shape only): its second result, recorded by nothing."""
    with mx.autograd.pause():
        return cm.dropout(x.detach(), p=p, seed=seed, offset=offset)[1]


_mx_dropout = masked_dropout(dropout_keep_mask, lambda keep, x: keep.astype(x.dtype))


def _mx_cross_entropy(logits: Any, target: Any) -> Any:
    picked = nd.pick(nd.log_softmax(logits, axis=1), target.astype(logits.dtype), axis=1)
    return -nd.mean(picked)


MXNET_OPS = SimpleNamespace(
    name="mxnet",
    conv2d=lambda x, weight, bias, padding: nd.Convolution(
        x,
        weight,
        bias,
        kernel=weight.shape[2:],
        pad=(padding, padding),
        num_filter=weight.shape[0],
    ),
    relu=nd.relu,
    max_pool2d=lambda x, size: nd.Pooling(
        x, kernel=(size, size), stride=(size, size), pool_type="max"
    ),
    linear=lambda x, weight, bias: nd.FullyConnected(x, weight, bias, num_hidden=weight.shape[0]),
    cross_entropy=_mx_cross_entropy,
    dropout=_mx_dropout,
)
"""The reference op set: MXNet's own operators (the dropout mask alone comes from ctensor)."""


#: The weights of ``digits_cnn`` by name, and their shapes.
WEIGHT_SHAPES = {
    "conv1_weight": (16, 1, 3, 3),
    "conv1_bias": (16,),
    "conv2_weight": (32, 16, 3, 3),
    "conv2_bias": (32,),
    "fc1_weight": (64, 32 * 4 * 4),
    "fc1_bias": (64,),
    "fc2_weight": (10, 64),
    "fc2_bias": (10,),
}


def init_weights(dtype: str = "float32", seed: int = 0) -> dict[str, np.ndarray]:
    """Initial weights (NumPy arrays): uniform in +-1/sqrt(fan_in) per layer, weights and biases
    alike (PyTorch's default for Conv2d and Linear)."""
    rng = np.random.default_rng(seed)
    weights = {}
    for layer in ("conv1", "conv2", "fc1", "fc2"):
        shape = WEIGHT_SHAPES[f"{layer}_weight"]
        bound = 1.0 / math.sqrt(int(np.prod(shape[1:])))
        for kind in ("weight", "bias"):
            size = WEIGHT_SHAPES[f"{layer}_{kind}"]
            weights[f"{layer}_{kind}"] = rng.uniform(-bound, bound, size).astype(dtype)
    return weights


def digits_cnn(
    ops: SimpleNamespace,
    weights: dict[str, Any],
    images: Any,
    offset: int = 0,
    training: bool = True,
    *,
    p: float = 0.25,
    seed: int = 0,
) -> Any:
    """Logits (N, 10) of images (N, 1, 8, 8); ``offset``: the dropout's Philox offset."""
    w = weights
    h = ops.relu(ops.conv2d(images, w["conv1_weight"], w["conv1_bias"], 1))
    h = ops.relu(ops.conv2d(h, w["conv2_weight"], w["conv2_bias"], 1))
    h = ops.max_pool2d(h, 2)
    h = h.reshape((h.shape[0], -1))
    h = ops.dropout(h, p, seed, offset, training)
    h = ops.relu(ops.linear(h, w["fc1_weight"], w["fc1_bias"]))
    return ops.linear(h, w["fc2_weight"], w["fc2_bias"])


def digits_loss(
    ops: SimpleNamespace, weights: dict[str, Any], images: Any, labels: Any, offset: int = 0
) -> Any:
    """Mean cross entropy of a batch (training mode: dropout on)."""
    return ops.cross_entropy(digits_cnn(ops, weights, images, offset), labels)


class Adam:
    """Adam on a dict of NDArray weights (with gradients attached) by ``mx.nd.adam_update``;
    the bias correction is folded into the step's learning rate, as Gluon's Adam does."""

    def __init__(
        self,
        weights: dict[str, Any],
        lr: float = 3e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
    ) -> None:
        self.weights = weights
        self.lr, self.beta1, self.beta2, self.epsilon = lr, beta1, beta2, epsilon
        self.mean = {k: nd.zeros_like(v) for k, v in weights.items()}
        self.var = {k: nd.zeros_like(v) for k, v in weights.items()}
        self.steps = 0

    def step(self) -> None:
        self.steps += 1
        t = self.steps
        lr = self.lr * math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        for name, weight in self.weights.items():
            nd.adam_update(
                weight,
                weight.grad,
                self.mean[name],
                self.var[name],
                lr=lr,
                beta1=self.beta1,
                beta2=self.beta2,
                epsilon=self.epsilon,
                out=weight,
            )
