"""Bootstrap confidence intervals and paired significance tests over accumulators.

Every accumulator in ``tm.metrics`` can describe itself as a *plan*: a matrix
with one row of sufficient statistics per item (segment, pair, row, sequence)
and a vectorised function from summed rows to scores. Resampling is then
"draw indices, sum the chosen rows, score the sums", which is all we do.

Modes
-----
``"default"``
    Resample ``r`` draws its indices from its own stream,
    ``default_rng(SeedSequence(seed).spawn(n_resamples)[r])``: reproducible for
    a seed, independent of chunking and thread count, and never holding more
    than a chunk of indices. Statistics are summed exactly (int64 for BLEU and
    chrF), so every resampled score is the metric's exact score of that
    resampled corpus. The interval is the percentile interval by order
    statistics (sacrebleu's rule, generalised to any ``confidence``).
``"sacrebleu"`` (BLEU, chrF)
    sacrebleu 2.6.0's ``--confidence`` / ``--paired-bs`` / ``--paired-ar``
    numbers: one ``default_rng(seed).choice(n, (N, n))`` call, statistics cast
    to float32 and scored with float32 arithmetic (as NumPy >= 2 does there),
    ``lo = s[N//40]``, ``hi = s[N - N//40 - 1]``, ``ci = (hi - lo) / 2``.
    Memory is sacrebleu's too: N x n indices at once.
``"rouge_score"`` (ROUGE)
    rouge-score 0.1.2's ``BootstrapAggregator``: the legacy global RNG (or the
    ``RandomState`` / int seed you pass), one ``choice`` per resample and type
    in type order, ``np.percentile`` bounds and the *median* as ``mid``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import _validate
from ._metric import Metric, Plan

if TYPE_CHECKING:
    import numpy.typing as npt  # (annotations only: importing it costs ~2 ms)

__all__ = ["bootstrap_ci", "paired_test", "ConfidenceInterval", "PairedTestResult"]

MODES = ("default", "sacrebleu", "rouge_score")
_CHUNK_DRAWS = 1 << 23  # indices held at once in the default mode (64 MiB of int64)


@dataclass(frozen=True)
class ConfidenceInterval:
    """A bootstrap estimate: ``score`` on all data, ``mean`` of the resamples (the median in
    ``rouge_score`` mode), ``low``/``high`` bounds and ``ci = (high - low) / 2`` (sacrebleu's ``±``).

    Values are floats; for ROUGE each is a ``Scores(precision, recall, fmeasure)`` of floats.
    """

    score: Any
    mean: Any
    ci: Any
    low: Any
    high: Any
    n_resamples: int
    confidence: float
    seed: Any
    mode: str

    def __str__(self) -> str:
        if isinstance(self.score, tuple):  # a named tuple of scores (ROUGE)
            return " ".join(
                f"{k}={s:.4f} [{lo:.4f}, {hi:.4f}]"
                for k, s, lo, hi in zip(cast(Any, self.score)._fields, self.score, self.low, self.high)
            )
        return f"{self.score:.2f} (μ = {self.mean:.2f} ± {self.ci:.2f})"


@dataclass(frozen=True)
class PairedTestResult:
    """Paired test of ``system`` against ``baseline``.

    ``p_value = (c + 1) / (n + 1)``, c counting resampled statistics beyond the
    observed |difference|. ``mean``/``ci`` (and ``baseline_mean``/``baseline_ci``)
    are bootstrap estimates from the paired bootstrap; None for randomization.
    """

    baseline: float
    system: float
    p_value: float
    method: str
    n_resamples: int
    seed: Any
    mode: str
    mean: float | None = None
    ci: float | None = None
    baseline_mean: float | None = None
    baseline_ci: float | None = None

    def __str__(self) -> str:
        s = f"{self.system:.2f} vs baseline {self.baseline:.2f}, p = {self.p_value:.4f} ({self.method})"
        return s if self.mean is None else s + f"; μ = {self.mean:.2f} ± {self.ci:.2f}"


def _plan_of(acc: Any, mode: str) -> Plan:
    if not isinstance(acc, Metric):
        raise TypeError(f"expected a metric accumulator from tm.metrics, got {type(acc).__name__}")
    if mode not in acc.modes:
        raise ValueError(f"mode={mode!r} is for {' and '.join(_supporting(mode))}, not {type(acc).__name__}")
    plan = acc._plan()
    if plan.rows.shape[0] == 0:
        raise ValueError(f"{type(acc).__name__} holds no items to resample; call update() first")
    return plan


def _supporting(mode: str) -> list[str]:
    """The metric classes that declare ``mode`` (by name, sorted)."""
    found, todo = set(), [Metric]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if mode in cls.modes and not cls.__name__.startswith("_"):
            found.add(cls.__name__)
    return sorted(found)


def _check_resampling(n_resamples: Any, confidence: Any, mode: Any, seed: Any) -> tuple[int, float]:
    n = _validate.check_int(n_resamples, "n_resamples", minimum=1)
    confidence = _validate.check_real(confidence, "confidence", open_unit=True, exc=ValueError)
    _validate.check_choice(mode, "mode", MODES)
    if mode == "rouge_score" and isinstance(seed, np.random.RandomState):  # rouge-score's own generator
        return n, confidence
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"seed must be an int >= 0 or None, got {seed!r}")
    try:  # numpy's own rule (ints >= 0, sequences of them), in a message that names the argument
        np.random.SeedSequence(seed)
    except (TypeError, ValueError) as e:
        raise type(e)(f"seed must be an int >= 0 or None: {e}") from None
    return n, confidence


def _draws(kind: str, n: int, count: int, seed: Any, num_threads: int) -> Iterator[np.ndarray]:
    """Default mode: chunks of per-resample draws, resample r from its own spawned stream.

    ``kind="counts"``: int32 (resamples, n), how often each item is drawn by
    ``integers(0, n, n)`` (made in compiled code, the same numbers: ``_ext/resample.hpp``);
    ``kind="swap"``: booleans (randomization).
    """
    chunk = max(1, min(count, _CHUNK_DRAWS // max(n, 1)))
    entropy = _entropy_words(seed) if kind == "counts" and n <= 1 << 32 else None
    if entropy is not None:
        from ._ext import _dense

        for start in range(0, count, chunk):
            yield _dense.bootstrap_counts(entropy, start, min(chunk, count - start), n, num_threads)
        return
    streams = np.random.SeedSequence(seed).spawn(count)

    def draw(s):
        g = np.random.default_rng(s)
        if kind == "counts":  # past 2**32 items: NumPy's 64-bit draws
            return np.bincount(g.integers(0, n, n, dtype=np.int64), minlength=n).astype(np.int32)
        return g.integers(2, size=n, dtype=bool)

    with ThreadPoolExecutor(num_threads) as pool:  # numpy's generators release the GIL
        for start in range(0, count, chunk):
            yield np.stack(list(pool.map(draw, streams[start : start + chunk])))


def _entropy_words(seed: Any) -> npt.NDArray[np.uint32] | None:
    """``SeedSequence(seed).entropy`` as uint32 words, lowest first (None: leave it to NumPy)."""
    return _words(np.random.SeedSequence(seed).entropy)  # validates the seed; None draws fresh entropy


def _words(entropy: Any) -> npt.NDArray[np.uint32] | None:
    if not isinstance(entropy, (int, np.integer)) or entropy < 0:
        return None
    words = [0] if entropy == 0 else []
    entropy = int(entropy)
    while entropy:
        words.append(entropy & 0xFFFFFFFF)
        entropy >>= 32
    return np.array(words, np.uint32)


def _columns(rows: np.ndarray) -> np.ndarray:
    """The statistics as ``_sums`` takes them: rows transposed, each statistic contiguous over the items
    (made once a bootstrap: per chunk of resamples the copy cost more than the sums at a million items).
    Integer statistics that fit go as int32, which the kernel sums twice as fast (the sums stay int64)."""
    if rows.dtype.kind in "iub":
        fits = rows.size == 0 or (int(rows.min()) >= -(2**31) and int(rows.max()) < 2**31)
        return np.ascontiguousarray(rows.T, np.int32 if fits else np.int64)
    return np.ascontiguousarray(rows.T, np.float64)


def _sums(cols: np.ndarray, counts: np.ndarray, num_threads: int) -> np.ndarray:
    """Per resample, each statistic summed over the items as often as they were drawn (int64 or float64;
    float sums in fixed blocks of items: the same bits on any thread count)."""
    from ._ext import _dense

    if counts.shape[1] != cols.shape[1]:  # the kernel checks them too; a mismatch here is our bug
        raise AssertionError("resample counts and rows disagree")
    return _dense.resample_sums(cols, np.ascontiguousarray(counts, np.int32), num_threads)


def _order_interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Order-statistic bounds per column: s[lo] and s[N - lo - 1], lo = floor(N (1 - confidence) / 2)."""
    s = np.sort(samples, axis=0)
    n = s.shape[0]
    lo = min(int(math.floor(n * (1 - confidence) / 2 + 1e-9)), (n - 1) // 2)
    return s[lo], s[n - lo - 1]


def _fsum_mean(samples: np.ndarray) -> np.ndarray:
    return np.array([math.fsum(c) / len(c) for c in samples.T])


def _resampled_scores(plan: Plan, n_resamples: int, seed: Any, num_threads: int) -> np.ndarray:
    cols = _columns(plan.rows)
    return np.concatenate(
        [
            plan.score(_sums(cols, counts, num_threads))
            for counts in _draws("counts", len(plan.rows), n_resamples, seed, num_threads)
        ]
    )


def _check_defined(samples: np.ndarray, point: np.ndarray) -> None:
    """A ValueError where a resample's score is undefined (NaN) but the whole data's is not: a resample that
    drew only rows of weight 0 (a weighted mean's 0/0), which the one-shot function refuses too."""
    undefined = np.isnan(samples).any(axis=1) if np.isfinite(point).all() else np.zeros(0, bool)
    if undefined.any():
        raise ValueError(
            f"{int(undefined.sum())} of {len(samples)} resamples have no score (each drew only rows whose "
            "sample_weight is 0, a weighted mean of nothing); give fewer such rows, or drop them"
        )


def bootstrap_ci(
    accumulator: Any,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: Any = 12345,
    mode: str = "default",
    *,
    num_threads: int | None = None,
) -> Any:
    """Bootstrap confidence interval of a metric's score, from its per-item statistics.

    Items (segments, pairs, rows, sequences) are resampled with replacement
    ``n_resamples`` times and the metric is recomputed on each resample.
    1,000 resamples of 1,000,000 segments take a few seconds in the default mode.

    Parameters
    ----------
    accumulator : tm.metrics object
        Any metric object after ``update`` (``tm.metrics.BLEU``, ``CHRF``,
        ``ROUGE``, ``TopKAccuracy``, ``MeanReciprocalRank``, ``Perplexity``).
    n_resamples : int
    confidence : float
        In (0, 1).
    seed : int, None or numpy RandomState
        An int >= 0 for reproducible results, None for fresh entropy (in
        ``rouge_score`` mode None means numpy's global RNG, as rouge-score uses,
        and a ``RandomState`` is drawn from as it is).
    mode : {"default", "sacrebleu", "rouge_score"}
        See the module docstring; each metric declares the modes it supports
        (``acc.modes``): "sacrebleu" for BLEU/chrF (confidence 0.95 only),
        "rouge_score" for ROUGE.
    num_threads : int, optional
        Threads drawing the resamples (default: every core); results do not depend on it.

    Returns
    -------
    ConfidenceInterval
        For ROUGE a dict of them by type (with ``Scores`` fields); for
        ``TopKAccuracy`` with several k, a list by k.

    Raises
    ------
    TypeError, ValueError
        For a non-metric, an empty one, a mode it does not support, bad counts or confidence.

    Examples
    --------
    >>> import turbometrics as tm
    >>> bleu = tm.metrics.BLEU().update(["a b c d", "e f g h", "a b x d"], [["a b c d", "e f g h", "a b c d"]])
    >>> ci = tm.bootstrap_ci(bleu, n_resamples=200, seed=1)
    >>> round(ci.score, 2), ci.low <= ci.score <= ci.high
    (75.03, True)
    """
    n_resamples, confidence = _check_resampling(n_resamples, confidence, mode, seed)
    threads = _validate.check_threads(num_threads)
    plan = _plan_of(accumulator, mode)
    if mode == "sacrebleu":
        if confidence != 0.95:
            raise ValueError("mode='sacrebleu' has sacrebleu's fixed 95% interval; leave confidence=0.95")
        return _sacrebleu_ci(plan, n_resamples, seed, threads)
    if mode == "rouge_score":
        return _rouge_score_ci(plan, n_resamples, confidence, seed)
    samples = _resampled_scores(plan, n_resamples, seed, threads)
    _check_defined(samples, plan.point)
    low, high = _order_interval(samples, confidence)
    mean = _fsum_mean(samples)
    return _intervals(plan, mean, low, high, n_resamples, confidence, seed, mode)


def _intervals(
    plan: Plan,
    mean: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    n_resamples: int,
    confidence: float,
    seed: Any,
    mode: str,
) -> Any:
    """Per-column estimates packed in the accumulator's result shape (``plan.wrap``)."""
    return plan.wrap(
        lambda cols, cast: ConfidenceInterval(
            cast(plan.point[cols]),
            cast(mean[cols]),
            cast(0.5 * (high[cols] - low[cols])),
            cast(low[cols]),
            cast(high[cols]),
            n_resamples,
            confidence,
            seed,
            mode,
        )
    )


def _sacrebleu_scores(plan: Plan, source: np.random.SeedSequence, n_resamples: int, threads: int) -> list:
    """sacrebleu's resampled scores: ``idx = default_rng(seed).choice(n, (N, n))`` (``source`` is
    ``SeedSequence(seed)``, made once by the caller so that two systems share the draws, also for a None
    seed), float32 statistics summed per resample, scored in float32 as sacrebleu does. Draws and sums in compiled code
    (``_ext/resample.hpp``, the same numbers) unless the seed's entropy is not an integer."""
    stats32 = np.array(plan.rows, dtype="float32")
    words = _words(source.entropy)
    sums: np.ndarray | list[np.ndarray]  # (N, k), or its N rows
    if words is not None and len(stats32) <= 1 << 32:
        from ._ext import _dense

        sums = _dense.sacrebleu_sums(words, n_resamples, np.ascontiguousarray(stats32), threads)
    else:
        idxs = np.random.default_rng(source).choice(len(stats32), size=(n_resamples, len(stats32)), replace=True)
        sums = [stats32[i].sum(0) for i in idxs]
    score = plan.sacrebleu_score
    assert score is not None, "the sacrebleu mode is offered only by metrics that give sacrebleu_score"
    return [score(s) for s in sums]


def _sacrebleu_ci(plan: Plan, n_resamples: int, seed: Any, threads: int) -> ConfidenceInterval:
    # sacrebleu's Score.estimate_ci: sorted Python values, statistics.mean.
    raw = sorted(_sacrebleu_scores(plan, np.random.SeedSequence(seed), n_resamples, threads))
    lo = n_resamples // 40
    low, high = raw[lo], raw[n_resamples - lo - 1]
    return ConfidenceInterval(
        float(plan.point[0]),
        float(statistics.mean(raw)),
        float(0.5 * (high - low)),
        float(low),
        float(high),
        n_resamples,
        0.95,
        seed,
        "sacrebleu",
    )


def _rouge_score_ci(plan: Plan, n_resamples: int, confidence: float, seed: Any) -> Any:
    rs = _validate.check_random_state(seed, "seed")  # rouge-score draws from numpy's legacy global RNG by default
    n = len(plan.rows)
    delta = (1 - confidence) / 2
    q = 100 * np.array([delta, 0.5, 1 - delta])
    bounds = []
    for t in range(plan.rows.shape[1] // 3):  # types in order, each drawing from the same RNG
        matrix = np.ascontiguousarray(plan.rows[:, 3 * t : 3 * t + 3])
        means = np.zeros((n_resamples, 3))
        for i in range(n_resamples):
            means[i, :] = np.mean(matrix[rs.choice(np.arange(n), size=n), :], axis=0)
        bounds.append(np.percentile(means, q, axis=0))
    low, mid, high = (np.concatenate([b[j] for b in bounds]) for j in range(3))
    return _intervals(plan, mid, low, high, n_resamples, confidence, seed, "rouge_score")


def paired_test(
    baseline: Any,
    system: Any,
    method: str = "bootstrap",
    n_resamples: int | None = None,
    seed: Any = 12345,
    mode: str = "default",
    *,
    num_threads: int | None = None,
) -> PairedTestResult:
    """Is ``system`` significantly different from ``baseline`` on the same items?

    Parameters
    ----------
    baseline, system : tm.metrics objects
        The same metric and options, updated with the same items in the same
        order (same references, same targets).
    method : {"bootstrap", "randomization"}
        ``"bootstrap"`` (sacrebleu ``--paired-bs``, Koehn 2004; default 1000
        resamples): both systems are scored on the same resamples and the
        centred |difference| is compared with the observed one.
        ``"randomization"`` (sacrebleu ``--paired-ar``; default 10000 trials):
        each item's statistics are swapped between systems by a coin flip.
    n_resamples : int, optional
    seed : int or None
        ``mode="sacrebleu"`` treats 0 as unseeded, as sacrebleu does.
    mode : {"default", "sacrebleu"}
        ``"sacrebleu"`` reproduces sacrebleu's numbers (BLEU, chrF).
    num_threads : int, optional

    Returns
    -------
    PairedTestResult
        ``p_value = (c + 1) / (n + 1)``, both scores, and bootstrap means and intervals.

    Raises
    ------
    TypeError, ValueError
        For metrics that differ in kind, options or items, several scores, or bad options.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> t = np.arange(100) % 5
    >>> a = tm.metrics.TopKAccuracy(k=1).update(np.eye(5)[t], t)
    >>> b = tm.metrics.TopKAccuracy(k=1).update(np.eye(5)[np.where(t == 4, 0, t)], t)
    >>> tm.paired_test(a, b, n_resamples=200).p_value < 0.05
    True
    """
    _validate.check_choice(method, "method", ("bootstrap", "randomization"))
    if n_resamples is None:
        n_resamples = 1000 if method == "bootstrap" else 10000
    n_resamples, _ = _check_resampling(n_resamples, 0.95, mode, seed)
    threads = _validate.check_threads(num_threads)
    if mode == "rouge_score":
        raise ValueError("mode='rouge_score' has no paired test (rouge-score has none); use 'default'")
    base, sys_ = _plan_of(baseline, mode), _plan_of(system, mode)
    baseline.check_compatible(system)
    if base.rows.shape != sys_.rows.shape:
        raise ValueError(
            f"baseline and system hold different numbers of items "
            f"({len(base.rows)} vs {len(sys_.rows)}); a paired test needs the same items"
        )
    if len(base.primary) != 1:
        raise ValueError(
            f"paired_test compares one score; this {type(system).__name__} gives "
            f"{len(base.primary)} (use a single k or a single rouge type)"
        )
    col = base.primary[0]
    b_score, s_score = float(base.point[col]), float(sys_.point[col])
    diff = abs(b_score - s_score)
    if method == "randomization":
        a, b = _randomization_scores(base, sys_, col, n_resamples, seed, mode, threads)
        p = _p_value(np.abs(a - b), diff)
        return PairedTestResult(b_score, s_score, p, method, n_resamples, seed, mode)
    if mode == "sacrebleu":
        # sacrebleu seeds the paired test with `seed or None`, the baseline's interval with seed.
        source = np.random.SeedSequence(seed or None)  # one entropy: both systems see the same resamples
        scores_b = np.array(_sacrebleu_scores(base, source, n_resamples, threads))
        scores_s = np.array(_sacrebleu_scores(sys_, source, n_resamples, threads))
        own = (
            scores_b if seed else np.array(_sacrebleu_scores(base, np.random.SeedSequence(seed), n_resamples, threads))
        )
        b_mean, b_ci = _numpy_ci(own)
        s_mean, s_ci = _numpy_ci(scores_s)
        diffs = np.abs(scores_s - scores_b)
        p = _p_value(diffs - diffs.mean(), diff)
    else:
        parts_b, parts_s = [], []
        cols_b, cols_s = _columns(base.rows), _columns(sys_.rows)
        for counts in _draws("counts", len(base.rows), n_resamples, seed, threads):
            parts_b.append(base.score(_sums(cols_b, counts, threads))[:, col])
            parts_s.append(sys_.score(_sums(cols_s, counts, threads))[:, col])
        scores_b, scores_s = np.concatenate(parts_b), np.concatenate(parts_s)
        (b_mean, b_ci), (s_mean, s_ci) = _default_ci(scores_b), _default_ci(scores_s)
        diffs = np.abs(scores_s - scores_b)
        p = _p_value(diffs - math.fsum(diffs) / len(diffs), diff)
    return PairedTestResult(
        b_score, s_score, p, method, n_resamples, seed, mode, float(s_mean), float(s_ci), float(b_mean), float(b_ci)
    )


def _randomization_scores(
    base: Plan, sys_: Plan, col: int, n_trials: int, seed: Any, mode: str, threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """Scores of the two pseudo-systems of each trial (items swapped where the coin says so)."""
    if mode == "sacrebleu":
        rng = np.random.default_rng(seed or None)
        chunks: Any = [rng.integers(2, size=(n_trials, len(base.rows)), dtype=bool)]
    else:
        chunks = _draws("swap", len(base.rows), n_trials, seed, threads)
    exact = base.rows.dtype.kind == "i"
    total_b, total_s = base.rows.sum(axis=0), sys_.rows.sum(axis=0)
    delta = (base.rows - sys_.rows).astype(np.float64)  # integer sums stay exact in float64 below 2**53
    a, b = [], []
    for sel in chunks:
        shuf_a = total_s + sel.astype(np.float64) @ delta  # pos_sel @ bl + neg_sel @ sys
        if exact:
            shuf_a = np.rint(shuf_a).astype(np.int64)
        shuf_b = total_b + total_s - shuf_a
        a.append(base.score(np.ascontiguousarray(shuf_a))[:, col])
        b.append(base.score(np.ascontiguousarray(shuf_b))[:, col])
    return np.concatenate(a), np.concatenate(b)


def _p_value(sample_stats: np.ndarray, observed: float) -> float:
    return (int(np.sum(sample_stats > observed)) + 1) / (len(sample_stats) + 1)


def _numpy_ci(scores: np.ndarray) -> tuple[float, float]:
    """sacrebleu.significance.estimate_ci: numpy mean, 1/40 order statistics."""
    s = np.sort(scores)
    lo = len(s) // 40
    return s.mean(), 0.5 * (s[len(s) - lo - 1] - s[lo])


def _default_ci(scores: np.ndarray) -> tuple[float, float]:
    low, high = _order_interval(scores[:, None], 0.95)
    return math.fsum(scores) / len(scores), 0.5 * float(high[0] - low[0])
