"""NumPy's legacy ``RandomState`` integer stream and ``np.mean`` of gathered rows, bit for bit and fast.

rouge-score's ``BootstrapAggregator._bootstrap_resample`` draws
``np.random.choice(np.arange(n), size=n)`` from NumPy's legacy global ``RandomState`` once per resample
and takes ``np.mean(matrix[sample_idx, :], axis=0)``. Those draws are ``randint(0, n, size=n)``, and
consecutive calls are one ``randint(0, n, size=(S, n))`` call, which NumPy makes one word at a time
through a function pointer (about 3 ns a draw). Here the same MT19937 words are made in Numba from the
RandomState's own state, NumPy's legacy bounded-integer algorithm (masked rejection) turns them into
indices, and the state is written back, so the caller's RNG ends exactly where NumPy's calls would have
left it. The means are then summed in the order ``np.add.reduce`` uses, in parallel over resamples.

Checked against NumPy's sources (``random/src/mt19937/mt19937.[ch]``, ``random_bounded_uint64_fill`` in
``random/src/distributions/distributions.c``) and empirically (``tests/test_legacy_rng.py``).
"""
from __future__ import annotations

import operator

import numpy as np
from numba import njit, prange

_N = 624            # MT19937 state words
_M = 397
_U32 = 0xFFFFFFFF
_INT64_MAX = 2 ** 63 - 1
_CHUNK = 1 << 20    # indices drawn at a time by bootstrap_means_legacy (8 MiB of int64)


# ---------------------------------------------------------------- MT19937 (numpy's mt19937_gen / mt19937_next)
# The twist and the single-word path work on int64 (every word fits, and numba turns uint64 mixed with int
# literals into float64); the hot loop of _fill_masked32 uses uint32/uint64 typed constants throughout.

@njit(cache=True, nogil=True)
def _regenerate(key):
    """The 624-word twist, in place (numpy's ``mt19937_gen``); the caller resets ``pos`` to 0."""
    for i in range(_N - _M):
        y = (np.int64(key[i]) & 0x80000000) | (np.int64(key[i + 1]) & 0x7FFFFFFF)
        key[i] = np.int64(key[i + _M]) ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)
    for i in range(_N - _M, _N - 1):
        y = (np.int64(key[i]) & 0x80000000) | (np.int64(key[i + 1]) & 0x7FFFFFFF)
        key[i] = np.int64(key[i + _M - _N]) ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)
    y = (np.int64(key[_N - 1]) & 0x80000000) | (np.int64(key[0]) & 0x7FFFFFFF)
    key[_N - 1] = np.int64(key[_M - 1]) ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)


@njit(cache=True, nogil=True, inline="always")
def _temper(w):
    y = np.int64(w)
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


@njit(cache=True, nogil=True)
def _next32(key, pos):
    """One ``mt19937_next``: (word, new pos); the twist happens lazily, when a word is wanted at pos 624."""
    if pos == _N:
        _regenerate(key)
        pos = 0
    return _temper(key[pos]), pos + 1


@njit(cache=True, nogil=True)
def _fill_masked32(key, pos, rng, out):
    """out[:] = numpy's ``buffered_bounded_masked_uint32`` draws in [0, rng] (1 <= rng <= 2**32 - 1):
    ``v = next_uint32() & mask`` until ``v <= rng``, mask the smallest 2**k - 1 >= rng (for rng = 2**32 - 1
    that is every word unmasked, numpy's plain ``next_uint32`` branch). Returns the new pos."""
    mask = rng
    for s in (1, 2, 4, 8, 16):
        mask |= mask >> s
    # Unsigned indices and uint32 words: numba then drops its negative-index wraparound and LLVM vectorizes
    # the tempering (3x faster than the same loop on int64).
    umask, urng = np.uint32(mask), np.uint32(rng)
    one, n_words = np.uint64(1), np.uint64(_N)
    buf = np.empty(_N, np.uint32)
    total, j, p0 = np.uint64(out.size), np.uint64(0), np.uint64(pos)
    while j < total:
        if p0 == n_words:
            _regenerate(key)
            p0 = np.uint64(0)
        p = p0
        while p < n_words:  # temper (and mask) the block's remaining words, vectorized
            y = key[p]
            y ^= y >> np.uint32(11)
            y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
            y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
            y ^= y >> np.uint32(18)
            buf[p] = y & umask
            p += one
        p = p0
        if total - j >= n_words - p0:
            # the output cannot fill up inside this block: no end test, and no branch on the draw (a
            # rejected word is written, then overwritten, as j does not advance)
            while p < n_words:
                v = buf[p]
                out[j] = v
                j += np.uint64(v <= urng)
                p += one
        else:  # the last block: stop at the word that completes the output
            while p < n_words:
                v = buf[p]
                p += one
                if v <= urng:
                    out[j] = v
                    j += one
                    if j == total:
                        return np.int64(p)
        p0 = n_words
    return np.int64(p0)


@njit(cache=True, nogil=True)
def _fill_masked64(key, pos, rng, out):
    """Numpy's ``bounded_masked_uint64`` for 2**32 <= rng < 2**63: 64-bit words made by
    ``mt19937_next64`` (the first 32-bit word is the high half, as NumPy's build evaluates it; checked in the
    tests), masked, rejected while > rng. Returns the new pos."""
    mask = np.uint64(rng)
    for s in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(s)
    urng = np.uint64(rng)
    for j in range(out.size):
        while True:
            hi, pos = _next32(key, pos)
            lo, pos = _next32(key, pos)
            v = ((np.uint64(hi) << np.uint64(32)) | np.uint64(lo)) & mask
            if v <= urng:
                out[j] = np.int64(v)
                break
    return pos


@njit(cache=True, nogil=True)
def _fill(key, pos, rng, out):
    """``random_bounded_uint64_fill(off=0, rng, use_masked=True)`` into int64 ``out`` (flat); returns pos."""
    if rng == 0:  # numpy fills with ``off`` and consumes no word
        out[:] = 0
        return pos
    if rng <= _U32:
        return _fill_masked32(key, pos, rng, out)
    return _fill_masked64(key, pos, rng, out)


# ---------------------------------------------------------------- the state of a RandomState, out and back

class _MTState:
    """A RandomState's MT19937 words and position, held under the bit generator's lock (as NumPy's own
    draws are), written back on exit; ``has_gauss``/``gauss`` travel untouched."""

    def __init__(self, rs: np.random.RandomState):
        if not isinstance(rs, np.random.RandomState):
            raise TypeError(f"expected a numpy.random.RandomState, got {type(rs).__name__}")
        self.rs = rs
        self.lock = getattr(getattr(rs, "_bit_generator", None), "lock", None)

    def __enter__(self):
        if self.lock is not None:
            self.lock.acquire()
        try:
            self.state = self.rs.get_state(legacy=False)
            self.is_mt = self.state["bit_generator"] == "MT19937"
            if self.is_mt:
                self.key = np.array(self.state["state"]["key"], dtype=np.uint32)  # our own copy, twisted in place
                self.pos = int(self.state["state"]["pos"])
        except BaseException:
            if self.lock is not None:
                self.lock.release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None and self.is_mt:
                self.state["state"] = {"key": self.key, "pos": self.pos}
                self.rs.set_state(self.state)
        finally:
            if self.lock is not None:
                self.lock.release()
        return False


def _as_int(n):
    try:
        return operator.index(n)
    except TypeError:
        return None


# ---------------------------------------------------------------- public API

def randint_legacy(rs: np.random.RandomState, n: int, shape) -> np.ndarray:
    """``rs.randint(0, n, size=shape)``, the same values and the same final state of ``rs``, faster.

    Parameters
    ----------
    rs : numpy.random.RandomState
        The generator to draw from (e.g. ``np.random.mtrand._rand``, the one behind ``np.random.*``). Its
        MT19937 stream is continued from ``rs.get_state()`` and the new state written back with
        ``rs.set_state``; the pending Gaussian (``has_gauss``, ``cached_gaussian``) is left as it was.
        The bit generator's lock is held meanwhile, as NumPy's own draws hold it.
    n : int
        Exclusive upper bound, ``1 <= n <= 2**63 - 1``. ``n == 1`` gives zeros and consumes no word, as
        NumPy does.
    shape : int or tuple of int
        Output shape.

    Returns
    -------
    numpy.ndarray
        int64 array of ``shape``.

    Notes
    -----
    NumPy's legacy algorithm for int64 ``randint`` (``random_bounded_uint64_fill`` with masked rejection)
    on range ``rng = n - 1``: for ``rng < 2**32`` 32-bit words ``& mask`` (mask the smallest ``2**k - 1 >=
    rng``), rejected while ``> rng``; for larger ranges 64-bit words (two 32-bit words, the first the high
    half) masked and rejected the same way. Arguments NumPy would reject (``n < 1``, non-integers), and a
    RandomState on a bit generator other than MT19937, are passed to ``rs.randint`` itself.
    """
    if not isinstance(rs, np.random.RandomState):
        raise TypeError(f"expected a numpy.random.RandomState, got {type(rs).__name__}")
    n_int = _as_int(n)
    if n_int is None or not 1 <= n_int <= _INT64_MAX:
        return rs.randint(0, n, size=shape)
    out = np.empty(shape, dtype=np.int64)
    with _MTState(rs) as st:
        if not st.is_mt:
            return rs.randint(0, n, size=shape)  # lock is an RLock: NumPy may take it again
        st.pos = int(_fill(st.key, st.pos, n_int - 1, out.reshape(-1)))
    return out


@njit(cache=True, nogil=True)
def _pairwise_leaf(rows, idx, r, start, count):
    """NumPy's ``pairwise_sum_DOUBLE`` for count <= 128 over rows[idx[r, start:start + count], 0]:
    sequential below 8 terms, else 8 accumulators combined as ((0+1)+(2+3))+((4+5)+(6+7)), then the tail."""
    if count < 8:
        res = 0.0
        for j in range(start, start + count):
            res += rows[idx[r, j], 0]
        return res
    r0 = rows[idx[r, start], 0]
    r1 = rows[idx[r, start + 1], 0]
    r2 = rows[idx[r, start + 2], 0]
    r3 = rows[idx[r, start + 3], 0]
    r4 = rows[idx[r, start + 4], 0]
    r5 = rows[idx[r, start + 5], 0]
    r6 = rows[idx[r, start + 6], 0]
    r7 = rows[idx[r, start + 7], 0]
    stop8 = start + count - count % 8
    for j in range(start + 8, stop8, 8):
        r0 += rows[idx[r, j], 0]
        r1 += rows[idx[r, j + 1], 0]
        r2 += rows[idx[r, j + 2], 0]
        r3 += rows[idx[r, j + 3], 0]
        r4 += rows[idx[r, j + 4], 0]
        r5 += rows[idx[r, j + 5], 0]
        r6 += rows[idx[r, j + 6], 0]
        r7 += rows[idx[r, j + 7], 0]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for j in range(stop8, start + count):
        res += rows[idx[r, j], 0]
    return res


@njit(cache=True, nogil=True)
def _pairwise_sum(rows, idx, r, count):
    """NumPy's ``pairwise_sum_DOUBLE`` over rows[idx[r, :count], 0]: above 128 terms the sum of the two
    halves (the first rounded down to a multiple of 8), recursively. Walked with an explicit stack, as
    numba's cache does not reload a self-recursive function safely (a cached reload crashed)."""
    if count <= 128:
        return _pairwise_leaf(rows, idx, r, 0, count)
    starts = np.empty(192, np.int64)   # nodes to visit; depth <= 64, so at most 2 * 64 + 1 pending
    counts = np.empty(192, np.int64)
    split = np.empty(192, np.bool_)    # True: both halves are summed, combine them
    vals = np.empty(192, np.float64)   # partial sums, left below right
    starts[0], counts[0], split[0] = 0, count, False
    top, nv = 1, 0
    while top > 0:
        top -= 1
        s, c = starts[top], counts[top]
        if split[top]:
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
        elif c <= 128:
            vals[nv] = _pairwise_leaf(rows, idx, r, s, c)
            nv += 1
        else:
            n2 = c // 2
            n2 -= n2 % 8
            split[top] = True  # revisit this node after both halves; the left half is visited first
            top += 1
            starts[top], counts[top], split[top] = s + n2, c - n2, False
            top += 1
            starts[top], counts[top], split[top] = s, n2, False
            top += 1
    return vals[0]


@njit(parallel=True, cache=True, nogil=True)
def _ordered_means(rows, idx, out):
    n_samples, k = idx.shape
    m = rows.shape[1]
    for r in prange(n_samples):
        if m == 1:  # a (k, 1) gather is contiguous along the reduced axis: NumPy sums it pairwise
            out[r, 0] = (0.0 + _pairwise_sum(rows, idx, r, k)) / k
        elif m == 3:  # rouge-score's (P, R, F): three sums kept in registers
            a0 = a1 = a2 = 0.0
            for j in range(k):
                i = idx[r, j]
                a0 += rows[i, 0]
                a1 += rows[i, 1]
                a2 += rows[i, 2]
            out[r, 0], out[r, 1], out[r, 2] = a0 / k, a1 / k, a2 / k
        else:  # m >= 2: NumPy adds the gathered rows one after another into the output row
            acc = out[r]
            acc[:] = 0.0
            for j in range(k):
                i = idx[r, j]
                for q in range(m):
                    acc[q] += rows[i, q]
            for q in range(m):
                acc[q] /= k


def ordered_means(matrix: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``out[s] = np.mean(matrix[idx[s]], axis=0)`` for every s, bit for bit, in parallel over s.

    Parameters
    ----------
    matrix : numpy.ndarray
        float64, shape (n, m) (made C-contiguous if it is not).
    idx : numpy.ndarray
        int64, shape (S, k), k >= 1. **Every value must already be in [0, n)**: the kernel does not
        bounds-check (an index out of range reads arbitrary memory). ``randint_legacy(rs, n, ...)``
        output qualifies.

    Returns
    -------
    numpy.ndarray
        float64, shape (S, m).

    Notes
    -----
    The sums follow ``np.add.reduce`` on the C-contiguous (k, m) gather: for m >= 2 each column is added
    sequentially in draw order, starting from +0.0 (so a column of -0.0 gives +0.0, as NumPy); for m == 1
    the reduced axis is contiguous and NumPy uses its pairwise summation, reproduced here. Each sum is then
    divided by k, as ``np.mean`` divides.
    """
    rows = np.ascontiguousarray(matrix, dtype=np.float64)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    if rows.ndim != 2 or idx.ndim != 2:
        raise ValueError(f"matrix must be 2-D and idx 2-D, got {rows.shape} and {idx.shape}")
    if idx.shape[1] == 0:
        raise ValueError("idx has no columns: the mean of no rows is undefined")
    out = np.empty((idx.shape[0], rows.shape[1]), dtype=np.float64)
    if out.size:
        _ordered_means(rows, idx, out)
    return out


def bootstrap_means_legacy(rs: np.random.RandomState, matrix: np.ndarray, n_samples: int) -> np.ndarray:
    """rouge-score's bootstrap resample means, the same numbers and the same final state of ``rs``.

    Identical to::

        n = matrix.shape[0]
        np.array([np.mean(matrix[rs.choice(np.arange(n), size=n), :], axis=0) for _ in range(n_samples)])

    (rouge-score runs it on ``rs = np.random.mtrand._rand``, the global RandomState).

    Parameters
    ----------
    rs : numpy.random.RandomState
        See :func:`randint_legacy`.
    matrix : numpy.ndarray
        float64, shape (n, m), n >= 1. (Other dtypes are refused: ``np.mean`` sums float32 in float32 and
        casts integers through a buffer, which this does not reproduce; convert first where that is exact.)
    n_samples : int
        Number of resamples, >= 0.

    Returns
    -------
    numpy.ndarray
        float64, shape (n_samples, m).
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2 or matrix.dtype != np.float64:
        raise TypeError(f"matrix must be a 2-D float64 array, got {matrix.dtype} {matrix.shape}")
    n, m = matrix.shape
    if n == 0:
        raise ValueError("matrix has no rows")
    n_samples = operator.index(n_samples)
    if n_samples < 0:
        raise ValueError(f"n_samples must be >= 0, got {n_samples}")
    rows = np.ascontiguousarray(matrix)
    out = np.empty((n_samples, m), dtype=np.float64)
    if n_samples == 0:
        return out
    per_chunk = max(1, _CHUNK // n)  # bound the index buffer; the stream simply continues chunk to chunk
    with _MTState(rs) as st:
        if not st.is_mt:  # another bit generator: NumPy's own draws (one call is the same stream as S calls)
            return ordered_means(rows, rs.randint(0, n, size=(n_samples, n)))
        idx = np.empty((min(per_chunk, n_samples), n), dtype=np.int64)
        for s0 in range(0, n_samples, per_chunk):
            s1 = min(n_samples, s0 + per_chunk)
            part = idx[: s1 - s0]
            st.pos = int(_fill(st.key, st.pos, n - 1, part.reshape(-1)))
            if m:
                _ordered_means(rows, part, out[s0:s1])
    return out


# the name the rouge-score patch imports (same arguments, same result)
resample_means = bootstrap_means_legacy
