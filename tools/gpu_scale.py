"""GPU checks that pytest-benchmark does not cover (GPU machine; issue 23's list).

    python tools/gpu_scale.py hf        # lm_perplexity of tiny GPT-2 / Llama on CUDA: through the head == logits path
    python tools/gpu_scale.py tokens    # token-ID BLEU/ROUGE (256, 1024) on CUDA vs a torch TensorBLEU
    python tools/gpu_scale.py memory    # lm_perplexity of a 2-layer Llama, V=128,256, 8 x 4,096: extra GPU memory
    python tools/gpu_scale.py profile   # one call of each hot kernel, for ncu / compute-sanitizer to catch
    python tools/gpu_scale.py host      # where a call's time goes on the host (cProfile of repeated calls)
    python tools/gpu_scale.py variants  # topk_rows with launch bounds (fewer registers) against the default

Prints one line per check or figure (``ok``/``FAIL`` lines exit 1 on any failure).
"""

import functools
import sys
import time

import numpy as np
import torch
import transformers

import turbometrics as tm
from turbometrics._bench import tensorbleu_torch

failed = 0


def check(name, ok, detail=""):
    global failed
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}", flush=True)


def cuda_ms(fn, n=20):
    """Median of n CUDA-event timings of fn (one warm-up call first), in ms."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[n // 2]


def llama(vocab, d, layers=2, max_len=4096, tie=False, dtype=torch.float32):
    torch.manual_seed(0)
    heads = max(1, d // 128)
    cfg = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=d,
        intermediate_size=4 * d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_len,
        tie_word_embeddings=tie,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return transformers.LlamaForCausalLM(cfg).to(dtype).eval()


def hf():
    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(
            vocab_size=5000, n_positions=256, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
        )
    ).eval()
    ids = np.random.default_rng(0).integers(0, 5000, 3000)
    for name, model in (
        ("gpt2 f32", gpt2),
        ("llama f32", llama(5000, 128, max_len=256)),
        ("llama bf16", llama(5000, 128, max_len=256, dtype=torch.bfloat16)),
    ):
        model = model.cuda()
        kw = dict(max_length=256, stride=128, batch_size=4)
        fused = tm.lm_perplexity(model, ids, fuse_head=True, **kw)
        logits = tm.lm_perplexity(model, ids, fuse_head=False, **kw)
        cpu = tm.lm_perplexity(model.cpu(), ids, fuse_head=True, **kw)
        check(
            f"lm_perplexity {name} CUDA through the head == logits path",
            abs(fused / logits - 1) < 1e-6,
            f"{fused!r} {logits!r}",
        )
        check(
            f"lm_perplexity {name} CUDA == CPU",
            abs(fused / cpu - 1) < (1e-6 if "f32" in name else 1e-2),
            f"{fused!r} {cpu!r}",
        )


def tokens():
    b, length, vocab = 256, 1024, 32000
    rng = np.random.default_rng(0)
    cand = rng.integers(0, vocab, (b, length))
    ref = cand.copy()
    swap = rng.random((b, length)) < 0.4
    ref[swap] = rng.integers(0, vocab, int(swap.sum()))
    c, r = torch.from_numpy(cand).cuda(), torch.from_numpy(ref).cuda()
    got = tm.segment_bleu(c, r)
    check("token-ID BLEU on CUDA == CPU (exact)", np.array_equal(got.cpu().numpy(), tm.segment_bleu(cand, ref)))
    check(
        "token-ID BLEU == torch TensorBLEU method",
        np.allclose(got.cpu().numpy(), tensorbleu_torch(c, r).cpu().numpy(), rtol=1e-9),
    )
    rg = tm.rouge(c, r, ["rouge1", "rouge2", "rougeL"])
    rc = tm.rouge(cand, ref, ["rouge1", "rouge2", "rougeL"])
    check(
        "token-ID ROUGE on CUDA == CPU (exact)",
        all(
            np.array_equal(np.asarray(torch.as_tensor(getattr(rg[k], f)).cpu()), np.asarray(getattr(rc[k], f)))
            for k in rc
            for f in ("precision", "recall", "fmeasure")
        ),
    )
    ours = cuda_ms(lambda: tm.segment_bleu(c, r))
    rouge = cuda_ms(lambda: tm.rouge(c, r, ["rouge1", "rouge2", "rougeL"]))
    tb = cuda_ms(lambda: tensorbleu_torch(c, r), 10)
    tbp = cuda_ms(lambda: tensorbleu_torch(c, r, packed=True), 10)
    print(
        f"time token-ID sentence BLEU ({b}, {length}) CUDA: turbometrics {ours:.3f} ms; torch TensorBLEU "
        f"unique(dim=0) {tb:.3f} ms ({tb / ours:.1f}x), packed keys {tbp:.3f} ms ({tbp / ours:.1f}x); "
        f"ROUGE-1/2/L {rouge:.3f} ms",
        flush=True,
    )
    # A/B for the one-shot functions: segment_bleu's synchronous path (lengths on the host) against the pending
    # update's (everything on the device, kernels sized by the padded width, one wait)
    pending = cuda_ms(lambda: tm.metrics.BLEU(effective_order=True).update(c, r).segment_scores())
    print(f"time token-ID sentence BLEU one-shot: synchronous path {ours:.3f} ms, pending update's {pending:.3f} ms")
    for name, make in (("BLEU", tm.metrics.BLEU), ("ROUGE", lambda: tm.metrics.ROUGE(["rouge1", "rouge2", "rougeL"]))):
        updates(name, make, (c, r), (cand, ref))


def updates(name, make, dev, host, n=10):
    """Issue 41: n metric updates on CUDA token IDs queued behind a second of GPU work return before it is done
    (the host's time an update), their GPU time an update, and compute() equal to the host path's."""
    make().update(*dev).compute()  # compiled, torch's pinned pool warm
    m = make()
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)  # about a second of GPU time queued first
    t0 = time.perf_counter()
    for _ in range(n):
        m.update(*dev)
    host_ms = (time.perf_counter() - t0) * 1e3 / n
    check(
        f"{name}.update on CUDA token IDs does not wait",
        not torch.cuda.current_stream().query(),
        f"{host_ms:.3f} ms host",
    )
    got, want = m.compute(), make()
    for _ in range(n):
        want.update(*host)
    same = (
        str(got) == str(want.compute())
        if name == "BLEU"
        else all(np.array_equal(np.asarray(got[k]), np.asarray(want.compute()[k])) for k in got)
    )
    check(f"{name} of {n} pending updates == the host path's", same)
    gpu = cuda_ms(lambda: make().update(*dev))
    print(f"time {name}.update CUDA token IDs {tuple(dev[0].shape)}: host {host_ms:.3f} ms, GPU {gpu:.3f} ms an update")


def memory():
    vocab, d, b, t = 128256, 1024, 8, 4096
    model = llama(vocab, d, dtype=torch.bfloat16).cuda()
    ids = torch.randint(0, vocab, (b, t), device="cuda", generator=torch.Generator("cuda").manual_seed(0))

    def peak(fn):
        fn()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        ms = cuda_ms(fn, 3)
        return ms, (torch.cuda.max_memory_allocated() - base) / 2**30

    ours = peak(lambda: tm.lm_perplexity(model, ids, max_length=t, batch_size=b))
    with torch.inference_mode():
        body = peak(lambda: model.model(ids))
        hf_loss = peak(lambda: float(model(ids, labels=ids).loss))
    print(
        f"memory lm_perplexity 2-layer Llama bf16 d={d} V={vocab:,} batch {b} x {t:,}: turbometrics "
        f"{ours[0]:.1f} ms, +{ours[1]:.2f} GiB; the model body alone {body[0]:.1f} ms, +{body[1]:.2f} GiB; "
        f"Hugging Face model(ids, labels=ids) {hf_loss[0]:.1f} ms, +{hf_loss[1]:.2f} GiB",
        flush=True,
    )
    check("lm_perplexity adds at most 1 GiB", ours[1] <= 1.0, f"{ours[1]:.2f} GiB")


def profile():
    """One call of each hot kernel on (4096, 128256), f32 and bf16, the head fold (bf16, d=4096), then the
    token-ID kernels (256, 1024)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.randn(4096, 128256, device="cuda", generator=g) * 3).to(dtype)
        t = torch.randint(0, 128256, (4096,), device="cuda", generator=g)
        tm.perplexity(x, t)
        tm.topk(x, 50)
        tm.topk_accuracy(x, t, k=5)
        del x
    h = torch.randn(4096, 4096, device="cuda", generator=g).to(torch.bfloat16)
    w = (torch.randn(128256, 4096, device="cuda", generator=g) * 4096**-0.5).to(torch.bfloat16)
    t = torch.randint(0, 128256, (4096,), device="cuda", generator=g)
    tm.perplexity_from_hidden(h, w, t)
    c = torch.randint(0, 32000, (256, 1024), device="cuda", generator=g)
    tm.segment_bleu(c, c.roll(1, 1))
    tm.rouge(c, c.roll(1, 1), ["rougeL"])
    torch.cuda.synchronize()


def variants():
    """topk_rows compiled with launch bounds (blocks an SM) against the default, f32 and bf16 (4096, 128256)."""
    from turbometrics import _gpu
    from turbometrics._kernels import cuda as K

    g = torch.Generator(device="cuda").manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.randn(4096, 128256, device="cuda", generator=g) * 3).to(dtype)
        rows, vals, idx, _ = _gpu.topk_job(x, 50, True)
        ck, ci = _gpu._empty(rows, 4096 * 50, np.int64), _gpu._empty(rows, 4096 * 50, np.int64)  # radix scratch
        for blocks in (None, 5, 6):
            kern = K.topk_rows(rows.widen, blocks)
            run = kern[4096, K.TPB, rows.stream]
            ms = cuda_ms(functools.partial(run, rows.data, 50, True, vals, idx, ck, ci))
            regs = kern.get_regs_per_thread() if hasattr(kern, "get_regs_per_thread") else "?"
            print(
                f"time topk_rows k=50 {dtype} launch bounds {blocks} blocks/SM: {ms:.3f} ms, {regs} registers",
                flush=True,
            )
        del x


def host():
    import cProfile
    import pstats

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(4096, 128256, device="cuda", generator=g)
    t = torch.randint(0, 128256, (4096,), device="cuda", generator=g)
    xs, ts = x.view(-1)[:100_000_000].view(100_000, 1000), torch.randint(0, 1000, (100_000,), device="cuda")
    c = torch.randint(0, 32000, (256, 1024), device="cuda", generator=g)
    r = c.clone()
    r[:, ::3] = 7
    for name, fn, n in (
        ("perplexity f32 (4096, 128256)", lambda: tm.perplexity(x, t), 50),
        ("topk_accuracy (100000, 1000)", lambda: tm.topk_accuracy(xs, ts, k=5), 50),
        ("token-ID sentence BLEU (256, 1024)", lambda: tm.segment_bleu(c, r), 20),
        ("token-ID rouge1", lambda: tm.rouge(c, r, ["rouge1"]), 5),
        ("token-ID rougeL", lambda: tm.rouge(c, r, ["rougeL"]), 5),
    ):
        fn()
        torch.cuda.synchronize()
        print(f"--- {name}: {cuda_ms(fn, n):.3f} ms a call (median of {n})", flush=True)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    for step in sys.argv[1:] or ["hf", "tokens", "memory"]:
        globals()[step]()
    sys.exit(1 if failed else 0)
