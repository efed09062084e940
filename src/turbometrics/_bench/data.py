"""Generated and shared-data inputs that several groups of cases use: logits, text, WMT17."""

from __future__ import annotations

import os

import numpy as np

from .case import _torch, have


def _lm_data(n, v, pad=0.1, dtype="float32"):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, v), dtype=np.float32)
    x *= 3  # in place: no temporary the size of the logits
    t = rng.integers(0, v, n)
    t[rng.random(n) < pad] = -100
    d = {"t": t}
    if dtype != "bfloat16":
        d["x"] = x.astype(dtype, copy=False)
    elif have("ml_dtypes"):
        import ml_dtypes

        d["x"] = x.astype(ml_dtypes.bfloat16)
    else:  # NumPy has no bfloat16: a torch tensor is what users hand us then
        d["x"] = _torch().from_numpy(x).bfloat16()
    if have("torch"):
        torch = _torch()
        x = d["x"]
        if isinstance(x, torch.Tensor):
            d["xt"] = x
        else:
            d["xt"] = (
                torch.from_numpy(x.view(np.int16)).view(torch.bfloat16) if dtype == "bfloat16" else torch.from_numpy(x)
            )
        d["tt"] = torch.from_numpy(t)
    return d


def zipf_corpus(n: int, seed: int = 0, vocab: int = 50000) -> tuple[list[str], list[str]]:
    """``n`` (hypothesis, reference) pairs of Zipf-distributed words with punctuation and numbers.

    References are 5-45 words; each hypothesis is its reference with about a
    quarter of the words replaced, dropped or shuffled locally, so BLEU is
    realistic (about 40-50) and the tokenizer meets commas, periods, quotes,
    parentheses, hyphens and numbers like 1,000 / 3.5 / 2019-2020.
    """
    rng = np.random.default_rng(seed)
    letters = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
    lengths = np.sort(rng.integers(2, 13, vocab))  # frequent words are short, as in real text
    words = np.array(["".join(rng.choice(letters, k)) for k in lengths], dtype=object)
    cap = rng.random(vocab) < 0.05
    words[cap] = [w.capitalize() for w in words[cap]]
    extras = np.array(
        [",", ",", "(", ")", '"', "'s", "-", ":", "1,000", "3.5", "2019-2020", "42", "e.g.", "&amp;"], dtype=object
    )
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    lens = rng.integers(8, 38, n)
    total = int(lens.sum())
    toks = words[rng.choice(vocab, total, p=p)]
    punct = rng.random(total) < 0.1
    toks[punct] = extras[rng.integers(0, len(extras), int(punct.sum()))]
    subst = words[rng.choice(vocab, total, p=p)]
    noise = rng.random(total)  # < 0.05 drop the word, < 0.25 replace it, else keep
    kept = np.where(noise < 0.25, subst, toks)
    ends = np.cumsum(lens).tolist()
    starts = [0] + ends[:-1]
    swap = rng.random(n) < 0.3
    hyps, refs = [], []
    for i, (a, b) in enumerate(zip(starts, ends)):
        hyp = [w for w, z in zip(kept[a:b], noise[a:b]) if z >= 0.05]
        if swap[i] and len(hyp) > 3:
            hyp[1], hyp[2] = hyp[2], hyp[1]
        refs.append(" ".join(toks[a:b]) + ".")
        hyps.append(" ".join(hyp) + ".")
    return hyps, refs


def _text_data(n):
    hyps, refs = zipf_corpus(n)
    return {"hyps": hyps, "refs": refs}


def wmt17_tiled(data_dir: str, n: int) -> dict:
    """The WMT17 en-de reference and one system (uedin-nmt), tiled to n segments."""

    def lines(name):
        with open(os.path.join(data_dir, "wmt17-en-de", name), encoding="utf-8") as f:
            text = f.read()
        return (text[:-1] if text.endswith("\n") else text).split("\n")

    hyps, refs = lines("uedin-nmt.4722.hyp.de"), lines("newstest2017.ref.de")
    reps = -(-n // len(refs))
    return {"hyps": (hyps * reps)[:n], "refs": (refs * reps)[:n]}
