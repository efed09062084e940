"""Full-size GPU parity: the numba.cuda path against the CPU path and PyTorch, on a real GPU.

python tools/gpu_parity.py      # prints one line per check; exits 1 on any mismatch
"""

import sys

import numpy as np
import torch
import torch.nn.functional as F

import turbometrics as tm

N, V = 4096, 128256
failed = 0


def check(name, ok, detail=""):
    global failed
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}", flush=True)


g = torch.Generator(device="cuda").manual_seed(1)
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    x = (torch.randn(N, V, device="cuda", generator=g) * 3).to(dtype)
    t = torch.randint(0, V, (N,), device="cuda", generator=g)
    t[::10] = -100
    ours = tm.perplexity(x, t, ignore_index=-100)
    ref = float(torch.exp(F.cross_entropy(x.double(), t, ignore_index=-100)))
    check(f"perplexity {dtype} vs torch f64", abs(ours - ref) / ref < 1e-6, f"{ours!r} {ref!r}")
    nll = tm.token_nll(x, t, ignore_index=-100)
    check(f"token_nll {dtype} stays a CUDA tensor", isinstance(nll, torch.Tensor) and nll.is_cuda)
    rows = slice(0, 256)  # the CPU path on a host copy of some rows
    xc, tc = x[rows].cpu(), t[rows].cpu()
    cpu = tm.token_nll(xc, tc, ignore_index=-100).numpy()
    check(f"token_nll {dtype} vs CPU", np.allclose(nll[rows].cpu().numpy(), cpu, rtol=1e-6, atol=0))
    r_gpu = tm.target_rank(x[rows], t[rows].clamp(min=0)).cpu().numpy()
    r_cpu = tm.target_rank(xc, tc.clamp(min=0)).numpy()
    check(f"target_rank {dtype} vs CPU (exact)", np.array_equal(r_gpu, r_cpu))
    a_gpu = tm.topk_accuracy(x, t, k=5, ignore_index=-100)
    a_cpu = tm.topk_accuracy(x.cpu(), t.cpu(), k=5, ignore_index=-100)
    check(f"topk_accuracy {dtype} vs CPU (exact)", a_gpu == a_cpu, f"{a_gpu} {a_cpu}")
    for largest in (True, False):
        v, i = tm.topk(x, 50, largest=largest)
        tv, _ = torch.topk(x, 50, largest=largest)
        check(f"topk {dtype} largest={largest} values vs torch.topk", torch.equal(v, tv))
        cv, ci = tm.topk(xc, 50, largest=largest)
        check(f"topk {dtype} largest={largest} indices vs CPU (exact)", torch.equal(i[rows].cpu(), ci))
# short rows: a warp per row
x = torch.randn(20000, 1000, device="cuda", generator=g)
t = torch.randint(0, 1000, (20000,), device="cuda", generator=g)
check(
    "topk_accuracy (20000, 1000) vs CPU (exact)",
    tm.topk_accuracy(x, t, k=(1, 5)).tolist() == tm.topk_accuracy(x.cpu(), t.cpu(), k=(1, 5)).tolist(),
)
check("perplexity (20000, 1000) vs CPU", abs(tm.perplexity(x, t) / tm.perplexity(x.cpu(), t.cpu()) - 1) < 1e-6)

try:  # CuPy in, CuPy out
    import cupy

    xc, tcp = cupy.asarray(x[:64]), cupy.asarray(t[:64])
    check("CuPy perplexity", abs(tm.perplexity(xc, tcp) / tm.perplexity(x[:64].cpu(), t[:64].cpu()) - 1) < 1e-6)
    v, i = tm.topk(xc, 7)
    check("CuPy topk gives CuPy arrays", isinstance(v, cupy.ndarray) and isinstance(i, cupy.ndarray))
    check("CuPy topk indices vs CPU", np.array_equal(cupy.asnumpy(i), tm.topk(x[:64].cpu(), 7)[1].numpy()))
    r = tm.target_rank(xc, tcp)
    check(
        "CuPy target_rank",
        isinstance(r, cupy.ndarray)
        and np.array_equal(cupy.asnumpy(r), tm.target_rank(x[:64].cpu(), t[:64].cpu()).numpy()),
    )
except ImportError:
    print("skip CuPy (not installed)")
# lm_perplexity with a CUDA model: logits go to the GPU kernel, only per-token NLL comes back
from turbometrics._bench import _causal_lm  # noqa: E402

lm = _causal_lm(5000, max_len=256)
ids = np.random.default_rng(0).integers(0, 5000, 3000)
cpu_ppl = tm.lm_perplexity(lm, ids, max_length=256, stride=128, batch_size=4)
gpu_ppl = tm.lm_perplexity(lm.cuda(), ids, max_length=256, stride=128, batch_size=4)
check("lm_perplexity CUDA model vs CPU", abs(gpu_ppl / cpu_ppl - 1) < 1e-6, f"{gpu_ppl!r} {cpu_ppl!r}")
# a side stream (non-blocking: no implicit order with the legacy default stream): our kernels and copies must
# queue there, after the work that writes the logits
side = torch.cuda.Stream()
x, t = x[:512].contiguous(), t[:512].clamp(min=0)
with torch.cuda.stream(side):
    xs = x.clone()
    for _ in range(50):  # keep the side stream busy: a kernel on another stream would read too early
        xs = (xs * 1.0001).contiguous()
    got, ranks = tm.perplexity(xs, t), tm.target_rank(xs, t).cpu()
torch.cuda.synchronize()
check("perplexity on a side stream vs CPU", abs(got / tm.perplexity(xs.cpu(), t.cpu()) - 1) < 1e-6)
check(
    "target_rank on a side stream vs CPU (exact)",
    np.array_equal(ranks.numpy(), tm.target_rank(xs.cpu(), t.cpu()).numpy()),
)
bad = t.clone()
bad[7] = V + 5
try:
    tm.perplexity(x, bad)
    check("a device target out of range raises", False)
except ValueError as e:
    check("a device target out of range raises the CPU path's error", "targets must lie in" in str(e), str(e))
sys.exit(1 if failed else 0)
