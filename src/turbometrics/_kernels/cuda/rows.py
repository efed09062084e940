"""The row kernels: NLL, the LM head's slice fold and its score variant, ranks (a group of threads per row),
top-k (a block per row).

``nll_rows``, ``fold_rows``, ``score_rows`` and ``rank_rows`` run ``group`` threads on one row: TPB (a block per
row, for long rows) or 32 (a warp per row, TPB // 32 rows per block, for short ones); ``topk_rows`` is always a
block per row.
Each is made by a cached factory over what it is specialised for: the element widening (WIDEN_*: f16/f32 ->
f32, bf16 bits -> f32, f64 -> f64; ``score_rows`` takes every element on to float64), the group, top-k's
launch bounds.

Semantics are the CPU path's exactly: NaN ranks above every number and ties
with NaN, ties broken by index as documented in ``turbometrics.classification``,
NaN or +inf in a row makes its NLL NaN.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
from numba import cuda, float32, float64, int32, int64, uint64

from . import exptable
from .device import (
    FULL,
    INT64_MAX,
    TPB,
    WIDEN_BF16,
    WIDEN_BF16_PAIRS,
    WIDEN_F64,
    exp_f64,
    f32_bits,
    fast_expf,
    group_lse_merge,
    group_min,
    group_sum,
    hi_bf16,
    inlined,
    lo_bf16,
    loader,
    merge,
)
from .exptable import SCORE_TABLE, table_step
from .jit import kernel
from .tally import COUNTED as T_COUNTED
from .tally import HITS as T_HITS
from .tally import OUT_OF_RANGE as T_OUT_OF_RANGE
from .tally import WORDS as T_WORDS
from .tally import tally_begin, tally_count, tally_end, tally_value

RADIX = 256  # 8-bit digits in the top-k radix select
CAP = 8 * TPB  # top-k candidates ranked in shared memory
# top-k blocks an SM (launch bounds): the compiler then keeps topk_rows to 40 registers a thread (62 by its own
# choice), which runs faster (docs/gpu.md)
TOPK_BLOCKS = 6

# a row's target, as the row kernels report it (status arrays, uint8)
NOT_COUNTED, COUNTED, OUT_OF_RANGE = 0, 1, 2


def _minus_inf(widen: int) -> Any:
    """-inf typed as the loop's math type (float64 for WIDEN_F64, else float32)."""
    return np.float64(-np.inf) if widen == WIDEN_F64 else np.float32(-np.inf)


@cache
def _row_of(widen: int, group: int) -> Any:
    """row_of(x) for ``group`` threads a row (the row length counted in elements, two a word for bf16 pairs)."""
    G = group
    RPB = TPB // G  # rows per block
    SPAN = 2 if widen == WIDEN_BF16_PAIRS else 1  # elements per stored item

    @inlined
    def row_of(x):
        """This thread's lane in its group, its row, the row count, the row length."""
        tid = cuda.threadIdx.x
        return tid % G, cuda.blockIdx.x * RPB + tid // G, x.shape[0], x.shape[1] * SPAN

    return row_of


@inlined
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


@cache
def _wide_loader(widen: int) -> Any:
    """``loader(widen)``'s element as float64."""
    load = loader(widen)

    @inlined
    def load64(x, r, j):
        return float64(load(x, r, j))

    return load64


@cache
def _lse_steps(widen: int, exact: bool = False) -> tuple[Any, Any]:
    """lse_step and lse_tile in the math type of ``widen``, or in float64 with ``exact`` (float64 elements in,
    each exp in float64)."""
    wide = exact or widen == WIDEN_F64
    neg = _minus_inf(WIDEN_F64 if wide else widen)
    exp_ = exp_f64 if wide else fast_expf

    @inlined
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

    @inlined
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

    return lse_step, lse_tile


@cache
def _group_lse(widen: int, group: int, score: bool = False) -> Any:
    """group_lse(x, r, lane, n, active): row r's log-sum-exp over a group of threads; with ``score``,
    group_score(x, r, lane, n, active, bm, bs, bi): the same in float64 throughout (every element widened, every
    exp in float64) with the row's first argmax.

    The score variant carries the argmax in a read loop and a merge of its own around the same steps:
    threading it through row_lse, even unused there, changed the code nll_rows and fold_rows compile to."""
    G = group
    PAIRS = widen == WIDEN_BF16_PAIRS
    assert not (score and PAIRS), "score rows are read an element a load"
    neg = _minus_inf(WIDEN_F64 if score else widen)
    load = _wide_loader(widen) if score else loader(widen)
    gsum, glse, gfirst = group_sum(G), group_lse_merge(G), _group_first(G)
    lse_step, lse_tile = _lse_steps(widen, score)

    @inlined
    def row_lse_pairs(x, r, lane, m, s, bad):
        """row_lse over 32-bit words of two bf16 each: four words (eight elements) in flight."""
        nw = x.shape[1]
        j = lane
        while j + 3 * G < nw:
            w0, w1 = x[uint64(r), uint64(j)], x[uint64(r), uint64(j + G)]
            w2, w3 = x[uint64(r), uint64(j + 2 * G)], x[uint64(r), uint64(j + 3 * G)]
            m, s, bad = lse_tile(lo_bf16(w0), hi_bf16(w0), lo_bf16(w1), hi_bf16(w1), m, s, bad)
            m, s, bad = lse_tile(lo_bf16(w2), hi_bf16(w2), lo_bf16(w3), hi_bf16(w3), m, s, bad)
            j += 4 * G
        while j < nw:
            w = x[uint64(r), uint64(j)]
            m, s, bad = lse_step(lo_bf16(w), m, s, bad)
            m, s, bad = lse_step(hi_bf16(w), m, s, bad)
            j += G
        return m, s, bad

    @inlined
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

    @inlined
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

    @inlined
    def row_score(x, r, lane, n, m, s, bad, a):
        """row_lse keeping a, the index of this thread's first element equal to its max m: its elements come in
        index order, so a later tile or element takes a only when it raises the max."""
        j = lane
        while j + 3 * G < n:
            v0, v1, v2, v3 = load(x, r, j), load(x, r, j + G), load(x, r, j + 2 * G), load(x, r, j + 3 * G)
            top = m
            m, s, bad = lse_tile(v0, v1, v2, v3, m, s, bad)
            if m > top:  # the tile's first element equal to the new max
                a = j if v0 == m else j + G if v1 == m else j + 2 * G if v2 == m else j + 3 * G
            j += 4 * G
        while j < n:
            top = m
            m, s, bad = lse_step(load(x, r, j), m, s, bad)
            if m > top:
                a = j
            j += G
        return m, s, bad, a

    @inlined
    def group_score(x, r, lane, n, active, bm, bs, bi):
        """group_lse's (max, sum, bad count) in float64 throughout, and the least index holding the max (INT64_MAX
        when the max is -inf); every thread must call it, ``active`` ones read the row (bm, bs: shared float64[TPB],
        bi: shared int64[TPB], the caller's: the exp table's variant shares them)."""
        m = neg
        s = 0.0
        bad = int64(0)
        a = int64(-1)
        if active:
            m, s, bad, a = row_score(x, r, lane, n, m, s, bad, a)
        bad = gsum(bad, bi)
        M, S = glse(m, s, bm, bs)
        return M, S, bad, gfirst(m, M, a, bi)

    return group_score if score else group_lse


@cache
def _group_first(group: int) -> Any:
    gmin = group_min(group)

    @inlined
    def gfirst(m, M, a, bi):
        """The least of the group's indices ``a`` whose thread's max ``m`` is the group's ``M`` (glse's max is one
        thread's own m); INT64_MAX when M is -inf (the caller's ``a < n`` leaves its argmax unset)."""
        return gmin(a if m == M and m > -math.inf else INT64_MAX, bi)

    return gfirst


@cache
def _group_score_table(group: int) -> Any:
    """group_score_table(x, r, lane, n, active, tab, bm, bs, bi): ``group_score``'s results (the same state,
    from the exp table); ``group_score`` itself for rows with a finite v >= 512 or a max at or below -512."""
    G = group
    gsum, glse, gfirst = group_sum(G), group_lse_merge(G), _group_first(G)
    group_score = _group_lse(WIDEN_BF16, G, True)

    @inlined
    def group_score_table(x, r, lane, n, active, tab, bm, bs, bi):
        m = float32(-math.inf)
        a = int64(-1)
        s = 0.0
        bad = int64(0)
        big = int64(0)
        if active:
            j = lane
            while j + 3 * G < n:  # four loads in flight
                b0, b1 = x[uint64(r), uint64(j)], x[uint64(r), uint64(j + G)]
                b2, b3 = x[uint64(r), uint64(j + 2 * G)], x[uint64(r), uint64(j + 3 * G)]
                m, a, s, bad, big = table_step(b0, j, m, a, s, bad, big, tab)
                m, a, s, bad, big = table_step(b1, j + G, m, a, s, bad, big, tab)
                m, a, s, bad, big = table_step(b2, j + 2 * G, m, a, s, bad, big, tab)
                m, a, s, bad, big = table_step(b3, j + 3 * G, m, a, s, bad, big, tab)
                j += 4 * G
            while j < n:
                m, a, s, bad, big = table_step(x[uint64(r), uint64(j)], j, m, a, s, bad, big, tab)
                j += G
        if gsum(big, bi) > 0:  # the same for the whole group: it reads the row again
            return group_score(x, r, lane, n, active, bm, bs, bi)
        mm = float64(m)
        # sum exp(v - m), merge's form; a thread whose max is below -700 (exp(-m) would overflow) adds nothing
        # beside a row max above -512 (under e**-188 of it), and a row max at or below -512 is read again
        M, S = glse(mm, s * math.exp(-mm) if s > 0.0 and mm > -700.0 else 0.0, bm, bs)
        if M <= -512.0:  # (the same for the whole group)
            return group_score(x, r, lane, n, active, bm, bs, bi)
        return M, S, gsum(bad, bi), gfirst(mm, M, a, bi)

    return group_score_table


@cache
def nll_rows(widen: int, group: int = TPB) -> Any:
    """The ``nll_rows`` kernel for one widening and group (see the module's docstring)."""
    load, row_of, group_lse = loader(widen), _row_of(widen, group), _group_lse(widen, group)

    @kernel()
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

    return nll_rows


@cache
def nll_tally(widen: int, group: int = TPB) -> Any:
    """The ``nll_tally`` kernel: ``nll_rows``' NLLs summed exactly on the device (``tally``), for perplexity."""
    load, row_of, group_lse = loader(widen), _row_of(widen, group), _group_lse(widen, group)

    @kernel()
    def nll_tally(x, targets, mask, use_mask, ignore, use_ignore, tally, out):
        """nll_rows' NLLs as a tally: the counted rows, the out-of-range targets, the exact sum of the counted
        rows' NLLs (the same value a row as ``nll_rows``) and their NaN/+inf/-inf counts."""
        sh = cuda.shared.array(T_WORDS, int64)
        tally_begin(sh)
        lane, r, rows, n = row_of(x)
        t, code = target_of(targets, mask, use_mask, ignore, use_ignore, r, rows, n)
        M, S, bad = group_lse(x, r, lane, n, t >= 0)
        if lane == 0 and r < rows:
            if code == COUNTED:
                tally_count(sh, T_COUNTED, 1)
                tally_value(sh, math.nan if bad else (M - float64(load(x, r, t))) + math.log(S))
            elif code == OUT_OF_RANGE:
                tally_count(sh, T_OUT_OF_RANGE, 1)
        tally_end(sh, tally, out)

    return nll_tally


@cache
def fold_rows(widen: int, group: int = TPB) -> Any:
    """The ``fold_rows`` kernel for one widening and group (see the module's docstring)."""
    load, row_of, group_lse = loader(widen), _row_of(widen, group), _group_lse(widen, group)

    @kernel()
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
            run_m[r], run_s[r] = merge(run_m[r], run_s[r], M, S)
            run_bad[r] += bad
            j = t - v0
            if 0 <= j < n:
                target_logit[r] = float64(load(x, r, j))

    return fold_rows


@cache
def score_rows(widen: int, group: int = TPB) -> Any:
    """The ``score_rows`` kernel for one widening and group (see the module's docstring)."""
    load, row_of = loader(widen), _row_of(widen, group)
    by_exp = _group_lse(widen, group, True)
    if widen == WIDEN_BF16 and group == TPB:  # long bf16 rows: the exp table (``exptable``)
        by_table = _group_score_table(group)

        @inlined
        def score(x, r, lane, n, active, table, bm, bs, bi):
            if n < exptable.SCORE_MIN_ROW:  # (the same for the whole launch)
                return by_exp(x, r, lane, n, active, bm, bs, bi)
            tab = cuda.shared.array(SCORE_TABLE, float64)
            i = cuda.threadIdx.x
            while i < SCORE_TABLE:
                tab[i] = table[i]
                i += TPB
            cuda.syncthreads()
            return by_table(x, r, lane, n, active, tab, bm, bs, bi)

    else:

        @inlined
        def score(x, r, lane, n, active, table, bm, bs, bi):
            return by_exp(x, r, lane, n, active, bm, bs, bi)

    @kernel()
    def score_rows(x, targets, v0, run_m, run_s, run_bad, target_logit, run_arg, table):
        """``fold_rows`` in float64 throughout (each element widened, each exp in float64: a log-probability
        carries no float exp's error), keeping each row's first argmax: run_arg[r] (-1 until the row holds
        a value above -inf) becomes v0 + the slice's first maximal index when the slice's max beats the row's
        so far, so ties go to the lowest index, as torch.argmax. The CPU's ``_dense.score_rows`` keeps the
        same state. ``table``: ``score_table()`` on the device, read by long bf16 rows' variant.
        """
        lane, r, rows, n = row_of(x)
        t = targets[r] if r < rows else int64(-1)
        bm = cuda.shared.array(TPB, float64)
        bs = cuda.shared.array(TPB, float64)
        bi = cuda.shared.array(TPB, int64)
        M, S, bad, a = score(x, r, lane, n, r < rows, table, bm, bs, bi)
        if lane == 0 and r < rows:
            if M > run_m[r] and a < n:  # before the merge: a tie with an earlier slice's max keeps that one
                run_arg[r] = v0 + a
            run_m[r], run_s[r] = merge(run_m[r], run_s[r], M, S)
            run_bad[r] += bad
            j = t - v0
            if 0 <= j < n:
                target_logit[r] = float64(load(x, r, j))

    return score_rows


@inlined
def tie_step(v, j, st, t, eb, ea):
    """A tie with the target (v == st, or both NaN) counts before or after it by index."""
    if v == st or (v != v and st != st):
        if j < t:
            eb += 1
        elif j > t:
            ea += 1
    return eb, ea


@cache
def _group_rank(widen: int, group: int) -> Any:
    """group_rank(x, r, lane, n, t, before_ge, after_ge): row r's rank of its target t (``rank_rows``), summed
    over the group; every thread must call it (the sums sync the block), those with t >= 0 read the row."""
    G = group
    load, gsum = loader(widen), group_sum(G)

    @inlined
    def group_rank(x, r, lane, n, t, before_ge, after_ge):
        """#{j: x_j ahead of x_t} with ties counted on the sides the tie rule names.

        ahead = greater or NaN; a NaN target is beaten by nothing and ties other NaNs. One compare and add an
        element, ties in a rare branch a tile (testing every element for a tie makes the loop compute-bound,
        not memory-bound). A NaN target takes the branch every tile.
        """
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
        return gt + (eb if before_ge else 0) + (ea if after_ge else 0)

    return group_rank


@cache
def rank_rows(widen: int, group: int = TPB) -> Any:
    """The ``rank_rows`` kernel for one widening and group (see the module's docstring)."""
    row_of, group_rank = _row_of(widen, group), _group_rank(widen, group)

    @kernel()
    def rank_rows(x, targets, mask, use_mask, ignore, use_ignore, before_ge, after_ge, out, status):
        """out[r] = the rank of row r's target (``_group_rank``), -1 where the target is not counted (or out of
        range); status[r] as ``target_of``."""
        lane, r, rows, n = row_of(x)
        t, code = target_of(targets, mask, use_mask, ignore, use_ignore, r, rows, n)
        rank = group_rank(x, r, lane, n, t, before_ge, after_ge)
        if lane == 0 and r < rows:
            status[r] = code
            out[r] = -1 if t < 0 else rank

    return rank_rows


@cache
def rank_tally(widen: int, group: int = TPB) -> Any:
    """The ``rank_tally`` kernel: ``rank_rows`` tallied on the device (``tally``) for top-k accuracy."""
    row_of, group_rank = _row_of(widen, group), _group_rank(widen, group)

    @kernel()
    def rank_tally(x, targets, mask, use_mask, ignore, use_ignore, before_ge, after_ge, k0, k1, k2, k3, tally, out):
        """rank_rows' ranks as counts (``tally``): the counted rows, the out-of-range targets and, for each
        k_i, the counted rows ranked below it (k_i = 0: none)."""
        sh = cuda.shared.array(T_WORDS, int64)
        tally_begin(sh)
        lane, r, rows, n = row_of(x)
        t, code = target_of(targets, mask, use_mask, ignore, use_ignore, r, rows, n)
        rank = group_rank(x, r, lane, n, t, before_ge, after_ge)
        if lane == 0 and r < rows:
            if code == COUNTED:
                tally_count(sh, T_COUNTED, 1)
                if rank < k0:
                    tally_count(sh, T_HITS, 1)
                if rank < k1:
                    tally_count(sh, T_HITS + 1, 1)
                if rank < k2:
                    tally_count(sh, T_HITS + 2, 1)
                if rank < k3:
                    tally_count(sh, T_HITS + 3, 1)
            elif code == OUT_OF_RANGE:
                tally_count(sh, T_OUT_OF_RANGE, 1)
        tally_end(sh, tally, out)

    return rank_tally


@cache
def _key(widen: int) -> Any:
    """key(x, r, j, largest): top-k's order of element j of row r."""
    load = loader(widen)

    @inlined
    def key(x, r, j, largest):
        """An order-preserving 32-bit key (int64): larger key = earlier in the output."""
        v = float32(load(x, r, j))
        if v != v:
            k = int64(FULL)  # NaN: above +inf
        else:
            if v == 0:
                v = float32(0.0)  # -0.0 ties +0.0
            u = f32_bits(v)
            k = (u ^ FULL) if u & 0x80000000 else (u | 0x80000000)
        return k if largest else k ^ FULL

    return key


@inlined
def best4(kk, j, a0, a1, a2, a3, b0, b1, b2, b3):
    """Key kk (index j) into a thread's four best, for kk > a3; on equal keys the earlier entry stays ahead."""
    if kk > a0:
        return kk, a0, a1, a2, j, b0, b1, b2
    if kk > a1:
        return a0, kk, a1, a2, b0, j, b1, b2
    if kk > a2:
        return a0, a1, kk, a2, b0, b1, j, b2
    return a0, a1, a2, kk, b0, b1, b2, j


@cache
def topk_rows(widen: int, blocks: int | None = TOPK_BLOCKS) -> Any:
    """The ``topk_rows`` kernel for one widening, a block per row; ``blocks`` asks the compiler to fit that many
    of its blocks on an SM (launch bounds: fewer registers; None: as many as it likes)."""
    key = _key(widen)

    @kernel(launch_bounds=None if blocks is None else (TPB, blocks))
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

    return topk_rows
