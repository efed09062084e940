"""Patched torchmetrics edit-distance metrics (``WordErrorRate``, ``CharErrorRate``, ``MatchErrorRate``,
``WordInfoLost``, ``WordInfoPreserved``, ``EditDistance``, ``ExtendedEditDistance`` and their functions): the
same states, bit for bit, and the same values as unpatched torchmetrics, on WMT17 and on generated text
(unicode and every kind of whitespace, empty texts, unequal lists); the kernel's distances against a plain DP."""

import conftest
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torchmetrics.functional.text import (
    char_error_rate,
    edit_distance,
    extended_edit_distance,
    match_error_rate,
    word_error_rate,
    word_information_lost,
    word_information_preserved,
)
from torchmetrics.functional.text.helper import _edit_distance
from torchmetrics.text import (
    CharErrorRate,
    EditDistance,
    ExtendedEditDistance,
    MatchErrorRate,
    WordErrorRate,
    WordInfoLost,
    WordInfoPreserved,
)

from turbometrics._ext import _text
from turbometrics.patch import PatchFallbackError
from turbometrics.patch._torchmetrics_edit import _sums
from turbometrics.text.edit_distance import distances

run_metric, same_tensors = conftest.run_metric, conftest.same_tensors

MAKERS = {
    "WordErrorRate": WordErrorRate,
    "CharErrorRate": CharErrorRate,
    "MatchErrorRate": MatchErrorRate,
    "WordInfoLost": WordInfoLost,
    "WordInfoPreserved": WordInfoPreserved,
    "EditDistance": EditDistance,
    "EditDistance sum, substitution 2": lambda: EditDistance(substitution_cost=2, reduction="sum"),
    "EditDistance none, substitution 0": lambda: EditDistance(substitution_cost=0, reduction="none"),
}


def both(run, *args):
    return conftest.both(run, *args, libraries=["torchmetrics"])


def batches(hyps, refs, size):
    return [(hyps[a : a + size], refs[a : a + size]) for a in range(0, len(hyps), size)]


@pytest.mark.parametrize("name", list(MAKERS))
def test_on_wmt17(wmt17, name):
    """Batches of 16 of 120 segments (the character DPs of unpatched torchmetrics take 5 ms a segment)."""
    hyps, refs = wmt17["systems"]["online-A"][:120], wmt17["ref"][:120]
    before, after, fast = both(run_metric, MAKERS[name], batches(hyps, refs, 16))
    same_tensors(before, after)
    assert fast == 8


def test_the_functions(wmt17):
    hyps, refs = wmt17["systems"]["KIT"][:40], wmt17["ref"][:40]

    def run():
        return (
            word_error_rate(hyps, refs),
            char_error_rate(hyps[:20], refs[:20]),
            match_error_rate(hyps, refs),
            word_information_lost(hyps, refs),
            word_information_preserved(hyps, refs),
            edit_distance(hyps[:20], refs[:20], reduction="none"),
            word_error_rate(hyps[0], refs[0]),  # one pair as two str
            char_error_rate(hyps[:3], refs[:2]),  # zip: the shorter list
            edit_distance(hyps[0], refs[0], substitution_cost=3),
        )

    before, after, fast = both(run)
    same_tensors(before, after)
    assert fast == 9


def test_forward_as_lightning_calls_it(wmt17):
    hyps, refs = wmt17["systems"]["online-B"][:32], wmt17["ref"][:32]

    def run():
        out = []
        for make in (WordErrorRate, CharErrorRate, WordInfoLost, EditDistance):
            m = make()
            steps = [m(hyps[a : a + 8], refs[a : a + 8]) for a in range(0, 32, 8)]
            out.append((steps, m.compute()))
        return out

    before, after, fast = both(run)
    same_tensors(before, after)
    assert fast >= 16


def test_float64_default_dtype_and_a_reset(wmt17):
    """WordInfoLost's and WordInfoPreserved's states are ``tensor(0.0)``: torch's default dtype."""
    hyps, refs = wmt17["systems"]["online-B"][:30], wmt17["ref"][:30]

    def run():
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            out = []
            for make in (WordInfoLost, WordInfoPreserved, WordErrorRate):
                m = make()
                m.update(hyps[:10], refs[:10])
                m.reset()
                m.update(hyps[10:], refs[10:])
                out.append(({k: getattr(m, k) for k in m._defaults}, m.compute()))
            return out
        finally:
            torch.set_default_dtype(old)

    before, after, fast = both(run)
    same_tensors(before, after)
    assert before[0][0]["errors"].dtype == torch.float64 and before[2][0]["errors"].dtype == torch.float32
    assert fast == 6


def test_sums_round_as_torch_adds_one_pair_at_a_time():
    """Past 2**24 float32 stops holding every integer: torchmetrics' ``tensor(0.) += count`` rounds at each pair,
    and so does the patch's sum (exact integer sums below it)."""
    rng = np.random.default_rng(0)
    for values in (rng.integers(0, 20_000, 2_000), np.array([2**24 - 1, 1, 1, 1, 3, 5]), np.array([], np.int64)):
        for dtype in (torch.float32, torch.float64):
            expected = torch.tensor(0.0, dtype=dtype)
            for v in values.tolist():
                expected += v
            (got,) = _sums([values.astype(np.int64)], dtype)
            assert got.dtype == dtype and torch.equal(got, expected), (values[:3], dtype)


EED_MAKERS = {
    "ExtendedEditDistance": lambda: ExtendedEditDistance(return_sentence_level_score=True),
    "ExtendedEditDistance ja": lambda: ExtendedEditDistance(language="ja", return_sentence_level_score=True),
    "ExtendedEditDistance parameters": lambda: ExtendedEditDistance(alpha=0.5, rho=1.5, deletion=0.0, insertion=2.0),
}


@pytest.mark.parametrize("name", list(EED_MAKERS))
def test_eed_on_wmt17_two_references(wmt17, name):
    """EED's DP in doubles, its score, best reference and tensor as torchmetrics makes them (80 segments: the
    unpatched DP takes 5 ms a pair)."""
    s = wmt17["systems"]
    hyps, refs = s["online-A"][:40], [list(r) for r in zip(wmt17["ref"][:40], s["KIT"][:40])]
    before, after, fast = both(run_metric, EED_MAKERS[name], batches(hyps, refs, 16))
    same_tensors(before, after)
    assert fast == 3


def test_eed_functions_and_its_integer_one():
    """A score of at least 1 is ``min(1, x)``'s int 1, so the sentence tensor is int64 there."""

    def run():
        return (
            extended_edit_distance(["a" * 40], [["b"]], return_sentence_level_score=True),
            extended_edit_distance(
                ["abc", "the cat"], [["xyz qq w"], ["the cat", "a cat"]], return_sentence_level_score=True
            ),
            extended_edit_distance("Mr. Smith, e.g. 3.5!", ["Mr . Smith , e . g . 3 . 5 !"], alpha=0.0, rho=0.0),
            extended_edit_distance(["a"], [[]]),  # (no references: no scores)
        )

    before, after, fast = both(run)
    same_tensors(before, after)
    assert before[0][1].dtype == torch.int64 and fast == 4


# --- generated text ----------------------------------------------------------------------------------------

# every kind of whitespace str.split() splits on, and characters around it: astral, combining, CJK, lone
# surrogates, case pairs
_PIECES = st.sampled_from(
    [" ", "  ", "\t", "\n", "\x1c", "\x1f", "\x85", "\xa0", "\u1680", "\u2000", "\u2028", "\u3000", "\u200b",
     "a", "b", "ab", "ba", "A", "é", "e\u0301", "中", "文", "😀", "\ud800", "-", ".", "x" * 70]
)  # fmt: skip
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=12).map("".join)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_TEXT, max_size=5),
    st.lists(_TEXT, max_size=5),
    st.sampled_from(list(MAKERS) + list(EED_MAKERS)),
)
def test_on_generated_text(hyps, refs, name):
    def run():
        try:
            if name in EED_MAKERS:  # two references a segment
                return run_metric(EED_MAKERS[name], [(hyps, [[r, r[::-1]] for r in refs[: len(hyps)]])])
            return run_metric(MAKERS[name], [(hyps, refs)])
        except (ValueError, RuntimeError, ZeroDivisionError, IndexError) as e:
            return type(e), str(e)

    before, after, fast = both(run)
    if isinstance(before[0], type):
        assert before == after
    else:
        same_tensors(before, after)
        assert fast == 1


_IDS = st.lists(st.integers(0, 3), max_size=200) | st.lists(st.integers(0, 1000), max_size=200)


@settings(max_examples=300, deadline=None)
@given(_IDS, _IDS)
def test_bit_parallel_levenshtein_is_the_dp(a, b):
    """Across block boundaries (64, 128 positions), small and large alphabets, shared prefixes and suffixes."""
    for x, y in ((a, b), (a + b, b + a), (a * 3, a * 2 + b)):
        bits, dp = _text.levenshtein_pair(np.array(x, np.intc), np.array(y, np.intc))
        assert bits == dp


def test_the_kernel_against_torchmetrics_own_dp(wmt17):
    hyps, refs = wmt17["systems"]["C-3MA"][:200], wmt17["ref"][:200]
    d = distances(hyps, refs, True)
    assert d[:, 0].tolist() == [_edit_distance(h.split(), r.split()) for h, r in zip(hyps, refs)]
    assert d[:, 1].tolist() == [len(h.split()) for h in hyps] and d[:, 2].tolist() == [len(r.split()) for r in refs]
    d = distances(hyps[:50], refs[:50], False)
    assert d[:, 0].tolist() == [_edit_distance(list(h), list(r)) for h, r in zip(hyps[:50], refs[:50])]


def test_long_texts_take_every_mask_path():
    """Patterns past 32,768 symbols keep only their frequent symbols' masks (the others are built when met)."""
    rng = np.random.default_rng(1)
    a = rng.integers(0, 300, 33_000).astype(np.intc)
    a[::2] = 0  # one frequent symbol, many rare ones
    b = a.copy()
    b[rng.integers(0, len(b), 500)] = rng.integers(0, 300, 500)
    bits, dp = _text.levenshtein_pair(a, np.concatenate([b, a[:40]]))
    assert bits == dp


def test_fallbacks_run_the_original(monkeypatch):
    """str subclasses, an iterator, a float substitution cost, an infinite EED alpha, a float16 default dtype
    and texts over the kernel's limit run torchmetrics' own code; lists of different lengths give
    EditDistance's own error, also under strict mode."""

    class Words(str):
        def split(self, *args):
            return list(self)

    def run():
        out = [
            word_error_rate([Words("a b")], ["a c"]),
            char_error_rate(["ab"], [Words("ac")]),
            char_error_rate(iter(["ab", "b"]), ["ac", "b"]),
            edit_distance(["abc"], ["abd"], substitution_cost=1.5),
            extended_edit_distance(["a b"], [["a c"]], alpha=float("inf")),
        ]
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float16)
        try:
            out.append(word_information_lost(["a b"], ["a c"]))
        finally:
            torch.set_default_dtype(old)
        return out

    before, after, fast = both(run)
    same_tensors(before, after)
    assert fast == 0
    monkeypatch.setattr(_text, "MAX_TEXT_CHARS", 4)  # a text over the kernel's limit: the original's numbers
    before, after, fast = both(word_error_rate, ["a b c", "a"], ["a b", "a c"])
    same_tensors(before, after)
    assert fast == 0
    monkeypatch.undo()
    with pytest.raises(ValueError, match="over the limit"):  # 2**38 token pairs: what torchmetrics cannot do
        distances(["ab" * 300_000 + "x"], ["c" + "ab" * 300_000], False)
    assert distances(["ab" * 300_000], ["ab" * 300_000], False).tolist() == [[0, 600_000, 600_000]]
    monkeypatch.setenv("TURBOMETRICS_PATCH_STRICT", "1")
    with pytest.raises(ValueError, match="same length"):
        both(edit_distance, ["a", "b"], ["a"])
    with pytest.raises(PatchFallbackError, match="str subclass|list or tuple of str"):
        both(word_error_rate, [Words("a b")], ["a c"])


def test_an_entry_point_another_version_lacks_is_left_unpatched(monkeypatch):
    """torchmetrics 1.0 calls ``_word_info_lost_update`` ``_wil_update``: the patch warns and leaves it, patches the
    rest, and the import that triggered it still works."""
    from torchmetrics.functional.text import wil

    import turbometrics as tm

    tm.unpatch()
    monkeypatch.delattr(wil, "_word_info_lost_update")
    try:
        with pytest.warns(RuntimeWarning, match="wil._word_info_lost_update not found .*left unpatched"):
            tm.patch(["torchmetrics"])
        assert tm.is_patched("torchmetrics")
        with pytest.warns(RuntimeWarning, match="left unpatched"):  # (both() patches again)
            before, after, fast = both(word_error_rate, ["a b"], ["a c"])
        same_tensors(before, after)
        assert fast == 1
    finally:
        tm.unpatch()


def test_the_docs_example_runs(capsys):
    """docs/patch.md's speech-metrics example, as written: patched, it prints unpatched torchmetrics' numbers."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "patch.md").read_text(encoding="utf-8")
    section = text[text.index("## torchmetrics' speech metrics") :]
    block = re.search(r"^```python\n(.*?)^```", section, flags=re.S | re.M).group(1)
    exec(compile(block, "docs/patch.md speech-metrics example", "exec"), {})
    printed = capsys.readouterr().out.split()
    preds, target = ["the cat sat on the mat", "a quick brown fox"], ["the cat sat on a mat", "the quick brown fox"]
    expected = [f"{float(m(preds, target)):.4f}" for m in (WordErrorRate(), CharErrorRate())]
    assert printed == expected == block.split("numbers: ")[1].split()[:2]
