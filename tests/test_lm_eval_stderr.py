"""lm-evaluation-harness's bootstrap standard errors under ``tm.patch(["lm_eval"])``: ``bootstrap_stderr`` of
perplexity, F1, MCC, BLEU, chrF, chrF++ and TER gives the original's float bit for bit (the same
``random.Random(c).choices`` resamples, drawn in compiled code), on generated items and on WMT17, through the
harness's own ``stderr_for_metric`` and ``simple_evaluate``; what it does not reproduce runs the original."""

import logging
import math
import random
import re
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

lm_metrics = pytest.importorskip("lm_eval.api.metrics")

import turbometrics as tm  # noqa: E402
from turbometrics import _python_rng  # noqa: E402
from turbometrics._ext import _dense  # noqa: E402
from turbometrics.patch import PatchFallbackError, calls  # noqa: E402

LABEL = "lm_eval bootstrap_stderr"


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("TURBOMETRICS_PATCH_STRICT", "1")
    monkeypatch.setenv("DISABLE_MULTIPROC", "1")  # the original in this process: the same resamples as its pool
    tm.unpatch()
    yield
    tm.unpatch()


def accelerated():
    return calls().get((LABEL, "accelerated"), 0)


def both(f, xs, iters):
    """(original, patched) bootstrap_stderr, the patched call counted as accelerated."""
    want = lm_metrics.bootstrap_stderr(f, xs, iters)
    tm.patch(["lm_eval"])
    start = accelerated()
    got = lm_metrics.bootstrap_stderr(f, xs, iters)
    assert accelerated() == start + 1
    tm.unpatch()
    return want, got


def same(a, b):
    assert type(a) is type(b) and (a.hex() == b.hex() or math.isnan(a) and math.isnan(b)), (a, b)


# ---------------------------------------------------------------- the draws and the sums


def test_draws_are_pythons_own():
    rng = np.random.default_rng(0)
    # resamples are summed 8 at a time up to n = 32,768 (then fewer): groups cut short, across the blocks of draws
    for n, R in ((1, 4), (2, 19), (7, 19), (1000, 4), (5153, 9), (40000, 7)):
        rows = rng.integers(-(2**40), 2**40, size=(n, 3))
        out = _dense.python_choice_sums(5, 3, R, rows, 0, 2)
        for c in range(3):
            g = random.Random(5 + c)
            for r in range(R):
                np.testing.assert_array_equal(out[c * R + r], rows[g.choices(range(n), k=n)].sum(0))
    big = 2**40 + 3  # a seed of two 32-bit words
    g = random.Random(big)
    assert _dense.python_choice_sums(big, 1, 1, np.arange(9)[:, None], 0, 1)[0, 0] == sum(g.choices(range(9), k=9))


def neumaier_sum(xs):
    """CPython 3.12's float loop of ``sum`` (bltinmodule.c), for the mode this Python does not run."""
    s, c = 0 + xs[0], 0.0
    for x in xs[1:]:
        t = s + x
        c += (s - t) + x if abs(s) >= abs(x) else (x - t) + s
        s = t
    return s + c if c and math.isfinite(c) else s


floats = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from([-0.0, 5e-324, 1e308, -1e16])


@settings(max_examples=150, deadline=None)
@given(st.lists(floats, min_size=1, max_size=40), st.integers(0, 2**33))
def test_float_sums_in_draw_order_as_pythons_sum(xs, seed):
    rows = np.array(xs, dtype=np.float64)[:, None]
    plain, neumaier = (_dense.python_choice_sums(seed, 1, 6, rows, m, 1)[:, 0].tolist() for m in (0, 1))
    g = random.Random(seed)
    for p, q in zip(plain, neumaier, strict=True):
        draw = g.choices(xs, k=len(xs))
        want_plain, want_neumaier = 0.0, neumaier_sum(draw)
        for x in draw:
            want_plain += x
        same(p, want_plain)
        same(q, want_neumaier)
        same({0: p, 1: q}[_python_rng.sum_mode()], sum(draw))  # and the one this Python runs is its sum


def test_the_sum_mode_is_found_from_sum_itself():
    assert _python_rng.sum_mode() == (_python_rng.NEUMAIER if sys.version_info >= (3, 12) else _python_rng.PLAIN)


# ---------------------------------------------------------------- the statistics


log_likelihoods = st.floats(-300, 0) | st.sampled_from([-0.0, 0.0, -5e-324, -1e-300, -math.inf, math.nan])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(log_likelihoods, min_size=1, max_size=60))
def test_perplexity_bit_for_bit(strict, xs):
    want, got = both(lm_metrics.perplexity, xs, 2000)
    same(got, want)


def test_perplexity_of_lambada_sized_items_and_numpy_floats(strict):
    rng = np.random.default_rng(1)
    lls = -rng.exponential(2.0, 5153)
    for xs in (lls.tolist(), list(lls)):  # Python floats; NumPy float64s (sum adds those one at a time)
        want, got = both(lm_metrics.perplexity, xs, 3000)
        same(got, want)


def pairs(rng, n, p_gold=0.5, p_agree=0.7, numpy_preds=True):
    gold = (rng.random(n) < p_gold).astype(int)
    pred = np.where(rng.random(n) < p_agree, gold, 1 - gold)
    return [(int(g), np.int64(p) if numpy_preds else int(p)) for g, p in zip(gold, pred)]


@pytest.mark.parametrize("f", ["f1_score", "matthews_corrcoef"])
@pytest.mark.parametrize("n, p_gold", [(408, 0.68), (1043, 0.3), (40, 0.5), (3, 0.5)])
def test_f1_and_mcc_bit_for_bit(strict, f, n, p_gold):
    xs = pairs(np.random.default_rng(n), n, p_gold)
    f = getattr(lm_metrics, f)
    if n == 3 and f is lm_metrics.f1_score:  # some resample of 3 has no positive: sklearn's warning and 0.0
        with pytest.raises(PatchFallbackError, match="neither a true nor a predicted positive"):
            both(f, xs, 1000)
        return
    want, got = both(f, xs, 2000)  # MCC of 3: resamples with one label, sklearn's 0.0
    same(got, want)


def test_the_harness_own_stderr_functions_are_served(strict):
    xs = pairs(np.random.default_rng(2), 300, numpy_preds=False)
    for agg in (lm_metrics.f1_score, lm_metrics.matthews_corrcoef, lm_metrics.perplexity):
        items = [-float(i % 7) / 3 for i in range(300)] if agg is lm_metrics.perplexity else xs
        want = lm_metrics.stderr_for_metric(agg, 1500)(items)
        tm.patch(["lm_eval"])
        got = lm_metrics.stderr_for_metric(agg, 1500)(items)
        tm.unpatch()
        same(got, want)


@pytest.mark.parametrize("f", ["bleu", "chrf", "chrfpp", "ter"])
@pytest.mark.parametrize("refs", [1, 2])
def test_sacrebleu_statistics_bit_for_bit(strict, wmt17, f, refs):
    ref, (hyp, other) = wmt17["ref"], list(wmt17["systems"].values())[:2]
    n = 200 if f in ("bleu", "chrf") else 80
    xs = [(r if refs == 1 else [r, o], h) for r, h, o in zip(ref[:n], hyp[:n], other[:n])]
    xs[3] = (("" if refs == 1 else ["", ""]), xs[3][1])  # an empty reference
    want, got = both(getattr(lm_metrics, f), xs, 100)
    same(got, want)


def test_the_pool_gives_what_the_patch_gives(monkeypatch):
    monkeypatch.delenv("DISABLE_MULTIPROC", raising=False)  # the harness's process pool, as users run it
    xs = pairs(np.random.default_rng(4), 200)
    want = lm_metrics.bootstrap_stderr(lm_metrics.matthews_corrcoef, xs, 2000)
    tm.patch(["lm_eval"])
    try:
        same(lm_metrics.bootstrap_stderr(lm_metrics.matthews_corrcoef, xs, 2000), want)
    finally:
        tm.unpatch()


# ---------------------------------------------------------------- what runs the original


@pytest.mark.parametrize(
    "f, xs, why",
    [
        (lm_metrics.median, [0.5, 0.25, 1.0], "no fast path for the statistic 'median'"),
        (lm_metrics.nanmean, [0.5, math.nan, 1.0], "no fast path for the statistic 'nanmean'"),
        (lm_metrics.perplexity, [-1.0, np.float32(-2.0)], "log-likelihoods of types"),
        (lm_metrics.perplexity, [-1.0, -2], "log-likelihoods of types"),
        (lm_metrics.f1_score, [(0, 1), (2, 1), (1, 1)], "the fast path takes the ints 0 and 1"),
        (lm_metrics.matthews_corrcoef, [(True, 1), (0, 0)], "the fast path takes the ints 0 and 1"),
        (lm_metrics.matthews_corrcoef, [(1, 1, 0), (0, 0, 1)], "not a \\(gold, pred\\) pair"),
        (lm_metrics.bleu, [("a b", "a"), (["a", "b"], "a")], "different numbers of references"),
        (lm_metrics.bleu, [("a b", ["a"])], "a hypothesis that is not a str"),
    ],
)
def test_what_it_does_not_reproduce_runs_the_original(strict, f, xs, why, caplog):
    tm.patch(["lm_eval"], verbose=True)
    with caplog.at_level(logging.INFO, logger="turbometrics.patch"):
        try:
            lm_metrics.bootstrap_stderr(f, xs, 1000)
        except PatchFallbackError:
            pass  # strict mode, where the original itself does not fail
        except (ValueError, AttributeError):
            pass  # the original's own error: labels it rejects, references it cannot read
    assert any(re.search(why, r.getMessage()) for r in caplog.records if "fallback" in r.getMessage())


def test_a_statistic_of_the_users_own_runs_the_original(strict):
    tm.patch(["lm_eval"])
    mine = lambda items: sum(items) / len(items)  # noqa: E731
    mine.__name__ = "perplexity"  # named as the harness's, but not it
    with pytest.raises(PatchFallbackError, match="no fast path"):
        lm_metrics.bootstrap_stderr(mine, [1.0, 2.0], 1000)


def test_iters_below_a_chunk_and_zero(strict):
    xs = pairs(np.random.default_rng(6), 50)
    want, got = both(lm_metrics.matthews_corrcoef, xs, 250)  # one chunk of 250
    same(got, want)
    tm.patch(["lm_eval"])
    with pytest.raises(ZeroDivisionError):  # the original's own error (chunk_size 0), strict or not
        lm_metrics.bootstrap_stderr(lm_metrics.matthews_corrcoef, xs, 0)


# ---------------------------------------------------------------- as the harness runs it


def test_simple_evaluate_gives_the_same_stderrs(tmp_path, monkeypatch, strict):
    """A local two-choice task with acc, F1 and MCC and a LAMBADA-style perplexity task, on the harness's dummy
    model (random log-likelihoods from ``random``, which ``simple_evaluate`` seeds): the same results dict."""
    import json

    import datasets.config
    import huggingface_hub.constants
    import lm_eval
    from lm_eval.tasks import TaskManager

    # offline, as read at import: else the datasets library asks the hub first (100 s without a network)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    rng = np.random.default_rng(8)
    docs = [{"q": f"q{i}", "label": int(rng.integers(2))} for i in range(60)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    common = f"dataset_path: json\ntest_split: test\ndataset_kwargs:\n  data_files:\n    test: {tmp_path / 'd.jsonl'}\n"
    (tmp_path / "tm_glue.yaml").write_text(
        f"task: tm_glue\n{common}output_type: multiple_choice\ndoc_to_text: '{{{{q}}}}'\ndoc_to_target: label\n"
        "doc_to_choice: ['no', 'yes']\nmetric_list:\n  - metric: acc\n  - metric: f1\n  - metric: mcc\n"
    )
    (tmp_path / "tm_lambada.yaml").write_text(
        f"task: tm_lambada\n{common}output_type: loglikelihood\ndoc_to_text: '{{{{q}}}}'\ndoc_to_target: ' end'\n"
        "metric_list:\n  - metric: perplexity\n  - metric: acc\n"
    )
    tasks = TaskManager(include_path=str(tmp_path), include_defaults=False)

    def run():
        out = lm_eval.simple_evaluate(model="dummy", tasks=["tm_glue", "tm_lambada"], task_manager=tasks,
                                      bootstrap_iters=1000)  # fmt: skip
        return {t: {k: v for k, v in r.items() if k != "alias"} for t, r in out["results"].items()}

    want = run()
    tm.patch(["lm_eval"])
    start = accelerated()
    got = run()
    assert accelerated() == start + 3  # f1, mcc, perplexity
    assert got == want
    assert all(
        isinstance(want[t][f"{m}_stderr,none"], float) for t, m in [("tm_glue", "f1"), ("tm_lambada", "perplexity")]
    )
