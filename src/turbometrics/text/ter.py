"""TER (translation edit rate) with sacrebleu 2.6.0's numbers: corpus, sentence and per-segment scores.

Texts go through sacrebleu's Tercom normalisation here (lowercasing unless
``case_sensitive``; ``normalized``, ``no_punct``, ``asian_support``), then
the C++ kernel (``_ext/ter.hpp``) splits them, gives tokens exact ids per
segment and runs sacrebleu's beam edit distance and greedy shift search,
operation for operation, in parallel over segments. Per segment the best
reference (fewest edits) counts, and the reference length is the average over
the segment's references, as in sacrebleu.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import _validate
from .._ext import _text
from .._metric import Metric, Plan, Signature, concat, one_score
from .bleu import SACREBLEU_VERSION, ScoreText
from .token_ids import refuse
from .tokenizers import combine_nrefs, nrefs_label

# Tercom's normalisation (sacrebleu's TercomTokenizer): literal replacements, then regex passes.
_WESTERN_LITERAL = (("\n-", ""), ("\n", " "), ("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))
_WESTERN = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"([{-~[-` -&(-+:-@/])", r" \1 "),  # symbols and punctuation, padded
        (r"'s ", r" 's "),
        (r"'s$", r" 's"),  # the possessive
        (r"([^0-9])([\.,])", r"\1 \2 "),
        (r"([\.,])([^0-9])", r" \1 \2"),  # . and , next to a non-digit
        (r"([0-9])(-)", r"\1 \2 "),
    )
)
_ASIAN_PUNCT = r"([\u3001\u3002\u3008-\u3011\u3014-\u301f\uff61-\uff65\u30fb])"
_FULL_WIDTH_PUNCT = r"([\uff0e\uff0c\uff1f\uff1a\uff1b\uff01\uff02\uff08\uff09])"
_ASIAN = (
    tuple(
        (re.compile(p), r" \1 ")
        for p in (
            r"([\u4e00-\u9fff\u3400-\u4dbf])",
            r"([\u31c0-\u31ef\u2e80-\u2eff])",
            r"([\u3300-\u33ff\uf900-\ufaff\ufe30-\ufe4f])",
            r"([\u3200-\u3f22])",
        )
    )
    + tuple(
        (re.compile(p), r"\1 \2 ")
        for p in (  # kana runs (the patterns' ^ inside (...) are Tercom's, kept as is)
            r"(^|^[\u3040-\u309f])([\u3040-\u309f]+)(?=$|^[\u3040-\u309f])",
            r"(^|^[\u30a0-\u30ff])([\u30a0-\u30ff]+)(?=$|^[\u30a0-\u30ff])",
            r"(^|^[\u31f0-\u31ff])([\u31f0-\u31ff]+)(?=$|^[\u31f0-\u31ff])",
        )
    )
    + tuple((re.compile(p), r" \1 ") for p in (_ASIAN_PUNCT, _FULL_WIDTH_PUNCT))
)
_PUNCT = re.compile(r"[\.,\?:;!\"\(\)]")
_ASIAN_PUNCT_RE = (re.compile(_ASIAN_PUNCT), re.compile(_FULL_WIDTH_PUNCT))


def _tercom(text: str, normalized: bool, no_punct: bool, asian_support: bool, case_sensitive: bool) -> str:
    """sacrebleu's TER preprocessing of one segment: rstrip, then its TercomTokenizer."""
    s = text.rstrip()
    if not s:
        return ""
    if not case_sensitive:
        s = s.lower()
    if normalized:
        for a, b in _WESTERN_LITERAL:
            s = s.replace(a, b)
        s = f" {s} "
        for p, r in _WESTERN:
            s = p.sub(r, s)
        if asian_support:
            for p, r in _ASIAN:
                s = p.sub(r, s)
    if no_punct:
        s = _PUNCT.sub("", s)
        if asian_support:
            for p in _ASIAN_PUNCT_RE:
                s = p.sub("", s)
    return s  # the kernel splits on whitespace (sacrebleu joins the split words with spaces: same tokens)


@dataclass(frozen=True, repr=False)
class TERScore(ScoreText):
    """A TER score (edits per 100 reference words), printed the way sacrebleu prints it."""

    score: float
    num_edits: int
    ref_length: float
    signature: str = field(default="", compare=False)

    name = "TER"


def _ter(edits, ref_length):
    """sacrebleu's score from summed statistics (vectorised; 100 for edits against empty references)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * np.where(ref_length > 0, edits / ref_length, np.where(edits > 0, 1.0, 0.0))


def _sacrebleu_float32(row: np.ndarray) -> float:
    """sacrebleu's TER._compute_score_from_stats on a float32 statistics row (its bootstrap path)."""
    edits, ref_length = row[0], row[1]
    if ref_length > 0:
        score = edits / ref_length
    elif edits > 0:
        score = 1.0
    else:
        score = 0.0
    return 100 * score


class TER(Metric):
    """Corpus TER (sacrebleu 2.6.0's numbers) accumulated over chunks of segments.

    ``compute()`` equals ``tm.corpus_ter`` on all the segments, bit for bit;
    the state is each segment's best edit count, summed reference length and
    number of references. Options as in ``corpus_ter``.

    Examples
    --------
    >>> import turbometrics as tm
    >>> ter = tm.metrics.TER().update(["the cat sat on mat"], [["the cat sat on the mat"]])
    >>> print(ter.update(["a dog"], [["the dog ran"]]).compute())
    TER = 33.33
    """

    _state = {"_rows": list, "_nrefs": list}
    _rows: list[np.ndarray]
    _nrefs: list[int]
    modes = ("default", "sacrebleu")

    def __init__(
        self,
        normalized: bool = False,
        no_punct: bool = False,
        asian_support: bool = False,
        case_sensitive: bool = False,
    ):
        self.normalized, self.no_punct = bool(normalized), bool(no_punct)
        self.asian_support, self.case_sensitive = bool(asian_support), bool(case_sensitive)
        self._signature = Signature.of(
            case="mixed" if self.case_sensitive else "lc",
            tok="tercom",
            norm="yes" if self.normalized else "no",
            punct="no" if self.no_punct else "yes",
            asian="yes" if self.asian_support else "no",
            version=SACREBLEU_VERSION,
        )
        self.reset()

    def _prep(self, texts: list) -> list:
        opts = (self.normalized, self.no_punct, self.asian_support, self.case_sensitive)
        return [None if t is None else _tercom(t, *opts) for t in texts]

    def _stats(self, hypotheses, references, num_threads):
        refuse(hypotheses, "TER", "its Tercom rules work on the text")
        hyps = _validate.as_texts(hypotheses, "hypotheses")
        refs = _validate.as_reference_streams(references, len(hyps))
        # sacrebleu preprocesses references twice (once when caching them, again when extracting their
        # words); the Tercom rules are not idempotent ("nima's ," -> "nima 's ,"), so neither are we
        rows = _text.ter_stats(
            self._prep(hyps), [self._prep(self._prep(s)) for s in refs], _validate.check_threads(num_threads)
        )
        return rows, nrefs_label(refs)

    def update(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], *, num_threads: int | None = None
    ) -> TER:
        """Add segments: hypotheses and reference streams, as ``corpus_ter``."""
        return self._fold(self._stats(hypotheses, references, num_threads))

    def _all_rows(self) -> np.ndarray:
        return concat(self._rows, (0, 3), np.int64)

    def segment_statistics(self) -> np.ndarray:
        """[edits, average reference length] per segment (float64), sacrebleu's statistics."""
        return self._sacrebleu_statistics(self._all_rows())

    @staticmethod
    def _sacrebleu_statistics(rows: np.ndarray) -> np.ndarray:
        """Our rows (edits, reference words, references) as sacrebleu's [edits, average reference length]."""
        return (
            np.stack([rows[:, 0].astype(np.float64), rows[:, 1] / rows[:, 2]], axis=1)
            if len(rows)
            else np.zeros((0, 2))
        )

    def segment_scores(self) -> np.ndarray:
        """Sentence TER of every segment (float64), as ``segment_ter``."""
        st = self.segment_statistics()
        return _ter(st[:, 0], st[:, 1])

    def signature(self) -> Signature:
        """sacrebleu's signature of this metric over the segments seen so far."""
        return Signature(f"nrefs:{combine_nrefs(self._nrefs)}|{self._signature}")

    def compute(self) -> TERScore:
        """The corpus score of every segment seen (sacrebleu sums the statistics in order)."""
        st = self.segment_statistics()
        edits = int(self._all_rows()[:, 0].sum())
        ref_length = 0.0
        for v in st[:, 1].tolist():  # sequentially, as sacrebleu's sum_of_lists
            ref_length += v
        return TERScore(float(_ter(np.float64(edits), np.float64(ref_length))), edits, ref_length, self.signature())

    def _plan(self) -> Plan:
        st = np.ascontiguousarray(self.segment_statistics())
        return Plan(
            st,
            lambda s: _ter(s[:, 0], s[:, 1])[:, None],
            np.array([self.compute().score]),
            (0,),
            one_score,
            _sacrebleu_float32,
        )


def corpus_ter(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str | None]],
    normalized: bool = False,
    no_punct: bool = False,
    asian_support: bool = False,
    case_sensitive: bool = False,
    *,
    num_threads: int | None = None,
) -> TERScore:
    """Corpus TER, equal to ``sacrebleu.corpus_ter`` (score, edits and reference length, bit for bit).

    Parameters
    ----------
    hypotheses : list of str
    references : list of reference streams
        sacrebleu's layout (``references[j][i]``; ``None`` drops a reference);
        per segment the reference with the fewest edits counts, and the
        reference length is the segment's average.
    normalized : bool
        Tercom's normalisation (punctuation split off, XML entities decoded).
    no_punct : bool
        Remove punctuation.
    asian_support : bool
        With ``normalized``/``no_punct``: CJK characters split / CJK punctuation removed.
    case_sensitive : bool
        Keep case (TER lowercases by default).
    num_threads : int, optional
        Threads for the edit distances (default: every core); results do not depend on it.

    Returns
    -------
    TERScore
        ``score`` (edits per 100 reference words), ``num_edits``, ``ref_length``, ``signature``.

    Raises
    ------
    TypeError, ValueError
        For inputs that are not lists of strings, streams of the wrong length,
        or a segment with no reference. ValueError also for a segment whose
        beam DP would need more than 2**24 cells (about 50 n_h + 3 n_r for
        n_h hypothesis and n_r reference tokens: hypotheses past ~330,000
        tokens, where the shift search could run for a minute): split it.
    KeyboardInterrupt
        Ctrl-C (SIGINT) stops a long call within about 50 ms, also with the GIL released.
    MemoryError
        When a segment's working memory cannot be had (the message names the segment).

    Examples
    --------
    >>> import turbometrics as tm
    >>> s = tm.corpus_ter(["the cat sat on mat", "a dog"], [["the cat sat on the mat", "the dog ran"]])
    >>> print(s)
    TER = 33.33
    >>> s.num_edits, s.ref_length
    (3, 9.0)
    """
    return (
        TER(normalized, no_punct, asian_support, case_sensitive)
        .update(hypotheses, references, num_threads=num_threads)
        .compute()
    )


def sentence_ter(
    hypothesis: str,
    references: Sequence[str],
    normalized: bool = False,
    no_punct: bool = False,
    asian_support: bool = False,
    case_sensitive: bool = False,
) -> TERScore:
    """TER of one segment against its references, as ``sacrebleu.sentence_ter``.

    Parameters
    ----------
    hypothesis : str
    references : list of str
        This segment's references (at least one).
    normalized, no_punct, asian_support, case_sensitive
        As in ``corpus_ter``.

    Returns
    -------
    TERScore

    Examples
    --------
    >>> import turbometrics as tm
    >>> round(tm.sentence_ter("a b", ["a b c"]).score, 2)
    33.33
    """
    return (
        TER(normalized, no_punct, asian_support, case_sensitive)
        .update(*_validate.as_one_segment(hypothesis, references), num_threads=1)
        .compute()
    )


def segment_ter(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str | None]],
    normalized: bool = False,
    no_punct: bool = False,
    asian_support: bool = False,
    case_sensitive: bool = False,
    *,
    num_threads: int | None = None,
) -> np.ndarray:
    """Sentence TER of every segment, equal to a loop of ``sacrebleu.sentence_ter``.

    Parameters
    ----------
    hypotheses, references, normalized, no_punct, asian_support, case_sensitive, num_threads
        As in ``corpus_ter``.

    Returns
    -------
    numpy.ndarray
        float64 (N,), one score per segment.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.segment_ter(["the cat sat on mat", "a dog"], [["the cat sat on the mat", "the dog ran"]]).round(4)
    array([16.6667, 66.6667])
    """
    return (
        TER(normalized, no_punct, asian_support, case_sensitive)
        .update(hypotheses, references, num_threads=num_threads)
        .segment_scores()
    )
