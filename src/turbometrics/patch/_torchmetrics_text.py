"""torchmetrics >= 1.0 (written and tested for 1.9.0): BLEU, chrF, TER and ROUGE statistics from our kernels.

torchmetrics counts n-grams, edits and LCS tables in Python, BLEU and chrF with a tensor operation per
n-gram (a WMT17 segment with one reference: BLEU about 0.5 ms, TER 3 ms, chrF 11 ms). Each metric family gathers its
statistics in one module-level function (``_bleu_score_update``, ``_chrf_score_update``, ``_ter_update``,
``_rouge_score_update``), which the classes' ``update`` and the functions call; the patch swaps those
functions' code (see ``_table``), so torchmetrics' own ``compute``, ``forward``, ``merge_state`` and sync run
unchanged on the states left.

The same states, bit for bit:

- chrF: torchmetrics picks each segment's reference by its float32 F-score (the first with the highest,
  none if all score 0) and adds each segment's counts to float32 states one segment at a time; both are
  reproduced in NumPy float32 (``np.cumsum`` adds in order), so the states are the original's past 2**24 too.
- TER: torchmetrics' own tokens; our edit counts with its roles (it shifts the reference); its float32 sums.
- ROUGE: rouge-score's per-pair numbers (torchmetrics' with its default normalizer and tokenizer) rounded to
  float32; its best reference (``torch.argmax``) or torch's own ``mean``.
- BLEU: the n-gram counts (clipped against the references' union) and lengths (torchmetrics' closest
  reference: the first in its list on a tie) are summed exactly and added once a call. While a state stays
  below 2**24 (16.7 million n-grams of an order) that is the original's value; past it, torchmetrics' own
  float32 additions of one n-gram at a time stall (2**24 + 1 rounds back to 2**24), ours do not.

Segments whose tokens our sacrebleu-style tokenizers could make differently (torchmetrics lowercases after
tokenizing and does not strip trailing whitespace first: see ``_differs``) are tokenized by torchmetrics' own
tokenizer, and the kernel counts those tokens.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from ._dispatch import Fallback
from ._swap import original_copy

if TYPE_CHECKING:
    from ._apply import Site

_BLEU_PARAMS = ["preds", "target", "numerator", "denominator", "preds_len", "target_len", "n_gram", "tokenizer"]
_CHRF_PARAMS = [
    "preds",
    "target",
    "total_preds_char_n_grams",
    "total_preds_word_n_grams",
    "total_target_char_n_grams",
    "total_target_word_n_grams",
    "total_matching_char_n_grams",
    "total_matching_word_n_grams",
    "n_char_order",
    "n_word_order",
    "n_order",
    "beta",
    "lowercase",
    "whitespace",
    "sentence_chrf_score",
]
_TER_PARAMS = ["preds", "target", "tokenizer", "total_num_edits", "total_tgt_length", "sentence_ter"]
_ROUGE_PARAMS = ["preds", "target", "rouge_keys_values", "accumulate", "stemmer", "normalizer", "tokenizer"]


def _parameters_differ(func: types.FunctionType, wanted: list[str]) -> str | None:
    names = list(inspect.signature(original_copy(func), follow_wrapped=False).parameters)
    return None if names == wanted else f"torchmetrics' {func.__name__} takes {names}, not {wanted}"


def bleu_parameters(func: types.FunctionType) -> str | None:
    """Why not to patch ``_bleu_score_update``: parameters other than those the fast path was written for."""
    return _parameters_differ(func, _BLEU_PARAMS)


def chrf_parameters(func: types.FunctionType) -> str | None:
    """Why not to patch ``_chrf_score_update``: parameters other than those the fast path was written for."""
    return _parameters_differ(func, _CHRF_PARAMS)


# --- inputs ------------------------------------------------------------------------------------------------


def _texts(preds: Any) -> list[str]:
    # exactly str: a subclass may split or lower its own way, which torchmetrics would follow
    if not isinstance(preds, (list, tuple)) or not all(type(p) is str for p in preds):
        raise Fallback("preds: not a list or tuple of str")  # (a str is iterated by character there)
    return list(preds)


def _reference_lists(target: Any) -> list[list[str]]:
    if not isinstance(target, (list, tuple)):
        raise Fallback("target: not a list or tuple")
    refs = []
    for t in target:
        if not isinstance(t, (list, tuple)) or not all(type(r) is str for r in t):
            raise Fallback("target: not lists or tuples of str")
        refs.append(list(t))
    return refs


def _segments(preds: Any, target: Any, without_references: str | None) -> tuple[list[str], list[list[str]]]:
    """(hypotheses, their reference lists), cut to the shorter as torchmetrics' ``zip`` does. Fallback for a
    segment without references, with what the original does then (``without_references``), unless None."""
    hyps, refs = _texts(preds), _reference_lists(target)
    n = min(len(hyps), len(refs))
    hyps, refs = hyps[:n], refs[:n]
    if without_references is not None and any(not r for r in refs):
        raise Fallback(f"target: a segment without references (the original {without_references})")
    return hyps, refs


def _streams(refs: list[list[str]], prep: Any = None) -> list[list]:
    """The references as R streams of n (None where a segment has fewer), as the kernels take them."""
    width = max((len(r) for r in refs), default=0)
    return [[(r[k] if prep is None else prep(r[k])) if k < len(r) else None for r in refs] for k in range(width)]


def _states(tensors: list, name: str) -> Any:
    """The dtype of the state tensors (float32 or float64, no gradient) as NumPy's; else Fallback."""
    import torch

    if not all(isinstance(t, torch.Tensor) for t in tensors):
        raise Fallback(f"{name}: not tensors")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1 or dtypes.pop() not in (torch.float32, torch.float64) or any(t.requires_grad for t in tensors):
        raise Fallback(f"{name}: not float32 or float64 tensors without gradient")
    return np.float32 if tensors[0].dtype is torch.float32 else np.float64


def _check_default_device() -> None:
    """torchmetrics makes its per-segment tensors on torch's default device; on a GPU its float32 divisions by a
    Python number (TER's average length) are a multiplication by the reciprocal, which NumPy's are not."""
    import torch

    if torch.empty(()).device.type != "cpu":
        raise Fallback("torch's default device: not the CPU")


def _threads() -> int:
    from turbometrics import _validate

    return _validate.default_threads()


# --- BLEU --------------------------------------------------------------------------------------------------

_KERNEL_TOKENIZERS = ("13a", "none", "intl", "char", "zh")


def _bleu_tokenizer(site: Site, tokenizer: Any) -> tuple[str, bool]:
    """(our tokenizer's name, lowercase) for torchmetrics' tokenizer; Fallback for any other."""
    import sys

    if tokenizer is site.original.__globals__.get("_tokenize_fn"):
        return "none", False  # BLEUScore: str.split
    sacre = sys.modules.get("torchmetrics.functional.text.sacre_bleu")
    cls = getattr(sacre, "_SacreBLEUTokenizer", None)
    if cls is None:
        raise Fallback("tokenizer: not torchmetrics' own")
    if type(tokenizer) is cls:  # SacreBLEUScore's
        names = {getattr(cls, fn): name for name, fn in cls._TOKENIZE_FN.items()}
        name, lowercase = names.get(tokenizer.tokenize_fn), tokenizer.lowercase
    elif (
        isinstance(tokenizer, functools.partial)
        and tokenizer.func == cls.tokenize
        and not tokenizer.args
        and set(tokenizer.keywords) == {"tokenize", "lowercase"}
    ):  # sacre_bleu_score's
        name, lowercase = tokenizer.keywords["tokenize"], tokenizer.keywords["lowercase"]
    else:
        raise Fallback("tokenizer: not torchmetrics' own")
    if name not in _KERNEL_TOKENIZERS or type(lowercase) is not bool:
        raise Fallback(f"tokenize={name!r}, lowercase={lowercase!r}")
    return name, lowercase


def _differs(tok: str, lowercase: bool, s: str) -> bool:
    """Whether torchmetrics' tokens of ``s`` may differ from sacrebleu's (ours): it lowercases after tokenizing
    and does not ``rstrip`` first. Checked per code point: lowercasing keeps ``\\p{N}``/``\\p{P}``/``\\p{S}``;
    only U+0130 becomes two code points; U+2126, U+212A and U+212B leave zh's Chinese ranges; and U+03A3 (Σ)
    lowers by its neighbours (final ς), which the tokenizers' spaces change. 13a drops ``<skipped>`` before
    ``-\\n``, so a trailing ``-<skipped>\\n`` is one only there."""
    if lowercase and tok != "none" and "\u03a3" in s:
        return True
    if tok == "13a":
        return "-\n" in s.replace("<skipped>", "") or (lowercase and ("&" in s or "<" in s))
    if tok == "intl":
        return s[-1:].isspace() or (lowercase and "\u0130" in s)
    if tok == "char":
        return lowercase and "\u0130" in s
    if tok == "zh":
        return lowercase and ("\u2126" in s or "\u212a" in s or "\u212b" in s)
    return False


def _bleu_rows(hyps: list, refs: list, tok: str, lowercase: bool, order: int) -> np.ndarray:
    from turbometrics._ext import _text
    from turbometrics.text.tokenizers import TOKENIZERS

    if not hyps:
        return np.zeros((0, 2 + 2 * order), np.int64)
    return _text.bleu_stats(hyps, _streams(refs), TOKENIZERS[tok], order, lowercase, _threads())


def _token_counts(texts: list, tok: str, lowercase: bool) -> np.ndarray:
    from turbometrics._ext import _text
    from turbometrics.text.tokenizers import TOKENIZERS

    joined = _text.tokenize_many(texts, TOKENIZERS[tok], lowercase, _threads())
    return np.fromiter((j.count(" ") + 1 if j else 0 for j in joined), np.int64, len(joined))


def bleu_update(
    site: Site,
    preds: Any,
    target: Any,
    numerator: Any,
    denominator: Any,
    preds_len: Any,
    target_len: Any,
    n_gram: Any,
    tokenizer: Any,
) -> tuple:
    """``_bleu_score_update``: the states added to in place, as the original does; returns (preds_len, target_len)."""
    import torch

    from turbometrics._ext import _text
    from turbometrics.text.tokenizers import intl_tables_current

    tok, lowercase = _bleu_tokenizer(site, tokenizer)
    if type(n_gram) is not int or not 1 <= n_gram <= _text.MAX_ORDER:
        raise Fallback(f"n_gram={n_gram!r}")
    _states([numerator, denominator, preds_len, target_len], "numerator, denominator, preds_len, target_len")
    if numerator.shape != (n_gram,) or denominator.shape != (n_gram,) or preds_len.dim() or target_len.dim():
        raise Fallback("numerator, denominator, preds_len, target_len: not the shapes BLEUScore makes")
    hyps, refs = _segments(preds, target, "fails on it")
    n = len(hyps)
    if tok == "intl" and not intl_tables_current():  # another regex may class a character otherwise: its tokens
        other = list(range(n))
    else:
        other = [
            i
            for i in range(n)
            if _differs(tok, lowercase, hyps[i]) or any(_differs(tok, lowercase, r) for r in refs[i])
        ]
    # torchmetrics' own tokens of those segments (hypothesis, then references), which the kernel counts ("none")
    tokens = {i: [" ".join(tokenizer(x) if x else []) for x in (hyps[i], *refs[i])] for i in other}
    own = [i for i in range(n) if i not in tokens]
    rows = np.zeros((n, 2 + 2 * n_gram), np.int64)
    if own:
        rows[own] = _bleu_rows([hyps[i] for i in own], [refs[i] for i in own], tok, lowercase, n_gram)
    if other:
        rows[other] = _bleu_rows([tokens[i][0] for i in other], [tokens[i][1:] for i in other], "none", False, n_gram)
    ref_lens = None
    if any(len(r) > 1 for r in refs):  # the closest reference as torchmetrics picks it: the first on a tie
        counts = iter(_token_counts([x for i in own for x in refs[i]], tok, lowercase).tolist())
        lens = np.full((n, max(len(r) for r in refs)), -1, np.int64)  # (segment, reference); -1: none
        for i, r in enumerate(refs):
            lens[i, : len(r)] = [len(x.split()) for x in tokens[i][1:]] if i in tokens else [next(counts) for _ in r]
        diff = np.where(lens >= 0, np.abs(lens - rows[:, :1]), np.iinfo(np.int64).max)
        ref_lens = lens[np.arange(n), diff.argmin(axis=1)]  # argmin: the first of equals
    sums = rows.sum(axis=0)
    target_total = int(sums[1] if ref_lens is None else ref_lens.sum())
    dev = numerator.device
    with torch.no_grad():
        numerator += torch.as_tensor(sums[2 : 2 + n_gram], dtype=numerator.dtype).to(dev)
        denominator += torch.as_tensor(sums[2 + n_gram :], dtype=denominator.dtype).to(dev)
        preds_len += int(sums[0])
        target_len += target_total
    return preds_len, target_len


# --- chrF --------------------------------------------------------------------------------------------------


_EPS = float(np.float32(1e-16))  # torchmetrics' _EPS_SMOOTHING, tensor(1e-16)


def _chrf_rows(hyps: list, streams: list, nc: int, nw: int, lowercase: bool) -> list[np.ndarray]:
    """Per reference stream, the (n, 3 (nc + nw)) [hyp, ref, match] rows of each segment that has that reference
    (zeros where it has not)."""
    from turbometrics._ext import _text

    n, out = len(hyps), []
    for stream in streams:
        rows = np.zeros((n, 3 * (nc + nw)), np.int64)
        have = [i for i, s in enumerate(stream) if s is not None]
        if have:  # (beta: no choice among one reference; whitespace kept: the caller made the characters)
            rows[have] = _text.chrf_stats(
                [hyps[i] for i in have], [[stream[i] for i in have]], nc, nw, 2.0, True, False, lowercase, _threads()
            )
        out.append(rows)
    return out


def _chrf_part(hyps: list, streams: list, nc: int, nw: int, lowercase: bool) -> tuple[list, np.ndarray]:
    """One part (characters: ``nw`` = 0, or words: ``nc`` = 0) of each segment's statistics: per reference stream
    an (n, orders, 3) array of [hyp, ref, match], and the hypotheses' own counts (n, orders)."""
    n = len(hyps)
    per_ref = [rows.reshape(n, -1, 3) for rows in _chrf_rows(hyps, streams, nc, nw, lowercase)]
    # The kernel, as sacrebleu, counts none of the hypothesis' n-grams of an order its reference has none of:
    # a text's n-grams of order k are max(0, L - k + 1), L read where the reference has unigrams, the rest
    # counted against the hypothesis itself.
    units = np.full(n, -1, np.int64)
    for stats in per_ref:
        take = (units < 0) & (stats[:, 0, 1] > 0)
        units[take] = stats[take, 0, 0]
    need = np.flatnonzero(units < 0).tolist()
    if need:
        sub = [hyps[i] for i in need]
        units[need] = _chrf_rows(sub, [sub], min(nc, 1), min(nw, 1), lowercase)[0][:, 0]
    counts = np.maximum(units[:, None] - np.arange(nc + nw), 0)
    return per_ref, counts


def _f32_fscore(match: np.ndarray, hyp: np.ndarray, ref: np.ndarray, nc: int, beta: float, n_order: float, dt) -> Any:
    """torchmetrics' ``_calculate_fscore`` in ``dt`` (float32: its per-segment tensors'), operation for operation,
    over the last axis (orders: characters, then words)."""
    m, h, r = (x.astype(dt) for x in (match, hyp, ref))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(h > 0, m / h, dt(0))
        rc = np.where(r > 0, m / r, dt(0))
    b2 = dt(beta**2)
    den = np.maximum(b2 * p + rc, dt(_EPS))
    f = dt(1 + beta**2) * p * rc / den
    total = np.zeros(f.shape[:-1], dt)
    for k in range(nc):  # Python's sum: in order, from 0
        total = total + f[..., k]
    words = np.zeros(f.shape[:-1], dt)
    for k in range(nc, f.shape[-1]):
        words = words + f[..., k]
    return (total + words) / dt(n_order)


def chrf_update(
    site: Site,
    preds: Any,
    target: Any,
    total_preds_char_n_grams: Any,
    total_preds_word_n_grams: Any,
    total_target_char_n_grams: Any,
    total_target_word_n_grams: Any,
    total_matching_char_n_grams: Any,
    total_matching_word_n_grams: Any,
    n_char_order: Any,
    n_word_order: Any,
    n_order: Any,
    beta: Any,
    lowercase: Any,
    whitespace: Any,
    sentence_chrf_score: Any = None,
) -> tuple:
    """``_chrf_score_update``: the six dicts' tensors added to in place (their float32 sums one segment at a
    time, as the original's), the sentence scores appended; returns them as the original does."""
    import torch

    from turbometrics._ext import _text

    dicts = (
        total_preds_char_n_grams,
        total_preds_word_n_grams,
        total_target_char_n_grams,
        total_target_word_n_grams,
        total_matching_char_n_grams,
        total_matching_word_n_grams,
    )
    nc, nw = n_char_order, n_word_order
    if type(nc) is not int or type(nw) is not int or nc < 0 or nw < 0 or not 1 <= nc + nw <= _text.MAX_ORDER:
        raise Fallback(f"n_char_order={nc!r}, n_word_order={nw!r}")
    if type(beta) not in (int, float) or not 0 <= beta < 1e15 or type(n_order) not in (int, float):
        raise Fallback(f"beta={beta!r}, n_order={n_order!r}")
    if type(lowercase) is not bool or type(whitespace) is not bool:
        raise Fallback(f"lowercase={lowercase!r}, whitespace={whitespace!r}")
    if sentence_chrf_score is not None and type(sentence_chrf_score) is not list:
        raise Fallback("sentence_chrf_score: not a list")
    orders = (nc, nw, nc, nw, nc, nw)
    for d, k in zip(dicts, orders):
        if not isinstance(d, dict) or sorted(d) != list(range(1, k + 1)):
            raise Fallback("the n-gram dicts: not those _prepare_n_grams_dicts makes")
    states = [d[k] for d in dicts for k in sorted(d)]
    dt = _states(states, "the n-gram totals")
    if any(t.dim() for t in states):
        raise Fallback("the n-gram totals: not scalars")
    _check_default_device()
    g = site.original.__globals__
    eps = g.get("_EPS_SMOOTHING")
    if torch.get_default_dtype() is not torch.float32 or not (
        isinstance(eps, torch.Tensor) and eps.dtype is torch.float32 and eps.dim() == 0 and float(eps) == _EPS
    ):
        raise Fallback("torch's default dtype or torchmetrics' _EPS_SMOOTHING: not the float32 ones")
    target_corpus, preds = g["_validate_inputs"](target, preds)  # its own errors
    hyps, refs = _segments(preds, target_corpus, None)  # (none: its F stays 0, no reference n-grams)
    n = len(hyps)
    if not n:
        return (*dicts, sentence_chrf_score)
    chars = (lambda s: s) if whitespace else (lambda s: s.strip().replace(" ", ""))  # (torchmetrics' characters)
    parts = []  # (per reference stream (n, orders, 3) [hyp, ref, match], hyp counts (n, orders)): chars, words
    if nc:  # lowercased first, as torchmetrics: str.lower's final sigma depends on the spaces around it
        low = (lambda s: chars(s.lower())) if lowercase else chars
        parts.append(_chrf_part([low(h) for h in hyps], _streams(refs, low), nc, 0, False))
    if nw:
        parts.append(_chrf_part(hyps, _streams(refs), 0, nw, lowercase))
    per_ref = [np.concatenate(s, axis=1) for s in zip(*(p[0] for p in parts))]
    hyp_counts = np.concatenate([p[1] for p in parts], axis=1)
    order = nc + nw
    fdt = np.float32  # the per-segment tensors' dtype (torch's default, checked above)

    best_f = np.zeros(n, fdt)
    best_ref = np.zeros((n, order), np.int64)
    best_match = np.zeros((n, order), np.int64)
    for stats in per_ref:  # in reference order: a later one replaces the best only if strictly higher
        f = _f32_fscore(stats[:, :, 2], hyp_counts, stats[:, :, 1], nc, float(beta), float(n_order), fdt)
        better = f > best_f
        best_f = np.where(better, f, best_f)
        best_ref[better] = stats[better, :, 1]
        best_match[better] = stats[better, :, 2]

    values = np.concatenate(  # states (in `states`' order) as rows, then each segment's addition
        [
            hyp_counts[:, :nc].T,
            hyp_counts[:, nc:].T,
            best_ref[:, :nc].T,
            best_ref[:, nc:].T,
            best_match[:, :nc].T,
            best_match[:, nc:].T,
        ]
    ).astype(dt)
    start = torch.stack([t.detach().reshape(()) for t in states]).cpu().numpy().astype(dt)[:, None]
    ends = np.cumsum(np.concatenate([start, values], axis=1), axis=1, dtype=dt)[:, -1]
    with torch.no_grad():
        for t, v in zip(states, ends.tolist()):
            t.fill_(v)
    if sentence_chrf_score is not None:
        sentence_chrf_score.extend(torch.from_numpy(best_f).split(1))
    return (*dicts, sentence_chrf_score)


# --- TER ---------------------------------------------------------------------------------------------------


def ter_parameters(func: types.FunctionType) -> str | None:
    """Why not to patch ``_ter_update``: parameters other than those the fast path was written for."""
    return _parameters_differ(func, _TER_PARAMS)


def ter_update(
    site: Site, preds: Any, target: Any, tokenizer: Any, total_num_edits: Any, total_tgt_length: Any, sentence_ter: Any
) -> tuple:
    """``_ter_update``: torchmetrics' own tokens (its tokenizer), our edit counts, its float32 sums one segment at
    a time (reproduced in NumPy); returns the states (added to in place) and the sentence scores, as the original.

    torchmetrics shifts the *reference* towards the hypothesis (``_translation_edit_rate(tgt_words,
    pred_words)``, the reverse of sacrebleu's roles) and counts 0 edits for an empty hypothesis; the kernel
    (sacrebleu's TER) is run with the roles swapped the same way."""
    import torch

    from turbometrics._ext import _text

    g = site.original.__globals__
    if type(tokenizer) is not g.get("_TercomTokenizer"):
        raise Fallback("tokenizer: not torchmetrics' _TercomTokenizer")  # (its str out is what the kernel reads)
    dt = _states([total_num_edits, total_tgt_length], "total_num_edits, total_tgt_length")
    if total_num_edits.dim() or total_tgt_length.dim():
        raise Fallback("total_num_edits, total_tgt_length: not scalars")
    if sentence_ter is not None and type(sentence_ter) is not list:
        raise Fallback("sentence_ter: not a list")
    if torch.get_default_dtype() is not torch.float32:
        raise Fallback("torch's default dtype: not float32")
    _check_default_device()
    target_corpus, preds = g["_validate_inputs"](target, preds)  # its own errors
    hyps, refs = _segments(preds, target_corpus, "divides by zero")
    n = len(hyps)
    if not n:
        return total_num_edits, total_tgt_length, sentence_ter
    prep = g["_preprocess_sentence"]
    hyp_words = [prep(h, tokenizer) for h in hyps]
    ref_words = [[prep(r, tokenizer) for r in rs] for rs in refs]
    best = np.full(n, np.iinfo(np.int64).max, np.int64)
    for stream in _streams(ref_words):  # the reference as the kernel's hypothesis, the hypothesis as its reference
        have = [i for i, s in enumerate(stream) if s is not None]
        edits = _text.ter_stats([stream[i] for i in have], [[hyp_words[i] for i in have]], _threads())[:, 0]
        best[have] = np.minimum(best[have], edits)
    best[[i for i, h in enumerate(hyp_words) if not h.split()]] = 0  # torchmetrics: no words, no edits
    f32 = np.float32
    lengths = np.array([sum(len(r.split()) for r in rs) for rs in ref_words], f32)
    avg = lengths / np.array([len(rs) for rs in ref_words], f32)  # tensor(0.0) += len, then / references
    edits32 = best.astype(f32)
    start = torch.stack([total_num_edits.detach(), total_tgt_length.detach()]).cpu().numpy().astype(dt)[:, None]
    values = np.stack([edits32, avg]).astype(dt)
    ends = np.cumsum(np.concatenate([start, values], axis=1), axis=1, dtype=dt)[:, -1]
    if sentence_ter is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(avg > 0, edits32 / avg, f32(1)).astype(f32)
        score[best == 0] = 0  # (1 only for edits against references of no words)
        sentence_ter.extend(torch.from_numpy(score).split(1))
    with torch.no_grad():
        total_num_edits.fill_(float(ends[0]))
        total_tgt_length.fill_(float(ends[1]))
    return total_num_edits, total_tgt_length, sentence_ter


# --- ROUGE -------------------------------------------------------------------------------------------------

_SCORES = ("precision", "recall", "fmeasure")  # the order of torchmetrics' dicts


def torchmetrics_version() -> tuple[int, ...]:
    """The installed torchmetrics' version's leading numbers (``1.9.0`` -> ``(1, 9, 0)``)."""
    import importlib.metadata
    import re

    return tuple(int(x) for x in re.findall(r"\d+", importlib.metadata.version("torchmetrics").split("+")[0])[:3])


def rouge_parameters(func: types.FunctionType) -> str | None:
    """Why not to patch ``_rouge_score_update``: parameters other than those the fast path was written for, or a
    torchmetrics before 1.6, which takes every key's scores from the reference best by the first key's F
    (1.6 picks the best reference per key; tested: 1.0.3 to 1.5.2 differ, 1.6.0 to 1.9.0 agree)."""
    if torchmetrics_version() < (1, 6):
        return "torchmetrics before 1.6 picks ROUGE's best reference by its first key alone"
    return _parameters_differ(func, _ROUGE_PARAMS)


def _rouge_types(keys: Any) -> list[str]:
    if not isinstance(keys, list) or not keys:
        raise Fallback(f"rouge_keys_values={keys!r}")
    out = []
    for k in keys:
        if (type(k) is int and 1 <= k <= 9) or (type(k) is str and k in ("L", "Lsum")):
            out.append(f"rouge{k}")
        else:
            raise Fallback(f"rouge_keys_values={keys!r}")
    return out


def rouge_update(
    site: Site,
    preds: Any,
    target: Any,
    rouge_keys_values: Any,
    accumulate: Any,
    stemmer: Any = None,
    normalizer: Any = None,
    tokenizer: Any = None,
) -> dict:
    """``_rouge_score_update``: each (prediction, reference) pair's precision, recall and F from our kernel
    (rouge-score's numbers, which are torchmetrics' for its default normalizer and tokenizer: the same
    ``[a-z0-9]`` runs, Porter stems past 3 characters, ROUGE-Lsum on ``nltk.sent_tokenize``'s sentences with the
    same union LCS), rounded to float32 as ``tensor(x)`` does; the best reference by ``torch.argmax`` of the
    float32 F (the first of equals) or the float32 ``mean`` torchmetrics takes."""
    import torch

    from turbometrics import metrics

    from . import _sacrebleu

    if normalizer is not None or tokenizer is not None:
        raise Fallback("normalizer or tokenizer: the caller's own")
    if torch.get_default_dtype() is not torch.float32:
        raise Fallback("torch's default dtype: not float32")  # (its tensor(x) of each score)
    _check_default_device()
    if stemmer is None:
        stem = False
    else:
        from nltk.stem import porter

        if type(stemmer) is not porter.PorterStemmer or stemmer.mode != porter.PorterStemmer.NLTK_EXTENSIONS:
            raise Fallback(f"stemmer: {stemmer!r}")
        stem = True
    if accumulate not in ("best", "avg"):
        raise Fallback(f"accumulate={accumulate!r}")
    keys = rouge_keys_values
    types_ = _rouge_types(keys)
    if len(set(keys)) != len(keys):  # torchmetrics interleaves (and averages) a repeated key's copies
        raise Fallback(f"rouge_keys_values={keys!r}: a key twice")
    g = site.original.__globals__
    here = site.original.__code__.co_filename
    for name in ("_split_sentence", "_normalize_and_tokenize_text", "_rouge_lsum_score"):
        if getattr(getattr(g.get(name), "__code__", None), "co_filename", None) != here:
            raise Fallback(f"torchmetrics' {name}: replaced")
    if "Lsum" in keys:
        import nltk

        if nltk.sent_tokenize is not nltk.tokenize.sent_tokenize:
            raise Fallback("nltk.sent_tokenize: replaced")
    hyps, refs = _segments(preds, target, "fails on it or skips it")
    n = len(hyps)
    results: dict = {k: [] for k in keys}
    if not n:
        return results
    lsum = "Lsum" in keys
    if lsum:
        from turbometrics.text.sentences import unlike_installed_nltk

        why = unlike_installed_nltk()
        if why:
            raise Fallback(why)
        g["_ensure_nltk_punkt_is_downloaded"]()  # its own errors (or download)
    sizes = np.array([len(r) for r in refs])
    flat_hyps = [h for h, k in zip(hyps, sizes.tolist()) for _ in range(k)]
    flat_refs = [r for rs in refs for r in rs]
    try:  # (one ROUGE object kept per options, as the sacrebleu patch keeps its metrics)
        rows = _sacrebleu._rows(metrics.ROUGE, (tuple(types_), stem, lsum), flat_hyps, flat_refs)
    except ImportError as e:  # no sentence splitter for ROUGE-Lsum (the lsum extra)
        raise Fallback(str(e)) from None
    vals = rows.reshape(len(flat_refs), len(keys), 3).astype(np.float32)  # tensor(float): float32's rounding
    starts = np.cumsum(sizes) - sizes
    for q, k in enumerate(keys):
        out = results[k]
        v = vals[:, q]
        if accumulate == "best" or (sizes == 1).all():
            if (sizes == 1).all():
                pick = v
            else:  # torch.argmax of the float32 F: the first of equals (no NaN here)
                f = v[:, 2]
                pick = v[[a + int(np.argmax(f[a : a + s])) for a, s in zip(starts.tolist(), sizes.tolist())]]
            cols = [torch.from_numpy(np.ascontiguousarray(pick[:, j])).unbind(0) for j in range(3)]
            out.extend({s: c[i] for s, c in zip(_SCORES, cols)} for i in range(n))
        else:  # torch's float32 mean over each segment's references, as torchmetrics takes it
            t = torch.from_numpy(v)
            for a, s in zip(starts.tolist(), sizes.tolist()):
                out.append({name: t[a : a + s, j].contiguous().mean() for j, name in enumerate(_SCORES)})
    return results
