"""Locks that survive fork(): a forked child has only the thread that forked, so a lock another thread
held at that moment would stay held in the child forever; every ``ForkSafeLock`` is made anew there.

The bottom layer, like ``_arrays``: it imports nothing from the package.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

_LOCKS: weakref.WeakSet = weakref.WeakSet()


class ForkSafeLock:
    """``threading.Lock`` (or ``RLock`` with ``reentrant=True``) for ``with`` blocks, fresh in a forked child."""

    __slots__ = ("_make", "_lock", "__weakref__")

    def __init__(self, reentrant: bool = False) -> None:
        self._make = threading.RLock if reentrant else threading.Lock
        self._lock = self._make()
        _LOCKS.add(self)

    def __enter__(self) -> Any:
        return self._lock.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._lock.__exit__(*exc)


def _after_fork_in_child() -> None:
    for lock in list(_LOCKS):
        lock._lock = lock._make()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
