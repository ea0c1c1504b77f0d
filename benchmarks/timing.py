"""Interleaved timing: every implementation of a case is measured in the same round-robin, so
machine noise (other processes, frequency changes) falls on all of them alike.

Each implementation is a statement run by ``timeit.Timer`` (so per-call overhead cases time the
call itself, not a wrapper around it). A sample runs the statement ``number`` times, ``number``
chosen per implementation so that one sample takes at least ``min_sample_s``; the result is the
median over ``repeats`` samples of the time per call.

Interleaving is per sample, not per call. Thread pools keep spinning for a while after a
parallel region, and that slows whichever library runs next on the same cores: OpenBLAS's
threads spin for about 0.1 s (2^28 cycles) after each call, and on a machine with few cores a
library timed right after another one's sample can lose a third of its speed to those spinning
threads. So with more than one thread each sample starts after a pause (``settle_s``, 0.1 s
by default) in which every other library's threads go idle, then one untimed call of the
implementation itself (its own threads awake again, as in back-to-back use): each
implementation is timed warm, on cores the others have let go.
"""

from __future__ import annotations

import statistics
import time
import timeit
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Timed", "calibrate", "interleaved"]


@dataclass
class Timed:
    """One implementation to time: ``stmt`` run with ``namespace`` as its globals."""

    name: str
    stmt: str
    namespace: dict[str, Any]
    number: int = 1
    samples: list[float] = field(default_factory=list)
    timer: Any = None

    def prepare(self) -> None:
        self.timer = timeit.Timer(self.stmt, globals=self.namespace)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def calibrate(item: Timed, min_sample_s: float) -> None:
    """Picks ``item.number`` so that one sample lasts at least ``min_sample_s``."""
    number = 1
    while True:
        elapsed = item.timer.timeit(number)
        if elapsed >= min_sample_s or number >= 1 << 24:
            break
        grow = min_sample_s / elapsed * 1.2 if elapsed > 0 else 10.0
        number = max(number + 1, min(int(number * grow), number * 10))
    item.number = number


def interleaved(
    items: list[Timed], repeats: int, min_sample_s: float, settle_s: float = 0.0
) -> None:
    """Fills each item's ``samples`` (seconds per call), in a round-robin that starts one item
    later on every repetition, pausing ``settle_s`` seconds and making one untimed call before
    each sample."""
    for item in items:
        item.prepare()
        item.timer.timeit(1)  # warm-up: first-call caches, page faults
        calibrate(item, min_sample_s)
        item.samples = []
    count = len(items)
    for rep in range(repeats):
        for k in range(count):
            item = items[(rep + k) % count]
            if settle_s > 0:
                time.sleep(settle_s)
                item.timer.timeit(1)
            item.samples.append(item.timer.timeit(item.number) / item.number)
