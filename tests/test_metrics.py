"""Accumulators: chunked, merged in any order, pickled - always the one-shot function's result."""

import functools
import pickle
import random

import numpy as np
import pytest

import turbometrics as tm


def chunks(n, rng, most=6):
    cuts = sorted(rng.choice(np.arange(1, n), size=min(most, n - 1), replace=False).tolist()) if n > 1 else []
    bounds = [0] + cuts + [n]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def accumulate(make, update, n, seed):
    """One accumulator per chunk, pickled and merged in a random order."""
    rng = np.random.default_rng(seed)
    parts = []
    for sl in chunks(n, rng):
        acc = make()
        update(acc, sl)
        parts.append(pickle.loads(pickle.dumps(acc)))
    order = list(range(len(parts)))
    random.Random(seed).shuffle(order)
    total = parts[order[0]]
    for i in order[1:]:
        total = total + parts[i]
    return total, order


@pytest.mark.parametrize("seed", range(4))
def test_bleu_and_chrf(wmt17, seed):
    hyp, ref, second = wmt17["systems"]["FBK"], wmt17["ref"], wmt17["systems"]["KIT"]
    second = [s if i % 3 else None for i, s in enumerate(second)]
    for cls, fn, opts in [
        (tm.metrics.BLEU, tm.corpus_bleu, dict(lowercase=True, smooth_method="floor")),
        (tm.metrics.CHRF, tm.corpus_chrf, dict(word_order=2)),
    ]:
        acc, _ = accumulate(
            functools.partial(cls, **opts), lambda a, sl: a.update(hyp[sl], [ref[sl], second[sl]]), len(hyp), seed
        )
        ours, one_shot = acc.compute(), fn(hyp, [ref, second], **opts)
        assert ours == one_shot and ours.signature == one_shot.signature and str(ours) == str(one_shot)


def test_rouge():
    preds = ["the cat sat on the mat", "a b c", "dogs are running\nfast today", ""]
    refs = ["the cat is on the mat", ["a c b", "b c"], "dogs run fast\ntoday", "x"]
    acc = tm.metrics.ROUGE(use_stemmer=True).update(preds[:2], refs[:2]) + tm.metrics.ROUGE(use_stemmer=True).update(
        preds[2:], refs[2:]
    )
    one = tm.rouge(preds, refs, use_stemmer=True)
    got = pickle.loads(pickle.dumps(acc)).compute()
    for t in one:
        np.testing.assert_array_equal(got[t].fmeasure, one[t].fmeasure)
        np.testing.assert_array_equal(got[t].recall, one[t].recall)


@pytest.mark.parametrize("seed", range(6))
def test_topk_accuracy(rng, seed):
    scores = rng.integers(0, 4, (500, 9)).astype(np.float32)
    targets = rng.integers(0, 9, 500)
    targets[::11] = -100
    acc, order = accumulate(
        lambda: tm.metrics.TopKAccuracy(k=(1, 3, 5), ignore_index=-100),
        lambda a, sl: a.update(scores[sl], targets[sl]),
        500,
        seed,
    )
    np.testing.assert_array_equal(acc.compute(), tm.topk_accuracy(scores, targets, k=(1, 3, 5), ignore_index=-100))
    w = rng.random(500)
    acc = tm.metrics.TopKAccuracy(k=2).update(scores[:200], targets[:200] % 9, w[:200]) + tm.metrics.TopKAccuracy(
        k=2
    ).update(scores[200:], targets[200:] % 9, w[200:])
    assert acc.compute() == tm.topk_accuracy(scores, targets % 9, k=2, sample_weight=w)


@pytest.mark.parametrize("reduction", ["token", "sequence", "none"])
@pytest.mark.parametrize("seed", range(4))
def test_perplexity_any_chunking_and_merge_order(rng, reduction, seed):
    logits = rng.standard_normal((24, 7, 50)) * 3
    targets = rng.integers(0, 50, (24, 7))
    targets[rng.random((24, 7)) < 0.2] = -100
    targets[5] = -100  # a sequence of padding only
    acc, order = accumulate(
        lambda: tm.metrics.Perplexity(ignore_index=-100, reduction=reduction),
        lambda a, sl: a.update(logits[sl], targets[sl]),
        24,
        seed,
    )
    one = tm.perplexity(logits, targets, ignore_index=-100, reduction=reduction)
    got = acc.compute()
    if reduction == "none":  # per-sequence results come in merge order
        parts = chunks(24, np.random.default_rng(seed))
        expect = np.concatenate([one[parts[i]] for i in order])
        np.testing.assert_array_equal(got, expect)
    else:
        assert got == one


def test_reset_empty_and_bad_merges(rng):
    acc = tm.metrics.Perplexity()
    assert np.isnan(acc.compute())
    acc.update(rng.standard_normal((3, 5)), [0, 1, 2])
    assert np.isfinite(acc.compute()) and np.isnan(acc.reset().compute())
    with pytest.raises(ValueError, match="cannot merge"):
        tm.metrics.BLEU() + tm.metrics.BLEU(lowercase=True)
    with pytest.raises(ValueError, match="cannot merge"):
        tm.metrics.BLEU() + tm.metrics.CHRF()
    with pytest.raises(ValueError, match="reduction must be one of"):
        tm.metrics.Perplexity(reduction="mean")
    with pytest.raises(ValueError, match="unknown rouge type"):
        tm.metrics.ROUGE(["rougeX"])
    t = tm.metrics.TopKAccuracy(k=1)
    t.update(np.zeros((2, 3)), [0, 1], sample_weight=[1, 2]).update(np.zeros((2, 3)), [0, 1])
    with pytest.raises(ValueError, match="sample_weight was given for some updates"):
        t.compute()
    with pytest.raises(ValueError, match="k must be in"):
        tm.metrics.TopKAccuracy(k=5).update(np.zeros((2, 3)), [0, 1])
