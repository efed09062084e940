"""chrF and chrF++ with sacrebleu 2.x's numbers.

Character n-grams (whitespace removed unless ``whitespace=True``) and, for
chrF++, word n-grams of sacrebleu's punctuation-split words, counted on exact
per-segment ids in C++; per segment the reference with the best F is kept
(the first on ties), and the corpus score comes from the summed statistics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _validate
from .._ext import _text
from .._metric import Metric, Plan, Signature, column_sums, concat, one_score
from .bleu import SACREBLEU_VERSION, ScoreText
from .token_ids import refuse
from .tokenizers import combine_nrefs, nrefs_label


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


def _sacrebleu_float32(row: np.ndarray, beta: float, eps_smoothing: bool) -> float:
    """sacrebleu's ``CHRF._compute_f_score`` on a float32 statistics row, operation for operation
    (what its ``--confidence`` and ``--paired-bs`` score resamples with)."""
    eps, factor, order = 1e-16, beta**2, len(row) // 3
    score = avg_prec = avg_rec = 0.0
    effective_order = 0
    for i in range(order):
        n_hyp, n_ref, n_match = row[3 * i : 3 * i + 3]
        prec = n_match / n_hyp if n_hyp > 0 else eps
        rec = n_match / n_ref if n_ref > 0 else eps
        denom = factor * prec + rec
        score += ((1 + factor) * prec * rec / denom) if denom > 0 else eps
        if n_hyp > 0 and n_ref > 0:
            avg_prec += prec
            avg_rec += rec
            effective_order += 1
    if eps_smoothing:
        return 100 * score / order
    if effective_order == 0:
        avg_prec = avg_rec = 0.0
    else:
        avg_prec /= effective_order
        avg_rec /= effective_order
    if avg_prec + avg_rec:
        score = (1 + factor) * avg_prec * avg_rec
        score /= (factor * avg_prec) + avg_rec
        return 100 * score
    return 0.0


def check_options(char_order: Any, word_order: Any, beta: Any) -> tuple[int, int, float]:
    """chrF's orders and beta as the kernels take them: (char_order, word_order, beta); a ValueError or
    TypeError naming the option otherwise (the patch falls back to sacrebleu for those)."""
    nc, nw = _validate.check_int(char_order, "char_order"), _validate.check_int(word_order, "word_order")
    if nc < 0 or nw < 0 or not 1 <= nc + nw <= _text.MAX_ORDER:
        raise ValueError(
            f"char_order and word_order must be >= 0 with one to {_text.MAX_ORDER} orders in all; got {nc}, {nw}"
        )
    b = _validate.check_real(beta, "beta", positive=True, exc=ValueError)
    if not math.isfinite(b * b):  # the F-score weighs recall by beta squared
        raise ValueError(f"beta must be a positive number whose square is finite, got {beta!r}")
    return nc, nw, b


class CHRF(Metric):
    """Corpus chrF / chrF++ (sacrebleu 2.6.0's numbers) accumulated over chunks of segments.

    ``compute()`` equals ``tm.corpus_chrf`` on all the segments, bit for bit;
    the state is each segment's integer ``[hyp, ref, match]`` counts per order
    (characters, then words). Options as in ``corpus_chrf``.

    Examples
    --------
    >>> import turbometrics as tm
    >>> chrf = tm.metrics.CHRF(word_order=2)
    >>> chrf = chrf.update(["The cat sat on the mat."], [["The cat sat on a mat."]])
    >>> print(chrf.compute())
    chrF2++ = 72.66
    """

    _state = {"_rows": list, "_nrefs": list}
    _rows: list[np.ndarray]
    _nrefs: list[int]
    modes = ("default", "sacrebleu")

    def __init__(
        self,
        char_order: int = 6,
        word_order: int = 0,
        beta: float = 2,
        lowercase: bool = False,
        whitespace: bool = False,
        eps_smoothing: bool = False,
    ):
        nc, nw, _ = check_options(char_order, word_order, beta)
        self.char_order, self.word_order, self.beta = char_order, word_order, beta
        self.lowercase, self.whitespace, self.eps_smoothing = bool(lowercase), bool(whitespace), bool(eps_smoothing)
        self._signature = Signature.of(
            case="lc" if self.lowercase else "mixed",
            eff="no" if self.eps_smoothing else "yes",
            nc=nc,
            nw=nw,
            space="yes" if self.whitespace else "no",
            version=SACREBLEU_VERSION,
        )
        self.reset()

    def _stats(self, hypotheses, references, num_threads):
        refuse(hypotheses, "chrF", "it is defined on characters")
        hyps = _validate.as_texts(hypotheses, "hypotheses")
        refs = _validate.as_reference_streams(references, len(hyps))
        rows = _text.chrf_stats(
            hyps,
            refs,
            self.char_order,
            self.word_order,
            float(self.beta),
            self.whitespace,
            self.eps_smoothing,
            self.lowercase,
            _validate.check_threads(num_threads),
        )
        return rows, nrefs_label(refs)

    def update(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], *, num_threads: int | None = None
    ) -> CHRF:
        """Add segments: hypotheses and reference streams, as ``corpus_chrf``."""
        return self._fold(self._stats(hypotheses, references, num_threads))

    def _all_rows(self) -> np.ndarray:
        return concat(self._rows, (0, 3 * (self.char_order + self.word_order)), np.int64)

    def segment_statistics(self) -> np.ndarray:
        """[hyp, ref, match] per order (characters, then words) per segment (int64, a copy)."""
        return self._all_rows().copy()

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        return _text.chrf_scores(np.ascontiguousarray(rows), float(self.beta), self.eps_smoothing)

    def segment_scores(self) -> np.ndarray:
        """Sentence chrF of every segment (float64), as ``segment_chrf``."""
        return self._scores(self._all_rows())

    def signature(self) -> Signature:
        """sacrebleu's signature of this metric over the segments seen so far."""
        return Signature(f"nrefs:{combine_nrefs(self._nrefs)}|{self._signature}")

    def compute(self) -> CHRFScore:
        """The corpus score of every segment seen, with its signature."""
        total = column_sums(self._all_rows())[None]
        return CHRFScore(float(self._scores(total)[0]), self.char_order, self.word_order, self.beta, self.signature())

    def _plan(self) -> Plan:
        return Plan(
            self.segment_statistics(),
            lambda s: self._scores(s)[:, None],
            np.array([self.compute().score]),
            (0,),
            one_score,
            lambda row: _sacrebleu_float32(row, self.beta, self.eps_smoothing),
        )


def corpus_chrf(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str | None]],
    char_order: int = 6,
    word_order: int = 0,
    beta: float = 2,
    lowercase: bool = False,
    whitespace: bool = False,
    eps_smoothing: bool = False,
    *,
    num_threads: int | None = None,
) -> CHRFScore:
    """Corpus chrF (``word_order=2``: chrF++), equal to ``sacrebleu.corpus_chrf``.

    Parameters
    ----------
    hypotheses : list of str
    references : list of reference streams
        sacrebleu's layout (``references[j][i]``; ``None`` drops a reference);
        per segment the reference with the best F counts (the first on ties).
    char_order, word_order : int
        Character n-gram order (6) and word n-gram order (0; 2 for chrF++).
    beta : float
        Recall weight (2).
    lowercase, whitespace : bool
        Lowercase first; keep whitespace in the character n-grams.
    eps_smoothing : bool
        Average per-order F scores (chrF++.py / NLTK / Moses) instead of
        sacrebleu's default (precision and recall averaged over the orders
        that have n-grams).
    num_threads : int, optional
        Threads for the statistics (default: every core); results do not depend on it.

    Returns
    -------
    CHRFScore
        ``score``, ``char_order``, ``word_order``, ``beta``, ``signature``.

    Raises
    ------
    TypeError, ValueError
        For inputs that are not lists of strings, streams of the wrong length,
        a segment with no reference, or bad orders / beta (at most 1,024
        orders in all).
    KeyboardInterrupt
        Ctrl-C (SIGINT) stops a long call within about 50 ms, also with the GIL released.
    MemoryError
        When a segment's working memory cannot be had (the message names the segment).

    Examples
    --------
    >>> import turbometrics as tm
    >>> print(tm.corpus_chrf(["The cat sat on the mat."], [["The cat sat on a mat."]], word_order=2))
    chrF2++ = 72.66
    """
    return (
        CHRF(char_order, word_order, beta, lowercase, whitespace, eps_smoothing)
        .update(hypotheses, references, num_threads=num_threads)
        .compute()
    )


def sentence_chrf(
    hypothesis: str,
    references: Sequence[str],
    char_order: int = 6,
    word_order: int = 0,
    beta: float = 2,
    lowercase: bool = False,
    whitespace: bool = False,
    eps_smoothing: bool = False,
) -> CHRFScore:
    """chrF of one segment against its references, as ``sacrebleu.sentence_chrf``.

    Parameters
    ----------
    hypothesis : str
    references : list of str
        This segment's references (at least one).
    char_order, word_order, beta, lowercase, whitespace, eps_smoothing
        As in ``corpus_chrf``.

    Returns
    -------
    CHRFScore

    Examples
    --------
    >>> import turbometrics as tm
    >>> round(tm.sentence_chrf("The cat sat.", ["The cat sat on a mat."]).score, 4)
    55.6048
    """
    return (
        CHRF(char_order, word_order, beta, lowercase, whitespace, eps_smoothing)
        .update(*_validate.as_one_segment(hypothesis, references), num_threads=1)
        .compute()
    )


def segment_chrf(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str | None]],
    char_order: int = 6,
    word_order: int = 0,
    beta: float = 2,
    lowercase: bool = False,
    whitespace: bool = False,
    eps_smoothing: bool = False,
    *,
    num_threads: int | None = None,
) -> np.ndarray:
    """Sentence chrF of every segment, equal to a loop of ``sacrebleu.sentence_chrf``.

    Parameters
    ----------
    hypotheses, references, char_order, word_order, beta, lowercase, whitespace, eps_smoothing, num_threads
        As in ``corpus_chrf``.

    Returns
    -------
    numpy.ndarray
        float64 (N,), one score per segment.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.segment_chrf(["The cat sat.", "A dog."], [["The cat sat on a mat.", "A dog."]]).round(4)
    array([ 55.6048, 100.    ])
    """
    return (
        CHRF(char_order, word_order, beta, lowercase, whitespace, eps_smoothing)
        .update(hypotheses, references, num_threads=num_threads)
        .segment_scores()
    )
