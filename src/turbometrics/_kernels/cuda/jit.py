"""``kernel()``: ``cuda.jit`` for our kernels, their compiled code kept on disk so a new process skips the JIT.

Compiling one specialisation of a kernel (lowering, NVVM, the LTO link) takes 0.3-3.5 s of
host time (a 2-core AMD EPYC; 1.7-44 s before ``device.inlined``), paid again by every
process's first call: an evaluation script that uses perplexity, top-k accuracy and top-k paid several
seconds before its first result, in each of its ranks. numba-cuda's file cache
(``cache=True``) keeps each compiled kernel (in ``__pycache__`` beside this
package when writable, else numba's user-wide cache directory or
``NUMBA_CACHE_DIR``), keyed by the kernel's bytecode, its closure (our factories'
specialisations and device functions, which pickle the same in every process),
the signature, the GPU's compute capability and the numba-cuda version. Added
here:

- the compile options (launch bounds, opt, debug...: numba keys none of them, so
  top-k with and without launch bounds, or a debugging run's kernels, would share
  entries) and a digest of every kernel source file, in the key: numba watches only
  the file that defines a kernel, and only for its index, while our kernels call
  device functions from other files; the digest is also the index's stamp;
- each entry holds its key, checked when it is loaded: processes filling one
  cache at once (a job's ranks) can leave numba's index naming another entry's
  data file, which then loads as a miss, never as another kernel;
- a cache that cannot be made, read or written (read-only or full disks, a
  numba-cuda release whose internals moved) is logged once a process (logger
  ``turbometrics.gpu``) and switched off: the kernel is compiled as without a cache.

The key holds the NVRTC version and the compute capability, not the driver's or
NVVM's: a cache shared between machines (NFS) should be one per software image.

``TURBOMETRICS_KERNEL_CACHE=0`` turns the cache off; the CUDA simulator has none.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from numba import cuda

from .device import SIM

CACHE = os.environ.get("TURBOMETRICS_KERNEL_CACHE", "1") != "0"


def _sources_digest() -> str:
    """A digest of the kernels' source files: the cache's staleness stamp."""
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


_WARNED: list = []  # a cache problem is reported once a process (one per kernel would repeat it a dozen times)
log = logging.getLogger("turbometrics.gpu")


def _warn_once(text: str) -> None:
    """Log (not warn: a test suite run with warnings as errors must still import the kernels) a cache problem."""
    if not _WARNED:
        _WARNED.append(text)
        log.warning(
            "turbometrics: %s; GPU kernels are compiled in each process as without a cache (NUMBA_CACHE_DIR "
            "names a writable directory; TURBOMETRICS_KERNEL_CACHE=0 turns the cache off)",
            text,
        )


def _cache_class() -> Any:
    """numba-cuda's kernel cache with our key, stamp and checks, failures reported once; None where its internals
    are not what this was written against (no cache then)."""
    try:
        from numba.cuda.core.caching import IndexDataCacheFile
        from numba.cuda.dispatcher import CUDACache
    except ImportError:
        return None
    needed = (
        (CUDACache, ("_index_key", "_save_overload", "_load_overload", "load_overload", "save_overload", "disable")),
        (IndexDataCacheFile, ("save", "load", "_load_index", "_save_index")),
    )
    if not all(hasattr(c, name) for c, names in needed for name in names):
        return None
    digest = _sources_digest()

    class KernelCache(CUDACache):
        def __init__(self, py_func: Any, options: tuple = ()) -> None:
            super().__init__(py_func)
            self._cache_file._source_stamp = ("turbometrics kernels", digest)
            self._options = options  # the compile options (opt, debug, launch bounds...): numba keys none

        def _index_key(self, sig: Any, codegen: Any) -> Any:
            # the sources' digest in the key too: the stamp guards the index, this the entry (an index written
            # for new sources can name a data file left by old ones when its own write failed)
            return (*super()._index_key(sig, codegen), ("turbometrics", digest, self._options))

        # numba's own two methods, with the key saved beside the kernel and checked when loaded: processes that
        # fill one cache at once (the ranks of a job) can leave an index entry naming another entry's data file
        # (each reads the index, picks the first free file name, writes both), which would hand one
        # specialisation another's kernel. A mismatch is a miss: compiled and saved again.
        def _save_overload(self, sig: Any, data: Any) -> None:
            if not self._enabled or not self._impl.check_cachable(data):
                return
            self._impl.locator.ensure_cache_path()
            key = self._index_key(sig, data.codegen)
            index = self._cache_file._load_index()
            if index.pop(key, None) is not None:  # saved after a miss: its file may be another key's, keep that
                self._cache_file._save_index(index)
            self._cache_file.save(key, (key, self._impl.reduce(data)))  # (into the first free file name)

        def _load_overload(self, sig: Any, target_context: Any) -> Any:
            if not self._enabled:
                return None
            key = self._index_key(sig, target_context.codegen())
            got = self._cache_file.load(key)
            if not (isinstance(got, tuple) and len(got) == 2 and got[0] == key):
                return None
            return self._impl.rebuild(target_context, got[1])

        def load_overload(self, sig: Any, target_context: Any) -> Any:
            try:
                return super().load_overload(sig, target_context)
            except Exception as e:  # noqa: BLE001 - a cache must never fail the call: compile instead
                self._off("read", e)
                return None

        def save_overload(self, sig: Any, data: Any) -> None:
            try:
                super().save_overload(sig, data)
            except Exception as e:  # noqa: BLE001
                self._off("written", e)

        def _off(self, what: str, e: Exception) -> None:
            self.disable()
            _warn_once(f"the compiled-kernel cache could not be {what} ({e!r}); it is off for that kernel")

    return KernelCache


_CACHE_CLASS: list = []  # [class or None], made on first use


def kernel(launch_bounds: tuple | None = None) -> Callable:
    """``@kernel()`` / ``@kernel(launch_bounds=(threads, blocks))``: ``cuda.jit`` with the disk cache above."""

    def make(fn: Callable) -> Any:
        if SIM:  # the simulator's jit takes no launch bounds and keeps nothing
            return cuda.jit(fn)
        options = {} if launch_bounds is None else {"launch_bounds": launch_bounds}
        disp = cuda.jit(**options)(fn)
        if CACHE:
            if not _CACHE_CLASS:
                _CACHE_CLASS.append(_cache_class())
            if _CACHE_CLASS[0] is not None:
                compiled_with = tuple(sorted((k, repr(v)) for k, v in disp.targetoptions.items()))
                try:
                    disp._cache = _CACHE_CLASS[0](disp.py_func, compiled_with)
                except Exception as e:  # noqa: BLE001 - no cache directory usable: compile as before
                    _warn_once(f"no directory for compiled kernels ({e!r})")
        return disp

    return make
