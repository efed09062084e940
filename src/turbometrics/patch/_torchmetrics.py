"""torchmetrics >= 1.0: ``text.Perplexity`` and ``functional.text.perplexity`` from a streaming
log-sum-exp (no softmax the size of the logits), summed in float64.

torchmetrics computes softmax, log and sum in the logits' dtype and keeps float32 states; patched, the
result is the exactly rounded perplexity, in the dtype and on the device torchmetrics returns (the one
deliberate difference from the original's numbers). ``Perplexity`` keeps its two states, upcast to
float64 by the patched ``update`` (so ``forward``, ``reset``, ``merge_state`` and distributed sync work
as before); their values are also remembered on the host, so ``compute`` reads nothing back from the GPU
and each update makes its states with one fill kernel each. The code objects of
``Perplexity.update``/``compute`` and of ``perplexity`` are swapped (see ``_table``), so metric objects
made before the patch and names imported before it are covered.
"""

from __future__ import annotations

import importlib
import math
from typing import TYPE_CHECKING, Any

from ._dispatch import Fallback

if TYPE_CHECKING:
    from ._apply import Site


def _nll_sum(check: Any, preds: Any, target: Any, ignore_index: Any) -> tuple[float, int]:
    """(sum of the counted tokens' NLL, exactly rounded to float64; their number)."""
    import torch

    from turbometrics.language_model import _token_total

    if not (isinstance(preds, torch.Tensor) and isinstance(target, torch.Tensor)):
        raise Fallback("preds, target: not tensors")
    check(preds, target)  # torchmetrics' own shape and dtype checks (and errors)
    if preds.requires_grad and torch.is_grad_enabled():
        raise Fallback("preds requires grad (the original is differentiable)")
    if ignore_index is not None and (type(ignore_index) is not int):
        raise Fallback(f"ignore_index={ignore_index!r}")
    try:  # on CUDA the sum and count are made on the device: a few words come back, one wait for the GPU
        return _token_total(preds, target, ignore_index, None, None, None)
    except (TypeError, ValueError) as e:  # e.g. a target outside [0, V): torch indexes it (or fails) its own way
        raise Fallback(str(e)) from None


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
    blocking one that waits for the stream): the value is the fill kernel's argument. float32 and float64
    are filled directly (one rounding, as ``.to``'s) within float32's range; the rest through float64, as ``.to``
    rounds them (past float32's range to inf)."""
    import torch

    if dtype is torch.float64 or (dtype is torch.float32 and not abs(value) > _F32_MAX):  # (NaN: direct too)
        return torch.full((), value, dtype=dtype, device=device)  # (a finite value past float32's range raises)
    return torch.full((), value, dtype=torch.float64, device=device).to(dtype)


_F32_MAX = 3.4028234663852886e38


_KNOWN = "_turbometrics_known"  # Perplexity.__dict__ key: the states as the patched update left them


def _version(t: Any) -> int | None:
    """The tensor's version counter; None for inference tensors, which keep none (so are never remembered). A
    write that bypasses the counter (``.data``, DLPack views) is not seen: torchmetrics makes none."""
    return None if t.is_inference() else t._version


def _states(self: Any, total: Any, count: Any) -> tuple[float, float]:
    """The states' values as floats: remembered (no read from the device) when they are the tensors the
    patched update left, unchanged in place since; else read back, both in one copy."""
    import torch

    k = self.__dict__.get(_KNOWN)
    if k is not None and k[0] is total and k[2] is count and k[1] == _version(total) and k[3] == _version(count):
        return k[4], k[5]
    t, c = total.reshape(()), count.reshape(())  # reshape(()) fails where float() would (more than one value)
    if t.dtype != c.dtype or t.device != c.device:
        t, c = t.to(torch.float64), c.to(device=t.device, dtype=torch.float64)
    t, c = torch.stack((t, c)).tolist()
    return float(t), float(c)


_DEFAULTS = "_turbometrics_defaults"  # Perplexity.__dict__ key: the default states' values, read once


def _remember(self: Any, total: Any, count: Any, t: float, c: float) -> None:
    """Remember the states' values (``_states`` then reads nothing back while they are unchanged)."""
    versions = (_version(total), _version(count))
    if None not in versions:  # (made in inference mode: read back when next needed)
        self.__dict__[_KNOWN] = (total, versions[0], count, versions[1], t, c)
    else:
        self.__dict__.pop(_KNOWN, None)


def reset(site: Site, self: Any) -> None:
    """``Perplexity.reset``: the original (the states become copies of their defaults), then the states remembered
    with their defaults' values, read once a metric (and again after a move or a change of the defaults): the
    first update after a reset (or inside ``forward``) reads nothing back from the device."""
    site.original(self)
    d = self.__dict__.get("_defaults") or {}
    dt, dc = d.get("total_log_probs"), d.get("count")
    total, count = self.__dict__.get("total_log_probs"), self.__dict__.get("count")
    import torch

    if not all(isinstance(v, torch.Tensor) for v in (dt, dc, total, count)) or total.requires_grad:
        self.__dict__.pop(_KNOWN, None)
        return
    k = self.__dict__.get(_DEFAULTS)
    if not (k is not None and k[0] is dt and k[2] is dc and k[1] == _version(dt) and k[3] == _version(dc)):
        try:
            k = (dt, _version(dt), dc, _version(dc), _states(self, dt, dc))
        except (RuntimeError, ValueError, TypeError):  # defaults of another shape: the next update reads
            self.__dict__.pop(_KNOWN, None)
            return
        if None not in (k[1], k[3]):
            self.__dict__[_DEFAULTS] = k
    _remember(self, total, count, *k[4])


def update(site: Site, self: Any, preds: Any, target: Any) -> None:
    """``Perplexity.update``: the states summed in float64, made with the sums as the fill kernel's argument
    (no copy to the device, nor a wait for it) and remembered on the host for the next update and ``compute``."""
    import torch

    nll, n = _nll_sum(_shape_check(site.module), preds, target, self.ignore_index)
    total, count = self.total_log_probs, self.count
    f64 = torch.float64
    if total.requires_grad or count.requires_grad:  # summed with a gradient by torchmetrics' own update: kept
        self.__dict__.pop(_KNOWN, None)
        self.total_log_probs = total.to(f64) + nll
        self.count = count.to(f64) + n
        return
    t, c = _states(self, total, count)
    t, c = t + nll, c + n  # the float64 additions the tensors would do
    total = _set(self, "total_log_probs", torch.full((), t, dtype=f64, device=total.device))
    count = _set(self, "count", torch.full((), c, dtype=f64, device=count.device))
    _remember(self, total, count, t, c)


def _set(self: Any, name: str, value: Any) -> Any:
    """``setattr(self, name, value)``; straight into ``__dict__`` for a plain attribute there (nn.Module keeps
    parameters, buffers and submodules apart, and its ``__setattr__`` ends there for the rest: ~4 us a call)."""
    if name in self.__dict__:
        self.__dict__[name] = value
    else:
        setattr(self, name, value)
    return value


def compute(site: Site, self: Any) -> Any:
    """``Perplexity.compute``, from the float64 states of the patched ``update``."""
    import torch

    total, count = self.total_log_probs, self.count
    if total.dtype != torch.float64 or total.requires_grad:
        raise Fallback("the states were summed by torchmetrics' own update")
    dtype = self._defaults["total_log_probs"].dtype  # what torchmetrics' own states would give
    return _as_tensor(_exp_mean(*_states(self, total, count)), total.device, dtype)
