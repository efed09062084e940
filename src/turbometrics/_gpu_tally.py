"""One-shot perplexity and top-k accuracy on the GPU, summed on the device: the row kernels' tally variants
(``_kernels.cuda.tally``) bring back a few words (integer counts, the digits of an exact float64 sum), not a
value and a status per row, and the host only rounds and divides (the bits of the path that brings the rows
back: the host's exact sum, ``_average``'s count over n)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _gpu
from ._arrays import on_input_device
from ._exact import _ratio

N_HITS = 4  # top-k accuracy's k counted on the device in one call (``_kernels.cuda.tally.N_HITS``)


def tally_job(name: str, rows: _gpu.Rows, targets: Any, ignore_index, mask, *options) -> tuple:
    """Row kernel ``name``'s tally variant over ``rows``, apart from the call so that benchmarks can time the
    kernel alone: (its Targets, the result words on the device, its launch)."""
    _, K = _gpu._cuda()
    T = K.tally

    def make() -> tuple:  # the grid's tally (zero between launches: each leaves it so) and the result words
        buf = _gpu._alloc((2, T.WORDS), np.int64, rows.torch_device, rows.stream, rows.kind == "cupy", zero=True)
        return buf, buf[0], buf[1]

    _, zero, out = _gpu._kept(rows, ("tally",), 16 * T.WORDS, make)
    tg = _gpu.device_targets(rows, targets, ignore_index, mask, out.view(np.uint8))

    def launch() -> None:
        if rows.data.shape[0]:
            _gpu._launch_rows(name, rows, *tg.args, *options, zero, out)

    return tg, out, launch


def _tally(name: str, rows: _gpu.Rows, targets: Any, ignore_index, mask, *options) -> np.ndarray:
    """``tally_job``'s launch and its words on the host, one small copy; the targets' error raised if the
    kernel found a counted one out of range."""
    T = _gpu._kernels().tally
    tg, out, launch = tally_job(name, rows, targets, ignore_index, mask, *options)
    if not rows.data.shape[0]:
        return np.zeros(T.WORDS, np.int64)
    launch()
    words = _gpu._back(out, rows.stream)
    if words[T.OUT_OF_RANGE]:
        tg.out_of_range(rows.lead, rows.n_classes)
    return words


def _tally_sum(words: np.ndarray) -> float:
    """The tally's exact float64 sum, rounded once (``_exact.exact_sum``'s bits: NaN for NaN or both
    infinities, else ±inf for an infinity)."""
    T = _gpu._kernels().tally
    w = words.tolist()  # Python ints: a call's few words cost less host time so than as NumPy scalars
    if w[T.NAN] or (w[T.POS_INF] and w[T.NEG_INF]):
        return math.nan
    if w[T.POS_INF] or w[T.NEG_INF]:
        return math.inf if w[T.POS_INF] else -math.inf
    total = 0
    for i, digit in enumerate(w[T.DIGITS :]):
        if digit:
            total += digit << (32 * i)
    return _ratio(total, -1074)


@on_input_device
def nll_total(logits: Any, targets: Any, ignore_index, mask) -> tuple[float, int] | None:
    """(the counted rows' NLL sum, exactly rounded; their number), summed on the device (``nll_tally``); None
    past ``tally.MAX_ROWS`` rows (more than an int64 digit holds: the caller sums the rows on the host)."""
    rows = _gpu._as_pairs(_gpu.device_rows(logits, "logits"))
    if rows.data.shape[0] >= _gpu._kernels().tally.MAX_ROWS:
        return None
    words = _tally("nll_tally", rows, targets, ignore_index, mask)
    return _tally_sum(words), int(words[_gpu._kernels().tally.COUNTED])


@on_input_device
def rank_hits(scores: Any, targets: Any, ks: list, before: bool, after: bool, ignore_index) -> tuple:
    """(counted rows, [rows ranked below k for each k], the rows): top-k accuracy's counts, summed on the device
    (``rank_tally``: at most ``tally.N_HITS`` k)."""
    T = _gpu._kernels().tally
    assert T.N_HITS == N_HITS and len(ks) <= N_HITS
    rows = _gpu.device_rows(scores, "scores")
    # in [0, classes + 1]: the same counts (a rank is below the classes), int64 for the kernel; the caller checks k
    kk = [min(max(int(k), 0), rows.n_classes + 1) for k in ks] + [0] * (T.N_HITS - len(ks))
    words = _tally("rank_tally", rows, targets, ignore_index, None, before, after, *kk)
    return int(words[T.COUNTED]), [int(words[T.HITS + i]) for i in range(len(ks))], rows
