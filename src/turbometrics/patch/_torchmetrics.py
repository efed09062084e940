"""torchmetrics >= 1.0: ``text.Perplexity`` and ``functional.text.perplexity`` from a streaming
log-sum-exp (no softmax the size of the logits), summed in float64.

torchmetrics computes softmax, log and sum in the logits' dtype and keeps float32 states; patched, the
result is the exactly rounded perplexity, in the dtype and on the device torchmetrics returns (the one
deliberate difference from the original's numbers). ``Perplexity`` keeps its two states, upcast to
float64 by the patched ``update`` (so ``forward``, ``reset``, ``merge_state`` and distributed sync work
as before). The code objects of ``Perplexity.update``/``compute`` and of ``perplexity`` are swapped, so
metric objects made before the patch and names imported before it are covered.
"""

from __future__ import annotations

import math
from typing import Any

from . import Fallback, _swap_code, dispatch, original_copy


def supported(version: str) -> bool:
    try:
        return int(version.split(".")[0]) >= 1
    except ValueError:
        return False


def _nll_sum(check: Any, preds: Any, target: Any, ignore_index: Any) -> tuple[float, int]:
    """(sum of the counted tokens' NLL, exactly rounded to float64; their number)."""
    import torch

    import turbometrics as tm
    from turbometrics._exact import exact_sum

    if not (isinstance(preds, torch.Tensor) and isinstance(target, torch.Tensor)):
        raise Fallback("preds, target: not tensors")
    check(preds, target)  # torchmetrics' own shape and dtype checks (and errors)
    if preds.requires_grad and torch.is_grad_enabled():
        raise Fallback("preds requires grad (the original is differentiable)")
    if ignore_index is not None and (type(ignore_index) is not int):
        raise Fallback(f"ignore_index={ignore_index!r}")
    try:
        nll = tm.token_nll(preds, target, ignore_index=ignore_index)
    except (TypeError, ValueError) as e:  # e.g. a target outside [0, V): torch indexes it (or fails) its own way
        raise Fallback(str(e)) from None
    nll = nll.detach().cpu().numpy() if isinstance(nll, torch.Tensor) else nll
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


def _apply_functional(module: Any, undo: list) -> None:
    import torch

    func = module.perplexity
    original, check = original_copy(func), module._check_shape_and_type_consistency

    def fast(preds, target, ignore_index=None):
        total, count = _nll_sum(check, preds, target, ignore_index)
        value = _exp_mean(total, count)
        return torch.tensor(value, dtype=torch.float64, device=preds.device).to(preds.dtype)

    def perplexity(preds, target, ignore_index=None):
        return dispatch(
            "torchmetrics.functional.text.perplexity", fast, original, preds, target, ignore_index=ignore_index
        )

    _swap_code(undo, func, perplexity)


def _apply_class(module: Any, undo: list) -> None:
    import torch

    cls = module.Perplexity
    update, compute = cls.update, cls.compute
    original_update, original_compute = original_copy(update), original_copy(compute)
    check = (
        module._check_shape_and_type_consistency
        if hasattr(module, "_check_shape_and_type_consistency")
        else __import__("torchmetrics.functional.text.perplexity", fromlist=["_"])._check_shape_and_type_consistency
    )

    def fast_update(self, preds, target):
        total, count = _nll_sum(check, preds, target, self.ignore_index)
        state = self.total_log_probs
        self.total_log_probs = state.to(torch.float64) + torch.tensor(total, dtype=torch.float64, device=state.device)
        self.count = self.count.to(torch.float64) + count

    def fast_compute(self):
        total, count = self.total_log_probs, self.count
        if total.dtype != torch.float64 or total.requires_grad:
            raise Fallback("the states were summed by torchmetrics' own update")
        value = _exp_mean(float(total), float(count))
        dtype = self._defaults["total_log_probs"].dtype  # what torchmetrics' own states would give
        return torch.tensor(value, dtype=torch.float64, device=total.device).to(dtype)

    def patched_update(self, preds, target):
        return dispatch("torchmetrics.text.Perplexity.update", fast_update, original_update, self, preds, target)

    def patched_compute(self):
        return dispatch("torchmetrics.text.Perplexity.compute", fast_compute, original_compute, self)

    _swap_code(undo, update, patched_update)
    _swap_code(undo, compute, patched_compute)


TARGETS = {"torchmetrics.functional.text.perplexity": _apply_functional, "torchmetrics.text.perplexity": _apply_class}
