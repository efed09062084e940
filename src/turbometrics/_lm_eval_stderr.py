"""lm-evaluation-harness's bootstrap standard errors without its process pool, the same numbers bit for bit.

``lm_eval.api.metrics.bootstrap_stderr(f, xs, iters)`` (``bootstrap_iters=100000`` by default) forks a
pool of ``cpu_count()`` processes and applies the statistic ``f`` to ``iters`` resamples
``random.Random(c).choices(xs, k=len(xs))``, 1000 per chunk c, then returns ``sample_stddev`` of them. For
GLUE's F1 and MCC each resample is a scikit-learn call (1.5 ms for MRPC's 408 documents, 62 ms for QQP's
40,430: 100,000 of them are 2.5 minutes and 1.7 hours of CPU), for LAMBADA's perplexity a Python sum.

Here the resamples are drawn in compiled code (``_python_rng``: the same MT19937 draws) and each statistic is
computed from its sums over the resample, with the operations of the original: perplexity from the sum of
the log-likelihoods in draw order as the running Python's ``sum``, then ``math.exp(-sum / n)`` itself; F1
and MCC from the resample's confusion counts with scikit-learn's formula. scikit-learn's formula is checked
once per process against scikit-learn itself (``_sklearn_agrees``), and every call checks its first
resample against ``f`` itself before returning: a release that computes otherwise runs the original.
``sample_stddev`` is the harness's own, on a list of the values and types ``f`` returns.

BLEU, chrF, chrF++ and TER (100 resamples: the harness caps them) from the per-segment statistics of
sacrebleu (patched or not), computed once instead of once a resample, summed over each resample as
``corpus_score`` sums them, and scored by sacrebleu's own ``_compute_score_from_stats``.

``Fallback`` for what this does not reproduce: another statistic (median, nanmean, or any not the harness's
own function), items of other types or labels, a resample whose statistic divides by
zero (the original warns there), ``iters`` below 1.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _python_rng
from .patch._dispatch import Fallback

_CHUNK = 1000  # resamples per seed: the harness's chunk_size = min(1000, iters)


def bootstrap_stderr(metrics: Any, f: Any, xs: Any, iters: Any) -> float:
    """``metrics.bootstrap_stderr(f, xs, iters)`` (``metrics``: ``lm_eval.api.metrics``)."""
    name = str(getattr(f, "__name__", f))
    statistic = _STATISTICS.get(name)
    if statistic is None or not _own(metrics, name, f):
        raise Fallback(f"no fast path for the statistic {name!r}")
    if not isinstance(iters, int) or isinstance(iters, bool) or iters < 1:
        raise Fallback(f"iters={iters!r}")
    if not isinstance(xs, (list, tuple)) or not 0 < len(xs) < 2**31:
        raise Fallback("xs is not a list of 1 to 2**31 - 1 items")
    chunk = min(_CHUNK, iters)
    values = statistic(xs, iters // chunk, chunk)
    first = f(random.Random(0).choices(xs, k=len(xs)))  # the original on the first resample: the same?
    if type(first) is not type(values[0]) or not _same(float(first), float(values[0])):
        raise Fallback(f"the first resample gives {values[0]!r}, {name} gives {first!r}")
    print("bootstrapping for stddev:", name)  # as the harness prints it
    return metrics.sample_stddev(values)


def _own(metrics: Any, name: str, f: Any) -> bool:
    """Whether ``f`` is the harness's own statistic ``name`` (not a function of the user's so named)."""
    return getattr(metrics, name, None) is f


def _same(a: float, b: float) -> bool:
    return a.hex() == b.hex() or (math.isnan(a) and math.isnan(b))


# ---------------------------------------------------------------- perplexity


def _perplexity(xs: list | tuple, chunks: int, chunk: int) -> list:
    """``math.exp(-mean(resample))``, ``mean(arr) = sum(arr) / len(arr)``."""
    kinds = {type(x) for x in xs}
    if kinds == {float}:
        mode = _python_rng.sum_mode()  # exact floats: the interpreter's own float loop
        if mode is None:
            raise Fallback("this Python's sum adds floats in neither known way")
    elif kinds == {np.float64}:
        mode = _python_rng.PLAIN  # not exact floats: sum adds them one PyNumber_Add at a time
    else:
        raise Fallback(f"log-likelihoods of types {sorted(t.__name__ for t in kinds)}")
    sums = _python_rng.choice_sums(chunks, chunk, np.array(xs, dtype=np.float64)[:, None], mode)[:, 0]
    n, exp = len(xs), math.exp
    return [exp(-(s / n)) for s in sums.tolist()]


# ---------------------------------------------------------------- F1 and MCC (scikit-learn)


def _confusion(xs: list | tuple, chunks: int, chunk: int) -> np.ndarray:
    """(resamples, 4) int64: each resample's count of (gold, pred) = (0, 0), (0, 1), (1, 0), (1, 1), for
    items that are (gold, pred) pairs of the ints 0 and 1 (Python's or NumPy's)."""
    cells = np.empty(len(xs), np.int64)
    for i, item in enumerate(xs):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise Fallback("an item is not a (gold, pred) pair")
        g, p = item
        if not (_label(g) and _label(p)):
            raise Fallback(f"labels {g!r}, {p!r}: the fast path takes the ints 0 and 1")
        cells[i] = 2 * int(g) + int(p)
    one_hot = np.zeros((len(xs), 4), np.int64)
    one_hot[np.arange(len(xs)), cells] = 1
    if len(xs) > 2**26:  # the float64 products below stay exact integers
        raise Fallback("more than 2**26 items")
    return _python_rng.choice_sums(chunks, chunk, one_hot)


def _label(v: Any) -> bool:
    return (type(v) is int or isinstance(v, np.integer)) and (v == 0 or v == 1)


def _f1_values(c: np.ndarray) -> np.ndarray:
    """scikit-learn's binary F1 (pos_label=1) from confusion counts: (1 + beta2) * tp / (beta2 * true + pred),
    beta2 = 1.0, in float64; NaN where it divides by zero."""
    tp = c[:, 3].astype(np.float64)
    true, pred = (c[:, 2] + c[:, 3]).astype(np.float64), (c[:, 1] + c[:, 3]).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (2.0 * tp) / (1.0 * true + pred)


def _mcc_values(c: np.ndarray) -> np.ndarray:
    """scikit-learn's matthews_corrcoef from confusion counts, its operations in its order; NaN where it
    returns 0.0 for a zero denominator."""
    t0, t1 = (c[:, 0] + c[:, 1]).astype(np.float64), (c[:, 2] + c[:, 3]).astype(np.float64)
    p0, p1 = (c[:, 0] + c[:, 2]).astype(np.float64), (c[:, 1] + c[:, 3]).astype(np.float64)
    correct, n = (c[:, 0] + c[:, 3]).astype(np.float64), p0 + p1
    cov_ytyp = correct * n - (t0 * p0 + t1 * p1)  # integers below 2**53: np.dot's order does not matter
    cov_ypyp = n**2 - (p0 * p0 + p1 * p1)
    cov_ytyt = n**2 - (t0 * t0 + t1 * t1)
    prod = cov_ypyp * cov_ytyt
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(prod == 0, np.nan, cov_ytyp / np.sqrt(prod))


@functools.cache
def _sklearn_agrees(kind: str) -> type | None:
    """The type scikit-learn's F1 or MCC returns where our formula gives its value on 40 random confusion
    tables; None if one differs (another release's formula)."""
    from sklearn import metrics

    rng = np.random.default_rng(20261203)
    kind_type = None
    for _ in range(40):
        c = rng.integers(1, 60, size=4)
        gold = [0] * int(c[0] + c[1]) + [1] * int(c[2] + c[3])
        pred = [0] * int(c[0]) + [1] * int(c[1]) + [0] * int(c[2]) + [1] * int(c[3])
        if kind == "f1":
            want, ours = metrics.f1_score(gold, pred), _f1_values(c[None])[0]
        else:
            want, ours = metrics.matthews_corrcoef(gold, pred), _mcc_values(c[None])[0]
        if math.isnan(ours) or not _same(float(want), float(ours)):
            return None
        kind_type = type(want)
    return kind_type


def _f1(xs: list | tuple, chunks: int, chunk: int) -> list:
    """The harness's ``np.max(f1_score(golds, preds))``: NumPy float64 values."""
    if _sklearn_agrees("f1") is None:
        raise Fallback("scikit-learn's f1_score computes otherwise")
    v = _f1_values(_confusion(xs, chunks, chunk))
    if np.isnan(v).any():
        raise Fallback("a resample has neither a true nor a predicted positive")
    return list(v)


def _mcc(xs: list | tuple, chunks: int, chunk: int) -> list:
    """``matthews_corrcoef(golds, preds)``: of scikit-learn's type, or its float 0.0 for a zero denominator."""
    kind_type = _sklearn_agrees("mcc")
    if kind_type is None:
        raise Fallback("scikit-learn's matthews_corrcoef computes otherwise")
    v = _mcc_values(_confusion(xs, chunks, chunk))
    zero = np.isnan(v)
    values = v.tolist() if kind_type is float else list(v)
    for i in np.flatnonzero(zero).tolist():
        values[i] = 0.0
    return values


# ---------------------------------------------------------------- BLEU, chrF, chrF++, TER (sacrebleu)


def _corpus(xs: list | tuple) -> tuple[list, list]:
    """Every item's (hypothesis, references) as ``_sacreformat`` makes them for any resample: items that
    are (reference or list of m references, hypothesis) pairs of str, the same m for every item."""
    hyps, refs = [], []
    for item in xs:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise Fallback("an item is not a (references, hypothesis) pair")
        ref, hyp = item
        if type(hyp) is not str:
            raise Fallback("a hypothesis that is not a str")
        ref = [ref] if type(ref) is str else ref
        if not isinstance(ref, (list, tuple)) or not all(type(r) is str for r in ref):
            raise Fallback("references that are not str or lists of str")
        hyps.append(hyp)
        refs.append(list(ref))
    if len({len(r) for r in refs}) != 1 or not refs[0]:
        raise Fallback("items with different numbers of references (zip keeps the fewest of a resample)")
    return hyps, refs


def _sacrebleu(make: str) -> Callable[[list | tuple, int, int], list]:
    """The harness's ``sacrebleu.corpus_<metric>(preds, refs).score`` of each resample: sacrebleu's own
    ``_compute_score_from_stats`` on the sums of the per-segment statistics that ``corpus_score`` sums
    (``sum_of_lists``: integer columns exactly, float ones one addition at a time in draw order)."""

    def statistic(xs: list | tuple, chunks: int, chunk: int) -> list:
        import sacrebleu

        # the metric objects sacrebleu.corpus_bleu / corpus_chrf / corpus_ter make with the harness's arguments
        if make == "bleu":
            metric: Any = sacrebleu.BLEU()
        elif make == "ter":
            metric = sacrebleu.TER()
        else:
            metric = sacrebleu.CHRF(word_order=2 if make == "chrfpp" else 0)
        hyps, refs = _corpus(xs)
        try:
            stats = metric._extract_corpus_statistics(hyps, [list(s) for s in zip(*refs)])
        except Exception as e:  # the original meets it too, on its resamples
            raise Fallback(f"sacrebleu's statistics: {e!r}") from None
        columns = []
        for col in zip(*stats):
            if all(type(v) is int or isinstance(v, np.integer) for v in col):
                sums = _python_rng.choice_sums(chunks, chunk, np.array(col, dtype=np.int64)[:, None])
            else:
                sums = _python_rng.choice_sums(chunks, chunk, np.array(col, dtype=np.float64)[:, None])
            columns.append(sums[:, 0].tolist())
        return [metric._compute_score_from_stats(list(row)).score for row in zip(*columns)]

    return statistic


_STATISTICS: dict[str, Callable[[list | tuple, int, int], list]] = {
    "perplexity": _perplexity,
    "f1_score": _f1,
    "matthews_corrcoef": _mcc,
    "bleu": _sacrebleu("bleu"),
    "chrf": _sacrebleu("chrf"),
    "chrfpp": _sacrebleu("chrfpp"),
    "ter": _sacrebleu("ter"),
}
