"""The ``turbometrics bench`` report: each case timed per implementation, printed, and written as JSON."""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import turbometrics as tm
from turbometrics import _validate

from .case import Case


def best_time(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm-up: JIT, caches, page faults
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def format_seconds(t: float) -> str:
    """A duration in us, ms or s, three significant digits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale or unit == "us":
            v = t / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    raise AssertionError  # (unreachable)


def _ratio(ours: float, t: float, role: str) -> str:
    """The last column: how turbometrics compares with this row."""
    if role == "read":
        return f"turbometrics takes {ours / t:.2f}x the read"
    if t >= ours:
        return f"turbometrics {t / ours:,.1f}x faster"
    return f"turbometrics {ours / t:.2f}x slower"


def run(all_cases: list[Case], quick: bool = True, repeat: int = 3, out=sys.stdout) -> list[dict]:
    """Time every case and print each implementation's time, and how much faster ours is than it.

    Returns one dict a row (case, impl, role, seconds, ours_seconds, speedup: the row's time over ours)."""
    rows = []
    print(
        f"turbometrics {tm.__version__} bench ({'quick' if quick else 'full'} sizes, "
        f"{_validate.default_threads()} threads, best of {repeat})",
        file=out,
    )
    print(
        "Each row: an implementation's time; the last column says how many times faster (or slower) "
        "turbometrics is than that row; a 'read' row is the time to read the same bytes once.",
        file=out,
    )
    for case in all_cases:
        d = case.setup()
        print(f"\n{case.name}", file=out)
        times = {}
        for name, impl in case.impls.items():
            times[name] = best_time(functools.partial(impl.fn, d), 1 if impl.role == "slow" else repeat) * impl.scale
        ours_name = next(name for name, impl in case.impls.items() if impl.role == "ours")
        ours = times[ours_name]
        for name, impl in case.impls.items():
            t = times[name]
            extra = "(turbometrics)" if name == ours_name else _ratio(ours, t, impl.role)
            if case.bytes_read and impl.role in ("ours", "read"):
                extra += f"   {case.bytes_read(d) / t / 1e9:.1f} GB/s"
            note = f"  ({impl.note})" if impl.note else ""
            print(f"  {name:<30}{format_seconds(t):>10}   {extra}{note}", file=out)
            rows.append(
                {
                    "case": case.name,
                    "impl": name,
                    "role": impl.role,
                    "seconds": t,
                    "ours_seconds": ours,
                    "speedup": t / ours,
                }
            )
        del d
    return rows


def write_json(path: str, rows: list[dict], quick: bool, repeat: int) -> None:
    """The rows of ``run`` and the machine they ran on (``show_config``'s fields), as JSON at ``path``."""
    from ..config import config

    doc = {
        "turbometrics": tm.__version__,
        "sizes": "quick" if quick else "full",
        "repeat": repeat,
        "threads": _validate.default_threads(),
        "config": config(),
        "rows": rows,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")
