"""The OpenCL backend's random_uniform, random_normal, random_bernoulli, dropout,
dropout_backward and arange (kernels/opencl/cl_random.c, which compiles kernels/common/philox.h
into its programs) give the CPU backend's bits exactly, for every dtype the device has, any
seed, offset and shape, strided device outputs and inputs; and calls without array arguments
run there through device="opencl:0"."""

from __future__ import annotations

import numpy as np
import pytest
from arrays import kernel_dtypes
from hypothesis import given, settings
from hypothesis import strategies as st
from opencl_arrays import DEVICE, device_like, require_opencl

import ctensor
from ctensor.conformance import philox as ref

FLOATS = ["float16", "float32", "float64"]
SETTINGS = settings(max_examples=15, deadline=None)
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

seeds = st.integers(-(2**63), 2**63 - 1)
offsets = st.one_of(st.integers(0, 8), st.integers(-(2**63), 2**63 - 1))
shapes = st.lists(st.integers(0, 9), min_size=0, max_size=3).map(tuple)


def setup_module() -> None:
    require_opencl()


def same_bits(device, cpu) -> None:  # noqa: ANN001
    assert isinstance(device, ctensor.DeviceArray)
    got, want = np.asarray(device), np.asarray(cpu)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype != bool:
        got, want = got.view(UINT[want.itemsize]), want.view(UINT[want.itemsize])
    np.testing.assert_array_equal(got, want)


def test_declared_dtypes() -> None:
    for op in ["random_uniform", "random_normal", "dropout", "dropout_backward"]:
        assert kernel_dtypes(op, "opencl") == FLOATS, op
    assert kernel_dtypes("arange", "opencl") == ["int32", "int64", *FLOATS]
    assert kernel_dtypes("random_bernoulli", "opencl") == FLOATS  # probs; bool or float out


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(shape=shapes, seed=seeds, offset=offsets, low=st.sampled_from([0.0, -3.0, 1.0]))
def test_uniform_and_normal(dtype, shape, seed, offset, low) -> None:
    kwargs = {"shape": shape, "dtype": dtype, "seed": seed, "offset": offset}
    high = low + (2.5 if low != 1.0 else 0.01)
    same_bits(
        ctensor.ops.random_uniform(**kwargs, low=low, high=high, device=DEVICE),
        ctensor.ops.random_uniform(**kwargs, low=low, high=high),
    )
    same_bits(
        ctensor.ops.random_normal(**kwargs, mean=low, std=2.0, device=DEVICE),
        ctensor.ops.random_normal(**kwargs, mean=low, std=2.0),
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_large_calls_match_the_twin(dtype) -> None:
    n = 100_003
    got = ctensor.ops.random_normal(shape=(n,), dtype=dtype, seed=42, offset=7, device=DEVICE)
    same_bits(got, ref.normal(42, 7, (n,), dtype))
    got = ctensor.ops.random_uniform(shape=(n,), dtype=dtype, seed=42, device=DEVICE)
    same_bits(got, ref.uniform(42, 0, (n,), dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_strided_device_outputs(dtype) -> None:
    want = ctensor.ops.random_uniform(shape=(4, 6), dtype=dtype, seed=8)
    base = np.zeros((4, 12), dtype)
    out = device_like(base[:, ::2])
    ctensor.ops.random_uniform(shape=(4, 6), dtype=dtype, seed=8, out=out)
    same_bits(out, want)
    out = device_like(np.zeros((6, 4), dtype).T)
    ctensor.ops.random_normal(shape=(4, 6), dtype=dtype, seed=8, out=out)
    same_bits(out, ctensor.ops.random_normal(shape=(4, 6), dtype=dtype, seed=8))


@pytest.mark.parametrize("out_dtype", ["bool", *FLOATS])
@pytest.mark.parametrize("probs_dtype", [None, *FLOATS])
def test_bernoulli(out_dtype, probs_dtype) -> None:
    shape = (5, 7)
    if probs_dtype is None:
        kwargs = {"shape": shape, "p": 0.3, "seed": 3, "offset": 1, "dtype": out_dtype}
        same_bits(
            ctensor.ops.random_bernoulli(**kwargs, device=DEVICE),
            ctensor.ops.random_bernoulli(**kwargs),
        )
        return
    probs = np.random.default_rng(1).uniform(-0.2, 1.2, (2, 5, 7))[:, :, ::-1][1]
    probs = probs.astype(probs_dtype)
    same_bits(
        ctensor.ops.random_bernoulli(device_like(probs), seed=9, dtype=out_dtype),
        ctensor.ops.random_bernoulli(probs, seed=9, dtype=out_dtype),
    )
    row = probs[0]  # broadcast along the leading dimension
    same_bits(
        ctensor.ops.random_bernoulli(device_like(row), shape=shape, seed=9, dtype=out_dtype),
        ctensor.ops.random_bernoulli(row, shape=shape, seed=9, dtype=out_dtype),
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("p", "training"), [(0.5, True), (0.0, True), (1.0, True), (0.3, False)])
@pytest.mark.parametrize("layout", ["compact", "strided", "transposed"])
def test_dropout_and_backward(dtype, p, training, layout) -> None:
    base = np.random.default_rng(4).standard_normal((6, 10)).astype(dtype)
    x = {"compact": base, "strided": base[:, ::2], "transposed": base.T}[layout]
    kwargs = {"p": p, "seed": 11, "offset": 2, "training": training}
    out, mask = ctensor.ops.dropout(device_like(x), **kwargs)
    want_out, want_mask = ctensor.ops.dropout(x, **kwargs)
    same_bits(out, want_out)
    same_bits(mask, want_mask)
    grad = device_like(x[::-1])
    same_bits(
        ctensor.ops.dropout_backward(grad, mask, p=p, training=training),
        ctensor.ops.dropout_backward(x[::-1], want_mask, p=p, training=training),
    )


@pytest.mark.parametrize("dtype", ["int32", "int64", *FLOATS])
@pytest.mark.parametrize(
    "attrs",
    [
        {"start": -5, "stop": 20, "step": 3},
        {"start": 10},
        {"start": 5, "stop": -6, "step": -2},
        {"start": 0.5, "stop": 9.3, "step": 0.7},
        {"start": 0, "stop": 70000},
    ],
)
def test_arange(dtype, attrs) -> None:
    if dtype.startswith("int") and attrs["start"] != int(attrs["start"]):
        return
    same_bits(
        ctensor.ops.arange(**attrs, dtype=dtype, device=DEVICE),
        ctensor.ops.arange(**attrs, dtype=dtype),
    )
