"""Applying the table to imported modules, and what is patched now (so that ``unpatch()`` restores each
original object). Every read or change of this state holds ``lock``."""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from .._locks import ForkSafeLock
from . import _table
from ._dispatch import dispatch
from ._swap import forwarder, original_copy, set_attr, swap_code

lock = ForkSafeLock(reentrant=True)
active: set[str] = set()  # libraries asked for
applied: dict[str, list] = {}  # module name -> undo actions (callables), for modules already patched


class Site(NamedTuple):
    """Where a fast path runs: the patched module, the object that holds the attribute (a class, or the
    module), and the original (for a swapped code object: a copy running the original code)."""

    module: Any
    owner: Any
    original: Callable


def wanted(module_name: str) -> bool:
    """Whether ``module_name`` is to be patched and is not yet (``lock`` held)."""
    entries = _table.BY_MODULE.get(module_name)
    return entries is not None and entries[0].library.name in active and module_name not in applied


def pending() -> list[str]:
    """The wanted modules already imported, in the table's order (``lock`` held)."""
    return [name for name in _table.BY_MODULE if name in sys.modules and wanted(name)]


def _installed_version(library: _table.Library) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(library.distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def version_ok(library: _table.Library) -> bool:
    """Whether the installed version of ``library`` is one the patch was written for; a warning if it is
    installed and is not (called by ``patch()``: the warning names its caller)."""
    import importlib.metadata  # here, not at import (~25 ms)

    try:
        version = importlib.metadata.version(library.distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    if _table.supported(library, version):
        return True
    warnings.warn(
        f"turbometrics.patch: {library.distribution} {version} is not a version the patch was written "
        f"for; it runs unpatched",
        RuntimeWarning,
        stacklevel=3,
    )
    return False


def apply(module_name: str, module: Any) -> None:
    """Rebind ``module``'s entry points; if one fails, restore the others and raise (``lock`` held)."""
    undo: list = []
    try:
        for entry in _table.BY_MODULE[module_name]:
            _install(entry, module, undo)
    except Exception:
        for restore in reversed(undo):
            restore()
        raise
    applied[module_name] = undo


def undo_all() -> None:
    """Restore every original object (``lock`` held)."""
    for name in list(applied):
        for restore in reversed(applied.pop(name)):
            restore()


def _install(entry: _table.EntryPoint, module: Any, undo: list) -> None:
    *path, attribute = entry.attribute.split(".")
    try:
        owner = functools.reduce(getattr, path, module)
        func = getattr(owner, attribute)
    except AttributeError:  # another version of the library, without it: never an error for its import
        lib = entry.library
        warnings.warn(
            f"turbometrics.patch: {entry.module}.{entry.attribute} not found ({lib.distribution} "
            f"{_installed_version(lib)}; the patch was written for {lib.versions}); left unpatched",
            RuntimeWarning,
            stacklevel=4,
        )
        return
    if entry.how == _table.SWAP_CODE:
        import inspect  # here, not at import: `import turbometrics.patch` stays light

        func = inspect.unwrap(func)  # the code under any decorators
    why_not = _resolve(entry.when)(func) if entry.when else None
    if why_not:
        # names the caller of patch() (_install <- apply <- patch), or the import that the hook patched
        warnings.warn(f"turbometrics.patch: {why_not}; left unpatched", RuntimeWarning, stacklevel=4)
        return
    fast = _resolve(entry.fast)
    if entry.how == _table.REBIND:
        impl = _impl(entry, Site(module, owner, func), fast)
        set_attr(undo, owner, attribute, forwarder(func, impl, fast.__module__))
    else:
        swap_code(undo, func, _impl(entry, Site(module, owner, original_copy(func)), fast))


def _impl(entry: _table.EntryPoint, site: Site, fast: Callable) -> Callable:
    """What runs in place of the entry point: ``dispatch`` with its label, fast path and original."""
    return functools.partial(dispatch, entry.label, functools.partial(fast, site), site.original)


def _resolve(name: str) -> Callable:
    """A function named in the table as ``"<module of this package>.<function>"``."""
    module, func = name.rsplit(".", 1)
    return getattr(importlib.import_module(f"{__package__}.{module}"), func)
