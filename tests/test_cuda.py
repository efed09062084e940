"""GPU kernels without a GPU: the simulator suite (tests/gpu) in its own process, and PTX for sm_80/sm_90.

NUMBA_ENABLE_CUDASIM must be set before numba is imported, hence the
subprocesses. What ran is printed in pytest's summary (tests/conftest.py).
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import GPU_REPORT, run_pytest

import turbometrics as tm

pytestmark = pytest.mark.gpu  # numba.cuda kernels: the simulator or PTX, no GPU needed

ROOT = Path(__file__).resolve().parent


@pytest.mark.slow  # every kernel in Python threads
def test_kernels_under_the_cuda_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env.pop("TURBOMETRICS_GPU_TESTS", None)
    run_pytest([str(ROOT / "gpu")], env, GPU_REPORT, "CUDA simulator (tests/gpu)")


PTX = textwrap.dedent(r"""
    import re
    import sys
    from types import SimpleNamespace
    from numba import cuda
    try:
        from turbometrics._kernels import cuda as K
    except Exception as e:
        print("SKIP numba.cuda unusable:", e); sys.exit(3)
    import numba.cuda.dispatcher as D
    # device functions (device.inlined) are lowered for the current GPU's compute capability; there is none here.
    # (numba-cuda 0.30 reads it only to lower float64 atomic.add below cc 6.0 and fastmath tanh: neither is used)
    D.get_current_device = lambda: SimpleNamespace(compute_capability=(8, 0))
    F = {K.WIDEN_F32: ["float16", "float32"], K.WIDEN_BF16: ["uint16", "int16"], K.WIDEN_F64: ["float64"]}
    jobs = []
    for widen, types in F.items():
        for T in types:
            for group in (K.TPB, 32):  # a block per row, a warp per row
                # targets as users pass them (int64; int32 once, for float32), checked in the kernel
                for I in ("int64", "int32") if T == "float32" else ("int64",):
                    tg = f"{I}[::1], uint8[::1], boolean, int64, boolean"
                    jobs.append(("nll_rows", K.nll_rows(widen, group),
                                 f"void({T}[:, ::1], {tg}, float64[::1], uint8[::1])"))
                    jobs.append(("rank_rows", K.rank_rows(widen, group),
                                 f"void({T}[:, ::1], {tg}, boolean, boolean, int64[::1], uint8[::1])"))
                jobs.append(("fold_rows", K.fold_rows(widen, group), f"void({T}[:, ::1], int64[::1], int64, "
                             "float64[::1], float64[::1], int64[::1], float64[::1])"))
                jobs.append(("score_rows", K.score_rows(widen, group), f"void({T}[:, ::1], int64[::1], int64, "
                             "float64[::1], float64[::1], int64[::1], float64[::1], int64[::1], float64[::1])"))
            if widen != K.WIDEN_F64:
                jobs.append(("topk_rows", K.topk_rows(widen), f"void({T}[:, ::1], int64, boolean, {T}[:, ::1], "
                             "int64[:, ::1], int64[::1], int64[::1])", (K.TPB, K.TOPK_BLOCKS)))  # as it ships
    for group in (K.TPB, 32):  # bf16 pairs (32-bit words): nll_rows and the head's fold_rows
        jobs.append(("nll_rows", K.nll_rows(K.WIDEN_BF16_PAIRS, group), "void(int32[:, ::1], "
                     "int64[::1], uint8[::1], boolean, int64, boolean, float64[::1], uint8[::1])"))
        jobs.append(("fold_rows", K.fold_rows(K.WIDEN_BF16_PAIRS, group), "void(int32[:, ::1], int64[::1], int64, "
                     "float64[::1], float64[::1], int64[::1], float64[::1])"))
    # the one-shot variants that sum on the device (their row reads are the kernels' above): each layout, the
    # widenings users meet most
    tally = "int64[::1], uint8[::1], boolean, int64, boolean"
    for group in (K.TPB, 32):
        for widen, T in ((K.WIDEN_F32, "float32"), (K.WIDEN_BF16_PAIRS, "int32"), (K.WIDEN_F64, "float64")):
            jobs.append(("nll_tally", K.nll_tally(widen, group),
                         f"void({T}[:, ::1], {tally}, int64[::1], int64[::1])"))
        for widen, T in ((K.WIDEN_F32, "float32"), (K.WIDEN_BF16, "int16")):  # (torch's bf16: an int16 view)
            jobs.append(("rank_tally", K.rank_tally(widen, group), f"void({T}[:, ::1], {tally}, boolean, boolean, "
                         "int64, int64, int64, int64, int64[::1], int64[::1])"))
    for T in ("int32", "int64"):  # tokens of lcs_length (int32) and of token-ID ROUGE-L (int64)
        jobs.append(("lcs_pairs", K.lcs_pairs,
                     f"void({T}[::1], {T}[::1], int64[::1], int32[::1], int64[::1])"))
    jobs.append(("ngram_matches", K.ngram_matches,  # token-ID BLEU / ROUGE-N
                 "void(int64[::1], int64[::1], int64, int64, int64, int64, boolean, boolean, int64[:, ::1])"))
    CCS = ((8, 0), (9, 0))
    from numba.cuda import compiler
    lower = getattr(compiler, "_compile_pyfunc_with_fixup", None)

    def ptx_per_cc(func, sig, bounds=None):
        # Lower once and let NVVM emit each arch: lowering is ~95% of a compile_ptx (this test took
        # ~5 min as a compile_ptx per arch). compile_ptx per arch where numba's internals have moved.
        if lower is not None:
            try:
                lib, _ = lower(func, sig, debug=None, lineinfo=False, device=False, fastmath=False, cc=CCS[0],
                               opt=None, abi="numba", abi_info=None, forceinline=False, launch_bounds=bounds,
                               lto=False)
            except TypeError:  # another signature: a numba-cuda release we have not seen
                pass
            else:
                return [lib.get_asm_strs(cc=cc)[0] for cc in CCS]
        return [cuda.compile_ptx(func, sig, cc=cc, launch_bounds=bounds)[0] for cc in CCS]

    n = 0
    for name, kern, sig, *bounds in jobs:
        try:
            ptxs = ptx_per_cc(kern.py_func, sig, *bounds)
        except Exception as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            if any(w in msg for w in ("NVVM", "NVRTC", "nvrtc", "nvvm", "libnvrtc", "DynamicLib", "CUDA_HOME")):
                print("SKIP no CUDA toolkit for PTX:", msg); sys.exit(3)
            raise
        for cc, ptx in zip(CCS, ptxs):
            assert f".target sm_{cc[0]}{cc[1]}" in ptx and ".entry" in ptx, (name, sig, cc)
            assert not bounds or f".minnctapersm {bounds[0][1]}" in ptx, (name, "launch bounds missing")
            # score_rows takes every exp in float64; the simulator cannot tell (its float32 exp is Python's)
            assert name != "score_rows" or "ex2.approx" not in ptx, (name, sig, cc, "a float32 exp")
            # static shared memory past 48 KiB fails at load time, not here (score_rows' exp table: 34 KiB)
            shared = sum(int(b) for b in re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]", ptx))
            assert shared <= 48 * 1024, (name, sig, cc, shared, "bytes of static shared memory")
            # every device function of ours inlined by NVVM (device.inlined): none left as a function (numba's
            # mangled names; libdevice's own out-of-line helpers may stay)
            assert not re.search(r"\.func\s*(\([^)]*\)\s*)?_ZN", ptx), (name, sig, cc, "a device function left")
            n += 1
    print(f"PTX OK: {n} kernel signatures for sm_80 and sm_90")
""")


@pytest.mark.slow  # NVVM compiles every kernel twice
def test_every_kernel_compiles_to_ptx_for_sm80_and_sm90():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", PTX], env=env, capture_output=True, text=True, timeout=900)
    last = (out.stdout.strip().splitlines() or ["no output"])[-1]
    if out.returncode == 3:
        GPU_REPORT.append(f"PTX: skipped ({last[5:]})")
        pytest.skip(last[5:])
    GPU_REPORT.append(f"PTX: {last}" if out.returncode == 0 else "PTX: FAILED")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]


def test_device_argument_is_checked():
    with pytest.raises(ValueError, match="device must be one of 'cpu', 'cuda'"):
        tm.perplexity([[0.0, 1.0]], [1], device="tpu")


def test_no_gpu_is_a_clear_error():
    cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is in the test and cuda extras")

    if cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="no usable GPU"):
        tm.topk([[0.0, 1.0]], 1, device="cuda")
