"""A new process's first GPU calls, as a user's evaluation script meets them (GPU machine).

Each run is a fresh Python process: the first call of each function below on small CUDA tensors (the LM head's
on bf16 hidden states and weights), timed with
the host clock (synchronised), with the compiled-kernel disk cache (``turbometrics._kernels.cuda.jit``) empty,
then filled by that run, then switched off. Prints one line a run: each call's seconds, the total, and the
kernels numba loaded from the cache vs compiled.
    python tools/gpu_first_call.py
"""

import json
import os
import subprocess
import sys
import tempfile

RUN = r"""
import json, time
t0 = time.perf_counter()
import torch
import turbometrics as tm
from turbometrics._kernels import cuda as K
imported = time.perf_counter() - t0
torch.cuda.init()
x = torch.randn(64, 32000, device="cuda")
t = torch.randint(0, 32000, (64,), device="cuda")
h = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
w = torch.randn(32000, 256, device="cuda", dtype=torch.bfloat16)
calls = {
    "perplexity f32": lambda: tm.perplexity(x, t),
    "perplexity bf16": lambda: tm.perplexity(x.to(torch.bfloat16), t),
    "topk_accuracy k=5": lambda: tm.topk_accuracy(x, t, k=5),
    "topk k=5": lambda: tm.topk(x, 5)[0].sum().item(),
    "Perplexity update+compute": lambda: tm.metrics.Perplexity().update(x, t).compute(),
    # the LM head's bf16 folds: perplexity_from_hidden's fold_rows, lm-eval's score_rows (exp table: rows >= 8192)
    "perplexity_from_hidden bf16": lambda: tm.perplexity_from_hidden(h, w, t),
    "token_scores_from_hidden bf16": lambda: tm.token_scores_from_hidden(h, w, t),
}
took = {}
for name, fn in calls.items():
    torch.cuda.synchronize()
    s = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    took[name] = round(time.perf_counter() - s, 3)
kernels = [K.nll_tally(w, g) for w in (K.WIDEN_F32, K.WIDEN_BF16_PAIRS) for g in (K.TPB, 32)]  # one-shot calls
kernels += [K.nll_rows(K.WIDEN_F32, g) for g in (K.TPB, 32)]  # Perplexity.update
kernels += [K.rank_tally(K.WIDEN_F32, g) for g in (K.TPB, 32)] + [K.topk_rows(K.WIDEN_F32)]
kernels += [K.fold_rows(w_, g) for w_ in (K.WIDEN_BF16, K.WIDEN_BF16_PAIRS) for g in (K.TPB, 32)]  # the head's
kernels += [K.score_rows(K.WIDEN_BF16, g) for g in (K.TPB, 32)]
hits = sum(sum(k._cache_hits.values()) for k in kernels)
misses = sum(sum(k._cache_misses.values()) for k in kernels)
print(json.dumps({"import": round(imported, 3), **took, "total": round(sum(took.values()), 3),
                  "first five": round(sum(list(took.values())[:5]), 3),  # (the calls of the 21.4 s at 0ae2ba7)
                  "loaded from the cache": hits, "compiled": misses}))
"""


def run(cache_dir: str, switch: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, TURBOMETRICS_KERNEL_CACHE=switch)
    out = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=300)
    if out.returncode:
        return {"error": out.stderr[-2000:]}
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        for label, switch in (("cache empty", "1"), ("cache filled", "1"), ("cache filled again", "1"), ("off", "0")):
            print(f"{label:<20} {json.dumps(run(d, switch))}", flush=True)


if __name__ == "__main__":
    main()
