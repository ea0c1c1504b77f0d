"""The kernels behind ``torch.ops.ctensor``: ctensor's own call path on the tensors' memory.

Inputs are read through DLPack without copies and the results are allocated by torch (its
caching allocator on CUDA), on the inputs' device; the workspace of a workspace-requesting op
comes from torch too (``_frameworks``), and on CUDA the call runs on torch's current stream.
An operator without tensor inputs allocates its outputs from ``ct_op_infer`` on the ``device``
argument, then runs into them.

Small calls with attributes (what a compiled graph of a small model makes: conv2d with its
padding, max_pool2d with its window) spend most of their time in the general call path reading
the arguments. Those on CPU tensors of at most ``PLAN_BYTES`` in all (inputs and results)
replay a bound call (``ctensor.bind``) made by the second call of the same operator,
attributes and input layouts (dtype, shape, strides, storage offset), into results allocated
like that call's: per thread, at most ``PLANS_PER_THREAD`` of them (then they are all
dropped), each holding the tensors of the call that made it. Calls whose attributes change
every time (dropout's offset) so never bind; nor does a call ``bind`` refuses (a dtype the
kernel casts), which keeps the general path.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from .. import ops as _ops
from .._bind import bind
from .._call import call
from .._dtypes import to_dtype_name
from .._registry import OpSpec
from ._arguments import ctensor_attrs, flat_inputs, op_results
from ._fake import infer
from ._schema import arg_name, is_factory

__all__ = ["make_kernel", "ctensor_attrs", "op_results", "PLAN_BYTES", "PLANS_PER_THREAD"]

#: Calls whose tensors (inputs and results) hold at most this many bytes in all replay bound
#: calls. With PLANS_PER_THREAD, it bounds the memory the kept calls hold alive: 32 MiB per
#: thread at most.
PLAN_BYTES = 1 << 20
#: Bound calls kept per thread.
PLANS_PER_THREAD = 32

_PLAIN = (torch.Tensor, torch.nn.Parameter)
_local = threading.local()
_REFUSED = ()  # a key whose call bind refused: it keeps the general path


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
        # ctensor.ops.<name> itself: the dispatcher passes only attributes that differ from
        # their defaults, under their ctensor names.
        general = function
    else:

        def general(*args: Any, **kwargs: Any) -> Any:
            attrs = ctensor_attrs(spec, kwargs) if kwargs else None
            return op_results(spec, call(spec, flat_inputs(spec, args), None, attrs))

    if spec.variadic_input or variadic_out or spec.is_dynamic or not spec.attrs:
        return general
    return _planned(spec, function, general)


def _layout_key(args: tuple, kwargs: dict) -> tuple | None:
    """What a bound call of these arguments depends on, or None for a call not to bind (not
    only CPU tensors, or more than PLAN_BYTES)."""
    key = []
    total = 0
    for t in args:
        if t is None:
            key.append(None)
            continue
        if type(t) not in _PLAIN or not t.is_cpu:
            return None
        total += t.nbytes
        key.append((t.dtype, t.shape, t.stride(), t.storage_offset()))
    if total > PLAN_BYTES:
        return None
    for name, value in kwargs.items():
        key.append((name, tuple(value) if type(value) is list else value))
    return tuple(key)


def _layouts(results: tuple) -> tuple:
    """(shape, strides, dtype) of each result, to allocate the results of later calls alike."""
    return tuple((t.shape, t.stride(), t.dtype) for t in results)


def _tensor_bytes(args: tuple) -> int:
    """Bytes of the tensors among ``args``."""
    return sum(t.nbytes for t in args if t is not None)


def _planned(spec: OpSpec, function: Any, general: Any):  # noqa: ANN202
    """``general`` behind the per-thread bound calls (see the module's docstring)."""
    num_inputs = len(spec.inputs)
    single = len(spec.outputs) == 1
    name = spec.name

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if not kwargs and len(args) == num_inputs:
            return general(*args)  # ctensor's fast path (FastOp) takes it
        key = _layout_key(args, kwargs)
        if key is None:
            return general(*args, **kwargs)
        key = (name, key)
        try:
            plans = _local.plans
        except AttributeError:
            plans = _local.plans = {}
        entry = plans.get(key)
        if entry is _REFUSED:
            return general(*args, **kwargs)
        if entry is None:  # first met: run it, and keep its results' layouts
            result = general(*args, **kwargs)
            if len(plans) >= PLANS_PER_THREAD:
                plans.clear()
            plans[key] = (None, _layouts((result,) if single else tuple(result)))
            return result
        bound, layouts = entry
        outs = tuple(
            torch.empty_strided(shape, strides, dtype=dtype) for shape, strides, dtype in layouts
        )
        if bound is None:  # met a second time: bind it, the binding run computing this call
            if sum(t.nbytes for t in outs) + _tensor_bytes(args) <= PLAN_BYTES:
                try:
                    bound = bind(function, *args, out=outs, **ctensor_attrs(spec, kwargs))
                except Exception:  # noqa: BLE001 - a call bind refuses keeps the general path
                    bound = None
            if bound is None:
                plans[key] = _REFUSED
                return general(*args, **kwargs)
            plans[key] = (bound, layouts)
        else:
            bound(*args, out=outs)
        return outs[0] if single else outs

    return kernel


def _factory_kernel(spec: OpSpec):  # noqa: ANN202
    """An operator callable without tensor inputs (random numbers, arange; random_bernoulli
    without ``probs``): its outputs are allocated from ``ct_op_infer`` on the device of its
    tensor inputs, or ``device`` when none is given, then the call runs into them."""

    def kernel(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        attrs = ctensor_attrs(spec, kwargs)
        inputs = flat_inputs(spec, args)
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
