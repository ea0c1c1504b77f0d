"""Frameworks: results come back in the framework (and on the device) of the first array
argument; PyTorch in, PyTorch out."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ctensor
from ctensor import ops


def test_torch_in_torch_out():
    a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    result = ops.add(a, a)
    assert isinstance(result, torch.Tensor)
    assert result.dtype == torch.float32 and result.device.type == "cpu"
    assert torch.equal(result, a * 2)


def test_first_array_argument_decides_the_framework():
    t = torch.ones(3, dtype=torch.float64)
    n = np.ones(3)
    assert isinstance(ops.add(t, n), torch.Tensor)
    assert isinstance(ops.add(n, t), np.ndarray)
    assert isinstance(ops.add(2.0, t), torch.Tensor)  # a scalar is not an array argument


@pytest.mark.parametrize(
    "dtype",
    [
        torch.bool,
        torch.int8,
        torch.uint8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint16,
        torch.uint32,
        torch.uint64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
    ],
)
def test_every_torch_dtype_round_trips(dtype):
    x = torch.arange(5).to(dtype) if dtype != torch.bool else torch.tensor([1, 0, 1, 1, 0]).bool()
    result = ops.maximum(x, x)
    assert isinstance(result, torch.Tensor) and result.dtype == dtype
    assert torch.equal(result.to(torch.float64), x.to(torch.float64))


def test_bfloat16_arithmetic_matches_a_float64_reference():
    x = torch.randn(64, dtype=torch.bfloat16)
    y = torch.randn(64, dtype=torch.bfloat16)
    result = ops.multiply(x, y)
    assert result.dtype == torch.bfloat16
    expected = x.double() * y.double()
    np.testing.assert_allclose(result.double().numpy(), expected.numpy(), rtol=1e-2, atol=1e-3)


def test_softmax_matches_torch():
    x = torch.randn(4, 10, dtype=torch.float64)
    result = ops.softmax(x, axis=1)
    np.testing.assert_allclose(result.numpy(), torch.softmax(x, dim=1).numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "stride,padding,dilation,groups",
    [(1, 0, 1, 1), (2, 1, 1, 1), ((1, 2), (2, 0), (2, 1), 1), (1, 1, 1, 2)],
)
def test_conv2d_matches_torch(stride, padding, dilation, groups):
    x = torch.randn(2, 4, 11, 10, dtype=torch.float64)
    w = torch.randn(6, 4 // groups, 3, 3, dtype=torch.float64)
    b = torch.randn(6, dtype=torch.float64)
    result = ops.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    expected = torch.nn.functional.conv2d(
        x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups
    )
    assert isinstance(result, torch.Tensor) and result.shape == expected.shape
    np.testing.assert_allclose(result.numpy(), expected.numpy(), rtol=1e-10, atol=1e-10)


def test_conv2d_bias_by_keyword_and_absent():
    x = torch.randn(1, 2, 5, 5)
    w = torch.randn(3, 2, 3, 3)
    b = torch.randn(3)
    with_bias = ops.conv2d(x, w, bias=b)
    without = ops.conv2d(x, w)
    np.testing.assert_allclose(
        (with_bias - without).numpy(),
        b.view(1, 3, 1, 1).expand_as(without).numpy(),
        rtol=1e-5,
        atol=1e-5,
    )


def test_matmul_on_transposed_tensors():
    a = torch.randn(5, 3, dtype=torch.float64)
    result = ops.matmul(a.T, a)
    np.testing.assert_allclose(result.numpy(), (a.T @ a).numpy(), rtol=1e-12)


def test_tensor_requiring_grad_is_read_without_touching_autograd_under_no_grad():
    x = torch.randn(4, requires_grad=True)
    with torch.no_grad():
        result = ops.exp(x)
    assert not result.requires_grad
    np.testing.assert_allclose(result.numpy(), torch.exp(x.detach()).numpy(), rtol=1e-6)


def test_reductions_and_dynamic_ops_return_torch():
    x = torch.tensor([[0, 3, 0], [2, 0, 1]])
    assert torch.equal(ops.sum(x, axis=0), torch.tensor([2, 3, 1]))
    assert torch.equal(ops.argmax(x, axis=1), torch.tensor([1, 0]))
    rows, cols = ops.nonzero(x)
    assert isinstance(rows, torch.Tensor) and rows.dtype == torch.int64
    expected_rows, expected_cols = torch.nonzero(x, as_tuple=True)
    assert torch.equal(rows, expected_rows) and torch.equal(cols, expected_cols)
    assert torch.equal(ops.unique_values(x), torch.tensor([0, 1, 2, 3]))
    masked = ops.boolean_mask(x, x > 1)
    assert torch.equal(masked, x[x > 1])


def test_torch_scalar_operand_follows_weak_scalar_rules():
    x = torch.arange(4, dtype=torch.int16)
    result = ops.multiply(x, 3)
    assert result.dtype == torch.int16
    assert torch.equal(result, x * 3)
    assert ops.add(torch.ones(2, dtype=torch.bfloat16), 0.5).dtype == torch.bfloat16


def test_permute_dims_returns_torch_compact():
    x = torch.arange(24).reshape(2, 3, 4)
    result = ops.permute_dims(x, axes=(2, 0, 1))
    assert result.is_contiguous()
    assert torch.equal(result, x.permute(2, 0, 1))


def test_torch_negative_strides_never_happen():
    # A NumPy view with negative strides, read through DLPack by ctensor, gives a compact torch
    # result when the first array argument is a torch tensor.
    n = np.arange(6.0)[::-1]
    t = torch.zeros(6, dtype=torch.float64)
    result = ops.add(t, n)
    assert all(s > 0 for s in result.stride())
    assert torch.equal(result, torch.from_numpy(n.copy()))


def test_ctensor_error_types_for_torch_inputs():
    with pytest.raises(ctensor.ShapeMismatchError):
        ops.add(torch.ones(2), torch.ones(3))


def test_lazy_conjugate_and_negative_views_are_read_as_torch_shows_them():
    """z.conj() and z.conj().imag keep raw memory with a bit that torch applies on access (and
    DLPack exports the raw memory): inputs are resolved, outputs refused, binds refused."""
    z = torch.tensor([1 + 2j, 3 - 1j, -0.5 + 0.25j], dtype=torch.complex64)
    conj, neg = z.conj(), z.conj().imag
    assert conj.is_conj() and neg.is_neg()
    for _ in range(2):  # the second call takes the C fast path's layout cache
        out = torch.empty(3, dtype=torch.complex64)
        assert ops.add(conj, conj, out=out) is out
        assert torch.equal(out, conj + conj)
        out_neg = torch.empty(3)
        assert ops.multiply(neg, z.real, out=out_neg) is out_neg
        assert torch.equal(out_neg, neg * z.real)
    assert torch.equal(ops.exp(neg), torch.exp(neg))
    before = z.clone()
    with pytest.raises(ctensor.InvalidArgumentError, match="lazy conjugate or negative bit"):
        ops.add(z, z, out=z.conj())
    assert torch.equal(z, before)
    with pytest.raises(ctensor.InputTypeError, match="resolve_conj"):
        ctensor.bind(ops.add, conj, conj, out=torch.empty(3, dtype=torch.complex64))


class _Sub(torch.Tensor):
    """A torch subclass: the C fast paths leave it to the Python path."""


def _bound_replay(c: torch.Tensor) -> None:
    ctensor.bind(ops.add, torch.ones(3), torch.ones(3), out=c)  # binding runs the call once


def _replay_with_out(c: torch.Tensor) -> None:
    bound = ctensor.bind(ops.add, torch.ones(3), torch.ones(3), out=torch.empty(3))
    bound(torch.ones(3), torch.ones(3), out=c)


def _replay_in_python(c: torch.Tensor) -> None:
    bound = ctensor.bind(ops.add, torch.ones(3), torch.ones(3), out=torch.empty(3))
    bound(torch.ones(3), torch.ones(3), out=c.as_subclass(_Sub))


# Each writes torch.full((3,), 2.0) into c, through one path of the binding.
WRITES = {
    "fast path (FastOp)": lambda c: ops.add(torch.ones(3), torch.ones(3), out=c),
    "out tuple": lambda c: ops.add(torch.ones(3), torch.ones(3), out=(c,)),
    "NumPy inputs": lambda c: ops.add(np.ones(3, np.float32), np.ones(3, np.float32), out=c),
    "attributes (one crossing)": lambda c: ops.sum(torch.ones(2, 3), axis=0, out=c),
    "Python scalar": lambda c: ops.add(torch.ones(3), 1.0, out=c),
    "cast inputs (general path)": lambda c: ops.add(
        torch.ones(3, dtype=torch.int16), torch.ones(3), out=c
    ),
    "torch subclass (general path)": lambda c: ops.add(
        torch.ones(3), torch.ones(3), out=c.as_subclass(_Sub)
    ),
    "bind": _bound_replay,
    "bound call, other out=": _replay_with_out,
    "bound call, Python path": _replay_in_python,
}


@pytest.mark.parametrize("write", WRITES.values(), ids=list(WRITES))
def test_writing_a_saved_tensor_makes_backward_refuse_as_torch_does(write):
    """Like torch's own out= ops, a write advances the tensor's autograd version counter, so a
    graph that saved the old values refuses to backpropagate instead of using the new ones."""
    w = torch.ones(3, requires_grad=True)
    c = torch.full((3,), 5.0)
    loss = (w * c).sum()  # saves c for backward
    version = c._version
    write(c)
    assert torch.equal(c, torch.full((3,), 2.0))
    assert c._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_replays_of_a_bound_call_mark_its_torch_outputs_written():
    a = torch.ones(3)
    bound = ctensor.bind(ops.add, a, a)  # allocates its torch output
    result = bound.result
    for replay in (bound, bound.run):
        w = torch.ones(3, requires_grad=True)
        loss = (w * result).sum()
        version = result._version
        replay()
        assert result._version > version
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
    numpy_bound = ctensor.bind(ops.add, np.ones(3), np.ones(3))
    assert np.array_equal(numpy_bound(), np.full(3, 2.0))


def test_inputs_and_inference_tensors_keep_their_versions():
    a = torch.ones(3)
    with torch.inference_mode():
        frozen = torch.empty(3)
        ops.add(a, a, out=frozen)  # no version counter to advance: no error
    assert torch.equal(frozen, torch.full((3,), 2.0)) and a._version == 0
