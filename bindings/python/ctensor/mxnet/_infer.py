"""Output shapes and dtypes of a call from ``ct_op_infer``, never touching data.

``plan`` resolves the input dtypes as the real call does (``OpSpec.choose_dtypes``: the kernel
the call would run), then asks ``ct_op_infer`` on views without data (``ctensor._infer.infer``,
shared with ``ctensor.torch`` and ``ctensor.jax``). It checks everything the C library checks
before a kernel runs (arity, shapes, dtypes, attributes), so a ``ctensor.mxnet`` call raises
ctensor's own exception at the call, before MXNet's engine sees it. Plans are cached by (op,
attributes, shapes, dtypes): MXNet asks for shapes and dtypes again for every call
(``CustomOpProp.infer_shape`` / ``infer_type``).
"""

from __future__ import annotations

from .._infer import infer
from .._registry import OpSpec

__all__ = ["Plan", "plan", "representative_dtypes"]


class Plan:
    """One call's resolved input dtypes and its outputs' dtypes and shapes (-1: data-dependent)."""

    __slots__ = ("input_dtypes", "output_dtypes", "output_shapes")

    def __init__(self, input_dtypes: tuple, output_dtypes: tuple, output_shapes: tuple):
        self.input_dtypes = input_dtypes
        self.output_dtypes = output_dtypes
        self.output_shapes = output_shapes


_PLANS: dict[tuple, Plan] = {}


def plan(spec: OpSpec, attrs_key: str, attrs: dict, shapes: tuple, dtypes: tuple) -> Plan:
    """The plan of a call of ``spec`` on inputs of these shapes and dtype names (None: an absent
    input), with attributes ``attrs`` (``attrs_key``: their canonical text, the cache key)."""
    key = (spec.name, attrs_key, shapes, dtypes)
    found = _PLANS.get(key)
    if found is not None:
        return found
    chosen = spec.choose_dtypes("cpu", dtypes) if dtypes else ()
    resolved = tuple(target or dtype for target, dtype in zip(chosen, dtypes, strict=True))
    outputs = infer(spec, list(resolved), list(shapes), dict(attrs))
    result = Plan(
        resolved, tuple(dtype for dtype, _ in outputs), tuple(shape for _, shape in outputs)
    )
    if len(_PLANS) > 4096:
        _PLANS.clear()
    _PLANS[key] = result
    return result


def representative_dtypes(spec: OpSpec, present: tuple) -> tuple:
    """Input dtypes of the op's first CPU kernel (None where ``present`` says absent): shapes
    never depend on dtypes, so MXNet's shape inference, which comes without dtypes, asks
    ``ct_op_infer`` with these."""
    signatures = spec.kernels.get("cpu") or [()]
    signature = signatures[0]
    num_params = len(spec.inputs)
    return tuple(
        signature[min(i, num_params - 1)] if is_present and signature else None
        for i, is_present in enumerate(present)
    )
