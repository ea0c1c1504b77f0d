"""Shared test support: dtypes, per-dtype tolerances, a float64 reference check, and hypothesis
strategies for arrays with arbitrary layouts (non-contiguous, negative and zero strides, 0-d,
zero-size). Every numerics test goes through `assert_close`, so tolerances live in one place."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ctensor

BOOL = ["bool"]
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTEGER = SIGNED + UNSIGNED
FLOAT_NUMPY = ["float16", "float32", "float64"]  # numpy has no bfloat16; torch tests cover it
ALL_NUMPY = BOOL + INTEGER + FLOAT_NUMPY

# Relative and absolute tolerances per dtype, against a float64 reference. Low-precision floats
# compute in float32 and round once at the end: half an ulp of the result dtype plus slack.
TOLERANCE = {
    "float16": (2e-3, 1e-4),
    "bfloat16": (1.6e-2, 1e-3),
    "float32": (2e-6, 1e-7),
    "float64": (1e-12, 1e-300),
}


def tolerance(dtype) -> tuple[float, float]:
    return TOLERANCE.get(str(dtype).replace("torch.", ""), (0.0, 0.0))


def assert_close(actual, expected, dtype=None, rtol_scale: float = 1.0, atol: float | None = None):
    """Compares `actual` (any array) with a reference (computed in float64 or exactly), using the
    tolerance of `dtype` (default: actual's dtype). Integers and bools must match exactly. NaNs
    must sit in the same places; infinities must match in sign."""
    actual_np = np.asarray(actual.float() if hasattr(actual, "float") and "bfloat16" in str(actual.dtype) else actual)
    expected = np.asarray(expected)
    name = str(dtype if dtype is not None else getattr(actual, "dtype", actual_np.dtype))
    assert actual_np.shape == expected.shape, f"shape {actual_np.shape} != {expected.shape}"
    rtol, default_atol = tolerance(name)
    if rtol == 0.0:
        np.testing.assert_array_equal(actual_np, expected)
        return
    np.testing.assert_allclose(
        actual_np.astype(np.float64),
        expected.astype(np.float64),
        rtol=rtol * rtol_scale,
        atol=default_atol if atol is None else atol,
        equal_nan=True,
    )


@st.composite
def strided_arrays(draw, dtype, shape=None, min_dims=0, max_dims=4, min_side=0, max_side=5, elements=None):
    """A numpy array of `dtype` whose layout is drawn too: a view with positive, negative or
    broadcast (zero) strides into a larger buffer, or a plain compact array."""
    if shape is None:
        shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side))
    layout = draw(st.sampled_from(["compact", "sliced", "reversed", "transposed", "broadcast"]))
    if elements is None:
        elements = hnp.from_dtype(np.dtype(dtype), allow_subnormal=False)
    if layout == "broadcast" and len(shape) > 0:
        axis = draw(st.integers(0, len(shape) - 1))
        base_shape = tuple(1 if k == axis else s for k, s in enumerate(shape))
        base = draw(hnp.arrays(dtype, base_shape, elements=elements))
        view = np.broadcast_to(base, shape)
    elif layout == "sliced" and len(shape) > 0:
        big = tuple(2 * s for s in shape)
        base = draw(hnp.arrays(dtype, big, elements=elements))
        view = base[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "reversed" and len(shape) > 0:
        base = draw(hnp.arrays(dtype, shape, elements=elements))
        view = base[tuple(slice(None, None, -1) for _ in shape)]
    elif layout == "transposed" and len(shape) > 1:
        base = draw(hnp.arrays(dtype, shape[::-1], elements=elements))
        view = base.T
    else:
        view = draw(hnp.arrays(dtype, shape, elements=elements))
    assert view.shape == tuple(shape)
    return view


def broadcastable_shapes(num_shapes: int, min_dims=0, max_dims=4, max_side=5):
    """Shapes that broadcast together (hypothesis' mutually_broadcastable_shapes)."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, max_side=max_side
    )


def kernel_dtypes(op: str, device: str = "cpu") -> list[str]:
    """The dtypes the registry declares for the first input of `op` on `device`."""
    return list(ctensor.op_info(op)["dtypes"][device])
