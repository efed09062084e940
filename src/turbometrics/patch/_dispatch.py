"""A patched call: the fast path, or the original with a logged reason (strict mode: an error instead);
counted per entry point for ``calls()``."""

from __future__ import annotations

import collections
import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger("turbometrics.patch")


class PatchFallbackError(RuntimeError):
    """Raised under ``TURBOMETRICS_PATCH_STRICT=1`` when a patched call would run the original."""

    __module__ = "turbometrics.patch"  # where it is public


class Fallback(Exception):
    """Raised inside a fast path: run the original instead (the message says why)."""


counts: collections.Counter = collections.Counter()  # (entry point, "accelerated" | "fallback") -> calls


def strict() -> bool:
    return os.environ.get("TURBOMETRICS_PATCH_STRICT", "").strip().lower() not in ("", "0", "false", "no")


def accelerated(name: str) -> None:
    counts[name, "accelerated"] += 1
    if log.isEnabledFor(logging.INFO):
        log.info("%s: accelerated", name)


def fallback(name: str, reason: str, original: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run the original for ``name``, logging ``reason``; in strict mode raise instead, unless the original
    raises for this input itself (then that error is the answer)."""
    counts[name, "fallback"] += 1
    if log.isEnabledFor(logging.INFO):
        log.info("%s: fallback: %s", name, reason)
    if not strict():
        return original(*args, **kwargs)
    original(*args, **kwargs)
    raise PatchFallbackError(f"{name}: fallback: {reason} (TURBOMETRICS_PATCH_STRICT is set)")


def dispatch(name: str, fast: Callable, original: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fast(*args, **kwargs)``; if it raises ``Fallback``, the original (see ``fallback``)."""
    try:
        out = fast(*args, **kwargs)
    except Fallback as why:
        return fallback(name, str(why), original, *args, **kwargs)
    accelerated(name)
    return out
