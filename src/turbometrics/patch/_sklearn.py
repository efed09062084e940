"""scikit-learn >= 1.3: ``sklearn.metrics.top_k_accuracy_score`` ranks on turbometrics' kernel.

The function's code object is swapped (see ``_table``), so every reference to it is covered;
scikit-learn's ``validate_params`` wrapper still checks the parameters first. The fast path takes the
multiclass ranking; binary targets are a threshold, computed as scikit-learn computes it. Input
checks, label encoding and the final average are scikit-learn's own helpers, called as its function
calls them (written against scikit-learn 1.9; the parameters are checked when the patch is applied:
``unknown_parameters``).
"""

from __future__ import annotations

import inspect
import numbers
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ._dispatch import Fallback
from ._swap import original_copy

if TYPE_CHECKING:
    import types

    from ._apply import Site

_PARAMS = ["y_true", "y_score", "k", "normalize", "sample_weight", "labels"]
_DTYPES = {
    np.dtype(t)
    for t in (
        np.float16,
        np.float32,
        np.float64,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
    )
}


def unknown_parameters(func: types.FunctionType) -> str | None:
    """Why not to patch ``func`` (scikit-learn's ``top_k_accuracy_score``, unwrapped): parameters other than
    those the fast path was written for; None if they are the same."""
    names = list(inspect.signature(original_copy(func), follow_wrapped=False).parameters)
    return None if names == _PARAMS else f"sklearn's top_k_accuracy_score takes {names}, not {_PARAMS}"


def _integral(k: Any) -> bool:
    return isinstance(k, numbers.Integral) and not isinstance(k, bool)


def top_k_accuracy_score(
    site: Site, y_true: Any, y_score: Any, k: Any, normalize: Any, sample_weight: Any, labels: Any
) -> Any:
    """``top_k_accuracy_score``, with scikit-learn's own helpers (the globals of its module)."""
    import turbometrics as tm

    g = site.original.__globals__
    if not _integral(k):
        raise Fallback(f"k={k!r}")
    y_true = g["column_or_1d"](g["check_array"](y_true, ensure_2d=False, dtype=None))
    y_type = g["type_of_target"](y_true, input_name="y_true")
    if y_type == "binary" and labels is not None and len(labels) > 2:
        y_type = "multiclass"
    if y_type not in ("binary", "multiclass"):
        raise Fallback(f"y_true: {y_type} targets")
    y_score = g["check_array"](y_score, ensure_2d=False)
    if y_type == "binary":  # a threshold, computed as scikit-learn computes it (no ranking to speed up)
        if y_score.ndim == 2 and y_score.shape[1] != 1:
            raise Fallback(f"y_score: {y_score.shape[1]} columns for binary y_true")
        y_score = g["column_or_1d"](y_score)
    elif y_score.ndim != 2 or y_score.dtype not in _DTYPES:
        raise Fallback(f"y_score: shape {y_score.shape}, dtype {y_score.dtype}")
    g["check_consistent_length"](y_true, y_score, sample_weight)
    if labels is None:
        classes = g["_unique"](y_true)
    else:
        labels = g["column_or_1d"](labels)
        classes = g["_unique"](labels)
        if len(classes) != len(labels) or not np.array_equal(classes, labels) or len(np.setdiff1d(y_true, classes)):
            raise Fallback("labels: not unique, not ordered, or missing a label of y_true")
    n_classes = len(classes)
    if n_classes != (y_score.shape[1] if y_score.ndim == 2 else 2):
        raise Fallback(f"y_score: {y_score.shape} for {n_classes} classes")
    if k >= n_classes:
        warnings.warn(
            f"'k' ({k}) greater than or equal to 'n_classes' ({n_classes}) will result in a perfect "
            "score and is therefore meaningless.",
            g["UndefinedMetricWarning"],
            stacklevel=3,  # the (swapped) top_k_accuracy_score, as scikit-learn's own warning
        )
    y_true_encoded = g["_encode"](y_true, uniques=classes)
    if y_type == "binary":
        if k == 1:
            threshold = 0.5 if y_score.min() >= 0 and y_score.max() <= 1 else 0
            hits = (y_score > threshold).astype(np.int64) == y_true_encoded
        else:
            hits = np.ones_like(y_score, dtype=np.bool_)
    else:
        hits = tm.target_rank(y_score, y_true_encoded, ties="sklearn") < k
    if normalize:  # scikit-learn's own reduction of the hits
        score = np.average(hits, weights=sample_weight)
    elif sample_weight is None:
        score = np.sum(hits)
    else:
        score = np.dot(hits, sample_weight)
    # the release's type: a Python float where its code calls float() (1.9 does), else the NumPy scalar
    # (1.4 returns np.float64, or np.int64 for an unweighted count)
    return float(score) if "float" in site.original.__code__.co_names else score
