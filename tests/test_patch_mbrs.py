"""``tm.patch()`` of mbrs 0.1.8: ``MetricBLEU``, ``MetricChrF`` and ``MetricTER``'s ``pairwise_scores``,
``scores`` and ``corpus_score`` give the tensors (and floats) unpatched mbrs gives, bit for bit, on WMT17
segments; configurations we do not reproduce run the original, logged.

Unpatched mbrs scores each pair in a process pool (256 x 256 TER takes about 40 s on 2 cores), so the
256 x 256 matrices are ``slow``."""

import logging
import os
import subprocess
import sys
import textwrap

import pytest
import sacrebleu
import torch
from conftest import fetch_mbrs

import turbometrics as tm
from turbometrics.patch import PatchFallbackError, calls

FETCHED = fetch_mbrs()  # from the package index when not installed (no extra can hold mbrs: conftest.py)

from turbometrics._bench.cases_patch import mbrs_metrics  # noqa: E402

M = mbrs_metrics()
METRICS = {"BLEU": M.MetricBLEU, "ChrF": M.MetricChrF, "TER": M.MetricTER}


def make(name, **cfg):
    cls = METRICS[name]
    return cls(cls.Config(num_workers=2, **cfg))


def counted(kind):
    return sum(v for (name, k), v in calls().items() if k == kind and name.startswith("mbrs."))


def both(run, *args):
    """(unpatched result, patched result, patched calls that ran accelerated, that fell back)."""
    tm.unpatch()
    before = run(*args)
    tm.patch(["mbrs"])
    try:
        fast, slow = counted("accelerated"), counted("fallback")
        after = run(*args)
        return before, after, counted("accelerated") - fast, counted("fallback") - slow
    finally:
        tm.unpatch()


def same(a, b):
    if isinstance(a, torch.Tensor):
        assert type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
        assert torch.equal(a, b)
    else:
        assert type(a) is type(b) and a == b, (a, b)


def candidates(wmt17, segments, systems=None):
    """MBR's candidate list: every system's translation of each of the first ``segments`` segments."""
    names = sorted(wmt17["systems"])[:systems]
    return [wmt17["systems"][s][i] for i in range(segments) for s in names]


def small_inputs(wmt17):
    """64 candidates (4 segments x 16 systems, so near-duplicates and exact duplicates), with an empty
    string, one of spaces and a long one among them."""
    cands = candidates(wmt17, 4)
    cands[5], cands[17], cands[40] = "", "   ", " ".join(wmt17["ref"][100:110])
    return cands, wmt17["ref"][:64]


@pytest.mark.parametrize("name", list(METRICS))
def test_64_x_64_matrices_rows_and_corpus_scores(wmt17, name):
    cands, refs = small_inputs(wmt17)

    def run(metric):
        return [
            metric.pairwise_scores(cands, cands),  # MBR: the candidates are their own pseudo-references
            metric.pairwise_scores(cands, refs[:16]),  # (TER's unpatched matrices take seconds)
            metric.pairwise_scores(cands[:7], refs),
            metric.expected_scores(cands, list(cands)),  # the decoders' call (equal lists, not the same)
            metric.scores(cands, refs),
            metric.corpus_score(cands, [refs]),
            metric.corpus_score(cands, [refs, cands[::-1]]),
        ]

    before, after, fast, fell_back = both(run, make(name))
    for a, b in zip(before, after):
        same(a, b)
    assert before[0].dtype == torch.float32 and before[0].shape == (64, 64) and before[2].shape == (7, 64)
    assert (fast, fell_back) == (7, 0)


@pytest.mark.parametrize(
    "name", ["BLEU", pytest.param("ChrF", marks=pytest.mark.slow), pytest.param("TER", marks=pytest.mark.slow)]
)
def test_256_x_256_matrices(wmt17, name):
    hyps, refs = wmt17["systems"]["uedin-nmt"][:256], wmt17["systems"]["KIT"][:256]
    before, after, fast, _ = both(lambda m: m.pairwise_scores(hyps, refs), make(name))
    same(before, after)
    assert before.shape == (256, 256) and fast == 1


OPTIONS = {
    "BLEU": [
        {"lowercase": True, "smooth_method": "floor", "smooth_value": 0.2},
        {"tokenize": "intl", "smooth_method": "add-k", "max_ngram_order": 3},
        {"tokenize": "char", "smooth_method": "none"},
        {"trg_lang": "zh"},  # sacrebleu's zh tokenizer, chosen from the language
        {"tokenize": "ja-mecab"},  # sacrebleu's own MeCab tokenizer; ours counts its tokens
    ],
    "ChrF": [{"word_order": 2}, {"char_order": 4, "beta": 1, "lowercase": True, "whitespace": True}],
    "TER": [{"normalized": True, "no_punct": True}, {"case_sensitive": True, "asian_support": True}],
}


@pytest.mark.parametrize("name,cfg", [(n, c) for n, cs in OPTIONS.items() for c in cs], ids=str)
def test_options(wmt17, name, cfg):
    cands = candidates(wmt17, 2, 12) + ["这是一个测试。", "日本語のテキストです。"]
    refs = wmt17["ref"][:10] + ["这是测试。", "日本語です。"]

    def run(metric):
        return [
            metric.pairwise_scores(cands, refs),
            metric.scores(refs, refs[::-1]),
            metric.corpus_score(cands, [cands]),
        ]

    before, after, fast, fell_back = both(run, make(name, **cfg))
    for a, b in zip(before, after):
        same(a, b)
    assert (fast, fell_back) == (3, 0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_the_default_dtype(wmt17, dtype):
    cands = candidates(wmt17, 1)
    torch.set_default_dtype(dtype)  # mbrs' Tensor(list) makes it
    try:
        before, after, fast, _ = both(lambda m: [m.pairwise_scores(cands, cands), m.scores(cands, cands)], make("TER"))
    finally:
        torch.set_default_dtype(torch.float32)
    assert before[0].dtype == dtype and fast == 2
    for a, b in zip(before, after):
        same(a, b)


class ShoutingChrF(M.MetricChrF):
    def score(self, hypothesis, reference, *_, **__):  # pairwise_scores and scores call it in the workers
        return 2 * super().score(hypothesis, reference)


FALLBACKS = {
    "BLEU without effective_order": (lambda: make("BLEU", effective_order=False), "effective_order"),
    "chrF with fastchrf": (lambda: make("ChrF", fastchrf=True), "fastchrf"),
    "chrF with its own score": (lambda: ShoutingChrF(ShoutingChrF.Config(num_workers=2)), "score is overridden"),
    "TER with a subclassed scorer": (lambda: _ter_with_subclassed_scorer(), "scorer"),
}


class MyTER(sacrebleu.TER):  # at module level: the workers unpickle it
    pass


def _ter_with_subclassed_scorer():
    metric = make("TER")
    metric.scorer = MyTER()
    return metric


@pytest.mark.parametrize("case", list(FALLBACKS))
def test_configurations_we_do_not_reproduce_run_the_original(wmt17, case, caplog, monkeypatch):
    factory, reason = FALLBACKS[case]
    cands = candidates(wmt17, 1)
    runs = [lambda m: m.pairwise_scores(cands, cands), lambda m: m.scores(cands, cands[::-1])]
    with caplog.at_level(logging.INFO, logger="turbometrics.patch"):
        for run in runs:
            before, after, fast, fell_back = both(run, factory())
            same(before, after)
            assert (fast, fell_back) == (0, 1)
    messages = [r.getMessage() for r in caplog.records if r.name == "turbometrics.patch"]
    assert len(messages) == 2 and all(": fallback: " in m and reason in m for m in messages), messages
    monkeypatch.setenv("TURBOMETRICS_PATCH_STRICT", "1")
    tm.patch(["mbrs"])
    try:
        with pytest.raises(PatchFallbackError, match=reason):
            runs[0](factory())
    finally:
        tm.unpatch()


def test_inputs_mbrs_pairs_otherwise_run_the_original(wmt17):
    cands = candidates(wmt17, 1)
    metric = make("BLEU")

    def run(m):
        return [
            m.scores(cands, cands[:5]),  # mbrs pairs them up to the shorter side
            m.pairwise_scores(cands[:3], []),  # (3, 0)
            m.pairwise_scores(tuple(cands[:4]), cands[:2]),  # a tuple: any sequence of str is ours
        ]

    before, after, fast, fell_back = both(run, metric)
    for a, b in zip(before, after):
        same(a, b)
    assert before[0].shape == (5,) and before[1].shape == (3, 0)
    assert (fast, fell_back) == (1, 2)
    tm.patch(["mbrs"])
    try:
        with pytest.raises(TypeError, match="should be a string"):  # sacrebleu's own error, through mbrs
            metric.corpus_score([3], [["a"]])
        with pytest.raises(ValueError, match="chunksize"):  # the pool's own error for no hypotheses
            metric.pairwise_scores([], cands)
    finally:
        tm.unpatch()


def test_the_timer_counts_calls_as_mbrs_does(wmt17):
    from mbrs import timer

    cands = candidates(wmt17, 1)
    metric = make("ChrF")

    def run(m):
        timer.measure.reset()
        m.pairwise_scores(cands, cands)
        m.scores(cands, cands)
        return timer.measure.ncalls["score"]

    before, after, fast, _ = both(run, metric)
    assert before == after == 16 * 16 + 16 and fast == 2


def test_mbrs_imported_after_the_patch(tmp_path):
    code = textwrap.dedent("""
        import turbometrics as tm
        tm.patch()
        from turbometrics._bench.cases_patch import mbrs_metrics
        from turbometrics.patch import calls
        metrics = mbrs_metrics()
        for cls in (metrics.MetricBLEU, metrics.MetricChrF, metrics.MetricTER):
            cls(cls.Config()).pairwise_scores(["a b c d", "a b"], ["a b c", "b c d"])
        c = calls()
        assert c and all(kind == "accelerated" for _, kind in c), c
        print(sum(c.values()))
        """)
    env = {**os.environ, "TURBOMETRICS_PATCH_STRICT": "1"}
    if FETCHED:
        env["PYTHONPATH"] = os.pathsep.join([FETCHED, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "3"


def test_unpatch_restores_mbrs():
    before = [vars(cls).get(m) for cls in METRICS.values() for m in ("pairwise_scores", "scores", "corpus_score")]
    tm.patch(["mbrs"])
    try:
        assert tm.is_patched("mbrs")
        assert all(vars(M.MetricTER)[m].__module__ == "turbometrics.patch._mbrs" for m in ("scores", "corpus_score"))
    finally:
        tm.unpatch()
    after = [vars(cls).get(m) for cls in METRICS.values() for m in ("pairwise_scores", "scores", "corpus_score")]
    assert all(a is b for a, b in zip(after, before)) and None not in before
