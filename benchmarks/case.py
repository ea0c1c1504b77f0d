"""What one benchmark case is: implementations to time, correctness checks, work per call and
targets.

A case lists implementations by library name (``ctensor``, ``ctensor.bind``, ``ctensor.opencl``,
``numpy``, ``torch``, ``jax``, ``machine``); ``ctensor.opencl`` is ctensor on the OpenCL
backend's device (see opencl.py), present only when that backend is loaded. Each implementation
is an *expression* evaluated in its own namespace: timed as a statement, and evaluated once to
get the result that is checked. Every ctensor implementation is checked against every peer that
computes the same thing (``Case.reference``) before anything is timed; a wrong answer is
recorded and that implementation is not timed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Case", "Impl", "Target", "CTENSOR_IMPLS", "OUT_NAMES"]

#: The names the case builders give their out= buffers (NumPy arrays, torch views sharing them,
#: and the OpenCL implementations' DeviceArrays: the names starting with "d").
OUT_NAMES = ("c", "mc", "y", "out", "po", "sqt", "dc", "dmc", "dy", "dpo", "dsqt")

#: Implementations that are ctensor's: each is checked against the peers before it is timed,
#: and may be judged by targets (targets name "ctensor", the CPU backend, unless they say).
CTENSOR_IMPLS = ("ctensor", "ctensor.bind", "ctensor.opencl")


@dataclass
class Impl:
    """One way of computing a case: ``expr`` evaluated with ``namespace`` as globals."""

    expr: str
    namespace: dict[str, Any]


@dataclass
class Target:
    """A goal from the performance issue, judged on one ctensor implementation.

    ``kind`` says how: ``"speedup"`` needs ``peer``'s time / ``impl``'s time >= ``ratio``;
    ``"machine"`` needs ``impl``'s throughput >= ``ratio`` x the throughput of ``peer`` (an
    implementation of this case, e.g. the STREAM kernel, or ``limit:NAME`` for a machine limit
    measured in its own case, e.g. ``limit:fma_peak``)."""

    text: str
    kind: str
    peer: str
    ratio: float
    impl: str = "ctensor"


@dataclass
class Case:
    """One benchmark case. ``work`` is what one call does in ``unit`` terms (bytes for GB/s,
    flops for GFLOP/s, elements for Melem/s, 1 for steps/s); ``unit == "ns"`` reports time per
    call."""

    name: str
    group: str
    unit: str
    work: float
    impls: dict[str, Impl]
    description: str = ""
    # Peers whose results a ctensor result must match, with (rtol, atol); "exact" compares
    # bit for bit (after converting both to NumPy).
    reference: dict[str, tuple[float, float] | str] = field(default_factory=dict)
    # Converts a result to a NumPy array (or a tuple of them) for the check, per library.
    convert: dict[str, Any] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    # A machine-limit case names the limit it measures (its "machine" implementation).
    limit: str | None = None
    # Names of out= buffers in the implementations' namespaces: filled with a sentinel (NaN,
    # or all ones bits for integers) before each implementation is evaluated for the check, so
    # that an implementation that writes nothing cannot pass on another's result.
    outputs: tuple[str, ...] = OUT_NAMES
    # The pause before each sample, where it must be longer than the run's (a peer whose idle
    # threads spin longer than that: see cases_compute.py); None keeps the run's.
    settle_s: float | None = None
