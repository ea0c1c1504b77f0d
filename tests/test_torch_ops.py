"""``torch.ops.ctensor``: every registered op passes ``torch.library.opcheck`` (schema, autograd
registration, FakeTensor, AOT dispatch with dynamic shapes) on representative inputs and gives
what ``ctensor.ops`` gives on the same inputs; every differentiable op passes
``torch.autograd.gradcheck`` in float64. The inputs: tests/torch_cases.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch_cases import (
    SEED,
    Case,
    all_cases,
    call_args,
    cpu_signatures,
    flat_args,
    flat_results,
    gradient_inputs,
    input_dtypes,
)

import ctensor
import ctensor.autodiff
import ctensor.torch
from ctensor._device_array import _capsule
from ctensor._registry import get_spec
from ctensor.conformance import dtypes as dt
from ctensor.torch._arguments import ctensor_attrs
from ctensor.torch._out import has_out_overload, out_names

C = torch.ops.ctensor
_TOLERANCE = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-14)}


def _opcheck_params() -> list:
    return [
        pytest.param(name, index, id=f"{name}-{index}")
        for name, found in all_cases().items()
        for index in range(len(found))
    ]


# ---------------------------------------------------------------------- opcheck --------------


def test_every_registered_op_has_opcheck_cases():
    missing = [name for name in ctensor.list_ops() if not all_cases().get(name)]
    assert not missing, f"ops without an opcheck case: {missing}"
    assert sorted(ctensor.torch.op_names()) == sorted(ctensor.list_ops())


def _requiring_grad(case: Case) -> tuple:
    """The case's args with float inputs requiring grad where the op is differentiable (so that
    opcheck's AOT test runs the backward too)."""
    spec = get_spec(case.op)
    differentiable = spec.schema["gradient"].get("differentiable")
    grads = spec.schema["gradient"].get("input_grads") or []

    def prepare(t, k):  # noqa: ANN001, ANN202
        if t is None:
            return None
        t = t.detach()
        wants = differentiable and grads[k] is not None and t.is_floating_point()
        return t.requires_grad_(True) if wants and t.is_leaf else t

    return tuple(
        [prepare(t, k) for t in a] if isinstance(a, list) else prepare(a, k)
        for k, a in enumerate(case.args)
    )


def _numpy_args(case: Case) -> tuple:
    return tuple(
        [t.detach().numpy() for t in a]
        if isinstance(a, list)
        else None
        if a is None
        else a.detach().numpy()
        for a in case.args
    )


def _assert_same(got: torch.Tensor, want: np.ndarray, op: str, what: str, exact: bool) -> None:
    want = torch.from_numpy(np.asarray(want))
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{op} {what}: {got.dtype}{tuple(got.shape)} vs ctensor.ops {want.dtype}{tuple(want.shape)}"
    )
    if exact or not got.is_floating_point():
        assert torch.equal(got, want) or (
            got.is_floating_point()
            and torch.equal(got.isnan(), want.isnan())
            and torch.equal(got.nan_to_num(), want.nan_to_num())
        ), f"{op} {what} differs from ctensor.ops"
    else:
        rtol, atol = _TOLERANCE[got.dtype]
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize(("name", "index"), _opcheck_params())
def test_opcheck(name: str, index: int):
    case = all_cases()[name][index]
    op = getattr(torch.ops.ctensor, name).default
    args = _requiring_grad(case)
    result = torch.library.opcheck(op, args, case.kwargs)
    assert set(result.values()) == {"SUCCESS"}, f"{case}: {result}"

    # The torch op computes what ctensor.ops computes on the same memory.
    spec = get_spec(name)
    got = flat_results(op(*args, **case.kwargs))
    want = getattr(ctensor.ops, name)(*_numpy_args(case), **ctensor_attrs(spec, case.kwargs))
    want = [want] if isinstance(want, np.ndarray) else flat_args(tuple(want))
    assert len(got) == len(want), f"{case}: {len(got)} outputs vs {len(want)}"
    exact = "deterministic" in spec.flags
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        _assert_same(g.detach(), w, name, f"output {k}", exact)


def _detached(case: Case) -> tuple:
    return tuple(
        [t.detach() for t in a] if isinstance(a, list) else None if a is None else a.detach()
        for a in case.args
    )


@pytest.mark.parametrize(
    "name", [name for name in ctensor.list_ops() if has_out_overload(get_spec(name))]
)
def test_opcheck_out_overload(name: str):
    """``<op>.out`` on the op's first case, into tensors shaped as its results: opcheck passes
    and it writes what the functional op returns."""
    spec = get_spec(name)
    case = all_cases()[name][0]
    args = _detached(case)
    want = getattr(torch.ops.ctensor, name).default(*args, **case.kwargs)
    structured = [want] if len(spec.outputs) == 1 else list(want)
    results = {
        key: [torch.empty_like(t) for t in value]
        if isinstance(value, list)
        else torch.empty_like(value)
        for key, value in zip(out_names(spec), structured, strict=True)
    }
    overload = getattr(torch.ops.ctensor, name).out
    # attributes named as torch.compile's functionalization's own keywords ("mode") take a
    # trailing underscore in the out overload
    names = {argument.name for argument in overload._schema.arguments}  # noqa: SLF001
    kwargs = {key if key in names else key + "_": value for key, value in case.kwargs.items()}
    result = torch.library.opcheck(overload, args, {**kwargs, **results})
    assert set(result.values()) == {"SUCCESS"}, f"{case}: {result}"
    assert overload(*args, **kwargs, **results) is None
    for key, value in zip(out_names(spec), structured, strict=True):
        got = flat_args((results[key],))
        for k, (g, w) in enumerate(zip(got, flat_args((value,)), strict=True)):
            torch.testing.assert_close(g, w, rtol=0, atol=0, msg=f"{case}: {key}[{k}]")


# ---------------------------------------------------------------------- gradcheck ------------


def _float64_signature(spec) -> tuple[str, ...]:  # noqa: ANN001
    return next(
        s
        for s in cpu_signatures(spec)
        if {d for d in input_dtypes(spec, s) if dt.is_float(d)} == {"float64"}
    )


def _as_function(name: str, args: tuple, kwargs: dict):  # noqa: ANN202
    """The op as a function of its inputs that require grad (the others held fixed), and those
    inputs; a function of float outputs only (indices are not differentiable)."""
    flat = flat_args(args)
    positions = [k for k, t in enumerate(flat) if t is not None and t.requires_grad]
    spec = get_spec(name)
    op = getattr(torch.ops.ctensor, name)

    def function(*leaves: torch.Tensor) -> tuple:
        values = list(flat)
        for k, leaf in zip(positions, leaves, strict=True):
            values[k] = leaf
        outputs = flat_results(op(*call_args(spec, values), **kwargs))
        return tuple(o for o in outputs if o.is_floating_point())

    return function, tuple(flat[k] for k in positions)


def _float_inputs_without_gradient(spec) -> list[int]:  # noqa: ANN001
    grads = spec.schema["gradient"]["input_grads"]
    signature = _float64_signature(spec)
    return [k for k in range(len(spec.inputs)) if grads[k] is None and dt.is_float(signature[k])]


@pytest.mark.parametrize("name", sorted(ctensor.autodiff.differentiable_ops()))
def test_gradcheck(name: str):
    spec = get_spec(name)
    made = gradient_inputs(spec, _float64_signature(spec))
    assert made is not None, f"{name}: no float64 gradient case"
    function, leaves = _as_function(name, *made)
    assert leaves, f"{name}: no float input takes a gradient"
    # every float input takes a gradient, but for the ones the op's entry documents as constant
    constant = _float_inputs_without_gradient(spec)
    taking = {k for k, t in enumerate(made[0]) if isinstance(t, torch.Tensor) and t.requires_grad}
    floats = {
        k for k, t in enumerate(made[0]) if isinstance(t, torch.Tensor) and t.is_floating_point()
    }
    assert floats - taking <= set(constant), f"{name}: float inputs without a gradient"
    assert torch.autograd.gradcheck(function, leaves, eps=1e-6, atol=1e-5, rtol=1e-4)


#: Ops whose gradient programs are made of differentiable ops: second derivatives exist.
_TWICE_DIFFERENTIABLE = ["exp", "sin", "log", "sqrt", "reciprocal", "square", "tril"]


@pytest.mark.parametrize("name", _TWICE_DIFFERENTIABLE)
def test_gradgradcheck(name: str):
    spec = get_spec(name)
    steps = {step["op"] for step in spec.schema["gradient"]["steps"]}
    assert steps <= set(ctensor.autodiff.differentiable_ops())
    function, leaves = _as_function(name, *gradient_inputs(spec, _float64_signature(spec)))
    assert torch.autograd.gradgradcheck(function, leaves, eps=1e-6, atol=1e-5, rtol=1e-4)


def _reference_cases() -> list:
    """(op, torch args, ctensor kwargs, torch's own function) for loss.backward() comparisons."""
    generator = torch.Generator().manual_seed(SEED)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.float64, generator=generator)

    target = torch.randint(0, 5, (6,), generator=generator)
    return [
        ("softmax", (randn(4, 5),), {"axis": 1}, lambda x: torch.softmax(x, 1)),
        (
            "layer_norm",
            (randn(3, 8), randn(8), randn(8)),
            {"normalized_shape": [8]},
            lambda x, w, b: torch.nn.functional.layer_norm(x, (8,), w, b),
        ),
        (
            "conv2d",
            (randn(2, 3, 7, 6), randn(4, 3, 3, 3), randn(4)),
            {"stride": 2, "padding": 1},
            lambda x, w, b: torch.nn.functional.conv2d(x, w, b, stride=2, padding=1),
        ),
        ("matmul", (randn(2, 3, 4), randn(4, 5)), {}, torch.matmul),
        (
            "cross_entropy",
            (randn(6, 5), target),
            {"label_smoothing": 0.1},
            lambda x, t: torch.nn.functional.cross_entropy(x, t, label_smoothing=0.1),
        ),
        (
            "max_pool2d",
            (randn(2, 3, 6, 6),),
            {"kernel_size": [2, 2]},
            lambda x: torch.nn.functional.max_pool2d(x, 2),
        ),
        (
            "gelu",
            (randn(3, 7),),
            {"approximate": "tanh"},
            lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
        ),
        (
            "scaled_dot_product_attention",
            (randn(2, 3, 5, 4), randn(2, 3, 6, 4), randn(2, 3, 6, 4)),
            {},
            torch.nn.functional.scaled_dot_product_attention,
        ),
    ]


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "reference"),
    _reference_cases(),
    ids=[case[0] for case in _reference_cases()],
)
def test_backward_matches_torch_autograd(name, args, kwargs, reference):  # noqa: ANN001
    def leaves() -> list:
        return [a.clone().requires_grad_(a.is_floating_point()) for a in args]

    ours, theirs = leaves(), leaves()
    out = flat_results(getattr(torch.ops.ctensor, name)(*ours, **kwargs))[0]
    want = reference(*theirs)
    torch.testing.assert_close(out, want, rtol=1e-10, atol=1e-12)
    cotangent = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(1))
    (out * cotangent).sum().backward()
    (want * cotangent).sum().backward()
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a.is_floating_point():
            assert a.grad is not None, f"{name}: no gradient for input {k}"
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------------- errors ---------------

#: DLPack device types a backend may serve, with the names ctensor gives them.
_DEVICE_TYPES = ((2, "cuda"), (10, "rocm"), (7, "vulkan"))


def test_memory_on_a_device_no_loaded_backend_runs_is_named_in_the_error():
    # What the CUDA kernel of torch.ops.ctensor meets with a CUDA tensor where ctensor has no
    # CUDA backend (only the CPU one is built): a DLPack view on a device type no loaded backend
    # serves. The error names the device, not just its number.
    served = {backend.device_type for backend in ctensor.backends()}
    code, name = next((code, name) for code, name in _DEVICE_TYPES if name not in served)
    host = np.arange(4, dtype=np.float32)
    view = _capsule(host.ctypes.data, (code, 0), (4,), "float32", None, 0, host)
    with pytest.raises(ctensor.UnsupportedDeviceError, match=rf"type {code} \({name}\): no loaded"):
        ctensor.ops.negative(view)


# ---------------------------------------------------------------------- memory ---------------


def test_kernels_work_on_the_tensors_own_memory():
    # ctensor refuses an output that partly overlaps an input: it sees the overlap only when
    # the views it is given are the torch tensors' own memory (no copy of an input, no
    # temporary for a result), for a one-tensor input, a list input, and a transposed one.
    base = torch.randn(8)
    calls = {
        "add": lambda: C.add.out(base[:6], base[:6], out=base[2:]),
        "concat": lambda: C.concat.out([base[:3], base[3:6]], axis=0, out=base[2:]),
        "matmul": lambda: C.matmul.out(
            base[:4].reshape(2, 2), base[:4].reshape(2, 2).T, out=base[3:7].reshape(2, 2)
        ),
    }
    for name, make in calls.items():
        with pytest.raises(ctensor.AliasingError, match=f"{name}: output 'out' overlaps input"):
            make()
    # The same view as input and output: in place, into the caller's memory.
    x = torch.arange(6.0)
    address = x.data_ptr()
    C.add.out(x, x, out=x)
    assert x.data_ptr() == address and torch.equal(x, 2 * torch.arange(6.0))


def test_the_schema_docs_torch_md_shows_is_the_registered_one():
    docs = Path(__file__).resolve().parent.parent / "docs" / "torch.md"
    shown = [line for line in docs.read_text().splitlines() if line.startswith("# ctensor::")]
    assert shown == [f"# {torch.ops.ctensor.softmax.default._schema}"]
