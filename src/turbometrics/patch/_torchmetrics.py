"""torchmetrics >= 1.0: ``text.Perplexity`` and ``functional.text.perplexity`` from a streaming
log-sum-exp (no softmax the size of the logits), summed in float64.

torchmetrics computes softmax, log and sum in the logits' dtype and keeps float32 states; patched, the
result is the exactly rounded perplexity, in the dtype and on the device torchmetrics returns (the one
deliberate difference from the original's numbers). ``Perplexity`` keeps its two states, upcast to
float64 by the patched ``update`` (so ``forward``, ``reset``, ``merge_state`` and distributed sync work
as before). The code objects of ``Perplexity.update``/``compute`` and of ``perplexity`` are swapped (see
``_table``), so metric objects made before the patch and names imported before it are covered.
"""

from __future__ import annotations

import importlib
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ._dispatch import Fallback

if TYPE_CHECKING:
    from ._apply import Site


def _nll_sum(check: Any, preds: Any, target: Any, ignore_index: Any) -> tuple[float, int]:
    """(sum of the counted tokens' NLL, exactly rounded to float64; their number)."""
    import torch

    import turbometrics as tm
    from turbometrics._exact import exact_sum
    from turbometrics.language_model import _nll

    if not (isinstance(preds, torch.Tensor) and isinstance(target, torch.Tensor)):
        raise Fallback("preds, target: not tensors")
    check(preds, target)  # torchmetrics' own shape and dtype checks (and errors)
    if preds.requires_grad and torch.is_grad_enabled():
        raise Fallback("preds requires grad (the original is differentiable)")
    if ignore_index is not None and (type(ignore_index) is not int):
        raise Fallback(f"ignore_index={ignore_index!r}")
    try:
        if preds.is_cuda:  # the NLLs and their counted flags come back in one copy: one wait for the GPU
            nll, counted = _nll(preds, target, ignore_index, None, None, None)
            return exact_sum(nll.reshape(-1)), int(np.count_nonzero(counted))
        nll = tm.token_nll(preds, target, ignore_index=ignore_index).numpy()
    except (TypeError, ValueError) as e:  # e.g. a target outside [0, V): torch indexes it (or fails) its own way
        raise Fallback(str(e)) from None
    count = target.numel() if ignore_index is None else int((target != ignore_index).sum())
    return exact_sum(nll.reshape(-1)), count


def _exp_mean(total: float, count: float) -> float:
    """exp(total / count) as torch would give it: NaN for no tokens, inf past float64's range."""
    if not count:
        return math.nan
    try:
        return math.exp(total / count)
    except OverflowError:
        return math.inf


def _shape_check(module: Any) -> Any:
    """torchmetrics' own shape and dtype checks: in the patched module, or in the functional one."""
    if not hasattr(module, "_check_shape_and_type_consistency"):
        module = importlib.import_module("torchmetrics.functional.text.perplexity")
    return module._check_shape_and_type_consistency


def perplexity(site: Site, preds: Any, target: Any, ignore_index: Any = None) -> Any:
    """``torchmetrics.functional.text.perplexity``."""
    total, count = _nll_sum(site.module._check_shape_and_type_consistency, preds, target, ignore_index)
    return _as_tensor(_exp_mean(total, count), preds.device, preds.dtype)


def _as_tensor(value: float, device: Any, dtype: Any) -> Any:
    """``torch.tensor(value, dtype=float64, device=device).to(dtype)`` without a copy to the device (on CUDA a
    blocking one that waits for the stream): the value is the fill kernel's argument."""
    import torch

    return torch.full((), value, dtype=torch.float64, device=device).to(dtype)


def update(site: Site, self: Any, preds: Any, target: Any) -> None:
    """``Perplexity.update``: the states summed in float64."""
    import torch

    total, count = _nll_sum(_shape_check(site.module), preds, target, self.ignore_index)
    # Python numbers are added as kernel arguments: no copy to the device (nor a wait for it)
    self.total_log_probs = self.total_log_probs.to(torch.float64) + total
    self.count = self.count.to(torch.float64) + count


def compute(site: Site, self: Any) -> Any:
    """``Perplexity.compute``, from the float64 states of the patched ``update``."""
    import torch

    total, count = self.total_log_probs, self.count
    if total.dtype != torch.float64 or total.requires_grad:
        raise Fallback("the states were summed by torchmetrics' own update")
    # one copy back (one wait), not one a state; reshape(()) fails where float() would (more than one value)
    total_, count_ = torch.stack((total.reshape(()), count.reshape(()).to(total))).tolist()
    dtype = self._defaults["total_log_probs"].dtype  # what torchmetrics' own states would give
    return _as_tensor(_exp_mean(total_, count_), total.device, dtype)
