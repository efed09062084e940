"""Dense cases: perplexity, top-k accuracy and top-k on logits (the SIMD and threading kernels)."""

from __future__ import annotations

import numpy as np

import turbometrics as tm
from turbometrics import slow

from .case import Case, Impl, _read_impl, _slow_subset, _torch, build_variant, have
from .data import _lm_data

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
