"""JAX arrays in, JAX arrays out: results are allocated by NumPy (64-byte aligned) and adopted
by JAX without a copy; JAX arrays are immutable, so they are refused as out=. Runs where JAX is
installed (it is not a test dependency of the package yet)."""

from __future__ import annotations

import numpy as np
import pytest

import ctensor
from ctensor import ops

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def test_jax_in_jax_out():
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    result = ops.add(x, x)
    assert isinstance(result, jax.Array)
    np.testing.assert_array_equal(np.asarray(result), np.asarray(x) * 2)


def test_jax_bfloat16_results():
    x = jnp.arange(4, dtype=jnp.bfloat16)
    result = ops.add(x, 2.5)
    assert result.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(result, np.float32), np.arange(4) + 2.5)


def test_jax_promotion_and_dynamic_ops():
    assert ops.sqrt(jnp.arange(4, dtype=jnp.int8)).dtype == jnp.float16
    rows, cols = ops.nonzero(jnp.array([[0, 1], [1, 0]]))
    np.testing.assert_array_equal(np.asarray(rows), [0, 1])
    np.testing.assert_array_equal(np.asarray(cols), [1, 0])


def test_jax_out_is_refused():
    x = jnp.ones(3)
    with pytest.raises(ctensor.ReadOnlyOutputError):
        ops.add(x, x, out=x)
    np.testing.assert_array_equal(np.asarray(x), np.ones(3))
