"""ROUGE against rouge-score 0.1.2 (and its nltk Porter stemmer): real data, multi-reference, adversarial text."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem.porter import PorterStemmer
from rouge_score import rouge_scorer
from test_bleu import ADVERSARIAL

import turbometrics as tm
from turbometrics import slow
from turbometrics._ext import _text

ALL = list(tm.text.ROUGE_TYPES)


def assert_same(ours, theirs, types):
    """ours: tm.rouge output; theirs: list of rouge-score dicts, one per pair."""
    for t in types:
        for field in ("precision", "recall", "fmeasure"):
            expect = np.array([float(getattr(s[t], field)) for s in theirs])
            np.testing.assert_array_equal(getattr(ours[t], field), expect, err_msg=f"{t} {field}")


@pytest.mark.parametrize("stem", [False, True])
def test_summaries_every_type(summaries, stem):
    preds, refs = summaries
    scorer = rouge_scorer.RougeScorer(ALL, use_stemmer=stem)
    assert_same(tm.rouge(preds, refs, ALL, use_stemmer=stem), [scorer.score(r, p) for p, r in zip(preds, refs)], ALL)


@pytest.mark.slow
@pytest.mark.parametrize("stem", [False, True])
def test_wmt17_lsum_multi_sentence_and_multi_reference(wmt17, stem):
    ref, hyp = wmt17["ref"], wmt17["systems"]["uedin-nmt"]
    preds = ["\n".join(hyp[i : i + 5]) for i in range(0, 3000, 5)]
    targets = ["\n".join(ref[i : i + 3]) + "\n\n  \n" for i in range(0, 1800, 3)]
    types = ["rouge1", "rouge2", "rouge4", "rougeL", "rougeLsum"]
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=stem)
    assert_same(
        tm.rouge(preds, targets, types, use_stemmer=stem), [scorer.score(t, p) for p, t in zip(preds, targets)], types
    )
    multi = [[targets[i], targets[(i + 7) % len(targets)], preds[(i + 1) % len(preds)]] for i in range(len(preds))]
    assert_same(
        tm.rouge(preds, multi, types, use_stemmer=stem), [scorer.score_multi(m, p) for p, m in zip(preds, multi)], types
    )


def test_wmt17_pairs(wmt17):
    ref, hyp = wmt17["ref"], wmt17["systems"]["PROMT-Rule-based"]
    scorer = rouge_scorer.RougeScorer(ALL, use_stemmer=True)
    assert_same(tm.rouge(hyp, ref, ALL, use_stemmer=True), [scorer.score(r, h) for h, r in zip(hyp, ref)], ALL)


def test_slow_agrees(summaries):
    preds, refs = summaries
    for stem in (False, True):
        fast = tm.rouge(preds, refs, ALL, use_stemmer=stem)
        ref = slow.rouge(preds, refs, ALL, use_stemmer=stem)
        for t in ALL:
            np.testing.assert_array_equal(fast[t].fmeasure, ref[t].fmeasure)


WORDS = st.lists(
    st.sampled_from(
        [
            "a",
            "e",
            "i",
            "o",
            "u",
            "y",
            "b",
            "c",
            "d",
            "l",
            "s",
            "t",
            "z",
            "ss",
            "ll",
            "at",
            "bl",
            "iz",
            "ed",
            "ing",
            "ies",
            "ied",
            "eed",
            "ational",
            "tional",
            "enci",
            "anci",
            "izer",
            "bli",
            "alli",
            "entli",
            "eli",
            "ousli",
            "ization",
            "ation",
            "ator",
            "alism",
            "iveness",
            "fulness",
            "ousness",
            "aliti",
            "iviti",
            "biliti",
            "fulli",
            "logi",
            "icate",
            "ative",
            "alize",
            "iciti",
            "ical",
            "ful",
            "ness",
            "al",
            "ance",
            "ence",
            "er",
            "ic",
            "able",
            "ible",
            "ant",
            "ement",
            "ment",
            "ent",
            "ion",
            "sion",
            "tion",
            "ou",
            "ism",
            "ate",
            "iti",
            "ous",
            "ive",
            "ize",
            "e",
            "sky",
            "dying",
            "news",
            "inning",
            "howe",
            "proceed",
            "yy",
            "w",
            "x",
            "0",
            "7",
        ]
    ),
    min_size=1,
    max_size=6,
).map("".join)


@settings(max_examples=3000, deadline=None)
@given(word=WORDS)
def test_porter_stemmer_equals_nltk(word):
    assert _text.porter_stem(word) == PorterStemmer().stem(word)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(ADVERSARIAL, st.lists(st.one_of(WORDS, ADVERSARIAL), max_size=8).map(" ".join)))
def test_rouge_tokenizer_matches_rouge_score(text):
    from rouge_score.tokenizers import DefaultTokenizer

    assert tm.tokenize(text, "rouge") == DefaultTokenizer(use_stemmer=False).tokenize(text)
    assert tm.tokenize(text, "rouge-stem") == DefaultTokenizer(use_stemmer=True).tokenize(text)


def test_stems_kept_between_calls_stay_right_past_the_caches_size():
    """Stems are kept per thread from call to call (rouge.hpp's stem_cache), emptied past 65,536 words: a text of
    more distinct words than that, tokenized twice (a cold cache, then one emptied and refilled on the way),
    gives each word its own stem both times, as do pairs scored before and after it."""
    rng = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    suffixes = ["", "ing", "ed", "ies", "ational", "ness", "s", "ly", "ement"]
    words = sorted({"".join(rng.choice(letters, rng.integers(3, 8))) + suffixes[i % 9] for i in range(80_000)})
    assert len(words) > 65_536
    expect = [_text.porter_stem(w) if len(w) > 3 else w for w in words]
    pair = (["the runners were running quickly"], ["a runner runs quick races"])
    before = tm.rouge(*pair, ALL, use_stemmer=True)
    for _ in range(2):
        assert _text.rouge_tokenize(" ".join(words), True) == expect
    assert tm.rouge(*pair, ALL, use_stemmer=True) == before


@settings(max_examples=200, deadline=None)
@given(
    pred=st.lists(ADVERSARIAL, max_size=3).map("\n".join),
    targets=st.lists(st.lists(st.one_of(WORDS, ADVERSARIAL), max_size=8).map(" ".join), min_size=1, max_size=3),
    stem=st.booleans(),
)
def test_rouge_matches_on_adversarial_text(pred, targets, stem):
    scorer = rouge_scorer.RougeScorer(ALL, use_stemmer=stem)
    ours = tm.rouge([pred], [targets], ALL, use_stemmer=stem)
    assert_same(ours, [scorer.score_multi(targets, pred)], ALL)
    single = tm.rouge([pred], [targets[0]], ALL, use_stemmer=stem)
    assert_same(single, [scorer.score(targets[0], pred)], ALL)


@settings(max_examples=300, deadline=None)
@given(a=st.lists(st.integers(0, 5), max_size=300), b=st.lists(st.integers(0, 5), max_size=300))
def test_bit_parallel_lcs_equals_the_dp(a, b):
    """Multi-word carries included (sequences longer than 64 and 128)."""
    fast, dp = _text.lcs_lengths(np.array(a, np.intc), np.array(b, np.intc))
    expect = slow.text._lcs_table(a, b)[-1][-1] if len(a) * len(b) < 20000 else dp
    assert fast == dp == expect


def test_very_long_texts_use_the_linear_memory_lcs():
    words = [f"w{i}" for i in range(30000)]  # 30k distinct tokens: masks would need 100+ MiB
    pred, ref = " ".join(words), " ".join(words[::2] + words[1::2])
    got = tm.rouge([pred], [ref], ["rougeL"])["rougeL"]
    assert got.recall[0] == got.precision[0] == 15001 / 30000  # all evens, then w29999


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: tm.rouge(["a", "b"], ["a"]), ValueError, "references has 1 entries but there are 2 predictions"),
        (lambda: tm.rouge("a b", ["a b"]), TypeError, "predictions must be a list of strings"),
        (lambda: tm.rouge(["a"], "a"), TypeError, "references must be a list"),
        (lambda: tm.rouge(["a"], [["a", 3]]), TypeError, r"references\[0\]\[1\] must be a str"),
        (lambda: tm.rouge(["a"], [[]]), ValueError, "every prediction needs a reference"),
        (lambda: tm.rouge([None], ["a"]), TypeError, r"predictions\[0\] must be a str"),
        (lambda: tm.rouge(["a"], ["a"], rouge_types=["rouge0"]), ValueError, "unknown rouge type 'rouge0'"),
        (lambda: tm.rouge(["a"], ["a"], rouge_types=["rougeW"]), ValueError, "unknown rouge type"),
        (lambda: tm.rouge(["a"], ["a"], rouge_types="rouge1"), TypeError, "rouge_types must be a list"),
        (lambda: tm.rouge(["a"], ["a"], rouge_types=[]), ValueError, "rouge_types is empty"),
    ],
)
def test_bad_rouge_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@settings(max_examples=200, deadline=None)
@given(
    pred=st.text(alphabet=st.characters(exclude_categories=()), max_size=40),
    target=st.text(alphabet=st.characters(exclude_categories=()), max_size=40),
)
def test_any_code_point_even_lone_surrogates(pred, target):
    scorer = rouge_scorer.RougeScorer(ALL, use_stemmer=True)
    assert_same(tm.rouge([pred], [target], ALL, use_stemmer=True), [scorer.score(target, pred)], ALL)


@pytest.mark.slow
@pytest.mark.parametrize("stem", [False, True])
def test_lsum_with_split_summaries_equals_rouge_score(summaries, wmt17, nltk_punkt, stem):
    # the summaries, and multi-sentence texts made of consecutive WMT17 segments (with a stray line break)
    hyp, ref = wmt17["systems"]["uedin-nmt"], wmt17["ref"]
    joined = [(" ".join(hyp[i : i + 3]), " ".join(ref[i : i + 2]) + "\n" + ref[i + 2]) for i in range(0, 1500, 3)]
    preds = list(summaries[0]) + [p for p, _ in joined]
    refs = list(summaries[1]) + [r for _, r in joined]
    types = ["rouge1", "rougeL", "rougeLsum"]
    ours = tm.rouge(preds, refs, types, use_stemmer=stem, split_summaries=True)
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=stem, split_summaries=True)
    for i, (p, r) in enumerate(zip(preds, refs)):
        theirs = scorer.score(r, p)
        for t in types:
            assert tuple(float(getattr(ours[t], f)[i]) for f in ("precision", "recall", "fmeasure")) == tuple(
                theirs[t]
            ), (i, t)
    # and through the accumulator, with a custom tokenizer too
    acc = tm.metrics.ROUGE(types, use_stemmer=stem, split_summaries=True)
    acc.update(preds[:50], refs[:50]).update(preds[50:], refs[50:])
    assert all(np.array_equal(acc.compute()[t].fmeasure, ours[t].fmeasure) for t in types)
    split_ws = tm.rouge(preds[:200], refs[:200], ["rougeLsum"], split_summaries=True, tokenizer=str.split)

    class WS:
        def tokenize(self, text):
            return text.split()

    ws = rouge_scorer.RougeScorer(["rougeLsum"], split_summaries=True, tokenizer=WS())
    assert split_ws["rougeLsum"].fmeasure.tolist() == [
        ws.score(r, p)["rougeLsum"].fmeasure for p, r in zip(preds[:200], refs[:200])
    ]
