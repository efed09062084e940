"""numba.cuda kernels for the array metrics: one block per row, the row read with coalesced loads.

Importing this module needs numba-cuda (``pip install "turbometrics[cuda]"``);
``turbometrics._gpu`` imports it only when a GPU path is taken.

Two implementations of the few primitives the CUDA simulator lacks (warp
shuffles, libdevice bit casts) are chosen at import: the fast ones on a real
GPU (PTX-compiled in the tests, run when a GPU is lent) and shared-memory /
arithmetic ones under ``NUMBA_ENABLE_CUDASIM=1``, so the simulator runs every
kernel with the same algorithm. ``TPB`` shrinks to 32 in the simulator, where
each thread is a Python thread.

Semantics are the CPU path's exactly: NaN ranks above every number and ties
with NaN, ties broken by index as documented in ``turbometrics.classification``,
NaN or +inf in a row makes its NLL NaN.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numba import config, cuda, float32, float64, int32, int64, uint64

SIM = bool(config.ENABLE_CUDASIM)
TPB = 64 if SIM else 256  # threads per block
WARPS = TPB // 32
RADIX = 256  # 8-bit digits in the top-k radix select
CAP = 8 * TPB  # top-k candidates ranked in shared memory
TOPK_BLOCKS = 6  # top-k blocks an SM: 40 registers a thread; the default 62 ran 8-10% slower on an H200 (421fd3d)
FULL = 0xFFFFFFFF

# a row's target, as the row kernels report it (status arrays, uint8)
NOT_COUNTED, COUNTED, OUT_OF_RANGE = 0, 1, 2

# widening of a stored element to the type it is compared/summed in
WIDEN_F32, WIDEN_BF16, WIDEN_F64 = 0, 1, 2
# bf16 rows of even length read as 32-bit words, two elements a load (nll_rows only): twice the bytes in flight
WIDEN_BF16_PAIRS = 3


if SIM:

    @cuda.jit(device=True, inline=True)
    def _fast_expf(v):
        return math.exp(v)

    @cuda.jit(device=True, inline=True)
    def _bf16_to_f32(b):
        return np.array([(int(b) & 0xFFFF) << 16], np.uint32).view(np.float32)[0]

    @cuda.jit(device=True, inline=True)
    def _bits_f32(u):
        return np.array([int(u) & FULL], np.uint32).view(np.float32)[0]

    @cuda.jit(device=True, inline=True)
    def _f32_bits(v):
        return int(np.array([v], np.float32).view(np.uint32)[0])

    def _group_sum(G):
        @cuda.jit(device=True, inline=True)
        def gsum(v, buf):
            """Sum over each group of G threads (buf: shared int64[TPB]); every member gets it."""
            t = cuda.threadIdx.x
            base, lane = t - t % G, t % G
            buf[t] = v
            cuda.syncthreads()
            h = G // 2
            while h > 0:
                if lane < h:
                    buf[t] += buf[t + h]
                cuda.syncthreads()
                h //= 2
            r = buf[base]
            cuda.syncthreads()
            return r

        return gsum

    def _group_lse(G):
        @cuda.jit(device=True, inline=True)
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
                    m2, s2 = _merge(bm[t], bs[t], bm[t + h], bs[t + h])
                    bm[t] = m2
                    bs[t] = s2
                cuda.syncthreads()
                h //= 2
            rm, rs = bm[base], bs[base]
            cuda.syncthreads()
            return rm, rs

        return glse
else:

    @cuda.jit(device=True, inline=True)
    def _fast_expf(v):
        """ex2.approx of v * log2(e): two instructions for libdevice expf's ~17, within 2 ulp + the argument's
        rounding; the terms near the row's max, which carry the sum, are the exactly-scaled ones."""
        return cuda.libdevice.fast_expf(v)

    @cuda.jit(device=True, inline=True)
    def _bf16_to_f32(b):
        return cuda.libdevice.int_as_float(int32((int32(b) & 0xFFFF) << 16))

    @cuda.jit(device=True, inline=True)
    def _bits_f32(u):
        return cuda.libdevice.int_as_float(int32(u))

    @cuda.jit(device=True, inline=True)
    def _f32_bits(v):
        return int64(cuda.libdevice.float_as_int(v)) & FULL

    @cuda.jit(device=True, inline=True)
    def _warp_sum(v):
        off = 16
        while off > 0:  # butterfly: every lane ends with the total
            v += cuda.shfl_xor_sync(FULL, v, off)
            off //= 2
        return v

    @cuda.jit(device=True, inline=True)
    def _warp_lse(m, s):
        off = 16
        while off > 0:
            m, s = _merge(m, s, cuda.shfl_xor_sync(FULL, m, off), cuda.shfl_xor_sync(FULL, s, off))
            off //= 2
        return m, s

    def _group_sum(G):
        if G == 32:

            @cuda.jit(device=True, inline=True)
            def wsum(v, buf):
                return _warp_sum(v)

            return wsum

        @cuda.jit(device=True, inline=True)
        def bsum(v, buf):
            """Block sum: warp shuffles, then one shared slot per warp."""
            t = cuda.threadIdx.x
            lane, w = t % 32, t // 32
            v = _warp_sum(v)
            if lane == 0:
                buf[w] = v
            cuda.syncthreads()
            if w == 0:
                v = _warp_sum(buf[lane] if lane < WARPS else int64(0))
                if lane == 0:
                    buf[0] = v
            cuda.syncthreads()
            r = buf[0]
            cuda.syncthreads()
            return r

        return bsum

    def _group_lse(G):
        if G == 32:

            @cuda.jit(device=True, inline=True)
            def wlse(m, s, bm, bs):
                return _warp_lse(m, s)

            return wlse

        @cuda.jit(device=True, inline=True)
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


@cuda.jit(device=True, inline=True)
def _merge(m1, s1, m2, s2):
    """(max, sum exp(v - max)) of two parts; an empty part is (-inf, 0)."""
    if s2 == 0.0:
        return m1, s1
    if s1 == 0.0:
        return m2, s2
    if m1 >= m2:
        return m1, s1 + s2 * math.exp(m2 - m1)
    return m2, s2 + s1 * math.exp(m1 - m2)


@cuda.jit(device=True, inline=True)
def _lo_bf16(w):
    """The bf16 in the low half of a 32-bit word (the earlier element: little-endian), as float32."""
    return _bits_f32(w << 16)


@cuda.jit(device=True, inline=True)
def _hi_bf16(w):
    return _bits_f32(w & -65536)  # 0xFFFF0000 as a signed 32-bit mask


@cache
def kernels(widen: int, group: int = TPB, topk_blocks: int | None = TOPK_BLOCKS) -> dict:
    """The kernels for one element widening (f16/f32 -> f32, bf16 bits -> f32, f64 -> f64).

    ``group`` threads work on one row: TPB (a block per row, for long rows) or 32
    (a warp per row, TPB // 32 rows per block, for short ones). ``topk_rows``
    is always a block per row; ``topk_blocks`` asks the compiler to fit that many of its blocks
    on an SM (launch bounds: fewer registers; None: as many as it likes).
    """
    G = group
    RPB = TPB // G  # rows per block
    gsum, glse = _group_sum(G), _group_lse(G)
    PAIRS = widen == WIDEN_BF16_PAIRS
    SPAN = 2 if PAIRS else 1  # elements per stored item
    if widen == WIDEN_BF16:

        @cuda.jit(device=True, inline=True)
        def load(x, r, j):  # unsigned indices (never negative here): no wraparound code per load
            return _bf16_to_f32(x[uint64(r), uint64(j)])
    elif PAIRS:

        @cuda.jit(device=True, inline=True)
        def load(x, r, j):  # element j: a half of word j // 2
            w = x[uint64(r), uint64(j) >> uint64(1)]
            return _lo_bf16(w) if (j & 1) == 0 else _hi_bf16(w)
    elif widen == WIDEN_F64:

        @cuda.jit(device=True, inline=True)
        def load(x, r, j):
            return float64(x[uint64(r), uint64(j)])
    else:

        @cuda.jit(device=True, inline=True)
        def load(x, r, j):
            return float32(x[uint64(r), uint64(j)])

    neg = np.float64(-np.inf) if widen == WIDEN_F64 else np.float32(-np.inf)  # typed: the loop's math type
    if widen == WIDEN_F64:

        @cuda.jit(device=True, inline=True)
        def exp_(v):
            return math.exp(v)
    else:
        exp_ = _fast_expf

    @cuda.jit(device=True, inline=True)
    def lse_step(v, m, s, bad):
        """Online log-sum-exp of one element: exp in the element's math type, sums in float64."""
        if not (v < math.inf):  # NaN or +inf
            bad += 1
        elif v > m:
            s = s * float64(exp_(m - v)) + 1.0  # m = -inf: exp(-inf) = 0
            m = v
        elif v > neg:
            s += float64(exp_(v - m))
        return m, s, bad

    @cuda.jit(device=True, inline=True)
    def lse_tile(v0, v1, v2, v3, m, s, bad):
        """Four elements at once: their max first (at most one rescale a tile, one branch), then four exps,
        each added to the float64 sum (float64 per element: a confident token's NLL stays exact)."""
        if not (v0 < math.inf and v1 < math.inf and v2 < math.inf and v3 < math.inf):  # NaN or +inf
            return m, s, bad + 1  # the row's NLL is NaN: nothing else of this tile matters
        a = v0 if v0 > v1 else v1
        b = v2 if v2 > v3 else v3
        mt = a if a > b else b
        if mt > m:
            s = s * float64(exp_(m - mt))  # m = -inf: exp(-inf) = 0
            m = mt
        if m > neg:  # else the tile and all before it are -inf (v - m would be NaN)
            s += float64(exp_(v0 - m))
            s += float64(exp_(v1 - m))
            s += float64(exp_(v2 - m))
            s += float64(exp_(v3 - m))
        return m, s, bad

    @cuda.jit(device=True, inline=True)
    def row_of(x):
        """This thread's lane in its group, its row, the row count, the row length."""
        tid = cuda.threadIdx.x
        return tid % G, cuda.blockIdx.x * RPB + tid // G, x.shape[0], x.shape[1] * SPAN

    @cuda.jit(device=True, inline=True)
    def target_of(targets, mask, use_mask, ignore, use_ignore, r, rows, n):
        """Row r's target as the caller gave it, checked here so no host round trip is needed:
        (t, COUNTED) for a counted t in [0, n); (-1, NOT_COUNTED) where masked out, equal to
        ``ignore`` or past the last row; (-1, OUT_OF_RANGE) for a counted t outside [0, n)."""
        if r >= rows:
            return int64(-1), NOT_COUNTED
        t = int64(targets[r])
        if (use_mask and mask[r] == 0) or (use_ignore and t == ignore):
            return int64(-1), NOT_COUNTED
        if t < 0 or t >= n:
            return int64(-1), OUT_OF_RANGE
        return t, COUNTED

    @cuda.jit(device=True, inline=True)
    def row_lse_pairs(x, r, lane, m, s, bad):
        """row_lse over 32-bit words of two bf16 each: four words (eight elements) in flight."""
        nw = x.shape[1]
        j = lane
        while j + 3 * G < nw:
            w0, w1 = x[uint64(r), uint64(j)], x[uint64(r), uint64(j + G)]
            w2, w3 = x[uint64(r), uint64(j + 2 * G)], x[uint64(r), uint64(j + 3 * G)]
            m, s, bad = lse_tile(_lo_bf16(w0), _hi_bf16(w0), _lo_bf16(w1), _hi_bf16(w1), m, s, bad)
            m, s, bad = lse_tile(_lo_bf16(w2), _hi_bf16(w2), _lo_bf16(w3), _hi_bf16(w3), m, s, bad)
            j += 4 * G
        while j < nw:
            w = x[uint64(r), uint64(j)]
            m, s, bad = lse_step(_lo_bf16(w), m, s, bad)
            m, s, bad = lse_step(_hi_bf16(w), m, s, bad)
            j += G
        return m, s, bad

    @cuda.jit(device=True, inline=True)
    def row_lse(x, r, lane, n, m, s, bad):
        """This thread's online (max, sum, bad count) over its strided elements of row r, four loads in flight."""
        if PAIRS:
            return row_lse_pairs(x, r, lane, m, s, bad)
        j = lane
        while j + 3 * G < n:
            m, s, bad = lse_tile(
                load(x, r, j), load(x, r, j + G), load(x, r, j + 2 * G), load(x, r, j + 3 * G), m, s, bad
            )
            j += 4 * G
        while j < n:
            m, s, bad = lse_step(load(x, r, j), m, s, bad)
            j += G
        return m, s, bad

    @cuda.jit(device=True, inline=True)
    def group_lse(x, r, lane, n, active):
        """Row r's log-sum-exp as (max, sum of exp(v - max)) in float64 and its NaN/+inf count, merged over
        the group; every thread must call it (the merge syncs the block), ``active`` ones read the row."""
        m = neg
        s = 0.0
        bad = int64(0)
        if active:
            m, s, bad = row_lse(x, r, lane, n, m, s, bad)
        bm = cuda.shared.array(TPB, float64)
        bs = cuda.shared.array(TPB, float64)
        bi = cuda.shared.array(TPB, int64)
        bad = gsum(bad, bi)
        M, S = glse(float64(m), s, bm, bs)
        return M, S, bad

    @cuda.jit
    def nll_rows(x, targets, mask, use_mask, ignore, use_ignore, out, status):
        """out[r] = logsumexp(x[r]) - x[r, t] for a counted target t (0 elsewhere); status[r] as ``target_of``.

        Each thread keeps an online (max, sum) over its strided elements; one
        group merge. NaN or +inf in the row gives NaN. Every thread reaches
        the merge (no early return: the simulator's merge syncs the block).
        """
        lane, r, rows, n = row_of(x)
        t, code = target_of(targets, mask, use_mask, ignore, use_ignore, r, rows, n)
        M, S, bad = group_lse(x, r, lane, n, t >= 0)
        if lane == 0 and r < rows:
            status[r] = code
            if t < 0:
                out[r] = 0.0
            else:
                out[r] = math.nan if bad else (M - float64(load(x, r, t))) + math.log(S)  # as the CPU's row_nll

    @cuda.jit
    def fold_rows(x, targets, v0, run_m, run_s, run_bad, target_logit):
        """Fold one vocabulary slice x (rows, width), columns [v0, v0 + width), into each row's running state.

        The LM head fused with the NLL (``lm_head``): run_m/run_s are the row's
        log-sum-exp so far as (max, sum of exp(v - max)) in float64, run_bad its
        NaN/+inf count, and target_logit[r] takes x[r, targets[r] - v0] when the
        target falls in this slice. The CPU's ``_dense.fold_rows`` keeps the same state.
        """
        lane, r, rows, n = row_of(x)
        t = targets[r] if r < rows else int64(-1)
        M, S, bad = group_lse(x, r, lane, n, r < rows)
        if lane == 0 and r < rows:
            run_m[r], run_s[r] = _merge(run_m[r], run_s[r], M, S)
            run_bad[r] += bad
            j = t - v0
            if 0 <= j < n:
                target_logit[r] = float64(load(x, r, j))

    @cuda.jit(device=True, inline=True)
    def tie_step(v, j, st, t, eb, ea):
        """A tie with the target (v == st, or both NaN) counts before or after it by index."""
        if v == st or (v != v and st != st):
            if j < t:
                eb += 1
            elif j > t:
                ea += 1
        return eb, ea

    @cuda.jit
    def rank_rows(x, targets, mask, use_mask, ignore, use_ignore, before_ge, after_ge, out, status):
        """out[r] = #{j: x_j ahead of x_t} with ties counted on the sides the tie rule names.

        ahead = greater or NaN; a NaN target is beaten by nothing and ties other NaNs. -1 where
        the target is not counted (or out of range); status[r] as ``target_of``. One compare and add an
        element, ties in a rare branch a tile (the tie tests of every element had made the loop
        compute-bound on an H200; now it runs at memory speed). A NaN target takes the branch every tile.
        """
        lane, r, rows, n = row_of(x)
        t, code = target_of(targets, mask, use_mask, ignore, use_ignore, r, rows, n)
        gt = int64(0)
        eb = int64(0)
        ea = int64(0)
        if t >= 0:
            st = load(x, r, t)
            nan_t = st != st
            j = lane
            while j + 3 * G < n:
                v0, v1, v2, v3 = load(x, r, j), load(x, r, j + G), load(x, r, j + 2 * G), load(x, r, j + 3 * G)
                if not nan_t:  # NaN or greater: not <= (a NaN target is beaten by nothing)
                    gt += int64(not (v0 <= st)) + int64(not (v1 <= st)) + int64(not (v2 <= st)) + int64(not (v3 <= st))
                if nan_t or v0 == st or v1 == st or v2 == st or v3 == st:
                    eb, ea = tie_step(v0, j, st, t, eb, ea)
                    eb, ea = tie_step(v1, j + G, st, t, eb, ea)
                    eb, ea = tie_step(v2, j + 2 * G, st, t, eb, ea)
                    eb, ea = tie_step(v3, j + 3 * G, st, t, eb, ea)
                j += 4 * G
            while j < n:
                v = load(x, r, j)
                if not nan_t:
                    gt += int64(not (v <= st))
                eb, ea = tie_step(v, j, st, t, eb, ea)
                j += G
        buf = cuda.shared.array(TPB, int64)
        gt = gsum(gt, buf)
        eb = gsum(eb, buf)
        ea = gsum(ea, buf)
        if lane == 0 and r < rows:
            status[r] = code
            out[r] = -1 if t < 0 else gt + (eb if before_ge else 0) + (ea if after_ge else 0)

    @cuda.jit(device=True, inline=True)
    def key(x, r, j, largest):
        """An order-preserving 32-bit key (int64): larger key = earlier in the output."""
        v = float32(load(x, r, j))
        if v != v:
            k = int64(FULL)  # NaN: above +inf
        else:
            if v == 0:
                v = float32(0.0)  # -0.0 ties +0.0
            u = _f32_bits(v)
            k = (u ^ FULL) if u & 0x80000000 else (u | 0x80000000)
        return k if largest else k ^ FULL

    @cuda.jit(device=True, inline=True)
    def best4(kk, j, a0, a1, a2, a3, b0, b1, b2, b3):
        """Key kk (index j) into a thread's four best, for kk > a3; on equal keys the earlier entry stays ahead."""
        if kk > a0:
            return kk, a0, a1, a2, j, b0, b1, b2
        if kk > a1:
            return a0, kk, a1, a2, b0, j, b1, b2
        if kk > a2:
            return a0, a1, kk, a2, b0, b1, j, b2
        return a0, a1, a2, kk, b0, b1, b2, j

    @(cuda.jit if SIM or topk_blocks is None else cuda.jit(launch_bounds=(TPB, topk_blocks)))
    def topk_rows(x, k, largest, vals, idx, cand_key, cand_idx):
        """The k first entries of each row in key order, ties to the lower index.

        For k <= TPB, one pass, or two (see the fast path). Otherwise a radix select finds the k-th key
        (4 passes of 8-bit digits over the row), then, when that key is tied, the cut-off index among its ties (a radix
        select over index bits); exactly k candidates are gathered and placed by
        counting the candidates ahead of each.
        """
        r = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        n = x.shape[1]
        hist = cuda.shared.array(RADIX, int32)
        state = cuda.shared.array(5, int64)  # prefix, remaining, ties of the k-th key, count, incomplete
        if k <= TPB:
            # Fast path: the k-th largest of the threads' maxima bounds the k-th key from
            # below (floor), so the entries >= floor are a small superset of the answer,
            # ranked in shared memory. Each thread keeps its 4 best entries while it reads:
            # when no thread's 4th best reaches floor, they hold every entry >= floor and
            # the row is read once; otherwise a second pass gathers them. Too many
            # candidates (heavy ties) fall through to the radix select.
            tmax = cuda.shared.array(TPB, int64)
            ck = cuda.shared.array(CAP, int64)
            ci = cuda.shared.array(CAP, int32)
            a0 = a1 = a2 = a3 = int64(-1)  # this thread's best keys, a0 >= a1 >= a2 >= a3 (-1: none yet)
            b0 = b1 = b2 = b3 = int64(0)  # their indices; on equal keys the first seen (lowest) stays
            j = tid
            while j + 3 * TPB < n:
                k0, k1 = key(x, r, j, largest), key(x, r, j + TPB, largest)
                k2, k3 = key(x, r, j + 2 * TPB, largest), key(x, r, j + 3 * TPB, largest)
                if max(max(k0, k1), max(k2, k3)) > a3:  # rare once the four are good: one branch a tile
                    if k0 > a3:
                        a0, a1, a2, a3, b0, b1, b2, b3 = best4(k0, j, a0, a1, a2, a3, b0, b1, b2, b3)
                    if k1 > a3:
                        a0, a1, a2, a3, b0, b1, b2, b3 = best4(k1, j + TPB, a0, a1, a2, a3, b0, b1, b2, b3)
                    if k2 > a3:
                        a0, a1, a2, a3, b0, b1, b2, b3 = best4(k2, j + 2 * TPB, a0, a1, a2, a3, b0, b1, b2, b3)
                    if k3 > a3:
                        a0, a1, a2, a3, b0, b1, b2, b3 = best4(k3, j + 3 * TPB, a0, a1, a2, a3, b0, b1, b2, b3)
                j += 4 * TPB
            while j < n:
                k0 = key(x, r, j, largest)
                if k0 > a3:
                    a0, a1, a2, a3, b0, b1, b2, b3 = best4(k0, j, a0, a1, a2, a3, b0, b1, b2, b3)
                j += TPB
            mk = a0
            mine = mk * TPB + (TPB - 1 - tid)  # key, then the lower thread ahead: one compare a thread below
            tmax[tid] = mine
            if tid == 0:
                state[3] = 0
                state[4] = 0
            cuda.syncthreads()
            ahead = 0
            for u in range(TPB):  # a broadcast load, compare and add each
                ahead += tmax[u] > mine
            if ahead == k - 1:  # exactly one thread
                state[0] = mk
            cuda.syncthreads()
            floor = state[0]
            if a3 >= floor:  # this thread may hold more entries >= floor than its four
                state[4] = 1
            cuda.syncthreads()
            if state[4] == 0:  # the four best of every thread hold every entry >= floor (at most 4 * TPB <= CAP)
                for q in range(4):
                    aq, bq = (a0, b0) if q == 0 else (a1, b1) if q == 1 else (a2, b2) if q == 2 else (a3, b3)
                    if aq >= floor:
                        c = cuda.atomic.add(state, 3, 1)
                        ck[c] = aq
                        ci[c] = bq
            else:
                j = tid
                while j < n:
                    kk = key(x, r, j, largest)
                    if kk >= floor:
                        c = cuda.atomic.add(state, 3, 1)
                        if c < CAP:
                            ck[c] = kk
                            ci[c] = j
                    j += TPB
            cuda.syncthreads()
            nc = state[3]
            if nc <= CAP:
                for c in range(tid, nc, TPB):
                    kc, ic = ck[c], ci[c]
                    pos = 0
                    for d in range(nc):
                        if ck[d] > kc or (ck[d] == kc and ci[d] < ic):
                            pos += 1
                    if pos < k:
                        idx[r, pos] = ic
                        vals[r, pos] = x[r, ic]
                return
            cuda.syncthreads()
        if tid == 0:
            state[0] = 0
            state[1] = k
        prefix_mask = int64(0)
        for p in range(4):
            shift = 24 - 8 * p
            for b in range(tid, RADIX, TPB):
                hist[b] = 0
            cuda.syncthreads()
            prefix = state[0]
            for j in range(tid, n, TPB):
                kk = key(x, r, j, largest)
                if (kk & prefix_mask) == prefix:
                    cuda.atomic.add(hist, (kk >> shift) & 0xFF, 1)
            cuda.syncthreads()
            if tid == 0:
                rem = state[1]
                b = RADIX - 1
                while b > 0 and hist[b] < rem:  # from the largest digit down
                    rem -= hist[b]
                    b -= 1
                state[0] = prefix | (int64(b) << shift)
                state[1] = rem
                state[2] = hist[b]
            prefix_mask |= int64(0xFF) << shift
            cuda.syncthreads()
        kth = state[0]
        need = state[1]  # how many entries with key == kth are taken
        ties = state[2]
        cuda.syncthreads()  # everyone has read state before thread 0 reuses it
        cut = int64(n)  # take ties of kth at indices < cut
        if ties > need:  # more ties than places: the `need` lowest indices
            if tid == 0:
                state[0] = 0
                state[1] = need
            nbits = 1
            while (int64(1) << nbits) < n:
                nbits += 1
            passes = (nbits + 7) // 8
            imask = int64(0)
            for p in range(passes):
                shift = 8 * (passes - 1 - p)
                for b in range(tid, RADIX, TPB):
                    hist[b] = 0
                cuda.syncthreads()
                prefix = state[0]
                for j in range(tid, n, TPB):
                    if (j & imask) == prefix and key(x, r, j, largest) == kth:
                        cuda.atomic.add(hist, (j >> shift) & 0xFF, 1)
                cuda.syncthreads()
                if tid == 0:
                    rem = state[1]
                    b = 0
                    while b < RADIX - 1 and hist[b] < rem:  # from the smallest index up
                        rem -= hist[b]
                        b += 1
                    state[0] = prefix | (int64(b) << shift)
                    state[1] = rem
                imask |= int64(0xFF) << shift
                cuda.syncthreads()
            cut = state[0] + 1
        if tid == 0:
            state[3] = 0
        cuda.syncthreads()
        base = r * k
        for j in range(tid, n, TPB):
            kk = key(x, r, j, largest)
            if kk > kth or (kk == kth and j < cut):
                c = cuda.atomic.add(state, 3, 1)
                cand_key[base + c] = kk
                cand_idx[base + c] = j
        cuda.syncthreads()
        for c in range(tid, k, TPB):
            kc = cand_key[base + c]
            ic = cand_idx[base + c]
            pos = 0
            for d in range(k):
                kd = cand_key[base + d]
                if kd > kc or (kd == kc and cand_idx[base + d] < ic):
                    pos += 1
            idx[r, pos] = ic
            vals[r, pos] = x[r, ic]

    return {"nll_rows": nll_rows, "fold_rows": fold_rows, "rank_rows": rank_rows, "topk_rows": topk_rows}


LCS_SHARED_MAX = 4095  # pairs whose shorter side is at most this keep their three diagonals in shared memory


@cuda.jit(device=True, inline=True)
def _lcs_wavefront(x, x0, nx, y, y0, w, buf, o):
    """LCS length of x[x0:x0 + nx] and y[y0:y0 + w] by the whole block, one anti-diagonal i + j = d a step.

    Cell (i, j) (1-based) needs (i-1, j-1) from diagonal d-2 and (i-1, j), (i, j-1) from d-1, so three
    diagonals live in buf[o:o + 3 (w + 1)], indexed by column j; slots never written stay 0, which are
    exactly the border cells (i = 0 or j = 0) that a later diagonal reads. Every thread returns the result.
    """
    tid, T = cuda.threadIdx.x, cuda.blockDim.x
    for k in range(tid, 3 * (w + 1), T):
        buf[o + k] = 0
    cuda.syncthreads()
    for d in range(2, nx + w + 1):
        cur, p1, p2 = o + (d % 3) * (w + 1), o + ((d - 1) % 3) * (w + 1), o + ((d - 2) % 3) * (w + 1)
        j = max(1, d - nx) + tid
        hi = min(w, d - 1)
        while j <= hi:
            if x[x0 + d - j - 1] == y[y0 + j - 1]:
                v = buf[p2 + j - 1] + 1
            else:
                up, left = buf[p1 + j], buf[p1 + j - 1]
                v = up if up > left else left
            buf[cur + j] = v
            j += T
        cuda.syncthreads()
    return buf[o + ((nx + w) % 3) * (w + 1) + w]


@cuda.jit
def lcs_pairs(a, b, spans, scratch, out):
    """LCS length of pair p = (a[spans[p]:spans[n + p]], b[spans[2n + p]:spans[3n + p]]), n = len(out), one
    block per pair (the spans in one array: one upload).

    The block walks the DP's anti-diagonals (``_lcs_wavefront``) with the shorter side as columns: n + m
    steps of up to min(n, m) independent cells. The diagonals sit in dynamic shared memory when every
    pair's shorter side is at most LCS_SHARED_MAX (``scratch`` empty), else in global ``scratch`` at
    spans[4n + p]. Pairs address their spans (not consecutive offsets) so that one token array serves
    every pairing of its sequences without a gather.
    """
    p, n = cuda.blockIdx.x, out.shape[0]
    a0, b0 = spans[p], spans[2 * n + p]
    na, nb = spans[n + p] - a0, spans[3 * n + p] - b0
    swap = nb > na
    x, x0, nx = (b, b0, nb) if swap else (a, a0, na)
    y, y0, w = (a, a0, na) if swap else (b, b0, nb)
    if scratch.shape[0] == 0:
        v = _lcs_wavefront(x, x0, nx, y, y0, w, cuda.shared.array(0, int32), 0)
    else:
        v = _lcs_wavefront(x, x0, nx, y, y0, w, scratch, spans[4 * n + p])
    if cuda.threadIdx.x == 0:
        out[p] = v


MAX_GPU_ORDER = 16  # n-gram orders the token-ID kernel counts in registers (BLEU's 4, ROUGE-1..9)
NGRAM_SHARED_MAX = 6144  # int64 tokens of a segment (hypothesis + its references) staged in shared memory: 48 KB,
# the default limit of a launch, with no static shared array in ngram_matches (one there would break it)


@cuda.jit(device=True, inline=True)
def _common_prefix(tok, p, q, m):
    """How many of the m tokens from p and from q agree, counted from the start (stops at the first miss)."""
    k = 0
    while k < m and tok[p + k] == tok[q + k]:
        k += 1
    return k


@cuda.jit(device=True, inline=True)
def _count_at(tok, i, top, j0, j1, end, cnt):
    """cnt[n - 1] += how many n-grams equal to the one at i (n <= top) start in [j0, j1) of a sequence that
    ends at ``end``. The first tokens are compared with a register: a warp's threads read the same tok[j]
    (a broadcast), and the prefix walk is the rare branch for most data."""
    t0 = tok[i]
    for j in range(j0, j1):
        if tok[j] == t0:
            for n in range(_common_prefix(tok, i, j, min(top, end - j))):
                cnt[n] += 1


@cuda.jit(device=True, inline=True)
def _segment_matches(tok, h0, staged, meta, o_hyp, o_ref, o_seg, s, order, per_ref, out, i, step):
    """ngram_matches of segment s, whose hypothesis starts at tok[h0]: ``tok`` is the shared copy (``staged``:
    the references follow the hypothesis there, in order) or the global tokens (references found in ``meta``)."""
    hl = meta[meta[o_hyp + s] + 1] - meta[meta[o_hyp + s]]
    cnt = cuda.local.array(MAX_GPU_ORDER, int64)
    cnt_r = cuda.local.array(MAX_GPU_ORDER, int64)
    best = cuda.local.array(MAX_GPU_ORDER, int64)
    while i < hl:
        top = min(order, hl - i)  # orders of the n-grams starting at i
        for n in range(top):
            cnt[n] = 0
            best[n] = 0
        _count_at(tok, h0 + i, top, h0, h0 + i, h0 + hl, cnt)  # occurrences before i
        new = 0  # the orders n > new are counted here, at their first occurrence (a shorter n-gram seen
        while new < top and cnt[new] > 0:  # before i says nothing of a longer one; a longer one seen says
            new += 1  # its prefixes were)
        if new < top:
            _count_at(tok, h0 + i, top, h0 + i, h0 + hl, h0 + hl, cnt)  # with i: the hypothesis count of n > new
            a = h0 + hl
            for r in range(meta[o_seg + s], meta[o_seg + s + 1]):
                q = meta[o_ref + r]
                rl = meta[q + 1] - meta[q]
                if not staged:
                    a = meta[q]
                for n in range(top):
                    cnt_r[n] = 0
                _count_at(tok, h0 + i, top, a, a + rl, a + rl, cnt_r)
                for n in range(new, top):
                    if per_ref:
                        if cnt_r[n] > 0:
                            cuda.atomic.add(out, (r, n), min(cnt[n], cnt_r[n]))
                    elif cnt_r[n] > best[n]:
                        best[n] = cnt_r[n]
                a += rl
            if not per_ref:
                for n in range(new, top):
                    if best[n] > 0:
                        cuda.atomic.add(out, (s, n), min(cnt[n], best[n]))
        i += step


@cuda.jit(device=True, inline=True)
def _stage(tok, meta, q, buf, k0):
    """Copy sequence q (tok[off[q]:off[q + 1]], off = meta[:]) to buf[k0:], by the whole block; the end in buf."""
    a, n = meta[q], meta[q + 1] - meta[q]
    for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        buf[k0 + k] = tok[a + k]
    return k0 + n


@cuda.jit
def ngram_matches(tok, meta, o_hyp, o_ref, o_seg, order, per_ref, staged, out):
    """Clipped n-gram matches of token-ID segments, orders 1..order, exact for any token values.

    Blocks (s, part) for segment s; thread u of part p takes the hypothesis's positions
    i = p * blockDim + u, then i + gridDim.y * blockDim, ... (gridDim.y parts keep the SMs full).
    The n-gram at i equals the one at j exactly when the two sequences agree on n tokens from there, so
    one common-prefix walk per (i, j) with equal first tokens serves every order. Each distinct n-gram is
    counted at its first occurrence i: min(count in the hypothesis, count in the reference), summed with
    integer atomics (exact, in any order). ``per_ref`` False (BLEU): clipped by the largest count over the
    segment's references, into out[segment, n - 1]; True (ROUGE-N): one sum per reference, into
    out[reference, n - 1].

    ``meta`` holds the host's int64 indices in one array (one upload): sequence k is tok[off[k]:off[k + 1]]
    with off = meta[:o_hyp]; segment s's hypothesis is sequence meta[o_hyp + s], its references the sequences
    meta[o_ref + r] for r in [meta[o_seg + s], meta[o_seg + s + 1]). With ``staged`` every segment's tokens
    (at most NGRAM_SHARED_MAX) are first copied to dynamic shared memory, the many re-reads served there.
    """
    s = cuda.blockIdx.x
    i, step = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x, cuda.gridDim.y * cuda.blockDim.x
    if staged:
        buf = cuda.shared.array(0, int64)
        k0 = _stage(tok, meta, meta[o_hyp + s], buf, 0)  # the hypothesis, then each reference
        for r in range(meta[o_seg + s], meta[o_seg + s + 1]):
            k0 = _stage(tok, meta, meta[o_ref + r], buf, k0)
        cuda.syncthreads()
        _segment_matches(buf, 0, True, meta, o_hyp, o_ref, o_seg, s, order, per_ref, out, i, step)
    else:
        _segment_matches(tok, meta[meta[o_hyp + s]], False, meta, o_hyp, o_ref, o_seg, s, order, per_ref, out, i, step)
