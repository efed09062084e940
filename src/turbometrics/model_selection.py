"""K-fold splitters with scikit-learn's folds, in its order (no scikit-learn import), and cross_validate.

Each splitter yields ``(train_indices, test_indices)`` (sorted int arrays) from
``split(X, y=None, groups=None)``. Shuffling draws from NumPy's legacy
``RandomState`` exactly as scikit-learn does: an int ``random_state`` makes
every ``split()`` call give the same folds, a ``RandomState`` advances, and
``None`` uses NumPy's global RNG.
"""

from __future__ import annotations

import copy
import numbers
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from . import _validate

__all__ = ["KFold", "StratifiedKFold", "RepeatedKFold", "GroupKFold"]


def _n_samples(X: Any, name: str = "X") -> int:
    if X is None:
        raise TypeError(f"{name} must be array-like (its length is the number of samples), got None")
    shape = getattr(X, "shape", None)
    if shape is not None:
        if len(shape) == 0:
            raise TypeError(f"{name} must have at least one dimension")
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        raise TypeError(f"{name} must be array-like, got {type(X).__name__}") from None


def _column(a: Any, name: str, n: int) -> np.ndarray:
    if a is None:
        raise ValueError(f"the {name!r} parameter should not be None")
    arr = np.asarray(a)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} entries but X has {n} samples")
    return arr


class _BaseKFold:
    n_splits: int
    shuffle: bool
    random_state: Any

    def __init__(self, n_splits: int, *, shuffle: bool, random_state: Any) -> None:
        if isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral):
            raise ValueError(f"n_splits must be an integer, got {n_splits!r}")
        if n_splits <= 1:
            raise ValueError(f"k-fold cross-validation needs n_splits >= 2, got {n_splits}")
        if not isinstance(shuffle, bool):
            raise TypeError(f"shuffle must be True or False; got {shuffle!r}")
        if not shuffle and random_state is not None:
            raise ValueError("random_state has no effect since shuffle is False; leave it None or set shuffle=True")
        self.n_splits = int(n_splits)
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        return self.n_splits

    def _test_masks(self, n: int, y: Any, groups: Any) -> Iterator[np.ndarray]:
        raise NotImplementedError

    def split(self, X: Any, y: Any = None, groups: Any = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        n = _n_samples(X)
        if self.n_splits > n:
            raise ValueError(f"cannot have n_splits={self.n_splits} greater than the number of samples: {n}")
        indices = np.arange(n)
        for test in self._test_masks(n, y, groups):
            yield indices[~test], indices[test]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_splits={self.n_splits}, random_state={self.random_state!r}, "
            f"shuffle={self.shuffle})"
        )


def _masks_from_folds(n: int, folds: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    for test_index in folds:
        mask = np.zeros(n, dtype=bool)
        mask[test_index] = True
        yield mask


class KFold(_BaseKFold):
    """scikit-learn's KFold: contiguous folds of sizes n//k (+1 for the first n%k), optionally shuffled."""

    def __init__(self, n_splits: int = 5, *, shuffle: bool = False, random_state: Any = None):
        super().__init__(n_splits, shuffle=shuffle, random_state=random_state)

    def _test_masks(self, n, y, groups):
        indices = np.arange(n)
        if self.shuffle:
            _validate.check_random_state(self.random_state).shuffle(indices)
        sizes = np.full(self.n_splits, n // self.n_splits, dtype=int)
        sizes[: n % self.n_splits] += 1
        stops = np.cumsum(sizes)
        return _masks_from_folds(n, (indices[stop - size : stop] for size, stop in zip(sizes, stops)))


class StratifiedKFold(_BaseKFold):
    """scikit-learn's StratifiedKFold: each fold keeps the class proportions of ``y``.

    Classes are numbered in order of first appearance; class c's samples go to
    folds ``arange(k).repeat(allocation[:, c])`` in sample order (shuffled per
    class with ``shuffle=True``), where allocation comes from dealing the
    sorted labels round-robin over the folds.
    """

    def __init__(self, n_splits: int = 5, *, shuffle: bool = False, random_state: Any = None):
        super().__init__(n_splits, shuffle=shuffle, random_state=random_state)

    def _test_masks(self, n, y, groups):
        y = _column(y, "y", n)
        if y.dtype.kind == "f" and not np.all(np.isfinite(y) & (y == np.round(y))):
            raise ValueError("StratifiedKFold needs class labels (binary or multiclass y), got continuous values")
        if y.dtype.kind not in "iufbUSO":
            raise ValueError(f"y must hold class labels, got dtype {y.dtype}")
        rng = _validate.check_random_state(self.random_state)
        _, first, inverse = np.unique(y, return_index=True, return_inverse=True)
        _, class_perm = np.unique(first, return_inverse=True)
        encoded = class_perm[inverse.reshape(-1)]
        n_classes = len(first)
        counts = np.bincount(encoded)
        if np.all(self.n_splits > counts):
            raise ValueError(f"n_splits={self.n_splits} cannot be greater than the number of members in each class")
        if self.n_splits > counts.min():
            warnings.warn(
                f"The least populated class in y has only {counts.min()} members, which is less than "
                f"n_splits={self.n_splits}.",
                UserWarning,
                stacklevel=3,
            )
        ordered = np.sort(encoded)
        allocation = np.asarray(
            [np.bincount(ordered[i :: self.n_splits], minlength=n_classes) for i in range(self.n_splits)]
        )
        test_folds = np.empty(n, dtype="i")
        for k in range(n_classes):
            folds_for_class = np.arange(self.n_splits).repeat(allocation[:, k])
            if self.shuffle:
                rng.shuffle(folds_for_class)
            test_folds[encoded == k] = folds_for_class
        return (test_folds == i for i in range(self.n_splits))

    def split(self, X, y, groups=None):
        return super().split(X, y, groups)


class GroupKFold(_BaseKFold):
    """scikit-learn's GroupKFold: no group in two folds.

    Without shuffling, groups go largest first to the currently lightest fold
    (the first on ties); with ``shuffle=True`` a permutation of the groups is
    cut into k nearly equal runs (``np.array_split``).
    """

    def __init__(self, n_splits: int = 5, *, shuffle: bool = False, random_state: Any = None):
        super().__init__(n_splits, shuffle=shuffle, random_state=random_state)

    def _test_masks(self, n, y, groups):
        groups = _column(groups, "groups", n)
        unique, group_idx = np.unique(groups, return_inverse=True)
        group_idx = group_idx.reshape(-1)
        if self.n_splits > len(unique):
            raise ValueError(f"cannot have n_splits={self.n_splits} greater than the number of groups: {len(unique)}")
        if self.shuffle:
            perm = _validate.check_random_state(self.random_state).permutation(unique)
            return (np.isin(groups, ids) for ids in np.array_split(perm, self.n_splits))
        sizes = np.bincount(group_idx)
        order = np.argsort(sizes, kind="stable")[::-1]
        fold_weight = np.zeros(self.n_splits)
        group_to_fold = np.zeros(len(unique))
        for rank, weight in enumerate(sizes[order]):  # greedy: one step per group
            lightest = np.argmin(fold_weight)
            fold_weight[lightest] += weight
            group_to_fold[order[rank]] = lightest
        fold_of_sample = group_to_fold[group_idx]
        return (fold_of_sample == f for f in range(self.n_splits))

    def split(self, X, y=None, groups=None):
        return super().split(X, y, groups)


class RepeatedKFold:
    """scikit-learn's RepeatedKFold: ``n_repeats`` shuffled KFolds drawing from one RandomState in turn."""

    n_splits: int
    n_repeats: int
    random_state: Any

    def __init__(self, *, n_splits: int = 5, n_repeats: int = 10, random_state: Any = None) -> None:
        if isinstance(n_repeats, bool) or not isinstance(n_repeats, numbers.Integral):
            raise ValueError(f"n_repeats must be an integer, got {n_repeats!r}")
        if n_repeats <= 0:
            raise ValueError(f"n_repeats must be > 0, got {n_repeats}")
        KFold(n_splits)  # validates n_splits
        self.n_splits, self.n_repeats, self.random_state = int(n_splits), int(n_repeats), random_state

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        return self.n_splits * self.n_repeats

    def split(self, X: Any, y: Any = None, groups: Any = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        rng = _validate.check_random_state(self.random_state)
        for _ in range(self.n_repeats):
            yield from KFold(self.n_splits, shuffle=True, random_state=rng).split(X, y, groups)

    def __repr__(self) -> str:
        return (
            f"RepeatedKFold(n_repeats={self.n_repeats}, n_splits={self.n_splits}, random_state={self.random_state!r})"
        )


# ---------------------------------------------------------------- cross validation

__all__ += ["cross_validate", "CVResult"]


class CVResult(dict):
    """Per-fold metric values with their mean and standard deviation, and fit/score times (seconds).

    A dict with scikit-learn's ``cross_validate`` keys: ``fit_time``,
    ``score_time`` and ``test_<name>`` per metric, each a float64 array with
    one entry per fold (in the splitter's order), so ``pd.DataFrame(res)``
    and code written for scikit-learn work; ``res[name]`` works too.
    ``scores[name]`` (the same arrays by metric name), ``mean[name]``,
    ``std[name]`` (population std, as ``np.std``). Prints as a table.
    """

    def __init__(self, scores: dict[str, np.ndarray], fit_time: np.ndarray, score_time: np.ndarray):
        super().__init__(fit_time=fit_time, score_time=score_time, **{f"test_{k}": v for k, v in scores.items()})
        self.scores = scores
        self.fit_time = fit_time
        self.score_time = score_time
        self.mean = {k: float(np.mean(v)) for k, v in scores.items()}
        self.std = {k: float(np.std(v)) for k, v in scores.items()}

    def __missing__(self, key: str) -> np.ndarray:
        if key in self.scores:  # the bare metric name
            return self.scores[key]
        raise KeyError(key)

    def __str__(self) -> str:
        names = list(self.scores) + ["fit_time", "score_time"]
        cols = {**self.scores, "fit_time": self.fit_time, "score_time": self.score_time}
        width = max(10, *(len(n) for n in names))
        head = f"{'fold':>6} " + " ".join(f"{n:>{width}}" for n in names)
        rows = [f"{i:>6} " + " ".join(f"{cols[n][i]:>{width}.4f}" for n in names) for i in range(len(self.fit_time))]
        mean = f"{'mean':>6} " + " ".join(f"{np.mean(cols[n]):>{width}.4f}" for n in names)
        std = f"{'std':>6} " + " ".join(f"{np.std(cols[n]):>{width}.4f}" for n in names)
        rule = "-" * len(head)
        return "\n".join([head, rule, *rows, rule, mean, std])

    __repr__ = __str__


def _take(data: Any, idx: np.ndarray) -> Any:
    """Rows idx of an ndarray, tensor, DataFrame (by position) or list."""
    if hasattr(data, "iloc"):
        return data.iloc[idx]
    if isinstance(data, (list, tuple)):
        return [data[i] for i in idx]
    return data[idx]


def _fit_predict_of(model: Any, method: str):
    """A function (X_train, y_train, X_test) -> predictions, from an estimator or as given."""
    if not (hasattr(model, "fit") and (hasattr(model, "predict") or hasattr(model, "predict_proba"))):
        if not callable(model):
            raise TypeError(
                "fit_predict must be an estimator (fit + predict) or a function fit_predict(X_train, y_train, X_test)"
            )
        return model
    if method == "auto":
        method = "predict_proba" if hasattr(model, "predict_proba") else "predict"
    if not hasattr(model, method):
        raise ValueError(f"the estimator has no {method!r} method")

    def fit_predict(X_train, y_train, X_test):
        fresh = (
            type(model)(**model.get_params(deep=False)) if hasattr(model, "get_params") else copy.deepcopy(model)
        )  # an unfitted copy per fold, as scikit-learn's clone
        fresh.fit(X_train, y_train)
        return getattr(fresh, method)(X_test)

    return fit_predict


def cross_validate(
    fit_predict: Any, X: Any, y: Any, cv: Any = 5, metrics: dict | None = None, groups: Any = None, method: str = "auto"
) -> CVResult:
    """Evaluate a model with cross validation.

    Parameters
    ----------
    fit_predict : estimator or callable
        A scikit-learn-style estimator (a fresh unfitted copy is trained per
        fold; ``method`` picks ``predict_proba`` when it exists, else
        ``predict``) or any function ``fit_predict(X_train, y_train, X_test)``
        that trains a fresh model and returns predictions or scores for the
        test rows (a PyTorch training loop, say).
    X, y : array-like
    cv : int or splitter
        A number of folds (``KFold``, unshuffled; pass ``StratifiedKFold(k)``
        for scikit-learn's default for classifiers) or any splitter with
        ``split(X, y, groups)``.
    metrics : dict, optional
        Names to ``metric(predictions, y_test)`` (turbometrics' own argument
        order, so ``tm.topk_accuracy`` fits as is).
    groups : array-like, optional
        For group splitters.
    method : str
        The estimator's method that predicts ("auto": ``predict_proba`` where it exists, else ``predict``).

    Returns
    -------
    CVResult
        Per-fold scores and times; prints as a table with mean and std.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> X, y = np.arange(20.0)[:, None], np.arange(20) % 2
    >>> res = tm.cross_validate(lambda Xtr, ytr, Xte: np.eye(2)[(Xte[:, 0] % 2).astype(int)], X, y, cv=4,
    ...                         metrics={"acc": lambda s, t: tm.topk_accuracy(s, t, k=1)})
    >>> res.mean["acc"]
    1.0
    """
    if not isinstance(metrics, Mapping):
        raise TypeError(f"metrics must be a dict of names to metric(predictions, y_test), got {type(metrics).__name__}")
    if not metrics:
        raise ValueError("metrics must map at least one name to a callable metric(predictions, y_test)")
    for name, m in metrics.items():
        if not isinstance(name, str):
            raise TypeError(f"metrics' names must be strings, got {name!r}")
        if not callable(m):
            raise TypeError(f"metrics[{name!r}] must be callable, got {type(m).__name__}")
    if method not in ("auto", "predict", "predict_proba", "decision_function"):
        raise ValueError(f"method must be 'auto', 'predict', 'predict_proba' or 'decision_function'; got {method!r}")
    splitter = KFold(int(cv)) if isinstance(cv, numbers.Integral) and not isinstance(cv, bool) else cv
    if isinstance(cv, (str, bytes)) or not hasattr(splitter, "split"):
        raise TypeError(f"cv must be an int or a splitter with split(X, y, groups), got {type(cv).__name__}")
    if _n_samples(y, "y") != _n_samples(X):
        raise ValueError(f"X has {_n_samples(X)} samples but y has {_n_samples(y, 'y')}")
    run = _fit_predict_of(fit_predict, method)
    values: dict[str, list] = {k: [] for k in metrics}
    fit_time, score_time = [], []
    for train, test in splitter.split(X, y, groups):
        t0 = time.perf_counter()
        pred = run(_take(X, train), _take(y, train), _take(X, test))
        t1 = time.perf_counter()
        y_test = _take(y, test)
        for name, metric in metrics.items():
            values[name].append(float(metric(pred, y_test)))
        fit_time.append(t1 - t0)
        score_time.append(time.perf_counter() - t1)
    return CVResult({k: np.array(v) for k, v in values.items()}, np.array(fit_time), np.array(score_time))
