"""Backend plugins: loading, discovery, backend-selected calls and the example plugin.

Everything is built here against the *installed* package, the way a vendor would build it
(`pkg-config --cflags ctensor`; plugins do not link libctensor): examples/plugin/example_plugin.c
as the plugin "example" and, with -DCT_EXAMPLE_PLANT_FAULTS, as "example-broken"; the variants of
tests/c/plugin_variants.c; and tests/c/test_plugin.c, the C side of these checks.

A loaded plugin stays loaded for the life of its process and its kernels override the built-in
ones, so every Python check that loads one runs in a fresh interpreter (the pytest process never
loads a plugin: the other test files must keep seeing the built-in kernels).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import test_c_api
from test_c_api import STRICT_C, VALGRIND_ARGS, PkgConfig, _build, _describe, _run, _valgrind

import ctensor

# The pkg-config set-up and the scratch directory of test_c_api.py, shared as fixtures.
pkg = test_c_api.pkg
workdir = test_c_api.workdir

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
EXAMPLE = ROOT / "examples" / "plugin" / "example_plugin.c"
VARIANTS_SOURCE = TESTS / "c" / "plugin_variants.c"
TEST_PLUGIN = TESTS / "c" / "test_plugin.c"
VARIANTS = ("abi2", "unavailable", "failing", "wrong_name", "memory", "not_a_plugin")
CC = os.environ.get("CC", "cc")
CXX = os.environ.get("CXX", "g++")
# The directory holding the installed ctensor package, for the subprocesses.
SITE = str(Path(ctensor.__file__).resolve().parent.parent)


@dataclass(frozen=True)
class Plugins:
    directory: Path  # libctensor_example.so and variant_<name>.so
    discover: Path  # the broken example, a bogus .so, a text file
    example: Path
    broken: Path


def _shell_build(pkg: PkgConfig, output: Path, defines: str = "") -> Path:
    """The example plugin, built as its header comment says (through a shell, pkg-config)."""
    command = (
        f"{CC} -shared -fPIC -O2 {defines} -o {shlex.quote(str(output))} "
        f"{shlex.quote(str(EXAMPLE))} $(pkg-config --cflags ctensor)"
    )
    result = subprocess.run(
        command, shell=True, capture_output=True, text=True, env=pkg.env, timeout=600
    )
    assert result.returncode == 0, "build failed\n" + _describe(result)
    return output


@pytest.fixture(scope="module")
def plugins(pkg: PkgConfig, workdir: Path) -> Plugins:
    directory = workdir / "plugins"
    discover = workdir / "discover"
    directory.mkdir(exist_ok=True)
    discover.mkdir(exist_ok=True)
    example = _shell_build(pkg, directory / "libctensor_example.so")
    broken = _shell_build(
        pkg, discover / "libctensor_example_broken.so", "-DCT_EXAMPLE_PLANT_FAULTS"
    )
    for variant in VARIANTS:
        cmd = [
            CC, "-shared", "-fPIC", "-std=c11", *STRICT_C, "-Wno-unused-parameter",
            f"-DVARIANT_{variant.upper()}", str(VARIANTS_SOURCE),
            "-o", str(directory / f"variant_{variant}.so"), *pkg.cflags,
        ]  # fmt: skip
        result = _run(cmd, env=pkg.env)
        assert result.returncode == 0, "build failed\n" + _describe(result)
    (discover / "a_bogus.so").write_text("not a shared module\n")
    (discover / "notes.txt").write_text("not a plugin either\n")
    return Plugins(directory, discover, example, broken)


def _python(code: str, env_extra: dict[str, str] | None = None) -> str:
    """Runs `code` in a fresh interpreter that imports the installed ctensor (and tests/arrays.py)
    and returns its stdout; fails the test with its output when it fails."""
    env = dict(os.environ)
    env.pop("CTENSOR_PLUGIN_PATH", None)
    env["PYTHONPATH"] = os.pathsep.join([SITE, str(TESTS)])
    env["OMP_NUM_THREADS"] = "2"
    env.update(env_extra or {})
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(TESTS),
        timeout=600,
    )
    assert result.returncode == 0, _describe(result)
    return result.stdout


# ----------------------------------------------------------------------------------------------
# Building against the installed headers
# ----------------------------------------------------------------------------------------------


def test_plugin_header_is_installed(pkg: PkgConfig) -> None:
    includes = [Path(f[2:]) for f in pkg.cflags if f.startswith("-I")]
    assert any((d / "ctensor_plugin.h").is_file() for d in includes), pkg.cflags
    assert (Path(ctensor.get_include()) / "ctensor_plugin.h").is_file()


@pytest.mark.parametrize(
    ("compiler", "flags"),
    [
        (CC, ["-std=c11"]),
        (CC, ["-std=c11", "-DCT_EXAMPLE_PLANT_FAULTS"]),
        (CXX, ["-x", "c++", "-std=c++17"]),
    ],
    ids=["c11", "c11-faults", "c++17"],
)
def test_example_compiles_strictly(
    pkg: PkgConfig, workdir: Path, compiler: str, flags: list[str]
) -> None:
    output = workdir / f"strict-{len(flags)}-{Path(compiler).name}.so"
    _build(pkg, EXAMPLE, output, ["-shared", "-fPIC", *STRICT_C, *flags], compiler=compiler)


def test_example_does_not_link_libctensor(plugins: Plugins) -> None:
    for library in (plugins.example, plugins.broken):
        result = _run(["nm", "-D", "--undefined-only", str(library)])
        assert result.returncode == 0, _describe(result)
        undefined = [line.split()[-1] for line in result.stdout.splitlines() if line.strip()]
        assert not [name for name in undefined if name.startswith("ct_")], undefined
        result = _run(["nm", "-D", "--defined-only", str(library)])
        exported = {line.split()[-1] for line in result.stdout.splitlines() if line.strip()}
        assert {"ct_plugin_abi_version", "ct_plugin_init"} <= exported, exported


# ----------------------------------------------------------------------------------------------
# The C side: tests/c/test_plugin.c
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def test_plugin(pkg: PkgConfig, workdir: Path) -> Path:
    return _build(pkg, TEST_PLUGIN, workdir / "test_plugin", ["-std=c11", "-pthread", *STRICT_C])


def _check_tap(result: subprocess.CompletedProcess[str]) -> None:
    failed = "\n".join(line for line in result.stdout.splitlines() if line.startswith("not ok"))
    assert result.returncode == 0, f"plugin checks failed:\n{failed}\n\n" + _describe(result)
    assert "not ok" not in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].startswith("1.."), result.stdout[-2000:]


def test_c_plugin_contract(test_plugin: Path, plugins: Plugins, pkg: PkgConfig) -> None:
    env = {k: v for k, v in pkg.env.items() if k != "CTENSOR_PLUGIN_PATH"}
    _check_tap(_run([str(test_plugin), str(plugins.directory), str(plugins.discover)], env=env))


def test_c_plugin_contract_under_valgrind(
    test_plugin: Path, plugins: Plugins, pkg: PkgConfig
) -> None:
    env = {k: v for k, v in pkg.env.items() if k != "CTENSOR_PLUGIN_PATH"}
    # The installed OpenCL plugin stays without its runtime here: loading PoCL (LLVM) under
    # valgrind reports the dynamic loader's own reads, which are no fault of ctensor's.
    env["CTENSOR_OPENCL_LIBRARY"] = "/nonexistent/libOpenCL.so.1"
    # Likewise the CUDA plugin's cuBLASLt and cuDNN (NVIDIA's wheels, whose RPATH ld.so expands
    # with string reads valgrind flags).
    env["CTENSOR_CUBLASLT_LIBRARY"] = "/nonexistent/libcublasLt.so.13"
    env["CTENSOR_CUDNN_LIBRARY"] = "/nonexistent/libcudnn.so.9"
    command = [str(test_plugin), str(plugins.directory), str(plugins.discover)]
    result = _run([_valgrind(), *VALGRIND_ARGS, *command], env=env)
    _check_tap(result)
    assert "ERROR SUMMARY: 0 errors" in result.stderr, _describe(result)


# ----------------------------------------------------------------------------------------------
# Python: load_backend, backends(), errors
# ----------------------------------------------------------------------------------------------


def test_load_backend_and_backends(plugins: Plugins) -> None:
    d = plugins.directory
    _python(f"""
        import dataclasses
        import ctensor

        installed = [b.name for b in ctensor.backends()]  # cpu, then the package's plugins
        cpu = ctensor.backends()[0]
        assert dataclasses.is_dataclass(cpu)
        assert (cpu.name, cpu.path, cpu.state, cpu.reason) == ("cpu", None, "loaded", ""), cpu
        assert (cpu.device_type, cpu.device_count) == ("cpu", 1), cpu
        assert cpu.version == ctensor.__version__ and cpu.abi_version == "1.0", cpu

        info = ctensor.load_backend({str(plugins.example)!r})
        assert isinstance(info, ctensor.BackendInfo)
        assert (info.name, info.version, info.state) == ("example", "1.0.0", "loaded"), info
        assert (info.device_type, info.device_count, info.abi_version) == ("cpu", 1, "1.0"), info
        assert info.path == {str(plugins.example)!r} and info.reason == "", info
        again = ctensor.load_backend({str(d / "." / "libctensor_example.so")!r})
        assert again == info, again
        assert [b.name for b in ctensor.backends()] == installed + ["example"]

        try:
            ctensor.load_backend({str(d / "variant_abi2.so")!r})
        except ctensor.ABIMismatchError as e:
            assert "2.0" in str(e) and "1.0" in str(e), e
        else:
            raise AssertionError("a plugin for plugin ABI 2.0 was accepted")
        try:
            ctensor.load_backend({str(d / "variant_unavailable.so")!r})
        except ctensor.BackendUnavailableError as e:
            assert "TESTDEV" in str(e) and e.status_name == "CT_ERROR_BACKEND_UNAVAILABLE", e
        else:
            raise AssertionError("an unavailable plugin loaded")
        try:
            ctensor.load_backend({str(d / "variant_failing.so")!r})
        except ctensor.BackendError as e:
            assert "could not set up its pools" in str(e), e
        else:
            raise AssertionError("a failing plugin loaded")
        try:
            ctensor.load_backend({str(d / "missing.so")!r})
        except ctensor.BackendError as e:
            assert "missing.so" in str(e), e
        else:
            raise AssertionError("a missing file loaded")

        rows = {{b.name: b for b in ctensor.backends()}}
        assert rows["variant_abi2.so"].state == "failed", rows
        assert rows["variant_abi2.so"].abi_version == "2.0", rows
        assert rows["unavailable-test"].state == "unavailable", rows
        assert "libtestdev.so.1" in rows["unavailable-test"].reason, rows
        assert rows["failing-test"].state == "failed", rows
        assert rows["missing.so"].state == "failed", rows
        assert "failing-test" not in str(ctensor.op_info("add")), "a failed plugin's kernels"
        print("done")
    """)


def test_backend_unavailable_error_is_in_the_one_table() -> None:
    from ctensor._lib import lib

    status = lib.CT_ERROR_BACKEND_UNAVAILABLE
    assert ctensor.STATUS_TO_ERROR[status] is ctensor.BackendUnavailableError
    assert issubclass(ctensor.BackendUnavailableError, ctensor.CTensorError)
    assert ctensor.BackendUnavailableError("x", status).status_name == (
        "CT_ERROR_BACKEND_UNAVAILABLE"
    )


def test_discovery_at_import(plugins: Plugins, workdir: Path) -> None:
    """CTENSOR_PLUGIN_PATH at import: good, failing, unavailable and foreign files; the import
    never fails and backends() says what became of each."""
    extra = workdir / "discover-more"
    extra.mkdir(exist_ok=True)
    for variant in ("unavailable", "abi2", "failing"):
        shutil.copy(plugins.directory / f"variant_{variant}.so", extra / f"variant_{variant}.so")
    search = os.pathsep.join([str(plugins.discover), "/does/not/exist", "", str(extra)])
    out = _python(
        """
        import numpy as np
        import ctensor

        rows = {b.name: b for b in ctensor.backends()}
        assert rows["example-broken"].state == "loaded", rows
        assert rows["a_bogus.so"].state == "failed" and rows["a_bogus.so"].reason, rows
        assert rows["unavailable-test"].state == "unavailable", rows
        assert rows["variant_abi2.so"].state == "failed", rows
        assert rows["failing-test"].state == "failed", rows
        assert "notes.txt" not in str(rows)
        # The discovered plugin is the newest kernel for int32 add, and it is off by one.
        a = np.arange(4, dtype=np.int32)
        assert ctensor.ops.add(a, a).tolist() == [1, 3, 5, 7]
        assert ctensor.ops.add(a, a, backend="cpu").tolist() == [0, 2, 4, 6]
        print(",".join(b.name for b in ctensor.backends()))
        """,
        {"CTENSOR_PLUGIN_PATH": search},
    )
    names = out.strip().split(",")
    assert names[:3] == ["cpu", "a_bogus.so", "example-broken"], names


def test_import_without_plugins_sees_only_cpu() -> None:
    # Besides the CPU backend, only the plugins installed with the package (ctensor-plugins/
    # beside libctensor, such as the OpenCL backend) are discovered.
    out = _python("""
        import os, ctensor
        rows = ctensor.backends()
        installed = os.path.join(ctensor.get_lib_dir(), "ctensor-plugins")
        assert rows[0].name == "cpu", rows
        assert all(os.path.dirname(b.path) == installed for b in rows[1:]), rows
        print("ok")
    """)
    assert out.strip() == "ok"


# ----------------------------------------------------------------------------------------------
# Python: backend= per call runs the named backend's kernel
# ----------------------------------------------------------------------------------------------


def test_backend_keyword_picks_the_kernel(plugins: Plugins) -> None:
    _python(f"""
        import numpy as np
        import ctensor

        ctensor.load_backend({str(plugins.broken)!r})
        a = np.arange(5, dtype=np.int32)
        right, wrong = (a + a).tolist(), (a + a + 1).tolist()
        assert ctensor.ops.add(a, a, backend="example-broken").tolist() == wrong
        assert ctensor.ops.add(a, a, backend="cpu").tolist() == right
        assert ctensor.ops.add(a, a).tolist() == wrong  # the newest kernel wins
        out = np.zeros(5, np.int32)
        assert ctensor.ops.add(a, a, out=out, backend="cpu") is out and out.tolist() == right
        ctensor.ops.add(a, a, out=out, backend="example-broken")
        assert out.tolist() == wrong

        ctensor.load_backend({str(plugins.example)!r})
        assert ctensor.ops.add(a, a).tolist() == right  # now "example" is the newest
        assert ctensor.ops.add(a, a, backend="example-broken").tolist() == wrong

        try:
            ctensor.ops.add(a, a, backend="nope")
        except ctensor.UnsupportedDeviceError as e:
            assert "nope" in str(e), e
        else:
            raise AssertionError("an unknown backend ran")
        try:
            ctensor.ops.add(a.astype(np.int16), a.astype(np.int16), backend="example")
        except ctensor.UnsupportedDTypeError as e:
            assert "example" in str(e), e
        else:
            raise AssertionError("the example has no int16 add, yet it ran")
        try:
            ctensor.ops.add(a, a, backend=1)
        except ctensor.InvalidArgumentError as e:
            assert "backend" in str(e), e
        else:
            raise AssertionError("backend=1 was accepted")
        print("done")
    """)


def test_example_kernels_are_right(plugins: Plugins) -> None:
    """The example's kernels (backend="example") against NumPy: broadcasting, strides, sum with
    its workspace, nonzero through the allocator."""
    _python(f"""
        import numpy as np
        import ctensor
        from arrays import assert_close

        ctensor.load_backend({str(plugins.example)!r})
        rng = np.random.default_rng(0)
        ops = ctensor.ops
        for dtype in ("float32", "float64", "int32"):
            x = (rng.standard_normal((3, 4)) * 10).astype(dtype)
            y = (rng.standard_normal((4,)) * 10).astype(dtype)
            xt = x.T[::-1]  # negative and transposed strides
            assert_close(ops.add(x, y, backend="example"), x + y, dtype)
            assert_close(ops.multiply(xt, xt, backend="example"), xt * xt, dtype)
            assert_close(ops.relu(xt, backend="example"), np.maximum(xt, 0), dtype)
            expected_sum = x.sum(axis=1, dtype=np.int64 if dtype == "int32" else dtype)
            assert_close(ops.sum(x, axis=1, backend="example"), expected_sum, dtype)
            total = ops.sum(xt, axis=None, keepdims=True, backend="example")
            assert total.shape == (1, 1), total.shape
            assert_close(total[0, 0], x.astype(np.float64).sum(), dtype)
            z = x * (rng.random((3, 4)) < 0.5)
            got = ops.nonzero(z[:, ::-1], backend="example")
            want = np.nonzero(z[:, ::-1])
            assert len(got) == 2 and all(np.array_equal(g, w) for g, w in zip(got, want))
        special = np.array([np.nan, -0.0, -1.0, 2.0], np.float32)
        relu = ops.relu(special, backend="example")
        assert np.isnan(relu[0]) and relu[1] == 0 and not np.signbit(relu[1]), relu
        print("done")
    """)


def test_planted_faults(plugins: Plugins) -> None:
    """The broken build misbehaves exactly as planted; the same cases pass on "example"."""
    _python(f"""
        import numpy as np
        import ctensor

        ctensor.load_backend({str(plugins.example)!r})
        ctensor.load_backend({str(plugins.broken)!r})
        ops = ctensor.ops

        # (a) a wrong result for int32 add only
        for dtype in ("float32", "float64", "int32"):
            a = np.arange(6, dtype=dtype)
            got = ops.add(a, a, backend="example-broken")
            if dtype == "int32":
                assert got.tolist() == (a + a + 1).tolist(), got
            else:
                assert np.array_equal(got, a + a), (dtype, got)
            assert np.array_equal(ops.add(a, a, backend="example"), a + a), dtype

        # (b) relu on float32 writes one element past its output (a guard element here)
        x = np.array([-1, 2, -3, 4, 5], np.float32)
        for backend, dtype, spoiled in (("example-broken", "float32", True),
                                        ("example-broken", "float64", False),
                                        ("example", "float32", False)):
            buffer = np.full(6, 123, dtype)
            result = ops.relu(x.astype(dtype), out=buffer[:5], backend=backend)
            assert result.tolist() == [0, 2, 0, 4, 5], result
            assert (buffer[5] != 123) == spoiled, (backend, dtype, buffer)

        # (c) nonzero on float64 asks the allocator for a buffer it never hands back
        z = np.array([[0, 1], [2, 0]])
        for dtype in ("float32", "int32"):
            got = ops.nonzero(z.astype(dtype), backend="example-broken")
            assert [g.tolist() for g in got] == [[0, 1], [1, 0]], got
        try:
            ops.nonzero(z.astype("float64"), backend="example-broken")
        except ctensor.BackendError as e:
            assert "allocated outputs [0, 1, 2] of 2" in str(e), e
        else:
            raise AssertionError("the stray allocation went unnoticed")
        got = ops.nonzero(z.astype("float64"), backend="example")
        assert [g.tolist() for g in got] == [[0, 1], [1, 0]], got
        print("done")
    """)


def test_python_m_ctensor_lists_backends(plugins: Plugins) -> None:
    search = os.pathsep.join(
        [str(plugins.discover), str(plugins.directory / "variant_unavailable.so")]
    )
    out = _python(
        "from ctensor.__main__ import summary; print(summary())",
        {"CTENSOR_PLUGIN_PATH": search},
    )
    assert "  cpu " in out and "(built in): loaded; cpu x1" in out, out
    assert f"example-broken 1.0.0+planted-faults ({plugins.broken}): loaded; cpu x1" in out, out
    assert "unavailable-test 0.0.1" in out and "unavailable: no TESTDEV device" in out, out
    assert "a_bogus.so" in out and "failed: cannot open plugin" in out, out


def test_discovery_beside_the_library(plugins: Plugins, workdir: Path) -> None:
    """Plugins in the `ctensor-plugins` directory beside libctensor load at import (checked on a
    copy of the installed package, so that the installation itself is left alone)."""
    copy = workdir / "package-copy"
    package = copy / "ctensor"
    if not package.exists():
        shutil.copytree(Path(ctensor.__file__).resolve().parent, package)
    plugin_dir = package / "lib"  # where libctensor is (ctensor.get_lib_dir())
    (plugin_dir / "ctensor-plugins").mkdir(exist_ok=True)
    shutil.copy(plugins.example, plugin_dir / "ctensor-plugins" / "libctensor_example.so")
    out = _python(
        f"""
        import ctensor

        assert ctensor.__file__.startswith({str(package)!r}), ctensor.__file__
        rows = {{b.name: b for b in ctensor.backends()}}
        assert rows["example"].state == "loaded", rows
        print(rows["example"].path)
        """,
        {"PYTHONPATH": os.pathsep.join([str(copy), SITE, str(TESTS)])},
    )
    assert out.strip().endswith("/ctensor-plugins/libctensor_example.so"), out


def test_backend_keyword_is_documented() -> None:
    assert "backend : str, optional" in ctensor.ops.add.__doc__
    assert "backend : str, optional" in ctensor.ops.nonzero.__doc__


def test_example_agrees_with_the_builtin_backend(plugins: Plugins) -> None:
    """Property test (hypothesis, in the fresh interpreter): on any layout, broadcasting and edge
    values, the example's elementwise kernels give the built-in ones' bits, its nonzero the same
    indices, its sum the float64 reference within tolerance, and no input changes."""
    _python(f"""
        import numpy as np
        from hypothesis import given, settings, strategies as st
        import ctensor
        from arrays import any_layout, assert_close, broadcastable_shapes, snapshot, unchanged

        ctensor.load_backend({str(plugins.example)!r})
        ops = ctensor.ops
        DTYPES = st.sampled_from(["float32", "float64", "int32"])

        def same_bits(a, b):
            assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (a, b)
            if a.dtype.kind == "f":
                assert np.array_equal(np.signbit(a), np.signbit(b)), (a, b)

        @settings(max_examples=60, deadline=None)
        @given(st.data(), DTYPES, broadcastable_shapes(2), st.sampled_from(["add", "multiply"]))
        def binary(data, dtype, shapes, name):
            x = data.draw(any_layout(dtype, shape=shapes.input_shapes[0]))
            y = data.draw(any_layout(dtype, shape=shapes.input_shapes[1]))
            before = (snapshot(x), snapshot(y))
            op = getattr(ops, name)
            same_bits(op(x, y, backend="example"), op(x, y, backend="cpu"))
            assert unchanged(x, before[0]) and unchanged(y, before[1])

        @settings(max_examples=40, deadline=None)
        @given(st.data(), DTYPES)
        def unary(data, dtype):
            x = data.draw(any_layout(dtype))
            same_bits(ops.relu(x, backend="example"), ops.relu(x, backend="cpu"))
            if x.ndim:
                got = ops.nonzero(x, backend="example")
                want = ops.nonzero(x, backend="cpu")
                assert len(got) == len(want)
                for g, w in zip(got, want):
                    same_bits(g, w)

        @settings(max_examples=40, deadline=None)
        @given(st.data(), DTYPES, st.booleans())
        def reduction(data, dtype, keepdims):
            finite = (
                st.integers(-1000, 1000) if dtype == "int32"
                else st.floats(-1e3, 1e3, width=32 if dtype == "float32" else 64)
            )
            x = data.draw(any_layout(dtype, elements=finite))
            axes = data.draw(st.none() | st.lists(
                st.integers(0, max(x.ndim - 1, 0)), unique=True, max_size=x.ndim
            ))
            got = ops.sum(x, axis=axes, keepdims=keepdims, backend="example")
            want = ops.sum(x, axis=axes, keepdims=keepdims, backend="cpu")
            assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
            axis = None if axes is None else tuple(axes)
            assert_close(got, np.sum(x.astype(np.float64), axis=axis, keepdims=keepdims), dtype)

        binary()
        unary()
        reduction()
        print("done")
    """)
