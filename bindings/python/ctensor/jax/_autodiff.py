"""``jax.grad`` of ``ctensor.jax`` ops from the registry's gradient entries.

``differentiable(name, raw_fn)`` makes the public function of an operator: a call with JAX
tracers among its arrays (under ``jit``, ``grad``, ``vmap``, ...) goes through a
``jax.custom_vjp`` function made once per set of attributes and input shapes and dtypes
(attributes are static, as they are for the XLA FFI call below it); a call on concrete arrays
calls ``raw_fn`` at once (no transformation can see it). The custom VJP's forward runs the op
and saves the inputs and outputs the entry reads, and which inputs the transformation perturbs
(``symbolic_zeros``): only their cotangents are computed. Its backward runs the entry's
program (``ctensor.autodiff.Program``) with every step a public ``ctensor.jax`` call, so the
backward is XLA FFI calls too under ``jit``, batches as those ops batch under ``vmap``, and is
itself differentiable where the backward operators have entries (higher-order gradients).

Python scalar inputs (``multiply(x, 2.5)``) are constants of the custom VJP, keyed like the
attributes, so that they keep JAX's weak-type promotion in the raw call (a traced argument would
not) and get no cotangent, as JAX's own ops treat them under ``grad``.

JAX's conventions hold: integer and bool inputs get zero cotangents (``float0`` under
``jax.grad(..., allow_int=True)``), an output the entry takes no cotangent for (dropout's mask,
``batch_norm_training``'s statistics, integer results) is ignored, and a cotangent is cast to its
input's dtype when the entry's step computes it in another (an input promoted by the forward).
Differentiating an operator whose entry has no gradient raises
``ctensor.autodiff.NotDifferentiableError`` with the entry's reason, at ``jax.grad`` time,
never when the function is made; one whose float results all get zero cotangents (integer
results only) differentiates to zeros, as ``jnp.argmax`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from .._ops import _py_name
from .._registry import OpSpec, get_spec
from ..autodiff import NotDifferentiableError, Program

__all__ = ["differentiable"]

_Tracer = jax.core.Tracer
_SCALARS = (bool, int, float, complex)
#: Custom-VJP functions kept per operator (by attributes, input types and scalar inputs).
_CACHE_SIZE = 256
_Primal = jax.custom_derivatives.CustomVJPPrimal
_SymbolicZero = jax.custom_derivatives.SymbolicZero


def _is_inexact(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return isinstance(value, (float, complex))
    return bool(np.issubdtype(np.dtype(dtype), np.inexact))


def _has_tracer(args: tuple, kwargs: dict) -> bool:
    for value in (*args, *kwargs.values()):
        if isinstance(value, _Tracer):
            return True
        if isinstance(value, (list, tuple)) and any(isinstance(v, _Tracer) for v in value):
            return True
    return False


def _frozen(value: Any) -> Any:
    """A hashable form of an attribute value (lists become tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


class _Operator:
    """What the wrapper of one operator needs: its spec, entry, how its arguments split into
    inputs and attributes, and its custom-VJP functions by attributes."""

    def __init__(self, name: str, raw_fn: Callable) -> None:
        spec = get_spec(name)
        self.spec: OpSpec = spec
        self.raw_fn = raw_fn
        self.entry: dict = spec.schema["gradient"]
        self.input_names = {_py_name(p["name"]): k for k, p in enumerate(spec.inputs)}
        self.attr_names = {_py_name(a["name"]): a["name"] for a in spec.attrs}
        self.functions: dict[tuple, Callable] = {}
        saved_inputs = list(self.entry.get("saved_inputs") or [False] * len(spec.inputs))
        for step in self.entry.get("steps", ()):
            for attr in step["attrs"]:
                if "dtype_of" in attr:
                    saved_inputs[attr["dtype_of"]] = True
        self.saved_inputs = saved_inputs
        self.saved_outputs = list(self.entry.get("saved_outputs") or [False] * len(spec.outputs))
        self.takes_cotangent = list(
            self.entry.get("output_takes_cotangent") or [True] * len(spec.outputs)
        )

    def split(self, args: tuple, kwargs: dict) -> tuple[list, dict]:
        """The call's inputs (one per input parameter, None where absent, the variadic one a
        list) and its keyword attributes (Python names)."""
        spec = self.spec
        if len(args) > len(spec.inputs):
            raise TypeError(
                f"{spec.name}() takes at most {len(spec.inputs)} arrays, got {len(args)}"
            )
        inputs = [*args, *[None] * (len(spec.inputs) - len(args))]
        attrs = {}
        for key, value in kwargs.items():
            index = self.input_names.get(key)
            if index is None:
                attrs[key] = value
            elif index < len(args):
                raise TypeError(f"{spec.name}() got multiple values for argument {key!r}")
            else:
                inputs[index] = value
        if spec.variadic_input and inputs[-1] is not None:
            inputs[-1] = list(inputs[-1])
        return inputs, attrs

    def function(self, attrs: dict, input_types: list, constants: tuple) -> Callable:
        """The custom-VJP function of the array inputs for these attributes, input shapes and
        dtypes (``_input_types``) and Python scalar inputs (``constants``), made once."""
        try:
            key = (
                tuple(sorted((k, _frozen(v)) for k, v in attrs.items())),
                _frozen(input_types),
                tuple((i, type(v).__name__, v) for i, v in constants),
            )
            found = self.functions.get(key)
        except TypeError:  # an unhashable value: the raw call says what is wrong with it
            key, found = None, None
        if found is None:
            found = self._make(dict(attrs), input_types, constants)
            if key is not None:
                if len(self.functions) >= _CACHE_SIZE:  # a bound for calls of ever new shapes
                    self.functions.clear()
                self.functions[key] = found
        return found

    def _make(self, attrs: dict, input_types: list, constants: tuple) -> Callable:
        spec, entry, raw_fn = self.spec, self.entry, self.raw_fn
        ct_attrs = {self.attr_names.get(k, k): v for k, v in attrs.items()}
        num_inputs = len(spec.inputs)

        def outputs_of(result: Any) -> list:
            flat = list(result) if isinstance(result, (tuple, list)) else [result]
            if spec.variadic_output:
                fixed = len(spec.outputs) - 1
                return [*flat[:fixed], flat[fixed:]]
            return flat

        def with_constants(inputs: Any) -> list:
            """The op's inputs: the Python scalars back in their places (the custom VJP takes
            None there: a Python scalar keeps its weak type, and has no cotangent)."""
            values = list(inputs)
            for index, value in constants:
                values[index] = value
            return values

        @jax.custom_vjp
        def function(*inputs: Any) -> Any:
            return raw_fn(*with_constants(inputs), **attrs)

        def forward(*primals: Any) -> tuple:
            # symbolic_zeros: each array comes as a CustomVJPPrimal (its value, and whether the
            # transformation perturbs it); cotangents are computed for perturbed inputs only.
            inputs = [_unwrap(v) for v in primals]
            # The function itself, not raw_fn: under an outer transformation (the outer grad of
            # a grad of grad) the forward is differentiated too.
            result = function(*inputs)
            outputs = outputs_of(result)
            saved_inputs = [
                v if keep else None for v, keep in zip(inputs, self.saved_inputs, strict=True)
            ]
            saved_outputs = [
                v if keep else None for v, keep in zip(outputs, self.saved_outputs, strict=True)
            ]
            # Which inputs are perturbed, held in the residuals' structure: () yes, None no.
            perturbed = [_perturbed(v) for v in primals]
            return result, (saved_inputs, saved_outputs, perturbed)

        def backward(residuals: tuple, cotangent: Any) -> tuple:
            saved_inputs, saved_outputs, perturbed = residuals
            cotangents = [_float_or_none(value) for value in outputs_of(cotangent)]
            if not entry.get("differentiable"):
                if all(value is None for value in _leaves(cotangents)):
                    return _zeros(input_types)  # integer and bool results only, or unused
                raise NotDifferentiableError(
                    f"ctensor.jax.{spec.name} is not differentiable: {entry.get('note', '')}"
                )
            cotangents = [
                value if takes else None
                for value, takes in zip(cotangents, self.takes_cotangent, strict=True)
            ]
            if all(value is None for value in _leaves(cotangents)):
                return _zeros(input_types)
            # an unused output whose cotangent the program reads: zeros
            cotangents = [
                _instantiate(value) if takes else None
                for value, takes in zip(outputs_of(cotangent), self.takes_cotangent, strict=True)
            ]
            program = Program(
                spec,
                entry,
                with_constants(saved_inputs),
                cotangents,
                ct_attrs,
                _run_step,
                saved_outputs,
            )
            grads = []
            for index, ref in enumerate(entry["input_grads"]):
                kind, wanted = input_types[index], perturbed[index]
                if kind is None:
                    grads.append(None)
                elif isinstance(kind, list):
                    value = (
                        None
                        if ref is None or not any(w is not None for w in wanted)
                        else (program.value(ref))
                    )
                    grads.append(
                        [
                            _cotangent(None if value is None or w is None else value[k], t)
                            for k, (t, w) in enumerate(zip(kind, wanted, strict=True))
                        ]
                    )
                else:
                    value = None if ref is None or wanted is None else program.value(ref)
                    grads.append(_cotangent(value, kind))
            return tuple(grads[:num_inputs])

        function.defvjp(forward, backward, symbolic_zeros=True)
        return function


def _input_types(inputs: list) -> list:
    """Per input: None (absent), a list for the variadic one, or (shape, dtype, inexact)."""
    kinds: list = []
    for value in inputs:
        if value is None:
            kinds.append(None)
        elif isinstance(value, list):
            kinds.append([_kind(v) for v in value])
        else:
            kinds.append(_kind(value))
    return kinds


def _kind(value: Any) -> tuple:
    array = jax.numpy.asarray(value) if not hasattr(value, "dtype") else value
    return (tuple(array.shape), array.dtype, _is_inexact(array))


def _unwrap(value: Any) -> Any:
    """A forward argument without its CustomVJPPrimal wrapper (the variadic list element-wise)."""
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value.value if isinstance(value, _Primal) else value


def _perturbed(value: Any) -> Any:
    """() where a forward argument is perturbed, None where not (the variadic list a list)."""
    if isinstance(value, list):
        return [_perturbed(v) for v in value]
    return () if isinstance(value, _Primal) and value.perturbed else None


def _instantiate(value: Any) -> Any:
    """A cotangent as an array: zeros for a symbolic zero (an unused output)."""
    if isinstance(value, list):
        return [_instantiate(v) for v in value]
    if isinstance(value, _SymbolicZero):
        return jax.numpy.zeros(value.aval.shape, value.aval.dtype)
    return value


def _leaves(values: list) -> list:
    flat = []
    for value in values:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


def _float_or_none(value: Any) -> Any:
    """A cotangent JAX passes, None where it is for an integer or bool output (float0)."""
    if value is None or isinstance(value, _SymbolicZero):
        return None
    if isinstance(value, list):
        return [_float_or_none(v) for v in value]
    return value if _is_inexact(value) else None


def _zeros(input_types: list) -> tuple:
    """Zero cotangents for every input: None, which JAX reads as zeros of the right kind."""
    return tuple([None] * len(kind) if isinstance(kind, list) else None for kind in input_types)


def _cotangent(value: Any, kind: tuple) -> Any:
    """The cotangent of one input from the program's value: None for integer and bool inputs
    (JAX's zeros) and for inputs the entry gives none; cast to the input's dtype."""
    shape, dtype, inexact = kind
    if value is None or not inexact:
        return None
    if value.dtype != dtype:
        from . import astype

        value = astype(value, dtype=np.dtype(dtype).name)
    if tuple(value.shape) != shape:
        raise ValueError(
            f"a gradient step gave a cotangent of shape {tuple(value.shape)} for an input of "
            f"shape {shape}"
        )
    return value


def _run_step(spec: OpSpec, inputs: list, attrs: dict) -> list:
    """A gradient step as a public ``ctensor.jax`` call (itself differentiable); returns one
    entry per output parameter (the variadic one a list)."""
    from .. import jax as ctensor_jax

    function = getattr(ctensor_jax, _py_name(spec.name))
    if not spec.elementwise:  # a Python scalar input of the forward read by another op
        inputs = [jax.numpy.asarray(v) if isinstance(v, _SCALARS) else v for v in inputs]
    result = function(*inputs, **{_py_name(k): v for k, v in attrs.items()})
    flat = list(result) if isinstance(result, (tuple, list)) else [result]
    if spec.variadic_output:
        fixed = len(spec.outputs) - 1
        return [*flat[:fixed], flat[fixed:]]
    return flat


def differentiable(name: str, raw_fn: Callable) -> Callable:
    """The public function of operator ``name`` on top of its raw XLA FFI call ``raw_fn``
    (``raw_fn(*arrays, **attrs)``, the calling convention of ``ctensor.ops``): differentiable by
    ``jax.grad`` and ``jax.vjp`` through the registry's gradient entry."""
    operator = _Operator(name, raw_fn)

    @functools.wraps(raw_fn)
    def function(*args: Any, **kwargs: Any) -> Any:
        if not _has_tracer(args, kwargs):
            return raw_fn(*args, **kwargs)
        inputs, attrs = operator.split(args, kwargs)
        constants = tuple((i, v) for i, v in enumerate(inputs) if isinstance(v, _SCALARS))
        for index, _ in constants:
            inputs[index] = None
        return operator.function(attrs, _input_types(inputs), constants)(*inputs)

    function.__wrapped__ = raw_fn
    return function
