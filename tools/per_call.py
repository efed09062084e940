"""Per-call time of small inputs (the Python layer's cost), public API only, so any checkout can be
timed the same way: PYTHONPATH=<checkout>/src python tools/per_call.py (best of 5 x 2000 calls)."""

import timeit

import numpy as np

import turbometrics as tm

rng = np.random.default_rng(0)
s = rng.standard_normal((64, 1000)).astype(np.float32)
t = rng.integers(0, 1000, 64)
h = "The cat sat on the mat with a small hat ."
r = ["A cat was sitting on the mat in a hat ."]
logits = rng.standard_normal((64, 1000)).astype(np.float32)
cases = {
    "topk_accuracy (64,1000)": lambda: tm.topk_accuracy(s, t, k=5, num_threads=1),
    "sentence_bleu 1 pair": lambda: tm.sentence_bleu(h, r),
    "sentence_chrf 1 pair": lambda: tm.sentence_chrf(h, r),
    "corpus_bleu 1 pair": lambda: tm.corpus_bleu([h], [r], num_threads=1),
    "rouge 1 pair": lambda: tm.rouge([h], r, num_threads=1),
    "perplexity (64,1000)": lambda: tm.perplexity(logits, t, num_threads=1),
}
for k, f in cases.items():
    f()
    n = 2000
    best = min(timeit.repeat(f, number=n, repeat=5)) / n
    print(f"{k:28s} {best * 1e6:8.1f} us")
