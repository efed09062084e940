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
        (lambda: tm.perplexity(L, LT, num_threads=0), ValueError, "num_threads must be >= 1"),
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
