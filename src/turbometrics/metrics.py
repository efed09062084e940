"""Streaming accumulators: ``update`` on chunks, ``merge`` (or ``+``) across workers, ``compute``.

Each accumulator keeps its metric's sufficient statistics per item (BLEU and
chrF: integer statistics per segment; ROUGE: scores per pair; top-k accuracy:
the rank of each row; perplexity: an exact NLL sum plus each sequence's mean
NLL and token count), so the state is small, picklable, and what bootstrap
resampling needs. ``compute()`` equals the one-shot function on all the data
exactly, however it was chunked and in whatever order states were merged; the
per-item results (ROUGE, ``reduction="none"``) come in update/merge order.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from . import _validate as V
from ._exact import ExactSum
from ._ext import _text
from .classification import _average, _ranks
from .language_model import REDUCTIONS, _nll, _sequence_means, _sequence_ppl
from .resampling import Plan
from .slow import text as _sacrebleu_float32  # sacrebleu's scalar code path, run on float32 rows
from .text import bleu as _bleu
from .text import chrf as _chrf
from .text.rouge import Scores
from .text.rouge import _kind
from .text.rouge import rouge as _rouge

__all__ = ["BLEU", "CHRF", "ROUGE", "TopKAccuracy", "Perplexity"]


def _one(make):
    return make(slice(0, 1), lambda a: float(a[0]))


def _ratios(s: np.ndarray) -> np.ndarray:
    """Columns 0..j-1 of summed rows divided by the last column (a weighted mean per column)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return s[:, :-1] / s[:, -1:]


class _Accumulator:
    """Shared plumbing: options are fixed at construction; state lives in ``_fields``."""

    _fields: tuple = ()

    def reset(self) -> "_Accumulator":
        for f in self._fields:
            setattr(self, f, [])
        return self

    def _check_compatible(self, other: "_Accumulator") -> None:
        if type(other) is not type(self) or other._options() != self._options():
            raise ValueError(f"cannot merge {other!r} into {self!r}: different metrics or options")

    def merge(self, other: "_Accumulator") -> "_Accumulator":
        """A new accumulator holding both states (self's items first)."""
        self._check_compatible(other)
        out = copy.copy(self)
        for f in self._fields:
            setattr(out, f, getattr(self, f) + getattr(other, f))
        return out

    __add__ = merge

    def _options(self) -> dict:
        return {k: v for k, v in vars(self).items() if k not in self._fields}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self._options().items())
        return f"{type(self).__name__}({opts})"


class BLEU(_Accumulator):
    """Corpus BLEU over chunks; ``compute()`` equals ``tm.corpus_bleu`` on all segments."""

    _fields = ("_stats", "_nrefs")

    def __init__(self, tokenize: str = "13a", lowercase: bool = False, smooth_method: str = "exp",
                 smooth_value: float | None = None, max_ngram_order: int = 4, effective_order: bool = False):
        _bleu._options(tokenize, smooth_method, smooth_value, max_ngram_order)
        self.tokenize, self.lowercase, self.smooth_method = tokenize, bool(lowercase), smooth_method
        self.smooth_value, self.max_ngram_order, self.effective_order = smooth_value, max_ngram_order, effective_order
        self.reset()

    def update(self, hypotheses, references, *, num_threads: int | None = None) -> "BLEU":
        stats, nrefs = _bleu._stats(hypotheses, references, self.tokenize, self.max_ngram_order, self.lowercase,
                                    num_threads)
        self._stats.append(stats)
        self._nrefs.append(nrefs)
        return self

    def segment_statistics(self) -> np.ndarray:
        """[hyp_len, ref_len, correct_1..N, total_1..N] per segment (int64)."""
        return (np.concatenate(self._stats) if self._stats
                else np.zeros((0, 2 + 2 * self.max_ngram_order), np.int64))

    def compute(self) -> _bleu.BLEUScore:
        code, value, order = _bleu._options(self.tokenize, self.smooth_method, self.smooth_value,
                                            self.max_ngram_order)
        labels = set(self._nrefs)
        nrefs = labels.pop() if len(labels) == 1 else "var"
        sig = _bleu._signature(nrefs, self.lowercase, self.effective_order, self.tokenize, self.smooth_method, value)
        return _bleu._score(self.segment_statistics().sum(axis=0), code, value, order, self.effective_order, sig)

    def _plan(self) -> Plan:
        code, value, order = _bleu._options(self.tokenize, self.smooth_method, self.smooth_value,
                                            self.max_ngram_order)

        def score(s):
            return _text.bleu_scores(np.ascontiguousarray(s), order, code, float(value or 0.0),
                                     bool(self.effective_order))[:, None]

        def sacrebleu_score(r):
            return _sacrebleu_float32._score([int(r[0]), int(r[1])] + list(r[2:]), order, self.smooth_method,
                                             self.smooth_value, self.effective_order).score

        return Plan(self.segment_statistics(), score, np.array([self.compute().score]), (0,), _one,
                    sacrebleu_score)


class CHRF(_Accumulator):
    """Corpus chrF/chrF++ over chunks; ``compute()`` equals ``tm.corpus_chrf`` on all segments."""

    _fields = ("_stats", "_nrefs")

    def __init__(self, char_order: int = 6, word_order: int = 0, beta: float = 2, lowercase: bool = False,
                 whitespace: bool = False, eps_smoothing: bool = False):
        _chrf._options(char_order, word_order, beta)
        self.char_order, self.word_order, self.beta = char_order, word_order, beta
        self.lowercase, self.whitespace, self.eps_smoothing = bool(lowercase), bool(whitespace), bool(eps_smoothing)
        self.reset()

    def update(self, hypotheses, references, *, num_threads: int | None = None) -> "CHRF":
        stats, refs = _chrf._stats(hypotheses, references, self.char_order, self.word_order, self.beta,
                                   self.whitespace, self.eps_smoothing, self.lowercase, num_threads)
        self._stats.append(stats)
        self._nrefs.append(_chrf.nrefs_label(refs))
        return self

    def segment_statistics(self) -> np.ndarray:
        """[hyp, ref, match] per order (characters, then words) per segment (int64)."""
        return (np.concatenate(self._stats) if self._stats
                else np.zeros((0, 3 * (self.char_order + self.word_order)), np.int64))

    def compute(self) -> _chrf.CHRFScore:
        total = np.ascontiguousarray(self.segment_statistics().sum(axis=0)[None])
        score = float(_text.chrf_scores(total, float(self.beta), self.eps_smoothing)[0])
        labels = set(self._nrefs)
        nrefs = labels.pop() if len(labels) == 1 else "var"
        sig = _chrf._signature(nrefs, self.lowercase, self.eps_smoothing, self.char_order, self.word_order,
                               self.whitespace)
        return _chrf.CHRFScore(score, self.char_order, self.word_order, self.beta, sig)

    def _plan(self) -> Plan:
        def score(s):
            return _text.chrf_scores(np.ascontiguousarray(s), float(self.beta), self.eps_smoothing)[:, None]

        def sacrebleu_score(r):
            return _sacrebleu_float32._chrf_f(list(r), self.beta, self.eps_smoothing)

        return Plan(self.segment_statistics(), score, np.array([self.compute().score]), (0,), _one,
                    sacrebleu_score)


class ROUGE(_Accumulator):
    """ROUGE per pair over chunks; ``compute()`` equals ``tm.rouge`` on all pairs (in update/merge order)."""

    _fields = ("_scores",)

    def __init__(self, rouge_types=("rouge1", "rouge2", "rougeL", "rougeLsum"), use_stemmer: bool = False):
        self.rouge_types = tuple(V.as_texts(rouge_types, "rouge_types"))
        if not self.rouge_types:
            raise ValueError("rouge_types is empty")
        for t in self.rouge_types:
            _kind(t)  # raises on an unknown type
        self.use_stemmer = bool(use_stemmer)
        self.reset()

    def update(self, predictions, references, *, num_threads: int | None = None) -> "ROUGE":
        self._scores.append(_rouge(predictions, references, self.rouge_types, self.use_stemmer,
                                   num_threads=num_threads))
        return self

    def compute(self) -> dict[str, Scores]:
        out = {}
        for t in self.rouge_types:
            parts = [s[t] for s in self._scores]
            out[t] = Scores(*(np.concatenate([getattr(p, f) for p in parts]) if parts else np.zeros(0)
                              for f in Scores._fields))
        return out

    def _plan(self) -> Plan:
        """Rows: (P, R, F) of each type per pair; scores: their means."""
        scores = self.compute()
        rows = np.stack([a for t in self.rouge_types for a in scores[t]], axis=1)
        types = self.rouge_types

        def wrap(make):
            return {t: make(slice(3 * i, 3 * i + 3), lambda a: Scores(*map(float, a))) for i, t in enumerate(types)}

        return Plan(rows, lambda s: s / len(rows), rows.mean(axis=0), tuple(range(2, 3 * len(types), 3)), wrap)


class TopKAccuracy(_Accumulator):
    """Top-k accuracy over chunks of rows; ``compute()`` equals ``tm.topk_accuracy`` on all rows.

    Without ``sample_weight`` the result is the same in any merge order; with
    weights it is ``np.average`` over the rows in update/merge order (as the
    one-shot function is over its rows).
    """

    _fields = ("_ranks", "_weights")

    def __init__(self, k=5, ties: str = "sklearn", ignore_index: int | None = None):
        self.k, self.ties, self.ignore_index = k, ties, ignore_index
        self.reset()

    def update(self, scores, targets, sample_weight=None, *, num_threads: int | None = None) -> "TopKAccuracy":
        r, counted, a = _ranks(scores, targets, self.ties, self.ignore_index, num_threads)
        c = a.n_classes
        for kk in (self.k if isinstance(self.k, (tuple, list)) else [self.k]):
            V.check_k(kk, c)
        w = None if sample_weight is None else V.as_weights(sample_weight, r.size).astype(np.float64)
        self._ranks.append(np.where(counted.reshape(-1), r, -1))
        self._weights.append(w)
        return self

    def compute(self):
        r = np.concatenate(self._ranks) if self._ranks else np.zeros(0, np.int64)
        counted = r >= 0
        weighted = {w is not None for w in self._weights}
        if len(weighted) > 1:
            raise ValueError("sample_weight was given for some updates and not for others")
        w = np.concatenate(self._weights) if weighted == {True} else None
        ks = self.k if isinstance(self.k, (tuple, list)) else None
        if ks is None:
            return _average(r < self.k, counted, w)
        return np.array([_average(r < kk, counted, w) for kk in ks])

    def _plan(self) -> Plan:
        """Rows: (hit at each k, 1) per counted row, times its weight if weighted."""
        r = np.concatenate(self._ranks) if self._ranks else np.zeros(0, np.int64)
        ks = list(self.k) if isinstance(self.k, (tuple, list)) else [self.k]
        counted = r >= 0
        rows = np.stack([r[counted] < kk for kk in ks] + [np.ones(int(counted.sum()), bool)], axis=1)
        if any(w is not None for w in self._weights):
            rows = rows * np.concatenate(self._weights)[counted][:, None]
        rows = np.ascontiguousarray(rows, dtype=np.float64 if rows.dtype.kind == "f" else np.int64)
        point = np.atleast_1d(self.compute()).astype(np.float64)
        wrap = _one if len(ks) == 1 and not isinstance(self.k, (tuple, list)) else (
            lambda make: [make(slice(i, i + 1), lambda a: float(a[0])) for i in range(len(ks))])
        return Plan(rows, _ratios, point, tuple(range(len(ks))), wrap)


class Perplexity(_Accumulator):
    """Perplexity over chunks of logits; ``compute()`` equals ``tm.perplexity`` on all of them.

    The state is an exact NLL sum (``_exact.ExactSum``) and each sequence's
    mean NLL and token count: the same bits in any chunking and merge order.
    """

    _fields = ("_total", "_means", "_counts")

    def __init__(self, ignore_index: int | None = None, reduction: str = "token"):
        V.check_choice(reduction, "reduction", REDUCTIONS)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.reset()

    def reset(self) -> "Perplexity":
        self._total, self._means, self._counts = ExactSum(), [], []
        return self

    def merge(self, other: "Perplexity") -> "Perplexity":
        self._check_compatible(other)
        out = copy.copy(self)
        out._total = self._total.merge(other._total)
        out._means, out._counts = self._means + other._means, self._counts + other._counts
        return out

    __add__ = merge

    def update(self, logits, targets, mask=None, *, num_threads: int | None = None) -> "Perplexity":
        nll, counted, _ = _nll(logits, targets, self.ignore_index, mask, num_threads)
        self._total.add(nll[counted])
        means, counts = _sequence_means(nll, counted)
        self._means.append(means)
        self._counts.append(counts)
        return self

    def compute(self):
        means = np.concatenate(self._means) if self._means else np.zeros(0)
        counts = np.concatenate(self._counts) if self._counts else np.zeros(0, np.int64)
        if self.reduction == "token":  # the token count is the sum of the sequences' counts
            n = int(counts.sum())
            return float(np.exp(self._total.value() / n)) if n else float("nan")
        return np.exp(means) if self.reduction == "none" else _sequence_ppl(means, counts)

    def _plan(self) -> Plan:
        """Rows per sequence: (NLL sum, tokens) for "token", (mean NLL, 1) for "sequence"."""
        if self.reduction == "none":
            raise ValueError("reduction='none' has no single score to resample; use 'token' or 'sequence'")
        means = np.concatenate(self._means) if self._means else np.zeros(0)
        counts = np.concatenate(self._counts) if self._counts else np.zeros(0, np.int64)
        live = counts > 0
        m, c = means[live], counts[live].astype(np.float64)
        rows = np.stack([m * c, c] if self.reduction == "token" else [m, np.ones_like(m)], axis=1)
        return Plan(rows, lambda s: np.exp(_ratios(s)), np.array([self.compute()]), (0,), _one)
