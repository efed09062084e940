"""The metric base class: one pipeline per metric, from kernel statistics to scores.

A metric object is an accumulator. Its options are validated once, at
construction. ``update`` runs the metric's ``_stats`` step (the kernel call,
giving one row of sufficient statistics per item: segment, pair, row,
sequence) and keeps the rows; ``merge`` (or ``+``) joins two states;
``compute`` scores them. The one-shot functions (``tm.corpus_bleu``,
``tm.perplexity``, ...) are ``Metric(options).update(inputs).compute()``, so
there is one path to each number, and bootstrap resampling reads the same
rows through ``_plan``.
"""

from __future__ import annotations

import abc
import copy
import functools
import numbers
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np

from ._locks import ForkSafeLock

__all__ = ["Metric", "Plan", "Signature"]

# Every metric object's state changes (fold, merge, reset) and reads (compute, _plan, pickling) take
# this lock, so threads may share a metric: the kernels (``_stats``, the heavy part) run outside it
# and in parallel; the folds are short and run one at a time, so the state is what serial updates
# give (``ExactSum`` bins are added in place with the GIL released: two folds at once lost updates),
# and a read never sees half a fold. One lock for all objects keeps metrics picklable and copyable
# as plain attributes.
_STATE_LOCK = ForkSafeLock(reentrant=True)

M = TypeVar("M", bound="Metric")


def _reading(method: Callable) -> Callable:
    """A state reader: under the lock, after the pending device chunks are folded in."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        self._wait_pending()
        with _STATE_LOCK:
            self._settle()
            return method(self, *args, **kwargs)

    return run


class Pending(abc.ABC):
    """A chunk a device is still computing: ``update`` on device input returns before the device is done
    (no host wait per batch), and the metric folds the chunk in later, in update order (``Metric._settle``)."""

    @abc.abstractmethod
    def ready(self) -> bool:
        """Whether ``chunk()`` would return without waiting for the device."""

    @abc.abstractmethod
    def wait(self) -> None:
        """Wait for the device (after which ``ready()`` is True)."""

    @abc.abstractmethod
    def chunk(self) -> tuple:
        """The chunk ``_stats`` would have returned, waiting for the device; raises what that update would
        have raised (an out-of-range target found on the device)."""


class Signature(str):
    """A metric's signature as sacrebleu prints it: ``key:value`` fields joined by ``|``.

    It is a ``str`` (compare, print and search it as one) that also gives its
    fields in order.
    """

    @classmethod
    @functools.lru_cache(maxsize=1024)  # metric objects are made per call: build each signature once
    def of(cls, **fields: Any) -> Signature:
        return cls("|".join([f"{k}:{v}" for k, v in fields.items()]))

    @property
    def fields(self) -> dict[str, str]:
        return dict(f.split(":", 1) for f in self.split("|")) if self else {}

    def insert_after(self, key: str, **fields: Any) -> Signature:
        """A copy with ``fields`` right after ``key`` (sacrebleu puts ``bs:``/``seed:`` after ``nrefs:``)."""
        out: dict[str, Any] = {}
        for k, v in self.fields.items():
            out[k] = v
            if k == key:
                out.update(fields)
        return Signature.of(**out)


class Plan(NamedTuple):
    """What resampling needs from a metric (built by each metric's ``_plan``)."""

    rows: np.ndarray  # (n, k) int64 or float64, one row per item
    score: Callable[[np.ndarray], np.ndarray]  # (m, k) summed rows -> (m, j) float64 scores
    point: np.ndarray  # (j,) exact scores on all items
    primary: tuple[int, ...]  # the score columns a paired test may compare
    wrap: Callable[[Callable[[Any, Callable], Any]], Any]  # (columns, cast) -> the user's result shape
    sacrebleu_score: Callable[[np.ndarray], Any] | None = None  # a float32 row -> sacrebleu's score


def no_rows(x: Any, targets: Any, classes: bool) -> bool:
    """Whether an update's input has no rows (its first axis is 0: an empty last batch). Such an update adds
    nothing, as in torchmetrics and as an empty BLEU or ROUGE update; its targets must still match it.
    ``classes``: the last axis of ``x`` holds the classes ((N, V) or (B, T, V)), else ``x`` is per-token
    values ((N,) or (B, T))."""
    try:
        shape = tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
    except ValueError:  # ragged nesting: left to the validation's message
        return False
    if len(shape) not in ((2, 3) if classes else (1, 2)) or shape[0] != 0 or (classes and shape[-1] == 0):
        return False
    if targets is not None:
        want = shape[:-1] if classes else shape
        got = tuple(targets.shape) if hasattr(targets, "shape") else np.shape(targets)
        if tuple(got) != want:
            raise ValueError(f"targets has shape {tuple(got)}, expected {want}")
    return True


def option_key(v: Any) -> Any:
    """An option as merges compare it, in one process or across ranks: numbers and strings as they are, a
    list as the tuple it equals, other objects (a tokenizer) by their type: a copy of one (each dask
    partition's, each rank's) is not equal to it, nor is its state reliably comparable."""
    if v is None or isinstance(v, (str, numbers.Number)):
        return v
    if isinstance(v, (tuple, list)):
        return tuple(option_key(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((str(k), option_key(x)) for k, x in v.items()))
    return f"<{type(v).__module__}.{type(v).__qualname__} object>"


def once(metric: Any, *inputs: Any) -> Any:
    """A one-shot function's result: ``metric`` given ``inputs`` (its ``_stats`` arguments) then computed, the
    update synchronous (the call waits for its result anyway, and raises the CPU path's errors as they are)."""
    return metric._fold(metric._stats(*inputs, later=False)).compute()


def one_score(make: Callable[[Any, Callable], Any]) -> Any:
    """``Plan.wrap`` for metrics with a single score (column 0, as a float)."""
    return make(slice(0, 1), lambda a: float(a[0]))


def ratios(s: np.ndarray) -> np.ndarray:
    """Columns 0..j-1 of summed rows divided by the last column (a weighted mean per column)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return s[:, :-1] / s[:, -1:]


def concat(chunks: list, shape: tuple = (0,), dtype: Any = np.float64) -> np.ndarray:
    """The chunks of a state field as one array (read-only use: one chunk is returned as it is;
    none gives an empty array of ``shape`` and ``dtype``)."""
    if not chunks:
        return np.zeros(shape, dtype)
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def column_sums(rows: np.ndarray) -> np.ndarray:
    """Integer statistics summed over the items (one item's row as it is: a sentence score pays no reduction)."""
    return rows[0] if len(rows) == 1 else rows.sum(axis=0)


class Metric(abc.ABC):
    """Base class of the metric objects in ``tm.metrics``.

    A subclass declares its state (``_state``: field name -> a factory of an
    empty part; a list collects one chunk per ``update``, any other part is
    folded in with ``.add(chunk)`` and merged with ``+``) and the resampling
    modes it supports (``modes``), validates and stores its options (public
    attributes) in ``__init__``, then implements ``_stats`` (inputs -> one
    chunk per state field), ``update`` (``return self._fold(self._stats(...))``),
    ``compute`` and ``_plan``.

    ``compute()`` equals the one-shot function on all the data exactly,
    however it was chunked and in whatever order states were merged; per-item
    results come in update/merge order. Metric objects pickle, and threads may
    share one: updates from several threads give the bits of serial updates
    (per-item results in the order the updates finished). Metrics whose
    ``_stats`` may return a ``Pending`` chunk (``Perplexity``, ``TopKAccuracy``,
    ``MeanReciprocalRank`` on device input, ``BLEU`` and ``ROUGE`` on token IDs
    in CUDA tensors) return from ``update`` without
    waiting for the GPU; the chunk is folded in, in update order, once the
    device has finished it, at the latest by ``compute`` (or a merge, pickle,
    ``sync``, ``bootstrap_ci``): the same bits as synchronous updates.
    """

    _state: ClassVar[dict[str, Callable[[], Any]]] = {}
    modes: ClassVar[tuple[str, ...]] = ("default",)  # resampling modes for bootstrap_ci / paired_test

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("compute", "_plan"):  # the state readers each metric defines
            if name in cls.__dict__:
                setattr(cls, name, _reading(cls.__dict__[name]))

    def __getstate__(self) -> dict:
        """A snapshot (pickling reads it after the lock is released): the state lists copied, and the
        parts folded in place (``ExactSum``) too; pending device chunks folded in first."""
        self._wait_pending()
        with _STATE_LOCK:
            self._settle()
            out = dict(vars(self))
            out["_pending"] = []
            for name in self._state:
                part = out[name]
                out[name] = list(part) if isinstance(part, list) else part.copy()
            return out

    def reset(self: M) -> M:
        """Drop the state (and any chunk still pending on a device); the options stay."""
        with _STATE_LOCK:
            dropped = self.__dict__.get("_pending")
            for name, empty in self._state.items():
                setattr(self, name, empty())
            # (update number, chunk, Pending or the exception of a failed one), in update order
            self._pending: list[tuple[int, Any]] = []
            self._updates = 0  # updates since the last reset: how a late error names its update
        del dropped  # outside the lock: a dropped chunk waits for its copy before its host block is freed
        return self

    def _fold(self: M, chunk: tuple | Pending | None) -> M:
        """Fold in an update's chunk; a ``Pending`` one (and any chunk behind one) waits in ``_pending``."""
        with _STATE_LOCK:
            self._updates = getattr(self, "_updates", 0) + 1
            if chunk is None:  # an update of no rows (``no_rows``): counted (errors name updates), adds nothing
                return self
            pending = self.__dict__.setdefault("_pending", [])
            if pending or isinstance(chunk, Pending):
                pending.append((self._updates, chunk))
                self._settle(wait=False)  # those the device has finished: the host memory they hold is freed
            else:
                self._add(chunk)
        return self

    def _wait_pending(self) -> None:
        """Wait for the device's pending chunks without holding the lock (other metrics' updates, in other
        threads, go on meanwhile; a rank's collective is not held up behind another's wait)."""
        with _STATE_LOCK:
            waiting = [item for _, item in self.__dict__.get("_pending", ()) if isinstance(item, Pending)]
        for item in waiting:
            item.wait()

    def _add(self, chunk: tuple) -> None:
        for name, part in zip(self._state, chunk):
            held = getattr(self, name)
            if isinstance(held, list):
                held.append(part)
            else:
                held.add(part)

    def _settle(self, wait: bool = True) -> None:
        """Fold the pending chunks in, in update order: all of them (waiting for the device), or only those
        ready. A chunk whose update had bad input (found on the device) is left out, the others kept; its
        error is raised by the first waiting settle (a state reader), naming that update, never by another
        update (whose own chunk was accepted)."""
        pending = self.__dict__.get("_pending") or []
        j = 0
        while j < len(pending):
            number, item = pending[j]
            if isinstance(item, Pending):
                if not (wait or item.ready()):
                    return
                try:
                    item = item.chunk()
                except Exception as e:  # noqa: BLE001 - dropped whatever it is: a stuck chunk would block every read
                    item = self._late_error(number, e)
            if isinstance(item, BaseException):
                if wait:
                    del pending[j]
                    raise item
                pending[j] = (number, item)  # contributes nothing: later chunks may be folded past it
                j += 1
                continue
            del pending[j]
            self._add(item)

    def _late_error(self, number: int, e: Exception) -> Exception:
        """The error of update ``number`` found after it returned: bad input (TypeError/ValueError) says which
        update it was; anything else is raised as it is."""
        if not isinstance(e, (TypeError, ValueError)):
            return e
        out = type(e)(
            f"update #{number} of this {type(self).__name__} (counting from when it was made or reset; "
            f"found on the device after that update returned; it was left out): {e}"
        )
        out.__cause__ = e
        return out

    def _replace_state(self, parts: dict[str, Any]) -> None:
        with _STATE_LOCK:
            for name, part in parts.items():
                setattr(self, name, part)

    def sync(self: M, process_group: Any = None) -> M:
        """Merge every rank's state into this metric, on every rank (``torch.distributed``; see
        ``tm.distributed``): afterwards ``compute()``, ``bootstrap_ci`` and ``paired_test`` give, on
        every rank, the bits of one process that saw rank 0's items, then rank 1's, and so on. Shards
        may be uneven or empty; ranks whose metrics differ in options all raise the same ValueError.
        Call it once, after the last update, on every rank. Returns the metric."""
        from .distributed import sync

        return sync(self, process_group=process_group)

    def options(self) -> dict[str, Any]:
        """The options this metric was made with (what must match for a merge or a paired test)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def _option_keys(self) -> dict[str, Any]:
        """The options as ``merge`` and ``sync`` compare them (``option_key``)."""
        return {k: option_key(v) for k, v in self.options().items()}

    def check_compatible(self, other: Any) -> None:
        """Raise ValueError unless ``other`` is the same metric with the same options."""
        if type(other) is not type(self) or other._option_keys() != self._option_keys():
            raise ValueError(f"cannot merge {other!r} into {self!r}: different metrics or options")

    def merge(self: M, other: M) -> M:
        """A new metric object holding both states (self's items first)."""
        self.check_compatible(other)
        self._wait_pending()
        other._wait_pending()
        with _STATE_LOCK:
            self._settle()
            other._settle()
            merged = {name: getattr(self, name) + getattr(other, name) for name in self._state}
        why = self._mixed(merged)
        if why:
            raise ValueError(f"cannot merge {other!r} into {self!r}: {why}")
        out = copy.copy(self)
        out._replace_state(merged)
        return out

    def _mixed(self, state: dict[str, Any]) -> str | None:
        """Why states gathered from several objects (``merge``, ``sync``) are not one corpus, or None."""
        return None

    __add__ = merge

    @abc.abstractmethod
    def compute(self) -> Any:
        """The scores of everything folded in so far."""

    @abc.abstractmethod
    def _plan(self) -> Plan:
        """What ``bootstrap_ci`` and ``paired_test`` need: per-item rows and how to score their sums."""

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"{type(self).__name__}({opts})"
