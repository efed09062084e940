"""Drop-in acceleration: existing code that calls sacrebleu, rouge-score, scikit-learn, torchmetrics, mbrs
or lm-evaluation-harness runs on turbometrics' kernels, unchanged.

>>> import turbometrics as tm
>>> tm.patch()            # doctest: +SKIP
>>> import sacrebleu      # doctest: +SKIP
>>> sacrebleu.corpus_bleu(hyps, [refs])   # same BLEUScore, bit for bit, many times faster  # doctest: +SKIP

or, without touching the code: ``python -m turbometrics.patch script.py [args]`` /
``python -m turbometrics.patch -m sacrebleu [args]``.

What is rebound (the call sites inside the libraries, so names imported with
``from ... import`` before the patch and objects made before it are covered):

- sacrebleu 2.x: ``BLEU``, ``CHRF`` and ``TER``'s per-segment statistics (``_extract_corpus_statistics``)
  and reference caching (``_cache_references``). Every entry point goes through them:
  ``corpus_score`` (also with ``n_bootstrap``), ``sentence_score``, the cached ``references=`` form,
  the compat functions (``corpus_bleu``, ``sentence_chrf``, ...), ``significance.PairedTest`` and the
  ``sacrebleu`` command. The scores themselves are still computed by sacrebleu's own code from the
  statistics, so every field of every score object is sacrebleu's.
- rouge-score 0.1.2: ``rouge_scorer.RougeScorer.score`` / ``score_multi`` and
  ``scoring.BootstrapAggregator``'s resampling (which draws from NumPy's global RNG exactly as before).
- scikit-learn >= 1.3: ``sklearn.metrics.top_k_accuracy_score`` (its code object is swapped, so every
  reference to the function, and scorers made from it, are covered; scikit-learn's own parameter
  validation still runs first).
- torchmetrics >= 1.0: ``torchmetrics.text.Perplexity`` (``update``/``compute``, so ``forward`` too)
  and ``torchmetrics.functional.text.perplexity``. These return the exactly rounded perplexity in the
  dtype and on the device torchmetrics returns, where torchmetrics itself computes softmax, log and
  sum in the logits' dtype (float32 results about 1e-6 off, bfloat16 a few percent): the one place
  where the patched number differs from the original, on purpose. And the statistics of ``BLEUScore``,
  ``SacreBLEUScore``, ``CHRFScore``, ``TranslationEditRate``, ``ROUGEScore`` and their functions: the
  same states bit for bit (BLEU's while a count stays below 2**24, where torchmetrics' own float32
  sums of one n-gram at a time stall). And the edit counts of ``WordErrorRate``, ``CharErrorRate``,
  ``MatchErrorRate``, ``WordInfoLost``, ``WordInfoPreserved``, ``EditDistance``, ``ExtendedEditDistance``
  and their functions: the same states bit for bit.
- mbrs 0.1.8: ``MetricBLEU``, ``MetricChrF`` and ``MetricTER``'s ``pairwise_scores`` (the MBR matrix the
  decoders' ``expected_scores`` computes), ``scores`` and ``corpus_score``: the matrix in one call instead
  of a process pool of sacrebleu sentence scores, returned as the same tensor (mbrs' dtype, float32 by
  default). chrF with ``fastchrf=True`` and BLEU with ``effective_order=False`` run the original.
- lm-evaluation-harness 0.4.13: ``HFLM._loglikelihood_tokens`` (every ``loglikelihood`` and
  ``loglikelihood_rolling`` request of a causal Hugging Face model) through the fused LM head, with no
  (batch, length, vocabulary) logits or log-softmax, and ``HFLM._detect_batch_size`` (``batch_size="auto"``)
  sized by that path. Log-probabilities in float64 throughout (see ``turbometrics.lm_eval``).

Out of reach: subclasses that override the methods above (they run their own code; a subclass that
only inherits is accelerated), and a library imported under another name from another path.

A call the fast path does not cover (an option, tokenizer or input type it does not know) runs the
original and logs ``fallback: <reason>`` on the ``turbometrics.patch`` logger (INFO; ``verbose=True``
prints it, and ``accelerated`` for every accelerated call). With ``TURBOMETRICS_PATCH_STRICT=1`` such a
call raises ``PatchFallbackError`` naming the reason instead, unless the original itself raises for
that input (then its own error is raised: invalid input stays the library's business).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Iterable

from . import _apply, _table
from ._dispatch import PatchFallbackError, counts, log
from ._hook import hook

__all__ = ["patch", "unpatch", "is_patched", "calls", "PatchFallbackError", "LIBRARIES"]

LIBRARIES = _table.LIBRARIES

_verbose_handler: logging.Handler | None = None


def calls() -> dict[tuple[str, str], int]:
    """How many patched calls ran accelerated or fell back, by entry point, since the process started:
    ``{("sacrebleu.BLEU statistics", "accelerated"): 12, ...}``."""
    return dict(counts)


def patch(libraries: str | Iterable[str] | None = None, *, verbose: bool = False) -> None:
    """Run calls into sacrebleu, rouge-score, scikit-learn, torchmetrics, mbrs and lm-eval on our kernels.

    Parameters
    ----------
    libraries : str or list of str, optional
        Among ``"sacrebleu"``, ``"rouge_score"``, ``"sklearn"``, ``"torchmetrics"``, ``"mbrs"``, ``"lm_eval"``
        (default: every one of them that is installed). Libraries already imported
        are patched now; the others when they are imported.
    verbose : bool
        Log one line per patched call to stderr (``turbometrics.patch`` logger,
        INFO): ``accelerated`` or ``fallback: <reason>``.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        For a library name not in the list above.

    Notes
    -----
    Each patched call returns the same type with the same value as the original,
    bit for bit (torchmetrics' perplexity: the exactly rounded value; see the
    ``turbometrics.patch`` module docstring for what is rebound and what is out of
    reach). Calling ``patch`` again adds libraries; ``unpatch`` undoes all. An
    installed version the patch was not written for (sacrebleu 2.x, rouge-score
    0.1.2, scikit-learn >= 1.3, torchmetrics >= 1.0, mbrs 0.1.8, lm-eval 0.4.13) is left
    unpatched, with a warning. ``TURBOMETRICS_PATCH_STRICT=1`` turns every fallback into a
    ``PatchFallbackError``. ``python -m turbometrics.patch script.py`` runs a script
    (or ``-m module``) with the patch on.

    Examples
    --------
    >>> import sacrebleu, turbometrics as tm
    >>> tm.patch(["sacrebleu"])
    >>> sacrebleu.corpus_bleu(["The cat sat on the mat."], [["The cat sat on the mat."]]).score
    100.00000000000004
    >>> tm.is_patched("sacrebleu"), tm.is_patched("sklearn")
    (True, False)
    >>> tm.unpatch()
    """
    if libraries is None:
        wanted = [lib for lib in LIBRARIES if importlib.util.find_spec(lib) is not None]
    else:
        if not isinstance(libraries, (str, Iterable)):
            raise TypeError(f"libraries must be a name or a list of names, got {type(libraries).__name__}")
        wanted = [libraries] if isinstance(libraries, str) else list(libraries)
        for lib in wanted:
            if lib not in LIBRARIES:
                raise ValueError(f"libraries: unknown library {lib!r}; choose among {', '.join(LIBRARIES)}")
    global _verbose_handler
    with _apply.lock:
        if verbose and _verbose_handler is None:
            _verbose_handler = logging.StreamHandler()
            _verbose_handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            log.addHandler(_verbose_handler)
            log.setLevel(logging.INFO)
        for lib in wanted:
            if lib not in _apply.active and _apply.version_ok(_table.BY_NAME[lib]):
                _apply.active.add(lib)
        if hook not in sys.meta_path:
            sys.meta_path.insert(0, hook)
        for name in _apply.pending():
            _apply.apply(name, sys.modules[name])


def unpatch() -> None:
    """Undo ``patch``: every rebound attribute and swapped code object is the original object again.

    Parameters
    ----------
    None

    Returns
    -------
    None

    Raises
    ------
    Nothing; calling it when nothing is patched does nothing.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.patch(["sacrebleu"]); tm.unpatch()
    >>> tm.is_patched()
    False
    """
    global _verbose_handler
    with _apply.lock:
        _apply.undo_all()
        _apply.active.clear()
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)
        if _verbose_handler is not None:
            log.removeHandler(_verbose_handler)
            log.setLevel(logging.NOTSET)
            _verbose_handler = None


def is_patched(library: str | None = None) -> bool:
    """Whether ``patch`` is on, for ``library`` or for any library.

    Parameters
    ----------
    library : str, optional
        ``"sacrebleu"``, ``"rouge_score"``, ``"sklearn"``, ``"torchmetrics"``, ``"mbrs"`` or ``"lm_eval"``.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        For a library name not in the list above.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.is_patched("rouge_score")
    False
    """
    with _apply.lock:
        if library is None:
            return bool(_apply.active)
        if library not in LIBRARIES:
            raise ValueError(f"library: unknown library {library!r}; choose among {', '.join(LIBRARIES)}")
        return library in _apply.active
