"""Bad input gets a ValueError/TypeError naming the argument; never a crash or a made-up number."""

import numpy as np
import pytest
import torch

import turbometrics as tm

S = np.zeros((4, 5), np.float32)
T = np.array([0, 1, 2, 3])
L = np.zeros((2, 3, 5), np.float32)
LT = np.zeros((2, 3), np.int64)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: tm.topk_accuracy(S, [0, 1, 2, 5]), ValueError, r"targets must lie in \[0, 5\).*5"),
        (lambda: tm.topk_accuracy(S, [0, 1, -1, 2]), ValueError, "targets must lie in"),
        (lambda: tm.target_rank(S, [0, 1, 2, 9]), ValueError, "targets"),
        (lambda: tm.topk_accuracy(S, T, k=0), ValueError, r"k must be in \[1, 5\]"),
        (lambda: tm.topk_accuracy(S, T, k=6), ValueError, r"k must be in \[1, 5\]"),
        (lambda: tm.topk_accuracy(S, T, k=(1, 6)), ValueError, "k must be"),
        (lambda: tm.topk_accuracy(S, T, k=2.0), TypeError, "k must be an integer"),
        (lambda: tm.topk_accuracy(S, T, ties="random"), ValueError, "ties must be one of"),
        (lambda: tm.topk_accuracy(S, T[:3]), ValueError, r"targets has shape \(3,\), expected \(4,\)"),
        (lambda: tm.topk_accuracy(S, T.astype(float)), TypeError, "targets must hold integers"),
        (lambda: tm.topk_accuracy(S, T.astype(bool)), TypeError, "targets must hold integers"),
        (lambda: tm.topk_accuracy(np.zeros((0, 5)), []), ValueError, "scores is empty"),
        (lambda: tm.topk_accuracy(np.zeros(5), 1), ValueError, "scores must have shape"),
        (lambda: tm.topk_accuracy(S, T, sample_weight=[1, 2]), ValueError, "sample_weight has shape"),
        (lambda: tm.topk_accuracy(S, T, sample_weight=[1, 2, -1, 0]), ValueError, "non-negative"),
        (lambda: tm.topk_accuracy(S.astype(str), T), TypeError, "scores must hold"),
        (lambda: tm.topk_accuracy("abc", T), TypeError, "scores must be array-like"),
        (lambda: tm.topk(S, 6), ValueError, r"k must be in \[1, 5\]"),
        (lambda: tm.topk(S, 0), ValueError, "k must be"),
        (lambda: tm.topk(S, 2, axis=2), ValueError, "axis 2 is out of range"),
        (lambda: tm.topk(np.zeros((3, 0)), 1), ValueError, "x is empty"),
        (lambda: tm.topk(np.float32(3.0), 1), ValueError, "at least one dimension"),
        (lambda: tm.topk(np.zeros(3, bool), 1), TypeError, "x must hold"),
        (lambda: tm.topk(object(), 1), TypeError, "x must be array-like"),
        (lambda: tm.perplexity(L, LT, reduction="mean"), ValueError, "reduction must be one of"),
        (lambda: tm.perplexity(L, LT + 5), ValueError, r"targets must lie in \[0, 5\)"),
        (lambda: tm.perplexity(L, np.full((2, 3), 2**64 - 1, np.uint64)), ValueError, "found 18446744073709551615"),
        (lambda: tm.topk_accuracy(S, np.array([0, 1, 2, 2**63], np.uint64)), ValueError, "targets must lie"),
        (lambda: tm.perplexity(L, LT.astype(np.float32)), TypeError, "targets must hold integers"),
        (lambda: tm.perplexity(L, LT[:, :2]), ValueError, "targets has shape"),
        (lambda: tm.perplexity(L.astype(np.int32), LT), TypeError, "logits must be a floating-point"),
        (lambda: tm.perplexity(np.zeros((2, 0, 5)), np.zeros((2, 0), int)), ValueError, "logits is empty"),
        (lambda: tm.perplexity(np.zeros((2, 3, 4, 5)), LT), ValueError, "logits must have shape"),
        (lambda: tm.perplexity(L, LT, mask=np.ones((2, 2), bool)), ValueError, "mask has shape"),
        (lambda: tm.perplexity(L, LT, mask=np.full((2, 3), 2)), ValueError, "mask must hold only 0 and 1"),
        (lambda: tm.perplexity(L, LT, mask=np.ones((2, 3))), TypeError, "mask must be boolean"),
        (lambda: tm.perplexity(L, LT, ignore_index=1.5), TypeError, "ignore_index must be an integer"),
        (lambda: tm.perplexity(L, LT, num_threads=0), ValueError, r"num_threads must be in \[1, 2147483647\]"),
        (lambda: tm.perplexity(L, LT, num_threads=2**31), ValueError, "num_threads must be in"),
        (lambda: tm.corpus_bleu(["a"], [["a"]], num_threads=2**70), ValueError, "num_threads must be in"),
        (lambda: tm.topk_accuracy(S, T, k=()), ValueError, "non-empty"),
        (lambda: tm.topk(S, 2, largest="no"), TypeError, "largest must be a bool"),
        (lambda: tm.topk(S, 2, sorted=None), TypeError, "sorted must be a bool"),
        (lambda: tm.topk([[1.0, 2.0], [3.0]], 1), ValueError, "^x: "),
        (lambda: tm.token_nll_from_hidden(S, None, T), TypeError, "weight must be array-like"),
        (lambda: tm.perplexity_from_hidden(S[:0], S, T[:0]), ValueError, "hidden is empty"),
        (lambda: tm.corpus_chrf(["a b"], [["a c"]], beta=float("inf")), ValueError, "beta must be"),
        (lambda: tm.corpus_chrf(["a b"], [["a c"]], beta=1e200), ValueError, "square is finite"),
        (lambda: tm.pairwise_chrf(["a b", "a"], beta=float("nan")), ValueError, "beta must be"),
        (lambda: tm.corpus_bleu(["a"], [["a"]], smooth_method="add-k", smooth_value=-5), ValueError, "smooth_value"),
        (
            lambda: tm.corpus_bleu(["a"], [["a"]], smooth_method="floor", smooth_value=np.nan),
            ValueError,
            "smooth_value",
        ),
        (lambda: tm.corpus_bleu(["a"], [["a"]], tokenize="flores200", spm_model=3), TypeError, "spm_model must be"),
        (lambda: tm.lcs_length([np.array([2**64 - 1], np.uint64)], [[1]]), ValueError, r"a\[0\] holds .*int64"),
        (lambda: tm.segment_bleu(np.array([[2**63]], np.uint64), np.array([[1]])), ValueError, "int64's range"),
        (lambda: tm.lm_perplexity(lambda ids: None, []), ValueError, "token_ids holds no sequence"),
        (lambda: tm.lm_perplexity(lambda ids: None, [[1, 2], []]), ValueError, r"token_ids\[1\] is empty"),
        (lambda: tm.lm_perplexity(lambda ids: None, np.array([1, 2**64 - 1], np.uint64)), ValueError, "int64"),
        (lambda: tm.cross_validate(lambda a, b, c: c, S, T, metrics=[len]), TypeError, "metrics must be a dict"),
        (lambda: tm.cross_validate(lambda a, b, c: c, S, T, metrics={0: len}), TypeError, "names must be strings"),
        (lambda: tm.cross_validate(lambda a, b, c: c, S, None, metrics={"n": len}), TypeError, "^y must"),
        (lambda: tm.patch(3), TypeError, "libraries must be"),
        (lambda: tm.perplexity_from_nll(np.zeros((2, 3, 4))), ValueError, "nll must have shape"),
        (lambda: tm.perplexity_from_nll(np.zeros(0)), ValueError, "nll is empty"),
        (lambda: tm.perplexity_from_probs(np.ones(3), ignore_index=0), ValueError, "ignore_index needs targets"),
        (lambda: tm.perplexity_from_log_probs(L, LT, reduction="sum"), ValueError, "reduction"),
        (lambda: tm.perplexity(torch.zeros(2, 3, 5), torch.zeros(2, 3)), TypeError, "targets must hold integers"),
    ],
)
def test_bad_input_is_a_clear_error(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_ignored_targets_may_be_out_of_range():
    # the ignored/masked positions are never read, so any value is fine there
    t = np.array([[0, 1, -100], [2, 99, 4]])
    m = np.array([[1, 1, 1], [1, 0, 1]], bool)
    assert np.isfinite(tm.perplexity(L, t, ignore_index=-100, mask=m))


def test_a_text_bleu_and_a_token_id_bleu_do_not_merge():
    # update() refuses to mix them; merging two objects must too (their statistics count different tokens)
    text = tm.metrics.BLEU().update(["1 2 3 4"], [["1 2 3 4"]])
    ids = tm.metrics.BLEU().update(np.array([[5, 6, 7, 8]]), np.array([[5, 6, 7, 8]]))
    for a, b in ((text, ids), (ids, text)):
        with pytest.raises(ValueError, match="statistics of text and of token IDs are two corpora"):
            a.merge(b)
    assert (text + tm.metrics.BLEU()).compute().score == text.compute().score  # an empty one merges with either


def test_uint64_ids_never_alias_negative_ones():
    # 2**64 - 1 read as int64 is -1: an LCS of 1 with [-1] that is not there; and 2**63 - 1 still works
    assert tm.lcs_length([np.array([2**63 - 1], np.uint64)], [np.array([2**63 - 1])]).tolist() == [1]
    assert tm.lcs_length([np.array([5], np.uint64)], [np.array([-1])]).tolist() == [0]


def test_a_resample_of_only_zero_weights_is_an_error_not_nan():
    acc = tm.metrics.TopKAccuracy(k=1).update(np.eye(5)[[0, 1]], [0, 1], sample_weight=[0.0, 1.0])
    with pytest.raises(ValueError, match="resamples have no score"):
        tm.bootstrap_ci(acc, n_resamples=50, seed=1)
    ci = tm.bootstrap_ci(tm.metrics.TopKAccuracy(k=1).update(np.eye(5)[[0, 1]], [0, 1], sample_weight=[0.5, 1.0]))
    assert np.isfinite([ci.mean, ci.low, ci.high]).all()


@pytest.mark.parametrize("seed", [-1, 1.5, "1", True])
def test_resampling_seed_is_named(seed):
    acc = tm.metrics.TopKAccuracy(k=1).update(np.eye(5)[[0, 1]], [0, 1])
    with pytest.raises((TypeError, ValueError), match="seed"):
        tm.bootstrap_ci(acc, n_resamples=10, seed=seed)


def test_copies_of_a_metric_with_an_object_option_merge():
    # a tokenizer object compares by identity: each dask partition's (deep) copy must still merge, as across ranks
    import copy

    class Words:
        def tokenize(self, text):
            return text.lower().split()

    m = tm.metrics.ROUGE(["rouge1"], tokenizer=Words())
    p, r = ["a b c", "d e"], ["a b", "d e f"]
    merged = copy.deepcopy(m).update(p[:1], r[:1]) + copy.deepcopy(m).update(p[1:], r[1:])
    got, want = merged.compute(), m.update(p, r).compute()
    assert got.keys() == want.keys() and all(np.array_equal(np.asarray(got[k]), np.asarray(want[k])) for k in want)
    assert (tm.metrics.TopKAccuracy(k=[1, 2]) + tm.metrics.TopKAccuracy(k=(1, 2))).k == [1, 2]  # list == tuple
    with pytest.raises(ValueError, match="different metrics or options"):
        tm.metrics.ROUGE(["rouge1"], tokenizer=Words()) + tm.metrics.ROUGE(["rouge1"])


def test_an_update_of_no_rows_adds_nothing():
    # an empty last batch: as torchmetrics' objects and as an empty BLEU/ROUGE update; the one-shot functions refuse
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((2, 3, 5)).astype(np.float32), rng.integers(0, 5, (2, 3))
    for make, empty, full in (
        (tm.metrics.Perplexity, (L[:0], LT[:0]), (x, t)),
        (lambda: tm.metrics.Perplexity(reduction="none"), (torch.zeros(0, 3, 5), torch.zeros(0, 3, dtype=int)), (x, t)),
        (lambda: tm.metrics.Perplexity(input="nll"), (np.zeros((0, 3)),), (np.abs(x[..., 0]),)),
        (lambda: tm.metrics.TopKAccuracy(k=2), (S[:0], T[:0]), (S, T)),
        (tm.metrics.MeanReciprocalRank, (np.zeros((0, 2, 5)), np.zeros((0, 2), int)), (x, t)),
    ):
        m = make().update(*empty).update(*full).update(*empty)
        assert np.array_equal(m.compute(), make().update(*full).compute()), make
    with pytest.raises(ValueError, match=r"targets has shape \(0, 4\), expected \(0, 3\)"):
        tm.metrics.Perplexity().update(L[:0], np.zeros((0, 4), int))
    with pytest.raises(ValueError, match="logits is empty"):
        tm.metrics.Perplexity().update(L[:, :0], LT[:, :0])  # sequences of no token: not an empty batch
    with pytest.raises(ValueError, match="logits is empty"):
        tm.perplexity(L[:0], LT[:0])
