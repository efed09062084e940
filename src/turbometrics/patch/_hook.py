"""The import hook: patches a module of the table right after it is first imported (for libraries
imported after ``patch()``). ``patch()`` puts ``hook`` first on ``sys.meta_path``; ``unpatch()`` removes it."""

from __future__ import annotations

import importlib.abc
import importlib.util
import threading
from typing import Any

from . import _apply


class _ImportHook(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self._busy = threading.local()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if getattr(self._busy, "on", False):
            return None
        with _apply.lock:
            if not _apply.wanted(fullname):
                return None
        self._busy.on = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _PatchingLoader(spec.loader, fullname)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, name: str) -> None:
        self._loader, self._name = loader, name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        with _apply.lock:
            if _apply.wanted(self._name):
                _apply.apply(self._name, module)

    def __getattr__(self, name: str) -> Any:  # get_code, get_source, ... for runpy and tracebacks
        return getattr(self._loader, name)


hook = _ImportHook()
