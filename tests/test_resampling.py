"""Bootstrap intervals and paired tests: sacrebleu / rouge-score parity, default-mode properties."""

import numpy as np
import pytest
from rouge_score import rouge_scorer, scoring
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

import turbometrics as tm
from turbometrics import resampling

BLEU_OPTIONS = [
    {},
    {"smooth_method": "floor"},
    {"smooth_method": "add-k", "smooth_value": 2},
    {"smooth_method": "none", "effective_order": True},
    {"lowercase": True, "tokenize": "intl"},
]
CHRF_OPTIONS = [{}, {"word_order": 2}, {"eps_smoothing": True, "char_order": 4}]


def _ours(kind, options, hyps, refs):
    acc = (tm.metrics.BLEU if kind == "bleu" else tm.metrics.CHRF)(**options)
    return acc.update(hyps, refs)


def _close_pair(wmt17, kind="bleu"):
    """Two systems 0.26 BLEU (0.04 chrF) apart: paired tests with p-values far from their minimum."""
    a, b = ("FBK", "KIT") if kind == "bleu" else ("SYSTRAN", "RWTH-nmt-ensemble")
    return wmt17["systems"][a], wmt17["systems"][b]


@pytest.mark.slow
@pytest.mark.parametrize("kind,options", [("bleu", o) for o in BLEU_OPTIONS] + [("chrf", o) for o in CHRF_OPTIONS])
def test_sacrebleu_confidence_interval(wmt17, kind, options, monkeypatch):
    name = sorted(wmt17["systems"])[2]
    hyps, refs = wmt17["systems"][name], [wmt17["ref"]]
    for seed, n in ((12345, 1000), (7, 240)):
        monkeypatch.setenv("SACREBLEU_SEED", str(seed))
        theirs = (BLEU if kind == "bleu" else CHRF)(**options).corpus_score(hyps, refs, n_bootstrap=n)
        ours = tm.bootstrap_ci(_ours(kind, options, hyps, refs), n_resamples=n, seed=seed, mode="sacrebleu")
        assert (ours.score, ours.mean, ours.ci) == (theirs.score, float(theirs._mean), float(theirs._ci))


def test_sacrebleu_mode_compiled_draws_equal_numpys(wmt17, monkeypatch):
    """Compiled draws and float32 sums (_ext/resample.hpp) against NumPy's choice and sums: the same
    interval; a seed whose entropy is not an integer (a list) takes NumPy's path."""
    acc = _ours("bleu", {}, wmt17["systems"]["uedin-nmt"], [wmt17["ref"]])
    compiled = [tm.bootstrap_ci(acc, n_resamples=300, seed=s, mode="sacrebleu") for s in (3, [3, 4])]
    monkeypatch.setattr(resampling, "_words", lambda entropy: None)
    assert compiled == [tm.bootstrap_ci(acc, n_resamples=300, seed=s, mode="sacrebleu") for s in (3, [3, 4])]


@pytest.mark.slow
@pytest.mark.parametrize("test_type", ["bs", "ar"])
@pytest.mark.parametrize("kind", ["bleu", "chrf"])
def test_sacrebleu_paired(wmt17, kind, test_type):
    base, close = _close_pair(wmt17, kind)
    far = wmt17["systems"]["uedin-nmt"]
    refs = [wmt17["ref"]]
    metric = BLEU() if kind == "bleu" else CHRF()
    n = 1000 if test_type == "bs" else 2000
    _, theirs = PairedTest(
        [("base", base), ("close", close), ("far", far)], {"m": metric}, refs, test_type=test_type, n_samples=n
    )()
    results = list(theirs.values())[1]
    method = "bootstrap" if test_type == "bs" else "randomization"
    p_values = []
    for i, hyps in enumerate((close, far), 1):
        ours = tm.paired_test(
            _ours(kind, {}, base, refs), _ours(kind, {}, hyps, refs), method=method, n_resamples=n, mode="sacrebleu"
        )
        r = results[i]
        assert (ours.system, ours.baseline, ours.p_value) == (r.score, results[0].score, r.p_value)
        if test_type == "bs":
            assert (ours.mean, ours.ci) == (float(r.mean), float(r.ci))
            assert (ours.baseline_mean, ours.baseline_ci) == (float(results[0].mean), float(results[0].ci))
        p_values.append(ours.p_value)
    assert p_values[0] > 0.01  # the close system really exercises the counting


def test_rouge_score_bootstrap(summaries):
    preds, refs = summaries
    types = ["rouge1", "rougeL"]
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=True)
    for confidence in (0.95, 0.9):
        agg = scoring.BootstrapAggregator(confidence_interval=confidence, n_samples=300)
        for p, r in zip(preds, refs):
            agg.add_scores(scorer.score(r, p))
        np.random.seed(99)
        theirs = agg.aggregate()
        acc = tm.metrics.ROUGE(types, use_stemmer=True).update(preds[:100], refs[:100]).update(preds[100:], refs[100:])
        np.random.seed(99)
        ours = tm.bootstrap_ci(acc, n_resamples=300, confidence=confidence, seed=None, mode="rouge_score")
        assert list(ours) == types
        for t in types:
            assert tuple(ours[t].low) == tuple(theirs[t].low)
            assert tuple(ours[t].mean) == tuple(theirs[t].mid)
            assert tuple(ours[t].high) == tuple(theirs[t].high)
        # an int seed is a fresh RandomState(seed)
        np.random.seed(5)
        a = tm.bootstrap_ci(acc, n_resamples=50, seed=None, mode="rouge_score")
        b = tm.bootstrap_ci(acc, n_resamples=50, seed=5, mode="rouge_score")
        assert all((a[t].low, a[t].mean, a[t].high) == (b[t].low, b[t].mean, b[t].high) for t in types)


def _numpy_draws(n: int, count: int, seed) -> list:
    """The default mode's documented draws, made by NumPy: resample r from its own spawned stream."""
    return [
        np.random.default_rng(s).integers(0, n, n, dtype=np.uint32) for s in np.random.SeedSequence(seed).spawn(count)
    ]


@pytest.mark.parametrize("seed", [0, 1, 42, 2**32, 2**64 + 5, 2**200 + 3])
def test_compiled_draws_are_numpys(seed, monkeypatch):
    """_ext/resample.hpp remakes SeedSequence -> PCG64 -> integers(0, n, n) per resample: the same counts."""
    for n, count in ((1, 3), (2, 5), (3000, 40), (65537, 3)):
        want = np.stack([np.bincount(d, minlength=n) for d in _numpy_draws(n, count, seed)])
        got = np.concatenate(list(resampling._draws("counts", n, count, seed, 2)))
        assert got.dtype == np.int32 and (got == want).all(), (seed, n)
    monkeypatch.setattr(resampling, "_CHUNK_DRAWS", 7000)  # resamples 1.. start mid-way: spawn keys r0 + r
    assert (
        np.concatenate(list(resampling._draws("counts", 3000, 5, seed, 1)))
        == np.stack([np.bincount(d, minlength=3000) for d in _numpy_draws(3000, 5, seed)])
    ).all()
    monkeypatch.setattr(resampling, "_entropy_words", lambda seed: None)  # NumPy's own draws (past 2**32 items)
    assert (
        np.concatenate(list(resampling._draws("counts", 50, 4, seed, 2)))
        == np.stack([np.bincount(d, minlength=50) for d in _numpy_draws(50, 4, seed)])
    ).all()


def _block_sums(cols, counts):
    """The float order of _ext/resample.hpp's sums, by hand: items in 16 fixed blocks, each summed from +0.0
    in item order (an item drawn 0 times adds 0, not 0 * inf), the blocks then added in block order."""
    n = counts.shape[1]
    step = -(-n // 16)
    total = None
    for b in range(16):
        part = np.zeros((counts.shape[0], cols.shape[0]))
        for i in range(b * step, min(n, (b + 1) * step)):
            c = counts[:, i : i + 1]
            part = part + c * np.where(c != 0, cols[:, i], 0.0)
        total = part if b == 0 else total + part
    return total


@pytest.mark.parametrize(
    "r,n,k", [(1, 1, 1), (3, 5, 2), (7, 17, 10), (40, 1000, 3), (20, 3001, 10), (9, 1500, 24), (130, 70, 1)]
)
def test_sums_kernel(r, n, k, rng):
    """_sums against NumPy: integer sums exact (int32 and int64 columns, small and large counts), float sums
    in their fixed block order bit for bit; the same on any thread count."""
    counts = rng.integers(0, 4, (r, n)).astype(np.int32)
    counts[0, : n // 2] = 0
    big = counts * np.int32(2**20)  # too large for the kernel's 32-bit lanes
    ints = rng.integers(-100000, 100000, (k, n))
    huge = rng.integers(-(2**62), 2**62, (k, n))  # int64 sums that wrap, as NumPy's
    floats = rng.standard_normal((k, n)) * 10.0 ** rng.integers(-10, 10, (k, n))
    floats[:, ::7] = np.inf
    floats[:, 1::11] = -0.0
    cases = [
        (ints.astype(np.int32), counts),
        (ints.astype(np.int32), big),
        (ints, counts),
        (huge, counts),
        (floats, counts),
    ]
    for cols, cnt in cases:
        want = _block_sums(cols, cnt) if cols.dtype == np.float64 else cnt.astype(np.int64) @ cols.T.astype(np.int64)
        for threads in (1, 2, 3):
            got = resampling._sums(cols, cnt, threads)
            assert got.dtype == want.dtype and np.array_equal(got.view(np.int64), want.view(np.int64)), (
                cols.dtype,
                threads,
            )
    assert resampling._columns(ints.T).dtype == np.int32 and resampling._columns(huge.T).dtype == np.int64


def test_default_mode_resamples_are_exact_scores(wmt17):
    """Each resampled score is the metric's exact score of that resampled corpus."""
    name = sorted(wmt17["systems"])[0]
    hyps, ref = wmt17["systems"][name], wmt17["ref"]
    n = len(hyps)
    idx = _numpy_draws(n, 3, 42)
    acc = tm.metrics.BLEU().update(hyps, [ref])
    samples = resampling._resampled_scores(acc._plan(), 3, 42, 1)
    for r in range(3):
        pick = [int(i) for i in idx[r]]
        expect = tm.corpus_bleu([hyps[i] for i in pick], [[ref[i] for i in pick]]).score
        assert samples[r, 0] == expect
    ch = tm.metrics.CHRF(word_order=2).update(hyps, [ref])
    samples = resampling._resampled_scores(ch._plan(), 3, 42, 1)
    pick = [int(i) for i in idx[1]]
    assert samples[1, 0] == tm.corpus_chrf([hyps[i] for i in pick], [[ref[i] for i in pick]], word_order=2).score


def test_default_mode_is_reproducible_and_chunking_free(wmt17, monkeypatch):
    name = sorted(wmt17["systems"])[1]
    acc = tm.metrics.CHRF().update(wmt17["systems"][name], [wmt17["ref"]])
    a = tm.bootstrap_ci(acc, n_resamples=200, seed=3)
    assert a == tm.bootstrap_ci(acc, n_resamples=200, seed=3, num_threads=1)
    monkeypatch.setattr(resampling, "_CHUNK_DRAWS", 5000)  # one resample per chunk
    assert a == tm.bootstrap_ci(acc, n_resamples=200, seed=3, num_threads=2)
    assert a != tm.bootstrap_ci(acc, n_resamples=200, seed=4)
    assert a.low <= a.mean <= a.high and a.ci == 0.5 * (a.high - a.low) and a.low < a.score < a.high
    assert str(a).startswith(f"{a.score:.2f} (μ = ")


def test_default_mode_other_accumulators(rng):
    scores = rng.normal(size=(500, 20))
    targets = rng.integers(0, 20, 500)
    targets[:7] = -100
    acc = tm.metrics.TopKAccuracy(k=3, ignore_index=-100).update(scores, targets)
    ci = tm.bootstrap_ci(acc, n_resamples=300, seed=1)
    assert ci.score == tm.topk_accuracy(scores, targets, k=3, ignore_index=-100)
    assert ci.low < ci.score < ci.high and abs(ci.mean - ci.score) < 0.02
    # resample 0 by hand
    kept = np.flatnonzero(targets != -100)
    idx = _numpy_draws(len(kept), 1, 1)[0]
    samples = resampling._resampled_scores(acc._plan(), 1, 1, 1)
    assert samples[0, 0] == pytest.approx(tm.topk_accuracy(scores[kept[idx]], targets[kept[idx]], k=3), rel=1e-12)
    several = tm.bootstrap_ci(tm.metrics.TopKAccuracy(k=(1, 5)).update(scores, targets % 20), n_resamples=50)
    assert len(several) == 2 and several[0].score < several[1].score
    weighted = tm.metrics.TopKAccuracy(k=3).update(scores, targets % 20, sample_weight=rng.random(500))
    assert tm.bootstrap_ci(weighted, n_resamples=50).score == weighted.compute()

    logits = rng.normal(size=(6, 30, 50)).astype(np.float32)
    toks = rng.integers(0, 50, (6, 30))
    toks[5] = -1  # a sequence with no counted token is not an item
    for reduction in ("token", "sequence"):
        p = tm.metrics.Perplexity(ignore_index=-1, reduction=reduction).update(logits, toks)
        ci = tm.bootstrap_ci(p, n_resamples=100, seed=0)
        assert ci.score == p.compute() and ci.low <= ci.high
    r = tm.metrics.ROUGE(("rouge1", "rougeLsum")).update(["a b c", "b c d e", "x"], ["a b", "b c d", "y z"])
    out = tm.bootstrap_ci(r, n_resamples=100)
    assert set(out) == {"rouge1", "rougeLsum"}
    assert out["rouge1"].score.fmeasure == pytest.approx(np.mean(r.compute()["rouge1"].fmeasure))


def test_default_paired(wmt17):
    base, close = _close_pair(wmt17)
    refs = [wmt17["ref"]]
    b, s = tm.metrics.BLEU().update(base, refs), tm.metrics.BLEU().update(close, refs)
    bs = tm.paired_test(b, s, n_resamples=300)
    ar = tm.paired_test(b, s, method="randomization", n_resamples=500)
    assert bs.baseline == b.compute().score and bs.system == s.compute().score
    assert 0 < bs.p_value <= 1 and 0 < ar.p_value <= 1 and ar.mean is None
    # sacrebleu counts differences strictly beyond the observed one: a system against itself gets 1/(n+1)
    assert tm.paired_test(b, b, method="randomization", n_resamples=100).p_value == 1 / 101
    assert bs == tm.paired_test(b, s, n_resamples=300)
    ta = tm.metrics.TopKAccuracy(k=1).update(np.eye(5)[[0, 1, 2, 3, 4] * 20], np.arange(100) % 5)
    tb = tm.metrics.TopKAccuracy(k=1).update(np.eye(5)[[0, 1, 2, 3, 0] * 20], np.arange(100) % 5)
    assert tm.paired_test(ta, tb, n_resamples=200).p_value < 0.05


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda b, r: tm.bootstrap_ci("BLEU"), TypeError, "accumulator"),
        (lambda b, r: tm.bootstrap_ci(tm.metrics.BLEU()), ValueError, "no items"),
        (lambda b, r: tm.bootstrap_ci(b, n_resamples=0), ValueError, "n_resamples"),
        (lambda b, r: tm.bootstrap_ci(b, n_resamples=2.5), TypeError, "n_resamples"),
        (lambda b, r: tm.bootstrap_ci(b, confidence=1.5), ValueError, "confidence"),
        (lambda b, r: tm.bootstrap_ci(b, mode="moses"), ValueError, "mode"),
        (lambda b, r: tm.bootstrap_ci(b, confidence=0.9, mode="sacrebleu"), ValueError, "0.95"),
        (lambda b, r: tm.bootstrap_ci(r, mode="sacrebleu"), ValueError, "BLEU and CHRF"),
        (lambda b, r: tm.bootstrap_ci(b, mode="rouge_score"), ValueError, "ROUGE"),
        (
            lambda b, r: tm.bootstrap_ci(tm.metrics.Perplexity(reduction="none").update(np.zeros((2, 3)), [0, 1])),
            ValueError,
            "reduction",
        ),
        (lambda b, r: tm.paired_test(b, r), ValueError, "cannot merge"),
        (lambda b, r: tm.paired_test(b, tm.metrics.BLEU().update(["a"], [["a"]])), ValueError, "same items"),
        (lambda b, r: tm.paired_test(r, r), ValueError, "one score"),
        (lambda b, r: tm.paired_test(b, b, method="t-test"), ValueError, "method"),
        (lambda b, r: tm.paired_test(b, b, mode="rouge_score"), ValueError, "rouge"),
    ],
)
def test_bad_input(call, exc, match):
    b = tm.metrics.BLEU().update(["a b c", "d e"], [["a b c", "d"]])
    r = tm.metrics.ROUGE().update(["a b"], ["a"])
    with pytest.raises(exc, match=match):
        call(b, r)
