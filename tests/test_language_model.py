"""token_nll and the perplexity family: parity with torch / torchmetrics and slow/."""

import math

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import turbometrics as tm
from turbometrics import slow


def oracle_ppl(logits, targets, ignore_index=-100):
    """exp(F.cross_entropy(...)) computed in float64."""
    x = torch.as_tensor(np.ascontiguousarray(logits, dtype=np.float64))
    t = torch.as_tensor(np.ascontiguousarray(targets, dtype=np.int64))
    return math.exp(F.cross_entropy(x.reshape(-1, x.shape[-1]), t.reshape(-1), ignore_index=ignore_index).item())


def lm_batch(rng, b=4, t=33, v=1000, dtype=np.float32, scale=4.0, pad=0.1):
    logits = (rng.standard_normal((b, t, v)) * scale).astype(dtype)
    targets = rng.integers(0, v, (b, t))
    targets[rng.random((b, t)) < pad] = -100
    return logits, targets


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_perplexity_equals_cross_entropy(rng, dtype, rtol):
    for v in (1, 7, 1000, 50257):
        logits, targets = lm_batch(rng, v=v, dtype=dtype)
        got = tm.perplexity(logits, targets, ignore_index=-100)
        assert got == pytest.approx(oracle_ppl(logits, targets), rel=rtol)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_token_nll_equals_cross_entropy_per_token(rng, dtype, rtol):
    logits, targets = lm_batch(rng, b=3, t=20, v=3001, dtype=dtype, scale=20.0)
    nll = tm.token_nll(logits, targets, ignore_index=-100)
    x = torch.from_numpy(logits.astype(np.float64)).reshape(-1, 3001)
    ce = F.cross_entropy(x, torch.from_numpy(targets).reshape(-1), ignore_index=-100, reduction="none")
    assert nll.dtype == np.float64 and nll.shape == targets.shape
    np.testing.assert_allclose(nll.reshape(-1), ce.numpy(), rtol=rtol, atol=rtol)
    assert (nll[targets == -100] == 0).all()


def test_extreme_logits_are_stable(rng):
    logits = rng.standard_normal((2, 5, 300)) * 1e4  # a naive exp overflows
    logits[0, 0, :150] = -np.inf  # masked vocabulary
    targets = rng.integers(150, 300, (2, 5))
    got = tm.token_nll(logits, targets)
    ce = (
        F.cross_entropy(
            torch.from_numpy(logits).reshape(-1, 300), torch.from_numpy(targets).reshape(-1), reduction="none"
        )
        .numpy()
        .reshape(2, 5)
    )
    np.testing.assert_allclose(got, ce, rtol=1e-12, atol=1e-9)
    assert tm.token_nll(np.array([[0.0, -np.inf]]), [1])[0] == np.inf


@pytest.mark.parametrize("kind", ["float16", "bfloat16-ml", "bfloat16-torch"])
def test_half_precision_logits(rng, kind):
    logits, targets = lm_batch(rng, v=2000)
    if kind == "float16":
        x = logits.astype(np.float16)
        exact = x.astype(np.float64)
    elif kind == "bfloat16-ml":
        x = logits.astype(ml_dtypes.bfloat16)
        exact = x.astype(np.float64)
    else:
        x = torch.from_numpy(logits).bfloat16()
        exact = x.double().numpy()
    assert tm.perplexity(x, targets, ignore_index=-100) == pytest.approx(oracle_ppl(exact, targets), rel=2e-6)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("shift", [0.0, -60.0, -700.0])
def test_half_precision_table_and_its_fallback(rng, dtype, shift):
    """16-bit rows sum e^x from a table of doubles while that sum is a normal double; rows past it (a
    logit of 1000, all logits near -700) take the max-shifted path. Each against float64 on the same
    16-bit values, rows of odd length included, NLLs near 0 (a target at the row's maximum) too."""
    logits, targets = lm_batch(rng, v=999)
    logits = logits + shift
    if shift == 0.0:
        logits[0, 3, 17] = 1000.0  # e^1000 is past double's range: the row's table sum is inf
    logits[1, 2, 5] = logits[1, 2].max() + 30.0  # a near-certain target: an NLL of ~1e-13
    targets[1, 2] = 5
    x = logits.astype(dtype)
    exact = x.astype(np.float64)
    assert tm.perplexity(x, targets, ignore_index=-100) == pytest.approx(oracle_ppl(exact, targets), rel=2e-6)
    keep = targets != -100
    got, want = tm.token_nll(x, targets, ignore_index=-100), tm.token_nll(exact, targets, ignore_index=-100)
    np.testing.assert_allclose(got[keep], want[keep], rtol=2e-6, atol=1e-12)
    assert (got[keep] >= 0).all()


def test_torchmetrics_perplexity(rng):
    from torchmetrics.text import Perplexity

    logits, targets = lm_batch(rng, v=500, dtype=np.float64, scale=1.0)
    metric = Perplexity(ignore_index=-100)
    expect = metric(torch.from_numpy(logits), torch.from_numpy(targets)).item()  # float32 states
    assert tm.perplexity(logits, targets, ignore_index=-100) == pytest.approx(expect, rel=1e-6)


def test_sequence_and_none_reductions_match_their_definitions(rng):
    logits, targets = lm_batch(rng, b=5, t=17, v=300, dtype=np.float64)
    targets[2] = -100  # one sequence entirely padding
    mask = rng.random(targets.shape) > 0.2
    nll = tm.token_nll(logits, targets, ignore_index=-100, mask=mask)
    counted = (targets != -100) & mask
    per_seq = np.array([nll[b][counted[b]].mean() if counted[b].any() else np.nan for b in range(5)])
    none = tm.perplexity(logits, targets, ignore_index=-100, mask=mask, reduction="none")
    np.testing.assert_allclose(none, np.exp(per_seq), rtol=1e-13)
    assert np.isnan(none[2])
    seq = tm.perplexity(logits, targets, ignore_index=-100, mask=mask, reduction="sequence")
    assert seq == pytest.approx(np.exp(np.nanmean(per_seq)), rel=1e-14)
    tok = tm.perplexity(logits, targets, ignore_index=-100, mask=mask)
    assert tok == pytest.approx(np.exp(nll[counted].sum() / counted.sum()), rel=1e-14)


def test_from_variants_agree(rng):
    logits, targets = lm_batch(rng, v=400, dtype=np.float64)
    logp = torch.log_softmax(torch.from_numpy(logits), -1).numpy()
    probs = np.exp(logp)
    expect = tm.perplexity(logits, targets, ignore_index=-100)
    for red in ("token", "sequence", "none"):
        ref = tm.perplexity(logits, targets, ignore_index=-100, reduction=red)
        np.testing.assert_allclose(
            tm.perplexity_from_log_probs(logp, targets, ignore_index=-100, reduction=red), ref, rtol=1e-12
        )
        np.testing.assert_allclose(
            tm.perplexity_from_probs(probs, targets, ignore_index=-100, reduction=red), ref, rtol=1e-12
        )
        nll = tm.token_nll(logits, targets, ignore_index=-100)
        np.testing.assert_allclose(tm.perplexity_from_nll(nll, mask=targets != -100, reduction=red), ref, rtol=1e-15)
        gathered = np.take_along_axis(probs, np.where(targets < 0, 0, targets)[..., None], -1)[..., 0]
        np.testing.assert_allclose(
            tm.perplexity_from_probs(gathered, mask=targets != -100, reduction=red), ref, rtol=1e-12
        )
    assert expect == pytest.approx(oracle_ppl(logits, targets), rel=1e-12)


def test_integer_masks_and_target_dtypes(rng):
    logits, targets = lm_batch(rng, v=100, pad=0.0)
    mask = (rng.random(targets.shape) > 0.3).astype(np.int64)
    ref = tm.perplexity(logits, targets, mask=mask.astype(bool))
    for dt in (np.int8, np.uint8, np.int16, np.int32, np.uint32):
        assert tm.perplexity(logits, targets.astype(dt), mask=mask) == ref


def test_views_and_torch_input(rng):
    logits, targets = lm_batch(rng, b=3, t=12, v=64, pad=0.0)
    ref = oracle_ppl(logits[:, :-1], targets[:, 1:])
    # the usual next-token shift: a non-contiguous (B, T-1, V) view, no copy needed
    assert tm.perplexity(logits[:, :-1], targets[:, 1:]) == pytest.approx(ref, rel=2e-6)
    rev = logits[::-1, :, ::-1]
    assert tm.perplexity(rev, targets[::-1]) == pytest.approx(
        oracle_ppl(np.ascontiguousarray(rev), targets[::-1]), rel=2e-6
    )
    out = tm.token_nll(torch.from_numpy(logits), torch.from_numpy(targets))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    lst = tm.perplexity(logits[0].tolist(), targets[0].tolist())
    assert lst == pytest.approx(oracle_ppl(logits[0].astype(np.float64), targets[0]), rel=1e-12)


def test_all_padding_and_nan_give_nan(rng):
    logits, targets = lm_batch(rng, v=50)
    assert math.isnan(tm.perplexity(logits, np.full_like(targets, -100), ignore_index=-100))
    assert math.isnan(tm.perplexity(logits, targets, mask=np.zeros(targets.shape, bool)))
    assert math.isnan(tm.perplexity(logits, targets, mask=np.zeros(targets.shape, bool), reduction="sequence"))
    assert math.isnan(tm.perplexity_from_nll(np.zeros(4), mask=np.zeros(4, bool)))
    bad = logits.copy()
    bad[0, 0, 7] = np.nan
    targets[0, 0] = 3
    assert math.isnan(tm.perplexity(bad, targets, ignore_index=-100))
    assert np.isnan(tm.token_nll(bad, targets, ignore_index=-100)[0, 0])
    bad[0, 0, 7] = np.inf
    assert math.isnan(tm.perplexity(bad, targets, ignore_index=-100))
    # a NaN in an ignored position does not matter
    targets[0, 0] = -100
    assert not math.isnan(tm.perplexity(bad, targets, ignore_index=-100))


def test_thread_count_does_not_change_bits(rng):
    logits, targets = lm_batch(rng, b=8, t=40, v=3000)
    a = tm.token_nll(logits, targets, ignore_index=-100, num_threads=1)
    b = tm.token_nll(logits, targets, ignore_index=-100, num_threads=2)
    np.testing.assert_array_equal(a, b)
    v1 = tm.topk(logits, 20, num_threads=1)
    v2 = tm.topk(logits, 20, num_threads=3)
    np.testing.assert_array_equal(v1[1], v2[1])


# ---------------------------------------------------------------- slow/ agrees with the fast path

batch_st = st.tuples(st.integers(1, 3), st.integers(1, 6), st.integers(1, 9)).flatmap(
    lambda s: st.tuples(
        st.lists(
            st.lists(st.lists(st.floats(-50, 50), min_size=s[2], max_size=s[2]), min_size=s[1], max_size=s[1]),
            min_size=s[0],
            max_size=s[0],
        ),
        st.lists(st.lists(st.integers(-1, s[2] - 1), min_size=s[1], max_size=s[1]), min_size=s[0], max_size=s[0]),
    )
)


@settings(max_examples=150, deadline=None)
@given(data=batch_st, reduction=st.sampled_from(["token", "sequence", "none"]))
def test_slow_agrees_on_perplexity(data, reduction):
    logits, targets = data
    got = tm.perplexity(np.array(logits), np.array(targets), ignore_index=-1, reduction=reduction)
    want = slow.perplexity(logits, targets, ignore_index=-1, reduction=reduction)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    nll = tm.token_nll(np.array(logits), np.array(targets), ignore_index=-1)
    np.testing.assert_allclose(nll, slow.token_nll(logits, targets, ignore_index=-1), rtol=1e-12, atol=1e-12)


def test_short_way_equals_the_general_path(rng, monkeypatch):
    """Small calls' short way (int64 targets, no mask: the kernel's call checks the targets) gives the
    bits of the general path, and hands everything it does not take to that path (whose errors and NaN
    rules then apply)."""
    from turbometrics import language_model as lm

    def general(logits, targets, **kw):  # a mask of all True forces the general path
        return tm.perplexity(logits, targets, mask=np.ones(np.shape(targets), bool), **kw)

    for v, dtype, pad in [
        (1, np.float32, 0.0),
        (31, np.float32, 0.2),
        (1000, np.float32, 0.1),
        (2049, np.float64, 0.1),
        (4097, ml_dtypes.bfloat16, 0.1),
        (300, np.float16, 0.0),
    ]:
        logits, targets = lm_batch(rng, b=3, t=17, v=v, dtype=dtype, pad=pad)
        assert tm.perplexity(logits, targets, ignore_index=-100) == general(logits, targets, ignore_index=-100)
        assert tm.perplexity(logits[0], targets[0], ignore_index=-100) == general(
            logits[0], targets[0], ignore_index=-100
        )
        strided = (logits[:, ::2], targets[:, ::2])  # views: a strided 1-D row of targets too
        assert tm.perplexity(*strided, ignore_index=-100) == general(*strided, ignore_index=-100)
        row = (logits[0, ::3], targets[0, ::3])
        assert tm.perplexity(*row, ignore_index=-100) == general(*row, ignore_index=-100)
        every = np.ones(targets.shape, bool)
        np.testing.assert_array_equal(
            tm.token_nll(logits, targets, ignore_index=-100),
            tm.token_nll(logits, targets, ignore_index=-100, mask=every),
        )
    many, many_t = lm_batch(rng, b=8, t=64, v=50)  # 512 rows: summed in the bins, past fsum's 256
    assert tm.perplexity(many, many_t, ignore_index=-100) == general(many, many_t, ignore_index=-100)
    assert tm.perplexity(many, many_t.clip(0)) == general(many, many_t.clip(0))
    calls = []
    fail = lambda *a: calls.append(a) or (_ for _ in ()).throw(AssertionError)  # noqa: E731
    monkeypatch.setattr(lm, "_nll", fail)
    monkeypatch.setattr(lm, "_host_nll", fail)
    logits, targets = lm_batch(rng, v=100)
    tm.perplexity(logits, targets, ignore_index=-100)  # taken: no general path
    tm.perplexity(many, many_t, ignore_index=-100)
    tm.perplexity(torch.from_numpy(logits), torch.from_numpy(targets), ignore_index=-100)
    out = tm.token_nll(torch.from_numpy(logits), torch.from_numpy(targets), ignore_index=np.int64(-100))
    assert isinstance(out, torch.Tensor) and out.shape == targets.shape and (out[targets == -100] == 0).all()
    assert not calls
    monkeypatch.undo()
    # not taken, same answers as before: a NaN row, +inf NLLs, an ignore_index past int64, int32 targets
    bad = logits.copy()
    bad[0, 0, 5] = np.nan
    targets[0, 0] = 3
    assert math.isnan(tm.perplexity(bad, targets, ignore_index=-100))
    assert tm.perplexity(np.array([[0.0, -np.inf]]), [1]) == math.inf
    huge = np.array([[1e308, -1e308], [1e308, -1e308]])
    assert tm.perplexity(huge, [0, 1]) == general(huge, [0, 1])
    assert tm.perplexity(logits, targets.clip(0), ignore_index=2**70) == general(logits, targets.clip(0))
    assert tm.perplexity(logits, targets.astype(np.int32), ignore_index=-100) == general(
        logits, targets, ignore_index=-100
    )
    for t, err in [
        (np.full(targets.shape, 100), ValueError),
        (np.full(targets.shape, -5), ValueError),
        (targets.astype(float), TypeError),
        (targets[:, :-1], ValueError),
    ]:
        with pytest.raises(err) as general_err:
            lm._nll(logits, t, -100, None, None, None)
        for f in (tm.perplexity, tm.token_nll):
            for threads in (None, 0):  # the targets' error first, as in the general path
                with pytest.raises(err) as short_err:
                    f(logits, t, ignore_index=-100, num_threads=threads)
                assert str(short_err.value) == str(general_err.value)
    for f in (tm.perplexity, tm.token_nll):  # good targets: the other arguments' errors, worded as before
        with pytest.raises(ValueError, match="num_threads"):
            f(logits, targets, ignore_index=-100, num_threads=0)
        with pytest.raises(TypeError, match="ignore_index"):
            f(logits, targets, ignore_index=-100.0)
