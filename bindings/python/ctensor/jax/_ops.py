"""The generated ``ctensor.jax`` namespace: one function per registered operator, made at import
from the registry's schema, with ``ctensor.ops``'s calling convention (required inputs
positional, optional ones positional or by name, the variadic input as one sequence, attributes
by their ctensor names) minus ``out=`` (JAX arrays are immutable).

Each raw function packs its arguments into ``_call.call``'s flat list and unpacks the results as
``ctensor.ops`` does (one array, a tuple for several outputs or a variadic one); the public
function is ``_autodiff.differentiable(name, raw_fn)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._ops import _parameter_text, _py_name, _signature
from .._registry import OpSpec, all_specs
from ._autodiff import differentiable
from ._call import call, vmap_method

__all__ = ["build_all", "make_raw"]


def _docstring(spec: OpSpec) -> str:
    lines = [f"{spec.name}{_signature(spec, ())}", ""]
    if spec.doc:
        lines += [spec.doc.strip(), ""]
    if spec.is_dynamic:
        lines.append(
            "A dynamic operator (output sizes depend on the data): runs eagerly on concrete "
            "arrays through ctensor.ops; raises ctensor.jax.TracingError under jax.jit/vmap/grad."
        )
    else:
        lines.append(
            "Runs under jax.jit as an XLA custom call (ctensor_op); "
            f"vmap: {vmap_method(spec)}. Outputs' shapes and dtypes come from ct_op_infer."
        )
    lines.append(f"See ctensor.ops.{spec.name} for the parameters.")
    return "\n".join(lines)


def make_raw(spec: OpSpec) -> Callable[..., Any]:
    """The raw function of one operator (no gradient rule)."""
    params, call_args, variadic = _parameter_text(spec, ["**attrs"])
    packed = f"[{', '.join(call_args)}]"
    if variadic is not None:
        packed = f"{packed} + list({variadic})"
    many = spec.variadic_output or len(spec.outputs) != 1
    unpack = "tuple(results)" if many else "results[0]"
    source = (
        f"def {_py_name(spec.name)}({params}):\n"
        f"    results = _call(_name, {packed}, attrs)\n"
        f"    return {unpack}\n"
    )
    namespace: dict[str, Any] = {"_name": spec.name, "_call": call}
    exec(compile(source, f"<ctensor.jax.{spec.name}>", "exec"), namespace)  # noqa: S102
    function = namespace[_py_name(spec.name)]
    function.__name__ = spec.name
    function.__qualname__ = spec.name
    function.__module__ = "ctensor.jax"
    function.__doc__ = _docstring(spec)
    function.__signature__ = _signature(spec, ())
    return function


def build_all() -> dict[str, Callable[..., Any]]:
    """The public function of every registered operator, by name."""
    return {
        name: differentiable(name, make_raw(spec)) for name, spec in sorted(all_specs().items())
    }
