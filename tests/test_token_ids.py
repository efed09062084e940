"""Token-ID BLEU and ROUGE: equal to sacrebleu (tokenize="none") and rouge-score on the IDs written as words.

Random batches: lengths 0-300, vocabularies of 5 to 50,000 (rare and repeated n-grams), 1-4 references,
padding, every smoothing method, effective order on and off. TURBOMETRICS_TOKEN_ID_BATCHES sets how many
(the issue's check is 10,000; CI runs 1,000).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import turbometrics as tm

sacrebleu = pytest.importorskip("sacrebleu")
rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
torch = pytest.importorskip("torch")

BATCHES = int(os.environ.get("TURBOMETRICS_TOKEN_ID_BATCHES", "1000"))
SMOOTH = [("none", None), ("floor", 0.1), ("floor", 0.7), ("add-k", 1), ("add-k", 3), ("exp", None)]
ROUGE_TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def _words(ids) -> str:
    return " ".join(map(str, ids))


def _batch(rng: np.random.Generator):
    """(hyps, refs per segment) as lists of int lists, the form to pass (lists or padded arrays), pad_id."""
    b = int(rng.integers(1, 5))
    vocab = int(rng.choice([5, 12, 100, 1000, 50_000]))
    top = int(rng.choice([5, 30, 300]))

    def seq():
        return rng.integers(0, vocab, int(rng.integers(0, top + 1))).tolist()

    hyps = [seq() for _ in range(b)]
    same_r = rng.random() < 0.5
    r = int(rng.integers(1, 5))
    refs = [[seq() for _ in range(r if same_r else int(rng.integers(1, 5)))] for _ in range(b)]
    if not same_r or rng.random() < 0.4:
        return hyps, refs, hyps, refs, None
    pad = int(rng.choice([-1, vocab, 10**9]))  # a pad id outside the vocabulary
    width = max([len(h) for h in hyps] + [len(x) for rs in refs for x in rs] + [1]) + int(rng.integers(0, 3))
    h_arr = np.full((b, width), pad, np.int64)
    r_arr = np.full((b, r, width), pad, np.int64)
    for i, h in enumerate(hyps):
        h_arr[i, : len(h)] = h
        for k, x in enumerate(refs[i]):
            r_arr[i, k, : len(x)] = x
    if r == 1 and rng.random() < 0.5:
        r_arr = r_arr[:, 0]
    # in an array, an all-padding reference row is absent (one empty reference if all of a segment's are)
    refs = [[x for x in rs if x] or [[]] for rs in refs] if r > 1 else refs
    if rng.random() < 0.3:
        return hyps, refs, torch.from_numpy(h_arr), torch.from_numpy(r_arr), pad
    return hyps, refs, h_arr.astype(rng.choice([np.int32, np.int64])), r_arr, pad


def _streams(refs):
    R = max(len(r) for r in refs)
    return [[_words(r[k]) if k < len(r) else None for r in refs] for k in range(R)]


def test_random_batches_equal_sacrebleu_and_rouge_score():
    rng = np.random.default_rng(27)
    scorers = {s: rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=s) for s in (False, True)}
    for it in range(BATCHES):
        hyps, refs, h_in, r_in, pad = _batch(rng)
        method, value = SMOOTH[it % len(SMOOTH)]
        opts = dict(
            smooth_method=method,
            smooth_value=value,
            max_ngram_order=int(rng.integers(1, 6)),
            effective_order=bool(rng.random() < 0.5),
        )
        got = tm.corpus_bleu(h_in, r_in, pad_id=pad, **opts)
        bleu = sacrebleu.BLEU(tokenize="none", **opts)
        want = bleu.corpus_score([_words(h) for h in hyps], _streams(refs))
        assert (got.score, got.counts, got.totals, got.sys_len, got.ref_len) == (
            want.score,
            want.counts,
            want.totals,
            want.sys_len,
            want.ref_len,
        ), (it, opts)
        assert got.signature == str(bleu.get_signature()).replace(sacrebleu.__version__, "2.6.0"), it
        seg = tm.segment_bleu(h_in, r_in, pad_id=pad, **opts)
        o = sacrebleu.BLEU(tokenize="none", **opts)
        assert seg.tolist() == [
            o.sentence_score(_words(h), [_words(x) for x in r]).score for h, r in zip(hyps, refs)
        ], (it, opts)
        if it % 5 == 0:  # rouge-score's pure-Python LCS is the slow part
            stem = bool(it % 10)
            got = tm.rouge(h_in, r_in, ROUGE_TYPES, use_stemmer=stem, pad_id=pad)
            for i, (h, r) in enumerate(zip(hyps, refs)):
                want = scorers[stem].score_multi([_words(x) for x in r], _words(h))
                for t in ROUGE_TYPES:
                    assert (got[t].precision[i], got[t].recall[i], got[t].fmeasure[i]) == tuple(want[t]), (it, t)


def test_sentence_and_pairwise_on_ids():
    rng = np.random.default_rng(5)
    h = rng.integers(0, 30, 40).tolist()
    refs = [rng.integers(0, 30, 35).tolist(), rng.integers(0, 30, 20).tolist()]
    want = sacrebleu.sentence_bleu(_words(h), [_words(r) for r in refs], tokenize="none")
    assert tm.sentence_bleu(h, refs).score == want.score
    assert (
        tm.sentence_bleu(np.array(h), np.array(refs[:1])).score
        == sacrebleu.sentence_bleu(_words(h), [_words(refs[0])], tokenize="none").score
    )
    rows = [rng.integers(0, 20, int(n)).tolist() for n in rng.integers(0, 40, 25)]
    cols = [rng.integers(0, 20, int(n)).tolist() for n in rng.integers(0, 40, 15)]
    o = sacrebleu.BLEU(tokenize="none", effective_order=True)
    assert tm.pairwise_bleu(rows, cols).tolist() == [
        [o.sentence_score(_words(a), [_words(b)]).score for b in cols] for a in rows
    ]
    sc = rouge_scorer.RougeScorer(["rouge2"])
    assert tm.pairwise_rouge(rows, cols, "rouge2").recall.tolist() == [
        [sc.score(_words(b), _words(a))["rouge2"].recall for b in cols] for a in rows
    ]


def test_metric_objects_take_ids_and_text_alike():
    rng = np.random.default_rng(9)
    hyps = [rng.integers(0, 50, 30).tolist() for _ in range(20)]
    refs = [[rng.integers(0, 50, 30).tolist()] for _ in range(20)]
    acc = tm.metrics.BLEU()
    acc.update(hyps[:7], refs[:7]).update(hyps[7:], refs[7:])
    text = tm.corpus_bleu([_words(h) for h in hyps], [[_words(r[0]) for r in refs]], tokenize="none")
    assert acc.compute().score == text.score
    ci = tm.bootstrap_ci(acc, n_resamples=50, seed=1)
    assert ci.score == text.score


def test_bad_token_input():
    with pytest.raises(ValueError, match=">= 0"):
        tm.corpus_bleu([[1, -2]], [[[1]]])
    with pytest.raises(TypeError, match="integers"):
        tm.corpus_bleu(np.zeros((2, 3)), np.zeros((2, 3), np.int64))
    with pytest.raises(TypeError, match="integers"):
        tm.corpus_bleu(np.zeros((2, 3), np.int64), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="entries but there are"):
        tm.corpus_bleu([[1, 2]], [[1], [2]])
    with pytest.raises(ValueError, match=r"\(2, L\)"):
        tm.segment_bleu(np.zeros((2, 3), np.int64), np.zeros((3, 3), np.int64))
    with pytest.raises(TypeError, match="pad_id applies"):
        tm.corpus_bleu(["a b"], [["a b"]], pad_id=0)
    with pytest.raises(TypeError, match="chrF takes text"):
        tm.corpus_chrf([[1, 2]], [[[1, 2]]])
    with pytest.raises(TypeError, match="TER takes text"):
        tm.pairwise_ter([[1, 2]])
    with pytest.raises(TypeError, match="hypothesis must be a str"):
        tm.sentence_bleu(["a"], ["a"])
    with pytest.raises(ValueError, match="R = 0"):
        tm.rouge(np.zeros((2, 3), np.int64), np.zeros((2, 0, 3), np.int64))


@pytest.mark.parametrize("packed", [False, True])
def test_the_benchmarks_torch_baseline_computes_the_same_bleu(packed):
    """benchmarks compare with a torch implementation of TensorBLEU's method: it must score the same."""
    from turbometrics._bench import tensorbleu_torch

    rng = np.random.default_rng(3)
    cand = rng.integers(0, 40, (16, 60))
    ref = np.where(rng.random((16, 60)) < 0.5, cand, rng.integers(0, 40, (16, 60)))
    ref[3] = 39 - cand[3] % 40 + 100  # no match at all: score 0
    got = tensorbleu_torch(torch.from_numpy(cand), torch.from_numpy(ref), packed=packed).numpy()
    np.testing.assert_allclose(got, tm.segment_bleu(cand, ref, effective_order=False), rtol=1e-13, atol=0)


def test_padded_reference_rows_are_absent():
    hyp = np.array([[1, 2, 3, 0, 0, 0, 0]])
    refs = np.array([[[1, 2, 3, 4, 5, 6, 7], [0] * 7]])
    want = sacrebleu.sentence_bleu("1 2 3", ["1 2 3 4 5 6 7"], tokenize="none").score
    assert tm.segment_bleu(hyp, refs, pad_id=0).tolist() == [want]
    all_pad = np.zeros((1, 2, 7), np.int64)  # every row padding: one empty reference
    assert tm.segment_bleu(hyp, all_pad, pad_id=0).tolist() == [
        sacrebleu.sentence_bleu("1 2 3", [""], tokenize="none").score
    ]
    got = tm.rouge(hyp, refs, ["rouge1"], pad_id=0)["rouge1"].fmeasure
    assert got.tolist() == [rouge_scorer.RougeScorer(["rouge1"]).score("1 2 3 4 5 6 7", "1 2 3")["rouge1"].fmeasure]


def test_signature_and_nrefs_of_token_ids():
    acc = tm.metrics.BLEU()
    acc.update(np.zeros((0, 5), np.int64), np.zeros((0, 2, 5), np.int64), pad_id=0)  # says nothing of nrefs
    acc.update([[1, 2, 3]], [[[1, 2], [2, 3]]])
    assert acc.signature() == "nrefs:2|case:mixed|eff:no|tok:none|smooth:exp|version:2.6.0"
    with pytest.raises(ValueError, match="another corpus"):  # text statistics would not be one corpus
        acc.update(["a b"], [["a b"]])
    with pytest.raises(TypeError, match="tokens already"):
        tm.pairwise_rouge([[1, 2, 3]], None, "rougeL", tokenizer=str.split)
    with pytest.raises(TypeError, match="tokens already"):
        tm.rouge(np.ones((1, 3), np.int64), np.ones((1, 3), np.int64), tokenizer=str.split)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_tensors_compacted_in_place_equal_the_host_path(dtype):
    """The GPU path compacts CUDA tensors with torch operations on their device; the same code on CPU
    tensors must give the host path's tokens and offsets."""
    from turbometrics.text.token_ids import as_sequences, as_token_references

    rng = np.random.default_rng(5)
    for _ in range(50):
        b, r, width, pad = int(rng.integers(0, 6)), int(rng.integers(1, 4)), int(rng.integers(0, 9)), 0
        hyp = torch.from_numpy(rng.integers(0, 4, (b, width))).to(dtype)  # 0 (pad) frequent: all-pad rows
        ref = torch.from_numpy(rng.integers(0, 3, (b, r, width))).to(dtype)
        for p in (pad, None):
            got, want = as_sequences(hyp, "h", p, on_device=True), as_sequences(hyp, "h", p)
            assert torch.is_tensor(got[0]) and got[0].tolist() == want[0].tolist()
            assert got[1].tolist() == want[1].tolist()
            got, want = as_token_references(ref, b, "r", p, on_device=True), as_token_references(ref, b, "r", p)
            assert got[0].tolist() == want[0].tolist()
            assert [g.tolist() for g in got[1:]] == [w.tolist() for w in want[1:]]
    with pytest.raises(TypeError, match="integers"):
        as_sequences(torch.zeros((2, 3)), "h", 0, on_device=True)
    with pytest.raises(TypeError, match="integers"):
        as_sequences(torch.zeros((2, 3), dtype=torch.bool), "h", 0, on_device=True)
    with pytest.raises(ValueError, match=">= 0"):
        as_sequences(torch.tensor([[3, -4, 0]]), "h", 0, on_device=True)


@pytest.mark.parametrize(
    ("dtype", "pad", "alias"), [(torch.uint8, -1, 255), (torch.int16, 2**16, 0), (torch.int32, 2**32 + 7, 7)]
)
def test_a_pad_id_the_tensors_dtype_cannot_hold_is_no_token(dtype, pad, alias):
    """torch compares a tensor with an integer its dtype cannot hold by wrapping the integer into the dtype
    (uint8's 255 == -1); the GPU path compares in int64, as the host path (and the pending updates) do."""
    from turbometrics.text.token_ids import as_sequences, as_token_references

    hyp = torch.tensor([[alias, 1, alias], [2, 1, 3]], dtype=dtype)
    ref = torch.tensor([[[alias, 2], [alias, alias]], [[1, 2], [3, 3]]], dtype=dtype)  # an all-alias row is there
    got, want = as_sequences(hyp, "h", pad, on_device=True), as_sequences(hyp, "h", pad)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist() == [0, 3, 6]
    got, want = as_token_references(ref, 2, "r", pad, on_device=True), as_token_references(ref, 2, "r", pad)
    assert got[0].tolist() == want[0].tolist()
    assert [g.tolist() for g in got[1:]] == [w.tolist() for w in want[1:]]
    assert want[2].tolist() == [0, 2, 4]
    with pytest.raises(ValueError, match="found -1"):  # int8's -1 is a token (a negative one), not pad_id 255
        as_sequences(torch.tensor([[-1, 2]], dtype=torch.int8), "h", 255, on_device=True)


def test_best_reference_per_segment_is_the_first_highest():
    """The GPU ROUGE path's choice of reference (``_first_best``) is np.argmax over each segment's
    references: ties go to the first; one reference a segment; no segments."""
    from turbometrics.text.token_ids import _first_best

    rng = np.random.default_rng(7)
    for _ in range(300):
        counts = rng.integers(1, 5, int(rng.integers(0, 8)))
        seg = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        f = rng.integers(0, 3, int(seg[-1])) / 2.0  # many ties
        want = [int(seg[i]) + int(np.argmax(f[seg[i] : seg[i + 1]])) for i in range(len(counts))]
        assert _first_best(f, seg).tolist() == want
