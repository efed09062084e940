"""Sums of resampled rows: the inner loop of bootstrap resampling."""
import numpy as np
from numba import njit, prange

_BLOCKS = 16  # fixed, so float sums come out the same whatever the thread count
_SUB = 512    # items whose rows stay in cache while every resample takes its share of them


@njit(parallel=True, cache=True)
def resample_sums(cols, counts, out):
    """out[r, q] = sum over items i of counts[r, i] * cols[q, i] (cols int64 or float64, out the same dtype).

    ``cols`` is the rows transposed (statistics, items), so that each sum runs over contiguous items;
    ``counts`` (resamples, items) says how often each item was drawn (``_ext._dense.bootstrap_counts``).
    Items are split into _BLOCKS fixed blocks summed in item order and then added in block order, so
    float sums do not depend on the thread count; within a block each run of _SUB items is read once
    for all resamples. Items drawn 0 times add 0 (not 0 * inf = NaN). ``counts`` must be
    (r, items) and ``out`` (r, statistics): numba does not bounds-check, so the caller's shapes are all
    that stands between here and a stray write.
    """
    n_res, n = counts.shape
    k = cols.shape[0]
    step = (n + _BLOCKS - 1) // _BLOCKS
    part = np.zeros((_BLOCKS, n_res, k), out.dtype)
    zero = out.dtype.type(0)
    for b in prange(_BLOCKS):
        hi = min(n, (b + 1) * step)
        for s in range(b * step, hi, _SUB):
            e = min(hi, s + _SUB)
            for r in range(n_res):
                cr = counts[r, s:e]
                for q in range(k):
                    cq = cols[q, s:e]
                    acc = part[b, r, q]
                    for j in range(e - s):  # a select, not a branch: it vectorizes and never mispredicts
                        c = cr[j]
                        acc += c * (cq[j] if c != 0 else zero)
                    part[b, r, q] = acc
    for r in range(n_res):
        for q in range(k):
            s = part[0, r, q]
            for b in range(1, _BLOCKS):
                s += part[b, r, q]
            out[r, q] = s
