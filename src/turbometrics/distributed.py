"""Metric states across processes: ``sync`` over ``torch.distributed``, exactly, with uneven shards.

In data-parallel evaluation each rank updates its own metric object with its shard; then one call,
on every rank::

    bleu.sync()                      # or tm.distributed.sync(bleu, rouge, ppl) for several at once

leaves every rank holding the merged state of all ranks, merged in rank order, so ``compute()``,
``tm.bootstrap_ci`` and ``tm.paired_test`` give, on every rank, the bits one process gives after
updating with rank 0's items, then rank 1's, and so on. Ranks may hold any number of items, none
included. torch is imported only here, when ``sync`` is called (the gloo and NCCL backends, or any
other that implements ``all_gather``).

How it works: each rank packs its state compactly (a per-item state field as one array, integer
statistics in the narrowest integer type that holds them, exact sums as their integer bins), pickles
it once, and all ranks exchange the bytes with two ``all_gather`` calls (the sizes, then the padded
bytes). Every rank then checks that all ranks sent the same metric with the same options: if not,
every rank raises the same ``ValueError``, so a mismatch never leaves ranks waiting on each other.

Recipes
-------
Plain ``torch.distributed`` (``torchrun --nproc-per-node 2 eval.py``)::

    import torch.distributed as dist, turbometrics as tm
    dist.init_process_group("gloo")            # "nccl" for CUDA tensors: set torch.cuda.set_device first
    bleu = tm.metrics.BLEU()
    for hyps, refs in my_shard:                 # this rank's items only
        bleu.update(hyps, refs)
    bleu.sync()                                 # every rank now holds every rank's segments
    if dist.get_rank() == 0:
        print(bleu.compute(), tm.bootstrap_ci(bleu, seed=1))

Hugging Face Accelerate: ``accelerator.gather_for_metrics(x)`` gathers the raw model outputs (a
(B, T, V) logits tensor per step: gigabytes for a large vocabulary) and drops the samples its
sampler duplicated. Update on each rank with its own outputs instead and sync the small state once
(Accelerate initialises ``torch.distributed`` for you)::

    ppl = tm.metrics.Perplexity(ignore_index=-100)
    for batch in dataloader:                    # prepared by accelerator.prepare
        logits = model(**batch).logits
        ppl.update(logits[:, :-1], batch["labels"][:, 1:])
    ppl.sync()
    accelerator.print(ppl.compute())

Lightning: update in ``validation_step``, sync and reset in ``on_validation_epoch_end``::

    def on_validation_epoch_end(self):
        score = self.bleu.sync().compute()      # the same on every rank
        self.log("val_bleu", score.score, rank_zero_only=True)
        self.bleu.reset()

Duplicates: ``DistributedSampler`` (and Accelerate, and Lightning through it) pads the dataset with
repeated items so that every rank gets the same number; an exact metric then counts those twice.
Give each rank the items it really owns, e.g. ``DistributedSampler(ds, shuffle=False,
drop_last=False)`` plus, in the last batch, only the indices ``< len(ds)`` (the sampler's
``indices[rank::world]`` before padding), or shard the dataset yourself with
``range(rank, len(ds), world)``: uneven shards are fine here.

Notes
-----
- ``sync`` replaces the state with the merged one: call it once, after the last update (a second
  call would count the other ranks' items again); ``reset()`` starts the next epoch.
- Every rank of the group must call it, with the same metrics in the same order (as for any
  collective); a rank that never calls it leaves the others waiting, as in torch.
- For NCCL the bytes go through the current CUDA device (``torch.cuda.set_device(local_rank)``),
  as ``torch.distributed.all_gather_object`` does.
- The states are pickled: use it between processes that trust each other, as torch does.
"""

from __future__ import annotations

import logging
import pickle
import time
from typing import Any

import numpy as np

__all__ = ["sync"]

log = logging.getLogger("turbometrics.distributed")

_INTS = (np.int8, np.int16, np.int32)


def _torch_distributed() -> Any:
    try:
        import torch.distributed as dist
    except ImportError as exc:  # pragma: no cover - torch is a test extra
        raise ImportError("sync needs PyTorch (torch.distributed); install torch") from exc
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            "sync needs an initialised torch.distributed process group: call "
            "torch.distributed.init_process_group(...) first (torchrun, Accelerate and Lightning do)"
        )
    return dist


def _narrow(a: np.ndarray) -> tuple[np.ndarray, str]:
    """An integer array in the narrowest signed type holding its values (it moves in those bytes)."""
    if a.dtype.kind in "iu" and a.size:
        lo, hi = int(a.min()), int(a.max())
        for t in _INTS:
            if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
                return (a.astype(t) if np.dtype(t).itemsize < a.itemsize else a), a.dtype.str
    return a, a.dtype.str


def _pack_field(part: Any) -> tuple:
    """One state field: a list of per-update chunks as one array when they concatenate, else as it is."""
    if isinstance(part, list):
        if part and all(isinstance(c, np.ndarray) for c in part) and len({(c.dtype, c.shape[1:]) for c in part}) == 1:
            return ("array", *_narrow(part[0] if len(part) == 1 else np.concatenate(part)))
        return ("list", part)
    return ("object", part)  # folded parts (ExactSum: its integer bins), merged with +


def _unpack_field(packed: tuple) -> Any:
    if packed[0] == "array":
        return [packed[1].astype(np.dtype(packed[2]), copy=False)]
    return packed[1]


def _describe(metric: Any) -> str:
    opts = ", ".join(f"{k}={v!r}" for k, v in metric._option_keys().items())
    return f"{type(metric).__module__}.{type(metric).__qualname__}({opts})"


def _pack(metrics: tuple) -> bytes:
    """This rank's message: each metric's description and packed state, or the error packing met."""
    try:
        body = []
        for i, m in enumerate(metrics):
            if not (hasattr(m, "_state") and hasattr(m, "_replace_state")):
                raise TypeError(f"metrics[{i}]: expected a tm.metrics object, got {type(m).__name__}")
            state = m.__getstate__()  # a snapshot taken under the metrics' lock
            body.append((_describe(m), {name: _pack_field(state[name]) for name in m._state}))
        return pickle.dumps(("ok", body), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # tell the other ranks instead of leaving them waiting in all_gather
        return pickle.dumps(("error", f"{type(exc).__name__}: {exc}"), protocol=pickle.HIGHEST_PROTOCOL)


def _exchange(data: bytes, dist: Any, group: Any) -> list[memoryview]:
    """Every rank's bytes, in rank order: all_gather of the sizes, then of the bytes padded to the largest."""
    import torch

    backend = str(dist.get_backend(group))
    device = torch.device("cuda", torch.cuda.current_device()) if "nccl" in backend else torch.device("cpu")
    world = dist.get_world_size(group)
    size = torch.tensor([len(data)], dtype=torch.int64, device=device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    lengths = [int(s.item()) for s in sizes]
    buf = bytearray(max(lengths))  # every rank sends as many bytes as the largest message
    buf[: len(data)] = data
    send = torch.frombuffer(buf, dtype=torch.uint8).to(device)
    recv = [torch.empty_like(send) for _ in range(world)]
    dist.all_gather(recv, send, group=group)
    return [r[:n].cpu().numpy().data for r, n in zip(recv, lengths)]  # .data: a memoryview, no copy


def sync(*metrics: Any, process_group: Any = None) -> Any:
    """Merge the states of every rank's metric objects, in rank order, on every rank.

    Parameters
    ----------
    *metrics : tm.metrics objects
        One or more metric objects (``BLEU``, ``CHRF``, ``TER``, ``ROUGE``, ``Perplexity``,
        ``TopKAccuracy``, ``MeanReciprocalRank``); several move in one exchange. Every rank passes
        the same classes with the same options, in the same order.
    process_group : torch.distributed.ProcessGroup, optional
        The group to sync over (default: the default group).

    Returns
    -------
    The metric (or, for several, a tuple of them), each now holding the merged state of all ranks.

    Raises
    ------
    RuntimeError
        If ``torch.distributed`` has no initialised process group, or a rank could not pack its state
        (a non-metric argument included: raised on every rank).
    TypeError
        If no rank passed a metric (on every rank).
    ValueError
        If the ranks' metrics differ in class or options (raised on every rank, with the same message).
    """
    dist = _torch_distributed()  # (the same on every rank) the other checks travel in the message, so that
    # a rank that alone passes nothing, or no metric, makes every rank raise instead of leaving them waiting
    group = dist.group.WORLD if process_group is None else process_group
    t0 = time.perf_counter()
    data = _pack(metrics)
    received = _exchange(data, dist, group)
    messages = [pickle.loads(b) for b in received]
    for rank, (status, body) in enumerate(messages):
        if status == "error":
            raise RuntimeError(f"sync: rank {rank} could not pack its metric state ({body})")
    if all(not body for _, body in messages):
        raise TypeError("sync needs at least one metric object (on every rank)")
    mine = [d for d, _ in messages[0][1]]
    for rank, (_, body) in enumerate(messages):
        theirs = [d for d, _ in body]
        if theirs != mine:
            raise ValueError(
                f"sync: rank {rank} holds {theirs} but rank 0 holds {mine}: every rank must sync "
                f"the same metrics, with the same options, in the same order"
            )
    states = []
    for i, m in enumerate(metrics):
        merged = {}
        for name in m._state:
            parts = [_unpack_field(body[i][1][name]) for _, body in messages]
            if isinstance(parts[0], list):
                merged[name] = [c for p in parts for c in p]
            else:
                total = parts[0]
                for p in parts[1:]:
                    total = total + p
                merged[name] = total
        why = m._mixed(merged)  # (every rank gathered the same states: all raise alike, none changed)
        if why:
            raise ValueError(f"sync: {_describe(m)}: {why}")
        states.append(merged)
    for m, merged in zip(metrics, states):
        m._replace_state(merged)
    log.debug(
        "synced %d metric(s) over %d ranks: sent %d bytes, received %d, in %.3f s",
        len(metrics),
        len(received),
        len(data),
        sum(len(b) for b in received),
        time.perf_counter() - t0,
    )
    return metrics[0] if len(metrics) == 1 else metrics
