"""Issue 28's small calls: perplexity, token_nll, topk, topk_accuracy on (64, 1000) float32 against PyTorch,
median of 300 calls each, 2 threads, NumPy input and torch input: python tools/small_calls.py"""

import statistics
import time

import numpy as np
import torch

import turbometrics as tm

torch.set_num_threads(2)
rng = np.random.default_rng(0)
x = rng.standard_normal((64, 1000)).astype(np.float32)
t = rng.integers(0, 1000, 64)
xt, tt = torch.from_numpy(x), torch.from_numpy(t)
F = torch.nn.functional


def med(f, n=300):
    for _ in range(30):
        f()
    ts = []
    for _ in range(n):
        a = time.perf_counter_ns()
        f()
        ts.append(time.perf_counter_ns() - a)
    return statistics.median(ts) / 1e3


rows = [
    (
        "perplexity",
        lambda: tm.perplexity(x, t),
        lambda: tm.perplexity(xt, tt),
        lambda: torch.exp(F.cross_entropy(xt, tt)),
    ),
    (
        "token_nll",
        lambda: tm.token_nll(x, t),
        lambda: tm.token_nll(xt, tt),
        lambda: F.cross_entropy(xt, tt, reduction="none"),
    ),
    ("topk", lambda: tm.topk(x, 5), lambda: tm.topk(xt, 5), lambda: torch.topk(xt, 5)),
    (
        "topk_accuracy",
        lambda: tm.topk_accuracy(x, t, k=5),
        lambda: tm.topk_accuracy(xt, tt, k=5),
        lambda: (torch.topk(xt, 5).indices == tt[:, None]).any(1).float().mean(),
    ),
]
for name, a, b, c in rows:
    ra, rb, rc = med(a), med(b), med(c)
    print(
        f"{name:14s} numpy {ra:6.1f} us  torch-in {rb:6.1f} us  PyTorch {rc:6.1f} us  "
        f"ratio {ra / rc:.2f} [{rb / rc:.2f}]"
    )
