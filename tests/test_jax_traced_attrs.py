"""Traced value-only attributes in ctensor.jax: ``seed``, ``offset``, ``ignore_index`` and
``divisor_override`` given as JAX integers (tracers under jit, concrete arrays eagerly) give the
results of the same Python ints, under jit (one compilation for every value), grad (the
backward gets the same values) and vmap (a batched value runs per element); other attributes
given as arrays are refused; the handler checks the operands it is given."""

from __future__ import annotations

import numpy as np
import pytest

from ctensor._attrs import VALUE_ONLY_ATTRS
from ctensor._registry import all_specs

jax = pytest.importorskip("jax")
jnp = jax.numpy
cj = pytest.importorskip("ctensor.jax")
import ctensor  # noqa: E402
from ctensor.jax import _xla  # noqa: E402

RNG = np.random.default_rng(7)
X = jnp.asarray(RNG.standard_normal((6, 10)), jnp.float32)
LOGITS = jnp.asarray(RNG.standard_normal((8, 5)), jnp.float32)
TARGET = jnp.asarray([0, 1, 2, 3, 4, 1, 2, 2], jnp.int32)
IMAGES = jnp.asarray(RNG.standard_normal((2, 3, 6, 6)), jnp.float32)
Q, K, V = (jnp.asarray(RNG.standard_normal((2, 4, 8)), jnp.float32) for _ in range(3))


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def _dropout(value, **attrs):  # noqa: ANN001, ANN003, ANN202
    return cj.dropout(value, p=0.5, **attrs)


def _sdpa(q, **attrs):  # noqa: ANN001, ANN003, ANN202
    return cj.scaled_dot_product_attention(q, K, V, dropout_p=0.3, **attrs)


#: Per forward operator: (function of one float array and the attributes, that array, the
#: traced attributes with two values each). The backward operators are reached through grad.
CASES = {
    "dropout": (_dropout, X, {"seed": (3, 4), "offset": (0, 9)}),
    "random_bernoulli": (
        lambda p, **a: cj.random_bernoulli(p, **a),
        jnp.full((4, 5), 0.5, jnp.float32),
        {"seed": (1, 2), "offset": (5, 6)},
    ),
    "random_uniform": (
        lambda _, **a: cj.random_uniform(shape=[3, 4], **a),
        X,
        {"seed": (1, 2), "offset": (0, 3)},
    ),
    "random_normal": (
        lambda _, **a: cj.random_normal(shape=[3, 4], **a),
        X,
        {"seed": (1, 2), "offset": (0, 3)},
    ),
    "scaled_dot_product_attention": (_sdpa, Q, {"seed": (1, 2), "offset": (0, 3)}),
    "cross_entropy": (
        lambda lg, **a: cj.cross_entropy(lg, TARGET, **a),
        LOGITS,
        {"ignore_index": (1, 2)},
    ),
    "nll_loss": (
        lambda lg, **a: cj.nll_loss(cj.log_softmax(lg, axis=1), TARGET, **a),
        LOGITS,
        {"ignore_index": (2, 4)},
    ),
    "avg_pool2d": (
        lambda x, **a: cj.avg_pool2d(x, kernel_size=[2, 2], **a),
        IMAGES,
        {"divisor_override": (3, 5)},
    ),
}
DIFFERENTIABLE = [
    "dropout",
    "scaled_dot_product_attention",
    "cross_entropy",
    "nll_loss",
    "avg_pool2d",
]


def _first(result):  # noqa: ANN001, ANN202
    return result[0] if isinstance(result, tuple) else result


def _equal(a, b) -> None:  # noqa: ANN001
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    assert len(a) == len(b)
    for u, v in zip(a, b, strict=True):
        assert u.dtype == v.dtype and u.shape == v.shape
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_every_op_with_value_only_attributes_has_a_case():
    having = {
        name.removesuffix("_backward")
        for name, spec in all_specs().items()
        if any(a["name"] in VALUE_ONLY_ATTRS and a["type"] == "int" for a in spec.attrs)
    }
    assert having == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_with_traced_values_matches_static_ints_and_compiles_once(name):
    fn, value, traced = CASES[name]
    names = sorted(traced)
    jitted = jax.jit(lambda x, *values: fn(x, **dict(zip(names, values, strict=True))))
    outputs = []
    for k in range(2):
        values = [traced[n][k] for n in names]
        static = fn(value, **dict(zip(names, values, strict=True)))
        _equal(jitted(value, *values), static)
        # concrete JAX integers eagerly: the same result
        arrays = {n: jnp.asarray(v, jnp.int32) for n, v in zip(names, values, strict=True)}
        _equal(fn(value, **arrays), static)
        outputs.append(_first(static))
    assert jitted._cache_size() == 1
    assert not np.array_equal(np.asarray(outputs[0]), np.asarray(outputs[1]))  # values matter


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_grad_with_traced_values_matches_static_ints(name):
    fn, value, traced = CASES[name]
    names = sorted(traced)

    def loss(x, *values):  # noqa: ANN001, ANN002, ANN202
        out = _first(fn(x, **dict(zip(names, values, strict=True))))
        return jnp.sum(out * out) if out.ndim else out

    grad = jax.jit(jax.grad(loss))
    for k in range(2):
        values = [traced[n][k] for n in names]
        _equal(grad(value, *values), jax.grad(lambda x, v=values: loss(x, *v))(value))
    assert grad._cache_size() == 1


def test_vmap_over_batched_offsets_runs_each_with_its_own_value():
    offsets = jnp.arange(4)
    batched = jax.jit(jax.vmap(lambda o: cj.dropout(X, p=0.5, seed=3, offset=o)[0]))(offsets)
    for k in range(4):
        _equal(batched[k], cj.dropout(X, p=0.5, seed=3, offset=k)[0])
    # batched inputs and offsets together, and grad inside vmap
    xs = jnp.stack([X, 2 * X])
    grads = jax.vmap(
        jax.grad(lambda x, o: jnp.sum(cj.dropout(x, p=0.5, seed=3, offset=o)[0] ** 2))
    )(xs, jnp.asarray([5, 6]))
    for k, offset in enumerate((5, 6)):
        expected = jax.grad(
            lambda x, o=offset: jnp.sum(cj.dropout(x, p=0.5, seed=3, offset=o)[0] ** 2)
        )
        _equal(grads[k], expected(xs[k]))


def test_vmap_over_batched_ignore_index_with_grad():
    def loss(lg, ignore):  # noqa: ANN001, ANN202
        return cj.cross_entropy(lg, TARGET, ignore_index=ignore)

    ignores = jnp.asarray([0, 1, 2], jnp.int32)
    values = jax.vmap(loss, in_axes=(None, 0))(LOGITS, ignores)
    grads = jax.vmap(jax.grad(loss), in_axes=(None, 0))(LOGITS, ignores)
    for k in range(3):
        _equal(values[k], loss(LOGITS, k))
        _equal(grads[k], jax.grad(lambda lg, i=k: loss(lg, i))(LOGITS))


def test_widths_and_signs_reach_the_attribute(x64):
    # int64 bits of a uint64 seed, uint32 zero-extended, int8 sign-extended
    for seed, dtype in [(-1, jnp.int64), (2**32 - 1, jnp.uint32), (-5, jnp.int8), (200, jnp.uint8)]:
        traced = jax.jit(lambda s: cj.random_uniform(shape=[8], seed=s))(jnp.asarray(seed, dtype))
        _equal(traced, cj.random_uniform(shape=[8], seed=seed))
    assert not np.array_equal(
        np.asarray(cj.random_uniform(shape=[8], seed=2**32 - 1)),
        np.asarray(cj.random_uniform(shape=[8], seed=-1)),
    )


def test_a_traced_value_the_kernel_refuses_fails_the_run():
    pool = jax.jit(lambda x, d: cj.avg_pool2d(x, kernel_size=[2, 2], divisor_override=d))
    with pytest.raises(jax.errors.JaxRuntimeError, match="divisor_override must be non-zero"):
        pool(IMAGES, 0).block_until_ready()
    _equal(pool(IMAGES, 2), cj.avg_pool2d(IMAGES, kernel_size=[2, 2], divisor_override=2))


def test_other_attributes_and_bad_values_are_refused():
    with pytest.raises(ctensor.InvalidArgumentError, match="'kernel_size' must be a Python value"):
        jax.jit(lambda x, k: cj.max_pool2d(x, kernel_size=k))(IMAGES, 2)
    with pytest.raises(ctensor.InvalidArgumentError, match="'p' must be a Python value"):
        jax.jit(lambda x, p: cj.dropout(x, p=p, seed=0))(X, 0.5)
    with pytest.raises(ctensor.InvalidArgumentError, match="must be a 0-d integer"):
        cj.dropout(X, p=0.5, seed=0, offset=jnp.asarray(1.0))
    with pytest.raises(ctensor.InvalidArgumentError, match="must be a 0-d integer"):
        cj.dropout(X, p=0.5, seed=0, offset=jnp.asarray([1, 2]))


def test_handler_checks_the_attribute_operands():
    one = jax.ShapeDtypeStruct(X.shape, jnp.float32)
    mask = jax.ShapeDtypeStruct(X.shape, jnp.bool_)
    base = {"__op": "dropout", "__absent": np.int64(0), "p": np.float64(0.5)}

    def raw(*operands, **attrs):  # noqa: ANN002, ANN003, ANN202
        call = jax.ffi.ffi_call(_xla.TARGET, (one, mask))
        return jax.jit(lambda *a: call(*a, **base, **attrs))(*operands)

    out = raw(X, jnp.int32(3), jnp.int32(9), __operands="seed,offset")
    _equal(tuple(out), cj.dropout(X, p=0.5, seed=3, offset=9))
    out = raw(X, jnp.int32(9), jnp.int32(3), __operands="offset,seed")  # order as listed
    _equal(tuple(out), cj.dropout(X, p=0.5, seed=3, offset=9))
    with pytest.raises(jax.errors.JaxRuntimeError, match="must be one integer"):
        raw(X, jnp.float32(3), __operands="seed")
    with pytest.raises(jax.errors.JaxRuntimeError, match="given twice"):
        raw(X, jnp.int32(3), __operands="seed", seed=np.int64(3))
    with pytest.raises(jax.errors.JaxRuntimeError, match="empty name"):
        raw(X, jnp.int32(3), __operands="seed,")
    with pytest.raises(jax.errors.JaxRuntimeError, match="fewer operands"):
        jax.jit(
            lambda: jax.ffi.ffi_call(_xla.TARGET, one)(
                __op="random_uniform",
                __absent=np.int64(0),
                shape=np.array([6, 10]),
                __operands="seed,offset",
            )
        )()


def test_ctensor_ops_with_a_traced_attribute_run_as_ctensor_jax():
    # Inputs not traced (a constant, or none), the offset traced: routed to ctensor.jax.
    uniform = jax.jit(lambda o: ctensor.ops.random_uniform(shape=[5], seed=2, offset=o))
    _equal(uniform(3), cj.random_uniform(shape=[5], seed=2, offset=3))
    dropout = jax.jit(lambda o: ctensor.ops.dropout(X, p=0.5, seed=2, offset=o))
    _equal(dropout(4), cj.dropout(X, p=0.5, seed=2, offset=4))
    with pytest.raises(ctensor.AttributeTypeError, match="'seed' takes"):
        ctensor.ops.dropout(np.ones(3), p=0.5, seed="two")
