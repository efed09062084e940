"""metric.sync() over 2 gloo processes on this machine: bytes and seconds for 1M BLEU segments and 1M ROUGE
pairs (half on each rank), against gathering the metric objects whole with ``all_gather_object``.

Each rank builds its half of the state (not timed), then the sync is timed best of 3 (the state is
restored between runs); "bytes" is what one rank sends (its message; every rank receives the world's).
"""

import os
import pickle
import sys
import time

import pytest
from conftest import DATA_DIR, QUICK

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

WORLD = 2
TOTAL = 100_000 if QUICK else 1_000_000
ROUGE_TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def _state(metric):
    return {name: metric.__getstate__()[name] for name in metric._state}


def _worker(rank: int, init_file: str, out_dir: str, metric_name: str, data_dir) -> None:
    import turbometrics as tm
    from turbometrics import _bench
    from turbometrics.distributed import _pack

    torch.set_num_threads(1)
    if sys.platform.startswith("linux"):  # gloo on loopback: the host name need not resolve
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    n = TOTAL // WORLD
    if metric_name == "BLEU":
        d = _bench.wmt17_tiled(data_dir, TOTAL) if data_dir else _bench._text_data(TOTAL)
        hyps, refs = d["hyps"][rank * n : (rank + 1) * n], d["refs"][rank * n : (rank + 1) * n]
        m = tm.metrics.BLEU().update(hyps, [refs], num_threads=1)
    else:
        hyps, refs = _bench.zipf_corpus(n, seed=rank)
        m = tm.metrics.ROUGE(ROUGE_TYPES, use_stemmer=True).update(hyps, refs, num_threads=1)
    saved = _state(m)
    out = {"bytes": len(_pack((m,))), "naive_bytes": len(pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL))}
    for label, fn in (("sync", lambda: m.sync()), ("naive", lambda: dist.all_gather_object([None] * WORLD, m))):
        best = float("inf")
        for _ in range(3):
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
            m._replace_state(dict(saved))
        out[label] = best
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(out, f)
    dist.destroy_process_group()


@pytest.mark.parametrize("metric_name", ["BLEU", "ROUGE"])
def test_sync(benchmark, tmp_path, metric_name):
    import torch.multiprocessing as mp

    out = tmp_path / "out"
    out.mkdir()

    def run():
        mp.start_processes(
            _worker, args=(str(tmp_path / "init"), str(out), metric_name, DATA_DIR), nprocs=WORLD, start_method="spawn"
        )
        return [pickle.loads((out / f"rank{r}.pkl").read_bytes()) for r in range(WORLD)]

    ranks = benchmark.pedantic(run, rounds=1, iterations=1)
    res = {
        "bytes_per_rank": max(r["bytes"] for r in ranks),
        "sync_s": max(r["sync"] for r in ranks),
        "naive_bytes_per_rank": max(r["naive_bytes"] for r in ranks),
        "naive_s": max(r["naive"] for r in ranks),
    }
    what = f"{TOTAL:,} {'segments' if metric_name == 'BLEU' else 'pairs'}"
    benchmark.extra_info.update(kind="sync", case=f"sync {metric_name}, {what} over {WORLD} gloo processes", **res)
    print(
        f"\nsync {metric_name} ({what}, {WORLD} ranks): {res['bytes_per_rank'] / 1e6:.1f} MB a rank in "
        f"{res['sync_s']:.3f} s; all_gather_object of the metric: {res['naive_bytes_per_rank'] / 1e6:.1f} MB "
        f"in {res['naive_s']:.3f} s"
    )
