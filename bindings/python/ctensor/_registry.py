"""The operator registry as the C library describes it (``ct_op_schema_json``), parsed once."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from ._dtypes import DTYPE_INDEX, can_cast_safe, promote
from ._errors import UnknownOpError, check
from ._lib import ffi, lib

__all__ = ["OpSpec", "registry_json", "get_spec", "all_specs", "op_info", "list_ops"]

# DLPack device codes <-> the names the JSON uses.
DEVICE_NAMES = {
    lib.CT_DEVICE_CPU: "cpu",
    lib.CT_DEVICE_CUDA: "cuda",
    lib.CT_DEVICE_CUDA_HOST: "cuda_host",
    lib.CT_DEVICE_OPENCL: "opencl",
    lib.CT_DEVICE_VULKAN: "vulkan",
    lib.CT_DEVICE_METAL: "metal",
    lib.CT_DEVICE_ROCM: "rocm",
    lib.CT_DEVICE_ONEAPI: "oneapi",
}
DEVICE_CODES = {name: code for code, name in DEVICE_NAMES.items()}

#: Ops NumPy's type resolvers refuse for bool inputs instead of computing them in int8
#: (np.subtract(True, True) and np.negative(True) raise TypeError).
NUMPY_REFUSES_BOOL = frozenset({"subtract", "negative", "positive", "sign"})

_FLOAT_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _float_value(value: Any) -> Any:
    if isinstance(value, str):
        return _FLOAT_WORDS.get(value, value)
    return value


def registry_json() -> dict:
    """The whole registry, parsed from ``ct_op_schema_json(NULL, ...)``."""
    length = ffi.new("size_t*")
    check(lib.ct_op_schema_json(ffi.NULL, ffi.NULL, 0, length))
    buffer = ffi.new("char[]", length[0] + 1)
    check(lib.ct_op_schema_json(ffi.NULL, buffer, length[0] + 1, length))
    return json.loads(ffi.string(buffer, length[0]).decode("utf-8"))


class OpSpec:
    """One operator: its schema (as JSON) plus what the binding precomputes for calls."""

    def __init__(self, schema: dict):
        self.schema = schema
        self.name: str = schema["name"]
        self.doc: str = schema.get("doc", "")
        self.category: str = schema["category"]
        self.flags: tuple[str, ...] = tuple(schema.get("flags", ()))
        self.inputs: list[dict] = schema["inputs"]
        self.outputs: list[dict] = schema["outputs"]
        self.attrs: list[dict] = schema["attrs"]
        for attr in self.attrs:
            if attr["type"] in ("float",):
                attr["default"] = _float_value(attr["default"])
            elif attr["type"] == "float_list" and isinstance(attr["default"], list):
                attr["default"] = [_float_value(v) for v in attr["default"]]
        self.attr_types: dict[str, str] = {a["name"]: a["type"] for a in self.attrs}
        self.elementwise = "elementwise" in self.flags
        self.is_dynamic = self.category == "dynamic"
        self.has_workspace = self.category == "workspace"
        self.variadic_input = bool(self.inputs) and bool(self.inputs[-1].get("variadic"))
        self.variadic_output = bool(self.outputs) and bool(self.outputs[-1].get("variadic"))
        self.num_fixed_inputs = len(self.inputs) - (1 if self.variadic_input else 0)
        self.single_output = len(self.outputs) == 1 and not self.variadic_output
        # Calls that can take the binding's fast paths (no workspace, no allocator).
        self.fast = not self.is_dynamic and not self.has_workspace
        required = self.num_fixed_inputs
        while required > 0 and self.inputs[required - 1].get("optional"):
            required -= 1
        self.num_required_inputs = required
        # Kernels per device: list of signatures (tuples of dtype names).
        self.kernels: dict[str, list[tuple[str, ...]]] = {}
        self._read_kernels(schema)
        op = ffi.new("const ct_op**")
        check(lib.ct_op_find(self.name.encode(), op))
        self.op = op[0]
        self._promotion_groups: dict[str, list[tuple[tuple[int, ...], frozenset[str]]]] = {}
        self._choices: dict[tuple, tuple] = {}
        self._group_index: dict[str, dict[int, tuple[int, ...]]] = {}
        # Converted attribute arrays by (name, type, value) tuples; see _attrs.attrs_for.
        self.attr_cache: dict[tuple, tuple] = {}
        # Type resolutions by the packed meta words of a call's tensors; see
        # _promotion.TypeResolution.
        self.type_resolutions: dict[tuple, Any] = {}

    def _read_kernels(self, schema: dict) -> None:
        """Kernel signatures per device; a signature two backends provide is listed once."""
        kernels: dict[str, list[tuple[str, ...]]] = {}
        for kernel in schema.get("kernels", ()):
            signatures = kernels.setdefault(kernel["device"], [])
            signature = tuple(kernel["signature"])
            if signature not in signatures:
                signatures.append(signature)
        self.kernels = kernels

    def refresh_kernels(self, schema: dict) -> None:
        """Takes the kernel list of ``schema`` (after a backend was loaded) and forgets what was
        derived from the old one."""
        self._read_kernels(schema)
        self._promotion_groups.clear()
        self._choices.clear()
        self._group_index.clear()
        self.type_resolutions.clear()

    # -------------------------------------------------------------- promotion --------------------

    def promotion_groups(self, device: str) -> list[tuple[tuple[int, ...], frozenset[str]]]:
        """Input parameters whose dtypes must agree, found from the kernel signatures on
        ``device``: parameters i and j are grouped when most kernels (more than half) have the
        same dtype in both, so that a few mixed-dtype kernels do not split a group. Each group
        comes with the dtypes its kernels accept. Only groups that are promoted are returned:
        every group of an elementwise op, groups of two or more parameters or holding the
        variadic input otherwise."""
        groups = self._promotion_groups.get(device)
        if groups is not None:
            return groups
        signatures = self.kernels.get(device, [])
        num_slots = len(self.inputs)
        groups = []
        if signatures:
            seen: set[int] = set()
            for i in range(num_slots):
                if i in seen:
                    continue
                group = [i]
                for j in range(i + 1, num_slots):
                    same = sum(sig[i] == sig[j] for sig in signatures)
                    if j not in seen and 2 * same > len(signatures):
                        group.append(j)
                seen.update(group)
                variadic = self.variadic_input and num_slots - 1 in group
                if self.elementwise or len(group) > 1 or variadic:
                    accepted = frozenset(sig[i] for sig in signatures)
                    groups.append((tuple(group), accepted))
        self._promotion_groups[device] = groups
        return groups

    def group_index(self, device: str) -> dict[int, tuple[int, ...]]:
        """Input slot -> the promotion group holding it (see promotion_groups)."""
        index = self._group_index.get(device)
        if index is None:
            index = {i: group for group, _ in self.promotion_groups(device) for i in group}
            self._group_index[device] = index
        return index

    def param_of(self, index: int) -> int:
        """The input parameter a tensor index belongs to (variadic tensors share the last)."""
        return index if index < self.num_fixed_inputs else len(self.inputs) - 1

    def matches_a_kernel(self, device: str, dtypes: tuple[str | None, ...]) -> bool:
        """Whether some kernel on ``device`` takes exactly these input dtypes (None: absent)."""
        n_params = len(self.inputs)
        for sig in self.kernels.get(device, ()):
            if all(d is None or sig[min(i, n_params - 1)] == d for i, d in enumerate(dtypes)):
                return True
        return False

    def choose_dtypes(self, device: str, dtypes: tuple[str | None, ...]) -> tuple[str | None, ...]:
        """The dtype each input tensor should be cast to (None: leave it), for input dtypes
        ``dtypes`` (None for absent inputs), as NumPy's ufunc loop selection does it: a kernel
        that takes the dtypes as they are wins; otherwise each group of inputs whose dtypes must
        agree is promoted, and, if no kernel takes the promoted dtype, the first dtype in type
        order it casts to safely that has one. Like NumPy, bool is never computed in another
        dtype by subtract and negative (NumPy's type resolvers refuse those)."""
        key = (device, dtypes)
        choice = self._choices.get(key)
        if choice is not None:
            return choice
        targets: list[str | None] = [None] * len(dtypes)
        if not self.matches_a_kernel(device, dtypes):
            members: dict[int, list[int]] = {}
            for i in range(len(dtypes)):
                members.setdefault(self.param_of(i), []).append(i)
            for group, accepted in self.promotion_groups(device):
                tensors = [i for p in group for i in members.get(p, ())]
                present = [dtypes[i] for i in tensors if dtypes[i] is not None]
                if not present or any(d not in DTYPE_INDEX for d in present):
                    continue
                target = promote(present)
                if target is None:
                    continue
                if target not in accepted:
                    if target == "bool" and self.name in NUMPY_REFUSES_BOOL:
                        continue  # the C library reports the unsupported dtype
                    for candidate in sorted(accepted, key=DTYPE_INDEX.__getitem__):
                        if can_cast_safe(target, candidate):
                            target = candidate
                            break
                    else:
                        continue  # nothing fits: pass as is, the C library reports it
                for i in tensors:
                    if dtypes[i] is not None and dtypes[i] != target:
                        targets[i] = target
        choice = tuple(targets)
        self._choices[key] = choice
        return choice

    # -------------------------------------------------------------- introspection ----------------

    def info(self) -> dict:
        """A fresh dict describing the op (see :func:`ctensor.op_info`)."""
        dtypes: dict[str, list[str]] = {}
        signatures: dict[str, list[list[str]]] = {}
        for device, sigs in self.kernels.items():
            # the first input's dtypes; an op without inputs: its first output's
            firsts = {sig[0] for sig in sigs if sig}
            dtypes[device] = sorted(firsts, key=lambda d: DTYPE_INDEX.get(d, len(DTYPE_INDEX)))
            signatures[device] = [list(sig) for sig in sigs]
        return {
            "name": self.name,
            "doc": self.doc,
            "category": self.category,
            "flags": list(self.flags),
            "inputs": copy.deepcopy(self.inputs),
            "outputs": copy.deepcopy(self.outputs),
            "attrs": copy.deepcopy(self.attrs),
            "dtypes": dtypes,
            "signatures": signatures,
            "devices": sorted(self.kernels),
            "gradient": copy.deepcopy(self.schema.get("gradient")),
        }


_REGISTRY: dict | None = None
_SPECS: dict[str, OpSpec] = {}


def _load() -> dict[str, OpSpec]:
    global _REGISTRY
    if _REGISTRY is None:
        registry = registry_json()
        specs = {op["name"]: OpSpec(op) for op in registry["ops"]}
        _SPECS.update(specs)
        _REGISTRY = registry
    return _SPECS


def all_specs() -> dict[str, OpSpec]:
    return _load()


def refresh_kernels() -> None:
    """Re-reads every op's kernels from the C registry (a backend was loaded)."""
    if _REGISTRY is None:
        return
    for op in registry_json()["ops"]:
        spec = _SPECS.get(op["name"])
        if spec is not None:
            spec.refresh_kernels(op)


def get_spec(name: str) -> OpSpec:
    spec = _load().get(name)
    if spec is None:
        # Let the C library phrase it.
        op = ffi.new("const ct_op**")
        check(lib.ct_op_find(str(name).encode(), op))
        raise UnknownOpError(f"no operator named {name!r}")  # pragma: no cover
    return spec


def list_ops() -> list[str]:
    """Names of all registered operators, sorted."""
    return sorted(_load())


def op_info(name: str) -> dict:
    """Everything the registry says about an operator, as a dict:

    ``name``, ``doc``, ``category`` ("shape_static", "workspace" or "dynamic"), ``flags``,
    ``inputs`` and ``outputs`` (name, doc, optional, variadic), ``attrs`` (name, type, default,
    required, nullable, doc), ``dtypes`` (per device: the dtypes the first input accepts, or the
    first output's for ops without inputs, in NumPy's type order), ``signatures`` (per
    device: every kernel's dtypes, one per input then per output), ``devices`` and
    ``gradient`` (the gradient entry: ``differentiable``, ``formula``, ``note``, ``steps``,
    ``input_grads``, ``saved_inputs``, ``saved_outputs``, ``output_takes_cotangent``;
    docs/schema-json.md).
    Raises UnknownOpError for a name that is not registered.
    """
    if not isinstance(name, str):
        raise TypeError(f"op_info() takes an op name, got {type(name).__name__}")
    return get_spec(name).info()
