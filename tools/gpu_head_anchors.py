"""Issue 41's fused-head figures: ``perplexity_from_hidden`` against the fused cross-entropies a user would pick.

    python tools/gpu_head_anchors.py [--reps 10] [--dry]

Llama 3's head on one GPU, in one process and one run: 8 x 4,096 bfloat16 hidden states ~N(0, 1), d = 4,096,
V = 128,256, a weight ~N(0, 1/d) x 4 (logits of standard deviation 4), targets half the row's argmax (a
confident model's token) and half uniform. For each path: the time (CUDA events, median and range of
``--reps`` calls after a warm-up; the wall time of the same calls beside it), the peak CUDA memory it adds
over the inputs (``max_memory_allocated`` and ``max_memory_reserved`` from a fresh cache, one call) and the
relative error of its perplexity against a float64 reference (the exact logits of the bfloat16 inputs,
multiplied in float64 a slice of rows at a time on the GPU). Paths: the GEMM alone (whole; in our call's
slices), ``tm.perplexity_from_hidden`` (first and last), Cut Cross-Entropy's ``linear_cross_entropy``,
Liger Kernel's ``liger_fused_linear_cross_entropy``, ``F.linear`` + ``F.cross_entropy`` (on the bfloat16
logits, and upcast to float32 as Hugging Face's loss does), and ``F.linear_cross_entropy`` where the
installed PyTorch has it (its reference path, and chunked with ``torch.nn.LinearCrossEntropyOptions()``).
Prints a markdown table with the versions, the GPU and the commit, our ratios to the GEMM and to each
anchor, and ``PASS``/``FAIL`` for the issue's targets; exits 1 on a ``FAIL``. A package that is missing or
a path that fails (an out-of-memory error, say) is reported in its row and skipped. ``--dry`` (or no GPU)
runs tiny shapes on the CPU: the paths that need a GPU are skipped; the table code runs.

All paths run under ``torch.no_grad()``: the anchors' inference calls. Cut Cross-Entropy's forward then
skips its gradient filter's average; Liger's forward computes no gradient (``HAS_GRADIENTS`` follows
``requires_grad``) and multiplies into one reused buffer (``torch.mm(out=)``, taken only with grad mode
off), but still allocates a zeroed ``grad_input`` like the hidden states and syncs once (``.item()``).
Liger's Hugging Face models use the fused loss only when ``model.training`` and labels are given; the
functional form called here has no such condition.

The device image (2026-11: torch 2.11, triton 3.6) lacks both anchors; carry their pure-Python wheels (they
need only torch and triton), here, in the repository's root (``/.whl/`` in ``.git/info/exclude``)::

    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d .whl cut-cross-entropy==25.1.1 liger-kernel==0.8.5

(cut_cross_entropy-25.1.1-py3-none-any.whl, 23 kB; liger_kernel-0.8.5-py3-none-any.whl, 0.9 MB), then
``.whl`` in the device tool's ``carry`` and, there, ``python3 -m pip install -q --no-index --no-deps
--no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site`` first
(``tools/gpu_check.sh`` does it when ``.whl`` is there). Expected to take about 30 s on an H100 (not yet run
there): Triton compiles the anchors' kernels on their first call; the float64 reference takes a second or two.
"""

from __future__ import annotations

import argparse
import importlib
import math
import time
import warnings
from importlib import metadata
from unittest import mock

import torch
import torch.nn.functional as F
from gitinfo import commit  # (tools/ is on sys.path when a tool runs)

import turbometrics as tm

failed = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global failed
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {name} {detail}".rstrip(), flush=True)


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


class Bench:
    """Times and memory of one path on ``device`` (CUDA events and allocator statistics on a GPU; the wall
    clock alone on the CPU)."""

    def __init__(self, device: str, reps: int):
        self.gpu, self.reps = device == "cuda", reps

    def sync(self) -> None:
        if self.gpu:
            torch.cuda.synchronize()

    def memory(self, fn):
        """(fn()'s result, peak bytes allocated over those held before, peak bytes reserved over before), from
        an emptied cache; on the CPU (result, None, None)."""
        if not self.gpu:
            return fn(), None, None
        self.sync()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        held, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
        out = fn()
        self.sync()
        return out, torch.cuda.max_memory_allocated() - held, torch.cuda.max_memory_reserved() - reserved

    def times(self, fn) -> tuple[list[float], list[float]]:
        """(CUDA-event ms, wall ms) of ``reps`` calls after one warm-up; event times are the wall's on the CPU."""
        fn()
        self.sync()
        events, walls = [], []
        for _ in range(self.reps):
            if self.gpu:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.perf_counter()
                a.record()
                fn()
                b.record()
                b.synchronize()
                walls.append((time.perf_counter() - t0) * 1e3)
                events.append(a.elapsed_time(b))
            else:
                t0 = time.perf_counter()
                fn()
                walls.append((time.perf_counter() - t0) * 1e3)
        return (events or walls), walls


def median(v: list[float]) -> float:
    s = sorted(v)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def reference(h: torch.Tensor, w: torch.Tensor, greedy_share: float, gen: torch.Generator):
    """(targets, float64 mean NLL): the logits multiplied in float64 a slice of rows at a time, each row's
    log-sum-exp and argmax; targets the argmax where a draw falls under ``greedy_share``, else uniform."""
    n, v = h.shape[0], w.shape[0]
    w64 = w.double()
    lse = torch.empty(n, dtype=torch.float64, device=h.device)
    top = torch.empty(n, dtype=torch.int64, device=h.device)
    step = max(1, min(n, (2 << 30) // (v * 8)))  # about 2 GiB of float64 logits a slice
    for r0 in range(0, n, step):
        logits = h[r0 : r0 + step].double() @ w64.T
        lse[r0 : r0 + step] = torch.logsumexp(logits, dim=1)
        top[r0 : r0 + step] = logits.argmax(dim=1)
        del logits
    pick = torch.rand(n, generator=gen, device=h.device) < greedy_share
    uniform = torch.randint(0, v, (n,), generator=gen, device=h.device)
    t = torch.where(pick, top, uniform)
    target_logit = torch.empty(n, dtype=torch.float64, device=h.device)
    for r0 in range(0, n, 4096):
        rows = slice(r0, r0 + 4096)
        target_logit[rows] = (h[rows].double() * w64[t[rows]]).sum(dim=1)
    nll = lse - target_logit
    del w64
    return t, float(nll.mean())


def our_plan(h: torch.Tensor, w: torch.Tensor) -> tuple[int, int, str]:
    """(rows, columns) of each logits slice our call multiplies (lm_head's private plan, as it would make it
    now), else 8 slices of rows over the whole vocabulary."""
    n, d, v = h.shape[0], h.shape[1], w.shape[0]
    try:
        from turbometrics import lm_head

        budget = lm_head._budget(h, "torch", None)
        block, width, slots = lm_head._plan(n, v, d, h.element_size(), None, budget, h.is_cuda)
        return int(block), int(width), f"our plan: {block} rows x {width} columns, {slots} buffer(s)"
    except Exception as e:  # noqa: BLE001 - a private helper that may have changed: fall back
        return -(-n // 8), v, f"8 row slices (our plan unreadable: {type(e).__name__}: {e})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=10, help="timed calls per path after one warm-up (default 10)")
    p.add_argument("--dry", action="store_true", help="tiny shapes on the CPU (the table code; no anchors)")
    args = p.parse_args()
    gpu = torch.cuda.is_available() and not args.dry
    device = "cuda" if gpu else "cpu"
    n, d, v = (8 * 4096, 4096, 128256) if gpu else (256, 64, 1000)
    scale, greedy_share = 4.0, 0.5
    torch.set_grad_enabled(False)

    where = torch.cuda.get_device_name() if gpu else "no GPU: a dry run on the CPU (tiny shapes)"
    versions = {
        name: version(name) for name in ("torch", "triton", "cut-cross-entropy", "liger-kernel", "numba-cuda", "numpy")
    }
    print(f"{where}; commit {commit()}; turbometrics {getattr(tm, '__version__', '?')}", flush=True)
    print("versions: " + ", ".join(f"{k} {x}" for k, x in versions.items()), flush=True)

    gen = torch.Generator(device=device).manual_seed(0)
    h = torch.randn(n, d, generator=gen, device=device).to(torch.bfloat16)
    w = (torch.randn(v, d, generator=gen, device=device) * (scale / math.sqrt(d))).to(torch.bfloat16)
    t0 = time.perf_counter()
    t, ref_nll = reference(h, w, greedy_share, gen)
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    ref_ppl = math.exp(ref_nll)
    print(
        f"{n} x {d} bf16 hidden states, V = {v}, logits' sd {scale:g}, {greedy_share:.0%} greedy targets: "
        f"float64 mean NLL {ref_nll:.12f}, perplexity {ref_ppl:.10g} ({time.perf_counter() - t0:.1f} s)",
        flush=True,
    )

    bench = Bench(device, args.reps)
    rows: list[dict] = []

    def run(name: str, fn, value=None, note: str = "") -> None:
        """Measure one path; ``value(result)`` gives its perplexity (None for the GEMM alone)."""
        row = {"name": name, "note": note}
        rows.append(row)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out, peak, peak_res = bench.memory(fn)
            for msg in sorted({str(c.message).splitlines()[0][:160] for c in caught}):
                print(f"  {name}: warning: {msg}", flush=True)
            ppl = value(out) if value is not None else None
            del out
            events, walls = bench.times(fn)
        except Exception as e:  # noqa: BLE001 - one path's failure (OOM, an API change) is reported, not fatal
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}"
            print(f"  {name}: failed: {row['error']}", flush=True)
            if gpu:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            return
        row.update(ms=median(events), lo=min(events), hi=max(events), wall=median(walls), peak=peak, res=peak_res)
        if ppl is not None:
            row["err"] = abs(ppl / ref_ppl - 1)
            row["nll_err"] = abs(math.log(ppl) / ref_nll - 1) if ppl > 0 else float("nan")
        print(f"  {name}: {row['ms']:.2f} ms ({row['lo']:.2f}-{row['hi']:.2f}), wall {row['wall']:.2f} ms", flush=True)

    def skip(name: str, why: str) -> None:
        rows.append({"name": name, "error": why})
        print(f"  {name}: skipped: {why}", flush=True)

    def loss_ppl(loss) -> float:
        return math.exp(float(loss))

    run("GEMM alone, whole (`torch.mm(h, w.T)`)", lambda: torch.mm(h, w.T))
    if gpu:
        torch.cuda.empty_cache()
    block, width, how = our_plan(h, w)

    def gemm_slices(block: int, width: int):
        for r0 in range(0, n, block):
            for v0 in range(0, v, width):
                torch.mm(h[r0 : r0 + block], w[v0 : v0 + width].T)

    run(f"GEMM alone, in slices ({how})", lambda: gemm_slices(block, width))
    ours = "turbometrics `perplexity_from_hidden`"
    run(ours, lambda: tm.perplexity_from_hidden(h, w, t), value=float)
    if gpu:  # the host's share: the time until our call reaches its one wait (the copy back), of the whole call
        from turbometrics import _gpu_head

        reached, result = [], _gpu_head.HeadFold.result
        _gpu_head.HeadFold.result = lambda self: reached.append(time.perf_counter()) or result(self)
        try:
            bench.sync()
            t0 = time.perf_counter()
            tm.perplexity_from_hidden(h, w, t)
            t1 = time.perf_counter()
        finally:
            _gpu_head.HeadFold.result = result
        print(f"  {ours}: the host queued its work in {(reached[-1] - t0) * 1e3:.2f} ms of {(t1 - t0) * 1e3:.2f} ms")
        # whole-vocabulary row blocks of other heights (multiples of 128 and 256: cuBLAS's tiles), GEMM alone
        for rows_ in (512, 768, 896, 1024):
            if rows_ != block:
                run(f"GEMM alone, in slices of {rows_} rows x {v} columns", lambda r=rows_: gemm_slices(r, v))
    # the plan before this one (a08b2b1..3bcc2a5: two buffers of 4,096 rows x 10,240 columns, folds overlapped)
    old = 10240 if v > 10240 else max(1, v // 4)
    run(f"GEMM alone, in the previous plan's slices ({min(n, 4096)} rows x {old} columns)", lambda: gemm_slices(
        min(n, 4096), old))  # fmt: skip
    run(
        ours + f", the previous plan (chunk={old}, max_bytes=192 MiB: two buffers)",
        lambda: tm.perplexity_from_hidden(h, w, t, chunk=old, max_bytes=192 << 20),
        value=float,
    )

    anchors = [  # (label, distribution, module, function): the fused losses a user would pick instead
        ("Cut Cross-Entropy", "cut-cross-entropy", "cut_cross_entropy", "linear_cross_entropy"),
        ("Liger Kernel", "liger-kernel", "liger_kernel.transformers.functional", "liger_fused_linear_cross_entropy"),
    ]
    for label, dist, module, name in anchors:
        if not gpu:
            skip(f"{label} `{name}`", "needs a CUDA GPU (Triton)")
            continue
        try:
            fn = getattr(importlib.import_module(module), name)
        except Exception as e:  # noqa: BLE001 - not installed (carry the wheel), or its import broke
            skip(f"{label} `{name}`", f"import failed: {type(e).__name__}: {e}")
            continue
        run(f"{label} {versions[dist]} `{name}`", lambda fn=fn: fn(h, w, t), value=loss_ppl)
    run("`F.linear` + `F.cross_entropy` (bf16 logits)", lambda: F.cross_entropy(F.linear(h, w), t), value=loss_ppl)
    run(
        "`F.linear` + `F.cross_entropy(logits.float())`",
        lambda: F.cross_entropy(F.linear(h, w).float(), t),
        value=loss_ppl,
    )
    if hasattr(F, "linear_cross_entropy"):
        run("`F.linear_cross_entropy`", lambda: F.linear_cross_entropy(h, w, t), value=loss_ppl)
        options = getattr(torch.nn, "LinearCrossEntropyOptions", None)
        if options is not None:
            run(
                "`F.linear_cross_entropy(options=LinearCrossEntropyOptions())` (chunked)",
                lambda: F.linear_cross_entropy(h, w, t, options=options()),
                value=loss_ppl,
            )
    else:
        skip("`F.linear_cross_entropy`", f"torch {torch.__version__} has none")
    run(ours + " (again, last)", lambda: tm.perplexity_from_hidden(h, w, t), value=float)
    from turbometrics import lm_head

    for label, attr, setting in (
        # each fold behind its GEMM on one stream: what the second stream gains
        (", one stream (`lm_head.GPU_OVERLAP = False`)", "GPU_OVERLAP", False),
        # whole-row blocks in two buffers of half the height, each fold on a second stream (an option)
        (", whole-row blocks overlapped (`GPU_OVERLAP_ROWS`)", "GPU_OVERLAP_ROWS", True),
    ):
        with mock.patch.object(lm_head, attr, setting):
            run(ours + label, lambda: tm.perplexity_from_hidden(h, w, t), value=float)
    from turbometrics import _gpu

    # the fold reading bf16 an element a load (before d364354's successor: 32-bit words, two a load)
    with mock.patch.object(_gpu, "_as_pairs", lambda rows: rows):
        run(ours + ", bf16 read an element a load", lambda: tm.perplexity_from_hidden(h, w, t), value=float)

    # The table.
    def mib(b) -> str:
        return "" if b is None else f"{b / 2**20:+,.0f} MiB"

    print()
    print(f"{where}; commit {commit()}; " + ", ".join(f"{k} {x}" for k, x in versions.items()))
    print(f"`perplexity_from_hidden` shape: {n} x {d} bf16, V = {v}; CUDA events, median (min-max) of {args.reps}")
    print()
    print(
        "| path | time (ms) | wall (ms) | peak extra allocated | peak extra reserved | perplexity rel. err vs float64 |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['name']} | {r['error']} | | | | |")
            continue
        err = f"{r['err']:.1e}" if "err" in r else ""
        print(
            f"| {r['name']} | {r['ms']:.2f} ({r['lo']:.2f}-{r['hi']:.2f}) | {r['wall']:.2f} | {mib(r['peak'])} "
            f"| {mib(r['res'])} | {err} |"
        )
    print()

    # Ratios and the targets.
    timed = {r["name"]: r for r in rows if "ms" in r}
    first = timed.get(ours)
    if first is None:
        print("no ratios: our call did not run", flush=True)
        return 1
    us = (first["ms"] + timed.get(ours + " (again, last)", first)["ms"]) / 2  # first and last: their mean
    gemm = timed.get("GEMM alone, whole (`torch.mm(h, w.T)`)")
    for name, r in timed.items():
        if name.startswith(ours):
            continue
        if name.startswith("GEMM"):
            print(f"ours / {name}: {us / r['ms']:.3f}")
        else:
            print(f"ours / {name}: {us / r['ms']:.3f} ({r['ms'] / us:.2f}x our time)")
    print()
    if gemm is not None:
        check("ours <= 1.05x the GEMM alone", us <= 1.05 * gemm["ms"], f"({us / gemm['ms']:.3f}x)")
    if gpu:
        peaks = [timed[k]["peak"] for k in timed if k.startswith(ours)]
        check("ours adds at most 256 MiB", max(peaks) <= 256 * 2**20, f"(+{max(peaks) / 2**20:,.0f} MiB)")
    for name, r in timed.items():
        if not (name.startswith(ours) or name.startswith("GEMM")):
            check(f"ours faster than {name}", us < r["ms"], f"({us:.2f} vs {r['ms']:.2f} ms)")
    for r in rows:  # an anchor that did not run (not carried, its import broke, out of memory): not shown
        if "error" in r and r["name"].startswith(("Cut Cross-Entropy", "Liger Kernel")):
            check(f"ours faster than {r['name']}", False, f"(not shown: {r['error']})")
    errs = sorted((r["err"], name) for name, r in timed.items() if "err" in r)
    print("perplexity rel. errors, best first: " + "; ".join(f"{name} {e:.1e}" for e, name in errs))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
