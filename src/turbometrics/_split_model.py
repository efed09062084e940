"""A causal LM split before its head: the body (ids -> hidden states) and the head's weight.

``lm_perplexity`` scores such a split with ``lm_head._head_nll``, so the
(batch, tokens, vocabulary) logits are never made. Two sources:

- a Hugging Face causal LM: ``model.base_model`` gives the last hidden state
  (after the final norm), ``model.get_output_embeddings()`` the head (a
  ``torch.nn.Linear``, tied or not). The logit maps Hugging Face applies after
  the head are reproduced in its operation order: ``logit_scale`` (Cohere:
  a product), ``logits_scaling`` (Granite: a quotient),
  ``final_logit_softcapping`` (Gemma 2 and later: ``tanh(x / c) * c``; RecurrentGemma's
  ``logits_soft_cap``). Anything else a model does to its logits (MiniCPM3 scales the
  hidden states by ``logits_scaling`` instead) is caught by ``verify``, which compares
  the split with the model's own logits on a short probe, logit by logit.
- a caller's ``(body, head)`` pair, taken as given.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ._arrays import is_torch


class Split(NamedTuple):
    body: Callable[[np.ndarray], Any]  # (B, T) int64 ids -> hidden states (B, T, d)
    weight: Any  # (V, d)
    bias: Any  # (V,) or None
    logit_map: Callable[[Any], Any] | None
    source: str  # "huggingface" or "pair"


def field_of(output: Any, name: str) -> Any:
    """An array in a model's output: its attribute ``name`` (Hugging Face's ``.logits``,
    ``.last_hidden_state``), a tuple's first item, or the output itself."""
    if hasattr(output, name):
        return getattr(output, name)
    if isinstance(output, (tuple, list)) and output:
        return output[0]
    return output


def hidden_of(output: Any) -> Any:
    return field_of(output, "last_hidden_state")


def logits_of(output: Any) -> Any:
    return field_of(output, "logits")


def _logit_map(model: Any) -> Callable[[Any], Any] | None:
    """The maps Hugging Face's ``*ForCausalLM.forward`` applies to ``lm_head``'s output, in its order."""
    cfg = model.config
    steps = []
    scale = getattr(model, "logit_scale", None)
    if isinstance(scale, (int, float)) and not isinstance(scale, bool):
        steps.append(lambda x, s=scale: x * s)
    divisor = getattr(cfg, "logits_scaling", None)
    if divisor is not None and divisor != 1:
        steps.append(lambda x, s=divisor: x / s)
    cap = getattr(cfg, "final_logit_softcapping", None)
    if cap is None:
        cap = getattr(cfg, "logits_soft_cap", None)  # RecurrentGemma's name for the same map
    if cap is not None:
        import torch

        steps.append(lambda x, c=cap: torch.tanh(x / c) * c)
    if not steps:
        return None

    def logit_map(x):
        for step in steps:
            x = step(x)
        return x

    return logit_map


def huggingface(model: Any, device: Any) -> Split | str:
    """The split of a Hugging Face causal LM, or why there is none."""
    import torch

    get = getattr(model, "get_output_embeddings", None)
    if not isinstance(model, torch.nn.Module) or get is None or not hasattr(model, "config"):
        return "it is not a Hugging Face model (a torch module with get_output_embeddings() and a config)"
    head = get()
    if not isinstance(head, torch.nn.Linear):
        return f"its output embeddings are {type(head).__name__}, not a torch.nn.Linear"
    base = getattr(model, "base_model", None)
    if not isinstance(base, torch.nn.Module) or base is model:
        return "it has no base model (base_model_prefix) to stop before the head"
    tp = getattr(getattr(model, "config", None), "pretraining_tp", 1)
    if tp not in (None, 1):
        return f"config.pretraining_tp={tp} splits the head's multiply"
    params = inspect.signature(base.forward).parameters
    kwargs = {"use_cache": False} if "use_cache" in params else {}  # no KV cache is needed to score
    dev = device or head.weight.device

    def body(ids: np.ndarray):
        with torch.inference_mode():
            out = hidden_of(base(input_ids=torch.from_numpy(ids).to(dev), **kwargs))
        # the head's device (a model split over devices) and dtype (Mamba's float32 residual stream meets a
        # bfloat16 head: its forward casts so too)
        return out.to(head.weight.device, head.weight.dtype)

    return Split(
        body, head.weight.detach(), None if head.bias is None else head.bias.detach(), _logit_map(model), "huggingface"
    )


def pair(body: Callable, head: Any, call: Callable[[Callable], Callable[[np.ndarray], Any]]) -> Split:
    """A caller's ``(body, head)``: head a ``torch.nn.Linear``, a ``(weight, bias)`` pair or a weight."""
    if not callable(body):
        raise TypeError(f"model: the body of a (body, head) pair must be callable, got {type(body).__name__}")
    if hasattr(head, "weight") and hasattr(head, "in_features"):  # torch.nn.Linear
        weight, bias = head.weight.detach(), None if head.bias is None else head.bias.detach()
    elif isinstance(head, (tuple, list)) and len(head) == 2:
        weight, bias = head
    elif hasattr(head, "shape"):
        weight, bias = head, None
    else:
        raise TypeError(
            f"model: the head of a (body, head) pair must be a torch.nn.Linear, (weight, bias) or "
            f"a weight (V, d); got {type(head).__name__}"
        )
    if is_torch(weight):
        weight = weight.detach()
    return Split(call(body), weight, bias, None, "pair")


def verify(model: Any, split: Split, call_model: Callable[[np.ndarray], Any], probe: np.ndarray) -> str | None:
    """None if the split gives the model's own logits on ``probe``, else what differs.

    Each logit must agree to within a unit of its own last place (where the split is right they agree bit
    for bit: the same multiply on the same hidden states), and the model must not round its logits to a
    narrower type than the head's. A tolerance scaled by the largest logit would let a map the split
    does not reproduce pass in bfloat16, whose unit of last place is 0.8% of the value."""
    import torch
    import torch.nn.functional as F

    full = call_model(probe)
    try:
        with torch.inference_mode():
            mine = F.linear(split.body(probe), split.weight, split.bias)
            if split.logit_map is not None:
                mine = split.logit_map(mine)
    except Exception as e:  # noqa: BLE001 - whatever stops the head on the body's output: the model's own path
        return f"its head cannot be applied to its base model's output ({type(e).__name__}: {e})"
    if tuple(full.shape) != tuple(mine.shape):
        return f"the head gives logits of shape {tuple(mine.shape)}, the model {tuple(full.shape)}"
    if not (full.dtype.is_floating_point and mine.dtype.is_floating_point):
        return f"its logits are {full.dtype}, its head's {mine.dtype}"
    if torch.finfo(full.dtype).eps > torch.finfo(mine.dtype).eps:
        return f"it rounds its logits to {full.dtype} (its head gives {mine.dtype})"
    eps = torch.finfo(mine.dtype).eps
    full, mine = full.detach().double().cpu(), mine.double().cpu()
    off = (full - mine).abs() > eps * full.abs()
    if bool(off.any()):
        i = int(off.reshape(-1).double().argmax())
        a, b = float(full.reshape(-1)[i]), float(mine.reshape(-1)[i])
        return (
            f"on a {probe.shape[1]}-token probe its logits differ from its head applied to its base model's last "
            f"hidden state ({int(off.sum())} of {off.numel()}; for example {a:.6g} against {b:.6g})"
        )
    return None
