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
sys.exit(1 if failed else 0)
