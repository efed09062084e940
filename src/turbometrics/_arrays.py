"""Array kinds: what an input is (torch tensor, Numba device array, CuPy, host array) and host copies.

The bottom layer of the package: it imports nothing from it, and both
``_validate`` (checks) and ``_gpu`` (device dispatch) build on it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

DEVICES = ("cpu", "cuda")


_TORCH_TYPES: dict = {}  # type -> is it a torch tensor (asked once per type: small calls ask often)


def is_torch(x: Any) -> bool:
    """A torch tensor (told by its module, so torch is never imported to ask)."""
    tp = type(x)
    known = _TORCH_TYPES.get(tp)
    if known is None:
        known = _TORCH_TYPES[tp] = tp.__module__.split(".")[0] == "torch" and hasattr(tp, "numpy")
    return known


def is_numba_device(x: Any) -> bool:
    """A Numba device array (or the CUDA simulator's FakeCUDAArray, which has no __cuda_array_interface__)."""
    return type(x).__module__.startswith(("numba.cuda", "numba_cuda")) and hasattr(x, "copy_to_host")


def is_device_array(x: Any) -> bool:
    """Memory on a GPU: a CUDA tensor, a Numba device array, or anything with ``__cuda_array_interface__``."""
    if type(x) is np.ndarray:  # the common case, first: a small call pays for every check
        return False
    if is_torch(x):
        return x.is_cuda
    return is_numba_device(x) or hasattr(x, "__cuda_array_interface__")


_CURRENT = contextlib.nullcontext()  # (stateless: one instance serves every call)
F = TypeVar("F", bound=Callable[..., Any])


def device_guard(x: Any) -> contextlib.AbstractContextManager:
    """A context in which the GPU that ``x`` lives on (a CUDA torch tensor or a CuPy array) is the current
    device, as torch's own operations make it; a no-op where it is current already or ``x`` is on no GPU.
    numba allocates, launches and records events on the current device: without it, a kernel launched on
    cuda:0 would read a tensor on cuda:1 (an illegal address, or a slow read across the link)."""
    if is_torch(x):
        if not x.is_cuda:
            return _CURRENT
        import torch

        if torch.cuda._is_in_bad_fork():  # a forked child: the call's own check raises the clear error
            return _CURRENT
        i = x.get_device()
        # (torch.cuda.current_device() without its initialisation check: a CUDA tensor exists, so CUDA is up)
        return _CURRENT if i == torch._C._cuda_getDevice() else torch.cuda.device(i)
    if type(x).__module__.startswith("cupy") and hasattr(x, "__cuda_array_interface__"):
        import cupy

        device = x.device  # a cupy.cuda.Device: itself the context that makes it current
        return _CURRENT if device.id == cupy.cuda.runtime.getDevice() else device
    return _CURRENT


def on_input_device(fn: F) -> F:
    """``fn(x, ...)`` run in ``device_guard(x)``: the GPU entry points whose first argument is the caller's
    device array (everything from its view to the copy back then happens on that array's device)."""

    @functools.wraps(fn)
    def on_device(x: Any, *args: Any, **kwargs: Any) -> Any:
        guard = device_guard(x)
        if guard is _CURRENT:  # the common case, without entering a context
            return fn(x, *args, **kwargs)
        with guard:
            return fn(x, *args, **kwargs)

    return on_device  # type: ignore[return-value]


def to_host(x: Any) -> Any:
    """A host copy of a device array (a torch CPU tensor for torch input); anything else unchanged."""
    if is_torch(x):
        return x.detach().cpu() if x.device.type != "cpu" else x
    if is_numba_device(x):
        return x.copy_to_host()
    if hasattr(x, "__cuda_array_interface__") and hasattr(x, "get"):  # CuPy
        return x.get()
    return x
