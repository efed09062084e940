"""numba.cuda kernels for the array metrics: one block (or warp) per row, the row read with coalesced loads.

Importing this package needs numba-cuda (``pip install "turbometrics[cuda]"``);
``turbometrics._gpu`` imports it only when a GPU path is taken.

- ``device``: the launch constants (``TPB``, ``SIM``, the WIDEN_* codes) and the device primitives the row
  kernels share (bit casts, row reads, warp/block reductions), their simulator variants chosen at import.
- ``rows``: the row kernels, each made by a cached factory over its specialisation:
  ``nll_rows(widen, group)``, ``fold_rows(widen, group)``, ``score_rows(widen, group)``,
  ``rank_rows(widen, group)``, ``topk_rows(widen, blocks)``; e.g. ``nll_rows(WIDEN_F32, 32)[grid, TPB, stream](...)``;
  ``nll_tally`` and ``rank_tally``, the one-shot calls' variants that sum on the device (``tally``).
- ``tally``: the device-side sums of those variants (exact float64 digits and counts) and their layout.
- ``text``: the token kernels ``lcs_pairs`` and ``ngram_matches`` (plain kernels: nothing to specialise).

Callers use the names re-exported here; ``_gpu`` reads the shared-memory limits (``LCS_SHARED_MAX``,
``NGRAM_SHARED_MAX``) from this package at each call, so a test may patch them here.
"""

from . import tally
from .device import SIM, TPB, WARPS, WIDEN_BF16, WIDEN_BF16_PAIRS, WIDEN_F32, WIDEN_F64
from .rows import (
    CAP,
    COUNTED,
    NOT_COUNTED,
    OUT_OF_RANGE,
    RADIX,
    TOPK_BLOCKS,
    fold_rows,
    nll_rows,
    nll_tally,
    rank_rows,
    rank_tally,
    score_rows,
    topk_rows,
)
from .text import LCS_SHARED_MAX, MAX_GPU_ORDER, NGRAM_SHARED_MAX, lcs_pairs, ngram_matches

__all__ = [
    "CAP",
    "COUNTED",
    "LCS_SHARED_MAX",
    "MAX_GPU_ORDER",
    "NGRAM_SHARED_MAX",
    "NOT_COUNTED",
    "OUT_OF_RANGE",
    "RADIX",
    "SIM",
    "TOPK_BLOCKS",
    "TPB",
    "WARPS",
    "WIDEN_BF16",
    "WIDEN_BF16_PAIRS",
    "WIDEN_F32",
    "WIDEN_F64",
    "fold_rows",
    "lcs_pairs",
    "ngram_matches",
    "nll_rows",
    "nll_tally",
    "rank_rows",
    "rank_tally",
    "score_rows",
    "tally",
    "topk_rows",
]
