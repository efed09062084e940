"""Patched torchmetrics BLEU, chrF, TER and ROUGE (``BLEUScore``, ``SacreBLEUScore``, ``CHRFScore``,
``TranslationEditRate``, ``ROUGEScore`` and their functions):
the same states, bit for bit, and the same scores as unpatched torchmetrics, on WMT17 and on generated text
(ties between references, empty and missing references, unicode whose lowercase or tokens differ between
torchmetrics and sacrebleu, whitespace of every kind)."""

import conftest
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torchmetrics.functional.text import bleu_score, chrf_score, rouge_score, sacre_bleu_score, translation_edit_rate
from torchmetrics.text import BLEUScore, CHRFScore, ROUGEScore, SacreBLEUScore, TranslationEditRate

from turbometrics.patch._torchmetrics_text import _differs

run_metric, same_tensors = conftest.run_metric, conftest.same_tensors


def both(run, *args):
    """(unpatched, patched torchmetrics, its accelerated calls): ``conftest.both``."""
    return conftest.both(run, *args, libraries=["torchmetrics"])


def same_outcomes(before, after):
    """Equal tensors, or the same error (``_outcome``'s (type, message))."""
    if isinstance(before[0], type):
        assert before == after
    else:
        same_tensors(before, after)


@pytest.fixture(scope="module")
def segments(wmt17):
    """Three references a segment (the reference and two other systems), a hypothesis system, 300 segments."""
    s = wmt17["systems"]
    refs = [list(r) for r in zip(wmt17["ref"], s["KIT"], s["online-B"])]
    return s["online-A"][:300], refs[:300]


BLEU_MAKERS = {
    "BLEUScore": lambda: BLEUScore(),
    "BLEUScore n_gram=2 smooth": lambda: BLEUScore(n_gram=2, smooth=True),
    "SacreBLEUScore": lambda: SacreBLEUScore(),
    "SacreBLEUScore intl lowercase": lambda: SacreBLEUScore(tokenize="intl", lowercase=True),
    "SacreBLEUScore char": lambda: SacreBLEUScore(tokenize="char", n_gram=6),
    "SacreBLEUScore zh lowercase": lambda: SacreBLEUScore(tokenize="zh", lowercase=True),
    "SacreBLEUScore none": lambda: SacreBLEUScore(tokenize="none", weights=[0.4, 0.3, 0.2, 0.1]),
}

CHRF_MAKERS = {
    "CHRFScore": lambda: CHRFScore(),
    "CHRFScore sentence scores": lambda: CHRFScore(return_sentence_level_score=True),
    "CHRFScore chrF (no words), whitespace": lambda: CHRFScore(n_word_order=0, whitespace=True),
    "CHRFScore lowercase beta=1": lambda: CHRFScore(lowercase=True, beta=1.0, n_char_order=4, n_word_order=3),
}


@pytest.mark.parametrize("name", list(BLEU_MAKERS))
def test_bleu_on_wmt17_three_references(segments, name):
    hyps, refs = segments
    batches = [(hyps[:200], refs[:200]), (hyps[200:], [r[:1] for r in refs[200:]])]  # 3 refs, then 1
    before, after, fast = both(run_metric, BLEU_MAKERS[name], batches)
    same_tensors(before, after)
    assert fast == 2


@pytest.mark.parametrize("name", list(CHRF_MAKERS))
def test_chrf_on_wmt17(segments, name):
    hyps, refs = segments
    batches = [(hyps[:40], refs[:40]), (hyps[40:80], [r[1:2] for r in refs[40:80]])]
    before, after, fast = both(run_metric, CHRF_MAKERS[name], batches)
    same_tensors(before, after)
    assert fast == 2


TER_MAKERS = {
    "TranslationEditRate": lambda: TranslationEditRate(),
    "TranslationEditRate sentence scores, cased": lambda: TranslationEditRate(
        lowercase=False, return_sentence_level_score=True
    ),
    "TranslationEditRate normalize no_punctuation asian": lambda: TranslationEditRate(
        normalize=True, no_punctuation=True, asian_support=True
    ),
}


@pytest.mark.parametrize("name", list(TER_MAKERS))
def test_ter_on_wmt17_three_references(segments, name):
    hyps, refs = segments
    batches = [(hyps[:25], refs[:25]), (hyps[25:50], [r[2:] for r in refs[25:50]])]
    before, after, fast = both(run_metric, TER_MAKERS[name], batches)
    same_tensors(before, after)
    assert fast == 2


ROUGE_MAKERS = {
    "ROUGEScore": lambda: ROUGEScore(),
    "ROUGEScore stemmer avg": lambda: ROUGEScore(use_stemmer=True, accumulate="avg"),
    "ROUGEScore rouge3/9/L": lambda: ROUGEScore(rouge_keys=("rouge3", "rouge9", "rougeL")),
}


@pytest.mark.parametrize("name", list(ROUGE_MAKERS))
def test_rouge_on_the_summaries(summaries, nltk_punkt, name):
    preds, refs = summaries
    two = [[r, p] for r, p in zip(refs, preds[1:] + preds[:1])]  # a second reference: another prediction
    batches = [(preds[:60], two[:60]), (preds[60:120], refs[60:120])]  # two references, then a str each
    before, after, fast = both(run_metric, ROUGE_MAKERS[name], batches)
    same_tensors(before, after)
    assert fast == 2


def test_the_functions(segments):
    hyps, refs = segments

    def run():
        return (
            bleu_score(hyps, refs, n_gram=3),
            sacre_bleu_score(hyps, refs, tokenize="13a", lowercase=True),
            sacre_bleu_score(hyps[:5], [r[:1] for r in refs[:5]], tokenize="intl"),
            chrf_score(hyps[:30], refs[:30], return_sentence_level_score=True),
            chrf_score(hyps[0], refs[0]),  # one segment, its references as strs
            translation_edit_rate(hyps[:20], refs[:20], return_sentence_level_score=True),
            translation_edit_rate(hyps[0], [refs[0][0]]),  # one segment: a str and a list of one str
            rouge_score(hyps[:20], refs[:20], rouge_keys=("rouge1", "rougeL")),
            rouge_score(hyps[0], refs[0][0], accumulate="avg", rouge_keys="rouge2"),
        )

    before, after, fast = both(run)
    same_tensors(before, after)
    assert fast == 9


def test_forward_as_lightning_calls_it(segments, nltk_punkt):
    """``metric(preds, target)`` (Lightning's ``self.metric(...)`` in a step): the batch's value, then compute()."""
    hyps, refs = segments
    makers = [
        BLEU_MAKERS["SacreBLEUScore"],
        CHRF_MAKERS["CHRFScore sentence scores"],
        TER_MAKERS["TranslationEditRate"],
    ]
    makers.append(lambda: ROUGEScore(rouge_keys=("rouge1", "rougeLsum")))

    def run():
        out = []
        for make in makers:
            m = make()
            steps = [m(hyps[a : a + 8], refs[a : a + 8]) for a in (0, 8)]
            out.append((steps, m.compute()))
        return out

    before, after, fast = both(run)
    same_tensors(before, after)
    assert fast >= 8


def test_chrf_states_past_float32s_integers(segments):
    """States near 2**24 (where float32 stops holding every integer): torchmetrics adds one segment at a time
    in float32, and so does the patch."""
    hyps, refs = segments

    def run():
        m = CHRFScore(n_word_order=1)
        for name in m._defaults:
            setattr(m, name, torch.tensor(2.0**24 - 3))
        m.update(hyps[:20], refs[:20])
        return {k: getattr(m, k) for k in m._defaults}, m.compute()

    before, after, _ = both(run)
    same_tensors(before, after)
    assert float(before[0]["total_preds_char_1_grams"]) > 2**24


def test_float64_states_and_a_reset(segments):
    hyps, refs = segments

    def run():
        out = []
        for m in (SacreBLEUScore(), CHRFScore(n_char_order=3)):
            m.set_dtype(torch.float64)
            m.update(hyps[:10], refs[:10])
            m.reset()
            m.update(hyps[10:20], refs[10:20])
            out.append(({k: getattr(m, k) for k in m._defaults}, m.compute()))
        return out

    before, after, _ = both(run)
    same_tensors(before, after)
    assert before[0][0]["numerator"].dtype == torch.float64


# --- generated text ----------------------------------------------------------------------------------------

# what tells torchmetrics' tokens and characters apart from sacrebleu's: case-folding past one code point,
# entities, hyphenated line breaks, trailing and unusual whitespace, numbers with separators, CJK
_PIECES = st.sampled_from(
    ["\u0130", "\u2126", "\u212a", "\u212b", "\u03a3", "\u0391\u03a3", "\u03c2", "-<skipped>\n", "&QUOT;",
     "&amp;", "<SKIPPED>", "<skipped>", "-\n", "\n", "\t",
     "\xa0", "  ", " ", ".", ",", "3.5", "1,000", "x-", "é", "ß", "中文", "の", "!", "'s", "(a)", "$", "--", "A",
     "b", "ab", "Ab"]
)  # fmt: skip
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=8).map("".join)


@st.composite
def corpora(draw, min_refs=1):
    n = draw(st.integers(0, 4))
    hyps = draw(st.lists(_TEXT, min_size=n, max_size=n))
    refs = [draw(st.lists(_TEXT, min_size=min_refs, max_size=3)) for _ in range(n)]
    return hyps, refs


def _outcome(run, *args):
    try:
        return run(*args)
    except ValueError as e:
        return type(e), str(e)


@settings(max_examples=120, deadline=None)
@given(
    corpora(),
    st.sampled_from(["13a", "intl", "char", "zh", "none"]),
    st.booleans(),
    st.integers(1, 4),
    st.booleans(),
)
def test_bleu_on_generated_text(data, tokenize, lowercase, n_gram, smooth):
    hyps, refs = data

    def run():
        return (
            run_metric(lambda: SacreBLEUScore(n_gram, smooth, tokenize, lowercase), [(hyps, refs)]),
            run_metric(lambda: BLEUScore(n_gram, smooth), [(hyps, refs)]),
        )

    before, after, _ = both(run)
    same_tensors(before, after)


@settings(max_examples=120, deadline=None)
@given(
    corpora(min_refs=0),
    st.integers(1, 4),
    st.integers(0, 2),
    st.sampled_from([2.0, 1.0, 0.5, 3.0, 0.1, 1.7]),
    st.booleans(),
    st.booleans(),
)
def test_chrf_on_generated_text(data, n_char, n_word, beta, lowercase, whitespace):
    hyps, refs = data

    def run():
        m = CHRFScore(n_char, n_word, beta, lowercase, whitespace, return_sentence_level_score=True)
        return _outcome(run_metric, lambda: m, [(hyps, refs)])

    same_outcomes(*both(run)[:2])


_WORDS = st.lists(st.sampled_from(["a", "b", "c", "d", "A", "e.", "'s", "&amp;", "中", "  ", "\t"]), max_size=14).map(
    " ".join
)


@settings(max_examples=120, deadline=None)
@given(
    st.integers(0, 4).flatmap(
        lambda n: st.tuples(
            st.lists(_WORDS, min_size=n, max_size=n),
            st.lists(st.lists(_WORDS, min_size=1, max_size=3), min_size=n, max_size=n),
        )
    ),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_ter_on_generated_text(data, normalize, lowercase, asian):
    """Repeated words make many shifts; empty hypotheses and references; torchmetrics' swapped roles."""
    hyps, refs = data

    def run():
        m = TranslationEditRate(normalize, False, lowercase, asian, return_sentence_level_score=True)
        return _outcome(run_metric, lambda: m, [(hyps, refs)])

    same_outcomes(*both(run)[:2])


_SENTENCES = st.lists(
    st.sampled_from(["The cat sat.", "Dr. Smith ran", "dogs running!", "\n", " ", "a b a b", "U.S. Army", "3.5 m", "?"])
    | st.text(max_size=6),
    max_size=6,
).map(" ".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(  # (nltk_punkt only puts the shared data on nltk's path: the same for every example)
    st.integers(0, 3).flatmap(
        lambda n: st.tuples(
            st.lists(_SENTENCES, min_size=n, max_size=n),
            st.lists(st.lists(_SENTENCES, min_size=1, max_size=3), min_size=n, max_size=n),
        )
    ),
    st.booleans(),
    st.sampled_from(["best", "avg"]),
)
def test_rouge_on_generated_text(nltk_punkt, data, stem, accumulate):
    """Ties between references' F (the first wins), empty texts and sentences, repeated words (LCS unions)."""
    hyps, refs = data
    keys = ("rouge1", "rouge2", "rougeL", "rougeLsum")
    before, after, _ = both(
        run_metric, lambda: ROUGEScore(stem, accumulate=accumulate, rouge_keys=keys), [(hyps, refs)]
    )
    same_tensors(before, after)


def test_reference_length_ties_take_the_first_reference():
    """torchmetrics takes the first of two equally close references (sacrebleu: the shorter)."""
    hyps = ["a b c", "a b c d"]
    refs = [["a b c d", "a b"], ["a b c d e f", "a b"]]
    before, after, fast = both(run_metric, BLEUScore, [(hyps, refs)])
    same_tensors(before, after)
    assert float(after[0]["target_len"]) == 4 + 6  # sacrebleu: 2 + 2
    assert fast == 1


def test_fallbacks_run_the_original(caplog):
    """What the patch does not reproduce runs torchmetrics' own code: a custom tokenizer, a str as preds (which
    torchmetrics reads character by character), a segment without references (torchmetrics fails on it)."""

    class Custom(SacreBLEUScore):
        def update(self, preds, target):
            from torchmetrics.functional.text.bleu import _bleu_score_update

            self.preds_len, self.target_len = _bleu_score_update(
                preds, target, self.numerator, self.denominator, self.preds_len, self.target_len, 4, str.split
            )

    def run():
        out = [run_metric(Custom, [(["a b c"], [["a b c"]])]), run_metric(BLEUScore, [("a b", [["a"], ["b"]])])]
        out.append(_outcome(run_metric, BLEUScore, [(["a"], [[]])]))
        out.append(run_metric(BLEUScore, [(["a b", "c"], ["a b", "c d"])]))  # strs as targets: read by character
        return out

    before, after, fast = both(run)
    same_tensors(before[:2] + before[3:], after[:2] + after[3:])
    assert before[2] == after[2] and before[2][0] is ValueError
    assert fast == 0


def test_what_lowercasing_after_tokenizing_changes():
    """str.lower() makes a final sigma of a capital sigma before a space: torchmetrics lowercases after its
    tokenizer has put spaces in (BLEU), and before removing spaces (chrF); and 13a drops "<skipped>" before
    "-\\n", where sacrebleu has stripped the line first (found by a review)."""

    def run():
        return (
            run_metric(
                lambda: SacreBLEUScore(1, tokenize="char", lowercase=True), [(["\u0391\u03a3"], [["\u03b1\u03c2"]])]
            ),
            run_metric(
                lambda: SacreBLEUScore(1, lowercase=True), [(["\u0391\u03a3:\u0392"], [["\u03b1\u03c3 : \u03b2"]])]
            ),
            run_metric(lambda: SacreBLEUScore(2), [(["a b-<skipped>\n"], [["a b"]])]),
            run_metric(lambda: CHRFScore(2, 0, lowercase=True), [(["\u0391\u03a3 \u0392"], [["\u03b1\u03c2\u03b2"]])]),
        )

    before, after, fast = both(run)
    same_tensors(before, after)
    assert fast == 4


def test_rouge_fallbacks(nltk_punkt, monkeypatch):
    """A key given twice (torchmetrics interleaves its copies), a replaced sentence splitter, str subclasses (which
    may split their own way): the original runs (found by a review)."""
    import torchmetrics.functional.text.rouge as tr

    class Odd(str):
        def split(self, *args):
            return ["same"]

    def run():
        return (
            run_metric(lambda: ROUGEScore(rouge_keys=("rouge1", "rouge1")), [(["a b", "b c d"], [["a b c"], ["b c"]])]),
            run_metric(lambda: BLEUScore(2), [([Odd("a b")], [["c d"]])]),
        )

    before, after, fast = both(run)
    same_tensors(before, after)
    assert fast == 0
    monkeypatch.setattr(tr, "_split_sentence", lambda x: x.split(" "))
    before, after, fast = both(
        run_metric, lambda: ROUGEScore(rouge_keys=("rougeLsum",)), [(["x y. a b"], [["a b x y"]])]
    )
    same_tensors(before, after)
    assert fast == 0


def test_an_nltk_before_3_10_splits_its_own_way(nltk_punkt, monkeypatch):
    """nltk before 3.10 describes characters with re, not regex: ROUGE-Lsum runs the original there, in
    torchmetrics and in rouge-score's split_summaries."""
    import importlib.metadata

    from rouge_score import rouge_scorer

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "3.9.1" if name == "nltk" else real(name))

    def run():
        scorer = rouge_scorer.RougeScorer(["rougeLsum"], split_summaries=True)
        return (
            run_metric(lambda: ROUGEScore(rouge_keys=("rougeLsum",)), [(["x. a"], [["a x"]])]),
            [torch.tensor(list(scorer.score("a x", "x. a")["rougeLsum"]))],
        )

    before, after, fallbacks = conftest.both(run, libraries=["torchmetrics", "rouge_score"], kind="fallback")
    same_tensors(before, after)
    assert fallbacks == 2


def test_intl_under_another_regex_release_takes_its_tokens(segments, monkeypatch):
    """Our intl tables reproduce a few ``regex`` releases; under another, torchmetrics' and sacrebleu's own intl
    tokenizers run and the kernel counts their tokens (still accelerated, the same numbers)."""
    import regex
    import sacrebleu

    hyps, refs = segments
    monkeypatch.setattr(regex, "__version__", "2020.1.1")

    def run():
        return (
            run_metric(lambda: SacreBLEUScore(tokenize="intl"), [(hyps[:50], refs[:50])]),
            [torch.tensor(sacrebleu.corpus_bleu(hyps[:50], [r[0] for r in refs[:50]], tokenize="intl").score)],
        )

    before, after, fast = conftest.both(run, libraries=["torchmetrics", "sacrebleu"])
    same_tensors(before, after)
    assert fast >= 2


def test_differs_flags_what_the_tokenizers_split_apart():
    assert _differs("13a", False, "a-\nb") and not _differs("13a", False, "a-b")
    assert _differs("13a", True, "&QUOT;") and not _differs("13a", False, "&QUOT;")
    assert _differs("intl", False, "2026. ") and not _differs("intl", False, "2026.")
    assert _differs("char", True, "İ") and not _differs("char", False, "İ")
    assert _differs("zh", True, "\u2126") and not _differs("none", True, "\u2126 \u0130")
    assert _differs("13a", False, "b-<skipped>\n") and _differs("intl", True, "\u03a3")


def test_the_docs_example_runs(capsys):
    """docs/patch.md's torchmetrics example, as written: patched, it prints unpatched torchmetrics' numbers."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "patch.md").read_text(encoding="utf-8")
    section = text[text.index("## torchmetrics' text metrics") :]
    block = re.search(r"^```python\n(.*?)^```", section, flags=re.S | re.M).group(1)
    exec(compile(block, "docs/patch.md torchmetrics example", "exec"), {})
    printed = capsys.readouterr().out.split()
    preds, target = ["The cat sat on the mat."], [["The cat sat on a mat."]]
    expected = [f"{float(m(preds, target)):.4f}" for m in (SacreBLEUScore(), CHRFScore())]
    assert printed == expected == block.split("numbers: ")[1].split()[:2]


def test_np_cumsum_adds_in_order():
    """The chrF states' emulation relies on NumPy's float32 cumsum adding one value at a time."""
    v = np.array([2.0**24, 1, 1, 1, 1], np.float32)
    assert np.cumsum(v, dtype=np.float32)[-1] == 2.0**24  # each +1 rounds back (pairwise would give 2**24 + 4)


def test_rouge_before_1_6_is_left_unpatched(monkeypatch, summaries, nltk_punkt):
    """torchmetrics before 1.6 takes every key's scores from the reference best by the first key's F (tested on
    1.0.3 to 1.5.2): its ROUGE is left to it, with a warning."""
    import turbometrics as tm
    from turbometrics.patch import _torchmetrics_text

    preds, refs = summaries
    tm.unpatch()
    monkeypatch.setattr(_torchmetrics_text, "torchmetrics_version", lambda: (1, 5, 2))
    with pytest.warns(RuntimeWarning, match="before 1.6 picks ROUGE's best reference"):
        before, after, fast = both(rouge_score, preds[:3], [[r, r[::-1]] for r in refs[:3]])
    same_tensors(before, after)
    assert fast == 0
