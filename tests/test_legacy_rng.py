"""The resampling behind the patched ``BootstrapAggregator``: NumPy's legacy RNG stream and np.mean, bit for bit."""
import numpy as np
import pytest

from turbometrics._kernels.legacy_rng import resample_means


def reference(rs, rows, n_samples):
    """rouge-score's loop (scoring.BootstrapAggregator._bootstrap_resample)."""
    n = rows.shape[0]
    return np.array([np.mean(rows[rs.choice(np.arange(n), size=n), :], axis=0) for _ in range(n_samples)])


@pytest.mark.parametrize("n", [2, 3, 7, 623, 624, 625, 2000, 2 ** 16 + 3])
@pytest.mark.parametrize("before", ["fresh", "mid-block", "cached gaussian"])
def test_same_draws_means_and_final_state(n, before):
    rows = np.random.default_rng(n).random((n, 3))
    states = []
    for run in (reference, resample_means):
        rs = np.random.RandomState(20261124)
        if before != "fresh":
            rs.random(1001)  # leave the key position inside a block
        if before == "cached gaussian":
            rs.standard_normal()  # legacy keeps the second Gaussian; it must survive untouched
        out = run(rs, rows, 40 if n > 10000 else 300)
        states.append((out, rs.get_state(), rs.random(), rs.standard_normal()))
    (a, sa, xa, ga), (b, sb, xb, gb) = states
    assert np.array_equal(a, b)
    assert sa[0] == sb[0] and np.array_equal(sa[1], sb[1]) and sa[2:] == sb[2:]
    assert (xa, ga) == (xb, gb)


def test_the_global_rng():
    rows = np.random.default_rng(1).random((337, 3))
    np.random.seed(5)
    want = reference(np.random.mtrand._rand, rows, 1000)
    after = np.random.random()
    np.random.seed(5)
    assert np.array_equal(resample_means(np.random.mtrand._rand, rows, 1000), want)
    assert np.random.random() == after
