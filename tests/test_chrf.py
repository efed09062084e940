"""chrF / chrF++ against sacrebleu: every WMT17 system, every option, adversarial strings."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import CHRF
from test_bleu import ADVERSARIAL

import turbometrics as tm
from turbometrics import slow


@pytest.mark.slow
@pytest.mark.parametrize("word_order", [0, 2])
@pytest.mark.parametrize("lowercase", [False, True])
def test_corpus_chrf_every_wmt17_system(wmt17, word_order, lowercase):
    oracle = CHRF(word_order=word_order, lowercase=lowercase, references=[wmt17["ref"]])  # refs prepared once
    for hyp in wmt17["systems"].values():
        theirs = oracle.corpus_score(hyp, None)
        ours = tm.corpus_chrf(hyp, [wmt17["ref"]], word_order=word_order, lowercase=lowercase)
        assert ours.score == theirs.score and str(ours) == str(theirs)


@pytest.mark.slow
@pytest.mark.parametrize(
    "opts",
    [
        dict(whitespace=True),
        dict(eps_smoothing=True),
        dict(beta=1),
        dict(beta=3),
        dict(char_order=4, word_order=1),
        dict(char_order=0, word_order=3),
        dict(word_order=2, eps_smoothing=True, whitespace=True),
    ],
)
def test_corpus_chrf_options_and_references(wmt17, opts):
    systems = list(wmt17["systems"].values())
    hyp = systems[4]
    var = [s if i % 4 else None for i, s in enumerate(systems[5])]
    for refs in ([wmt17["ref"]], [wmt17["ref"], systems[6]], [wmt17["ref"], var]):
        theirs = CHRF(**opts).corpus_score(hyp, refs)
        ours = tm.corpus_chrf(hyp, refs, **opts)
        assert ours.score == theirs.score


def test_signature_and_name(wmt17):
    hyp = wmt17["systems"]["online-A"]
    m = CHRF(word_order=2)
    m.corpus_score(hyp, [wmt17["ref"]])
    ours = tm.corpus_chrf(hyp, [wmt17["ref"]], word_order=2)
    assert ours.name == "chrF2++"
    assert ours.signature == str(m.get_signature()).replace(sacrebleu.__version__, "2.6.0")


@pytest.mark.parametrize("word_order", [0, 2])
def test_segment_chrf_equals_a_loop_of_sentence_chrf(wmt17, word_order):
    hyp, ref, second = wmt17["systems"]["LIUM-NMT"], wmt17["ref"], wmt17["systems"]["SYSTRAN"]
    ours = tm.segment_chrf(hyp, [ref, second], word_order=word_order)
    m = CHRF(word_order=word_order)
    assert ours.tolist() == [m.sentence_score(h, [r, s]).score for h, r, s in zip(hyp, ref, second)]
    assert tm.sentence_chrf(hyp[5], [ref[5]]).score == sacrebleu.sentence_chrf(hyp[5], [ref[5]]).score


@settings(max_examples=200, deadline=None)
@given(
    hyp=ADVERSARIAL,
    r1=ADVERSARIAL,
    r2=st.one_of(st.none(), ADVERSARIAL),
    word_order=st.sampled_from([0, 2]),
    lowercase=st.booleans(),
    whitespace=st.booleans(),
    eps=st.booleans(),
)
def test_chrf_matches_sacrebleu_on_adversarial_segments(hyp, r1, r2, word_order, lowercase, whitespace, eps):
    refs = [[r1], [r2]]
    kw = dict(word_order=word_order, lowercase=lowercase, whitespace=whitespace, eps_smoothing=eps)
    assert tm.corpus_chrf([hyp], refs, **kw).score == CHRF(**kw).corpus_score([hyp], refs).score


@settings(max_examples=200, deadline=None)
@given(
    hyp=ADVERSARIAL,
    r1=ADVERSARIAL,
    r2=st.one_of(st.none(), ADVERSARIAL),
    char_order=st.sampled_from([1, 3, 4, 6, 7, 9, 19]),
    word_order=st.sampled_from([0, 1, 3, 33]),
    whitespace=st.booleans(),
)
def test_every_counting_path_matches_sacrebleu(hyp, r1, r2, char_order, word_order, whitespace):
    # n-grams as 64-bit keys, 128-bit keys (4+ astral or BMP characters), and the levels past 128 bits
    # (8+ emoji, 9+ CJK characters, 33 words of 4+ bits)
    refs = [[r1], [r2]]
    kw = dict(char_order=char_order, word_order=word_order, whitespace=whitespace)
    assert tm.corpus_chrf([hyp], refs, **kw).score == CHRF(**kw).corpus_score([hyp], refs).score


@pytest.mark.parametrize(
    "alphabet,char_order,word_order",
    [
        ("ab cd", 6, 2),
        ("ab cdéü", 6, 2),  # 64-bit keys
        ("ab中文 カ", 6, 20),
        ("a😀b 👍", 6, 2),  # 128-bit keys (BMP and astral characters)
        ("a😀b 👍", 8, 0),
        ("ab中文 カ", 9, 0),  # the levels past 128 bits (17 and 15 bits a character)
        ("abcdefghij k l m n o p", 2, 40),
    ],
)  # word levels (40 words of 5+ bits)
def test_each_counting_path_matches_sacrebleu(alphabet, char_order, word_order):
    rng = np.random.default_rng(char_order * 100 + word_order)
    texts = ["".join(rng.choice(list(alphabet), 300)) for _ in range(6)]
    hyps, refs = texts[:3], [texts[3:]]
    kw = dict(char_order=char_order, word_order=word_order)
    assert tm.corpus_chrf(hyps, refs, **kw).score == CHRF(**kw).corpus_score(hyps, refs).score
    assert tm.segment_chrf(hyps, refs, **kw).tolist() == [
        CHRF(**kw).sentence_score(h, [r]).score for h, r in zip(hyps, refs[0])
    ]


SHORT_ALPHABETS = ["ab c", "aé ßü„“", "a中b 😀" + "".join(chr(0x4E00 + i) for i in range(20))]


def _short_cases(alphabet):
    """Texts of up to 256 counted characters take the bit-mask counts (1 to 4 words a mask); longer ones,
    and hypotheses with more than 16 distinct characters past Latin-1, the hash tables."""
    rng = np.random.default_rng(len(alphabet))
    lengths = [0, 1, 5, 63, 64, 65, 127, 128, 129, 200, 255, 256, 257, 300]
    for char_order, whitespace in [(6, False), (2, True), (9, False), (70, True)]:
        hyps = ["".join(rng.choice(list(alphabet), n)) for n in lengths]
        refs = [
            ["".join(rng.choice(list(alphabet), n)) for n in rng.permutation(lengths)],
            [None if i % 3 == 0 else "".join(rng.choice(list(alphabet), n)) for i, n in enumerate(lengths)],
        ]
        yield hyps, refs, dict(char_order=char_order, word_order=0, whitespace=whitespace)


@pytest.mark.parametrize("alphabet", SHORT_ALPHABETS)
def test_short_segment_bit_masks_match_sacrebleu(alphabet):
    for hyps, refs, kw in _short_cases(alphabet):
        got = tm.segment_chrf(hyps, refs, **kw).tolist()
        want = [CHRF(**kw).sentence_score(h, [r for r in rs if r is not None]).score for h, rs in zip(hyps, zip(*refs))]
        assert got == want, kw


def test_short_segment_bit_masks_without_popcnt():
    # TURBOMETRICS_SIMD=baseline takes the code for CPUs without a popcount instruction
    code = (
        "import json, sys, turbometrics as tm; sys.path.insert(0, sys.argv[1])\n"
        "from test_chrf import SHORT_ALPHABETS, _short_cases\n"
        "print(json.dumps([tm.segment_chrf(h, r, **kw).tolist() for a in SHORT_ALPHABETS "
        "for h, r, kw in _short_cases(a)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, os.path.dirname(__file__)],
        capture_output=True,
        text=True,
        env=dict(os.environ, TURBOMETRICS_SIMD="baseline"),
        check=True,
    ).stdout
    assert json.loads(out) == [
        tm.segment_chrf(h, r, **kw).tolist() for a in SHORT_ALPHABETS for h, r, kw in _short_cases(a)
    ]


def test_slow_agrees(wmt17):
    hyp, ref = wmt17["systems"]["FBK"][:300], wmt17["ref"][:300]
    for kw in (dict(), dict(word_order=2, lowercase=True), dict(whitespace=True, eps_smoothing=True, beta=1)):
        assert slow.corpus_chrf(hyp, [ref], **kw) == tm.corpus_chrf(hyp, [ref], **kw).score


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: tm.corpus_chrf(["a", "b"], [["a"]]), ValueError, "has 1 segments but there are 2"),
        (lambda: tm.corpus_chrf("ab", [["ab"]]), TypeError, "hypotheses must be a list of strings"),
        (lambda: tm.corpus_chrf(["a"], [["a"]], char_order=0, word_order=0), ValueError, "one to 1024 orders"),
        (lambda: tm.corpus_chrf(["a"], [["a"]], char_order=2**30, word_order=2**30), ValueError, "one to 1024 orders"),
        (lambda: tm.corpus_chrf(["a"], [["a"]], beta=0), ValueError, "beta must be a positive number"),
        (lambda: tm.corpus_chrf(["a"], [["a"]], char_order=2.5), TypeError, "char_order must be an integer"),
        (lambda: tm.sentence_chrf("a", "a"), TypeError, "references must be a list of strings"),
    ],
)
def test_bad_chrf_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
