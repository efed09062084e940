"""Host time to compile the GPU kernels that a new process's first calls need, measured without a GPU.

A first GPU call with an empty kernel cache compiles its kernel as numba's first launch does: types and lowers
it, has NVVM make its PTX (which numba scans for library calls), then its cubin: with nvJitLink installed (the
default of a pip install) NVVM again with ``-gen-lto`` and nvJitLink's link. This times those steps for the
five kernels of ``tools/gpu_first_call.py``'s first calls (perplexity f32 and bf16, ``topk_accuracy``,
``topk``, ``Perplexity.update``) and the LM head's two bf16 folds (``perplexity_from_hidden`` and lm-eval's
log-likelihoods), for sm_90: all in one fresh process, in that order (a script's first calls: later kernels
find the device functions the earlier ones compiled), or ``--alone``, each in a fresh process of its own (a
script's only call). Without nvJitLink the cubin is not made (the driver would link the PTX: it needs a GPU).
Loading the cubin on the GPU is not timed.

    python tools/kernel_compile_times.py              # the kernels as they ship
    python tools/kernel_compile_times.py --alone      # each kernel in a process of its own
    python tools/kernel_compile_times.py --ir-inline  # device functions inlined at numba IR level instead

``--ir-inline`` compiles them as they were before ``_kernels.cuda.device.inlined`` (numba's
``inline="always"``: each call site's IR copied and typed again in every kernel), for the before/after
figures in docs/gpu.md.
"""

from __future__ import annotations

import argparse
import json
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
from numba.cuda import compiler
from numba.cuda.cudadrv.driver import _have_nvjitlink

lto = _have_nvjitlink()
only = os.environ.get("ONLY")
took = {}
for name, (kern, sig, bounds) in jobs.items():
    if only and name != only:
        continue
    t = time.perf_counter()
    # numba's first launch (dispatcher._Kernel, then get_cufunc's get_cubin), but the load
    lib, _ = compiler._compile_pyfunc_with_fixup(
        kern.py_func, sig, debug=None, lineinfo=False, device=False, fastmath=False, cc=(9, 0), opt=None,
        abi="numba", abi_info=None, forceinline=False, launch_bounds=bounds, lto=False,
    )
    lib.get_asm_str(cc=(9, 0))
    if lto:
        lib._lto = True  # (as the kernel's library is made at a launch: its PTX first, then the LTO cubin)
        lib.get_cubin(cc=(9, 0))
    took[name] = round(time.perf_counter() - t, 2)
print(json.dumps({"cubin (nvJitLink)" if lto else "PTX only (no nvJitLink)": took}))
"""


NAMES = [line.split('"')[1] for line in RUN.splitlines() if line.startswith('    "') and "(" in line]


def run(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=900)
    if out.returncode:
        sys.exit(out.stderr[-3000:])
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ir-inline", action="store_true", help="inline device functions at numba IR level (as before)")
    p.add_argument("--alone", action="store_true", help="each kernel in a fresh process of its own")
    p.add_argument("--runs", type=int, default=1, help="runs (each line one)")
    a = p.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if a.ir_inline:
        env["IR_INLINE"] = "1"
    for _ in range(a.runs):
        if a.alone:
            got: dict = {}
            for name in NAMES:
                for what, took in run(dict(env, ONLY=name)).items():
                    got.setdefault(what, {}).update(took)
        else:
            got = run(env)
        for took in got.values():
            took["the first five"] = round(sum(list(took.values())[:5]), 2)
            took["all"] = round(sum(v for k, v in took.items() if k != "the first five"), 2)
        print(json.dumps(got), flush=True)


if __name__ == "__main__":
    main()
