"""The digits CNN of ``ctensor.torch.models`` as JAX functions, on two op sets.

A model takes an op set: ``CTENSOR_OPS`` calls ``ctensor.jax.<name>`` for every operator (XLA
FFI calls under ``jax.jit``; their gradients, through the registry, are ``ctensor.jax`` calls
too), ``JAX_OPS`` calls ``jax.numpy``, ``jax.lax`` and ``jax.nn`` and is the reference. Both
take the same parameters (a dict of arrays, ``init_digits_cnn``):

- ``digits_cnn(ops, params, images, offset)``: conv3x3(1->16) relu, conv3x3(16->32) relu,
  max_pool 2x2, dropout, linear(512->64) relu, linear(64->10), as
  ``ctensor.torch.models.DigitsCNN``; ``digits_loss`` adds the mean cross entropy;
- ``make_train_step(ops)``: one jitted training step (``jax.value_and_grad`` of the loss and an
  Adam update written in ``jax.numpy``); ``adam_init`` makes the optimizer's state.

Dropout draws its mask from ctensor's Philox stream (``seed``, ``offset``). The offset is a
traced integer under ``jit`` (ctensor.jax passes value-only attributes as operands of the XLA
call): the caller passes a new offset each training step (the step number), and the jitted
step compiles once for all of them. ``JAX_OPS`` applies the mask that ctensor's dropout draws
for the same seed and offset (its second result) with jax.numpy's own arithmetic
(``x * mask * (1 / (1 - p))``).

``model_primitives(fn, *args)`` lists the primitives of a function's jaxpr (nested jaxprs
included), to check that a model runs on ctensor alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import jax as ct
from ..example_support import ctensor_op_set, masked_dropout

__all__ = [
    "CTENSOR_OPS",
    "JAX_OPS",
    "init_digits_cnn",
    "digits_cnn",
    "digits_loss",
    "adam_init",
    "adam_update",
    "make_train_step",
    "dropout_keep_mask",
    "model_primitives",
    "DROPOUT_P",
    "DROPOUT_SEED",
]

DROPOUT_P = 0.25
DROPOUT_SEED = 0


# ----------------------------------------------------------------------------------------------
# The two op sets: namespaces of the same functions with the same signatures.


CTENSOR_OPS = ctensor_op_set(ct, "ctensor.jax")
"""The op set of ``ctensor.jax`` calls."""


def dropout_keep_mask(x: Any, p: float, seed: Any, offset: Any) -> Any:
    """The bool mask (true: kept) that ``ctensor.jax.dropout`` draws for ``x`` with this seed
    and offset (Python ints or traced JAX integers; the mask depends on x's shape only): its
    second result, held constant."""
    return jax.lax.stop_gradient(
        ct.dropout(jax.lax.stop_gradient(x), p=p, seed=seed, offset=offset)[1]
    )


_jax_dropout = masked_dropout(dropout_keep_mask, lambda keep, x: keep.astype(x.dtype))


def _jax_conv2d(x: Any, weight: Any, bias: Any, padding: int) -> Any:
    out = jax.lax.conv_general_dilated(
        x,
        weight,
        window_strides=(1, 1),
        padding=[(padding, padding)] * 2,
        dimension_numbers=("NCHW", "OIHW", "NCHW"),
        precision=jax.lax.Precision.HIGHEST,
    )
    return out + bias[None, :, None, None]


def _jax_max_pool2d(x: Any, size: int) -> Any:
    window = (1, 1, size, size)
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, window, window, "VALID")


def _jax_linear(x: Any, weight: Any, bias: Any) -> Any:
    return jnp.matmul(x, weight.T, precision=jax.lax.Precision.HIGHEST) + bias


def _jax_cross_entropy(logits: Any, target: Any) -> Any:
    log_probs = jax.nn.log_softmax(logits, axis=1)
    return -jnp.mean(jnp.take_along_axis(log_probs, target[:, None], axis=1))


JAX_OPS = SimpleNamespace(
    name="jax",
    conv2d=_jax_conv2d,
    relu=jax.nn.relu,
    max_pool2d=_jax_max_pool2d,
    linear=_jax_linear,
    cross_entropy=_jax_cross_entropy,
    dropout=_jax_dropout,
)
"""The reference op set: jax.numpy, jax.lax and jax.nn (the dropout mask alone comes from
ctensor)."""


# ----------------------------------------------------------------------------------------------
# The model.


def init_digits_cnn(
    seed: int = 0,
    dtype: str = "float32",
    *,
    channels: tuple[int, int] = (16, 32),
    hidden: int = 64,
) -> dict[str, Any]:
    """Initial parameters, drawn as torch initialises ``nn.Conv2d`` and ``nn.Linear`` (uniform
    in +-1/sqrt(fan_in) for weights and biases) from NumPy's generator seeded with ``seed``."""
    rng = np.random.default_rng(seed)
    shapes = {
        "conv1": ((channels[0], 1, 3, 3), 9),
        "conv2": ((channels[1], channels[0], 3, 3), 9 * channels[0]),
        "fc1": ((hidden, channels[1] * 4 * 4), channels[1] * 16),
        "fc2": ((10, hidden), hidden),
    }
    params = {}
    for name, (shape, fan_in) in shapes.items():
        bound = 1.0 / np.sqrt(fan_in)
        params[f"{name}.weight"] = jnp.asarray(rng.uniform(-bound, bound, shape).astype(dtype))
        params[f"{name}.bias"] = jnp.asarray(rng.uniform(-bound, bound, shape[0]).astype(dtype))
    return params


def digits_cnn(
    ops: SimpleNamespace,
    params: dict[str, Any],
    images: Any,
    offset: Any = 0,
    *,
    training: bool = True,
    p: float = DROPOUT_P,
    seed: int = DROPOUT_SEED,
) -> Any:
    """Logits (N, 10) of images (N, 1, 8, 8); ``offset`` is the dropout's Philox offset (a
    Python int or a traced JAX integer)."""
    h = ops.relu(ops.conv2d(images, params["conv1.weight"], params["conv1.bias"], 1))
    h = ops.relu(ops.conv2d(h, params["conv2.weight"], params["conv2.bias"], 1))
    h = ops.max_pool2d(h, 2)
    h = h.reshape(h.shape[0], -1)
    h = ops.dropout(h, p, seed, offset, training)
    h = ops.relu(ops.linear(h, params["fc1.weight"], params["fc1.bias"]))
    return ops.linear(h, params["fc2.weight"], params["fc2.bias"])


def digits_loss(
    ops: SimpleNamespace, params: dict[str, Any], images: Any, labels: Any, offset: Any = 0
) -> Any:
    """Mean cross entropy of a batch (training mode: dropout on)."""
    return ops.cross_entropy(digits_cnn(ops, params, images, offset), labels)


# ----------------------------------------------------------------------------------------------
# Training.


def adam_init(params: dict[str, Any]) -> dict[str, Any]:
    """Adam's state: the step count and zero first and second moments."""
    zeros = {k: jnp.zeros_like(v) for k, v in params.items()}
    return {"step": jnp.zeros((), jnp.int32), "m": zeros, "v": dict(zeros)}


def adam_update(
    params: dict[str, Any],
    grads: dict[str, Any],
    state: dict[str, Any],
    learning_rate: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> tuple[dict, dict]:
    """One Adam step (as ``torch.optim.Adam``'s defaults compute it), in jax.numpy."""
    b1, b2 = betas
    step = state["step"] + 1
    m = {k: b1 * state["m"][k] + (1 - b1) * grads[k] for k in params}
    v = {k: b2 * state["v"][k] + (1 - b2) * grads[k] * grads[k] for k in params}
    dtype = next(iter(params.values())).dtype
    scale = learning_rate / (1 - jnp.power(b1, step).astype(dtype))
    root = jnp.sqrt(1 - jnp.power(b2, step).astype(dtype))
    new = {k: params[k] - scale * m[k] / (jnp.sqrt(v[k]) / root + eps) for k in params}
    return new, {"step": step, "m": m, "v": v}


def make_train_step(ops: SimpleNamespace, learning_rate: float) -> Callable:
    """``step(params, state, images, labels, offset) -> (params, state, loss)``: the loss and
    its gradient (``jax.value_and_grad``) and an Adam update under ``jax.jit``. The dropout
    offset is a traced argument (pass the step number: a Python int or a JAX integer), so the
    step compiles once for every offset (``step._cache_size()`` counts its compilations)."""

    def step(params: dict, state: dict, images: Any, labels: Any, offset: Any) -> tuple:
        loss, grads = jax.value_and_grad(functools.partial(digits_loss, ops))(
            params, images, labels, offset
        )
        params, state = adam_update(params, grads, state, learning_rate)
        return params, state, loss

    return jax.jit(step)


# ----------------------------------------------------------------------------------------------
# Which operators a function runs.


def model_primitives(fn: Callable, *args: Any) -> dict[str, int]:
    """How often each primitive occurs in the jaxpr of ``fn(*args)`` (``jax.make_jaxpr``),
    the jaxprs nested in equations (``pjit``, ``custom_vjp_call``, ...) walked into, and not
    counted themselves; an ``ffi_call`` is named ``<target>:<op>``, e.g. ``ctensor_op:conv2d``
    (the operator from its ``__op`` attribute)."""
    from jax.extend.core import jaxprs_in_params

    found: dict[str, int] = {}

    def walk(jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            nested = list(jaxprs_in_params(eqn.params))
            if nested:
                for sub in nested:
                    walk(getattr(sub, "jaxpr", sub))
                continue
            name = eqn.primitive.name
            if name == "ffi_call":
                op = dict(eqn.params.get("attributes") or ()).get("__op", "")
                name = f"{eqn.params.get('target_name')}:{op}"
            found[name] = found.get(name, 0) + 1

    walk(jax.make_jaxpr(fn)(*args).jaxpr)
    return found
