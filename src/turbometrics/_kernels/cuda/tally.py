"""The tally: a row kernel's results summed on the GPU into a few int64 words, so that a one-shot call copies
back those words, not a value and a status per row, and the host only divides.

Layout (``WORDS`` int64): the ticket, the row counts (counted, an out-of-range target), the float counts (NaN,
+inf, -inf), ``HITS`` hit counters (top-k accuracy at up to four k), then ``DIGITS`` words that hold an exact
float64 sum: a finite value m * 2**(p - 1074) (m the 53-bit integer mantissa, p = biased exponent - 1, 0 for
subnormals) adds m << (p % 32) into digits p // 32 .. p // 32 + 2, 32 bits a digit (signed: a negative value
subtracts). Each add is below 2**33, so an int64 digit holds 2**30 of them: integers add in any order, so the
sum is the same for any grid or schedule, and the host rounds it once (``turbometrics._gpu_tally``): the bits of the
host's exact sum.

Each block adds its rows into a shared copy first (shared atomics), then each nonzero word into the grid's tally
(``tally``: device memory that is zero when the kernel starts) with one global atomic; the block that takes the
last ticket moves the tally into ``out`` with atomic exchanges, which leave it zero for the next launch on the
stream: no clearing launch, no host work per call.
"""

from __future__ import annotations

import math

from numba import cuda, int64

from .device import f64_bits, inlined

TICKET, COUNTED, OUT_OF_RANGE, NAN, POS_INF, NEG_INF = range(6)
HITS = 6  # up to four top-k hit counters
N_HITS = 4
DIGITS = HITS + N_HITS
N_DIGITS = 66  # 32-bit digits of 2**-1074 .. 2**1024 (p // 32 + 2 <= 65)
WORDS = DIGITS + N_DIGITS
MASK32 = 0xFFFFFFFF
MAX_ROWS = 2**30  # values an int64 digit can take (each add < 2**33)


@inlined
def tally_begin(sh):
    """Zero the block's shared tally (``sh``: shared int64[WORDS]); every thread of the block calls it."""
    i = cuda.threadIdx.x
    while i < WORDS:
        sh[i] = 0
        i += cuda.blockDim.x
    cuda.syncthreads()


@inlined
def tally_count(sh, word, n):
    cuda.atomic.add(sh, word, int64(n))


@inlined
def tally_value(sh, v):
    """Add float64 ``v`` to the block's tally: into the digits when finite, else to its NaN/+inf/-inf count."""
    if v != v:
        cuda.atomic.add(sh, NAN, int64(1))
    elif v == math.inf:
        cuda.atomic.add(sh, POS_INF, int64(1))
    elif v == -math.inf:
        cuda.atomic.add(sh, NEG_INF, int64(1))
    elif v != 0.0:
        b = int64(f64_bits(v))
        e = (b >> 52) & 0x7FF
        m = b & 0xFFFFFFFFFFFFF
        p = int64(0)
        if e:
            m |= int64(1) << 52
            p = e - 1
        d = DIGITS + (p >> 5)
        s = p & 31
        a = (m & MASK32) << s  # < 2**63
        c = (m >> 32) << s  # < 2**52
        lo = a & MASK32
        mid = (a >> 32) + (c & MASK32)
        hi = c >> 32
        if b < 0:
            lo, mid, hi = -lo, -mid, -hi
        cuda.atomic.add(sh, d, lo)
        cuda.atomic.add(sh, d + 1, mid)
        cuda.atomic.add(sh, d + 2, hi)


@inlined
def tally_end(sh, tally, out):
    """The block's tally into the grid's, and the grid's into ``out`` (int64[WORDS]) by the last block, which
    leaves ``tally`` zero; every thread of the block calls it, after its rows are added."""
    cuda.syncthreads()
    i = cuda.threadIdx.x
    while i < WORDS:
        if i != TICKET and sh[i] != 0:
            cuda.atomic.add(tally, i, sh[i])
        i += cuda.blockDim.x
    cuda.threadfence()  # this block's adds land before its ticket is taken
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        sh[TICKET] = cuda.atomic.add(tally, TICKET, int64(1))
    cuda.syncthreads()
    if sh[TICKET] == cuda.gridDim.x - 1:  # every other block has added and taken its ticket
        cuda.threadfence()  # (the exchanges are atomics, resolved where the adds were: this fence is formal)
        i = cuda.threadIdx.x
        while i < WORDS:
            out[i] = cuda.atomic.exch(tally, i, int64(0))
            i += cuda.blockDim.x
