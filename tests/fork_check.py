"""Forked children after a parent's multi-threaded calls: ``python fork_check.py WAY [WAY ...]``.

The parent runs every metric family (dense rows, text, pairwise, resampling, model selection) on two
threads, then each WAY forks children that run the same work and must return the same numbers:

- ``os.fork``: a bare fork;
- ``pool``: ``multiprocessing`` Pool with the ``fork`` start method;
- ``executor``: ``concurrent.futures.ProcessPoolExecutor`` with the ``fork`` start method;
- ``dataloader``: a PyTorch ``DataLoader`` with ``num_workers=2`` (fork on Linux);
- ``busy``: ``os.fork`` while another thread of the parent is inside a kernel.

Exits 0 and prints ``OK WAY`` per way when every child matched; a child that hangs is the caller's
timeout (tests/test_fork.py). Run by tests/test_fork.py (this build) and tests/test_portability.py
(the build without OpenMP).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import sys
import threading
import time

import numpy as np

import turbometrics as tm
from turbometrics._bench import zipf_corpus

THREADS = 2  # every call asks for two threads, whatever the machine: the parent's pool must exist

_rng = np.random.default_rng(0)
LOGITS = (_rng.standard_normal((2048, 1000)) * 3).astype(np.float32)
TARGETS = _rng.integers(0, 1000, 2048)
HYPS, REFS = zipf_corpus(3000)


def work(_: object = None) -> bytes:
    """Every family's numbers, as float64 bytes (they cross a pipe, a pickle or a DataLoader as they are)."""
    x, t = LOGITS, TARGETS
    out = [
        tm.perplexity(x, t, num_threads=THREADS),
        tm.token_nll(x, t, num_threads=THREADS).sum(),
        tm.topk(x, 5, num_threads=THREADS)[1].sum(),
        tm.topk_accuracy(x, t, k=5, num_threads=THREADS),
        tm.mean_reciprocal_rank(x, t, num_threads=THREADS),
    ]
    refs = [REFS]
    out += [
        tm.corpus_bleu(HYPS, refs, num_threads=THREADS).score,
        tm.corpus_chrf(HYPS, refs, num_threads=THREADS).score,
        tm.corpus_ter(HYPS[:500], [REFS[:500]], num_threads=THREADS).score,
        tm.rouge(HYPS, REFS, num_threads=THREADS)["rougeL"].fmeasure.sum(),
    ]
    out += [
        tm.pairwise_bleu(HYPS[:200], num_threads=THREADS).sum(),
        tm.pairwise_chrf(HYPS[:100], num_threads=THREADS).sum(),
    ]
    acc = tm.metrics.BLEU()
    acc.update(HYPS, refs)
    ci = tm.bootstrap_ci(acc, n_resamples=200, seed=1, num_threads=THREADS)
    out += [ci.low, ci.high]
    cv = tm.cross_validate(
        lambda xtr, ytr, xte: xte,
        x[:400],
        t[:400] % 1000,
        cv=tm.KFold(4, shuffle=True, random_state=0),
        metrics={"top5": lambda s, y: tm.topk_accuracy(s, y, k=5)},
    )
    out += [float(np.sum(cv.scores["top5"]))]
    return np.array(out, np.float64).tobytes()


def _check(way: str, got: list[bytes], want: bytes) -> None:
    for i, g in enumerate(got):
        if g != want:
            print(f"FAIL {way}: child {i} returned {np.frombuffer(g)} != {np.frombuffer(want)}", flush=True)
            sys.exit(1)
    print(f"OK {way} ({len(got)} children)", flush=True)


def _fork_once() -> bytes:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its numbers down the pipe, then out without running the parent's cleanup
        code = 1
        try:
            os.write(w, work())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"child exited with {status}"
    return data


def _busy_fork() -> list[bytes]:
    """Fork while a second thread of the parent loops over a multi-threaded kernel call."""
    stop = threading.Event()

    def spin() -> None:  # a kernel, and metric folds that hold the metrics' state lock
        acc = tm.metrics.BLEU()
        while not stop.is_set():
            tm.corpus_chrf(HYPS, [REFS], num_threads=THREADS)
            for i in range(0, 3000, 100):
                acc.update(HYPS[i : i + 100], [REFS[i : i + 100]])
                acc.compute()

    th = threading.Thread(target=spin, daemon=True)
    th.start()
    got = []
    try:
        for _ in range(3):
            time.sleep(0.03)
            got.append(_fork_once())
    finally:
        stop.set()
        th.join()
    return got


def main(ways: list[str]) -> None:
    from turbometrics._ext import _dense

    print("THREADING", _dense.THREADING, flush=True)  # the build under test (test_portability checks it)
    want = work()  # the parent's numbers, from its own thread team
    assert work() == want, "the parent's numbers differ between two runs"
    ctx = multiprocessing.get_context("fork")
    for way in ways:
        if way == "os.fork":
            got = [_fork_once() for _ in range(2)]
        elif way == "pool":
            with ctx.Pool(2) as pool:
                got = pool.map(work, range(4))
        elif way == "executor":
            with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
                got = list(ex.map(work, range(4)))
        elif way == "dataloader":
            import torch.utils.data as tud

            class Items(tud.Dataset):
                def __len__(self) -> int:
                    return 4

                def __getitem__(self, i: int) -> bytes:
                    return work()

            got = list(tud.DataLoader(Items(), batch_size=None, num_workers=2, multiprocessing_context=ctx))
        elif way == "busy":
            got = _busy_fork()
        else:
            raise SystemExit(f"unknown way {way!r}")
        _check(way, got, want)


if __name__ == "__main__":
    main(sys.argv[1:])
