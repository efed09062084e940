"""One call of every metric family from an installed turbometrics (not the source tree): the smoke test
that tests/test_wheel.py and cibuildwheel's test-command run against a freshly installed wheel:
python tools/wheel_smoke.py (from any directory but the repository's root)."""

import sys

import numpy as np

import turbometrics as tm

assert tm.__file__.startswith(sys.prefix), tm.__file__  # the installed wheel, not the source tree
rng = np.random.default_rng(0)
logits, t = rng.standard_normal((6, 50)).astype(np.float32), rng.integers(0, 50, 6)
assert tm.perplexity(np.zeros((3, 4), np.float32), [0, 1, 2]) == 4.0
assert tm.token_nll(logits, t).shape == (6,)
assert tm.topk(logits, 3)[1].shape == (6, 3) and 0 <= tm.topk_accuracy(logits, t, k=5) <= 1
hyps, refs = ["the cat sat on the mat"], [["the cat sat on a mat"]]
assert tm.corpus_bleu(hyps, refs).score > 0 and tm.corpus_chrf(hyps, refs).score > 0
assert tm.corpus_ter(hyps, refs).score > 0 and tm.rouge(hyps, refs[0])["rougeL"].fmeasure[0] > 0
assert tm.tokenize("Hello, world.") == ["Hello", ",", "world", "."]
acc = tm.metrics.BLEU().update(hyps * 5, [refs[0] * 5])
ci = tm.bootstrap_ci(acc, n_resamples=50)
print(ci)
assert sum(1 for _ in tm.KFold(5).split(np.arange(20))) == 5
tm.show_config()
print("smoke ok")
