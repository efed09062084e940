"""lm-evaluation-harness's bootstrap standard errors at its default 100,000 resamples, one run each: the harness's
own ``bootstrap_stderr`` (its pool of cpu_count() processes) against ``tm.patch(["lm_eval"])``, same process.

    python tools/lm_eval_stderr_defaults.py [perplexity f1_score matthews_corrcoef]

Items as ``_bench.cases_patch`` makes them (LAMBADA-, MRPC- and CoLA-sized). Unpatched F1 and MCC take 1.5 to
2 minutes each on 2 cores.
"""

import sys
import time

import numpy as np

import turbometrics as tm
from turbometrics._bench.cases_patch import _STDERR_ITEMS, lm_eval_stderr


def main(which: list[str]) -> None:
    for stat in which or list(_STDERR_ITEMS):
        make, name = _STDERR_ITEMS[stat]
        d = {"statistic": stat, "items": make(np.random.default_rng(0)), "iters": 100_000}
        tm.patch(["lm_eval"])
        t = time.perf_counter()
        first = lm_eval_stderr(d)
        t_first = time.perf_counter() - t
        t = time.perf_counter()
        again = lm_eval_stderr(d)
        t_again = time.perf_counter() - t
        tm.unpatch()
        t = time.perf_counter()
        want = lm_eval_stderr(d)
        t_orig = time.perf_counter() - t
        same = want.hex() == first.hex() == again.hex()
        print(
            f"{name}: unpatched {t_orig:.2f} s, patched {t_again:.3f} s (first call {t_first:.3f} s), "
            f"{t_orig / t_again:.0f}x, the same float: {same}",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
