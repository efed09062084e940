"""Per-call cases: the Python layer's cost on small inputs, one call at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import turbometrics as tm
from turbometrics import slow

from .case import Case, Impl, _torch, have
from .cases_dense import _acc_data

_CALLS = 1000  # calls per timed run of a per-call case (one call is too short to time alone)


def _per_call(fn: Callable[[dict], Any]) -> Callable[[dict], Any]:
    def loop(d):
        for _ in range(_CALLS):
            fn(d)

    return loop


def per_call_topk_accuracy_case() -> Case:
    """The Python layer's cost: top-k accuracy of a small batch, one call at a time."""
    c = Case("per call: topk_accuracy k=5 (64, 1000)", lambda: _acc_data(64, 1000))
    c.impls["turbometrics"] = Impl(
        _per_call(lambda d: tm.topk_accuracy(d["x"], d["t"], k=5, num_threads=1)), "ours", 1 / _CALLS
    )
    if have("sklearn"):

        def sk(d):
            from sklearn.metrics import top_k_accuracy_score

            return top_k_accuracy_score(d["t"], d["x"], k=5, labels=np.arange(1000))

        c.impls["sklearn"] = Impl(_per_call(sk), "oracle", 1 / _CALLS)
    if have("torch"):
        c.impls["torch.topk accuracy"] = Impl(
            _per_call(lambda d: float((_torch().topk(d["xt"], 5).indices == d["tt"][:, None]).any(1).double().mean())),
            "torch",
            1 / _CALLS,
        )
    return c


def per_call_sentence_bleu_case() -> Case:
    """The Python layer's cost: BLEU of one segment pair, one call at a time."""
    pair = {
        "h": "The quick brown fox jumps over the lazy dog near the river bank .",
        "r": ["A quick brown fox jumped over a lazy dog by the river bank ."],
    }
    c = Case("per call: sentence_bleu, one pair", lambda: pair)
    c.impls["turbometrics"] = Impl(_per_call(lambda d: tm.sentence_bleu(d["h"], d["r"])), "ours", 1 / _CALLS)
    if have("sacrebleu"):

        def sb(d):
            import sacrebleu

            return sacrebleu.sentence_bleu(d["h"], d["r"])

        c.impls["sacrebleu"] = Impl(_per_call(sb), "oracle", 1 / _CALLS)
    c.impls["slow"] = Impl(_per_call(lambda d: slow.sentence_bleu(d["h"], d["r"])), "slow", 1 / _CALLS)
    return c
