"""Plain-Python top-k, ranks, top-k accuracy and MRR over lists of rows."""

from __future__ import annotations

import math


def _check(rows, targets=None, k=None, ignore_index=None):
    """The domain of the metrics: non-empty rows, one target per row in range, 1 <= k <= classes."""
    if not rows or not all(rows):
        raise ValueError("empty scores")
    if targets is not None:
        if len(targets) != len(rows):
            raise ValueError("one target per row")
        if any(not 0 <= t < len(r) for r, t in zip(rows, targets) if ignore_index is None or t != ignore_index):
            raise ValueError("target out of range")
    for kk in k if isinstance(k, (tuple, list)) else [k] if k is not None else []:
        if not 1 <= kk <= len(rows[0]):
            raise ValueError("k out of range")


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _key(v, j, largest):
    """Sort key: NaN beyond every number, then value, then the lower index first."""
    if largest:
        return (0, 0.0, j) if _is_nan(v) else (1, -v, j)
    return (1, 0.0, j) if _is_nan(v) else (0, v, j)


def topk(rows, k, largest=True):
    """Per row of ``rows`` (a list of lists): (values, indices) of the k best, best first."""
    _check(rows, k=k)
    values, indices = [], []
    for row in rows:
        order = sorted(range(len(row)), key=lambda j: _key(row[j], j, largest))[:k]
        values.append([row[j] for j in order])
        indices.append(order)
    return values, indices


def _ahead(v, s, tie):
    """Does score v rank ahead of the target's score s (tie: whether equality counts)?"""
    if _is_nan(s):
        return tie and _is_nan(v)
    if _is_nan(v):
        return True
    return v > s or (tie and v == s)


_TIE_SIDES = {"sklearn": (False, True), "optimistic": (False, False), "pessimistic": (True, True)}


def target_rank(rows, targets, ties="sklearn"):
    _check(rows, targets)
    before, after = _TIE_SIDES[ties]
    ranks = []
    for row, t in zip(rows, targets):
        s = row[t]
        ranks.append(sum(1 for j, v in enumerate(row) if j != t and _ahead(v, s, before if j < t else after)))
    return ranks


def _mean(values, weights):
    if weights is None:
        return sum(values) / len(values) if values else math.nan
    return sum(v * w for v, w in zip(values, weights)) / sum(weights)


def _kept(rows, targets, sample_weight, ignore_index):
    keep = [i for i, t in enumerate(targets) if ignore_index is None or t != ignore_index]
    w = None if sample_weight is None else [sample_weight[i] for i in keep]
    return [rows[i] for i in keep], [targets[i] for i in keep], w


def topk_accuracy(rows, targets, k=5, ties="sklearn", sample_weight=None, ignore_index=None):
    _check(rows, targets, k, ignore_index)
    rows, targets, w = _kept(rows, targets, sample_weight, ignore_index)
    ranks = target_rank(rows, targets, ties)
    ks = list(k) if isinstance(k, (tuple, list)) else [k]
    acc = [_mean([1.0 if r < kk else 0.0 for r in ranks], w) for kk in ks]
    return acc if isinstance(k, (tuple, list)) else acc[0]


def mean_reciprocal_rank(rows, targets, ties="sklearn", sample_weight=None, ignore_index=None):
    _check(rows, targets, None, ignore_index)
    rows, targets, w = _kept(rows, targets, sample_weight, ignore_index)
    return _mean([1.0 / (r + 1) for r in target_rank(rows, targets, ties)], w)
