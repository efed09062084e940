"""NumPy's legacy RandomState stream continued in compiled code (_legacy_rng.py, _ext/resample.hpp): the same
integers, the same final state, and rouge-score's bootstrap means bit for bit."""

import time

import numpy as np
import pytest

from turbometrics._legacy_rng import bootstrap_means_legacy, ordered_means, randint_legacy, resample_means


def assert_same_state(a: np.random.RandomState, b: np.random.RandomState):
    sa, sb = a.get_state(), b.get_state()  # ('MT19937', key, pos, has_gauss, cached_gaussian)
    assert sa[0] == sb[0]
    assert np.array_equal(sa[1], sb[1])
    assert sa[2:] == sb[2:]
    # and they go on identically, Gaussians (the cached one first) included
    assert a.random() == b.random() and a.standard_normal() == b.standard_normal()
    assert a.standard_normal() == b.standard_normal()


def twins(seed, before):
    """Two RandomStates in the same state: fresh (pos 624), after draws that leave pos inside a block,
    or with a Gaussian pending (legacy keeps the second of each pair)."""
    pair = []
    for _ in range(2):
        rs = np.random.RandomState(seed)
        if before in ("mid-block", "gaussian"):
            rs.random(1001)
        if before == "gaussian":
            rs.standard_normal()
        pair.append(rs)
    if before == "gaussian":
        assert pair[0].get_state()[3] == 1
    return pair


N_VALUES = [
    1,
    2,
    3,
    7,
    1000,
    2000,
    2**16,
    2**31 - 1,
    2**31 + 1,
    2**32 - 1,
    2**32,
    2**32 + 1,
    2**40 + 12345,
    2**62 + 1,
    2**63 - 1,
]


@pytest.mark.parametrize("n", N_VALUES)
@pytest.mark.parametrize("before", ["fresh", "mid-block", "gaussian"])
@pytest.mark.parametrize("seed", [0, 12345])
def test_randint_values_and_state(n, before, seed):
    a, b = twins(seed, before)
    for shape in [(3, 700), 5, (), (0,), (2, 0, 3), (1,), (4, 3, 2)]:  # several calls: the stream continues
        want = a.randint(0, n, size=shape)
        got = randint_legacy(b, n, shape)
        assert got.dtype == np.int64 and got.shape == want.shape
        assert np.array_equal(got, want)
        assert_same_state(a, b)


@pytest.mark.parametrize("pos", [0, 1, 300, 622, 623, 624])
@pytest.mark.parametrize("n", [1, 2, 1000, 2**32 - 1, 2**32, 2**33 + 5, 2**63 - 1])
def test_randint_at_block_edges(pos, n):
    """Every position of the key, including the lazy twist (pos 624), a 64-bit draw split across the twist
    (pos 623), and an output that ends exactly at the end of a block."""
    key = np.random.RandomState(pos * 7 + 1).get_state()[1]
    for count in [1, 624 - pos, 625 - pos, 2 * 624 + 3, 5000]:
        a, b = np.random.RandomState(), np.random.RandomState()
        for rs in (a, b):
            rs.set_state(("MT19937", key, pos, 0, 0.0))
        assert np.array_equal(randint_legacy(b, n, count), a.randint(0, n, size=count))
        assert_same_state(a, b)


def test_randint_whole_block_ends_at_624():
    """n = 2**32 takes every word: 624 - pos draws end at pos 624 exactly (NumPy twists lazily)."""
    a, b = twins(3, "mid-block")
    pos = a.get_state()[2]
    assert np.array_equal(randint_legacy(b, 2**32, 624 - pos), a.randint(0, 2**32, size=624 - pos))
    assert b.get_state()[2] == 624
    assert_same_state(a, b)


def test_randint_n1_consumes_nothing():
    a, b = twins(9, "gaussian")
    before = b.get_state()
    out = randint_legacy(b, 1, (3, 4))
    assert out.dtype == np.int64 and not out.any()
    assert np.array_equal(before[1], b.get_state()[1]) and before[2:] == b.get_state()[2:]
    a.randint(0, 1, size=(3, 4))
    assert_same_state(a, b)


def test_randint_arguments_numpy_refuses_and_other_bit_generators():
    rs = np.random.RandomState(0)
    for bad in (0, -3):
        with pytest.raises(ValueError):
            randint_legacy(rs, bad, 4)
    a, b = np.random.RandomState(np.random.PCG64(5)), np.random.RandomState(np.random.PCG64(5))
    assert np.array_equal(randint_legacy(b, 1000, 50), a.randint(0, 1000, size=50))
    assert a.get_state(legacy=False)["state"] == b.get_state(legacy=False)["state"]
    a, b = twins(4, "mid-block")
    assert np.array_equal(randint_legacy(b, np.int64(77), np.int64(9)), a.randint(0, 77, size=9))
    assert_same_state(a, b)
    with pytest.raises(TypeError):
        randint_legacy(np.random.default_rng(0), 10, 3)


def test_randint_the_global_rng():
    np.random.seed(2024)
    np.random.standard_normal()
    want = np.random.randint(0, 2000, size=(40, 2000))
    state = np.random.get_state()
    np.random.seed(2024)
    np.random.standard_normal()
    got = randint_legacy(np.random.mtrand._rand, 2000, (40, 2000))
    assert np.array_equal(got, want)
    after = np.random.get_state()
    assert np.array_equal(state[1], after[1]) and state[2:] == after[2:]


def rouge_loop(rs, matrix, n_samples):
    """rouge-score's scoring.BootstrapAggregator._bootstrap_resample, minus the percentiles."""
    n = matrix.shape[0]
    sample_mean = np.zeros((n_samples, matrix.shape[1]))
    for i in range(n_samples):
        sample_idx = rs.choice(np.arange(n), size=n)
        sample_mean[i, :] = np.mean(matrix[sample_idx, :], axis=0)
    return sample_mean


def bits(x):
    return np.ascontiguousarray(x).view(np.int64)  # compares -0.0 vs +0.0 and NaNs exactly


def hard_matrix(rng, n, m):
    """Magnitudes over 24 decades (order-sensitive sums) and signed zeros."""
    x = rng.standard_normal((n, m)) * 10.0 ** rng.integers(-12, 12, (n, m))
    x[rng.random((n, m)) < 0.05] = -0.0
    if m > 1:
        x[:, -1] = -0.0  # a column of -0.0: NumPy's sum starts at +0.0 and gives +0.0
    return x


@pytest.mark.parametrize(
    "n,m,n_samples",
    [
        (1, 3, 5),
        (2, 3, 40),
        (3, 1, 40),
        (7, 2, 30),
        (200, 1, 30),
        (200, 3, 50),
        (1000, 3, 40),
        (1000, 1, 20),
        (2000, 5, 20),
        (3001, 4, 10),
    ],
)
@pytest.mark.parametrize("before", ["fresh", "gaussian"])
def test_bootstrap_equals_rouge_loop(n, m, n_samples, before):
    matrix = hard_matrix(np.random.default_rng(n * 10 + m), n, m)
    a, b = twins(n + m, before)
    want = rouge_loop(a, matrix, n_samples)
    got = bootstrap_means_legacy(b, matrix, n_samples)
    assert got.shape == (n_samples, m) and got.dtype == np.float64
    assert np.array_equal(bits(got), bits(want))
    assert_same_state(a, b)


@pytest.mark.parametrize("n", [8, 9, 128, 129, 1000, 100000])
@pytest.mark.parametrize("m", [1, 3])
def test_bootstrap_sizes(n, m):
    """Around the pairwise sum's leaves (8, 128 terms) and its halving, and rouge-score's (n, 3)."""
    matrix = hard_matrix(np.random.default_rng(n + m), n, m)
    a, b = twins(n, "mid-block")
    samples = 3 if n == 100000 else 25
    assert np.array_equal(bits(bootstrap_means_legacy(b, matrix, samples)), bits(rouge_loop(a, matrix, samples)))
    assert_same_state(a, b)


def test_bootstrap_same_bits_on_any_thread_count_and_batch():
    from turbometrics._ext import _dense

    matrix = hard_matrix(np.random.default_rng(3), 777, 3)
    key, pos = np.random.RandomState(8).get_state()[1:3]
    runs = [
        _dense.legacy_bootstrap_means(key.copy(), pos, matrix, 50, per, threads)
        for threads, per in ((1, 50), (2, 50), (3, 7), (2, 1))
    ]
    for out, end in runs[1:]:
        assert end == runs[0][1] and np.array_equal(bits(out), bits(runs[0][0]))


def test_bootstrap_the_global_rng():
    """As the rouge-score patch calls it: np.random's own RandomState, after np.random.seed."""
    matrix = np.random.default_rng(1).random((337, 3))
    np.random.seed(5)
    want = rouge_loop(np.random.mtrand._rand, matrix, 1000)
    after = (np.random.random(), np.random.randint(0, 10**9))
    np.random.seed(5)
    got = bootstrap_means_legacy(np.random.mtrand._rand, matrix, 1000)
    assert np.array_equal(bits(got), bits(want))
    assert (np.random.random(), np.random.randint(0, 10**9)) == after
    assert resample_means is bootstrap_means_legacy  # the name the rouge-score patch imports


def test_bootstrap_in_chunks(monkeypatch):
    """Index buffers smaller than the whole draw: the stream simply continues from chunk to chunk."""
    import turbometrics._legacy_rng as lr

    monkeypatch.setattr(lr, "_CHUNK", 1000)
    matrix = hard_matrix(np.random.default_rng(2), 300, 3)
    a, b = twins(11, "mid-block")
    assert np.array_equal(bits(bootstrap_means_legacy(b, matrix, 37)), bits(rouge_loop(a, matrix, 37)))
    assert_same_state(a, b)


def test_bootstrap_edges_and_refusals():
    a, b = twins(6, "mid-block")
    matrix = np.random.default_rng(0).random((10, 3))
    assert bootstrap_means_legacy(b, matrix, 0).shape == (0, 3)
    assert bootstrap_means_legacy(b, np.zeros((10, 0)), 4).shape == (4, 0)
    a.randint(0, 10, size=(4, 10))  # a (n, 0) matrix still draws its indices, as the loop would
    assert_same_state(a, b)
    # a RandomState on another bit generator: NumPy's own draws
    a, b = np.random.RandomState(np.random.PCG64(3)), np.random.RandomState(np.random.PCG64(3))
    assert np.array_equal(bits(bootstrap_means_legacy(b, matrix, 9)), bits(rouge_loop(a, matrix, 9)))
    with pytest.raises(TypeError):
        bootstrap_means_legacy(b, matrix.astype(np.float32), 3)
    with pytest.raises(TypeError):
        bootstrap_means_legacy(b, matrix[:, 0], 3)
    with pytest.raises(ValueError):
        bootstrap_means_legacy(b, np.zeros((0, 3)), 3)
    with pytest.raises(ValueError):
        bootstrap_means_legacy(b, matrix, -1)


@pytest.mark.parametrize(
    "n,m,k",
    [
        (5, 1, 1),
        (5, 1, 7),
        (50, 1, 8),
        (50, 1, 128),
        (50, 1, 129),
        (300, 1, 1000),
        (70000, 1, 70000),
        (1000, 1, 100000),
        (5, 2, 3),
        (100, 3, 100),
        (100, 6, 257),
        (100, 9, 130),
        (1000, 3, 100000),
    ],
)
def test_ordered_means_is_np_mean(n, m, k):
    rng = np.random.default_rng(n + m + k)
    matrix = hard_matrix(rng, n, m)
    matrix[rng.integers(0, n, 2), 0] = [np.inf, np.nan] if n > 5 else matrix[0, 0]
    idx = rng.integers(0, n, (6, k))
    want = np.array([np.mean(matrix[i, :], axis=0) for i in idx])
    assert np.array_equal(bits(ordered_means(matrix, idx)), bits(want))
    # any layout of the matrix: matrix[idx, :] is a C-contiguous gather whatever the layout
    assert np.array_equal(bits(ordered_means(np.asfortranarray(matrix), idx)), bits(want))
    for bad in (-1, n):  # an index outside the rows is refused, not read
        with pytest.raises(ValueError, match="indices"):
            ordered_means(matrix, np.where(idx == idx[0, 0], bad, idx))


@pytest.mark.parametrize("m", [1, 2, 3, 5])
@pytest.mark.parametrize("k", [1, 9, 200])
def test_ordered_means_signed_zero(m, k):
    """All -0.0: NumPy's sum starts from +0.0 (the pairwise sum for m = 1 too), so the mean is +0.0."""
    matrix = np.full((4, m), -0.0)
    idx = np.random.default_rng(k).integers(0, 4, (3, k))
    want = np.array([np.mean(matrix[i, :], axis=0) for i in idx])
    assert not np.signbit(want).any()
    assert np.array_equal(bits(ordered_means(matrix, idx)), bits(want))


def test_timing_n2000_s1000(capsys):
    """Printed, not asserted: randint_legacy against numpy's randint, and the whole resample against
    rouge-score's loop (n = 2000 rows, S = 1000 resamples)."""
    n, s = 2000, 1000
    matrix = np.random.default_rng(0).random((n, 3))
    rs = np.random.RandomState(0)

    def best(f, k):
        f()
        times = []
        for _ in range(k):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return min(times) * 1e3

    t_np = best(lambda: rs.randint(0, n, size=(s, n)), 5)
    t_ours = best(lambda: randint_legacy(rs, n, (s, n)), 5)
    t_means = best(lambda: ordered_means(matrix, randint_legacy(rs, n, (s, n))), 5) - t_ours
    t_loop = best(lambda: rouge_loop(rs, matrix, s), 1)
    t_boot = best(lambda: bootstrap_means_legacy(rs, matrix, s), 5)
    with capsys.disabled():
        print(
            f"\nlegacy_rng n={n} S={s}: numpy randint {t_np:.2f} ms, randint_legacy {t_ours:.2f} ms "
            f"({t_np / t_ours:.1f}x); ordered_means {t_means:.2f} ms; rouge-score loop {t_loop:.1f} ms, "
            f"bootstrap_means_legacy {t_boot:.2f} ms ({t_loop / t_boot:.0f}x)"
        )
