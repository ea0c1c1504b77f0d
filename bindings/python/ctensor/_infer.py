"""Output shapes and dtypes of a call from its inputs' shapes and dtypes (``ct_op_infer`` on
views without data), for the framework integrations that trace calls: ``ctensor.torch``'s fake
kernels and ``ctensor.jax``'s abstract evaluation."""

from __future__ import annotations

from ._attrs import attrs_for
from ._dtypes import code_bits, name_of_ct
from ._errors import check
from ._lib import ffi, lib
from ._registry import OpSpec

__all__ = ["infer"]

_INFO_CAPACITY = 64


def infer(
    spec: OpSpec, dtypes: list[str | None], shapes: list[tuple[int, ...] | None], attrs: dict
) -> list[tuple[str, tuple[int, ...]]]:
    """``ct_op_infer`` on views of these dtypes and shapes (None: an absent input); returns
    (dtype name, shape) per output, -1 where the extent depends on the data. Raises the C
    library's error (ctensor's exception class and message) for a call it refuses."""
    n = len(dtypes)
    views = ffi.new("ct_tensor[]", max(n, 1))
    pointers = ffi.new("ct_tensor*[]", max(n, 1))
    keep = []
    for i, (dtype, shape) in enumerate(zip(dtypes, shapes, strict=True)):
        if dtype is None:
            pointers[i] = ffi.NULL
            continue
        view = views[i]  # data stays NULL: ct_op_infer checks the layout only
        view.device.device_type = lib.CT_DEVICE_CPU
        view.ndim = len(shape)
        code, bits = code_bits(dtype)
        view.dtype.code, view.dtype.bits, view.dtype.lanes = code, bits, 1
        extents = ffi.new("int64_t[]", list(shape) or [0])
        keep.append(extents)
        view.shape = extents
        pointers[i] = views + i
    attr_entry = attrs_for(spec, attrs) if attrs else (ffi.NULL, 0, None)
    infos = ffi.new("ct_tensor_info[]", _INFO_CAPACITY)
    count = ffi.new("int32_t*")
    check(
        lib.ct_op_infer(
            spec.op, pointers, n, attr_entry[0], attr_entry[1], infos, _INFO_CAPACITY, count
        )
    )
    results = []
    for info in infos[0 : count[0]]:
        results.append((name_of_ct(info.dtype), tuple(info.shape[k] for k in range(info.ndim))))
    return results
