"""Pairwise cases: an n x n score matrix (MBR, self-BLEU) against one call per cell."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import turbometrics as tm
from turbometrics import slow

from .case import Case, Impl, have
from .data import wmt17_tiled, zipf_corpus


def _two_systems(n: int, data_dir: str | None) -> dict:
    """n segments of two WMT17 systems (or, without the data, two generated corpora)."""
    if not data_dir:
        a, b = zipf_corpus(n, seed=1)
        return {"a": a, "b": b}
    return {
        "a": wmt17_tiled(data_dir, n)["hyps"],
        "b": _lines(os.path.join(data_dir, "wmt17-en-de", "KIT.4950.hyp.de"), n),
    }


def _lines(path: str, n: int) -> list[str]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    return (lines * -(-n // len(lines)))[:n]


def _cell_loop(score: Callable[[str, str], Any], cells: int, n: int, role: str) -> Impl:
    """A Python loop of one call per cell over `cells` cells, scaled to the n x n matrix."""

    def loop(d):
        a, b = d["a"], d["b"]
        for i in range(cells):
            score(a[i % n], b[(7 * i) % n])

    return Impl(loop, role, n * n / cells, f"{cells:,} cells, scaled x{n * n / cells:g}")


def pairwise_case(metric: str, n: int, data_dir: str | None = None) -> Case:
    """An n x n score matrix (MBR, self-BLEU) against one call per cell."""
    c = Case(f"pairwise {metric}, {n:,} x {n:,} WMT17 segments", lambda: _two_systems(n, data_dir))
    cells = 200 if metric == "TER" else 2000
    if metric == "ROUGE-L":
        c.impls["turbometrics"] = Impl(lambda d: tm.pairwise_rouge(d["a"], d["b"], "rougeL", use_stemmer=True), "ours")
        c.impls["tm.rouge per cell"] = _cell_loop(
            lambda h, r: tm.rouge([h], [r], ["rougeL"], use_stemmer=True, num_threads=1), cells, n, "variant"
        )
        if have("rouge_score"):
            from rouge_score import rouge_scorer

            scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
            c.impls["rouge_score loop"] = _cell_loop(lambda h, r: scorer.score(r, h), cells, n, "oracle")
        return c
    matrix: dict[str, Callable[..., Any]] = {"BLEU": tm.pairwise_bleu, "chrF": tm.pairwise_chrf, "TER": tm.pairwise_ter}
    ours = matrix[metric]
    sentence: dict[str, Callable[..., Any]] = {
        "BLEU": tm.sentence_bleu,
        "chrF": tm.sentence_chrf,
        "TER": tm.sentence_ter,
    }
    one = sentence[metric]
    c.impls["turbometrics"] = Impl(lambda d: ours(d["a"], d["b"]), "ours")
    c.impls[f"tm.sentence_{metric.lower()} loop"] = _cell_loop(lambda h, r: one(h, [r]), cells, n, "variant")
    if have("sacrebleu"):
        import sacrebleu

        oracles: dict[str, Callable[[], Any]] = {
            "BLEU": lambda: sacrebleu.BLEU(effective_order=True),
            "chrF": sacrebleu.CHRF,
            "TER": sacrebleu.TER,
        }
        o = oracles[metric]()
        c.impls["sacrebleu loop"] = _cell_loop(lambda h, r: o.sentence_score(h, [r]), cells, n, "oracle")
    twins: dict[str, Callable[..., Any]] = {
        "BLEU": slow.sentence_bleu,
        "chrF": slow.sentence_chrf,
        "TER": slow.sentence_ter,
    }
    twin = twins[metric]
    c.impls["slow"] = _cell_loop(lambda h, r: twin(h, [r]), cells // 10, n, "slow")
    return c
