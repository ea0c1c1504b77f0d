"""The interop suite: ctensor next to the NumPy and MXNet versions it supports.

It runs in the main test run (NumPy 2.x, collected through pyproject's testpaths) and, from
.ci/run, in two more environments: NumPy 1.23.5 with MXNet 1.9.1, and NumPy 2.0.x. Its files
import nothing but NumPy, ml_dtypes, MXNet and the standard library, so those environments need
no PyTorch or JAX (docs/interop.md says how to build them locally); the test of the MXNet
example (test_mxnet_example.py) also needs scikit-learn, whose bundled digits it trains on.

``test_mxnet_*.py`` files need MXNet 1.x, which imports only next to NumPy <= 1.23.5: where it
cannot be imported they are not collected, and pytest's header says why. Setting
``CTENSOR_REQUIRE_MXNET=1`` (as .ci/run does in the MXNet environment) turns a missing MXNet into
a failure instead. A new MXNet test file only needs that name.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest


def _mxnet_unavailable_reason() -> str | None:
    try:
        with warnings.catch_warnings():  # MXNet 1.9's own use of distutils at import
            warnings.simplefilter("ignore", DeprecationWarning)
            import mxnet  # noqa: F401
    except Exception as error:  # noqa: BLE001 - ImportError, or MXNet failing on this NumPy
        return f"mxnet cannot be imported here ({type(error).__name__}: {error})"
    return None


_MXNET_UNAVAILABLE = _mxnet_unavailable_reason()
if _MXNET_UNAVAILABLE and os.environ.get("CTENSOR_REQUIRE_MXNET") == "1":
    raise pytest.UsageError(f"CTENSOR_REQUIRE_MXNET=1 but {_MXNET_UNAVAILABLE}")
collect_ignore_glob = ["test_mxnet_*.py"] if _MXNET_UNAVAILABLE else []


def pytest_report_header() -> list[str]:
    mxnet = f"not collected, {_MXNET_UNAVAILABLE}" if _MXNET_UNAVAILABLE else "collected"
    return [f"interop suite: NumPy {np.__version__}; MXNet tests (test_mxnet_*.py): {mxnet}"]


def pytest_configure(config: pytest.Config) -> None:
    # mxnet 1.9.1 warns about NumPy, SciPy and distutils names it uses itself, on import and in
    # every nd.array call once SciPy is installed (scikit-learn, for the MXNet example, brings
    # it): nothing ctensor can act on.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:mxnet")
