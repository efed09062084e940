# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False
"""Cython bindings of the dense row kernels in dense.hpp.

The callers in turbometrics (through ``_validate``) guarantee the values
(target ranges, k <= V); these wrappers re-check only the structure that the
C++ code would otherwise trust blindly (dimensions, strides, lengths).

The SIMD path is chosen on first use: the best this CPU runs, or the one
named by the TURBOMETRICS_SIMD environment variable.
"""
import os

import numpy as np
from cpython.buffer cimport PyBUF_STRIDES, PyBuffer_Release, PyObject_GetBuffer
from libc.math cimport fabs, isfinite, ldexp
from libcpp.vector cimport vector
from libc.stdint cimport INT64_MAX, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from turbometrics._ext._glue cimport install_signal_poll, raise_py

install_signal_poll()


cdef extern from "dense.hpp" namespace "tmk":
    cdef cppclass Rows:
        const char* base
        int64_t B, T, sb, st, V
    void c_nll_rows "tmk::nll_rows"(const Rows x, int code, const int64_t* targets, double* out,
                                    int nthreads) except +raise_py nogil
    void c_fold_rows "tmk::fold_rows"(const Rows x, int code, double* M, double* S, uint8_t* bad, int nthreads) except +raise_py nogil
    void c_score_rows "tmk::score_rows"(const Rows x, int code, int64_t v0, double* M, double* S, uint8_t* bad,
                                        int64_t* arg, int nthreads) except +raise_py nogil
    void c_topk_rows "tmk::topk_rows"(const Rows x, int code, int64_t itemsize, int64_t k,
                                      bint largest, bint sorted, char* out_v, int64_t* out_i,
                                      int nthreads) except +raise_py nogil
    void c_rank_rows "tmk::rank_rows"(const Rows x, int code, const int64_t* targets, bint before_ge,
                                      bint after_ge, int64_t* out, int nthreads) except +raise_py nogil
    int N_PATHS
    bint path_supported(int i)
    const char* path_name(int i)
    void use_path(int i)

cdef extern from "resample.hpp" namespace "tmk":
    void c_bootstrap_counts "tmk::bootstrap_counts"(const uint32_t* entropy, int64_t n_entropy, int64_t r0,
                                                    int64_t count, int64_t n, int32_t* counts,
                                                    int nthreads) except +raise_py nogil
    void c_sacrebleu_sums "tmk::sacrebleu_sums"(const uint32_t* entropy, int64_t n_entropy, int64_t N, int64_t n,
                                                int64_t k, const float* stats, float* out,
                                                int nthreads) except +raise_py nogil
    void c_resample_sums "tmk::resample_sums"(const int32_t* cols, int64_t k, int64_t n, const int32_t* counts,
                                              int64_t R, int64_t* out, int nthreads) except +raise_py nogil
    void c_resample_sums "tmk::resample_sums"(const int64_t* cols, int64_t k, int64_t n, const int32_t* counts,
                                              int64_t R, int64_t* out, int nthreads) except +raise_py nogil
    void c_resample_sums "tmk::resample_sums"(const double* cols, int64_t k, int64_t n, const int32_t* counts,
                                              int64_t R, double* out, int nthreads) except +raise_py nogil
    int64_t c_legacy_randint "tmk::legacy_randint"(uint32_t* key, int64_t pos, uint64_t rng, int64_t* out,
                                                   int64_t total) except +raise_py nogil
    void c_legacy_ordered_means "tmk::legacy_ordered_means"(const double* rows, int64_t n, int64_t m,
                                                            const int64_t* idx, int64_t S, int64_t k, double* out,
                                                            int nthreads) except +raise_py nogil
    int64_t c_legacy_bootstrap_means "tmk::legacy_bootstrap_means"(uint32_t* key, int64_t pos, const double* rows,
                                                                   int64_t n, int64_t m, int64_t S, int64_t per,
                                                                   double* out, int nthreads) except +raise_py nogil

cdef extern from "pyrandom.hpp" namespace "tmk":
    void c_python_choice_sums "tmk::python_choice_sums"(uint64_t c0, int64_t C, int64_t R, const int64_t* rows,
                                                        int64_t n, int64_t k, int mode, int64_t* out,
                                                        int nthreads) except +raise_py nogil
    void c_python_choice_sums "tmk::python_choice_sums"(uint64_t c0, int64_t C, int64_t R, const double* rows,
                                                        int64_t n, int64_t k, int mode, double* out,
                                                        int nthreads) except +raise_py nogil

cdef extern from "parallel.hpp" namespace "tmthreads":
    const char* BACKEND
    int max_threads()

PATHS = tuple(path_name(i).decode() for i in range(N_PATHS))
"""SIMD paths compiled into this build, best first."""
SUPPORTED = tuple(p for i, p in enumerate(PATHS) if path_supported(i))
"""The paths this CPU can run, best first."""
THREADING = BACKEND.decode()
"""How the kernels run in parallel: "OpenMP" or "std::thread pool"."""
MAX_THREADS = max_threads()

cdef object _active = None   # the path in use, once chosen
cdef object _error = None    # why none could be chosen


def choose_path(requested=None):
    """The SIMD path to use: ``requested`` (default: $TURBOMETRICS_SIMD), or the best supported.

    Returns the path's name; raises RuntimeError for an unknown name or a path
    this CPU cannot run. "baseline" always names the lowest path of the build.
    """
    if requested is None:
        requested = os.environ.get("TURBOMETRICS_SIMD", "")
    name = requested.strip().lower()
    if name in ("", "best", "auto"):
        name = SUPPORTED[0]
    elif name == "baseline":
        name = PATHS[len(PATHS) - 1]
    if name not in PATHS:
        raise RuntimeError(f"TURBOMETRICS_SIMD={requested!r} is not a SIMD path of this build; "
                           f"choose one of {', '.join(PATHS)} (or leave it unset for the best this CPU runs)")
    if name not in SUPPORTED:
        raise RuntimeError(f"TURBOMETRICS_SIMD={requested!r}: this CPU cannot run the {name} path; "
                           f"it runs {', '.join(SUPPORTED)}")
    return name


def set_path(name):
    """Make ``name`` (a path this CPU runs) the one the kernels use; returns it."""
    global _active, _error
    name = choose_path(name)
    use_path(PATHS.index(name))
    _active, _error = name, None
    return name


def active_path():
    """The path in use, choosing it on first call; RuntimeError if TURBOMETRICS_SIMD is bad."""
    global _active, _error
    if _active is None:
        if _error is None:
            try:
                set_path(None)
            except RuntimeError as e:
                _error = e
        if _error is not None:
            raise RuntimeError(str(_error))
    return _active


cdef char* _address(object a) except? NULL:
    """The address of ``a``'s first element, by the buffer protocol (``__array_interface__`` builds a dict
    per call: 2-4 us, as much as a short row's kernel)."""
    cdef Py_buffer view
    PyObject_GetBuffer(a, &view, PyBUF_STRIDES)
    cdef char* p = <char*>view.buf
    PyBuffer_Release(&view)
    return p


cdef Rows _rows(object x, int code) except *:
    """Describe a (B, T, V) ndarray whose last axis is contiguous."""
    if x.ndim != 3 or x.shape[2] < 1 or x.strides[2] != x.itemsize:
        raise ValueError("kernel input must be (B, T, V) with a contiguous last axis")
    if not (0 <= code <= 11) or x.itemsize != (2, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8)[code]:
        raise ValueError("kernel dtype code does not match the array")
    cdef Rows r
    r.base = _address(x)
    r.B, r.T, r.V = x.shape[0], x.shape[1], x.shape[2]
    r.sb, r.st = x.strides[0], x.strides[1]
    return r


def nll_rows(x, int code, const int64_t[::1] targets, ignore, int nthreads):
    """Token NLL per row of ``x`` (B, T, V) as float64 (B*T,), one int64 target a row, and the number of
    rows counted: a row whose target equals ``ignore`` (None: no row) is not, and gives 0. None when a
    counted target lies outside [0, V): nothing is computed, and the caller's validation words the error
    (this check only keeps the kernel inside its rows)."""
    if not 0 <= code <= 3:
        raise ValueError("token NLL needs floating-point logits")
    active_path()
    cdef Rows r = _rows(x, code)
    cdef Py_ssize_t n = r.B * r.T, i, counted = 0
    if targets.shape[0] != n:
        raise ValueError("targets must hold one entry per row")
    cdef bint has_ignore = ignore is not None, ok = True
    cdef int64_t iv = ignore if has_ignore else 0, v
    cdef vector[int64_t] t = vector[int64_t](n)
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    with nogil:
        for i in range(n):
            v = targets[i]
            if has_ignore and v == iv:
                t[i] = -1  # the kernel skips the row: 0
            elif 0 <= v < r.V:
                t[i] = v
                counted += 1
            else:
                ok = False
                break
        if ok and n > 0:
            c_nll_rows(r, code, t.data(), &o[0], nthreads)
    return (out, counted) if ok else None


cdef double _fsum(const double* v, Py_ssize_t n, bint* ok) noexcept nogil:
    """The exactly rounded sum of v[0:n] (round half to even: math.fsum's value), by Shewchuk's
    non-overlapping partials, ~8 ns a value. ``ok`` turns False (and 0 is returned) for a value that is not
    finite, an overflowing partial, or more than 64 partials (rare; the caller then sums in the bins)."""
    cdef double p[64]
    cdef double x, y, hi, lo = 0.0, yr
    cdef int m = 0, j, i
    cdef Py_ssize_t k
    for k in range(n):
        x = v[k]
        i = 0
        for j in range(m):
            y = p[j]
            if fabs(x) < fabs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                p[i] = lo
                i += 1
            x = hi
        if not isfinite(x) or i == 64:
            ok[0] = False
            return 0.0
        m = i
        if x != 0.0:
            p[m] = x
            m += 1
    # Round the partials' exact total once: add from the largest until a rounding error appears; a
    # halfway case is then settled by the sign of the next partial down.
    hi = 0.0
    if m > 0:
        m -= 1
        hi = p[m]
        while m > 0:
            x = hi
            m -= 1
            y = p[m]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        if m > 0 and ((lo < 0.0 and p[m - 1] < 0.0) or (lo > 0.0 and p[m - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


def fsum(const double[::1] v):
    """``_fsum`` of a float64 array (``_exact``'s small sums): the sum, or None where ``_fsum`` gives up."""
    cdef bint ok = True
    cdef double s = _fsum(&v[0] if v.shape[0] else NULL, v.shape[0], &ok)
    return s if ok else None


def fold_rows(x, int code, double[::1] M, double[::1] S, uint8_t[::1] bad, int nthreads):
    """Fold each row of ``x`` (B, T, V) into its running log-sum-exp state: max ``M``, sum ``S`` of
    e^(x - M) (float64, B*T each); ``bad`` (uint8) turns 1 for a row that held +inf or NaN."""
    if not 0 <= code <= 3:
        raise ValueError("log-sum-exp needs floating-point values")
    active_path()
    cdef Rows r = _rows(x, code)
    if not (M.shape[0] == S.shape[0] == bad.shape[0] == r.B * r.T):
        raise ValueError("the state must hold one entry per row")
    with nogil:
        if r.B * r.T > 0:
            c_fold_rows(r, code, &M[0], &S[0], &bad[0], nthreads)


def score_rows(x, int code, int64_t v0, double[::1] M, double[::1] S, uint8_t[::1] bad, int64_t[::1] arg,
               int nthreads):
    """``fold_rows`` of the slice ``x`` (B, T, width), the vocabulary's columns [v0, v0 + width), in float64
    throughout, also keeping each row's first argmax in ``arg`` (int64; start it at -1)."""
    if not 0 <= code <= 3:
        raise ValueError("log-sum-exp needs floating-point values")
    active_path()
    cdef Rows r = _rows(x, code)
    if not (M.shape[0] == S.shape[0] == bad.shape[0] == arg.shape[0] == r.B * r.T):
        raise ValueError("the state must hold one entry per row")
    with nogil:
        if r.B * r.T > 0:
            c_score_rows(r, code, v0, &M[0], &S[0], &bad[0], &arg[0], nthreads)


def topk_rows(x, int code, int64_t k, bint largest, bint sorted, int nthreads):
    """The k best entries of each row of ``x`` (B, T, V): raw values (B*T, k) of x's dtype, int64 indices."""
    active_path()
    cdef Rows r = _rows(x, code)
    if not (1 <= k <= r.V):
        raise ValueError("k must be in [1, V]")
    vals = np.empty((r.B * r.T, k), dtype=x.dtype)
    idx = np.empty((r.B * r.T, k), dtype=np.int64)
    cdef char* pv = _address(vals)
    cdef int64_t[:, ::1] pi = idx
    cdef int64_t itemsize = x.itemsize
    with nogil:
        if r.B * r.T > 0:
            c_topk_rows(r, code, itemsize, k, largest, sorted, pv, &pi[0, 0], nthreads)
    return vals, idx


def rank_rows(x, int code, const int64_t[::1] targets, bint before_ge, bint after_ge, int nthreads):
    """The rank of each row's target in ``x`` (B, T, V) as int64 (B*T,): the entries ahead of it (greater,
    or NaN), plus the tied ones before it if ``before_ge`` and after it if ``after_ge``; -1 for a negative
    target (the row is not read). Targets must lie below V (ValueError otherwise)."""
    active_path()
    cdef Rows r = _rows(x, code)
    if targets.shape[0] != r.B * r.T:
        raise ValueError("targets must hold one entry per row")
    out = np.empty(r.B * r.T, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        if r.B * r.T > 0:
            c_rank_rows(r, code, &targets[0], before_ge, after_ge, &o[0], nthreads)
    return out


ctypedef fused target_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t


def targets(const target_t[::1] t, ignore, const uint8_t[::1] keep, int64_t n_classes, int64_t[::1] out,
            uint8_t[::1] counted):
    """One pass over flat integer targets: counted[i] = (t[i] != ignore) and keep[i] (``ignore`` None, or a
    value of t's dtype; ``keep`` None or uint8), out[i] = t[i] where counted, else -1. Returns None when every
    counted target lies in [0, n_classes) (no check for n_classes < 0), else the offending (lowest, highest)
    counted values as Python ints: the caller words the error."""
    cdef Py_ssize_t i, n = t.shape[0]
    if out.shape[0] != n or counted.shape[0] != n or (keep is not None and keep.shape[0] != n):
        raise ValueError("targets, mask and outputs must have the same length")
    cdef bint has_ignore = ignore is not None, has_keep = keep is not None, check = n_classes >= 0
    cdef target_t iv = ignore if has_ignore else 0
    cdef target_t lo = 0, hi = 0
    cdef bint seen = False, unsigned = <target_t>-1 > 0
    cdef target_t v
    cdef uint8_t c
    with nogil:
        for i in range(n):
            v = t[i]
            c = not (has_ignore and v == iv) and not (has_keep and keep[i] == 0)
            counted[i] = c
            out[i] = <int64_t>v if c else -1
            if c:
                if not seen:
                    lo = hi = v
                    seen = True
                elif v < lo:
                    lo = v
                elif v > hi:
                    hi = v
    if not (check and seen):
        return None
    # In their own type: a cast could wrap a huge value into range.
    if (not unsigned and <int64_t>lo < 0) or (<uint64_t>hi if unsigned else <uint64_t><int64_t>hi) >= <uint64_t>n_classes:
        return lo, hi
    return None


def exact_bins(const double[::1] v, int64_t[::1] hi, int64_t[::1] lo, int64_t offset):
    """Add each finite v[i] = m * 2**(e - 53) (m an integer, |m| < 2**53) into the bins of ``_exact.ExactSum``:
    hi[e + offset] += m >> 27, lo[e + offset] += m & (2**27 - 1). Normal values get frexp's e; subnormals
    e = -1021 (their bits as m), zeros nothing. Returns the counts (NaN, +inf, -inf), which are not binned."""
    if hi.shape[0] != lo.shape[0] or offset < 1021 or offset + 1024 >= hi.shape[0]:
        raise ValueError("exact_bins: the bins must cover exponents -1021..1024 from offset")
    cdef Py_ssize_t i, n = v.shape[0]
    cdef const uint64_t* bits = <const uint64_t*>&v[0] if n else NULL
    cdef uint64_t b, frac
    cdef int64_t m, k, nan = 0, pinf = 0, ninf = 0
    cdef int64_t low = (1 << 27) - 1
    with nogil:
        for i in range(n):
            b = bits[i]
            k = <int64_t>((b >> 52) & 0x7ff)
            frac = b & ((<uint64_t>1 << 52) - 1)
            if k == 0x7ff:
                if frac:
                    nan += 1
                elif b >> 63:
                    ninf += 1
                else:
                    pinf += 1
                continue
            if k == 0:
                if frac == 0:
                    continue
                m, k = <int64_t>frac, 1      # subnormal: frac * 2**-1074
            else:
                m = <int64_t>(frac | (<uint64_t>1 << 52))
            if b >> 63:
                m = -m
            k = k - 1022 + offset            # frexp's exponent: v = (m / 2**53) * 2**(k - 1022)
            hi[k] += m >> 27                 # arithmetic shift: floor, so hi * 2**27 + lo == m
            lo[k] += m & low
    return nan, pinf, ninf


def exact_parts(const int64_t[::1] hi, const int64_t[::1] lo, int64_t offset):
    """The bins of ``exact_bins`` as doubles whose exact sum is the binned total: the 32-bit halves of each
    nonzero hi/lo scaled by its power of two (every one exact: the smallest scale is 2**-1074), for
    ``math.fsum`` to round once. None if a part overflows (the caller then sums the integers)."""
    if hi.shape[0] != lo.shape[0]:
        raise ValueError("exact_parts: hi and lo differ in length")
    out = []
    cdef Py_ssize_t i
    cdef int j
    cdef int64_t x, s
    cdef double p
    for i in range(hi.shape[0]):
        if hi[i] == 0 and lo[i] == 0:
            continue
        s = i - offset - 53
        for j in range(4):
            x = hi[i] if j < 2 else lo[i]
            x = (x >> 32) if j % 2 == 0 else (x & 0xFFFFFFFF)
            if x == 0:
                continue
            p = ldexp(<double>x, <int>(s + (59, 27, 32, 0)[j]))
            if not isfinite(p):
                return None
            out.append(p)
    return out


def bootstrap_counts(const uint32_t[::1] entropy, int64_t r0, int64_t count, int64_t n, int nthreads):
    """(count, n) int32: how often each of n items is drawn by resample r0 + r of the default bootstrap,
    ``default_rng(SeedSequence(entropy).spawn(...)[r0 + r]).integers(0, n, n, dtype=np.uint32)``
    (resample.hpp); ``entropy`` is ``SeedSequence.entropy`` as uint32 words, lowest first."""
    if not 1 <= n <= (<int64_t>1 << 32) or count < 0 or r0 < 0 or entropy.shape[0] < 1:
        raise ValueError("bootstrap_counts: need 1 <= n <= 2**32, count >= 0, r0 >= 0 and entropy words")
    out = np.zeros((count, n), np.int32)
    cdef int32_t[:, ::1] o = out
    with nogil:
        if count:
            c_bootstrap_counts(&entropy[0], entropy.shape[0], r0, count, n, &o[0, 0], nthreads)
    return out


def sacrebleu_sums(const uint32_t[::1] entropy, int64_t N, const float[:, ::1] stats, int nthreads):
    """(N, k) float32: ``stats[idx[r]].sum(0)`` for ``idx = default_rng(seed).choice(n, (N, n))``, as
    sacrebleu's bootstrap makes them (resample.hpp); ``entropy`` is ``SeedSequence(seed).entropy`` as
    uint32 words, lowest first."""
    cdef int64_t n = stats.shape[0], k = stats.shape[1]
    if not 1 <= n <= (<int64_t>1 << 32) or N < 0 or entropy.shape[0] < 1:
        raise ValueError("sacrebleu_sums: need 1 <= n <= 2**32 rows, N >= 0 and entropy words")
    out = np.zeros((N, k), np.float32)
    cdef float[:, ::1] o = out
    with nogil:
        if N and k:
            c_sacrebleu_sums(&entropy[0], entropy.shape[0], N, n, k, &stats[0, 0], &o[0, 0], nthreads)
    return out


def resample_sums(cols, const int32_t[:, ::1] counts, int nthreads):
    """(R, k): ``out[r, q] = sum over i of counts[r, i] * cols[q, i]`` (resample.hpp) for ``cols`` (k, n)
    C-ordered: int32 or int64 give int64 sums (exact, wrapping as int64 does), float64 float64 sums added in
    16 fixed blocks of items (the same bits on any thread count and SIMD path)."""
    active_path()
    cdef int64_t R = counts.shape[0], n = counts.shape[1], k
    if not isinstance(cols, np.ndarray) or cols.ndim != 2 or cols.shape[1] != n:
        raise ValueError("resample_sums: cols must be a (k, n) array for counts of n items")
    k = cols.shape[0]
    cdef const int32_t[:, ::1] x32
    cdef const int64_t[:, ::1] x64
    cdef const double[:, ::1] xf
    cdef int64_t[:, ::1] o64
    cdef double[:, ::1] of
    if cols.dtype == np.float64:
        out = np.zeros((R, k), np.float64)
        if R and k and n:
            xf, of = cols, out
            with nogil:
                c_resample_sums(&xf[0, 0], k, n, &counts[0, 0], R, &of[0, 0], nthreads)
        return out
    out = np.zeros((R, k), np.int64)
    if cols.dtype == np.int32:
        if R and k and n:
            x32, o64 = cols, out
            with nogil:
                c_resample_sums(&x32[0, 0], k, n, &counts[0, 0], R, &o64[0, 0], nthreads)
    elif cols.dtype == np.int64:
        if R and k and n:
            x64, o64 = cols, out
            with nogil:
                c_resample_sums(&x64[0, 0], k, n, &counts[0, 0], R, &o64[0, 0], nthreads)
    else:
        raise ValueError(f"resample_sums: cols must be int32, int64 or float64, not {cols.dtype}")
    return out


cdef int64_t _mt_pos(uint32_t[::1] key, int64_t pos) except -1:
    if key.shape[0] != 624 or not 0 <= pos <= 624:
        raise ValueError("an MT19937 state is 624 words and a position in [0, 624]")
    return pos


def legacy_randint(uint32_t[::1] key, int64_t pos, uint64_t rng, int64_t[::1] out):
    """Fill ``out`` with NumPy's legacy ``randint(0, rng + 1)`` draws (int64, masked rejection) from the
    MT19937 state (``key``, ``pos``), ``rng < 2**63``; ``key`` advances in place. Returns the new position."""
    active_path()
    _mt_pos(key, pos)
    if rng >> 63:
        raise ValueError("legacy_randint: rng must be below 2**63")
    if out.shape[0] == 0:
        return pos
    with nogil:
        pos = c_legacy_randint(&key[0], pos, rng, &out[0], out.shape[0])
    return pos


def legacy_ordered_means(const double[:, ::1] rows, const int64_t[:, ::1] idx, int nthreads):
    """(S, m): ``np.mean(rows[idx[s]], axis=0)`` for each row s of ``idx`` (S, k), k >= 1, in NumPy's
    summation order, bit for bit (resample.hpp). An index outside [0, n) is a ValueError (the kernel checks
    each resample's indices before it reads them)."""
    active_path()
    cdef int64_t n = rows.shape[0], m = rows.shape[1], S = idx.shape[0], k = idx.shape[1]
    if k < 1:
        raise ValueError("legacy_ordered_means: idx has no columns (the mean of no rows)")
    out = np.empty((S, m), np.float64)
    cdef double[:, ::1] o = out
    if S:
        with nogil:
            c_legacy_ordered_means(&rows[0, 0] if m else NULL, n, m, &idx[0, 0], S, k,
                                   &o[0, 0] if m else NULL, nthreads)
    return out


def legacy_bootstrap_means(uint32_t[::1] key, int64_t pos, const double[:, ::1] rows, int64_t S, int64_t per,
                           int nthreads):
    """rouge-score's resample means from the MT19937 state (``key``, ``pos``): (out (S, m), new position),
    ``out[s] = np.mean(rows[randint(0, n, size=n)], axis=0)`` bit for bit, the indices drawn ``per``
    resamples at a time; ``key`` advances in place (resample.hpp)."""
    active_path()
    _mt_pos(key, pos)
    cdef int64_t n = rows.shape[0], m = rows.shape[1]
    if n < 1 or S < 0 or per < 1:
        raise ValueError("legacy_bootstrap_means: need n >= 1 rows, S >= 0 and per >= 1")
    per = min(per, max(S, 1))  # the kernel sizes its index buffer per * n
    if per > INT64_MAX // n:
        raise ValueError("legacy_bootstrap_means: per * n rows of indices overflow int64")
    out = np.empty((S, m), np.float64)
    cdef double[:, ::1] o = out
    if S:
        with nogil:
            pos = c_legacy_bootstrap_means(&key[0], pos, &rows[0, 0], n, m, S, per, &o[0, 0] if m else NULL,
                                           nthreads)
    return out, pos


def python_choice_sums(uint64_t c0, int64_t C, int64_t R, rows, int mode, int nthreads):
    """(C * R, k): resample r of chunk c draws ``random.Random(c0 + c).choices(range(n), k=n)`` (the
    chunk's r-th call), and its row is the sum of ``rows[i]`` (rows (n, k), n >= 1) over the draws:
    int64 rows exactly, float64 rows in draw order as Python's ``sum`` (mode 0: one addition at a time,
    1: Neumaier's, as from Python 3.12) (pyrandom.hpp)."""
    if rows.ndim != 2 or rows.shape[0] < 1:
        raise ValueError("python_choice_sums: rows must be a (n, k) array with n >= 1")
    if C < 0 or R < 0 or mode not in (0, 1):
        raise ValueError("python_choice_sums: need C >= 0, R >= 0 and mode 0 or 1")
    if C and c0 + <uint64_t>(C - 1) < c0:
        raise ValueError("python_choice_sums: the chunk seeds pass 2**64")
    cdef int64_t n = rows.shape[0], k = rows.shape[1]
    if R and C > INT64_MAX // R // max(k, 1):
        raise ValueError("python_choice_sums: C * R * k overflows int64")
    cdef const int64_t[:, ::1] ri
    cdef const double[:, ::1] rf
    cdef int64_t[:, ::1] oi
    cdef double[:, ::1] of
    if rows.dtype == np.int64:
        ri = rows
        out = np.zeros((C * R, k), np.int64)
        oi = out
        if C * R * k:
            with nogil:
                c_python_choice_sums(c0, C, R, &ri[0, 0], n, k, mode, &oi[0, 0], nthreads)
    elif rows.dtype == np.float64:
        rf = rows
        out = np.zeros((C * R, k), np.float64)
        of = out
        if C * R * k:
            with nogil:
                c_python_choice_sums(c0, C, R, &rf[0, 0], n, k, mode, &of[0, 0], nthreads)
    else:
        raise ValueError(f"python_choice_sums: rows must be int64 or float64, not {rows.dtype}")
    return out
