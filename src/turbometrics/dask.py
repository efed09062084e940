"""Evaluate Dask bags and dataframes: an accumulator per partition, states merged in a tree.

Each partition is scored where it lives by a ``tm.metrics`` accumulator; only
the accumulators' states (integer n-gram statistics, per-pair scores, exact
NLL sums) travel to be merged, in partition order, so the result equals the
single-process function on the concatenated data bit for bit.

The same pattern works on any engine that can map a function over partitions
and reduce the results. With Ray: ``ray.get([score.remote(part) for part in
parts])`` where ``score`` builds an accumulator and calls ``update``, then
``functools.reduce(operator.add, states).compute()``. With Spark:
``rdd.mapPartitions(lambda it: [BLEU().update(*unzip(it))])`` followed by
``.reduce(operator.add)`` and ``.compute()`` on the driver. The accumulators
pickle, so nothing else is needed.

Requires ``dask`` (``pip install "turbometrics[dask]"``); ``dask.distributed``
is used when a client is active, as everywhere in Dask.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from . import metrics as M
from ._metric import Metric

__all__ = ["accumulate", "corpus_bleu", "corpus_chrf", "rouge", "perplexity", "perplexity_from_hidden", "topk_accuracy"]


def _dask():
    try:
        import dask
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError('tm.dask needs Dask: pip install "turbometrics[dask]"') from e
    return dask


def _partitions(collection: Any) -> list:
    if not hasattr(collection, "to_delayed") or not hasattr(collection, "npartitions"):
        raise TypeError(f"collection must be a Dask bag or dataframe, got {type(collection).__name__}")
    return list(collection.to_delayed())


def _fill(accumulator: Metric, part: Any, update: Callable, *shared: Any) -> Metric:
    acc = copy.deepcopy(accumulator).reset()
    update(acc, part, *shared)
    return acc


def _merge(*states: Metric) -> Metric:
    out = states[0]
    for s in states[1:]:
        out = out.merge(s)
    return out


def accumulate(
    collection: Any,
    accumulator: Metric,
    update: Callable[..., Any],
    *,
    split_every: int = 8,
    shared: tuple = (),
    **compute_kwargs: Any,
) -> Metric:
    """Fill a copy of ``accumulator`` per partition with ``update(acc, partition, *shared)``; merge; return it.

    ``partition`` is what Dask holds (a list of items for a bag, a pandas
    DataFrame for a dataframe). ``shared`` holds what every partition needs
    (an LM head's weight): one graph key each, sent to a worker once, not
    once per task. States are merged ``split_every`` at a time in partition
    order. ``compute_kwargs`` go to ``dask.compute`` (``scheduler=``...).
    """
    dask = _dask()
    if not isinstance(accumulator, Metric):
        raise TypeError(f"accumulator must be a tm.metrics accumulator, got {type(accumulator).__name__}")
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an int >= 2, got {split_every!r}")
    keys = [dask.delayed(x, pure=True) for x in shared]
    states = [dask.delayed(_fill)(accumulator, p, update, *keys) for p in _partitions(collection)]
    if not states:
        return copy.deepcopy(accumulator).reset()
    while len(states) > 1:
        states = [dask.delayed(_merge)(*states[i : i + split_every]) for i in range(0, len(states), split_every)]
    (out,) = dask.compute(states[0], **compute_kwargs)
    return out


def _text_items(part: Any, columns: Sequence[str] | None) -> tuple[list, list]:
    """(hypotheses, reference streams) from a bag partition or a pandas partition."""
    if hasattr(part, "columns"):  # pandas
        cols = list(part.columns) if columns is None else list(columns)
        if len(cols) < 2:
            raise ValueError("a dataframe needs a hypothesis column and at least one reference column")
        missing = [c for c in cols if c not in part.columns]
        if missing:
            raise ValueError(f"columns: the dataframe has no column {missing[0]!r} (it has {list(part.columns)})")
        return list(part[cols[0]]), [list(part[c]) for c in cols[1:]]
    hyps, refs = [], []
    for item in part:
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[1], (str, tuple, list)):
            raise ValueError(
                f"bag items must be (hypothesis, reference) or (hypothesis, [references]), got {item!r:.80}"
            )
        hyps.append(item[0])
        refs.append([item[1]] if isinstance(item[1], str) else list(item[1]))
    width = max((len(r) for r in refs), default=1)
    # sacrebleu's layout: one stream per reference position, None where a segment has fewer references
    return hyps, [[r[j] if j < len(r) else None for r in refs] for j in range(width)]


def _text_update(columns):
    def update(acc, part):
        hyps, streams = _text_items(part, columns)
        acc.update(hyps, streams)

    return update


def corpus_bleu(collection: Any, *, columns: Sequence[str] | None = None, **options: Any):
    """``tm.corpus_bleu`` over a bag of (hypothesis, reference(s)) or a dataframe.

    For a dataframe, ``columns`` names the hypothesis column and then the
    reference columns (default: all columns, hypothesis first). ``options``
    are ``tm.metrics.BLEU``'s.
    """
    return accumulate(collection, M.BLEU(**options), _text_update(columns)).compute()


def corpus_chrf(collection: Any, *, columns: Sequence[str] | None = None, **options: Any):
    """``tm.corpus_chrf`` over a bag or dataframe, as ``corpus_bleu`` here; options are ``tm.metrics.CHRF``'s."""
    return accumulate(collection, M.CHRF(**options), _text_update(columns)).compute()


def rouge(collection: Any, *, columns: Sequence[str] | None = None, **options: Any):
    """``tm.rouge`` over a bag of (prediction, reference(s)) or a dataframe: per-pair scores in order."""

    def update(acc, part):
        preds, streams = _text_items(part, columns)
        acc.update(preds, [[s[i] for s in streams if s[i] is not None] for i in range(len(preds))])

    return accumulate(collection, M.ROUGE(**options), update).compute()


def _array_update(acc, part):
    for item in part:
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise ValueError("bag items must be (scores, targets) or (scores, targets, mask/weights) blocks")
        acc.update(*item)


def perplexity(collection: Any, **options: Any):
    """``tm.perplexity`` over a bag of (logits, targets) or (logits, targets, mask) blocks."""
    return accumulate(collection, M.Perplexity(**options), _array_update).compute()


def perplexity_from_hidden(
    collection: Any,
    weight: Any,
    bias: Any = None,
    *,
    ignore_index: int | None = None,
    reduction: str = "token",
    chunk: int | None = None,
    logit_map: Callable[[Any], Any] | None = None,
):
    """``tm.perplexity_from_hidden`` over a bag of (hidden, targets) or (hidden, targets, mask) blocks.

    The head's ``weight`` (and ``bias``) go to each worker once; each block's
    logits are made a slice at a time where the block lives. Per-token NLLs
    are those of the single-process function (the same kernels; a BLAS may
    round a dot product differently for another block size, so to about
    1e-15), summed exactly.
    """
    from .lm_head import _head_nll

    def update(acc, part, w, b):
        for item in part:
            if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
                raise ValueError("bag items must be (hidden, targets) or (hidden, targets, mask) blocks")
            nll, counted = _head_nll(
                item[0],
                w,
                item[1],
                b,
                ignore_index=ignore_index,
                mask=item[2] if len(item) == 3 else None,
                chunk=chunk,
                num_threads=None,
                logit_map=logit_map,
            )
            acc.update(nll, mask=counted)

    return accumulate(
        collection, M.Perplexity(reduction=reduction, input="nll"), update, shared=(weight, bias)
    ).compute()


def topk_accuracy(collection: Any, **options: Any):
    """``tm.topk_accuracy`` over a bag of (scores, targets) or (scores, targets, sample_weight) blocks."""
    return accumulate(collection, M.TopKAccuracy(**options), _array_update).compute()
