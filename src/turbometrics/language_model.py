"""Token negative log-likelihood and perplexity, straight from logits.

``token_nll`` is a fused log-softmax + gather: each row of logits is read
once (a streaming log-sum-exp), with no temporary the size of the logits.
All sums are in float64.

Padding: positions whose target equals ``ignore_index`` or where ``mask`` is
False are not counted. Perplexity over zero counted tokens is NaN, and a NaN
(or +inf) logit in a counted row makes the result NaN: never a made-up
finite number.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _gpu, _gpu_tally, _validate
from ._exact import ExactSum, exact_sum
from ._ext import _dense
from ._metric import Metric, Plan, concat, no_rows, once, one_score, ratios

REDUCTIONS = ("token", "sequence", "none")
INPUTS = ("logits", "log_probs", "probs", "nll")


def token_nll(
    logits: Any,
    targets: Any,
    ignore_index: int | None = None,
    mask: Any = None,
    *,
    num_threads: int | None = None,
    device: str | None = None,
):
    """``-log_softmax(logits)[target]`` per position, as float64 (0 at ignored/masked positions).

    Equals ``F.cross_entropy(logits, targets, reduction="none", ignore_index=...)``,
    computed in float32 (float64 for float64 logits) and summed in float64,
    each row of logits read once.

    Parameters
    ----------
    logits : array-like (N, V) or (B, T, V)
        float16, bfloat16, float32 or float64 (ndarray, torch tensor, ml_dtypes;
        a CUDA tensor, CuPy or Numba device array runs on the GPU).
    targets : array-like (N,) or (B, T)
        Any integer dtype, in [0, V) where counted.
    ignore_index : int, optional
        Positions whose target equals it are not counted.
    mask : array-like of bool, optional
        Shaped like ``targets``; False = not counted.
    num_threads : int, optional
        CPU threads (default: every core); results do not depend on it.
    device : {"cpu", "cuda"}, optional
        Force a side (default: where the logits are).

    Returns
    -------
    numpy.ndarray or tensor
        float64, shaped like ``targets`` (a tensor for tensor input; on the
        device, in the input's type, for GPU input).

    Raises
    ------
    TypeError, ValueError
        For non-float logits, non-integer or out-of-range targets, or shapes that do not match.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> tm.token_nll(np.log(np.array([[0.5, 0.25, 0.25]], np.float32)), [0]).round(6)
    array([0.693147])
    """
    if _gpu.use_gpu(device, logits, targets):
        out, counted, rows = _gpu.nll(logits, targets, ignore_index, mask)
        return _gpu.give_back(out, rows, counted.shape)
    lean = None if mask is not None else _lean_nll(logits, targets, ignore_index, num_threads)
    nll, _, a = lean if lean is not None else _host_nll(logits, targets, ignore_index, mask, num_threads)
    return _validate.wrap(nll, a)


def _host_nll(logits, targets, ignore_index, mask, num_threads):
    """Per-token NLL by the CPU kernel (float64), the counted mask, and the validated logits."""
    a = _validate.as_array(logits, "logits")
    _validate.require_float(a, "logits")
    x = _validate.rows3d(a.data, "logits")
    t64, counted = _validate.as_targets(targets, a.data.shape[:-1], x.shape[2], ignore_index=ignore_index, mask=mask)
    got = _dense.nll_rows(x, a.code, t64, -1, _validate.check_threads(num_threads))  # -1: not counted
    assert got is not None, "as_targets let a target outside [0, V) through"
    return got[0].reshape(counted.shape), counted, a


def _lean_nll(logits, targets, ignore_index, num_threads):
    """Small calls' short way, for int64 targets without a mask: the kernel's binding checks the targets
    itself and gives the per-token NLLs with the number counted (the validated logits third), 2-6 us
    sooner at (64, 1000) than a counted mask made in Python. None where it does not take the input: the
    general path then validates and words any error."""
    a = _validate.as_array(logits, "logits")
    if not a.is_float:
        return None
    x = _validate.rows3d(a.data, "logits")
    t = _validate.as_int_array(targets, "targets")
    if t.dtype != np.int64 or t.shape != a.data.shape[:-1]:
        return None
    try:  # checked in the general path's order: after the targets (whose range the binding checks)
        ignore = None if ignore_index is None else _validate.check_int(ignore_index, "ignore_index")
        nthreads = _validate.check_threads(num_threads)
    except (TypeError, ValueError):
        return None
    if ignore is not None and not _INT64_MIN <= ignore <= _INT64_MAX:
        ignore = None  # no int64 target equals it
    got = _dense.nll_rows(x, a.code, np.ascontiguousarray(t).reshape(-1), ignore, nthreads)
    return None if got is None else (got[0].reshape(t.shape), got[1], a)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _nll(logits, targets, ignore_index, mask, num_threads, device):
    """Per-token NLL on the host (float64) and the counted mask, from the GPU or the CPU kernel."""
    if _gpu.use_gpu(device, logits, targets):
        out, counted, _ = _gpu.nll(logits, targets, ignore_index, mask, host=True)
        return out.reshape(counted.shape), counted
    return _host_nll(logits, targets, ignore_index, mask, num_threads)[:2]


def _token_total(logits, targets, ignore_index, mask, num_threads, device) -> tuple[float, int]:
    """(the counted tokens' NLL sum, exactly rounded to float64; their number): ``perplexity``'s
    ``reduction="token"`` before its exp, and patched torchmetrics' update."""
    if ignore_index is not None:
        ignore_index = _validate.check_int(ignore_index, "ignore_index")
    gpu = _gpu.use_gpu(device, logits, targets)
    if gpu:  # summed on the device: a few words come back
        got = _gpu_tally.nll_total(logits, targets, ignore_index, mask)
        if got is not None:
            return got
    lean = None if mask is not None or gpu else _lean_nll(logits, targets, ignore_index, num_threads)
    if lean is not None:
        nll, n, _ = lean
    else:
        nll, counted = _nll(logits, targets, ignore_index, mask, num_threads, device)
        n = int(np.count_nonzero(counted))
    return exact_sum(nll), n  # the kernels give 0 where not counted


def _sequence_sums(nll: np.ndarray, counted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sequence's (row's) NLL sum and counted-token count; ``nll`` must be 0 where not counted."""
    nll2 = nll.reshape(-1, nll.shape[-1])
    return nll2.sum(axis=1), counted.reshape(nll2.shape).sum(axis=1)


def _token_chunk(nll: np.ndarray, counted: np.ndarray) -> tuple:
    """``Perplexity``'s chunk of an update: the counted NLLs, each sequence's NLL sum and token count."""
    sums, counts = _sequence_sums(nll, counted)
    return nll[counted], sums, counts


def _means(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean NLL per sequence (NaN where nothing counted)."""
    return np.divide(sums, counts, out=np.full(len(counts), np.nan), where=counts > 0)


def _gather(dist: Any, targets: Any, ignore_index, mask, name: str):
    """dist[..., target] as float64 and the counted mask (ignored positions read class 0)."""
    a = _validate.as_array(dist, name)
    _validate.require_float(a, name)
    x = _validate.rows3d(a.data, name)
    t64, counted = _validate.as_targets(targets, a.data.shape[:-1], x.shape[2], ignore_index=ignore_index, mask=mask)
    safe = np.where(t64 < 0, 0, t64)
    rows = np.arange(safe.size)
    g = x[rows // x.shape[1], rows % x.shape[1], safe]  # any strides: one gather, no reshape copy
    return _to_float64(g, a.code).reshape(counted.shape), counted


def _to_float64(g: np.ndarray, code: int) -> np.ndarray:
    if code == _validate.BF16:
        return (g.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if code == _validate.F16:
        return g.view(np.float16).astype(np.float64)
    return g.astype(np.float64)


def _values(x: Any, name: str, mask: Any):
    """A 1-D/2-D float array of per-token values as float64, and the counted mask."""
    a = _validate.as_array(x, name)
    _validate.require_float(a, name)
    if a.data.ndim not in (1, 2):
        raise ValueError(f"{name} must have shape (N,) or (B, T), got {a.data.shape}")
    if a.data.size == 0:
        raise ValueError(f"{name} is empty (shape {a.data.shape})")
    counted = np.ones(a.data.shape, bool) if mask is None else _validate.as_mask(mask, a.data.shape)
    return _to_float64(a.data, a.code), counted


class Perplexity(Metric):
    """Perplexity over chunks of logits (or log-probabilities, probabilities, NLLs).

    ``compute()`` equals ``tm.perplexity`` (``tm.perplexity_from_*`` for the
    other ``input`` kinds) on all the data. The state is an exactly rounded
    NLL sum (``_exact.ExactSum``) and each sequence's NLL sum and token
    count: the same bits in any chunking and merge order.

    Parameters
    ----------
    ignore_index : int, optional
        Positions whose target equals it are not counted.
    reduction : {"token", "sequence", "none"}
        As in ``perplexity``.
    input : {"logits", "log_probs", "probs", "nll"}
        What ``update`` is given: logits (N, V) or (B, T, V) with targets;
        log-probabilities or probabilities likewise (both may also come
        already gathered, (N,) or (B, T), without targets); per-token NLLs
        (N,) or (B, T) without targets.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> ppl = tm.metrics.Perplexity()
    >>> ppl = ppl.update(np.zeros((2, 4), np.float32), [0, 1])
    >>> ppl.update(np.zeros((1, 4), np.float32), [3]).compute()
    4.0
    """

    _state = {"_total": ExactSum, "_sums": list, "_counts": list}
    _total: ExactSum
    _sums: list[np.ndarray]
    _counts: list[np.ndarray]

    def __init__(self, ignore_index: int | None = None, reduction: str = "token", input: str = "logits"):
        _validate.check_choice(reduction, "reduction", REDUCTIONS)
        _validate.check_choice(input, "input", INPUTS)
        if ignore_index is not None:
            _validate.check_int(ignore_index, "ignore_index")
            if input == "nll":
                raise ValueError("ignore_index needs targets; per-token NLLs take a mask instead")
        self.ignore_index, self.reduction, self.input = ignore_index, reduction, input
        self.reset()

    def _gathered(self, targets: Any) -> bool:
        """Whether the input is one value per token ((N,) or (B, T)), not a row over the vocabulary."""
        return self.input == "nll" or (self.input in ("probs", "log_probs") and targets is None)

    def _token_nll(self, x, targets, mask, num_threads, device) -> tuple[np.ndarray, np.ndarray]:
        kind = self.input
        if self._gathered(targets):
            if targets is not None:
                raise ValueError("per-token NLLs take no targets")
            if self.ignore_index is not None:
                raise ValueError(f"ignore_index needs targets; use mask with gathered {kind.replace('_', '-')}")
            v, counted = _values(x, kind, mask)
        elif targets is None:
            raise TypeError(f"targets is required for input={kind!r}")
        elif kind == "logits":
            return _nll(x, targets, self.ignore_index, mask, num_threads, device)
        else:
            v, counted = _gather(x, targets, self.ignore_index, mask, kind)
        v = np.where(counted, v, 0.0)  # the kernel path gives 0 where not counted; these inputs may not
        if kind == "nll":
            return v, counted
        if kind == "log_probs":
            return -v, counted
        live = v[counted]
        if not ((live >= 0) & (live <= 1)).all():  # NaN fails both comparisons
            bad = live[~((live >= 0) & (live <= 1))][0]
            raise ValueError(f"probs must lie in [0, 1] where counted; found {bad!r}")
        with np.errstate(divide="ignore", invalid="ignore"):  # p = 0 gives inf; positions not counted are not read
            return -np.log(np.where(counted, v, 1.0)), counted

    def _stats(self, x, targets, mask, num_threads, device, later=True):
        if later and self.input == "logits" and targets is not None and _gpu.use_gpu(device, x, targets):
            return _gpu.nll_later(x, targets, self.ignore_index, mask, _token_chunk)  # no wait for the GPU here
        return _token_chunk(*self._token_nll(x, targets, mask, num_threads, device))

    def update(
        self,
        logits: Any,
        targets: Any = None,
        mask: Any = None,
        *,
        num_threads: int | None = None,
        device: str | None = None,
    ) -> Perplexity:
        """Add tokens: ``logits`` (or what ``input`` names), targets and an optional mask, as ``perplexity``. No
        rows or sequences (an empty last batch) add nothing."""
        if no_rows(logits, targets, classes=not self._gathered(targets)):
            return self._fold(None)
        return self._fold(self._stats(logits, targets, mask, num_threads, device))

    def _sequences(self) -> tuple[np.ndarray, np.ndarray]:
        """Each sequence's mean NLL (NaN where nothing counted) and token count."""
        counts = concat(self._counts, (0,), np.int64)
        return _means(concat(self._sums), counts), counts

    def compute(self) -> float | np.ndarray:
        """The perplexity (a float; per-sequence float64 (B,) for ``reduction="none"``)."""
        with np.errstate(over="ignore"):  # a mean NLL past 709 is a perplexity of inf, as in torch
            if self.reduction == "token":  # the token count is the sum of the sequences' counts
                n = int(sum(int(c.sum()) for c in self._counts))
                return _exp(self._total.value() / n) if n else float("nan")
            means, counts = self._sequences()
            if self.reduction == "none":
                return np.exp(means)
            live = counts > 0  # "sequence": the mean over sequences that count any token
            return float(np.exp(exact_sum(means[live]) / int(live.sum()))) if live.any() else float("nan")

    def _plan(self) -> Plan:
        """Rows per sequence: (NLL sum, tokens) for "token", (mean NLL, 1) for "sequence"."""
        if self.reduction == "none":
            raise ValueError("reduction='none' has no single score to resample; use 'token' or 'sequence'")
        sums, counts = concat(self._sums), concat(self._counts, (0,), np.int64)
        live = counts > 0
        s, c = sums[live], counts[live].astype(np.float64)
        rows = np.stack([s, c] if self.reduction == "token" else [s / c, np.ones_like(c)], axis=1)
        return Plan(rows, lambda s: np.exp(ratios(s)), np.array([self.compute()]), (0,), one_score)


def _exp(v: float) -> float:
    """e^v as a Python float, inf past the float64 range (math.exp: a third of np.exp's cost on a scalar)."""
    try:
        return math.exp(v)
    except OverflowError:
        return float("inf")


def perplexity(
    logits: Any,
    targets: Any,
    ignore_index: int | None = None,
    mask: Any = None,
    reduction: str = "token",
    *,
    num_threads: int | None = None,
    device: str | None = None,
):
    """Perplexity of ``targets`` under ``logits`` without materialising a softmax.

    Parameters
    ----------
    logits, targets, ignore_index, mask, num_threads, device
        As in ``token_nll``; (N, V) logits are one sequence. GPU input runs on
        the GPU; only per-token NLLs come back.
    reduction : {"token", "sequence", "none"}
        ``"token"``: ``exp(total NLL / counted tokens)`` (torch, torchmetrics,
        HF). ``"sequence"``: ``exp(mean over sequences of each sequence's mean
        NLL)``; sequences with no counted token are left out. ``"none"``:
        per-sequence perplexities, float64 (B,) (NaN where nothing counted).

    Returns
    -------
    float or numpy.ndarray
        NaN over zero counted tokens; NaN if a counted row holds NaN or +inf.

    Raises
    ------
    TypeError, ValueError
        For non-float logits, non-integer or out-of-range targets, shapes that
        do not match, or an unknown reduction.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> tm.perplexity(np.zeros((3, 4), np.float32), [0, 1, 2])  # uniform over 4 classes
    4.0
    """
    if reduction == "token":  # the one-shot call without a metric object (the same bits: its formula)
        total, n = _token_total(logits, targets, ignore_index, mask, num_threads, device)
        return _exp(total / n) if n else float("nan")
    return once(Perplexity(ignore_index, reduction), logits, targets, mask, num_threads, device)


def perplexity_from_log_probs(
    log_probs: Any, targets: Any = None, ignore_index: int | None = None, mask: Any = None, reduction: str = "token"
) -> Any:
    """Perplexity from log-probabilities (e.g. ``log_softmax`` output, or an API's token logprobs).

    Parameters
    ----------
    log_probs : array-like of floats
        With ``targets``: a full distribution (N, V) or (B, T, V). Without:
        the already-gathered log-probability of each true token, (N,) or
        (B, T) (``ignore_index`` does not apply; use ``mask``).
    targets, ignore_index, mask, reduction
        As in ``perplexity``.

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> tm.perplexity_from_log_probs(np.log(np.full((2, 4), 0.25)), [0, 3])
    4.0
    >>> tm.perplexity_from_log_probs(np.log([0.5, 0.125]))
    4.0
    """
    return once(Perplexity(ignore_index, reduction, "log_probs"), log_probs, targets, mask, None, None)


def perplexity_from_probs(
    probs: Any, targets: Any = None, ignore_index: int | None = None, mask: Any = None, reduction: str = "token"
) -> Any:
    """Perplexity from probabilities.

    Parameters
    ----------
    probs : array-like of floats
        With ``targets``: a full distribution (N, V) or (B, T, V). Without:
        the already-gathered probability of each true token, (N,) or (B, T)
        (``ignore_index`` does not apply; use ``mask``).
    targets, ignore_index, mask, reduction
        As in ``perplexity``.

    Returns
    -------
    float or numpy.ndarray

    Raises
    ------
    TypeError, ValueError
        For probabilities outside [0, 1] or NaN (where counted), and as ``perplexity``.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.perplexity_from_probs([0.5, 0.125])
    4.0
    """
    return once(Perplexity(ignore_index, reduction, "probs"), probs, targets, mask, None, None)


def perplexity_from_nll(nll: Any, mask: Any = None, reduction: str = "token") -> Any:
    """Perplexity from per-token negative log-likelihoods (natural log).

    Parameters
    ----------
    nll : array-like (N,) or (B, T) of floats
    mask, reduction
        As in ``perplexity``.

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> tm.perplexity_from_nll(np.log([2.0, 8.0]))
    4.0
    """
    return once(Perplexity(reduction=reduction, input="nll"), nll, None, mask, None, None)
