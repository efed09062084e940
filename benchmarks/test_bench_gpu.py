"""GPU: turbometrics' numba.cuda kernels against PyTorch on the same GPU (skipped without one).

Inputs live on the GPU as torch tensors; every timed call ends with a
synchronisation (a scalar result, or torch.cuda.synchronize()). report.py
prints the effective bandwidth (bytes of scores read / time) against the
card's peak, stored in extra_info.
"""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import turbometrics as tm  # noqa: E402
from turbometrics import _gpu, _gpu_tally  # noqa: E402

N, V, K_ACC, K_TOP = 4096, 128256, 5, 50
# HBM peak by card, bytes/s (NVIDIA data sheets); used when torch cannot report it.
PEAK = {"H100 80GB HBM3": 3.35e12, "H100 PCIe": 2.0e12, "H200": 4.8e12, "A100-SXM4-80GB": 2.039e12}


def peak_bandwidth() -> float:
    p = torch.cuda.get_device_properties(0)
    clock, bus = getattr(p, "memory_clock_rate", 0), getattr(p, "memory_bus_width", 0)
    if clock and bus:
        return 2 * clock * 1e3 * bus / 8  # DDR: two transfers per clock (kHz)
    return next((v for k, v in PEAK.items() if k in p.name), float("nan"))


def sync(fn):
    def run(*a):
        out = fn(*a)
        torch.cuda.synchronize()
        return out

    return run


_data = {}


def data(dtype, n=N, v=V):
    if (dtype, n, v) not in _data:
        _data.clear()
        g = torch.Generator(device="cuda").manual_seed(0)
        x = (torch.randn(n, v, device="cuda", generator=g) * 3).to(dtype)
        t = torch.randint(0, v, (n,), device="cuda", generator=g)
        t[torch.rand(n, device="cuda", generator=g) < 0.1] = -100
        _data[(dtype, n, v)] = (x, t)
    return _data[(dtype, n, v)]


_jobs = {}


def kernels_only(kind):
    """Time the kernels of one call alone: buffers, targets and launch prepared once (``_gpu_tally.tally_job``
    for the one-shot perplexity and top-k accuracy, ``topk_job``), then launch + synchronise. The call's time
    over this is its per-call overhead."""

    def run(x, t):
        key = (kind, x.data_ptr(), x.dtype, tuple(x.shape))
        if key not in _jobs:
            _jobs.clear()
            if kind == "topk":
                _jobs[key] = _gpu.topk_job(x, K_TOP, True)[-1]
            else:
                name, opts = {"nll": ("nll_tally", ()), "rank": ("rank_tally", (False, True, K_ACC, 0, 0, 0))}[kind]
                rows = _gpu.device_rows(x, "x")
                rows = _gpu._as_pairs(rows) if kind == "nll" else rows  # as tm.perplexity reads bf16
                _jobs[key] = _gpu_tally.tally_job(name, rows, t, -100, None, *opts)[-1]  # (sklearn ties)
        _jobs[key]()
        torch.cuda.synchronize()

    return run


def _acc_torch(x, t, k):
    keep = t != -100
    hit = (x[keep].topk(k, dim=1).indices == t[keep, None]).any(dim=1)
    return hit.float().mean().item()


CASES = {
    "perplexity f32": (
        "float32",
        {
            "turbometrics": lambda x, t: tm.perplexity(x, t, ignore_index=-100),
            "its kernel alone": kernels_only("nll"),
            "torch cross_entropy": lambda x, t: float(torch.exp(F.cross_entropy(x, t, ignore_index=-100))),
            "read (torch.sum)": lambda x, t: float(x.sum()),
        },
    ),
    "perplexity f16": (
        "float16",
        {
            "turbometrics": lambda x, t: tm.perplexity(x, t, ignore_index=-100),
            "its kernel alone": kernels_only("nll"),
            "torch cross_entropy": lambda x, t: float(torch.exp(F.cross_entropy(x, t, ignore_index=-100))),
            "read (torch.sum)": lambda x, t: float(x.sum()),
        },
    ),
    "perplexity bf16": (
        "bfloat16",
        {
            "turbometrics": lambda x, t: tm.perplexity(x, t, ignore_index=-100),
            "its kernel alone": kernels_only("nll"),
            "torch cross_entropy": lambda x, t: float(torch.exp(F.cross_entropy(x, t, ignore_index=-100))),
            "torch cross_entropy (f32 upcast)": lambda x, t: float(
                torch.exp(F.cross_entropy(x.float(), t, ignore_index=-100))
            ),
            "read (torch.sum)": lambda x, t: float(x.sum()),
        },
    ),
    f"topk_accuracy k={K_ACC} f32": (
        "float32",
        {
            "turbometrics": lambda x, t: tm.topk_accuracy(x, t, k=K_ACC, ignore_index=-100),
            "its kernel alone": kernels_only("rank"),
            "torch.topk accuracy": lambda x, t: _acc_torch(x, t, K_ACC),
            "read (torch.sum)": lambda x, t: float(x.sum()),
        },
    ),
    f"topk_accuracy k={K_ACC} f32, short rows": (
        "float32",
        {
            "turbometrics": lambda x, t: tm.topk_accuracy(x, t, k=K_ACC, ignore_index=-100),
            "its kernel alone": kernels_only("rank"),
            "torch.topk accuracy": lambda x, t: _acc_torch(x, t, K_ACC),
            "read (torch.sum)": lambda x, t: float(x.sum()),
        },
        (100_000, 1000),
    ),
    f"topk k={K_TOP} f32": (
        "float32",
        {
            "turbometrics": sync(lambda x, t: tm.topk(x, K_TOP)),
            "its kernel alone": kernels_only("topk"),
            "torch.topk": sync(lambda x, t: torch.topk(x, K_TOP)),
            "read (torch.sum)": lambda x, t: float(x.sum()),
        },
    ),
    f"topk k={K_TOP} bf16": (
        "bfloat16",
        {
            "turbometrics": sync(lambda x, t: tm.topk(x, K_TOP)),
            "its kernel alone": kernels_only("topk"),
            "torch.topk": sync(lambda x, t: torch.topk(x, K_TOP)),
            "read (torch.sum)": lambda x, t: float(x.sum()),
        },
    ),
}
PARAMS = [(c, i) for c, (_, impls, *_shape) in CASES.items() for i in impls]


@pytest.mark.parametrize("case,impl", PARAMS, ids=[f"{c} | {i}" for c, i in PARAMS])
def test_gpu(benchmark, case, impl):
    dtype, impls, *shape = CASES[case]
    n, v = shape[0] if shape else (N, V)
    x, t = data(getattr(torch, dtype), n, v)
    fn = impls[impl]
    benchmark.group = f"GPU {case} ({n}, {v})"
    roles = {"turbometrics": "ours", "its kernel alone": "kernel"}
    role = roles.get(impl, "read" if impl.startswith("read") else "torch")
    benchmark.extra_info.update(
        case=f"GPU {case} ({n}, {v}), {torch.cuda.get_device_name(0)}",
        impl=impl,
        role=role,
        bytes=x.numel() * x.element_size(),
        peak_bytes_per_s=peak_bandwidth(),
    )
    benchmark.pedantic(fn, args=(x, t), rounds=20, iterations=1, warmup_rounds=3)


# perplexity from the LM head's input: 8 sequences x 4,096 tokens, d=4096, V=128,256, bf16 (logits: 8.4 GB)
HEAD = (8 * 4096, 4096, V)
HEAD_IMPLS = {
    "turbometrics": lambda h, w, t: tm.perplexity_from_hidden(h, w, t, ignore_index=-100),
    "logits (F.linear) + turbometrics perplexity": lambda h, w, t: tm.perplexity(F.linear(h, w), t, ignore_index=-100),
    "logits (F.linear) + torch cross_entropy": lambda h, w, t: float(
        torch.exp(F.cross_entropy(F.linear(h, w), t, ignore_index=-100))
    ),
}


@pytest.mark.parametrize("impl", list(HEAD_IMPLS))
def test_gpu_perplexity_from_hidden(benchmark, impl):
    """Time (CUDA events around the call, median of 5) and peak GPU memory added on top of the inputs."""
    _data.clear()
    n, d, v = HEAD
    g = torch.Generator(device="cuda").manual_seed(0)
    h = torch.randn(n, d, device="cuda", generator=g).to(torch.bfloat16)
    w = (torch.randn(v, d, device="cuda", generator=g) * d**-0.5).to(torch.bfloat16)
    t = torch.randint(0, v, (n,), device="cuda", generator=g)
    t[torch.rand(n, device="cuda", generator=g) < 0.1] = -100
    fn = HEAD_IMPLS[impl]
    try:
        fn(h, w, t)  # warm-up (kernels compiled, allocator primed)
        times = []
        for _ in range(5):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(h, w, t)
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
            extra = (torch.cuda.max_memory_allocated() - base) / 2**20
    except torch.cuda.OutOfMemoryError:
        pytest.skip(f"{impl}: out of GPU memory")
    times.sort()
    benchmark.group = "GPU perplexity from hidden states"
    benchmark.extra_info.update(
        kind="scale",
        impl=impl,
        seconds=times[len(times) // 2],
        extra_mib=extra,
        case=f"GPU perplexity from hidden states bf16 ({n}, d={d}) x V={v:,}, {torch.cuda.get_device_name(0)}",
    )
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
