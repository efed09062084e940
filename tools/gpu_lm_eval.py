"""Issue 40's GPU figures: lm-evaluation-harness's HFLM log-likelihoods on CUDA, patched against its own.

    python tools/gpu_lm_eval.py [batch] [length] [auto_max]    # default 32 x 2,048, auto from 4,096

A two-layer Llama-style model (d=512, untied head, bfloat16) over V=128,256 on the GPU; one batch of
requests of every position scored (rolling) and of 12 answer tokens (multiple choice), each run through
``HFLM._loglikelihood_tokens`` unpatched and under ``tm.patch(["lm_eval"])``: seconds (CUDA synchronised),
peak CUDA memory added, the largest relative difference of the log-likelihoods and of is_greedy; then the
batch that ``batch_size="auto"`` picks (``max_batch_size=auto_max``) with and without the patch. Needs lm-eval
0.4.13 importable: the device image (2026-11) has accelerate, transformers and tokenizers but not lm-eval, and
``import lm_eval.models.huggingface`` needs nothing else there, so carry its one wheel (9 MB):
``pip download --no-deps lm-eval==0.4.13 -d .whl`` here, ``.whl`` in ``carry``, and
``python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site``
first there (the device tool's README).
"""

import sys
import time
from unittest import mock

import lm_eval.models.huggingface as hf
import numpy as np
import torch
import transformers

import turbometrics as tm
from turbometrics._bench.cases_lm_eval import _tokenizer
from turbometrics.patch import calls

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 32
length = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
auto_max = int(sys.argv[3]) if len(sys.argv) > 3 else 4096  # batch_size="auto" starts here
V = 128256
torch.manual_seed(0)
cfg = transformers.LlamaConfig(
    vocab_size=V, hidden_size=512, intermediate_size=1024, num_hidden_layers=2, num_attention_heads=8,
    num_key_value_heads=8, max_position_embeddings=length + 1, tie_word_embeddings=False,
)  # fmt: skip
GPU = torch.cuda.is_available()  # without one (a dry run of the script's logic): the CPU, no memory figures
model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).to("cuda" if GPU else "cpu").eval()
print(torch.cuda.get_device_name() if GPU else "no GPU: a dry run on the CPU", "torch", torch.__version__, flush=True)


def requests(cont: int) -> list:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(batch):
        ids = [int(t) for t in rng.integers(1, V, length)]
        out.append((("", ""), ids[: length - cont], ids[length - cont :]))
    return out


def run(lm, reqs, patched: bool):
    """(answers, seconds, peak CUDA bytes added)."""
    if patched:
        tm.patch(["lm_eval"])
    try:
        if GPU:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() if GPU else 0
        t0 = time.perf_counter()
        out = lm._loglikelihood_tokens(reqs, disable_tqdm=True)
        if GPU:
            torch.cuda.synchronize()
        return out, time.perf_counter() - t0, (torch.cuda.max_memory_allocated() - base) if GPU else 1
    finally:
        tm.unpatch()


def verdict(name: str, ok: bool, detail: str) -> None:
    print(f"{'PASS' if ok else 'FAIL'} {name} {detail}", flush=True)


def measured(lm, reqs, patched: bool):
    """``run``, or None where it ran out of GPU memory (a result here, not the end of the script)."""
    try:
        return run(lm, reqs, patched)
    except torch.OutOfMemoryError as e:
        print(f"{'patched' if patched else 'lm-eval'}: out of GPU memory: {str(e).splitlines()[0]}", flush=True)
        torch.cuda.empty_cache()
        return None


def profiled(lm, reqs, patched: bool, top: int = 8) -> None:
    """One run under torch's profiler: the GPU time of its ``top`` kernels (by their own time) and of all."""
    from torch.profiler import ProfilerActivity, profile

    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            run(lm, reqs, patched)
        rows = [e for e in prof.key_averages() if getattr(e, "self_device_time_total", 0) > 0]
    except Exception as e:  # noqa: BLE001 - a profiler that cannot run here: the timings above stand
        print(f"profile ({'patched' if patched else 'lm-eval'}): failed: {type(e).__name__}: {e}", flush=True)
        return
    rows.sort(key=lambda e: -e.self_device_time_total)
    total = sum(e.self_device_time_total for e in rows) / 1e3
    who = "patched" if patched else "lm-eval"
    print(f"profile ({who}): GPU time {total:.1f} ms in all; the top {top}:", flush=True)
    for e in rows[:top]:
        print(f"  {e.self_device_time_total / 1e3:8.2f} ms  x{e.count:<5} {e.key[:110]}", flush=True)


def stages(lm, reqs) -> None:
    """Where one run's wall time goes, the GPU synchronised at each boundary (so the sum is a little above the
    run's): the harness's model calls and the rest (its per-request loop); ours: host work before the body,
    body + gather, the head (and when its host had queued all of it), the answers after."""
    import turbometrics._lm_eval_fused as fused
    from turbometrics import _gpu_head

    marks: list = []

    def mark(name):
        torch.cuda.synchronize()
        marks.append((name, time.perf_counter()))

    def wrapped(owner, name, before, after):
        """``owner.name`` marking ``before`` on entry and ``after`` on exit, while the context lasts."""
        orig = getattr(owner, name)

        def call(*a, **k):
            mark(before)
            try:
                return orig(*a, **k)
            finally:
                mark(after)

        return mock.patch.object(owner, name, call)

    def timed_run(who, last):
        """One run between a "start" mark and ``last``; each stage's span (the time since the mark before)."""
        marks.clear()
        mark("start")
        lm._loglikelihood_tokens(reqs, disable_tqdm=True)
        mark(last)
        spans = [f"{n} {(t - marks[i][1]) * 1e3:.1f}" for i, (n, t) in enumerate(marks[1:])]
        total = (marks[-1][1] - marks[0][1]) * 1e3
        print(f"stages ({who}, ms, synchronised): {', '.join(spans)}; in all {total:.1f}", flush=True)

    with wrapped(lm, "_model_call", "host", "model call"):  # (an instance attribute: the class's after)
        timed_run("lm-eval", "host")
    queued: list = []
    result = _gpu_head.HeadFold.result
    with (
        wrapped(fused, "_scores", "host before the batch", "after the head"),
        wrapped(fused, "token_scores_from_hidden", "body + gather", "head"),
        mock.patch.object(
            _gpu_head.HeadFold, "result", lambda self: queued.append(time.perf_counter()) or result(self)
        ),
    ):
        tm.patch(["lm_eval"])
        try:
            timed_run("patched", "answers")
        finally:
            tm.unpatch()
    if queued:  # (the CPU's fold has no wait of its own)
        began = dict(marks)["body + gather"]  # (names: the last mark of each)
        print(f"  the head's host had queued its work {(queued[-1] - began) * 1e3:.1f} ms in", flush=True)


lm = hf.HFLM(pretrained=model, tokenizer=_tokenizer(), batch_size=batch, max_length=length)
for kind, cont in (("rolling", length - 1), ("choice", 12)):
    reqs = requests(cont)
    for patched in (False, True):  # a warm-up of each, then the measured run
        measured(lm, reqs, patched)
    before = calls()
    theirs, ours = measured(lm, reqs, False), measured(lm, reqs, True)
    counts = {f"{k[0]}: {k[1]}": v - before.get(k, 0) for k, v in calls().items() if v != before.get(k, 0)}
    print(f"{kind}: the patched run's calls {counts or 'none'} (a fallback is the harness's own path)", flush=True)
    if ours is None:
        verdict(f"{kind} memory/speed", False, "the patched run ran out of memory")
        continue
    if theirs is None:  # the harness's full log-softmax did not fit: ours did
        verdict(
            f"{kind} memory", True, f"lm-eval ran out of memory; patched +{ours[2] / 2**30:.2f} GiB in {ours[1]:.3f} s"
        )
        continue
    (got, t_ours, m_ours), (want, t_theirs, m_theirs) = ours, theirs
    a, b = np.array([x for x, _ in got]), np.array([x for x, _ in want])
    same_greedy = [g for _, g in got] == [g for _, g in want]
    print(
        f"{kind} {batch} x {length}: lm-eval {t_theirs:.3f} s +{m_theirs / 2**30:.2f} GiB; patched {t_ours:.3f} s "
        f"+{m_ours / 2**30:.2f} GiB ({t_theirs / t_ours:.1f}x faster, {m_ours / m_theirs:.3f} of the memory); "
        f"loglikelihood max rel diff {np.max(np.abs(a / b - 1)):.2e} (bf16 logits, default softmax dtype); "
        f"is_greedy same: {same_greedy}",
        flush=True,
    )
    if GPU:  # issue 40: at most 1/8 of the peak memory, at least 2x faster
        verdict(f"{kind} memory", m_ours <= m_theirs / 8, f"{m_ours / m_theirs:.3f} of lm-eval's peak (at most 0.125)")
        verdict(f"{kind} speed", t_theirs >= 2 * t_ours, f"{t_theirs / t_ours:.2f}x faster (at least 2)")
    if GPU and kind == "rolling":
        for patched in (False, True):  # where each run's GPU time goes (rolling was 1.0x at 2e568f3: which kernels?)
            profiled(lm, reqs, patched)
        from turbometrics import lm_head

        for label, attr, value in (
            ("head budget 1 GiB (not the default)", "GPU_BUDGET_MAX", 1 << 30),  # fewer, larger slices
            ("lm_head.GPU_OVERLAP_ROWS", "GPU_OVERLAP_ROWS", True),  # each fold beside the next block's GEMM
        ):
            with mock.patch.object(lm_head, attr, value):
                measured(lm, reqs, True)
                got = measured(lm, reqs, True)
            if got is not None:
                print(f"rolling, {label}: {got[1]:.3f} s +{got[2] / 2**30:.2f} GiB", flush=True)
        stages(lm, reqs)

auto = hf.HFLM(pretrained=model, tokenizer=_tokenizer(), batch_size="auto", max_batch_size=auto_max, max_length=length)
reqs = requests(12)
picked = auto._detect_batch_size(reqs)
tm.patch(["lm_eval"])
picked_ours = auto._detect_batch_size(reqs)
tm.unpatch()
print(
    f"batch_size='auto' at {length} tokens: lm-eval picks {picked}, patched {picked_ours} ({picked_ours / picked:.1f}x)"
)
if GPU:
    verdict("batch_size='auto'", picked_ours >= 4 * picked, f"{picked_ours / picked:.1f}x larger (at least 4)")
