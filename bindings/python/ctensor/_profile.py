"""``ctensor.profile()``: a record of every kernel run, through the C ABI's profiling hooks.

While at least one ``profile`` is active, ctensor's C profiler (``ct_set_profiler``) is this
module's pair of callbacks (``ctpy_profile_begin`` / ``ctpy_profile_end``, cffi ``extern
"Python"``); they see every ``ct_op_run`` and ``ct_plan_run`` of the process that passed its
checks, from any thread and any path (``ctensor.ops``, bound calls, autodiff, other C callers),
and hand a record of it to every profile that was active when the run began and still is when it
ends. The profiler that was installed before the first profile is saved and installed again when
the last one ends, so profiles nest and overlap across threads. With no profile active, nothing
is installed and runs cost nothing extra.

Under ``torch.profiler``, calls of ``ctensor.ops`` run by the Python path inside
``torch.profiler.record_function("ctensor::<name>")`` (``torch_profiling`` / ``recorded_call``),
so they appear by name as ``torch.ops.ctensor`` ops do; the C fast path (FastOp) leaves calls on
torch tensors to that path while torch's profiler is on.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from typing import Any

from ._dtypes import name_of_ct
from ._errors import check
from ._lib import ffi, lib
from ._registry import DEVICE_NAMES

__all__ = ["profile", "torch_profiling", "recorded_call"]

_NULL = ffi.NULL
_unpack = ffi.unpack
_string = ffi.string
_now = time.perf_counter_ns
_SOURCES = {lib.CT_PROFILE_OP_RUN: "op_run", lib.CT_PROFILE_PLAN_RUN: "plan_run"}

# Installs and uninstalls are serialised; the callbacks read `_active` without the lock (a tuple
# replaced as a whole, so each reads one consistent value).
_lock = threading.Lock()
_active: tuple[profile, ...] = ()
_saved: Any = None  # the ct_profiler installed before the first active profile
# call_id -> (record, profiles active at begin), between a run's begin and its end.
_pending: dict[int, tuple[list, tuple]] = {}
# Static C strings (op and backend names) by pointer (cffi pointers hash by address).
_strings: dict[Any, str] = {}
_thread = threading.local()  # .native_id: threading.get_native_id(), once per thread

# A record is a list, filled in the callbacks and turned into a dict when read (``_as_dict``).
_NAME, _BACKEND, _DEVICE, _SOURCE, _SHAPES, _DTYPES, _THREAD, _CALL, _STATUS, _BEGIN, _END = range(
    11
)


def _text(pointer: Any) -> str:
    text = _strings.get(pointer)
    if text is None:
        text = _string(pointer).decode("utf-8", "replace") if pointer != _NULL else ""
        _strings[pointer] = text
    return text


def _native_id() -> int:
    try:
        return _thread.native_id
    except AttributeError:
        _thread.native_id = threading.get_native_id()
        return _thread.native_id


def _ignore_error(exception: Any, value: Any, traceback: Any) -> None:
    """cffi's onerror: a failing callback loses its record, and never prints."""


@ffi.def_extern(onerror=_ignore_error)
def ctpy_profile_begin(user_data: Any, event: Any) -> None:  # noqa: ARG001
    profiles = _active
    if not profiles:
        return
    shapes: list = []
    dtypes: list = []
    inputs = event.inputs
    for i in range(event.num_inputs):
        t = inputs[i]
        if t == _NULL:  # an absent optional input
            shapes.append(None)
            dtypes.append(None)
            continue
        ndim = t.ndim
        shapes.append(tuple(_unpack(t.shape, ndim)) if ndim else ())
        dtype = t.dtype
        dtypes.append((dtype.code, dtype.bits, dtype.lanes))
    device = event.device
    call_id = event.call_id
    record = [
        _text(event.op_name),
        _text(event.backend),
        (device.device_type, device.device_id),
        event.source,
        shapes,
        dtypes,
        _native_id(),
        call_id,
        None,
        0,
        0,
    ]
    _pending[call_id] = (record, profiles)
    record[_BEGIN] = _now()


@ffi.def_extern(onerror=_ignore_error)
def ctpy_profile_end(user_data: Any, event: Any, status: int) -> None:  # noqa: ARG001
    end = _now()
    entry = _pending.pop(event.call_id, None)
    if entry is None:  # it began while no profile was active
        return
    record, profiles = entry
    record[_END] = end
    record[_STATUS] = status
    for p in profiles:
        if p._recording:
            p._records.append(record)


def _as_dict(record: list) -> dict:
    device_type, device_id = record[_DEVICE]
    return {
        "name": record[_NAME],
        "backend": record[_BACKEND],
        "device": f"{DEVICE_NAMES.get(device_type, device_type)}:{device_id}",
        "source": _SOURCES.get(record[_SOURCE], str(record[_SOURCE])),
        "shapes": record[_SHAPES],
        "dtypes": [None if d is None else name_of_ct(d) for d in record[_DTYPES]],
        "thread_id": record[_THREAD],
        "call_id": record[_CALL],
        "status": record[_STATUS],
        "begin_ns": record[_BEGIN],
        "end_ns": record[_END],
    }


def _start(p: profile) -> None:
    global _active, _saved
    with _lock:
        if p._recording:
            raise RuntimeError("this ctensor.profile is already active")
        if not _active:
            saved = ffi.new("ct_profiler*")
            saved.struct_size = ffi.sizeof("ct_profiler")
            check(lib.ct_get_profiler(saved))
            ours = ffi.new("ct_profiler*")
            ours.struct_size = ffi.sizeof("ct_profiler")
            ours.begin = lib.ctpy_profile_begin
            ours.end = lib.ctpy_profile_end
            check(lib.ct_set_profiler(ours))  # copied by the library
            _saved = saved
        p._recording = True
        _active = (*_active, p)


def _stop(p: profile) -> None:
    global _active, _saved
    with _lock:
        if not p._recording:
            return
        p._recording = False
        _active = tuple(q for q in _active if q is not p)
        if not _active:
            saved, _saved = _saved, None
            had = saved is not None and (saved.begin != _NULL or saved.end != _NULL)
            # Returns once the runs that began with our callbacks have ended.
            check(lib.ct_set_profiler(saved if had else _NULL))
            _pending.clear()


@atexit.register
def _stop_all() -> None:
    for p in _active:
        _stop(p)


class profile:  # noqa: N801 - used as ctensor.profile(), like torch.profiler.profile
    """Records every ctensor kernel run while active (a context manager).

    ``with ctensor.profile("trace.json") as prof: ...`` records each run of an operator (from
    any thread) and, on exit, writes Chrome's trace format to the path (open it in
    chrome://tracing or https://ui.perfetto.dev). ``prof.events`` lists the runs as dicts:
    ``name``, ``backend``, ``device`` ("cpu:0"), ``source`` ("op_run" or "plan_run"),
    ``shapes`` and ``dtypes`` of the inputs (None for an absent optional input),
    ``thread_id``, ``call_id``, ``status`` (0 for success), ``begin_ns`` and ``end_ns``
    (``time.perf_counter_ns`` just before and just after the kernel). ``prof.chrome_trace()``
    gives the trace as a dict.

    Profiles nest and may be active on several threads at once: each records the runs that
    began and ended while it was active. A call whose checks fail runs no kernel and is not
    recorded. The profiler installed through the C ABI before is restored when the last active
    profile ends.
    """

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = path
        self._records: list[list] = []  # appended by the callbacks
        self._events: list[dict] = []  # the first len(_events) records, as dicts
        self._recording = False

    @property
    def events(self) -> list[dict]:
        """The runs recorded so far, in the order they ended."""
        records = self._records
        for i in range(len(self._events), len(records)):
            self._events.append(_as_dict(records[i]))
        return self._events

    def __enter__(self) -> profile:
        _start(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _stop(self)
        if self.path is not None:
            self.save(self.path)

    def chrome_trace(self) -> dict:
        """The recorded runs in Chrome's trace event format: complete ("X") events with ``ts``
        and ``dur`` in microseconds, the process and thread ids, and the details in ``args``."""
        pid = os.getpid()
        events: list[dict] = [
            {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "ctensor"}}
        ]
        for e in self.events:
            events.append(
                {
                    "name": e["name"],
                    "cat": "ctensor",
                    "ph": "X",
                    "ts": e["begin_ns"] / 1000.0,
                    "dur": (e["end_ns"] - e["begin_ns"]) / 1000.0,
                    "pid": pid,
                    "tid": e["thread_id"],
                    "args": {
                        "backend": e["backend"],
                        "device": e["device"],
                        "source": e["source"],
                        "shapes": [None if s is None else list(s) for s in e["shapes"]],
                        "dtypes": e["dtypes"],
                        "status": e["status"],
                        "call_id": e["call_id"],
                    },
                }
            )
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def save(self, path: str | os.PathLike) -> None:
        """Writes ``chrome_trace()`` as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)


# ---- torch.profiler ----------------------------------------------------------------------------

_torch_state = threading.local()  # .inside: this thread runs a call recorded_call names


def torch_profiling() -> bool:
    """True when torch's profiler is recording (torch.autograd.profiler's own fast flag) and
    this thread is not already inside a call that ``recorded_call`` names."""
    module = sys.modules.get("torch.autograd.profiler")
    return (
        module is not None
        and module._is_profiler_enabled
        and not getattr(_torch_state, "inside", False)
    )


def recorded_call(call: Any, spec: Any, *args: Any) -> Any:
    """``call(spec, *args)`` inside ``record_function("ctensor::<name>")``, so that torch's
    profiler shows the call by name (as it shows ``torch.ops.ctensor.<name>``)."""
    from torch.autograd.profiler import record_function

    _torch_state.inside = True
    try:
        with record_function(f"ctensor::{spec.name}"):
            return call(spec, *args)
    finally:
        _torch_state.inside = False
