"""lm-evaluation-harness cases: ``HFLM._loglikelihood_tokens`` with ``tm.patch(["lm_eval"])`` (the fused head)
against the harness's own (the whole logits and their log-softmax), on a two-layer Llama-style model built
from a config (random weights, no download) at Llama 3's vocabulary."""

from __future__ import annotations

import numpy as np

from .case import Case, Impl, _torch
from .cases_lm import _tiny_llama

KINDS = {
    # every position counted: loglikelihood_rolling's windows (a one-token context, the rest continuation)
    "rolling": lambda length: (1, length),
    # multiple choice: a long context and a short answer
    "choice": lambda length: (length - 12, 12),
}


def _tokenizer():
    """A word-level tokenizer: the harness needs one, the requests here are token ids already."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({"a": 0, "b": 1}, unk_token="a"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="a", eos_token="a", pad_token="a")


def lm_eval_case(kind: str = "rolling", batch: int = 8, length: int = 512, vocab: int = 128256, d: int = 256) -> Case:
    """``batch`` requests of ``length`` tokens, one batch, scored by the harness's HFLM (float32 model)."""
    ctx_len, cont_len = KINDS[kind](length)

    def setup():
        import lm_eval.models.huggingface as hf

        torch = _torch()
        torch.set_grad_enabled(False)
        rng = np.random.default_rng(0)
        reqs = []
        for _ in range(batch):
            ids = [int(t) for t in rng.integers(1, vocab, ctx_len + cont_len)]
            reqs.append((("", ""), ids[:ctx_len], ids[ctx_len:]))
        model = _tiny_llama(vocab, d, length + 1)
        lm = hf.HFLM(pretrained=model, tokenizer=_tokenizer(), batch_size=batch, max_length=length, device="cpu")
        return {"hf": hf, "lm": lm, "reqs": reqs}

    def patched(d_):
        import turbometrics as tm

        tm.patch(["lm_eval"])
        try:
            return d_["lm"]._loglikelihood_tokens(d_["reqs"], disable_tqdm=True)
        finally:
            tm.unpatch()

    c = Case(
        f"lm-eval HFLM loglikelihood ({kind}: {batch} x {length} tokens, {cont_len} scored each), "
        f"2-layer Llama d={d}, V={vocab:,}, f32",
        setup,
    )
    c.impls["turbometrics"] = Impl(patched, "ours", note="tm.patch(['lm_eval'])")
    c.impls["lm-eval"] = Impl(lambda d_: d_["hf"].HFLM._loglikelihood_tokens(d_["lm"], d_["reqs"], True), "oracle")
    return c
