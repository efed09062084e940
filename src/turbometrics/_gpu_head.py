"""The LM head's fold on a GPU: rows' running log-sum-exp (and, for scoring, their first argmax) kept on the device
while ``lm_head`` multiplies one logits slice at a time."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import _gpu

_TABLES: dict = {}  # torch device (None: numba's current one) -> score_rows' exp table there


def _after_fork_in_child() -> None:
    """The parent's tables are its context's: kept (freeing them would call the driver), never handed out."""
    _gpu._ORPHANS.append(dict(_TABLES))
    _TABLES.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _score_table(device: Any) -> Any:
    """``score_rows``' exp table (``_kernels.cuda.exptable``) on ``device``, uploaded once a device (a process) on
    a stream of its own, behind an event that the current stream is made to wait for here (on the device: no
    host wait), so that no stream reads it before it is there."""
    got = _TABLES.get(device)
    if got is None:
        from ._kernels.cuda.exptable import score_table

        host = score_table()
        if device is None:
            got = (_gpu._cuda()[0].to_device(host), None)
        else:
            import torch

            side, done = torch.cuda.Stream(device), torch.cuda.Event()
            with torch.cuda.stream(side):
                table = torch.from_numpy(host).pin_memory().to(device, non_blocking=True)
                done.record(side)
            got = (_gpu._numba(table), done)
        _TABLES[device] = got
    if got[1] is not None:
        import torch

        torch.cuda.current_stream(device).wait_event(got[1])
    return got[0]


class HeadFold:
    """Rows' running log-sum-exp on the device, one logits slice at a time (``lm_head`` on a GPU).

    The state is the CPU fold's (max, sum, NaN/+inf count, target logit) in
    float64 for all of a call's rows, on the device until ``result`` brings it
    to the host. With ``greedy`` the slices are folded by ``score_rows``
    (float64 throughout, as the CPU's ``_dense.score_rows``) and each row's
    first argmax is kept too (-1 until a row holds a value above -inf).

    The state is one (4 or 5, rows) float64 buffer whose rows are the arrays
    (the counts' and argmaxes' reinterpreted as int64): ``result`` is one copy,
    the host's only wait. With a torch ``device`` it is made there (no upload)
    and the targets go over once from pinned memory, both queued on the
    current stream; without one numba's arrays hold them (the simulator).
    """

    def __init__(self, targets: np.ndarray, greedy: bool = False, device: Any = None):
        t = np.ascontiguousarray(targets, dtype=np.int64)
        self.greedy, self.device = greedy, device
        k = 5 if greedy else 4
        if device is None:
            host = np.zeros((k, len(t)))
            host[0] = -np.inf
            host[4:].view(np.int64)[:] = -1
            cuda = _gpu._cuda()[0]
            self.buf, self.targets = cuda.to_device(host), cuda.to_device(t)
            parts = [self.buf[i] for i in range(k)]
        else:
            import torch

            self.buf = torch.zeros((k, len(t)), dtype=torch.float64, device=device)
            self.buf[0].fill_(-np.inf)
            self.buf[4:].view(torch.int64).fill_(-1)
            self.targets = _gpu._numba(torch.from_numpy(t).pin_memory().to(device, non_blocking=True))
            parts = [_gpu._numba(row) for row in self.buf]
        self.table = _score_table(device) if greedy else None
        self.state = tuple(a.view(np.int64) if i in (2, 4) else a for i, a in enumerate(parts))
        self.part: tuple = (None, ())  # ((first row, rows), the views of targets and state for them)

    def add(self, logits: Any, v0: int, r0: int = 0) -> None:
        """Fold ``logits`` (rows, width), the rows [r0, r0 + rows) and the vocabulary's columns [v0, v0 + width),
        on the current stream."""
        rows = _gpu.device_rows(logits, "logits")  # bf16 of even width as words; score_rows reads an element a load
        rows = rows if self.greedy else _gpu._as_pairs(rows)
        span = (r0, rows.data.shape[0])
        if self.part[0] != span:  # views made once a block: numba slices them in Python
            self.part = (span, tuple(a[r0 : r0 + span[1]] for a in (self.targets, *self.state)))
        t, *state = self.part[1]
        if self.greedy:
            _gpu._launch_rows("score_rows", rows, t, v0, *state, self.table)
        else:
            _gpu._launch_rows("fold_rows", rows, t, v0, *state)

    def result(self) -> tuple:
        """(max, sum, bad, target logit), and the first argmax with ``greedy``, as host arrays: one copy after the
        work queued on the current stream (the folds' or one that waits for them). On torch's the host waits
        on an event, not on the stream: torch's sync debug mode flags only the latter, so that a call can be
        checked under ``torch.cuda.set_sync_debug_mode("error")`` for any other wait."""
        if self.device is None:
            host = self.buf.copy_to_host()
        else:
            import torch

            pinned = torch.empty(tuple(self.buf.shape), dtype=torch.float64, pin_memory=True)
            pinned.copy_(self.buf, non_blocking=True)
            done = torch.cuda.Event()
            done.record(torch.cuda.current_stream(self.device))
            done.synchronize()
            host = pinned.numpy()
        return tuple(a.view(np.int64) if i in (2, 4) else a for i, a in enumerate(host))
