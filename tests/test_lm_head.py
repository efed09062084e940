"""perplexity_from_hidden / token_nll_from_hidden against PyTorch's cross entropy of the full logits."""

import contextlib
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import turbometrics as tm
from turbometrics import lm_head


def oracle(h, w, t, b=None, ignore_index=-100, reduction="mean"):
    """torch's cross entropy of F.linear(h, w, b), in float64 from the logits in the inputs' dtype."""
    logits = F.linear(*(torch.as_tensor(x) if x is not None else None for x in (h, w, b)))
    flat = logits.reshape(-1, logits.shape[-1]).double()
    return F.cross_entropy(flat, torch.as_tensor(t).reshape(-1), ignore_index=ignore_index, reduction=reduction)


def data(rng, shape=(3, 40), d=32, V=3000, dtype=np.float32, scale=0.3):
    h = rng.standard_normal((*shape, d)).astype(dtype)
    w = (rng.standard_normal((V, d)) * scale).astype(dtype)
    b = rng.standard_normal(V).astype(dtype)
    t = rng.integers(0, V, shape)
    t.reshape(-1)[::5] = -100  # padding
    return h, w, b, t


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-6), (np.float32, 1e-5)])
@pytest.mark.parametrize("chunk", [None, 100, 1024])
@pytest.mark.parametrize("with_bias", [False, True])
def test_equals_cross_entropy_of_the_logits(rng, dtype, tol, chunk, with_bias):
    h, w, b, t = data(rng, dtype=dtype)
    b = b if with_bias else None
    expected = float(torch.exp(oracle(h, w, t, b)))
    assert tm.perplexity_from_hidden(h, w, t, b, ignore_index=-100, chunk=chunk) == pytest.approx(expected, rel=tol)
    per_token = oracle(h, w, t, b, reduction="none").numpy().reshape(t.shape)
    ours = tm.token_nll_from_hidden(h, w, t, b, ignore_index=-100, chunk=chunk)
    np.testing.assert_allclose(ours, per_token, rtol=tol, atol=1e-9)
    assert (ours[t == -100] == 0).all()
    # the same as the fused kernel on the materialised logits
    logits = (h @ w.T + (0 if b is None else b)).astype(dtype)
    np.testing.assert_allclose(ours, tm.token_nll(logits, t, ignore_index=-100), rtol=tol, atol=1e-9)


@pytest.mark.parametrize("reduction", ["token", "sequence", "none"])
def test_reductions_and_masks(rng, reduction):
    h, w, b, t = data(rng, shape=(4, 25), dtype=np.float64)
    mask = rng.random(t.shape) < 0.8
    mask[2] = False  # a sequence with nothing counted
    t = np.where(t < 0, 0, t)
    logits = h @ w.T + b
    ours = tm.perplexity_from_hidden(h, w, t, b, mask=mask, reduction=reduction, chunk=512)
    theirs = tm.perplexity(logits, t, mask=mask, reduction=reduction)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    if reduction == "none":
        assert np.isnan(ours[2])


def test_ties_extremes_and_non_finite(rng):
    h, w, b, t = data(rng, shape=(60,), d=8, V=700, dtype=np.float64)
    w[1::2] = w[::2]  # tied logits
    t = np.where(t < 0, 0, t)
    assert tm.perplexity_from_hidden(h, w, t, chunk=64) == pytest.approx(float(torch.exp(oracle(h, w, t))), rel=1e-9)
    big = w * 1000  # logits in the thousands: the log-sum-exp shifts per slice
    np.testing.assert_allclose(
        tm.token_nll_from_hidden(h, big, t, chunk=64), oracle(h, big, t, reduction="none").numpy(), rtol=1e-9
    )
    assert tm.perplexity_from_hidden(np.zeros((5, 8)), w, [0, 1, 2, 3, 4]) == pytest.approx(700)  # uniform
    h2 = h.copy()
    h2[3, 0] = np.nan
    nll = tm.token_nll_from_hidden(h2, w, t, chunk=64)
    assert np.isnan(nll[3]) and np.isfinite(np.delete(nll, 3)).all()
    assert np.isnan(tm.perplexity_from_hidden(h2, w, t))
    assert np.isnan(tm.perplexity_from_hidden(h, w, t, mask=np.zeros(60, bool)))  # nothing counted


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_torch_tensors_multiply_in_their_own_dtype(rng, dtype):
    h, w, b, t = data(rng, shape=(2, 30), d=16, V=2000)
    th, tw, tb = (torch.from_numpy(x).to(dtype) for x in (h, w, b))
    tt = torch.from_numpy(t)
    expected = float(torch.exp(oracle(th, tw, t, tb)))  # the logits rounded to dtype, as the model's
    got = tm.perplexity_from_hidden(th, tw, tt, tb, ignore_index=-100, chunk=300)
    assert got == pytest.approx(expected, rel=1e-5)


def test_memory_stays_a_slice(rng, monkeypatch):
    h, w, b, t = data(rng, shape=(50,), d=8, V=10_000)
    seen = []
    real = lm_head._dense.fold_rows

    def spy(x, *a):
        seen.append(x.shape)
        return real(x, *a)

    monkeypatch.setattr(lm_head._dense, "fold_rows", spy)
    tm.token_nll_from_hidden(h, w, t, ignore_index=-100, max_bytes=40 * 1024 * 4)
    assert max(s[0] * s[2] for s in seen) * 4 <= 40 * 1024 * 4 and len(seen) > 1


def test_gpu_plan_at_llama_scale():
    """The default GPU budget at 8 x 4,096 rows, d = 4,096, V = 128,256 in bf16 (issue 41): whole rows of the
    vocabulary in one buffer, at least 512 rows a multiply (cuBLAS at speed), few multiplies; with a block's
    hidden rows, the fold's state (greedy: 5 arrays), the targets and the row index in at most 256 MiB."""
    rows, d, V = 8 * 4096, 4096, 128256
    block, width, slots = lm_head._plan(rows, V, d, 2, None, lm_head.GPU_BUDGET_MAX, gpu=True)
    extra = slots * block * width * 2 + block * d * 2 + rows * 8 * (5 + 2)
    assert width == V and slots == 1 and block >= 512 and -(-rows // block) <= 40, (block, width, slots)
    assert extra <= 256 << 20, extra / 2**20


def test_gpu_plan_overlapped_whole_rows(monkeypatch):
    """``GPU_OVERLAP_ROWS`` (an option for timings): whole rows of the vocabulary in two buffers of half the
    height, within the same budget; the CPU's plan unchanged."""
    rows, d, V = 8 * 4096, 4096, 128256
    one = lm_head._plan(rows, V, d, 2, None, lm_head.GPU_BUDGET_MAX, gpu=True)
    monkeypatch.setattr(lm_head, "GPU_OVERLAP_ROWS", True)
    block, width, slots = lm_head._plan(rows, V, d, 2, None, lm_head.GPU_BUDGET_MAX, gpu=True)
    assert (width, slots) == (V, 2) and block < 0.6 * one[0] and (2 * V + d) * block * 2 <= lm_head.GPU_BUDGET_MAX
    assert lm_head._plan(rows, V, d, 2, None, lm_head.DEFAULT_BUDGET)[2] == 1


def test_gpu_plan_column_slices_in_two_buffers():
    """Where 512 whole rows do not fit the budget (a huge vocabulary, a small budget), or a chunk is given, a GPU
    slices the vocabulary into two buffers (one folded while the other is multiplied), both within the budget;
    the CPU keeps one buffer."""
    rows, d, V, budget = 8 * 4096, 4096, 1 << 20, 192 << 20
    block, width, slots = lm_head._plan(rows, V, d, 2, None, budget, gpu=True)
    assert slots == 2 and width < V and block >= 4096 and (2 * width + d) * block * 2 <= budget
    assert lm_head._plan(rows, V, d, 2, 10240, budget, gpu=True)[1:] == (10240, 2)
    assert lm_head._plan(rows, 128256, d, 2, 128256, budget, gpu=True)[2] == 1
    assert lm_head._plan(rows, V, d, 2, None, budget)[2] == 1


def test_gpu_overlap_puts_each_fold_between_its_buffers_gemms(rng, monkeypatch):
    """The two-stream schedule (``_Overlap``) with stand-in streams and events that log what is queued where, on
    CPU tensors (a GPU runs it for real: tests/gpu): each fold, on the second stream, comes after the GEMM that
    wrote its buffer and before the next GEMM into that buffer, but not before the next slice's GEMM (the
    overlap); every slice is kept for the second stream; the caller's stream ends behind every fold. A wait
    orders after the event's last record queued before it, as in CUDA. The numbers are the one-stream path's."""
    log = []

    class Event:
        def record(self, stream):
            log.append((stream, "record", self))

    class Stream:
        def __init__(self, name="side"):
            self.name = name

        def wait_event(self, event):
            log.append((self, "wait", event))

        def wait_stream(self, other):
            log.append((self, "join", other))

    main, current = Stream("main"), []

    @contextlib.contextmanager
    def on(stream):
        current.append(stream)
        yield
        current.pop()

    cuda = types.SimpleNamespace(current_stream=lambda d: main, Stream=lambda d: Stream(), Event=Event, stream=on)
    multiply, add = lm_head._multiply, lm_head._CpuFold.add

    def gemm(*args):
        out = multiply(*args)
        log.append((main, "gemm", out.data_ptr()))
        return out

    def fold(self, logits, *args):
        log.append((current[-1], "fold", logits.data_ptr()))
        add(self, logits, *args)

    h = torch.from_numpy(rng.standard_normal((11, 8)).astype(np.float32))
    w = torch.from_numpy(rng.standard_normal((300, 8)).astype(np.float32))
    t = rng.integers(0, 300, 11)
    rows = np.flatnonzero(np.arange(11) % 4 != 1)  # 8 rows: 2 blocks x 5 slices
    want = lm_head._rows_torch(h, w, None, rows, t[rows], 64, 1, block=4)
    with monkeypatch.context() as m:
        m.setattr(lm_head, "_Serial", lambda: lm_head._Overlap(types.SimpleNamespace(cuda=cuda), None))
        m.setattr(torch.Tensor, "record_stream", lambda x, s: log.append((s, "keep", x.data_ptr())), raising=False)
        m.setattr(lm_head, "_multiply", gemm)
        m.setattr(lm_head._CpuFold, "add", fold)
        got = lm_head._rows_torch(h, w, None, rows, t[rows], 64, 1, block=4)
    np.testing.assert_array_equal(got, want)

    before: dict = {i: [] for i in range(len(log))}  # i -> the ops that happen before op i
    last: dict = {}  # stream -> its last op; event -> its last record
    for i, (stream, op, x) in enumerate(log):
        before[i] += [last[k] for k in (stream, x) if k in last and (k is stream or op in ("wait", "join"))]
        last[stream] = i
        if op == "record":
            last[x] = i

    def after(i, j):  # op j happens after op i
        seen, todo = set(), [j]
        while todo:
            k = todo.pop()
            if k == i:
                return True
            if k not in seen:
                seen.add(k)
                todo += before[k]
        return False

    folds = [i for i, (s, op, _) in enumerate(log) if op == "fold"]
    assert len(folds) == 10 and all(log[i][0].name == "side" for i in folds)
    assert len({log[i][2] for i in folds}) == 2  # two buffers, taken in turn
    for f in folds:
        ptr = log[f][2]
        made = max(i for i in range(f) if log[i][1:] == ("gemm", ptr))
        assert after(made, f)
        assert any(log[i] == (log[f][0], "keep", ptr) for i in range(made, f))
        for g in (i for i in range(f, len(log)) if log[i][1:] == ("gemm", ptr)):
            assert after(f, g)
    assert log[-1][:2] == (main, "join") and all(after(f, len(log) - 1) for f in folds)
    gemms = [i for i, (s, op, _) in enumerate(log) if op == "gemm"]
    assert not any(after(f, g) for f, g in zip(folds, gemms[1:]))  # the next GEMM never waits for this fold


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda h, w, t: tm.perplexity_from_hidden(h, w.astype(np.float64), t), TypeError, "share a dtype"),
        (lambda h, w, t: tm.perplexity_from_hidden(h, w[:, :3], t), ValueError, "weight must have shape"),
        (lambda h, w, t: tm.perplexity_from_hidden(h, w, t, bias=np.zeros(3, np.float32)), ValueError, "bias"),
        (lambda h, w, t: tm.perplexity_from_hidden(h, w, t + 10_000), ValueError, r"targets must lie in \[0, 100\)"),
        (lambda h, w, t: tm.perplexity_from_hidden(h, w, t[:3]), ValueError, "targets has shape"),
        (lambda h, w, t: tm.perplexity_from_hidden(h, w, t, chunk=0), ValueError, "chunk"),
        (lambda h, w, t: tm.perplexity_from_hidden(h, w, t, max_bytes=0), ValueError, "max_bytes"),
        (lambda h, w, t: tm.perplexity_from_hidden(h, w, t, logit_map="tanh"), TypeError, "logit_map must be callable"),
        (
            lambda h, w, t: tm.perplexity_from_hidden(h, w, t, logit_map=lambda x: x[:, :1]),
            TypeError,
            "logit_map must return",
        ),
        (
            lambda h, w, t: tm.perplexity_from_hidden(h, w, t, logit_map=lambda x: x.astype(np.float64)),
            TypeError,
            "logit_map must return",
        ),
        (
            lambda h, w, t: tm.perplexity_from_hidden(h.astype(np.float16), w.astype(np.float16), t),
            TypeError,
            "float32 or float64",
        ),
        (lambda h, w, t: tm.perplexity_from_hidden(torch.from_numpy(h), w, t), TypeError, "torch tensors"),
        (lambda h, w, t: tm.perplexity_from_hidden(h[0], w, t), ValueError, r"\(N, d\) or \(B, T, d\)"),
        (lambda h, w, t: tm.perplexity_from_hidden(h, w, t, reduction="mean"), ValueError, "reduction"),
        (lambda h, w, t: tm.perplexity_from_hidden(h.astype(int), w, t), TypeError, "hidden"),
    ],
)
def test_bad_input(rng, call, exc, match):
    h = rng.standard_normal((6, 4)).astype(np.float32)
    w = rng.standard_normal((100, 4)).astype(np.float32)
    with pytest.raises(exc, match=match):
        call(h, w, rng.integers(0, 100, 6))


def test_logit_map_soft_capping(rng):
    """Gemma 2's soft-capping applied to each slice equals it applied to the whole logits."""
    h, w, b, t = data(rng, shape=(2, 30), d=16, V=900, dtype=np.float64, scale=3.0)
    cap = 5.0
    logits = np.tanh((h @ w.T + b) / cap) * cap
    expected = tm.perplexity(logits, t, ignore_index=-100)
    got = tm.perplexity_from_hidden(
        h, w, t, b, ignore_index=-100, chunk=256, logit_map=lambda x: np.tanh(x / cap) * cap
    )
    assert got == pytest.approx(expected, rel=1e-12)
    th, tw, tb = (torch.from_numpy(x).float() for x in (h, w, b))
    capped = torch.tanh(F.linear(th, tw, tb) / cap) * cap
    expected = float(torch.exp(F.cross_entropy(capped.reshape(-1, 900).double(), torch.from_numpy(t).reshape(-1))))
    got = tm.perplexity_from_hidden(
        th, tw, t, tb, ignore_index=-100, chunk=256, logit_map=lambda x: torch.tanh(x / cap) * cap
    )
    assert got == pytest.approx(expected, rel=1e-6)


# ---------------------------------------------------------------- token_scores_from_hidden


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("chunk", [None, 64, 1000])
def test_scores_are_the_float64_log_softmax_and_its_argmax(rng, dtype, chunk):
    """Each log-probability as ``log_softmax(logits.double())`` gives it (the logits in the inputs' dtype),
    greedy as ``argmax == target`` with torch's first-index rule: exact ties across and within slices."""
    h = torch.from_numpy(rng.standard_normal((40, 24))).to(dtype)
    w = torch.from_numpy(rng.standard_normal((1000, 24)) * 0.5).to(dtype)
    h[12], h[13] = h[0], h[1]
    top = F.linear(h, w).argmax(-1)
    assert 3 < top[1] < 999 and top[0] < 999
    w[999] = w[int(top[0])]  # row 0: a tie with a later slice, the first stays the argmax
    w[3] = w[int(top[1])]  # row 1: a tie with an earlier one, index 3 becomes the argmax
    logits = F.linear(h, w)
    t = torch.from_numpy(rng.integers(0, 1000, 40))
    t[:12] = logits.argmax(-1)[:12]  # greedy targets
    t[12], t[13] = 999, top[1]  # the later of each tie
    logp, greedy = tm.token_scores_from_hidden(h, w, t, chunk=chunk)
    ref = torch.log_softmax(logits.double(), -1).gather(1, t[:, None])[:, 0].numpy()
    np.testing.assert_allclose(logp, ref, rtol=1e-13)
    np.testing.assert_array_equal(greedy, (logits.argmax(-1) == t).numpy())
    assert greedy[:12].all() and t[1] == 3 and t[0] == top[0] and not greedy[12:14].any()


def test_scores_of_numpy_inputs_masks_and_non_finite_rows(rng):
    h = rng.standard_normal((2, 5, 8))
    w = rng.standard_normal((50, 8))
    t = rng.integers(0, 50, (2, 5))
    t[0, 0] = -100
    mask = np.ones((2, 5), bool)
    mask[1, 4] = False
    logp, greedy = tm.token_scores_from_hidden(h, w, t, ignore_index=-100, mask=mask)
    logits = torch.from_numpy(h @ w.T)
    ref = torch.log_softmax(logits, -1).gather(2, torch.from_numpy(t).clamp(0)[..., None])[..., 0].numpy()
    counted = (t != -100) & mask
    np.testing.assert_allclose(logp[counted], ref[counted], rtol=1e-13)
    assert (logp[~counted] == 0).all() and not greedy[~counted].any()
    np.testing.assert_array_equal(greedy[counted], (logits.argmax(-1).numpy() == t)[counted])
    # a NaN row: NaN, and greedy only for target 0 (torch.argmax of an all-NaN log-softmax row)
    logp, greedy = tm.token_scores_from_hidden(np.array([[np.nan], [np.nan]]), np.ones((3, 1)), [0, 2])
    assert np.isnan(logp).all() and greedy.tolist() == [True, False]


def test_score_ties_across_the_kernels_blocks(rng):
    """The first argmax when the tie straddles the fold's 2,048-value blocks inside one slice."""
    h = torch.from_numpy(rng.standard_normal((3, 16))).repeat(2, 1)  # rows 3-5 repeat rows 0-2
    w = torch.from_numpy(rng.standard_normal((5000, 16)))
    top = F.linear(h, w).argmax(-1)
    pairs = [(100, 4100), (2047, 2048), (4095, 4999)]
    for r, (a, b) in enumerate(pairs):
        w[a] = w[b] = w[int(top[r])] * 3  # row r: tied maxima at a and b
    logits = F.linear(h, w)
    t = torch.tensor([a for a, _ in pairs] + [b for _, b in pairs])  # the first of each tie, then the second
    _, greedy = tm.token_scores_from_hidden(h, w, t)
    np.testing.assert_array_equal(greedy, (logits.argmax(-1) == t).numpy())
    assert greedy.tolist() == [True] * 3 + [False] * 3
