"""Plain-Python token NLL and perplexity over nested lists.

Shapes follow the fast versions: logits [B][T][V] (or [N][V], one sequence),
targets [B][T] (or [N]); ``mask`` True = counted.
"""

from __future__ import annotations

import math


def _as_batch(x, depth):
    """Add the batch level to an unbatched input ([N][V] -> [1][N][V])."""
    d, y = 0, x
    while isinstance(y, (list, tuple)):
        d, y = d + 1, (y[0] if len(y) else None)
    return [x] if d == depth - 1 else x


def _counted(targets, ignore_index, mask):
    return [
        [
            (ignore_index is None or t != ignore_index) and (mask is None or bool(m))
            for t, m in zip(seq, (mask_seq if mask is not None else [None] * len(seq)))
        ]
        for seq, mask_seq in zip(targets, mask if mask is not None else [None] * len(targets))
    ]


def _logsumexp(row):
    m = max(row)
    if math.isnan(m) or any(math.isnan(v) for v in row) or m == math.inf:
        return math.nan
    if m == -math.inf:
        return -math.inf
    return m + math.log(math.fsum(math.exp(v - m) for v in row))


def _check(dist, targets, counted):
    """One target per row, in range where counted; no empty sequence or row."""
    if not dist or not all(dist) or not all(r for seq in dist for r in seq):
        raise ValueError("empty input")
    for seq, ts, cs in zip(dist, targets, counted, strict=True):
        for row, t, c in zip(seq, ts, cs, strict=True):
            if c and not 0 <= t < len(row):
                raise ValueError("target out of range")


def token_nll(logits, targets, ignore_index=None, mask=None):
    """Per position -log_softmax(logits)[target]; 0.0 where not counted."""
    logits, targets = _as_batch(logits, 3), _as_batch(targets, 2)
    mask = None if mask is None else _as_batch(mask, 2)
    counted = _counted(targets, ignore_index, mask)
    _check(logits, targets, counted)
    return [
        [(_logsumexp(row) - row[t]) if c else 0.0 for row, t, c in zip(seq, tseq, cseq)]
        for seq, tseq, cseq in zip(logits, targets, counted)
    ]


def _reduce(nll, counted, reduction):
    if reduction == "token":
        vals = [v for seq, cs in zip(nll, counted) for v, c in zip(seq, cs) if c]
        return math.exp(sum(vals) / len(vals)) if vals else math.nan
    means = []
    for seq, cs in zip(nll, counted):
        vals = [v for v, c in zip(seq, cs) if c]
        means.append(sum(vals) / len(vals) if vals else math.nan)
    if reduction == "none":
        return [math.exp(m) for m in means]
    live = [m for m, cs in zip(means, counted) if any(cs)]
    return math.exp(sum(live) / len(live)) if live else math.nan


def perplexity(logits, targets, ignore_index=None, mask=None, reduction="token"):
    targets_b = _as_batch(targets, 2)
    mask_b = None if mask is None else _as_batch(mask, 2)
    nll = token_nll(logits, targets, ignore_index, mask)
    return _reduce(nll, _counted(targets_b, ignore_index, mask_b), reduction)


def perplexity_from_log_probs(log_probs, targets=None, ignore_index=None, mask=None, reduction="token"):
    if targets is None:  # already gathered: one log-probability per token
        log_probs = _as_batch(log_probs, 2)
        mask = None if mask is None else _as_batch(mask, 2)
        return _reduce([[-v for v in seq] for seq in log_probs], _counted(log_probs, None, mask), reduction)
    log_probs, targets = _as_batch(log_probs, 3), _as_batch(targets, 2)
    mask = None if mask is None else _as_batch(mask, 2)
    counted = _counted(targets, ignore_index, mask)
    _check(log_probs, targets, counted)
    nll = [
        [-row[t] if c else 0.0 for row, t, c in zip(seq, ts, cs)] for seq, ts, cs in zip(log_probs, targets, counted)
    ]
    return _reduce(nll, counted, reduction)


def _neg_log(p):
    if not 0 <= p <= 1:
        raise ValueError("a probability outside [0, 1]")
    return math.inf if p == 0 else -math.log(p)


def perplexity_from_probs(probs, targets=None, ignore_index=None, mask=None, reduction="token"):
    if targets is None:
        probs = _as_batch(probs, 2)
        mask = None if mask is None else _as_batch(mask, 2)
        counted = _counted(probs, None, mask)
        return _reduce([[_neg_log(p) for p in seq] for seq in probs], counted, reduction)
    probs, targets = _as_batch(probs, 3), _as_batch(targets, 2)
    mask = None if mask is None else _as_batch(mask, 2)
    counted = _counted(targets, ignore_index, mask)
    _check(probs, targets, counted)
    nll = [
        [_neg_log(row[t]) if c else 0.0 for row, t, c in zip(seq, ts, cs)]
        for seq, ts, cs in zip(probs, targets, counted)
    ]
    return _reduce(nll, counted, reduction)


def perplexity_from_nll(nll, mask=None, reduction="token"):
    nll = _as_batch(nll, 2)
    mask = None if mask is None else _as_batch(mask, 2)
    return _reduce(nll, _counted(nll, None, mask), reduction)


def _linear(hidden, weight, bias):
    """hidden [...][d] times weight [V][d] (plus bias [V]): the logits [...][V], one dot product each."""
    if hidden and isinstance(hidden[0], (list, tuple)):
        return [_linear(h, weight, bias) for h in hidden]
    bias = [0.0] * len(weight) if bias is None else bias
    return [sum(x * y for x, y in zip(hidden, w, strict=True)) + b for w, b in zip(weight, bias, strict=True)]


def token_nll_from_hidden(hidden, weight, targets, bias=None, ignore_index=None, mask=None):
    nll = token_nll(_linear(hidden, weight, bias), targets, ignore_index, mask)
    one_sequence = not (hidden and hidden[0] and isinstance(hidden[0][0], (list, tuple)))
    return nll[0] if one_sequence else nll


def perplexity_from_hidden(hidden, weight, targets, bias=None, ignore_index=None, mask=None, reduction="token"):
    return perplexity(_linear(hidden, weight, bias), targets, ignore_index, mask, reduction)
