"""Edit distances of text pairs, by words (``str.split()``) or by characters (code points), from the C++ kernel:
the exact Levenshtein distance (bit-parallel; what word and character error rates count) or torchmetrics'
``EditDistance`` (sacrebleu's TER beam with a substitution cost)."""

from __future__ import annotations

import numpy as np

from .. import _validate
from .._ext import _text

MAX_SUBSTITUTION_COST = (1 << 20) - 1  # the kernel's costs then stay below torchmetrics' int(1e16)


def distances(
    a: list[str],
    b: list[str],
    words: bool,
    substitution_cost: int | None = None,
    num_threads: int | None = None,
) -> np.ndarray:
    """int64 (n, 3): [distance, tokens of a[i], tokens of b[i]] of each pair ``(a[i], b[i])`` of str, by words
    (``str.split()``) or by characters: the Levenshtein distance, or with ``substitution_cost`` (an int in
    [0, ``MAX_SUBSTITUTION_COST``]) torchmetrics' ``EditDistance`` beam over the same tokens (``a`` its
    predictions). ValueError for a text over ``_text.MAX_TEXT_CHARS`` characters, or a Levenshtein pair of
    more than 2**38 tokens multiplied once their common prefix and suffix are dropped."""
    if substitution_cost is not None and not 0 <= substitution_cost <= MAX_SUBSTITUTION_COST:
        raise ValueError(f"substitution_cost must be in [0, {MAX_SUBSTITUTION_COST}], got {substitution_cost}")
    sub = -1 if substitution_cost is None else int(substitution_cost)  # -1: the kernel's unit-cost Levenshtein
    return _text.edit_distances(a, b, words, sub, _validate.check_threads(num_threads))
