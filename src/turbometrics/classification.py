"""Top-k selection, rank of the true class, top-k accuracy and mean reciprocal rank."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from . import _gpu, _gpu_tally, _validate
from ._arrays import device_guard
from ._ext import _dense
from ._metric import Metric, Plan, concat, no_rows, once, one_score, ratios

TIES = ("sklearn", "optimistic", "pessimistic")
# (count ties before the target, count ties after it) for each rule.
_TIE_SIDES = {"sklearn": (False, True), "optimistic": (False, False), "pessimistic": (True, True)}


def topk(
    x: Any,
    k: int,
    axis: int = -1,
    largest: bool = True,
    sorted: bool = True,
    *,
    num_threads: int | None = None,
    device: str | None = None,
):
    """The ``k`` largest (or smallest) entries along ``axis`` and their indices, like ``torch.topk``.

    A partial selection per row (a running threshold filters the row in one
    pass; only survivors are partitioned), then a sort of the ``k`` only.
    Values equal ``torch.topk``'s. Among equal values the lower index comes
    first; NaN counts as larger than any number (so it leads with
    ``largest=True`` and trails with ``largest=False``).

    Parameters
    ----------
    x : array-like
        float16/bfloat16/float32/float64 or integer values, at least 1-D
        (GPU input: float16/bfloat16/float32, last axis; runs on the GPU).
    k : int
        In [1, size of ``axis``].
    axis : int
        The axis to select along (last by default).
    largest : bool
        The largest (True) or smallest entries.
    sorted : bool
        Sorted best first (True), or in no particular order.
    num_threads : int, optional
        CPU threads (default: every core); results do not depend on it.
    device : {"cpu", "cuda"}, optional
        Force a side (default: where ``x`` is).

    Returns
    -------
    (values, indices)
        Values in ``x``'s dtype, indices int64, both shaped like ``x`` with
        ``axis`` of length ``k`` (torch tensors for torch input; on the
        device for GPU input, always sorted).

    Raises
    ------
    TypeError, ValueError
        For non-numeric or empty input, ``k`` outside [1, n], a bad axis.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> tm.topk(np.array([[1.0, 3.0, 2.0, 3.0]]), 2)
    (array([[3., 3.]]), array([[1, 3]]))
    """
    largest, sorted = _validate.check_bool(largest, "largest"), _validate.check_bool(sorted, "sorted")
    if _gpu.use_gpu(device, x):
        if _validate.check_int(axis, "axis") not in (-1, len(getattr(x, "shape", np.shape(x))) - 1):
            raise ValueError("on the GPU topk selects along the last axis; move the axis there first")
        return _gpu.topk(x, k, largest)
    a = _validate.as_array(x, "x")
    if a.data.ndim == 0:
        raise ValueError("x must have at least one dimension")
    ax = _validate.check_int(axis, "axis")
    if not -a.data.ndim <= ax < a.data.ndim:
        raise ValueError(f"axis {ax} is out of range for x with {a.data.ndim} dimensions")
    d = np.moveaxis(a.data, ax, -1)
    if d.size == 0:
        raise ValueError(f"x is empty (shape {a.data.shape})")
    k = _validate.check_k(k, d.shape[-1])
    lead = d.shape[:-1]
    rows = _validate.rows3d(d.reshape(-1, d.shape[-1]) if d.ndim > 3 else d, "x", 1, 3)
    vals, idx = _dense.topk_rows(rows, a.code, k, largest, sorted, _validate.check_threads(num_threads))
    vals = np.moveaxis(vals.reshape(lead + (k,)), -1, ax)
    idx = np.moveaxis(idx.reshape(lead + (k,)), -1, ax)
    if a.code == _validate.F16:
        vals = vals.view(np.float16)
    elif a.code == _validate.BF16 and not a.torch:  # torch bfloat16 is re-tagged by _validate.wrap
        vals = vals.view(a.dtype)
    return _validate.wrap(np.ascontiguousarray(vals), a), _validate.wrap(np.ascontiguousarray(idx), a)


def _ranks(
    scores: Any,
    targets: Any,
    ties: str,
    ignore_index: int | None,
    num_threads: int | None,
    device: str | None = None,
    keep_on_device: bool = False,
):
    """int64 ranks (flat, -1 where ignored), the counted mask and the validated scores.

    On the GPU the ranks come to the host (one int per row) unless ``keep_on_device``.
    """
    _validate.check_choice(ties, "ties", TIES)
    if _gpu.use_gpu(device, scores, targets):
        before, after = _TIE_SIDES[ties]
        r, counted, rows = _gpu.ranks(scores, targets, before, after, ignore_index, host=not keep_on_device)
        return r, counted, rows
    a = _validate.as_array(scores, "scores")
    x = _validate.rows3d(a.data, "scores")
    t64, counted = _validate.as_targets(targets, a.data.shape[:-1], x.shape[2], ignore_index=ignore_index)
    before, after = _TIE_SIDES[ties]
    # ignored rows (t64 -1) come back -1, unread
    r = _dense.rank_rows(x, a.code, t64, before, after, _validate.check_threads(num_threads))
    return r, counted, a


def target_rank(
    scores: Any, targets: Any, ties: str = "sklearn", *, num_threads: int | None = None, device: str | None = None
):
    """Rank of the true class in each row of ``scores`` (0 = best), by counting in one pass.

    Parameters
    ----------
    scores : array-like (N, C) or (B, T, C)
        float16/bfloat16/float32/float64 or integer scores (GPU input is ranked on the GPU).
    targets : array-like (N,) or (B, T)
        Class indices in [0, C), any integer dtype.
    ties : {"sklearn", "optimistic", "pessimistic"}
        ``"sklearn"`` (default): among equal scores the higher class index
        ranks first, exactly as ``sklearn.metrics.top_k_accuracy_score``:
        ``#{j: s_j > s_t} + #{j > t: s_j == s_t}``. ``"optimistic"``: only
        strictly greater scores count (torcheval). ``"pessimistic"``: every
        tied class ranks ahead of the target. NaN scores count as larger than
        any number (NaNs tie with each other).
    num_threads : int, optional
        CPU threads (default: every core); results do not depend on it.
    device : {"cpu", "cuda"}, optional
        Force a side (default: where the scores are).

    Returns
    -------
    numpy.ndarray or tensor
        int64 ranks shaped like ``targets`` (a tensor for tensor input; on the
        device, in the input's type, for GPU input).

    Raises
    ------
    TypeError, ValueError
        For non-numeric scores, non-integer or out-of-range targets, shapes that do not match.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> tm.target_rank(np.array([[0.2, 0.5, 0.5], [0.9, 0.1, 0.0]]), [1, 0])
    array([1, 0])
    """
    r, counted, a = _ranks(scores, targets, ties, None, num_threads, device, keep_on_device=True)
    if isinstance(a, _gpu.Rows):
        return _gpu.give_back(r, a, counted.shape)
    return _validate.wrap(r.reshape(a.data.shape[:-1]), a)


def _average(values: np.ndarray, counted: np.ndarray, weights: np.ndarray | None) -> float:
    """np.average over counted rows, as scikit-learn does (same operations, same bits)."""
    if weights is None:  # np.average without weights is the mean: the same operations
        n = int(np.count_nonzero(counted))
        if values.dtype == bool:  # an exact count over n: the mean's bits, without its overhead
            return int(np.count_nonzero(values & counted)) / n if n else float("nan")
        return float(values[counted].mean()) if n else float("nan")
    w = weights[counted]
    if w.sum() == 0:
        raise ValueError("sample_weight sums to zero over the counted rows")
    return float(np.average(values[counted], weights=w))


def _rank_chunk(r: np.ndarray, counted: np.ndarray) -> tuple:
    """``_RankMetric``'s chunk of an unweighted update on a device: the flat ranks (-1 where not counted)."""
    return r.reshape(-1), None


class _RankMetric(Metric):
    """A score of the true class's rank per row (``target_rank``), averaged over counted rows.

    State: the rank of each row (-1 where ignored) and the rows' weights if given.
    Without ``sample_weight`` the result is the same in any merge order; with
    weights it is ``np.average`` over the rows in update/merge order (as the
    one-shot function is over its rows).
    """

    _state = {"_ranks": list, "_weights": list}
    _ranks: list[np.ndarray]
    _weights: list[np.ndarray | None]

    def __init__(self, ties: str = "sklearn", ignore_index: int | None = None):
        self.ties = _validate.check_choice(ties, "ties", TIES)
        self.ignore_index = ignore_index if ignore_index is None else _validate.check_int(ignore_index, "ignore_index")
        self.reset()

    def _check_classes(self, n_classes: int) -> None:
        """Options that depend on the number of classes (k for top-k accuracy)."""

    def _stats(self, scores, targets, sample_weight, num_threads, device, later=True):
        if later and sample_weight is None and _gpu.use_gpu(device, scores, targets):  # no wait for the GPU
            with device_guard(scores):
                rows = _gpu.device_rows(scores, "scores")
                self._check_classes(rows.n_classes)
                before, after = _TIE_SIDES[self.ties]
                return _gpu.row_later(
                    "rank_rows", rows, targets, self.ignore_index, None, np.int64, _rank_chunk, before, after
                )
        r, counted, a = _ranks(scores, targets, self.ties, self.ignore_index, num_threads, device)
        self._check_classes(a.n_classes)
        w = None if sample_weight is None else _validate.as_weights(sample_weight, r.size, counted=counted.reshape(-1))
        return r, w

    def update(
        self,
        scores: Any,
        targets: Any,
        sample_weight: Any = None,
        *,
        num_threads: int | None = None,
        device: str | None = None,
    ) -> _RankMetric:
        """Add rows: scores (N, C) or (B, T, C), targets, optional per-row weights (as the one-shot function).
        No rows (an empty last batch) add nothing."""
        if no_rows(scores, targets, classes=True):
            return self._fold(None)
        return self._fold(self._stats(scores, targets, sample_weight, num_threads, device))

    def _state_arrays(self) -> tuple[np.ndarray, np.ndarray | None]:
        r = concat(self._ranks, (0,), np.int64)
        weighted = {w is not None for w in self._weights}
        if len(weighted) > 1:
            raise ValueError("sample_weight was given for some updates and not for others")
        return r, (concat(self._weights) if weighted == {True} else None)

    def _values(self, r: np.ndarray) -> list[np.ndarray]:  # pragma: no cover - each subclass defines it
        """The per-row values averaged (one array per score), from the ranks."""
        raise NotImplementedError

    def _several(self) -> bool:
        """Whether the result is a list of scores (top-k accuracy at several k) rather than one."""
        return False

    def _results(self) -> list[float]:
        r, w = self._state_arrays()
        counted = r >= 0
        return [_average(v, counted, w) for v in self._values(r)]

    def _plan(self) -> Plan:
        """Rows: (value at each k / reciprocal rank, 1) per counted row, times its weight if weighted."""
        r, w = self._state_arrays()
        counted = r >= 0
        values = self._values(r[counted])
        rows = np.stack(values + [np.ones(int(counted.sum()), values[0].dtype)], axis=1)
        if w is not None:
            rows = rows * w[counted][:, None]
        rows = np.ascontiguousarray(rows, dtype=np.int64 if rows.dtype == bool else np.float64)
        point = np.array(self._results(), dtype=np.float64)
        wrap = (
            (lambda make: [make(slice(i, i + 1), lambda a: float(a[0])) for i in range(len(values))])
            if self._several()
            else one_score
        )
        return Plan(rows, ratios, point, tuple(range(len(values))), wrap)


class TopKAccuracy(_RankMetric):
    """Top-k accuracy over chunks of rows; ``compute()`` equals ``tm.topk_accuracy`` on all the rows.

    Options as in ``topk_accuracy``; ``k`` may be a tuple/list (then ``compute``
    gives an ndarray, one accuracy per k, from the one pass of ranks).

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> acc = tm.metrics.TopKAccuracy(k=1)
    >>> acc = acc.update(np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([1, 1]))
    >>> acc.update(np.array([[0.3, 0.7]]), np.array([1])).compute()
    0.6666666666666666
    """

    def __init__(self, k: int | Sequence[int] = 5, ties: str = "sklearn", ignore_index: int | None = None):
        if isinstance(k, (tuple, list)) and not k:
            raise ValueError("k must be an integer or a non-empty tuple/list of them, got an empty one")
        for kk in k if isinstance(k, (tuple, list)) else [k]:
            _validate.check_int(kk, "k")
        self.k = k
        super().__init__(ties, ignore_index)

    def _check_classes(self, n_classes: int) -> None:
        for kk in self._ks():
            _validate.check_k(kk, n_classes)

    def _several(self) -> bool:
        return isinstance(self.k, (tuple, list))

    def _ks(self) -> list[int]:
        return list(self.k) if isinstance(self.k, (tuple, list)) else [cast(int, self.k)]

    def _values(self, r: np.ndarray) -> list[np.ndarray]:
        return [r < kk for kk in self._ks()]

    def compute(self) -> float | np.ndarray:
        """The accuracy (a float), or an ndarray of accuracies for a tuple/list ``k``; NaN if no row counted."""
        out = self._results()
        return np.array(out) if self._several() else out[0]


class MeanReciprocalRank(_RankMetric):
    """Mean reciprocal rank over chunks of rows; ``compute()`` equals ``tm.mean_reciprocal_rank``.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> tm.metrics.MeanReciprocalRank().update(np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([1, 1])).compute()
    0.75
    """

    def _values(self, r: np.ndarray) -> list[np.ndarray]:
        return [1.0 / (np.maximum(r, 0) + 1.0)]  # -1 = ignored row

    def compute(self) -> float:
        """The mean of 1 / (rank + 1) over the counted rows (NaN if none)."""
        return self._results()[0]


def topk_accuracy(
    scores: Any,
    targets: Any,
    k: int | Sequence[int] = 5,
    ties: str = "sklearn",
    sample_weight: Any = None,
    ignore_index: int | None = None,
    *,
    num_threads: int | None = None,
    device: str | None = None,
) -> float | np.ndarray:
    """Fraction of rows whose true class ranks in the top ``k``.

    With the default ``ties="sklearn"`` this equals
    ``sklearn.metrics.top_k_accuracy_score(targets, scores, k=k, labels=range(C),
    sample_weight=sample_weight)`` exactly.

    Parameters
    ----------
    scores : array-like (N, C) or (B, T, C)
        float16/bfloat16/float32/float64 or integer scores (ndarray, torch
        tensor, list; a CUDA tensor / CuPy / Numba device array is ranked on the GPU).
    targets : array-like (N,) or (B, T)
        True class per row, any integer dtype, in [0, C) unless ignored.
    k : int or tuple/list of int
        A tuple/list gives an ndarray of accuracies, all from one pass of ranks.
    ties : {"sklearn", "optimistic", "pessimistic"}
        How equal scores rank (see ``target_rank``).
    sample_weight : array-like (rows,), optional
        Finite, non-negative weights per row.
    ignore_index : int, optional
        Rows whose target equals it are left out (numerator and denominator).
    num_threads : int, optional
        CPU threads (default: every core); results do not depend on it.
    device : {"cpu", "cuda"}, optional
        Force a side (default: where the scores are).

    Returns
    -------
    float or numpy.ndarray
        NaN if every row is ignored.

    Raises
    ------
    TypeError, ValueError
        For non-numeric scores, non-integer or out-of-range targets, shapes
        that do not match, ``k`` outside [1, C], bad weights or options.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> scores = np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.2, 0.2, 0.6]])
    >>> tm.topk_accuracy(scores, [2, 0, 1], k=1)
    0.3333333333333333
    >>> tm.topk_accuracy(scores, [2, 0, 1], k=(1, 2))
    array([0.33333333, 1.        ])
    """
    metric = TopKAccuracy(k, ties, ignore_index)
    ks = metric._ks()
    if sample_weight is None and len(ks) <= _gpu_tally.N_HITS and _gpu.use_gpu(device, scores, targets):
        # counted on the device: a few words come back, not a rank a row
        n, hits, rows = _gpu_tally.rank_hits(scores, targets, ks, *_TIE_SIDES[metric.ties], metric.ignore_index)
        metric._check_classes(rows.n_classes)
        out = [h / n if n else float("nan") for h in hits]  # (``_average``'s bits: an exact count over n)
        return np.array(out) if metric._several() else out[0]
    return once(metric, scores, targets, sample_weight, num_threads, device)


def mean_reciprocal_rank(
    scores: Any,
    targets: Any,
    ties: str = "sklearn",
    sample_weight: Any = None,
    ignore_index: int | None = None,
    *,
    num_threads: int | None = None,
    device: str | None = None,
) -> float:
    """Mean of 1 / (rank + 1) of the true class over the rows (ranks and ties as in ``target_rank``).

    Parameters
    ----------
    scores, targets, ties, sample_weight, ignore_index, num_threads, device
        As in ``topk_accuracy``.

    Returns
    -------
    float
        NaN if every row is ignored.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> tm.mean_reciprocal_rank(np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]]), [2, 0])
    0.75
    """
    return once(MeanReciprocalRank(ties, ignore_index), scores, targets, sample_weight, num_threads, device)
