"""Metric updates on device input return before the GPU is done (issue 41): the chunks wait in the
metric and are folded in, in update order, by ``compute`` (and every other state reader), to the bits of
synchronous updates. The simulator runs everything synchronously, so ``Later.ready`` is patched to say
"not yet" where a test needs chunks to stay pending; on a real GPU the last test checks, with a long
kernel queued first, that ``update`` does not wait for the device.
"""

import pickle

import numpy as np
import pytest
from numba import config, cuda

import turbometrics as tm
from turbometrics import _gpu

pytestmark = pytest.mark.gpu


def dev(a):
    return cuda.to_device(np.ascontiguousarray(a))


@pytest.fixture
def not_ready(monkeypatch):
    """Chunks stay pending until a state reader waits for them."""
    monkeypatch.setattr(_gpu.Later, "ready", lambda self: False)


def batches(rng, n=3, v=23):
    out = []
    for i in range(n):
        x = (rng.standard_normal((1 + i, 3, v)) * 3).astype(np.float32)
        t = rng.integers(0, v, (1 + i, 3))
        t[0, i % 3] = -100
        out.append((x, t))
    return out


def metrics():
    return [
        tm.metrics.Perplexity(ignore_index=-100),
        tm.metrics.Perplexity(ignore_index=-100, reduction="none"),
        tm.metrics.TopKAccuracy(k=(1, 3), ignore_index=-100),
    ]


def feed(m, data, on_device):
    """``m`` updated with each batch (``on_device``: True, False, or one flag a batch), or with
    ``on_device=None`` what today's synchronous paths give for the same flags (``m.ref``): Perplexity from
    the per-token NLLs each side computes, brought to the host as NLL input; ranks are integers, the same
    on either side."""
    flags = on_device if isinstance(on_device, list) else [on_device] * len(data)
    rank = not isinstance(m, tm.metrics.Perplexity)
    ref = getattr(m, "ref", False)
    if ref and not rank:
        m = tm.metrics.Perplexity(reduction=m.reduction, input="nll")
    for (x, t), on in zip(data, flags):
        if rank:
            x, t = x.reshape(-1, x.shape[-1]), t.reshape(-1)
        if ref and not rank:
            nll = tm.token_nll(dev(x), dev(t), ignore_index=-100).copy_to_host() if on else tm.token_nll(x, t, -100)
            m.update(nll, mask=t != -100)
        else:
            m.update(dev(x), dev(t)) if on else m.update(x, t)
    return m


def reference(m):
    m.ref = True
    return m


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # bits: NaN == NaN, no tolerance


def test_pending_updates_give_the_bits_of_synchronous_ones(rng, not_ready):
    data = batches(rng)
    for m, ref in zip(metrics(), metrics()):
        feed(m, data, True)
        assert len(m._pending) == len(data)  # nothing folded yet: update did not wait
        same(m.compute(), feed(reference(ref), data, True).compute())
        assert not m._pending


def test_state_readers_fold_pending_chunks_in_update_order(rng, not_ready):
    data = batches(rng)
    order = [True, False, True]  # device, host, device: per-item results keep the update order
    for make in (
        lambda: tm.metrics.Perplexity(ignore_index=-100, reduction="none"),
        lambda: tm.metrics.MeanReciprocalRank(ignore_index=-100),
    ):
        m = feed(make(), data, order)
        assert len(m._pending) == 3  # the host chunk behind a pending one waits too
        same(pickle.loads(pickle.dumps(m)).compute(), feed(reference(make()), data, order).compute())
        assert not m._pending  # pickling folded them in
    ppl = lambda: tm.metrics.Perplexity(ignore_index=-100)  # noqa: E731
    expect = feed(reference(ppl()), data, True)
    same((feed(ppl(), data[:1], True) + feed(ppl(), data[1:], True)).compute(), expect.compute())
    ci = tm.bootstrap_ci(feed(ppl(), data, True), n_resamples=20)
    same([ci.low, ci.high], [tm.bootstrap_ci(expect, n_resamples=20).low, tm.bootstrap_ci(expect, n_resamples=20).high])
    m = feed(ppl(), data[:1], True)
    m.reset()  # pending chunks are dropped with the state
    assert not m._pending and np.isnan(m.compute())


def test_a_bad_target_found_later_names_its_update(rng, not_ready):
    data = batches(rng)
    bad = data[1][1].copy()
    bad[1, 1] = 99  # (batch 1 has two sequences)
    wrong = [data[0], (data[1][0], bad), data[2]]
    for make in (
        lambda: tm.metrics.Perplexity(ignore_index=-100),
        lambda: tm.metrics.TopKAccuracy(k=2, ignore_index=-100),
    ):
        m = feed(make(), wrong, True)  # every update returned: the device was not read yet
        with pytest.raises(ValueError, match=r"update #2 of this .*targets must lie in \[0, 23\).*found 99"):
            m.compute()
        same(m.compute(), feed(reference(make()), [data[0], data[2]], True).compute())  # #2 left out, the rest kept


def test_finished_chunks_are_folded_at_the_next_update(rng):
    data = batches(rng, n=3)
    m = feed(tm.metrics.Perplexity(ignore_index=-100), data[:2], True)
    cuda.synchronize()  # the first two chunks are ready (on a GPU, the second may not be at its own update)
    feed(m, data[2:], True)
    assert len(m._pending) <= 1  # folded by the third update's check: only its own chunk may still wait
    same(m.compute(), feed(reference(tm.metrics.Perplexity(ignore_index=-100)), data, True).compute())


def test_the_copy_back_is_asynchronous_on_the_default_stream_too(rng, monkeypatch):
    """numba copies synchronously when given stream 0: the legacy default stream goes as a stream object."""
    streams = []
    real = type(dev(np.zeros(1))).copy_to_host

    def spy(self, ary=None, stream=0):
        streams.append(stream)
        return real(self, ary, stream=stream)

    monkeypatch.setattr(type(dev(np.zeros(1))), "copy_to_host", spy)
    x, t = batches(rng, n=1)[0]
    tm.metrics.Perplexity(ignore_index=-100).update(dev(x), dev(t))
    assert streams and all(bool(s) for s in streams), streams


def test_an_earlier_error_is_not_raised_by_a_later_update(rng):
    data = batches(rng)
    bad = data[1][1].copy()
    bad[0, 1] = 23
    m = tm.metrics.Perplexity(ignore_index=-100)
    m.update(dev(data[0][0]), dev(data[0][1]))
    m.update(dev(data[1][0]), dev(bad))  # found at once (the simulator is done): kept, raised by a reader
    m.update(dev(data[2][0]), dev(data[2][1]))  # its own chunk is accepted: no error here
    with pytest.raises(ValueError, match=r"update #2 of this Perplexity"):
        m.compute()
    expect = feed(reference(tm.metrics.Perplexity(ignore_index=-100)), [data[0], data[2]], True)
    same(m.compute(), expect.compute())


def test_no_failure_blocks_the_metric(rng, not_ready, monkeypatch):
    """Any error of a pending chunk is raised once, by the reader that found it; the chunk is left out."""
    data = batches(rng, n=2)
    m = feed(tm.metrics.Perplexity(ignore_index=-100), data, True)
    real = _gpu.Later.chunk
    calls = []

    def once_broken(self):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a driver error")
        return real(self)

    monkeypatch.setattr(_gpu.Later, "chunk", once_broken)
    with pytest.raises(RuntimeError, match="a driver error"):
        m.compute()
    same(m.compute(), feed(reference(tm.metrics.Perplexity(ignore_index=-100)), data[1:], True).compute())
    # targets changed before the chunk was read: the kernel's finding is still reported, as bad input
    t = data[0][1].copy()
    t[0, 1] = 30
    t_dev = dev(t)
    m = tm.metrics.Perplexity(ignore_index=-100).update(dev(data[0][0]), t_dev)
    t_dev.copy_to_device(np.zeros_like(t))
    with pytest.raises(ValueError, match=r"update #1 .*outside \[0, 23\), which the targets no longer hold"):
        m.compute()


def test_one_shot_calls_and_their_errors_stay_synchronous(rng, monkeypatch):
    x = rng.standard_normal((6, 7)).astype(np.float32)
    t = rng.integers(0, 7, 6)
    t[2] = 99
    for call in (
        lambda: tm.topk_accuracy(dev(x), dev(t), k=2),
        lambda: tm.mean_reciprocal_rank(dev(x), dev(t)),
        lambda: tm.perplexity(dev(x), dev(t), reduction="sequence"),
    ):
        with pytest.raises(ValueError, match=r"^targets must lie in \[0, 7\)"):  # the CPU path's words
            call()
    launched = []
    monkeypatch.setattr(_gpu, "row_later", lambda *a, **k: launched.append(1))
    with pytest.raises(ValueError, match="k must"):
        tm.metrics.TopKAccuracy(k=50).update(dev(x), dev(np.abs(t) % 7))  # checked before any launch
    assert not launched


def test_device_targets_with_a_host_mask_stay_on_the_device(rng, not_ready, monkeypatch):
    x, t = batches(rng, n=1)[0]
    mask = (rng.random(t.shape) < 0.7) & (t != -100)
    t = np.where(t < 0, 0, t)
    expect = tm.metrics.Perplexity(input="nll").update(
        tm.token_nll(dev(x), dev(t), mask=dev(mask)).copy_to_host(), mask=mask
    )

    def no_host(a):
        raise AssertionError("the targets were brought to the host")

    monkeypatch.setattr(_gpu, "to_host", no_host)
    m = tm.metrics.Perplexity().update(dev(x), dev(t), mask=mask)
    same(m.compute(), expect.compute())


def test_a_forked_child_reading_pending_results_gets_a_clear_error(rng, not_ready, in_forked_child):
    x, t = batches(rng, n=1)[0]
    m = tm.metrics.Perplexity(ignore_index=-100).update(dev(x), dev(t))

    def child():
        m.compute()
        # (dropping the metric in the child touches no driver: the child exits after this)

    got = in_forked_child(child)
    assert "forked from one that had already used CUDA" in got, got
    same(m.compute(), feed(reference(tm.metrics.Perplexity(ignore_index=-100)), [(x, t)], True).compute())


def test_weighted_rank_updates_stay_synchronous(rng):
    x = rng.standard_normal((20, 9)).astype(np.float32)
    t = rng.integers(0, 9, 20)
    w = rng.random(20)
    m = tm.metrics.TopKAccuracy(k=2).update(dev(x), dev(t), sample_weight=w)
    assert not m._pending
    assert m.compute() == tm.metrics.TopKAccuracy(k=2).update(x, t, sample_weight=w).compute()


def test_update_does_not_wait_for_the_gpu(rng):
    if config.ENABLE_CUDASIM:  # a real GPU's test (the simulator runs every kernel at once; its suite allows no skip)
        return
    import torch

    x = torch.randn(4, 512, 4096, device="cuda", dtype=torch.bfloat16)
    t = torch.randint(0, 4096, (4, 512), device="cuda")
    expect = tm.metrics.Perplexity(input="nll").update(tm.token_nll(x, t).cpu().numpy())  # today's synchronous path
    for stream in (torch.cuda.current_stream(), torch.cuda.Stream()):  # the default stream and a side stream
        with torch.cuda.stream(stream):
            for targets in (t, t.cpu()):  # device targets, and host ones (uploaded without a wait)
                m = tm.metrics.Perplexity()
                torch.cuda._sleep(2_000_000_000)  # about a second of GPU time queued before the update
                m.update(x, targets)
                assert not stream.query(), "update waited for the GPU"
                assert len(m._pending) == 1
                same(m.compute(), expect.compute())


def test_updates_pending_on_one_reused_buffer_keep_their_own_values():
    """Several updates of different batches pending at once on a side stream, their kernels all writing the one
    kept buffer (``_gpu._kept``) behind a busy GPU: each copy back is queued before the next kernel, so the
    folded result is the synchronous path's. On a GPU only (the simulator runs each update at once)."""
    if config.ENABLE_CUDASIM:
        return
    import torch

    xs = [torch.randn(4, 256, 1000, device="cuda", dtype=torch.bfloat16) for _ in range(5)]
    ts = [torch.randint(0, 1000, (4, 256), device="cuda") for _ in range(5)]
    expect = tm.metrics.Perplexity(input="nll")
    for x, t in zip(xs, ts):
        expect.update(tm.token_nll(x, t).cpu().numpy())
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # the batches were made on the default stream
    with torch.cuda.stream(side):
        m = tm.metrics.Perplexity()
        torch.cuda._sleep(1_000_000_000)  # about half a second of GPU time queued first
        for x, t in zip(xs, ts):
            m.update(x, t)
        assert len(m._pending) == 5
        same(m.compute(), expect.compute())


def test_input_on_a_gpu_that_is_not_the_current_one():
    """Tensors on cuda:1 while cuda:0 is current (a model put on ``--device cuda:1``): each call runs on cuda:1
    (``_arrays.device_guard``) and gives cuda:0's bits, its results on cuda:1; cuda:0 stays current. On a machine
    with two GPUs only (the stand-in tests in tests/test_device_guard.py check the guard everywhere)."""
    if config.ENABLE_CUDASIM:
        return
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    torch.cuda.set_device(0)
    x0 = torch.randn(3, 64, 5000, device="cuda:0", dtype=torch.bfloat16)
    t0 = torch.randint(0, 5000, (3, 64), device="cuda:0")
    h0 = torch.randint(1, 50, (8, 30), device="cuda:0")
    x1, t1, h1 = (a.to("cuda:1") for a in (x0, t0, h0))
    nll = tm.token_nll(x1, t1)
    assert nll.device == x1.device and torch.equal(nll.cpu(), tm.token_nll(x0, t0).cpu())
    assert tm.perplexity(x1, t1) == tm.perplexity(x0, t0)
    assert all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(tm.topk(x1, 5), tm.topk(x0, 5)))
    for make, args in (
        (tm.metrics.Perplexity, lambda x, t, h: (x, t)),
        (lambda: tm.metrics.TopKAccuracy(k=5), lambda x, t, h: (x, t)),
        (tm.metrics.BLEU, lambda x, t, h: (h, h.flip(1))),  # a reference a hypothesis (the pending path)
        (tm.metrics.ROUGE, lambda x, t, h: (h, h.flip(1))),
    ):
        on1, on0 = make().update(*args(x1, t1, h1)), make().update(*args(x0, t0, h0))
        assert pickle.dumps(on1.compute()) == pickle.dumps(on0.compute())
    assert torch.cuda.current_device() == 0
    # numba's views of the cuda:1 tensors were made in cuda:1's context (with peer access between the two,
    # kernels on cuda:0 would also have given these numbers)
    views = [v for (d, *_), v in _gpu._VIEWS.items() if d == 1]
    assert views and all(v.gpu_data.context.device.id == 1 for v in views)
