"""Faulty kernels written in Python (ctypes callbacks registered with ct_kernel_register), one
backend per fault, for the faults the example plugin does not plant: a kernel that writes into
its input, one that writes past the workspace it asked for, and a dynamic kernel that asks the
allocator for the wrong dtype. Run as a script in a subprocess (it changes the registry):
prints a JSON object mapping each backend to its conformance results."""

from __future__ import annotations

import ctypes
import json
import sys

import numpy as np
from numpy.lib.stride_tricks import as_strided

import ctensor

libct = ctypes.CDLL(f"{ctensor.get_lib_dir()}/libctensor.so")


class DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", Device),
        ("ndim", ctypes.c_int32),
        ("dtype", DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class Info(ctypes.Structure):
    _fields_ = [("dtype", DType), ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 64)]


ALLOCATE = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_void_p,
    ctypes.c_int32,
    ctypes.POINTER(Info),
    ctypes.c_int32,
    ctypes.c_int32,
    ctypes.POINTER(ctypes.c_void_p),
)


class Allocator(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("user_data", ctypes.c_void_p),
        ("allocate", ALLOCATE),
    ]


class Call(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("schema", ctypes.c_void_p),
        ("inputs", ctypes.POINTER(ctypes.POINTER(Tensor))),
        ("num_inputs", ctypes.c_int32),
        ("num_outputs", ctypes.c_int32),
        ("outputs", ctypes.POINTER(ctypes.POINTER(Tensor))),
        ("attrs", ctypes.c_void_p),
        ("stream", ctypes.c_void_p),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_uint64),
        ("allocator", ctypes.POINTER(Allocator)),
        ("kernel_data", ctypes.c_void_p),
    ]


RUN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Call))
WORKSPACE = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(Call),
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(ctypes.c_uint64),
)


class KernelDef(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("op_name", ctypes.c_char_p),
        ("backend_name", ctypes.c_char_p),
        ("device_type", ctypes.c_int32),
        ("signature_length", ctypes.c_int32),
        ("signature", ctypes.POINTER(DType)),
        ("run", RUN),
        ("workspace", ctypes.c_void_p),
        ("kernel_data", ctypes.c_void_p),
    ]


F64 = DType(2, 64, 1)
I64 = DType(0, 64, 1)


def array(t: Tensor) -> np.ndarray:
    """A float64 NumPy view of a tensor in host memory."""
    shape = [t.shape[k] for k in range(t.ndim)]
    if t.strides:
        strides = [t.strides[k] for k in range(t.ndim)]
    else:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= max(n, 1)
    if 0 in shape:
        return np.zeros(shape)
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True))
    memory = (ctypes.c_double * (high - low + 1)).from_address(t.data + t.byte_offset + 8 * low)
    flat = np.frombuffer(memory, dtype=np.float64)
    return as_strided(flat[-low:], shape=shape, strides=[8 * s for s in strides])


def exp_writing_its_input(call):  # noqa: ANN001, ANN201
    c = call.contents
    x, out = array(c.inputs[0].contents), array(c.outputs[0].contents)
    out[...] = np.exp(x)
    if x.size:
        ctypes.c_double.from_address(
            c.inputs[0].contents.data + c.inputs[0].contents.byte_offset
        ).value += 1.0
    return 0


def exp_past_its_workspace(call):  # noqa: ANN001, ANN201
    c = call.contents
    out = array(c.outputs[0].contents)
    out[...] = np.exp(array(c.inputs[0].contents))
    ctypes.memset(c.workspace, 0, c.workspace_size + 1)
    return 0


def asks_16_bytes(call, nbytes, alignment):  # noqa: ANN001, ANN201
    nbytes[0], alignment[0] = 16, 8
    return 0


def nonzero_with_wrong_dtype(call):  # noqa: ANN001, ANN201
    """nonzero of a 1-D input, asking for its index array as float64 instead of int64."""
    c = call.contents
    x = array(c.inputs[0].contents).reshape(-1)
    idx = np.flatnonzero(x).astype(np.float64)
    info = Info(F64, 1)
    info.shape[0] = idx.size
    data = ctypes.c_void_p()
    status = c.allocator.contents.allocate(
        c.allocator.contents.user_data, 0, ctypes.byref(info), 1, 0, ctypes.byref(data)
    )
    if status == 0 and idx.size:
        ctypes.memmove(data, idx.ctypes.data, idx.nbytes)
    return status


KEEP: list = []


def register(op: str, backend: str, signature: list, run, workspace=None) -> None:  # noqa: ANN001
    sig = (DType * len(signature))(*signature)
    run_fn = RUN(run)
    ws_fn = WORKSPACE(workspace) if workspace else None
    definition = KernelDef(
        ctypes.sizeof(KernelDef),
        op.encode(),
        backend.encode(),
        1,
        len(signature),
        sig,
        run_fn,
        ctypes.cast(ws_fn, ctypes.c_void_p) if ws_fn else None,
        None,
    )
    KEEP.extend([sig, run_fn, ws_fn, definition])
    assert libct.ct_kernel_register(ctypes.byref(definition)) == 0


def main() -> int:
    from ctensor.conformance.suite import Options, builtin_cpu, run_backend

    register("exp", "writes-input", [F64, F64], exp_writing_its_input)
    register("exp", "past-workspace", [F64, F64], exp_past_its_workspace, asks_16_bytes)
    register("nonzero", "wrong-alloc", [F64, I64], nonzero_with_wrong_dtype)
    out = {}
    for backend, op in [
        ("writes-input", "exp"),
        ("past-workspace", "exp"),
        ("wrong-alloc", "nonzero"),
    ]:
        run = run_backend(
            dict(builtin_cpu(), name=backend),
            "cpu",
            Options(ops=[f"{op}:float64"], cases=3, threads=2),
        )
        out[backend] = [
            {"op": r.op, "dtype": r.dtype, "status": r.status, "check": r.check, "reason": r.reason}
            for r in run.results
        ]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
