"""Split a GPU metric call's time into the kernel and the Python/validation around it (GPU machine)."""

import time
from unittest import mock

import numpy as np
import torch
from numba import cuda

import turbometrics as tm
from turbometrics import _gpu, _gpu_tally
from turbometrics._exact import exact_sum
from turbometrics._kernels import cuda as K
from turbometrics._metric import once
from turbometrics.classification import TopKAccuracy

N, V = 4096, 128256
x = torch.randn(N, V, device="cuda") * 3
t = torch.randint(0, V, (N,), device="cuda")
xs, ts = torch.randn(100_000, 1000, device="cuda"), torch.randint(0, 1000, (100_000,), device="cuda")


def best(fn, n=30):
    fn()
    torch.cuda.synchronize()
    out = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out = min(out, time.perf_counter() - t0)
    return out * 1e3


rows = _gpu.device_rows(x, "x")
buf, out, status = _gpu._with_status(rows, np.float64)
tg = _gpu.device_targets(rows, t, None, None, status)  # device targets: checked in the kernel
nll = K.nll_rows(rows.widen)
rank = K.rank_rows(rows.widen)
no_rows = rows.data[:0]  # a launch that does no work: numba's dispatch and the driver's launch alone
rbuf, ro, rstatus = _gpu._with_status(rows, np.int64)
_pin = torch.empty(buf.shape[0] * 8, dtype=torch.uint8, pin_memory=True)
_pin_host, _done = _pin.numpy().view(np.float64), cuda.event(timing=False)


def pinned_back() -> None:  # what Later does, waited for at once: a candidate for _gpu._back
    buf.copy_to_host(_pin_host, stream=cuda.default_stream())
    _done.record(cuda.default_stream())
    _done.synchronize()


for name, fn in [
    ("nll kernel, numba arrays", lambda: nll[N, K.TPB](rows.data, *tg.args, out, status)),
    ("_gpu.nll, result + status on the host", lambda: _gpu.nll(x, t, None, None, host=True)),
    ("tm.perplexity", lambda: tm.perplexity(x, t)),
    ("the same, rows back (before the tally)", lambda: exact_sum(_gpu.nll(x, t, None, None, host=True)[0])),
    ("tm.topk_accuracy (100000, 1000)", lambda: tm.topk_accuracy(xs, ts, k=5)),
    ("the same, ranks back (before the tally)", lambda: once(TopKAccuracy(5), xs, ts, None, None, None)),
    ("tm.perplexity, host targets", lambda: tm.perplexity(x, t.cpu())),
    ("rank kernel only", lambda: rank[N, K.TPB](rows.data, *tg.args, False, True, ro, rstatus)),
    ("tm.topk_accuracy", lambda: tm.topk_accuracy(x, t, k=5)),
    ("device_rows", lambda: _gpu.device_rows(x, "x")),
    ("device_targets (device)", lambda: _gpu.device_targets(rows, t, None, None, status)),
    ("device_targets (host)", lambda: _gpu.device_targets(rows, t.cpu(), None, None, status)),
    ("buf.copy_to_host() (9 bytes a row)", lambda: buf.copy_to_host()),
    ("the same into page-locked memory + event", lambda: pinned_back()),
    ("cuda.as_cuda_array(tensor)", lambda: cuda.as_cuda_array(x)),
    ("_gpu._numba(tensor) (no stream sync)", lambda: _gpu._numba(x)),
    ("_gpu._empty(rows, 4096, f8)", lambda: _gpu._empty(rows, N, np.float64)),
    ("numba launch alone (nll, no rows)", lambda: nll[1, K.TPB](no_rows, *tg.args, out, status)),
    ("cuda.device_array(4096)", lambda: cuda.device_array(N, "f8")),
    ("torch.empty(4096)", lambda: torch.empty(N, dtype=torch.float64, device="cuda")),
    ("cuda.to_device(4096 i8)", lambda: cuda.to_device(np.zeros(N, np.int64))),
    ("torch.from_numpy(...).cuda()", lambda: torch.from_numpy(np.zeros(N, np.int64)).cuda()),
    ("t.cpu()", lambda: t.cpu()),
    ("tm.topk k=50", lambda: tm.topk(x, 50)),
    ("torch.sum read", lambda: x.sum()),
]:
    print(f"{name:<36} {best(fn):.3f} ms", flush=True)

# One tm.perplexity call's stages in order (median of 50 calls, microseconds): what runs on the host before the
# launch delays the kernel; what runs after the copy delays the result. The rows path (before the tally), then
# the tally's.


def print_stages(label: str, one_call) -> None:
    """The median of 50 calls (after 10 more) of each stage of ``one_call``: a generator that yields each stage's
    name as the stage ends."""
    got: dict = {}
    for rep in range(60):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for name in one_call():
            took = time.perf_counter() - t0
            if rep >= 10:
                got.setdefault(name, []).append(took * 1e6)
            t0 = time.perf_counter()
    for name, v in got.items():
        print(f"{label} {name:<16} {sorted(v)[len(v) // 2]:8.1f} us", flush=True)


def rows_call():
    r = _gpu._as_pairs(_gpu.device_rows(x, "logits"))
    yield "device_rows"
    b, o, st = _gpu._with_status(r, np.float64, scratch=True)
    yield "_with_status"
    tgt = _gpu.device_targets(r, t, None, None, st)
    yield "device_targets"
    _gpu._launch_rows("nll_rows", r, *tgt.args, o, st)
    yield "launch"
    torch.cuda.synchronize()  # the kernel itself
    yield "kernel (sync)"
    h = _gpu._back(b, r.stream)
    yield "copy back"
    cnt = tgt.counted_from(h[N:].view(np.uint8)[:N], r.lead, r.n_classes)
    yield "counted_from"
    exact_sum(h[:N]) / max(1, int(np.count_nonzero(cnt)))
    yield "exact sum"


def tally_call():
    r = _gpu._as_pairs(_gpu.device_rows(x, "logits"))
    yield "device_rows"
    _, words_d, go = _gpu_tally.tally_job("nll_tally", r, t, None, None)
    yield "tally_job"
    go()
    yield "launch"
    torch.cuda.synchronize()  # the kernel itself
    yield "kernel (sync)"
    words = _gpu._back(words_d, r.stream)
    yield "copy back"
    _gpu_tally._tally_sum(words) / max(1, int(words[K.tally.COUNTED]))
    yield "finish"


print_stages("stage", rows_call)
print_stages("tally stage", tally_call)

# Issue 41's host path: each call with launches through numba (``_launch.DIRECT = False``) and direct, same run.
from turbometrics import _launch  # noqa: E402


def off_on(owner, attr: str, fn) -> tuple:
    """best(fn) with ``owner.attr`` False, then True (ms): interleaved, so clock and cache drift fall on both."""
    took: dict = {}
    for value in (False, True, False, True):
        with mock.patch.object(owner, attr, value):
            took[value] = min(took.get(value, float("inf")), best(fn))
    return took[False], took[True]


xb, xh = x.to(torch.bfloat16), x.to(torch.float16)
for name, fn in [
    ("tm.perplexity f32", lambda: tm.perplexity(x, t)),
    ("tm.perplexity bf16", lambda: tm.perplexity(xb, t)),
    ("tm.perplexity f16", lambda: tm.perplexity(xh, t)),
    ("tm.topk_accuracy k=5 f32", lambda: tm.topk_accuracy(x, t, k=5)),
    ("tm.topk k=50 f32", lambda: tm.topk(x, 50)),
]:
    off, on = off_on(_launch, "DIRECT", fn)
    print(f"{name:<28} numba launch {off:.3f} ms, direct {on:.3f} ms ({(off - on) * 1e3:.0f} us less)", flush=True)
refused = [k[0].py_func.__name__ for k, v in _launch._KINDS.items() if v is None]
print(f"direct launch kinds learned: {len(_launch._KINDS)}, left on numba's path: {refused or 'none'}")

# The copy back by the driver (``_gpu.RAW_COPY``: cuMemcpyDtoHAsync, cuStreamSynchronize) against numba's
# copy and a stream wait, same run, interleaved.
for name, fn in [
    ("tm.perplexity f32", lambda: tm.perplexity(x, t)),
    ("tm.topk_accuracy (100000, 1000)", lambda: tm.topk_accuracy(xs, ts)),
]:
    off, on = off_on(_gpu, "RAW_COPY", fn)
    print(
        f"{name:<32} numba's copy back {off:.3f} ms, the driver's {on:.3f} ms ({(off - on) * 1e3:.0f} us less)",
        flush=True,
    )


def launch_costs() -> None:
    """One launch of a kernel that does no work (grid 1, no rows), host time: numba's, cuda.core's ``launch`` with
    the learned kind, and the driver's ``cuLaunchKernel`` called directly with the arguments packed once (a
    candidate for ``_launch``: what cuda.core's own Python costs)."""
    import ctypes

    from cuda.bindings import driver
    from cuda.core import launch as core_launch

    args = (no_rows, *tg.args, out, status)
    stream = rows.stream
    dev = torch.cuda.current_device()
    for _ in range(3):  # numba's first launch, then learned
        _launch.launch(nll, 1, K.TPB, stream, args, dev)
    key = (nll, dev, tuple(_launch._mark(a) for a in args))
    kind = _launch._KINDS.get(key)
    if not kind:
        print("launch costs: the kind was not learned", flush=True)
        return
    kernel, convert = kind
    flat = _launch.flatten(convert, args)

    def slot(v):
        raw = bytes(v) if isinstance(v, ctypes._SimpleCData) else bytes([v]) if isinstance(v, bool) else None
        return (raw if raw is not None else int(v).to_bytes(8, "little", signed=v < 0)).ljust(8, b"\0")

    packed = np.frombuffer(b"".join(slot(v) for v in flat), np.uint8).copy()
    ptrs = np.array([packed.ctypes.data + 8 * i for i in range(len(flat))], np.uint64)
    func = int(getattr(kernel, "handle", None) or kernel._handle)
    handle = 0 if isinstance(stream, int) else int(stream.handle)
    cfg, core_stream = _launch._config(1, K.TPB, 0), _launch._stream(stream)

    def per_launch(fn, n=2000):
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        took = time.perf_counter() - t0
        torch.cuda.synchronize()
        return took / n * 1e6

    numba_us = per_launch(lambda: nll[1, K.TPB, stream](*args))
    ours_us = per_launch(lambda: _launch.launch(nll, 1, K.TPB, stream, args, dev))
    core_us = per_launch(lambda: core_launch(core_stream, cfg, kernel, *_launch.flatten(convert, args)))
    flat_us = per_launch(lambda: _launch.flatten(convert, args))
    raw_us = per_launch(lambda: driver.cuLaunchKernel(func, 1, 1, 1, K.TPB, 1, 1, 0, handle, ptrs, 0))
    print(
        f"launch of an empty kernel, host us: numba {numba_us:.1f}, _launch.launch {ours_us:.1f}, cuda.core launch "
        f"{core_us:.1f} (its flatten {flat_us:.1f}), cuLaunchKernel packed once {raw_us:.1f}",
        flush=True,
    )


try:
    launch_costs()
except Exception as e:  # noqa: BLE001 - an experiment: the rest of the tool stands
    print(f"launch costs: failed: {type(e).__name__}: {e}", flush=True)

# Where a small call's host time goes: cProfile over 300 tm.perplexity calls on (8, 1000), whose kernel takes a
# few microseconds (builtins and torch's calls stand for what they call; Cython code counts in its caller).
import cProfile  # noqa: E402
import pstats  # noqa: E402

small_x, small_t = x[:8, :1000].contiguous(), t[:8] % 1000
for _ in range(20):
    tm.perplexity(small_x, small_t)
prof = cProfile.Profile()
t_small = time.perf_counter()
prof.enable()
for _ in range(300):
    tm.perplexity(small_x, small_t)
prof.disable()
t_small = (time.perf_counter() - t_small) / 300 * 1e6
print(f"tm.perplexity (8, 1000) under cProfile: {t_small:.0f} us a call; the top 25 by own time:", flush=True)
pstats.Stats(prof).sort_stats("tottime").print_stats(25)

# Issue 41's must-show, one verdict a line: the call against its kernel alone (+60 us), the read, PyTorch.
import torch.nn.functional as F  # noqa: E402


def kernel_alone(kind, a, tt):
    """The call's kernel with its buffers and targets prepared once (as benchmarks/test_bench_gpu.py): the
    tally variants the one-shot calls launch."""
    if kind == "topk":
        return _gpu.topk_job(a, 50, True)[-1]
    rows_ = _gpu.device_rows(a, "x")
    if kind == "nll":
        return _gpu_tally.tally_job("nll_tally", _gpu._as_pairs(rows_), tt, None, None)[-1]
    return _gpu_tally.tally_job("rank_tally", rows_, tt, None, None, False, True, 5, 0, 0, 0)[-1]


checks = [  # name, call, kernel kind, scores, targets, most x read, torch's call, least x faster than torch
    ("perplexity f32", lambda: tm.perplexity(x, t), "nll", x, t, 1.15, None, None),
    ("perplexity bf16", lambda: tm.perplexity(xb, t), "nll", xb, t, 1.5, lambda: float(F.cross_entropy(xb, t)), 2.5),
    ("perplexity f16", lambda: tm.perplexity(xh, t), "nll", xh, t, 1.5, lambda: float(F.cross_entropy(xh, t)), 2.5),
    ("topk_accuracy k=5 f32", lambda: tm.topk_accuracy(x, t, k=5), "rank", x, t, 1.15, None, None),
    ("topk_accuracy (100000, 1000)", lambda: tm.topk_accuracy(xs, ts, k=5), "rank", xs, ts, 2.5, None, None),
    ("topk k=50 f32", lambda: tm.topk(x, 50), "topk", x, t, 2.2, None, None),
]
for name, call, kind, a, tt, most, theirs, least in checks:
    c, k, r = best(call), best(kernel_alone(kind, a, tt)), best(lambda a=a: float(a.sum()))
    verdict = [f"call - kernel {(c - k) * 1e3:.0f} us ({'ok' if c - k <= 0.060 else 'OVER'} 60)"]
    verdict.append(f"{c / r:.2f}x read ({'ok' if c / r <= most else 'OVER'} {most})")
    if theirs is not None:
        p = best(theirs)
        verdict.append(f"{p / c:.2f}x faster than torch {p:.3f} ms ({'ok' if p / c >= least else 'UNDER'} {least})")
    print(f"must-show {name:<28} call {c:.3f} ms, kernel {k:.3f} ms, read {r:.3f} ms: {'; '.join(verdict)}", flush=True)

# Issue 41: a metric object's update returns before its kernel ran (host time only, the GPU left busy), and
# torchmetrics' Perplexity (update + compute on (1, 4096, V)) unpatched, patched, against tm.perplexity.
ppl = tm.metrics.Perplexity()
ppl.update(x, t)
ppl.compute()
spans = []
for _ in range(30):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    ppl.update(x, t)
    spans.append(time.perf_counter() - t0)
    ppl.compute()
print(f"{'Perplexity.update, host time':<36} {sorted(spans)[15] * 1e3:.3f} ms (returns before its kernel ends)")
try:
    import torchmetrics
except ImportError as e:
    print(f"torchmetrics: not installed ({e})")
else:
    tmp = torchmetrics.text.Perplexity().cuda()

    def tm_metric() -> None:
        tmp.reset()
        tmp.update(x[None], t[None])
        tmp.compute()

    unpatched = best(tm_metric)
    tm.patch(["torchmetrics"])
    try:
        patched = best(tm_metric)
    finally:
        tm.unpatch()
    ours = best(lambda: tm.perplexity(x, t))
    print(
        f"must-show torchmetrics {torchmetrics.__version__} Perplexity f32 update+compute: unpatched "
        f"{unpatched:.3f} ms, patched {patched:.3f} ms: {patched / ours:.2f}x tm.perplexity {ours:.3f} ms "
        f"({'ok' if patched <= 1.1 * ours else 'OVER'} 1.1); {unpatched / patched:.1f}x faster than unpatched "
        f"({'ok' if unpatched >= 3 * patched else 'UNDER'} 3)",
        flush=True,
    )
