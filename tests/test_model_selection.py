"""Folds identical to scikit-learn's, in the same order, for many (n, k, seed, shuffle)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import model_selection as skm

import turbometrics as tm


def same_folds(ours, theirs):
    ours, theirs = list(ours), list(theirs)
    assert len(ours) == len(theirs)
    for (a_train, a_test), (b_train, b_test) in zip(ours, theirs):
        np.testing.assert_array_equal(a_train, b_train)
        np.testing.assert_array_equal(a_test, b_test)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 60), k=st.integers(2, 8), shuffle=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_kfold(n, k, shuffle, seed):
    k = min(k, n)
    rs = seed if shuffle else None
    X = np.zeros((n, 2))
    same_folds(
        tm.KFold(k, shuffle=shuffle, random_state=rs).split(X), skm.KFold(k, shuffle=shuffle, random_state=rs).split(X)
    )


@settings(max_examples=200, deadline=None)
@given(
    labels=st.lists(st.sampled_from(["a", "b", "c", 7]), min_size=4, max_size=60).filter(
        lambda ys: len(set(map(str, ys))) > 1
    ),
    k=st.integers(2, 5),
    shuffle=st.booleans(),
    seed=st.integers(0, 10**6),
)
def test_stratified_kfold_with_uneven_classes(labels, k, shuffle, seed):
    y = np.array([str(v) for v in labels])
    counts = np.unique(y, return_counts=True)[1]
    if np.all(k > counts) or k > len(y):
        return
    rs = seed if shuffle else None
    X = np.zeros(len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        same_folds(
            tm.StratifiedKFold(k, shuffle=shuffle, random_state=rs).split(X, y),
            skm.StratifiedKFold(k, shuffle=shuffle, random_state=rs).split(X, y),
        )


@settings(max_examples=150, deadline=None)
@given(
    groups=st.lists(st.integers(0, 12), min_size=3, max_size=60),
    k=st.integers(2, 5),
    shuffle=st.booleans(),
    seed=st.integers(0, 10**6),
)
def test_group_kfold(groups, k, shuffle, seed):
    g = np.array(groups)
    if k > len(np.unique(g)):
        return
    rs = seed if shuffle else None
    X = np.zeros(len(g))
    same_folds(
        tm.GroupKFold(k, shuffle=shuffle, random_state=rs).split(X, groups=g),
        skm.GroupKFold(k, shuffle=shuffle, random_state=rs).split(X, groups=g),
    )


@pytest.mark.parametrize("n,k,reps", [(10, 2, 3), (37, 5, 4), (100, 10, 2)])
def test_repeated_kfold(n, k, reps):
    X = np.zeros(n)
    same_folds(
        tm.RepeatedKFold(n_splits=k, n_repeats=reps, random_state=42).split(X),
        skm.RepeatedKFold(n_splits=k, n_repeats=reps, random_state=42).split(X),
    )
    assert tm.RepeatedKFold(n_splits=k, n_repeats=reps).get_n_splits() == k * reps


def test_random_state_objects_and_the_global_rng():
    X = np.zeros(25)
    ours, theirs = np.random.RandomState(3), np.random.RandomState(3)
    for _ in range(3):  # a RandomState advances from one split() call to the next
        same_folds(
            tm.KFold(4, shuffle=True, random_state=ours).split(X),
            skm.KFold(4, shuffle=True, random_state=theirs).split(X),
        )
    np.random.seed(11)
    a = list(tm.KFold(4, shuffle=True).split(X))
    np.random.seed(11)
    same_folds(a, skm.KFold(4, shuffle=True).split(X))
    y = np.array([0, 1] * 12 + [2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours, theirs = np.random.RandomState(5), np.random.RandomState(5)
        for _ in range(2):
            same_folds(
                tm.StratifiedKFold(3, shuffle=True, random_state=ours).split(X, y),
                skm.StratifiedKFold(3, shuffle=True, random_state=theirs).split(X, y),
            )


def test_lists_and_float_labels():
    same_folds(
        tm.StratifiedKFold(2).split(list(range(6)), [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]),
        skm.StratifiedKFold(2).split(list(range(6)), [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]),
    )


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: tm.KFold(1), ValueError, "n_splits >= 2"),
        (lambda: tm.KFold(2.5), ValueError, "n_splits must be an integer"),
        (lambda: tm.KFold(3, random_state=1), ValueError, "random_state has no effect"),
        (lambda: tm.KFold(3, shuffle=1), TypeError, "shuffle must be True or False"),
        (lambda: list(tm.KFold(5).split(np.zeros(3))), ValueError, "greater than the number of samples"),
        (lambda: list(tm.KFold(2, shuffle=True, random_state="x").split(np.zeros(4))), ValueError, "random_state"),
        (lambda: list(tm.StratifiedKFold(2).split(np.zeros(4), [0.5, 1.5, 0.5, 2.0])), ValueError, "continuous"),
        (lambda: list(tm.StratifiedKFold(3).split(np.zeros(4), [0, 0, 1, 1])), ValueError, "number of members"),
        (lambda: list(tm.StratifiedKFold(2).split(np.zeros(4), [0, 1, 0])), ValueError, "y has 3 entries"),
        (lambda: list(tm.GroupKFold(2).split(np.zeros(4))), ValueError, "'groups' parameter should not be None"),
        (lambda: list(tm.GroupKFold(3).split(np.zeros(4), groups=[1, 1, 2, 2])), ValueError, "number of groups"),
        (lambda: tm.RepeatedKFold(n_repeats=0), ValueError, "n_repeats must be > 0"),
        (lambda: list(tm.KFold(2).split(None)), TypeError, "X must be array-like"),
    ],
)
def test_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_cross_validate_equals_scikit_learn_with_an_estimator():
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    X, y = make_classification(n_samples=300, n_features=8, n_informative=5, n_classes=3, random_state=0)
    est = LogisticRegression(max_iter=500)
    theirs = skm.cross_validate(est, X, y, cv=skm.StratifiedKFold(5), scoring="accuracy")["test_score"]
    res = tm.cross_validate(
        est, X, y, cv=tm.StratifiedKFold(5), method="predict", metrics={"accuracy": lambda p, t: np.mean(p == t)}
    )
    np.testing.assert_array_equal(res["accuracy"], theirs)
    top2 = tm.cross_validate(
        est, X, y, cv=tm.StratifiedKFold(5), metrics={"top2": lambda p, t: tm.topk_accuracy(p, t, k=2)}
    )  # predict_proba scores straight into a turbometrics metric
    assert top2.scores["top2"].shape == (5,) and np.all(top2["top2"] >= res["accuracy"])
    assert res.mean["accuracy"] == pytest.approx(np.mean(theirs)) and res.std["accuracy"] == np.std(theirs)


def test_cross_validate_with_a_function_and_a_printed_table():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.01 * rng.standard_normal(120)

    def least_squares(X_train, y_train, X_test):
        w, *_ = np.linalg.lstsq(X_train, y_train, rcond=None)
        return X_test @ w

    res = tm.cross_validate(least_squares, X, y, cv=4, metrics={"mse": lambda p, t: np.mean((p - t) ** 2)})
    assert res["mse"].shape == (4,) and res.mean["mse"] < 1e-3
    assert len(res.fit_time) == len(res.score_time) == 4
    table = str(res)
    assert "fold" in table and "mse" in table and "mean" in table and "fit_time" in table
    assert len(table.splitlines()) == 2 + 4 + 3


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: tm.cross_validate(lambda a, b, c: c, np.zeros(4), np.zeros(4), metrics={}),
            ValueError,
            "metrics must",
        ),
        (
            lambda: tm.cross_validate(lambda a, b, c: c, np.zeros(4), np.zeros(4), cv=2, metrics={"m": 3}),
            TypeError,
            r"metrics\['m'\] must be callable",
        ),
        (
            lambda: tm.cross_validate(3, np.zeros(4), np.zeros(4), cv=2, metrics={"m": np.mean}),
            TypeError,
            "fit_predict must be",
        ),
        (
            lambda: tm.cross_validate(lambda a, b, c: c, np.zeros(4), np.zeros(5), cv=2, metrics={"m": np.mean}),
            ValueError,
            "X has 4 samples but y has 5",
        ),
        (
            lambda: tm.cross_validate(lambda a, b, c: c, np.zeros(4), np.zeros(4), cv="5", metrics={"m": np.mean}),
            TypeError,
            "cv must be an int or a splitter",
        ),
    ],
)
def test_cross_validate_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
