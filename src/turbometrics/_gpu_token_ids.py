"""Token-ID BLEU and ROUGE of torch tensors on a GPU without a host wait: ``metrics.BLEU.update`` and
``metrics.ROUGE.update`` given (B, L) hypotheses and (B, L) or (B, R, L) references on a CUDA device return
once their work is queued (issue 41).

The synchronous path (``text.token_ids``) needs the sequences' lengths on the host: to compact them, to size
the kernels and to make the statistics. Here every step stays on the tensors' device, queued on torch's
current stream: the pads removed by a scatter (each token to its sequence's offset plus its rank), the
lengths and offsets by torch reductions, the kernels sized by the padded widths. A reference row that is all
padding (absent, in ``as_token_references``' rule) stays in as an empty sequence, marked. One copy brings the
counts and each side's smallest token to page-locked memory, behind an event; ``chunk()`` waits for it, checks
what the host path checks at the update (token IDs >= 0), leaves the absent references out and finishes with
the host path's arithmetic: BLEU's rows by ``bleu_from_counts`` (and its ``nrefs`` label), ROUGE's (P, R, F) by
``rouge_from_counts``. The same chunk and the same error as the synchronous path. Under the CUDA simulator the
same torch operations run on CPU tensors.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _gpu
from ._arrays import is_torch, on_input_device
from ._gpu_pending import EventPending
from .text.token_ids import MAX_LCS_CELLS, _check_pad, _check_values, bleu_from_counts, rouge_from_counts

_NONE = np.iinfo(np.int64).max  # a side's smallest token where it has none


def _takes(x: Any, ndims: tuple, sim: bool) -> bool:
    """An integer torch tensor (bool and uint64 go the host's way) on a CUDA device (any under the simulator)."""
    return (
        is_torch(x)
        and x.ndim in ndims
        and (x.device.type == "cuda" or sim)
        and not (x.dtype.is_floating_point or x.dtype.is_complex or str(x.dtype) in ("torch.bool", "torch.uint64"))
    )


def _applies(hyp: Any, refs: Any) -> bool:
    """Whether a pair of inputs takes this path; the synchronous one takes (and checks) everything else."""
    sim = _gpu._kernels().SIM
    if not (_takes(hyp, (2,), sim) and _takes(refs, (2, 3), sim)) or refs.device != hyp.device:
        return False
    return hyp.shape[0] > 0 and refs.shape[0] == hyp.shape[0] and not (refs.ndim == 3 and refs.shape[1] == 0)


@dataclass
class _Compacted:
    """Sequence k of ``flat`` is flat[off[k]:off[k + 1]]: hypothesis k (k < n), then reference j of segment i
    as sequence n + i * r + j (absent ones empty). ``flat`` is None when no hypothesis has room for a token."""

    flat: Any
    off: Any
    h_len: Any  # (n,)
    r_len: Any  # (n * r,)
    absent: Any  # (n, r) bool
    least: Any  # (2,): the smallest token of the hypotheses, of the references (_NONE: none)
    n: int
    r: int
    width: int  # the hypotheses' padded width
    rwidth: int  # the references'


def _compact(torch: Any, x: Any, keep: Any, starts: Any, flat: Any) -> None:
    """Rows of ``x`` without their pads into ``flat`` (row i from ``starts[i]``); pads to ``flat``'s last slot."""
    dest = torch.where(keep, starts[:, None] + torch.cumsum(keep, 1) - 1, len(flat) - 1)
    flat.scatter_(0, dest.reshape(-1), x.reshape(-1))


def _compacted(torch: Any, hyp: Any, refs: Any, pad: int | None) -> _Compacted:
    n, width = hyp.shape
    r, rwidth = 1 if refs.ndim == 2 else refs.shape[1], refs.shape[-1]
    h, f = hyp.to(torch.int64), refs.reshape(n * r, rwidth).to(torch.int64)
    kh, kf = (torch.ones_like(x, dtype=torch.bool) if pad is None else x != pad for x in (h, f))
    h_len, r_len = kh.sum(1), kf.sum(1)
    absent = torch.zeros((n, r), dtype=torch.bool, device=h.device)
    if pad is not None and r > 1:  # a reference row all padding is absent, unless all of the segment's are
        absent = (r_len == 0).view(n, r)
        absent[:, 0] &= ~absent.all(1)
    off = torch.zeros(n * (r + 1) + 1, dtype=torch.int64, device=h.device)
    torch.cumsum(torch.cat([h_len, r_len]), 0, out=off[1:])
    flat = None
    if n * width:
        flat = torch.empty(n * (width + r * rwidth) + 1, dtype=torch.int64, device=h.device)
        _compact(torch, h, kh, off[:n], flat)
        _compact(torch, f, kf, off[n:-1], flat)
    least = [
        torch.where(k, x, _NONE).amin() if x.numel() else torch.full((), _NONE, device=h.device)
        for x, k in ((h, kh), (f, kf))
    ]
    return _Compacted(flat, off, h_len, r_len, absent, torch.stack(least), n, r, width, rwidth)


def _run(torch: Any, c: _Compacted, shape: tuple, launch: Callable) -> Any:
    """A zeroed int64 tensor of ``shape`` beside ``c.flat`` that ``launch(out, stream, view)`` fills, ``view``
    making numba's array of a tensor: on torch's current stream, or (the simulator) run at once on copies."""
    if c.flat.device.type == "cuda":
        out = torch.zeros(shape, dtype=torch.int64, device=c.flat.device)
        launch(_gpu._numba(out), _gpu._torch_stream(c.flat.device), _gpu._numba)
        return out
    cuda = _gpu._cuda()[0]
    d = cuda.to_device(np.zeros(shape, np.int64))
    launch(d, 0, lambda t: cuda.to_device(np.ascontiguousarray(t.numpy())))
    return torch.from_numpy(d.copy_to_host())


def _matches(torch: Any, c: _Compacted, order: int, per_ref: bool) -> Any:
    """Clipped n-gram matches of orders 1..order: (n, order), or (n * r, order) per reference."""
    n, r = c.n, c.r
    shape = (n * r if per_ref else n, order)
    if c.flat is None:  # no hypothesis token: nothing matches
        return torch.zeros(shape, dtype=torch.int64, device=c.off.device)
    seqs = torch.arange(n * (r + 1), dtype=torch.int64, device=c.off.device)  # hypotheses, then references
    meta = torch.cat([c.off, seqs, torch.arange(n + 1, dtype=torch.int64, device=c.off.device) * r])
    layout, widest = (len(c.off), n, n * r), c.width + r * c.rwidth

    def launch(out, stream, view):
        _gpu.ngram_launch(view(c.flat), view(meta), layout, widest, c.width, order, per_ref, out, stream)

    return _run(torch, c, shape, launch)


def _lcs(torch: Any, c: _Compacted) -> Any:
    """LCS length of each (reference, its hypothesis) pair, (n * r,)."""
    pairs = c.n * c.r
    if c.flat is None:
        return torch.zeros(pairs, dtype=torch.int64, device=c.off.device)
    j = torch.arange(pairs, dtype=torch.int64, device=c.off.device)
    ref, hyp = c.n + j, j // c.r
    side = min(c.width, c.rwidth)  # at least every pair's shorter side
    staged = side <= _gpu._kernels().LCS_SHARED_MAX  # (lcs_launch's rule) else three diagonals a pair in scratch
    scratch = torch.empty(0 if staged else pairs * 3 * (side + 1), dtype=torch.int32, device=c.off.device)
    spans = torch.cat([c.off[ref], c.off[ref + 1], c.off[hyp], c.off[hyp + 1], j * (0 if staged else 3 * (side + 1))])

    def launch(out, stream, view):
        tok = view(c.flat)
        _gpu.lcs_launch(tok, tok, view(spans), view(scratch), out, pairs, side, stream)

    return _run(torch, c, (pairs,), launch)


class TokenLater(EventPending):
    """An update's counts on their way to the host: ``packed`` (an int64 tensor) copied into page-locked memory
    behind an event on torch's current stream; ``chunk()`` is ``finish(the host's int64 array)``."""

    def __init__(self, packed: Any, finish: Callable[[np.ndarray], tuple]):
        import torch

        self.finish = finish
        self.host: Any = packed  # the simulator's CPU tensors: there already
        event = None
        if packed.device.type == "cuda":
            self.host = torch.empty(packed.shape, dtype=torch.int64, pin_memory=True)
            self.host.copy_(packed, non_blocking=True)  # torch's host allocator keeps the block until it lands
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(packed.device))
        super().__init__(event)

    def __del__(self) -> None:
        # Dropped unread in a forked child (a reset there, the metric freed): torch would free the parent's
        # page-locked block through CUDA there. Kept instead, as the child's other inherited buffers.
        if os.getpid() != getattr(self, "pid", os.getpid()) and getattr(self, "host", None) is not None:
            _gpu._ORPHANS.append(self.host)

    def chunk(self) -> tuple:
        self.wait()
        a, self.host = self.host.numpy(), None
        return self.finish(a)


def _split(a: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    return np.split(a, np.cumsum(sizes)[:-1])


def _present(least: np.ndarray, first: str, absent: np.ndarray, n: int, r: int) -> tuple:
    """The host path's checks and layout of a chunk read back: its error for a negative token ID (``first``
    names the hypotheses as the metric does), then the references kept (a mask over the n * r) and the
    segments' offsets into them (``seg``)."""
    for value, name in zip(least, (first, "references")):
        _check_values(np.array([value]), name)
    keep = absent == 0
    seg = np.zeros(n + 1, np.int64)
    np.cumsum(keep.reshape(n, r).sum(1), out=seg[1:])
    return keep, seg


@on_input_device
def bleu_later(hypotheses: Any, references: Any, pad_id: Any, order: int) -> TokenLater | None:
    """A BLEU update's pending chunk (rows [hyp_len, ref_len, correct_1..N, total_1..N], nrefs label, True), or
    None where this path does not apply."""
    if not (_applies(hypotheses, references) and 1 <= order <= _gpu._kernels().MAX_GPU_ORDER):
        return None
    import torch

    with torch.no_grad():
        c = _compacted(torch, hypotheses.detach(), references.detach(), _check_pad(pad_id))
        n, r = c.n, c.r
        absent = c.absent.reshape(-1).to(torch.int64)
        packed = torch.cat([c.h_len, c.r_len, absent, _matches(torch, c, order, False).reshape(-1), c.least])

    def finish(a: np.ndarray) -> tuple:
        h_len, r_len, absent, matches, least = _split(a, [n, n * r, n * r, n * order, 2])
        keep, seg = _present(least, "hypotheses", absent, n, r)
        counts = np.diff(seg)
        rows = bleu_from_counts(h_len, r_len[keep], seg, matches.reshape(n, order))
        return rows, int(counts[0]) if counts.min() == counts.max() else "var", True

    return TokenLater(packed, finish)


@on_input_device
def rouge_later(predictions: Any, references: Any, pad_id: Any, kinds: list[int]) -> TokenLater | None:
    """A ROUGE update's pending chunk ((P, R, F) of each kind per pair), or None where this path does not apply
    (also where a pair's padded sides could pass ROUGE-L's work limit: the host path says which)."""
    max_n = max([k for k in kinds if k < 10], default=0)
    lcs = any(k >= 10 for k in kinds)
    if not (_applies(predictions, references) and max_n <= _gpu._kernels().MAX_GPU_ORDER):
        return None
    if lcs and float(predictions.shape[-1]) * float(references.shape[-1]) > MAX_LCS_CELLS:
        return None
    import torch

    with torch.no_grad():
        c = _compacted(torch, predictions.detach(), references.detach(), _check_pad(pad_id))
        n, r = c.n, c.r
        parts = [c.h_len, c.r_len, c.absent.reshape(-1).to(torch.int64)]
        parts += [_matches(torch, c, max_n, True).reshape(-1)] if max_n else []
        parts += [_lcs(torch, c)] if lcs else []
        packed = torch.cat([*parts, c.least])

    def finish(a: np.ndarray) -> tuple:
        h_len, r_len, absent, overlap, lcs_len, least = _split(
            a, [n, n * r, n * r, n * r * max_n, n * r if lcs else 0, 2]
        )
        keep, seg = _present(least, "predictions", absent, n, r)
        p_len = np.repeat(h_len, np.diff(seg))
        over = overlap.reshape(n * r, max_n)[keep] if max_n else None
        return (rouge_from_counts(p_len, r_len[keep], seg, over, lcs_len[keep] if lcs else None, kinds),)

    return TokenLater(packed, finish)
