"""mbrs 0.1.8: the BLEU, chrF and TER score matrices of MBR decoding from turbometrics' kernels.

mbrs scores ``MetricBLEU``, ``MetricChrF`` and ``MetricTER`` one pair at a time, each pair a sacrebleu
``sentence_score`` in a process pool: ``pairwise_scores`` (what the decoders' ``expected_scores`` call) is
the (H, R) matrix of them, ``scores`` the N scores of N pairs. The fast paths compute the same numbers with
``pairwise_bleu``/``pairwise_chrf``/``pairwise_ter`` and ``segment_bleu``/``segment_chrf``/``segment_ter``
(each equal to sacrebleu's ``sentence_score``, bit for bit) and hand them back as mbrs does: a tensor made
by ``torch.Tensor`` from the scores (the default dtype: float32 unless changed), with the call counted
under mbrs' ``score`` timer. ``corpus_score`` runs the metric's sacrebleu ``corpus_score`` on the
statistics of the sacrebleu patch (``_sacrebleu``).

The options are read where mbrs' own code reads them: BLEU's from ``cfg`` (each worker process makes a
new sacrebleu ``BLEU`` from it), chrF's and TER's from ``self.scorer`` (the metric object is pickled to
the workers, which call its ``score``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _sacrebleu
from ._dispatch import Fallback

if TYPE_CHECKING:
    import numpy as np

    from ._apply import Site


def _texts(hypotheses: Any, references: Any, pairwise: bool) -> tuple[list, list]:
    """Both sides as lists of str, or ``Fallback`` where mbrs would not score them as we do (its pool
    rejects an empty side; ``scores`` pairs the sides up to the shorter one)."""
    try:
        n_hyps, n_refs = len(hypotheses), len(references)
    except TypeError as e:
        raise Fallback(f"hypotheses, references: {e}") from None
    if n_hyps == 0 or n_refs == 0:
        raise Fallback("no hypotheses or no references")
    if not pairwise and n_hyps != n_refs:
        raise Fallback(f"{n_hyps} hypotheses, {n_refs} references")
    hyps, refs = list(hypotheses), list(references)
    if not all(isinstance(t, str) for t in hyps) or not all(isinstance(t, str) for t in refs):
        raise Fallback("a hypothesis or reference is not a str")  # sacrebleu's checks decide
    return hyps, refs


def _check_workers(self: Any, pairwise: bool) -> None:
    """mbrs' process pool rejects a worker count (and ``scores`` divides by it): the original raises."""
    n = getattr(self.cfg, "num_workers", None)
    if not (isinstance(n, int) and n >= 1 or pairwise and n is None):
        raise Fallback(f"num_workers={n!r}")


def _check_method(self: Any, site: Site, name: str) -> None:
    if getattr(type(self), name) is not getattr(site.owner, name):
        raise Fallback(f"{type(self).__name__}.{name} is overridden")


def _scorer(self: Any, name: str) -> Any:
    """``self.scorer``, which must be sacrebleu's own class ``name`` (a subclass may score otherwise)."""
    from sacrebleu import metrics

    scorer = getattr(self, "scorer", None)
    if type(scorer) is not getattr(metrics, name):
        raise Fallback(f"scorer: {type(scorer).__name__}, not sacrebleu's {name}")
    return scorer


def _bleu_scorer(site: Site, self: Any) -> Any:
    """The sacrebleu ``BLEU`` each of mbrs' workers makes from ``cfg`` (``MetricBLEU._initialize_bleu``)."""
    from sacrebleu.metrics.bleu import BLEU

    for name in ("_initialize_bleu", "_score_worker"):
        _check_method(self, site, name)
    if site.module.BLEU is not BLEU:
        raise Fallback("mbrs.metrics.bleu.BLEU is not sacrebleu's BLEU")
    cfg = self.cfg
    if not cfg.effective_order:
        raise Fallback("effective_order=False (sacrebleu logs a warning for every sentence_score)")
    lang = BLEU._TOKENIZER_MAP.get(cfg.trg_lang) if isinstance(cfg.trg_lang, str) else None
    if cfg.tokenize is not None and lang is not None and cfg.tokenize != lang:
        raise Fallback(f"tokenize={cfg.tokenize!r} with trg_lang={cfg.trg_lang!r} (sacrebleu warns in each worker)")
    try:
        scorer = BLEU(
            lowercase=cfg.lowercase,
            force=cfg.force,
            tokenize=cfg.tokenize,
            smooth_method=cfg.smooth_method,
            smooth_value=cfg.smooth_value,
            max_ngram_order=cfg.max_ngram_order,
            effective_order=cfg.effective_order,
            trg_lang=cfg.trg_lang,
        )
    except Exception as e:  # the original's workers fail to start: its error, from the original
        raise Fallback(f"sacrebleu.BLEU rejects the configuration ({e!r})") from None
    if type(scorer.max_ngram_order) is not int:
        raise Fallback(f"max_ngram_order={scorer.max_ngram_order!r}")
    return scorer


def _bleu(site: Site, self: Any, hyps: list, refs: list | None, score: Callable[..., np.ndarray]) -> np.ndarray:
    """``score`` (``pairwise_bleu`` or a ``segment_bleu`` call) with the options of mbrs' BLEU."""
    scorer = _bleu_scorer(site, self)
    name = _sacrebleu._tokenizer_name(scorer)
    lowercase = bool(scorer.lowercase)
    if name is None:  # sacrebleu's own tokenizer (MeCab, SentencePiece), once per text; ours counts its tokens
        pre = scorer._preprocess_segment
        hyps = [pre(h) for h in hyps]
        refs = None if refs is None else [pre(r) for r in refs]
        name, lowercase = "none", False
    return score(
        hyps,
        refs,
        tokenize=name,
        lowercase=lowercase,
        smooth_method=scorer.smooth_method,
        smooth_value=scorer.smooth_value,
        max_ngram_order=scorer.max_ngram_order,
        effective_order=True,
    )


def _chrf_options(site: Site, self: Any) -> tuple:
    if self.cfg.fastchrf:
        raise Fallback("fastchrf=True (mbrs runs the fastchrf package, whose numbers we do not reproduce)")
    _check_method(self, site, "score")
    return _sacrebleu.chrf_options(_scorer(self, "CHRF"))


def _ter_options(site: Site, self: Any) -> tuple:
    _check_method(self, site, "score")
    return _sacrebleu.ter_options(_scorer(self, "TER"))


def _matrix(site: Site, self: Any, hyps: list, refs: list | None) -> np.ndarray:
    import turbometrics as tm

    name = site.owner.__name__
    if name == "MetricBLEU":
        return _bleu(site, self, hyps, refs, tm.pairwise_bleu)
    if name == "MetricChrF":
        return tm.pairwise_chrf(hyps, refs, *_chrf_options(site, self))
    return tm.pairwise_ter(hyps, refs, *_ter_options(site, self))


def _row(site: Site, self: Any, hyps: list, refs: list) -> np.ndarray:
    import turbometrics as tm

    name = site.owner.__name__
    if name == "MetricBLEU":
        return _bleu(site, self, hyps, refs, lambda h, r, **kw: tm.segment_bleu(h, [r], **kw))
    if name == "MetricChrF":
        return tm.segment_chrf(hyps, [refs], *_chrf_options(site, self))
    return tm.segment_ter(hyps, [refs], *_ter_options(site, self))


def _tensor(values: np.ndarray) -> Any:
    """What mbrs' ``Tensor(list of the scores)`` makes of them: the default dtype, rounded from float64."""
    import torch

    dtype = torch.Tensor().dtype
    if dtype not in (torch.float32, torch.float64):  # float16, bfloat16: the original's own conversion
        return torch.Tensor(values.tolist())
    # NumPy rounds into the tensor's own memory: torch's parallel conversion would wait for the kernels'
    # OpenMP threads (a second runtime) to go idle, and a tensor on NumPy's memory could not be resized
    out = torch.empty(values.shape, dtype=dtype)
    out.numpy()[...] = values
    return out


def _timed(site: Site, ncalls: int, compute: Callable[[], np.ndarray]) -> Any:
    """``compute()`` as a tensor, timed and counted as mbrs times the call: ``ncalls`` under its ``score``
    timer (a fallback leaves the count to the original)."""
    with site.module.timer.measure("score") as t:
        t.set_delta_ncalls(ncalls)
        try:
            return _tensor(compute())
        except (TypeError, ValueError) as e:  # an option or text ours rejects: mbrs and sacrebleu decide
            t.set_delta_ncalls(0)
            raise Fallback(str(e)) from None
        except Fallback:
            t.set_delta_ncalls(0)
            raise


# --- the fast paths (see _table): MetricBLEU/MetricChrF/MetricTER pairwise_scores, scores, corpus_score ------


def pairwise_scores(site: Site, self: Any, hypotheses: Any, references: Any, *_: Any, **__: Any) -> Any:
    """The (H, R) matrix: cell (i, j) is ``hypotheses[i]`` scored against ``references[j]`` alone."""
    _check_workers(self, pairwise=True)
    hyps, refs = _texts(hypotheses, references, pairwise=True)
    same = references is hypotheses  # MBR's candidates as their own pseudo-references: each text prepared once
    return _timed(site, len(hyps) * len(refs), lambda: _matrix(site, self, hyps, None if same else refs))


def scores(site: Site, self: Any, hypotheses: Any, references: Any, *_: Any, **__: Any) -> Any:
    """The N scores of ``hypotheses[i]`` against ``references[i]``."""
    _check_workers(self, pairwise=False)
    hyps, refs = _texts(hypotheses, references, pairwise=False)
    return _timed(site, len(hyps), lambda: _row(site, self, hyps, refs))


def corpus_score(site: Site, self: Any, hypotheses: Any, references_lists: Any, sources: Any = None) -> float:
    """``self.scorer.corpus_score(hypotheses, references_lists).score`` on our statistics."""
    name = {"MetricBLEU": "BLEU", "MetricChrF": "CHRF", "MetricTER": "TER"}[site.owner.__name__]
    scorer = _scorer(self, name)
    scorer._check_corpus_score_args(hypotheses, references_lists)  # sacrebleu's errors, as the original raises
    stats = _sacrebleu.metric_statistics(name, scorer, hypotheses, references_lists)
    return scorer._aggregate_and_compute(stats).score
