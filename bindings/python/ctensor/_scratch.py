"""Host scratch memory for CPU workspaces, kept between calls.

A workspace op (sort, conv2d, ...) asks for scratch on every call. Fresh host memory of that size
costs a page fault per page on first touch (and NumPy asks for huge pages, which the kernel
zeroes), which on a 2^22-element sort was about a tenth of the call. So each thread keeps its
last host buffer, as PyTorch's and CuPy's caching allocators keep device memory, and hands out
views of it while no earlier view is alive; a nested call (a view still held) gets fresh memory.
Buffers above ``KEEP_LIMIT`` bytes are not kept.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

__all__ = ["KEEP_LIMIT", "host_scratch"]

#: The largest buffer a thread keeps between calls, in bytes.
KEEP_LIMIT = 256 << 20

_local = threading.local()
# References to a kept buffer that no caller holds: _local's, the name below, getrefcount's.
_IDLE_REFS = 3


def host_scratch(nbytes: int) -> np.ndarray:
    """``nbytes`` of uint8 host memory, reused from this thread's last call when it is free."""
    kept = getattr(_local, "buffer", None)
    if kept is not None and kept.nbytes >= nbytes and sys.getrefcount(kept) == _IDLE_REFS:
        return kept[:nbytes]
    fresh = np.empty(nbytes, np.uint8)
    if nbytes <= KEEP_LIMIT and (kept is None or nbytes >= kept.nbytes):
        _local.buffer = fresh
        return fresh[:nbytes]
    return fresh
