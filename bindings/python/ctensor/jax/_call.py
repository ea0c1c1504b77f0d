"""The raw primitive of ``ctensor.jax``: one ctensor operator call as an XLA custom call.

``call(name, inputs, attrs)`` takes the inputs as ``ctensor.ops`` does (one per input tensor,
None for an absent optional input, the variadic input's arrays flattened at the end) and returns
the list of outputs (a variadic output flattened). At trace time it:

1. makes every input a JAX array (Python scalars of elementwise ops take JAX's weak-type
   promotion with the arrays of the call) and casts the inputs to the dtypes the kernel runs in
   (``OpSpec.choose_dtypes``, as ``ctensor.ops`` resolves a call);
2. asks ``ct_op_infer`` for the outputs' shapes and dtypes (``ctensor._infer``: errors from C
   surface here, with ctensor's exception classes and messages);
3. emits ``jax.ffi.ffi_call("ctensor_op", ...)`` with the operator name and attributes as FFI
   attributes (encoded as ``_encode`` says); the handler (bindings/python/xla) reads them once
   per compiled instance, and at run time fills the data pointers, takes any workspace from
   XLA's scratch allocator and runs ``ct_op_run``.

Batching (``vmap_method``): an elementwise op runs once for the whole batch. Its inputs are first
given the same rank (leading unit dimensions, which broadcasting ignores) so that vmap's batch
dimension lines up across them; unbatched inputs then get a unit batch dimension that
broadcasting stretches ("expand_dims"), or, for ops where not every input broadcasts (an
elementwise backward op whose ``grad_out`` must have the forward output's shape), are repeated
along the batch ("broadcast_all"). Every other op runs once per batch element ("sequential").

Dynamic operators (outputs sized by the data) cannot be XLA custom calls: on concrete arrays they
run eagerly through ``ctensor.ops`` (DLPack, no copies); under tracing they raise
``ctensor.jax.TracingError``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import ops as _ops
from .._attrs import attrs_for
from .._dtypes import to_dtype_name
from .._errors import CTensorError, InvalidArgumentError, UnsupportedDTypeError
from .._infer import infer
from .._lib import ffi, lib
from .._registry import OpSpec, get_spec
from ._xla import TARGET, ensure_registered

__all__ = ["TracingError", "call", "vmap_method"]

_Tracer = jax.core.Tracer
_SCALARS = (bool, int, float, complex)


class TracingError(InvalidArgumentError):
    """A ctensor operator that cannot run under ``jax.jit``/tracing (a dynamic operator, whose
    output sizes depend on the data)."""


def vmap_method(spec: OpSpec) -> str:
    """How ``jax.vmap`` batches the op's custom call: elementwise ops run once for the whole
    batch, ``"expand_dims"`` where every input broadcasts against the others (an unbatched
    input gets a unit batch dimension), ``"broadcast_all"`` where one does not (a backward op
    whose ``grad_out`` must have the forward output's shape: unbatched inputs are repeated along
    the batch); every other op runs once per batch element (``"sequential"``)."""
    method = _VMAP_METHODS.get(spec.name)
    if method is None:
        if not spec.elementwise or spec.variadic_input:
            method = "sequential"
        elif _broadcasts_every_input(spec):
            method = "expand_dims"
        else:
            method = "broadcast_all"
        _VMAP_METHODS[spec.name] = method
    return method


_VMAP_METHODS: dict[str, str] = {}


def _broadcasts_every_input(spec: OpSpec) -> bool:
    """Whether ct_op_infer lets any one input have extent 2 where the others have 1 (the
    output then has extent 2), for the op's first CPU kernel signature and default attributes
    (an op that needs attributes to infer is taken as one that does not broadcast)."""
    signatures = spec.kernels.get("cpu") or next(iter(spec.kernels.values()), [])
    if not signatures:
        return False
    dtypes = list(signatures[0][: len(spec.inputs)])
    if len(dtypes) <= 1:
        return True  # one input: batched whenever the call is
    for wide in range(len(dtypes)):
        shapes = [(2,) if k == wide else (1,) for k in range(len(dtypes))]
        try:
            outputs = infer(spec, dtypes, shapes, {})
        except CTensorError:
            return False
        if any(shape != (2,) for _, shape in outputs):
            return False
    return True


# ------------------------------------------------------------------------------------------------
# Attributes: ct_attr values (made by the binding's own conversion, _attrs) -> FFI attributes
# ------------------------------------------------------------------------------------------------

_NONE = np.zeros(0, np.uint8)
_ENCODED: dict[tuple, dict] = {}
_ENCODED_SIZE = 512


def _decode_value(value: Any) -> Any:
    """One ct_attr_value as the FFI attribute the handler reads back as that ct_attr type."""
    kind = value.type
    if kind == lib.CT_ATTR_INT:
        return np.int64(value.value.i)
    if kind == lib.CT_ATTR_FLOAT:
        return np.float64(value.value.f)
    if kind == lib.CT_ATTR_BOOL:
        return np.bool_(value.value.b)
    if kind == lib.CT_ATTR_STRING:
        return ffi.string(value.value.s).decode("utf-8")
    if kind == lib.CT_ATTR_INT_LIST:
        return np.array(ffi.unpack(value.value.ints, value.count), np.int64)
    if kind == lib.CT_ATTR_FLOAT_LIST:
        return np.array(ffi.unpack(value.value.floats, value.count), np.float64)
    if kind == lib.CT_ATTR_DTYPE:
        return np.array([value.value.dtype.code, value.value.dtype.bits], np.uint8)
    return _NONE


def _attrs_key(attrs: dict) -> tuple | None:
    try:
        key = tuple(
            (name, type(value), tuple(value) if type(value) is list else value)
            for name, value in attrs.items()
        )
        hash(key)
    except TypeError:
        return None
    return key


def _encode(spec: OpSpec, attrs: dict, absent: int) -> dict:
    """The FFI attributes of a call: ``__op``, ``__absent`` (bit i: optional input i absent) and
    each ctensor attribute under its own name."""
    key = _attrs_key(attrs)
    full_key = None if key is None else (spec.name, absent, key)
    if full_key is not None:
        hit = _ENCODED.get(full_key)
        if hit is not None:
            return hit
    encoded: dict[str, Any] = {"__op": spec.name, "__absent": np.int64(absent)}
    if attrs:
        array, count, _keep = attrs_for(spec, attrs)
        for i in range(count):
            entry = array[i]
            encoded[ffi.string(entry.name).decode("utf-8")] = _decode_value(entry.value)
    if full_key is not None:
        if len(_ENCODED) >= _ENCODED_SIZE:
            _ENCODED.clear()
        _ENCODED[full_key] = encoded
    return encoded


# ------------------------------------------------------------------------------------------------
# Inputs and outputs
# ------------------------------------------------------------------------------------------------


def _device_name() -> str:
    """The registry's device name whose kernels resolve dtypes (JAX's default backend)."""
    return "cuda" if jax.default_backend() == "gpu" else "cpu"


def _with_scalars(spec: OpSpec, inputs: list) -> list:
    """Inputs as JAX arrays: Python scalars of an elementwise op take JAX's weak-type promotion
    with the call's arrays; other non-JAX inputs (NumPy arrays, lists) become JAX arrays."""
    arrays = [x for x in inputs if x is not None and not isinstance(x, _SCALARS)]
    result = []
    for index, value in enumerate(inputs):
        if value is None or isinstance(value, (jax.Array, _Tracer)):
            result.append(value)
        elif isinstance(value, _SCALARS):
            if not spec.elementwise:
                raise InvalidArgumentError(
                    f"{spec.name}: input {index} must be an array: {spec.name} is not "
                    f"elementwise, so it takes no Python scalars (got {type(value).__name__})"
                )
            if not arrays:
                raise InvalidArgumentError(f"{spec.name}: needs at least one array argument")
            result.append(jnp.asarray(value, jnp.result_type(*arrays, value)))
        else:
            result.append(jnp.asarray(value))
    return result


def _check_representable(spec: OpSpec, dtype: str, what: str) -> np.dtype:
    """The JAX dtype of a ctensor dtype name; refuses 64-bit dtypes JAX would silently narrow
    (jax_enable_x64 off), since the kernel writes the full width."""
    wanted = jnp.dtype(dtype)
    if jax.dtypes.canonicalize_dtype(wanted) != wanted:
        raise UnsupportedDTypeError(
            f"{spec.name}: {what} is {dtype}, which JAX holds only with 64-bit types enabled "
            "(jax.config.update('jax_enable_x64', True))",
            lib.CT_ERROR_UNSUPPORTED_DTYPE,
        )
    return wanted


def _is_traced(inputs: list) -> bool:
    return any(isinstance(x, _Tracer) for x in inputs)


def _dynamic(spec: OpSpec, inputs: list, attrs: dict) -> list:
    """A dynamic operator: eagerly through ctensor.ops on concrete arrays; refused under
    tracing."""
    if _is_traced(inputs):
        raise TracingError(
            f"{spec.name} is a dynamic operator: the size of its outputs depends on the data, so "
            "it cannot run under jax.jit, vmap or grad (XLA needs static shapes). Call it "
            "outside the traced function, on concrete arrays.",
            lib.CT_ERROR_INVALID_ARGUMENT,
        )
    result = getattr(_ops, spec.name)(*inputs, **attrs)
    return list(result) if isinstance(result, tuple) else [result]


# Plans by call signature: (op, input dtypes and shapes, attributes, 64-bit mode).
_PLANS: dict[tuple, tuple] = {}
_PLANS_SIZE = 1024


def _plan(spec: OpSpec, arrays: list, attrs: dict) -> tuple:
    """What trace time decides for one call signature: ``(body, jitted)``, where ``body(*present
    inputs)`` casts the inputs to the kernel's dtypes, gives elementwise inputs the same rank
    (leading unit dimensions, see vmap_method) and emits the custom call, and ``jitted`` is
    ``body`` under ``jax.jit`` (what an eager call on concrete arrays runs)."""
    ensure_registered()
    dtypes = tuple(None if x is None else to_dtype_name(x.dtype) for x in arrays)
    targets = spec.choose_dtypes(_device_name(), dtypes) if dtypes else ()
    for i, target in enumerate(targets):
        if target is not None:
            _check_representable(spec, target, f"input {i} cast to the kernel's dtype")
    method = vmap_method(spec)
    shapes = [None if x is None else tuple(x.shape) for x in arrays]
    if method != "sequential":
        rank = max((len(s) for s in shapes if s is not None), default=0)
        shapes = [None if s is None else (1,) * (rank - len(s)) + s for s in shapes]
    resolved = [t or d for t, d in zip(targets, dtypes, strict=True)]
    results = [
        jax.ShapeDtypeStruct(shape, _check_representable(spec, dtype, f"output {k}"))
        for k, (dtype, shape) in enumerate(infer(spec, resolved, shapes, attrs))
    ]
    absent = 0
    for slot, x in enumerate(arrays[: spec.num_fixed_inputs]):
        if x is None:
            absent |= 1 << slot
    encoded = _encode(spec, attrs, absent)
    custom_call = jax.ffi.ffi_call(TARGET, results, vmap_method=method)
    present = [i for i, x in enumerate(arrays) if x is not None]
    steps = [(targets[i], shapes[i], shapes[i] != tuple(arrays[i].shape)) for i in present]

    def body(*operands: Any) -> list:
        prepared = []
        for x, (target, shape, reshape) in zip(operands, steps, strict=True):
            if target is not None:
                x = x.astype(target)
            if reshape:
                x = jnp.reshape(x, shape)
            prepared.append(x)
        return custom_call(*prepared, **encoded)

    return body, jax.jit(body)


def call(name: str, inputs: list, attrs: dict) -> list:
    """Runs operator ``name`` on ``inputs`` (see the module's docstring) with the attributes
    ``attrs`` (ctensor names); returns its outputs as a list of JAX arrays (or tracers)."""
    spec = get_spec(name)
    attrs = attrs or {}
    if spec.is_dynamic:
        return _dynamic(spec, list(inputs), attrs)
    arrays = _with_scalars(spec, list(inputs))
    attrs_key = _attrs_key(attrs)
    key = None
    plan = None
    if attrs_key is not None:
        key = (
            name,
            tuple(None if x is None else (x.dtype, x.shape) for x in arrays),
            attrs_key,
            jax.config.jax_enable_x64,
        )
        plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(spec, arrays, attrs)
        if key is not None:
            if len(_PLANS) >= _PLANS_SIZE:
                _PLANS.clear()
            _PLANS[key] = plan
    operands = [x for x in arrays if x is not None]
    body, jitted = plan
    traced = False
    for x in operands:
        if isinstance(x, _Tracer):
            traced = True
            break
    # Concrete arrays: the compiled call (jit's C++ dispatch); tracers: the body, inline.
    return list(body(*operands) if traced else jitted(*operands))
