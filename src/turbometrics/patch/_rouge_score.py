"""rouge-score 0.1.2: ``RougeScorer.score`` (and so ``score_multi``, which calls it) and
``BootstrapAggregator``'s resampling on turbometrics' kernels."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from . import Fallback, _set_attr, dispatch

_ALNUM = re.compile(r"[a-z0-9]")


def supported(version: str) -> bool:
    return version == "0.1.2"


def _options(self: Any) -> tuple[list, bool, Any]:
    """(rouge types, use_stemmer, tokenizer for tm.metrics.ROUGE) of a RougeScorer."""
    from nltk.stem import porter
    from rouge_score import tokenizers

    types = self.rouge_types
    if not isinstance(types, (list, tuple)) or not all(type(t) is str for t in types) or not types:
        raise Fallback(f"rouge_types={types!r}")
    tok = self._tokenizer
    if type(tok) is tokenizers.DefaultTokenizer:
        stemmer = tok._stemmer
        if stemmer is None:
            return list(dict.fromkeys(types)), False, None
        if type(stemmer) is porter.PorterStemmer and stemmer.mode == porter.PorterStemmer.NLTK_EXTENSIONS:
            return list(dict.fromkeys(types)), True, None
        raise Fallback(f"tokenizer: a DefaultTokenizer with stemmer {stemmer!r}")
    if not callable(getattr(tok, "tokenize", None)):
        raise Fallback(f"tokenizer: {type(tok).__name__} has no tokenize()")
    return list(dict.fromkeys(types)), False, tok


def _no_tokens(tokenizer: Any, text: str, lsum: bool, split: bool) -> bool:
    """Whether rouge-score sees no token in ``text`` (then its ROUGE-L/Lsum are the ints 0, 0, 0)."""
    if tokenizer is None:  # the default tokenizer keeps runs of [a-z0-9] after lower()
        return _ALNUM.search(text.lower()) is None
    if not lsum:
        return not tokenizer.tokenize(text)
    import nltk

    sents = nltk.sent_tokenize(text) if split else text.split("\n")
    return not sum(len(tokenizer.tokenize(s)) for s in sents if len(s))


def _fast_score(self: Any, target: Any, prediction: Any) -> dict:
    from rouge_score import scoring

    import turbometrics as tm

    if type(target) is not str or type(prediction) is not str:
        raise Fallback(f"target, prediction: {type(target).__name__}, {type(prediction).__name__} (not str)")
    types, stem, tokenizer = _options(self)
    split = bool(self._split_summaries)
    try:
        out = tm.metrics.ROUGE(types, stem, split, tokenizer).update([prediction], [target], num_threads=1).compute()
    except (TypeError, ValueError, ImportError) as e:  # an unknown type, a missing sentence splitter, ...
        raise Fallback(str(e)) from None
    result = {}
    for t in types:
        p, r, f = (float(a[0]) for a in out[t])
        if (
            t in ("rougeL", "rougeLsum")
            and p == r == f == 0.0
            and any(_no_tokens(tokenizer, x, t == "rougeLsum", split) for x in (target, prediction))
        ):
            result[t] = scoring.Score(precision=0, recall=0, fmeasure=0)  # rouge-score's ints
        else:
            result[t] = scoring.Score(precision=p, recall=r, fmeasure=f)
    return result


def _apply_scorer(module: Any, undo: list) -> None:
    cls = module.RougeScorer
    original = cls.score

    def score(self, target, prediction):
        return dispatch("rouge_score.RougeScorer.score", _fast_score, original, self, target, prediction)

    score.__doc__ = original.__doc__
    _set_attr(undo, cls, "score", score)


def _fast_resample(self: Any, matrix: Any) -> np.ndarray:
    from .._legacy_rng import resample_means

    rs = np.random.mtrand._rand
    if getattr(np.random.choice, "__self__", None) is not rs:
        raise Fallback("numpy.random.choice is not the global RandomState's")
    if (
        type(matrix) is not np.ndarray or matrix.ndim != 2 or not 2 <= matrix.shape[0] < 2**32 or matrix.shape[1] != 3
    ):  # np.mean adds (n, 3) rows in order; other shapes it may sum pairwise
        raise Fallback(f"matrix: shape {getattr(matrix, 'shape', None)}, not (n >= 2, 3)")
    if matrix.dtype.kind in "iub":  # np.mean sums integers in float64: the same as converting first
        matrix = matrix.astype(np.float64)
    elif matrix.dtype != np.float64:
        raise Fallback(f"matrix: dtype {matrix.dtype}")
    n_samples = self._n_samples
    if type(n_samples) is not int or n_samples <= 0:
        raise Fallback(f"n_samples={n_samples!r}")
    sample_mean = resample_means(rs, matrix, n_samples)  # the same draws from, and state of, the global RNG
    percentile_delta = (1 - self._confidence_interval) / 2  # rouge-score's own arithmetic from here
    q = 100 * np.array([percentile_delta, 0.5, 1 - percentile_delta])
    return np.percentile(sample_mean, q, axis=0)


def _fast_aggregate(self: Any, module: Any) -> dict:
    """``aggregate`` with each type's (n, 3) matrix made in one ``np.array`` call (rouge-score stacks one
    row at a time); the same matrix, then the (patched) ``_bootstrap_resample`` and the same objects."""
    result = {}
    for score_type, scores in self._scores.items():
        if not scores or any(type(s) is not type(scores[0]) or len(s) != 3 for s in scores):
            raise Fallback(f"{score_type}: scores of differing types")
        matrix = np.array(scores)
        if matrix.ndim != 2 or matrix.dtype.kind not in "fiub":
            raise Fallback(f"{score_type}: scores that are not numbers")
        percentiles = self._bootstrap_resample(matrix)
        intervals = tuple(scores[0].__class__(*percentiles[j, :]) for j in range(3))
        result[score_type] = module.AggregateScore(low=intervals[0], mid=intervals[1], high=intervals[2])
    return result


def _apply_scoring(module: Any, undo: list) -> None:
    cls = module.BootstrapAggregator
    original_resample, original_aggregate = cls._bootstrap_resample, cls.aggregate

    def _bootstrap_resample(self, matrix):
        return dispatch("rouge_score.BootstrapAggregator resampling", _fast_resample, original_resample, self, matrix)

    def aggregate(self):
        # a fallback here runs the original aggregate, whose resampling is still the patched one
        return dispatch(
            "rouge_score.BootstrapAggregator.aggregate", lambda s: _fast_aggregate(s, module), original_aggregate, self
        )

    _bootstrap_resample.__doc__, aggregate.__doc__ = original_resample.__doc__, original_aggregate.__doc__
    _set_attr(undo, cls, "_bootstrap_resample", _bootstrap_resample)
    _set_attr(undo, cls, "aggregate", aggregate)


TARGETS = {"rouge_score.rouge_scorer": _apply_scorer, "rouge_score.scoring": _apply_scoring}
