"""Split a GPU metric call's time into the kernel and the Python/validation around it (GPU machine)."""
import time

import torch
from numba import cuda

import turbometrics as tm
from turbometrics import _gpu
from turbometrics._kernels import cuda as K

N, V = 4096, 128256
x = torch.randn(N, V, device="cuda") * 3
t = torch.randint(0, V, (N,), device="cuda")


def best(fn, n=20):
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
td, _ = _gpu.device_targets(rows, t, None)
out = cuda.device_array(N, "f8")
nll = K.kernels(rows.widen)["nll_rows"]
rank = K.kernels(rows.widen)["rank_rows"]
ro = cuda.device_array(N, "i8")
print(f"nll kernel only      {best(lambda: nll[N, K.TPB](rows.data, td, out)):.3f} ms")
print(f"tm.perplexity        {best(lambda: tm.perplexity(x, t)):.3f} ms")
print(f"rank kernel only     {best(lambda: rank[N, K.TPB](rows.data, td, False, True, ro)):.3f} ms")
print(f"tm.topk_accuracy     {best(lambda: tm.topk_accuracy(x, t, k=5)):.3f} ms")
print(f"validation+transfer  {best(lambda: _gpu.device_targets(_gpu.device_rows(x, 'x'), t, None)):.3f} ms")
print(f"tm.topk k=50         {best(lambda: tm.topk(x, 50)):.3f} ms")
print(f"torch.sum read       {best(lambda: x.sum()):.3f} ms")
