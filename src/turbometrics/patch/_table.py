"""What ``tm.patch()`` rebinds: one row per entry point, the only place the patched libraries are named.

Each row names the library (with the versions the patch was written and tested for), the module whose
import applies it, the object and attribute in that module, how it is rebound, the fast path that runs in
its place and the condition under which it applies. The fast paths live in the per-library modules
(``_sacrebleu``, ...) and are named here, not imported, so that ``import turbometrics.patch`` stays light.

How an entry point is rebound:

- ``REBIND``: a new class attribute with the original's parameters (a subclass that overrides the method
  keeps its own; deleting ours on ``unpatch`` lets an inherited one show through again).
- ``SWAP_CODE``: the function's code object is swapped (under any decorators), so every reference to the
  function, and objects made before the patch, are covered.
"""

from __future__ import annotations

from typing import NamedTuple

REBIND = "rebind"
SWAP_CODE = "swap code"


class Library(NamedTuple):
    """A patched library: ``name`` as imported and as ``patch()`` takes it, its distribution, and the
    versions the patch was written for (``"2.x"``: that major version; ``"==0.1.2"``; ``">=1.3"``: at least
    that, comparing as many numeric fields as the bound has)."""

    name: str
    distribution: str
    versions: str


class EntryPoint(NamedTuple):
    """One rebound attribute. ``fast``: ``"<per-library module>.<function>"``, called as
    ``fast(site, *args, **kwargs)`` with the original's arguments (``site``: ``_apply.Site``); it raises
    ``Fallback`` to run the original. ``when``: ``"<module>.<function>"`` taking the function about to be
    patched and returning why not to (the entry point is then left unpatched, with a warning), or None."""

    library: Library
    module: str  # applied when this module is (or has been) imported
    attribute: str  # "Class.method" or "function", in ``module``
    how: str  # REBIND or SWAP_CODE
    fast: str
    label: str  # the entry point's name in logs, ``calls()`` and strict-mode errors
    when: str | None = None


SACREBLEU = Library("sacrebleu", "sacrebleu", "2.x")
ROUGE_SCORE = Library("rouge_score", "rouge-score", "==0.1.2")
SKLEARN = Library("sklearn", "scikit-learn", ">=1.3")
TORCHMETRICS = Library("torchmetrics", "torchmetrics", ">=1")
LM_EVAL = Library("lm_eval", "lm-eval", "==0.4.13")
MBRS = Library("mbrs", "mbrs", "==0.1.8")


def _sacrebleu_metric(module: str, cls: str) -> tuple[EntryPoint, ...]:
    # every sacrebleu score is made from these statistics: corpus, sentence, bootstrap, paired tests, the CLI
    return (
        EntryPoint(
            SACREBLEU,
            module,
            f"{cls}._extract_corpus_statistics",
            REBIND,
            fast="_sacrebleu.statistics",
            label=f"sacrebleu.{cls} statistics",
        ),
        EntryPoint(
            SACREBLEU,
            module,
            f"{cls}._cache_references",
            REBIND,
            fast="_sacrebleu.reference_cache",
            label=f"sacrebleu.{cls} reference cache",
        ),
    )


def _mbrs_metric(module: str, cls: str) -> tuple[EntryPoint, ...]:
    # mbrs runs pairwise_scores (which the decoders' expected_scores call) and scores as a process pool of
    # sacrebleu sentence scores (chrF with fastchrf=True: the fastchrf package, left to it); corpus_score is
    # sacrebleu's corpus score
    return tuple(
        EntryPoint(MBRS, module, f"{cls}.{method}", REBIND, fast=f"_mbrs.{method}", label=f"mbrs.{cls}.{method}")
        for method in ("pairwise_scores", "scores", "corpus_score")
    )


ENTRY_POINTS: tuple[EntryPoint, ...] = (
    *_sacrebleu_metric("sacrebleu.metrics.bleu", "BLEU"),
    *_sacrebleu_metric("sacrebleu.metrics.chrf", "CHRF"),
    *_sacrebleu_metric("sacrebleu.metrics.ter", "TER"),
    # score_multi calls score
    EntryPoint(
        ROUGE_SCORE,
        "rouge_score.rouge_scorer",
        "RougeScorer.score",
        REBIND,
        fast="_rouge_score.score",
        label="rouge_score.RougeScorer.score",
    ),
    EntryPoint(
        ROUGE_SCORE,
        "rouge_score.scoring",
        "BootstrapAggregator._bootstrap_resample",
        REBIND,
        fast="_rouge_score.bootstrap_resample",
        label="rouge_score.BootstrapAggregator resampling",
    ),
    EntryPoint(
        ROUGE_SCORE,
        "rouge_score.scoring",
        "BootstrapAggregator.aggregate",
        REBIND,
        fast="_rouge_score.aggregate",
        label="rouge_score.BootstrapAggregator.aggregate",
    ),
    # scikit-learn's validate_params wrapper still runs first
    EntryPoint(
        SKLEARN,
        "sklearn.metrics._ranking",
        "top_k_accuracy_score",
        SWAP_CODE,
        fast="_sklearn.top_k_accuracy_score",
        label="sklearn.metrics.top_k_accuracy_score",
        when="_sklearn.unknown_parameters",
    ),
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.perplexity",
        "perplexity",
        SWAP_CODE,
        fast="_torchmetrics.perplexity",
        label="torchmetrics.functional.text.perplexity",
    ),
    # forward, reset, merge_state and sync work on the states update leaves
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.text.perplexity",
        "Perplexity.update",
        SWAP_CODE,
        fast="_torchmetrics.update",
        label="torchmetrics.text.Perplexity.update",
    ),
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.text.perplexity",
        "Perplexity.compute",
        SWAP_CODE,
        fast="_torchmetrics.compute",
        label="torchmetrics.text.Perplexity.compute",
    ),
    # (Metric.reset, inherited: rebound on Perplexity alone) the fresh states remembered, so no read back
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.text.perplexity",
        "Perplexity.reset",
        REBIND,
        fast="_torchmetrics.reset",
        label="torchmetrics.text.Perplexity.reset",
    ),
    # BLEUScore, SacreBLEUScore and their functions gather their statistics here (compute, sync: unchanged)
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.bleu",
        "_bleu_score_update",
        SWAP_CODE,
        fast="_torchmetrics_text.bleu_update",
        label="torchmetrics BLEU statistics",
        when="_torchmetrics_text.bleu_parameters",
    ),
    # CHRFScore and chrf_score
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.chrf",
        "_chrf_score_update",
        SWAP_CODE,
        fast="_torchmetrics_text.chrf_update",
        label="torchmetrics chrF statistics",
        when="_torchmetrics_text.chrf_parameters",
    ),
    # TranslationEditRate and translation_edit_rate
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.ter",
        "_ter_update",
        SWAP_CODE,
        fast="_torchmetrics_text.ter_update",
        label="torchmetrics TER statistics",
        when="_torchmetrics_text.ter_parameters",
    ),
    # ROUGEScore and rouge_score
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.rouge",
        "_rouge_score_update",
        SWAP_CODE,
        fast="_torchmetrics_text.rouge_update",
        label="torchmetrics ROUGE scores",
        when="_torchmetrics_text.rouge_parameters",
    ),
    # WordErrorRate, CharErrorRate, MatchErrorRate, WordInfoLost, WordInfoPreserved, EditDistance and their functions
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.wer",
        "_wer_update",
        SWAP_CODE,
        fast="_torchmetrics_edit.wer_update",
        label="torchmetrics WER statistics",
        when="_torchmetrics_edit.rate_parameters",
    ),
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.cer",
        "_cer_update",
        SWAP_CODE,
        fast="_torchmetrics_edit.cer_update",
        label="torchmetrics CER statistics",
        when="_torchmetrics_edit.rate_parameters",
    ),
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.mer",
        "_mer_update",
        SWAP_CODE,
        fast="_torchmetrics_edit.mer_update",
        label="torchmetrics MER statistics",
        when="_torchmetrics_edit.rate_parameters",
    ),
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.wil",
        "_word_info_lost_update",
        SWAP_CODE,
        fast="_torchmetrics_edit.info_update",
        label="torchmetrics WIL statistics",
        when="_torchmetrics_edit.rate_parameters",
    ),
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.wip",
        "_wip_update",
        SWAP_CODE,
        fast="_torchmetrics_edit.info_update",
        label="torchmetrics WIP statistics",
        when="_torchmetrics_edit.rate_parameters",
    ),
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.edit",
        "_edit_distance_update",
        SWAP_CODE,
        fast="_torchmetrics_edit.edit_update",
        label="torchmetrics EditDistance statistics",
        when="_torchmetrics_edit.edit_parameters",
    ),
    # ExtendedEditDistance and extended_edit_distance
    EntryPoint(
        TORCHMETRICS,
        "torchmetrics.functional.text.eed",
        "_eed_update",
        SWAP_CODE,
        fast="_torchmetrics_edit.eed_update",
        label="torchmetrics EED scores",
        when="_torchmetrics_edit.eed_parameters",
    ),
    # every loglikelihood and loglikelihood_rolling request of a causal Hugging Face model
    EntryPoint(
        LM_EVAL,
        "lm_eval.models.huggingface",
        "HFLM._loglikelihood_tokens",
        REBIND,
        fast="_lm_eval.loglikelihood_tokens",
        label="lm_eval.HFLM._loglikelihood_tokens",
    ),
    # batch_size="auto": sized by the fused path's memory
    EntryPoint(
        LM_EVAL,
        "lm_eval.models.huggingface",
        "HFLM._detect_batch_size",
        REBIND,
        fast="_lm_eval.detect_batch_size",
        label="lm_eval.HFLM._detect_batch_size",
    ),
    # the bootstrap standard errors of perplexity, F1 and MCC (100,000 resamples by default): no process pool
    EntryPoint(
        LM_EVAL,
        "lm_eval.api.metrics",
        "bootstrap_stderr",
        SWAP_CODE,
        fast="_lm_eval.bootstrap_stderr",
        label="lm_eval bootstrap_stderr",
    ),
    *_mbrs_metric("mbrs.metrics.bleu", "MetricBLEU"),
    *_mbrs_metric("mbrs.metrics.chrf", "MetricChrF"),
    *_mbrs_metric("mbrs.metrics.ter", "MetricTER"),
)

LIBRARIES = tuple(dict.fromkeys(e.library.name for e in ENTRY_POINTS))
BY_NAME = {e.library.name: e.library for e in ENTRY_POINTS}
BY_MODULE: dict[str, tuple[EntryPoint, ...]] = {}  # module name -> its entry points, in the table's order
for _e in ENTRY_POINTS:
    BY_MODULE[_e.module] = (*BY_MODULE.get(_e.module, ()), _e)
del _e


def supported(library: Library, version: str) -> bool:
    """Whether ``version`` (as installed) is among ``library.versions``."""
    spec = library.versions
    if spec.endswith(".x"):
        return version.split(".")[0] == spec[:-2]
    if spec.startswith("=="):
        return version == spec[2:]
    if spec.startswith(">="):
        bound = tuple(int(x) for x in spec[2:].split("."))
        fields = version.split(".")[: len(bound)]
        try:
            return len(fields) == len(bound) and tuple(int(x) for x in fields) >= bound
        except ValueError:
            return False
    raise ValueError(f"{library.name}: unknown version range {spec!r}")
