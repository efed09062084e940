"""rouge-score 0.1.2: the fast paths of ``RougeScorer.score`` (and so ``score_multi``, which calls it) and
``BootstrapAggregator``'s resampling on turbometrics' kernels (see ``_table``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ._dispatch import Fallback

if TYPE_CHECKING:
    from ._apply import Site

_ALNUM = re.compile(r"[a-z0-9]")


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


def score(site: Site, self: Any, target: Any, prediction: Any) -> dict:
    """``RougeScorer.score``."""
    from rouge_score import scoring

    import turbometrics as tm

    from ..text.rouge import pair_scores

    if type(target) is not str or type(prediction) is not str:
        raise Fallback(f"target, prediction: {type(target).__name__}, {type(prediction).__name__} (not str)")
    types, stem, tokenizer = _options(self)
    split = bool(self._split_summaries)
    if split and "rougeLsum" in types:
        from ..text.sentences import unlike_installed_nltk

        why = unlike_installed_nltk()
        if why:
            raise Fallback(why)
    try:
        if tokenizer is None and not (split and "rougeLsum" in types):  # the common case: no metric object
            rows = pair_scores(prediction, target, tuple(types), stem).tolist()
        else:
            out = tm.metrics.ROUGE(types, stem, split, tokenizer).update([prediction], [target], num_threads=1)
            rows = [[float(a[0]) for a in s] for s in out.compute().values()]
    except (TypeError, ValueError, ImportError) as e:  # an unknown type, a missing sentence splitter, ...
        raise Fallback(str(e)) from None
    result = {}
    for t, (p, r, f) in zip(types, rows):
        if (
            t in ("rougeL", "rougeLsum")
            and p == r == f == 0.0
            and any(_no_tokens(tokenizer, x, t == "rougeLsum", split) for x in (target, prediction))
        ):
            result[t] = scoring.Score(precision=0, recall=0, fmeasure=0)  # rouge-score's ints
        else:
            result[t] = scoring.Score(precision=p, recall=r, fmeasure=f)
    return result


def bootstrap_resample(site: Site, self: Any, matrix: Any) -> np.ndarray:
    """``BootstrapAggregator._bootstrap_resample``: the same draws from NumPy's global RNG."""
    from .._legacy_rng import resample_means

    rs = np.random.mtrand._rand
    if getattr(np.random.choice, "__self__", None) is not rs:
        raise Fallback("numpy.random.choice is not the global RandomState's")
    if (
        type(matrix) is not np.ndarray or matrix.ndim != 2 or not 1 <= matrix.shape[0] < 2**32 or matrix.shape[1] != 3
    ):  # np.mean adds (n, 3) rows in order; other shapes it may sum pairwise. n == 1 (an aggregator of one
        # score, as lm-eval's t5-style rouge makes per pair) draws nothing from the RNG, as choice(arange(1)).
        raise Fallback(f"matrix: shape {getattr(matrix, 'shape', None)}, not (n >= 1, 3)")
    if matrix.dtype.kind in "iub":  # np.mean sums integers in float64: the same as converting first
        matrix = matrix.astype(np.float64)
    elif matrix.dtype != np.float64:
        raise Fallback(f"matrix: dtype {matrix.dtype}")
    n_samples = self._n_samples
    if type(n_samples) is not int or n_samples <= 0:
        raise Fallback(f"n_samples={n_samples!r}")
    if matrix.shape[0] == 1 and np.isfinite(matrix).all() and not np.signbit(matrix).any():
        # every resample is the one row, and the percentiles of a constant are it: no draws, no sort
        # (np.percentile turns -0.0 into 0.0, so signed rows take the general path; scores are >= 0)
        return np.repeat(matrix, 3, axis=0)
    sample_mean = resample_means(rs, matrix, n_samples)  # the same draws from, and state of, the global RNG
    percentile_delta = (1 - self._confidence_interval) / 2  # rouge-score's own arithmetic from here
    q = 100 * np.array([percentile_delta, 0.5, 1 - percentile_delta])
    return np.percentile(sample_mean, q, axis=0)


def aggregate(site: Site, self: Any) -> dict:
    """``BootstrapAggregator.aggregate`` with each type's (n, 3) matrix made in one ``np.array`` call
    (rouge-score stacks one row at a time); the same matrix, then the (patched) ``_bootstrap_resample`` and
    the same objects. A fallback runs the original aggregate, whose resampling is still the patched one."""
    result = {}
    for score_type, scores in self._scores.items():
        if not scores or any(type(s) is not type(scores[0]) or len(s) != 3 for s in scores):
            raise Fallback(f"{score_type}: scores of differing types")
        matrix = np.array(scores)
        if matrix.ndim != 2 or matrix.dtype.kind not in "fiub":
            raise Fallback(f"{score_type}: scores that are not numbers")
        percentiles = self._bootstrap_resample(matrix)
        intervals = tuple(scores[0].__class__(*percentiles[j, :]) for j in range(3))
        result[score_type] = site.module.AggregateScore(low=intervals[0], mid=intervals[1], high=intervals[2])
    return result
