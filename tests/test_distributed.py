"""metric.sync() over torch.distributed: 3 gloo processes with uneven shards (one rank empty) give, on
every rank, the bits of one process over the concatenated data; mismatched metrics raise everywhere."""

from __future__ import annotations

import os
import pickle
import sys
import time

import numpy as np
import pytest

import turbometrics as tm

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():  # pragma: no cover
    pytest.skip("this torch build has no torch.distributed", allow_module_level=True)

WORLD = 3
SHARDS = [(0, 130), (130, 130), (130, 240)]  # rank 1 holds nothing; ranks 0 and 2 differ in size
N = SHARDS[-1][1]
BATCH = 50  # each rank updates in batches: several chunks per state field


def _metrics(d: dict) -> dict:
    """name -> (a fresh metric, update(metric, a, b) with items [a, b))."""
    hyp, alt, ref, p, r = d["hyp"], d["alt"], d["ref"], d["pred"], d["summ_ref"]
    x, t, w, logits, targets = d["x"], d["t"], d["w"], d["logits"], d["targets"]
    return {
        "BLEU": (tm.metrics.BLEU, lambda m, a, b: m.update(hyp[a:b], [ref[a:b]])),
        "BLEU other system": (tm.metrics.BLEU, lambda m, a, b: m.update(alt[a:b], [ref[a:b]])),
        "BLEU intl, two references": (
            lambda: tm.metrics.BLEU(tokenize="intl", smooth_method="floor"),
            lambda m, a, b: m.update(hyp[a:b], [ref[a:b], alt[a:b]]),
        ),
        "chrF++": (lambda: tm.metrics.CHRF(word_order=2), lambda m, a, b: m.update(hyp[a:b], [ref[a:b]])),
        "TER": (tm.metrics.TER, lambda m, a, b: m.update(hyp[a:b], [ref[a:b]])),
        "ROUGE": (
            lambda: tm.metrics.ROUGE(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True),
            lambda m, a, b: m.update(p[a:b], r[a:b]),
        ),
        "Perplexity token": (
            lambda: tm.metrics.Perplexity(ignore_index=-100),
            lambda m, a, b: m.update(logits[a:b], targets[a:b]),
        ),
        "Perplexity sequence": (
            lambda: tm.metrics.Perplexity(ignore_index=-100, reduction="sequence"),
            lambda m, a, b: m.update(logits[a:b], targets[a:b]),
        ),
        "TopKAccuracy": (
            lambda: tm.metrics.TopKAccuracy(k=(1, 5), ignore_index=-1),
            lambda m, a, b: m.update(x[a:b], t[a:b]),
        ),
        "TopKAccuracy weighted": (
            lambda: tm.metrics.TopKAccuracy(k=3, ignore_index=-1),
            lambda m, a, b: m.update(x[a:b], t[a:b], sample_weight=w[a:b]),
        ),
        "MeanReciprocalRank": (
            lambda: tm.metrics.MeanReciprocalRank(ignore_index=-1),
            lambda m, a, b: m.update(x[a:b], t[a:b]),
        ),
    }


def _results(ms: dict) -> dict:
    """Everything read from the metrics: compute, bootstrap CIs (fixed seed), a paired test."""
    out = {}
    for name, m in ms.items():
        out[name] = m.compute()
        if name != "Perplexity sequence" and "weighted" not in name:
            out[name + " ci"] = tm.bootstrap_ci(m, n_resamples=200, seed=7)
        for mode in m.modes[1:]:
            out[f"{name} ci {mode}"] = tm.bootstrap_ci(m, n_resamples=100, seed=3, mode=mode)
    out["paired"] = tm.paired_test(ms["BLEU"], ms["BLEU other system"], n_resamples=200, seed=5)
    return out


def _filled(d: dict, a: int, b: int) -> dict:
    ms = {}
    for name, (make, update) in _metrics(d).items():
        m = make()
        for s in range(a, b, BATCH):
            update(m, s, min(b, s + BATCH))
        ms[name] = m
    return ms


def _init(rank: int, init_file: str) -> None:
    torch.set_num_threads(1)
    if sys.platform.startswith("linux"):  # gloo on loopback: the host name need not resolve
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)


def _parity_worker(rank: int, init_file: str, out_dir: str, d: dict) -> None:
    _init(rank, init_file)
    ms = _filled(d, *SHARDS[rank])
    names = list(ms)
    half = len(names) // 2
    ms[names[0]].sync()  # one metric alone, then the rest in one exchange
    tm.distributed.sync(*[ms[n] for n in names[1:half]])
    tm.distributed.sync(*[ms[n] for n in names[half:]])
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(_results(ms), f)
    dist.destroy_process_group()


def _mismatch_worker(rank: int, init_file: str, out_dir: str, d: dict) -> None:
    _init(rank, init_file)
    hyp, ref = d["hyp"][:20], d["ref"][:20]
    cases = {
        "tokenize": lambda: tm.metrics.BLEU(tokenize="intl" if rank == 1 else "13a"),
        "rouge types": lambda: tm.metrics.ROUGE(["rouge1"] if rank == 2 else ["rouge1", "rougeL"]),
        "class": lambda: tm.metrics.CHRF() if rank == 0 else tm.metrics.BLEU(),
        "ignore_index": lambda: tm.metrics.Perplexity(ignore_index=-100 if rank else 0),
        "text and token IDs": tm.metrics.BLEU,  # the same options; rank 1's corpus is token IDs (merge's rule)
    }
    seen = {}
    for name, make in cases.items():
        m = make()
        if name == "text and token IDs" and rank == 1:
            m.update(np.array([[1, 2, 3]]), np.array([[1, 2, 3]]))
        elif isinstance(m, (tm.metrics.BLEU, tm.metrics.CHRF)):
            m.update(hyp, [ref])
        t0 = time.perf_counter()
        try:
            m.sync()
            seen[name] = ("no error", time.perf_counter() - t0)
        except ValueError as e:
            seen[name] = (f"ValueError: {e}", time.perf_counter() - t0)
    t0 = time.perf_counter()
    try:  # one rank alone passes no metric: every rank hears of it
        tm.distributed.sync(*([] if rank == 2 else [tm.metrics.BLEU()]))
        seen["no metric on one rank"] = ("no error", time.perf_counter() - t0)
    except ValueError as e:
        seen["no metric on one rank"] = (f"ValueError: {e}", time.perf_counter() - t0)
    t0 = time.perf_counter()
    try:  # one rank alone passes something else
        tm.distributed.sync(tm.metrics.BLEU(), *([object()] if rank == 0 else []))
        seen["not a metric"] = ("no error", time.perf_counter() - t0)
    except RuntimeError as e:
        seen["not a metric"] = (f"RuntimeError: {e}", time.perf_counter() - t0)
    m = tm.metrics.BLEU().update(hyp, [ref])
    if rank == 1:  # a state that cannot be pickled: every rank must hear of it, not wait
        m._rows.append(lambda: 0)
    t0 = time.perf_counter()
    try:
        m.sync()
        seen["unpicklable"] = ("no error", time.perf_counter() - t0)
    except RuntimeError as e:
        seen["unpicklable"] = (f"RuntimeError: {e}", time.perf_counter() - t0)
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(seen, f)
    dist.destroy_process_group()


def _spawn(worker, tmp_path, d: dict, timeout: float = 300.0) -> list:
    """Run ``worker`` on 3 spawned gloo ranks; their pickled outputs, in rank order. Fails (and kills
    them) past ``timeout``: a hang is a failure, not a stuck CI."""
    import torch.multiprocessing as mp

    out = tmp_path / "out"
    out.mkdir()
    ctx = mp.start_processes(
        worker, args=(str(tmp_path / "init"), str(out), d), nprocs=WORLD, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + timeout
    try:
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                pytest.fail(f"the {WORLD} ranks did not finish within {timeout} s (a hang?)")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
    return [pickle.loads((out / f"rank{r}.pkl").read_bytes()) for r in range(WORLD)]


@pytest.fixture(scope="module")
def data(wmt17, summaries):
    rng = np.random.default_rng(26)
    systems = list(wmt17["systems"].values())
    x = rng.integers(0, 8, (N, 30)).astype(np.float32)  # few values: many ties
    t = rng.integers(0, 30, N)
    t[::17] = -1
    targets = rng.integers(0, 40, (N, 6))
    targets[rng.random((N, 6)) < 0.2] = -100
    targets[5] = -100  # a sequence with no counted token
    return {
        "hyp": systems[0][:N],
        "alt": systems[1][:N],
        "ref": wmt17["ref"][:N],
        "pred": summaries[0][:N],
        "summ_ref": summaries[1][:N],
        "x": x,
        "t": t,
        "w": rng.random(N),
        "logits": rng.standard_normal((N, 6, 40)).astype(np.float32),
        "targets": targets,
    }


@pytest.mark.slow
def test_sync_equals_one_process_on_every_rank(tmp_path, data):
    ranks = _spawn(_parity_worker, tmp_path, data)
    want = _results(_filled(data, 0, N))  # one process, the ranks' items one after another
    for rank, got in enumerate(ranks):
        assert list(got) == list(want)
        for key in want:
            assert pickle.dumps(got[key]) == pickle.dumps(want[key]), f"rank {rank}: {key}"


@pytest.mark.slow
def test_mismatched_metrics_raise_on_every_rank(tmp_path, data):
    ranks = _spawn(_mismatch_worker, tmp_path, data, timeout=180.0)
    for name in ranks[0]:
        messages = {r[name][0] for r in ranks}
        assert len(messages) == 1, f"{name}: the ranks raised different errors: {messages}"
        message = messages.pop()
        want = {
            "unpicklable": "RuntimeError: sync: rank 1 could not pack",
            "not a metric": "RuntimeError: sync: rank 0 could not pack",
            "text and token IDs": "ValueError: sync: turbometrics.text.bleu.BLEU(",
        }.get(name, "ValueError: sync: rank")
        assert message.startswith(want), f"{name}: {message}"
        assert max(r[name][1] for r in ranks) < 60, f"{name}: a rank waited {max(r[name][1] for r in ranks):.0f} s"


def test_sync_needs_a_process_group_and_metrics():
    if dist.is_initialized():  # pragma: no cover - the test process never initialises one
        pytest.skip("a process group is initialised in this process")
    with pytest.raises(RuntimeError, match="init_process_group"):
        tm.metrics.BLEU().sync()
    with pytest.raises(RuntimeError, match="init_process_group"):
        tm.distributed.sync()


def test_narrowed_integers_come_back_as_they_were():
    from turbometrics.distributed import _pack_field, _unpack_field

    for a in (
        np.array([[0, 5], [127, -128]]),
        np.array([[1, 70000]]),
        np.array([[2**40, -1]]),
        np.zeros((0, 3), np.int64),
    ):
        back = _unpack_field(pickle.loads(pickle.dumps(_pack_field([a[:1], a[1:]]))))
        assert len(back) == 1 and back[0].dtype == a.dtype and np.array_equal(back[0], a)
    assert _pack_field([np.arange(3, dtype=np.int64)])[1].dtype == np.int8
    assert _pack_field([None, None]) == ("list", [None, None])
