"""torchmetrics >= 1.0 (written and tested for 1.9.0): the edit-distance metrics from our kernel.

``WordErrorRate``, ``CharErrorRate``, ``MatchErrorRate``, ``WordInfoLost``, ``WordInfoPreserved``,
``EditDistance`` and ``ExtendedEditDistance`` (and their functions) fill a Python DP table per pair (a WMT17
segment on the Intel Xeon: 0.1 ms by words, 3.5 ms by characters, 5-7 ms for ``EditDistance`` and EED). Each
gathers its states in one module-level function (``_wer_update``, ``_cer_update``, ``_mer_update``,
``_word_info_lost_update``, ``_wip_update``, ``_edit_distance_update``, ``_eed_update``), whose code the patch
swaps (see ``_table``); torchmetrics' own ``compute``, ``forward``, ``merge_state`` and sync run unchanged on
the states returned.

The same states, bit for bit:

- the error rates: the exact Levenshtein distance (``_edit_distance``), by ``str.split()`` words or by
  ``list(text)`` characters; torchmetrics adds each pair's counts to a float32 (WIL, WIP: default dtype) tensor
  one pair at a time, reproduced in NumPy (``np.cumsum`` adds in order), so the sums are the original's past
  2**24 too;
- ``EditDistance``: torchmetrics runs sacrebleu's TER beam (``_LevenshteinEditDistance``), which can count more
  than the exact distance where the best path leaves the beam; the kernel runs the same beam;
- ``ExtendedEditDistance``: EED.py's DP in the kernel (additions and comparisons only, in its order: the same
  doubles), the score from its last cell with EED.py's own Python expression.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import numpy as np

from ._dispatch import Fallback
from ._torchmetrics_text import _parameters_differ, _threads

if TYPE_CHECKING:
    from ._apply import Site


def rate_parameters(func: types.FunctionType) -> str | None:
    """Why not to patch an error rate's update: parameters other than ``(preds, target)``."""
    return _parameters_differ(func, ["preds", "target"])


def edit_parameters(func: types.FunctionType) -> str | None:
    """Why not to patch ``_edit_distance_update``: parameters other than those the fast path was written for."""
    return _parameters_differ(func, ["preds", "target", "substitution_cost"])


def _texts(name: str, x: Any) -> list[str]:
    """A str as one text, else a list or tuple of exactly str (a subclass may split its own way, which
    torchmetrics would follow), each short enough for the kernel."""
    from turbometrics._ext import _text

    if type(x) is str:
        x = [x]
    if not isinstance(x, (list, tuple)) or not all(type(t) is str for t in x):
        raise Fallback(f"{name}: not a str or a list or tuple of str")
    if any(len(t) > _text.MAX_TEXT_CHARS for t in x):
        raise Fallback(f"{name}: a text of more than {_text.MAX_TEXT_CHARS:,} characters")
    return list(x)


def _pairs(preds: Any, target: Any) -> tuple[list[str], list[str]]:
    """The (prediction, reference) pairs torchmetrics' ``zip`` makes."""
    hyps, refs = _texts("preds", preds), _texts("target", target)
    n = min(len(hyps), len(refs))
    return hyps[:n], refs[:n]


def _sums(columns: list[np.ndarray], dtype: Any) -> list:
    """Each column's sum as torchmetrics makes it, ``tensor(0) += value`` a pair at a time in ``dtype``, as
    tensors of that dtype on torch's default device."""
    import torch

    np_dt = np.float32 if dtype is torch.float32 else np.float64
    integers = 1 << (24 if np_dt is np.float32 else 53)  # every integer below it is exact in np_dt
    out = []
    for c in columns:
        total = int(c.sum())
        if total >= integers:  # rounded on the way: each value cast, then added in order, as torch does
            total = np.cumsum(c.astype(np_dt), dtype=np_dt)[-1]
        out.append(torch.tensor(float(total), dtype=dtype))
    return out


def _rates(preds: Any, target: Any, words: bool, total: str, dtype: Any) -> list:
    """The summed states: [errors, the reference lengths] for ``total="target"``, [errors, the longer of each
    pair] for ``"max"``, [errors, reference lengths, prediction lengths, the longer of each pair] for
    ``"info"``."""
    from turbometrics.text import edit_distance

    hyps, refs = _pairs(preds, target)
    d = edit_distance.distances(hyps, refs, words, num_threads=_threads())
    errors, hyp_len, ref_len = d.T
    if total == "target":
        return _sums([errors, ref_len], dtype)
    longer = np.maximum(ref_len, hyp_len)
    if total == "max":
        return _sums([errors, longer], dtype)
    return _sums([errors, ref_len, hyp_len, longer], dtype)


def wer_update(site: Site, preds: Any, target: Any) -> tuple:
    """``_wer_update``: (edits, reference words), float32."""
    import torch

    return tuple(_rates(preds, target, True, "target", torch.float32))


def cer_update(site: Site, preds: Any, target: Any) -> tuple:
    """``_cer_update``: (edits, reference characters), float32."""
    import torch

    return tuple(_rates(preds, target, False, "target", torch.float32))


def mer_update(site: Site, preds: Any, target: Any) -> tuple:
    """``_mer_update``: (edits, the longer of each pair in words), float32."""
    import torch

    return tuple(_rates(preds, target, True, "max", torch.float32))


def info_update(site: Site, preds: Any, target: Any) -> tuple:
    """``_word_info_lost_update`` and ``_wip_update``: (edits - longer, reference words, prediction words) in
    torch's default dtype (its ``tensor(0.0)``)."""
    import torch

    dtype = torch.get_default_dtype()
    if dtype not in (torch.float32, torch.float64):
        raise Fallback("torch's default dtype: not float32 or float64")
    errors, target_total, preds_total, total = _rates(preds, target, True, "info", dtype)
    return errors - total, target_total, preds_total


def edit_update(site: Site, preds: Any, target: Any, substitution_cost: Any) -> Any:
    """``_edit_distance_update``: int32 distances, torchmetrics' beam with ``substitution_cost``."""
    import torch

    from turbometrics.text import edit_distance

    if not isinstance(substitution_cost, int) or not 0 <= substitution_cost <= edit_distance.MAX_SUBSTITUTION_COST:
        raise Fallback(f"substitution_cost: not an int in [0, {edit_distance.MAX_SUBSTITUTION_COST}]")
    hyps, refs = _texts("preds", preds), _texts("target", target)
    if len(hyps) != len(refs):
        raise Fallback("preds, target: of different lengths")  # (the original's ValueError)
    d = edit_distance.distances(hyps, refs, False, substitution_cost, num_threads=_threads())
    return torch.tensor(d[:, 0].tolist(), dtype=torch.int)


_EED_PARAMS = ["preds", "target", "language", "alpha", "rho", "deletion", "insertion", "sentence_eed"]


def eed_parameters(func: types.FunctionType) -> str | None:
    """Why not to patch ``_eed_update``: parameters other than those the fast path was written for."""
    return _parameters_differ(func, _EED_PARAMS)


def eed_update(
    site: Site,
    preds: Any,
    target: Any,
    language: Any,
    alpha: Any,
    rho: Any,
    deletion: Any,
    insertion: Any,
    sentence_eed: Any,
) -> Any:
    """``_eed_update``: torchmetrics' own preprocessing and checks, the DP of each (hypothesis, reference) pair
    from the kernel, then its score, best reference and ``tensor`` in Python, as ``_eed_function`` makes them."""
    import math

    import torch

    from turbometrics._ext import _text

    if not all(type(x) in (int, float) and math.isfinite(x) and x >= 0 for x in (alpha, rho, deletion, insertion)):
        raise Fallback("alpha, rho, deletion, insertion: not finite non-negative numbers")
    if sentence_eed is not None and type(sentence_eed) is not list:
        raise Fallback("sentence_eed: not a list")
    preds, target = site.original.__globals__["_preprocess_sentences"](preds, target, language)  # its own errors
    if sentence_eed is None:
        sentence_eed = []
    if 0 in (len(preds), len(target[0])):
        return sentence_eed
    pairs = [(h, r) for h, refs in zip(preds, target) for r in refs]
    if any(type(t) is not str or len(t) > _text.MAX_TEXT_CHARS for p in pairs for t in p):
        raise Fallback("preds, target: not str, or a text over the kernel's limit")
    pair_h, pair_r = [h for h, _ in pairs], [r for _, r in pairs]
    last, visits = _text.eed_rows(pair_h, pair_r, float(alpha), float(deletion), float(insertion), _threads())
    k = 0
    for _, refs in zip(preds, target):
        best = math.inf
        for r in refs:  # _eed_function's score, then _compute_sentence_statistics' first lowest
            coverage = rho * int(visits[k])
            score = min(1, (float(last[k]) + coverage) / (float(len(r)) + coverage))
            k += 1
            if score < best:
                best = score
        sentence_eed.append(torch.tensor(best))
    return sentence_eed
