"""Plain-Python tokenizers and BLEU (sacrebleu's semantics), the baseline for the text kernels."""
from __future__ import annotations

import math
import re
from collections import Counter
from types import SimpleNamespace

_13A = [
    (re.compile(r"([{-~\[-` -&(-+:-@/])"), r" \1 "),   # punctuation and symbols, padded
    (re.compile(r"([^0-9])([.,])"), r"\1 \2 "),         # . or , after a non-digit
    (re.compile(r"([.,])([^0-9])"), r" \1 \2"),         # . or , before a non-digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),             # - after a digit
]


def tokenize(text: str, tokenizer: str = "13a") -> list[str]:
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
    return Counter(tuple(tokens[i:i + n]) for n in range(1, max_order + 1) for i in range(len(tokens) - n + 1))


def _segment_stats(hyp: str, refs: list[str], tokenizer: str, lowercase: bool, max_order: int) -> list[int]:
    prep = (lambda s: tokenize(s.lower() if lowercase else s, tokenizer))
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
    correct, total = list(stats[2:2 + max_order]), list(stats[2 + max_order:])
    bp = 1.0 if sys_len >= ref_len else (math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0)
    prec = [0.0] * max_order
    out = SimpleNamespace(counts=correct, totals=total, precisions=prec, bp=bp, sys_len=sys_len,
                          ref_len=ref_len, score=0.0)
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


def corpus_bleu(hypotheses, references, tokenize="13a", lowercase=False, smooth_method="exp", smooth_value=None,
                max_ngram_order=4, effective_order=False):
    stats = [_segment_stats(h, [r for r in refs if r is not None], tokenize, lowercase, max_ngram_order)
             for h, *refs in zip(hypotheses, *references)]
    summed = [sum(col) for col in zip(*stats)]
    return _score(summed, max_ngram_order, smooth_method, smooth_value, effective_order)


def segment_bleu(hypotheses, references, tokenize="13a", lowercase=False, smooth_method="exp", smooth_value=None,
                 max_ngram_order=4, effective_order=True):
    return [_score(_segment_stats(h, [r for r in refs if r is not None], tokenize, lowercase, max_ngram_order),
                   max_ngram_order, smooth_method, smooth_value, effective_order).score
            for h, *refs in zip(hypotheses, *references)]


# ---------------------------------------------------------------- chrF

_PUNCT = set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')


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
    return ([Counter(chars[i:i + n] for i in range(len(chars) - n + 1)) for n in range(1, nc + 1)]
            + [Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1)) for n in range(1, nw + 1)])


def _chrf_f(stats: list[int], beta: float, eps_smoothing: bool) -> float:
    factor, eps = beta ** 2, 1e-16
    order = len(stats) // 3
    score = avg_p = avg_r = 0.0
    eff = 0
    for i in range(order):
        n_hyp, n_ref, n_match = stats[3 * i:3 * i + 3]
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
    prep = (lambda s: s.lower() if lowercase else s)
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


def corpus_chrf(hypotheses, references, char_order=6, word_order=0, beta=2, lowercase=False, whitespace=False,
                eps_smoothing=False):
    stats = [_chrf_segment(h, [r for r in refs if r is not None], char_order, word_order, beta, lowercase,
                           whitespace, eps_smoothing) for h, *refs in zip(hypotheses, *references)]
    return _chrf_f([sum(col) for col in zip(*stats)], beta, eps_smoothing)
