"""Streams as DLPack specifies them: which stream a call runs on, and how its arrays' producers
are told.

A call on a CUDA device runs on one stream, ``ct_context.stream``: the current stream of the
framework of its first array argument on that array's device (``Framework.stream``: CuPy's
``get_current_stream(device)``, torch's ``current_stream(device)``; 0, the legacy default
stream, for ctensor's own DeviceArray and for producers ctensor allocates nothing for). It is
worked out once per call (``call_stream``, kept in the frame) and used twice:

* every producer with ``__dlpack__`` whose ``__dlpack_device__()`` is a CUDA device (kDLCUDA 2,
  kDLCUDAManaged 13) is asked for its capsule with ``__dlpack__(stream=S, max_version=(1, 0))``,
  where S is that stream as DLPack numbers it (``dlpack_stream``: 1 for the legacy default
  stream, whose handle is 0, which DLPack forbids; 2 for the per-thread default stream; the
  ``cudaStream_t`` otherwise). The producer then orders its pending work on the array before
  anything ctensor queues on S (CuPy records an event on its current stream and makes S wait
  for it when the two differ, and does nothing when they are the same), without synchronising
  the device. Inputs and ``out=`` arrays are asked alike: a write must also wait for the
  producer's pending reads. Results ctensor allocates in the caller's framework come from that
  framework's pool on its current stream, which is S: CuPy's are asked with stream -1 (DLPack's
  "nothing to order"), torch's through ``to_dlpack``;
* ``ct_context.stream`` is S, so the kernels are queued on it (``prepare_context``).

Producers elsewhere (the CPU, OpenCL) are read as before: NumPy arrays and CPU torch tensors
take the C fast paths untouched, and no producer off a CUDA device is passed a stream (DLPack
allows only None there). Other producers on the general path are asked ``__dlpack_device__()``
first, as DLPack's consumers do; JAX arrays only where JAX has CUDA devices.

PyTorch tensors are read through ``torch.utils.dlpack.to_dlpack``, which takes no stream and
orders nothing (``Tensor.__dlpack__(stream=)`` would, but costs ten times as much, refuses a
tensor on another device than torch's current one and refuses the per-thread default stream).
The rule for them: torch queues its work on its current stream of the tensor's device. When the
call's framework is torch, S *is* that stream, so nothing is needed. When it is another (a torch
tensor passed to a call whose first array is CuPy's), ``order_torch`` makes S wait for torch's
current stream of each such device when that is another stream, with an event, as
``Tensor.__dlpack__(stream=S)`` does.

Scratch memory (``ct_context.workspace``) comes from the same framework (``Framework.scratch``),
allocated on its current stream, S, and is held by the call's frame until the call returns:
CuPy's pool and torch's caching allocator hand a block freed after that only to later work on
the same stream, which S orders after the call's kernels.
"""

from __future__ import annotations

import sys
from typing import Any

from ._frameworks import TORCH, framework_of_type
from ._lib import lib

__all__ = [
    "STREAM_DEVICE_TYPES",
    "call_stream",
    "dlpack_stream",
    "jax_uses_cuda",
    "order_torch",
    "producer_stream",
]

#: DLPack device types whose producers take a CUDA stream in ``__dlpack__(stream=)``:
#: kDLCUDA and kDLCUDAManaged.
STREAM_DEVICE_TYPES = frozenset({lib.CT_DEVICE_CUDA, 13})


def dlpack_stream(stream: int) -> int:
    """The ``__dlpack__(stream=)`` value for the ``cudaStream_t`` ``stream`` (an int): the
    handles of the legacy (0) and per-thread (2) default streams are the numbers DLPack gives
    them, except 0, which DLPack forbids and numbers 1 (``cudaStreamLegacy``'s handle)."""
    return stream if stream else 1


def call_stream(frame: Any, like: Any) -> int:
    """The ``cudaStream_t`` (an int; 0: the legacy default) a call runs on: the current stream
    of the framework of ``like`` (its first array argument) on ``like``'s device, worked out
    once and kept in ``frame.stream`` for ``prepare_context``."""
    stream = frame.stream
    if stream is None:
        fw = framework_of_type(type(like)) if like is not None else None
        stream = frame.stream = fw.stream(like) if fw is not None else 0
    return stream


def producer_stream(obj: Any, frame: Any, like: Any) -> int | None:
    """The ``stream=`` to pass to ``obj.__dlpack__``: the call's stream numbered as DLPack says
    when ``obj`` is on a CUDA device, else None (nothing is passed). ``like``: the call's first
    array argument (``obj`` itself when it is the first)."""
    try:
        device_type = obj.__dlpack_device__()[0]
    except Exception:  # noqa: BLE001 - __dlpack__ then reports what is wrong, as before
        return None
    if device_type not in STREAM_DEVICE_TYPES:
        return None
    return dlpack_stream(call_stream(frame, like))


_JAX_CUDA: bool | None = None


def jax_uses_cuda() -> bool:
    """Whether JAX has CUDA devices in this process (asked once): where it has none, JAX arrays
    are not asked ``__dlpack_device__()`` (which costs JAX about 0.9 us an array)."""
    global _JAX_CUDA
    if _JAX_CUDA is None:
        try:
            import jax

            _JAX_CUDA = bool(jax.devices("gpu"))
        except Exception:  # noqa: BLE001 - RuntimeError: JAX has no GPU backend
            _JAX_CUDA = False
    return _JAX_CUDA


def order_torch(stream: int, tensors: Any, torch: Any = None) -> None:
    """Makes ``stream`` (a ``cudaStream_t`` int) wait for the work torch has queued on its
    current stream of each CUDA device among ``tensors`` (torch tensors), where that is another
    stream: torch's own reads and writes of those tensors come before the call's kernels."""
    torch = torch or sys.modules["torch"]
    done = set()
    for tensor in tensors:
        device = tensor.device
        if device.type != "cuda" or device in done:
            continue
        done.add(device)
        current = torch.cuda.current_stream(device)
        if current.cuda_stream == stream:
            continue
        if stream == 0:
            consumer = torch.cuda.default_stream(device)
        else:
            consumer = torch.cuda.ExternalStream(stream, device=device)
        consumer.wait_stream(current)


def needs_torch_order(fw: Any) -> bool:
    """Whether torch tensors of a call whose framework is ``fw`` may have pending work on
    another stream than the call's (see the module docstring)."""
    return not isinstance(fw, type(TORCH))
