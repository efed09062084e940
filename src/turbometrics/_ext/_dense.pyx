# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False
"""Cython bindings of the dense row kernels in dense.hpp.

The callers in turbometrics (through ``_validate``) guarantee the values
(target ranges, k <= V); these wrappers re-check only the structure that the
C++ code would otherwise trust blindly (dimensions, strides, lengths).
"""
import numpy as np
from libc.stdint cimport int64_t, uintptr_t

cdef extern from "dense.hpp" namespace "tmk":
    cdef cppclass Rows:
        const char* base
        int64_t B, T, sb, st, V
    void c_nll_rows "tmk::nll_rows"(const Rows x, int code, const int64_t* targets, double* out,
                                    int nthreads) nogil
    void c_topk_rows "tmk::topk_rows"(const Rows x, int code, int64_t itemsize, int64_t k,
                                      bint largest, bint sorted, char* out_v, int64_t* out_i,
                                      int nthreads) nogil

cdef Rows _rows(object x, int code) except *:
    """Describe a (B, T, V) ndarray whose last axis is contiguous."""
    if x.ndim != 3 or x.shape[2] < 1 or x.strides[2] != x.itemsize:
        raise ValueError("kernel input must be (B, T, V) with a contiguous last axis")
    if not (0 <= code <= 11) or x.itemsize != (2, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8)[code]:
        raise ValueError("kernel dtype code does not match the array")
    cdef Rows r
    r.base = <const char*><uintptr_t>x.__array_interface__["data"][0]
    r.B, r.T, r.V = x.shape[0], x.shape[1], x.shape[2]
    r.sb, r.st = x.strides[0], x.strides[1]
    return r


def nll_rows(x, int code, const int64_t[::1] targets, int nthreads):
    """Token NLL per row of ``x`` (B, T, V) as float64 (B*T,); rows whose target is < 0 give 0."""
    if not 0 <= code <= 3:
        raise ValueError("token NLL needs floating-point logits")
    cdef Rows r = _rows(x, code)
    if targets.shape[0] != r.B * r.T:
        raise ValueError("targets must hold one entry per row")
    cdef Py_ssize_t i
    for i in range(targets.shape[0]):  # O(rows): cheap insurance against an out-of-row read
        if targets[i] >= r.V:
            raise ValueError("target index beyond the row")
    out = np.empty(r.B * r.T, dtype=np.float64)
    cdef double[::1] o = out
    with nogil:
        if r.B * r.T > 0:
            c_nll_rows(r, code, &targets[0], &o[0], nthreads)
    return out


def topk_rows(x, int code, int64_t k, bint largest, bint sorted, int nthreads):
    """The k best entries of each row of ``x`` (B, T, V): raw values (B*T, k) of x's dtype, int64 indices."""
    cdef Rows r = _rows(x, code)
    if not (1 <= k <= r.V):
        raise ValueError("k must be in [1, V]")
    vals = np.empty((r.B * r.T, k), dtype=x.dtype)
    idx = np.empty((r.B * r.T, k), dtype=np.int64)
    cdef char* pv = <char*><uintptr_t>vals.__array_interface__["data"][0]
    cdef int64_t[:, ::1] pi = idx
    cdef int64_t itemsize = x.itemsize
    with nogil:
        if r.B * r.T > 0:
            c_topk_rows(r, code, itemsize, k, largest, sorted, pv, &pi[0, 0], nthreads)
    return vals, idx
