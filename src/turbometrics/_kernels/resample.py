"""Sums of resampled rows: the inner loop of bootstrap resampling."""
import numpy as np
from numba import njit, prange

_BLOCKS = 16  # fixed, so float sums come out the same whatever the thread count


@njit(parallel=True, cache=True)
def resample_sums(rows, idx, out):
    """out[r] = sum over j of rows[idx[r, j]] (rows int64 or float64, out the same dtype).

    Counting how often each item was drawn and then streaming through the rows
    once per chunk of resamples is 2-3x faster than gathering rows at random
    (the rows of a million segments do not fit in cache). ``idx`` holds
    indices drawn by the caller in [0, len(rows)) and fewer than 2**31 per
    resample; numba does not bounds-check, so nothing else may reach here.
    """
    n_res, m = idx.shape
    n, k = rows.shape
    counts = np.zeros((n_res, n), np.int32)
    for r in prange(n_res):
        for j in range(m):
            counts[r, idx[r, j]] += 1
    step = (n + _BLOCKS - 1) // _BLOCKS
    part = np.zeros((_BLOCKS, n_res, k), out.dtype)
    for b in prange(_BLOCKS):
        for i in range(b * step, min(n, (b + 1) * step)):
            for r in range(n_res):
                c = counts[r, i]
                if c:
                    for q in range(k):
                        part[b, r, q] += c * rows[i, q]
    for r in range(n_res):
        for q in range(k):
            s = part[0, r, q]
            for b in range(1, _BLOCKS):
                s += part[b, r, q]
            out[r, q] = s
