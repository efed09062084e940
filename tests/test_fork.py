"""Forked children after a parent's multi-threaded calls return the parent's numbers and never hang.

Each way of forking runs tests/fork_check.py in a fresh process under a timeout, so that a hang fails the
test instead of stalling the run (the bug: GNU libgomp's team does not survive fork(), and a child's first
parallel call waited forever). The build without OpenMP runs the same script in test_portability.py; a
child that asks for the GPU after its parent used it is tests/gpu's (under the CUDA simulator).
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
WAYS = ["os.fork", "pool", "executor", "dataloader", "busy"]


def run_fork_check(ways: list[str], env: dict | None = None, timeout: float = 240) -> str:
    """fork_check.py's output; fails on a non-zero exit or a hang (not done within ``timeout`` a way)."""
    timeout *= len(ways)
    # its own session, so that a hang's forked grandchildren are killed with it
    p = subprocess.Popen(
        [sys.executable, str(HERE / "fork_check.py"), *ways],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HERE,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"forked children did not finish in {timeout} s (a hang): {out[-2000:]!r}")
    r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for way in ways:
        assert f"OK {way}" in r.stdout, r.stdout
    return r.stdout


@pytest.mark.parametrize("way", WAYS)
def test_forked_children_return_the_parents_numbers(way):
    if way == "dataloader":
        pytest.importorskip("torch")
    run_fork_check([way])


LM_EVAL = """
import os, sys
import lm_eval.api.metrics as M
import turbometrics as tm
from conftest import DATA, read_lines
refs = read_lines(DATA / "wmt17-en-de" / "newstest2017.ref.de")[:300]
hyps = read_lines(DATA / "wmt17-en-de" / "online-B.0.hyp.de")[:300]
items = list(zip(refs, hyps))
out = []
for patched in (False, True):
    if patched:
        tm.patch(["sacrebleu"])  # sacrebleu alone: with lm_eval patched, bootstrap_stderr forks no pool
    for agg in (M.bleu, M.chrf, M.ter):
        score = agg(items)  # the harness scores the corpus first (our threads start here), then its Pool forks
        out.append((score, M.stderr_for_metric(agg, bootstrap_iters=10)(items)))
from turbometrics.patch import calls
assert sum(n for (name, how), n in calls().items() if how == "accelerated") >= 3, calls()
print("EQUAL" if out[:3] == out[3:] else f"DIFFER {out}")
"""


@pytest.mark.slow  # lm-eval imports datasets, transformers, ...; resamples three metrics
def test_lm_eval_bootstrap_stderr_under_the_patch():
    """lm-evaluation-harness's bootstrap_stderr scores resamples in a forked multiprocessing Pool: under
    tm.patch() it hung; now it completes with the unpatched numbers."""
    pytest.importorskip("lm_eval", reason="lm-eval is in the test extra")
    try:
        r = subprocess.run([sys.executable, "-c", LM_EVAL], capture_output=True, text=True, timeout=300, cwd=HERE)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"bootstrap_stderr under the patch did not finish in 300 s (a hang): {e.stdout!r}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "EQUAL", r.stdout[-3000:]
