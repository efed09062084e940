"""``tm.show_config()``: what a bug report needs, like ``numpy.show_config()``.

The build (version, compiled SIMD paths, OpenMP or the std::thread pool), what
this machine runs (CPU, the SIMD path in use and why, default thread count),
Numba's version (the GPU kernels are numba.cuda; every CPU kernel is C++) and
the GPU (numba-cuda, a usable device). Nothing here starts a computation.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

from ._validate import default_threads


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("model name", "cpu model", "hardware")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _simd() -> dict[str, Any]:
    from ._ext import _dense

    out: dict[str, Any] = {
        "compiled": list(_dense.PATHS),
        "supported by this CPU": list(_dense.SUPPORTED),
        "TURBOMETRICS_SIMD": os.environ.get("TURBOMETRICS_SIMD", ""),
    }
    try:
        out["in use"] = _dense.active_path()
    except RuntimeError as e:
        out["in use"] = f"none: {e}"
    return out


def _numba() -> dict[str, Any]:
    from importlib import metadata

    try:  # the installed version, without importing numba (~0.15 s)
        return {"version": metadata.version("numba")}
    except metadata.PackageNotFoundError:
        return {"installed": False}


def _has_cuda_driver() -> bool:
    """NVIDIA's driver library loads: without it numba.cuda (~0.5 s to import) could only say no."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


def _gpu() -> dict[str, Any]:
    import importlib.util

    if importlib.util.find_spec("numba_cuda") is None:
        return {"usable": False, "why": 'numba-cuda is not installed (pip install "turbometrics[cuda]")'}
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") != "1" and not _has_cuda_driver():
        return {"usable": False, "why": "no NVIDIA driver (libcuda) on this machine"}
    from numba import config as numba_config
    from numba import cuda

    if getattr(numba_config, "ENABLE_CUDASIM", 0):  # numba's config attributes are set at run time
        return {"usable": False, "why": "NUMBA_ENABLE_CUDASIM=1: the CUDA simulator stands in for a GPU"}
    try:
        if not cuda.is_available():
            return {"usable": False, "why": "numba.cuda.is_available() is False (no driver or no device)"}
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        return {"usable": True, "device": name, "compute capability": "{}.{}".format(*dev.compute_capability)}
    except Exception as e:  # a broken driver must not break a bug report
        return {"usable": False, "why": f"{type(e).__name__}: {e}"}


def config() -> dict[str, dict[str, Any]]:
    """Everything :func:`show_config` prints, as nested dicts."""
    from ._ext import _dense
    from ._version import __version__

    return {
        "turbometrics": {
            "version": __version__,
            "python": sys.version.split()[0],
            "platform": f"{platform.system()} {platform.machine()}",
        },
        "CPU": {"model": _cpu_model(), "cores": os.cpu_count()},
        "SIMD paths": _simd(),
        "threads": {
            "backend": _dense.THREADING,
            "default num_threads": default_threads(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", ""),
        },
        "Numba": _numba(),
        "GPU": {**_gpu(), **_gpu_switches()},
    }


def _gpu_switches() -> dict[str, str]:
    """The GPU path's two switches (docs/gpu.md): launches past numba's per-call work, compiled kernels on disk."""
    from . import _launch

    cache = os.environ.get("TURBOMETRICS_KERNEL_CACHE", "1") != "0"  # (read where the kernels are made)
    return {"direct launches": "on" if _launch.DIRECT else "off", "compiled-kernel cache": "on" if cache else "off"}


def show_config(mode: str = "stdout") -> dict[str, dict[str, Any]] | None:
    """Print the build and runtime configuration (``mode="stdout"``) or return it (``mode="dicts"``).

    Paste its output into bug reports: it names the SIMD path that ran, which
    is the first thing that differs between two machines.

    Parameters
    ----------
    mode : {"stdout", "dicts"}

    Returns
    -------
    dict or None
        With ``mode="dicts"``: sections (turbometrics, CPU, SIMD paths, threads, Numba, GPU) of
        key/value pairs.

    Examples
    --------
    >>> import turbometrics as tm
    >>> list(tm.show_config(mode="dicts"))
    ['turbometrics', 'CPU', 'SIMD paths', 'threads', 'Numba', 'GPU']
    >>> gpu = tm.show_config(mode="dicts")["GPU"]  # with the GPU path's switches (docs/gpu.md)
    >>> gpu["direct launches"], gpu["compiled-kernel cache"]
    ('on', 'on')
    """
    if mode not in ("stdout", "dicts"):
        raise ValueError(f"mode must be 'stdout' or 'dicts', got {mode!r}")
    info = config()
    if mode == "dicts":
        return info
    for section, items in info.items():
        print(f"{section}:")
        for key, value in items.items():
            if isinstance(value, list):
                value = ", ".join(map(str, value)) or "-"
            print(f"  {key}: {value if value != '' else '(unset)'}")
    return None
