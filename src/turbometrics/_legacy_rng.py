"""NumPy's legacy ``RandomState`` integer stream and ``np.mean`` of gathered rows, bit for bit and fast.

rouge-score's ``BootstrapAggregator._bootstrap_resample`` draws
``np.random.choice(np.arange(n), size=n)`` from NumPy's legacy global ``RandomState`` once per resample
and takes ``np.mean(matrix[sample_idx, :], axis=0)``. Those draws are ``randint(0, n, size=n)``, and
consecutive calls are one ``randint(0, n, size=(S, n))`` call, which NumPy makes one word at a time
through a function pointer (about 3 ns a draw). Here the same MT19937 words are made in compiled code
(``_ext/resample.hpp``) from the RandomState's own state, NumPy's legacy bounded-integer algorithm (masked
rejection) turns them into indices, and the state is written back, so the caller's RNG ends exactly where
NumPy's calls would have left it. The means are then summed in the order ``np.add.reduce`` uses, in
parallel over resamples.

Checked against NumPy's sources (``random/src/mt19937/mt19937.[ch]``, ``random_bounded_uint64_fill`` in
``random/src/distributions/distributions.c``) and empirically (``tests/test_legacy_rng.py``).
"""

from __future__ import annotations

import operator

import numpy as np

from . import _validate
from ._ext import _dense

_INT64_MAX = 2**63 - 1
_CHUNK = 1 << 16  # indices a batch of bootstrap_means_legacy: a thread's buffer (256 KiB of uint32) in L2


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
        st.pos = _dense.legacy_randint(st.key, st.pos, n_int - 1, out.reshape(-1))
    return out


def ordered_means(matrix: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``out[s] = np.mean(matrix[idx[s]], axis=0)`` for every s, bit for bit, in parallel over s.

    Parameters
    ----------
    matrix : numpy.ndarray
        float64, shape (n, m) (made C-contiguous if it is not).
    idx : numpy.ndarray
        int64, shape (S, k), k >= 1, every value in [0, n) (ValueError otherwise).

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
    return _dense.legacy_ordered_means(rows, idx, _validate.default_threads())


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
    if n_samples == 0:
        return np.empty((0, m), dtype=np.float64)
    per_chunk = max(1, _CHUNK // n)  # resamples a batch; the stream simply continues batch to batch
    with _MTState(rs) as st:
        if not st.is_mt:  # another bit generator: NumPy's own draws (one call is the same stream as S calls)
            return ordered_means(rows, rs.randint(0, n, size=(n_samples, n)))
        out, st.pos = _dense.legacy_bootstrap_means(
            st.key, st.pos, rows, n_samples, per_chunk, _validate.default_threads()
        )
    return out


# the name the rouge-score patch imports (same arguments, same result)
resample_means = bootstrap_means_legacy
