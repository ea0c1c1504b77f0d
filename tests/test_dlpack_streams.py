"""Streams as DLPack specifies them (ctensor/_streams.py), checked without a GPU.

Fake producers report a CUDA device (``__dlpack_device__``) and record what ``__dlpack__`` is
asked; their capsules view host memory labelled as CUDA, so the call is read, opened and typed
as a CUDA call, and stops where the C library looks for a CUDA kernel (none is loaded here:
UnsupportedDeviceError). The workspace query, which runs just before, records the
``ct_context.stream`` the kernel would have run on. Where a GPU is present the same calls run
for real (tests/test_cuda_device.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import ctensor
from ctensor import _call, _frameworks, _run, _streams
from ctensor._device_array import _capsule
from ctensor._lib import ffi

CUDA, CUDA_MANAGED, CPU = 2, 13, 1


class Producer:
    """A DLPack producer of ``host``'s memory on ``device``, recording every ``__dlpack__``
    call's keyword arguments."""

    def __init__(self, host: np.ndarray, device: tuple[int, int] = (CUDA, 0)):
        self.host = host
        self.device = device
        self.asked: list[dict] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):  # noqa: ANN001, ANN204
        kwargs = {"stream": stream, "max_version": max_version}
        self.asked.append({k: v for k, v in kwargs.items() if v is not None})
        if self.device[0] not in (CUDA, CUDA_MANAGED) and stream is not None:
            raise BufferError("a CPU producer takes no stream (DLPack)")
        host = self.host
        return _capsule(host.ctypes.data, self.device, host.shape, str(host.dtype), None, 0, host)


class OldProducer(Producer):
    """A producer from before DLPack 1.0: ``__dlpack__`` takes ``stream`` only."""

    def __dlpack__(self, *, stream=None):  # noqa: ANN001, ANN204
        return super().__dlpack__(stream=stream)


class StreamFramework(_frameworks.Framework):
    """A framework whose current stream is ``stream`` (as CuPy's or torch's would be)."""

    name = "fake"

    def __init__(self, stream: int):
        self.current = stream

    def stream(self, like):  # noqa: ANN001, ANN201
        return self.current


@pytest.fixture
def workspace_queries(monkeypatch):  # noqa: ANN001, ANN201
    """The ct_context.stream of every workspace query (an int; 0: the default stream)."""
    seen: list[int] = []
    real = _run._workspace_in_context

    def query(op, tensors, n, outputs, n_out, attrs, num_attrs, context, size, align):  # noqa: ANN001, ANN202
        seen.append(int(ffi.cast("uintptr_t", context.stream)))
        return real(op, tensors, n, outputs, n_out, attrs, num_attrs, context, size, align)

    monkeypatch.setattr(_run, "_workspace_in_context", query)
    return seen


def _with_framework(monkeypatch, tp: type, stream: int) -> None:  # noqa: ANN001
    """Makes ``tp`` a framework's array type whose current stream is ``stream``."""
    monkeypatch.setitem(_frameworks._BY_TYPE, tp, StreamFramework(stream))
    monkeypatch.setattr(_call, "_FW_CACHE", {})


def _floats(n: int = 6) -> np.ndarray:
    return np.arange(n, dtype=np.float32)


def test_cuda_producers_are_asked_with_the_stream_the_kernel_runs_on(
    monkeypatch, workspace_queries
) -> None:  # noqa: ANN001
    class Array(Producer):
        pass

    _with_framework(monkeypatch, Array, 0x7F00)
    a, b, out = Array(_floats()), Array(_floats()), Array(np.zeros(6, np.float32))
    with pytest.raises(ctensor.UnsupportedDeviceError, match="cuda"):
        ctensor.ops.add(a, b, out=out)
    for producer in (a, b, out):  # inputs and out= alike: a write waits for pending reads
        assert producer.asked == [{"stream": 0x7F00, "max_version": (1, 0)}]
    # The kernel's stream: the same one, and add (not a workspace op) still asks for scratch.
    assert workspace_queries == [0x7F00]


@pytest.mark.parametrize(
    "current, asked, context",
    [(0, 1, 0), (2, 2, 2), (0x1234, 0x1234, 0x1234)],
    ids=["legacy-default", "per-thread-default", "stream"],
)
def test_default_streams_are_numbered_as_dlpack_says(
    monkeypatch, workspace_queries, current, asked, context
) -> None:  # noqa: ANN001
    # DLPack forbids 0: the legacy default stream (handle 0) is asked as 1, while ct_context
    # keeps the handle itself.
    class Array(Producer):
        pass

    _with_framework(monkeypatch, Array, current)
    a = Array(_floats())
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.negative(a, out=Array(_floats()))
    assert a.asked == [{"stream": asked, "max_version": (1, 0)}]
    assert workspace_queries == [context]


def test_managed_memory_is_asked_with_a_stream_too(monkeypatch, workspace_queries) -> None:  # noqa: ANN001
    class Array(Producer):
        pass

    _with_framework(monkeypatch, Array, 0x99)
    a = Array(_floats(), (CUDA_MANAGED, 0))
    with pytest.raises(ctensor.CTensorError):
        ctensor.ops.negative(a, out=Array(_floats(), (CUDA_MANAGED, 0)))
    assert a.asked == [{"stream": 0x99, "max_version": (1, 0)}]


def test_the_first_array_says_which_stream(monkeypatch, workspace_queries) -> None:  # noqa: ANN001
    # The call's framework is its first array's: a second array of another framework is asked
    # for the first one's stream.
    class First(Producer):
        pass

    class Second(Producer):
        pass

    _with_framework(monkeypatch, First, 0x100)
    _with_framework(monkeypatch, Second, 0x200)
    first, second = First(_floats()), Second(_floats())
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.add(first, second, out=Second(np.zeros(6, np.float32)))
    assert first.asked == second.asked == [{"stream": 0x100, "max_version": (1, 0)}]
    assert workspace_queries == [0x100]


def test_without_array_inputs_the_output_says_which_stream(monkeypatch, workspace_queries) -> None:  # noqa: ANN001
    class Array(Producer):
        pass

    _with_framework(monkeypatch, Array, 0x300)
    out = Array(np.zeros((2, 3), np.float32))
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.random_uniform(shape=(2, 3), dtype="float32", seed=1, out=out)
    assert out.asked == [{"stream": 0x300, "max_version": (1, 0)}]
    assert workspace_queries == [0x300]


def test_a_foreign_producer_gets_the_legacy_default_stream(workspace_queries) -> None:  # noqa: ANN001
    # No framework: ctensor allocates nothing for it and runs on the default stream, which
    # DLPack numbers 1 (never 0, never None: None would let the producer skip its ordering
    # only by accident of meaning the legacy default stream too).
    a, b = Producer(_floats()), Producer(_floats())
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.add(a, b, out=Producer(np.zeros(6, np.float32)))
    assert a.asked == b.asked == [{"stream": 1, "max_version": (1, 0)}]
    assert workspace_queries == [0]


def test_producers_before_dlpack_1_get_the_stream(monkeypatch) -> None:  # noqa: ANN001
    class Array(OldProducer):
        pass

    _with_framework(monkeypatch, Array, 0x400)
    a = Array(_floats())
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.negative(a, out=Array(_floats()))
    assert a.asked == [{"stream": 0x400}]


def test_cpu_producers_are_asked_as_before(workspace_queries) -> None:  # noqa: ANN001
    a, b = Producer(_floats(), (CPU, 0)), Producer(_floats(), (CPU, 0))
    np.testing.assert_array_equal(ctensor.ops.add(a, b), 2 * _floats())
    out = np.empty(6, np.float32)
    ctensor.ops.multiply(a, b, out=out)
    np.testing.assert_array_equal(out, _floats() ** 2)
    assert a.asked == b.asked == [{"max_version": (1, 0)}] * 2
    # The CPU path asks for scratch only for workspace ops: add and multiply ask nothing.
    assert workspace_queries == []


def test_numpy_calls_stay_off_the_stream_path(monkeypatch, workspace_queries) -> None:  # noqa: ANN001
    def no_stream(*args):  # noqa: ANN002, ANN202
        raise AssertionError(f"a CPU call worked out a stream: {args}")

    monkeypatch.setattr(_call, "producer_stream", no_stream)
    monkeypatch.setattr(_call, "call_stream", no_stream)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(ctensor.ops.sum(x, axis=1), x.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(ctensor.ops.add(x, 1.0), x + 1)
    assert workspace_queries == []


# --- torch tensors: to_dlpack orders nothing, so _streams.order_torch does -------------------


class _Stream:
    def __init__(self, log: list, name: str, handle: int):
        self.log, self.name, self.cuda_stream = log, name, handle

    def wait_stream(self, other: _Stream) -> None:
        self.log.append((self.name, "waits for", other.name))


def _fake_torch(current: dict[int, int]) -> tuple[SimpleNamespace, list]:
    """A torch namespace whose current stream on CUDA device i has handle current[i]."""
    log: list = []
    cuda = SimpleNamespace(
        current_stream=lambda device: _Stream(
            log, f"current:{device.index}", current[device.index]
        ),
        default_stream=lambda device: _Stream(log, f"default:{device.index}", 0),
        ExternalStream=lambda handle, device: _Stream(log, f"external:{handle:#x}", handle),
    )
    return SimpleNamespace(cuda=cuda), log


def _tensor(kind: str, index: int = 0) -> SimpleNamespace:
    import torch

    return SimpleNamespace(device=torch.device(kind, index))


def test_torch_on_the_calls_stream_needs_nothing() -> None:
    torch, log = _fake_torch({0: 0x500})
    _streams.order_torch(0x500, [_tensor("cuda"), _tensor("cuda")], torch)
    assert log == []


def test_torch_on_another_stream_is_waited_for_once_per_device() -> None:
    torch, log = _fake_torch({0: 0x500})
    _streams.order_torch(0x600, [_tensor("cuda"), _tensor("cpu"), _tensor("cuda")], torch)
    assert log == [("external:0x600", "waits for", "current:0")]


def test_each_device_waits_for_its_own_current_stream() -> None:
    torch, log = _fake_torch({0: 0x500, 1: 0x700})
    _streams.order_torch(0x700, [_tensor("cuda", 0), _tensor("cuda", 1)], torch)
    assert log == [("external:0x700", "waits for", "current:0")]


def test_the_legacy_default_stream_waits_as_torchs_default_stream() -> None:
    torch, log = _fake_torch({0: 0x500})
    _streams.order_torch(0, [_tensor("cuda")], torch)
    assert log == [("default:0", "waits for", "current:0")]


def test_calls_of_torch_need_no_ordering_of_torch_tensors() -> None:
    assert not _streams.needs_torch_order(_frameworks.TORCH)
    assert _streams.needs_torch_order(_frameworks.CUPY)
    assert _streams.needs_torch_order(None)


def test_dlpack_numbers_the_default_streams() -> None:
    assert _streams.dlpack_stream(0) == 1  # cudaStreamLegacy; DLPack forbids 0
    assert _streams.dlpack_stream(2) == 2  # cudaStreamPerThread
    assert _streams.dlpack_stream(0xABC0) == 0xABC0


# --- CuPy's side of it, with a stand-in for the cupy module (no GPU here) ---------------------


class _CupyModule:
    """What ctensor's CuPy framework calls: cuda.Device, cuda.get_current_stream, empty, full;
    it records the calls, and arrays are host memory labelled as CUDA memory."""

    def __init__(self, streams: dict[int, int]):
        self.streams = streams
        self.log: list = []
        self.device = 0
        module = self

        class Device:
            def __init__(self, index: int):
                self.index = index

            def __enter__(self):  # noqa: ANN204
                self.previous, module.device = module.device, self.index
                return self

            def __exit__(self, *exc):  # noqa: ANN002, ANN204
                module.device = self.previous

        class Stream:
            def __init__(self, ptr: int):
                self.ptr = ptr

        def get_current_stream(device_id: int = -1) -> Stream:
            module.log.append(("get_current_stream", device_id))
            return Stream(streams[device_id])

        self.cuda = SimpleNamespace(Device=Device, get_current_stream=get_current_stream)

    def empty(self, shape, dtype):  # noqa: ANN001, ANN201
        self.log.append(("empty", tuple(np.atleast_1d(shape)), np.dtype(dtype).name, self.device))
        return FakeCupyArray(np.zeros(shape, dtype), self.device)

    def full(self, shape, value, dtype):  # noqa: ANN001, ANN201
        self.log.append(("full", shape, value, np.dtype(dtype).name, self.device))
        return FakeCupyArray(np.full(shape, value, dtype), self.device)


class FakeCupyArray(Producer):
    """A stand-in for cupy.ndarray (its module says cupy, so ctensor takes it for CuPy's)."""

    def __init__(self, host: np.ndarray, device_id: int = 0):
        super().__init__(host, (CUDA, device_id))
        self.data = SimpleNamespace(ptr=host.ctypes.data)

    @property
    def device(self):  # noqa: ANN201 - CuPy's Device: .id
        return SimpleNamespace(id=self._device[1])

    @device.setter
    def device(self, value) -> None:  # noqa: ANN001
        self._device = value

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):  # noqa: ANN001, ANN204
        self.asked.append(
            {
                k: v
                for k, v in {"stream": stream, "max_version": max_version}.items()
                if v is not None
            }
        )
        host = self.host
        return _capsule(host.ctypes.data, self._device, host.shape, str(host.dtype), None, 0, host)


FakeCupyArray.__module__ = "cupy._core.core"


@pytest.fixture
def fake_cupy(monkeypatch):  # noqa: ANN001, ANN201
    import sys

    module = _CupyModule({0: 0xC0, 1: 0xC1})
    monkeypatch.setitem(sys.modules, "cupy", module)
    monkeypatch.setattr(_call, "_FW_CACHE", {})
    return module


def test_cupy_calls_run_on_cupys_current_stream_of_the_arrays_device(
    fake_cupy, workspace_queries
) -> None:  # noqa: ANN001
    x, y = FakeCupyArray(_floats(), 1), FakeCupyArray(_floats(), 1)
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.add(x, y)
    assert x.asked == y.asked == [{"stream": 0xC1, "max_version": (1, 0)}]
    assert ("get_current_stream", 1) in fake_cupy.log
    # The result was allocated by CuPy on the arrays' device, and opened without asking CuPy
    # to order anything (stream -1): it comes from CuPy's pool on the call's stream.
    assert ("empty", (6,), "float32", 1) in fake_cupy.log
    assert workspace_queries == [0xC1]


def test_cupy_results_are_exported_with_no_ordering(fake_cupy, monkeypatch) -> None:  # noqa: ANN001
    made: list = []
    real_empty = fake_cupy.empty

    def empty(shape, dtype):  # noqa: ANN001, ANN202
        made.append(real_empty(shape, dtype))
        return made[-1]

    monkeypatch.setattr(fake_cupy, "empty", empty)
    x = FakeCupyArray(_floats())
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.negative(x)
    (result,) = made
    assert result.asked == [{"stream": -1}]


def test_python_scalars_of_cupy_calls_are_filled_on_the_device(fake_cupy) -> None:  # noqa: ANN001
    x = FakeCupyArray(_floats(), 1)
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.multiply(x, 0.5)
    (fill,) = [entry for entry in fake_cupy.log if entry[0] == "full"]
    _, shape, value, dtype, device = fill
    assert (shape, value, device) == ((), 0.5, 1)
    # The value already in the array's dtype (its weak dtype comes from the kernels registered
    # on the device: without a CUDA backend here, float64).
    assert type(value) is np.dtype(dtype).type


def test_jax_arrays_are_asked_their_device_only_where_jax_has_cuda(monkeypatch) -> None:  # noqa: ANN001
    import jax.numpy as jnp

    asked: list = []
    real = _call.producer_stream

    def recording(obj, frame, like):  # noqa: ANN001, ANN202
        asked.append(type(obj).__name__)
        return real(obj, frame, like)

    monkeypatch.setattr(_call, "producer_stream", recording)
    x = jnp.arange(6, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(ctensor.ops.add(x, x)), 2 * np.arange(6))
    assert len(asked) == (2 if _streams.jax_uses_cuda() else 0)


# --- scratch memory of calls on a CUDA device ------------------------------------------------


@pytest.fixture
def kernel_wants_scratch(monkeypatch):  # noqa: ANN001, ANN201
    """Makes every workspace query answer 1000 bytes, aligned to 256 (as a cuBLASLt, cuDNN or
    CUB kernel would), without asking the C library; returns the contexts' workspace fields
    seen by ct_op_run."""
    seen: list = []

    def query(op, tensors, n, outputs, n_out, attrs, num_attrs, context, size, align):  # noqa: ANN001, ANN202
        size[0], align[0] = 1000, 256
        return 0

    real_run = _call._run

    def run(op, tensors, n, outputs, n_out, attrs, num_attrs, context):  # noqa: ANN001, ANN202
        if context != ffi.NULL:
            seen.append((int(ffi.cast("uintptr_t", context.workspace)), context.workspace_size))
        return real_run(op, tensors, n, outputs, n_out, attrs, num_attrs, context)

    monkeypatch.setattr(_run, "_workspace_in_context", query)
    monkeypatch.setattr(_call, "_run", run)
    return seen


def test_scratch_of_a_cupy_call_comes_from_cupy_on_the_arrays_device(
    fake_cupy, kernel_wants_scratch
) -> None:  # noqa: ANN001
    x = FakeCupyArray(_floats(), 1)
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.negative(x, out=FakeCupyArray(_floats(), 1))  # not a workspace op
    assert ("empty", (1256,), "uint8", 1) in fake_cupy.log
    ((address, size),) = kernel_wants_scratch
    assert size == 1000 and address % 256 == 0


def test_scratch_without_a_device_framework_is_ctensors_device_memory(
    monkeypatch, kernel_wants_scratch
) -> None:  # noqa: ANN001
    from ctensor._device_array import DeviceArray

    made: list = []

    def empty(cls, shape, dtype, device):  # noqa: ANN001, ANN202
        made.append((shape, dtype, device))
        return SimpleNamespace(data_handle=0x10000)

    monkeypatch.setattr(DeviceArray, "empty", classmethod(empty))
    a = Producer(_floats())  # a foreign producer: no framework, never host scratch
    with pytest.raises(ctensor.UnsupportedDeviceError):
        ctensor.ops.negative(a, out=Producer(_floats()))
    assert made == [((1256,), "uint8", (CUDA, 0))]
    assert kernel_wants_scratch == [(0x10000, 1000)]
