"""Every ctensor operator as a native torch op: ``torch.ops.ctensor.<name>``.

Importing this module registers each operator of the registry (forward and backward ops, with
the kernels of every loaded backend) through ``torch.library``, generated from the C schema:

- the torch schema (``torch_schema``): tensor inputs positionally, attributes keyword-only with
  the registry's defaults, a ``Device? device`` for operators callable without tensor inputs;
- the kernel: ctensor's call path on the tensors' memory, without copies (``_kernel``);
- the fake kernel, for FakeTensor, meta tensors and ``torch.compile``: ``ct_op_infer``
  (``_fake``), never reading data; dynamic operators get data-dependent sizes;
- autograd from the operator's gradient entry, whose steps are ``torch.ops.ctensor`` calls
  (``_autograd``);
- an ``out`` overload writing into the caller's tensors, for every op whose output sizes follow
  from its inputs (``_out``);
- a vmap rule, chosen from the schema (``_vmap``): elementwise ops broadcast, ops along an
  ``axis`` shift it, every other op loops over the batch.

These modules convert between a torch call's arguments and results and ctensor's in one place
(``_arguments``).

Plain ``ctensor.ops.<name>`` calls reach these ops too (``_route``): on torch tensors without
readable memory (FakeTensor, meta tensors, ``torch.func`` transforms' wrappers) in eager mode,
and under ``torch.compile``, whose Dynamo traces them into ``torch.ops.ctensor`` nodes
(``_compile``; registered by ``import ctensor`` once ``torch._dynamo`` is loaded, see
``ctensor._torch_hook``).

Each op carries ``torch.Tag.pt2_compliant_tag``: it traces under ``torch.compile`` with
``fullgraph=True``, and ``torch.library.opcheck`` passes for it (tests/test_torch_ops.py).
"""

from __future__ import annotations

import torch

from .._registry import all_specs, get_spec
from ._arguments import ctensor_attrs, flat_inputs, op_results
from ._autograd import register_autograd
from ._fake import fake_outputs
from ._kernel import make_kernel
from ._out import has_out_overload, make_out_fake, make_out_kernel, out_schema
from ._schema import is_factory
from ._schema import torch_schema as _schema_of
from ._vmap import register_vmap

__all__ = ["library", "op_names", "torch_schema"]

#: The ``torch.library.Library`` that defines the ``ctensor`` namespace.
library = torch.library.Library("ctensor", "DEF")


def torch_schema(name: str) -> str:
    """The torch schema of ``torch.ops.ctensor.<name>``."""
    return _schema_of(get_spec(name))


def op_names() -> list[str]:
    """Names of the ops this module registered, sorted."""
    return sorted(_REGISTERED)


def _make_fake(spec):  # noqa: ANN001, ANN202
    def fake(*args, device=None, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        # device: only an op callable without tensor inputs takes it (is_factory)
        tensors = flat_inputs(spec, args)
        return op_results(spec, fake_outputs(spec, tensors, ctensor_attrs(spec, kwargs), device))

    return fake


def _kernel_keys(spec) -> tuple[str, ...]:  # noqa: ANN001
    """Dispatch keys of an op's kernel: the devices torch and ctensor share. An op that can be
    called without tensor inputs has nothing to dispatch on then, so its kernel is the fallback
    for every key (and reads its ``device`` argument when no tensor says the device)."""
    if is_factory(spec):
        return ("CompositeExplicitAutograd",)
    return ("CPU", "CUDA")


def _register() -> list[str]:
    names = []
    tags = (torch.Tag.pt2_compliant_tag,)
    for name, spec in sorted(all_specs().items()):
        library.define(_schema_of(spec), tags=tags)
        kernel = make_kernel(spec)
        for key in _kernel_keys(spec):
            library.impl(name, kernel, key)
        torch.library.register_fake(f"ctensor::{name}", _make_fake(spec), lib=library)
        register_autograd(library, spec, kernel)
        if spec.inputs:
            register_vmap(library, spec)
        if has_out_overload(spec):
            library.define(out_schema(spec), tags=tags)
            out_kernel = make_out_kernel(spec)
            for key in _kernel_keys(spec):
                library.impl(f"{name}.out", out_kernel, key)
            torch.library.register_fake(f"ctensor::{name}.out", make_out_fake(spec), lib=library)
        names.append(name)
    return names


_REGISTERED = _register()
