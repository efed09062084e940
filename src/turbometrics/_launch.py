"""Kernel launches with numba's per-call work done once per kind of call.

``kernel[grid, block, stream](*args)`` in numba-cuda types every argument,
builds a launch configuration and a cuda.core stream, turns each device array
into a strided view and asks the driver for the current context, on every
call: 131 us on an H100 machine's host for a row kernel's ten arguments
(measured at a08b2b1), more than many of our kernels run. Here the first
launch of a kernel with given argument types, on a given device, goes through
numba (which compiles and loads it); the loaded function and how each
argument is passed are kept, and later launches of that kind flatten the
arguments themselves and call cuda.core's ``launch`` as numba does at the end
of its own path.

The flattening is numba-cuda's (``_Kernel._prepare_args``): a device array is
(meminfo, parent, size, itemsize, data pointer, shape..., strides in bytes...),
an integer its ctypes value, a float a ctypes double/float, a boolean as it
was given. The first launch of each kind compares ours with numba's own list,
argument for argument, and keeps numba's path for that kind when they differ
or when an argument is of a type not handled here: a numba-cuda release that
changes the layout costs speed, never correctness.

Only launches whose device is known without asking the driver take this path
(the caller passes the torch device's index); the CUDA simulator never does.
``DIRECT = False`` (or ``TURBOMETRICS_DIRECT_LAUNCH=0``) sends every launch
through numba, for A/B timing and as a way out.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

DIRECT = os.environ.get("TURBOMETRICS_DIRECT_LAUNCH", "1") != "0"

_KINDS: dict = {}  # (dispatcher, device, argument marks) -> (cuda.core kernel, converters), or None: numba's path
_CONFIGS: dict = {}  # (grid, block, shared bytes) -> cuda.core LaunchConfig
_STREAMS: dict = {}  # stream handle -> cuda.core Stream (not owning it)
_INT64 = (-(2**63), 2**63)


def clear() -> None:
    """Forget what was learned (after fork(): the parent's loaded functions and streams are not ours)."""
    _KINDS.clear()
    _CONFIGS.clear()
    _STREAMS.clear()
    _CORE.clear()


_OTHER = object()  # the mark of an argument left to numba: its kind is never learned


def _memo(a: Any) -> dict:
    """Where an array keeps its mark and flat arguments: a numba device array's ``__dict__`` (its memory and
    layout are set when it is made); a throwaway dict for others (mapped and managed arrays are NumPy arrays,
    whose shape can be set in place)."""
    return {} if isinstance(a, np.ndarray) else getattr(a, "__dict__", {})


def _mark(a: Any) -> Any:
    """What numba's typing of ``a`` depends on: a numba device array's numba type (by its name, kept on the array:
    a string keeps its hash, and a call's key hashes one a launch), a scalar's type; ``_OTHER`` for anything else
    (CuPy or torch arrays, host arrays, ints outside int64, which numba's C dispatcher and its Python typing type
    differently)."""
    t = type(a)
    if t is int:
        return int if _INT64[0] <= a < _INT64[1] else _OTHER
    if t is bool or t is float or isinstance(a, np.generic):
        return t
    if not hasattr(a, "__cuda_memory__"):
        return _OTHER
    memo = _memo(a)
    mark = memo.get("_tm_mark")
    if mark is None:
        numba_type = getattr(a, "_numba_type_", None)
        if numba_type is None:
            return _OTHER
        mark = memo["_tm_mark"] = str(numba_type)  # dtype, dimensions, layout and flags
    return mark


def _array_args(a: Any, out: list) -> None:
    """A numba device array's flat arguments, made once an array (``_memo``)."""
    memo = _memo(a)
    flat = memo.get("_tm_flat")
    if flat is None:
        flat = memo["_tm_flat"] = (
            0, 0, a.size, a.dtype.itemsize, a.device_ctypes_pointer.value or 0, *a.shape, *a.strides
        )  # fmt: skip
    out += flat


def _converter(ty: Any) -> Any:
    """How an argument numba typed ``ty`` is appended to the flat list; None where numba's path must stay."""
    from numba.cuda import types as numba_types

    types: Any = numba_types  # (numba's type objects are made at import: no stubs)

    if isinstance(ty, types.Array):
        return _array_args
    if ty == types.boolean:
        return lambda v, out: out.append(v)
    if isinstance(ty, types.Integer):
        make = getattr(ctypes, f"c_{ty}", None)
        return None if make is None else (lambda v, out: out.append(make(v)))
    if ty in (types.float64, types.float32):
        make = ctypes.c_double if ty == types.float64 else ctypes.c_float
        return lambda v, out: out.append(make(v))
    return None


def _same(ours: list, theirs: list) -> bool:
    """Whether two flat argument lists pass the same bytes (ctypes values compare by type and value)."""

    def key(v: Any) -> tuple:
        return (type(v), v.value) if isinstance(v, ctypes._SimpleCData) else (type(v), v)

    return len(ours) == len(theirs) and all(key(a) == key(b) for a, b in zip(ours, theirs))


def flatten(convert: tuple, args: tuple) -> list:
    out: list = []
    for c, a in zip(convert, args):
        c(a, out)
    return out


def _learn(dispatcher: Any, device: int, args: tuple) -> Any:
    """(cuda.core kernel, converters) for this kind of launch, or None to keep numba's path. Runs after numba
    launched it once (so the kernel is compiled and loaded in the current context)."""
    from numba.cuda.cudadrv import devices

    if devices.get_context().device.id != device:  # numba's current device is not the input's: numba decides
        return None
    types_ = tuple(dispatcher.typeof_pyval(a) for a in args)
    kernel = dispatcher.overloads.get(types_)
    convert = tuple(_converter(t) for t in types_)
    if (
        kernel is None
        or None in convert
        or dispatcher.extensions
        or getattr(dispatcher, "_launch_config_sensitive", False)  # compiled per launch configuration
        or getattr(kernel, "debug", False)  # its launches check an error flag
        or getattr(kernel, "cooperative", False)  # launched with a flag of its own
    ):
        return None
    theirs: list = []
    for t, a in zip(types_, args):
        kernel._prepare_args(t, a, 0, [], theirs)
    if not _same(flatten(convert, args), theirs):
        return None
    return kernel._codelibrary.get_cufunc().kernel, convert


_CORE: list = []  # [cuda.core's launch], imported at the first direct launch


def _core_launch() -> Any:
    if not _CORE:
        from cuda.core import launch

        _CORE.append(launch)
    return _CORE[0]


def _config(grid: Any, block: Any, shared: int) -> Any:
    key = (grid, block, shared)
    c = _CONFIGS.get(key)
    if c is None:
        from cuda.core import LaunchConfig

        if len(_CONFIGS) >= 256:
            _CONFIGS.clear()
        c = _CONFIGS[key] = LaunchConfig(grid=grid, block=block, shmem_size=shared)
    return c


def _stream(stream: Any) -> Any:
    handle = int(getattr(stream, "handle", None) or 0) if stream else 0
    s = _STREAMS.get(handle)
    if s is None:
        from numba.cuda.cudadrv import driver as numba_driver

        driver: Any = numba_driver

        if len(_STREAMS) >= 64:
            _STREAMS.clear()
        s = _STREAMS[handle] = driver._to_core_stream(stream)
    return s


def launch(dispatcher: Any, grid: Any, block: Any, stream: Any, args: tuple, device: int | None = None, shared=0):
    """``dispatcher[grid, block, stream, shared](*args)``; directly (see the module) when ``device``, the index of
    the GPU that the arrays live on and that is current, is given. The caller checks that it is current (a
    kind learned on a device keeps that device's loaded function)."""
    if DIRECT and device is not None:
        key = (dispatcher, device, tuple(_mark(a) for a in args))
        kind = _KINDS.get(key, False)
        if kind:
            _core_launch()(_stream(stream), _config(grid, block, shared), kind[0], *flatten(kind[1], args))
            return
        if kind is False and _OTHER not in key[2]:  # the first of its kind: numba's launch, then learn from it
            dispatcher[grid, block, stream, shared](*args)
            if len(_KINDS) >= 256:
                _KINDS.clear()
            try:
                _KINDS[key] = _learn(dispatcher, device, args)
            except Exception:  # noqa: BLE001 - anything numba's internals did not expect: numba's path stays
                _KINDS[key] = None
            return
    dispatcher[grid, block, stream, shared](*args)
