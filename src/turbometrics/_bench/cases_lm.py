"""Language-model cases: ``lm_perplexity`` of small torch and Hugging Face models against the
transformers guide's loop, and perplexity from an LM head's input."""

from __future__ import annotations

from typing import Any

import numpy as np

import turbometrics as tm

from .case import Case, Impl, _torch, have


def _causal_lm(vocab: int, dim: int = 64, max_len: int = 1024):
    """A small causal, position-dependent torch LM (running mean of embeddings, then a vocab projection)."""
    torch = _torch()
    Module: Any = torch.nn.Module  # torch is imported here, not at module level: no static base class

    class LM(Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.tok, self.pos = torch.nn.Embedding(vocab, dim), torch.nn.Embedding(max_len, dim)
            self.out = torch.nn.Linear(dim, vocab)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            h = self.tok(ids) + self.pos(pos)[None]
            return self.out(torch.tanh(h.cumsum(1) / (pos + 1)[None, :, None]))

    return LM().eval()


def lm_case(n_tokens: int = 8192, vocab: int = 50257, max_length: int = 1024, stride: int = 512) -> Case:
    """lm_perplexity against the transformers guide's loop (one window per forward, mean loss per window)."""

    def setup():
        return {
            "model": _causal_lm(vocab, max_len=max_length),
            "ids": np.random.default_rng(0).integers(0, vocab, n_tokens),
        }

    c = Case(f"lm_perplexity, {n_tokens:,} tokens, windows {max_length}/{stride}, V={vocab:,}", setup)
    c.impls["turbometrics"] = Impl(
        lambda d: tm.lm_perplexity(d["model"], d["ids"], max_length, stride, batch_size=1), "ours"
    )

    if have("torch"):
        c.impls["transformers guide loop"] = Impl(
            lambda d: _guide_loop(d["model"], d["ids"], max_length, stride), "torch"
        )
    return c


def _guide_loop(model, ids_np: np.ndarray, max_length: int, stride: int) -> float:
    """The transformers guide's perplexity loop: one window per forward, HF's mean loss per window."""
    torch = _torch()
    F = torch.nn.functional
    ids = torch.from_numpy(ids_np)[None]
    nll_sum, n_tokens, prev_end = 0.0, 0, 0
    for begin in range(0, ids.size(1), stride):
        end = min(begin + max_length, ids.size(1))
        trg_len = end - prev_end
        inp = ids[:, begin:end]
        target = inp.clone()
        target[:, :-trg_len] = -100
        with torch.no_grad():
            logits = model(inp)
            logits = getattr(logits, "logits", logits)
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.size(-1)).float(), target[:, 1:].reshape(-1), ignore_index=-100
            )  # what HF's loss does
        n = int((target != -100).sum()) - target.size(0)
        nll_sum += float(loss) * n
        n_tokens += n
        prev_end = end
        if end == ids.size(1):
            break
    return float(np.exp(nll_sum / n_tokens))


def _tiny_llama(vocab: int, d: int, max_len: int):
    """A two-layer Llama-style Hugging Face model (untied head) from a config: no download."""
    import transformers

    torch = _torch()
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=d,
        intermediate_size=2 * d,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_len,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return transformers.LlamaForCausalLM(cfg).eval()


def lm_head_case(
    n_tokens: int = 8192, vocab: int = 128256, d: int = 256, max_length: int = 1024, batch_size: int = 4
) -> Case:
    """lm_perplexity of a tiny Llama-style model (Hugging Face) through the head's input against its logits path
    (one batch of (batch_size, max_length, vocab) f32 logits) and the guide's loop; plain chunks."""

    def setup():
        return {
            "model": _tiny_llama(vocab, d, max_length),
            "ids": np.random.default_rng(0).integers(0, vocab, n_tokens),
        }

    c = Case(
        f"lm_perplexity, tiny Llama (d={d}), {n_tokens:,} tokens, batches of {batch_size} x {max_length} "
        f"over V={vocab:,}",
        setup,
    )
    c.impls["turbometrics"] = Impl(
        lambda d_: tm.lm_perplexity(d_["model"], d_["ids"], max_length, batch_size=batch_size, fuse_head=True), "ours"
    )
    c.impls["turbometrics on the logits (fuse_head=False)"] = Impl(
        lambda d_: tm.lm_perplexity(d_["model"], d_["ids"], max_length, batch_size=batch_size, fuse_head=False),
        "variant",
    )
    c.impls["transformers guide loop"] = Impl(
        lambda d_: _guide_loop(d_["model"], d_["ids"], max_length, max_length), "torch"
    )
    return c


def hidden_case(n: int = 2048, d: int = 2048, vocab: int = 128256) -> Case:
    """Perplexity from an LM head's input (n tokens, hidden size d) without the (n, vocab) logits, against
    materialising them (BLAS) and then our fused NLL, or torch's cross entropy. f32 on the CPU; 10% padding."""

    def setup():
        rng = np.random.default_rng(0)
        t = rng.integers(0, vocab, n)
        t[rng.random(n) < 0.1] = -100
        return {
            "h": rng.standard_normal((n, d), dtype=np.float32),
            "w": rng.standard_normal((vocab, d), dtype=np.float32) * np.float32(d**-0.5),
            "t": t,
        }

    c = Case(f"perplexity from hidden states f32 ({n}, d={d}) x V={vocab:,}, 10% padding", setup)
    c.impls["turbometrics"] = Impl(
        lambda d_: tm.perplexity_from_hidden(d_["h"], d_["w"], d_["t"], ignore_index=-100), "ours"
    )
    c.impls["logits (matmul) + turbometrics perplexity"] = Impl(
        lambda d_: tm.perplexity(d_["h"] @ d_["w"].T, d_["t"], ignore_index=-100), "variant"
    )
    if have("torch"):

        def ce(d_):
            torch = _torch()
            logits = torch.from_numpy(d_["h"]) @ torch.from_numpy(d_["w"]).T
            return float(torch.exp(torch.nn.functional.cross_entropy(logits, torch.from_numpy(d_["t"]))))

        c.impls["torch logits + cross_entropy"] = Impl(ce, "torch")
    return c
