"""Score matrices: every hypothesis against every reference alone (MBR decoding, self-BLEU, diversity).

Cell (i, j) is the sentence-level score of ``hypotheses[i]`` against ``references[j]`` as the only
reference: sacrebleu's ``sentence_score`` (BLEU, chrF, TER) or rouge-score's ``score`` (ROUGE), bit for
bit. ``references=None`` scores the list against itself. BLEU, chrF and ROUGE-N/L tokenize each text
and build its n-grams once, then count every pair in compiled code, in parallel over rows
(``pairwise.hpp``: an inverted index of the columns' n-grams; ROUGE-L a bit-parallel LCS per pair); TER
(and ROUGE-Lsum, ROUGE with a tokenizer object, ROUGE on token IDs) prepare each text once and run
their per-pair kernels on every pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _validate
from .._ext import _text
from .bleu import BLEU, _pretokenize
from .chrf import CHRF
from .external_tokenizers import external
from .rouge import ROUGE, Scores
from .ter import TER, _ter
from .token_ids import as_sequences, is_token_input, refuse
from .tokenizers import EXTERNAL, tokenizer_code

__all__ = ["pairwise_bleu", "pairwise_chrf", "pairwise_ter", "pairwise_rouge"]

_MAX_SIDE = 2**31 - 1  # column indices are int32 in the kernels
_PAIRS_AT_ONCE = 1 << 16  # TER/ROUGE: pairs handed to the per-pair kernel in one call (bounds the pair lists)


def _sides(hypotheses: Any, references: Any) -> tuple[list[str], list[str] | None]:
    hyps = _validate.as_texts(hypotheses, "hypotheses")
    refs = None if references is None else _validate.as_texts(references, "references")
    for name, side in (("hypotheses", hyps), ("references", refs)):
        if side is not None and len(side) > _MAX_SIDE:
            raise ValueError(f"{name}: at most {_MAX_SIDE} texts, got {len(side)}")
    return hyps, refs


def _id_sides(hypotheses: Any, references: Any, pad_id: Any) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Token-ID rows and columns as lists of int64 arrays (pad positions removed)."""
    out: list[list[np.ndarray] | None] = []
    for name, side in (("hypotheses", hypotheses), ("references", references)):
        if side is None:
            out.append(None)
            continue
        tok, off = as_sequences(side, name, pad_id)
        out.append(np.split(tok, off[1:-1]) if len(off) > 1 else [])
    hyps, refs = out
    assert hyps is not None  # the hypotheses are required: only the references may be None
    return hyps, refs


def pairwise_bleu(
    hypotheses: Sequence[str] | Any,
    references: Sequence[str] | Any | None = None,
    tokenize: str = "13a",
    lowercase: bool = False,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    max_ngram_order: int = 4,
    effective_order: bool = True,
    *,
    spm_model: str | None = None,
    pad_id: int | None = None,
    num_threads: int | None = None,
) -> np.ndarray:
    """Sentence BLEU of every hypothesis against every reference alone: an (N, M) matrix.

    Parameters
    ----------
    hypotheses : list of str
        N texts (the rows).
    references : list of str, optional
        M texts (the columns), each a single reference; None scores the hypotheses against themselves
        (self-BLEU, MBR).
    tokenize, lowercase, smooth_method, smooth_value, max_ngram_order, effective_order, spm_model
        As in ``sentence_bleu`` (``effective_order`` True by default, as sacrebleu's ``sentence_bleu``).
    pad_id : int, optional
        Token-ID input: both sides an integer array/tensor (N, L) (positions equal to ``pad_id`` are not
        tokens) or a list of integer sequences; the numbers are ``tokenize="none"``'s on the IDs
        written as words.
    num_threads : int, optional
        Threads (default: every core); results do not depend on it.

    Returns
    -------
    numpy.ndarray
        float64 (N, M): cell (i, j) equals ``sacrebleu.sentence_bleu(hypotheses[i], [references[j]])``
        (``BLEU(...).sentence_score`` with the same options), bit for bit.

    Raises
    ------
    TypeError
        If the texts are not lists of str.
    ValueError
        For an unknown option value.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.pairwise_bleu(["the cat sat on the mat", "a dog ran"], ["the cat sat on a mat"]).round(2)
    array([[53.73],
           [10.12]])
    """
    m = BLEU(tokenize, lowercase, smooth_method, smooth_value, max_ngram_order, effective_order, spm_model=spm_model)
    threads = _validate.check_threads(num_threads)
    if is_token_input(hypotheses):
        h_tok, h_off = as_sequences(hypotheses, "hypotheses", pad_id)
        tok, off, ncols = h_tok, h_off, 0
        if references is not None:
            r_tok, r_off = as_sequences(references, "references", pad_id)
            tok, off, ncols = (
                np.concatenate([h_tok, r_tok]),
                np.concatenate([h_off, r_off[1:] + h_off[-1]]),
                len(r_off) - 1,
            )
            if ncols == 0:
                return np.zeros((len(h_off) - 1, 0))
        return _text.pairwise_bleu_ids(
            tok, off, len(h_off) - 1, ncols, m._order, m._code, float(m._value or 0.0), m.effective_order, threads
        )
    if pad_id is not None:
        raise TypeError("pad_id applies to token-ID input; the hypotheses are text")
    hyps, refs = _sides(hypotheses, references)
    tok, lc = m._tok, m.lowercase
    if tokenize in EXTERNAL:  # sacrebleu lowercases, then runs the external tokenizer; we split on spaces
        ext = external(tokenize, spm_model)
        hyps = _pretokenize(hyps, ext, lc)
        refs = None if refs is None else _pretokenize(refs, ext, lc)
        tok, lc = tokenizer_code("none"), False
    return _text.pairwise_bleu(
        hyps, refs, tok, m._order, m._code, float(m._value or 0.0), m.effective_order, lc, threads
    )


def pairwise_chrf(
    hypotheses: Sequence[str],
    references: Sequence[str] | None = None,
    char_order: int = 6,
    word_order: int = 0,
    beta: float = 2,
    lowercase: bool = False,
    whitespace: bool = False,
    eps_smoothing: bool = False,
    *,
    num_threads: int | None = None,
) -> np.ndarray:
    """Sentence chrF (chrF++ with ``word_order=2``) of every hypothesis against every reference alone.

    Parameters
    ----------
    hypotheses : list of str
        N texts (the rows).
    references : list of str, optional
        M texts (the columns); None scores the hypotheses against themselves (MBR).
    char_order, word_order, beta, lowercase, whitespace, eps_smoothing
        As in ``sentence_chrf``.
    num_threads : int, optional
        Threads (default: every core); results do not depend on it.

    Returns
    -------
    numpy.ndarray
        float64 (N, M): cell (i, j) equals ``sacrebleu.sentence_chrf(hypotheses[i], [references[j]])``
        with the same options, bit for bit.

    Raises
    ------
    TypeError
        If the texts are not lists of str.
    ValueError
        For an invalid option value.

    Examples
    --------
    >>> import turbometrics as tm
    >>> cands = ["the cat sat on the mat", "the cat sat on a mat", "a dog ran"]
    >>> m = tm.pairwise_chrf(cands)          # MBR: the candidate closest to all the others
    >>> cands[int((m.sum(axis=1) - m.diagonal()).argmax())]
    'the cat sat on the mat'
    """
    refuse(hypotheses, "chrF", "it is defined on characters")
    hyps, refs = _sides(hypotheses, references)
    m = CHRF(char_order, word_order, beta, lowercase, whitespace, eps_smoothing)
    return _text.pairwise_chrf(
        hyps,
        refs,
        m.char_order,
        m.word_order,
        float(m.beta),
        m.whitespace,
        m.eps_smoothing,
        m.lowercase,
        _validate.check_threads(num_threads),
    )


def _pair_blocks(n_rows: int, n_cols: int):
    """Row ranges [a, b) whose pairs with every column number about _PAIRS_AT_ONCE."""
    step = max(1, _PAIRS_AT_ONCE // max(n_cols, 1))
    for a in range(0, n_rows, step):
        yield a, min(n_rows, a + step)


def pairwise_ter(
    hypotheses: Sequence[str],
    references: Sequence[str] | None = None,
    normalized: bool = False,
    no_punct: bool = False,
    asian_support: bool = False,
    case_sensitive: bool = False,
    *,
    num_threads: int | None = None,
) -> np.ndarray:
    """Sentence TER of every hypothesis against every reference alone: an (N, M) matrix.

    Parameters
    ----------
    hypotheses : list of str
        N texts (the rows).
    references : list of str, optional
        M texts (the columns); None scores the hypotheses against themselves.
    normalized, no_punct, asian_support, case_sensitive
        As in ``sentence_ter``.
    num_threads : int, optional
        Threads (default: every core); results do not depend on it.

    Returns
    -------
    numpy.ndarray
        float64 (N, M): cell (i, j) equals ``sacrebleu.sentence_ter(hypotheses[i], [references[j]])`` with
        the same options, bit for bit. Each text is preprocessed once; the edit distance with shifts
        runs for every pair (TER has no cheaper per-pair statistics).

    Raises
    ------
    TypeError
        If the texts are not lists of str.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.pairwise_ter(["the cat sat on mat", "a dog"], ["the cat sat on the mat", "the dog ran"]).round(2)
    array([[ 16.67, 133.33],
           [100.  ,  66.67]])
    """
    refuse(hypotheses, "TER", "its Tercom rules work on the text")
    hyps, refs = _sides(hypotheses, references)
    m = TER(normalized, no_punct, asian_support, case_sensitive)
    threads = _validate.check_threads(num_threads)
    rows = m._prep(hyps)
    cols = m._prep(m._prep(hyps if refs is None else refs))  # references twice, as sacrebleu (see TER._stats)
    out = np.empty((len(rows), len(cols)))
    for a, b in _pair_blocks(len(rows), len(cols)):
        st = _text.ter_stats([h for h in rows[a:b] for _ in cols], [cols * (b - a)], threads)
        out[a:b] = _ter(st[:, 0].astype(np.float64), st[:, 1] / st[:, 2]).reshape(b - a, len(cols))
    return out


def pairwise_rouge(
    predictions: Sequence[str] | Any,
    references: Sequence[str] | Any | None = None,
    rouge_type: str = "rougeL",
    use_stemmer: bool = False,
    split_summaries: bool = False,
    tokenizer: Any = None,
    *,
    pad_id: int | None = None,
    num_threads: int | None = None,
) -> Scores:
    """ROUGE of every prediction against every reference alone: (N, M) precision, recall and F matrices.

    Parameters
    ----------
    predictions : list of str
        N texts (the rows).
    references : list of str, optional
        M texts (the columns); None scores the predictions against themselves.
    rouge_type : str
        One of ``rouge1`` .. ``rouge9``, ``rougeL``, ``rougeLsum``.
    use_stemmer, split_summaries, tokenizer, pad_id
        As in ``rouge`` (token IDs: both sides as ``pairwise_bleu`` takes them).
    num_threads : int, optional
        Threads (default: every core); results do not depend on it.

    Returns
    -------
    Scores
        ``precision``, ``recall``, ``fmeasure``: float64 (N, M); cell (i, j) equals rouge-score's
        ``RougeScorer([rouge_type], ...).score(references[j], predictions[i])``, bit for bit.

    Raises
    ------
    TypeError
        If the texts are not lists of str.
    ValueError
        For an unknown ``rouge_type``.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.pairwise_rouge(["the cat sat", "a dog"], ["the cat sat down"], "rouge1").fmeasure.round(4)
    array([[0.8571],
           [0.    ]])
    """
    if not isinstance(rouge_type, str):
        raise TypeError(f"rouge_type must be a str, got {type(rouge_type).__name__}")
    m = ROUGE([rouge_type], use_stemmer, split_summaries, tokenizer)
    kind = m._kinds[0]
    preds: list[Any]
    refs: list[Any] | None
    if is_token_input(predictions):
        preds, refs = _id_sides(predictions, references, pad_id)
    elif pad_id is not None:
        raise TypeError("pad_id applies to token-ID input; the predictions are text")
    elif tokenizer is None:
        texts, text_refs = _sides(predictions, references)
        if kind <= 10:  # ROUGE-N and ROUGE-L: the texts tokenized once, every pair in one call
            out = _text.pairwise_rouge(texts, text_refs, kind, m.use_stemmer, _validate.check_threads(num_threads))
            return Scores(out[0], out[1], out[2])
        preds, refs = texts, text_refs
    else:  # the caller's tokenizer (or pre-tokenized lists): validated by ROUGE itself
        preds, refs = list(predictions), None if references is None else list(references)
    cols = preds if refs is None else refs  # per pair: ROUGE-Lsum, tokenizer objects, token IDs
    out = np.empty((3, len(preds), len(cols)))
    for a, b in _pair_blocks(len(preds), len(cols)):
        rows = m._stats([p for p in preds[a:b] for _ in cols], cols * (b - a), num_threads)[0]
        out[:, a:b] = rows.T.reshape(3, b - a, len(cols))
    return Scores(out[0], out[1], out[2])
