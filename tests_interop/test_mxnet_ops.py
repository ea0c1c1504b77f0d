"""ctensor.mxnet: every ctensor operator as an MXNet operator (custom operators in MXNet's
engine, autograd from the gradient registry). Runs in a venv with mxnet 1.9.1."""

from __future__ import annotations

import ctypes

import mxnet as mx
import numpy as np
import pytest

import ctensor
import ctensor.mxnet as cm
from ctensor import _dlpack

nd = mx.nd

TOLERANCE = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}


def _random(shape, dtype="float64", seed=0, low=-1.0, high=1.0):  # noqa: ANN001, ANN202
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


def _nd(array: np.ndarray):  # noqa: ANN202
    return nd.array(array, dtype=array.dtype)


def data_pointer(array) -> int:  # noqa: ANN001
    """The address of an NDArray's first element, as MXNet reports it."""
    pointer = ctypes.c_void_p()
    mx.base.check_call(mx.base._LIB.MXNDArrayGetData(array.handle, ctypes.byref(pointer)))
    return pointer.value or 0


# ------------------------------------------------------------------------------ the namespace


def test_every_registry_op_is_a_function():
    names = set(cm.op_names()) | set(cm.dynamic_op_names())
    assert names == set(ctensor.list_ops())
    assert not set(cm.op_names()) & set(cm.dynamic_op_names())
    for name in ctensor.list_ops():
        assert callable(getattr(cm, name))
    assert set(cm.dynamic_op_names()) == {
        name for name in ctensor.list_ops() if ctensor.op_info(name)["category"] == "dynamic"
    }


# ------------------------------------------------------------------------------ forward


def _softmax(x, axis):  # noqa: ANN001, ANN202
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


UNARY_NUMPY = {
    "exp": np.exp,
    "tanh": np.tanh,
    "sqrt": lambda x: np.sqrt(np.abs(x)),
    "relu": lambda x: np.maximum(x, 0),
    "negative": np.negative,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY_NUMPY))
def test_unary_matches_numpy(name, dtype):
    x = _random((3, 5), dtype, seed=1)
    if name == "sqrt":
        x = np.abs(x)
    result = getattr(cm, name)(_nd(x))
    assert isinstance(result, nd.NDArray)
    assert result.dtype == np.dtype(dtype)
    expected = UNARY_NUMPY[name](x.astype("float64"))
    np.testing.assert_allclose(result.asnumpy(), expected, **TOLERANCE[dtype])


BINARY_NUMPY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
}


def _broadcast_pairs(count: int) -> list:
    """Random (shape, broadcastable shape) pairs of up to three dimensions, fixed by the seed:
    the other shape drops leading dimensions and sets some extents to 1."""
    rng = np.random.default_rng(2026)
    pairs = []
    for _ in range(count):
        shape = tuple(int(e) for e in rng.integers(1, 5, rng.integers(0, 4)))
        other = tuple(e if rng.random() < 0.5 else 1 for e in shape)
        pairs.append((shape, other[rng.integers(0, len(other) + 1) :]))
    return pairs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY_NUMPY))
def test_binary_broadcasting_matches_numpy(name, dtype):
    for seed, shapes in enumerate(_broadcast_pairs(12)):
        a = _random(shapes[0], dtype, seed, 0.5, 2.0)
        b = _random(shapes[1], dtype, seed + 100, 0.5, 2.0)
        result = getattr(cm, name)(_nd(a), _nd(b)).asnumpy()
        expected = BINARY_NUMPY[name](a.astype("float64"), b.astype("float64"))
        assert result.shape == expected.shape
        np.testing.assert_allclose(result, expected, **TOLERANCE[dtype])


def _conv_case(dtype):  # noqa: ANN001, ANN202
    x = _random((2, 3, 7, 6), dtype, 2)
    w = _random((4, 3, 3, 3), dtype, 3)
    b = _random((4,), dtype, 4)
    ours = cm.conv2d(_nd(x), _nd(w), _nd(b), stride=[2, 1], padding=[1, 1])
    theirs = nd.Convolution(
        _nd(x), _nd(w), _nd(b), kernel=(3, 3), stride=(2, 1), pad=(1, 1), num_filter=4
    )
    return ours, theirs


def _pool_case(dtype):  # noqa: ANN001, ANN202
    x = _random((2, 3, 6, 6), dtype, 5)
    ours = cm.max_pool2d(_nd(x), kernel_size=[2, 2])
    theirs = nd.Pooling(_nd(x), kernel=(2, 2), stride=(2, 2), pool_type="max")
    return ours, theirs


def _avg_pool_case(dtype):  # noqa: ANN001, ANN202
    x = _random((2, 3, 6, 6), dtype, 6)
    ours = cm.avg_pool2d(_nd(x), kernel_size=[3, 3], stride=[3, 3])
    theirs = nd.Pooling(_nd(x), kernel=(3, 3), stride=(3, 3), pool_type="avg")
    return ours, theirs


def _linear_case(dtype):  # noqa: ANN001, ANN202
    x, w, b = _random((5, 7), dtype, 7), _random((3, 7), dtype, 8), _random((3,), dtype, 9)
    return cm.linear(_nd(x), _nd(w), _nd(b)), nd.FullyConnected(
        _nd(x), _nd(w), _nd(b), num_hidden=3
    )


def _softmax_case(dtype):  # noqa: ANN001, ANN202
    x = _random((4, 6), dtype, 10, -3, 3)
    return cm.softmax(_nd(x), axis=-1), nd.softmax(_nd(x), axis=-1)


def _log_softmax_case(dtype):  # noqa: ANN001, ANN202
    x = _random((4, 6), dtype, 11, -3, 3)
    return cm.log_softmax(_nd(x), axis=1), nd.log_softmax(_nd(x), axis=1)


def _layer_norm_case(dtype):  # noqa: ANN001, ANN202
    x, g, b = _random((3, 8), dtype, 12), _random((8,), dtype, 13), _random((8,), dtype, 14)
    ours = cm.layer_norm(_nd(x), _nd(g), _nd(b), normalized_shape=[8], eps=1e-5)
    return ours, nd.LayerNorm(_nd(x), _nd(g), _nd(b), axis=-1, eps=1e-5)


def _matmul_case(dtype):  # noqa: ANN001, ANN202
    a, b = _random((2, 3, 4), dtype, 15), _random((2, 4, 5), dtype, 16)
    return cm.matmul(_nd(a), _nd(b)), nd.batch_dot(_nd(a), _nd(b))


def _concat_case(dtype):  # noqa: ANN001, ANN202
    parts = [_random((2, k), dtype, 17 + k) for k in (1, 2, 3)]
    return cm.concat([_nd(p) for p in parts], axis=1), nd.concat(*map(_nd, parts), dim=1)


def _permute_case(dtype):  # noqa: ANN001, ANN202
    x = _random((2, 3, 4), dtype, 20)
    return cm.permute_dims(_nd(x), axes=[2, 0, 1]), nd.transpose(_nd(x), axes=(2, 0, 1))


def _sum_case(dtype):  # noqa: ANN001, ANN202
    x = _random((3, 4, 5), dtype, 21)
    return cm.sum(_nd(x), axis=[0, 2]), nd.sum(_nd(x), axis=(0, 2))


MXNET_CASES = {
    "conv2d": _conv_case,
    "max_pool2d": _pool_case,
    "avg_pool2d": _avg_pool_case,
    "linear": _linear_case,
    "softmax": _softmax_case,
    "log_softmax": _log_softmax_case,
    "layer_norm": _layer_norm_case,
    "matmul": _matmul_case,
    "concat": _concat_case,
    "permute_dims": _permute_case,
    "sum": _sum_case,
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(MXNET_CASES))
def test_forward_matches_mxnet_ops(case, dtype):
    ours, theirs = MXNET_CASES[case](dtype)
    assert isinstance(ours, nd.NDArray)
    assert ours.dtype == theirs.dtype
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours.asnumpy(), theirs.asnumpy(), **TOLERANCE[dtype])


def test_cross_entropy_matches_numpy():
    logits = _random((5, 4), "float64", 22, -2, 2)
    target = np.array([0, 3, 1, 1, 2], dtype=np.int64)
    result = cm.cross_entropy(_nd(logits), _nd(target))
    log_p = np.log(_softmax(logits, 1))
    expected = -log_p[np.arange(5), target].mean()
    np.testing.assert_allclose(result.asnumpy(), expected, rtol=1e-13)


def test_multiple_outputs_and_bool_results():
    x = _random((6, 5), "float32", 23)
    out, mask = cm.dropout(_nd(x), p=0.5, seed=3, offset=1)
    assert mask.dtype == np.bool_
    keep = mask.asnumpy()
    assert keep.any() and not keep.all()
    np.testing.assert_allclose(out.asnumpy(), np.where(keep, x * 2, 0), rtol=1e-6)
    # the same seed and offset draw the same mask; another offset another one
    assert (cm.dropout(_nd(x), p=0.5, seed=3, offset=1)[1].asnumpy() == keep).all()
    assert not (cm.dropout(_nd(x), p=0.5, seed=3, offset=2)[1].asnumpy() == keep).all()
    # bool inputs: logical ops read MXNet's bool arrays as bool
    np.testing.assert_array_equal(cm.logical_not(mask).asnumpy(), ~keep)
    comparison = cm.greater(_nd(x), nd.zeros((6, 5)))
    assert comparison.dtype == np.bool_
    np.testing.assert_array_equal(comparison.asnumpy(), x > 0)


def test_ops_without_inputs_and_optional_inputs():
    np.testing.assert_array_equal(
        cm.arange(start=1, stop=7, step=2, dtype="int64").asnumpy(), [1, 3, 5]
    )
    a = cm.random_uniform(shape=[4, 3], seed=5, dtype="float64")
    b = cm.random_uniform(shape=[4, 3], seed=5, dtype="float64")
    assert a.shape == (4, 3) and a.dtype == np.float64
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    x, w = _random((2, 3), "float64", 24), _random((4, 3), "float64", 25)
    np.testing.assert_allclose(cm.linear(_nd(x), _nd(w)).asnumpy(), x @ w.T, rtol=1e-13)


def test_dynamic_ops_run_eagerly():
    x = np.array([3, 1, 3, 2, 1], dtype=np.int64)
    values = cm.unique_values(_nd(x))
    assert isinstance(values, nd.NDArray)
    np.testing.assert_array_equal(values.asnumpy(), [1, 2, 3])
    (index,) = cm.nonzero(_nd(np.array([0.0, 2.0, 0.0, 1.0])))
    np.testing.assert_array_equal(index.asnumpy(), [1, 3])
    with pytest.raises(TypeError, match="out= is not accepted"):
        cm.unique_values(_nd(x), out=nd.zeros(3))


def test_runs_in_mxnets_engine_in_order():
    # ctensor ops and MXNet's own ops on the same arrays, without synchronising in between
    x = nd.ones((50, 50))
    for _ in range(5):
        x = cm.add(x, x)
        x = x * 0.5 + 1
    np.testing.assert_allclose(x.asnumpy(), np.full((50, 50), 6.0))


# ------------------------------------------------------------------------------ zero copy


@pytest.fixture
def written(monkeypatch):  # noqa: ANN001, ANN201
    """Data pointers of the DLPack exports of NDArrays that ctensor writes and reads."""
    seen = {"write": [], "read": []}

    def recording(kind, export):  # noqa: ANN001, ANN202
        def wrapper(array, what):  # noqa: ANN001, ANN202
            capsule = export(array, what)
            tensor = _dlpack.capsule_tensor(capsule)
            seen[kind].append(int(ctensor.ffi.cast("uintptr_t", tensor.data)))
            return capsule

        return wrapper

    monkeypatch.setattr(_dlpack, "write_capsule", recording("write", _dlpack.write_capsule))
    monkeypatch.setattr(_dlpack, "read_capsule", recording("read", _dlpack.read_capsule))
    return seen


def test_out_is_written_in_place(written):
    a, b = nd.ones((3, 4)), nd.arange(4)
    out = nd.zeros((3, 4))
    address = data_pointer(out)
    result = cm.add(a, b, out=out)
    result.wait_to_read()
    assert data_pointer(result) == address
    assert written["write"] == [address]
    assert sorted(written["read"]) == sorted([data_pointer(a), data_pointer(b)])
    np.testing.assert_array_equal(out.asnumpy(), np.ones((3, 4)) + np.arange(4))


def test_results_and_gradients_are_written_in_place(written):
    x = _nd(_random((4, 5), "float32", 26))
    x.attach_grad()
    with mx.autograd.record():
        y = cm.relu(x)
    y.wait_to_read()
    assert written["write"] == [data_pointer(y)]
    y.backward()
    x.grad.wait_to_read()
    assert written["write"][1:] == [data_pointer(x.grad)]  # relu_backward wrote the gradient


def test_two_outputs_written_in_place(written):
    out, mask = cm.dropout(nd.ones((4, 4)), p=0.5, seed=1)
    mask.wait_to_read()
    assert written["write"] == [data_pointer(out), data_pointer(mask)]


# ------------------------------------------------------------------------------ gradients


def _grad_case(name):  # noqa: ANN001, ANN202
    """(inputs as float64 NumPy arrays, indices of the differentiable ones, attrs)."""
    r = _random
    cases = {
        "add": ([r((2, 3), seed=30), r((3,), seed=31)], [0, 1], {}),
        "multiply": ([r((2, 3), seed=32), r((2, 1), seed=33)], [0, 1], {}),
        "divide": ([r((3,), seed=34), r((3,), seed=35, low=0.5, high=2)], [0, 1], {}),
        "tanh": ([r((2, 3), seed=36)], [0], {}),
        "softmax": ([r((2, 4), seed=37)], [0], {"axis": -1}),
        "log_softmax": ([r((2, 4), seed=38)], [0], {"axis": 1}),
        "sum": ([r((2, 3, 2), seed=39)], [0], {"axis": [1]}),
        "matmul": ([r((2, 3), seed=40), r((3, 2), seed=41)], [0, 1], {}),
        "linear": ([r((2, 3), seed=42), r((2, 3), seed=43), r((2,), seed=44)], [0, 1, 2], {}),
        "conv2d": (
            [r((1, 2, 4, 4), seed=45), r((2, 2, 3, 3), seed=46), r((2,), seed=47)],
            [0, 1, 2],
            {"padding": [1, 1]},
        ),
        "max_pool2d": (
            [np.random.default_rng(48).permutation(32).reshape(1, 2, 4, 4) / 8.0],
            [0],
            {"kernel_size": [2, 2]},
        ),
        "layer_norm": (
            [r((2, 4), seed=49), r((4,), seed=50), r((4,), seed=51)],
            [0, 1, 2],
            {"normalized_shape": [4]},
        ),
        "cross_entropy": (
            [r((3, 4), seed=52), np.array([1, 0, 3], dtype=np.int64)],
            [0],
            {},
        ),
        "dropout": ([r((3, 4), seed=53)], [0], {"p": 0.4, "seed": 7, "offset": 2}),
    }
    return cases[name]


GRAD_OPS = [
    "add",
    "multiply",
    "divide",
    "tanh",
    "softmax",
    "log_softmax",
    "sum",
    "matmul",
    "linear",
    "conv2d",
    "max_pool2d",
    "layer_norm",
    "cross_entropy",
    "dropout",
]


def _first(result):  # noqa: ANN001, ANN202
    return result[0] if isinstance(result, tuple) else result


@pytest.mark.parametrize("name", GRAD_OPS)
def test_gradient_matches_finite_differences(name):
    values, differentiable, attrs = _grad_case(name)
    op = getattr(cm, name)
    arrays = [_nd(v) for v in values]
    for k in differentiable:
        arrays[k].attach_grad()
    with mx.autograd.record():
        out = _first(op(*arrays, **attrs))
    cotangent = _random(out.shape, seed=60)
    out.backward(_nd(cotangent))
    grads = [arrays[k].grad.asnumpy() for k in differentiable]

    def objective(inputs):  # noqa: ANN001, ANN202
        return float((_first(op(*map(_nd, inputs), **attrs)).asnumpy() * cotangent).sum())

    step = 1e-6
    for k, grad in zip(differentiable, grads, strict=True):
        expected = np.zeros_like(values[k])
        for i in range(values[k].size):
            plus = [v.copy() for v in values]
            minus = [v.copy() for v in values]
            plus[k].flat[i] += step
            minus[k].flat[i] -= step
            expected.flat[i] = (objective(plus) - objective(minus)) / (2 * step)
        np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)


def _mx_grads(build, values):  # noqa: ANN001, ANN202
    arrays = [_nd(v) for v in values]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        out = build(*arrays)
        loss = (out * _nd(_random(out.shape, seed=61))).sum()
    loss.backward()
    return [a.grad.asnumpy() for a in arrays]


AGAINST_MXNET = {
    "conv2d": (
        lambda x, w, b: cm.conv2d(x, w, b, stride=[2, 2], padding=[1, 1]),
        lambda x, w, b: nd.Convolution(
            x, w, b, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=3
        ),
        [(2, 2, 5, 5), (3, 2, 3, 3), (3,)],
    ),
    "max_pool2d": (
        lambda x: cm.max_pool2d(x, kernel_size=[2, 2]),
        lambda x: nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max"),
        [(2, 2, 4, 6)],
    ),
    "linear": (
        lambda x, w, b: cm.linear(x, w, b),
        lambda x, w, b: nd.FullyConnected(x, w, b, num_hidden=4),
        [(3, 5), (4, 5), (4,)],
    ),
    "relu": (cm.relu, nd.relu, [(3, 4)]),
    "log_softmax": (
        lambda x: cm.log_softmax(x, axis=1),
        lambda x: nd.log_softmax(x, axis=1),
        [(3, 5)],
    ),
    "layer_norm": (
        lambda x, g, b: cm.layer_norm(x, g, b, normalized_shape=[5], eps=1e-5),
        lambda x, g, b: nd.LayerNorm(x, g, b, axis=-1, eps=1e-5),
        [(3, 5), (5,), (5,)],
    ),
}


@pytest.mark.parametrize("name", sorted(AGAINST_MXNET))
def test_gradient_matches_mxnet_ops(name):
    ours, theirs, shapes = AGAINST_MXNET[name]
    values = [_random(s, seed=70 + k) for k, s in enumerate(shapes)]
    for a, b in zip(_mx_grads(ours, values), _mx_grads(theirs, values), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_a_chain_of_ops_and_a_variadic_input():
    values = [_random((2, 3), seed=80), _random((2, 2), seed=81)]
    arrays = [_nd(v) for v in values]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        joined = cm.concat(arrays, axis=1)
        loss = cm.sum(cm.multiply(cm.tanh(joined), joined))
    loss.backward()
    joined = np.concatenate(values, axis=1)
    grad = np.tanh(joined) + joined * (1 - np.tanh(joined) ** 2)
    np.testing.assert_allclose(arrays[0].grad.asnumpy(), grad[:, :3], rtol=1e-12)
    np.testing.assert_allclose(arrays[1].grad.asnumpy(), grad[:, 3:], rtol=1e-12)


def test_promoted_inputs_get_gradients_in_their_own_dtype():
    a, b = nd.array([1, 2, 3], dtype="float32"), nd.array([4, 5, 6], dtype="float64")
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = cm.multiply(a, b)
    assert y.dtype == np.float64
    y.backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    np.testing.assert_array_equal(a.grad.asnumpy(), [4, 5, 6])
    np.testing.assert_array_equal(b.grad.asnumpy(), [1, 2, 3])


def test_grad_req_add_accumulates():
    x = _nd(_random((3, 4), seed=90))
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            y = cm.sum(cm.multiply(x, x))
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 4 * x.asnumpy(), rtol=1e-12)


def test_grad_req_add_casts_a_promoted_gradient():
    a, b = nd.array([1, 2, 3], dtype="float32"), nd.array([4, 5, 6], dtype="float64")
    a.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            y = cm.multiply(a, b)
        y.backward()
    assert a.grad.dtype == np.float32
    np.testing.assert_array_equal(a.grad.asnumpy(), [8, 10, 12])


def test_grad_req_null_leaves_inputs_alone():
    a, b = _nd(_random((3,), seed=91)), _nd(_random((3,), seed=92))
    a.attach_grad()
    b.attach_grad(grad_req="null")
    with mx.autograd.record():
        y = cm.multiply(a, b)
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), b.asnumpy(), rtol=1e-12)


def test_integer_inputs_get_no_gradient():
    logits = _nd(_random((3, 4), seed=93))
    target = _nd(np.array([0, 2, 3], dtype=np.int64))
    logits.attach_grad()
    with mx.autograd.record():
        loss = cm.cross_entropy(logits, target)
    loss.backward()
    probabilities = _softmax(logits.asnumpy(), 1)
    probabilities[np.arange(3), target.asnumpy()] -= 1
    np.testing.assert_allclose(logits.grad.asnumpy(), probabilities / 3, rtol=1e-12)


# ------------------------------------------------------------------------------ errors


def _numpy_error(call):  # noqa: ANN001, ANN202
    with pytest.raises(ctensor.CTensorError) as caught:
        call()
    return caught.value


def test_shape_errors_raise_at_the_call_with_ctensors_message():
    expected = _numpy_error(
        lambda: ctensor.ops.add(np.ones((2, 3), "float32"), np.ones(4, "float32"))
    )
    with pytest.raises(type(expected)) as caught:
        cm.add(nd.ones((2, 3)), nd.ones((4,)))
    assert str(caught.value) == str(expected)


def test_attribute_errors_raise_at_the_call():
    with pytest.raises(ctensor.UnknownAttributeError, match="bogus"):
        cm.sum(nd.ones((2,)), bogus=1)
    with pytest.raises(ctensor.CTensorError, match="required"):
        cm.arange(stop=3)


def test_results_mxnet_cannot_hold_are_refused_at_the_call():
    with pytest.raises(ctensor.UnsupportedDTypeError, match="uint16"):
        cm.astype(nd.ones((3,), dtype="int32"), dtype="uint16")


def test_inputs_must_be_ndarrays():
    with pytest.raises(ctensor.InputTypeError, match="mxnet NDArray"):
        cm.add(np.ones(3), nd.ones((3,)))


def test_errors_inside_the_engine_keep_ctensors_exception():
    expected = _numpy_error(
        lambda: ctensor.ops.embedding(np.array([0, 5]), np.ones((3, 2), "float32"))
    )
    result = cm.embedding(nd.array([0, 5], dtype="int64"), nd.ones((3, 2)))
    with pytest.raises(mx.base.MXNetError):
        result.wait_to_read()
    error = cm.last_error()
    assert type(error) is type(expected)
    assert str(error) == str(expected)


def test_backward_of_a_non_differentiable_op_raises():
    x = nd.array([1.5, 2.5])
    x.attach_grad()
    with mx.autograd.record():
        y = cm.round(x)
    y.backward()
    with pytest.raises(mx.base.MXNetError):
        x.grad.wait_to_read()
    error = cm.last_error()
    assert isinstance(error, ctensor.autodiff.NotDifferentiableError)
    assert "round is not differentiable" in str(error)
