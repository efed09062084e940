"""BLEU with sacrebleu 2.x's numbers: corpus, sentence and per-segment scores.

Per segment, tokens get exact ids local to that segment (hyp + its
references), n-gram ids are built from (n-1)-gram ids and the next token,
and clipped counts come from dense arrays: no string n-grams, no hashing of
tuples, parallel over segments. The score follows sacrebleu's float
operations one by one, so scores are bit-identical.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .. import _validate
from .._ext import _text
from .._metric import _STATE_LOCK, Metric, Pending, Plan, Signature, _reading, column_sums, concat, once, one_score
from .external_tokenizers import external
from .token_ids import (
    as_sequences,
    as_token_references,
    bleu_rows_gpu,
    is_token_input,
    is_token_sequence,
    joined,
    like_input,
    on_gpu,
)
from .tokenizers import EXTERNAL, combine_nrefs, nrefs_label, tokenizer_code

SACREBLEU_VERSION = "2.6.0"  # the release whose numbers these are
SMOOTH = {"none": (0, None), "floor": (1, 0.1), "add-k": (2, 1), "exp": (3, None)}


class ScoreText:
    """sacrebleu's ``Score.format``: ``NAME|signature = 12.34 (μ = 12.30 ± 0.60) <verbose>``."""

    score: float

    @property
    def name(self) -> str:
        """The metric's name as sacrebleu prints it (each score class sets it)."""
        raise NotImplementedError

    @property
    def verbose(self) -> str:
        """The detail after the score (BLEU's precisions and lengths); none by default."""
        return ""

    def format(
        self, width: int = 2, score_only: bool = False, signature: str = "", ci: tuple[float, float] | None = None
    ) -> str:
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
        return (
            f"{prec} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
            f"hyp_len = {self.sys_len:d} ref_len = {self.ref_len:d})"
        )


def _sacrebleu_float32(
    row: np.ndarray, order: int, smooth_method: str, smooth_value: float | None, effective_order: bool
) -> float:
    """sacrebleu's ``BLEU.compute_bleu`` score on a float32 statistics row, operation for operation.

    sacrebleu's ``--confidence`` and ``--paired-bs`` sum resampled statistics
    in float32 and score them with NumPy float32 scalars, so its numbers carry
    float32 rounding; ``mode="sacrebleu"`` resampling reproduces them with this.
    """
    sys_len, ref_len = int(row[0]), int(row[1])  # sacrebleu casts the lengths to int, not the counts
    correct, total = list(row[2 : 2 + order]), list(row[2 + order : 2 + 2 * order])
    if smooth_value is None:
        smooth_value = SMOOTH[smooth_method][1]
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * order
    if not any(correct):
        return 0.0
    smooth_mteval, eff_order = 1.0, order
    for n in range(1, order + 1):
        if smooth_method == "add-k" and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth_method == "exp":
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
            elif smooth_method == "floor":
                precisions[n - 1] = 100.0 * cast(float, smooth_value) / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    logs = [math.log(p) if p else -9999999999 for p in precisions[:eff_order]]
    return bp * math.exp(sum(logs) / eff_order)


@dataclass(frozen=True, eq=False)
class PreparedReferences:
    """Reference streams lowercased (if asked) and tokenized once, to score many systems against.

    Made by ``prepare_references``; pass it as ``references`` to
    ``corpus_bleu``/``segment_bleu``/``BLEU.update`` with the same
    ``tokenize`` and ``lowercase`` (sacrebleu's ``BLEU(references=...)``).
    ``streams`` hold each reference's tokens joined by single spaces (``None``
    where absent).
    """

    streams: list
    tokenize: str
    lowercase: bool

    def __len__(self) -> int:
        return len(self.streams[0])


def _pretokenize(texts: list, ext, lowercase: bool) -> list:
    """sacrebleu's preprocessing with an external tokenizer: lowercase, rstrip, tokenize (None stays None)."""
    return [None if t is None else ext.tokenize((t.lower() if lowercase else t).rstrip()) for t in texts]


def prepare_references(
    references: Sequence[Sequence[str | None]],
    tokenize: str = "13a",
    lowercase: bool = False,
    *,
    num_threads: int | None = None,
    spm_model: str | None = None,
) -> PreparedReferences:
    """Tokenize reference streams once, for scoring several systems against them.

    Parameters
    ----------
    references : list of reference streams
        sacrebleu's layout (``references[j][i]``: reference j of segment i; None drops it).
    tokenize, lowercase : as in ``corpus_bleu``; the scoring call must use the same.
    num_threads : int, optional
        Threads for the tokenizer (default: every core).

    Returns
    -------
    PreparedReferences
        To pass as ``references`` to ``corpus_bleu``, ``segment_bleu`` or ``BLEU.update``.

    Examples
    --------
    >>> import turbometrics as tm
    >>> refs = tm.prepare_references([["The cat sat on the mat."]])
    >>> tm.corpus_bleu(["The cat sat on the mat."], refs).score
    100.00000000000004
    """
    tok = tokenizer_code(tokenize)
    try:
        n = len(references[0])
    except (TypeError, IndexError, KeyError):
        n = 0  # as_reference_streams says what is wrong
    streams = _validate.as_reference_streams(references, n)
    threads = _validate.check_threads(num_threads)
    lc = bool(lowercase)
    if tokenize in EXTERNAL:
        streams, lc = [_pretokenize(s, external(tokenize, spm_model), lc) for s in streams], False
    return PreparedReferences([_text.tokenize_many(s, tok, lc, threads) for s in streams], tokenize, bool(lowercase))


class BLEU(Metric):
    """Corpus BLEU (sacrebleu 2.6.0's numbers) accumulated over chunks of segments.

    ``compute()`` equals ``tm.corpus_bleu`` on all the segments, bit for bit;
    the state is each segment's integer statistics
    ``[hyp_len, ref_len, correct_1..N, total_1..N]``. Options as in ``corpus_bleu``.

    Examples
    --------
    >>> import turbometrics as tm
    >>> bleu = tm.metrics.BLEU()
    >>> bleu = bleu.update(["The cat sat on the mat."], [["The cat sat on the mat."]])
    >>> bleu = bleu.update(["A dog ran."], [["The dog ran away."]])
    >>> print(bleu.compute())
    BLEU = 72.80 90.9/77.8/71.4/80.0 (BP = 0.913 ratio = 0.917 hyp_len = 11 ref_len = 12)

    Token IDs, (B, L) with padding (on a GPU, ``update`` of CUDA tensors returns without waiting for it):

    >>> import numpy as np
    >>> ids = tm.metrics.BLEU().update(np.array([[5, 6, 7, 8, 0, 0]]), np.array([[5, 6, 7, 8, 9, 0]]), pad_id=0)
    >>> print(ids.compute())
    BLEU = 77.88 100.0/100.0/100.0/100.0 (BP = 0.779 ratio = 0.800 hyp_len = 4 ref_len = 5)
    """

    _state = {"_rows": list, "_nrefs": list, "_ids": list}  # _ids: per update, whether it was token IDs
    _rows: list[np.ndarray]
    _nrefs: list[int]
    _ids: list[bool]
    modes = ("default", "sacrebleu")

    def __init__(
        self,
        tokenize: str = "13a",
        lowercase: bool = False,
        smooth_method: str = "exp",
        smooth_value: float | None = None,
        max_ngram_order: int = 4,
        effective_order: bool = False,
        *,
        spm_model: str | None = None,
    ):
        self._tok = tokenizer_code(tokenize)
        ext = external(tokenize, spm_model) if tokenize in EXTERNAL else None  # loads it now: errors come early
        _validate.check_choice(smooth_method, "smooth_method", tuple(SMOOTH))
        self._code, default = SMOOTH[smooth_method]
        self._value = default
        if smooth_value is not None:
            self._value = _validate.check_real(smooth_value, "smooth_value")
            if not (math.isfinite(self._value) and self._value >= 0):  # sacrebleu: a log's domain error, or NaN
                raise ValueError(f"smooth_value must be a finite number >= 0, got {smooth_value!r}")
        self._order = _validate.check_int(max_ngram_order, "max_ngram_order")
        if not 1 <= self._order <= _text.MAX_ORDER:
            raise ValueError(f"max_ngram_order must be in [1, {_text.MAX_ORDER}], got {self._order}")
        self.tokenize, self.lowercase, self.smooth_method = tokenize, bool(lowercase), smooth_method
        self.smooth_value, self.max_ngram_order = smooth_value, max_ngram_order
        self.effective_order, self.spm_model = bool(effective_order), spm_model
        smooth = smooth_method + (f"[{self._value:.2f}]" if default is not None else "")
        self._signature, self._ids_signature = (  # all but nrefs (from the data); token IDs are tokens already
            Signature.of(
                case="lc" if self.lowercase else "mixed",
                eff="yes" if self.effective_order else "no",
                tok=tok,
                smooth=smooth,
                version=SACREBLEU_VERSION,
            )
            for tok in (ext.signature if ext else tokenize, "none")
        )
        self.reset()

    def _last_ids(self) -> bool | None:
        """Whether the last update held token IDs (None before any): pending chunks count (only token IDs
        on a GPU pend), failed ones do not."""
        with _STATE_LOCK:  # (a settle moves chunks from _pending to _ids)
            for _, item in reversed(self.__dict__.get("_pending") or []):
                if isinstance(item, Pending):
                    return True
                if isinstance(item, tuple):
                    return bool(item[2])
            return self._ids[-1] if self._ids else None

    def _stats(self, hypotheses, references, num_threads, pad_id=None, device=None, later=True):
        ids = is_token_input(hypotheses)
        last = self._last_ids()
        if last is not None and last != ids:
            raise ValueError(
                f"this BLEU holds statistics of {'token IDs' if last else 'text'}; "
                f"{'token IDs' if ids else 'text'} make another corpus (reset() or a new BLEU)"
            )
        if ids:
            if later and on_gpu(hypotheses, device):  # torch tensors on a GPU: no host wait in update
                from .._gpu_token_ids import bleu_later

                pending = bleu_later(hypotheses, references, pad_id, self._order)
                if pending is not None:
                    return pending
            return (*self._stats_ids(hypotheses, references, num_threads, pad_id, device), True)
        if pad_id is not None:
            raise TypeError("pad_id applies to token-ID input; the hypotheses are text")
        hyps = _validate.as_texts(hypotheses, "hypotheses")
        prepared = isinstance(references, PreparedReferences)
        if prepared:
            if (references.tokenize, references.lowercase) != (self.tokenize, self.lowercase):
                raise ValueError(
                    f"references were prepared with tokenize={references.tokenize!r}, "
                    f"lowercase={references.lowercase}; this call asks for "
                    f"tokenize={self.tokenize!r}, lowercase={self.lowercase}"
                )
            if len(references) != len(hyps):
                raise ValueError(f"references have {len(references)} segments but there are {len(hyps)} hypotheses")
            refs = references.streams
        else:
            refs = _validate.as_reference_streams(references, len(hyps))
        lowercase = self.lowercase
        if self.tokenize in EXTERNAL:  # tokenized here (lowercased first, as sacrebleu); the kernel splits on spaces
            ext = external(self.tokenize, self.spm_model)  # cached per process (a metric object stays picklable)
            hyps = _pretokenize(hyps, ext, lowercase)
            if not prepared:
                refs = [_pretokenize(s, ext, lowercase) for s in refs]
            lowercase = False
        rows = _text.bleu_stats(
            hyps, refs, self._tok, self._order, lowercase, _validate.check_threads(num_threads), prepared
        )
        return rows, nrefs_label(refs), False

    def _mixed(self, state: dict[str, Any]) -> str | None:
        if len(set(state["_ids"])) > 1:  # update's rule, for merge and sync too
            return "statistics of text and of token IDs are two corpora"
        return None

    def _stats_ids(self, hypotheses, references, num_threads, pad_id, device):
        """Token IDs (see text.token_ids): the statistics of tokenize="none" on the IDs written as words;
        the n-gram matching on the GPU for device input (or device="cuda"), up to order 16."""
        gpu = on_gpu(hypotheses, device) and self._order <= 16
        hyp = as_sequences(hypotheses, "hypotheses", pad_id, on_device=gpu)
        tok, off, h, r, seg = joined(
            hyp, as_token_references(references, len(hyp[1]) - 1, "references", pad_id, on_device=gpu)
        )
        rows = (
            bleu_rows_gpu(tok, off, h, r, seg, self._order)
            if gpu
            else _text.bleu_stats_ids(tok, off, h, r, seg, self._order, _validate.check_threads(num_threads))
        )
        counts = np.diff(seg)
        if not counts.size:  # an empty batch says nothing of the references (it does not make nrefs "var")
            return rows, None
        return rows, int(counts[0]) if counts.min() == counts.max() else "var"

    def update(
        self,
        hypotheses: Sequence[str] | Any,
        references: Sequence[Sequence[str | None]] | PreparedReferences | Any,
        *,
        num_threads: int | None = None,
        pad_id: int | None = None,
        device: str | None = None,
    ) -> BLEU:
        """Add segments: hypotheses and reference streams (or ``PreparedReferences``), or token IDs with
        ``pad_id`` (``device="cuda"``, or IDs on a GPU: counted there), as ``corpus_bleu``. Token IDs in
        torch tensors on a GPU ((B, L) hypotheses, (B, L) or (B, R, L) references, on one device) are counted
        without a host wait: ``update`` returns once the work is queued, and the first state reader
        (``compute``, ``segment_scores``, a merge...) waits, raising there what the update would have
        (negative token IDs), naming that update."""
        return self._fold(self._stats(hypotheses, references, num_threads, pad_id, device))

    def _now(self, hypotheses, references, num_threads, pad_id) -> BLEU:
        """``update`` waiting for the device: the one-shot functions' (their errors raised as they are)."""
        return self._fold(self._stats(hypotheses, references, num_threads, pad_id, later=False))

    def _all_rows(self) -> np.ndarray:
        return concat(self._rows, (0, 2 + 2 * self._order), np.int64)

    @_reading
    def segment_statistics(self) -> np.ndarray:
        """[hyp_len, ref_len, correct_1..N, total_1..N] per segment (int64, a copy)."""
        return self._all_rows().copy()

    @_reading
    def segment_scores(self) -> np.ndarray:
        """Sentence BLEU of every segment (float64), as ``segment_bleu``."""
        return self._scores(self._all_rows())

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        return _text.bleu_scores(
            np.ascontiguousarray(rows), self._order, self._code, float(self._value or 0.0), self.effective_order
        )

    @_reading
    def signature(self) -> Signature:
        """sacrebleu's signature of this metric over the segments seen so far."""
        sig = self._ids_signature if self._last_ids() else self._signature
        return Signature(f"nrefs:{combine_nrefs(self._nrefs)}|{sig}")

    def compute(self) -> BLEUScore:
        """The corpus score of every segment seen, with sacrebleu's statistics and signature."""
        total = column_sums(self._all_rows())
        score, bp, prec, correct, totals = _text.bleu_detail(
            np.ascontiguousarray(total, dtype=np.int64),
            self._order,
            self._code,
            float(self._value or 0.0),
            self.effective_order,
        )
        if not (self._code == 2 and not float(self._value or 0.0).is_integer()):  # add-k with a fractional k: floats
            correct, totals = [int(c) for c in correct], [int(t) for t in totals]
        return BLEUScore(score, correct, totals, prec, bp, int(total[0]), int(total[1]), self.signature())

    def _plan(self) -> Plan:
        def sacrebleu_score(row):
            return _sacrebleu_float32(row, self._order, self.smooth_method, self.smooth_value, self.effective_order)

        return Plan(
            self.segment_statistics(),
            lambda s: self._scores(s)[:, None],
            np.array([self.compute().score]),
            (0,),
            one_score,
            sacrebleu_score,
        )


def corpus_bleu(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str | None]] | PreparedReferences,
    tokenize: str = "13a",
    lowercase: bool = False,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    max_ngram_order: int = 4,
    effective_order: bool = False,
    *,
    num_threads: int | None = None,
    spm_model: str | None = None,
    pad_id: int | None = None,
) -> BLEUScore:
    """Corpus BLEU, equal to ``sacrebleu.corpus_bleu`` (counts, totals, lengths and score, bit for bit).

    Token IDs work too (RL rewards): hypotheses an integer array/tensor (B, L) (positions equal to
    ``pad_id`` are not tokens) or a list of integer sequences; references per segment, (B, L),
    (B, R, L) or a list of sequences (or of lists of them). The numbers are those of
    ``tokenize="none"`` on the IDs written as words (``" ".join(map(str, ids))``).

    Parameters
    ----------
    hypotheses : list of str
        One system output per segment.
    references : list of reference streams, or PreparedReferences
        sacrebleu's layout: ``references[j][i]`` is reference j of segment i;
        ``None`` drops it, so segments may have different numbers of
        references (each needs one). Unlike sacrebleu, every stream must have
        exactly one entry per hypothesis. To score several systems against
        the same references, tokenize them once with ``prepare_references``.
    tokenize : str
        sacrebleu's tokenizer (see ``tm.tokenize``): "13a", "intl", "zh",
        "char", "none"; "ja-mecab", "ko-mecab" (the ``ja``/``ko`` extras);
        "flores101" (= "spm"), "flores200", "spBLEU-1K" (the ``spm`` extra
        and sacrebleu's model file, or ``spm_model``).
    lowercase : bool
        Lowercase hypotheses and references first.
    smooth_method : {"exp", "floor", "add-k", "none"}
    smooth_value : float, optional
        For "floor" (default 0.1) and "add-k" (default 1).
    max_ngram_order : int
        Highest n-gram order (4).
    effective_order : bool
        Average only over the orders that have n-grams (sentence BLEU's default).
    num_threads : int, optional
        Threads for the statistics (default: every core); results do not depend on it.
    spm_model : str, optional
        A local SentencePiece model file for the SentencePiece tokenizers
        (default: where sacrebleu keeps it, ``$SACREBLEU/models/``).

    Returns
    -------
    BLEUScore
        ``score``, ``counts``, ``totals``, ``precisions``, ``bp``, ``sys_len``,
        ``ref_len``, ``signature``; prints as sacrebleu prints it.

    Raises
    ------
    TypeError, ValueError
        For inputs that are not lists of strings, streams of the wrong length,
        a segment with no reference, or unknown options (max_ngram_order is at
        most 1,024).
    KeyboardInterrupt
        Ctrl-C (SIGINT) stops a long call within about 50 ms, also with the GIL released.
    MemoryError
        When a segment's working memory cannot be had (the message names the segment).

    Examples
    --------
    >>> import turbometrics as tm
    >>> hyps = ["The cat sat on the mat.", "A dog ran."]
    >>> refs = [["The cat sat on the mat.", "The dog ran away."]]
    >>> print(tm.corpus_bleu(hyps, refs))
    BLEU = 72.80 90.9/77.8/71.4/80.0 (BP = 0.913 ratio = 0.917 hyp_len = 11 ref_len = 12)
    >>> tm.corpus_bleu(hyps, refs).signature
    'nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0'
    """
    m = BLEU(tokenize, lowercase, smooth_method, smooth_value, max_ngram_order, effective_order, spm_model=spm_model)
    return once(m, hypotheses, references, num_threads, pad_id)


def sentence_bleu(
    hypothesis: str,
    references: Sequence[str],
    tokenize: str = "13a",
    lowercase: bool = False,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    max_ngram_order: int = 4,
    effective_order: bool = True,
    *,
    spm_model: str | None = None,
    pad_id: int | None = None,
) -> BLEUScore:
    """BLEU of one segment against its references, as ``sacrebleu.sentence_bleu``.

    Token IDs work too: ``hypothesis`` an integer sequence, ``references`` a list of them (see
    ``corpus_bleu``).

    Parameters
    ----------
    hypothesis : str
    references : list of str
        This segment's references (at least one).
    tokenize, lowercase, smooth_method, smooth_value, max_ngram_order, spm_model
        As in ``corpus_bleu``.
    effective_order : bool
        True by default, as in sacrebleu's ``sentence_bleu``.

    Returns
    -------
    BLEUScore

    Examples
    --------
    >>> import turbometrics as tm
    >>> round(tm.sentence_bleu("The dog ran.", ["The dog ran away."]).score, 4)
    49.7609
    """
    m = BLEU(tokenize, lowercase, smooth_method, smooth_value, max_ngram_order, effective_order, spm_model=spm_model)
    if is_token_sequence(hypothesis):  # token IDs
        return once(m, [hypothesis], [references], 1, pad_id)
    return m.update(*_validate.as_one_segment(hypothesis, references), num_threads=1).compute()


def segment_bleu(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str | None]] | PreparedReferences,
    tokenize: str = "13a",
    lowercase: bool = False,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    max_ngram_order: int = 4,
    effective_order: bool = True,
    *,
    num_threads: int | None = None,
    spm_model: str | None = None,
    pad_id: int | None = None,
) -> np.ndarray:
    """Sentence BLEU of every segment, equal to a loop of ``sacrebleu.sentence_bleu``.

    Token IDs (with ``pad_id``) work as in ``corpus_bleu``: a BLEU reward per sequence.

    Parameters
    ----------
    hypotheses, references, tokenize, lowercase, smooth_method, smooth_value, max_ngram_order, num_threads, spm_model
        As in ``corpus_bleu``.
    effective_order : bool
        True by default, as in sacrebleu's ``sentence_bleu``.

    Returns
    -------
    numpy.ndarray
        float64 (N,), one score per segment.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.segment_bleu(["The cat sat on the mat.", "A dog ran."],
    ...                 [["The cat sat on the mat.", "The dog ran away."]]).round(4)
    array([100.    ,  27.5348])
    """
    scores = (
        BLEU(tokenize, lowercase, smooth_method, smooth_value, max_ngram_order, effective_order, spm_model=spm_model)
        ._now(hypotheses, references, num_threads, pad_id)
        .segment_scores()
    )
    return like_input(scores, hypotheses)  # on the device for device token IDs
