"""The cost of a first call in a fresh process (``turbometrics bench --first-call``)."""

from __future__ import annotations

import json
import subprocess
import sys

_FIRST_CALL = """
import time, json, numpy as np
t0 = time.perf_counter()
import turbometrics as tm
t1 = time.perf_counter()
rng = np.random.default_rng(0)
x = rng.standard_normal((64, 1000)).astype({dtype!r}); t = rng.integers(0, 1000, 64)
t2 = time.perf_counter(); {call}; t3 = time.perf_counter(); {call}; t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first": t3 - t2, "second": t4 - t3}}))
"""


# Public calls whose first call in a process once paid Numba's JIT or cache load (the rank count and the
# resampling sums, both C++ now): label -> (dtype of x, the call).
FIRST_CALLS = {
    "topk_accuracy (64, 1000) float32": ("float32", "tm.topk_accuracy(x, t, k=5)"),
    "topk_accuracy (64, 1000) float16": ("float16", "tm.topk_accuracy(x, t, k=5)"),
    "bootstrap_ci of TopKAccuracy, 64 rows": (
        "float32",
        "tm.bootstrap_ci(tm.metrics.TopKAccuracy(5).update(x, t), 100)",
    ),
}


def first_call() -> dict[str, dict[str, float]]:
    """Seconds of each call in ``FIRST_CALLS`` made first in a fresh process (after ``import turbometrics``:
    the call loads its modules) and of the same call made again."""
    res = {}
    for label, (dtype, call) in FIRST_CALLS.items():
        out = subprocess.run(
            [sys.executable, "-c", _FIRST_CALL.format(dtype=dtype, call=call)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        res[label] = {"first": r["first"], "second": r["second"]}
    return res
