"""Python's ``random.Random(seed).choices(xs, k=len(xs))`` resamples, summed in compiled code, bit for bit.

lm-evaluation-harness bootstraps its standard errors with ``random.Random(c).choices`` (chunk c of 1000
resamples) and a statistic of each resample; the statistics it bootstraps are functions of sums over the
resample. ``choice_sums`` makes the same draws (``_ext/pyrandom.hpp``: CPython's MT19937 seeding,
``random()`` and ``choices``) and sums rows over them: integer rows exactly, float rows in draw order as the
running Python's built-in ``sum`` adds them (one addition at a time before 3.12, Neumaier's compensated
steps from 3.12). Which of the two this interpreter does is found by asking ``sum`` itself (``sum_mode``),
not by its version number, so a Python that sums some third way gets no float path at all.
"""

from __future__ import annotations

import functools
import math
import random

import numpy as np

from . import _validate
from ._ext import _dense

PLAIN, NEUMAIER = 0, 1

# Sums the two modes tell apart (cancellation, an overflow, a subnormal, -0.0), each resampled as the
# harness resamples.
_PROBES = (
    [1e16, 1.0, -1e16, 3.3e-17, -1.0, 2.0**-1074, -0.0, 0.1],
    [1.7e308, 1e308, -1e308, 5.0],
    [0.1, 0.2, 0.3, -0.6, 1e-30, 7.0, -7.0],
    [math.inf, 1.0, -2.0],
)


@functools.cache
def sum_mode() -> int | None:
    """``PLAIN`` or ``NEUMAIER``: how this Python's ``sum`` adds floats, from its answers on resamples of
    the probes; None if neither mode gives every answer bit for bit."""
    for mode in (PLAIN, NEUMAIER):
        if all(_agrees(xs, mode) for xs in _PROBES):
            return mode
    return None


def _agrees(xs: list[float], mode: int) -> bool:
    got = _dense.python_choice_sums(0, 1, 16, np.array(xs)[:, None], mode, 1)[:, 0]
    g = random.Random(0)
    want = [float(sum(g.choices(xs, k=len(xs)))) for _ in range(16)]
    return [v.hex() for v in got.tolist()] == [v.hex() for v in want]


def choice_sums(chunks: int, per_chunk: int, rows: np.ndarray, mode: int = PLAIN) -> np.ndarray:
    """(chunks * per_chunk, k): row ``c * per_chunk + r`` sums ``rows`` (n, k) over the indices of the r-th
    ``random.Random(c).choices(range(n), k=n)`` call; int64 rows exactly, float64 rows in draw order as
    ``sum`` in ``mode``."""
    return _dense.python_choice_sums(
        0, chunks, per_chunk, np.ascontiguousarray(rows), mode, _validate.default_threads()
    )
