"""The numba.cuda kernels against the CPU path, on small inputs.

Runs under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1, in its own process:
tests/test_cuda.py starts it) and, unchanged, on a real GPU
(TURBOMETRICS_GPU_TESTS=1 pytest tests/gpu). Integers and ranks must agree
exactly, floats to 1e-6 relative; ties, NaN and padding included.
"""

from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest
from numba import cuda

import turbometrics as tm
from turbometrics._kernels.cuda import SIM

pytestmark = pytest.mark.gpu  # run by tests/test_cuda.py under the simulator, or on a GPU

BF16 = ml_dtypes.bfloat16


def dev(a):
    return cuda.to_device(np.ascontiguousarray(a))


def scores(rng, shape, ties=False):
    if ties:
        return rng.integers(-3, 4, shape).astype(np.float32)
    return (rng.standard_normal(shape) * 3).astype(np.float32)


def test_token_nll_and_perplexity(rng, row_kernel):
    x = scores(rng, (3, 3, 57))  # 9 rows: blocks of several rows, one partly empty
    x[0, 1, 5] = -np.inf
    x[1, 2, :] = -np.inf
    x[1, 2, 9] = 4.0  # a row that is -inf but one entry
    t = rng.integers(0, 57, (3, 3))
    t[0, 2] = -100
    got = tm.token_nll(dev(x), dev(t), ignore_index=-100)
    assert type(got).__module__.startswith(("numba.cuda", "numba_cuda"))  # stays on the device
    np.testing.assert_allclose(got.copy_to_host(), tm.token_nll(x, t, ignore_index=-100), rtol=1e-6, atol=1e-12)
    for red in ("token", "sequence"):
        assert tm.perplexity(dev(x), t, ignore_index=-100, reduction=red) == pytest.approx(
            tm.perplexity(x, t, ignore_index=-100, reduction=red), rel=1e-6
        )
    bad = x.copy()
    bad[0, 0, 3] = np.nan
    bad[1, 0, 7] = np.inf
    out = tm.token_nll(dev(bad), t, ignore_index=-100).copy_to_host()
    assert np.isnan(out[0, 0]) and np.isnan(out[1, 0]) and out[0, 2] == 0.0


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float64])
def test_token_nll_dtypes(rng, dtype, row_kernel):
    x = scores(rng, (4, 40)).astype(dtype)
    t = rng.integers(0, 40, 4)
    expect = tm.token_nll(x, t)
    got = tm.token_nll(x, t, device="cuda")  # host input sent to the GPU, result back on the host
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, expect, rtol=1e-6)


@pytest.mark.parametrize("v", [300, 301])
def test_bf16_pairs(rng, v, row_kernel):
    """bf16 rows of even length are read two elements a load (32-bit words), odd ones one at a time: the
    same NLLs either way, targets and NaN/+inf in either half of a word."""
    x = scores(rng, (6, v)).astype(BF16)
    t = np.array([0, 1, v - 1, v - 2, 7, 150])
    x[4, 9] = np.nan  # odd index: a word's high half
    x[5, 10] = np.inf  # even index: a low half
    x[3, 299] = 30.0  # the maximum in the last word (or the odd tail)
    got = tm.token_nll(x, t, device="cuda")
    expect = tm.token_nll(x, t)
    # row 3's target is its maximum: the NLL is ~1.8e-9. The GPU adds log(sum) to (max - x[t]) = 0; the
    # CPU's 16-bit path sums e^x from its table with no max shift, log(sum) - x[t]: exact to ~1e-14 absolute
    np.testing.assert_allclose(got[:4], expect[:4], rtol=1e-6, atol=1e-13)
    assert np.isnan(got[4:]).all() and np.isnan(expect[4:]).all()
    assert tm.perplexity(x[:4], t[:4], device="cuda") == pytest.approx(tm.perplexity(x[:4], t[:4]), rel=1e-6)


@pytest.mark.parametrize(
    "ties, v", [("sklearn", 33), ("optimistic", 33), ("pessimistic", 33), ("pessimistic", 300)]
)  # 300: the loop's four-element tiles (ties on both sides)
def test_ranks_exact(rng, ties, v, row_kernel):
    x = scores(rng, (6, v), ties=True)
    x[2, [0, 7, 30]] = np.nan
    t = rng.integers(0, v, 6)
    t[3] = 7
    x[3, [2, 7, 9, 31, v - 1]] = np.nan  # a NaN target, tied with NaNs before and after it
    t[5] = -1
    safe = np.where(t < 0, 0, t)  # target_rank counts every row
    np.testing.assert_array_equal(
        tm.target_rank(dev(x), safe, ties=ties).copy_to_host(), tm.target_rank(x, safe, ties=ties)
    )
    # up to four k are counted on the device, more come from the ranks (one layout and tie rule: the simulator
    # takes seconds a call)
    for k in (1, (1, 3, 5)) if ties != "sklearn" else (1, (1, 3, 5), (1, 2, 3, 4, 5)):
        np.testing.assert_array_equal(
            tm.topk_accuracy(dev(x), t, k=k, ties=ties, ignore_index=-1),
            tm.topk_accuracy(x, t, k=k, ties=ties, ignore_index=-1),
        )
    assert tm.mean_reciprocal_rank(dev(x), t, ties=ties, ignore_index=-1) == tm.mean_reciprocal_rank(
        x, t, ties=ties, ignore_index=-1
    )


def test_device_targets_are_checked_in_the_kernel(rng, row_kernel):
    """Device targets and masks are not copied to the host: the kernel checks them. Out-of-range targets give
    the CPU path's error; ignored or masked ones are not checked; int32 targets and bool masks work."""
    x = scores(rng, (2, 3, 20))
    t = rng.integers(0, 20, (2, 3))
    t[0, 1] = -100  # ignored
    t[1, 2] = 99  # out of range, masked out below
    m = np.ones((2, 3), bool)
    m[1, 2] = False
    m[0, 0] = False
    for tt in (t, t.astype(np.int32)):
        got = tm.token_nll(dev(x), dev(tt), ignore_index=-100, mask=dev(m)).copy_to_host()
        np.testing.assert_allclose(got, tm.token_nll(x, tt, ignore_index=-100, mask=m), rtol=1e-6, atol=1e-12)
        assert tm.perplexity(dev(x), dev(tt), ignore_index=-100, mask=dev(m)) == pytest.approx(
            tm.perplexity(x, tt, ignore_index=-100, mask=m), rel=1e-6
        )
    flat_x, flat_t, flat_m = x.reshape(6, 20), t.reshape(6), m.reshape(6)
    assert tm.topk_accuracy(
        dev(flat_x), dev(np.where(flat_m, flat_t, -100)), k=3, ignore_index=-100
    ) == tm.topk_accuracy(flat_x, np.where(flat_m, flat_t, -100), k=3, ignore_index=-100)
    for bad in (99, 20, -1):
        tb = t.copy()
        tb[0, 2] = bad
        with pytest.raises(ValueError, match=f"targets must lie in \\[0, 20\\).*found {bad}"):
            tm.perplexity(dev(x), dev(tb), ignore_index=-100, mask=dev(m))
        with pytest.raises(ValueError, match="targets must lie in"):  # unmasked, t[1, 2] = 99 counts too
            tm.token_nll(dev(x), dev(tb), ignore_index=-100)
        with pytest.raises(ValueError, match="targets must lie in"):
            tm.topk_accuracy(dev(flat_x), dev(tb.reshape(6)), k=2, ignore_index=-100)
    with pytest.raises(TypeError, match="targets must hold integers"):
        tm.perplexity(dev(x), dev(t.astype(np.float32)))
    with pytest.raises(ValueError, match="targets has shape"):
        tm.perplexity(dev(x), dev(t.reshape(3, 2)))
    with pytest.raises(ValueError, match="mask has shape"):
        tm.perplexity(dev(x), dev(t), ignore_index=-100, mask=dev(m.reshape(3, 2)))
    assert tm.perplexity(dev(x), dev(np.abs(t) % 20), ignore_index=2**70) == pytest.approx(  # beyond int64
        tm.perplexity(x, np.abs(t) % 20, ignore_index=2**70), rel=1e-6
    )
    # an integer 0/1 mask on the device takes the host's check (values must be 0 or 1)
    assert tm.perplexity(dev(x), dev(t), ignore_index=-100, mask=dev(m.astype(np.uint8))) == pytest.approx(
        tm.perplexity(x, t, ignore_index=-100, mask=m), rel=1e-6
    )


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_device_sum_has_the_bits_of_the_rows_summed_on_the_host(rng, dtype, row_kernel):
    """The one-shot perplexity's device tally (``nll_tally``) against ``nll_rows``' per-row NLLs brought back and
    summed exactly on the host (the path before the tally): the same sum and count, bit for bit."""
    from turbometrics import _gpu, _gpu_tally
    from turbometrics._exact import exact_sum

    x = scores(rng, (2, 9, 64)).astype(dtype)  # host input sent to the GPU (bf16: read in pairs)
    t = rng.integers(0, 64, (2, 9))
    t[0, 3] = -100
    rows_nll, counted, _ = _gpu.nll(x, t, -100, None, host=True)
    assert _gpu_tally.nll_total(x, t, -100, None) == (exact_sum(rows_nll), int(counted.sum()))


def test_tally_sums_exactly_and_leaves_itself_zero(rng):
    """The device tally's float64 sum (the one-shot perplexity's) has the host's exact sum's bits, over several
    blocks, for values over the whole float64 range (subnormals, cancellations, a total past an intermediate
    overflow) and NaN/infinities; each launch leaves the tally zero for the next."""
    from numba import int64

    from turbometrics import _gpu_tally
    from turbometrics._exact import exact_sum
    from turbometrics._kernels.cuda.device import TPB
    from turbometrics._kernels.cuda.tally import COUNTED, WORDS, tally_begin, tally_count, tally_end, tally_value

    @cuda.jit
    def add_all(v, tally, out):
        sh = cuda.shared.array(WORDS, int64)
        tally_begin(sh)
        i = cuda.grid(1)
        if i < v.shape[0]:
            tally_value(sh, v[i])
            tally_count(sh, COUNTED, 1)
        tally_end(sh, tally, out)

    wide = rng.standard_normal(300) * 10.0 ** rng.integers(-320, 308, 300)
    tiny = np.array([5e-324, 2.5e-308, -1e-310] * 20)
    cases = [
        wide,
        np.concatenate([wide, -wide[::-1], [3.0]]),  # cancels to 3 exactly
        np.array([1.7e308, 1.7e308, -1.7e308, 2.0**-1074]),  # an overflow on the way, a finite total
        np.concatenate([np.ones(150), np.full(150, 2.0**-60), -np.ones(150)]),
        np.concatenate([tiny, rng.random(100)]),
        np.array([1.0, np.nan, 2.0]),
        np.array([1.0, np.inf, 2.0]),
        np.array([np.inf, -np.inf]),
        np.array([-np.inf, 5.0]),
    ]
    tally = cuda.to_device(np.zeros(WORDS, np.int64))
    for v in cases:
        out = cuda.device_array(WORDS, np.int64)
        add_all[-(-len(v) // TPB), TPB](cuda.to_device(v), tally, out)
        words = out.copy_to_host()
        got, expect = _gpu_tally._tally_sum(words), exact_sum(v)
        assert got == expect or (np.isnan(got) and np.isnan(expect)), (got, expect)
        assert words[COUNTED] == len(v)
        assert not tally.copy_to_host().any()


def test_rank_half_precision(rng):
    x = scores(rng, (3, 20), ties=True)
    t = rng.integers(0, 20, 3)
    for dtype in (np.float16, BF16):
        h = x.astype(dtype)
        np.testing.assert_array_equal(tm.target_rank(h, t, device="cuda"), tm.target_rank(h, t))


@pytest.mark.parametrize("largest", [True, False])
def test_topk_exact(rng, largest):
    x = scores(rng, (5, 41), ties=True)
    x[1, [3, 9]] = np.nan
    x[2, :] = 0.0
    x[2, [4, 8]] = -0.0  # -0.0 ties +0.0
    x[4] = scores(rng, 41)  # no ties
    for k in (1, 4, 41):
        v, i = tm.topk(dev(x), k, largest=largest)
        ev, ei = tm.topk(x, k, largest=largest)
        np.testing.assert_array_equal(i.copy_to_host(), ei)
        np.testing.assert_array_equal(v.copy_to_host(), ev)  # NaN == NaN here


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_topk_half(rng, dtype):
    x = scores(rng, (3, 30), ties=True).astype(dtype)
    v, i = tm.topk(x, 5, device="cuda")
    ev, ei = tm.topk(x, 5)
    assert v.dtype == ev.dtype
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(v.view(np.uint16), ev.view(np.uint16))


@pytest.mark.parametrize("k", [1, 5, 33])
def test_topk_one_pass_and_its_fallback(rng, k):
    """Rows of several entries per thread: each thread's four best answer in one pass; a row whose best
    entries all fall to one thread (stride = threads per block) needs the second pass."""
    from turbometrics._kernels.cuda import TPB

    n = 9 * TPB + 7
    x = scores(rng, (5, n))
    x[1, ::TPB] += 100.0  # one thread holds the ten best
    x[2] = np.round(x[2])  # many ties, also at the cut
    x[3, [5, TPB + 5, 2 * TPB + 5]] = np.nan  # NaN ranks first
    x[4] = np.sort(x[4])[::-1]  # descending: the best are spread over the threads in order
    for largest in (True, False):
        v, i = tm.topk(dev(x), k, largest=largest)
        ev, ei = tm.topk(x, k, largest=largest)
        np.testing.assert_array_equal(i.copy_to_host(), ei)
        np.testing.assert_array_equal(v.copy_to_host(), ev)


@pytest.mark.parametrize("diagonals", ["shared memory", "global scratch"])
def test_lcs_lengths(rng, diagonals, monkeypatch):
    from turbometrics._kernels import cuda as K

    if diagonals == "global scratch":
        monkeypatch.setattr(K, "LCS_SHARED_MAX", 0)
    # empty sides, either side the shorter (the wavefront's columns), a side longer than the block (several
    # cells a thread per diagonal), identical and disjoint sequences
    # (a pair whose shorter side exceeds 256 gives a thread several cells a diagonal on a GPU too)
    a = [rng.integers(0, 6, n) for n in (0, 5, 17, 30, 3, 90, 300)] + [np.arange(40), np.arange(12)]
    b = [rng.integers(0, 6, n) for n in (4, 0, 23, 30, 70, 75, 270)] + [np.arange(40), np.arange(12) + 100]
    got = tm.lcs_length(a, b, device="cuda")
    assert got.tolist() == tm.lcs_length(a, b).tolist()


def test_accumulators_take_device_arrays(rng):
    x = scores(rng, (2, 4, 30))
    t = rng.integers(0, 30, (2, 4))
    acc = tm.metrics.Perplexity().update(dev(x[:1]), dev(t[:1])).update(x[1:], t[1:])
    assert acc.compute() == pytest.approx(tm.perplexity(x, t), rel=1e-6)
    top = tm.metrics.TopKAccuracy(k=2).update(dev(x.reshape(-1, 30)), t.reshape(-1))
    assert top.compute() == tm.topk_accuracy(x.reshape(-1, 30), t.reshape(-1), k=2)


def test_topk_heavy_ties_take_the_radix_path(rng):
    """More tied candidates than the shared-memory fast path holds (8 x threads per block)."""
    from turbometrics._kernels.cuda import CAP

    n = CAP + 44
    x = np.zeros((2, n), np.float32)
    x[1, rng.integers(0, n, 20)] = 1.0
    for k in (3, 30):
        v, i = tm.topk(dev(x), k)
        ev, ei = tm.topk(x, k)
        np.testing.assert_array_equal(i.copy_to_host(), ei)
        np.testing.assert_array_equal(v.copy_to_host(), ev)


def test_token_nll_long_rows(rng, row_kernel):
    """Rows long enough for the four-at-a-time step, with -inf runs, a late maximum, NaN and +inf."""
    x = scores(rng, (5, 300))
    x[1, :200] = -np.inf  # a thread's first steps see only -inf
    x[2, 290] = 40.0  # the maximum arrives late: rescaling
    x[3, 250] = np.inf
    x[4, 10] = np.nan
    t = rng.integers(200, 300, 5)
    got = tm.token_nll(dev(x), dev(t)).copy_to_host()
    expect = tm.token_nll(x, t)
    np.testing.assert_allclose(got[:3], expect[:3], rtol=1e-6)
    assert np.isnan(got[3]) and np.isnan(got[4]) and np.isnan(expect[3]) and np.isnan(expect[4])


@pytest.mark.parametrize(
    "dtype,layouts", [("float32", (0, 10**9)), ("bfloat16", (10**9,)), ("float16", (10**9,)), ("float64", (10**9,))]
)
def test_lm_head_fold_equals_the_cpu_fold(rng, dtype, layouts, monkeypatch):
    """The LM head's slices folded by fold_rows on the device (CUDA tensors on a GPU; CPU tensors copied
    to the simulator's device) against the CPU kernel's fold of the same slices, in blocks of 2 rows (each
    folding into its rows of the call's one state). Layouts: a block per row, a warp per row (each simulated
    launch takes seconds, hence one layout for most dtypes)."""
    import torch

    from turbometrics import _gpu, lm_head

    on = (lambda a: a.cuda()) if torch.cuda.is_available() else (lambda a: a)
    dt = getattr(torch, dtype)
    h = torch.from_numpy(rng.standard_normal((6, 16))).to(dt)
    w = torch.from_numpy(rng.standard_normal((150, 16)) * 0.7).to(dt)
    b = torch.from_numpy(rng.standard_normal(150)).to(dt)
    w[5] = w[6]  # tied logits
    h[4, 3] = float("nan")  # a NaN row
    t = rng.integers(0, 150, 6)
    rows = np.flatnonzero(np.arange(6) != 3)  # only counted rows are multiplied
    cpu = lm_head._rows_torch(h, w, b, rows, t[rows], 64, 1)  # three slices, the last one ragged
    for warp_row_max in layouts:
        monkeypatch.setattr(_gpu, "WARP_ROW_MAX_V", warp_row_max)
        dev_ = lm_head._rows_torch(on(h), on(w), on(b), rows, t[rows], 64, 1, on_gpu=True, block=2)
        np.testing.assert_allclose(dev_, cpu, rtol=1e-6, atol=1e-12)
        assert np.isnan(dev_[rows == 4]).all() and np.isfinite(dev_[rows != 4]).all()
    if torch.cuda.is_available():  # the public function on CUDA tensors
        tt = np.where(np.isin(np.arange(6), (3, 4)), -100, t)  # and the NaN row ignored: a number to compare
        assert tm.perplexity_from_hidden(on(h[1:]), on(w), tt[1:], on(b), ignore_index=-100) == pytest.approx(
            tm.perplexity_from_hidden(h[1:], w, tt[1:], b, ignore_index=-100), rel=1e-6
        )


SCORE_V, SCORE_WIDTH = 700, 300  # slices [0, 300), [300, 600) and a ragged [600, 700)
# (row, first column, end column, value) written into the scaled logits; the comments name what a row tests,
# with the simulator's groups (32 lanes a warp, TPB = 64) in mind
SCORE_EDITS = [
    (0, 250, 251, 50.0),  # a tie across slices: the first slice's max stays the argmax
    (0, 350, 351, 50.0),
    (0, 650, 651, 50.0),
    (1, 100, 101, 49.0),  # an earlier slice's max, beaten
    (1, 305, 306, 50.0),  # slice 1 columns 5, 37, 69 (one lane's tile with 32 lanes), 100 (a lower lane),
    (1, 337, 338, 50.0),  # 133 (the same lane's next tile), 261 (its single steps with 64 lanes)
    (1, 369, 370, 50.0),
    (1, 400, 401, 50.0),
    (1, 433, 434, 50.0),
    (1, 561, 562, 50.0),
    (2, 100, 101, 59.0),  # the max in the ragged last slice, tied there
    (2, 650, 651, 60.0),
    (2, 699, 700, 60.0),
    (3, 420, 421, float("nan")),  # a NaN row
    (4, 10, 11, float("inf")),  # a +inf row
    (5, 0, 300, -float("inf")),  # a slice of -inf only, then -inf entries beside the max
    (5, 600, 650, -float("inf")),
    (6, 0, SCORE_V, -float("inf")),  # -inf only: NaN, its argmax never set
    (9, 3, 4, -float("inf")),
    (9, 333, 334, -float("inf")),
]


def _score_map():
    """A logit_map for the head's slices (given in order): scaled by 0.3 (fractions; equal logits stay equal)
    and SCORE_EDITS written."""
    seen = [0]

    def edit(x):
        v0, width = seen[0], x.shape[1]
        seen[0] += width
        x = x * 0.3
        for r, c0, c1, val in SCORE_EDITS:
            lo, hi = max(c0, v0), min(c1, v0 + width)
            if lo < hi:
                x[r, lo - v0 : hi - v0] = val
        return x

    return edit


@pytest.mark.parametrize(
    "dtype,layouts",
    [("float32", (0, 10**9)), ("bfloat16", (10**9,)), ("float16", (10**9,)), ("float64", (0,))],
)
def test_lm_head_score_equals_the_cpu_score(rng, dtype, layouts, monkeypatch):
    """The LM head's slices folded by score_rows (greedy=True: float64 throughout, the first argmax) against the
    CPU's _dense.score_rows: the NLLs to 1e-12, the greedy flags and the fold's state (argmax included) equal.
    Exact ties within a thread's tile, across lanes, across slices; duplicated weight rows; NaN, +inf and -inf
    rows; -inf entries; a ragged last slice. The head's inputs are small integers, so that every dtype and
    device makes the same logits (many of them tied). Layouts: a block per row (0), a warp per row (10**9); each
    simulated block takes a while, hence both only for float32."""
    import torch
    import torch.nn.functional as F

    from turbometrics import _gpu, _gpu_head, lm_head

    on = (lambda a: a.cuda()) if torch.cuda.is_available() else (lambda a: a)
    dt = getattr(torch, dtype)
    n = 10
    h = torch.from_numpy(rng.integers(-1, 2, (n, 16))).to(dt)
    w = torch.from_numpy(rng.integers(-1, 2, (SCORE_V, 16))).to(dt)
    b = torch.from_numpy(rng.integers(-1, 2, SCORE_V)).to(dt)
    w[20] = w[21] = h[7]  # duplicated rows: row 7's max (its largest dot product, the largest bias), tied in a slice
    w[290] = w[310] = h[8]  # row 8's, tied across slices
    b[[20, 21, 290, 310]] = 2
    starts = range(0, SCORE_V, SCORE_WIDTH)
    edit = _score_map()
    ref = torch.cat([edit(F.linear(h, w[v0 : v0 + SCORE_WIDTH], b[v0 : v0 + SCORE_WIDTH])) for v0 in starts], 1)
    t = np.array([250, 337, 699, 0, 5, 0, 0, 21, 290, 0])
    t[[5, 9]] = ref[[5, 9]].argmax(1).numpy()  # torch.argmax: the first maximal index
    greedy = np.array([1, 0, 0, 1, 0, 1, 1, 0, 1, 1], bool)  # NaN rows (3, 4, 6): greedy only for target 0
    bad = np.isin(np.arange(n), (3, 4))
    rows = np.arange(n)
    cpu = lm_head._rows_torch(h, w, b, rows, t, SCORE_WIDTH, 1, _score_map(), greedy=True)
    np.testing.assert_array_equal(cpu[1], greedy)
    finite = ~np.isin(np.arange(n), (3, 4, 6))
    oracle = -torch.log_softmax(ref.double(), 1)[rows, t].numpy()
    np.testing.assert_allclose(cpu[0][finite], oracle[finite], rtol=1e-12)
    assert np.isnan(cpu[0][~finite]).all()

    def state(fold, on_=lambda a: a):
        edit = _score_map()
        with torch.no_grad():
            for v0 in starts:
                fold.add(on_(edit(F.linear(h, w[v0 : v0 + SCORE_WIDTH], b[v0 : v0 + SCORE_WIDTH]))), v0)
        return fold.result()

    M, S, flag, tl, arg = state(lm_head._CpuFold(t, 1, greedy=True))
    np.testing.assert_array_equal(arg[[0, 1, 2, 6, 7, 8]], [250, 305, 650, -1, 20, 290])
    for warp_row_max in layouts:
        monkeypatch.setattr(_gpu, "WARP_ROW_MAX_V", warp_row_max)
        got = lm_head._rows_torch(on(h), on(w), on(b), rows, t, SCORE_WIDTH, 1, _score_map(), on_gpu=True, greedy=True)
        np.testing.assert_allclose(got[0], cpu[0], rtol=1e-12)  # NaN where the CPU has NaN
        np.testing.assert_array_equal(got[1], cpu[1])
        gM, gS, gflag, gtl, garg = state(
            _gpu_head.HeadFold(t, greedy=True, device=on(h).device if on(h).is_cuda else None), on
        )
        assert garg.dtype == np.int64 and len(garg) == n
        np.testing.assert_array_equal(gflag.astype(bool), bad)
        np.testing.assert_array_equal(flag.astype(bool), bad)
        ok = ~bad  # the CPU stops folding a row at its first NaN/+inf, the GPU folds on: only the flag counts
        np.testing.assert_array_equal(garg[ok], arg[ok])
        np.testing.assert_array_equal(gM[ok], M[ok])
        np.testing.assert_allclose(gS[ok], S[ok], rtol=1e-13)
        np.testing.assert_array_equal(gtl, tl)
    if torch.cuda.is_available():  # the public function on CUDA tensors
        got = tm.token_scores_from_hidden(on(h), on(w), t, on(b), chunk=SCORE_WIDTH, logit_map=_score_map())
        want = tm.token_scores_from_hidden(h, w, t, b, chunk=SCORE_WIDTH, logit_map=_score_map())
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_array_equal(got[1], want[1])


def test_score_rows_bf16_exp_table(rng, monkeypatch):
    """score_rows on long bf16 rows (a block per row) takes each exp from a table (``exptable``): rows of tiny
    values and zeros (the polynomial), of values across the table (|v| up to ~300 and its edges 2**-8 and 510)
    and below it (-1e4 ... -600: their own exps), with a finite v >= 512 or all values below -512 (those rows
    read again the per-element way), with -inf entries, NaN, +inf and ties, in slices with a ragged last one.
    The fold's state against the CPU's score fold (the same max, first argmax and target logit, the sum to
    1e-13) and the log-probabilities against float64 log_softmax."""
    import torch

    from turbometrics import _gpu, _gpu_head, lm_head
    from turbometrics._kernels.cuda import exptable

    monkeypatch.setattr(_gpu, "WARP_ROW_MAX_V", 0)  # a block per row: the table's variant
    # rows as short as the simulator can take, the table read on them (a GPU compiled the threshold in: longer)
    monkeypatch.setattr(exptable, "SCORE_MIN_ROW", 0)
    n, (V, width) = 10, ((300, 128) if SIM else (20000, exptable.SCORE_MIN_ROW))
    x = rng.standard_normal((n, V)) * 3
    x[0] = rng.standard_normal(V) * 1e-3
    x[0, :5] = 0.0
    x[1] *= 30
    x[2, 17] = 600.0
    x[3] -= 700.0
    x[4, ::3] = -np.inf
    x[5, 10] = np.nan
    x[6, 20] = np.inf
    x[7] = rng.integers(-2, 3, V)
    x[8, :6] = [2.0**-8, -(2.0**-8), 510.0, -510.0, 2.0**-9, -(2.0**-9)]
    x[8, 6:9] = [-1e4, -600.0, -720.0]  # at or below -512 beside a larger max: their own exps (a mask's values)
    x[8, [10, 74]] = [-720.0, -715.0]  # (in the simulator one thread's only values: exp(-max) overflows)
    x[9] = -np.inf
    logits = torch.from_numpy(x).to(torch.bfloat16)
    t = rng.integers(0, V, n)
    t[7] = int(logits[7].float().argmax())
    bits = logits.view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    mag = bits & 0x7FFF
    in_table = (mag >= exptable.SCORE_LO) & (mag < exptable.SCORE_HI)
    assert in_table[1].all() and not in_table[0].any() and in_table[8, :4].all()
    on = (lambda a: a.cuda()) if torch.cuda.is_available() else (lambda a: a)
    cpu = lm_head._CpuFold(t, 1, greedy=True)
    gpu = _gpu_head.HeadFold(t, greedy=True, device=torch.device("cuda") if torch.cuda.is_available() else None)
    for v0 in range(0, V, width):
        part = logits[:, v0 : v0 + width].contiguous()
        cpu.add(part, v0)
        gpu.add(on(part), v0)
    M, S, bad, tl, arg = cpu.result()
    gM, gS, gbad, gtl, garg = gpu.result()
    np.testing.assert_array_equal(gbad.astype(bool), np.isin(np.arange(n), (5, 6)))
    ok = gbad == 0
    np.testing.assert_array_equal(gM[ok], M[ok])
    np.testing.assert_allclose(gS[ok], S[ok], rtol=1e-13)
    np.testing.assert_array_equal(garg[ok], arg[ok])
    np.testing.assert_array_equal(gtl, tl)
    assert garg[9] == -1 and gS[9] == 0.0
    got = lm_head._finish((gM, gS, gbad, gtl, garg), t)
    want = torch.log_softmax(logits.double(), 1)[np.arange(n), t].numpy()
    live = ok & (np.arange(n) != 9)
    np.testing.assert_allclose(-got[0][live], want[live], rtol=1e-13)
    np.testing.assert_array_equal(got[1][live], (logits.double().argmax(1).numpy() == t)[live])
    table = exptable.score_table()
    values = (np.arange(exptable.SCORE_LO, exptable.SCORE_HI, dtype=np.uint32) << 16).view(np.float32)
    np.testing.assert_allclose(table, np.exp(np.concatenate([values, -values]).astype(np.float64)), rtol=3e-16)


def test_exp_table_step_on_every_bf16_value():
    """score_rows' per-element step of its exp table (``exptable.table_step``) on all 65,536 bf16 bit patterns,
    run as the simulator's Python (host code: a GPU runs it inside the kernel tests above): exp(v) within an
    ulp for v < 512 (the table's, the polynomial's or exp's own), nothing added for -inf, NaN and +inf counted as
    bad, finite v >= 512 as big (its row read the per-element way), the max and its index taken from the rest."""
    import math

    from turbometrics._kernels.cuda import exptable

    if not SIM:
        pytest.skip("the simulator's Python of a device function (a GPU runs it in the kernel tests)")
    tab = exptable.score_table()
    neg = np.float32(-np.inf)
    for u in range(1 << 16):
        b = np.int16(u - (1 << 16) if u >= 1 << 15 else u)
        v = float(np.array([u << 16], np.uint32).view(np.float32)[0])
        m, a, s, bad, big = exptable.table_step(b, 7, neg, np.int64(-1), 0.0, np.int64(0), np.int64(0), tab)
        if math.isnan(v) or v == math.inf:
            assert (bad, big, s, m, a) == (1, 0, 0.0, neg, -1), hex(u)
        elif v == -math.inf:
            assert (bad, big, s, m, a) == (0, 0, 0.0, neg, -1), hex(u)
        else:
            assert (bad, m, a) == (0, v, 7), hex(u)
            if v >= 512:
                assert (big, s) == (1, 0.0), hex(u)
            else:  # (below -512 the exp itself: Python's here, the device's on a GPU)
                assert big == 0 and abs(s - math.exp(v)) <= 2.3e-16 * math.exp(v), (hex(u), v, s)


def test_lm_head_moves_targets_and_state_once_a_call(rng, monkeypatch):
    """One GPU head call on CPU tensors (numba's arrays hold the state), with one or several blocks and slices:
    numba copies the targets and the fold's state to the device once and the state back once. The simulator
    copies each logits slice over too, and nothing else; on a GPU torch moves them. (CUDA tensors on a GPU:
    test_lm_head_two_streams.)"""
    import torch

    from turbometrics import _gpu, lm_head

    h = torch.from_numpy(rng.standard_normal((7, 8))).float()
    w = torch.from_numpy(rng.standard_normal((150, 8)) * 0.7).float()
    t = rng.integers(0, 150, 7)
    rows = np.flatnonzero(np.arange(7) != 2)  # 6 rows: no slice is 6 wide
    api = _gpu._cuda()[0]
    put, fake = api.to_device, type(api.to_device(np.zeros(1)))
    back = fake.copy_to_host
    ups, backs = [], []
    monkeypatch.setattr(api, "to_device", lambda a, *args, **kw: ups.append(np.shape(a)) or put(a, *args, **kw))
    monkeypatch.setattr(fake, "copy_to_host", lambda d, *args, **kw: backs.append(d.shape) or back(d, *args, **kw))
    monkeypatch.setattr(_gpu, "WARP_ROW_MAX_V", 10**9)
    for block, width in ((6, 150), (4, 64), (2, 40)):  # 1, 2 x 3 and 3 x 4 slices
        ups.clear()
        backs.clear()
        got = lm_head._rows_torch(h, w, None, rows, t[rows], width, 1, on_gpu=True, block=block)
        slices = -(-len(rows) // block) * -(-150 // width)
        assert sorted(s for s in ups if s[-1] == len(rows)) == [(4, 6), (6,)], ups  # the state, the targets
        assert len(ups) == 2 + (slices if SIM else 0) and backs == [(4, 6)]
        np.testing.assert_allclose(got, lm_head._rows_torch(h, w, None, rows, t[rows], width, 1), rtol=1e-6)


@pytest.mark.parametrize("every", [True, False], ids=["every row counted", "some rows"])
def test_lm_head_two_streams(rng, every, monkeypatch):
    """CUDA: each slice folded on a second stream while the next is multiplied gives the bits of the one-stream
    path (each fold behind its GEMM on the caller's stream); the host does not wait before the copy back: no
    synchronising call of torch's (its sync debug mode raises on them; the copy back waits on an event, which
    that mode does not count) nor of numba's (a busy kernel queued first still runs when the copy back is
    reached); one upload of the targets, one of the row index (none when every row is counted: no gather)
    and one copy back, for 4-5 blocks x 8 slices; and no more memory than the plan's buffers and the state.
    On a GPU only: the simulator has no CUDA tensors nor streams (tests/test_lm_head.py checks the schedule
    with stand-ins), and its suite allows no skips."""
    if SIM:
        return
    import torch
    from torch.profiler import ProfilerActivity, profile

    from turbometrics import _gpu_head, lm_head

    g = torch.Generator(device="cuda").manual_seed(0)
    n, d, V, block, width = 600, 64, 5000, 128, 640
    h = torch.randn(n, d, device="cuda", generator=g).to(torch.bfloat16)
    w = (torch.randn(V, d, device="cuda", generator=g) * d**-0.5).to(torch.bfloat16)
    t = rng.integers(0, V, n)
    rows = np.arange(n) if every else np.flatnonzero(rng.random(n) < 0.75)

    def call(greedy=False):
        return lm_head._rows_torch(h, w, None, rows, t[rows], width, 1, greedy=greedy, block=block, slots=2)

    for greedy in (False, True):
        two = call(greedy)  # (also the kernels' first call, before the checks below)
        with monkeypatch.context() as m:
            m.setattr(lm_head, "GPU_OVERLAP", False)
            one = call(greedy)
        for a, b in zip(two if greedy else (two,), one if greedy else (one,)):
            np.testing.assert_array_equal(a, b)

    result = _gpu_head.HeadFold.result
    running = []
    monkeypatch.setattr(_gpu_head.HeadFold, "result", lambda self: running.append(not busy.query()) or result(self))
    torch.cuda.synchronize()
    torch.cuda._sleep(500_000_000)  # about 0.25 s of a busy GPU
    busy = torch.cuda.Event()
    busy.record()
    blocking = busy.query()  # launches that return when their kernel has run (compute-sanitizer): nothing to see
    torch.cuda.set_sync_debug_mode("error")
    try:
        got = call()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert running == [True] or blocking
    np.testing.assert_array_equal(got, call())
    monkeypatch.undo()

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    call()
    state = len(rows) * 8 * (4 + 1 + (0 if every else 1))  # the state, the targets, the row index
    allowed = 2 * block * width * 2 + (0 if every else block * d * 2) + state
    assert torch.cuda.max_memory_allocated() - base <= allowed + 8 * 512  # (torch rounds each block to 512 bytes)

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
    names = [e.name for e in prof.events()]
    if not any("Memcpy" in x for x in names):
        pytest.skip("the profiler saw no copies (no CUPTI)")
    assert sum("HtoD" in x for x in names) == (1 if every else 2), names
    assert sum("DtoH" in x for x in names) == 1, names


def _token_batch(rng, b=5, vocab=6, width=14):
    """Token IDs with repeats (a small vocabulary), an empty hypothesis and padding (-1)."""
    hyp = np.full((b, width), -1, np.int64)
    ref = np.full((b, 2, width), -1, np.int64)
    for i in range(b):
        n = 0 if i == 1 else int(rng.integers(1, width + 1))
        hyp[i, :n] = rng.integers(0, vocab, n)
        for r in range(2):
            m = int(rng.integers(0, width + 1))
            ref[i, r, :m] = rng.integers(0, vocab, m)
    return hyp, ref


@pytest.fixture(params=["shared memory", "global memory"])
def ngram_tokens(request, monkeypatch):
    """Where the n-gram kernel reads a segment's tokens: staged in shared memory, or in place."""
    from turbometrics._kernels import cuda as K

    if request.param == "global memory":
        monkeypatch.setattr(K, "NGRAM_SHARED_MAX", 0)
    return request.param


def test_token_id_bleu_equals_the_cpu(rng, ngram_tokens):
    hyp, ref = _token_batch(rng)
    for opts in ({}, {"max_ngram_order": 2, "smooth_method": "floor"}, {"effective_order": False}):
        got = tm.segment_bleu(dev(hyp), dev(ref), pad_id=-1, **opts)
        assert got.copy_to_host().tolist() == tm.segment_bleu(hyp, ref, pad_id=-1, **opts).tolist()
        acc = tm.metrics.BLEU(**{k: v for k, v in opts.items() if k != "effective_order"})
        assert (
            acc.update(hyp, ref, pad_id=-1, device="cuda").compute().score
            == tm.corpus_bleu(hyp, ref, pad_id=-1, **opts).score
        )


@pytest.mark.parametrize("blocks", ["a block a segment", "enough blocks"])
def test_token_id_bleu_of_hypotheses_longer_than_the_block(rng, ngram_tokens, blocks, monkeypatch):
    from turbometrics import _gpu

    if blocks == "a block a segment":  # each thread takes several positions
        monkeypatch.setattr(_gpu, "NGRAM_BLOCKS", 1)
    hyp, ref = _token_batch(rng, b=2, vocab=5, width=300)
    got = tm.segment_bleu(dev(hyp), dev(ref), pad_id=-1, max_ngram_order=6)
    assert got.copy_to_host().tolist() == tm.segment_bleu(hyp, ref, pad_id=-1, max_ngram_order=6).tolist()


def test_token_id_rouge_equals_the_cpu(rng, ngram_tokens):
    hyp, ref = _token_batch(rng, vocab=4)
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    got = tm.rouge(dev(hyp), dev(ref), types, pad_id=-1)
    want = tm.rouge(hyp, ref, types, pad_id=-1)
    for t in types:
        for a, b in zip(got[t], want[t]):
            assert a.copy_to_host().tolist() == b.tolist(), t


def test_token_ids_as_tensors_go_through_the_device_compaction(rng):
    """torch tensors are compacted by torch operations (on a real GPU on their device); the simulator runs
    the same code on CPU tensors with device="cuda"."""
    torch = pytest.importorskip("torch")
    hyp, ref = _token_batch(rng)
    on = torch.from_numpy(hyp).cuda() if torch.cuda.is_available() else torch.from_numpy(hyp)
    r_on = torch.from_numpy(ref).to(on.device)
    got = tm.metrics.BLEU().update(on, r_on, pad_id=-1, device="cuda").segment_scores()
    assert got.tolist() == tm.metrics.BLEU().update(hyp, ref, pad_id=-1).segment_scores().tolist()
    types = ["rouge1", "rougeL"]
    got = tm.metrics.ROUGE(types).update(on, r_on, pad_id=-1, device="cuda").compute()
    want = tm.rouge(hyp, ref, types, pad_id=-1)
    for t in types:
        assert np.array(got[t]).tolist() == np.array(want[t]).tolist(), t
    if torch.cuda.is_available():  # the functions hand results back on the tensors' device
        assert tm.segment_bleu(on, r_on, pad_id=-1).device == on.device


def test_shared_memory_limits(rng, monkeypatch):
    """The largest launches that stage in shared memory and the first that go to global memory: on a GPU
    the real 48 KB limits (LCS diagonals of 4,095 columns, an n-gram segment of 6,144 tokens), in the
    simulator small stand-ins for them."""
    from turbometrics._kernels import cuda as K

    if K.SIM:
        monkeypatch.setattr(K, "LCS_SHARED_MAX", 40)
        monkeypatch.setattr(K, "NGRAM_SHARED_MAX", 90)
    for side in (K.LCS_SHARED_MAX, K.LCS_SHARED_MAX + 1):
        a, b = [rng.integers(0, 50, side + 7)], [rng.integers(0, 50, side)]
        assert tm.lcs_length(a, b, device="cuda").tolist() == tm.lcs_length(a, b).tolist(), side
    for total in (K.NGRAM_SHARED_MAX, K.NGRAM_SHARED_MAX + 1):
        hyp = rng.integers(0, 40, (1, total // 2))
        ref = rng.integers(0, 40, (1, total - total // 2))
        got = tm.segment_bleu(dev(hyp), dev(ref))
        assert got.copy_to_host().tolist() == tm.segment_bleu(hyp, ref).tolist(), total


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork() on this OS")
def test_a_child_forked_after_gpu_use_gets_a_clear_error(rng, in_forked_child):
    """CUDA cannot be used after fork(): the child's GPU call raises (never hangs); its CPU calls work."""
    x = scores(rng, (4, 33))
    t = rng.integers(0, 33, 4)
    tm.perplexity(dev(x), t)  # the parent uses the GPU

    def child():
        msg = "no error"
        try:
            tm.perplexity(x, t, device="cuda")
        except RuntimeError as e:
            msg = str(e)
        return msg + ("|cpu ok" if tm.perplexity(x, t) == tm.perplexity(x.copy(), t) else "|cpu wrong")

    got = in_forked_child(child)
    assert "forked from one that had already used CUDA" in got and got.endswith("|cpu ok"), got
    assert tm.perplexity(dev(x), t) == pytest.approx(tm.perplexity(x, t), rel=1e-6)  # the parent still can


def test_direct_launches_give_numbas_bits(rng, monkeypatch):
    """Torch input's launches skip numba's per-call work (``_launch``) once numba launched a kind: the same
    results, bit for bit, as numba's own launches, for every row kernel, top-k and the LM head's folds; and
    each kind's flattening matched numba's on this numba-cuda (else the kind stays on numba's path, slower).
    On a GPU only (torch CUDA tensors; the simulator never launches directly; its suite allows no skip)."""
    if SIM:
        return
    import torch

    from turbometrics import _launch

    x = torch.from_numpy(scores(rng, (6, 50, 1001))).cuda()
    t = torch.from_numpy(rng.integers(0, 1001, (6, 50))).cuda()
    t[0, :7] = -100
    h = torch.randn(300, 32, device="cuda")
    w = torch.randn(1001, 32, device="cuda")
    th = rng.integers(0, 1001, 300)

    def calls():
        return [
            tm.token_nll(x, t, ignore_index=-100).cpu().numpy(),
            tm.token_nll(x.to(torch.bfloat16), t, ignore_index=-100).cpu().numpy(),  # bf16 pairs
            tm.perplexity(x, t, ignore_index=-100),
            tm.perplexity(x, t.cpu(), ignore_index=-100),  # host targets, uploaded
            tm.topk_accuracy(x, t, k=5, ignore_index=-100),
            tm.mean_reciprocal_rank(x, t, ignore_index=-100),
            *(a.cpu().numpy() for a in tm.topk(x, 7)),
            tm.metrics.Perplexity().update(x, t.clamp(min=0)).compute(),  # pending updates (scratch reused)
            tm.token_nll_from_hidden(h, w, th),
        ]

    monkeypatch.setattr(_launch, "DIRECT", False)
    expect = calls()
    monkeypatch.setattr(_launch, "DIRECT", True)
    _launch.clear()
    first, again = calls(), calls()  # numba's launches while learning, then direct ones
    for got in (first, again):
        for a, b in zip(got, expect):
            np.testing.assert_array_equal(a, b)
    assert _launch._KINDS, "no kind was learned"
    refused = [k[0].py_func.__name__ for k, v in _launch._KINDS.items() if v is None]
    assert not refused, f"kinds left on numba's path (their flattening differs from numba's): {refused}"


def test_scratch_buffers_are_reused_within_a_thread_and_stream(rng, monkeypatch):
    """Results that go on to the host reuse their buffers (``_gpu._kept``): later calls of the same shape still
    give their own answers (the bits of calls with fresh buffers), and a metric with several updates pending
    on one reused buffer folds each."""
    from turbometrics import _gpu

    xs = [scores(rng, (8, 33)) for _ in range(2)]  # (small: every simulated launch costs seconds)
    ts = [rng.integers(0, 33, 8) for _ in range(2)]

    def run():
        m = tm.metrics.Perplexity()
        for a, b in zip(xs, ts):
            m.update(dev(a), dev(b))
        return [tm.perplexity(dev(a), dev(b)) for a, b in zip(xs, ts)], m.compute()

    _gpu._SCRATCH.clear()
    with monkeypatch.context() as m:
        m.setattr(_gpu, "KEEP_MAX", 0)  # nothing kept: fresh buffers each call
        expect = run()
        assert not _gpu._SCRATCH
    assert run() == expect
    # the updates' values and statuses, the one-shot calls' tally (which each launch leaves zero for the next)
    assert sorted(k[-1][0] for k in _gpu._SCRATCH) == ["status", "tally"]
    other = ThreadPoolExecutor(1).submit(run).result()  # another thread: buffers of its own
    assert other == expect and len(_gpu._SCRATCH) == 4
