"""Other people's evaluation code, each run in a fresh process, plain or under ``tm.patch()``.

    python benchmarks/fresh_runs.py lm-eval-bootstrap METRIC ITERS DATA_DIR [patched]
    python benchmarks/fresh_runs.py evaluate-rouge N DATA_DIR [patched]

Prints one JSON line: ``seconds`` from the process's start (every import included), ``call`` the
seconds of the evaluation itself once the harness's libraries are imported (the metric's first call in
this process: what a cold start costs on top of the imports, which are the same both ways), and the
result. test_bench_fresh_runs.py times both ways in one run and checks that the results are equal.

- ``lm-eval-bootstrap``: lm-evaluation-harness's aggregation of a translation task, as its evaluator
  does it: the corpus metric over all items (``lm_eval.api.metrics.bleu``/``chrf``/``ter``), then its
  standard error by ``bootstrap_stderr`` (a ``multiprocessing`` Pool, forked on Linux, scoring ITERS
  resamples). Items are (reference, hypothesis) pairs of one WMT17 system.
- ``evaluate-rouge``: Hugging Face evaluate's ``rouge`` metric with its defaults (rouge1, rouge2, rougeL,
  rougeLsum; ``BootstrapAggregator``; mid F-measures) on N summary pairs (the 337 English summaries,
  repeated). The metric script lives on the Hub (``evaluate.load("rouge")`` downloads it), which these
  machines cannot reach, so an ``evaluate.Metric`` here makes the calls its ``_compute`` makes
  (``RougeScorer.score`` per pair into a ``BootstrapAggregator``, then ``aggregate()``), through
  ``Metric.compute`` as a user's call goes.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402


def _lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def lm_eval_bootstrap(metric: str, iters: int, data_dir: str) -> dict:
    import lm_eval.api.metrics as M

    d = os.path.join(data_dir, "wmt17-en-de")
    refs = _lines(os.path.join(d, "newstest2017.ref.de"))
    hyps = _lines(os.path.join(d, sorted(p for p in os.listdir(d) if p.endswith(".hyp.de"))[0]))
    items = list(zip(refs, hyps))
    agg = {"bleu": M.bleu, "chrf": M.chrf, "ter": M.ter}[metric]
    t = time.perf_counter()
    score = agg(items)
    stderr = M.stderr_for_metric(agg, bootstrap_iters=iters)(items)
    return {"score": score, "stderr": stderr}, time.perf_counter() - t


def evaluate_rouge(n: int, data_dir: str) -> dict:
    import datasets
    import evaluate
    from rouge_score import rouge_scorer, scoring

    class Rouge(evaluate.Metric):
        def _info(self):
            return evaluate.MetricInfo(
                description="rouge",
                citation="",
                inputs_description="",
                features=datasets.Features(
                    {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
                ),
            )

        def _compute(self, predictions, references):
            scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=False)
            aggregator = scoring.BootstrapAggregator()
            for ref, pred in zip(references, predictions):
                aggregator.add_scores(scorer.score(ref, pred))
            return {k: v.mid.fmeasure for k, v in aggregator.aggregate().items()}

    d = os.path.join(data_dir, "summaries-en")
    pred_lines = _lines(os.path.join(d, "predictions.txt"))
    ref_lines = _lines(os.path.join(d, "references.txt"))
    reps = -(-n // len(pred_lines))
    pred_lines, ref_lines = (pred_lines * reps)[:n], (ref_lines * reps)[:n]
    import numpy as np

    np.random.seed(0)  # BootstrapAggregator draws from NumPy's global RandomState: the same draws both ways
    t = time.perf_counter()
    result = Rouge().compute(predictions=pred_lines, references=ref_lines)
    return result, time.perf_counter() - t


def main(argv: list[str]) -> None:
    patched = argv[-1] == "patched"
    args = argv[:-1] if patched else argv
    if patched:
        import turbometrics as tm

        tm.patch()
    if args[0] == "lm-eval-bootstrap":
        result, call = lm_eval_bootstrap(args[1], int(args[2]), args[3])
    elif args[0] == "evaluate-rouge":
        result, call = evaluate_rouge(int(args[1]), args[2])
    else:
        raise SystemExit(f"unknown run {args[0]!r}")
    print(json.dumps({"seconds": time.perf_counter() - T0, "call": call, "result": result}))


if __name__ == "__main__":
    main(sys.argv[1:])
