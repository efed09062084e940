"""BLEU and its tokenizers against sacrebleu: the WMT17 systems, every option, adversarial strings."""

import itertools
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU, CHRF

import turbometrics as tm
from turbometrics import slow

TOKENIZERS = ["13a", "intl", "zh", "char", "none"]


def assert_same(ours, theirs):
    assert ours.counts == theirs.counts
    assert ours.totals == theirs.totals
    assert (ours.sys_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)
    assert ours.precisions == theirs.precisions
    assert ours.bp == theirs.bp
    assert ours.score == theirs.score  # bit for bit


@pytest.mark.slow
@pytest.mark.parametrize("tokenize", TOKENIZERS)
@pytest.mark.parametrize("lowercase", [False, True])
def test_corpus_bleu_every_wmt17_system(wmt17, tokenize, lowercase):
    ref = wmt17["ref"]
    oracle = BLEU(tokenize=tokenize, lowercase=lowercase, references=[ref])  # sacrebleu tokenizes the refs once
    for hyp in wmt17["systems"].values():
        theirs = oracle.corpus_score(hyp, None)
        assert_same(tm.corpus_bleu(hyp, [ref], tokenize=tokenize, lowercase=lowercase), theirs)


SMOOTHING = [
    ("exp", None),
    ("none", None),
    ("floor", None),
    ("floor", 0.3),
    ("add-k", None),
    ("add-k", 2),
    ("add-k", 0.5),
]


@pytest.mark.slow
@pytest.mark.parametrize("order", [2, 4, 6])
@pytest.mark.parametrize("two_refs", [False, True])
def test_corpus_bleu_every_system_every_option(wmt17, order, two_refs):
    """Every system x smoothing x effective order; sacrebleu's statistics are extracted once per system."""
    systems = list(wmt17["systems"].items())
    for k, (_name, hyp) in enumerate(systems):
        refs = [wmt17["ref"]] + ([systems[(k + 1) % len(systems)][1]] if two_refs else [])
        stats = BLEU(max_ngram_order=order)._extract_corpus_statistics(hyp, refs)
        for (smooth_method, smooth_value), eff in itertools.product(SMOOTHING, [False, True]):
            theirs = BLEU(
                smooth_method=smooth_method, smooth_value=smooth_value, max_ngram_order=order, effective_order=eff
            )._aggregate_and_compute(stats)
            ours = tm.corpus_bleu(
                hyp,
                refs,
                smooth_method=smooth_method,
                smooth_value=smooth_value,
                max_ngram_order=order,
                effective_order=eff,
            )
            assert_same(ours, theirs)


def test_variable_number_of_references(wmt17):
    systems = list(wmt17["systems"].values())
    hyp = systems[2]
    second = [s if i % 3 else None for i, s in enumerate(systems[3])]
    theirs = sacrebleu.corpus_bleu(hyp, [wmt17["ref"], second])
    ours = tm.corpus_bleu(hyp, [wmt17["ref"], second])
    assert_same(ours, theirs)
    assert "nrefs:var" in ours.signature


def test_variable_references_late_in_the_corpus_show_in_the_signature():
    refs = [["a b"] * 1500, ["a b"] * 1200 + [None] * 300]
    assert "nrefs:var" in tm.corpus_bleu(["a b"] * 1500, refs).signature
    assert "nrefs:var" in tm.corpus_chrf(["a b"] * 1500, refs).signature
    assert "nrefs:2" in tm.corpus_bleu(["a b"] * 1500, [refs[0], refs[0]]).signature


def test_printing_and_signature(wmt17):
    hyp = wmt17["systems"]["uedin-nmt"]
    ours = tm.corpus_bleu(hyp, [wmt17["ref"]])
    theirs = sacrebleu.corpus_bleu(hyp, [wmt17["ref"]])
    assert str(ours) == str(theirs) and ours.format(width=1) == theirs.format(width=1)
    assert ours.signature == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
    sig = BLEU(lowercase=True, smooth_method="floor")
    sig.corpus_score(hyp, [wmt17["ref"]])
    assert tm.corpus_bleu(hyp, [wmt17["ref"]], lowercase=True, smooth_method="floor").signature == str(
        sig.get_signature()
    ).replace(sacrebleu.__version__, "2.6.0")


@pytest.mark.parametrize("tokenize", TOKENIZERS)
def test_segment_bleu_equals_a_loop_of_sentence_bleu(wmt17, tokenize):
    ref = wmt17["ref"]
    hyp = wmt17["systems"]["online-B"]
    ours = tm.segment_bleu(hyp, [ref], tokenize=tokenize)
    theirs = [sacrebleu.sentence_bleu(h, [r], tokenize=tokenize).score for h, r in zip(hyp, ref)]
    assert ours.tolist() == theirs
    for i in (0, 17, 1234):
        assert_same(
            tm.sentence_bleu(hyp[i], [ref[i]], tokenize=tokenize),
            sacrebleu.sentence_bleu(hyp[i], [ref[i]], tokenize=tokenize),
        )


@pytest.mark.parametrize("smooth_method,smooth_value", SMOOTHING)
def test_segment_bleu_every_smoothing_two_refs(wmt17, smooth_method, smooth_value):
    hyp, second = wmt17["systems"]["xmu"][:600], wmt17["systems"]["KIT"][:600]
    ref = wmt17["ref"][:600]
    ours = tm.segment_bleu(hyp, [ref, second], smooth_method=smooth_method, smooth_value=smooth_value)
    m = BLEU(smooth_method=smooth_method, smooth_value=smooth_value, effective_order=True)
    assert ours.tolist() == [m.sentence_score(h, [r, s]).score for h, r, s in zip(hyp, ref, second)]


def test_known_values():
    assert tm.sentence_bleu("the cat", ["the cat sat"]).score == pytest.approx(60.653065971263345)
    assert tm.sentence_bleu("the cat", ["the cat sat"], effective_order=False).score == 0.0
    assert tm.corpus_bleu([""], [[""]]).score == 0.0
    assert tm.corpus_bleu(["a b c d"], [["a b c d"]]).score == sacrebleu.corpus_bleu(["a b c d"], [["a b c d"]]).score


@pytest.mark.slow
@pytest.mark.parametrize("tokenize", TOKENIZERS)
@pytest.mark.parametrize("lowercase", [False, True])
def test_prepared_references_score_several_systems(wmt17, tokenize, lowercase):
    systems = list(wmt17["systems"].values())
    second = [s if i % 5 else None for i, s in enumerate(systems[0])]
    refs = [wmt17["ref"], second]
    prepared = tm.prepare_references(refs, tokenize=tokenize, lowercase=lowercase)
    cached = BLEU(tokenize=tokenize, lowercase=lowercase, references=refs)  # sacrebleu's reference cache
    for hyp in systems[1:4]:
        assert_same(
            tm.corpus_bleu(hyp, prepared, tokenize=tokenize, lowercase=lowercase), cached.corpus_score(hyp, None)
        )
        np.testing.assert_array_equal(
            tm.segment_bleu(hyp, prepared, tokenize=tokenize, lowercase=lowercase),
            tm.segment_bleu(hyp, refs, tokenize=tokenize, lowercase=lowercase),
        )


def test_prepared_references_must_match_the_call(wmt17):
    prepared = tm.prepare_references([wmt17["ref"]], tokenize="intl")
    hyp = wmt17["systems"]["KIT"]
    with pytest.raises(ValueError, match="prepared with tokenize='intl'"):
        tm.corpus_bleu(hyp, prepared)
    with pytest.raises(ValueError, match="references have 3004 segments but there are 10"):
        tm.corpus_bleu(hyp[:10], prepared, tokenize="intl")
    with pytest.raises(TypeError, match="references must be a list of reference streams"):
        tm.prepare_references("abc")


def test_str_subclasses_are_strings():
    class Text(str):
        pass

    assert (
        tm.corpus_bleu([Text("a b c")], [[Text("a b c")]]).score == sacrebleu.corpus_bleu(["a b c"], [["a b c"]]).score
    )


def test_slow_agrees(wmt17):
    ref = wmt17["ref"][:300]
    for hyp in itertools.islice(wmt17["systems"].values(), 3):
        hyp = hyp[:300]
        s, f = slow.corpus_bleu(hyp, [ref]), tm.corpus_bleu(hyp, [ref])
        assert (s.counts, s.totals, s.sys_len, s.ref_len, s.score) == (
            f.counts,
            f.totals,
            f.sys_len,
            f.ref_len,
            f.score,
        )


# ---------------------------------------------------------------- tokenizers on adversarial strings

ADVERSARIAL = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "<skipped>",
                "&quot;",
                "&amp;",
                "&lt;",
                "&gt;",
                "&amp;lt;",
                "&",
                "-\n",
                "\n",
                "--",
                "...",
                "1,000",
                "2.5",
                "3-4",
                "a-",
                "-5",
                "e.g.,",
                "It's",
                "\u2014",
                "\u201c",
                "\u201d",
                "\u00a0",
                "\u2028",
                "\u3000",
                "\x85",
                "\t",
                " ",
                "\u200b",
                "\ufeff",
                "İ",
                "ß",
                "ǅ",
                "\u0301",
                "e\u0301",
                "中文",
                "日本語",
                "한국어",
                "😀",
                "👍🏽",
                "\U0001f1e9\U0001f1ea",
                "\x1c",
                "\r\n",
                ".",
                ",",
                "-",
                "0",
                "9",
                "(",
                ")",
                "$",
                "%",
                "@",
                "/",
                "\\",
                "^",
                "`",
                "~",
                "{",
                "|",
            ]
        ),
        st.text(max_size=6),
    )
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=ADVERSARIAL)
def test_tokenizers_match_sacrebleu(text):
    ref = sacrebleu_tokenizers()
    for name, tok in ref.items():
        assert tm.tokenize(text, name) == tok(text.rstrip()).split(), name
        assert tm.tokenize(text.lower(), name) == tok(text.lower().rstrip()).split(), name


@settings(max_examples=150, deadline=None)
@given(
    hyp=ADVERSARIAL,
    r1=ADVERSARIAL,
    r2=st.one_of(st.none(), ADVERSARIAL),
    tokenize=st.sampled_from(TOKENIZERS),
    lowercase=st.booleans(),
)
def test_bleu_matches_sacrebleu_on_adversarial_segments(hyp, r1, r2, tokenize, lowercase):
    refs = [[r1], [r2]]
    ours = tm.corpus_bleu([hyp], refs, tokenize=tokenize, lowercase=lowercase)
    theirs = sacrebleu.corpus_bleu([hyp], refs, tokenize=tokenize, lowercase=lowercase)
    assert_same(ours, theirs)
    sent = tm.segment_bleu([hyp], refs, tokenize=tokenize, lowercase=lowercase)[0]
    assert (
        sent
        == sacrebleu.sentence_bleu(
            hyp, [r for r in (r1, r2) if r is not None], tokenize=tokenize, lowercase=lowercase
        ).score
    )


def every_code_point(pattern: str) -> str:
    return "".join(pattern.format(c=chr(c)) for c in range(0x110000))


def sacrebleu_tokenizers():
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
    from sacrebleu.tokenizers.tokenizer_char import TokenizerChar
    from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International
    from sacrebleu.tokenizers.tokenizer_none import NoneTokenizer
    from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

    return {
        "13a": Tokenizer13a(),
        "char": TokenizerChar(),
        "none": NoneTokenizer(),
        "intl": TokenizerV14International(),
        "zh": TokenizerZh(),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["intl", "zh", "13a"])
def test_every_code_point_tokenizes_like_sacrebleu(name):
    """Each code point between letters, digits and dots: the Unicode classes and ranges agree everywhere."""
    text = "".join(f"a{c}1{c}b{c}.{c} " for c in map(chr, range(0x110000)))
    assert tm.tokenize(text, name) == sacrebleu_tokenizers()[name](text.rstrip()).split()


@pytest.mark.parametrize("top", [0x100, 0x10000, 0x110000], ids=["Latin-1", "UCS-2", "UCS-4"])
def test_none_splits_as_str_split_in_every_storage(top):
    """The "none" tokenizer (also prepared references, the external tokenizers' output, TER and WER words) is
    str.split(): each code point of the storage kind's range between letters, alone and in runs."""
    text = "".join(f"a{c}b{c}{c}{c * 70} c" for c in map(chr, range(top)))
    assert tm.tokenize(text, "none") == text.split()
    assert tm.corpus_bleu([text], [[text]], tokenize="none").counts[0] == len(text.split())


def test_zh_at_the_ends_of_a_line_equals_sacrebleus():
    """zh runs the 13a pass (tokenizers.hpp: a stand-in digit after a last '.' or ','), whose pad blanks zh
    does not add: every string of up to five of the characters that differ at a line's ends."""
    tok = sacrebleu_tokenizers()["zh"]
    for n in range(1, 6):
        for chars in itertools.product("5a.,- 中", repeat=n):
            text = "".join(chars)
            assert tm.tokenize(text, "zh") == tok(text.rstrip()).split(), text


def test_13a_one_pass_tokenizer_equals_sacrebleus_on_dense_punctuation():
    """The streaming 13a (tokenizers.hpp, t13a) on strings made of the characters its passes act on, next to
    each other in every combination: digits, '.', ',', '-', 13a punctuation, blanks and other spaces,
    letters (ASCII, Latin-1, BMP, astral); '<', '&' and newlines send a line to the literal path."""
    tok = sacrebleu_tokenizers()["13a"]
    alphabet = list("ab19.,-.,-()/:@ \t") + [
        "\u00a0",
        "é",
        "ß",
        "\u2009",
        "中",
        "\U0001f600",
        "'",
        "<",
        "&",
        "\n",
        "&quot;",
        "<skipped>",
        "-\n",
        "x.",
        "1.",
        ".1",
        "-1",
        "1-",
    ]
    rng = random.Random(13)
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert tm.tokenize(text, "13a") == tok(text.rstrip()).split(), repr(text)


def test_13a_every_latin1_character_in_every_storage_and_across_mask_words():
    """The Latin-1 13a classifies 16 bytes at a time and reads sub-words off 64-bit masks: every byte next
    to the characters the passes act on, the same line stored as UCS-2 and UCS-4 (the table path), and
    long lines whose sub-words, '.', ',' and digit-'-' pairs straddle the 64-character mask words."""
    tok = sacrebleu_tokenizers()["13a"]
    for b in map(chr, range(256)):
        for pattern in ("x{0}y 5{0}- .{0}, {0} 1{0}2 -{0}5 {0}{0}{0} {0}.", "{0}", "9{0}", "{0}-", "{0}a"):
            line = pattern.format(b)
            for wide in ("", " \u0100", " \U0001f600"):  # Latin-1, UCS-2, UCS-4 storage
                assert tm.tokenize(line + wide, "13a") == tok((line + wide).rstrip()).split(), repr(line + wide)
    rng = random.Random(64)
    alphabet = list("abcdefgh ab5,.-()'") + ["ab.", "2017,", "5-", "Wort", "  "]
    for _ in range(3000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(20, 120)))
        for wide in ("", " \u201e"):
            assert tm.tokenize(line + wide, "13a") == tok((line + wide).rstrip()).split(), repr(line + wide)


def test_13a_token_ids_agree_between_storages_and_hash_paths():
    """A token's hash comes from one load of its bytes (Latin-1, up to 8 characters, not at the line's end)
    or from its code points: both must give one id, or BLEU would miss matches. The same words in a
    Latin-1 hypothesis and in UCS-2 references, in the middle and at the end of lines."""
    words = ["a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "Straße", "ausgezeichnet", "x" * 17, "é"]
    rng = random.Random(8)
    hyps, refs = [], []
    for _ in range(300):
        ws = [rng.choice(words) for _ in range(rng.randint(1, 12))]
        hyps.append(" ".join(ws))
        refs.append("\u201e " + " ".join(reversed(ws)) if rng.random() < 0.5 else " ".join(ws) + " \u201e")
    ours = tm.corpus_bleu(hyps, [refs])
    assert_same(ours, sacrebleu.corpus_bleu(hyps, [refs]))
    assert ours.counts[0] == sum(len(h.split()) for h in hyps)  # every unigram matched


def test_intl_tables_come_from_the_installed_regex():
    import regex

    from turbometrics.text.tokenizers import REGEX_VERSIONS

    # the tests below compare every code point with sacrebleu's intl under this regex
    assert regex.__version__ in REGEX_VERSIONS, "check with tools/gen_unicode_tables.py --check (or regenerate)"


def test_zh_reproduces_the_range_quirk():
    from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

    for text in ("a“b”c", "x→y", "𠀀𠀁", "a⾅b", "2001 x"):
        assert tm.tokenize(text, "zh") == TokenizerZh()(text).split()
    assert tm.tokenize("a“b", "zh") == ["a", "“", "b"]  # U+201C counts as Chinese
    assert tm.tokenize("𠀀𠀁", "zh") == ["𠀀𠀁"]  # real ext. B does not


def test_every_code_point_splits_like_python():
    text = "".join(chr(c) + "x" for c in range(0x3100) if not 0xD800 <= c < 0xE000)
    assert tm.tokenize(text, "none") == text.rstrip().split()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: tm.corpus_bleu(["a", "b"], [["a"]]), ValueError, r"references\[0\] has 1 segments but there are 2"),
        (lambda: tm.corpus_bleu("a b", [["a b"]]), TypeError, "hypotheses must be a list of strings"),
        (lambda: tm.corpus_bleu(["a"], ["a"]), TypeError, r"references\[0\] must be a stream"),
        (lambda: tm.corpus_bleu(["a"], "a"), TypeError, "references must be a list of reference streams"),
        (lambda: tm.corpus_bleu(["a", 3], [["a", "b"]]), TypeError, r"hypotheses\[1\] must be a str"),
        (lambda: tm.corpus_bleu(["a"], [[b"a"]]), TypeError, r"references\[0\]\[0\] must be a str or None"),
        (lambda: tm.corpus_bleu(["a"], [[None]]), ValueError, "segment 0 has no reference"),
        (lambda: tm.corpus_bleu(["a"], []), ValueError, "references is empty"),
        (lambda: tm.corpus_bleu(["a"], [["a"]], tokenize="moses"), ValueError, "tokenize must be one of"),
        (lambda: tm.corpus_bleu(["a"], [["a"]], smooth_method="add-one"), ValueError, "smooth_method must be one of"),
        (
            lambda: tm.corpus_bleu(["a"], [["a"]], max_ngram_order=0),
            ValueError,
            r"max_ngram_order must be in \[1, 1024\]",
        ),
        (lambda: tm.corpus_bleu(["a"], [["a"]], max_ngram_order=2**31 - 1), ValueError, r"max_ngram_order must be in"),
        (lambda: tm.corpus_bleu(["a"], [["a"]], smooth_value="1"), TypeError, "smooth_value must be a number"),
        (lambda: tm.sentence_bleu(["a"], ["a"]), TypeError, "hypothesis must be a str"),
        (lambda: tm.sentence_bleu("a", "a"), TypeError, "references must be a list of strings"),
        (lambda: tm.sentence_bleu("a", []), ValueError, "references is empty"),
        (lambda: tm.tokenize(["a"]), TypeError, "text must be a str"),
        (lambda: tm.tokenize("a", "13b"), ValueError, "tokenizer must be one of"),
    ],
)
def test_bad_text_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


ODD = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40)


@settings(max_examples=200, deadline=None)
@given(hyp=ODD, ref=ODD, tokenize=st.sampled_from(TOKENIZERS))
def test_any_code_point_even_lone_surrogates_and_nul(hyp, ref, tokenize):
    """No crash, and sacrebleu's numbers, on any code points (surrogates, NUL, private use, unassigned)."""
    assert_same(
        tm.corpus_bleu([hyp], [[ref]], tokenize=tokenize), sacrebleu.corpus_bleu([hyp], [[ref]], tokenize=tokenize)
    )
    assert tm.corpus_chrf([hyp], [[ref]], word_order=2).score == CHRF(word_order=2).corpus_score([hyp], [[ref]]).score


def test_thread_count_does_not_change_text_results(wmt17):
    hyp, ref = wmt17["systems"]["online-G"], wmt17["ref"]
    for f in (tm.segment_bleu, tm.segment_chrf):
        np.testing.assert_array_equal(f(hyp, [ref], num_threads=1), f(hyp, [ref], num_threads=3))
    a, b = tm.rouge(hyp, ref, use_stemmer=True, num_threads=1), tm.rouge(hyp, ref, use_stemmer=True, num_threads=3)
    for t in a:
        np.testing.assert_array_equal(a[t].fmeasure, b[t].fmeasure)


def _repeating_segments():
    """Segments of 0-70 words from a 4-word vocabulary (n-grams that repeat; up to 64 words take the
    bit-mask counts), 1 or 2 references with gaps."""
    rng = np.random.default_rng(64)
    words = ["a", "b", "c", "d"]
    lengths = [0, 1, 2, 5, 20, 63, 64, 65, 70]
    hyps = [" ".join(rng.choice(words, n)) for n in lengths]
    refs = [
        [" ".join(rng.choice(words, n)) for n in rng.permutation(lengths)],
        [None if i % 2 else " ".join(rng.choice(words, n)) for i, n in enumerate(lengths)],
    ]
    return hyps, refs


def test_bit_mask_counts_match_sacrebleu_with_and_without_popcnt():
    hyps, refs = _repeating_segments()
    got = tm.segment_bleu(hyps, refs).tolist()
    assert got == [
        BLEU(effective_order=True).sentence_score(h, [r for r in rs if r is not None]).score
        for h, rs in zip(hyps, zip(*refs))
    ]
    # TURBOMETRICS_SIMD=baseline takes the code for CPUs without a popcount instruction
    code = (
        "import json, sys, turbometrics as tm; sys.path.insert(0, sys.argv[1])\n"
        "from test_bleu import _repeating_segments\n"
        "print(json.dumps(tm.segment_bleu(*_repeating_segments()).tolist()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, os.path.dirname(__file__)],
        capture_output=True,
        text=True,
        env=dict(os.environ, TURBOMETRICS_SIMD="baseline"),
        check=True,
    ).stdout
    assert json.loads(out) == got


@settings(max_examples=100, deadline=None)
@given(
    refs=st.lists(ADVERSARIAL, min_size=1, max_size=8),
    gaps=st.lists(st.booleans(), min_size=8, max_size=8),
    tokenize=st.sampled_from(TOKENIZERS),
)
def test_prepared_references_of_adversarial_text(refs, gaps, tokenize):
    # prepared references are joined in per-thread buffers, Latin-1 texts as bytes: the tokens of tm.tokenize
    second = [None if gap else r[::-1] for r, gap in zip(refs, gaps)]
    prepared = tm.prepare_references([refs, second], tokenize=tokenize, num_threads=2)
    for stream, texts in zip(prepared.streams, (refs, second)):
        assert [None if p is None else p.split(" ") if p else [] for p in stream] == [
            None if r is None else tm.tokenize(r, tokenize) for r in texts
        ]
