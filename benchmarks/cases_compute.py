"""Compute-bound cases: float32 matmul (square 256 to 2048, batched small) and conv2d on the
3x3 shapes of ResNet-50 (padding 1). ctensor on the OpenCL device (``ctensor.opencl``) runs the
square matmuls up to 512 (_OPENCL_MAX_SQUARE) when that backend is loaded."""

from __future__ import annotations

import numpy as np

from .case import Case, Impl, Target
from .env import Env

__all__ = ["build"]

# The largest square matmul timed on the OpenCL device. On PoCL (the same CPU cores) the
# backend's matmul takes seconds per call beyond this size, so one case's samples would take
# minutes; larger sizes are left out.
_OPENCL_MAX_SQUARE = 512


# The pause before each matmul sample (with more than one thread; the run's default is 0.1 s):
# OpenBLAS's idle threads spin for 2^28 cycles after each call, up to a fifth of a second on a
# slow clock, and slow whichever library runs next on the same cores, matmul most of all (it
# needs every core). 0.3 s outlasts the spinning, so each matmul is timed on idle cores.
_MATMUL_SETTLE_S = 0.3


def _matmul(
    env: Env,
    shape_a: tuple,
    shape_b: tuple,
    name: str,
    description: str,
    targets: list[Target],
    on_opencl: bool = False,
) -> Case:
    a, b = env.normal(shape_a), env.normal(shape_b)
    out = np.empty(
        np.broadcast_shapes(shape_a[:-2], shape_b[:-2]) + (shape_a[-2], shape_b[-1]), np.float32
    )
    k = shape_a[-1]
    flops = 2.0 * out.size * k
    ns = {"ops": env.ops, "np": np, "a": a, "b": b, "c": out}
    impls = {
        "ctensor": Impl("ops.matmul(a, b, out=c)", ns),
        "numpy": Impl("np.matmul(a, b, out=c)", ns),
    }
    opencl = env.opencl_expr("matmul", "ops.matmul(da, db, out=dc)") if on_opencl else None
    if opencl:
        env.opencl_arrays(ns, {"dc": out}, da=a, db=b)
        impls["ctensor.opencl"] = Impl(opencl, ns)
    tol = (1e-4 * np.sqrt(k), 1e-4 * np.sqrt(k))
    reference = {"numpy": tol}
    if env.torch is not None:
        ns.update(torch=env.torch, ta=env.t(a), tb=env.t(b), tc=env.t(out))
        impls["torch"] = Impl("torch.matmul(ta, tb, out=tc)", ns)
        reference["torch"] = tol
    if env.jnp is not None:
        ns.update(jmm=env.jit(env.jnp.matmul), ja=env.j(a), jb=env.j(b))
        impls["jax"] = Impl("jmm(ja, jb)", ns)
    if env.machine is not None and targets:
        # The FMA-peak kernel doing the same number of flops, sampled in the same rounds as
        # the libraries, so that the ratio to the peak does not drift with the machine's load.
        rounds = max(1, round(flops / _fma_flops_per_round(env)))
        impls["machine"] = Impl("kernel()", {"kernel": env.machine.fma(rounds)})
    return Case(
        name,
        "matmul",
        "GFLOP/s",
        flops,
        impls,
        description,
        reference,
        targets=targets,
        settle_s=_MATMUL_SETTLE_S,
    )


_FMA_ROUNDS_PROBE = 1000


def _fma_flops_per_round(env: Env) -> float:
    """Flops of one round of the FMA-peak kernel (a fixed count: the kernel's chains)."""
    return env.machine.fma_flops(_FMA_ROUNDS_PROBE) / _FMA_ROUNDS_PROBE


def _conv2d(env: Env, batch: int, channels: int, size: int) -> Case:
    x = env.normal((batch, channels, size, size))
    w = env.normal((channels, channels, 3, 3)) * np.float32(1.0 / np.sqrt(9 * channels))
    out = np.empty_like(x)
    flops = 2.0 * out.size * channels * 9
    ns = {"ops": env.ops, "x": x, "w": w, "out": out}
    impls = {"ctensor": Impl("ops.conv2d(x, w, padding=1, out=out)", ns)}
    reference: dict = {}
    targets = []
    if env.torch is not None:
        ns.update(F=env.torch.nn.functional, tx=env.t(x), tw=env.t(w))
        impls["torch"] = Impl("F.conv2d(tx, tw, padding=1)", ns)
        reference["torch"] = (1e-3, 1e-3)
        targets.append(Target(">= 1.0x torch", "speedup", "torch", 1.0))
    return Case(
        f"conv2d/resnet50_3x3/{batch}x{channels}x{size}x{size}",
        "conv2d",
        "GFLOP/s",
        flops,
        impls,
        f"input ({batch}, {channels}, {size}, {size}), weight ({channels}, "
        f"{channels}, 3, 3), padding 1",
        reference,
        targets=targets,
    )


def _conv2d_backward(env: Env, batch: int, channels: int, size: int) -> Case:
    """conv2d's input and weight cotangents (cuDNN's backward-data plus backward-filter) of the
    forward case's convolution, against torch's convolution_backward (what autograd runs)."""
    x = env.normal((batch, channels, size, size))
    w = env.normal((channels, channels, 3, 3)) * np.float32(1.0 / np.sqrt(9 * channels))
    g = env.normal((batch, channels, size, size))
    gx, gw = np.empty_like(x), np.empty_like(w)
    flops = 2 * 2.0 * g.size * channels * 9
    ns = {"ops": env.ops, "x": x, "w": w, "g": g, "gx": gx, "gw": gw}
    impls = {
        "ctensor": Impl(
            "(ops.conv2d_backward_input(g, x, w, padding=1, out=gx), "
            "ops.conv2d_backward_weight(g, x, w, padding=1, out=gw))",
            ns,
        )
    }
    reference: dict = {}
    targets = []
    convert: dict = {}
    if env.torch is not None:
        torch = env.torch
        ns.update(torch=torch, tx=env.t(x), tw=env.t(w), tg=env.t(g))
        impls["torch"] = Impl(
            "torch.ops.aten.convolution_backward(tg, tx, tw, None, [1, 1], [1, 1], [1, 1], "
            "False, [0, 0], 1, [True, True, False])",
            ns,
        )
        convert["torch"] = lambda r: (r[0].numpy(), r[1].numpy())
        reference["torch"] = (1e-3, 1e-3 * np.sqrt(batch * size * size))
        targets.append(Target(">= 1.0x torch", "speedup", "torch", 1.0))
    return Case(
        f"conv2d_backward/resnet50_3x3/{batch}x{channels}x{size}x{size}",
        "conv2d",
        "GFLOP/s",
        flops,
        impls,
        f"input and weight cotangents of conv2d on ({batch}, {channels}, {size}, {size}), "
        f"weight ({channels}, {channels}, 3, 3), padding 1",
        reference,
        convert=convert,
        targets=targets,
        outputs=("gx", "gw"),
    )


def build(env: Env) -> list[Case]:
    peak = [Target(">= 0.85x FMA peak", "machine", "machine", 0.85)]
    sizes = (64, 128) if env.quick else (256, 512, 1024, 2048)
    cases = [
        _matmul(
            env,
            (n, n),
            (n, n),
            f"matmul/square/{n}",
            f"({n}, {n}) @ ({n}, {n})"
            + (
                ""
                if n <= _OPENCL_MAX_SQUARE
                else f"; not on ctensor.opencl above {_OPENCL_MAX_SQUARE}"
                " (seconds per call on PoCL)"
            ),
            peak if n >= 512 or env.quick else [],
            on_opencl=n <= _OPENCL_MAX_SQUARE,
        )
        for n in sizes
    ]
    batches = ((16, 32), (8, 64)) if env.quick else ((256, 32), (64, 64))
    cases += [
        _matmul(
            env,
            (b, m, m),
            (b, m, m),
            f"matmul/batched/{b}x{m}x{m}",
            f"{b} x ({m}, {m}) @ ({m}, {m})",
            [],
        )
        for b, m in batches
    ]
    shapes = ((1, 8, 8),) if env.quick else ((8, 64, 56), (8, 128, 28), (8, 256, 14), (8, 512, 7))
    cases += [_conv2d(env, *s) for s in shapes]
    cases += [_conv2d_backward(env, *s) for s in shapes]
    return cases
