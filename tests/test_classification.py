"""topk, target_rank, topk_accuracy, mean_reciprocal_rank: parity with their oracles and slow/."""

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import top_k_accuracy_score

import turbometrics as tm
from turbometrics import slow
from turbometrics.classification import TIES


def ref_topk_indices(x, k, largest=True):
    """Our documented order by a stable sort: value (NaN beyond numbers), then the lower index."""
    x = np.asarray(x, dtype=np.float64)
    nan = np.isnan(x)
    key = np.where(nan, 0.0, -x if largest else x)
    # lexsort: last key is primary. NaN first for largest, last for smallest.
    group = np.where(nan, 0 if largest else 1, 1 if largest else 0)
    idx = np.arange(x.shape[-1])
    order = np.lexsort((np.broadcast_to(idx, x.shape), key, group), axis=-1)
    return order[..., :k]


# ---------------------------------------------------------------- topk_accuracy vs scikit-learn


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.uint16, np.float16])
def test_topk_accuracy_equals_sklearn_with_ties(rng, dtype):
    n, c = 3000, 9
    scores = rng.integers(0, 4, (n, c)).astype(dtype)  # small integers: ties everywhere
    targets = rng.integers(0, c, n)
    weights = rng.random(n)
    for k in range(1, c + 1):
        expect = top_k_accuracy_score(targets, scores.astype(np.float64), k=k, labels=np.arange(c))
        assert tm.topk_accuracy(scores, targets, k=k) == expect
        expect_w = top_k_accuracy_score(
            targets, scores.astype(np.float64), k=k, labels=np.arange(c), sample_weight=weights
        )
        assert tm.topk_accuracy(scores, targets, k=k, sample_weight=weights) == expect_w


def test_topk_accuracy_bfloat16_equals_sklearn(rng):
    n, c = 2000, 12
    scores = rng.integers(-3, 3, (n, c)).astype(np.float32)
    targets = rng.integers(0, c, n)
    expect = [top_k_accuracy_score(targets, scores, k=k, labels=np.arange(c)) for k in (1, 3, 5)]
    got_ml = tm.topk_accuracy(scores.astype(ml_dtypes.bfloat16), targets, k=(1, 3, 5))
    got_torch = tm.topk_accuracy(torch.from_numpy(scores).bfloat16(), torch.from_numpy(targets), k=(1, 3, 5))
    np.testing.assert_array_equal(got_ml, expect)
    np.testing.assert_array_equal(got_torch, expect)


def test_topk_accuracy_tuple_k_is_one_pass_of_the_same_numbers(rng):
    scores = rng.standard_normal((500, 20)).astype(np.float32)
    targets = rng.integers(0, 20, 500)
    ks = (1, 2, 5, 20)
    got = tm.topk_accuracy(scores, targets, k=ks)
    assert isinstance(got, np.ndarray) and got.shape == (4,)
    assert list(got) == [tm.topk_accuracy(scores, targets, k=k) for k in ks]


def test_tie_rules(rng):
    s = np.array([[1.0, 2.0, 2.0, 2.0, 0.0]])
    # target 2 ties with classes 1 and 3
    assert tm.target_rank(s, [2], ties="sklearn")[0] == 1  # only the higher index (3) is ahead
    assert tm.target_rank(s, [2], ties="optimistic")[0] == 0
    assert tm.target_rank(s, [2], ties="pessimistic")[0] == 2
    assert tm.target_rank(s, [4], ties="sklearn")[0] == 4


def test_nan_scores_rank_above_numbers():
    s = np.array([[0.0, np.nan, 5.0, np.nan]])
    assert tm.target_rank(s, [2])[0] == 2  # both NaNs beat 5
    assert tm.target_rank(s, [1])[0] == 1  # sklearn rule: the later NaN ties ahead
    assert tm.target_rank(s, [1], ties="optimistic")[0] == 0
    h = s.astype(np.float16)
    assert list(
        tm.target_rank(
            h,
            [
                2,
            ],
        )
    ) == [2]
    assert tm.target_rank(h, [1])[0] == 1


def test_signed_zero_ties_in_half_precision():
    s = np.array([[0.0, -0.0, 1.0]], dtype=np.float16)
    assert tm.target_rank(s, [0])[0] == 2  # -0.0 == +0.0 and has the higher index
    assert tm.target_rank(s.astype(ml_dtypes.bfloat16), [0])[0] == 2


# ---------------------------------------------------------------- the rank count vs NumPy

RANK_DTYPES = [
    np.float16,
    ml_dtypes.bfloat16,
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
]


def ref_ranks(x, targets, ties):
    """The documented count in NumPy: ahead = greater or NaN; a NaN target has nothing ahead and ties NaNs;
    ties count before the target (pessimistic) and after it (sklearn, pessimistic)."""
    f = x.astype(np.float64) if x.dtype.kind in "fV" else x  # every 16-bit float is exact in float64
    n = np.arange(len(f))
    st = f[n, targets][:, None]
    if f.dtype.kind == "f":
        nan_t = np.isnan(st)
        gt = ~nan_t & ~(f <= st)
        eq = np.where(nan_t, np.isnan(f), f == st)
    else:
        gt, eq = f > st, f == st
    idx = np.arange(f.shape[1])
    before, after = idx < targets[:, None], idx > targets[:, None]
    b, a = {"sklearn": (0, 1), "optimistic": (0, 0), "pessimistic": (1, 1)}[ties]
    return gt.sum(1) + b * (eq & before).sum(1) + a * (eq & after).sum(1)


def rank_rows_for(rng, v, dtype):
    """30 rows of width v, few distinct values (ties everywhere), the target tied at both ends of its row and
    at the edges of the kernels' steps, and for floats NaN, +-inf and -0.0 (NaN and inf targets too) and rows
    of one value."""
    x = rng.integers(0, 4, (30, v)).astype(np.float64)
    t = rng.integers(0, v, 30)
    t[:4], t[4:8] = 0, v - 1  # the target at either end, tied with the other end
    t[14:26] = np.clip([7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, v - 2], 0, v - 1)  # about a step's edges
    x[:8, 0] = x[:8, -1] = x[:8, v // 2]
    x[8] = 2.0
    if np.dtype(dtype).kind in "fV":
        special = rng.random(x.shape)
        x[special < 0.06] = np.nan
        x[(special >= 0.06) & (special < 0.1)] = np.inf
        x[(special >= 0.1) & (special < 0.13)] = -np.inf
        x[(special >= 0.13) & (special < 0.2)] = -0.0  # ties +0.0
        x[(special >= 0.2) & (special < 0.27)] = 0.0
        x[9, t[9]] = np.nan
        x[10, t[10]] = np.inf
        x[11] = np.nan
        x[12, :] = -0.0
        x[12, ::3] = 0.0
        x[13] = x[13] * 1e-3 - 2.5  # fractions: the 16-bit types round some together
    return x.astype(dtype), t


@pytest.mark.parametrize("dtype", RANK_DTYPES, ids=lambda d: np.dtype(d).name)
def test_rank_count_equals_numpy(rng, dtype):
    """Every width around the kernels' steps (16 to 128 values, one register to a step of four) and past an
    8-bit lane's 127 steps; test_simd_paths runs this file on every SIMD path."""
    for v in (1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4099, 20000, 40000):
        x, t = rank_rows_for(rng, v, dtype)
        for ties in TIES:
            got = tm.target_rank(x, t, ties=ties, num_threads=2)
            np.testing.assert_array_equal(got, ref_ranks(x, t, ties), err_msg=f"{v} {ties}")
            rev = np.ascontiguousarray(x[:, ::-1])  # the same rows mirrored: ties at the other end
            np.testing.assert_array_equal(
                tm.target_rank(rev, v - 1 - t, ties=ties),
                ref_ranks(rev, v - 1 - t, ties),
                err_msg=f"{v} {ties} mirrored",
            )


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.int16, np.uint16], ids=lambda d: np.dtype(d).name)
def test_rank_count_of_a_row_past_a_16_bit_lane(rng, dtype):
    """A 16-bit lane holds 32767 counts: a row of 3,000,000 (over 2**20 steps of every path) is counted in
    several rounds."""
    x = rng.integers(0, 3, (1, 3_000_000)).astype(dtype)
    for t in (0, 1_500_000, 2_999_999):
        tt = np.array([t])
        for ties in TIES:
            assert tm.target_rank(x, tt, ties=ties)[0] == ref_ranks(x, tt, ties)[0]


def test_rank_rows_binding_skips_negative_targets_and_refuses_out_of_range():
    from turbometrics._ext import _dense

    x = np.array([[[1.0, 3.0, 2.0], [3.0, 3.0, 3.0]]], np.float32)
    got = _dense.rank_rows(x, 2, np.array([0, -1], np.int64), False, True, 1)
    assert list(got) == [2, -1]
    with pytest.raises(ValueError, match="target out of range"):
        _dense.rank_rows(x, 2, np.array([0, 3], np.int64), False, True, 1)
    with pytest.raises(ValueError, match="one entry per row"):
        _dense.rank_rows(x, 2, np.array([0], np.int64), False, True, 1)


def test_ignore_index_and_mrr(rng):
    scores = rng.integers(0, 5, (400, 6)).astype(np.float32)
    targets = rng.integers(0, 6, 400)
    targets[::7] = -100
    keep = targets != -100
    expect = top_k_accuracy_score(targets[keep], scores[keep], k=2, labels=np.arange(6))
    assert tm.topk_accuracy(scores, targets, k=2, ignore_index=-100) == expect
    ranks = tm.target_rank(scores[keep], targets[keep])
    assert tm.mean_reciprocal_rank(scores, targets, ignore_index=-100) == pytest.approx(
        np.mean(1.0 / (ranks + 1)), rel=1e-15
    )


def test_batched_scores_and_torch_io(rng):
    scores = torch.from_numpy(rng.standard_normal((3, 4, 10)).astype(np.float32))
    targets = torch.from_numpy(rng.integers(0, 10, (3, 4)).astype(np.int32))
    r = tm.target_rank(scores, targets)
    assert isinstance(r, torch.Tensor) and r.shape == (3, 4) and r.dtype == torch.int64
    flat = tm.target_rank(scores.reshape(12, 10).numpy(), targets.reshape(12).numpy())
    np.testing.assert_array_equal(r.reshape(-1).numpy(), flat)


def test_views_give_the_same_ranks(rng):
    base = rng.integers(0, 3, (60, 40)).astype(np.float64)
    targets = rng.integers(0, 20, 30)
    for view in (base[::2, :20], base[::-2, 20:], base[:30, ::-2], np.asfortranarray(base)[:30, :20]):
        expect = top_k_accuracy_score(targets, np.ascontiguousarray(view), k=3, labels=np.arange(20))
        assert tm.topk_accuracy(view, targets, k=3) == expect


# ---------------------------------------------------------------- topk vs torch.topk


@pytest.mark.parametrize(
    "dtype", [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.uint64]
)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_equal_torch_and_indices_follow_tie_rule(rng, dtype, largest):
    x = rng.integers(0, 50, (37, 3000)).astype(dtype)  # many ties
    for k in (1, 7, 50, 3000):
        v, i = tm.topk(x, k, largest=largest)
        tv, _ = torch.topk(torch.from_numpy(x.astype(np.float64)), k, largest=largest)
        np.testing.assert_array_equal(v.astype(np.float64), tv.numpy())
        np.testing.assert_array_equal(i, ref_topk_indices(x, k, largest))
        assert v.dtype == x.dtype and i.dtype == np.int64


@settings(max_examples=100, deadline=None)
@given(
    data=st.data(),
    n=st.integers(33, 300),
    k=st.integers(1, 20),
    largest=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float16, np.float64]),
)
def test_topk_small_k_heap_with_nan_inf_and_ties(data, n, k, largest, dtype):
    """k <= 16 keeps a heap and scans 32 at a time: NaN (a NaN threshold too), +-inf and ties anywhere in
    rows longer than one scan, on both sides of the heap/buffer switch (k = 16, 17)."""
    k = min(k, n)
    vals = st.sampled_from([0.0, 1.0, -1.0, 2.0, float("nan"), float("inf"), float("-inf")]) | st.floats(-9, 9)
    x = np.array(data.draw(st.lists(st.lists(vals, min_size=n, max_size=n), min_size=1, max_size=4)), dtype)
    v, i = tm.topk(x, k, largest=largest)
    np.testing.assert_array_equal(i, ref_topk_indices(x, k, largest))
    np.testing.assert_array_equal(v, np.take_along_axis(x, i, axis=1))


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(60, 700),
    k=st.integers(1, 16),
    largest=st.booleans(),
    dtype=st.sampled_from([np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float32, np.float64]),
)
def test_topk_prefix_floor_with_extremes_and_ties(data, n, k, largest, dtype):
    """Rows long enough for the prefix floor (k <= 16): few distinct values (ties at the k-th place, at the
    floor itself) and the dtype's extremes, where the floor cannot step below the worst value."""
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype)
    vals = (
        st.sampled_from([info.min, info.max, 0, 1, 2])
        if np.dtype(dtype).kind in "iu"
        else st.sampled_from([info.min, info.max, 0.0, 1.0, -1.0, float("nan"), float("-inf"), float("inf")])
    )
    x = np.array(data.draw(st.lists(st.lists(vals, min_size=n, max_size=n), min_size=1, max_size=3)), dtype)
    v, i = tm.topk(x, k, largest=largest)
    if np.dtype(dtype).kind in "iu":  # exact integer order (float64 would merge large int64s): ~x reverses it
        want = np.argsort(~x if largest else x, axis=1, kind="stable")[:, :k]
    else:
        want = ref_topk_indices(x, k, largest)
    np.testing.assert_array_equal(i, want)
    np.testing.assert_array_equal(v, np.take_along_axis(x, i, axis=1))


def test_topk_bfloat16_and_torch_in_torch_out(rng):
    x = torch.randn(16, 1000).bfloat16()
    v, i = tm.topk(x, 9)
    tv, _ = torch.topk(x.float(), 9)
    assert v.dtype == torch.bfloat16 and i.dtype == torch.int64
    assert torch.equal(v.float(), tv)
    np.testing.assert_array_equal(i.numpy(), ref_topk_indices(x.float().numpy(), 9))
    xm = x.float().numpy().astype(ml_dtypes.bfloat16)
    vm, im = tm.topk(xm, 9)
    assert vm.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(im, i.numpy())


def test_topk_float16_torch_in_torch_out():
    x = torch.randn(8, 300).half()
    v, i = tm.topk(x, 5, largest=False)
    tv, ti = torch.topk(x.float(), 5, largest=False)
    assert v.dtype == torch.float16 and torch.equal(v.float(), tv)


def test_topk_nan_counts_as_largest():
    x = np.array([[1.0, np.nan, 3.0, np.nan, -np.inf, np.inf]])
    v, i = tm.topk(x, 3)
    assert list(i[0]) == [1, 3, 5]
    v, i = tm.topk(x, 6, largest=False)
    assert list(i[0]) == [4, 0, 2, 5, 1, 3]
    tv, _ = torch.topk(torch.from_numpy(x), 6, largest=False)
    np.testing.assert_array_equal(v, tv.numpy())


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_topk_any_axis_and_views(rng, axis):
    x = rng.standard_normal((6, 7, 8)).astype(np.float32)
    for view in (x, x[::-1, :, ::2], np.asfortranarray(x)):
        k = min(3, view.shape[axis])
        v, i = tm.topk(view, k, axis=axis)
        tv, ti = torch.topk(torch.from_numpy(np.ascontiguousarray(view)), k, dim=axis)
        np.testing.assert_array_equal(v, tv.numpy())
        np.testing.assert_array_equal(i, ti.numpy())  # no ties in continuous data


def test_topk_unsorted_returns_the_same_set(rng):
    x = rng.standard_normal((20, 500))
    v, i = tm.topk(x, 25, sorted=False)
    vs, is_ = tm.topk(x, 25)
    np.testing.assert_array_equal(np.sort(i, axis=1), np.sort(is_, axis=1))


def test_big_endian_input():
    x = np.array([[3.0, 1.0, 4.0, 1.0, 5.0]], dtype=">f8")
    v, i = tm.topk(x, 2)
    assert list(i[0]) == [4, 2] and list(v[0]) == [5.0, 4.0]
    assert tm.target_rank(x, np.array([2], dtype=">i4"))[0] == 1


def test_topk_one_dimensional_and_list_input():
    v, i = tm.topk([3, 1, 4, 1, 5, 9, 2, 6], 3)
    assert list(v) == [9, 6, 5] and list(i) == [5, 7, 4]


# ---------------------------------------------------------------- slow/ agrees with the fast path

scores_st = st.integers(1, 12).flatmap(
    lambda c: st.tuples(
        st.lists(
            st.lists(
                st.one_of(
                    st.integers(-3, 3).map(float),
                    st.floats(-1e30, 1e30),
                    st.just(float("nan")),
                    st.sampled_from([float("inf"), float("-inf"), -0.0]),
                ),
                min_size=c,
                max_size=c,
            ),
            min_size=1,
            max_size=20,
        ),
        st.integers(1, c),
    )
)


@settings(max_examples=150, deadline=None)
@given(data=scores_st, ties=st.sampled_from(["sklearn", "optimistic", "pessimistic"]), seed=st.integers(0, 99))
def test_slow_agrees_on_ranks_accuracy_and_topk(data, ties, seed):
    rows, k = data
    c = len(rows[0])
    targets = list(np.random.default_rng(seed).integers(0, c, len(rows)))
    targets = [int(t) for t in targets]
    x = np.array(rows)
    assert list(tm.target_rank(x, targets, ties=ties)) == slow.target_rank(rows, targets, ties)
    assert tm.topk_accuracy(x, targets, k=k, ties=ties) == pytest.approx(
        slow.topk_accuracy(rows, targets, k=k, ties=ties), abs=1e-12
    )
    assert tm.mean_reciprocal_rank(x, targets, ties=ties) == pytest.approx(
        slow.mean_reciprocal_rank(rows, targets, ties=ties), abs=1e-12
    )
    for largest in (True, False):
        v, i = tm.topk(x, k, largest=largest)
        sv, si = slow.topk(rows, k, largest=largest)
        assert i.tolist() == si
        np.testing.assert_array_equal(v, np.array(sv))
        with np.errstate(over="ignore"):
            narrowed = (x.astype(np.float32), x.astype(np.float16))
        for xs in narrowed:
            # narrowing can create ties; the rule decides, and slow/ applies it on the narrowed values
            v2, i2 = tm.topk(xs, k, largest=largest)
            assert i2.tolist() == slow.topk(xs.astype(np.float64).tolist(), k, largest=largest)[1]
