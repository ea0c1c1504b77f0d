"""ctensor as JAX functions (``ctensor.jax``) under ``jax.jit``: each compiled function is one
XLA FFI custom call of ctensor's operator, timed beside XLA's own compiled operator on the same
JAX arrays (CPU):

- the per-call overhead of a jitted ``ctensor.jax.add`` on 8 floats against a jitted
  ``jnp.add`` (XLA's dispatch of a compiled executable is in both; the difference is the FFI
  call: the handler's per-call work and ctensor's operator run);
- conv2d (3x3, padding 1) against ``jax.lax.conv_general_dilated``, softmax against
  ``jax.nn.softmax`` and matmul against ``jnp.matmul``.

Implementations: ``ctensor`` (the jitted ctensor.jax call) and ``jax`` (the jitted XLA op).
Both return a JAX array already computed (``block_until_ready``).
"""

from __future__ import annotations

import numpy as np

from .case import Case, Impl, Target
from .env import Env

__all__ = ["build"]

_F32 = 4


def _pair(env: Env, ours, theirs) -> dict:  # noqa: ANN001
    """The two jitted functions, named as the implementations' expressions call them."""
    return {"ct_fn": env.jit(ours), "jax_fn": env.jit(theirs)}


def _impls(ns: dict, args: str) -> dict[str, Impl]:
    return {"ctensor": Impl(f"ct_fn({args})", ns), "jax": Impl(f"jax_fn({args})", ns)}


def _overhead(env: Env, cj) -> Case:  # noqa: ANN001
    jnp = env.jnp
    a = np.linspace(0.5, 1.5, 8, dtype=np.float32)
    ns = {"a": env.j(a), "b": env.j(a[::-1].copy()), **_pair(env, cj.add, jnp.add)}
    return Case(
        name="jax/overhead/add/8",
        group="jax",
        unit="ns",
        work=0.0,
        impls=_impls(ns, "a, b"),
        description="jax.jit(ctensor.jax.add) on 8 floats (one FFI call) against jax.jit(jnp.add)",
        reference={"jax": (1e-6, 1e-6)},
        targets=[Target("<= 1.5x jitted jnp.add time", "speedup", "jax", 1 / 1.5)],
    )


def _conv2d(env: Env, cj, batch: int, channels: int, size: int) -> Case:  # noqa: ANN001
    lax = env.jax.lax
    x = env.normal((batch, channels, size, size))
    w = env.normal((channels, channels, 3, 3)) * np.float32(1.0 / np.sqrt(9 * channels))

    def theirs(x, w):  # noqa: ANN001, ANN202
        return lax.conv_general_dilated(
            x, w, (1, 1), [(1, 1), (1, 1)], dimension_numbers=("NCHW", "OIHW", "NCHW")
        )

    ns = {
        "x": env.j(x),
        "w": env.j(w),
        **_pair(env, lambda x, w: cj.conv2d(x, w, padding=[1, 1]), theirs),
    }
    return Case(
        name=f"jax/conv2d/{batch}x{channels}x{size}x{size}",
        group="jax",
        unit="GFLOP/s",
        work=2.0 * x.size * channels * 9,
        impls=_impls(ns, "x, w"),
        description=f"jitted ctensor.jax.conv2d against jax.lax.conv_general_dilated: input "
        f"({batch}, {channels}, {size}, {size}), weight ({channels}, {channels}, 3, 3), "
        "padding 1",
        reference={"jax": (1e-3, 1e-3)},
    )


def _softmax(env: Env, cj, rows: int, cols: int) -> Case:  # noqa: ANN001
    jax_nn = env.jax.nn
    x = env.normal((rows, cols))
    ns = {
        "x": env.j(x),
        **_pair(env, lambda x: cj.softmax(x, axis=-1), lambda x: jax_nn.softmax(x, axis=-1)),
    }
    return Case(
        name=f"jax/softmax/{rows}x{cols}",
        group="jax",
        unit="GB/s",
        work=2 * x.size * _F32,
        impls=_impls(ns, "x"),
        description=f"jitted ctensor.jax.softmax against jax.nn.softmax, ({rows}, {cols}), "
        "last axis",
        reference={"jax": (1e-5, 1e-6)},
    )


def _matmul(env: Env, cj, size: int) -> Case:  # noqa: ANN001
    a, b = env.normal((size, size)), env.normal((size, size))
    ns = {"a": env.j(a), "b": env.j(b), **_pair(env, cj.matmul, env.jnp.matmul)}
    tol = 1e-4 * np.sqrt(size)
    return Case(
        name=f"jax/matmul/{size}",
        group="jax",
        unit="GFLOP/s",
        work=2.0 * size**3,
        impls=_impls(ns, "a, b"),
        description=f"jitted ctensor.jax.matmul against jnp.matmul, ({size}, {size}) @ "
        f"({size}, {size})",
        reference={"jax": (tol, tol)},
    )


def build(env: Env) -> list[Case]:
    if env.jnp is None:
        return []
    try:
        import ctensor.jax as cj
    except ImportError:  # ctensor was built without the XLA FFI handler
        return []
    if env.quick:
        return [
            _overhead(env, cj),
            _conv2d(env, cj, 1, 8, 8),
            _softmax(env, cj, 64, 256),
            _matmul(env, cj, 128),
        ]
    return [
        _overhead(env, cj),
        _conv2d(env, cj, 8, 64, 56),
        _softmax(env, cj, 4096, 1024),
        _matmul(env, cj, 1024),
    ]
