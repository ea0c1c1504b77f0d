"""Memory-bound cases: elementwise unary and binary ops at 2^24+ float32 elements (contiguous,
broadcast, strided), reductions (all axes and per axis), each next to the STREAM kernel that
moves the same bytes, timed in the same round-robin; ctensor on the OpenCL device beside them
(``ctensor.opencl``) when that backend is loaded."""

from __future__ import annotations

import numpy as np

from .case import Case, Impl, Target
from .env import Env

__all__ = ["build"]

_F32 = 4
_ELEMENTWISE_TOL = (2e-6, 1e-6)


def _stream_target(what: str, ratio: float = 0.95) -> Target:
    return Target(f">= {ratio}x STREAM {what}", "machine", "machine", ratio)


def _impls(
    env: Env,
    ns: dict,
    ct: str,
    numpy: str | None,
    torch: str | None,
    jax: str | None,
    machine: object | None,
    opencl: str | None = None,
) -> dict[str, Impl]:
    impls = {"ctensor": Impl(ct, ns)}
    if opencl:
        impls["ctensor.opencl"] = Impl(opencl, ns)
    if numpy:
        impls["numpy"] = Impl(numpy, ns)
    if torch and env.torch is not None:
        impls["torch"] = Impl(torch, ns)
    if jax and env.jnp is not None:
        impls["jax"] = Impl(jax, ns)
    if machine is not None:
        impls["machine"] = Impl("kernel()", {"kernel": machine})
    return impls


def _elementwise(env: Env, n: int) -> list[Case]:
    a, b = env.normal((n,)), env.normal((n,))
    c = np.empty_like(a)
    rows = 4096 if not env.quick else 64
    m, row = env.normal((rows, n // rows)), env.normal((n // rows,))
    mc = np.empty_like(m)
    big_a, big_b = env.normal((2 * n,)), env.normal((2 * n,))
    ns = {
        "ops": env.ops,
        "np": np,
        "a": a,
        "b": b,
        "c": c,
        "m": m,
        "row": row,
        "mc": mc,
        "sa": big_a[::2],
        "sb": big_b[::2],
    }
    if env.torch is not None:
        torch = env.torch
        ns.update(
            torch=torch,
            ta=env.t(a),
            tb=env.t(b),
            tc=env.t(c),
            tm=env.t(m),
            trow=env.t(row),
            tmc=env.t(mc),
            tsa=env.t(big_a)[::2],
            tsb=env.t(big_b)[::2],
        )
    if env.jnp is not None:
        ns.update(jadd=env.jit(env.jnp.add), jexp=env.jit(env.jnp.exp), ja=env.j(a), jb=env.j(b))
    env.opencl_arrays(
        ns, {"dc": c, "dmc": mc}, da=a, db=b, dm=m, drow=row, dbig_a=big_a, dbig_b=big_b
    )
    if env.opencl is not None:
        ns.update(dsa=ns["dbig_a"].as_strided((n,), (2,)), dsb=ns["dbig_b"].as_strided((n,), (2,)))
    cl = env.opencl_expr
    mk = env.machine
    copy = mk.copy(c, a) if mk else None
    add = mk.add(c, a, b) if mk else None
    tol = {"numpy": _ELEMENTWISE_TOL, "torch": _ELEMENTWISE_TOL}
    size = f"2^{int(np.log2(n))}"
    return [
        Case(
            f"elementwise/negative/{size}",
            "elementwise",
            "GB/s",
            2 * n * _F32,
            _impls(
                env,
                ns,
                "ops.negative(a, out=c)",
                "np.negative(a, out=c)",
                "torch.neg(ta, out=tc)",
                None,
                copy,
                cl("negative", "ops.negative(da, out=dc)"),
            ),
            "unary, contiguous (machine: STREAM copy)",
            dict(tol),
            targets=[_stream_target("copy")],
        ),
        Case(
            f"elementwise/exp/{size}",
            "elementwise",
            "GB/s",
            2 * n * _F32,
            _impls(
                env,
                ns,
                "ops.exp(a, out=c)",
                "np.exp(a, out=c)",
                "torch.exp(ta, out=tc)",
                "jexp(ja)",
                copy,
                cl("exp", "ops.exp(da, out=dc)"),
            ),
            "unary transcendental, contiguous (machine: STREAM copy)",
            {"numpy": (4e-6, 1e-6), "torch": (4e-6, 1e-6)},
            targets=[_stream_target("copy")],
        ),
        Case(
            f"elementwise/add/{size}",
            "elementwise",
            "GB/s",
            3 * n * _F32,
            _impls(
                env,
                ns,
                "ops.add(a, b, out=c)",
                "np.add(a, b, out=c)",
                "torch.add(ta, tb, out=tc)",
                "jadd(ja, jb)",
                add,
                cl("add", "ops.add(da, db, out=dc)"),
            ),
            "binary, contiguous (machine: STREAM add)",
            dict(tol),
            targets=[_stream_target("add")],
        ),
        Case(
            f"elementwise/add_broadcast/{size}",
            "elementwise",
            "GB/s",
            2 * n * _F32,
            _impls(
                env,
                ns,
                "ops.add(m, row, out=mc)",
                "np.add(m, row, out=mc)",
                "torch.add(tm, trow, out=tmc)",
                None,
                copy,
                cl("add", "ops.add(dm, drow, out=dmc)"),
            ),
            f"binary, ({m.shape[0]}, {m.shape[1]}) + ({m.shape[1]},) (machine: STREAM copy)",
            dict(tol),
            targets=[_stream_target("copy")],
        ),
        Case(
            f"elementwise/add_strided/{size}",
            "elementwise",
            "GB/s",
            3 * n * _F32,
            _impls(
                env,
                ns,
                "ops.add(sa, sb, out=c)",
                "np.add(sa, sb, out=c)",
                "torch.add(tsa, tsb, out=tc)",
                None,
                add,
                cl("add", "ops.add(dsa, dsb, out=dc)"),
            ),
            "binary, inputs with stride 2 (bytes counted as used; reads touch twice that)",
            dict(tol),
        ),
    ]


def _reductions(env: Env, n: int) -> list[Case]:
    x = env.rng.random(n, dtype=np.float32)
    side = int(round(np.sqrt(n)))
    m = x[: side * side].reshape(side, side)
    ns = {"ops": env.ops, "np": np, "x": x, "m": m}
    if env.torch is not None:
        ns.update(torch=env.torch, tx=env.t(x), tm=env.t(m))
    if env.jnp is not None:
        ns.update(jsum=env.jit(env.jnp.sum), jx=env.j(x))
    env.opencl_arrays(ns, dx=x, dm=m)
    cl = env.opencl_expr
    read = env.machine.read(x) if env.machine else None
    read_m = env.machine.read(np.ascontiguousarray(m)) if env.machine else None
    size = f"2^{int(np.log2(n))}"
    tol = {"numpy": (1e-4, 1e-3), "torch": (1e-4, 1e-3)}
    exact = {"numpy": "exact", "torch": "exact"}
    return [
        Case(
            f"reduction/sum/{size}",
            "reduction",
            "GB/s",
            n * _F32,
            _impls(
                env,
                ns,
                "ops.sum(x)",
                "np.sum(x)",
                "torch.sum(tx)",
                "jsum(jx)",
                read,
                cl("sum", "ops.sum(dx)"),
            ),
            "all axes (machine: STREAM read)",
            dict(tol),
            targets=[_stream_target("read", 0.9)],
        ),
        Case(
            f"reduction/max/{size}",
            "reduction",
            "GB/s",
            n * _F32,
            _impls(
                env,
                ns,
                "ops.max(x)",
                "np.max(x)",
                "torch.max(tx)",
                None,
                read,
                cl("max", "ops.max(dx)"),
            ),
            "all axes (machine: STREAM read)",
            exact,
            targets=[_stream_target("read", 0.9)],
        ),
        Case(
            f"reduction/sum_axis0/{side}x{side}",
            "reduction",
            "GB/s",
            side * side * _F32,
            _impls(
                env,
                ns,
                "ops.sum(m, axis=0)",
                "np.sum(m, axis=0)",
                "torch.sum(tm, dim=0)",
                None,
                read_m,
                cl("sum", "ops.sum(dm, axis=0)"),
            ),
            "per axis, across rows (machine: STREAM read)",
            dict(tol),
            targets=[_stream_target("read", 0.9)],
        ),
        Case(
            f"reduction/sum_axis1/{side}x{side}",
            "reduction",
            "GB/s",
            side * side * _F32,
            _impls(
                env,
                ns,
                "ops.sum(m, axis=1)",
                "np.sum(m, axis=1)",
                "torch.sum(tm, dim=1)",
                None,
                read_m,
                cl("sum", "ops.sum(dm, axis=1)"),
            ),
            "per axis, along rows (machine: STREAM read)",
            dict(tol),
            targets=[_stream_target("read", 0.9)],
        ),
    ]


def build(env: Env) -> list[Case]:
    n = 1 << (16 if env.quick else 24)
    return _elementwise(env, n) + _reductions(env, n)
