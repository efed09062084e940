"""tm.dask on a real multi-process LocalCluster equals the single-process functions."""

import numpy as np
import pandas as pd
import pytest

import turbometrics as tm

dask = pytest.importorskip("dask", reason="tm.dask needs the dask extra")
db = pytest.importorskip("dask.bag")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        assert len(c.scheduler_info()["workers"]) == 2
        yield c


def test_text_metrics_on_cluster(client, wmt17, summaries):
    hyps, ref = wmt17["systems"]["KIT"], wmt17["ref"]
    other = wmt17["systems"]["FBK"]
    bag = db.from_sequence(list(zip(hyps, ref)), npartitions=7)
    assert tm.dask.corpus_bleu(bag) == tm.corpus_bleu(hyps, [ref])
    assert tm.dask.corpus_chrf(bag, word_order=2) == tm.corpus_chrf(hyps, [ref], word_order=2)
    # multiple and varying numbers of references per item
    items = [(h, [r, o] if i % 3 else [r]) for i, (h, r, o) in enumerate(zip(hyps, ref, other))]
    streams = [ref, [o if i % 3 else None for i, o in enumerate(other)]]
    got = tm.dask.corpus_bleu(db.from_sequence(items, npartitions=5), tokenize="intl")
    assert got == tm.corpus_bleu(hyps, streams, tokenize="intl") and "nrefs:var" in got.signature
    df = dd.from_pandas(pd.DataFrame({"hyp": hyps, "ref": ref, "x": 0}), npartitions=4)
    assert tm.dask.corpus_bleu(df, columns=["hyp", "ref"]) == tm.corpus_bleu(hyps, [ref])
    preds, refs = summaries
    ours = tm.dask.rouge(db.from_sequence(list(zip(preds, refs)), npartitions=6), use_stemmer=True)
    expect = tm.rouge(preds, refs, use_stemmer=True)
    for t in expect:
        for a, b in zip(ours[t], expect[t]):
            np.testing.assert_array_equal(a, b)


def test_array_metrics_on_cluster(client):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(12, 16, 300)).astype(np.float32) * 4
    targets = rng.integers(0, 300, (12, 16))
    targets[3, 5:] = -100
    blocks = [(logits[i : i + 3], targets[i : i + 3]) for i in range(0, 12, 3)]
    bag = db.from_sequence(blocks, npartitions=3)
    assert tm.dask.perplexity(bag, ignore_index=-100) == tm.perplexity(logits, targets, ignore_index=-100)
    assert tm.dask.perplexity(bag, ignore_index=-100, reduction="sequence") == tm.perplexity(
        logits, targets, ignore_index=-100, reduction="sequence"
    )
    flat = [(b[0].reshape(-1, 300), b[1].reshape(-1)) for b in blocks]
    got = tm.dask.topk_accuracy(db.from_sequence(flat, npartitions=2), k=(1, 5), ignore_index=-100)
    np.testing.assert_array_equal(
        got, tm.topk_accuracy(logits.reshape(-1, 300), targets.reshape(-1), k=(1, 5), ignore_index=-100)
    )


def test_accumulate_and_bad_input():
    bag = db.from_sequence([("a b", "a b"), ("c", "d")], npartitions=2)
    acc = tm.dask.accumulate(
        bag,
        tm.metrics.BLEU(),
        scheduler="sync",
        update=lambda a, part: a.update([h for h, _ in part], [[r for _, r in part]]),
    )
    assert acc.compute() == tm.corpus_bleu(["a b", "c"], [["a b", "d"]])
    with pytest.raises(TypeError, match="Dask bag or dataframe"):
        tm.dask.corpus_bleu([("a", "b")])
    with pytest.raises(ValueError, match="bag items"):
        tm.dask.corpus_bleu(db.from_sequence(["just a string"]))
    with pytest.raises(ValueError, match="bag items"):
        tm.dask.corpus_bleu(db.from_sequence([("a b", None)]))
    df = pd.DataFrame({"h": ["a b"], "r": ["a b"]})
    with pytest.raises(ValueError, match="columns: the dataframe has no column 'zz'"):
        tm.dask.corpus_bleu(dd.from_pandas(df, npartitions=1), columns=["h", "zz"])
    with pytest.raises(ValueError, match="split_every"):
        tm.dask.accumulate(bag, tm.metrics.BLEU(), lambda a, p: None, split_every=1)
    with pytest.raises(TypeError, match="accumulator"):
        tm.dask.accumulate(bag, "BLEU", lambda a, p: None)


def test_perplexity_from_hidden_on_cluster(client):
    rng = np.random.default_rng(3)
    hidden = rng.standard_normal((12, 9, 16))
    weight = rng.standard_normal((500, 16)) * 0.5
    bias = rng.standard_normal(500)
    targets = rng.integers(0, 500, (12, 9))
    targets[3, 5:] = -100
    mask = rng.random((12, 9)) < 0.9
    blocks = [(hidden[i : i + 3], targets[i : i + 3], mask[i : i + 3]) for i in range(0, 12, 3)]
    bag = db.from_sequence(blocks, npartitions=3)
    for reduction in ("token", "sequence", "none"):
        got = tm.dask.perplexity_from_hidden(bag, weight, bias, ignore_index=-100, reduction=reduction, chunk=128)
        np.testing.assert_allclose(
            got,
            tm.perplexity_from_hidden(hidden, weight, targets, bias, ignore_index=-100, mask=mask, reduction=reduction),
            rtol=1e-14,
        )
    with pytest.raises(ValueError, match="bag items"):
        tm.dask.perplexity_from_hidden(db.from_sequence([hidden[:2]]), weight)
