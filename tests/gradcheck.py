"""Checks a gradient entry end to end: ``ctensor.autodiff.vjp`` against torch.autograd and against
central finite differences of ctensor's own forward, in float64.

    check_vjp("softmax", [x], {"axis": 1}, lambda x: torch.softmax(x, 1))

``inputs`` holds NumPy arrays (None for an absent optional input, a list for a variadic one);
float inputs are cast to ``dtype``, others (indices, masks) are passed as they are. ``torch_fn``
takes the inputs as torch tensors in the same places and returns the forward's outputs (a tensor
or a tuple; entries for outputs that take no cotangent are ignored); with torch_fn None only
finite differences are checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import ctensor

#: (rtol, atol relative to the reference's largest magnitude) per dtype of the computation.
TOLERANCES = {
    "float64": (1e-7, 1e-9),
    "float32": (2e-4, 2e-5),
    "float16": (2e-2, 4e-3),
    "bfloat16": (6e-2, 2e-2),
}
#: Finite differences: step relative to max(1, |x|), and the tolerance of the comparison.
FD_STEP = 1e-6
FD_TOLERANCE = (1e-5, 1e-6)
#: At most this many elements of each input are perturbed (chosen at random).
FD_MAX_ELEMENTS = 24

_TORCH_DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def _is_float(array: Any) -> bool:
    if isinstance(array, torch.Tensor):
        return array.is_floating_point()
    return array is not None and np.issubdtype(np.asarray(array).dtype, np.floating)


def _map_inputs(inputs: list, fn: Callable[[np.ndarray], Any]) -> list:
    """Applies fn to every array of inputs (variadic lists included); None stays None."""
    return [
        [fn(a) for a in value] if isinstance(value, list) else None if value is None else fn(value)
        for value in inputs
    ]


def _outputs(result: Any) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _to_numpy(array: Any) -> np.ndarray:
    if isinstance(array, torch.Tensor):
        return (
            array.detach().to(torch.float64).numpy() if array.is_floating_point() else array.numpy()
        )
    return np.asarray(array)


def _assert_close(got: Any, want: Any, rtol: float, atol: float, what: str) -> None:
    got = np.asarray(_to_numpy(got), dtype=np.float64)
    want = np.asarray(_to_numpy(want), dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


def _forward(op: str, inputs: list, attrs: dict) -> list:
    function = getattr(ctensor.ops, op)
    # ctensor.ops takes a variadic parameter as one list (ops.einsum([a, b], subscripts=...))
    return _outputs(function(*inputs, **attrs))


def _cotangents(op: str, outputs: list, rng: np.random.Generator) -> list:
    takes = ctensor.op_info(op)["gradient"]["output_takes_cotangent"]
    return [
        rng.standard_normal(np.shape(_to_numpy(out))) if needed else None
        for out, needed in zip(outputs, takes, strict=True)
    ]


def _torch_reference(
    torch_fn: Callable, inputs: list, cotangents: list, dtype: str, constants: tuple = ()
) -> list:
    """torch.autograd's cotangent of each float input (None elsewhere), computed in `dtype`;
    inputs at the indices `constants` are passed without requires_grad."""
    leaves: list = []

    def to_torch(a: np.ndarray, constant: bool) -> torch.Tensor:
        if _is_float(a):
            t = torch.tensor(a, dtype=_TORCH_DTYPES[dtype], requires_grad=not constant)
            if not constant:
                leaves.append(t)
            return t
        return torch.from_numpy(np.array(a))

    tensors = [
        None
        if value is None
        else [to_torch(a, i in constants) for a in value]
        if isinstance(value, list)
        else to_torch(value, i in constants)
        for i, value in enumerate(inputs)
    ]
    outputs = _outputs(torch_fn(*tensors))
    # torch_fn may return only the leading outputs (those that take cotangents)
    pairs = [(o, c) for o, c in zip(outputs, cotangents, strict=False) if c is not None]
    grads = torch.autograd.grad(
        [o for o, _ in pairs],
        leaves,
        [torch.tensor(c, dtype=o.dtype) for o, c in pairs],
        allow_unused=True,
    )
    by_leaf = iter(grads)
    return [
        None
        if value is None or i in constants
        else [next(by_leaf) if _is_float(a) else None for a in value]
        if isinstance(value, list)
        else next(by_leaf)
        if _is_float(value)
        else None
        for i, value in enumerate(inputs)
    ]


def _finite_differences(op: str, inputs: list, attrs: dict, cotangents: list, rng) -> list:
    """Central differences of <cotangents, forward(inputs)> at a random subset of each float
    input's elements, in float64: a list, per input, of (flat indices, values)."""
    result = []

    def objective(values: list) -> float:
        outputs = _forward(op, values, attrs)
        return sum(
            float(np.sum(_to_numpy(o) * c))
            for o, c in zip(outputs, cotangents, strict=True)
            if c is not None
        )

    positions = [(i, None) for i, v in enumerate(inputs) if not isinstance(v, list)]
    positions += [
        (i, k) for i, v in enumerate(inputs) if isinstance(v, list) for k in range(len(v))
    ]
    for i, k in positions:
        array = inputs[i] if k is None else inputs[i][k]
        if not _is_float(array) or array.size == 0:
            continue
        count = min(array.size, FD_MAX_ELEMENTS)
        chosen = rng.choice(array.size, size=count, replace=False)
        values = []
        for flat in chosen:
            h = FD_STEP * max(1.0, abs(float(array.flat[flat])))
            estimates = []
            for sign in (1.0, -1.0):
                moved = array.copy()
                moved.flat[flat] += sign * h
                trial = list(inputs)
                if k is None:
                    trial[i] = moved
                else:
                    trial[i] = list(inputs[i])
                    trial[i][k] = moved
                estimates.append(objective(trial))
            values.append((estimates[0] - estimates[1]) / (2 * h))
        result.append(((i, k), chosen, np.array(values)))
    return result


def _pick(grads: list, i: int, k: int | None) -> Any:
    return grads[i] if k is None else grads[i][k]


def check_vjp(
    op: str,
    inputs: list,
    attrs: dict,
    torch_fn: Callable | None,
    *,
    dtype: str = "float64",
    rtol: float | None = None,
    atol: float | None = None,
    fd: bool = True,
    seed: int = 0,
    array_type: str = "numpy",
    constants: tuple = (),
) -> list:
    """Checks op's gradient entry at `inputs` (see the module doc). `dtype` is the float dtype of
    the computation; "bfloat16" runs on torch tensors (NumPy has none), `array_type="torch"`
    does so for any dtype. `constants`: indices of float inputs the entry deliberately treats
    as constants, as torch does (batch_norm's running statistics): their cotangent must be None,
    and neither torch nor finite differences are asked about them. Returns the cotangents
    ctensor computed."""
    rng = np.random.default_rng(seed)
    inputs64 = _map_inputs(inputs, lambda a: a.astype(np.float64) if _is_float(a) else a)
    use_torch = array_type == "torch" or dtype == "bfloat16"

    def cast(a: np.ndarray) -> Any:
        if use_torch:
            t = torch.from_numpy(np.array(a, order="C"))  # keeps 0-d arrays 0-d
            return t.to(_TORCH_DTYPES[dtype]) if _is_float(a) else t
        return a.astype(dtype) if _is_float(a) else a

    # The rounded inputs, as float64: every reference sees exactly what ctensor computes on.
    typed = _map_inputs(inputs64, cast)
    rounded = _map_inputs(
        typed, lambda a: _to_numpy(a).astype(np.float64) if _is_float(a) else _to_numpy(a)
    )
    outputs = _forward(op, typed, attrs)
    cotangents = _cotangents(op, outputs, rng)
    typed_cotangents = [
        None if c is None else cast(c) if _is_float(o) else c
        for o, c in zip(outputs, cotangents, strict=True)
    ]
    rounded_cotangents = [
        None if c is None else _to_numpy(c).astype(np.float64) for c in typed_cotangents
    ]
    grads = ctensor.autodiff.vjp(op, typed, typed_cotangents, **attrs)
    default_rtol, default_atol = TOLERANCES[dtype]
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    if torch_fn is None:  # finite differences only
        grads64 = ctensor.autodiff.vjp(op, rounded, rounded_cotangents, **attrs)
        _check_finite_differences(op, rounded, attrs, rounded_cotangents, grads64, rng, constants)
        return grads
    for i in constants:
        assert grads[i] is None, f"{op}: input {i} is a constant but has a cotangent"
    want = _torch_reference(torch_fn, rounded, rounded_cotangents, "float64", constants)
    for i, value in enumerate(rounded):
        if i in constants:
            continue
        places = [(i, k) for k in range(len(value))] if isinstance(value, list) else [(i, None)]
        for i_, k in places:
            reference = _pick(want, i_, k)
            got = _pick(grads, i_, k) if grads[i_] is not None else None
            array = _pick(rounded, i_, k)
            if not _is_float(array):
                continue
            if reference is None:
                reference = np.zeros_like(array)
            assert got is not None, f"{op}: no cotangent for input {i_}"
            expected_dtype = _TORCH_DTYPES[dtype] if use_torch else np.dtype(dtype)
            assert got.dtype == expected_dtype, f"{op}: cotangent {i_} is {got.dtype}, not {dtype}"
            assert tuple(got.shape) == array.shape, f"{op}: cotangent {i_} has shape {got.shape}"
            _assert_close(got, reference, rtol, atol, f"{op}: input {i_} vs torch.autograd")
    if fd:
        grads64 = grads if dtype == "float64" and not use_torch else None
        if grads64 is None:
            grads64 = ctensor.autodiff.vjp(op, rounded, rounded_cotangents, **attrs)
        _check_finite_differences(op, rounded, attrs, rounded_cotangents, grads64, rng, constants)
    return grads


def _check_finite_differences(op, inputs, attrs, cotangents, grads64, rng, constants=()) -> None:  # noqa: ANN001
    for (i, k), chosen, values in _finite_differences(op, inputs, attrs, cotangents, rng):
        if i in constants or grads64[i] is None:
            continue  # inputs held constant, or that the entry declares not differentiable
        got = _to_numpy(_pick(grads64, i, k)).reshape(-1)[chosen]
        _assert_close(got, values, *FD_TOLERANCE, f"{op}: input {i} vs finite differences")
