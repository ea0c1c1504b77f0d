"""ctensor.ops.<name> on PyTorch tensors follows torch's own rules: calls on tensors that require
grad (grad mode on) go through autograd (torch.ops.ctensor), writes torch forbids are refused,
every write advances the version counter, and channels_last inputs give channels_last results
where torch's op does; plain tensors keep the C fast path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from arrays import ops_functions_entered

import ctensor
from ctensor import ops
from ctensor._torch_rules import KEEPS_CHANNELS_LAST


def _rand(*shape, seed=0):
    generator = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=generator, dtype=torch.float64)


# ----------------------------------------------------------------------------------------------
# Autograd
# ----------------------------------------------------------------------------------------------

# name: (ctensor call, torch's own call, input shapes)
AUTOGRAD_CASES = {
    "add": (lambda x, y: ops.add(x, y), torch.add, [(3, 4), (3, 4)]),
    "add (broadcast)": (lambda x, y: ops.add(x, y), torch.add, [(3, 4), (4,)]),
    "multiply by a scalar": (lambda x: ops.multiply(x, 2.5), lambda x: x * 2.5, [(5,)]),
    "scalar first": (lambda x: ops.subtract(1.5, x), lambda x: 1.5 - x, [(5,)]),
    "exp": (lambda x: ops.exp(x), torch.exp, [(2, 3)]),
    "tanh": (lambda x: ops.tanh(x), torch.tanh, [(6,)]),
    "matmul": (lambda x, y: ops.matmul(x, y), torch.matmul, [(3, 4), (4, 2)]),
    "sum (attributes)": (lambda x: ops.sum(x, axis=1), lambda x: x.sum(1), [(3, 4)]),
    "concat (variadic)": (
        lambda x, y: ops.concat([x, y], axis=1),
        lambda x, y: torch.cat([x, y], 1),
        [(2, 3), (2, 2)],
    ),
    "conv2d (optional input, int lists)": (
        lambda x, w, b: ops.conv2d(x, w, b, stride=2, padding=1),
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        [(2, 3, 6, 5), (4, 3, 3, 3), (4,)],
    ),
}


@pytest.mark.parametrize("case", AUTOGRAD_CASES.values(), ids=list(AUTOGRAD_CASES))
def test_backward_through_ops_matches_torch_autograd(case):
    ours, theirs, shapes = case
    inputs = [_rand(*shape, seed=i).requires_grad_() for i, shape in enumerate(shapes)]
    result = ours(*inputs)
    assert isinstance(result, torch.Tensor) and result.grad_fn is not None
    expected = theirs(*inputs)
    torch.testing.assert_close(result.detach(), expected.detach(), rtol=1e-10, atol=1e-12)
    cotangent = _rand(*expected.shape, seed=9)
    grads = torch.autograd.grad(result, inputs, cotangent)
    expected_grads = torch.autograd.grad(expected, inputs, cotangent)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_the_fast_form_hands_tensors_that_require_grad_to_autograd():
    x = _rand(4).requires_grad_()
    y = _rand(4, seed=1)
    result, entered = ops_functions_entered(lambda: ops.multiply(x, y))
    assert entered == ["multiply"]  # FastOp declined: the Python path routed it
    assert result.grad_fn is not None
    result.sum().backward()
    torch.testing.assert_close(x.grad, y)
    parameter = torch.nn.Parameter(_rand(4, seed=2))  # a subclass
    ops.exp(parameter).sum().backward()
    torch.testing.assert_close(parameter.grad, parameter.detach().exp())


@pytest.mark.parametrize(
    "mode", [torch.no_grad, torch.inference_mode], ids=["no_grad", "inference"]
)
def test_calls_without_grad_mode_stay_plain(mode):
    x = _rand(5).requires_grad_()
    y = _rand(5, seed=1)
    with mode():
        ops.add(x, y)  # the first call of a layout may take the Python path
        result, entered = ops_functions_entered(lambda: ops.add(x, y))
        expected = torch.add(x, y)
    assert entered == []  # the C fast path ran it
    assert result.grad_fn is None and not result.requires_grad
    assert result.is_inference() == expected.is_inference()
    torch.testing.assert_close(result, expected.detach())


def test_ops_without_gradient_stay_plain_as_torch_does():
    x = _rand(3, 4).requires_grad_()
    index = ops.argmax(x, axis=1)
    assert index.grad_fn is None and torch.equal(index, torch.argmax(x, 1))
    mask = ops.greater(x, 0.0)
    expected = torch.gt(x, 0.0)
    assert mask.requires_grad is expected.requires_grad is False
    assert torch.equal(mask, expected)


def test_backend_cannot_be_picked_for_a_call_autograd_records():
    x = _rand(3).requires_grad_()
    with pytest.raises(ctensor.InvalidArgumentError, match="backend="):
        ops.exp(x, backend="cpu")
    with torch.no_grad():
        torch.testing.assert_close(ops.exp(x, backend="cpu"), x.detach().exp())


def test_out_on_a_call_autograd_would_record_is_refused_as_torch_does():
    x = _rand(4).requires_grad_()
    c = torch.zeros(4, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.add(x, x, out=c)
    for call in (lambda: ops.add(x, x, out=c), lambda: ops.sum(x.view(2, 2), axis=0, out=c[:2])):
        with pytest.raises(ctensor.AutogradError, match="don't support automatic differentiation"):
            call()
    assert torch.equal(c, torch.zeros(4, dtype=torch.float64)) and c._version == 0
    with torch.no_grad():
        ops.add(x, x, out=c)
    torch.testing.assert_close(c, 2 * x.detach())


def test_out_requiring_grad_is_refused_in_grad_mode_and_written_under_no_grad():
    w = torch.ones(3, requires_grad=True)
    d = torch.full((3,), 0.5)
    with pytest.raises(RuntimeError):
        torch.add(d, d, out=w)  # torch refuses too
    with pytest.raises(ctensor.AutogradError, match="leaf Variable that requires grad"):
        ops.add(d, d, out=w)
    assert isinstance(ctensor.AutogradError("x"), RuntimeError)
    not_leaf = w * 2
    with pytest.raises(ctensor.AutogradError, match="requires grad"):
        ops.add(d, d, out=not_leaf)
    assert torch.equal(w.detach(), torch.ones(3))
    loss = (w * w).sum()  # saves w for backward
    version = w._version
    with torch.no_grad():  # an optimizer's update: torch allows it, and so does ctensor
        ops.subtract(w, d, out=w)
    assert torch.equal(w.detach(), torch.full((3,), 0.5)) and w._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


# ----------------------------------------------------------------------------------------------
# Inference tensors
# ----------------------------------------------------------------------------------------------


def _inference_zeros(*shape):
    with torch.inference_mode():
        return torch.zeros(*shape)


WRITES = {
    "fast form": lambda a, t: ops.add(a, a, out=t),
    "attributes": lambda a, t: ops.sum(a.reshape(1, 3), axis=0, out=t),
    "Python scalar": lambda a, t: ops.add(a, 1.0, out=t),
    "out tuple": lambda a, t: ops.multiply(a, a, out=(t,)),
    "cast input": lambda a, t: ops.add(a.to(torch.int16), a, out=t),
}
EXPECTED = {
    "fast form": [2.0, 4.0, 6.0],
    "attributes": [1.0, 2.0, 3.0],
    "Python scalar": [2.0, 3.0, 4.0],
    "out tuple": [1.0, 4.0, 9.0],
    "cast input": [2.0, 4.0, 6.0],
}


@pytest.mark.parametrize("name", list(WRITES))
def test_writing_an_inference_tensor_outside_inference_mode_is_refused(name):
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        _inference_zeros(3).add_(1)  # torch's own rule
    a = torch.tensor([1.0, 2.0, 3.0])
    t = _inference_zeros(3)
    for _ in range(2):  # the second call meets the caches of the first
        with pytest.raises(ctensor.AutogradError, match="Inplace update to inference tensor"):
            WRITES[name](a, t)
    assert torch.equal(t, torch.zeros(3))
    with torch.inference_mode():
        for _ in range(2):
            WRITES[name](a, t)
            assert t.tolist() == EXPECTED[name]
            normal = torch.zeros(3)
            WRITES[name](a, normal)  # normal tensors may be written in inference mode too
            assert normal.tolist() == EXPECTED[name]


def test_inference_tensors_are_read_anywhere():
    with torch.inference_mode():
        t = torch.arange(3.0)
    a = torch.ones(3, requires_grad=True)
    assert torch.equal(ops.add(t, t), torch.tensor([0.0, 2.0, 4.0]))
    out = torch.empty(3)
    assert ops.exp(t, out=out) is out and torch.equal(out, t.exp())
    with torch.no_grad():
        assert torch.equal(ops.add(t, a), t + 1)


# ----------------------------------------------------------------------------------------------
# Version counters
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(WRITES))
def test_every_out_write_advances_the_version_counter(name):
    a = torch.tensor([1.0, 2.0, 3.0])
    for _ in range(2):
        c = torch.zeros(3)
        WRITES[name](a, c)
        assert c._version == 1 and c.tolist() == EXPECTED[name]
    first, second = torch.zeros(3), torch.zeros(3)
    ops.atan2_backward(a, a, a, out=(first, second))  # two outputs
    assert first._version == 1 and second._version == 1
    torch.testing.assert_close(first, a * a / (2 * a * a))


def test_overwriting_a_saved_tensor_through_ctensor_makes_backward_fail():
    w = torch.ones(3, requires_grad=True)
    saved = torch.full((3,), 5.0)
    loss = (w * saved).sum()  # saves `saved` for backward
    ops.add(torch.ones(3), torch.ones(3), out=saved)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


# ----------------------------------------------------------------------------------------------
# Memory format
# ----------------------------------------------------------------------------------------------


def _channels_last(*shape, seed=0):
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(memory_format=fmt)


# name: (ctensor call, torch's call) on one channels_last input x and a contiguous y of its shape
ELEMENTWISE_FORMAT_CASES = {
    "relu": (lambda x, y: ops.relu(x), lambda x, y: torch.relu(x)),
    "add": (lambda x, y: ops.add(x, x), lambda x, y: torch.add(x, x)),
    "add contiguous second": (lambda x, y: ops.add(x, y), lambda x, y: torch.add(x, y)),
    "add contiguous first": (lambda x, y: ops.add(y, x), lambda x, y: torch.add(y, x)),
    "multiply by a scalar": (lambda x, y: ops.multiply(x, 2.0), lambda x, y: x * 2.0),
    "where": (lambda x, y: ops.where(x > 0, x, y), lambda x, y: torch.where(x > 0, x, y)),
    "cast": (lambda x, y: ops.add(x, y.double()), lambda x, y: torch.add(x, y.double())),
    "leaky_relu (attributes)": (
        lambda x, y: ops.leaky_relu(x, negative_slope=0.1),
        lambda x, y: F.leaky_relu(x, 0.1),
    ),
}


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 2, 4, 3)], ids=["4-D", "5-D"])
@pytest.mark.parametrize(
    "case", ELEMENTWISE_FORMAT_CASES.values(), ids=list(ELEMENTWISE_FORMAT_CASES)
)
def test_elementwise_results_keep_channels_last_as_torch_does(case, shape):
    ours, theirs = case
    x = _channels_last(*shape)
    y = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    for _ in range(2):  # the second call meets the caches of the first
        result, expected = ours(x, y), theirs(x, y)
        assert result.stride() == expected.stride()
        torch.testing.assert_close(result, expected)


def _batch_norm_training(x, ours):
    generator = torch.Generator().manual_seed(3)
    weight = torch.rand(3, generator=generator) + 0.5
    bias = torch.randn(3, generator=generator)
    mean, var = torch.zeros(3), torch.ones(3)
    if ours:
        return ops.batch_norm_training(x, mean, var, weight, bias)[0]
    return F.batch_norm(x, mean, var, weight, bias, training=True)


# name: (ctensor call, torch's call) on a channels_last (2, 3, 6, 8) input
NN_FORMAT_CASES = {
    "conv2d": (
        lambda x: ops.conv2d(x, torch.ones(4, 3, 3, 3) / 9, padding=1),
        lambda x: F.conv2d(x, torch.ones(4, 3, 3, 3) / 9, padding=1),
    ),
    "max_pool2d": (lambda x: ops.max_pool2d(x, kernel_size=2), lambda x: F.max_pool2d(x, 2)),
    "avg_pool2d": (lambda x: ops.avg_pool2d(x, kernel_size=2), lambda x: F.avg_pool2d(x, 2)),
    "adaptive_avg_pool2d": (
        lambda x: ops.adaptive_avg_pool2d(x, output_size=[3, 2]),
        lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
    ),
    "batch_norm": (
        lambda x: ops.batch_norm(x, torch.zeros(3), torch.ones(3) * 2),
        lambda x: F.batch_norm(x, torch.zeros(3), torch.ones(3) * 2),
    ),
    "batch_norm_training": (
        lambda x: _batch_norm_training(x, True),
        lambda x: _batch_norm_training(x, False),
    ),
    "group_norm": (
        lambda x: ops.group_norm(x, num_groups=1),
        lambda x: F.group_norm(x, 1),
    ),
    "interpolate": (
        lambda x: ops.interpolate(x, scale_factor=[2.0, 2.0], mode="nearest"),
        lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
    ),
}


def test_every_op_said_to_keep_channels_last_is_checked_against_torch():
    assert set(NN_FORMAT_CASES) == KEEPS_CHANNELS_LAST


@pytest.mark.parametrize("case", NN_FORMAT_CASES.values(), ids=list(NN_FORMAT_CASES))
def test_nn_results_keep_channels_last_as_torch_does(case):
    ours, theirs = case
    x = _channels_last(2, 3, 6, 8)
    result, expected = ours(x), theirs(x)
    assert expected.is_contiguous(memory_format=torch.channels_last)
    assert result.stride() == expected.stride()
    torch.testing.assert_close(result, expected, rtol=1e-5, atol=1e-5)


def test_ops_torch_makes_contiguous_give_contiguous_results():
    x = _channels_last(2, 3, 4, 5)
    for result, expected in (
        (ops.layer_norm(x, normalized_shape=[5]), F.layer_norm(x, (5,))),
        (ops.softmax(x, axis=1), torch.softmax(x, 1)),
        (ops.sum(x, axis=0), x.sum(0)),
    ):
        assert result.is_contiguous() and result.stride() == expected.stride()
        torch.testing.assert_close(result, expected, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# The C fast path
# ----------------------------------------------------------------------------------------------


def test_plain_tensors_keep_the_c_fast_path_and_its_results():
    a = torch.linspace(-1, 1, 8)
    b = torch.linspace(0, 2, 8)
    assert torch.is_grad_enabled()
    ops.add(a, b)  # registers torch's allocator (Python path, once)
    for _ in range(3):
        result, entered = ops_functions_entered(lambda: ops.add(a, b))
        assert entered == [] and torch.equal(result, a + b) and result.grad_fn is None
        c = torch.empty(8)
        version = c._version
        written, entered = ops_functions_entered(lambda c=c: ops.multiply(a, b, out=c))
        assert entered == [] and written is c and torch.equal(c, a * b)
        assert c._version == version + 1
    contiguous_4d = torch.randn(2, 3, 4, 5)
    ops.relu(contiguous_4d)
    result, entered = ops_functions_entered(lambda: ops.relu(contiguous_4d))
    assert entered == [] and result.is_contiguous()
    torch.testing.assert_close(result, torch.relu(contiguous_4d))


def test_what_the_c_fast_path_hands_to_the_python_path():
    a = torch.linspace(-1, 1, 8)
    ops.add(a, a)  # registers torch's allocator (Python path, once)
    grad = a.clone().requires_grad_()
    with torch.no_grad():
        _, entered = ops_functions_entered(lambda: ops.add(grad, a))
    assert entered == []  # no grad mode: read as plain
    inference = _inference_zeros(8)
    _, entered = ops_functions_entered(lambda: ops.add(inference, a))
    assert entered == []  # reading inference tensors needs no rule
    with pytest.raises(ctensor.AutogradError):
        ops_functions_entered(lambda: ops.add(a, a, out=inference))
    x = _channels_last(2, 3, 4, 5)
    result, entered = ops_functions_entered(lambda: ops.relu(x))
    assert entered == ["relu"] and result.stride() == torch.relu(x).stride()
