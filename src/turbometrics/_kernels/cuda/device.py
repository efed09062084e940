"""The launch constants and the device primitives the row kernels share: bit casts, the row reads (one a
widening), and the warp/block reductions.

Two implementations of the few primitives the CUDA simulator lacks (warp
shuffles, libdevice bit casts) are chosen at import: the fast ones on a real
GPU (PTX-compiled in the tests, run when a GPU is lent) and shared-memory /
arithmetic ones under ``NUMBA_ENABLE_CUDASIM=1``, so the simulator runs every
kernel with the same algorithm. ``TPB`` shrinks to 64 in the simulator, where
each thread is a Python thread.

Every device function (``@inlined``) is inlined into its callers by NVVM, so sharing one across kernels, or
making it once per specialisation in a factory, changes the code they compile to by a few instructions at most
(but for static shared arrays: see ``inlined``).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
from numba import config, cuda, float32, float64, int32, int64, uint64

SIM = bool(config.ENABLE_CUDASIM)  # type: ignore[attr-defined]  # numba's config sets it from the environment
TPB = 64 if SIM else 256  # threads per block
WARPS = TPB // 32
FULL = 0xFFFFFFFF


def inlined(fn: Any) -> Any:
    """A device function that NVVM inlines into every caller (LLVM's ``alwaysinline``: ``forceinline=True``).

    Typed and lowered once per signature in a process, then linked into each kernel that calls it. Numba's
    IR-level inlining (``inline="always"``) instead copied and re-typed the callee's IR at every call site of
    every kernel: 1.7-44 s of host time per kernel at a first call (lm-eval's bf16 ``score_rows`` the 44),
    227-236 s for the PTX of all 130 signatures (31-41 s now; docs/gpu.md, "Kernels compile 2 to 20 times
    faster"), for the same machine code but a few instructions. ``tests/test_cuda.py`` checks that none is left
    out of line. The simulator's jit takes no ``forceinline``.

    A ``cuda.shared.array`` declared in one is a single buffer per (function, signature): every call site in a
    kernel shares it (IR inlining gave each its own), and a kernel that reaches the function along two call
    paths fails in NVVM (numba links its module twice: the PTX check catches it). Declare shared arrays in the
    kernel and pass them in where a function is called more than once (``group_score`` takes them so).
    """
    options: dict = {} if SIM else {"forceinline": True}
    return cuda.jit(device=True, **options)(fn)


# widening of a stored element to the type it is compared/summed in
WIDEN_F32, WIDEN_BF16, WIDEN_F64 = 0, 1, 2
# bf16 rows of even length read as 32-bit words, two elements a load (nll_rows, nll_tally, fold_rows): twice
# the bytes in flight
WIDEN_BF16_PAIRS = 3


@inlined
def merge(m1, s1, m2, s2):
    """(max, sum exp(v - max)) of two parts; an empty part is (-inf, 0)."""
    if s2 == 0.0:
        return m1, s1
    if s1 == 0.0:
        return m2, s2
    if m1 >= m2:
        return m1, s1 + s2 * math.exp(m2 - m1)
    return m2, s2 + s1 * math.exp(m1 - m2)


INT64_MAX = np.int64(2**63 - 1)


@inlined
def _add(a, b):
    return a + b


@inlined
def _min(a, b):
    return a if a <= b else b


if SIM:

    @inlined
    def fast_expf(v):
        return math.exp(v)

    @inlined
    def bf16_to_f32(b):
        return np.array([(int(b) & 0xFFFF) << 16], np.uint32).view(np.float32)[0]

    @inlined
    def bits_f32(u):
        return np.array([int(u) & FULL], np.uint32).view(np.float32)[0]

    @inlined
    def f32_bits(v):
        return int(np.array([v], np.float32).view(np.uint32)[0])

    @inlined
    def f64_bits(v):
        return int(np.array([v], np.float64).view(np.int64)[0])

    @cache
    def _group_fold(G: int, op: Any, identity: int) -> Any:
        """gfold(v, buf): ``op`` (associative and commutative, ``identity`` its neutral element) over each
        group of G threads (G = 32 or TPB; buf: shared int64[TPB]), which every member gets; every thread of
        the block must call it."""

        @inlined
        def gfold(v, buf):
            """``op`` over each group of G threads (buf: shared int64[TPB]); every member gets it."""
            t = cuda.threadIdx.x
            base, lane = t - t % G, t % G
            buf[t] = v
            cuda.syncthreads()
            h = G // 2
            while h > 0:
                if lane < h:
                    buf[t] = op(buf[t], buf[t + h])
                cuda.syncthreads()
                h //= 2
            r = buf[base]
            cuda.syncthreads()
            return r

        return gfold

    @cache
    def group_lse_merge(G: int) -> Any:
        """glse(m, s, bm, bs): the ``merge`` of each thread's (max, sum exp(v - max)) over each group of G
        threads (bm, bs: shared float64[TPB]), which every member gets; every thread of the block must call it."""

        @inlined
        def glse(m, s, bm, bs):
            """Log-sum-exp merge of per-thread (max, sum exp(v - max)) over each group of G threads."""
            t = cuda.threadIdx.x
            base, lane = t - t % G, t % G
            bm[t] = m
            bs[t] = s
            cuda.syncthreads()
            h = G // 2
            while h > 0:
                if lane < h:
                    m2, s2 = merge(bm[t], bs[t], bm[t + h], bs[t + h])
                    bm[t] = m2
                    bs[t] = s2
                cuda.syncthreads()
                h //= 2
            rm, rs = bm[base], bs[base]
            cuda.syncthreads()
            return rm, rs

        return glse
else:

    @inlined
    def fast_expf(v):
        """ex2.approx of v * log2(e): two instructions for libdevice expf's ~17, within 2 ulp + the argument's
        rounding; the terms near the row's max, which carry the sum, are the exactly-scaled ones."""
        return cuda.libdevice.fast_expf(v)

    @inlined
    def bf16_to_f32(b):
        return cuda.libdevice.int_as_float(int32((int32(b) & 0xFFFF) << 16))

    @inlined
    def bits_f32(u):
        return cuda.libdevice.int_as_float(int32(u))

    @inlined
    def f32_bits(v):
        return int64(cuda.libdevice.float_as_int(v)) & FULL

    @inlined
    def f64_bits(v):
        return cuda.libdevice.double_as_longlong(v)

    @cache
    def _warp_fold(op: Any) -> Any:
        @inlined
        def wfold(v):
            off = 16
            while off > 0:  # butterfly: every lane ends with the total
                v = op(v, cuda.shfl_xor_sync(FULL, v, off))
                off //= 2
            return v

        return wfold

    @inlined
    def _warp_lse(m, s):
        off = 16
        while off > 0:
            m, s = merge(m, s, cuda.shfl_xor_sync(FULL, m, off), cuda.shfl_xor_sync(FULL, s, off))
            off //= 2
        return m, s

    @cache
    def _group_fold(G: int, op: Any, identity: int) -> Any:
        """gfold(v, buf): ``op`` (associative and commutative, ``identity`` its neutral element) over each
        group of G threads (G = 32 or TPB; buf: shared int64[TPB]), which every member gets; every thread of
        the block must call it."""
        wfold = _warp_fold(op)
        if G == 32:

            @inlined
            def wgroup(v, buf):
                return wfold(v)

            return wgroup

        @inlined
        def bgroup(v, buf):
            """Over the block: warp shuffles, then one shared slot per warp."""
            t = cuda.threadIdx.x
            lane, w = t % 32, t // 32
            v = wfold(v)
            if lane == 0:
                buf[w] = v
            cuda.syncthreads()
            if w == 0:
                v = wfold(buf[lane] if lane < WARPS else int64(identity))
                if lane == 0:
                    buf[0] = v
            cuda.syncthreads()
            r = buf[0]
            cuda.syncthreads()
            return r

        return bgroup

    @cache
    def group_lse_merge(G: int) -> Any:
        """glse(m, s, bm, bs): the ``merge`` of each thread's (max, sum exp(v - max)) over each group of G
        threads (bm, bs: shared float64[TPB]), which every member gets; every thread of the block must call it."""
        if G == 32:

            @inlined
            def wlse(m, s, bm, bs):
                return _warp_lse(m, s)

            return wlse

        @inlined
        def blse(m, s, bm, bs):
            t = cuda.threadIdx.x
            lane, w = t % 32, t // 32
            m, s = _warp_lse(m, s)
            if lane == 0:
                bm[w] = m
                bs[w] = s
            cuda.syncthreads()
            if w == 0:
                if lane < WARPS:
                    m, s = bm[lane], bs[lane]
                else:
                    m, s = -math.inf, 0.0
                m, s = _warp_lse(m, s)
                if lane == 0:
                    bm[0] = m
                    bs[0] = s
            cuda.syncthreads()
            rm, rs = bm[0], bs[0]
            cuda.syncthreads()
            return rm, rs

        return blse


def group_sum(G: int) -> Any:
    """gsum(v, buf): the sum of int64 v over each group of G threads (G = 32 or TPB; buf: shared int64[TPB]),
    which every member gets; every thread of the block must call it."""
    return _group_fold(G, _add, 0)


def group_min(G: int) -> Any:
    """gmin(v, buf): ``group_sum``'s minimum."""
    return _group_fold(G, _min, INT64_MAX)


@inlined
def exp_f64(v):
    return math.exp(v)


@inlined
def lo_bf16(w):
    """The bf16 in the low half of a 32-bit word (the earlier element: little-endian), as float32."""
    return bits_f32(w << 16)


@inlined
def hi_bf16(w):
    return bits_f32(w & -65536)  # 0xFFFF0000 as a signed 32-bit mask


# load(x, r, j): element j of row r of a 2-D array, widened to its math type (float32; float64 for WIDEN_F64).
# Unsigned indices (never negative here): no wraparound code per load.


@inlined
def load_bf16(x, r, j):
    return bf16_to_f32(x[uint64(r), uint64(j)])


@inlined
def load_bf16_pairs(x, r, j):  # element j: a half of word j // 2
    w = x[uint64(r), uint64(j) >> uint64(1)]
    return lo_bf16(w) if (j & 1) == 0 else hi_bf16(w)


@inlined
def load_f64(x, r, j):
    return float64(x[uint64(r), uint64(j)])


@inlined
def load_f32(x, r, j):
    return float32(x[uint64(r), uint64(j)])


def loader(widen: int) -> Any:
    """The ``load`` device function for one WIDEN_* code."""
    if widen == WIDEN_BF16:
        return load_bf16
    if widen == WIDEN_BF16_PAIRS:
        return load_bf16_pairs
    if widen == WIDEN_F64:
        return load_f64
    return load_f32
