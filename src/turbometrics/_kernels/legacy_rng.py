"""rouge-score's bootstrap resampling, bit for bit and fast: NumPy's legacy global RNG stream, continued here.

rouge-score's ``BootstrapAggregator`` draws ``np.random.choice(np.arange(n), size=n)`` from NumPy's
legacy global ``RandomState`` (MT19937) once per resample and takes the mean of the drawn rows. Legacy
bounded draws cost NumPy 3-4 ns each, more than the means; here the same MT19937 words are generated
(a block of 624 at a time, tempered in one loop) and numpy's masked rejection (``randint`` below 2**32)
picks the rows; then each resample's rows are added in draw order, as ``np.mean`` adds them, in parallel
over resamples. The state is written
back, so the caller's RNG ends where NumPy's own calls would have left it.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

_N = 624


@njit(cache=True)
def _temper(key, buf, start):
    for i in range(start, _N):
        y = key[i]
        y ^= y >> np.uint32(11)
        y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
        y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
        y ^= y >> np.uint32(18)
        buf[i] = y


@njit(cache=True)
def _next_block(key, buf):
    """MT19937's regeneration of its 624 words (numpy's ``mt19937_gen``), then their tempered outputs."""
    upper, lower, a, one = np.uint32(0x80000000), np.uint32(0x7FFFFFFF), np.uint32(0x9908B0DF), np.uint32(1)
    for i in range(227):
        y = (key[i] & upper) | (key[i + 1] & lower)
        key[i] = key[i + 397] ^ (y >> one) ^ (a * (y & one))
    for i in range(227, 623):
        y = (key[i] & upper) | (key[i + 1] & lower)
        key[i] = key[i - 227] ^ (y >> one) ^ (a * (y & one))
    y = (key[623] & upper) | (key[0] & lower)
    key[623] = key[396] ^ (y >> one) ^ (a * (y & one))
    _temper(key, buf, 0)


@njit(cache=True)
def _draw(key, pos, n, out):
    """out[:] = numpy's legacy bounded draws in [0, n) (2 <= n < 2**32) from the state (key, pos); returns pos."""
    limit = np.uint32(n - 1)
    mask = limit
    for s in (1, 2, 4, 8, 16):
        mask |= mask >> np.uint32(s)
    buf = np.empty(_N, np.uint32)
    _temper(key, buf, pos)  # the words not yet used
    j, total = 0, out.size
    while j < total:
        if pos == _N:
            _next_block(key, buf)
            pos = 0
        v = buf[pos] & mask  # numpy's masked rejection: keep the masked word if it is in range
        pos += 1
        if v <= limit:
            out[j] = v
            j += 1
    return pos


@njit(parallel=True, cache=True)
def _ordered_means(rows, idx, out):
    """out[r] = the mean of rows[idx[r, j]], summed over j in draw order from the first drawn row (np.mean's
    order), over the draw count. ``idx`` comes from ``_draw`` (in range): numba does not bounds-check."""
    n_samples, n = idx.shape
    m = rows.shape[1]
    for r in prange(n_samples):
        if m == 3:  # rouge-score's (P, R, F): three sums kept in registers
            i = idx[r, 0]
            a0, a1, a2 = rows[i, 0], rows[i, 1], rows[i, 2]
            for j in range(1, n):
                i = idx[r, j]
                a0 += rows[i, 0]
                a1 += rows[i, 1]
                a2 += rows[i, 2]
            out[r, 0], out[r, 1], out[r, 2] = a0 / n, a1 / n, a2 / n
            continue
        acc = rows[idx[r, 0]].copy()
        for j in range(1, n):
            i = idx[r, j]
            for q in range(m):
                acc[q] += rows[i, q]
        for q in range(m):
            out[r, q] = acc[q] / n


def resample_means(rs: np.random.RandomState, rows: np.ndarray, n_samples: int) -> np.ndarray:
    """What ``n_samples`` times ``np.mean(rows[rs.choice(np.arange(n), size=n)], axis=0)`` gives, as float64
    (n_samples, 3), and ``rs`` left in the same state (``rows``: float64 (n, 3), 2 <= n < 2**32; NumPy
    adds such rows in order, while a single column it may sum pairwise, so only (n, 3) is claimed)."""
    name, key, pos, has_gauss, gauss = rs.get_state(legacy=True)
    key = key.copy()
    out = np.empty((n_samples, rows.shape[1]))
    idx = np.empty((n_samples, rows.shape[0]), np.uint32)
    pos = _draw(key, int(pos), rows.shape[0], idx.reshape(-1))  # one stream, in order: the state's next words
    rs.set_state((name, key, pos, has_gauss, gauss))
    _ordered_means(np.ascontiguousarray(rows, dtype=np.float64), idx, out)  # parallel over resamples
    return out
