"""What a benchmark case is (``Case``, ``Impl``) and the helpers every group of cases uses."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from turbometrics import _validate


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@dataclass
class Impl:
    fn: Callable[[dict], Any]
    role: str  # "ours", "variant" (ours, other options), "oracle", "torch", "slow", "read"
    scale: float = 1.0  # multiply the measured time (slow/ runs on a subset of rows)
    note: str = ""


@dataclass
class Case:
    name: str
    setup: Callable[[], dict]
    impls: dict[str, Impl] = field(default_factory=dict)
    bytes_read: Callable[[dict], int] | None = None  # for the effective bandwidth
    # "simd": runs the dense C++ kernels, so it is timed once per SIMD path;
    # "threads": compared between the OpenMP build and the std::thread pool one
    groups: tuple[str, ...] = ()


def build_variant(simd: bool) -> str:
    """What a case ran on, for its name: the SIMD path for dense cases, and the
    std::thread pool when this build has no OpenMP."""
    from .._ext._dense import THREADING, active_path

    parts = [active_path()] if simd else []
    if THREADING != "OpenMP":
        parts.append("no OpenMP: " + THREADING)
    return f" [{', '.join(parts)}]" if parts else ""


def _torch():
    import torch

    torch.set_num_threads(_validate.default_threads())  # the same thread count as our kernels
    return torch


def _read(d):
    """A plain multi-threaded read of the whole array (torch.sum; numpy's sum is single-threaded).

    16-bit arrays are read as float32 words (pairs of 16-bit values): torch's float16/bfloat16 and int16
    sums convert element by element and run far below memory speed.
    """
    if "xt" in d:
        xt = d["xt"]
        if xt.element_size() == 2 and xt.is_contiguous() and xt.numel() % 2 == 0:
            xt = xt.view(_torch().float32)
        return float(xt.sum())
    return float(d["x"].sum())


def _read_impl() -> Impl:
    return Impl(_read, "read", note="torch.sum, all threads" if have("torch") else "numpy sum, 1 thread")


def _have_16bit() -> bool:
    return have("ml_dtypes") or have("torch")


def _slow_subset(rows: int, fn: Callable[[dict, int], Any], total: int) -> Impl:
    return Impl(lambda d: fn(d, rows), "slow", total / rows, f"{rows} rows, scaled x{total / rows:g}")
