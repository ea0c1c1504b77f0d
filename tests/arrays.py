"""Shared test support: dtypes, per-dtype tolerances, a float64 reference check, and hypothesis
strategies for arrays with arbitrary layouts (non-contiguous, negative and zero strides, 0-d,
zero-size). Every numerics test goes through `assert_close`, so tolerances live in one place."""

from __future__ import annotations

import sys

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
FLOATS = ["float16", "bfloat16", "float32", "float64"]  # bfloat16 via torch
COMPLEX = ["complex64", "complex128"]

# Relative and absolute tolerances per dtype, against a float64 reference. Low-precision floats
# compute in float32 and round once at the end: half an ulp of the result dtype plus slack.
TOLERANCE = {
    "float16": (2e-3, 1e-4),
    "bfloat16": (1.6e-2, 1e-3),
    "float32": (2e-6, 1e-7),
    "float64": (1e-12, 1e-300),
    "complex64": (2e-6, 1e-7),  # per part, like float32
    "complex128": (1e-12, 1e-300),
}


def tolerance(dtype) -> tuple[float, float]:
    return TOLERANCE.get(str(dtype).replace("torch.", ""), (0.0, 0.0))


def assert_close(actual, expected, dtype=None, rtol_scale: float = 1.0, atol: float | None = None):
    """Compares `actual` (any array) with a reference (computed in float64 or exactly), using the
    tolerance of `dtype` (default: actual's dtype). Integers and bools must match exactly. NaNs
    must sit in the same places; infinities must match in sign. Complex values: see
    _assert_complex_close."""
    is_torch_bfloat16 = hasattr(actual, "float") and "bfloat16" in str(actual.dtype)
    actual_np = np.asarray(actual.float() if is_torch_bfloat16 else actual)
    expected = np.asarray(expected)
    name = str(dtype if dtype is not None else getattr(actual, "dtype", actual_np.dtype))
    assert actual_np.shape == expected.shape, f"shape {actual_np.shape} != {expected.shape}"
    rtol, default_atol = tolerance(name)
    if rtol == 0.0:
        np.testing.assert_array_equal(actual_np, expected)
        return
    if actual_np.dtype.kind == "c" or expected.dtype.kind == "c":
        _assert_complex_close(
            actual_np, expected, rtol * rtol_scale, default_atol if atol is None else atol
        )
        return
    np.testing.assert_allclose(
        actual_np.astype(np.float64),
        expected.astype(np.float64),
        rtol=rtol * rtol_scale,
        atol=default_atol if atol is None else atol,
        equal_nan=True,
    )


def _assert_complex_close(actual, expected, rtol: float, atol: float):
    """Complex results: each part has nan and infinities where the reference has them (same
    sign); elsewhere |actual - expected| <= atol + rtol * |expected|, the modulus, so a part that
    cancels to nearly zero is held to the accuracy of the whole value, as for a real result."""
    a = actual.astype(np.complex128)
    e = expected.astype(np.complex128)
    for part in (np.real, np.imag):
        pa, pe = part(a), part(e)
        np.testing.assert_array_equal(np.isnan(pa), np.isnan(pe), err_msg="nan parts differ")
        special = np.isinf(pa) | np.isinf(pe)
        np.testing.assert_array_equal(pa[special], pe[special], err_msg="infinite parts differ")
    both = np.isfinite(a) & np.isfinite(e)
    error = np.abs(a[both] - e[both])
    bound = atol + rtol * np.abs(e[both])
    if np.any(error > bound):
        worst = int(np.argmax(error - bound))
        raise AssertionError(
            f"complex values differ: {int(np.sum(error > bound))} of {error.size} beyond "
            f"rtol={rtol}, atol={atol}; worst {a[both][worst]} vs {e[both][worst]}"
        )


@st.composite
def strided_arrays(
    draw, dtype, shape=None, min_dims=0, max_dims=4, min_side=0, max_side=5, elements=None
):
    """A numpy array of `dtype` whose layout is drawn too: a view with positive, negative or
    broadcast (zero) strides into a larger buffer, or a plain compact array."""
    if shape is None:
        shape = draw(
            hnp.array_shapes(
                min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
            )
        )
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


# ------------------------------------------------------------------------------------------------
# Additions for the element-wise tests: kernel signatures, exact rounding references, bfloat16
# inputs through PyTorch (NumPy has no bfloat16; torch has no negative strides, so "reversed"
# becomes a flipped copy there).
# ------------------------------------------------------------------------------------------------


def kernel_signatures(op: str, device: str = "cpu") -> list[tuple[str, ...]]:
    """Every kernel signature of `op` on `device`: one dtype per input, then per output."""
    return [tuple(sig) for sig in ctensor.op_info(op)["signatures"].get(device, [])]


def dtype_name(array) -> str:
    """'float32', 'bfloat16', ... for a NumPy array or a torch tensor."""
    return str(array.dtype).replace("torch.", "")


def to_float64(array) -> np.ndarray:
    """A float64 NumPy copy of a NumPy array or a (CPU) torch tensor, any dtype."""
    if hasattr(array, "detach"):
        import torch

        return array.detach().to(dtype=torch.float64).numpy()
    return np.asarray(array).astype(np.float64)


def round_to_bfloat16(x) -> np.ndarray:
    """Values of float64 `x` rounded once to bfloat16 (nearest, ties to even; overflow to inf;
    bfloat16 subnormals kept), returned as float64. Unlike torch's float64 -> bfloat16, which
    goes through float32 and can round twice, this is correctly rounded."""
    x = np.array(x, dtype=np.float64, copy=True)
    sel = np.isfinite(x) & (x != 0)
    v = x[sel]
    _, e = np.frexp(v)  # v = m * 2**e with 0.5 <= |m| < 1: 8 significant bits end at 2**(e-8)
    q = np.maximum(e - 8, -133)  # below 2**-126 the quantum of bfloat16 stays 2**-133
    with np.errstate(over="ignore"):  # beyond float64's range is beyond bfloat16's too
        r = np.ldexp(np.rint(np.ldexp(v, -q)), q)  # exact scalings around a ties-to-even rint
    big = np.abs(r) >= 2.0**128
    r[big] = np.copysign(np.inf, r[big])
    x[sel] = r
    return x


def round_int_to_bfloat16(value: int) -> float:
    """An integer (any size) rounded once to bfloat16, ties to even, computed exactly."""
    magnitude = abs(int(value))
    shift = max(magnitude.bit_length() - 8, 0)
    if shift:
        q, r = divmod(magnitude, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        magnitude = q << shift
    return float(-magnitude if value < 0 else magnitude)


def round_to_dtype(x64, dtype: str) -> np.ndarray:
    """Float64 values rounded once to `dtype` (a float dtype name), returned as float64."""
    if dtype == "bfloat16":
        return round_to_bfloat16(x64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x64, dtype=np.float64).astype(dtype).astype(np.float64)


def bfloat16_tensor(values):
    """A compact torch bfloat16 tensor holding `values` (rounded to bfloat16 first)."""
    import torch

    rounded = np.array(round_to_bfloat16(values).astype(np.float32), order="C")  # 0-d stays 0-d
    return torch.from_numpy(rounded).to(torch.bfloat16)


@st.composite
def strided_bfloat16(
    draw, shape=None, min_dims=0, max_dims=4, min_side=0, max_side=5, elements=None
):
    """A torch bfloat16 tensor with a drawn layout: compact, sliced (step 2), transposed,
    broadcast (expand: zero strides) or flipped (a copy: torch has no negative strides). Values
    come from float32 `elements` (default: all floats incl. nan/inf) rounded to bfloat16."""
    if shape is None:
        shape = draw(
            hnp.array_shapes(
                min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
            )
        )
    shape = tuple(shape)
    if elements is None:
        elements = st.floats(width=32, allow_subnormal=False)
    layout = draw(st.sampled_from(["compact", "sliced", "flipped", "transposed", "broadcast"]))

    def values(s):
        return bfloat16_tensor(draw(hnp.arrays(np.float32, s, elements=elements)))

    if layout == "broadcast" and len(shape) > 0:
        axis = draw(st.integers(0, len(shape) - 1))
        view = values(tuple(1 if k == axis else s for k, s in enumerate(shape))).expand(*shape)
    elif layout == "sliced" and len(shape) > 0:
        view = values(tuple(2 * s for s in shape))[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "flipped" and len(shape) > 0:
        view = values(shape).flip(list(range(len(shape))))
    elif layout == "transposed" and len(shape) > 1:
        view = values(shape[::-1]).permute(*reversed(range(len(shape))))
    else:
        view = values(shape)
    assert tuple(view.shape) == shape
    return view


def any_layout(dtype: str, **kw):
    """`strided_arrays` for numpy dtypes, `strided_bfloat16` (torch) for bfloat16."""
    if dtype == "bfloat16":
        return strided_bfloat16(**kw)
    return strided_arrays(dtype, **kw)


def snapshot(x):
    """A copy of an input, to check later that a call did not write it."""
    import torch

    return x.clone() if isinstance(x, torch.Tensor) else np.array(x, copy=True)


def unchanged(x, before) -> bool:
    """Bit-for-bit equality with a snapshot (nan equals nan)."""
    import torch

    if isinstance(x, torch.Tensor) and x.dtype == torch.bfloat16:
        return torch.equal(x.view(torch.int16), before.view(torch.int16))
    if isinstance(x, torch.Tensor):
        return torch.equal(x, before)
    return np.array_equal(x, before, equal_nan=x.dtype.kind in "fc")


def assert_signs_of_zeros(got, expected, context: str):
    """Where the reference is not nan, the result has the reference's sign bit (-0.0 vs 0.0)."""
    got64, exp64 = to_float64(got), np.asarray(expected)
    keep = ~np.isnan(exp64)
    np.testing.assert_array_equal(
        np.signbit(got64[keep]),
        np.signbit(exp64[keep]),
        err_msg=f"{context}: signs of zeros differ",
    )


def results_under_isa(script: str, path, isa: str | None) -> dict[str, np.ndarray]:
    """Runs ``script`` (Python source that saves arrays with ``np.savez(sys.argv[1], ...)``) in a
    child process with ``CTENSOR_CPU_ISA=isa`` (None: unset, the best level) and returns what
    it saved at ``path``: the level is read once per process, so each level needs its own."""
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("CTENSOR_CPU_ISA", None)
    if isa is not None:
        env["CTENSOR_CPU_ISA"] = isa
    subprocess.run([sys.executable, "-c", script, str(path)], env=env, check=True)
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def sleef_loaded() -> bool:
    """Whether this process mapped libsleef (the library was built with it) and the CPU has
    AVX2 (Linux; False elsewhere)."""
    import os

    try:
        with open(f"/proc/{os.getpid()}/maps") as maps, open("/proc/cpuinfo") as cpu:
            return "libsleef" in maps.read() and " avx2" in cpu.read()
    except OSError:
        return False


def sleef_runs() -> bool:
    """Whether this process's float32/float64 elementary functions run SLEEF's (sleef_loaded(),
    and no CTENSOR_CPU_ISA=generic keeping the C library's)."""
    import os

    return sleef_loaded() and os.environ.get("CTENSOR_CPU_ISA") != "generic"


@st.composite
def einsum_problems(draw, max_operands: int = 4, min_extent: int = 0, min_batch: int = 0):
    """A random NumPy einsum spec with its operand shapes: 1 to max_operands operands over the
    letters a-e (extents min_extent to 3; repeats in an operand take a diagonal), "..." anywhere
    in an operand covering a right-aligned suffix of the broadcast dims (extents min_batch to 3),
    each of those dims 1 (broadcast) or the full extent; an implicit output, or an explicit one
    of distinct letters with "..." somewhere."""
    num = draw(st.integers(1, max_operands))
    extent = {c: draw(st.integers(min_extent, 3)) for c in "abcde"}
    batch = draw(st.lists(st.integers(min_batch, 3), max_size=2))
    terms, shapes, used, ellipsis = [], [], [], False
    for _ in range(num):
        letters = draw(st.lists(st.sampled_from("abcde"), max_size=3))
        used += letters
        shape = [extent[c] for c in letters]
        if draw(st.booleans()):
            ellipsis = True
            covered = draw(st.integers(0, len(batch)))
            dims = [b if draw(st.booleans()) else 1 for b in batch[len(batch) - covered :]]
            at = draw(st.integers(0, len(letters)))
            letters = letters[:at] + ["..."] + letters[at:]
            shape = shape[:at] + dims + shape[at:]
        terms.append("".join(letters))
        shapes.append(tuple(shape))
    spec = ",".join(terms)
    if draw(st.booleans()):
        out = draw(st.permutations(sorted(set(used))))
        out = out[: draw(st.integers(0, len(out)))]
        if ellipsis:
            at = draw(st.integers(0, len(out)))
            out = out[:at] + ["..."] + out[at:]
        spec += "->" + "".join(out)
    return spec, shapes


def ops_functions_entered(call):
    """(call(), names of the ctensor.ops Python functions that ran during it): empty when the C
    fast path (FastOp) ran the whole call."""
    entered = []

    def profile(frame, event, arg):  # noqa: ANN001, ANN202, ARG001
        if event == "call" and frame.f_code.co_filename.startswith("<ctensor.ops."):
            entered.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    return result, entered
