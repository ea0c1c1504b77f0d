"""Host scratch memory for CPU workspaces, kept between calls.

A workspace op (sort, conv2d, ...) asks for scratch on every call. Fresh host memory of that size
costs a page fault per page on first touch (and NumPy asks for huge pages, which the kernel
zeroes), which on a 2^22-element sort was about a tenth of the call. So each thread keeps its
last host buffer, as PyTorch's and CuPy's caching allocators keep device memory, and lends it
out as a view: while that view is alive (a weak reference to it says so) the buffer is in use,
and a nested call gets fresh memory. Callers hold the view itself for as long as the kernel uses
the memory (not only a derived view of it). Buffers above ``KEEP_LIMIT`` bytes are not kept.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

__all__ = ["KEEP_LIMIT", "host_scratch"]

#: The largest buffer a thread keeps between calls, in bytes.
KEEP_LIMIT = 256 << 20

_local = threading.local()


def _lend(buffer: np.ndarray, nbytes: int) -> np.ndarray:
    """A view of ``nbytes`` of this thread's kept buffer, recorded as lent."""
    view = buffer[:nbytes]
    _local.lent = weakref.ref(view)
    return view


def host_scratch(nbytes: int) -> np.ndarray:
    """``nbytes`` of uint8 host memory, reused from this thread's last call when it is free."""
    kept = getattr(_local, "buffer", None)
    lent = getattr(_local, "lent", None)
    free = lent is None or lent() is None
    if kept is not None and free and kept.nbytes >= nbytes:
        return _lend(kept, nbytes)
    fresh = np.empty(nbytes, np.uint8)
    if nbytes <= KEEP_LIMIT and (kept is None or nbytes >= kept.nbytes):
        _local.buffer = fresh
        return _lend(fresh, nbytes)
    return fresh
