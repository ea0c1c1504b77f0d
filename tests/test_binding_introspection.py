"""Introspection: list_ops, op_info, generated signatures and docstrings, versions, threads, and
the `python -m ctensor` / `ctensor-config` entry points."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys

import pytest

import ctensor
from ctensor import ops
from ctensor._lib import ffi, lib
from ctensor._registry import registry_json

EXPECTED_OPS = {
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "pow",
    "negative",
    "abs",
    "exp",
    "log",
    "sqrt",
    "tanh",
    "sigmoid",
    "relu",
    "equal",
    "less",
    "greater",
    "where",
    "astype",
    "sum",
    "mean",
    "max",
    "argmax",
    "matmul",
    "softmax",
    "permute_dims",
    "conv2d",
    "nonzero",
    "unique_values",
    "boolean_mask",
}
DTYPE_ORDER = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def test_list_ops_is_sorted_and_complete():
    names = ctensor.list_ops()
    assert names == sorted(names)
    assert set(names) >= EXPECTED_OPS
    assert set(names) == {op["name"] for op in registry_json()["ops"]}


def test_every_op_is_a_function_in_ctensor_ops():
    for name in ctensor.list_ops():
        function = getattr(ops, name)
        assert callable(function) and function.__name__ == name
        assert name in dir(ops)
    from ctensor.ops import add  # noqa: F401


def test_op_info_conv2d():
    info = ctensor.op_info("conv2d")
    assert info["name"] == "conv2d"
    assert info["category"] == "workspace"
    assert [p["name"] for p in info["inputs"]] == ["input", "weight", "bias"]
    assert [p["optional"] for p in info["inputs"]] == [False, False, True]
    attrs = {a["name"]: a for a in info["attrs"]}
    assert set(attrs) == {"stride", "padding", "dilation", "groups"}
    assert attrs["stride"]["type"] == "int_list"
    assert attrs["groups"]["type"] == "int" and attrs["groups"]["default"] == 1
    for attr in attrs.values():
        assert {"name", "type", "default", "required", "nullable", "doc"} <= set(attr)
    assert "float32" in info["dtypes"]["cpu"]
    assert info["devices"][0] == "cpu"  # then each loaded plugin device (opencl with PoCL)
    for signature in info["signatures"]["cpu"]:
        assert len(signature) == 4  # input, weight, bias, output


def test_op_info_fields_for_every_op():
    for name in ctensor.list_ops():
        info = ctensor.op_info(name)
        assert info["category"] in ("shape_static", "workspace", "dynamic")
        assert set(info["flags"]) <= {
            "elementwise",
            "broadcasting",
            "inplace",
            "deterministic",
            "graph_safe",
        }
        assert info["doc"]
        for device, dtypes in info["dtypes"].items():
            assert dtypes == sorted(dtypes, key=DTYPE_ORDER.index)
            firsts = {s[0] for s in info["signatures"][device]}
            assert set(dtypes) == firsts


def test_op_info_of_dynamic_and_nullable():
    nonzero = ctensor.op_info("nonzero")
    assert nonzero["category"] == "dynamic"
    assert nonzero["outputs"][0]["variadic"] is True
    axis = {a["name"]: a for a in ctensor.op_info("sum")["attrs"]}["axis"]
    assert axis["nullable"] is True and axis["default"] is None
    assert ctensor.op_info("where")["dtypes"]["cpu"] == ["bool"]


def test_op_info_is_a_fresh_copy():
    info = ctensor.op_info("add")
    info["inputs"].clear()
    info["attrs"].append("junk")
    assert len(ctensor.op_info("add")["inputs"]) == 2


def test_op_info_errors():
    with pytest.raises(ctensor.UnknownOpError):
        ctensor.op_info("no_such_op")
    with pytest.raises(TypeError):
        ctensor.op_info(3)


def test_signatures_from_the_schema():
    sig = inspect.signature(ops.sum)
    params = sig.parameters
    assert params["x"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert params["axis"].kind is inspect.Parameter.KEYWORD_ONLY and params["axis"].default is None
    assert params["keepdims"].default is False
    assert params["out"].default is None
    conv = inspect.signature(ops.conv2d).parameters
    assert conv["bias"].default is None
    assert conv["groups"].default == 1
    assert inspect.signature(ops.permute_dims).parameters["axes"].default is inspect.Parameter.empty


def test_docstrings_from_the_schema():
    info = ctensor.op_info("softmax")
    doc = ops.softmax.__doc__
    assert info["doc"].strip().splitlines()[0] in doc
    assert "axis" in doc and "default -1" in doc
    assert "cpu:" in doc and "float32" in doc
    conv_doc = ops.conv2d.__doc__
    for attr in ctensor.op_info("conv2d")["attrs"]:
        assert attr["name"] in conv_doc
        assert attr["doc"] in conv_doc
    assert "optional" in conv_doc
    assert "tuple of arrays" in ops.nonzero.__doc__


def test_versions():
    text = ffi.string(lib.ct_version_string()).decode()
    assert ctensor.__version__ == text == registry_json()["version"]
    assert ctensor.abi_version() == ctensor.ABI_VERSION
    assert list(ctensor.ABI_VERSION) == registry_json()["abi_version"]
    major, minor = ctensor.abi_version()
    assert lib.ct_abi_version() == (major << 16) | minor


def test_threads_setting():
    before = ctensor.get_num_threads()
    assert before >= 1
    try:
        ctensor.set_num_threads(1)
        assert ctensor.get_num_threads() == 1
        ctensor.set_num_threads(0)
        assert ctensor.get_num_threads() >= 1
    finally:
        ctensor.set_num_threads(before)


def _run(*args: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "ctensor", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return completed.stdout


def test_python_m_ctensor_summary():
    out = _run()
    assert ctensor.__version__ in out
    assert "ABI version: {}.{}".format(*ctensor.abi_version()) in out
    assert f"threads: {ctensor.get_num_threads()}" in out
    lines = out.splitlines()
    for name in ctensor.list_ops():
        row = next(line for line in lines if line.split()[:1] == [name])
        assert ctensor.op_info(name)["category"] in row


def test_python_m_ctensor_directories():
    pc_dir = _run("--pkgconfigdir").strip()
    assert os.path.isfile(os.path.join(pc_dir, "ctensor.pc"))
    assert pc_dir == ctensor.get_pkgconfig_dir()
    include = _run("--includedir").strip()
    assert os.path.isfile(os.path.join(include, "ctensor.h"))
    libdir = _run("--libdir").strip()
    assert any(f.startswith("libctensor") for f in os.listdir(libdir))


def test_markdown_ops_table():
    out = _run("--markdown-ops").strip().splitlines()
    assert out[0].startswith("| op | category | inputs | attributes | dtypes")
    rows = out[2:]
    assert len(rows) == len(ctensor.list_ops())
    conv = next(r for r in rows if r.startswith("| `conv2d`"))
    assert "workspace" in conv and "bias?" in conv and "groups" in conv
    assert all(r.count("|") >= 7 for r in rows)


def test_ctensor_config(capsys):
    from ctensor.__main__ import config_main

    assert config_main(["--pkgconfigdir"]) == 0
    assert capsys.readouterr().out.strip() == ctensor.get_pkgconfig_dir()
    assert config_main(["--libs"]) == 0
    assert "-lctensor" in capsys.readouterr().out
    # The console script pip installed beside this interpreter (PATH may hold another install's).
    script = shutil.which("ctensor-config", path=os.path.dirname(sys.executable))
    if script is not None:
        out = subprocess.run(
            [script, "--includedir"], capture_output=True, text=True, check=True
        ).stdout
        assert out.strip() == ctensor.get_include()


def test_registry_json_is_valid_json_with_every_op():
    length = ffi.new("size_t*")
    assert lib.ct_op_schema_json(ffi.NULL, ffi.NULL, 0, length) == 0
    buffer = ffi.new("char[]", length[0] + 1)
    assert lib.ct_op_schema_json(ffi.NULL, buffer, length[0] + 1, length) == 0
    data = json.loads(ffi.string(buffer).decode())
    assert {op["name"] for op in data["ops"]} == set(ctensor.list_ops())


def test_wrapper_generation_for_variadic_and_optional_inputs(monkeypatch):
    """No registered op has a variadic input yet (concat will): generate one from a schema."""
    from ctensor import _ops
    from ctensor._registry import OpSpec

    spec = object.__new__(OpSpec)
    spec.name = "concat"
    spec.doc = "Joins arrays along an axis."
    spec.category = "shape_static"
    spec.flags = ("deterministic",)
    spec.inputs = [
        {"name": "prefix", "doc": "first", "optional": False, "variadic": False},
        {"name": "lambda", "doc": "a keyword", "optional": True, "variadic": False},
        {"name": "arrays", "doc": "the rest", "optional": False, "variadic": True},
    ]
    spec.outputs = [{"name": "out", "doc": "joined", "optional": False, "variadic": False}]
    spec.attrs = [
        {
            "name": "axis",
            "doc": "where",
            "type": "int",
            "required": False,
            "nullable": False,
            "default": 0,
        }
    ]
    spec.kernels = {"cpu": [("float32", "float32", "float32", "float32")]}
    spec.variadic_input = True
    spec.variadic_output = False
    spec.num_fixed_inputs = 2
    spec.num_required_inputs = 1
    spec.is_dynamic = False
    calls = []
    monkeypatch.setattr(_ops, "call", lambda *args: calls.append(args) or "done")
    function = _ops.make_op(spec)
    assert function("p", ["a", "b", "c"], axis=1) == "done"
    assert calls[-1] == (spec, ("p", None, "a", "b", "c"), None, {"axis": 1})
    function("p", ("a",), lambda_="k", out="o")
    assert calls[-1] == (spec, ("p", "k", "a"), "o", {})
    params = inspect.signature(function).parameters
    assert list(params) == ["prefix", "arrays", "lambda_", "out", "axis"]
    assert params["axis"].default == 0
    assert "sequence of arrays" in function.__doc__
