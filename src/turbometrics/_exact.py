"""An exactly rounded, order-independent float64 sum that merges: the state of streaming sums.

Each value is split into its 53-bit integer mantissa (in two 27/26-bit halves)
and its exponent; the halves are summed in int64 per exponent (exact for up to
2**36 values; ``_dense.exact_bins``, compiled), so adding arrays in any grouping and order gives
the same state, and ``value()`` rounds the exact total once. NaN and infinities are counted
aside and give NaN / ±inf as IEEE addition would.

Small sums (a one-shot metric call on a few tokens) skip the bins: finite
values are kept as they come, up to ``_PENDING`` of them, and a compiled fsum
(``_dense.fsum``: Shewchuk's partials, math.fsum's value) rounds their exact
total, also correctly (round half to even), so the bits are the same either
way; more values, a merge with binned state, an intermediate overflow or an
extreme spread of exponents move them into the bins.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ._ext import _dense

if TYPE_CHECKING:
    import numpy.typing as npt  # (annotations only: importing it costs ~2 ms)

_BINS = 2200  # frexp exponents of finite float64 lie in [-1073, 1024]
_OFFSET = 1080
_PENDING = 256  # finite values held unbinned: fsum is faster than the bins' fixed cost below this


class ExactSum:
    __slots__ = ("hi", "lo", "pos_inf", "neg_inf", "nan", "pending", "n_pending")

    def __init__(self) -> None:
        # the int64 bins, made on first use
        self.hi: npt.NDArray[np.int64] | None = None
        self.lo: npt.NDArray[np.int64] | None = None
        self.pos_inf = self.neg_inf = self.nan = 0
        self.pending: list[np.ndarray] = []
        self.n_pending = 0

    def add(self, values: np.ndarray) -> ExactSum:
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if self.hi is None and self.n_pending + v.size <= _PENDING and np.isfinite(v).all():
            self.pending.append(v)
            self.n_pending += v.size
            return self
        return self._bin(v)

    def _bins(self) -> ExactSum:
        """Make the bins, moving any pending values into them (values are pending only before)."""
        self._binned()
        return self

    def _binned(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The bins (hi, lo), made on first use as ``_bins`` makes them."""
        if self.hi is None or self.lo is None:  # (both or neither)
            self.hi = np.zeros(_BINS, dtype=np.int64)
            self.lo = np.zeros(_BINS, dtype=np.int64)
            pending, self.pending, self.n_pending = self.pending, [], 0
            for v in pending:
                self._bin(v)
        return self.hi, self.lo

    def _bin(self, v: np.ndarray) -> ExactSum:
        hi, lo = self._binned()
        nan, pos_inf, neg_inf = _dense.exact_bins(np.ascontiguousarray(v, dtype=np.float64), hi, lo, _OFFSET)
        self.nan += nan
        self.pos_inf += pos_inf
        self.neg_inf += neg_inf
        return self

    def merge(self, other: ExactSum) -> ExactSum:
        out = ExactSum()
        for part in (self, other):
            if part.hi is not None:
                (hi, lo), (part_hi, part_lo) = out._binned(), part._binned()
                out.hi, out.lo = hi + part_hi, lo + part_lo
            for v in part.pending:
                out.add(v)
        out.pos_inf, out.neg_inf = self.pos_inf + other.pos_inf, self.neg_inf + other.neg_inf
        out.nan = self.nan + other.nan
        return out

    __add__ = merge

    def value(self) -> float:
        if self.hi is None:  # only finite pending values
            s = _dense.fsum(np.concatenate(self.pending)) if self.pending else 0.0
            if s is not None:
                return s
        hi, lo = self._binned()  # made here for an intermediate overflow: the bins round the true total
        if self.nan or (self.pos_inf and self.neg_inf):
            return float("nan")
        if self.pos_inf:
            return float("inf")
        if self.neg_inf:
            return float("-inf")
        parts = _dense.exact_parts(hi, lo, _OFFSET)
        if parts is not None:
            try:
                return math.fsum(parts)
            except OverflowError:  # an intermediate overflow: the integer total below rounds it
                pass
        nz = np.nonzero(hi | lo)[0]
        if nz.size == 0:
            return 0.0
        base = int(nz[0]) - _OFFSET - 53  # every term is an integer multiple of 2**base
        total = sum(((int(hi[i]) << 27) + int(lo[i])) << (int(i) - _OFFSET - 53 - base) for i in nz)
        return total * 2.0**base if base >= -1074 and abs(total) < 2**53 else _ratio(total, base)

    def copy(self) -> ExactSum:
        out = ExactSum()
        if self.hi is not None:
            hi, lo = self._binned()
            out.hi, out.lo = hi.copy(), lo.copy()
        out.pos_inf, out.neg_inf, out.nan = self.pos_inf, self.neg_inf, self.nan
        out.pending, out.n_pending = list(self.pending), self.n_pending
        return out

    def __getstate__(self):
        return (self.hi, self.lo, self.pos_inf, self.neg_inf, self.nan, self.pending, self.n_pending)

    def __setstate__(self, state):
        self.hi, self.lo, self.pos_inf, self.neg_inf, self.nan, self.pending, self.n_pending = state


def _ratio(total: int, base: int) -> float:
    """total * 2**base correctly rounded (int true division rounds correctly); overflow gives ±inf."""
    try:
        return total / (1 << -base) if base < 0 else float(total << base)
    except OverflowError:
        return float("inf") if total > 0 else float("-inf")


def exact_sum(values: np.ndarray) -> float:
    """The exactly rounded sum of ``values`` (NaN for NaN or +inf with -inf, as IEEE addition)."""
    v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    if v.size <= _PENDING:  # small: the compiled fsum alone (no state to keep), as ExactSum.value rounds
        s = _dense.fsum(v)  # pending values; None for NaN/inf or an intermediate overflow: the bins decide
        if s is not None:
            return s
    return ExactSum().add(v).value()
