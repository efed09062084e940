"""Punkt sentence splitting (ROUGE-Lsum's split_summaries=True) against nltk's PunktSentenceTokenizer."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turbometrics.text import sentences

# pieces that exercise each rule: abbreviations, initials, numbers, ellipses, collocations, sentence
# starters, closing quotes and brackets for the realignment, line breaks and Unicode spaces, and
# characters where str and regex properties part (final sigma, dotted I, "½", information separators)
PIECES = [
    "Dr.",
    "Mr.",
    "mr.",
    "U.S.",
    "e.g.",
    "etc.",
    "J.",
    "a.",
    "No.",
    "1.",
    "12.5",
    "-3,4.",
    "1990s.",
    "The",
    "the",
    "He",
    "he",
    "In",
    "Smith",
    "Jan.",
    "Inc.",
    "Corp.",
    "St.",
    "st.",
    "vs.",
    "p.m.",
    "A.M.",
    "i.",
    "magnin",
    ".",
    "..",
    "...",
    ". . .",
    ". . . .",
    "!",
    "?",
    "!!",
    "?!",
    ",",
    ";",
    ":",
    "-",
    "--",
    "---",
    "'",
    '"',
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "\u201c",
    "\u201d",
    "\u2018",
    "\u2019",
    "\xab",
    "\xbb",
    "*",
    "@",
    "&",
    "#",
    "`",
    " ",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "\xa0",
    "\u2028",
    "\u3000",
    "\x1c",
    "\x85",
    "\u0301",
    "\u02b0",
    "\u200b",
    "\u03a3\u0391\u03a3.",
    "\u03a3.",
    "a\u03a3.",
    "\u0130stanbul.",
    "\u01c4.",
    "\xdf.",
    "\xc9lan",
    "\u0663.",
    "\xb2",
    "\xbd.",
    "\u212a.",
    "x_y.",
    "co-op.",
    "word",
    "Word",
    "WORD",
    "A",
    "ok.",
    "##number##.",
]


@pytest.fixture(scope="module")
def nltk_tok():
    """nltk's English Punkt tokenizer, its model read from the shared data."""
    import nltk
    from conftest import DATA
    from nltk.tokenize.punkt import PunktTokenizer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nltk.data, "path", [str(DATA / "nltk_data")] + list(nltk.data.path))
        return PunktTokenizer("english")


def ours(text):
    return [tuple(s) for s in sentences.sentence_spans([text])[0].tolist()]


def test_real_texts_split_like_nltk(summaries, wmt17, nltk_tok, nltk_punkt):
    texts = list(summaries[0]) + list(summaries[1])
    for name in sorted(wmt17["systems"])[:3]:  # multi-sentence news texts: five segments each
        seg = wmt17["systems"][name]
        texts += [" ".join(seg[i : i + 5]) for i in range(0, len(seg), 5)]
    got = sentences.sentence_spans(texts, 2)
    assert [[tuple(s) for s in g.tolist()] for g in got] == [list(nltk_tok.span_tokenize(t)) for t in texts]
    assert sentences.sent_tokenize(texts[0]) == __import__("nltk").sent_tokenize(texts[0])


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(st.one_of(st.sampled_from(PIECES), st.characters()), max_size=30),
    gaps=st.lists(st.sampled_from(["", " ", "\n"]), max_size=30),
)
def test_adversarial_texts_split_like_nltk(nltk_tok, parts, gaps):
    text = "".join(p + (gaps[i] if i < len(gaps) else "") for i, p in enumerate(parts))
    assert ours(text) == list(nltk_tok.span_tokenize(text))


def test_lines_and_threads(summaries):
    texts = list(summaries[0])
    one = sentences.sentence_lines(texts, 1)
    assert one == sentences.sentence_lines(texts, 2)
    assert one[:20] == [
        "\n".join(t[a:b].replace("\n", " ") for a, b in sp.tolist() if b > a)
        for t, sp in zip(texts[:20], sentences.sentence_spans(texts[:20]))
    ]
    assert sentences.sentence_lines(["", " ", "Dr.\nSmith went home. He slept."], 1) == [
        "",
        "",
        "Dr. Smith went home.\nHe slept.",
    ]


def test_missing_extra_is_named(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_punkt(name, *a, **k):
        if name == "punkt":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_punkt)
    sentences._splitter.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"turbometrics\[lsum\]"):
            sentences.check_available()
    finally:
        monkeypatch.undo()
        sentences._splitter.cache_clear()
