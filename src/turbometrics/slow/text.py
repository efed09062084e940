"""Plain-Python tokenizers and BLEU (sacrebleu's semantics), the baseline for the text kernels."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

_13A = [
    (re.compile(r"([{-~\[-` -&(-+:-@/])"), r" \1 "),  # punctuation and symbols, padded
    (re.compile(r"([^0-9])([.,])"), r"\1 \2 "),  # . or , after a non-digit
    (re.compile(r"([.,])([^0-9])"), r" \1 \2"),  # . or , before a non-digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # - after a digit
]


def tokenize(text: str, tokenizer: str = "13a") -> list[str]:
    """sacrebleu's "13a", "char" and "none" tokenizers (others are not written here: ValueError)."""
    if tokenizer not in ("13a", "char", "none"):
        raise ValueError(f"the slow baseline has no {tokenizer!r} tokenizer (only '13a', 'char' and 'none')")
    line = text.rstrip()
    if tokenizer == "13a":
        line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
        if "&" in line:
            for entity, char in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
                line = line.replace(entity, char)
        line = f" {line} "
        for pattern, repl in _13A:
            line = pattern.sub(repl, line)
    elif tokenizer == "char":
        line = " ".join(line)
    return line.split()


def _ngrams(tokens: list[str], max_order: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for n in range(1, max_order + 1) for i in range(len(tokens) - n + 1))


def _segment_stats(hyp: str, refs: list[str], tokenizer: str, lowercase: bool, max_order: int) -> list[int]:
    prep = lambda s: tokenize(s.lower() if lowercase else s, tokenizer)
    h = prep(hyp)
    ref_max: Counter = Counter()
    ref_lens = []
    for r in refs:
        toks = prep(r)
        ref_lens.append(len(toks))
        for g, c in _ngrams(toks, max_order).items():
            ref_max[g] = max(ref_max[g], c)
    ref_len = min(ref_lens, key=lambda L: (abs(L - len(h)), L))  # closest, then shorter
    correct, total = [0] * max_order, [0] * max_order
    for g, c in _ngrams(h, max_order).items():
        total[len(g) - 1] += c
        correct[len(g) - 1] += min(c, ref_max[g])
    return [len(h), ref_len] + correct + total


def _score(stats: list[int], max_order: int, smooth_method: str, smooth_value, effective_order: bool):
    sys_len, ref_len = stats[0], stats[1]
    correct, total = list(stats[2 : 2 + max_order]), list(stats[2 + max_order :])
    bp = 1.0 if sys_len >= ref_len else (math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0)
    prec = [0.0] * max_order
    out = SimpleNamespace(
        counts=correct, totals=total, precisions=prec, bp=bp, sys_len=sys_len, ref_len=ref_len, score=0.0
    )
    if not any(correct):
        return out
    if smooth_value is None:
        smooth_value = {"floor": 0.1, "add-k": 1}.get(smooth_method)
    doubling, eff = 1.0, max_order
    for n in range(max_order):
        if smooth_method == "add-k" and n > 0:
            correct[n] += smooth_value
            total[n] += smooth_value
        if total[n] == 0:
            break
        if effective_order:
            eff = n + 1
        if correct[n]:
            prec[n] = 100.0 * correct[n] / total[n]
        elif smooth_method == "exp":
            doubling *= 2
            prec[n] = 100.0 / (doubling * total[n])
        elif smooth_method == "floor":
            prec[n] = 100.0 * smooth_value / total[n]
    logs = [math.log(p) if p else -9999999999 for p in prec[:eff]]
    out.score = bp * math.exp(sum(logs) / eff)
    return out


def _segments(hypotheses, references):
    """(hypothesis, [its references]) per segment, in sacrebleu's stream layout; every segment needs one."""
    if isinstance(hypotheses, str) or any(isinstance(s, str) for s in references) or not references:
        raise TypeError("hypotheses: a list of str; references: a list of streams")
    out = []
    for h, *refs in zip(hypotheses, *references, strict=True):
        refs = [r for r in refs if r is not None]
        if not refs or not all(isinstance(x, str) for x in [h] + refs):
            raise ValueError("every segment needs a str hypothesis and at least one str reference")
        out.append((h, refs))
    return out


def corpus_bleu(
    hypotheses,
    references,
    tokenize="13a",
    lowercase=False,
    smooth_method="exp",
    smooth_value=None,
    max_ngram_order=4,
    effective_order=False,
):
    stats = [
        _segment_stats(h, refs, tokenize, lowercase, max_ngram_order) for h, refs in _segments(hypotheses, references)
    ]
    summed = [sum(col) for col in zip(*stats)]
    return _score(summed, max_ngram_order, smooth_method, smooth_value, effective_order)


def segment_bleu(
    hypotheses,
    references,
    tokenize="13a",
    lowercase=False,
    smooth_method="exp",
    smooth_value=None,
    max_ngram_order=4,
    effective_order=True,
):
    return [
        _score(
            _segment_stats(h, refs, tokenize, lowercase, max_ngram_order),
            max_ngram_order,
            smooth_method,
            smooth_value,
            effective_order,
        ).score
        for h, refs in _segments(hypotheses, references)
    ]


# ---------------------------------------------------------------- chrF

_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _chrf_words(line: str) -> list[str]:
    out = []
    for w in line.split():
        if len(w) > 1 and w[-1] in _PUNCT:
            out += [w[:-1], w[-1]]
        elif len(w) > 1 and w[0] in _PUNCT:
            out += [w[0], w[1:]]
        else:
            out.append(w)
    return out


def _chrf_counters(line: str, nc: int, nw: int, whitespace: bool) -> list[Counter]:
    chars = line if whitespace else "".join(line.split())
    words = _chrf_words(line)
    return [Counter(chars[i : i + n] for i in range(len(chars) - n + 1)) for n in range(1, nc + 1)] + [
        Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1)) for n in range(1, nw + 1)
    ]


def _chrf_f(stats: list[int], beta: float, eps_smoothing: bool) -> float:
    factor, eps = beta**2, 1e-16
    order = len(stats) // 3
    score = avg_p = avg_r = 0.0
    eff = 0
    for i in range(order):
        n_hyp, n_ref, n_match = stats[3 * i : 3 * i + 3]
        p = n_match / n_hyp if n_hyp > 0 else eps
        r = n_match / n_ref if n_ref > 0 else eps
        denom = factor * p + r
        score += (1 + factor) * p * r / denom if denom > 0 else eps
        if n_hyp > 0 and n_ref > 0:
            avg_p, avg_r, eff = avg_p + p, avg_r + r, eff + 1
    if eps_smoothing:
        return 100 * score / order
    if eff:
        avg_p, avg_r = avg_p / eff, avg_r / eff
    else:
        avg_p = avg_r = 0.0
    if avg_p + avg_r:
        f = (1 + factor) * avg_p * avg_r
        return 100 * (f / ((factor * avg_p) + avg_r))
    return 0.0


def _chrf_segment(hyp, refs, nc, nw, beta, lowercase, whitespace, eps_smoothing):
    prep = lambda s: s.lower() if lowercase else s
    h = _chrf_counters(prep(hyp), nc, nw, whitespace)
    best, best_f = None, -1.0
    for ref in refs:
        r = _chrf_counters(prep(ref), nc, nw, whitespace)
        stats = []
        for hc, rc in zip(h, r):
            stats += [sum(hc.values()) if rc else 0, sum(rc.values()), sum(min(c, rc[g]) for g, c in hc.items())]
        f = _chrf_f(stats, beta, eps_smoothing)
        if f > best_f:
            best, best_f = stats, f
    return best


def corpus_chrf(
    hypotheses, references, char_order=6, word_order=0, beta=2, lowercase=False, whitespace=False, eps_smoothing=False
):
    stats = [
        _chrf_segment(h, refs, char_order, word_order, beta, lowercase, whitespace, eps_smoothing)
        for h, refs in _segments(hypotheses, references)
    ]
    return _chrf_f([sum(col) for col in zip(*stats)], beta, eps_smoothing)


def _one_segment(hypothesis, references):
    if not isinstance(hypothesis, str) or isinstance(references, str):
        raise TypeError("hypothesis: a str; references: a list of str")
    return [hypothesis], [[r] for r in references]


def sentence_bleu(
    hypothesis,
    references,
    tokenize="13a",
    lowercase=False,
    smooth_method="exp",
    smooth_value=None,
    max_ngram_order=4,
    effective_order=True,
):
    return segment_bleu(
        *_one_segment(hypothesis, references),
        tokenize,
        lowercase,
        smooth_method,
        smooth_value,
        max_ngram_order,
        effective_order,
    )[0]


def sentence_chrf(
    hypothesis, references, char_order=6, word_order=0, beta=2, lowercase=False, whitespace=False, eps_smoothing=False
):
    return segment_chrf(
        *_one_segment(hypothesis, references), char_order, word_order, beta, lowercase, whitespace, eps_smoothing
    )[0]


def segment_chrf(
    hypotheses, references, char_order=6, word_order=0, beta=2, lowercase=False, whitespace=False, eps_smoothing=False
):
    return [
        _chrf_f(
            _chrf_segment(h, refs, char_order, word_order, beta, lowercase, whitespace, eps_smoothing),
            beta,
            eps_smoothing,
        )
        for h, refs in _segments(hypotheses, references)
    ]


# ---------------------------------------------------------------- ROUGE


class Scores(NamedTuple):
    precision: np.ndarray
    recall: np.ndarray
    fmeasure: np.ndarray


def _rouge_tokens(text: str, stem: bool) -> list[str]:
    toks = re.findall(r"[a-z0-9]+", text.lower())
    if not stem:
        return toks
    stem_word = _porter()
    return [stem_word(t) if len(t) > 3 else t for t in toks]


@functools.lru_cache(maxsize=1)
def _porter():
    from nltk.stem.porter import PorterStemmer  # rouge-score's stemmer (nltk is a test extra), not ours

    return functools.lru_cache(maxsize=None)(PorterStemmer().stem)


def _lcs_table(a: list, b: list) -> list[list[int]]:
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = t[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1][j], t[i][j - 1])
    return t


def _lcs_positions(a: list, b: list) -> set[int]:
    """Positions in a of the LCS that rouge-score's backtrack picks."""
    t, i, j, out = _lcs_table(a, b), len(a), len(b), set()
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1]:
            out.add(i - 1)
            i, j = i - 1, j - 1
        elif t[i][j - 1] > t[i - 1][j]:
            j -= 1
        else:
            i -= 1
    return out


def _prf(hits: int, n_pred: int, n_ref: int) -> tuple[float, float, float]:
    p, r = hits / n_pred, hits / n_ref
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def _rouge_pair(pred: str, ref: str, rtype: str, stem: bool) -> tuple[float, float, float]:
    if rtype == "rougeLsum":
        ps = [_rouge_tokens(s, stem) for s in pred.split("\n") if s]
        rs = [_rouge_tokens(s, stem) for s in ref.split("\n") if s]
        n, m = sum(map(len, ps)), sum(map(len, rs))
        if not n or not m:
            return 0.0, 0.0, 0.0
        cnt_p, cnt_r = Counter(t for s in ps for t in s), Counter(t for s in rs for t in s)
        hits = 0
        for r in rs:
            for i in sorted(set().union(*(_lcs_positions(r, c) for c in ps))):
                if cnt_p[r[i]] > 0 and cnt_r[r[i]] > 0:
                    hits, cnt_p[r[i]], cnt_r[r[i]] = hits + 1, cnt_p[r[i]] - 1, cnt_r[r[i]] - 1
        return _prf(hits, n, m)
    p, r = _rouge_tokens(pred, stem), _rouge_tokens(ref, stem)
    if rtype == "rougeL":
        return _prf(_lcs_table(r, p)[-1][-1], len(p), len(r)) if p and r else (0.0, 0.0, 0.0)
    k = int(rtype[5:])
    gp = Counter(tuple(p[i : i + k]) for i in range(len(p) - k + 1))
    gr = Counter(tuple(r[i : i + k]) for i in range(len(r) - k + 1))
    overlap = sum(min(c, gp[g]) for g, c in gr.items())
    return _prf(overlap, max(sum(gp.values()), 1), max(sum(gr.values()), 1))


def lcs_length(a, b):
    """LCS length of each pair (a[i], b[i]) of sequences."""
    return [_lcs_table(list(x), list(y))[-1][-1] for x, y in zip(a, b, strict=True)]


def rouge(predictions, references, rouge_types=("rouge1", "rouge2", "rougeL", "rougeLsum"), use_stemmer=False):
    if isinstance(predictions, str) or any(not isinstance(r, str) and not r for r in references):
        raise ValueError("predictions: a list of str; every prediction needs a reference")
    out = {}
    for t in rouge_types:
        rows = []
        for pred, refs in zip(predictions, references, strict=True):
            scores = [_rouge_pair(pred, r, t, use_stemmer) for r in ([refs] if isinstance(refs, str) else refs)]
            rows.append(max(scores, key=lambda s: s[2]))  # the first of the highest F
        arr = np.array(rows, dtype=np.float64).reshape(-1, 3)
        out[t] = Scores(arr[:, 0], arr[:, 1], arr[:, 2])
    return out


# ---------------------------------------------------------------- TER (sacrebleu's Tercom-like search)


def _beam_distance(h, r):
    """(edit distance, alignment ref pos -> hyp pos, hyp error flags, ref error flags) by the beam DP."""
    nh, nr, inf = len(h), len(r), 10**16
    ratio = nr / nh if nh else 1
    beam = math.ceil(ratio / 2 + 25) if 25 < ratio / 2 else 25
    rows = [[(j, "i") for j in range(nr + 1)]]
    for i in range(1, nh + 1):
        row = [(inf, "x")] * (nr + 1)
        diag = math.floor(i * ratio)
        hi = nr + 1 if i == nh else min(nr + 1, diag + beam)
        for j in range(max(0, diag - beam), hi):
            if j == 0:
                row[0] = (rows[-1][0][0] + 1, "d")
                continue
            same = h[i - 1] == r[j - 1]
            for cost, op in (
                (rows[-1][j - 1][0] + (0 if same else 1), " " if same else "s"),
                (rows[-1][j][0] + 1, "d"),
                (row[j - 1][0] + 1, "i"),
            ):
                if row[j][0] > cost:
                    row[j] = (cost, op)
        rows.append(row)
    ops, i, j = [], nh, nr
    while i > 0 or j > 0:
        op = rows[i][j][1]
        ops.append(op)
        i, j = (i - 1, j - 1) if op in " s" else (i, j - 1) if op == "i" else (i - 1, j)
    align, hyp_err, ref_err, ph, pr = {}, [], [], -1, -1
    for op in reversed(ops):  # read as rewriting the reference into the hypothesis: i and d swap
        if op in " s":
            ph, pr = ph + 1, pr + 1
            align[pr] = ph
            hyp_err.append(op == "s")
            ref_err.append(op == "s")
        elif op == "d":
            ph += 1
            hyp_err.append(True)
        else:
            pr += 1
            align[pr] = ph
            ref_err.append(True)
    return rows[nh][nr][0], align, hyp_err, ref_err


def _shifted(words, start, length, target):
    block = words[start : start + length]
    rest = words[:start] + words[start + length :]
    at = target if target < start else target - length if target > start + length else target
    return rest[:at] + block + rest[at:]


def _ter_edits(h, r):
    """sacrebleu's translation_edit_rate: greedy shifts while they reduce the distance, then the distance."""
    if not r:
        return len(h)
    shifts, checked = 0, 0
    while True:
        base, align, hyp_err, ref_err = _beam_distance(h, r)
        best = None
        for sh in range(len(h)):
            for sr in range(len(r)):
                if abs(sr - sh) > 50:
                    continue
                n = 0
                while n < 10 and sh + n < len(h) and sr + n < len(r) and h[sh + n] == r[sr + n]:
                    n += 1
                    if any(hyp_err[sh : sh + n]) and any(ref_err[sr : sr + n]) and not sh <= align[sr] < sh + n:
                        prev = -1
                        for off in range(-1, n):
                            idx = 0 if sr + off == -1 else align[sr + off] + 1
                            if idx != prev:
                                prev = idx
                                cand = _shifted(h, sh, n, idx)
                                key = (base - _beam_distance(cand, r)[0], n, -sh, -idx)
                                checked += 1
                                if best is None or key > best[0]:
                                    best = (key, cand)
                        if checked >= 1000:
                            break
                if checked >= 1000:
                    break
            if checked >= 1000:
                break
        if checked >= 1000 or best is None or best[0][0] <= 0:
            return shifts + _beam_distance(h, r)[0]
        shifts, h = shifts + 1, best[1]


def _ter_score(edits, ref_length):
    return 100 * (edits / ref_length if ref_length > 0 else 1.0 if edits > 0 else 0.0)


def corpus_ter(hypotheses, references, normalized=False, no_punct=False, asian_support=False, case_sensitive=False):
    """TER with the default preprocessing only (lowercasing unless case_sensitive); others raise."""
    if normalized or no_punct or asian_support:
        raise ValueError("the slow baseline implements TER without normalized/no_punct/asian_support")
    prep = lambda s: (s if case_sensitive else s.lower()).split()
    edits, ref_length = 0, 0.0
    for h, refs in _segments(hypotheses, references):
        e = [_ter_edits(prep(h), prep(r)) for r in refs]
        edits += min(e)
        ref_length += sum(len(prep(r)) for r in refs) / len(refs)
    return _ter_score(edits, ref_length)


def segment_ter(hypotheses, references, **options):
    return [corpus_ter([h], [[r] for r in refs], **options) for h, refs in _segments(hypotheses, references)]


def sentence_ter(hypothesis, references, **options):
    return segment_ter(*_one_segment(hypothesis, references), **options)[0]
