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

from typing import Any

import numpy as np

from . import _gpu
from . import _validate as V
from ._exact import exact_sum
from ._ext import _dense

REDUCTIONS = ("token", "sequence", "none")


def token_nll(logits: Any, targets: Any, ignore_index: int | None = None, mask: Any = None,
              *, num_threads: int | None = None, device: str | None = None):
    """``-log_softmax(logits)[target]`` per position, as float64 (0 at ignored/masked positions).

    ``logits`` (N, V) or (B, T, V) in float16, bfloat16, float32 or float64;
    ``targets`` (N,) or (B, T) of any integer dtype. Equals
    ``F.cross_entropy(logits, targets, reduction="none", ignore_index=...)``,
    computed in float32 (float64 for float64 logits) and summed in float64.
    GPU input (a CUDA tensor, CuPy or Numba device array) runs on the GPU and
    the result stays there, in the input's type; ``device`` ("cpu"/"cuda") forces a side.
    """
    if _gpu.use_gpu(device, logits, targets):
        out, counted, rows = _gpu.nll(logits, targets, ignore_index, mask)
        return _gpu.give_back(out, rows, counted.shape)
    nll, _, a = _nll(logits, targets, ignore_index, mask, num_threads)
    return V.wrap(nll, a)


def _nll(logits, targets, ignore_index, mask, num_threads, device=None):
    """Per-token NLL on the host (float64), the counted mask, and the validated input."""
    if _gpu.use_gpu(device, logits, targets):
        out, counted, rows = _gpu.nll(logits, targets, ignore_index, mask)
        return out.copy_to_host().reshape(counted.shape), counted, rows
    a = V.as_array(logits, "logits")
    V.require_float(a, "logits")
    x = V.rows3d(a.data, "logits")
    t64, counted = V.as_targets(targets, a.data.shape[:-1], x.shape[2], ignore_index=ignore_index,
                                mask=mask)
    nll = _dense.nll_rows(x, a.code, t64, V.check_threads(num_threads))
    return nll.reshape(counted.shape), counted, a


def _sequence_means(nll: np.ndarray, counted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean NLL of each sequence (row) over its counted tokens (NaN where none), and the counts."""
    nll2 = np.where(counted, nll, 0.0).reshape(-1, nll.shape[-1])
    n = counted.reshape(nll2.shape).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return nll2.sum(axis=1) / n, n


def _sequence_ppl(means: np.ndarray, counts: np.ndarray) -> float:
    """exp of the mean over the sequences that count any token (a NaN among them gives NaN)."""
    live = counts > 0
    return float(np.exp(exact_sum(means[live]) / int(live.sum()))) if live.any() else float("nan")


def _reduce(nll: np.ndarray, counted: np.ndarray, reduction: str):
    """Perplexity from per-token NLL (float64) and the counted mask, both (T,) or (B, T).

    Totals are exactly rounded sums (``_exact``), so streaming accumulators that
    see the same tokens in any chunks and merge order give the same bits.
    """
    if reduction == "token":
        n = int(counted.sum())
        return float(np.exp(exact_sum(nll[counted]) / n)) if n else float("nan")
    means, counts = _sequence_means(nll, counted)
    return np.exp(means) if reduction == "none" else _sequence_ppl(means, counts)


def perplexity(logits: Any, targets: Any, ignore_index: int | None = None, mask: Any = None,
               reduction: str = "token", *, num_threads: int | None = None, device: str | None = None):
    """Perplexity of ``targets`` under ``logits`` without materialising a softmax.

    reduction:
      * ``"token"``: ``exp(total NLL / counted tokens)`` (torch, torchmetrics, HF).
      * ``"sequence"``: ``exp(mean over sequences of each sequence's mean NLL)``;
        sequences with no counted token are left out.
      * ``"none"``: per-sequence perplexities, float64 (B,) (NaN where nothing counted).
    (N, V) logits are one sequence. Returns a float (an ndarray for ``"none"``).
    GPU input runs on the GPU (see ``token_nll``); only per-token NLLs come back.
    """
    V.check_choice(reduction, "reduction", REDUCTIONS)
    nll, counted, _ = _nll(logits, targets, ignore_index, mask, num_threads, device)
    return _reduce(nll, counted, reduction)


def _gather(dist: Any, targets: Any, ignore_index, mask, name: str):
    """dist[..., target] as float64 and the counted mask (ignored positions read class 0)."""
    a = V.as_array(dist, name)
    V.require_float(a, name)
    x = V.rows3d(a.data, name)
    t64, counted = V.as_targets(targets, a.data.shape[:-1], x.shape[2], ignore_index=ignore_index,
                                mask=mask)
    safe = np.where(t64 < 0, 0, t64)
    rows = np.arange(safe.size)
    g = x[rows // x.shape[1], rows % x.shape[1], safe]  # any strides: one gather, no reshape copy
    return _to_float64(g, a.code).reshape(counted.shape), counted


def _to_float64(g: np.ndarray, code: int) -> np.ndarray:
    if code == V.BF16:
        return (g.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if code == V.F16:
        return g.view(np.float16).astype(np.float64)
    return g.astype(np.float64)


def _values(x: Any, name: str, mask: Any):
    """A 1-D/2-D float array of per-token values as float64, and the counted mask."""
    a = V.as_array(x, name)
    V.require_float(a, name)
    if a.data.ndim not in (1, 2):
        raise ValueError(f"{name} must have shape (N,) or (B, T), got {a.data.shape}")
    if a.data.size == 0:
        raise ValueError(f"{name} is empty (shape {a.data.shape})")
    counted = np.ones(a.data.shape, bool) if mask is None else V.as_mask(mask, a.data.shape)
    return _to_float64(a.data, a.code), counted


def perplexity_from_log_probs(log_probs: Any, targets: Any, ignore_index: int | None = None,
                              mask: Any = None, reduction: str = "token") -> Any:
    """Perplexity from log-probabilities (N, V) or (B, T, V) (e.g. ``log_softmax`` output)."""
    V.check_choice(reduction, "reduction", REDUCTIONS)
    lp, counted = _gather(log_probs, targets, ignore_index, mask, "log_probs")
    return _reduce(-lp, counted, reduction)


def perplexity_from_probs(probs: Any, targets: Any = None, ignore_index: int | None = None,
                          mask: Any = None, reduction: str = "token") -> Any:
    """Perplexity from probabilities.

    With ``targets``: ``probs`` is a full distribution (N, V) or (B, T, V).
    Without: ``probs`` holds the already-gathered probability of each true
    token, (N,) or (B, T) (``ignore_index`` does not apply; use ``mask``).
    """
    V.check_choice(reduction, "reduction", REDUCTIONS)
    if targets is None:
        if ignore_index is not None:
            raise ValueError("ignore_index needs targets; use mask with gathered probabilities")
        p, counted = _values(probs, "probs", mask)
    else:
        p, counted = _gather(probs, targets, ignore_index, mask, "probs")
    with np.errstate(divide="ignore"):
        return _reduce(-np.log(p), counted, reduction)


def perplexity_from_nll(nll: Any, mask: Any = None, reduction: str = "token") -> Any:
    """Perplexity from per-token negative log-likelihoods (N,) or (B, T) (natural log)."""
    V.check_choice(reduction, "reduction", REDUCTIONS)
    v, counted = _values(nll, "nll", mask)
    return _reduce(v, counted, reduction)
