"""The token kernels: LCS lengths of sequence pairs (``lcs_pairs``) and clipped n-gram matches of token-ID
segments (``ngram_matches``), a block per pair or per part of a segment. One compiled kernel each: numba
specialises them by argument types alone.
"""

from __future__ import annotations

from numba import cuda, int32, int64

from .device import inlined
from .jit import kernel

LCS_SHARED_MAX = 4095  # pairs whose shorter side is at most this keep their three diagonals in shared memory


@inlined
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


@kernel()
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


@inlined
def _common_prefix(tok, p, q, m):
    """How many of the m tokens from p and from q agree, counted from the start (stops at the first miss)."""
    k = 0
    while k < m and tok[p + k] == tok[q + k]:
        k += 1
    return k


@inlined
def _count_at(tok, i, top, j0, j1, end, cnt):
    """cnt[n - 1] += how many n-grams equal to the one at i (n <= top) start in [j0, j1) of a sequence that
    ends at ``end``. The first tokens are compared with a register: a warp's threads read the same tok[j]
    (a broadcast), and the prefix walk is the rare branch for most data."""
    t0 = tok[i]
    for j in range(j0, j1):
        if tok[j] == t0:
            for n in range(_common_prefix(tok, i, j, min(top, end - j))):
                cnt[n] += 1


@inlined
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


@inlined
def _stage(tok, meta, q, buf, k0):
    """Copy sequence q (tok[off[q]:off[q + 1]], off = meta[:]) to buf[k0:], by the whole block; the end in buf."""
    a, n = meta[q], meta[q + 1] - meta[q]
    for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        buf[k0 + k] = tok[a + k]
    return k0 + n


@kernel()
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
