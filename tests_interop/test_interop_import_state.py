"""``import ctensor`` changes no process-global state that other libraries rely on.

Regression test of issue 29: ctensor set ``argtypes`` on ``ctypes.pythonapi``'s ``PyCapsule_*``
functions, which are shared by the whole process, and MXNet's ``mx.nd.from_dlpack`` then failed.
Each check runs in a fresh interpreter, so nothing imported by the test run interferes.
"""

from __future__ import annotations

import json
import subprocess
import sys

_SNAPSHOT = r"""
import ctypes, json, signal, sys, threading, warnings, os
import numpy as np

def snapshot():
    api = ctypes.pythonapi
    functions = {
        name: (repr(getattr(api, name).argtypes), repr(getattr(api, name).restype))
        for name in ("PyCapsule_New", "PyCapsule_IsValid", "PyCapsule_GetPointer",
                     "PyCapsule_GetName", "PyCapsule_SetName", "PyCapsule_GetContext")
    }
    return {
        "pythonapi": functions,
        "pythonapi_attributes": sorted(k for k in vars(api) if not k.startswith("_")),
        "printoptions": repr(sorted(np.get_printoptions().items())),
        "errstate": repr(sorted(np.geterr().items())),
        "warnings": repr(warnings.filters),
        "excepthook": repr(sys.excepthook),
        "displayhook": repr(sys.displayhook),
        "threading_excepthook": repr(threading.excepthook),
        "unraisablehook": repr(sys.unraisablehook),
        "trace": repr((sys.gettrace(), sys.getprofile())),
        "recursion": sys.getrecursionlimit(),
        "path_hooks": repr(sys.path_hooks),
        "meta_path": [type(f).__module__ + "." + type(f).__qualname__ for f in sys.meta_path],
        "signals": repr([signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]),
        "environ": sorted(os.environ.items()),
        "switchinterval": sys.getswitchinterval(),
    }

before = snapshot()
import ctensor, ctensor.testing, ctensor.ops
ctensor.ops.add(np.ones(3), np.ones(3))
after = snapshot()
print(json.dumps({"before": before, "after": after}))
"""


def test_import_ctensor_changes_no_global_state():
    done = subprocess.run(
        [sys.executable, "-c", _SNAPSHOT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    states = json.loads(done.stdout.strip().splitlines()[-1])
    before, after = states["before"], states["after"]
    # The one documented addition: ctensor._torch_hook's finder, which answers only for
    # torch._dynamo (so that torch.compile can trace ctensor.ops) and removes itself then.
    hook = "ctensor._torch_hook._DynamoFinder"
    assert after["meta_path"] == [hook, *before["meta_path"]]
    after["meta_path"] = before["meta_path"]
    changed = {key for key in before if before[key] != after[key]}
    assert not changed, {key: (before[key], after[key]) for key in changed}
