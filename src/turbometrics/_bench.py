"""Benchmark cases shared by ``turbometrics bench`` and the pytest-benchmark suites.

Each case builds its own data and names the implementations to time:
turbometrics itself, the oracle and PyTorch when installed, the pure-Python
baseline of ``turbometrics.slow`` (on a few rows, scaled up, since it would
take minutes on the full input), and a plain multi-threaded read of the same
array: the physical limit of a one-pass kernel.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import turbometrics as tm
from turbometrics import _validate, slow


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@dataclass
class Impl:
    fn: Callable[[dict], Any]
    role: str  # "ours", "variant" (ours, other options), "oracle", "torch", "slow", "read"
    scale: float = 1.0  # multiply the measured time (slow/ runs on a subset of rows)
    note: str = ""


@dataclass
class Case:
    name: str
    setup: Callable[[], dict]
    impls: dict[str, Impl] = field(default_factory=dict)
    bytes_read: Callable[[dict], int] | None = None  # for the effective bandwidth
    # "simd": runs the dense C++ kernels, so it is timed once per SIMD path;
    # "threads": compared between the OpenMP build and the std::thread pool one
    groups: tuple[str, ...] = ()


def build_variant(simd: bool) -> str:
    """What a case ran on, for its name: the SIMD path for dense cases, and the
    std::thread pool when this build has no OpenMP."""
    from ._ext import _dense

    parts = [_dense.active_path()] if simd else []
    if _dense.THREADING != "OpenMP":
        parts.append("no OpenMP: " + _dense.THREADING)
    return f" [{', '.join(parts)}]" if parts else ""


def build_copy(root: str, dest: str, **env: str) -> subprocess.CompletedProcess:
    """Copy the source tree at ``root`` (a checkout) to ``dest`` and build its extensions there in place
    with ``env`` added to the environment (TURBOMETRICS_OPENMP=0; CXXFLAGS/LDFLAGS for a sanitizer build,
    which setup.py's own flags follow); ``dest/src`` is then importable. Needs Cython."""
    import shutil

    os.makedirs(dest, exist_ok=True)
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy(os.path.join(root, name), dest)
    shutil.copytree(
        os.path.join(root, "src"),
        os.path.join(dest, "src"),
        ignore=shutil.ignore_patterns("*.so", "*.cpp", "__pycache__"),
    )
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=dest,
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
        timeout=1200,
    )


def build_without_openmp(root: str, dest: str) -> subprocess.CompletedProcess:
    """``build_copy`` with TURBOMETRICS_OPENMP=0 (the std::thread pool, as on a Mac): the no-OpenMP
    benchmark run and its test."""
    return build_copy(root, dest, TURBOMETRICS_OPENMP="0")


def _torch():
    import torch

    torch.set_num_threads(_validate.default_threads())  # the same thread count as our kernels
    return torch


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


def _read(d):
    """A plain multi-threaded read of the whole array (torch.sum; numpy's sum is single-threaded).

    16-bit arrays are read as float32 words (pairs of 16-bit values): torch's float16/bfloat16 and int16
    sums convert element by element and run far below memory speed.
    """
    if "xt" in d:
        xt = d["xt"]
        if xt.element_size() == 2 and xt.is_contiguous() and xt.numel() % 2 == 0:
            xt = xt.view(_torch().float32)
        return float(xt.sum())
    return float(d["x"].sum())


def _read_impl() -> Impl:
    return Impl(_read, "read", note="torch.sum, all threads" if have("torch") else "numpy sum, 1 thread")


def _have_16bit() -> bool:
    return have("ml_dtypes") or have("torch")


def _slow_subset(rows: int, fn: Callable[[dict, int], Any], total: int) -> Impl:
    return Impl(lambda d: fn(d, rows), "slow", total / rows, f"{rows} rows, scaled x{total / rows:g}")


_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def perplexity_case(n: int, v: int, dtype: str = "float32") -> Case:
    c = Case(
        f"perplexity {_SHORT[dtype]} ({n}, {v}), 10% padding{build_variant(True)}",
        lambda: _lm_data(n, v, dtype=dtype),
        bytes_read=lambda d: n * v * (4 if dtype == "float32" else 2),
        groups=("simd", "threads") if dtype == "float32" else ("simd",),
    )
    c.impls["turbometrics"] = Impl(lambda d: tm.perplexity(d["x"], d["t"], ignore_index=-100), "ours")
    if have("torch"):

        def ce(d):
            F = _torch().nn.functional
            return float(F.cross_entropy(d["xt"], d["tt"], ignore_index=-100).exp())

        c.impls["torch cross_entropy"] = Impl(ce, "torch", note="in bfloat16/float16" if dtype != "float32" else "")
    if dtype != "float32":
        c.impls["read"] = _read_impl()
        return c
    if have("torchmetrics") and n * v <= 64 * 2**20:  # it materialises a softmax and a log of it

        def tmx(d):
            from torchmetrics.functional.text import perplexity

            return float(perplexity(d["xt"][None], d["tt"][None], ignore_index=-100))

        c.impls["torchmetrics"] = Impl(tmx, "oracle")
    c.impls["slow"] = _slow_subset(
        4, lambda d, r: slow.perplexity(d["x"][:r].tolist(), d["t"][:r].tolist(), ignore_index=-100), n
    )
    c.impls["read"] = _read_impl()
    return c


def _acc_data(n, c, k=5):
    d = _lm_data(n, c, pad=0.0)
    d["k"] = k
    return d


def topk_accuracy_case(n: int, c: int, with_sklearn: bool = True) -> Case:
    case = Case(
        f"topk_accuracy k=5 f32 ({n}, {c}){build_variant(True)}",
        lambda: _acc_data(n, c),
        bytes_read=lambda d: d["x"].nbytes,
        groups=("simd",),
    )
    case.impls["turbometrics"] = Impl(lambda d: tm.topk_accuracy(d["x"], d["t"], k=d["k"]), "ours")
    if with_sklearn and have("sklearn"):

        def sk(d):
            from sklearn.metrics import top_k_accuracy_score

            return top_k_accuracy_score(d["t"], d["x"], k=d["k"], labels=np.arange(c))

        case.impls["sklearn"] = Impl(sk, "oracle")
    if have("torch"):

        def tt(d):
            idx = _torch().topk(d["xt"], d["k"]).indices
            return float((idx == d["tt"][:, None]).any(1).double().mean())

        case.impls["torch.topk accuracy"] = Impl(tt, "torch")
    case.impls["slow"] = _slow_subset(
        min(n, 16), lambda d, r: slow.topk_accuracy(d["x"][:r].tolist(), d["t"][:r].tolist(), k=d["k"]), n
    )
    case.impls["read"] = _read_impl()
    return case


def topk_case(n: int, v: int, k: int = 50) -> Case:
    case = Case(
        f"topk k={k} f32 ({n}, {v}){build_variant(True)}",
        lambda: _lm_data(n, v, pad=0.0),
        bytes_read=lambda d: d["x"].nbytes,
        groups=("simd",),
    )
    case.impls["turbometrics"] = Impl(lambda d: tm.topk(d["x"], k), "ours")
    if have("torch"):
        case.impls["torch.topk"] = Impl(lambda d: _torch().topk(d["xt"], k), "oracle")

    def argpartition(d):
        x = d["x"]
        part = np.argpartition(-x, k - 1, axis=1)[:, :k]
        vals = np.take_along_axis(x, part, 1)
        order = np.argsort(-vals, axis=1, kind="stable")
        return np.take_along_axis(vals, order, 1), np.take_along_axis(part, order, 1)

    case.impls["np.argpartition + sort"] = Impl(argpartition, "baseline")
    case.impls["slow"] = _slow_subset(4, lambda d, r: slow.topk(d["x"][:r].tolist(), k), n)
    case.impls["read"] = _read_impl()
    return case


# ---------------------------------------------------------------- text


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


def corpus_bleu_case(n: int, data_dir: str | None = None) -> Case:
    if data_dir:
        c = Case(f"corpus_bleu 13a, 1 ref, WMT17 tiled to {n:,} segments", lambda: wmt17_tiled(data_dir, n))
    else:
        c = Case(
            f"corpus_bleu 13a, 1 ref, {n:,} segments{build_variant(False)}", lambda: _text_data(n), groups=("threads",)
        )
    c.impls["turbometrics"] = Impl(lambda d: tm.corpus_bleu(d["hyps"], [d["refs"]]).score, "ours")
    if have("sacrebleu"):

        def sb(d):
            import sacrebleu

            return sacrebleu.corpus_bleu(d["hyps"], [d["refs"]]).score

        c.impls["sacrebleu"] = Impl(sb, "oracle")
    rows = min(n, 2000)
    c.impls["slow"] = _slow_subset(rows, lambda d, r: slow.corpus_bleu(d["hyps"][:r], [d["refs"][:r]]).score, n)
    return c


def corpus_ter_case(n: int, data_dir: str | None = None) -> Case:
    """Corpus TER (sacrebleu's default options): the WMT17 system as it is, or n generated segments."""
    if data_dir:
        c = Case(f"corpus_ter, 1 ref, WMT17 ({n:,} segments)", lambda: wmt17_tiled(data_dir, n))
    else:
        c = Case(f"corpus_ter, 1 ref, {n:,} segments", lambda: _text_data(n))
    c.impls["turbometrics"] = Impl(lambda d: tm.corpus_ter(d["hyps"], [d["refs"]]).score, "ours")
    if have("sacrebleu"):

        def sb(d):
            import sacrebleu

            return sacrebleu.corpus_ter(d["hyps"], [d["refs"]]).score

        c.impls["sacrebleu"] = Impl(sb, "oracle")
    rows = min(n, 200)
    c.impls["slow"] = _slow_subset(rows, lambda d, r: slow.corpus_ter(d["hyps"][:r], [d["refs"][:r]]), n)
    return c


def segment_bleu_case(n: int) -> Case:
    c = Case(f"segment_bleu 13a, 1 ref, {n:,} segments", lambda: _text_data(n))
    c.impls["turbometrics"] = Impl(lambda d: tm.segment_bleu(d["hyps"], [d["refs"]]), "ours")
    if have("sacrebleu"):

        def sb(d):
            from sacrebleu.metrics import BLEU

            m = BLEU(effective_order=True)
            return [m.sentence_score(h, [r]).score for h, r in zip(d["hyps"], d["refs"])]

        c.impls["sacrebleu sentence_score loop"] = Impl(sb, "oracle")
    rows = min(n, 2000)
    c.impls["slow"] = _slow_subset(rows, lambda d, r: slow.segment_bleu(d["hyps"][:r], [d["refs"][:r]]), n)
    return c


def corpus_chrf_case(n: int, word_order: int = 0, data_dir: str | None = None) -> Case:
    name = "chrF++" if word_order else "chrF"
    if data_dir:
        c = Case(f"corpus {name}, 1 ref, WMT17 tiled to {n:,} segments", lambda: wmt17_tiled(data_dir, n))
    else:
        c = Case(f"corpus {name}, 1 ref, {n:,} segments", lambda: _text_data(n))
    c.impls["turbometrics"] = Impl(
        lambda d: tm.corpus_chrf(d["hyps"], [d["refs"]], word_order=word_order).score, "ours"
    )
    if have("sacrebleu"):

        def sb(d):
            from sacrebleu.metrics import CHRF

            return CHRF(word_order=word_order).corpus_score(d["hyps"], [d["refs"]]).score

        c.impls["sacrebleu"] = Impl(sb, "oracle")
    rows = min(n, 1000)
    c.impls["slow"] = _slow_subset(
        rows, lambda d, r: slow.corpus_chrf(d["hyps"][:r], [d["refs"][:r]], word_order=word_order), n
    )
    return c


def rouge_case(n: int) -> Case:
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    c = Case(f"rouge 1/2/L/Lsum + stemmer, {n:,} pairs", lambda: _text_data(n))
    c.impls["turbometrics"] = Impl(lambda d: tm.rouge(d["hyps"], d["refs"], types, use_stemmer=True), "ours")
    if have("rouge_score"):

        def rs(d):
            from rouge_score import rouge_scorer

            scorer = rouge_scorer.RougeScorer(types, use_stemmer=True)
            return [scorer.score(r, h) for h, r in zip(d["hyps"], d["refs"])]

        c.impls["rouge_score"] = Impl(rs, "oracle")
    if have("nltk"):  # the slow twin stems with nltk's Porter, as rouge-score does
        rows = min(n, 500)
        c.impls["slow"] = _slow_subset(
            rows, lambda d, r: slow.rouge(d["hyps"][:r], d["refs"][:r], types, use_stemmer=True), n
        )
    return c


def _multi_sentence_data(n: int) -> dict:
    """n pairs of three-sentence texts (three generated segments each, abbreviations such as "e.g." inside)."""
    hyps, refs = zipf_corpus(3 * n)
    return {
        "hyps": [" ".join(hyps[3 * i : 3 * i + 3]) for i in range(n)],
        "refs": [" ".join(refs[3 * i : 3 * i + 3]) for i in range(n)],
    }


def _nltk_punkt(data_dir: str | None) -> bool:
    """Whether nltk.sent_tokenize (rouge-score's splitter) finds its English model, offline."""
    if not have("nltk"):
        return False
    import nltk

    if data_dir and os.path.join(data_dir, "nltk_data") not in nltk.data.path:
        nltk.data.path.insert(0, os.path.join(data_dir, "nltk_data"))
    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        return True
    except LookupError:
        return False


def rouge_lsum_split_case(n: int, data_dir: str | None = None) -> Case:
    """ROUGE with split_summaries=True (Punkt sentences for Lsum) on multi-sentence pairs; rouge-score
    (nltk.sent_tokenize per text) on 2,000 of them, scaled. No pure-Python twin: slow/ has no Punkt."""
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    c = Case(
        f"rouge 1/2/L/Lsum + stemmer, split_summaries, {n:,} three-sentence pairs", lambda: _multi_sentence_data(n)
    )
    c.impls["turbometrics"] = Impl(
        lambda d: tm.rouge(d["hyps"], d["refs"], types, use_stemmer=True, split_summaries=True), "ours"
    )
    c.impls["turbometrics, Lsum on line breaks"] = Impl(
        lambda d: tm.rouge(d["hyps"], d["refs"], types, use_stemmer=True), "variant"
    )
    if have("rouge_score") and _nltk_punkt(data_dir):
        rows = min(n, 2000)

        def rs(d):
            from rouge_score import rouge_scorer

            scorer = rouge_scorer.RougeScorer(types, use_stemmer=True, split_summaries=True)
            return [scorer.score(r, h) for h, r in zip(d["hyps"][:rows], d["refs"][:rows])]

        c.impls["rouge_score"] = Impl(rs, "oracle", n / rows, f"{rows} pairs, scaled x{n / rows:g}")
    return c


def bootstrap_case(n: int, n_resamples: int = 1000) -> Case:
    """Corpus BLEU with a 95% bootstrap interval, statistics extraction included (as sacrebleu's)."""
    c = Case(f"corpus_bleu + bootstrap CI, {n_resamples} resamples, {n:,} segments", lambda: _text_data(n))

    def ours(mode):
        return lambda d: tm.bootstrap_ci(tm.metrics.BLEU().update(d["hyps"], [d["refs"]]), n_resamples, mode=mode)

    c.impls["turbometrics"] = Impl(ours("default"), "ours")
    c.impls["turbometrics, sacrebleu mode"] = Impl(ours("sacrebleu"), "variant", note="sacrebleu's exact numbers")
    if have("sacrebleu"):

        def sb(d):
            from sacrebleu.metrics import BLEU

            return BLEU().corpus_score(d["hyps"], [d["refs"]], n_bootstrap=n_resamples)

        c.impls["sacrebleu"] = Impl(sb, "oracle")
    return c


def _bleu_statistics(n: int) -> dict:
    """A BLEU accumulator holding n segments' statistics drawn at random (no text to tokenize)."""
    rng = np.random.default_rng(0)
    hyp_len = rng.integers(1, 60, n)
    st = np.zeros((n, 10), np.int64)
    st[:, 0], st[:, 1] = hyp_len, np.maximum(1, hyp_len + rng.integers(-4, 5, n))
    for o in range(4):
        st[:, 6 + o] = np.maximum(hyp_len - o, 0)
        st[:, 2 + o] = rng.binomial(st[:, 6 + o], 0.6 / (o + 1))
    acc = tm.metrics.BLEU()
    acc._fold((st, 1))  # the state an update would leave (statistics rows, nrefs)
    return {"acc": acc}


def bootstrap_scale_case(n: int, n_resamples: int = 1000) -> Case:
    c = Case(f"bootstrap_ci BLEU, {n_resamples} resamples of {n:,} segments' statistics", lambda: _bleu_statistics(n))
    c.impls["turbometrics"] = Impl(
        lambda d: tm.bootstrap_ci(d["acc"], n_resamples),
        "ours",
        note="sacrebleu's method would hold n_resamples x n x 10 float32 at once",
    )
    return c


def _causal_lm(vocab: int, dim: int = 64, max_len: int = 1024):
    """A small causal, position-dependent torch LM (running mean of embeddings, then a vocab projection)."""
    torch = _torch()

    class LM(torch.nn.Module):
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


_CALLS = 1000  # calls per timed run of a per-call case (one call is too short to time alone)


def _per_call(fn: Callable[[dict], Any]) -> Callable[[dict], Any]:
    def loop(d):
        for _ in range(_CALLS):
            fn(d)

    return loop


def per_call_topk_accuracy_case() -> Case:
    """The Python layer's cost: top-k accuracy of a small batch, one call at a time."""
    c = Case("per call: topk_accuracy k=5 (64, 1000)", lambda: _acc_data(64, 1000))
    c.impls["turbometrics"] = Impl(
        _per_call(lambda d: tm.topk_accuracy(d["x"], d["t"], k=5, num_threads=1)), "ours", 1 / _CALLS
    )
    if have("sklearn"):

        def sk(d):
            from sklearn.metrics import top_k_accuracy_score

            return top_k_accuracy_score(d["t"], d["x"], k=5, labels=np.arange(1000))

        c.impls["sklearn"] = Impl(_per_call(sk), "oracle", 1 / _CALLS)
    if have("torch"):
        c.impls["torch.topk accuracy"] = Impl(
            _per_call(lambda d: float((_torch().topk(d["xt"], 5).indices == d["tt"][:, None]).any(1).double().mean())),
            "torch",
            1 / _CALLS,
        )
    return c


def per_call_sentence_bleu_case() -> Case:
    """The Python layer's cost: BLEU of one segment pair, one call at a time."""
    pair = {
        "h": "The quick brown fox jumps over the lazy dog near the river bank .",
        "r": ["A quick brown fox jumped over a lazy dog by the river bank ."],
    }
    c = Case("per call: sentence_bleu, one pair", lambda: pair)
    c.impls["turbometrics"] = Impl(_per_call(lambda d: tm.sentence_bleu(d["h"], d["r"])), "ours", 1 / _CALLS)
    if have("sacrebleu"):

        def sb(d):
            import sacrebleu

            return sacrebleu.sentence_bleu(d["h"], d["r"])

        c.impls["sacrebleu"] = Impl(_per_call(sb), "oracle", 1 / _CALLS)
    c.impls["slow"] = Impl(_per_call(lambda d: slow.sentence_bleu(d["h"], d["r"])), "slow", 1 / _CALLS)
    return c


def _two_systems(n: int, data_dir: str | None) -> dict:
    """n segments of two WMT17 systems (or, without the data, two generated corpora)."""
    if not data_dir:
        a, b = zipf_corpus(n, seed=1)
        return {"a": a, "b": b}
    return {
        "a": wmt17_tiled(data_dir, n)["hyps"],
        "b": _lines(os.path.join(data_dir, "wmt17-en-de", "KIT.4950.hyp.de"), n),
    }


def _lines(path: str, n: int) -> list[str]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    return (lines * -(-n // len(lines)))[:n]


def _cell_loop(score: Callable[[str, str], Any], cells: int, n: int, role: str) -> Impl:
    """A Python loop of one call per cell over `cells` cells, scaled to the n x n matrix."""

    def loop(d):
        a, b = d["a"], d["b"]
        for i in range(cells):
            score(a[i % n], b[(7 * i) % n])

    return Impl(loop, role, n * n / cells, f"{cells:,} cells, scaled x{n * n / cells:g}")


def pairwise_case(metric: str, n: int, data_dir: str | None = None) -> Case:
    """An n x n score matrix (MBR, self-BLEU) against one call per cell."""
    c = Case(f"pairwise {metric}, {n:,} x {n:,} WMT17 segments", lambda: _two_systems(n, data_dir))
    cells = 200 if metric == "TER" else 2000
    if metric == "ROUGE-L":
        c.impls["turbometrics"] = Impl(lambda d: tm.pairwise_rouge(d["a"], d["b"], "rougeL", use_stemmer=True), "ours")
        c.impls["tm.rouge per cell"] = _cell_loop(
            lambda h, r: tm.rouge([h], [r], ["rougeL"], use_stemmer=True, num_threads=1), cells, n, "variant"
        )
        if have("rouge_score"):
            from rouge_score import rouge_scorer

            scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
            c.impls["rouge_score loop"] = _cell_loop(lambda h, r: scorer.score(r, h), cells, n, "oracle")
        return c
    ours = {"BLEU": tm.pairwise_bleu, "chrF": tm.pairwise_chrf, "TER": tm.pairwise_ter}[metric]
    one = {"BLEU": tm.sentence_bleu, "chrF": tm.sentence_chrf, "TER": tm.sentence_ter}[metric]
    c.impls["turbometrics"] = Impl(lambda d: ours(d["a"], d["b"]), "ours")
    c.impls[f"tm.sentence_{metric.lower()} loop"] = _cell_loop(lambda h, r: one(h, [r]), cells, n, "variant")
    if have("sacrebleu"):
        import sacrebleu

        o = {"BLEU": lambda: sacrebleu.BLEU(effective_order=True), "chrF": sacrebleu.CHRF, "TER": sacrebleu.TER}[
            metric
        ]()
        c.impls["sacrebleu loop"] = _cell_loop(lambda h, r: o.sentence_score(h, [r]), cells, n, "oracle")
    twin = {"BLEU": slow.sentence_bleu, "chrF": slow.sentence_chrf, "TER": slow.sentence_ter}[metric]
    c.impls["slow"] = _cell_loop(lambda h, r: twin(h, [r]), cells // 10, n, "slow")
    return c


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


def cases(quick: bool, data_dir: str | None = None) -> list[Case]:
    """The benchmark cases; with ``data_dir`` (the shared test data) also the WMT17 data tiled."""
    size = 5000 if quick else 200_000  # issue 28's size: 100x sacrebleu on 200,000 WMT17 segments
    real = [corpus_bleu_case(size, data_dir), corpus_chrf_case(size, data_dir=data_dir)] if data_dir else []
    if data_dir and not quick:  # sacrebleu's TER takes about 10 s on one WMT17 system
        real.append(corpus_ter_case(3004, data_dir))
    if have("punkt"):  # the lsum extra
        real.append(rouge_lsum_split_case(500 if quick else 20000, data_dir))
    pairs = [pairwise_case(m, 300 if quick else 1000, data_dir) for m in ("BLEU", "chrF", "ROUGE-L")]
    pairs.append(pairwise_case("TER", 100 if quick else 200, data_dir))
    pairs.append(token_bleu_case(64 if quick else 256))
    return _generated_cases(quick) + real + pairs


def _generated_cases(quick: bool) -> list[Case]:
    half = (
        [perplexity_case(512 if quick else 4096, 32000 if quick else 128256, dt) for dt in ("bfloat16", "float16")]
        if _have_16bit()
        else []
    )
    if quick:
        return [
            perplexity_case(512, 32000),
            *half,
            topk_accuracy_case(20000, 1000),
            topk_accuracy_case(512, 32000, with_sklearn=False),
            topk_case(512, 32000),
            corpus_bleu_case(5000),
            segment_bleu_case(5000),
            corpus_chrf_case(5000),
            corpus_chrf_case(5000, word_order=2),
            rouge_case(2000),
            bootstrap_case(3000),
            bootstrap_scale_case(100_000),
            per_call_topk_accuracy_case(),
            per_call_sentence_bleu_case(),
        ]
    return [
        perplexity_case(4096, 128256),
        *half,
        topk_accuracy_case(100000, 1000),
        topk_accuracy_case(4096, 128256, with_sklearn=False),
        topk_case(4096, 128256),
        corpus_bleu_case(100000),
        segment_bleu_case(100000),
        corpus_chrf_case(100000),
        corpus_chrf_case(100000, word_order=2),
        rouge_case(20000),
        bootstrap_case(100000),
        bootstrap_scale_case(1_000_000),
        per_call_topk_accuracy_case(),
        per_call_sentence_bleu_case(),
        corpus_ter_case(100000),
    ]


def best_time(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm-up: JIT, caches, page faults
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


# ---------------------------------------------------------------- memory and first-call cost


def _rss_mib(field: str = "VmHWM") -> float:
    """Peak (VmHWM) or current (VmRSS) resident memory of this process, from /proc (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> None:
    """Make VmHWM restart from the current RSS, so setup's temporaries do not mask the peak.

    Freed heap memory is handed back to the OS first (glibc malloc_trim): pages
    left resident by the setup would otherwise be reused unseen.
    """
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc: the figure may then undercount
        pass
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def measure_in_subprocess(case_fn: str, args: tuple, impl: str) -> dict[str, float]:
    """Seconds and the peak resident memory (MiB) an implementation adds on top of its input.

    Runs in a fresh process so that nothing else's allocations count; the
    input is built first, then the peak is reset and the implementation runs once.
    """
    code = (
        f"import json, time, turbometrics._bench as b\n"
        f"c = b.{case_fn}(*{args!r}); d = c.setup(); f = c.impls[{impl!r}].fn\n"
        f"b._reset_peak_rss(); before = b._rss_mib('VmRSS'); t0 = time.perf_counter(); f(d)\n"
        f"t = time.perf_counter() - t0\n"
        f"print(json.dumps({{'seconds': t, 'extra_mib': b._rss_mib('VmHWM') - before}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def extra_memory_mib(case_fn: str, args: tuple, impl: str) -> float:
    """Peak resident memory an implementation adds on top of its input, measured in a fresh process."""
    return measure_in_subprocess(case_fn, args, impl)["extra_mib"]


def long_pair_case(metric: str, tokens: int, vocab: int = 50000) -> Case:
    """One hypothesis/reference pair of ``tokens`` Zipf-distributed words each (the reference a
    rotation of the hypothesis for TER, so shifts abound): chrF, chrF++, ROUGE-L or TER on it. The
    oracles need hours on these, so only turbometrics runs (time and peak memory in a fresh process)."""

    def setup() -> dict:
        rng = np.random.default_rng(0)
        letters = list("abcdefghijklmnopqrstuvwxyz")
        words = np.array(["".join(rng.choice(letters, rng.integers(2, 9))) for _ in range(vocab)])
        hyp, ref = (" ".join(words[(rng.zipf(1.2, tokens) - 1) % vocab]) for _ in range(2))
        if metric == "TER":
            split = hyp.split()
            ref = " ".join(split[len(split) // 2 :] + split[: len(split) // 2])
        return {"hyp": hyp, "ref": ref}

    run = {
        "chrF": lambda d: tm.corpus_chrf([d["hyp"]], [[d["ref"]]], num_threads=1).score,
        "chrF++": lambda d: tm.corpus_chrf([d["hyp"]], [[d["ref"]]], word_order=2, num_threads=1).score,
        "ROUGE-L": lambda d: tm.rouge([d["hyp"]], [d["ref"]], rouge_types=["rougeL"], num_threads=1),
        "TER": lambda d: tm.corpus_ter([d["hyp"]], [[d["ref"]]], num_threads=1).score,
    }[metric]
    c = Case(f"{metric}, one pair of {tokens:,} words a side ({vocab:,}-word vocabulary)", setup)
    c.impls["turbometrics"] = Impl(run, "ours")
    return c


LONG_PAIRS = [("chrF", (1_700_000,)), ("chrF++", (1_700_000,)), ("ROUGE-L", (300_000,)), ("TER", (33_000, 50))]

# The 1,000,000-pair run: (case function, args, implementation) measured for time and memory.
SCALE = [
    ("corpus_bleu_case", (1_000_000,), "turbometrics"),
    ("corpus_bleu_case", (1_000_000,), "sacrebleu"),
    ("segment_bleu_case", (1_000_000,), "turbometrics"),
    ("corpus_chrf_case", (1_000_000,), "turbometrics"),
    ("corpus_chrf_case", (1_000_000, 2), "turbometrics"),
    ("rouge_case", (1_000_000,), "turbometrics"),
    ("corpus_ter_case", (1_000_000,), "turbometrics"),
]


_FIRST_CALL = """
import time, json, numpy as np
t0 = time.perf_counter()
import turbometrics as tm
t1 = time.perf_counter()
rng = np.random.default_rng(0)
x = rng.standard_normal((64, 1000)).astype({dtype!r}); t = rng.integers(0, 1000, 64)
t2 = time.perf_counter(); {call}; t3 = time.perf_counter(); {call}; t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first": t3 - t2, "second": t4 - t3}}))
"""

# Public calls whose first call in a process once paid Numba's JIT or cache load (the rank count and the
# resampling sums, both C++ now): label -> (dtype of x, the call).
FIRST_CALLS = {
    "topk_accuracy (64, 1000) float32": ("float32", "tm.topk_accuracy(x, t, k=5)"),
    "topk_accuracy (64, 1000) float16": ("float16", "tm.topk_accuracy(x, t, k=5)"),
    "bootstrap_ci of TopKAccuracy, 64 rows": (
        "float32",
        "tm.bootstrap_ci(tm.metrics.TopKAccuracy(5).update(x, t), 100)",
    ),
}


def first_call() -> dict[str, dict[str, float]]:
    """Seconds of each call in ``FIRST_CALLS`` made first in a fresh process (after ``import turbometrics``:
    the call loads its modules) and of the same call made again."""
    res = {}
    for label, (dtype, call) in FIRST_CALLS.items():
        out = subprocess.run(
            [sys.executable, "-c", _FIRST_CALL.format(dtype=dtype, call=call)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        res[label] = {"first": r["first"], "second": r["second"]}
    return res


# ---------------------------------------------------------------- the `turbometrics bench` report


def format_seconds(t: float) -> str:
    """A duration in us, ms or s, three significant digits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale or unit == "us":
            v = t / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    raise AssertionError  # (unreachable)


def _ratio(ours: float, t: float, role: str) -> str:
    """The last column: how turbometrics compares with this row."""
    if role == "read":
        return f"turbometrics takes {ours / t:.2f}x the read"
    if t >= ours:
        return f"turbometrics {t / ours:,.1f}x faster"
    return f"turbometrics {ours / t:.2f}x slower"


def run(all_cases: list[Case], quick: bool = True, repeat: int = 3, out=sys.stdout) -> list[dict]:
    """Time every case and print each implementation's time, and how much faster ours is than it.

    Returns one dict a row (case, impl, role, seconds, ours_seconds, speedup: the row's time over ours)."""
    rows = []
    print(
        f"turbometrics {tm.__version__} bench ({'quick' if quick else 'full'} sizes, "
        f"{_validate.default_threads()} threads, best of {repeat})",
        file=out,
    )
    print(
        "Each row: an implementation's time; the last column says how many times faster (or slower) "
        "turbometrics is than that row; a 'read' row is the time to read the same bytes once.",
        file=out,
    )
    for case in all_cases:
        d = case.setup()
        print(f"\n{case.name}", file=out)
        times = {}
        for name, impl in case.impls.items():
            times[name] = best_time(functools.partial(impl.fn, d), 1 if impl.role == "slow" else repeat) * impl.scale
        ours_name = next(name for name, impl in case.impls.items() if impl.role == "ours")
        ours = times[ours_name]
        for name, impl in case.impls.items():
            t = times[name]
            extra = "(turbometrics)" if name == ours_name else _ratio(ours, t, impl.role)
            if case.bytes_read and impl.role in ("ours", "read"):
                extra += f"   {case.bytes_read(d) / t / 1e9:.1f} GB/s"
            note = f"  ({impl.note})" if impl.note else ""
            print(f"  {name:<30}{format_seconds(t):>10}   {extra}{note}", file=out)
            rows.append(
                {
                    "case": case.name,
                    "impl": name,
                    "role": impl.role,
                    "seconds": t,
                    "ours_seconds": ours,
                    "speedup": t / ours,
                }
            )
        del d
    return rows


def write_json(path: str, rows: list[dict], quick: bool, repeat: int) -> None:
    """The rows of ``run`` and the machine they ran on (``show_config``'s fields), as JSON at ``path``."""
    from .config import config

    doc = {
        "turbometrics": tm.__version__,
        "sizes": "quick" if quick else "full",
        "repeat": repeat,
        "threads": _validate.default_threads(),
        "config": config(),
        "rows": rows,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")


if __name__ == "__main__":
    run(cases("--full" not in sys.argv), quick="--full" not in sys.argv)
