"""The graph-safe flag (CT_OP_FLAG_GRAPH_SAFE) and the cases tests/test_cuda_device.py captures
in CUDA graphs, checked on the CPU: dynamic ops (which read their output sizes back to the host)
are never flagged, every flagged op has a case, and each case runs as the GPU test runs it (torch
tensors in, preallocated torch outputs through ``out=``) with the results of a plain call."""

from __future__ import annotations

import numpy as np
import torch
from graph_cases import graph_cases, graph_safe_ops

import ctensor
from ctensor._call import call
from ctensor._registry import get_spec


def test_dynamic_ops_are_not_flagged_graph_safe() -> None:
    dynamic = [n for n in ctensor.list_ops() if ctensor.op_info(n)["category"] == "dynamic"]
    assert {"nonzero", "boolean_mask", "unique_values"} <= set(dynamic)
    assert not set(dynamic) & set(graph_safe_ops())


def test_every_graph_safe_op_has_a_case_that_runs_into_torch_outputs() -> None:
    cases, missing = graph_cases("cpu")
    assert not missing
    assert sorted(case.op for case in cases) == sorted(graph_safe_ops())
    for case in cases:
        spec = get_spec(case.op)
        want = call(spec, list(case.inputs), None, dict(case.attrs))
        want = want if isinstance(want, tuple) else (want,)
        outs = tuple(torch.from_numpy(np.zeros_like(np.asarray(w))) for w in want)
        inputs = [None if a is None else torch.from_numpy(a.copy()) for a in case.inputs]
        call(spec, inputs, outs if len(outs) > 1 else outs[0], dict(case.attrs))
        for got, expected in zip(outs, want, strict=True):
            np.testing.assert_array_equal(got.numpy(), np.asarray(expected), err_msg=case.op)
