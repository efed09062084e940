"""Every metric against its oracle, PyTorch, the pure-Python baseline and a plain read, in one run.

Each case in turbometrics._bench is timed per implementation; report.py turns
the JSON into ratio tables. The slow/ baseline runs on a few rows and its time
is scaled to the full input (recorded in extra_info["scale"]).
"""

import pytest
from conftest import DATA_DIR, ONLY, QUICK

from turbometrics import _bench
from turbometrics._bench import cases_patch
from turbometrics._ext import _dense

CASES = [
    c
    for c in _bench.cases(QUICK, DATA_DIR) + cases_patch.cases(QUICK, DATA_DIR)  # patch: users' code
    if not ONLY or ONLY & set(c.groups)
]
PARAMS = [(i, name) for i, c in enumerate(CASES) for name in c.impls]
_data = {}


def case_data(i):
    if i not in _data:
        _data.clear()  # one case's arrays at a time (they are GBs at full size)
        _data[i] = CASES[i].setup()
    return _data[i]


@pytest.mark.parametrize("case_idx,impl", PARAMS, ids=[f"{CASES[i].name} | {n}" for i, n in PARAMS])
def test_array_metric(benchmark, case_idx, impl):
    case, d = CASES[case_idx], case_data(case_idx)
    im = case.impls[impl]
    benchmark.group = case.name
    benchmark.extra_info.update(
        case=case.name,
        impl=impl,
        role=im.role,
        scale=im.scale,
        note=im.note,
        simd=_dense.active_path(),
        threading=_dense.THREADING,
    )
    if case.bytes_read:
        benchmark.extra_info["bytes"] = case.bytes_read(d)
    # Memory bandwidth on a shared machine drifts; many rounds of the fast ones keep the min honest.
    rounds = 1 if im.role == "slow" else 3 if im.role == "oracle" and not QUICK else 10
    benchmark.pedantic(im.fn, args=(d,), rounds=rounds, iterations=1, warmup_rounds=1)


MEMORY = (
    [
        ("perplexity_case", (4096, 128256)),
    ]
    if not QUICK
    else [("perplexity_case", (512, 32000))]
)


@pytest.mark.parametrize("impl", ["turbometrics", "torch cross_entropy"])
def test_perplexity_extra_memory(benchmark, impl):
    """Peak memory added on top of the logits, in a fresh process (the time is that process's)."""
    fn, args = MEMORY[0]
    benchmark.group = "extra memory (MiB)"
    mib = benchmark.pedantic(_bench.extra_memory_mib, args=(fn, args, impl), rounds=1, iterations=1)
    benchmark.extra_info.update(kind="memory", impl=impl, case=f"{fn}{args}", mib=mib)


def test_first_call(benchmark):
    """First call of a few public functions in a fresh process, and the same call again."""
    benchmark.group = "first call"
    res = benchmark.pedantic(_bench.first_call, rounds=1, iterations=1)
    benchmark.extra_info.update(kind="first_call", **{k: v for k, v in res.items()})


@pytest.mark.skipif(QUICK, reason="the 1,000,000-pair run belongs to the full benchmark")
@pytest.mark.parametrize("case_fn,args,impl", _bench.SCALE, ids=[f"{c}{a} | {i}" for c, a, i in _bench.SCALE])
def test_million_pairs(benchmark, case_fn, args, impl):
    """Time and peak extra memory at 1,000,000 segment pairs, each in a fresh process."""
    benchmark.group = "1,000,000 pairs"
    res = benchmark.pedantic(_bench.measure_in_subprocess, args=(case_fn, args, impl), rounds=1, iterations=1)
    name = getattr(_bench, case_fn)(*args).name
    benchmark.extra_info.update(kind="scale", case=name, impl=impl, **res)


HIDDEN = (2048, 2048, 128256) if not QUICK else (256, 256, 32000)


@pytest.mark.parametrize(
    "impl", ["turbometrics", "logits (matmul) + turbometrics perplexity", "torch logits + cross_entropy"]
)
def test_perplexity_from_hidden_time_and_memory(benchmark, impl):
    """The LM head fused with the NLL against materialised logits, each in a fresh process (time, peak extra)."""
    benchmark.group = "perplexity from hidden states"
    res = benchmark.pedantic(_bench.measure_in_subprocess, args=("hidden_case", HIDDEN, impl), rounds=1, iterations=1)
    benchmark.extra_info.update(kind="scale", case=_bench.hidden_case(*HIDDEN).name, impl=impl, **res)


LM = ("lm_case", (8192,)) if not QUICK else ("lm_case", (2048, 8000, 512, 256))
LM_HEAD = (8192,) if not QUICK else (1024, 32000, 64, 256, 2)


@pytest.mark.parametrize("impl", ["turbometrics", "transformers guide loop"])
def test_lm_perplexity_time_and_memory(benchmark, impl):
    """lm_perplexity vs the guide's loop on the same model, each in a fresh process (time, peak extra memory)."""
    benchmark.group = "lm_perplexity"
    res = benchmark.pedantic(_bench.measure_in_subprocess, args=(*LM, impl), rounds=1, iterations=1)
    name = getattr(_bench, LM[0])(*LM[1]).name
    benchmark.extra_info.update(kind="lm", case=name, impl=impl, **res)


@pytest.mark.skipif(not _bench.have("transformers"), reason="the tiny Llama is a transformers model")
@pytest.mark.parametrize(
    "impl", ["turbometrics", "turbometrics on the logits (fuse_head=False)", "transformers guide loop"]
)
def test_lm_perplexity_through_the_head_time_and_memory(benchmark, impl):
    """lm_perplexity of a Hugging Face model without its logits, against its logits, each in a fresh process."""
    benchmark.group = "lm_perplexity through the head"
    res = benchmark.pedantic(_bench.measure_in_subprocess, args=("lm_head_case", LM_HEAD, impl), rounds=1, iterations=1)
    benchmark.extra_info.update(kind="lm", case=_bench.lm_head_case(*LM_HEAD).name, impl=impl, **res)


LM_EVAL = (8, 512, 128256, 256) if not QUICK else (4, 128, 32000, 64)


@pytest.mark.skipif(not (_bench.have("lm_eval") and _bench.have("accelerate")), reason="lm-eval[hf] not installed")
@pytest.mark.parametrize("kind", ["rolling", "choice"])
@pytest.mark.parametrize("impl", ["turbometrics", "lm-eval"])
def test_lm_eval_loglikelihood_time_and_memory(benchmark, kind, impl):
    """lm-evaluation-harness's HFLM log-likelihoods, patched (the fused head) and not, each in a fresh process:
    seconds and the peak resident memory added to the model and the requests."""
    benchmark.group = f"lm-eval loglikelihood ({kind})"
    args = (kind, *LM_EVAL)
    res = benchmark.pedantic(_bench.measure_in_subprocess, args=("lm_eval_case", args, impl), rounds=1, iterations=1)
    benchmark.extra_info.update(kind="lm", case=_bench.lm_eval_case(*args).name, impl=impl, **res)


@pytest.mark.parametrize("metric,args", _bench.LONG_PAIRS, ids=[m for m, _ in _bench.LONG_PAIRS])
def test_long_pair_time_and_memory(benchmark, metric, args):
    """One very long pair (10 MB a side for chrF): seconds and peak extra memory in a fresh process."""
    benchmark.group = "one long pair"
    if QUICK:
        args = (args[0] // 10, *args[1:])
    res = benchmark.pedantic(
        _bench.measure_in_subprocess, args=("long_pair_case", (metric, *args), "turbometrics"), rounds=1, iterations=1
    )
    benchmark.extra_info.update(
        kind="scale", case=_bench.long_pair_case(metric, *args).name, impl="turbometrics", **res
    )
