"""``metrics.BLEU.update`` and ``metrics.ROUGE.update`` on token IDs in torch tensors on a GPU return without a host
wait (issue 41): the pads removed, the lengths and the counts made on the device (``_gpu_token_ids``), copied back
behind an event. The simulator runs the same torch operations on CPU tensors (``device="cuda"``);
``TokenLater.ready`` is patched to say "not yet" where a test needs the chunks to stay pending. On a real GPU the
last test checks, with a long kernel queued first and torch's sync debug mode on, that ``update`` does not wait.
"""

import pickle

import numpy as np
import pytest
from numba import config

import turbometrics as tm
from turbometrics import _gpu_token_ids

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
PAD = -1


@pytest.fixture
def not_ready(monkeypatch):
    monkeypatch.setattr(_gpu_token_ids.TokenLater, "ready", lambda self: False)


def on(a):
    """A tensor where the GPU path takes it: on the GPU, or (the simulator) on the CPU."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t if config.ENABLE_CUDASIM else t.cuda()


def batch(rng, b=6, r=3, width=14, vocab=4, pad=PAD):
    """(hypotheses (b, width), references (b, r, width)) with pads anywhere, an empty hypothesis, a segment with
    one reference left (the others all pads: absent) and a segment whose references are all pads (one empty)."""
    hyp = rng.integers(0, vocab, (b, width))
    ref = rng.integers(0, vocab, (b, r, width))
    if pad is not None:
        hyp[rng.random(hyp.shape) < 0.3] = pad
        ref[rng.random(ref.shape) < 0.3] = pad
        hyp[min(3, b - 1)] = pad
        if r > 1:
            ref[min(1, b - 1), 1:] = pad
        ref[min(2, b - 1)] = pad
    return hyp, ref


def same_as_host(m, host):
    if isinstance(m, tm.metrics.ROUGE):
        got, want = m.compute(), host.compute()
        assert list(got) == list(want)
        for t in want:
            np.testing.assert_array_equal(np.array(got[t]), np.array(want[t]), err_msg=t)  # bits: NaN == NaN
        return
    np.testing.assert_array_equal(m.segment_statistics(), host.segment_statistics())
    np.testing.assert_array_equal(m.segment_scores(), host.segment_scores())
    assert str(m.compute()) == str(host.compute())
    assert m.signature() == host.signature()


ROUGE_TYPES = (["rouge1", "rouge2", "rougeL", "rougeLsum"], ["rouge3"], ["rougeL"])


def makers(metric):
    """Metric factories of one family: BLEU of several orders, ROUGE of several type lists."""
    if metric == "BLEU":
        return [lambda o=o: tm.metrics.BLEU(max_ngram_order=o) for o in (1, 4, 7)]
    return [lambda t=t: tm.metrics.ROUGE(t) for t in ROUGE_TYPES]


@pytest.fixture(params=["shared memory", "global memory"])
def where(request, monkeypatch):
    """Where the kernels keep a segment's tokens (n-grams) and a pair's diagonals (LCS)."""
    from turbometrics._kernels import cuda as K

    if request.param == "global memory":
        monkeypatch.setattr(K, "NGRAM_SHARED_MAX", 0)
        monkeypatch.setattr(K, "LCS_SHARED_MAX", 0)
    return request.param


@pytest.mark.parametrize("metric", ["BLEU", "ROUGE"])
@pytest.mark.parametrize("pad", [PAD, None])
def test_pending_updates_give_the_host_paths_statistics(rng, not_ready, where, metric, pad):
    for make in makers(metric):
        m, host = make(), make()
        shapes = [(6, 3, 14), (1, 1, 5), (4, 2, 9), (3, 1, 0)]  # (b, r, width); the last: empty references
        for i, (b, r, width) in enumerate(shapes):
            hyp, ref = batch(rng, b, r, width or 8, pad=pad)
            ref = ref[:, :, :width]
            refs = ref[:, 0] if i == 1 else ref  # (B, L) references too
            dtype = (np.int64, np.int32)[i % 2]  # the dtypes the kernels are given (int32 converted on the device)
            m.update(on(hyp.astype(dtype)), on(refs.astype(dtype)), pad_id=pad, device="cuda")
            host.update(hyp, refs, pad_id=pad)
        assert len(m._pending) == len(shapes)
        assert all(isinstance(item, _gpu_token_ids.TokenLater) for _, item in m._pending)
        same_as_host(m, host)


def test_random_batches_equal_the_host_path(rng, not_ready):
    """Seeded random batches: sizes, widths, vocabularies (ties: repeated n-grams), pad densities, dtypes, orders
    and extreme IDs, one pending update each against the host path."""
    for case in range(40):
        b, r, width, rwidth = (int(v) for v in rng.integers((1, 1, 0, 0), (6, 4, 40, 40)))
        vocab = int(rng.choice([2, 5, 1000, 2**62]))
        hyp, ref = rng.integers(0, vocab, (b, width)), rng.integers(0, vocab, (b, r, rwidth))
        for a in (hyp, ref):
            a[rng.random(a.shape) < rng.random()] = PAD
        dtype = np.int32 if vocab < 2**31 and case % 2 else np.int64
        order = int(rng.integers(1, 10))
        make = (
            (lambda: tm.metrics.BLEU(max_ngram_order=order))  # noqa: B023 - called within this iteration
            if case % 3
            else (lambda: tm.metrics.ROUGE(["rouge1", "rouge4", "rougeL"]))
        )
        m = make().update(on(hyp.astype(dtype)), on(ref.astype(dtype)), pad_id=PAD, device="cuda")
        assert len(m._pending) == 1
        same_as_host(m, make().update(hyp, ref, pad_id=PAD))


def test_nrefs_is_var_when_segments_keep_different_reference_counts(rng, not_ready):
    hyp, ref = batch(rng)
    m = tm.metrics.BLEU().update(on(hyp), on(ref), pad_id=PAD, device="cuda")
    host = tm.metrics.BLEU().update(hyp, ref, pad_id=PAD)
    assert "nrefs:var" in str(host.signature())
    same_as_host(m, host)


@pytest.mark.parametrize("make", [tm.metrics.BLEU, tm.metrics.ROUGE])
def test_pending_updates_merge_pickle_and_resample_as_the_host_path(rng, not_ready, make):
    hyp, ref = batch(rng, b=8)
    host = make().update(hyp, ref, pad_id=PAD)

    def pending():
        return make().update(on(hyp[:5]), on(ref[:5]), pad_id=PAD, device="cuda")

    rest = make().update(hyp[5:], ref[5:], pad_id=PAD)
    same_as_host(pending() + rest, host)
    same_as_host(pickle.loads(pickle.dumps(pending().merge(rest))), host)
    got = tm.bootstrap_ci(pending().merge(rest), n_resamples=30, seed=3)
    want = tm.bootstrap_ci(host, n_resamples=30, seed=3)
    assert repr(got) == repr(want)
    m = pending()
    m.reset()
    assert not m._pending and len(m._rows) == 0


@pytest.mark.parametrize("make", [tm.metrics.BLEU, lambda: tm.metrics.ROUGE(["rouge2", "rougeL"])])
@pytest.mark.parametrize("side", ["hypotheses", "references"])
def test_negative_token_ids_found_later_name_their_update(rng, not_ready, side, make):
    hyp, ref = batch(rng)
    bad_hyp, bad_ref = hyp.copy(), ref.copy()
    if side == "hypotheses":
        bad_hyp[0, 2] = -5
    else:
        bad_ref[4, 0, 1] = -5
    m = make()
    for h, r in ((hyp, ref), (bad_hyp, bad_ref), (hyp[:2], ref[:2])):
        m.update(on(h), on(r), pad_id=PAD, device="cuda")  # every update returns: nothing was read yet
    name = type(m).__name__
    said = "predictions" if name == "ROUGE" and side == "hypotheses" else side  # ROUGE's word for them
    with pytest.raises(ValueError, match=rf"update #2 of this {name} .*{said}: token IDs must be >= 0 .*found -5"):
        m.compute()
    same_as_host(m, make().update(hyp, ref, pad_id=PAD).update(hyp[:2], ref[:2], pad_id=PAD))


@pytest.mark.parametrize("make", [tm.metrics.BLEU, tm.metrics.ROUGE])
def test_a_pad_id_out_of_the_dtypes_range_matches_no_token_in_either_path(rng, not_ready, make):
    """uint8 IDs with pad_id -1: token 255 stays a token in the pending update, in the synchronous GPU path (the
    one-shot functions'; torch alone would compare 255 == -1) and on the host."""
    hyp, ref = batch(rng, pad=None)
    hyp[hyp == 3], ref[ref == 3] = 255, 255
    hyp[0], ref[1, 1:] = 255, 255  # a hypothesis, and two references, of token 255 alone
    h, r = on(hyp.astype(np.uint8)), on(ref.astype(np.uint8))
    host = make().update(hyp.astype(np.uint8), ref.astype(np.uint8), pad_id=-1)
    same_as_host(make().update(h, r, pad_id=-1, device="cuda"), host)
    now = make()
    same_as_host(now._fold(now._stats(h, r, None, -1, "cuda", later=False)), host)


@pytest.mark.parametrize("make", [tm.metrics.BLEU, tm.metrics.ROUGE])
def test_a_forked_child_reading_pending_token_ids_gets_a_clear_error(rng, not_ready, in_forked_child, make):
    hyp, ref = batch(rng)
    m = make().update(on(hyp), on(ref), pad_id=PAD, device="cuda")

    def child():
        try:
            m.compute()
        finally:
            m.reset()  # dropping the pending chunk there frees nothing of the parent's

    got = in_forked_child(child)
    assert "forked from one that had already used CUDA" in got, got
    same_as_host(m, make().update(hyp, ref, pad_id=PAD))


def test_text_after_pending_token_ids_is_refused(rng, not_ready):
    hyp, ref = batch(rng)
    m = tm.metrics.BLEU().update(on(hyp), on(ref), pad_id=PAD, device="cuda")
    with pytest.raises(ValueError, match="holds statistics of token IDs"):
        m.update(["a b"], [["a b"]])


def test_other_inputs_and_one_shot_calls_stay_synchronous(rng, monkeypatch):
    hyp, ref = batch(rng)
    taken = []
    real = _gpu_token_ids.TokenLater.__init__
    monkeypatch.setattr(_gpu_token_ids.TokenLater, "__init__", lambda self, *a: taken.append(1) or real(self, *a))
    for h, r in (
        (list(hyp), list(ref)),  # lists of sequences
        (hyp, ref),  # host arrays
        (on(hyp), ref),  # references on the host
        (on(hyp.astype(np.uint64) * 0), on(ref.astype(np.uint64) * 0)),  # uint64: checked on the host
    ):
        tm.metrics.BLEU().update(h, r, pad_id=PAD, device="cuda")
        tm.metrics.ROUGE().update(h, r, pad_id=PAD, device="cuda")
    tm.metrics.BLEU(max_ngram_order=17).update(on(hyp), on(ref), pad_id=PAD, device="cuda")  # past the kernel's
    assert not taken
    bad = hyp.copy()
    bad[0, 0] = -7
    for call in (
        lambda: tm.corpus_bleu(on(bad), on(ref), pad_id=PAD),
        lambda: tm.segment_bleu(on(bad), on(ref), pad_id=PAD),
    ):
        with pytest.raises(ValueError, match=r"^hypotheses: token IDs must be >= 0"):  # the host path's words
            call()
    with pytest.raises(ValueError, match=r"^predictions: token IDs must be >= 0"):
        tm.rouge(on(bad), on(ref), ["rouge1"], pad_id=PAD)
    assert tm.corpus_bleu(on(hyp), on(ref), pad_id=PAD).score == tm.corpus_bleu(hyp, ref, pad_id=PAD).score
    got, want = tm.rouge(on(hyp), on(ref), ["rougeL"], pad_id=PAD), tm.rouge(hyp, ref, ["rougeL"], pad_id=PAD)
    assert np.array(got["rougeL"]).tolist() == np.array(want["rougeL"]).tolist()
    assert not taken


@pytest.mark.parametrize("make", [tm.metrics.BLEU, tm.metrics.ROUGE])
def test_update_does_not_wait_for_the_gpu(rng, make):
    if config.ENABLE_CUDASIM:  # a real GPU's test (the simulator runs every kernel at once; its suite allows no skip)
        return
    hyp, ref = batch(rng, b=64, r=2, width=200, vocab=50)
    host = make().update(hyp, ref, pad_id=PAD)
    h, r = on(hyp), on(ref)
    make().update(h, r, pad_id=PAD).compute()  # the kernels compiled, torch's pinned pool warm
    for stream in (torch.cuda.current_stream(), torch.cuda.Stream()):  # the default stream and a side stream
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            m = make()
            torch.cuda._sleep(2_000_000_000)  # about a second of GPU time queued before the update
            torch.cuda.set_sync_debug_mode("error")  # any torch call that waits for the GPU raises
            try:
                m.update(h, r, pad_id=PAD)
            finally:
                torch.cuda.set_sync_debug_mode(0)
            assert not stream.query(), "update waited for the GPU"
            assert len(m._pending) == 1
            same_as_host(m, host)
