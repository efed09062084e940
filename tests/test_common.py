"""Checks shared by every public metric, run over one table (scikit-learn's test_common, bottleneck's
reduce_test): fast == slow twin on generated inputs, fast == oracle, both raise or neither, chunked ==
one shot, the thread count changes nothing, and every input type (list, ndarray, torch tensor,
strided view) gives the same result. A new metric joins by adding a row to METRICS.

Generated inputs are small and seeded, with ties, ignored rows, empty segments, unicode and extreme values.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch

import turbometrics as tm
from turbometrics import slow

SEEDS = range(8)
TEXT_WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    ".",
    ",",
    "Straße",
    "naïve",
    "日本",
    "😀",
    "don't",
    "3.14",
    "-",
    "a",
    "A",
    "the",
    "THE",
    "x" * 30,
    "",
]


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# ---------------------------------------------------------------- generated inputs


def _scores(rng, n=None, c=None, dtype=np.float64):
    """Scores with ties (rounded values), sometimes extreme values and NaN-free."""
    n, c = n or int(rng.integers(1, 12)), c or int(rng.integers(2, 9))
    x = np.round(rng.standard_normal((n, c)) * 2) / 2  # many ties
    if rng.random() < 0.3:
        x[rng.random(x.shape) < 0.2] = rng.choice([1e30, -1e30, 0.0])
    return x.astype(dtype)


def _class_inputs(rng):
    x = _scores(rng, c=int(rng.integers(3, 9)))  # scikit-learn reads two columns as a binary problem
    t = rng.integers(0, x.shape[1], x.shape[0])
    return (x, t), {"k": int(rng.integers(1, x.shape[1] + 1))}


def _rank_inputs(rng):
    x = _scores(rng)
    return (x, rng.integers(0, x.shape[1], x.shape[0])), {}


def _topk_inputs(rng):
    x = _scores(rng)
    return (x,), {"k": int(rng.integers(1, x.shape[1] + 1))}


def _lm_inputs(rng):
    b, t, v = int(rng.integers(1, 4)), int(rng.integers(1, 7)), int(rng.integers(2, 40))
    logits = (rng.standard_normal((b, t, v)) * rng.choice([1, 10, 60])).astype(np.float32)
    targets = rng.integers(0, v, (b, t))
    targets[rng.random((b, t)) < 0.25] = -100  # padding
    return (logits, targets), {"ignore_index": -100}


def _log_prob_inputs(rng):
    (logits, targets), kw = _lm_inputs(rng)
    z = logits.astype(np.float64)
    lp = z - z.max(-1, keepdims=True)
    lp -= np.log(np.exp(lp).sum(-1, keepdims=True))
    return (lp, targets), kw


def _prob_inputs(rng):
    (lp, targets), kw = _log_prob_inputs(rng)
    return (np.exp(lp), targets), kw


def _nll_inputs(rng):
    b, t = int(rng.integers(1, 4)), int(rng.integers(1, 7))
    return (rng.exponential(2.0, (b, t)),), {"mask": rng.random((b, t)) < 0.8}


def _hidden_inputs(rng):
    """An LM head's input and weight (float64, ties), sometimes large logits, sometimes a bias."""
    shape = (int(rng.integers(1, 4)), int(rng.integers(1, 7))) if rng.random() < 0.6 else (int(rng.integers(1, 9)),)
    d, v = int(rng.integers(1, 6)), int(rng.integers(2, 40))
    h = np.round(rng.standard_normal((*shape, d)) * 2) / 2
    w = np.round(rng.standard_normal((v, d)) * 2) / 2 * rng.choice([1, 8, 30])  # logits up to the hundreds
    targets = rng.integers(0, v, shape)
    targets[rng.random(shape) < 0.25] = -100  # padding
    kw = {"ignore_index": -100}
    if rng.random() < 0.5:
        kw["bias"] = rng.standard_normal(v)
    return (h, w, targets), kw


def _torch_linear(a, kw):
    """(logits from torch's F.linear, targets, ignore_index): the head as PyTorch computes it, float64."""
    b = kw.get("bias")
    logits = torch.nn.functional.linear(
        torch.from_numpy(a[0]), torch.from_numpy(a[1]), None if b is None else torch.from_numpy(b)
    )
    return logits.numpy(), a[2], kw["ignore_index"]


def _sentence(rng, lo=0, hi=12):
    return " ".join(rng.choice(TEXT_WORDS, int(rng.integers(lo, hi)))).strip()


def _text_inputs(rng):
    n = int(rng.integers(1, 6))
    hyps = [_sentence(rng) for _ in range(n)]
    refs = [[_sentence(rng, 1) for _ in range(n)] for _ in range(int(rng.integers(1, 3)))]
    if len(refs) == 2:
        refs[1][0] = None  # a dropped reference
    return (hyps, refs), {}


def _sentence_inputs(rng):
    (hyps, refs), _ = _text_inputs(rng)
    return (hyps[0], [s[0] for s in refs if s[0] is not None]), {}


def _rouge_inputs(rng):
    n = int(rng.integers(1, 6))
    preds = ["\n".join(_sentence(rng) for _ in range(2)) for _ in range(n)]
    refs = [_sentence(rng, 1) if rng.random() < 0.6 else [_sentence(rng, 1), _sentence(rng, 1)] for _ in range(n)]
    return (preds, refs), {"use_stemmer": bool(rng.random() < 0.5)}


def _lcs_inputs(rng):
    n = int(rng.integers(1, 6))
    seqs = [[rng.integers(0, 6, int(rng.integers(0, 15))) for _ in range(n)] for _ in range(2)]
    return (seqs[0], seqs[1]), {}


def _tokenize_inputs(rng):
    return (_sentence(rng) + rng.choice(["", " ", "&amp; x", "1,000.5", "a-b"]),), {
        "tokenizer": str(rng.choice(["13a", "char", "none"]))
    }


# ---------------------------------------------------------------- oracles


def _sk_topk(x, t, k):
    from sklearn.metrics import top_k_accuracy_score

    return top_k_accuracy_score(t, x, k=k, labels=range(x.shape[1]))


def _torch_topk(x, k):
    v, i = torch.topk(torch.from_numpy(x), k)
    return v.numpy(), i.numpy()


def _torch_nll(logits, targets, ignore_index):
    z = torch.from_numpy(logits).double().reshape(-1, logits.shape[-1])
    out = torch.nn.functional.cross_entropy(
        z, torch.from_numpy(targets).reshape(-1), reduction="none", ignore_index=ignore_index
    )
    return out.reshape(targets.shape).numpy()


def _torch_ppl(logits, targets, ignore_index):
    z = torch.from_numpy(logits).double().reshape(-1, logits.shape[-1])
    t = torch.from_numpy(targets).reshape(-1)
    return (
        math.exp(torch.nn.functional.cross_entropy(z, t, ignore_index=ignore_index).item())
        if (t != ignore_index).any()
        else float("nan")
    )


def _sacrebleu(name):
    def run(*args, **kw):
        import sacrebleu

        return getattr(sacrebleu, name)(*args, **kw)

    return run


def _rouge_score(preds, refs, use_stemmer):
    from rouge_score import rouge_scorer

    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    sc = rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer)
    res = [sc.score_multi(r if isinstance(r, list) else [r], p) for p, r in zip(preds, refs)]
    return {
        t: tuple(np.array([getattr(x[t], f) for x in res]) for f in ("precision", "recall", "fmeasure")) for t in types
    }


# ---------------------------------------------------------------- the table


@dataclass
class Row:
    name: str
    fast: Callable  # the public function
    slow: Callable  # its plain-Python twin (lists in)
    make: Callable  # rng -> (args, kwargs)
    bad: list = field(default_factory=list)  # (args, kwargs) both must reject
    oracle: Callable | None = None  # (args, kwargs) -> the anchor's result, if installed
    oracle_needs: str = ""
    metric: Callable | None = None  # kwargs -> a tm.metrics object (for chunked == one shot)
    rtol: float = 0.0  # fast vs slow (exact where 0)
    oracle_rtol: float = 0.0
    oracle_view: Callable = lambda r: r  # the part of the result the oracle defines
    threads: bool = True  # takes num_threads
    arrays: tuple = ()  # positions of array arguments (input-type check)


def _lists(args):
    return tuple(a.tolist() if isinstance(a, np.ndarray) else a for a in args)


_X = np.zeros((3, 4))
_T = np.array([0, 1, 2])
_L = np.zeros((1, 2, 4), np.float32)
_LT = np.array([[0, 1]])
_ARRAY_BAD = [((_X, np.array([0, 1, 4])), {}), ((_X, np.array([0, 1])), {}), ((_X, np.array([0, -1, 2])), {})]
_TEXT_BAD = [(("a b", [["a b"]]), {}), ((["a", "b"], [["a"]]), {}), ((["a"], [[None]]), {}), ((["a"], []), {})]

METRICS = [
    Row(
        "topk_accuracy",
        tm.topk_accuracy,
        slow.topk_accuracy,
        _class_inputs,
        _ARRAY_BAD + [((_X, _T), {"k": 0}), ((_X, _T), {"k": 5})],
        lambda a, kw: _sk_topk(a[0], a[1], kw["k"]),
        "sklearn",
        metric=lambda kw: tm.metrics.TopKAccuracy(**kw),
        arrays=(0, 1),
    ),
    Row(
        "mean_reciprocal_rank",
        tm.mean_reciprocal_rank,
        slow.mean_reciprocal_rank,
        _rank_inputs,
        _ARRAY_BAD,
        metric=lambda kw: tm.metrics.MeanReciprocalRank(**kw),
        rtol=1e-15,
        arrays=(0, 1),
    ),
    Row("target_rank", tm.target_rank, slow.target_rank, _rank_inputs, _ARRAY_BAD, arrays=(0, 1)),
    Row(
        "topk",
        tm.topk,
        slow.topk,
        _topk_inputs,
        [((_X,), {"k": 0}), ((_X,), {"k": 5})],
        lambda a, kw: _torch_topk(a[0], kw["k"]),
        "torch",
        arrays=(0,),
        oracle_view=lambda r: r[0],
    ),  # values: torch orders the indices of ties its own way
    Row(
        "token_nll",
        tm.token_nll,
        slow.token_nll,
        _lm_inputs,
        [((_L, _LT + 3), {}), ((_L, _LT[:, :1]), {}), ((_L, -_LT - 1), {})],
        lambda a, kw: _torch_nll(*a, kw["ignore_index"]),
        "torch",
        rtol=2e-6,
        oracle_rtol=2e-6,
        arrays=(0, 1),
    ),
    Row(
        "perplexity",
        tm.perplexity,
        slow.perplexity,
        _lm_inputs,
        [((_L, _LT + 3), {}), ((_L, _LT[:, :1]), {})],
        lambda a, kw: _torch_ppl(*a, kw["ignore_index"]),
        "torch",
        metric=lambda kw: tm.metrics.Perplexity(**kw),
        rtol=2e-6,
        oracle_rtol=2e-6,
        arrays=(0, 1),
    ),
    Row(
        "perplexity_from_log_probs",
        tm.perplexity_from_log_probs,
        slow.perplexity_from_log_probs,
        _log_prob_inputs,
        [((_L, _LT + 3), {})],
        metric=lambda kw: tm.metrics.Perplexity(input="log_probs", **kw),
        rtol=1e-12,
        threads=False,
        arrays=(0, 1),
    ),
    Row(
        "perplexity_from_probs",
        tm.perplexity_from_probs,
        slow.perplexity_from_probs,
        _prob_inputs,
        [((_L, _LT + 3), {})],
        metric=lambda kw: tm.metrics.Perplexity(input="probs", **kw),
        rtol=1e-12,
        threads=False,
        arrays=(0, 1),
    ),
    Row(
        "perplexity_from_nll",
        tm.perplexity_from_nll,
        slow.perplexity_from_nll,
        _nll_inputs,
        [],
        metric=lambda kw: tm.metrics.Perplexity(input="nll", reduction="token"),
        rtol=1e-12,
        threads=False,
        arrays=(0,),
    ),
    Row(
        "token_nll_from_hidden",
        tm.token_nll_from_hidden,
        slow.token_nll_from_hidden,
        _hidden_inputs,
        [
            ((_L, np.zeros((3, 4), np.float32), _LT + 3), {}),
            ((_L, np.zeros((3, 5), np.float32), _LT), {}),
            ((_L, np.zeros((3, 4), np.float32), _LT[:, :1]), {}),
        ],
        lambda a, kw: _torch_nll(*_torch_linear(a, kw)),
        "torch",
        rtol=1e-9,
        oracle_rtol=1e-9,
        arrays=(2,),
    ),
    Row(
        "perplexity_from_hidden",
        tm.perplexity_from_hidden,
        slow.perplexity_from_hidden,
        _hidden_inputs,
        [((_L, np.zeros((3, 4), np.float32), _LT + 3), {}), ((_L, np.zeros((3, 5), np.float32), _LT), {})],
        lambda a, kw: _torch_ppl(*_torch_linear(a, kw)),
        "torch",
        rtol=1e-9,
        oracle_rtol=1e-9,
        arrays=(2,),
    ),
    Row(
        "corpus_bleu",
        tm.corpus_bleu,
        slow.corpus_bleu,
        _text_inputs,
        _TEXT_BAD,
        lambda a, kw: _sacrebleu("corpus_bleu")(*a),
        "sacrebleu",
        metric=lambda kw: tm.metrics.BLEU(**kw),
    ),
    Row(
        "sentence_bleu",
        tm.sentence_bleu,
        slow.sentence_bleu,
        _sentence_inputs,
        [((["a"], ["a"]), {}), (("a", "a"), {}), (("a", []), {})],
        lambda a, kw: _sacrebleu("sentence_bleu")(*a),
        "sacrebleu",
        threads=False,
    ),
    Row(
        "segment_bleu",
        tm.segment_bleu,
        slow.segment_bleu,
        _text_inputs,
        _TEXT_BAD,
        lambda a, kw: [
            _sacrebleu("sentence_bleu")(h, [r for r in refs if r is not None]).score for h, *refs in zip(a[0], *a[1])
        ],
        "sacrebleu",
    ),
    Row(
        "corpus_chrf",
        tm.corpus_chrf,
        slow.corpus_chrf,
        _text_inputs,
        _TEXT_BAD,
        lambda a, kw: _sacrebleu("corpus_chrf")(*a),
        "sacrebleu",
        metric=lambda kw: tm.metrics.CHRF(**kw),
    ),
    Row(
        "sentence_chrf",
        tm.sentence_chrf,
        slow.sentence_chrf,
        _sentence_inputs,
        [((["a"], ["a"]), {}), (("a", []), {})],
        lambda a, kw: _sacrebleu("sentence_chrf")(*a),
        "sacrebleu",
        threads=False,
    ),
    Row(
        "segment_chrf",
        tm.segment_chrf,
        slow.segment_chrf,
        _text_inputs,
        _TEXT_BAD,
        lambda a, kw: [
            _sacrebleu("sentence_chrf")(h, [r for r in refs if r is not None]).score for h, *refs in zip(a[0], *a[1])
        ],
        "sacrebleu",
    ),
    Row(
        "corpus_ter",
        tm.corpus_ter,
        slow.corpus_ter,
        _text_inputs,
        _TEXT_BAD,
        lambda a, kw: _sacrebleu("corpus_ter")(*a),
        "sacrebleu",
        metric=lambda kw: tm.metrics.TER(**kw),
    ),
    Row(
        "sentence_ter",
        tm.sentence_ter,
        slow.sentence_ter,
        _sentence_inputs,
        [((["a"], ["a"]), {}), (("a", "a"), {}), (("a", []), {})],
        lambda a, kw: _sacrebleu("sentence_ter")(*a),
        "sacrebleu",
        threads=False,
    ),
    Row(
        "segment_ter",
        tm.segment_ter,
        slow.segment_ter,
        _text_inputs,
        _TEXT_BAD,
        lambda a, kw: [
            _sacrebleu("sentence_ter")(h, [r for r in refs if r is not None]).score for h, *refs in zip(a[0], *a[1])
        ],
        "sacrebleu",
    ),
    Row(
        "rouge",
        tm.rouge,
        slow.rouge,
        _rouge_inputs,
        [(("a b", ["a"]), {}), ((["a", "b"], ["a"]), {}), ((["a"], [[]]), {})],
        lambda a, kw: _rouge_score(*a, **kw),
        "rouge_score",
        metric=lambda kw: tm.metrics.ROUGE(**kw),
        oracle_view=lambda r: {t: tuple(s) for t, s in r.items()},
    ),
    Row("lcs_length", tm.lcs_length, slow.lcs_length, _lcs_inputs, [(([[1]], [[1], [2]]), {})]),
    Row(
        "tokenize",
        tm.tokenize,
        slow.tokenize,
        _tokenize_inputs,
        [(("a",), {"tokenizer": "moses"})],
        lambda a, kw: _sacrebleu_tokens(a[0], kw["tokenizer"]),
        "sacrebleu",
        threads=False,
    ),
]


def _sacrebleu_tokens(text, name):
    from sacrebleu.tokenizers import tokenizer_13a, tokenizer_char, tokenizer_none

    tok = {
        "13a": tokenizer_13a.Tokenizer13a,
        "char": tokenizer_char.TokenizerChar,
        "none": tokenizer_none.NoneTokenizer,
    }[name]()
    return tok(text.rstrip()).split()


# ---------------------------------------------------------------- comparing results


def _plain(x: Any) -> Any:
    """A result as nested floats/ints/strs for comparison."""
    if isinstance(x, torch.Tensor):
        x = x.numpy()
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if hasattr(x, "score") and not isinstance(x, (float, int)):
        return _plain(x.score)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return x


def assert_same(a: Any, b: Any, rtol: float = 0.0, what: str = "") -> None:
    a, b = _plain(a), _plain(b)
    if isinstance(a, dict):
        assert a.keys() == b.keys(), what
        for k in a:
            assert_same(a[k], b[k], rtol, f"{what}[{k}]")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{what}: {a} vs {b}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, rtol, f"{what}[{i}]")
    elif isinstance(a, float) and isinstance(b, (float, int)):
        if math.isnan(a) or math.isnan(b):
            assert math.isnan(a) and math.isnan(b), f"{what}: {a} vs {b}"
        elif rtol:
            assert a == pytest.approx(b, rel=rtol, abs=rtol), f"{what}: {a} vs {b}"
        else:
            assert a == b, f"{what}: {a!r} vs {b!r}"
    else:
        assert a == b, f"{what}: {a!r} vs {b!r}"


def _cases(row: Row):
    for seed in SEEDS:
        yield row.make(np.random.default_rng([seed, len(row.name)]))


ids = [r.name for r in METRICS]


# ---------------------------------------------------------------- the checks


@pytest.mark.parametrize("row", METRICS, ids=ids)
def test_fast_equals_slow(row):
    if row.name == "rouge" and not have("nltk"):
        pytest.fail("nltk (a test extra) is needed by the slow ROUGE twin")
    for args, kw in _cases(row):
        assert_same(row.fast(*args, **kw), row.slow(*_lists(args), **kw), row.rtol, row.name)


@pytest.mark.parametrize("row", [r for r in METRICS if r.oracle], ids=[r.name for r in METRICS if r.oracle])
def test_fast_equals_oracle(row):
    if not have(row.oracle_needs):
        pytest.fail(f"{row.oracle_needs} (a test extra) is not installed")
    for args, kw in _cases(row):
        assert_same(
            row.oracle_view(row.fast(*args, **kw)), row.oracle_view(row.oracle(args, kw)), row.oracle_rtol, row.name
        )


@pytest.mark.parametrize("row", [r for r in METRICS if r.bad], ids=[r.name for r in METRICS if r.bad])
def test_both_raise_or_neither(row):
    for args, kw in row.bad:
        with pytest.raises((ValueError, TypeError)):
            row.fast(*args, **kw)
        with pytest.raises(Exception):  # noqa: B017 - the slow twin raises whatever its Python raises
            row.slow(*_lists(args), **kw)


def _chunks(args, rng):
    """The inputs cut into 1..3 consecutive chunks of items (rows / segments)."""
    n = len(args[0])
    cuts = sorted(set(rng.integers(0, n + 1, int(rng.integers(0, 3))).tolist()) | {0, n})
    for lo, hi in zip(cuts, cuts[1:]):
        if hi > lo:
            yield tuple(
                a[lo:hi]
                if isinstance(a, (list, np.ndarray)) and not isinstance(a, str) and len(a) == n
                else [s[lo:hi] for s in a]
                for a in args
            )


@pytest.mark.parametrize("row", [r for r in METRICS if r.metric], ids=[r.name for r in METRICS if r.metric])
def test_chunked_equals_one_shot(row):
    rng = np.random.default_rng(7)
    for args, kw in _cases(row):
        opts = {k: v for k, v in kw.items() if k not in ("mask",)}
        mask = kw.get("mask")
        parts = list(_chunks(args if mask is None else args + (mask,), rng))
        states = []
        for p in parts:
            m = row.metric(opts)
            states.append(m.update(*p[:-1], mask=p[-1]) if mask is not None else m.update(*p))
        merged = states[0]
        for s in states[1:]:
            merged = merged + s
        assert_same(merged.compute(), row.fast(*args, **kw), 0.0, row.name)


@pytest.mark.parametrize("row", [r for r in METRICS if r.threads], ids=[r.name for r in METRICS if r.threads])
def test_thread_count_changes_nothing(row):
    for args, kw in _cases(row):
        one = row.fast(*args, **kw, num_threads=1)
        for n in (2, 3):
            assert_same(row.fast(*args, **kw, num_threads=n), one, 0.0, f"{row.name}, {n} threads")


def _as_types(a: np.ndarray):
    """The same values as a list (where that keeps the dtype), an ndarray, a torch tensor and a strided view."""
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype) if a.ndim else a
    if a.ndim:
        wide[..., ::2] = a
    if a.dtype in (np.float64, np.int64, np.bool_):
        yield "list", a.tolist()
    yield "ndarray", a
    yield "torch", torch.from_numpy(a.copy())
    if a.ndim:
        yield "strided view", wide[..., ::2]


@pytest.mark.parametrize("row", [r for r in METRICS if r.arrays], ids=[r.name for r in METRICS if r.arrays])
def test_every_input_type_gives_the_same_result(row):
    for args, kw in list(_cases(row))[:3]:
        expect = row.fast(*args, **kw)
        for pos in row.arrays:
            for label, alt in _as_types(args[pos]):
                got = row.fast(*(alt if i == pos else a for i, a in enumerate(args)), **kw)
                assert_same(got, expect, 0.0, f"{row.name}: argument {pos} as {label}")


def test_every_public_metric_has_a_row():
    metrics = {
        "topk_accuracy",
        "mean_reciprocal_rank",
        "target_rank",
        "topk",
        "token_nll",
        "perplexity",
        "perplexity_from_log_probs",
        "perplexity_from_probs",
        "perplexity_from_nll",
        "token_nll_from_hidden",
        "perplexity_from_hidden",
        "corpus_bleu",
        "sentence_bleu",
        "segment_bleu",
        "corpus_chrf",
        "sentence_chrf",
        "segment_chrf",
        "corpus_ter",
        "sentence_ter",
        "segment_ter",
        "rouge",
        "lcs_length",
        "tokenize",
    }
    assert metrics <= set(tm.__all__)
    assert {r.name for r in METRICS} == metrics
    # every accumulator appears in the chunked check
    classes = {type(r.metric({})) for r in METRICS if r.metric and r.name != "topk_accuracy"} | {
        tm.metrics.TopKAccuracy
    }
    assert classes == {getattr(tm.metrics, c) for c in tm.metrics.__all__ if c not in ("Metric", "Signature")}
