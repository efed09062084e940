"""BLEU with sacrebleu 2.x's numbers: corpus, sentence and per-segment scores.

Per segment, tokens get exact ids local to that segment (hyp + its
references), n-gram ids are built from (n-1)-gram ids and the next token,
and clipped counts come from dense arrays: no string n-grams, no hashing of
tuples, parallel over segments. The score follows sacrebleu's float
operations one by one, so scores are bit-identical.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .. import _validate as V
from .._ext import _text
from .tokenizers import nrefs_label, tokenizer_code

SACREBLEU_VERSION = "2.6.0"  # the release whose numbers these are
SMOOTH = {"none": (0, None), "floor": (1, 0.1), "add-k": (2, 1), "exp": (3, None)}


class ScoreText:
    """sacrebleu's ``Score.format``: ``NAME|signature = 12.34 (μ = 12.30 ± 0.60) <verbose>``."""

    verbose = ""  # the detail after the score (BLEU's precisions and lengths)

    def format(self, width: int = 2, score_only: bool = False, signature: str = "",
               ci: tuple[float, float] | None = None) -> str:
        """``ci``: a bootstrap (mean, half-width), printed as sacrebleu prints ``--confidence``."""
        sc = f"{self.score:.{width}f}"
        if ci is not None:
            sc += f" (μ = {ci[0]:.{width}f} ± {ci[1]:.{width}f})"
        if score_only:
            return sc
        head = f"{self.name}|{signature}" if signature else self.name
        return f"{head} = {sc}" + (f" {self.verbose}" if self.verbose else "")

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return self.format()


@dataclass(frozen=True, repr=False)
class BLEUScore(ScoreText):
    """A BLEU score and its statistics, printed the way sacrebleu prints them."""

    score: float
    counts: list
    totals: list
    precisions: list
    bp: float
    sys_len: int
    ref_len: int
    signature: str = field(default="", compare=False)

    name = "BLEU"

    @property
    def ratio(self) -> float:
        return self.sys_len / self.ref_len if self.ref_len else 0

    @property
    def verbose(self) -> str:
        """sacrebleu's detail after the score: precisions, BP, ratio and lengths."""
        prec = "/".join(f"{p:.1f}" for p in self.precisions)
        return (f"{prec} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
                f"hyp_len = {self.sys_len:d} ref_len = {self.ref_len:d})")


def _options(tokenize, smooth_method, smooth_value, max_ngram_order):
    """Validated (smoothing code, smoothing value, max order)."""
    tokenizer_code(tokenize)
    V.check_choice(smooth_method, "smooth_method", tuple(SMOOTH))
    code, default = SMOOTH[smooth_method]
    if smooth_value is None:
        smooth_value = default
    elif isinstance(smooth_value, bool) or not isinstance(smooth_value, (int, float)):
        raise TypeError(f"smooth_value must be a number, got {smooth_value!r}")
    order = V.check_int(max_ngram_order, "max_ngram_order")
    if order < 1:
        raise ValueError(f"max_ngram_order must be >= 1, got {order}")
    return code, smooth_value, order


def _signature(nrefs, lowercase, effective_order, tokenize, smooth_method, smooth_value) -> str:
    smooth = smooth_method
    if SMOOTH[smooth_method][1] is not None:
        smooth += f"[{smooth_value:.2f}]"
    return (f"nrefs:{nrefs}|case:{'lc' if lowercase else 'mixed'}|eff:{'yes' if effective_order else 'no'}"
            f"|tok:{tokenize}|smooth:{smooth}|version:{SACREBLEU_VERSION}")


@dataclass(frozen=True, eq=False)
class PreparedReferences:
    """Reference streams lowercased (if asked) and tokenized once, to score many systems against.

    Made by ``prepare_references``; pass it as ``references`` to
    ``corpus_bleu``/``segment_bleu`` with the same ``tokenize`` and
    ``lowercase`` (sacrebleu's ``BLEU(references=...)``). ``streams`` hold each
    reference's tokens joined by single spaces (``None`` where absent).
    """

    streams: list
    tokenize: str
    lowercase: bool

    def __len__(self) -> int:
        return len(self.streams[0])


def prepare_references(references: Sequence[Sequence[str | None]], tokenize: str = "13a",
                       lowercase: bool = False, *, num_threads: int | None = None) -> PreparedReferences:
    """Tokenize reference streams once for scoring several systems (the reference-side work is cached)."""
    tok = tokenizer_code(tokenize)
    try:
        n = len(references[0])
    except (TypeError, IndexError, KeyError):
        n = 0  # as_reference_streams says what is wrong
    streams = V.as_reference_streams(references, n)
    threads = V.check_threads(num_threads)
    return PreparedReferences([_text.tokenize_many(s, tok, bool(lowercase), threads) for s in streams],
                              tokenize, bool(lowercase))


def _stats(hypotheses, references, tokenize, order, lowercase, num_threads):
    hyps = V.as_texts(hypotheses, "hypotheses")
    prepared = isinstance(references, PreparedReferences)
    if prepared:
        if (references.tokenize, references.lowercase) != (tokenize, bool(lowercase)):
            raise ValueError(f"references were prepared with tokenize={references.tokenize!r}, "
                             f"lowercase={references.lowercase}; this call asks for tokenize={tokenize!r}, "
                             f"lowercase={bool(lowercase)}")
        if len(references) != len(hyps):
            raise ValueError(f"references have {len(references)} segments but there are {len(hyps)} hypotheses")
        refs = references.streams
    else:
        refs = V.as_reference_streams(references, len(hyps))
    stats = _text.bleu_stats(hyps, refs, tokenizer_code(tokenize), order, bool(lowercase),
                             V.check_threads(num_threads), prepared)
    return stats, nrefs_label(refs)


def _score(stats_row: np.ndarray, code, smooth_value, order, effective_order, signature) -> BLEUScore:
    score, bp, prec, correct, total = _text.bleu_detail(
        np.ascontiguousarray(stats_row, dtype=np.int64), order, code, float(smooth_value or 0.0),
        bool(effective_order))
    as_int = not (code == 2 and not float(smooth_value).is_integer())  # add-k with a fractional k
    counts = [int(c) for c in correct] if as_int else correct
    totals = [int(t) for t in total] if as_int else total
    return BLEUScore(score, counts, totals, prec, bp, int(stats_row[0]), int(stats_row[1]), signature)


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], tokenize: str = "13a",
                lowercase: bool = False, smooth_method: str = "exp", smooth_value: float | None = None,
                max_ngram_order: int = 4, effective_order: bool = False, *,
                num_threads: int | None = None) -> BLEUScore:
    """Corpus BLEU, equal to ``sacrebleu.corpus_bleu`` (counts, totals, lengths and score, bit for bit).

    ``references`` is a list of reference *streams* (sacrebleu's layout):
    ``references[j][i]`` is reference j of segment i; ``None`` drops it, so
    segments may have different numbers of references (each needs one).
    Unlike sacrebleu, every stream must have exactly one entry per hypothesis.
    To score several systems against the same references, tokenize them once
    with ``prepare_references`` and pass that instead.
    """
    code, value, order = _options(tokenize, smooth_method, smooth_value, max_ngram_order)
    stats, nrefs = _stats(hypotheses, references, tokenize, order, lowercase, num_threads)
    sig = _signature(nrefs, lowercase, effective_order, tokenize, smooth_method, value)
    return _score(stats.sum(axis=0), code, value, order, effective_order, sig)


def sentence_bleu(hypothesis: str, references: Sequence[str], tokenize: str = "13a", lowercase: bool = False,
                  smooth_method: str = "exp", smooth_value: float | None = None, max_ngram_order: int = 4,
                  effective_order: bool = True) -> BLEUScore:
    """BLEU of one segment against its references (a list of strings), as ``sacrebleu.sentence_bleu``."""
    hyp = V.check_str(hypothesis, "hypothesis")
    refs = V.as_texts(references, "references")
    if not refs:
        raise ValueError("references is empty: a segment needs at least one reference")
    return corpus_bleu([hyp], [[r] for r in refs], tokenize, lowercase, smooth_method, smooth_value,
                       max_ngram_order, effective_order, num_threads=1)


def segment_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], tokenize: str = "13a",
                 lowercase: bool = False, smooth_method: str = "exp", smooth_value: float | None = None,
                 max_ngram_order: int = 4, effective_order: bool = True, *,
                 num_threads: int | None = None) -> np.ndarray:
    """Sentence BLEU of every segment (float64), equal to a loop of ``sacrebleu.sentence_bleu``."""
    code, value, order = _options(tokenize, smooth_method, smooth_value, max_ngram_order)
    stats, _ = _stats(hypotheses, references, tokenize, order, lowercase, num_threads)
    return _text.bleu_scores(stats, order, code, float(value or 0.0), bool(effective_order))
