"""Resampling's steady state: ``python tools/resampling_bench.py [DATA_DIR]`` (the shared data by default).

Times, median of repeats after a warm-up call, at 2 threads: ``tm.bootstrap_ci`` of a ``tm.metrics.BLEU()``
over 3,000 and 100,000 WMT17 segments (uedin-nmt against the reference, tiled; 1,000 resamples), and
rouge-score's ``BootstrapAggregator.aggregate()`` under ``tm.patch(["rouge_score"])`` for 2,000 summary pairs
(rouge1/2/L, 1,000 resamples, ``np.random.seed(0)`` first). Prints one JSON line (seconds). Run it with
PYTHONPATH at each tree to compare them; on a shared 2-core machine another process on the second core
stretches every 2-thread call (2-4x here), so compare runs made while the machine is otherwise idle.
"""

import functools
import json
import os
import statistics
import sys
import time

import numpy as np

import turbometrics as tm
from turbometrics import _bench
from turbometrics._bench import cases_patch

DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def median_time(fn, repeat: int) -> float:
    fn()  # the warm-up: first-call costs are tools/first_calls.py's
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    res = {"tree": os.path.dirname(tm.__file__)}
    for n, repeat in ((3000, 9), (100_000, 5)):
        d = _bench.wmt17_tiled(DATA, n)
        acc = tm.metrics.BLEU().update(d["hyps"], [d["refs"]])
        res[f"bootstrap_ci BLEU {n:,}"] = median_time(
            functools.partial(tm.bootstrap_ci, acc, 1000, num_threads=2), repeat
        )
    from rouge_score import scoring

    scores = cases_patch.rouge_scorer_loop(cases_patch._summaries(DATA, 2000))  # not timed

    def aggregate():
        agg = scoring.BootstrapAggregator()
        for s in scores:
            agg.add_scores(s)
        np.random.seed(0)
        return agg.aggregate()

    tm.patch(["rouge_score"])
    try:
        res["BootstrapAggregator 2,000 pairs, patched"] = median_time(aggregate, 9)
    finally:
        tm.unpatch()
    print(json.dumps(res))


if __name__ == "__main__":
    main()
