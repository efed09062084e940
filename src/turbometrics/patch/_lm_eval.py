"""lm-evaluation-harness 0.4.13: ``HFLM`` log-likelihoods through the fused LM head (``_lm_eval_fused``).

``HFLM._loglikelihood_tokens`` (every ``loglikelihood`` and ``loglikelihood_rolling`` request of a causal
model) runs the body of the model and only the continuation positions through the head; ``HFLM.
_detect_batch_size`` (``batch_size="auto"``) probes that path's memory, not the full log-softmax's. Both
are rebound on the class (see ``_table``): a subclass that overrides them keeps its own. What the fused
path does not reproduce (seq2seq, PEFT, a head it cannot split) runs the original, logged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._apply import Site


def loglikelihood_tokens(
    site: Site, self: Any, requests: list, disable_tqdm: bool = False, override_bs: int | None = None
) -> list:
    from .._lm_eval_fused import loglikelihood_tokens as fused

    return fused(site.module, self, requests, disable_tqdm, override_bs)


def detect_batch_size(site: Site, self: Any, requests: Any = None, pos: int = 0) -> int:
    from .._lm_eval_fused import detect_batch_size as fused

    return fused(site.module, self, requests, pos)


def bootstrap_stderr(site: Site, f: Any, xs: Any, iters: Any) -> float:
    from .._lm_eval_stderr import bootstrap_stderr as fast

    return fast(site.module, f, xs, iters)
