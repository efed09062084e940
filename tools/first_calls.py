"""First calls as a user meets them: each public function in a fresh process, its first and second call.

    python tools/first_calls.py                # every function, cold then warm; a markdown table
    python tools/first_calls.py --only bleu    # the functions whose name holds "bleu"

Each function runs in its own fresh Python process: ``import turbometrics`` (timed), inputs built from a
file this script writes (not timed: the user's data), then the first call and the second call (timed).
"cold" is an empty Numba cache (a new NUMBA_CACHE_DIR) and the OS's file cache as it is; "warm" runs the
same process again with that cache. (No CPU kernel is compiled at run time any more, so the two agree;
the pair stays to show it, and for the GPU kernels, which numba.cuda compiles.) Inputs are the benchmark's
quick sizes (``turbometrics bench --quick``). The table goes to docs/performance.md ("First calls").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# name -> (setup, call); setup may use `d` (the inputs: numpy arrays and lists), `np` and `tm`
CASES: dict[str, tuple[str, str]] = {
    "topk": ("x = d['x']", "tm.topk(x, 5)"),
    "target_rank": ("s, y = d['s'], d['y']", "tm.target_rank(s, y)"),
    "topk_accuracy": ("s, y = d['s'], d['y']", "tm.topk_accuracy(s, y, k=5)"),
    "mean_reciprocal_rank": ("s, y = d['s'], d['y']", "tm.mean_reciprocal_rank(s, y)"),
    "token_nll": ("x, t = d['x'], d['t']", "tm.token_nll(x, t)"),
    "perplexity": ("x, t = d['x'], d['t']", "tm.perplexity(x, t)"),
    "perplexity (bfloat16)": (
        "import ml_dtypes; x, t = d['x'].astype(ml_dtypes.bfloat16), d['t']",
        "tm.perplexity(x, t)",
    ),
    "perplexity_from_log_probs": (
        "x, t = d['x'], d['t']; lp = x - np.log(np.exp(x).sum(-1, keepdims=True))",
        "tm.perplexity_from_log_probs(lp, t)",
    ),
    "perplexity_from_probs": (
        "x, t = d['x'], d['t']; p = np.exp(x); p /= p.sum(-1, keepdims=True)",
        "tm.perplexity_from_probs(p, t)",
    ),
    "perplexity_from_nll": ("nll = d['x'][:, 0] ** 2", "tm.perplexity_from_nll(nll)"),
    "perplexity_from_hidden": (
        "h, w, t = d['x'][:, :256].copy(), d['head'], d['t']",
        "tm.perplexity_from_hidden(h, w, t)",
    ),
    "token_nll_from_hidden": (
        "h, w, t = d['x'][:, :256].copy(), d['head'], d['t']",
        "tm.token_nll_from_hidden(h, w, t)",
    ),
    "lm_perplexity": (
        "import torch; torch.manual_seed(0); emb = torch.nn.Embedding(1000, 64); "
        "head = torch.nn.Linear(64, 1000); model = lambda ids: head(emb(ids)); "
        "ids = torch.randint(0, 1000, (4, 512))",
        "tm.lm_perplexity(model, ids, max_length=128)",
    ),
    "corpus_bleu": ("h, r = d['hyps'], d['refs']", "tm.corpus_bleu(h, [r])"),
    "sentence_bleu": ("h, r = d['hyps'], d['refs']", "tm.sentence_bleu(h[0], [r[0]])"),
    "segment_bleu": ("h, r = d['hyps'], d['refs']", "tm.segment_bleu(h, [r])"),
    "prepare_references": ("r = d['refs']", "tm.prepare_references([r])"),
    "tokenize": ("h = d['hyps']", "tm.tokenize(h[0])"),
    "corpus_chrf": ("h, r = d['hyps'], d['refs']", "tm.corpus_chrf(h, [r])"),
    "sentence_chrf": ("h, r = d['hyps'], d['refs']", "tm.sentence_chrf(h[0], [r[0]])"),
    "segment_chrf": ("h, r = d['hyps'], d['refs']", "tm.segment_chrf(h, [r])"),
    "corpus_ter": ("h, r = d['hyps'][:1000], d['refs'][:1000]", "tm.corpus_ter(h, [r])"),
    "sentence_ter": ("h, r = d['hyps'], d['refs']", "tm.sentence_ter(h[0], [r[0]])"),
    "segment_ter": ("h, r = d['hyps'][:1000], d['refs'][:1000]", "tm.segment_ter(h, [r])"),
    "rouge": ("h, r = d['hyps'][:2000], d['refs'][:2000]", "tm.rouge(h, r)"),
    "lcs_length": (
        "h, r = d['hyps'][:2000], d['refs'][:2000]; a = [[hash(w) % 50000 for w in s.split()] for s in h]; "
        "b = [[hash(w) % 50000 for w in s.split()] for s in r]",
        "tm.lcs_length(a, b)",
    ),
    "pairwise_bleu": ("h = d['hyps'][:300]", "tm.pairwise_bleu(h)"),
    "pairwise_chrf": ("h = d['hyps'][:300]", "tm.pairwise_chrf(h)"),
    "pairwise_ter": ("h = d['hyps'][:100]", "tm.pairwise_ter(h)"),
    "pairwise_rouge": ("h = d['hyps'][:300]", "tm.pairwise_rouge(h)"),
    "metrics.BLEU update + compute": (
        "h, r = d['hyps'], d['refs']",
        "m = tm.metrics.BLEU(); m.update(h, [r]); m.compute()",
    ),
    "metrics.Perplexity update + compute": (
        "x, t = d['x'], d['t']",
        "m = tm.metrics.Perplexity(); m.update(x, t); m.compute()",
    ),
    "metrics.TopKAccuracy update + compute": (
        "s, y = d['s'], d['y']",
        "m = tm.metrics.TopKAccuracy(k=5); m.update(s, y); m.compute()",
    ),
    "bootstrap_ci (BLEU, 3,000 segments)": (
        "h, r = d['hyps'][:3000], d['refs'][:3000]; import turbometrics.metrics as M; m = M.BLEU(); m.update(h, [r])",
        "tm.bootstrap_ci(m, n_resamples=1000)",
    ),
    "bootstrap_ci (BLEU, sacrebleu mode)": (
        "h, r = d['hyps'][:3000], d['refs'][:3000]; import turbometrics.metrics as M; m = M.BLEU(); m.update(h, [r])",
        "tm.bootstrap_ci(m, n_resamples=1000, mode='sacrebleu')",
    ),
    "rouge-score BootstrapAggregator, patched (2,000 pairs)": (
        "from rouge_score import scoring; g = np.random.default_rng(0); tm.patch(['rouge_score']); "
        "S = [{t: scoring.Score(*g.random(3)) for t in ('rouge1', 'rouge2', 'rougeL')} for _ in range(2000)]",
        "a = scoring.BootstrapAggregator(); [a.add_scores(x) for x in S]; np.random.seed(0); a.aggregate()",
    ),
    "paired_test (BLEU, bootstrap)": (
        "h, r = d['hyps'][:3000], d['refs'][:3000]; import turbometrics.metrics as M; a = M.BLEU(); "
        "a.update(h, [r]); b = M.BLEU(); b.update(r, [h])",
        "tm.paired_test(a, b)",
    ),
    "KFold / StratifiedKFold / GroupKFold / RepeatedKFold": (
        "s, y = d['s'], d['y'] % 5; g = np.arange(len(y)) % 7",
        "[list(c.split(s, y, g)) for c in (tm.KFold(5, shuffle=True, random_state=0), tm.StratifiedKFold(5), "
        "tm.GroupKFold(5), tm.RepeatedKFold(n_splits=5, n_repeats=2, random_state=0))]",
    ),
    "cross_validate": (
        "s, y = d['s'][:2000], d['y'][:2000]",
        "tm.cross_validate(lambda a, b, c: c, s, y, cv=5, metrics={'top5': lambda p, q: tm.topk_accuracy(p, q, k=5)})",
    ),
    "show_config": (
        "import io, contextlib; sink = io.StringIO()",
        "with contextlib.redirect_stdout(sink): tm.show_config()",
    ),
}

CHILD = """
import time
t0 = time.perf_counter()
import turbometrics as tm
t1 = time.perf_counter()
import json, pickle, numpy as np
d = pickle.load(open({data!r}, "rb"))
{setup}
t2 = time.perf_counter()
{call}
t3 = time.perf_counter()
{call}
t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first": t3 - t2, "second": t4 - t3}}))
"""


def make_inputs(path: str) -> None:
    """The quick sizes' inputs, pickled (the children read them without importing turbometrics)."""
    import pickle

    import numpy as np

    from turbometrics._bench import zipf_corpus

    rng = np.random.default_rng(0)
    hyps, refs = zipf_corpus(5000)
    d = {
        "x": (rng.standard_normal((512, 32000)) * 3).astype(np.float32),
        "t": rng.integers(0, 32000, 512),
        "s": rng.standard_normal((20000, 1000)).astype(np.float32),
        "y": rng.integers(0, 1000, 20000),
        "head": (rng.standard_normal((32000, 256)) * 0.05).astype(np.float32),
        "hyps": hyps,
        "refs": refs,
    }
    with open(path, "wb") as f:
        pickle.dump(d, f, protocol=5)


def run_case(name: str, data: str, cache: str) -> dict:
    setup, call = CASES[name]
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(data=data, setup=setup, call=call)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{name}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="only the functions whose name holds this")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    names = [n for n in CASES if args.only in n]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "inputs.pkl")
        make_inputs(data)
        for name in names:
            cache = os.path.join(tmp, "numba-" + str(len(rows)))  # an empty cache for each function
            cold, warm = run_case(name, data, cache), run_case(name, data, cache)
            rows[name] = {"cold": cold, "warm": warm}
            print(
                f"{name:55s} import {cold['import'] * 1e3:6.1f} ms  cold first {cold['first'] * 1e3:8.1f} ms  "
                f"second {cold['second'] * 1e3:8.1f} ms  |  warm first {warm['first'] * 1e3:8.1f} ms  "
                f"second {warm['second'] * 1e3:8.1f} ms",
                file=sys.stderr,
                flush=True,
            )
    print("| function | import | first call, cold cache | second call | first call, warm cache | second call |")
    print("|---|---:|---:|---:|---:|---:|")
    ms = lambda t: f"{t * 1e3:.1f} ms"  # noqa: E731
    for name, r in rows.items():
        c, w = r["cold"], r["warm"]
        print(
            f"| `{name}` | {ms(c['import'])} | {ms(c['first'])} | {ms(c['second'])} | {ms(w['first'])} | "
            f"{ms(w['second'])} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"when": time.strftime("%Y-%m-%d"), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
