"""Host time to compile the GPU kernels that a new process's first calls need, measured without a GPU.

A first GPU call with an empty kernel cache compiles its kernel: numba types and lowers it, NVVM turns it into
PTX (then the driver links it: not timed here, it needs a GPU). This times the first two steps, each run a
fresh process, for the five kernels of ``tools/gpu_first_call.py``'s calls (perplexity f32 and bf16,
``topk_accuracy``, ``topk``, ``Perplexity.update``) and the LM head's two bf16 folds (``perplexity_from_hidden``
and lm-eval's log-likelihoods), through ``cuda.compile_ptx`` for sm_90.

    python tools/kernel_compile_times.py              # the kernels as they ship
    python tools/kernel_compile_times.py --ir-inline  # device functions inlined at numba IR level instead

``--ir-inline`` compiles them as they were before ``_kernels.cuda.device.inlined`` (numba's
``inline="always"``: each call site's IR copied and typed again in every kernel), for the before/after
figure in docs/gpu.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

RUN = r"""
import json, os, sys, time, types
from numba import cuda
if os.environ.get("IR_INLINE"):
    jit = cuda.jit

    def ir_inline(*a, **kw):
        if kw.get("device") and kw.pop("forceinline", None):
            kw["inline"] = "always"
        return jit(*a, **kw)

    cuda.jit = ir_inline
import numba.cuda.dispatcher as D
D.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))  # no GPU here
from turbometrics._kernels import cuda as K

tg = "int64[::1], uint8[::1], boolean, int64, boolean"
tally = f"{tg}, int64[::1], int64[::1])"
head = "[:, ::1], int64[::1], int64, float64[::1], float64[::1], int64[::1], float64[::1]"  # the head's folds
jobs = {  # name -> (kernel, signature as the call types it, launch bounds)
    "perplexity f32 (nll_tally)": (K.nll_tally(K.WIDEN_F32, K.TPB), f"void(float32[:, ::1], {tally}", None),
    "perplexity bf16 (nll_tally)": (K.nll_tally(K.WIDEN_BF16_PAIRS, K.TPB), f"void(int32[:, ::1], {tally}", None),
    "topk_accuracy (rank_tally)": (
        K.rank_tally(K.WIDEN_F32, K.TPB),
        f"void(float32[:, ::1], {tg}, boolean, boolean, int64, int64, int64, int64, int64[::1], int64[::1])",
        None,
    ),
    "topk (topk_rows)": (
        K.topk_rows(K.WIDEN_F32),
        "void(float32[:, ::1], int64, boolean, float32[:, ::1], int64[:, ::1], int64[::1], int64[::1])",
        (K.TPB, K.TOPK_BLOCKS),
    ),
    "Perplexity.update (nll_rows)": (
        K.nll_rows(K.WIDEN_F32, K.TPB), f"void(float32[:, ::1], {tg}, float64[::1], uint8[::1])", None
    ),
    "perplexity_from_hidden bf16 (fold_rows)": (K.fold_rows(K.WIDEN_BF16_PAIRS, K.TPB), f"void(int32{head})", None),
    "lm-eval bf16 (score_rows)": (
        K.score_rows(K.WIDEN_BF16, K.TPB), f"void(int16{head}, int64[::1], float64[::1])", None
    ),
}
took = {}
for name, (kern, sig, bounds) in jobs.items():
    t = time.perf_counter()
    cuda.compile_ptx(kern.py_func, sig, cc=(9, 0), launch_bounds=bounds)
    took[name] = round(time.perf_counter() - t, 2)
took["total"] = round(sum(took.values()), 2)
took["the first five"] = round(sum(list(took.values())[:5]), 2)
print(json.dumps(took))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ir-inline", action="store_true", help="inline device functions at numba IR level (as before)")
    p.add_argument("--runs", type=int, default=1, help="fresh processes to run (each line one)")
    a = p.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if a.ir_inline:
        env["IR_INLINE"] = "1"
    for _ in range(a.runs):
        out = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=900)
        print(out.stdout.strip() if out.returncode == 0 else out.stderr[-3000:])
        if out.returncode:
            sys.exit(out.returncode)


if __name__ == "__main__":
    main()
