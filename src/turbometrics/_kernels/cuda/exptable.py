"""``score_rows`` on bf16 rows read a block per row (the LM head's slices) takes each element's exp from a table: the
float64 exp(v) of every bf16 value with 2**-8 <= |v| < 512 (magnitude bits SCORE_LO up to SCORE_HI, positive
values then negative ones), copied to shared memory by each block. A row's sum of exp(v) then costs a shared
load and an add an element, not a float64 exp (about 20 float64 operations: the kernel ran at a third of
fold_rows' speed, docs/gpu.md). |v| < 2**-8 takes exp's Taylor polynomial to v**5 (error below 2**-48 / 720
relative), v <= -512 the device's exp (rare: masked logits); a row holding a finite v >= 512 (where a sum of
exp(v) could overflow) or whose values are all at or below -512 (where exp(v) loses its precision) is read
again the exp-per-element way. Each value is exp's correctly rounded float64 or within an ulp of it,
as the device's exp: the sum is as accurate as the per-element path's, in another order.
"""

from __future__ import annotations

import math

import numpy as np
from numba import float64, int64, uint16, uint32, uint64

from .device import bf16_to_f32, inlined

SCORE_LO, SCORE_HI = 0x3B80, 0x4400
SCORE_W = SCORE_HI - SCORE_LO
SCORE_TABLE = 2 * SCORE_W  # float64 entries (34,816 bytes)
SCORE_MIN_ROW = 8192  # elements: shorter rows (16 KiB of bf16) take the per-element exps (the copy costs more)
# 32-bit unsigned constants (numba types a Python int as int64, and 64-bit integer arithmetic takes two
# instructions an operation on the GPU)
_LO, _HI, _W = np.uint32(SCORE_LO), np.uint32(SCORE_HI), np.uint32(SCORE_W)
_MAG, _SIGN = np.uint32(0x7FFF), np.uint32(15)
_POS_INF, _NEG_INF = np.uint32(0x7F80), np.uint32(0xFF80)
_C2, _C3, _C4, _C5 = 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120


def score_table() -> np.ndarray:
    """The exp table's SCORE_TABLE float64 entries (Python's exp: correctly rounded but in rare cases)."""
    bits = (np.arange(SCORE_LO, SCORE_HI, dtype=np.uint32) << 16).view(np.float32)
    return np.array([math.exp(float(v)) for v in bits] + [math.exp(-float(v)) for v in bits])


@inlined
def table_step(b, j, m, a, s, bad, big, tab):
    """One bf16 element (bits b, int16) at index j: exp(v) added to s from the table (the polynomial below 2**-8,
    the device's exp at or below -512), the thread's max m and its first index a kept; NaN and +inf counted in
    bad, finite v >= 512 in big."""
    u = uint32(uint16(b))
    mag = u & _MAG
    v = bf16_to_f32(b)
    if _LO <= mag < _HI:
        s += tab[uint64(mag - _LO + (u >> _SIGN) * _W)]
    elif mag < _LO:
        d = float64(v)
        s += 1.0 + d * (1.0 + d * (_C2 + d * (_C3 + d * (_C4 + d * _C5))))
    elif mag > _POS_INF or u == _POS_INF:
        return m, a, s, bad + 1, big
    elif u >> _SIGN == 0:
        big += 1
    elif u != _NEG_INF:  # v <= -512: its own exp (0 below -745), rare; the row's max decides (_group_score_table)
        s += math.exp(float64(v))
    if v > m:
        m = v
        a = int64(j)
    return m, a, s, bad, big
