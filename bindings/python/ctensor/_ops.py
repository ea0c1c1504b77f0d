"""Calling operators from Python, and generating ``ctensor.ops.<name>`` from the registry.

The flow of one call:

1. inputs are read as ``ct_tensor*`` views through DLPack (no copy); Python scalars of
   elementwise ops become 0-d arrays with NumPy 2's weak-scalar dtype;
2. mixed dtypes are promoted as NumPy 2 does, and an input whose promoted dtype has no kernel is
   cast (by ctensor's own ``astype``, into a new array of the caller's framework);
3. ``ct_op_infer`` gives the outputs' shapes and dtypes; outputs are allocated in the caller's
   framework and device, unless ``out=`` names them (the C library checks them);
4. ``ct_op_workspace`` says how much scratch memory to pass (workspace and dynamic ops; other
   ops are asked only when a kernel reports it needs some);
5. ``ct_op_run`` runs, with an allocator callback for dynamic-allocating ops.

No state is shared between calls except read-mostly caches, so many threads may call at once
(cffi releases the GIL while C runs).
"""

from __future__ import annotations

import inspect
import keyword
import operator
from typing import Any

import numpy as np

from ._dlpack import CapsuleType, InputTypeError, export, release_consumed
from ._dtypes import (
    DTYPE_INDEX,
    code_bits,
    name_of_ct,
    numpy_dtype,
    promote,
    scalar_dtype,
    to_dtype_name,
)
from ._errors import (
    AttributeTypeError,
    BackendError,
    CTensorError,
    InvalidArgumentError,
    UnknownOpError,
    WrongArityError,
    error_for_status,
)
from ._frameworks import NUMPY, Framework, framework_of
from ._lib import ffi, last_error, lib
from ._registry import DEVICE_NAMES, OpSpec, all_specs, get_spec

__all__ = ["call", "make_op", "build_all", "unknown_op"]

_CT_OK = lib.CT_OK
_WORKSPACE_TOO_SMALL = lib.CT_ERROR_WORKSPACE_TOO_SMALL
_OUT_OF_MEMORY = lib.CT_ERROR_OUT_OF_MEMORY
_CPU_DEVICE = (lib.CT_DEVICE_CPU, 0)
_SCALAR_TYPES = (bool, int, float, complex)
_CONTEXT_SIZE = ffi.sizeof("ct_context")
_ALLOCATOR_SIZE = ffi.sizeof("ct_allocator")
_infer = lib.ct_op_infer
_run = lib.ct_op_run
_workspace = lib.ct_op_workspace
_new = ffi.new
_NULL = ffi.NULL
_unpack = ffi.unpack

# ------------------------------------------------------------------------------------------------
# Attributes
# ------------------------------------------------------------------------------------------------

_ATTR_TYPE_WORDS = {
    "int": "an int",
    "float": "a float",
    "bool": "a bool",
    "string": "a string",
    "int_list": "an int or a sequence of ints",
    "float_list": "a float or a sequence of floats",
    "dtype": "a dtype",
}


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_dtype_like(value: Any) -> bool:
    if isinstance(value, (np.dtype, type)):
        return True
    tp = type(value)
    return tp.__module__ == "torch" and tp.__name__ == "dtype"


def _set_attr(spec: OpSpec, name: str, value: Any, slot: Any, keep: list) -> None:
    """Fills one ct_attr_value from a Python value. The schema type guides the conversion; a
    value of another type is passed with its own type so that the C library reports the
    mismatch (CT_ERROR_ATTRIBUTE_TYPE), and unknown names pass through to get
    CT_ERROR_UNKNOWN_ATTRIBUTE."""
    expected = spec.attr_types.get(name)
    if value is None:
        slot.type = lib.CT_ATTR_NONE
    elif isinstance(value, (bool, np.bool_)):
        slot.type = lib.CT_ATTR_BOOL
        slot.value.b = int(value)
    elif _is_int(value):
        if expected == "float_list":
            array = _new("double[]", [float(value)])
            keep.append(array)
            slot.type = lib.CT_ATTR_FLOAT_LIST
            slot.count = 1
            slot.value.floats = array
        else:
            slot.type = lib.CT_ATTR_INT
            slot.value.i = operator.index(value)
    elif isinstance(value, (float, np.floating)):
        if expected == "float_list":
            array = _new("double[]", [float(value)])
            keep.append(array)
            slot.type = lib.CT_ATTR_FLOAT_LIST
            slot.count = 1
            slot.value.floats = array
        else:
            slot.type = lib.CT_ATTR_FLOAT
            slot.value.f = float(value)
    elif isinstance(value, str) and expected != "dtype":
        data = _new("char[]", value.encode("utf-8"))
        keep.append(data)
        slot.type = lib.CT_ATTR_STRING
        slot.value.s = data
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        if not isinstance(items, list):
            items = [items]
        if all(_is_int(v) for v in items) and expected != "float_list":
            array = _new("int64_t[]", [operator.index(v) for v in items])
            slot.type = lib.CT_ATTR_INT_LIST
            slot.value.ints = array
        elif all(_is_real(v) for v in items):
            array = _new("double[]", [float(v) for v in items])
            slot.type = lib.CT_ATTR_FLOAT_LIST
            slot.value.floats = array
        else:
            raise AttributeTypeError(
                f"{spec.name}: attribute '{name}' takes "
                f"{_ATTR_TYPE_WORDS.get(expected or '', 'a value')}, got a sequence holding "
                f"{', '.join(sorted({type(v).__name__ for v in items}))}"
            )
        keep.append(array)
        slot.count = len(items)
    elif expected == "dtype" or _is_dtype_like(value):
        code, bits = code_bits(to_dtype_name(value))
        slot.type = lib.CT_ATTR_DTYPE
        slot.value.dtype.code = code
        slot.value.dtype.bits = bits
        slot.value.dtype.lanes = 1
    elif expected is None:
        slot.type = lib.CT_ATTR_NONE  # the C library reports the unknown name
    else:
        raise AttributeTypeError(
            f"{spec.name}: attribute '{name}' takes {_ATTR_TYPE_WORDS.get(expected, expected)}, "
            f"got {type(value).__name__}"
        )


def _make_attrs(spec: OpSpec, attrs: dict, keep: list) -> tuple[Any, int]:
    if not attrs:
        return _NULL, 0
    array = _new("ct_attr[]", len(attrs))
    for i, (name, value) in enumerate(attrs.items()):
        entry = array[i]
        encoded = _new("char[]", name.encode("utf-8"))
        keep.append(encoded)
        entry.name = encoded
        try:
            _set_attr(spec, name, value, entry.value, keep)
        except OverflowError as e:
            raise AttributeTypeError(
                f"{spec.name}: attribute '{name}' does not fit in 64 bits: {e}"
            ) from e
    return array, len(attrs)


# ------------------------------------------------------------------------------------------------
# Dynamic-allocating ops: the allocator callback
# ------------------------------------------------------------------------------------------------


class _AllocState:
    """What the allocator callback of one call needs and collects."""

    __slots__ = ("fw", "like", "device", "outputs", "error")

    def __init__(self, fw: Framework, like: Any, device: tuple[int, int]):
        self.fw = fw
        self.like = like
        self.device = device
        self.outputs: dict[int, Any] = {}
        self.error: BaseException | None = None


@ffi.def_extern()
def ctpy_allocate(user_data, output_index, info, device_type, device_id, data):  # noqa: ANN001
    state = ffi.from_handle(user_data)
    try:
        if (device_type, device_id) != state.device:
            raise BackendError(
                f"the kernel asked for output {output_index} on device ({device_type}, "
                f"{device_id}) but the call runs on {state.device}"
            )
        if output_index in state.outputs:
            raise BackendError(f"the kernel asked for output {output_index} twice")
        shape = tuple(_unpack(info.shape, info.ndim))
        array = state.fw.empty(shape, name_of_ct(info.dtype), state.like)
        state.outputs[output_index] = array
        data[0] = ffi.cast("void*", state.fw.data_ptr(array))
        return _CT_OK
    except BaseException as e:  # noqa: BLE001 - re-raised after ct_op_run returns
        state.error = e
        return _OUT_OF_MEMORY


# ------------------------------------------------------------------------------------------------
# Calls
# ------------------------------------------------------------------------------------------------


def _fail(status: int) -> CTensorError:
    return error_for_status(status, last_error())


def _execute(
    spec: OpSpec,
    tensors: list,
    fw: Framework,
    like: Any,
    device: tuple[int, int],
    attrs: Any,
    num_attrs: int,
    out_tensors: list | None,
    consumed: list,
    keep: list,
) -> list | None:
    """Runs ``spec`` on ct_tensor* ``tensors`` (NULL for absent optional inputs). Returns the new
    outputs (before ``fw.finish``), or None when ``out_tensors`` were given."""
    op = spec.op
    num_inputs = len(tensors)
    inputs = _new("ct_tensor*[]", tensors) if num_inputs else _NULL
    capacity = len(spec.outputs) if not spec.variadic_output else max(len(spec.outputs), 8)
    infos = _new("ct_tensor_info[]", capacity)
    count = _new("int32_t*")
    status = _infer(op, inputs, num_inputs, attrs, num_attrs, infos, capacity, count)
    if status != _CT_OK:
        if status == lib.CT_ERROR_WRONG_ARITY and count[0] > capacity:
            capacity = count[0]
            infos = _new("ct_tensor_info[]", capacity)
            status = _infer(op, inputs, num_inputs, attrs, num_attrs, infos, capacity, count)
        if status != _CT_OK:
            raise _fail(status)
    num_outputs = count[0]

    context = _NULL
    state = None
    results: list | None = None
    if spec.is_dynamic:
        if out_tensors is not None:
            raise InvalidArgumentError(
                f"{spec.name} allocates its outputs (their size depends on the data); it takes "
                "no out="
            )
        outputs, n_out = _NULL, 0
        state = _AllocState(fw, like, device)
        handle = ffi.new_handle(state)
        allocator = _new("ct_allocator*")
        allocator.struct_size = _ALLOCATOR_SIZE
        allocator.user_data = handle
        allocator.allocate = lib.ctpy_allocate
        keep.append(handle)
        keep.append(allocator)
        context = _new("ct_context*")
        context.struct_size = _CONTEXT_SIZE
        context.allocator = allocator
    else:
        if out_tensors is None:
            results = []
            out_list = []
            for i in range(num_outputs):
                info = infos[i]
                shape = tuple(_unpack(info.shape, info.ndim))
                array = fw.empty(shape, name_of_ct(info.dtype), like)
                results.append(array)
                exported_out = export(array, "output", consumed, False)
                keep.append(exported_out)
                out_list.append(exported_out.tensor)
        else:
            if len(out_tensors) != num_outputs:
                raise WrongArityError(
                    f"{spec.name} produces {num_outputs} output"
                    f"{'' if num_outputs == 1 else 's'}; out= gives {len(out_tensors)}"
                )
            out_list = out_tensors
        n_out = len(out_list)
        outputs = _new("ct_tensor*[]", out_list) if n_out else _NULL

    stream = fw.stream(like) if device[0] != _CPU_DEVICE[0] else 0
    if stream:
        if context is _NULL:
            context = _new("ct_context*")
            context.struct_size = _CONTEXT_SIZE
        context.stream = ffi.cast("void*", stream)

    if spec.has_workspace or spec.is_dynamic:
        context = _with_workspace(spec, inputs, num_inputs, outputs, n_out, attrs, num_attrs,
                                  fw, like, context, keep)
    status = _run(op, inputs, num_inputs, outputs, n_out, attrs, num_attrs, context)
    if status == _WORKSPACE_TOO_SMALL and not (spec.has_workspace or spec.is_dynamic):
        # A kernel of a shape-static op asked for scratch memory (plugins may): ask and retry.
        # Argument errors are detected before anything is written, so the retry is safe.
        context = _with_workspace(spec, inputs, num_inputs, outputs, n_out, attrs, num_attrs,
                                  fw, like, context, keep)
        status = _run(op, inputs, num_inputs, outputs, n_out, attrs, num_attrs, context)
    if state is not None and state.error is not None:
        error = state.error
        state.error = None
        raise error
    if status != _CT_OK:
        raise _fail(status)
    if state is not None:
        found = state.outputs
        missing = [i for i in range(num_outputs) if i not in found]
        if missing or len(found) != num_outputs:
            raise BackendError(
                f"{spec.name}: the kernel allocated outputs {sorted(found)} of {num_outputs}"
            )
        return [found[i] for i in range(num_outputs)]
    return results


def _with_workspace(spec, inputs, num_inputs, outputs, n_out, attrs, num_attrs, fw, like,
                    context, keep):  # noqa: ANN001
    nbytes = _new("uint64_t*")
    alignment = _new("uint64_t*")
    status = _workspace(spec.op, inputs, num_inputs, outputs, n_out, attrs, num_attrs, nbytes,
                        alignment)
    if status != _CT_OK:
        raise _fail(status)
    size, align = nbytes[0], max(int(alignment[0]), 1)
    if context is _NULL:
        context = _new("ct_context*")
        context.struct_size = _CONTEXT_SIZE
    if size:
        scratch = fw.scratch(size + align, like)
        keep.append(scratch)
        base = fw.data_ptr(scratch)
        aligned = (base + align - 1) // align * align
        context.workspace = ffi.cast("void*", aligned)
        context.workspace_size = size
    return context


def _cast(exported_tensor: Any, target: str, fw: Framework, like: Any,
          device: tuple[int, int], consumed: list, keep: list) -> Any:
    """A new array of the caller's framework holding ``exported_tensor`` cast to ``target``,
    made by ctensor's own astype op; returns its ct_tensor*."""
    astype = get_spec("astype")
    attr_keep: list = []
    attrs, num_attrs = _make_attrs(astype, {"dtype": target}, attr_keep)
    results = _execute(astype, [exported_tensor], fw, like, device, attrs, num_attrs, None,
                       consumed, keep)
    array = results[0]
    keep.append(array)
    exported = export(array, "cast input", consumed, False)
    keep.append(exported)
    return exported.tensor


def call(spec: OpSpec, args: tuple | list, out: Any, attrs: dict) -> Any:
    """Runs ``spec`` on the input objects ``args`` (one per input tensor; None for absent optional
    inputs; the variadic input's sequence flattened at the end)."""
    consumed: list = []
    keep: list = []
    try:
        return _call(spec, args, out, attrs, consumed, keep)
    finally:
        if consumed:
            release_consumed(consumed)


def _input_name(spec: OpSpec, i: int) -> str:
    fixed = spec.num_fixed_inputs
    if i < fixed:
        return f"{spec.name}: input '{spec.inputs[i]['name']}'"
    return f"{spec.name}: input '{spec.inputs[-1]['name']}'[{i - fixed}]"


def _call(spec: OpSpec, args: tuple | list, out: Any, attrs: dict, consumed: list,
          keep: list) -> Any:
    n = len(args)
    exported: list = [None] * n
    scalars: list[int] | None = None
    like = None
    like_device = None
    devices: set = set()
    for i in range(n):
        obj = args[i]
        if obj is None:
            if i < spec.num_fixed_inputs and spec.inputs[i].get("optional"):
                continue
            raise InputTypeError(f"{_input_name(spec, i)} is required, got None")
        if type(obj) in _SCALAR_TYPES:
            if not spec.elementwise:
                raise InputTypeError(
                    f"{_input_name(spec, i)} must be an array: {spec.name} is not elementwise, so "
                    f"it takes no Python scalars (got {type(obj).__name__})"
                )
            if scalars is None:
                scalars = []
            scalars.append(i)
            continue
        if isinstance(obj, np.generic):
            obj = np.asarray(obj)
        e = export(obj, _input_name(spec, i), consumed)
        exported[i] = e
        devices.add(e.device)
        if like is None:
            like = obj
            like_device = e.device
    if like is None:
        fw, like_device = NUMPY, _CPU_DEVICE
    else:
        fw = framework_of(like, like_device) if type(like) is not CapsuleType else NUMPY
        if fw is NUMPY and like_device[0] != _CPU_DEVICE[0]:
            fw = framework_of(like, like_device)  # raises UnsupportedDeviceError
    device_name = DEVICE_NAMES.get(like_device[0], "other")
    single_device = len(devices) <= 1

    tensors = [e.tensor if e is not None else _NULL for e in exported]
    if scalars is not None or ((spec.elementwise or n > 1) and single_device):
        dtypes = tuple(name_of_ct(e.tensor.dtype) if e is not None else None for e in exported)
        if scalars is not None:
            dtypes = _scalars_to_arrays(spec, args, scalars, dtypes, tensors, fw, like,
                                        like_device, device_name, consumed, keep)
        if single_device:
            targets = spec.choose_dtypes(device_name, dtypes)
            for i, target in enumerate(targets):
                if target is not None:
                    tensors[i] = _cast(tensors[i], target, fw, like, like_device, consumed, keep)

    attr_array, num_attrs = _make_attrs(spec, attrs, keep) if attrs else (_NULL, 0)

    if out is None:
        results = _execute(spec, tensors, fw, like, like_device, attr_array, num_attrs, None,
                           consumed, keep)
        if fw.name == "jax":
            results = [fw.finish(r) for r in results]
        if spec.variadic_output or len(results) != 1:
            return tuple(results)
        return results[0]

    outs = out if isinstance(out, (tuple, list)) else (out,)
    out_tensors = []
    for j, o in enumerate(outs):
        what = f"{spec.name}: out" if len(outs) == 1 else f"{spec.name}: out[{j}]"
        if o is None or type(o) in _SCALAR_TYPES:
            raise InputTypeError(f"{what} must be an array, got {type(o).__name__}")
        e = export(o, what, consumed, True)
        keep.append(e)
        out_tensors.append(e.tensor)
    _execute(spec, tensors, fw, like, like_device, attr_array, num_attrs, out_tensors, consumed,
             keep)
    if isinstance(out, (tuple, list)) and len(out) == 1 and len(spec.outputs) == 1 and not \
            spec.variadic_output:
        return out[0]
    return out


def _scalars_to_arrays(spec, args, scalars, dtypes, tensors, fw, like, device, device_name,
                       consumed, keep):  # noqa: ANN001
    """Python scalars become 0-d arrays with the dtype NumPy 2 gives a weak scalar next to the
    arrays of its promotion group (the inputs whose dtypes must agree)."""
    dtypes = list(dtypes)
    groups = spec.promotion_groups(device_name)
    group_of = {}
    for group, _ in groups:
        for i in group:
            group_of[i] = group
    for i in scalars:
        group = group_of.get(i, (i,))
        partners = [dtypes[j] for j in group if dtypes[j] is not None and j not in scalars]
        partners = [d for d in partners if d in DTYPE_INDEX]
        other = promote(partners) if partners else None
        value = args[i]
        dtype = scalar_dtype(value, other)
        if dtype != "bfloat16" and (fw is NUMPY or device[0] == _CPU_DEVICE[0]):
            # A CPU scalar is read in place whatever the caller's framework.
            array = np.asarray(value, numpy_dtype(dtype))  # OverflowError when it does not fit
        else:
            array = fw.scalar(value, dtype, like)
        keep.append(array)
        e = export(array, _input_name(spec, i), consumed)
        keep.append(e)
        tensors[i] = e.tensor
        dtypes[i] = dtype
    return tuple(dtypes)


# ------------------------------------------------------------------------------------------------
# Generated wrappers
# ------------------------------------------------------------------------------------------------

_RESERVED = {"out", "attrs", "_spec", "_call"}


def _py_name(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name) or name in _RESERVED:
        return name + "_"
    return name


def _attr_default_text(attr: dict) -> str:
    if attr.get("required"):
        return "required"
    return repr(attr.get("default"))


def _signature(spec: OpSpec) -> inspect.Signature:
    params = []
    P = inspect.Parameter
    for i, inp in enumerate(spec.inputs):
        name = _py_name(inp["name"])
        if inp.get("variadic"):
            params.append(P(name, P.POSITIONAL_ONLY))
        elif inp.get("optional") and i >= spec.num_required_inputs:
            params.append(P(name, P.POSITIONAL_OR_KEYWORD, default=None))
        else:
            params.append(P(name, P.POSITIONAL_ONLY))
    params.append(P("out", P.KEYWORD_ONLY, default=None))
    for attr in spec.attrs:
        default = P.empty if attr.get("required") else attr.get("default")
        params.append(P(_py_name(attr["name"]), P.KEYWORD_ONLY, default=default))
    return inspect.Signature(params)


def _docstring(spec: OpSpec) -> str:
    lines = [f"{spec.name}{_signature(spec)}", ""]
    if spec.doc:
        lines += [spec.doc.strip(), ""]
    lines.append(
        f"Category: {spec.category}."
        + (f" Flags: {', '.join(spec.flags)}." if spec.flags else "")
    )
    lines += ["", "Parameters", "----------"]
    for inp in spec.inputs:
        kind = "sequence of arrays" if inp.get("variadic") else "array"
        if inp.get("optional"):
            kind += ", optional"
        lines.append(f"{_py_name(inp['name'])} : {kind}")
        if inp.get("doc"):
            lines.append(f"    {inp['doc']}")
    many = len(spec.outputs) > 1 or spec.variadic_output
    if spec.is_dynamic:
        lines += ["out : not accepted", "    The op allocates its outputs (their size depends "
                  "on the data)."]
    else:
        lines += [f"out : {'tuple of arrays' if many else 'array'}, optional",
                  "    Write the result into this memory (checked by the C library) and return "
                  "it."]
    for attr in spec.attrs:
        kind = attr["type"].replace("_", " ")
        if attr.get("nullable"):
            kind += " or None"
        lines.append(f"{_py_name(attr['name'])} : {kind}, "
                     + ("required" if attr.get("required") else f"default {attr.get('default')!r}"))
        if attr.get("doc"):
            lines.append(f"    {attr['doc']}")
    lines += ["", "Returns", "-------"]
    for output in spec.outputs:
        kind = "tuple of arrays" if output.get("variadic") else "array"
        lines.append(f"{output['name']} : {kind}")
        if output.get("doc"):
            lines.append(f"    {output['doc']}")
    if spec.kernels:
        lines += ["", "Dtypes", "------"]
        for device, sigs in sorted(spec.kernels.items()):
            firsts = sorted({s[0] for s in sigs if s}, key=lambda d: DTYPE_INDEX.get(d, 99))
            lines.append(f"{device}: {', '.join(firsts)}")
            for sig in sigs:
                n_in = len(spec.inputs)
                lines.append(f"    ({', '.join(sig[:n_in])}) -> ({', '.join(sig[n_in:])})")
    lines += ["", "Inputs are read through DLPack without copies; results are allocated in the "
              "framework and on the device of the first array argument."]
    return "\n".join(lines)


def make_op(spec: OpSpec):  # noqa: ANN201
    """The Python function for one operator."""
    positional = []
    call_args = []
    names = [_py_name(inp["name"]) for inp in spec.inputs]
    variadic = None
    for i, inp in enumerate(spec.inputs):
        name = names[i]
        if inp.get("variadic"):
            variadic = name
        elif inp.get("optional") and i >= spec.num_required_inputs:
            positional.append(f"{name}=None")
            call_args.append(name)
        else:
            positional.append(name)
            call_args.append(name)
    # Required inputs are positional-only; optional ones may also be given by keyword.
    required = [p for p in positional if "=" not in p]
    optional = [p for p in positional if "=" in p]
    head = list(required)
    if variadic is not None:
        head.append(variadic)
    params = ", ".join(head + (["/"] if head else []) + optional + ["*", "out=None", "**attrs"])
    packed = f"({', '.join(call_args)}{',' if len(call_args) == 1 else ''})"
    if variadic is not None:
        packed = f"{packed} + tuple({variadic})"
    source = (
        f"def {_py_name(spec.name)}({params}):\n"
        f"    return _call(_spec, {packed}, out, attrs)\n"
    )
    namespace: dict[str, Any] = {"_spec": spec, "_call": call}
    exec(compile(source, f"<ctensor.ops.{spec.name}>", "exec"), namespace)  # noqa: S102
    function = namespace[_py_name(spec.name)]
    function.__name__ = spec.name
    function.__qualname__ = spec.name
    function.__module__ = "ctensor.ops"
    function.__doc__ = _docstring(spec)
    function.__signature__ = _signature(spec)
    function.spec = spec
    return function


def build_all() -> dict[str, Any]:
    """A function per registered operator, by name."""
    return {name: make_op(spec) for name, spec in sorted(all_specs().items())}


def unknown_op(name: str) -> UnknownOpError:
    """The error for an operator name the registry does not have, with the C library's message."""
    found = ffi.new("const ct_op**")
    status = lib.ct_op_find(str(name).encode("utf-8", "replace"), found)
    if status == _CT_OK:  # registered after import (not possible with built-ins today)
        return UnknownOpError(f"operator {name!r} is not bound; reload ctensor",
                              lib.CT_ERROR_UNKNOWN_OP)
    error = error_for_status(status, last_error())
    if not isinstance(error, UnknownOpError):  # pragma: no cover
        return UnknownOpError(str(error), lib.CT_ERROR_UNKNOWN_OP)
    return error
