"""ROUGE-N, ROUGE-L and ROUGE-Lsum per pair with rouge-score 0.1.2's numbers.

Argument order: ours is ``rouge(predictions, references)``; rouge-score's is
``RougeScorer.score(target, prediction)``.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Sequence

import numpy as np

from .. import _validate as V
from .._ext import _text

ROUGE_TYPES = tuple(f"rouge{n}" for n in range(1, 10)) + ("rougeL", "rougeLsum")


class Scores(NamedTuple):
    """Per-pair precision, recall and F1 (float64 arrays of length N)."""

    precision: np.ndarray
    recall: np.ndarray
    fmeasure: np.ndarray


def _kind(t: str) -> int:
    if t == "rougeL":
        return 10
    if t == "rougeLsum":
        return 11
    if isinstance(t, str) and re.fullmatch(r"rouge[1-9]", t):
        return int(t[5:])
    raise ValueError(f"unknown rouge type {t!r}; use rouge1..rouge9, rougeL or rougeLsum")


def rouge(predictions: Sequence[str], references: Sequence[str | Sequence[str]],
          rouge_types: Sequence[str] = ("rouge1", "rouge2", "rougeL", "rougeLsum"), use_stemmer: bool = False,
          split_summaries: bool = False, *, num_threads: int | None = None) -> dict[str, Scores]:
    """ROUGE of each prediction against its reference(s), as ``rouge_score.rouge_scorer.RougeScorer``.

    ``references[i]`` is a string, or a list of strings for several
    references: then, per type, the reference with the highest F counts (the
    first on ties; rouge-score's ``score_multi``). Tokens are rouge-score's:
    lowercase ``[a-z0-9]`` runs (other characters separate tokens), Porter
    stems (nltk's) of tokens longer than 3 characters with ``use_stemmer``.
    ROUGE-Lsum splits summaries on newlines and takes the union LCS per
    reference sentence, with rouge-score's backtrack deciding which LCS.

    Returns ``{rouge_type: Scores(precision, recall, fmeasure)}`` of float64 arrays.
    """
    if split_summaries:
        raise ValueError("split_summaries=True (nltk.sent_tokenize) is not supported yet; "
                         "put one sentence per line instead")
    types = V.as_texts(rouge_types, "rouge_types")
    if not types:
        raise ValueError("rouge_types is empty")
    kinds = [_kind(t) for t in types]
    preds = V.as_texts(predictions, "predictions")
    flat, offsets = V.as_multi_references(references, len(preds))
    out = _text.rouge_scores(preds, flat, offsets, kinds, bool(use_stemmer), V.check_threads(num_threads))
    return {t: Scores(out[:, q, 0].copy(), out[:, q, 1].copy(), out[:, q, 2].copy()) for q, t in enumerate(types)}
