"""One call of every operator flagged graph-safe (``"graph_safe"`` in ``op_info(name)["flags"]``,
CT_OP_FLAG_GRAPH_SAFE): what tests/test_cuda_device.py captures in a CUDA graph. The inputs are
the conformance suite's first case of one of the op's kernel signatures on the device (float32
where it has one), made compact so that every framework reads them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ctensor
from ctensor._registry import get_spec
from ctensor.conformance.cases import generate

__all__ = ["GraphCase", "graph_safe_ops", "graph_cases"]

#: Dtypes NumPy, torch and CuPy all hold (no bfloat16, no unsigned wider than 8 bits in torch).
PLAIN_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"}
)


@dataclass
class GraphCase:
    """One call: ``inputs`` (compact NumPy arrays, None for absent optional inputs, the
    variadic input's arrays flattened at the end, as ``ct_op_run`` takes them) and ``attrs``."""

    op: str
    signature: tuple[str, ...]
    inputs: list
    attrs: dict


def graph_safe_ops() -> list[str]:
    """The operators flagged graph-safe."""
    return [name for name in ctensor.list_ops() if "graph_safe" in ctensor.op_info(name)["flags"]]


def _signature(name: str, device: str) -> tuple[str, ...] | None:
    """A kernel signature of ``name`` on ``device`` in plain dtypes (float32 first), or None."""
    signatures = [tuple(s) for s in ctensor.op_info(name)["signatures"].get(device, [])]
    plain = [s for s in signatures if all(d in PLAIN_DTYPES for d in s)]
    plain.sort(key=lambda s: ("float32" not in s, s))
    return plain[0] if plain else None


def graph_cases(device: str) -> tuple[list[GraphCase], list[str]]:
    """(a case for every graph-safe op with a kernel on ``device`` ("cuda", "cpu"), the
    graph-safe ops that have none there)."""
    cases, missing = [], []
    for name in graph_safe_ops():
        signature = _signature(name, device)
        if signature is None:
            missing.append(name)
            continue
        spec = get_spec(name)
        found = generate(spec, signature, 0, 1)
        if not found:
            missing.append(name)
            continue
        case = found[0]
        inputs = [None if a is None else np.array(a, order="C") for a in case.inputs]
        cases.append(GraphCase(name, signature, inputs, dict(case.attrs)))
    return cases, missing
