"""The ctensor conformance suite: runs every op x dtype a backend registers through the C ABI
and checks the results against a float64 reference and the ABI's promises (layout and version,
infer against run, guard bytes around outputs and workspace, untouched inputs, allocator use,
error statuses, thread safety). `python -m ctensor.conformance --help` runs it; the format of
its JSON report is in docs/conformance.md."""

from __future__ import annotations

#: Version of the suite (its checks and report format).
SUITE_VERSION = "1.0.0"

__all__ = ["SUITE_VERSION"]
