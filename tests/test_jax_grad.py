"""``jax.grad`` of ``ctensor.jax`` ops: the registry's gradient entries as ``jax.custom_vjp``.

Every differentiable op, on the float64 gradient case the torch tests use (the conformance
suite's ``gradient_cases``, chosen as ``tests/torch_cases.gradient_inputs`` chooses), gives
under ``jax.jit(jax.vjp(...))`` the cotangents that ``ctensor.autodiff.vjp`` computes on NumPy
arrays and that central finite differences of ctensor's forward give (``tests/gradcheck.py``);
the ops JAX has by the same name (``jax.numpy``, ``jax.nn``), and a few more written with
jax.lax, give jax's own gradients. Then the behaviours around it: integer inputs, ops without a
gradient, ``value_and_grad``, ``vmap`` of ``grad``, higher-order gradients.
"""

from __future__ import annotations

import functools
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gradcheck import FD_TOLERANCE, _finite_differences
from torch_cases import SEED, cpu_signatures, input_dtypes

import ctensor
import ctensor.autodiff
import ctensor.jax as cj
from ctensor._registry import get_spec
from ctensor.conformance import dtypes as dt
from ctensor.conformance.cases import gradient_cases

DIFFERENTIABLE = ctensor.autodiff.differentiable_ops()


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


# ---------------------------------------------------------------------------------------------
# The cases: one float64 gradient case per differentiable op.


@functools.cache
def _case(name: str) -> tuple[list, dict]:
    """The op's float64 gradient case: inputs one per parameter (NumPy arrays, None where
    absent, the variadic one a list) and attributes."""
    spec = get_spec(name)
    signature = next(
        s
        for s in cpu_signatures(spec)
        if {d for d in input_dtypes(spec, s) if dt.is_float(d)} == {"float64"}
    )
    found = gradient_cases(spec, signature, SEED, 6)
    case = min(found, key=lambda c: sum(a.size for a in c.inputs if a is not None))
    flat = [None if a is None else np.array(a, order="C") for a in case.inputs]
    if spec.variadic_input:
        fixed = spec.num_fixed_inputs
        flat = [*flat[:fixed], flat[fixed:]]
    return flat, dict(case.attrs)


def _places(inputs: list) -> list[tuple[int, int | None]]:
    """(parameter, index in the variadic list or None) of every float input."""
    places = []
    for i, value in enumerate(inputs):
        if isinstance(value, list):
            places += [(i, k) for k, a in enumerate(value) if a.dtype.kind == "f"]
        elif value is not None and value.dtype.kind == "f":
            places.append((i, None))
    return places


def _with(inputs: list, places: list, leaves: tuple) -> list:
    values = [list(v) if isinstance(v, list) else v for v in inputs]
    for (i, k), leaf in zip(places, leaves, strict=True):
        if k is None:
            values[i] = leaf
        else:
            values[i][k] = leaf
    return values


def _flat_outputs(result) -> list:  # noqa: ANN001
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _taking(name: str, outputs: list) -> list[int]:
    """Indices of the flat outputs that take a cotangent: float outputs the entry reads."""
    spec = get_spec(name)
    takes = spec.schema["gradient"]["output_takes_cotangent"]
    return [
        k
        for k, out in enumerate(outputs)
        if takes[min(k, len(takes) - 1)] and np.dtype(out.dtype).kind == "f"
    ]


def _setup(name: str):  # noqa: ANN202
    """(function of the differentiated float inputs returning the outputs that take
    cotangents, the inputs, the places differentiated, the cotangents)."""
    spec = get_spec(name)
    inputs, attrs = _case(name)
    grads = spec.schema["gradient"]["input_grads"]
    places = [(i, k) for i, k in _places(inputs) if grads[i] is not None]
    outputs = _flat_outputs(getattr(ctensor.ops, name)(*inputs, **attrs))
    taking = _taking(name, outputs)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    cotangents = tuple(rng.standard_normal(outputs[k].shape) for k in taking)
    op = getattr(cj, name)

    def function(*leaves):  # noqa: ANN002, ANN202
        result = _flat_outputs(op(*_with(inputs, places, leaves), **attrs))
        return tuple(result[k] for k in taking)

    return function, inputs, places, cotangents


def _vjp(function, leaves: tuple, cotangents: tuple) -> tuple:  # noqa: ANN001
    return jax.vjp(function, *leaves)[1](cotangents)


def _leaves(inputs: list, places: list) -> tuple:
    return tuple(jnp.asarray(inputs[i] if k is None else inputs[i][k]) for i, k in places)


# ---------------------------------------------------------------------------------------------
# Every differentiable op: jit, the NumPy program and finite differences agree.


def test_every_differentiable_op_has_a_case_with_a_float_input_to_differentiate():
    missing = [name for name in DIFFERENTIABLE if not _setup(name)[2]]
    assert not missing


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_jitted_grad_matches_the_registry_and_finite_differences(name: str):
    function, inputs, places, cotangents = _setup(name)
    leaves = _leaves(inputs, places)
    got = jax.jit(functools.partial(_vjp, function))(leaves, cotangents)
    _, attrs = _case(name)
    spec = get_spec(name)
    # the same program run by ctensor.autodiff on NumPy arrays: the same kernels, the same bits
    outputs = _flat_outputs(getattr(ctensor.ops, name)(*inputs, **attrs))
    taking = iter(cotangents)
    per_output = [
        next(taking) if k in _taking(name, outputs) else None for k in range(len(outputs))
    ]
    if spec.variadic_output:
        fixed = len(spec.outputs) - 1
        per_output = [*per_output[:fixed], per_output[fixed:]]
    if cotangents:
        want = ctensor.autodiff.vjp(name, inputs, per_output, **attrs)
    else:  # no float result (astype to an integer dtype): zero cotangents, as JAX's
        want = [
            None
            if v is None
            else [np.zeros_like(a) for a in v]
            if isinstance(v, list)
            else np.zeros_like(v)
            for v in inputs
        ]
    for (i, k), value, leaf in zip(places, got, leaves, strict=True):
        assert value.dtype == leaf.dtype and value.shape == leaf.shape
        reference = want[i] if k is None else want[i][k]
        np.testing.assert_allclose(np.asarray(value), reference, rtol=1e-12, atol=1e-14)
    # central differences of <cotangents, forward> at a few elements of each input
    full = [None] * len(outputs)
    for k, c in zip(_taking(name, outputs), cotangents, strict=True):
        full[k] = c
    rng = np.random.default_rng(SEED)
    flat_inputs = [v for v in inputs]
    differences = _finite_differences(name, flat_inputs, attrs, full, rng)
    by_place = dict(zip(places, got, strict=True))
    checked = 0
    for place, chosen, values in differences:
        if place not in by_place:
            continue  # an input the entry holds constant
        estimate = np.asarray(by_place[place]).reshape(-1)[chosen]
        scale = max(1.0, float(np.max(np.abs(values))))
        np.testing.assert_allclose(
            estimate, values, rtol=FD_TOLERANCE[0], atol=FD_TOLERANCE[1] * scale
        )
        checked += 1
    assert checked == len(places)


# ---------------------------------------------------------------------------------------------
# jax's own gradients.


def _jnp_reference(name: str):  # noqa: ANN202
    """jax's function of the op's inputs (the case's attributes as jax's keywords), for ops JAX
    has by the same name in jax.numpy or jax.nn."""
    function = getattr(jnp, name, None) or getattr(jax.nn, name, None)
    _, attrs = _case(name)
    return lambda *inputs: function(*inputs, **attrs)


def _window(x, size: int, init: float, reducer):  # noqa: ANN001, ANN202
    window = (1, 1, size, size)
    return jax.lax.reduce_window(x, init, reducer, window, window, "VALID")


#: Ops JAX names otherwise, as functions of the case's inputs (tests check the attributes).
_WRITTEN = {
    "gelu": lambda x: jax.nn.gelu(x, approximate=False),
    "erf": jax.scipy.special.erf,
    "hardswish": jax.nn.hard_swish,
    "hardsigmoid": jax.nn.hard_sigmoid,
    "conv2d": lambda x, w, b: (
        jax.lax.conv_general_dilated(
            x, w, (1, 1), [(0, 0), (0, 0)], dimension_numbers=("NCHW", "OIHW", "NCHW")
        )
        + b[None, :, None, None]
    ),
    "linear": lambda x, w, b: x @ w.T + b,
    "max_pool2d": lambda x: _window(x, 2, -jnp.inf, jax.lax.max),
    "avg_pool2d": lambda x: _window(x, 2, 0.0, jax.lax.add) / 4,
    "layer_norm": lambda x, w, b: (
        (x - x.mean(axis=(1, 2), keepdims=True))
        / jnp.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-5)
        * w
    ),
    "einsum": lambda operands: jnp.einsum("ij,jk,kl->il", *operands),
    "vector_norm": jnp.linalg.vector_norm,
    "mse_loss": lambda a, b: jnp.mean((a - b) ** 2),
    "embedding": lambda indices, weight: weight[indices],
    "index_select": lambda x, indices: jnp.take(x, indices, axis=0),
    "slice": lambda x: x[1:4],
    "topk": lambda x: jax.lax.top_k(x, 3)[0],
    "cross_entropy": lambda logits, target, weight: jnp.where(
        target == 0,
        0.0,
        -jnp.take_along_axis(jax.nn.log_softmax(logits), target[..., None], -1)[..., 0],
    ),
    "scaled_dot_product_attention": lambda q, k, v, mask: (
        jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / 2.0, axis=-1) @ v
    ),
}

#: Ops whose jax.numpy function by the same name differs from ctensor's in its attributes.
_NOT_THE_SAME = {"astype", "put_along_axis", "repeat", "tile"}


def _references() -> list[str]:
    return sorted(
        name
        for name in DIFFERENTIABLE
        if name in _WRITTEN
        or name not in _NOT_THE_SAME
        and (hasattr(jnp, name) or hasattr(jax.nn, name))
    )


def test_the_reference_set_is_broad():
    assert len(_references()) >= 80


@pytest.mark.parametrize("name", _references())
def test_grad_matches_jax_numpy(name: str):
    function, inputs, places, cotangents = _setup(name)
    leaves = _leaves(inputs, places)
    reference = _WRITTEN.get(name) or _jnp_reference(name)

    def theirs(*leaves):  # noqa: ANN002, ANN202
        values = _with(inputs, places, leaves)
        result = _flat_outputs(reference(*[None if v is None else v for v in values]))
        return tuple(result[: len(cotangents)])

    ours_out = function(*leaves)
    their_out = theirs(*leaves)
    for a, b in zip(ours_out, their_out, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)
    ours = jax.jit(functools.partial(_vjp, function))(leaves, cotangents)
    want = _vjp(theirs, leaves, cotangents)
    for (i, k), a, b in zip(places, ours, want, strict=True):
        np.testing.assert_allclose(
            np.asarray(a), np.asarray(b), rtol=1e-8, atol=1e-10, err_msg=f"input {i} {k}"
        )


# ---------------------------------------------------------------------------------------------
# Behaviours.


def _x(*shape: int, seed: int = 0) -> jax.Array:
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def test_integer_inputs_get_float0_cotangents():
    logits, target = _x(4, 5), jnp.array([0, 3, 1, 4])
    grads = jax.grad(cj.cross_entropy, argnums=(0, 1), allow_int=True)(logits, target)
    assert grads[1].dtype == jax.dtypes.float0 and grads[1].shape == (4,)
    want = jax.grad(
        lambda x: -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(x), target[:, None], 1))
    )(logits)
    np.testing.assert_allclose(grads[0], want, rtol=1e-12)


def test_an_op_without_a_gradient_raises_when_differentiated_only():
    x = _x(3, 4)
    # made, called and jitted without complaint
    np.testing.assert_array_equal(jax.jit(cj.floor)(x), np.floor(np.asarray(x)))
    with pytest.raises(
        ctensor.autodiff.NotDifferentiableError, match="floor is not differentiable"
    ):
        jax.grad(lambda x: cj.sum(cj.floor(x)))(x)
    with pytest.raises(ctensor.autodiff.NotDifferentiableError, match="floor"):
        jax.jit(jax.grad(lambda x: cj.sum(cj.floor(x))))(x)


def test_integer_results_differentiate_to_zero_as_jax_argmax_does():
    x = _x(3, 4)

    def loss(x):  # noqa: ANN001, ANN202
        return cj.sum(x) + cj.sum(cj.argmax(x, axis=1).astype(x.dtype))

    np.testing.assert_array_equal(jax.grad(loss)(x), np.ones((3, 4)))


def test_value_and_grad_under_jit_matches_jax_numpy():
    x, w, b = _x(5, 3), _x(4, 3, seed=1), _x(4, seed=2)

    def ours(w, b):  # noqa: ANN001, ANN202
        return cj.sum(cj.tanh(cj.linear(x, w, b)))

    def theirs(w, b):  # noqa: ANN001, ANN202
        return jnp.sum(jnp.tanh(x @ w.T + b))

    value, grads = jax.jit(jax.value_and_grad(ours, argnums=(0, 1)))(w, b)
    want_value, want = jax.value_and_grad(theirs, argnums=(0, 1))(w, b)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    for a, e in zip(grads, want, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-10)


@pytest.mark.parametrize(
    ("name", "ours", "theirs"),
    [
        ("sin (broadcast)", lambda x: cj.sum(cj.sin(x)), lambda x: jnp.sum(jnp.sin(x))),
        (
            "softmax (sequential)",
            lambda x: cj.sum(cj.softmax(x, axis=-1) * x),
            lambda x: jnp.sum(jax.nn.softmax(x, axis=-1) * x),
        ),
        (
            "matmul (sequential)",
            lambda x: cj.sum(cj.matmul(x, x.T)),
            lambda x: jnp.sum(x @ x.T),
        ),
    ],
)
def test_vmap_of_grad_matches_a_loop(name, ours, theirs):  # noqa: ANN001
    xs = _x(3, 4, 5)
    batched = jax.jit(jax.vmap(jax.grad(ours)))(xs)
    for k in range(3):
        np.testing.assert_allclose(batched[k], jax.grad(ours)(xs[k]), rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(batched[k], jax.grad(theirs)(xs[k]), rtol=1e-10, err_msg=name)


def test_grad_of_grad_runs_the_backward_ops_gradients():
    x = _x(6)
    # sin's program (cos, multiply) is made of differentiable ops; the sums are jax's, since
    # ctensor's sum_backward has no gradient of its own
    second = jax.grad(lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(cj.sin(y)))(x)))(x)
    np.testing.assert_allclose(second, -np.sin(np.asarray(x)), rtol=1e-12)


def test_variadic_absent_and_scalar_inputs():
    a, b = _x(2, 3), _x(4, 3, seed=1)
    grads = jax.grad(lambda xs: cj.sum(cj.square(cj.concat(xs, axis=0))))([a, b])
    np.testing.assert_allclose(grads[0], 2 * a, rtol=1e-12)
    np.testing.assert_allclose(grads[1], 2 * b, rtol=1e-12)
    x, w = _x(1, 2, 5, 5), _x(3, 2, 3, 3, seed=1)
    grad_w = jax.grad(lambda w: cj.sum(cj.conv2d(x, w)))(w)  # no bias
    want = jax.grad(lambda w: jnp.sum(jax.lax.conv(x, w, (1, 1), "VALID", precision="highest")))(w)
    np.testing.assert_allclose(grad_w, want, rtol=1e-10)
    np.testing.assert_allclose(jax.grad(lambda x: cj.sum(cj.multiply(x, 2.5)))(a), 2.5 + 0 * a)
    # a Python scalar stays weakly typed (a constant of the custom VJP): float32 stays float32
    a32 = a.astype(jnp.float32)
    product = jax.jit(lambda x: cj.multiply(x, 2.5))(a32)
    assert product.dtype == jnp.float32
    grad = jax.jit(jax.grad(lambda x: jnp.sum(cj.multiply(x, 2.5))))(a32)
    assert grad.dtype == jnp.float32
    np.testing.assert_array_equal(grad, np.full((2, 3), 2.5, np.float32))


def test_cotangents_take_their_inputs_dtype():
    x32, x64 = _x(3).astype(jnp.float32), _x(3, seed=1)
    g32, g64 = jax.grad(lambda a, b: cj.sum(cj.multiply(a, b)), argnums=(0, 1))(x32, x64)
    assert g32.dtype == jnp.float32 and g64.dtype == jnp.float64
    np.testing.assert_allclose(g32, np.asarray(x64).astype(np.float32), rtol=1e-7)


def test_dropout_gradient_uses_the_mask_the_forward_drew():
    x = _x(8, 16)
    out, mask = cj.dropout(x, p=0.5, seed=3, offset=7)
    grad = jax.jit(jax.grad(lambda x: cj.sum(cj.dropout(x, p=0.5, seed=3, offset=7)[0] * 3.0)))(x)
    np.testing.assert_allclose(grad, np.where(np.asarray(mask), 6.0, 0.0))
    assert 0 < int(np.sum(mask)) < mask.size


def test_concrete_calls_skip_the_custom_vjp():
    x = _x(3)
    assert cj.exp.__wrapped__ is not None
    np.testing.assert_allclose(cj.exp(x), np.exp(np.asarray(x)), rtol=1e-15)
    jaxpr = jax.make_jaxpr(jax.grad(lambda x: cj.sum(cj.exp(x))))(x)
    assert "ffi_call" in str(jaxpr)


def test_only_perturbed_inputs_get_their_backward_steps():
    from ctensor.jax.models import model_primitives

    x, w, b = _x(1, 2, 5, 5), _x(3, 2, 3, 3, seed=1), _x(3, seed=2)
    found = model_primitives(jax.grad(lambda w: cj.sum(cj.conv2d(x, w, b))), w)
    assert "ctensor_op:conv2d_backward_weight" in found
    assert "ctensor_op:conv2d_backward_input" not in found
    # a multi-output op with an unused float output and an unused bool one: no zeros built
    found = model_primitives(jax.grad(lambda x: cj.sum(cj.dropout(x, p=0.5, seed=1)[0])), x)
    assert set(found) == {
        "ctensor_op:dropout",
        "ctensor_op:sum",
        "ctensor_op:sum_backward",
        "ctensor_op:dropout_backward",
    }


def test_jacrev_works_and_forward_mode_is_refused_by_jax():
    x = _x(5)
    ours = jax.jacrev(lambda x: cj.softmax(x, axis=0))(x)
    np.testing.assert_allclose(ours, jax.jacrev(jax.nn.softmax)(x), rtol=1e-12, atol=1e-15)
    with pytest.raises(TypeError, match="forward-mode"):
        jax.jvp(lambda x: cj.sin(x), (x,), (x,))


def test_plain_ctensor_ops_calls_differentiate_under_jit():
    # ctensor.ops on tracers runs as ctensor.jax, gradient included
    x = _x(4)
    grad = jax.jit(jax.grad(lambda x: ctensor.ops.sum(ctensor.ops.exp(x))))(x)
    np.testing.assert_allclose(grad, np.exp(np.asarray(x)), rtol=1e-15)
