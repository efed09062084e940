"""chrF and chrF++ with sacrebleu 2.x's numbers.

Character n-grams (whitespace removed unless ``whitespace=True``) and, for
chrF++, word n-grams of sacrebleu's punctuation-split words, counted on exact
per-segment ids in C++; per segment the reference with the best F is kept
(the first on ties), and the corpus score comes from the summed statistics.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .. import _validate as V
from .._ext import _text
from .bleu import SACREBLEU_VERSION, ScoreText
from .tokenizers import nrefs_label


@dataclass(frozen=True, repr=False)
class CHRFScore(ScoreText):
    """A chrF score, printed the way sacrebleu prints it (``chrF2++ = 49.12``)."""

    score: float
    char_order: int
    word_order: int
    beta: float
    signature: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        return f"chrF{self.beta}" + "+" * self.word_order


def _options(char_order, word_order, beta):
    nc, nw = V.check_int(char_order, "char_order"), V.check_int(word_order, "word_order")
    if nc < 0 or nw < 0 or nc + nw < 1:
        raise ValueError(f"char_order and word_order must be >= 0 with at least one order; got {nc}, {nw}")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta > 0:
        raise ValueError(f"beta must be a positive number, got {beta!r}")
    return nc, nw


def _signature(nrefs, lowercase, eps_smoothing, nc, nw, whitespace) -> str:
    return (f"nrefs:{nrefs}|case:{'lc' if lowercase else 'mixed'}|eff:{'no' if eps_smoothing else 'yes'}"
            f"|nc:{nc}|nw:{nw}|space:{'yes' if whitespace else 'no'}|version:{SACREBLEU_VERSION}")


def _stats(hypotheses, references, nc, nw, beta, whitespace, eps_smoothing, lowercase, num_threads):
    hyps = V.as_texts(hypotheses, "hypotheses")
    refs = V.as_reference_streams(references, len(hyps))
    return _text.chrf_stats(hyps, refs, nc, nw, float(beta), bool(whitespace), bool(eps_smoothing),
                            bool(lowercase), V.check_threads(num_threads)), refs


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], char_order: int = 6,
                word_order: int = 0, beta: float = 2, lowercase: bool = False, whitespace: bool = False,
                eps_smoothing: bool = False, *, num_threads: int | None = None) -> CHRFScore:
    """Corpus chrF (``word_order=2``: chrF++), equal to ``sacrebleu.corpus_chrf``.

    ``references`` uses sacrebleu's layout (a list of streams; ``None`` drops a
    reference). ``eps_smoothing=True`` averages per-order F scores instead
    (chrF++.py / NLTK / Moses); the default averages precision and recall
    over the orders that have n-grams (sacrebleu's default).
    """
    nc, nw = _options(char_order, word_order, beta)
    stats, refs = _stats(hypotheses, references, nc, nw, beta, whitespace, eps_smoothing, lowercase,
                         num_threads)
    score = float(_text.chrf_scores(np.ascontiguousarray(stats.sum(axis=0)[None]), float(beta),
                                    bool(eps_smoothing))[0])
    sig = _signature(nrefs_label(refs), lowercase, eps_smoothing, nc, nw, whitespace)
    return CHRFScore(score, nc, nw, beta, sig)


def sentence_chrf(hypothesis: str, references: Sequence[str], char_order: int = 6, word_order: int = 0,
                  beta: float = 2, lowercase: bool = False, whitespace: bool = False,
                  eps_smoothing: bool = False) -> CHRFScore:
    """chrF of one segment against its references (a list of strings), as ``sacrebleu.sentence_chrf``."""
    hyp = V.check_str(hypothesis, "hypothesis")
    refs = V.as_texts(references, "references")
    if not refs:
        raise ValueError("references is empty: a segment needs at least one reference")
    return corpus_chrf([hyp], [[r] for r in refs], char_order, word_order, beta, lowercase, whitespace,
                       eps_smoothing, num_threads=1)


def segment_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], char_order: int = 6,
                 word_order: int = 0, beta: float = 2, lowercase: bool = False, whitespace: bool = False,
                 eps_smoothing: bool = False, *, num_threads: int | None = None) -> np.ndarray:
    """Sentence chrF of every segment (float64), equal to a loop of ``sacrebleu.sentence_chrf``."""
    nc, nw = _options(char_order, word_order, beta)
    stats, _ = _stats(hypotheses, references, nc, nw, beta, whitespace, eps_smoothing, lowercase, num_threads)
    return _text.chrf_scores(stats, float(beta), bool(eps_smoothing))
