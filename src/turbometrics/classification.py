"""Top-k selection, rank of the true class, top-k accuracy and mean reciprocal rank."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _gpu
from . import _validate as V
from ._ext import _dense
from ._kernels import rank as _rank

TIES = ("sklearn", "optimistic", "pessimistic")
# (count ties before the target, count ties after it) for each rule.
_TIE_SIDES = {"sklearn": (False, True), "optimistic": (False, False), "pessimistic": (True, True)}
_HALF_INF_MAG = {V.F16: 0x7C00, V.BF16: 0x7F80}


def topk(x: Any, k: int, axis: int = -1, largest: bool = True, sorted: bool = True,
         *, num_threads: int | None = None, device: str | None = None):
    """The ``k`` largest (or smallest) entries along ``axis`` and their indices, like ``torch.topk``.

    A partial selection per row (a running threshold filters the row in one
    pass; only survivors are partitioned), then a sort of the ``k`` only.

    Values equal ``torch.topk``'s. Among equal values the lower index comes
    first; NaN counts as larger than any number (so it leads with
    ``largest=True`` and trails with ``largest=False``). With ``sorted=False``
    the k entries come in no particular order.

    Returns ``(values, indices)``: values in ``x``'s dtype, indices int64, both
    shaped like ``x`` with ``axis`` of length ``k`` (torch tensors for torch input).
    GPU input (float16/bfloat16/float32, last axis) runs on the GPU and the
    results stay there in its type (always sorted); ``device`` forces a side.
    """
    if _gpu.use_gpu(device, x):
        if V.check_int(axis, "axis") not in (-1, len(getattr(x, "shape", np.shape(x))) - 1):
            raise ValueError("on the GPU topk selects along the last axis; move the axis there first")
        return _gpu.topk(x, k, bool(largest))
    a = V.as_array(x, "x")
    if a.data.ndim == 0:
        raise ValueError("x must have at least one dimension")
    ax = V.check_int(axis, "axis")
    if not -a.data.ndim <= ax < a.data.ndim:
        raise ValueError(f"axis {ax} is out of range for x with {a.data.ndim} dimensions")
    d = np.moveaxis(a.data, ax, -1)
    if d.size == 0:
        raise ValueError(f"x is empty (shape {a.data.shape})")
    k = V.check_k(k, d.shape[-1])
    lead = d.shape[:-1]
    rows = V.rows3d(d.reshape(-1, d.shape[-1]) if d.ndim > 3 else d, "x", 1, 3)
    vals, idx = _dense.topk_rows(rows, a.code, k, bool(largest), bool(sorted), V.check_threads(num_threads))
    vals = np.moveaxis(vals.reshape(lead + (k,)), -1, ax)
    idx = np.moveaxis(idx.reshape(lead + (k,)), -1, ax)
    if a.code == V.F16:
        vals = vals.view(np.float16)
    elif a.code == V.BF16 and not a.torch:  # torch bfloat16 is re-tagged by V.wrap
        vals = vals.view(a.dtype)
    return V.wrap(np.ascontiguousarray(vals), a), V.wrap(np.ascontiguousarray(idx), a)


def _ranks(scores: Any, targets: Any, ties: str, ignore_index: int | None, num_threads: int | None,
           device: str | None = None, keep_on_device: bool = False):
    """int64 ranks (flat, -1 where ignored), the counted mask and the validated scores.

    On the GPU the ranks come to the host (one int per row) unless ``keep_on_device``.
    """
    V.check_choice(ties, "ties", TIES)
    if _gpu.use_gpu(device, scores, targets):
        before, after = _TIE_SIDES[ties]
        r, counted, rows = _gpu.ranks(scores, targets, before, after, ignore_index)
        return (r if keep_on_device else r.copy_to_host()), counted, rows
    a = V.as_array(scores, "scores")
    x = V.rows3d(a.data, "scores")
    t64, counted = V.as_targets(targets, a.data.shape[:-1], x.shape[2], ignore_index=ignore_index)
    before, after = _TIE_SIDES[ties]
    prev = _rank.set_threads(min(V.check_threads(num_threads), _rank.numba.config.NUMBA_NUM_THREADS))
    try:
        safe = np.where(t64 < 0, 0, t64)  # ignored rows are ranked against class 0 and dropped
        if a.code in _HALF_INF_MAG:
            r = _rank.rank_rows_half(x, safe, before, after, _HALF_INF_MAG[a.code])
        else:
            r = _rank.rank_rows(x, safe, before, after)
    finally:
        _rank.set_threads(prev)
    r[t64 < 0] = -1
    return r, counted, a


def target_rank(scores: Any, targets: Any, ties: str = "sklearn", *, num_threads: int | None = None,
                device: str | None = None):
    """Rank of the true class in each row of ``scores`` (0 = best), by counting in one pass.

    ``scores`` is (N, C) or (B, T, C); ``targets`` holds class indices in [0, C)
    of any integer dtype, shaped like ``scores`` without its last axis.

    ties:
      * ``"sklearn"`` (default): among equal scores the higher class index ranks
        first, exactly as ``sklearn.metrics.top_k_accuracy_score``:
        ``#{j: s_j > s_t} + #{j > t: s_j == s_t}``.
      * ``"optimistic"``: only strictly greater scores count (torcheval).
      * ``"pessimistic"``: every tied class ranks ahead of the target.

    NaN scores count as larger than any number (NaNs tie with each other).
    Returns int64 ranks shaped like ``targets`` (a tensor for tensor input; on
    the device, in the input's type, for GPU input).
    """
    r, counted, a = _ranks(scores, targets, ties, None, num_threads, device, keep_on_device=True)
    if isinstance(a, _gpu.Rows):
        return _gpu.give_back(r, a, counted.shape)
    return V.wrap(r.reshape(a.data.shape[:-1]), a)


def _average(values: np.ndarray, counted: np.ndarray, sample_weight: Any) -> float:
    """np.average over counted rows, as scikit-learn does (same operations, same bits)."""
    c = counted.reshape(-1)
    if sample_weight is None:
        return float(np.average(values[c])) if c.any() else float("nan")
    w = V.as_weights(sample_weight, c.size)
    w = w[c]
    if not np.all(np.isfinite(w)) or (w < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    if w.sum() == 0:
        raise ValueError("sample_weight sums to zero over the counted rows")
    return float(np.average(values[c], weights=w))


def topk_accuracy(scores: Any, targets: Any, k: int | Sequence[int] = 5, ties: str = "sklearn",
                  sample_weight: Any = None, ignore_index: int | None = None,
                  *, num_threads: int | None = None, device: str | None = None):
    """Fraction of rows whose true class ranks in the top ``k`` (see ``target_rank`` for ``ties``).

    With the default ``ties="sklearn"`` this equals
    ``sklearn.metrics.top_k_accuracy_score(targets, scores, k=k, labels=range(C),
    sample_weight=sample_weight)`` exactly. Rows whose target equals
    ``ignore_index`` are left out (numerator and denominator). A tuple/list
    ``k`` gives an ndarray of accuracies, all from the one pass of ranks.
    If every row is ignored the result is NaN. GPU input is ranked on the GPU.
    """
    r, counted, a = _ranks(scores, targets, ties, ignore_index, num_threads, device)
    n_classes = a.n_classes
    ks = [V.check_k(kk, n_classes) for kk in k] if isinstance(k, (tuple, list)) else None
    if ks is None:
        return _average(r < V.check_k(k, n_classes), counted, sample_weight)
    return np.array([_average(r < kk, counted, sample_weight) for kk in ks])


def mean_reciprocal_rank(scores: Any, targets: Any, ties: str = "sklearn", sample_weight: Any = None,
                         ignore_index: int | None = None, *, num_threads: int | None = None,
                         device: str | None = None) -> float:
    """Mean of 1 / (rank + 1) of the true class (ranks and ties as in ``target_rank``)."""
    r, counted, _ = _ranks(scores, targets, ties, ignore_index, num_threads, device)
    return _average(1.0 / (np.maximum(r, 0) + 1.0), counted, sample_weight)  # -1 = ignored row
