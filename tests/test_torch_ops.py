"""``torch.ops.ctensor``: every registered op passes ``torch.library.opcheck`` (schema, autograd
registration, FakeTensor, AOT dispatch with dynamic shapes) on representative inputs and gives
what ``ctensor.ops`` gives on the same inputs; every differentiable op passes
``torch.autograd.gradcheck`` in float64.

Inputs come from the conformance suite's generators (conformance/cases.py, op_table.py), made
torch tensors: per op a float32, a float64 and an integer or bool kernel signature where the op
has one, with the suite's layouts (strided, transposed, broadcast: non-contiguous inputs), no
edge values, and no case whose results hold NaN (opcheck compares without equal_nan). A backward
op also takes the inputs its forward's gradient program passes it, recorded while the gradient
runs through the forward (two such cases where the suite has no valid one: its schema-derived
indices fall out of range).
"""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import ctensor
import ctensor.autodiff
import ctensor.torch
from ctensor._device_array import _capsule
from ctensor._registry import all_specs, get_spec
from ctensor.conformance import dtypes as dt
from ctensor.conformance.cases import generate, gradient_cases
from ctensor.conformance.op_table import OPS
from ctensor.torch._out import has_out_overload, out_names
from ctensor.torch._schema import arg_name

SEED = 28
#: Dtypes of the signatures tried: half floats and complex numbers are left to other tests.
_PLAIN = frozenset({"float32", "float64", "bool", *dt.INTEGERS})
_TOLERANCE = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-14)}


# ---------------------------------------------------------------------- inputs ---------------


def _cpu_signatures(spec) -> list[tuple[str, ...]]:  # noqa: ANN001
    seen = []
    for kernel in spec.schema["kernels"]:
        signature = tuple(kernel["signature"])
        if kernel["device"] == "cpu" and set(signature) <= _PLAIN and signature not in seen:
            seen.append(signature)
    return seen


def _input_dtypes(spec, signature) -> tuple[str, ...]:  # noqa: ANN001
    return signature[: len(spec.inputs)] if spec.inputs else signature


def _chosen_signatures(spec) -> list[tuple[str, ...]]:  # noqa: ANN001
    """A float32 and a float64 signature (every float input of that dtype) and one without
    float inputs, those the op has; for an op without inputs, by its outputs."""
    signatures = _cpu_signatures(spec)
    chosen = []
    for want in ("float32", "float64"):
        for signature in signatures:
            floats = {d for d in _input_dtypes(spec, signature) if dt.is_float(d)}
            if floats == {want}:
                chosen.append(signature)
                break
    integral = [s for s in signatures if not any(dt.is_float(d) for d in _input_dtypes(spec, s))]
    if integral:
        preferred = [s for s in integral if "int64" in _input_dtypes(spec, s)]
        chosen.append((preferred or integral)[0])
    return chosen or signatures[:1]


def _layout(tensor: torch.Tensor, layout: str | None) -> torch.Tensor:
    """The same values in a torch view of the suite's layout (torch has no negative strides:
    "reversed" becomes "strided")."""
    if tensor.dim() == 0 or tensor.numel() == 0 or layout in (None, "compact"):
        return tensor
    if layout in ("strided", "reversed"):
        base = torch.zeros(tuple(2 * n + 1 for n in tensor.shape), dtype=tensor.dtype)
        view = base[tuple(slice(1, None, 2) for _ in tensor.shape)]
        view.copy_(tensor)
        return view
    if layout == "transposed" and tensor.dim() >= 2:
        axes = list(reversed(range(tensor.dim())))
        return tensor.permute(axes).contiguous().permute(axes)
    if layout == "broadcast":
        # the suite made the values constant along one axis: a zero stride there
        for axis, extent in enumerate(tensor.shape):
            first = tensor.narrow(axis, 0, 1)
            if extent > 1 and torch.equal(first.expand(tensor.shape), tensor):
                return first.expand(tensor.shape)
    return tensor


def _torch_input(array: np.ndarray, layout: str | None) -> torch.Tensor:
    return _layout(torch.from_numpy(np.array(array, order="C")), layout)


def _torch_attrs(spec, attrs: dict) -> dict:  # noqa: ANN001
    kwargs = {}
    for name, value in attrs.items():
        if spec.attr_types.get(name) == "dtype" and isinstance(value, str):
            value = getattr(torch, value)
        kwargs[arg_name(name)] = value
    return kwargs


def _call_args(spec, tensors: list) -> tuple:  # noqa: ANN001
    """Flat input tensors as the torch op takes them: the variadic ones one list."""
    if not spec.variadic_input:
        return tuple(tensors)
    fixed = len(spec.inputs) - 1
    return (*tensors[:fixed], list(tensors[fixed:]))


def _flat(args: tuple) -> list:
    flat = []
    for value in args:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


class _Case:
    """One call of ``torch.ops.ctensor.<op>``: positional tensors (the variadic list one entry),
    keyword attributes, and where the inputs came from."""

    def __init__(self, op: str, args: tuple, kwargs: dict, origin: str) -> None:
        self.op, self.args, self.kwargs, self.origin = op, args, kwargs, origin

    def __repr__(self) -> str:
        shapes = [
            [tuple(t.shape) for t in a]
            if isinstance(a, list)
            else None
            if a is None
            else (tuple(a.shape), str(a.dtype).removeprefix("torch."), a.is_contiguous())
            for a in self.args
        ]
        return f"{self.op}{shapes} {self.kwargs} ({self.origin})"


def _unusable(case: _Case) -> bool:
    """Whether the call gives a NaN (opcheck compares eager and traced outputs and gradients
    without equal_nan, so such a case could not pass it), or refuses the values (the suite's
    schema-derived cases of a backward op the suite has no entry for draw indices out of
    range: such an op takes recorded cases)."""
    try:
        outputs = _outputs(getattr(torch.ops.ctensor, case.op)(*case.args, **case.kwargs))
    except ctensor.CTensorError:
        return True
    return any(o.is_floating_point() and bool(o.isnan().any()) for o in outputs)


def _from_suite(spec, case, signature) -> _Case:  # noqa: ANN001
    tensors = [
        None if a is None else _torch_input(a, layout)
        for a, layout in zip(case.inputs, case.layouts, strict=True)
    ]
    return _Case(
        spec.name,
        _call_args(spec, tensors),
        _torch_attrs(spec, case.attrs),
        f"suite {signature} case {case.index}",
    )


def _non_contiguous(case: _Case) -> bool:
    return any(t is not None and not t.is_contiguous() for t in _flat(case.args))


def _suite_cases(spec) -> list[_Case]:  # noqa: ANN001
    """One case per chosen signature from the suite's cases without edge values (infinities and
    NaN in the inputs), then its smooth gradient cases: the first that gives no NaN, for the
    first signature the first with a non-contiguous input if one does."""
    cases = []
    entry = dict(OPS.get(spec.name, {}), edges=False)
    for number, signature in enumerate(_chosen_signatures(spec)):
        found = generate(spec, signature, SEED, 6, entry) + gradient_cases(spec, signature, SEED, 3)
        made = [_from_suite(spec, case, signature) for case in found]
        if number == 0:
            made.sort(key=lambda case: not _non_contiguous(case))
        usable = next((case for case in made if not _unusable(case)), None)
        if usable is not None:
            cases.append(usable)
    return cases


class _Recorder(TorchDispatchMode):
    """Records the calls of ``torch.ops.ctensor`` ops (backward steps included)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, list] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        if func.namespace == "ctensor":
            name = func.overloadpacket.__name__
            detached = tuple(
                [t.detach().clone() for t in a]
                if isinstance(a, (list, tuple))
                else a.detach().clone()
                if isinstance(a, torch.Tensor)
                else a
                for a in args
            )
            self.calls.setdefault(name, []).append((detached, dict(kwargs)))
        return func(*args, **kwargs)


def _gradient_inputs(spec, signature) -> tuple[tuple, dict] | None:  # noqa: ANN001
    """A smooth float case of a differentiable op (conformance gradient_cases): torch args
    (float inputs with a gradient require grad) and kwargs."""
    found = gradient_cases(spec, signature, SEED, 6)
    if not found:
        return None
    # the smallest of the largest few: big enough to mean something, cheap to differentiate
    case = min(found, key=lambda c: sum(a.size for a in c.inputs if a is not None))
    grads = spec.schema["gradient"]["input_grads"]
    tensors = []
    for k, array in enumerate(case.inputs):
        if array is None:
            tensors.append(None)
            continue
        tensor = torch.from_numpy(np.array(array, order="C"))
        if tensor.is_floating_point() and grads[spec.param_of(k)] is not None:
            tensor.requires_grad_(True)
        tensors.append(tensor)
    return _call_args(spec, tensors), _torch_attrs(spec, case.attrs)


def _outputs(result) -> list:  # noqa: ANN001
    if isinstance(result, torch.Tensor):
        return [result]
    return _flat(tuple(result))


@functools.cache
def _recorded_backward_calls() -> dict[str, list]:
    """Calls of every op that the gradient programs of the differentiable ops make (float32 and
    float64 forward cases, random cotangents), by op name."""
    recorder = _Recorder()
    for name in ctensor.autodiff.differentiable_ops():
        spec = get_spec(name)
        for signature in _chosen_signatures(spec)[:2]:
            made = _gradient_inputs(spec, signature)
            if made is None:
                continue
            args, kwargs = made
            leaves = [t for t in _flat(args) if t is not None and t.requires_grad]
            if not leaves:
                continue
            outputs = [
                o
                for o in _outputs(getattr(torch.ops.ctensor, name)(*args, **kwargs))
                if o.requires_grad
            ]
            generator = torch.Generator().manual_seed(zlib.crc32(name.encode()))
            cotangents = [torch.randn(o.shape, dtype=o.dtype, generator=generator) for o in outputs]
            with recorder:
                torch.autograd.grad(outputs, leaves, cotangents, allow_unused=True)
    return recorder.calls


def _recorded_cases(name: str, count: int) -> list[_Case]:
    """Up to ``count`` calls of op ``name`` made by gradient programs, of different dtypes,
    without NaN; the first with its inputs in strided views (the same values)."""
    calls = _recorded_backward_calls().get(name, [])
    picked, dtypes = [], set()
    for args, kwargs in calls:
        dtype = next(t.dtype for t in _flat(args) if t is not None)
        if not picked:
            args = tuple(
                [_layout(t, "strided") for t in a]
                if isinstance(a, list)
                else None
                if a is None
                else _layout(a, "strided")
                for a in args
            )
        case = _Case(name, args, kwargs, "recorded from a gradient program")
        if dtype not in dtypes and not _unusable(case):
            dtypes.add(dtype)
            picked.append(case)
    return picked[:count]


@functools.cache
def _all_cases() -> dict[str, list[_Case]]:
    cases = {}
    backward_ops = {
        step["op"]
        for spec in all_specs().values()
        for step in spec.schema["gradient"].get("steps", ())
    }
    for name in ctensor.list_ops():
        spec = get_spec(name)
        found = _suite_cases(spec)
        if name in backward_ops:
            found += _recorded_cases(name, 1 if found else 2)
        cases[name] = found
    return cases


def _opcheck_params() -> list:
    return [
        pytest.param(name, index, id=f"{name}-{index}")
        for name, found in _all_cases().items()
        for index in range(len(found))
    ]


# ---------------------------------------------------------------------- opcheck --------------


def test_every_registered_op_has_opcheck_cases():
    missing = [name for name in ctensor.list_ops() if not _all_cases().get(name)]
    assert not missing, f"ops without an opcheck case: {missing}"
    assert sorted(ctensor.torch.op_names()) == sorted(ctensor.list_ops())


def _requiring_grad(case: _Case) -> tuple:
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


def _numpy_args(case: _Case) -> tuple:
    return tuple(
        [t.detach().numpy() for t in a]
        if isinstance(a, list)
        else None
        if a is None
        else a.detach().numpy()
        for a in case.args
    )


def _ctensor_attrs(spec, kwargs: dict) -> dict:  # noqa: ANN001
    names = {arg_name(a["name"]): a["name"] for a in spec.attrs}
    attrs = {}
    for key, value in kwargs.items():
        if isinstance(value, torch.dtype):
            value = str(value).removeprefix("torch.")
        attrs[names[key]] = value
    return attrs


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
    case = _all_cases()[name][index]
    op = getattr(torch.ops.ctensor, name).default
    args = _requiring_grad(case)
    result = torch.library.opcheck(op, args, case.kwargs)
    assert set(result.values()) == {"SUCCESS"}, f"{case}: {result}"

    # The torch op computes what ctensor.ops computes on the same memory.
    spec = get_spec(name)
    got = _outputs(op(*args, **case.kwargs))
    want = getattr(ctensor.ops, name)(*_numpy_args(case), **_ctensor_attrs(spec, case.kwargs))
    want = [want] if isinstance(want, np.ndarray) else _flat(tuple(want))
    assert len(got) == len(want), f"{case}: {len(got)} outputs vs {len(want)}"
    exact = "deterministic" in spec.flags
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        _assert_same(g.detach(), w, name, f"output {k}", exact)


def _detached(case: _Case) -> tuple:
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
    case = _all_cases()[name][0]
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
        got = _flat((results[key],))
        for k, (g, w) in enumerate(zip(got, _flat((value,)), strict=True)):
            torch.testing.assert_close(g, w, rtol=0, atol=0, msg=f"{case}: {key}[{k}]")


# ---------------------------------------------------------------------- gradcheck ------------


def _float64_signature(spec) -> tuple[str, ...]:  # noqa: ANN001
    return next(
        s
        for s in _cpu_signatures(spec)
        if {d for d in _input_dtypes(spec, s) if dt.is_float(d)} == {"float64"}
    )


def _as_function(name: str, args: tuple, kwargs: dict):  # noqa: ANN202
    """The op as a function of its inputs that require grad (the others held fixed), and those
    inputs; a function of float outputs only (indices are not differentiable)."""
    flat = _flat(args)
    positions = [k for k, t in enumerate(flat) if t is not None and t.requires_grad]
    spec = get_spec(name)
    op = getattr(torch.ops.ctensor, name)

    def function(*leaves: torch.Tensor) -> tuple:
        values = list(flat)
        for k, leaf in zip(positions, leaves, strict=True):
            values[k] = leaf
        outputs = _outputs(op(*_call_args(spec, values), **kwargs))
        return tuple(o for o in outputs if o.is_floating_point())

    return function, tuple(flat[k] for k in positions)


def _float_inputs_without_gradient(spec) -> list[int]:  # noqa: ANN001
    grads = spec.schema["gradient"]["input_grads"]
    signature = _float64_signature(spec)
    return [k for k in range(len(spec.inputs)) if grads[k] is None and dt.is_float(signature[k])]


@pytest.mark.parametrize("name", sorted(ctensor.autodiff.differentiable_ops()))
def test_gradcheck(name: str):
    spec = get_spec(name)
    made = _gradient_inputs(spec, _float64_signature(spec))
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
    function, leaves = _as_function(name, *_gradient_inputs(spec, _float64_signature(spec)))
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
    out = _outputs(getattr(torch.ops.ctensor, name)(*ours, **kwargs))[0]
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
