"""First calls cost what later ones do: nothing on the CPU path compiles at run time or needs a cache.

In a fresh process, ``import turbometrics`` loads no NumPy-sized dependency, and every CPU metric family
runs without importing Numba (the GPU kernels' only user) or torch, so a read-only install, an empty
cache and a first process are the same as a warm one. The timings themselves are
tools/first_calls.py's (docs/performance.md, "First calls"): no timing assertions here.
"""

import os
import subprocess
import sys
import textwrap

HEAVY = ("numba", "llvmlite", "torch", "scipy", "sklearn", "sacrebleu", "rouge_score", "dask")

SCRIPT = textwrap.dedent("""
    import sys
    import turbometrics as tm
    after_import = sorted(m for m in sys.modules if m.split(".")[0] in {heavy} or m == "numpy")
    import numpy as np
    from turbometrics._bench import zipf_corpus
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1000)).astype(np.float32); t = rng.integers(0, 1000, 64)
    hyps, refs = zipf_corpus(200)
    tm.perplexity(x, t); tm.token_nll(x, t); tm.topk(x, 5); tm.topk_accuracy(x, t, k=(1, 5))
    tm.mean_reciprocal_rank(x, t); tm.perplexity_from_hidden(x[:, :32], x[:, 32:64].copy(), t % 64)
    tm.corpus_bleu(hyps, [refs]); tm.corpus_chrf(hyps, [refs]); tm.corpus_ter(hyps, [refs])
    tm.rouge(hyps, refs); tm.pairwise_bleu(hyps[:20]); tm.pairwise_ter(hyps[:10])
    acc = tm.metrics.BLEU(); acc.update(hyps, [refs])
    tm.bootstrap_ci(acc, n_resamples=50); tm.paired_test(acc, acc, n_resamples=50)
    m = tm.metrics.TopKAccuracy(k=5); m.update(x, t); m.compute()
    list(tm.StratifiedKFold(5, shuffle=True, random_state=0).split(x, t % 5))
    tm.cross_validate(lambda a, b, c: c, x, t, cv=4, metrics={{"top5": lambda s, y: tm.topk_accuracy(s, y, k=5)}})
    after_calls = sorted(m for m in sys.modules if m.split(".")[0] in {heavy})
    tm.show_config(mode="dicts")  # (asks numba.cuda where a GPU driver is: not counted)
    print(after_import, after_calls)
""").format(heavy=set(HEAVY))


def test_import_and_cpu_calls_load_no_heavy_dependency():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "[] []", r.stdout[-2000:]
