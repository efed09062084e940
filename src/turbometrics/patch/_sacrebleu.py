"""sacrebleu 2.x: BLEU, chrF and TER statistics from turbometrics' kernels.

sacrebleu computes every score from per-segment statistics (``Metric._extract_corpus_statistics``):
corpus and sentence scores, bootstrap intervals, paired tests and the command line all go through it.
The patch replaces that method (and reference caching) on the three classes (see ``_table``); the fast
paths here hand back the same lists of ints (TER: [edits, average reference length]), so sacrebleu's own
code makes the score objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._dispatch import Fallback

if TYPE_CHECKING:
    from ._apply import Site

_logger = logging.getLogger("sacrebleu")

# sacrebleu's tokenizer classes our kernels reproduce, by (module, class) -> our name
_BUILTIN_TOKENIZERS = {
    ("sacrebleu.tokenizers.tokenizer_13a", "Tokenizer13a"): "13a",
    ("sacrebleu.tokenizers.tokenizer_intl", "TokenizerV14International"): "intl",
    ("sacrebleu.tokenizers.tokenizer_zh", "TokenizerZh"): "zh",
    ("sacrebleu.tokenizers.tokenizer_char", "TokenizerChar"): "char",
    ("sacrebleu.tokenizers.tokenizer_none", "NoneTokenizer"): "none",
}


class _RefCache(list):
    """A reference cache made under the patch: the streams as given (and, for BLEU, tokenized once).

    sacrebleu's own form (n-gram Counters per segment) is built only when sacrebleu's unpatched code
    reads it (after ``unpatch()``, or in a fallback); pickled, it becomes that plain list.
    """

    def __init__(self, build: Callable[[], list], streams: list, n: int, prepared: Any = None):
        super().__init__()
        self._build, self.streams, self.n, self.prepared, self._built = build, streams, n, prepared, False

    def _materialize(self) -> None:
        if not self._built:
            list.extend(self, self._build())
            self._built = True

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        self._materialize()
        return list.__iter__(self)

    def __getitem__(self, i):
        self._materialize()
        return list.__getitem__(self, i)

    def __reduce__(self):
        self._materialize()
        return list, (list(list.__iter__(self)),)


def _streams(references: Any) -> tuple[list, int, Any]:
    """The reference streams cut to sacrebleu's ``zip(*references)`` length, and ``num_refs`` as
    ``Metric._cache_references`` sets it (-1: varies by segment)."""
    try:
        streams = [list(s) for s in references]
    except TypeError as e:
        raise Fallback(f"references: not a sequence of sequences ({e})") from None
    n = min((len(s) for s in streams), default=0)
    if n == 0:
        raise Fallback("references: no segments")
    streams = [s[:n] for s in streams]
    if not any(None in s for s in streams):
        return streams, n, len(streams)
    counts = {sum(s[i] is not None for s in streams) for i in range(n)}
    return streams, n, counts.pop() if len(counts) == 1 else -1


def _check_methods(self: Any, base: type, names: tuple) -> None:
    for name in names:
        if getattr(type(self), name) is not getattr(base, name):
            raise Fallback(f"{type(self).__name__}.{name} is overridden")


def _tokenizer_name(self: Any) -> str | None:
    """Our name of the metric's tokenizer, or None: then sacrebleu's own tokenizer runs in Python and
    our kernel counts its tokens ("none"). intl only with the ``regex`` release our tables were made from."""
    from ..text.tokenizers import intl_tables_current

    tok = type(getattr(self, "tokenizer", None))
    name = _BUILTIN_TOKENIZERS.get((tok.__module__, tok.__qualname__))
    return None if name == "intl" and not intl_tables_current() else name


# --- per metric: our statistics for (hypotheses, streams) -----------------------------------------------


def _bleu_rows(self: Any, hyps: list, streams: list, cache: _RefCache | None) -> list:
    from sacrebleu.metrics.bleu import BLEU

    import turbometrics as tm

    _check_methods(
        self,
        BLEU,
        ("_preprocess_segment", "_extract_reference_info", "_compute_segment_statistics", "_get_closest_ref_len"),
    )
    order = self.max_ngram_order
    if type(order) is not int or not 1 <= order <= 1024:
        raise Fallback(f"max_ngram_order={order!r}")
    name = _tokenizer_name(self)
    if name is None:  # sacrebleu's own tokenizer, in Python; the kernel counts its tokens
        hyps = [self._preprocess_segment(h) for h in hyps]
    if cache is not None:
        p = cache.prepared
        refs = (
            p
            if len(hyps) == cache.n
            else tm.text.bleu.PreparedReferences([s[: len(hyps)] for s in p.streams], p.tokenize, p.lowercase)
        )
    else:
        refs = streams if name is not None else _pretokenized(self, streams)
    return _rows(
        tm.metrics.BLEU, (name or "none", bool(self.lowercase) if name else False, "exp", None, order), hyps, refs
    ).tolist()


def _pretokenized(self: Any, streams: list) -> list:
    pre = self._preprocess_segment
    return [[None if x is None else pre(x) for x in s] for s in streams]


def _chrf_rows(self: Any, hyps: list, streams: list, cache: _RefCache | None) -> list:
    from sacrebleu.metrics.chrf import CHRF

    import turbometrics as tm

    _check_methods(
        self,
        CHRF,
        (
            "_preprocess_segment",
            "_extract_reference_info",
            "_compute_segment_statistics",
            "_get_match_statistics",
            "_remove_punctuation",
            "_compute_f_score",
        ),
    )
    return _rows(tm.metrics.CHRF, chrf_options(self), hyps, streams).tolist()


def chrf_options(self: Any) -> tuple:
    """A sacrebleu ``CHRF``'s options as our chrF takes them (``Fallback`` for those it does not take)."""
    from turbometrics.text.chrf import check_options

    opts = (self.char_order, self.word_order, self.beta)
    try:  # our ranges (sacrebleu takes more: word_order=-1, 5000 orders, beta=inf (which it fails on))
        check_options(*opts)
    except (TypeError, ValueError):
        raise Fallback(f"char_order, word_order, beta = {opts!r}") from None
    if (
        not all(type(v) is int for v in opts[:2])
        or not isinstance(self.beta, (int, float))
        or self.order != sum(opts[:2])
    ):
        raise Fallback(f"char_order, word_order, beta = {opts!r}")
    return (*opts, bool(self.lowercase), bool(self.whitespace), bool(self.eps_smoothing))


def _ter_rows(self: Any, hyps: list, streams: list, cache: _RefCache | None) -> list:
    from sacrebleu.metrics.ter import TER

    import turbometrics as tm

    _check_methods(self, TER, ("_preprocess_segment", "_extract_reference_info", "_compute_segment_statistics"))
    rows = tm.metrics.TER._sacrebleu_statistics(_rows(tm.metrics.TER, ter_options(self), hyps, streams)).tolist()
    return [[int(edits), length] for edits, length in rows]  # sacrebleu's edits are ints


def ter_options(self: Any) -> tuple[bool, bool, bool, bool]:
    """A sacrebleu ``TER``'s options as our TER takes them (``Fallback`` unless its tokenizer is the
    ``TercomTokenizer`` of those options)."""
    from sacrebleu.tokenizers.tokenizer_ter import TercomTokenizer

    tok = self.tokenizer
    opts = (self.normalized, self.no_punct, self.asian_support, self.case_sensitive)
    if type(tok) is not TercomTokenizer or opts != (
        tok._normalized,
        tok._no_punct,
        tok._asian_support,
        tok._case_sensitive,
    ):
        raise Fallback("tokenizer: not the TercomTokenizer of the metric's options")
    return (bool(opts[0]), bool(opts[1]), bool(opts[2]), bool(opts[3]))


_METRICS: dict = {}  # (our metric class, its options) -> the metric object whose _stats make a call's rows


def _rows(make: type, options: tuple, hyps: list, refs: Any) -> Any:  # an int64 or float64 ndarray
    """The rows an update of our metric (``make(*options)``) would add for (hyps, refs), from its ``_stats``
    (which read only the options) on one object kept per options: no metric made, updated and read a call (a
    loop of ``sentence_score`` calls paid more for that than for the kernel). BLEU and chrF's rows are
    sacrebleu's statistics; TER's become them by ``TER._sacrebleu_statistics``."""
    key = (make, options)
    metric = _METRICS.get(key)
    if metric is None:
        if len(_METRICS) >= 64:
            _METRICS.clear()
        metric = _METRICS[key] = make(*options)
    try:
        rows = metric._stats(hyps, refs, None)[0]
    except (TypeError, ValueError) as e:  # e.g. a segment without references, a non-string: sacrebleu decides
        raise Fallback(str(e)) from None
    return rows


_ROWS = {"BLEU": _bleu_rows, "CHRF": _chrf_rows, "TER": _ter_rows}


# --- the fast paths (see _table): Metric._extract_corpus_statistics and Metric._cache_references -----------


def statistics(site: Site, self: Any, hypotheses: Any, references: Any) -> list:
    """The per-segment statistics of ``hypotheses`` against ``references`` (or the cached references)."""
    return metric_statistics(site.owner.__name__, self, hypotheses, references)


def metric_statistics(name: str, self: Any, hypotheses: Any, references: Any) -> list:
    """``statistics`` for a metric of sacrebleu's class ``name`` ("BLEU", "CHRF", "TER")."""
    if references:  # sacrebleu's own test (and truthiness rules)
        streams, n, num_refs = _streams(references)
        cache = None
        self.num_refs = num_refs  # as _cache_references would set it
    elif isinstance(self._ref_cache, _RefCache):
        cache = self._ref_cache
        streams, n = cache.streams, cache.n
    elif self._ref_cache:
        raise Fallback("references cached before turbometrics.patch()")
    else:
        raise RuntimeError("No references provided and the cache is empty.")
    try:
        hyps = list(hypotheses[:n]) if len(hypotheses) > n else list(hypotheses)
    except TypeError as e:
        raise Fallback(f"hypotheses: {e}") from None
    n = len(hyps)
    if n == 0:
        raise Fallback("hypotheses: no segments")
    streams = [s[:n] for s in streams] if n < len(streams[0]) else streams
    if not self._force and name == "BLEU":
        _warn_if_tokenized(hyps)
    return _ROWS[name](self, hyps, streams, cache)


def _warn_if_tokenized(hyps: list) -> None:
    """sacrebleu's BLEU warning for hypotheses that look tokenized."""
    if sum(1 for h in hyps if isinstance(h, str) and h.endswith(" .")) >= 100:
        _logger.warning("That's 100 lines that end in a tokenized period ('.')")
        _logger.warning("It looks like you forgot to detokenize your test data, which may hurt your score.")
        _logger.warning(
            "If you insist your data is detokenized, or don't care, you can suppress this "
            "message with the `force` parameter."
        )


def reference_cache(site: Site, self: Any, references: Any) -> _RefCache:
    """The streams as given (BLEU: tokenized once); sacrebleu's own cache form is built from them on demand."""
    streams, n, num_refs = _streams(references)
    prepared = None
    if site.owner.__name__ == "BLEU":
        import turbometrics as tm

        _check_methods(self, site.owner, ("_preprocess_segment",))
        name = _tokenizer_name(self)
        if name is not None:
            try:
                prepared = tm.prepare_references(streams, name, bool(self.lowercase))
            except (TypeError, ValueError) as e:
                raise Fallback(str(e)) from None
        else:  # sacrebleu's tokenizer, run once now; the kernel counts its tokens
            streams = _pretokenized(self, streams)
            prepared = tm.prepare_references(streams, "none", False)
    self.num_refs = num_refs
    original = site.original
    return _RefCache(lambda: original(self, references), streams, n, prepared)
