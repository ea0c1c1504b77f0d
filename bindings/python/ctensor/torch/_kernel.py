"""The kernels behind ``torch.ops.ctensor``: ctensor's own call path on the tensors' memory.

Inputs are read through DLPack without copies and the results are allocated by torch (its
caching allocator on CUDA), on the inputs' device; the workspace of a workspace-requesting op
comes from torch too (``_frameworks``), and on CUDA the call runs on torch's current stream.
An operator without tensor inputs allocates its outputs from ``ct_op_infer`` on the ``device``
argument, then runs into them.
"""

from __future__ import annotations

from typing import Any

import torch

from .. import ops as _ops
from .._call import call
from .._dtypes import to_dtype_name
from .._registry import OpSpec
from ._arguments import ctensor_attrs, op_results
from ._arguments import flat_inputs as _flat_inputs
from ._fake import infer
from ._schema import arg_name, is_factory

__all__ = ["make_kernel", "ctensor_attrs", "op_results"]


def make_kernel(spec: OpSpec):  # noqa: ANN201
    """The kernel of ``torch.ops.ctensor.<spec.name>`` (dispatch keys: ``_kernel_keys``)."""
    if is_factory(spec):
        return _factory_kernel(spec)
    function = getattr(_ops, spec.name)
    renamed = any(arg_name(a["name"]) != a["name"] for a in spec.attrs) or any(
        a["type"] == "dtype" for a in spec.attrs
    )
    variadic_out = spec.variadic_output

    if not spec.variadic_input and not renamed and not variadic_out:

        def kernel(*args: Any, **kwargs: Any) -> Any:
            # The dispatcher passes only attributes that differ from their defaults.
            return function(*args, **kwargs)

        return kernel

    def general_kernel(*args: Any, **kwargs: Any) -> Any:
        attrs = ctensor_attrs(spec, kwargs) if kwargs else None
        return op_results(spec, call(spec, _flat_inputs(spec, args), None, attrs))

    return general_kernel


def _factory_kernel(spec: OpSpec):  # noqa: ANN202
    """An operator callable without tensor inputs (random numbers, arange; random_bernoulli
    without ``probs``): its outputs are allocated from ``ct_op_infer`` on the device of its
    tensor inputs, or ``device`` when none is given, then the call runs into them."""

    def kernel(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        attrs = ctensor_attrs(spec, kwargs)
        inputs = _flat_inputs(spec, args)
        present = [t for t in inputs if t is not None]
        if present:
            device = present[0].device
        device = torch.device("cpu") if device is None else torch.device(device)
        dtypes = [None if t is None else to_dtype_name(t.dtype) for t in inputs]
        shapes = [None if t is None else tuple(t.shape) for t in inputs]
        outputs = tuple(
            torch.empty(shape, dtype=getattr(torch, dtype), device=device)
            for dtype, shape in infer(spec, dtypes, shapes, attrs)
        )
        call(spec, inputs, outputs, attrs)
        return op_results(spec, outputs)

    return kernel
