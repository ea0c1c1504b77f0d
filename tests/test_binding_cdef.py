"""The cffi declarations are generated from C headers (capi/ctensor.h, and the binding's
src/dlpack_managed.h and src/ctpy_api.h: the headers are the single source of truth): check the
generator on the real headers and on the constructs it must handle."""

from __future__ import annotations

import importlib.util
import pathlib

import cffi
import pytest

import ctensor
from ctensor._lib import ffi, lib

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEADER = ROOT / "capi" / "ctensor.h"
BUILDER = ROOT / "bindings" / "python" / "build_cffi.py"
SRC = ROOT / "bindings" / "python" / "src"
HEADERS = [HEADER, SRC / "dlpack_managed.h", SRC / "ctpy_api.h"]


@pytest.fixture(scope="module")
def build_cffi():
    spec = importlib.util.spec_from_file_location("build_cffi", BUILDER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_real_header_parses(build_cffi):
    text = HEADER.read_text()
    cdef = build_cffi.cdef_from_header(text)
    assert "CT_API" not in cdef
    assert "#include" not in cdef and "#if" not in cdef and 'extern "C"' not in cdef
    assert "#define CT_MAX_NDIM 64" in cdef
    assert "typedef DLTensor" not in cdef  # the DLPack branch of the header is dropped
    checker = cffi.FFI()
    checker.cdef(cdef)
    assert checker.sizeof("ct_tensor") == ffi.sizeof("ct_tensor")


def test_constructs(build_cffi):
    header = """
    #ifndef X_H_
    #define X_H_
    #include <stdint.h>
    #ifdef __cplusplus
    extern "C" {
    #endif
    #define CT_API __attribute__((visibility("default")))
    #define N_ITEMS 4 /* four */
    #define MASK(x) ((x) << 1)
    #define NAME "text"
    #if defined(DLPACK_DLPACK_H_)
    typedef DLTensor thing;
    #else
    typedef struct thing { int a[N_ITEMS]; } thing;
    #endif
    CT_API int use(thing* t); // trailing comment
    #ifdef __cplusplus
    }
    #endif
    #endif
    """
    cdef = build_cffi.cdef_from_header(header)
    assert "#define N_ITEMS 4" in cdef
    assert "MASK" not in cdef and "NAME" not in cdef and "DLTensor" not in cdef
    assert "int use(thing* t);" in cdef
    cffi.FFI().cdef(cdef)


def test_compiled_module_matches_the_header_version():
    assert (lib.CT_ABI_VERSION_MAJOR, lib.CT_ABI_VERSION_MINOR) == ctensor.ABI_VERSION
    text = HEADER.read_text()
    assert f"#define CT_ABI_VERSION_MAJOR {ctensor.ABI_VERSION[0]}" in text


def test_dlpack_structs_layout():
    # DLManagedTensorVersioned: version (8 bytes), manager_ctx, deleter, flags, then dl_tensor.
    assert ffi.offsetof("DLManagedTensorVersioned", "dl_tensor") == 32
    assert ffi.offsetof("DLManagedTensor", "manager_ctx") == ffi.sizeof("ct_tensor")
    assert ffi.sizeof("ct_tensor") == 48
    assert lib.DLPACK_FLAG_BITMASK_READ_ONLY == 1 and lib.DLPACK_FLAG_BITMASK_IS_COPIED == 2


def test_binding_headers_parse_and_match_the_compiled_module(build_cffi):
    cdef = "".join(build_cffi.cdef_from_header(path.read_text()) for path in HEADERS)
    assert "#include" not in cdef and "#if" not in cdef and "Python.h" not in cdef
    assert "#define CTPY_MAX_TENSORS 320" in cdef
    assert "#define DLPACK_FLAG_BITMASK_READ_ONLY 1" in cdef
    checker = cffi.FFI()
    checker.cdef(cdef)
    for name in ("ctpy_frame", "ctpy_capsule_view", "DLManagedTensor", "DLManagedTensorVersioned"):
        assert checker.sizeof(name) == ffi.sizeof(name), name
    assert checker.offsetof("ctpy_frame", "views") == ffi.offsetof("ctpy_frame", "views")
    assert lib.CTPY_META_READ_ONLY == 1 << 32 and lib.CTPY_META_VERSIONED == 1 << 33


def test_build_cffi_holds_no_c_source(build_cffi):
    # The C lives in bindings/python/src/; cffi's source is one include, its cdef is generated.
    builder = build_cffi.make_ffibuilder([path.read_text() for path in HEADERS])
    module_name, source, _, _ = builder._assigned_source
    assert module_name == "ctensor._native"
    assert source.strip() == '#include "ctpy_api.h"'
    for name in ("SOURCE", "HELPERS_CDEF", "DLPACK_CDEF"):
        assert not hasattr(build_cffi, name), name
    assert "typedef struct" not in BUILDER.read_text()


def test_one_native_module():
    import ctensor._native as native

    assert native.ffi is ffi and native.lib is lib
    assert isinstance(ctensor.ops.add, native.FastOp)
    assert callable(native.configure)
