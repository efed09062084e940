"""lm-evaluation-harness's Hugging Face model with log-likelihoods from the fused LM head.

``HFLM`` is lm-evaluation-harness 0.4.13's ``HFLM`` (``lm_eval.models.huggingface``) whose
``loglikelihood`` and ``loglikelihood_rolling`` requests run the model's body, then only the
continuation positions through the head, a vocabulary slice at a time: the (batch, length, vocabulary)
logits and their log-softmax are never made. ``batch_size="auto"`` is sized by that path's memory.
Importing this module registers it with the harness as ``"hf-turbometrics"``::

    import lm_eval, turbometrics.lm_eval
    lm_eval.simple_evaluate(model="hf-turbometrics", model_args="pretrained=...", tasks=[...])

or construct it as the harness's ``HFLM``: ``turbometrics.lm_eval.HFLM(pretrained=..., batch_size=8)``.
What the fused path does not reproduce (a seq2seq model, a PEFT model, a head it cannot split from
the body, a subclass's own ``_model_call``) runs the harness's own code, with the reason logged on the
``turbometrics.patch`` logger. Without changing code, ``python -m turbometrics.patch -m lm_eval ...``
(or ``tm.patch(["lm_eval"])``) does the same for the harness's own ``hf`` model.

Needs ``lm-eval==0.4.13`` with its ``hf`` dependencies (torch, transformers, accelerate).
"""

from __future__ import annotations

from typing import Any

from lm_eval.api.registry import get_model, register_model
from lm_eval.models import huggingface as _hf

from . import _lm_eval_fused
from .patch import _dispatch, is_patched

__all__ = ["HFLM", "MODEL_NAME"]

MODEL_NAME = "hf-turbometrics"


class HFLM(_hf.HFLM):
    """``lm_eval.models.huggingface.HFLM`` with log-likelihoods through the fused LM head.

    Takes the harness's ``HFLM`` arguments. Per request the answer is ``(log-likelihood, is_greedy)`` as
    the harness defines it, from the same batches: the log-probabilities are accurate to float64
    rounding and summed exactly, whatever ``softmax_dtype`` asks for (the harness's own float64
    log-softmax gives the same to ~1e-15 relative on the same logits; its default, the logits' dtype,
    to that dtype's rounding); ``is_greedy`` follows ``torch.argmax`` on ties (the first maximal token).
    """

    def _loglikelihood_tokens(
        self, requests: list, disable_tqdm: bool = False, override_bs: int | None = None
    ) -> list[tuple[float, bool]]:
        return self._fused("loglikelihood_tokens", super()._loglikelihood_tokens, requests, disable_tqdm, override_bs)

    def _detect_batch_size(self, requests: Any = None, pos: int = 0) -> int:
        return self._fused("detect_batch_size", super()._detect_batch_size, requests, pos)

    def _fused(self, name: str, original: Any, *args: Any) -> Any:
        """The fused path ``name``, or the harness's own code (logged) where it does not apply."""
        label = f"turbometrics.lm_eval.HFLM.{original.__name__}"
        if is_patched("lm_eval"):  # the harness's HFLM (super()) is the fused path already, with its fallback
            return original(*args)
        try:
            out = getattr(_lm_eval_fused, name)(_hf, self, *args)
        except _dispatch.Fallback as why:
            return _dispatch.fallback(label, str(why), original, *args)
        _dispatch.accelerated(label)
        return out


def _register() -> None:
    try:
        known = get_model(MODEL_NAME)
    except Exception:  # not registered (the registry raises its own error type)
        known = None
    if known is None or known.__module__ != __name__:  # a re-import defines the class again: keep the first
        register_model(MODEL_NAME)(HFLM)


_register()
