"""The shortcuts of torch.ops.ctensor calls: the Autograd kernel calling ctensor's kernel at once
when nothing records or intercepts the call, and small calls with attributes replaying bound
calls (ctensor.torch._kernel). Each must give what the full path gives and step aside wherever
torch needs the dispatcher."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

import ctensor
import ctensor.torch  # noqa: F401 - registers torch.ops.ctensor
from ctensor.torch import _kernel

C = torch.ops.ctensor


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def _is_bound(plan: tuple) -> bool:
    return bool(plan) and plan[0] is not None


def _plans() -> dict:
    return getattr(_kernel._local, "plans", {})


# ----- the Autograd kernel's shortcut -----


def test_plain_calls_match_torch_and_record_nothing():
    x, y = torch.randn(8), torch.randn(8)
    result = C.add(x, y)
    assert torch.equal(result, x + y) and result.grad_fn is None and not result.requires_grad


def test_inputs_requiring_grad_are_recorded():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    y = torch.randn(5, dtype=torch.float64)
    result = C.multiply(x, y)
    assert result.grad_fn is not None
    result.sum().backward()
    assert torch.equal(x.grad, y)


def test_parameters_take_the_shortcut_only_where_nothing_records():
    w = torch.nn.Parameter(torch.randn(4, dtype=torch.float64))
    x = torch.randn(4, dtype=torch.float64)
    with torch.no_grad():
        assert C.multiply(w, x).grad_fn is None
    result = C.multiply(w, x)
    result.sum().backward()
    assert torch.equal(w.grad, x)


def test_a_dispatch_mode_still_sees_the_op():
    x = torch.randn(3)
    with _Recorder() as recorder:
        C.relu(x)
    assert "ctensor.relu.default" in recorder.names


def test_fake_and_meta_tensors_get_the_fake_kernel():
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.randn(2, 3))
        result = C.softmax(fake, axis=0)
    assert type(result).__name__ == "FakeTensor" and result.shape == (2, 3)
    meta = C.add(torch.empty(2, 3, device="meta"), torch.empty(3, device="meta"))
    assert meta.device.type == "meta" and meta.shape == (2, 3)


def test_vmap_runs_the_op_per_sample():
    x = torch.randn(3, 4)
    result = torch.func.vmap(lambda row: C.multiply(row, row))(x)
    assert torch.allclose(result, x * x)


def test_backward_without_the_trailing_optional_input():
    # the dispatcher leaves out cross_entropy's weight=None: one gradient per input given
    logits = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, 4, (6,))
    C.cross_entropy(logits, target).backward()
    expected = logits.detach().clone().requires_grad_()
    F.cross_entropy(expected, target).backward()
    assert torch.allclose(logits.grad, expected.grad)


# ----- bound calls for small calls with attributes -----


def test_repeated_calls_match_torch_in_fresh_tensors():
    x, w, b = torch.randn(2, 3, 6, 6), torch.randn(4, 3, 3, 3), torch.randn(4)
    expected = F.conv2d(x, w, b, padding=1)
    first = C.conv2d(x, w, b, padding=[1, 1])
    second = C.conv2d(x, w, b, padding=[1, 1])
    assert any(key[0] == "conv2d" and _is_bound(plan) for key, plan in _plans().items())
    assert first.data_ptr() != second.data_ptr()
    for result in (first, second):
        assert torch.allclose(result, expected, atol=1e-5)
    first.zero_()
    assert torch.allclose(second, expected, atol=1e-5)


def test_each_call_runs_the_kernel_once_also_the_one_that_binds():
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    with ctensor.profile() as prof:
        results = [C.conv2d(x, w, padding=[1, 1]) for _ in range(3)]
    assert [e["name"] for e in prof.events] == ["conv2d"] * 3
    for result in results:
        assert torch.allclose(result, F.conv2d(x, w, padding=1), atol=1e-5)


@pytest.mark.parametrize("layout", ["offset", "channels_last", "no_bias", "other_padding"])
def test_each_layout_and_attribute_gets_its_own_call(layout):
    x, w, b = torch.randn(2, 3, 7, 6), torch.randn(4, 3, 3, 3), torch.randn(4)
    padding = 1
    if layout == "offset":
        x = x[:, :, 1:]
    elif layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    elif layout == "no_bias":
        b = None
    else:
        padding = 2
    for _ in range(3):
        C.conv2d(x.contiguous(), w, b, padding=[padding, padding])  # another layout first
        result = C.conv2d(x, w, b, padding=[padding, padding])
        assert torch.allclose(result, F.conv2d(x, w, b, padding=padding), atol=1e-5)


def test_attributes_that_change_every_call_never_bind():
    x = torch.randn(4, 8)
    for offset in range(5):
        result, mask = C.dropout(x, p=0.5, seed=1, offset=offset)
        assert torch.equal(result, torch.where(mask, x * 2, 0.0))
    assert not any(key[0] == "dropout" and _is_bound(plan) for key, plan in _plans().items())


def test_inference_mode_results_are_inference_tensors():
    x = torch.randn(2, 3, 4, 4)
    C.max_pool2d(x, kernel_size=[2, 2])
    with torch.inference_mode():
        result = C.max_pool2d(x, kernel_size=[2, 2])
    assert result.is_inference() and torch.equal(result, F.max_pool2d(x, 2))
    again = C.max_pool2d(x, kernel_size=[2, 2])
    assert not again.is_inference() and torch.equal(again, F.max_pool2d(x, 2))


def test_large_calls_and_calls_bind_refuses_keep_the_general_path():
    side = 1 + int((_kernel.PLAN_BYTES / 4) ** 0.5)
    big = torch.randn(side, side)
    for _ in range(2):
        assert torch.allclose(C.softmax(big, axis=0), big.softmax(0))
    assert not any(key[0] == "softmax" and key[1][0][1] == big.shape for key in _plans())
    # an integer input that leaky_relu computes in float64: bind refuses, the call still runs
    ints = torch.arange(-3, 3, dtype=torch.int32)
    for _ in range(2):
        result = C.leaky_relu(ints, negative_slope=0.5)
        assert torch.equal(result, F.leaky_relu(ints.double(), 0.5))
    assert any(
        key[0] == "leaky_relu" and plan is _kernel._REFUSED for key, plan in _plans().items()
    )


def test_the_calls_kept_per_thread_are_bounded():
    for n in range(_kernel.PLANS_PER_THREAD + 5):
        x = torch.randn(1, 1, 2, n + 2)
        assert torch.equal(C.max_pool2d(x, kernel_size=[1, 2]), F.max_pool2d(x, (1, 2)))
    assert 0 < len(_plans()) <= _kernel.PLANS_PER_THREAD


def test_threads_replay_their_own_calls():
    errors: list = []

    def work(seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        w = torch.randn(8, 4, 3, 3, generator=generator)
        try:
            for _ in range(50):
                x = torch.randn(4, 4, 8, 8, generator=generator)
                result = C.conv2d(x, w, None, padding=[1, 1])
                if not torch.allclose(result, F.conv2d(x, w, padding=1), atol=1e-4):
                    errors.append(seed)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
