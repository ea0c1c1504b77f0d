"""Plain ctensor.ops calls and torch.ops.ctensor under torch.compile, FakeTensor, meta tensors
and torch.func (vmap, grad, vjp).

Under torch.compile, Dynamo traces a plain ``ctensor.ops.<name>`` call into a
``torch.ops.ctensor.<name>`` node (ctensor.torch._compile), with zero graph breaks; tensors
without readable memory (FakeTensor, meta, functorch wrappers) go through torch.ops.ctensor in
eager mode too (ctensor.torch._route). The crash cases of issue 28 (the first ctensor call of
the process, or one needing a dtype cast, compiled: InternalTorchDynamoError, cannot create weak
reference to '_cffi_backend.Lib') run in fresh processes.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torch._dynamo
import torch._dynamo.testing
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch_cases import all_cases, flat_results

import ctensor
import ctensor.torch
from ctensor._registry import all_specs, get_spec
from ctensor.torch._arguments import ctensor_attrs
from ctensor.torch._fake import VALUE_ONLY_ATTRS
from ctensor.torch._vmap import rule_kind

T = torch.ops.ctensor
F64 = torch.float64

# Inductor and torch.func.jvp script some of torch's own helpers the first time they run, and
# torch.jit warns that it is deprecated: torch's business, not these tests'.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _run_fresh(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _call_targets(explanation) -> list:
    return [
        node.target
        for graph in explanation.graphs
        for node in graph.graph.nodes
        if node.op == "call_function"
    ]


def _ctensor_name(target) -> str | None:
    """The op name of a torch.ops.ctensor graph target, else None."""
    if isinstance(target, torch._ops.OpOverload):
        target = target.overloadpacket
    if isinstance(target, torch._ops.OpOverloadPacket):
        namespace, _, name = target._qualified_op_name.partition("::")
        return name if namespace == "ctensor" else None
    return None


# --- issue 28's crash cases, each in a fresh process ------------------------------------------


def test_first_ctensor_call_of_the_process_compiles_fullgraph():
    # ctensor imported before torch, never ctensor.torch: the first ctensor call of the process
    # is traced by Dynamo, which also loads torch._dynamo only then.
    out = _run_fresh(
        """
        import sys
        import ctensor
        import torch

        assert "torch._dynamo" not in sys.modules and "ctensor.torch" not in sys.modules

        def f(x, y):
            return ctensor.ops.add(x, y) * 2

        x, y = torch.randn(5), torch.randn(5)
        result = torch.compile(f, fullgraph=True, backend="aot_eager")(x, y)
        assert torch.equal(result, (x + y) * 2), result
        explanation = torch._dynamo.explain(f)(x, y)
        assert explanation.graph_break_count == 0, explanation
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_first_call_needing_a_dtype_cast_compiles_fullgraph():
    out = _run_fresh(
        """
        import torch
        import ctensor

        def f(x, y):
            return ctensor.ops.add(x, y)

        x, y = torch.randn(5), torch.randn(5, dtype=torch.float64)
        result = torch.compile(f, fullgraph=True, backend="aot_eager")(x, y)
        assert result.dtype == torch.float64, result.dtype
        assert torch.equal(result, x.double() + y)
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_dtype_cast_in_process():
    def f(x, y):
        return ctensor.ops.multiply(x, y)

    x, y = torch.randn(4, 3), torch.randn(4, 3, dtype=F64)
    ctensor.ops.multiply(x, x)  # a warm process: the fast path has run
    result = torch.compile(f, fullgraph=True, backend="aot_eager")(x, y)
    assert result.dtype == F64
    torch.testing.assert_close(result, x.double() * y)


# --- a small model, plain ctensor.ops and torch.ops.ctensor ----------------------------------


def _plain_model(x, target, w1, b1, w2, gamma, beta):
    h = ctensor.ops.relu(ctensor.ops.linear(x, w1, b1))
    h = ctensor.ops.layer_norm(h, gamma, beta, normalized_shape=[h.shape[-1]])
    logits = ctensor.ops.matmul(h, w2)
    probs = ctensor.ops.softmax(logits, axis=1)
    loss = ctensor.ops.cross_entropy(logits, target)
    return loss, probs


def _torch_ops_model(x, target, w1, b1, w2, gamma, beta):
    h = T.relu(T.linear(x, w1, b1))
    h = T.layer_norm(h, gamma, beta, normalized_shape=[h.shape[-1]])
    logits = T.matmul(h, w2)
    probs = T.softmax(logits, axis=1)
    loss = T.cross_entropy(logits, target)
    return loss, probs


def _reference_model(x, target, w1, b1, w2, gamma, beta):
    h = torch.relu(F.linear(x, w1, b1))
    h = F.layer_norm(h, [h.shape[-1]], gamma, beta)
    logits = h @ w2
    return F.cross_entropy(logits, target), torch.softmax(logits, 1)


def _model_inputs():
    generator = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, dtype=F64, generator=generator)

    x = randn(8, 6)
    target = torch.randint(0, 5, (8,), generator=generator)
    params = [randn(7, 6), randn(7), randn(7, 5), randn(7), randn(7)]
    return x, target, params


@pytest.mark.parametrize("model", [_plain_model, _torch_ops_model], ids=["plain", "torch_ops"])
def test_model_has_zero_graph_breaks_and_only_ctensor_ops(model):
    x, target, params = _model_inputs()
    explanation = torch._dynamo.explain(model)(x, target, *params)
    assert explanation.graph_break_count == 0
    assert explanation.graph_count == 1
    names = [_ctensor_name(t) for t in _call_targets(explanation)]
    assert names and None not in names, _call_targets(explanation)
    assert {"linear", "relu", "layer_norm", "matmul", "softmax", "cross_entropy"} <= set(names)


@pytest.mark.parametrize("model", [_plain_model, _torch_ops_model], ids=["plain", "torch_ops"])
def test_model_forward_and_backward_match_eager(model):
    x, target, params = _model_inputs()
    params = [p.requires_grad_() for p in params]
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    loss, probs = compiled(x, target, *params)
    grads = torch.autograd.grad(loss, params)
    ref_loss, ref_probs = _reference_model(x, target, *params)
    ref_grads = torch.autograd.grad(ref_loss, params)
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(probs, ref_probs)
    for grad, ref in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(grad, ref)


def test_model_under_inductor_matches_eager():
    x, target, params = _model_inputs()
    params = [p.requires_grad_() for p in params]
    loss, probs = torch.compile(_plain_model, fullgraph=True)(x, target, *params)
    grads = torch.autograd.grad(loss, params)
    ref_loss, ref_probs = _reference_model(x, target, *params)
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(probs, ref_probs)
    for grad, ref in zip(grads, torch.autograd.grad(ref_loss, params), strict=True):
        torch.testing.assert_close(grad, ref)


def test_torch_export_of_plain_calls_holds_ctensor_ops():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(4, 3))

        def forward(self, x):
            return ctensor.ops.softmax(ctensor.ops.matmul(x, self.weight), axis=1)

    model, x = Model(), torch.randn(5, 4)
    program = torch.export.export(model, (x,))
    names = [_ctensor_name(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert names == ["matmul", "softmax"]
    torch.testing.assert_close(program.module()(x), torch.softmax(x @ model.weight, 1))


def test_every_op_compiles_fullgraph_into_its_torch_op():
    # The opcheck cases of tests/test_torch_ops.py, one per op, as plain ctensor.ops calls.
    traced: list = []

    def recording_backend(graph, example_inputs):
        traced.extend(_ctensor_name(n.target) for n in graph.graph.nodes)
        return graph.forward

    checked = 0
    for name, cases in sorted(all_cases().items()):
        spec = get_spec(name)
        case = cases[0]
        if not any(a is not None for a in case.args):
            continue  # no tensor input: runs eagerly (torch.ops.ctensor takes device=)
        attrs = ctensor_attrs(spec, case.kwargs)
        plain = getattr(ctensor.ops, name)

        def f(*args, op=plain, attrs=attrs):
            return op(*args, **attrs)

        torch._dynamo.reset()
        traced.clear()
        with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
            got = torch.compile(f, fullgraph=True, backend=recording_backend)(*case.args)
        assert name in traced, (name, traced)
        want = f(*case.args)
        got, want = flat_results(got), flat_results(want)
        assert len(got) == len(want), name
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype, name
            torch.testing.assert_close(a, b, equal_nan=True, msg=f"{name}: {case}")
        checked += 1
    assert checked > 200


# --- calls with scalars, out=, variadic inputs, dynamic shapes --------------------------------


def test_scalars_out_and_lists_trace_as_ctensor_ops():
    def f(x, y, z):
        a = ctensor.ops.add(ctensor.ops.multiply(x, 2.0), 1)
        b = ctensor.ops.concat([a, y], axis=0)
        ctensor.ops.subtract(b, 0.5, out=z)
        return ctensor.ops.sum(z, axis=1, keepdims=True)

    x, y = torch.randn(3, 4), torch.randn(2, 4)
    z = torch.empty(5, 4)
    explanation = torch._dynamo.explain(f)(x, y, z)
    assert explanation.graph_break_count == 0
    names = {_ctensor_name(t) for t in _call_targets(explanation)}
    assert {"multiply", "add", "concat", "subtract", "sum"} <= names
    z = torch.empty(5, 4)
    result = torch.compile(f, fullgraph=True, backend="aot_eager")(x, y, z)
    expected_z = torch.cat([x * 2 + 1, y]) - 0.5
    assert result.dtype == torch.float32  # Python scalars take the tensor's dtype (NEP 50)
    torch.testing.assert_close(z, expected_z)
    torch.testing.assert_close(result, expected_z.sum(1, keepdim=True))


def test_dynamic_shapes_compile_an_elementwise_chain_once():
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")

    def f(x, y):
        return ctensor.ops.tanh(ctensor.ops.add(ctensor.ops.exp(x), ctensor.ops.multiply(x, y)))

    compiled = torch.compile(f, backend=counter, dynamic=True, fullgraph=True)
    for n in (3, 5, 8):
        x, y = torch.randn(n, 4), torch.randn(4)
        torch.testing.assert_close(compiled(x, y), torch.tanh(x.exp() + x * y))
    assert counter.frame_count == 1


def test_calls_torch_ops_cannot_make_run_eagerly():
    # backend= pins a ctensor backend, which torch.ops.ctensor cannot: one graph break, and
    # the call runs as it does uncompiled (its frames are not traced by Dynamo either).
    def f(x):
        return ctensor.ops.add(x, x, backend="cpu") * 3

    x = torch.randn(4)
    explanation = torch._dynamo.explain(f)(x)
    assert not any(_ctensor_name(t) for t in _call_targets(explanation))
    compiled = torch.compile(f, backend="aot_eager")
    torch.testing.assert_close(compiled(x), (x + x) * 3)
    torch.testing.assert_close(compiled(x + 1), (x + 1) * 6)
    torch._dynamo.reset()  # f's frame is cached with its graph break
    with pytest.raises(torch._dynamo.exc.Unsupported, match="ctensor.ops call"):
        torch.compile(f, fullgraph=True, backend="aot_eager")(x)


def test_numpy_arrays_under_compile():
    a = np.arange(4.0)

    def f(x):
        return x + torch.as_tensor(ctensor.ops.add(a, a))

    result = torch.compile(f, backend="aot_eager")(torch.ones(4))
    torch.testing.assert_close(result, torch.ones(4) + torch.as_tensor(2 * a))


# --- int attributes that change between calls -------------------------------------------------


def test_an_int_attribute_that_may_shape_the_outputs_is_specialized():
    # one_hot's num_classes sizes the result, argmax's axis picks the extent that goes: each
    # value gets its own graph (a guard on it) with that value's shapes, also where two values
    # give the same shape (axes 1 and 2 of a 4-d tensor) and a third does not (axis 0).
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    one_hot = torch.compile(lambda x, n: T.one_hot(x, num_classes=n), backend=counter)
    x = torch.tensor([0, 1, 2])
    assert [tuple(one_hot(x, n).shape) for n in (3, 4, 5)] == [(3, 3), (3, 4), (3, 5)]
    assert counter.frame_count == 3
    v = torch.randn(4, 3, 3, 3, dtype=F64)
    # zeros of the shape the graph gives argmax's result: the fake kernel's shape
    shape_of = torch.compile(
        lambda v, a: torch.zeros(T.argmax(v, axis=a).shape), fullgraph=True, backend="aot_eager"
    )
    softmax = torch.compile(lambda v, a: T.softmax(v, axis=a), fullgraph=True, backend="aot_eager")
    for axis in (1, 2, 0, -1, 1):
        assert shape_of(v, axis).shape == v.argmax(axis).shape
        assert torch.equal(softmax(v, axis), T.softmax(v, axis=axis))


def test_value_only_int_attributes_stay_symbolic():
    # A new dropout offset each call: one graph serves them all after one recompilation.
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    dropout = torch.compile(
        lambda v, o: T.dropout(v, p=0.5, seed=3, offset=o)[0], backend=counter, fullgraph=True
    )
    v = torch.randn(64, dtype=F64)
    for offset in range(5):
        assert torch.equal(dropout(v, offset), T.dropout(v, p=0.5, seed=3, offset=offset)[0])
    assert counter.frame_count == 2
    # The ops with such attributes, all checked to use them as values only: a new one must be
    # checked too before it joins this list.
    having = {
        name
        for name, spec in all_specs().items()
        if any(a["name"] in VALUE_ONLY_ATTRS and a["type"] == "int" for a in spec.attrs)
    }
    assert having == {
        "avg_pool2d",
        "avg_pool2d_backward",
        "cross_entropy",
        "cross_entropy_backward",
        "dropout",
        "nll_loss",
        "nll_loss_backward",
        "random_bernoulli",
        "random_normal",
        "random_uniform",
        "scaled_dot_product_attention",
        "scaled_dot_product_attention_backward",
    }


# --- FakeTensor and meta tensors --------------------------------------------------------------


@pytest.mark.parametrize("where", ["fake", "meta"])
def test_data_less_tensors_go_through_torch_ops(where):
    def make(*shape, dtype=torch.float32):
        return torch.empty(*shape, dtype=dtype, device="meta" if where == "meta" else "cpu")

    def check():
        x, w = make(4, 6), make(6, 3)
        cases = [
            (ctensor.ops.add(x, make(6, dtype=F64)), (4, 6), F64),
            (ctensor.ops.matmul(x, w), (4, 3), torch.float32),
            (ctensor.ops.softmax(x, axis=0), (4, 6), torch.float32),
            (ctensor.ops.sum(x, axis=1, keepdims=True), (4, 1), torch.float32),
            (ctensor.ops.concat([x, x], axis=1), (4, 12), torch.float32),
            (ctensor.ops.multiply(x, 3), (4, 6), torch.float32),
        ]
        for result, shape, dtype in cases:
            assert tuple(result.shape) == shape and result.dtype == dtype
            if where == "meta":
                assert result.is_meta
            else:
                assert type(result).__name__ == "FakeTensor"

    if where == "fake":
        with FakeTensorMode():
            check()
    else:
        check()


# --- vmap -------------------------------------------------------------------------------------


def test_vmap_rule_kinds_come_from_the_schema():
    assert rule_kind(get_spec("add")) == "elementwise"
    assert rule_kind(get_spec("softmax")) == "axis"
    assert rule_kind(get_spec("sum")) == "axis"
    assert rule_kind(get_spec("concat")) == "axis"
    assert rule_kind(get_spec("matmul")) == "loop"
    assert rule_kind(get_spec("softmax_backward")) == "loop"


def _vmap(fn, *args, in_dims=0):
    return torch.func.vmap(fn, in_dims=in_dims)(*args)


def test_vmap_elementwise_broadcasts_as_without_the_batch():
    x = torch.randn(5, 3, 4, dtype=F64)
    y = torch.randn(4, dtype=F64)
    z = torch.randn(2, 3, 4, dtype=F64)
    torch.testing.assert_close(_vmap(lambda v: ctensor.ops.add(v, y), x), x + y)
    # batch in dim 1 of x; the unbatched operand has a higher rank than each slice
    v = torch.randn(4, 5, dtype=F64)
    result = _vmap(lambda a: T.multiply(a, z), v, in_dims=1)
    torch.testing.assert_close(result, v.T[:, None, None, :] * z)
    both = _vmap(lambda a, b: T.maximum(a, b), x, torch.randn(5, 4, dtype=F64))
    assert both.shape == (5, 3, 4)


def test_vmap_reductions_with_axis_match_torch():
    x = torch.randn(5, 3, 4, dtype=F64)
    torch.testing.assert_close(_vmap(lambda v: ctensor.ops.sum(v, axis=1), x), x.sum(2))
    torch.testing.assert_close(
        _vmap(lambda v: T.mean(v, axis=[0], keepdims=True), x, in_dims=2),
        x.permute(2, 0, 1).mean(1, keepdim=True),
    )
    torch.testing.assert_close(_vmap(lambda v: T.softmax(v, axis=-1), x), torch.softmax(x, -1))
    torch.testing.assert_close(_vmap(lambda v: T.sum(v), x), x.sum((1, 2)))  # axis=None: loop
    y = torch.randn(3, 4, dtype=F64)
    torch.testing.assert_close(
        _vmap(lambda v: ctensor.ops.concat([v, y], axis=0), x), torch.cat([x, y.expand(5, 3, 4)], 1)
    )


def test_vmap_loop_fallback_matches_torch():
    x = torch.randn(5, 3, 4, dtype=F64)
    w = torch.randn(6, 4, dtype=F64)
    b = torch.randn(5, 6, dtype=F64)
    torch.testing.assert_close(_vmap(lambda v: T.matmul(v, w.T), x), x @ w.T)
    torch.testing.assert_close(
        _vmap(lambda v, c: ctensor.ops.linear(v, w, c), x, b), F.linear(x, w) + b[:, None]
    )
    torch.testing.assert_close(
        _vmap(lambda v: T.permute_dims(v, axes=[1, 0]), x), x.transpose(1, 2)
    )


def test_vmap_over_an_empty_batch_gives_empty_results():
    # The loop rule has no slice to call the op on: shapes come from the fake kernel.
    x = torch.empty(0, 4, 3, dtype=F64)
    w = torch.randn(3, 2, dtype=F64)
    pairs = [
        (lambda v: T.matmul(v, w), lambda v: v @ w),  # loop
        (lambda v: T.sum(v), torch.sum),  # axis=None: loop
        (lambda v: T.argmax(v, axis=1), lambda v: torch.argmax(v, 1)),  # axis
        (lambda v: T.exp(v), torch.exp),  # elementwise
    ]
    for ours, theirs in pairs:
        got, want = torch.func.vmap(ours)(x), torch.func.vmap(theirs)(x)
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
    values, indices = torch.func.vmap(lambda v: T.topk(v, k=2, axis=0))(x[:, 0])
    assert values.shape == indices.shape == (0, 2) and indices.dtype == torch.int64


# Each op the axis rule takes, with the attributes one call needs besides ``axis``.
_AXIS_CASES = {
    "all": {},
    "any": {},
    "argmax": {},
    "argmin": {},
    "argpartition": {"kth": [1]},
    "argsort": {},
    "concat": {},
    "cumulative_prod": {},
    "cumulative_sum": {"include_initial": True},
    "flip": {},
    "log_softmax": {},
    "logsumexp": {"keepdims": True},
    "max": {},
    "mean": {},
    "min": {},
    "prod": {},
    "repeat": {"repeats": [2]},
    "roll": {"shift": [1]},
    "roll_backward": {"shift": [1]},
    "softmax": {},
    "sort": {"descending": True},
    "stack": {},
    "std": {"correction": 1.0},
    "sum": {},
    "topk": {"k": 2},
    "var": {},
    "vector_norm": {"ord": 3.0},
}


def test_axis_rule_agrees_with_a_loop_for_every_op_it_takes():
    axis_ops = sorted(name for name, spec in all_specs().items() if rule_kind(spec) == "axis")
    assert axis_ops == sorted(_AXIS_CASES)
    x = torch.randn(3, 4, 5, 6, dtype=F64)
    for name, attrs in _AXIS_CASES.items():
        spec = get_spec(name)
        op = getattr(T, name)
        axis_type = next(a["type"] for a in spec.attrs if a["name"] == "axis")
        for axis in (1, -1, 0):
            kwargs = {**attrs, "axis": [axis] if axis_type == "int_list" else axis}

            def call(v, op=op, kwargs=kwargs, many=spec.variadic_input):
                return op([v, v], **kwargs) if many else op(v, **kwargs)

            batched = torch.func.vmap(call)(x)
            looped = [call(x[i]) for i in range(x.shape[0])]
            if isinstance(batched, torch.Tensor):
                batched, looped = (batched,), [(r,) for r in looped]
            for k, result in enumerate(batched):
                torch.testing.assert_close(result, torch.stack([r[k] for r in looped]), msg=name)


def _second_sample(value):
    """The second slice of a batch of two: floats halved (in every op's domain that the first
    is), everything else as it is."""
    if isinstance(value, list):
        return [_second_sample(v) for v in value]
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value * 0.5
    return value


def _batch_of_two(value):
    if isinstance(value, list):
        return [_batch_of_two(v) for v in value]
    if value is None:
        return None
    return torch.stack([value, _second_sample(value)])


def test_vmap_of_every_op_agrees_with_a_loop():
    # The opcheck cases of tests/test_torch_ops.py, one per op, batched with a second slice.
    checked = 0
    for name, cases in sorted(all_cases().items()):
        spec = get_spec(name)
        # Ops without tensor inputs have nothing to batch; dynamic ops give each slice its own
        # size, which no batch can hold.
        if spec.is_dynamic or not any(a is not None for a in cases[0].args):
            continue
        case = cases[0]
        op = getattr(T, name).default
        in_dims = tuple(
            None if a is None else [0] * len(a) if isinstance(a, list) else 0 for a in case.args
        )
        batched = tuple(_batch_of_two(a) for a in case.args)
        with torch.no_grad():
            got = torch.func.vmap(lambda *xs, op=op, kw=case.kwargs: op(*xs, **kw), in_dims)(
                *batched
            )
            first = flat_results(op(*case.args, **case.kwargs))
            second = flat_results(op(*(_second_sample(a) for a in case.args), **case.kwargs))
        for k, result in enumerate(flat_results(got)):
            want = torch.stack([first[k], second[k]])
            torch.testing.assert_close(result, want, equal_nan=True, msg=f"{name}: {case}")
        checked += 1
    assert checked > 200


# --- torch.func.grad, vjp ---------------------------------------------------------------------


def test_func_grad_through_plain_ctensor_ops():
    x = torch.randn(4, 3, dtype=F64)

    def f(v):
        return ctensor.ops.sum(ctensor.ops.multiply(ctensor.ops.sin(v), v))

    torch.testing.assert_close(torch.func.grad(f)(x), x.cos() * x + x.sin())


def test_func_vjp_and_vmap_of_grad_through_torch_ops():
    x = torch.randn(4, 3, dtype=F64)
    cotangent = torch.randn(4, 3, dtype=F64)
    _, pullback = torch.func.vjp(lambda v: T.softmax(v, axis=1), x)
    _, reference = torch.func.vjp(lambda v: torch.softmax(v, 1), x)
    torch.testing.assert_close(pullback(cotangent)[0], reference(cotangent)[0])
    per_row = torch.func.vmap(torch.func.grad(lambda v: T.sum(T.exp(v))))(x)
    torch.testing.assert_close(per_row, x.exp())
    jacobian = torch.func.jacrev(lambda v: T.tanh(v))(x[0])
    torch.testing.assert_close(jacobian, torch.diag(1 - x[0].tanh() ** 2))


def test_func_grad_of_a_list_input_op():
    x = torch.randn(2, 3, dtype=F64)
    y = torch.randn(4, 3, dtype=F64)

    def f(a, b):
        return T.sum(T.multiply(T.concat([a, b], axis=0), 2.0 * torch.ones(6, 3, dtype=F64)))

    grads = torch.func.grad(f, argnums=(0, 1))(x, y)
    torch.testing.assert_close(grads[0], torch.full_like(x, 2.0))
    torch.testing.assert_close(grads[1], torch.full_like(y, 2.0))


def test_forward_mode_ad_raises_instead_of_dropping_tangents():
    x = torch.randn(3, dtype=F64)
    with pytest.raises(NotImplementedError, match="jvp"):
        torch.func.jvp(lambda v: T.sin(v), (x,), (torch.ones_like(x),))
