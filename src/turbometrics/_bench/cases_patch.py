"""Benchmark cases of ``tm.patch()``: the users' own code, unpatched against patched, in one run.

Each case runs a workload written against the original library (as lm-evaluation-harness, Hugging
Face ``evaluate`` or a Lightning module would call it); the "patched" implementation runs the very same
function with ``tm.patch()`` on. Cases on the shared test data need ``data_dir``.
"""

from __future__ import annotations

import os
import random
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .case import Case, Impl, have
from .cases_pairwise import _two_systems
from .data import _lm_data, wmt17_tiled


def _patched(fn: Callable[[dict], Any], library: str | list[str]) -> Callable[[dict], Any]:
    def run(d: dict) -> Any:  # patch() + unpatch() take about 1 ms, counted here
        from .. import patch, unpatch

        patch(library)
        try:
            return fn(d)
        finally:
            unpatch()

    return run


_MODULES = {
    "sacrebleu": "sacrebleu",
    "rouge-score": "rouge_score",
    "scikit-learn": "sklearn",
    "torchmetrics": "torchmetrics",
    "mbrs": "mbrs",
}


def _case(name: str, setup: Callable[[], dict], fn: Callable[[dict], Any], library: str) -> Case:
    c = Case(name, setup, groups=("patch",))
    c.impls[f"{library} (unpatched)"] = Impl(fn, "oracle")
    c.impls["patched"] = Impl(_patched(fn, _MODULES[library]), "ours")
    return c


def lm_eval_bleu_stderr(d: dict) -> tuple[float, float]:
    """lm-evaluation-harness's BLEU aggregation and its bootstrap standard error (lm_eval/api/metrics.py:
    ``bleu`` on the items, then ``bootstrap_stderr`` with 100 iterations: one chunk, ``random.Random(0)``,
    ``choices`` of the items, the whole corpus metric on each)."""
    import statistics

    import sacrebleu

    def bleu(items):
        refs, preds = list(zip(*items))
        return sacrebleu.corpus_bleu(list(preds), [list(refs)]).score

    items = d["items"]
    rnd = random.Random()
    rnd.seed(0)
    scores = [bleu(rnd.choices(items, k=len(items))) for _ in range(d["iters"])]
    return bleu(items), statistics.stdev(scores)


def lm_eval_bleu_case(data_dir: str, iters: int = 100) -> Case:
    def setup():
        d = wmt17_tiled(data_dir, 3004)
        return {"items": list(zip(d["refs"], d["hyps"])), "iters": iters}

    return _case(
        f"lm-eval BLEU + bootstrap stderr (WMT17 3,004 segments, {iters} resamples)",
        setup,
        lm_eval_bleu_stderr,
        "sacrebleu",
    )


def _summaries(data_dir: str, n: int) -> dict:
    def lines(name):
        with open(os.path.join(data_dir, "summaries-en", name), encoding="utf-8") as f:
            return f.read().splitlines()

    preds, refs = lines("predictions.txt"), lines("references.txt")
    reps = -(-n // len(refs))
    return {"preds": (preds * reps)[:n], "refs": (refs * reps)[:n]}


def sentence_loop(d: dict) -> list:
    """Per-segment scores as reward code and data filters make them: ``sacrebleu.sentence_<metric>`` in a loop."""
    import sacrebleu

    score = getattr(sacrebleu, f"sentence_{d['metric']}")
    return [score(h, [r]).score for h, r in zip(d["hyps"], d["refs"])]


def sentence_loop_case(data_dir: str, metric: str, n: int = 3004) -> Case:
    def setup():
        return {**wmt17_tiled(data_dir, n), "metric": metric}

    return _case(f"sacrebleu.sentence_{metric} loop, {n:,} WMT17 segments", setup, sentence_loop, "sacrebleu")


def rouge_scorer_loop(d: dict) -> list:
    """Hugging Face evaluate's rouge: ``RougeScorer.score`` in a Python loop over the pairs."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    return [scorer.score(r, p) for p, r in zip(d["preds"], d["refs"])]


def rouge_scorer_case(data_dir: str, n: int = 2000) -> Case:
    return _case(
        f"RougeScorer.score loop, rouge1/2/L + stemmer, {n:,} summary pairs",
        lambda: _summaries(data_dir, n),
        rouge_scorer_loop,
        "rouge-score",
    )


def bootstrap_aggregate(d: dict) -> dict:
    """evaluate's aggregation: ``BootstrapAggregator`` (1,000 resamples from NumPy's global RNG)."""
    from rouge_score import scoring

    agg = scoring.BootstrapAggregator()
    for s in d["scores"]:
        agg.add_scores(s)
    np.random.seed(0)
    return agg.aggregate()


def bootstrap_aggregator_case(data_dir: str, n: int = 2000) -> Case:
    def setup():
        return {"scores": rouge_scorer_loop(_summaries(data_dir, n))}

    return _case(
        f"BootstrapAggregator, rouge1/2/L, {n:,} pairs, 1,000 resamples", setup, bootstrap_aggregate, "rouge-score"
    )


def truthfulqa_gen(d: dict) -> list:
    """lm-evaluation-harness 0.4.13's truthfulqa_gen scoring (``process_results_gen``, its own code): per
    reference answer, ``sacrebleu.corpus_bleu`` (tokenize="intl") and t5-style ROUGE (a ``BootstrapAggregator``
    of one score: 1,000 resamples of rouge1, rouge2 and rougeLsum)."""
    from lm_eval.tasks.truthfulqa.utils import process_results_gen

    np.random.seed(0)
    return [process_results_gen(doc, [pred]) for doc, pred in d["docs"]]


def truthfulqa_gen_case(data_dir: str, n: int) -> Case:
    def setup():
        s = _summaries(data_dir, 400)  # stand-in answers: each summary's first sentence (TruthfulQA's are one)
        first = [r.split(" . ")[0] + " ." for r in s["refs"]]
        docs = [
            ({"correct_answers": first[i : i + 1 + i % 4], "incorrect_answers": first[i + 4 : i + 7 - i % 2]}, p)
            for i, p in enumerate(s["preds"][:n])
        ]
        return {"docs": docs}

    answers = sum(1 + i % 4 + 3 - i % 2 for i in range(n))
    c = Case(f"lm-eval truthfulqa_gen scoring, {n} documents ({answers} answers)", setup, groups=("patch",))
    c.impls["lm-eval (unpatched)"] = Impl(truthfulqa_gen, "oracle")
    c.impls["patched"] = Impl(_patched(truthfulqa_gen, ["sacrebleu", "rouge_score"]), "ours")
    return c


def lm_eval_stderr(d: dict) -> float:
    """lm-evaluation-harness's own ``bootstrap_stderr`` of a task's statistic, its process pool and all."""
    from lm_eval.api import metrics

    return metrics.bootstrap_stderr(getattr(metrics, d["statistic"]), d["items"], d["iters"])


# the statistic, its items as the harness has them (a GLUE or LAMBADA validation set's size), and a name
_STDERR_ITEMS: dict[str, tuple[Callable[[np.random.Generator], list], str]] = {
    "perplexity": (lambda g: (-g.exponential(2.0, 5153)).tolist(), "LAMBADA perplexity, 5,153 log-likelihoods"),
    "f1_score": (lambda g: _pairs(g, 408, 0.68), "GLUE MRPC F1, 408 (gold, pred) pairs"),
    "matthews_corrcoef": (lambda g: _pairs(g, 1043, 0.69), "GLUE CoLA MCC, 1,043 (gold, pred) pairs"),
}


def _pairs(g: np.random.Generator, n: int, p_gold: float) -> list:
    gold = (g.random(n) < p_gold).astype(int)
    pred = np.where(g.random(n) < 0.75, gold, 1 - gold)  # np.argmax of the choices' log-likelihoods: np.int64
    return [(int(a), b) for a, b in zip(gold, pred.astype(np.int64))]


def lm_eval_stderr_case(statistic: str, iters: int) -> Case:
    make, name = _STDERR_ITEMS[statistic]

    def setup():
        return {"statistic": statistic, "items": make(np.random.default_rng(0)), "iters": iters}

    c = Case(f"lm-eval bootstrap_stderr: {name}, {iters:,} resamples", setup, groups=("patch",))
    c.impls["lm-eval (unpatched)"] = Impl(lm_eval_stderr, "oracle", note="its pool of cpu_count() processes")
    c.impls["patched"] = Impl(_patched(lm_eval_stderr, "lm_eval"), "ours")
    return c


def lm_eval_bleu_stderr_case(data_dir: str) -> Case:
    def setup():
        d = wmt17_tiled(data_dir, 3004)
        return {"statistic": "bleu", "items": list(zip(d["refs"], d["hyps"])), "iters": 100}

    c = Case("lm-eval bootstrap_stderr: WMT17 BLEU, 3,004 segments, 100 resamples", setup, groups=("patch",))
    c.impls["lm-eval + sacrebleu patched"] = Impl(_patched(lm_eval_stderr, "sacrebleu"), "oracle")
    c.impls["patched"] = Impl(_patched(lm_eval_stderr, ["lm_eval", "sacrebleu"]), "ours")
    return c


def sklearn_topk_case(n: int, c: int, k: int = 5) -> Case:
    def fn(d):
        from sklearn.metrics import top_k_accuracy_score

        return top_k_accuracy_score(d["t"], d["x"], k=k)

    def setup():
        d = _lm_data(n, c, pad=0.0)
        d["t"][:c] = np.arange(c)  # every class present, as scikit-learn requires without labels=
        return d

    return _case(f"sklearn top_k_accuracy_score k={k} f32 ({n:,}, {c:,})", setup, fn, "scikit-learn")


def torchmetrics_perplexity_case(n: int, v: int) -> Case:
    def fn(d):
        from torchmetrics.text import Perplexity

        m = Perplexity(ignore_index=-100)
        m.update(d["logits"], d["target"])
        return float(m.compute())

    def setup():
        import torch

        g = torch.Generator().manual_seed(0)
        target = torch.randint(0, v, (1, n), generator=g)
        target[0, : n // 10] = -100
        return {"logits": torch.randn(1, n, v, generator=g), "target": target}

    return _case(f"torchmetrics Perplexity update + compute f32 ({n:,}, {v:,})", setup, fn, "torchmetrics")


def torchmetrics_text_loop(d: dict) -> float | dict:
    """A Lightning validation loop's text metric: ``update`` on batches of 32 segments, then ``compute``."""
    import torchmetrics.text

    m = getattr(torchmetrics.text, d["metric"])()
    hyps, refs = d["hyps"], d["refs"]
    one = d["metric"] in _EDIT_METRICS  # one reference a segment, as a str
    for i in range(0, len(hyps), 32):
        m.update(hyps[i : i + 32], refs[i : i + 32] if one else [[r] for r in refs[i : i + 32]])
    out = m.compute()  # (ROUGEScore: a dict of tensors)
    return {k: float(v) for k, v in out.items()} if isinstance(out, dict) else float(out)


def torchmetrics_text_case(data_dir: str, metric: str, n: int) -> Case:
    def setup():
        if metric != "ROUGEScore":
            return {**wmt17_tiled(data_dir, n), "metric": metric}
        import nltk  # ROUGE-Lsum splits sentences with nltk's Punkt: its English model from the shared data

        if os.path.join(data_dir, "nltk_data") not in nltk.data.path:
            nltk.data.path.insert(0, os.path.join(data_dir, "nltk_data"))
        d = _summaries(data_dir, n)
        return {"hyps": d["preds"], "refs": d["refs"], "metric": metric}

    what = "summary pairs, rouge1/2/L/Lsum" if metric == "ROUGEScore" else "WMT17 segments"
    return _case(
        f"torchmetrics {metric} update (batches of 32) + compute, {n:,} {what}",
        setup,
        torchmetrics_text_loop,
        "torchmetrics",
    )


# torchmetrics' own text metrics take 0.5 ms (BLEU), 3 ms (TER), 4 ms (ROUGE) and 11 ms (chrF) a segment; WER
# 0.1 ms, CER 3.5 ms, EditDistance 6.9 ms (the speech metrics: hypothesis and reference both str) and EED 5 ms
_TORCHMETRICS_TEXT = {
    "SacreBLEUScore": (500, 3004),
    "TranslationEditRate": (100, 1000),
    "CHRFScore": (50, 300),
    "ROUGEScore": (50, 500),
    "WordErrorRate": (500, 3004),
    "CharErrorRate": (100, 1000),
    "EditDistance": (50, 500),
    "ExtendedEditDistance": (50, 500),
}
_EDIT_METRICS = ("WordErrorRate", "CharErrorRate", "EditDistance")


# mbrs 0.1.8's neural metrics, which `import mbrs.metrics` imports with the rest, and the class each defines
_MBRS_NEURAL = {
    "bertscore": "MetricBERTScore",
    "bleurt": "MetricBLEURT",
    "comet": "MetricCOMET",
    "cometkiwi": "MetricCOMETkiwi",
    "metricx": "MetricMetricX",
    "xcomet": "MetricXCOMET",
}


def mbrs_metrics() -> Any:
    """``mbrs.metrics``. Where its neural metrics do not import (mbrs 0.1.8's need bert-score, bleurt-pytorch,
    unbabel-comet and transformers < 5, which pins torchmetrics < 0.11 and NumPy < 2; installed with
    ``--no-deps``, as pyproject.toml says), each of those modules is an empty stand-in, so that the BLEU,
    chrF and TER modules, mbrs' own, import."""
    try:
        import mbrs.metrics

        return mbrs.metrics
    except ImportError:
        pass
    for name in [n for n in sys.modules if n == "mbrs.metrics" or n.startswith("mbrs.metrics.")]:
        del sys.modules[name]  # what the failed import left
    for module, cls in _MBRS_NEURAL.items():
        stand_in = types.ModuleType(f"mbrs.metrics.{module}", f"a stand-in: mbrs' {cls} does not import here")
        setattr(stand_in, cls, None)
        sys.modules[stand_in.__name__] = stand_in
    import mbrs.metrics

    return mbrs.metrics


def mbrs_pairwise_case(data_dir: str, metric: str, n: int) -> Case:
    """MBR decoding's score matrix in mbrs (``expected_scores`` calls ``pairwise_scores``), with mbrs'
    default configuration (8 worker processes): n WMT17 segments of one system against n of another."""

    def setup():
        cls = getattr(mbrs_metrics(), f"Metric{metric}")
        return {"metric": cls(cls.Config()), **_two_systems(n, data_dir)}

    def fn(d):
        return d["metric"].pairwise_scores(d["a"], d["b"])

    return _case(f"mbrs Metric{metric}.pairwise_scores, {n:,} x {n:,} WMT17 segments", setup, fn, "mbrs")


def _stderr_iters(quick: bool) -> dict[str, int]:
    # the harness's default is 100,000 resamples; F1 and MCC run at 10,000 here (unpatched: 8 and 13 s a
    # round on 2 cores), their 100,000 measured once (docs/patch.md)
    if quick:
        return {"perplexity": 2000, "f1_score": 1000, "matthews_corrcoef": 1000}
    return {"perplexity": 100_000, "f1_score": 10_000, "matthews_corrcoef": 10_000}


def cases(quick: bool, data_dir: str | None) -> list[Case]:
    """The patch cases whose libraries are installed (text cases need the shared data)."""
    out = []
    if data_dir and have("sacrebleu"):
        out.append(lm_eval_bleu_case(data_dir, 20 if quick else 100))
        out += [sentence_loop_case(data_dir, m, 500 if quick else 3004) for m in ("bleu", "chrf", "ter")]
    if data_dir and have("rouge_score"):
        out += [rouge_scorer_case(data_dir, 500 if quick else 2000), bootstrap_aggregator_case(data_dir, 2000)]
        if have("lm_eval") and have("sacrebleu"):
            out.append(truthfulqa_gen_case(data_dir, 5 if quick else 20))
    if have("lm_eval") and have("sklearn"):
        out += [lm_eval_stderr_case(s, i) for s, i in _stderr_iters(quick).items()]
        if data_dir:
            out.append(lm_eval_bleu_stderr_case(data_dir))
    if have("sklearn"):
        out.append(sklearn_topk_case(*((20000, 1000) if quick else (100000, 1000))))
    if have("torchmetrics"):
        out.append(torchmetrics_perplexity_case(*((512, 32000) if quick else (4096, 128256))))
        if data_dir:
            out += [torchmetrics_text_case(data_dir, m, n[0 if quick else 1]) for m, n in _TORCHMETRICS_TEXT.items()]
    if data_dir and have("mbrs") and have("fastchrf"):
        out += [mbrs_pairwise_case(data_dir, m, 64 if quick else 256) for m in ("BLEU", "ChrF", "TER")]
    return out
