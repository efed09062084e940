"""Token-ID BLEU statistics of torch tensors on a GPU without a host wait: ``metrics.BLEU.update`` given
(B, L) hypotheses and (B, L) or (B, R, L) references on a CUDA device returns at once (issue 41).

The synchronous path (``text.token_ids``) needs the sequences' lengths on the host: to compact them, to size
the n-gram kernel and to make the statistics rows. Here every step stays on the tensors' device, queued on
torch's current stream: the pads removed by a scatter (each token to its sequence's offset plus its rank),
the lengths and offsets by torch reductions, the kernel sized by the padded widths, the closest reference
length and the totals by torch operations. One copy brings the rows, each segment's reference count (for
sacrebleu's ``nrefs``) and each side's smallest token to page-locked memory, behind an event; ``chunk()``
waits for it and checks what the host path checks at the update (token IDs >= 0): the same rows, the same
label and the same error as ``BLEU._stats_ids``. Under the CUDA simulator the same torch operations run on
CPU tensors.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import _gpu
from ._arrays import is_torch
from ._metric import Pending
from .text.token_ids import _check_pad, _check_values

_NONE = np.iinfo(np.int64).max  # a side's smallest token where it has none


def _takes(x: Any, ndims: tuple, sim: bool) -> bool:
    """An integer torch tensor (bool and uint64 go the host's way) on a CUDA device (any under the simulator)."""
    return (
        is_torch(x)
        and x.ndim in ndims
        and (x.device.type == "cuda" or sim)
        and not (x.dtype.is_floating_point or x.dtype.is_complex or str(x.dtype) in ("torch.bool", "torch.uint64"))
    )


def bleu_later(hypotheses: Any, references: Any, pad_id: Any, order: int) -> BleuLater | None:
    """The pending statistics of a BLEU update, or None where this path does not apply (the caller takes the
    synchronous one, which also raises on input of the wrong shape or type)."""
    K = _gpu._kernels()
    if not (_takes(hypotheses, (2,), K.SIM) and _takes(references, (2, 3), K.SIM)):
        return None
    n = hypotheses.shape[0]
    if references.device != hypotheses.device or references.shape[0] != n or n == 0 or not 1 <= order <= 16:
        return None
    if references.ndim == 3 and references.shape[1] == 0:
        return None
    return BleuLater(hypotheses, references, _check_pad(pad_id), order)


def _compact(torch: Any, x: Any, keep: Any, starts: Any, flat: Any) -> None:
    """Rows of ``x`` without their pads into ``flat`` (row i from ``starts[i]``); pads to ``flat``'s last slot."""
    dest = torch.where(keep, starts[:, None] + torch.cumsum(keep, 1) - 1, len(flat) - 1)
    flat.scatter_(0, dest.reshape(-1), x.reshape(-1))


def _matches(torch: Any, flat: Any, meta: Any, layout: tuple, widest: int, longest: int, order: int) -> Any:
    """The n-gram kernel's clipped matches (hypotheses, order) as a tensor beside ``flat``, queued on torch's
    current stream (the simulator: run, then copied into a CPU tensor)."""
    n_hyp = layout[1]
    if flat.device.type != "cuda":
        cuda = _gpu._cuda()[0]
        out = cuda.to_device(np.zeros((n_hyp, order), np.int64))
        _gpu.ngram_launch(
            cuda.to_device(flat.numpy()), cuda.to_device(meta.numpy()), layout, widest, longest, order, False, out, 0
        )
        return torch.from_numpy(out.copy_to_host())
    out = torch.zeros((n_hyp, order), dtype=torch.int64, device=flat.device)
    stream = _gpu._torch_stream(flat.device)
    _gpu.ngram_launch(
        _gpu._numba(flat), _gpu._numba(meta), layout, widest, longest, order, False, _gpu._numba(out), stream
    )
    return out


def _statistics(torch: Any, hyp: Any, refs: Any, pad: int | None, order: int) -> Any:
    """One int64 tensor on the inputs' device: the rows [hyp_len, ref_len, correct_1..N, total_1..N] (B, 2 + 2N),
    each segment's reference count (B), then the smallest token of the hypotheses and of the references."""
    n, width = hyp.shape
    r, rwidth = 1 if refs.ndim == 2 else refs.shape[1], refs.shape[-1]
    refs = refs.reshape(n, r, rwidth)
    h, f = hyp.to(torch.int64), refs.reshape(n * r, rwidth).to(torch.int64)
    kh, kf = (torch.ones_like(x, dtype=torch.bool) if pad is None else x != pad for x in (h, f))
    h_len, r_len = kh.sum(1), kf.sum(1)
    absent = torch.zeros((n, r), dtype=torch.bool, device=h.device)
    if pad is not None and r > 1:  # a reference row all padding is absent, unless all of the segment's are
        absent = (r_len == 0).view(n, r)
        absent[:, 0] &= ~absent.all(1)
    # sequence k: hypothesis k (k < n), then the references segment by segment; an absent one is empty there
    # (it adds no n-gram) and left out of the closest length below
    off = torch.zeros(n * (r + 1) + 1, dtype=torch.int64, device=h.device)
    torch.cumsum(torch.cat([h_len, r_len]), 0, out=off[1:])
    if n * width:
        flat = torch.empty(n * (width + r * rwidth) + 1, dtype=torch.int64, device=h.device)
        _compact(torch, h, kh, off[:n], flat)
        _compact(torch, f, kf, off[n:-1], flat)
        seqs = torch.arange(n * (r + 1), dtype=torch.int64, device=h.device)
        meta = torch.cat([off, seqs, torch.arange(n + 1, dtype=torch.int64, device=h.device) * r])
        matches = _matches(torch, flat, meta, (len(off), n, n * r), width + r * rwidth, width, order)
    else:  # no hypothesis token: nothing matches
        matches = torch.zeros((n, order), dtype=torch.int64, device=h.device)
    big = 1 << 32  # the closest reference length, the shorter on a tie (bleu_rows_gpu's key)
    key = (r_len.view(n, r) - h_len[:, None]).abs() * big + r_len.view(n, r)
    closest = key.masked_fill(absent, _NONE).amin(1) % big
    totals = (h_len[:, None] - torch.arange(order, device=h.device)).clamp_min(0)
    rows = torch.cat([h_len[:, None], closest[:, None], matches.to(h.device), totals], 1)
    least = [
        torch.where(k, x, _NONE).amin() if x.numel() else torch.full((), _NONE, device=h.device)
        for x, k in ((h, kh), (f, kf))
    ]
    return torch.cat([rows.reshape(-1), r - absent.sum(1), torch.stack(least)])


class BleuLater(Pending):
    """A BLEU update's statistics on their way to the host (``bleu_later``): queued at construction, the host's
    copy in page-locked memory behind an event; ``chunk()`` is ``BLEU._stats``' (rows, nrefs label, True)."""

    def __init__(self, hyp: Any, refs: Any, pad: int | None, order: int):
        import torch

        self.n, self.order, self.pid = hyp.shape[0], order, os.getpid()
        with torch.no_grad():
            packed = _statistics(torch, hyp.detach(), refs.detach(), pad, order)
        self.event: Any = None
        self.host: Any
        if packed.device.type == "cuda":
            self.host = torch.empty(packed.shape, dtype=torch.int64, pin_memory=True)
            self.host.copy_(packed, non_blocking=True)  # torch's host allocator keeps the block until it lands
            self.event = torch.cuda.Event()
            self.event.record(torch.cuda.current_stream(packed.device))
        else:
            self.host = packed

    def _check_process(self) -> None:
        if os.getpid() != self.pid:
            raise RuntimeError("a metric's pending GPU results cannot be read in a process forked after the update")

    def ready(self) -> bool:
        if self.event is None:
            return True
        self._check_process()
        return bool(self.event.query())

    def wait(self) -> None:
        if self.event is not None:
            self._check_process()
            self.event.synchronize()
            self.event = None

    def chunk(self) -> tuple:
        self.wait()
        a, n, w = self.host.numpy(), self.n, 2 + 2 * self.order
        rows, counts, least = a[: n * w].reshape(n, w).copy(), a[n * w : n * w + n], a[n * w + n :]
        self.host = None
        for value, name in zip(least, ("hypotheses", "references")):
            _check_values(np.array([value]), name)  # the host path's error, in its order
        return rows, int(counts[0]) if counts.min() == counts.max() else "var", True
