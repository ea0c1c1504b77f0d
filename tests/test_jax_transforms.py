"""ctensor.jax beyond one jitted call: vmap (one broadcasting call for elementwise ops, a loop
for the others, as docs/jax.md lists them), functions of several ops against jax.numpy in
float64, FFI attribute kinds, dynamic operators, errors from C, plain ``ctensor.ops`` calls
inside jit and vmap (routed to ctensor.jax), and dtypes with 64-bit types off."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from arrays import assert_close
from torch_cases import all_cases

import ctensor
from ctensor._registry import all_specs, get_spec
from ctensor.torch._arguments import ctensor_attrs

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax
ctensor_jax = pytest.importorskip("ctensor.jax")
from ctensor.jax import _xla  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs" / "jax.md"
ELEMENTWISE = sorted(
    name for name, spec in all_specs().items() if ctensor_jax.vmap_method(spec) == "expand_dims"
)


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def _numpy(value):  # noqa: ANN001, ANN202
    if value is None:
        return None
    return np.array(value.detach().numpy(), order="C")


def _stack_eager(name: str, slices: list[list], attrs: dict) -> list[np.ndarray]:
    """Eager ctensor.ops on each batch element, outputs stacked."""
    results = []
    for args in slices:
        result = getattr(ctensor.ops, name)(*args, **attrs)
        results.append([np.asarray(r) for r in (result if isinstance(result, tuple) else [result])])
    return [np.stack([r[k] for r in results]) for k in range(len(results[0]))]


def _check(actual, expected) -> None:  # noqa: ANN001
    actual = [np.asarray(a) for a in (actual if isinstance(actual, (tuple, list)) else [actual])]
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape
        if a.dtype.kind in "fc":
            assert_close(a, e, str(a.dtype))
        else:
            np.testing.assert_array_equal(a, e)


# ------------------------------------------------------------------------------------------------
# vmap
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_vmap_elementwise_is_one_call(name, x64):
    """Each elementwise op's first case, batched over two elements: once with every input
    batched, once with only the first (the others broadcast or are repeated); one custom call."""
    spec = get_spec(name)
    case = all_cases()[name][0]
    args = [_numpy(a) for a in case.args]
    attrs = ctensor_attrs(spec, case.kwargs)
    present = [i for i, a in enumerate(args) if a is not None]
    second = [None if a is None else (a[::-1].copy() if a.ndim else a) for a in args]

    def run(*arrays):  # noqa: ANN002, ANN202
        full = list(args)
        for i, value in zip(present, arrays, strict=True):
            full[i] = value
        return getattr(ctensor_jax, name)(*full, **attrs)

    batched = [jnp.stack([jnp.asarray(args[i]), jnp.asarray(second[i])]) for i in present]
    jaxpr = jax.make_jaxpr(jax.vmap(run))(*batched)
    assert str(jaxpr).count("ffi_call") == 1 and "while" not in str(jaxpr)
    _check(jax.jit(jax.vmap(run))(*batched), _stack_eager(name, [args, second], attrs))
    if len(present) > 1:
        first_only = [batched[0], *(jnp.asarray(args[i]) for i in present[1:])]
        in_axes = (0,) + (None,) * (len(present) - 1)
        swapped = list(args)
        swapped[present[0]] = second[present[0]]
        mixed = [list(args), swapped]
        _check(
            jax.jit(jax.vmap(run, in_axes=in_axes))(*first_only),
            _stack_eager(name, mixed, attrs),
        )


def test_vmap_elementwise_lines_up_ranks():
    """A batched scalar against an unbatched vector: ranks differ, broadcasting still holds."""
    scalars, vector = jnp.arange(3.0), jnp.arange(4.0)
    result = jax.vmap(ctensor_jax.multiply, in_axes=(0, None))(scalars, vector)
    np.testing.assert_array_equal(np.asarray(result), np.outer(np.arange(3.0), np.arange(4.0)))


@pytest.mark.parametrize(
    ("name", "shapes", "attrs"),
    [
        ("softmax", [(3, 5)], {"axis": -1}),
        ("sum", [(3, 5)], {"axis": 0}),
        ("matmul", [(3, 4), (4, 2)], {}),
        ("conv2d", [(1, 2, 5, 5), (3, 2, 3, 3)], {"padding": 1}),
        ("sort", [(6,)], {}),
        ("concat", [(2, 3), (1, 3)], {"axis": 0}),
    ],
)
def test_vmap_sequential(name, shapes, attrs):
    """Other ops loop over the batch: every input batched, then only the first."""
    rng = np.random.default_rng(3)
    spec = get_spec(name)
    assert ctensor_jax.vmap_method(spec) == "sequential"
    batches = [rng.standard_normal((2, *s)).astype(np.float32) for s in shapes]
    if spec.variadic_input:

        def run(*arrays):  # noqa: ANN002, ANN202
            return getattr(ctensor_jax, name)(list(arrays), **attrs)

        def eager(*arrays):  # noqa: ANN002, ANN202
            return getattr(ctensor.ops, name)(list(arrays), **attrs)
    else:
        run = lambda *arrays: getattr(ctensor_jax, name)(*arrays, **attrs)  # noqa: E731
        eager = lambda *arrays: getattr(ctensor.ops, name)(*arrays, **attrs)  # noqa: E731
    expected = np.stack([np.asarray(eager(*(b[k] for b in batches))) for k in range(2)])
    actual = jax.jit(jax.vmap(run))(*(jnp.asarray(b) for b in batches))
    assert_close(np.asarray(actual), expected, "float32")
    in_axes = (0,) + (None,) * (len(batches) - 1)
    fixed = [b[0] for b in batches[1:]]
    expected = np.stack([np.asarray(eager(batches[0][k], *fixed)) for k in range(2)])
    actual = jax.vmap(run, in_axes=in_axes)(jnp.asarray(batches[0]), *map(jnp.asarray, fixed))
    assert_close(np.asarray(actual), expected, "float32")


def test_docs_list_every_op_with_its_vmap_rule():
    """docs/jax.md's table names each op's batching as vmap_method says."""
    text = DOCS.read_text(encoding="utf-8")
    documented = {}
    for method in ("expand_dims", "broadcast_all", "sequential", "not traceable"):
        match = re.search(rf"^\| `?{method}`? \|(.*)\|$", text, re.MULTILINE)
        assert match, method
        documented[method] = set(re.findall(r"`(\w+)`", match.group(1)))
    for name, spec in all_specs().items():
        method = "not traceable" if spec.is_dynamic else ctensor_jax.vmap_method(spec)
        assert name in documented[method], (name, method)
    assert sum(len(names) for names in documented.values()) == len(all_specs())


# ------------------------------------------------------------------------------------------------
# Several ops in one jitted function; attribute kinds; workspace
# ------------------------------------------------------------------------------------------------


def test_jit_of_several_ops_matches_jax_numpy_in_float64(x64):
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.standard_normal((4, 1, 8, 8)))
    kernel = jnp.asarray(rng.standard_normal((3, 1, 3, 3)))
    bias = jnp.asarray(rng.standard_normal(3))
    dense = jnp.asarray(rng.standard_normal((48, 5)))

    def ours(x, w, b, d):  # noqa: ANN001, ANN202
        h = ctensor_jax.relu(ctensor_jax.conv2d(x, w, b, padding=1))
        h = ctensor_jax.max_pool2d(h, kernel_size=2)
        h = jnp.reshape(h, (4, 48))
        return ctensor_jax.log_softmax(ctensor_jax.matmul(h, d), axis=-1)

    def reference(x, w, b, d):  # noqa: ANN001, ANN202
        h = lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)]) + b[None, :, None, None]
        h = jnp.maximum(h, 0.0)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return jax.nn.log_softmax(h.reshape(4, 48) @ d, axis=-1)

    actual = jax.jit(ours)(images, kernel, bias, dense)
    assert actual.dtype == jnp.float64
    np.testing.assert_allclose(actual, reference(images, kernel, bias, dense), rtol=1e-12)


@pytest.mark.parametrize(
    ("name", "args", "attrs"),
    [
        ("broadcast_to", [np.array(5.0)], {"shape": []}),  # an empty int list
        ("concat", [[np.ones((2, 2)), np.zeros((1, 2))]], {"axis": None}),  # None, not default
        ("astype", [np.arange(4.0)], {"dtype": "int32"}),  # a dtype
        ("gelu", [np.linspace(-2, 2, 5)], {"approximate": "tanh"}),  # a string
        ("interpolate", [np.ones((1, 1, 2, 2))], {"scale_factor": [2.0, 1.5]}),  # a float list
        ("sum", [np.ones((2, 3), np.int32)], {"axis": [0], "keepdims": True}),  # int list, bool
        ("leaky_relu", [np.linspace(-2, 2, 5)], {"negative_slope": 0.25}),  # a float
    ],
)
def test_attribute_kinds_reach_the_kernel(name, args, attrs, x64):
    spec_attrs = {a["name"] for a in get_spec(name).attrs}
    assert set(attrs) <= spec_attrs
    expected = np.asarray(getattr(ctensor.ops, name)(*args, **attrs))
    jax_args = [
        [jnp.asarray(v) for v in a] if isinstance(a, list) else jnp.asarray(a) for a in args
    ]
    actual = jax.jit(lambda *a: getattr(ctensor_jax, name)(*a, **attrs))(*jax_args)
    assert np.asarray(actual).dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(actual), expected)


def test_absent_optional_input_and_workspace():
    """conv2d (a workspace op) with and without its optional bias, jitted."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    assert get_spec("conv2d").has_workspace
    conv = jax.jit(lambda *a: ctensor_jax.conv2d(*a, stride=2))
    assert_close(np.asarray(conv(x, w)), ctensor.ops.conv2d(x, w, stride=2), "float32")
    assert_close(np.asarray(conv(x, w, b)), ctensor.ops.conv2d(x, w, b, stride=2), "float32")


def test_python_scalars_and_bfloat16():
    x = jnp.arange(6, dtype=jnp.bfloat16).reshape(2, 3)
    result = jax.jit(lambda a: ctensor_jax.multiply(ctensor_jax.relu(a), 1.5))(x)
    assert result.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(result), np.asarray(ctensor.ops.multiply(x, 1.5)))
    y = jnp.ones((3, 2), jnp.bfloat16)
    product = jax.jit(ctensor_jax.matmul)(x, y)
    assert product.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(product), np.asarray(ctensor.ops.matmul(x, y)))


# ------------------------------------------------------------------------------------------------
# Dtypes, dynamic operators, errors
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype",
    [
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    ],
)  # fmt: skip
def test_every_xla_element_type_maps_to_its_ctensor_dtype(dtype, x64):
    """XLA's element types reach the kernel as the same ctensor dtype (bindings/python/xla's
    table): multiply under jit matches eager ctensor.ops on the same JAX arrays."""
    x = jnp.asarray(np.arange(1, 7).reshape(2, 3) % 3).astype(dtype)
    y = jnp.asarray(np.arange(3) % 2 + 1).astype(dtype)
    result = jax.jit(ctensor_jax.multiply)(x, y)
    expected = ctensor.ops.multiply(x, y)
    assert result.dtype == expected.dtype == jnp.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(result), np.asarray(expected))


def test_default_dtypes_and_x64_only_outputs():
    """Without 64-bit types: float32 works; an int64 result is refused clearly (JAX would
    narrow it) rather than written into a narrower buffer."""
    x = jnp.arange(6.0).reshape(2, 3)
    assert jax.jit(ctensor_jax.exp)(x).dtype == jnp.float32
    with pytest.raises(ctensor.UnsupportedDTypeError, match="jax_enable_x64"):
        jax.jit(lambda a: ctensor_jax.argmax(a, axis=1))(x)


def test_int64_and_bool_with_x64(x64):
    x = jnp.array([[3, 1, 2], [0, 5, 4]], dtype=jnp.int64)
    index = jax.jit(lambda a: ctensor_jax.argmax(a, axis=1))(x)
    assert index.dtype == jnp.int64
    np.testing.assert_array_equal(np.asarray(index), [0, 1])
    mask = jax.jit(ctensor_jax.logical_and)(x > 1, x < 4)
    assert mask.dtype == jnp.bool_
    np.testing.assert_array_equal(np.asarray(mask), (np.asarray(x) > 1) & (np.asarray(x) < 4))


def test_dynamic_ops_run_eagerly_and_refuse_tracing():
    x = jnp.array([3, 1, 3, 0])
    np.testing.assert_array_equal(np.asarray(ctensor_jax.unique_values(x)), [0, 1, 3])
    (rows,) = ctensor_jax.nonzero(x)
    np.testing.assert_array_equal(np.asarray(rows), [0, 1, 2])
    for function in (ctensor_jax.unique_values, ctensor.ops.unique_values):
        with pytest.raises(ctensor_jax.TracingError, match="dynamic operator"):
            jax.jit(function)(x)
    assert issubclass(ctensor_jax.TracingError, ctensor.CTensorError)


def test_errors_from_c_keep_ctensor_messages():
    """At trace time (ct_op_infer): ctensor's exception class and message; at run time (a
    value only the kernel sees): XLA's error carries ctensor's status and message."""
    with pytest.raises(ctensor.ShapeMismatchError, match="broadcast"):
        jax.jit(ctensor_jax.add)(jnp.ones(3), jnp.ones(4))
    with pytest.raises(ctensor.UnknownAttributeError):
        jax.jit(lambda a: ctensor_jax.relu(a, nonsense=1))(jnp.ones(3))
    take = jax.jit(ctensor_jax.take)
    with pytest.raises(jax.errors.JaxRuntimeError, match="CT_ERROR_INVALID_ARGUMENT.*out of range"):
        take(jnp.ones(4), jnp.array([7])).block_until_ready()
    np.testing.assert_array_equal(np.asarray(take(jnp.arange(4.0), jnp.array([2]))), [2.0])


# ------------------------------------------------------------------------------------------------
# Plain ctensor.ops inside jax transformations (issue 29's "Why")
# ------------------------------------------------------------------------------------------------


def test_ctensor_ops_work_inside_jit_and_vmap():
    """ctensor.ops on tracers used to fail with JAX's ConcretizationTypeError (__dlpack__ of a
    traced array); such calls now run as ctensor.jax's."""
    x = jnp.arange(8.0, dtype=jnp.float32).reshape(2, 4)

    def model(a):  # noqa: ANN001, ANN202
        return ctensor.ops.softmax(ctensor.ops.add(a, 1.0), axis=-1)

    expected = np.asarray(ctensor.ops.softmax(np.asarray(x) + 1.0, axis=-1))
    assert_close(np.asarray(jax.jit(model)(x)), expected, "float32")
    assert_close(np.asarray(jax.vmap(model)(x)), expected, "float32")
    stacked = jax.jit(lambda a: ctensor.ops.concat([a, a], axis=0))(x)
    np.testing.assert_array_equal(np.asarray(stacked), np.concatenate([x, x]))
    with pytest.raises(ctensor.InvalidArgumentError, match="immutable"):
        jax.jit(lambda a: ctensor.ops.exp(a, out=a))(x)
    with pytest.raises(ctensor.InvalidArgumentError, match="backend= and device="):
        jax.jit(lambda a: ctensor.ops.exp(a, backend="cpu"))(x)


def test_eager_ctensor_ops_on_jax_arrays_stay_on_dlpack(monkeypatch):
    """Concrete JAX arrays keep the zero-copy DLPack path: nothing is routed to ctensor.jax."""

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("routed")

    monkeypatch.setattr(ctensor_jax, "exp", refuse)
    x = jnp.arange(4.0)
    np.testing.assert_allclose(np.asarray(ctensor.ops.exp(x)), np.exp(np.arange(4.0)), rtol=1e-6)
    with pytest.raises(AssertionError, match="routed"):
        jax.jit(ctensor.ops.exp)(x)


# ------------------------------------------------------------------------------------------------
# The handler library
# ------------------------------------------------------------------------------------------------


def test_handler_refuses_malformed_calls_with_errors():
    """Custom calls ctensor.jax would never emit (a hand-written ffi_call) fail with an XLA error
    saying why: the handler never aborts."""
    x = jnp.ones(3, jnp.float32)
    one = jax.ShapeDtypeStruct((3,), jnp.float32)

    def raw(attrs: dict) -> None:
        jax.jit(lambda a: jax.ffi.ffi_call(_xla.TARGET, one)(a, **attrs))(x).block_until_ready()

    absent = np.int64(0)
    with pytest.raises(jax.errors.JaxRuntimeError, match="CT_ERROR_UNKNOWN_OP"):
        raw({"__op": "no_such_op", "__absent": absent})
    with pytest.raises(jax.errors.JaxRuntimeError, match="names no operator"):
        raw({"__absent": absent})
    with pytest.raises(jax.errors.JaxRuntimeError, match="unsupported FFI type"):
        raw({"__op": "relu", "__absent": absent, "alpha": np.int32(1)})
    with pytest.raises(jax.errors.JaxRuntimeError, match="dynamic operators"):
        raw({"__op": "unique_values", "__absent": absent})
    with pytest.raises(jax.errors.JaxRuntimeError, match="CT_ERROR_SHAPE_MISMATCH"):
        bad = jax.ShapeDtypeStruct((4,), jnp.float32)
        jax.jit(lambda a: jax.ffi.ffi_call(_xla.TARGET, bad)(a, __op="relu", __absent=absent))(x)
    np.testing.assert_array_equal(np.asarray(jax.jit(ctensor_jax.relu)(x)), np.ones(3))


def test_import_says_when_the_handler_was_not_built():
    """A build without the handler (no jaxlib headers at build time): import ctensor.jax
    raises ImportError saying what is missing and how to get it."""
    code = (
        "import importlib.util as u\n"
        "real = u.find_spec\n"
        "u.find_spec = lambda name, *a: None if name == 'ctensor.jax._xla_handler' "
        "else real(name, *a)\n"
        "try:\n"
        "    import ctensor.jax\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ImportError: ctensor.jax needs ctensor's XLA FFI handler" in done.stdout
    assert "jaxlib" in done.stdout


def test_handler_version_and_missing_build(monkeypatch):
    assert ctensor_jax.api_version()[0] == 0  # XLA FFI API major version of jaxlib's headers
    monkeypatch.setattr(_xla, "_library", None)
    monkeypatch.setattr(_xla, "library_path", lambda: None)
    with pytest.raises(ctensor.BackendUnavailableError, match="XLA FFI handler"):
        _xla.api_version()
