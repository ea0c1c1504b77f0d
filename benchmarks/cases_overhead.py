"""Per-call overhead: tiny float32 tensors (8 elements), one to three inputs, with and without
``out=``, NumPy and torch inputs; ctensor's general path and its bound calls (ctensor.bind)."""

from __future__ import annotations

import numpy as np

from .case import Case, Impl, Target
from .env import Env

__all__ = ["build"]

_SIZE = 8


def _raiser(error: Exception):  # noqa: ANN202
    """A callable that raises ``error`` (a bind that failed is reported when it is checked)."""

    def bound() -> None:
        raise error

    return bound


def _case(
    env: Env,
    name: str,
    ct: str,
    peers: dict[str, str],
    values: dict,
    bind: str | None,
    description: str,
    targets: list[Target] | None = None,
) -> Case:
    ns = {"ctensor": env.ctensor, "ops": env.ops, "np": np, "torch": env.torch, **values}
    impls = {"ctensor": Impl(ct, ns)}
    if bind is not None:
        ns_bound = dict(ns)
        try:
            ns_bound["bound"] = eval(bind, ns)  # noqa: S307 - our own expression
        except Exception as e:  # noqa: BLE001 - reported by the check as this impl's error
            ns_bound["bound"] = _raiser(e)
        impls["ctensor.bind"] = Impl("bound()", ns_bound)
    for lib_name, expr in peers.items():
        impls[lib_name] = Impl(expr, ns)
    return Case(
        name=name,
        group="overhead",
        unit="ns",
        work=0.0,
        impls=impls,
        description=description,
        reference={p: (1e-6, 1e-6) for p in peers},
        targets=targets or [],
    )


def build(env: Env) -> list[Case]:
    a = np.linspace(0.5, 1.5, _SIZE, dtype=np.float32)
    b = a[::-1].copy()
    c = np.empty_like(a)
    cond = (np.arange(_SIZE) % 2).astype(bool)
    v = {"a": a, "b": b, "c": c, "cond": cond}
    cases = [
        _case(
            env,
            "overhead/add/numpy/out",
            "ops.add(a, b, out=c)",
            {"numpy": "np.add(a, b, out=c)"},
            v,
            "ctensor.bind(ops.add, a, b, out=c)",
            "two inputs and out= (NumPy)",
            [
                Target("<= 1.0x np.add(out=) time", "speedup", "numpy", 1.0),
                Target("<= 1.0x np.add(out=) time", "speedup", "numpy", 1.0, "ctensor.bind"),
            ],
        ),
        _case(
            env,
            "overhead/add/numpy/new",
            "ops.add(a, b)",
            {"numpy": "np.add(a, b)"},
            v,
            "ctensor.bind(ops.add, a, b)",
            "two inputs, result allocated (NumPy)",
        ),
        _case(
            env,
            "overhead/exp/numpy/out",
            "ops.exp(a, out=c)",
            {"numpy": "np.exp(a, out=c)"},
            v,
            "ctensor.bind(ops.exp, a, out=c)",
            "one input and out= (NumPy)",
        ),
        _case(
            env,
            "overhead/where/numpy/new",
            "ops.where(cond, a, b)",
            {"numpy": "np.where(cond, a, b)"},
            v,
            "ctensor.bind(ops.where, cond, a, b)",
            "three inputs, result allocated (NumPy)",
        ),
    ]
    if env.torch is not None:
        tv = {"a": env.t(a), "b": env.t(b), "c": env.t(c), "cond": env.t(cond)}
        cases += [
            _case(
                env,
                "overhead/add/torch/out",
                "ops.add(a, b, out=c)",
                {"torch": "torch.add(a, b, out=c)"},
                tv,
                "ctensor.bind(ops.add, a, b, out=c)",
                "two inputs and out= (torch)",
                [
                    Target("<= 0.5x torch.add(out=) time", "speedup", "torch", 2.0),
                    Target("<= 0.5x torch.add(out=) time", "speedup", "torch", 2.0, "ctensor.bind"),
                ],
            ),
            _case(
                env,
                "overhead/add/torch/new",
                "ops.add(a, b)",
                {"torch": "torch.add(a, b)"},
                tv,
                "ctensor.bind(ops.add, a, b)",
                "two inputs, result allocated (torch)",
            ),
            _case(
                env,
                "overhead/where/torch/out",
                "ops.where(cond, a, b, out=c)",
                {"torch": "torch.where(cond, a, b, out=c)"},
                tv,
                "ctensor.bind(ops.where, cond, a, b, out=c)",
                "three inputs and out= (torch)",
            ),
        ]
    return cases
