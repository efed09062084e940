"""Text cases: corpus and segment BLEU, chrF, TER and ROUGE, bootstrap intervals, and one long pair."""

from __future__ import annotations

import os

import numpy as np

import turbometrics as tm
from turbometrics import slow

from .case import Case, Impl, _slow_subset, build_variant, have
from .data import _text_data, wmt17_tiled, zipf_corpus


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
