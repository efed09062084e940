"""A metric's chunk whose device work is behind an event (the ``_metric.Pending`` of ``_gpu.Later`` and
``_gpu_token_ids.TokenLater``): ready once the event has passed, waited for once, and read only in the process
that queued it (CUDA does not survive fork(): a forked child gets the clear error instead)."""

from __future__ import annotations

import os
from typing import Any

from ._metric import Pending

FORKED = (
    "the GPU was asked for in a process forked from one that had already used CUDA, and "
    "CUDA cannot be used after fork(): start worker processes with the 'spawn' method "
    "(multiprocessing.get_context('spawn'); DataLoader(multiprocessing_context='spawn')), "
    "or pass host arrays to the workers (the CPU path works here)"
)


class EventPending(Pending):
    """``event``: a numba or torch CUDA event recorded after the chunk's copy to the host, or None (no wait)."""

    def __init__(self, event: Any) -> None:
        self.event, self.pid = event, os.getpid()

    def ready(self) -> bool:
        if self.event is None:
            return True
        self._check_process()
        query = getattr(self.event, "query", None)  # the simulator's events have none (it runs synchronously)
        return query is None or bool(query())

    def wait(self) -> None:
        self._check_process()  # (also without an event: the simulator's chunks are checked the same way)
        if self.event is not None:
            self.event.synchronize()
            self.event = None

    def _check_process(self) -> None:
        if os.getpid() != self.pid:  # a child forked after the update: its parent's events are not usable here
            raise RuntimeError(f"{FORKED} (a metric's pending GPU results, queued before the fork)")
