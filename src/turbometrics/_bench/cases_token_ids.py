"""Token-ID cases: per-sentence BLEU of token-ID batches (RL rewards) against a TensorBLEU in torch.

``tensorbleu_torch`` is that case's PyTorch baseline, so it ships with ``turbometrics bench``; the tests
and tools/gpu_scale.py use it as an oracle too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import turbometrics as tm
from turbometrics import slow

from .case import Case, Impl, _slow_subset, _torch, have


def tensorbleu_torch(cand: Any, ref: Any, max_order: int = 4, packed: bool = False) -> Any:
    """Per-sentence BLEU of token IDs (B, L) against one reference (B, L) (no padding) the TensorBLEU way
    (arXiv 2510.05485): n-grams by ``unfold``, one dictionary per batch by ``torch.unique``, counts by an
    offset ``bincount``; then sacrebleu's "exp" smoothing and brevity penalty, vectorized (TensorBLEU's
    own smoothing replaces zero precisions by 1e-12; this one gives sacrebleu's numbers). The baseline
    of the token-ID benchmark, in torch, on whatever device the tensors are. ``packed``: each n-gram
    packed into one int64 key (exact while vocab**n < 2**63), so ``torch.unique`` sorts scalars, not rows
    (much faster on the CPU than the paper's ``unique(dim=0)``)."""
    torch = _torch()
    b = cand.shape[0]
    correct, total = [], []
    for n in range(1, max_order + 1):
        c, r = cand.unfold(1, n, 1), ref.unfold(1, n, 1)  # (B, L - n + 1, n)
        grams = torch.cat([c.reshape(-1, n), r.reshape(-1, n)])
        if packed:
            base = int(max(int(cand.max()), int(ref.max()))) + 1
            keys = grams[:, 0].clone()
            for q in range(1, n):
                keys = keys * base + grams[:, q]
            uniq, inv = torch.unique(keys, return_inverse=True)
        else:
            uniq, inv = torch.unique(grams, dim=0, return_inverse=True)
        k = uniq.shape[0]
        ci, ri = inv[: c.shape[0] * c.shape[1]].view(b, -1), inv[c.shape[0] * c.shape[1] :].view(b, -1)
        rows = torch.arange(b, device=cand.device)[:, None] * k
        cc = torch.bincount((ci + rows).reshape(-1), minlength=b * k).view(b, k)
        rc = torch.bincount((ri + rows).reshape(-1), minlength=b * k).view(b, k)
        correct.append(torch.minimum(cc, rc).sum(1))
        total.append(torch.full((b,), c.shape[1], device=cand.device))
    correct, total = torch.stack(correct, 1).double(), torch.stack(total, 1).double()
    zero = correct == 0
    smooth = torch.pow(2.0, torch.cumsum(zero.double(), 1))
    prec = torch.where(zero, 100.0 / (smooth * total), 100.0 * correct / total)
    hyp_len, ref_len = float(cand.shape[1]), float(ref.shape[1])
    bp = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    score = bp * torch.exp(torch.log(prec).sum(1) / max_order)
    return torch.where(correct.sum(1) == 0, torch.zeros_like(score), score)


def token_bleu_case(b: int = 256, length: int = 1024, vocab: int = 32000) -> Case:
    """RL rewards: per-sentence BLEU of a batch of token IDs against one reference each."""

    def setup():
        rng = np.random.default_rng(0)
        cand = rng.integers(0, vocab, (b, length))
        ref = cand.copy()
        swap = rng.random((b, length)) < 0.4  # references share about 60% of the positions
        ref[swap] = rng.integers(0, vocab, int(swap.sum()))
        d = {"cand": cand, "ref": ref}
        if have("torch"):
            d["cand_t"], d["ref_t"] = _torch().from_numpy(cand), _torch().from_numpy(ref)
        return d

    c = Case(f"token-ID sentence BLEU, ({b}, {length:,}) vs one reference each", setup)
    c.impls["turbometrics"] = Impl(lambda d: tm.segment_bleu(d["cand"], d["ref"]), "ours")
    if have("torch"):
        c.impls["torch TensorBLEU method"] = Impl(
            lambda d: tensorbleu_torch(d["cand_t"], d["ref_t"]), "torch", note="unique(dim=0), as the paper"
        )
        c.impls["torch TensorBLEU, packed keys"] = Impl(
            lambda d: tensorbleu_torch(d["cand_t"], d["ref_t"], packed=True),
            "torch",
            note="n-grams as int64 keys, unique of scalars",
        )
    rows = min(b, 16)
    if have("sacrebleu"):

        def sb(d, r):
            import sacrebleu

            o = sacrebleu.BLEU(tokenize="none", effective_order=True)
            return [
                o.sentence_score(" ".join(map(str, h)), [" ".join(map(str, x))]).score
                for h, x in zip(d["cand"][:r].tolist(), d["ref"][:r].tolist())
            ]

        c.impls["sacrebleu (written IDs)"] = Impl(
            lambda d: sb(d, rows), "oracle", b / rows, f"{rows} rows, scaled x{b / rows:g}"
        )
    c.impls["slow"] = _slow_subset(
        rows,
        lambda d, r: [
            slow.sentence_bleu(" ".join(map(str, h)), [" ".join(map(str, x))], tokenize="none")
            for h, x in zip(d["cand"][:r].tolist(), d["ref"][:r].tolist())
        ],
        b,
    )
    return c
