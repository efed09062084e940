"""Score matrices against sacrebleu's sentence_score and rouge-score's score, cell by cell, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turbometrics as tm

sacrebleu = pytest.importorskip("sacrebleu")
rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")

N = 1000


@pytest.fixture(scope="module")
def two_systems(wmt17):
    systems = wmt17["systems"]
    return systems["uedin-nmt"][:N], systems["KIT"][:N]


def _cells(n: int, m: int, count: int, seed: int = 0) -> list[tuple[int, int]]:
    """`count` random cells plus the whole diagonal."""
    rng = np.random.default_rng(seed)
    return list(zip(rng.integers(0, n, count).tolist(), rng.integers(0, m, count).tolist())) + [
        (k, k) for k in range(min(n, m))
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "metric,ours,oracle",
    [
        ("BLEU", lambda a, b: tm.pairwise_bleu(a, b), lambda: sacrebleu.BLEU(effective_order=True)),
        ("chrF", lambda a, b: tm.pairwise_chrf(a, b), lambda: sacrebleu.CHRF()),
        ("chrF++", lambda a, b: tm.pairwise_chrf(a, b, word_order=2), lambda: sacrebleu.CHRF(word_order=2)),
    ],
)
def test_wmt17_cells_equal_sacrebleu(two_systems, metric, ours, oracle):
    a, b = two_systems
    got = ours(a, b)
    assert got.shape == (N, N) and got.dtype == np.float64
    o = oracle()
    bad = [
        (i, j, got[i, j], o.sentence_score(a[i], [b[j]]).score)
        for i, j in _cells(N, N, 10_000)
        if got[i, j] != o.sentence_score(a[i], [b[j]]).score
    ]
    assert not bad, f"{metric}: {len(bad)} cells differ, e.g. {bad[:3]}"


@pytest.mark.slow
def test_wmt17_ter_200_equals_sacrebleu(two_systems):
    a, b = two_systems[0][:200], two_systems[1][:200]
    got = tm.pairwise_ter(a, b)
    o = sacrebleu.TER()
    want = np.array([[o.sentence_score(h, [r]).score for r in b] for h in a])
    assert np.array_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize(
    "rouge_type,stem", [("rougeL", True), ("rouge1", True), ("rouge2", False), ("rougeLsum", False)]
)
def test_rouge_cells_equal_rouge_score(two_systems, summaries, rouge_type, stem):
    preds, refs = summaries
    a, b = (preds, refs) if rouge_type != "rougeL" else (two_systems[0][:300], two_systems[1][:300])
    got = tm.pairwise_rouge(a, b, rouge_type, use_stemmer=stem)
    sc = rouge_scorer.RougeScorer([rouge_type], use_stemmer=stem)
    for i, j in _cells(len(a), len(b), 3000):
        want = sc.score(b[j], a[i])[rouge_type]
        assert (got.precision[i, j], got.recall[i, j], got.fmeasure[i, j]) == tuple(want), (i, j)


@pytest.mark.parametrize(
    "fn",
    [
        tm.pairwise_bleu,
        tm.pairwise_chrf,
        tm.pairwise_ter,
        lambda a, b=None, **k: tm.pairwise_rouge(a, b, "rouge2", **k).fmeasure,
    ],
)
def test_self_pairs_and_threads(two_systems, fn):
    a = two_systems[0][:120]
    got = fn(a)
    assert np.array_equal(got, fn(a, a))
    assert np.array_equal(got, fn(a, num_threads=1))


OPTIONS = [
    ("bleu", dict(tokenize="intl"), dict(tokenize="intl", effective_order=True)),
    ("bleu", dict(tokenize="none", lowercase=True), dict(tokenize="none", lowercase=True, effective_order=True)),
    (
        "bleu",
        dict(smooth_method="floor", smooth_value=0.3, max_ngram_order=2),
        dict(smooth_method="floor", smooth_value=0.3, max_ngram_order=2, effective_order=True),
    ),
    ("bleu", dict(smooth_method="add-k", effective_order=False), dict(smooth_method="add-k")),
    (
        "bleu",
        dict(smooth_method="none", tokenize="char"),
        dict(smooth_method="none", tokenize="char", effective_order=True),
    ),
    ("chrf", dict(beta=1, lowercase=True), dict(beta=1, lowercase=True)),
    ("chrf", dict(whitespace=True, char_order=3, word_order=1), dict(whitespace=True, char_order=3, word_order=1)),
    ("chrf", dict(eps_smoothing=True, word_order=2), dict(eps_smoothing=True, word_order=2)),
    ("ter", dict(normalized=True, case_sensitive=True), dict(normalized=True, case_sensitive=True)),
    ("ter", dict(no_punct=True, asian_support=True), dict(no_punct=True, asian_support=True)),
]


@pytest.mark.parametrize("metric,ours,theirs", OPTIONS, ids=[f"{m}-{o}" for m, o, _ in OPTIONS])
def test_options_equal_sacrebleu(two_systems, metric, ours, theirs):
    a, b = two_systems[0][300:340], two_systems[1][300:330] + ["", "   ", "Ünïcödé — «test» 中文字符 😀", "."]
    fn = {"bleu": tm.pairwise_bleu, "chrf": tm.pairwise_chrf, "ter": tm.pairwise_ter}[metric]
    o = {"bleu": sacrebleu.BLEU, "chrf": sacrebleu.CHRF, "ter": sacrebleu.TER}[metric](**theirs)
    got = fn(a, b, **ours)
    want = np.array([[o.sentence_score(h, [r]).score for r in b] for h in a])
    assert np.array_equal(got, want)


WORDS = st.sampled_from(["a", "b", "the", "cat", "Cat", ",", ".", "n't", "1,000", "é", "中", "", "  ", "a-b"])
TEXTS = st.lists(st.lists(WORDS, max_size=12).map(" ".join), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(TEXTS, TEXTS)
def test_random_texts_equal_sacrebleu(a, b):
    bleu, chrf = sacrebleu.BLEU(effective_order=True), sacrebleu.CHRF(word_order=2)
    assert np.array_equal(tm.pairwise_bleu(a, b), [[bleu.sentence_score(h, [r]).score for r in b] for h in a])
    assert np.array_equal(
        tm.pairwise_chrf(a, b, word_order=2), [[chrf.sentence_score(h, [r]).score for r in b] for h in a]
    )
    sc = rouge_scorer.RougeScorer(["rouge2", "rougeL"])
    for t in ("rouge2", "rougeL"):
        got = tm.pairwise_rouge(a, b, t)
        assert np.array_equal(got.fmeasure, [[sc.score(r, h)[t].fmeasure for r in b] for h in a])


def test_shapes_and_bad_input():
    assert tm.pairwise_bleu([], ["a"]).shape == (0, 1)
    assert tm.pairwise_chrf(["a"], []).shape == (1, 0)
    assert tm.pairwise_ter([]).shape == (0, 0)
    assert tm.pairwise_rouge(["a b"], []).fmeasure.shape == (1, 0)
    with pytest.raises(TypeError, match="hypotheses"):
        tm.pairwise_bleu("a text, not a list")
    with pytest.raises(TypeError, match="references"):
        tm.pairwise_chrf(["a"], [1])
    with pytest.raises(ValueError, match="smooth_method"):
        tm.pairwise_bleu(["a"], smooth_method="nope")
    with pytest.raises(ValueError, match="rouge type"):
        tm.pairwise_rouge(["a"], rouge_type="rougeX")
    with pytest.raises(TypeError, match="rouge_type"):
        tm.pairwise_rouge(["a"], rouge_type=["rouge1"])
