"""Other compilers, targets and builds than the one under test.

- The dense kernels compile to vector code at each path's own register width
  (the bug this guards against: GCC lowering 64-byte generic vectors to
  scalar code on AVX2 and SSE2 targets).
- The C++ kernels build with clang for aarch64 Linux (NEON vector code
  checked in the assembly), aarch64 macOS, x86-64 macOS and x86-64 Windows,
  through the cross compiler of PyPI's ziglang (no OpenMP there: the
  std::thread pool).
- A build without OpenMP (TURBOMETRICS_OPENMP=0, as on a Mac) runs on several
  threads and gives the same bits as this build, in forked children too.
What ran is printed in pytest's summary (conftest.py).
"""

import importlib.util
import os
import platform
import re
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _build import build_without_openmp
from conftest import BUILD_REPORT
from test_fork import WAYS as FORK_WAYS
from test_fork import run_fork_check

import turbometrics as tm
from turbometrics import resampling
from turbometrics._bench import zipf_corpus
from turbometrics._ext import _dense

pytestmark = pytest.mark.build  # each test builds the kernels with another compiler, target or option

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "src" / "turbometrics" / "_ext"
CXX_TESTS = Path(__file__).resolve().parent / "cxx"
FLAGS = ["-std=c++17", "-ffp-contract=off", "-Wno-psabi", f"-I{EXT}"]  # as setup.py


def _zig() -> list[str]:
    try:
        import ziglang  # noqa: F401
    except ImportError:
        print("SKIP: no cross compiler: pip install ziglang (in the test extra)")
        pytest.skip("ziglang (the cross compiler from PyPI) is not installed")
    return [sys.executable, "-m", "ziglang", "c++"]


def _compile(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stderr[-4000:]


def _function(asm: str, namespace: str, name: str) -> list[str]:
    """The instruction lines of tmk::<namespace>::<name> (a static function) in an assembly listing."""
    sym = re.compile(rf"^_ZN3tmk{len(namespace)}{namespace}L{len(name)}{name}E\w*:")
    lines, inside = [], False
    for line in asm.splitlines():
        if sym.match(line):
            inside = True
        elif inside and (".cfi_endproc" in line or re.match(r"^\.Lfunc_end", line)):
            break
        elif inside and line.startswith(("\t", " ")) and not line.strip().startswith((".", "//", "#")):
            lines.append(line.strip())
    assert lines, f"tmk::{namespace}::{name} not found in the assembly"
    return lines


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 paths")
def test_x86_paths_use_their_own_register_width(tmp_path):
    cxx = (sysconfig.get_config_var("CXX") or "c++").split()
    asm = tmp_path / "dense.s"
    _compile(cxx + ["-O3", *FLAGS, "-S", str(CXX_TESTS / "dense.cpp"), "-o", str(asm)])
    text = asm.read_text()
    arith = re.compile(r"^v?(add|sub|mul|max|min)p[sd]\s")
    for ns, reg in (("avx512", "%zmm"), ("avx2", "%ymm"), ("base", "%xmm")):
        for fn in ("nll_f32", "nll_f64"):
            ops = [ln for ln in _function(text, ns, fn) if arith.match(ln)]
            wide = [ln for ln in ops if reg in ln]
            scalar = [ln for ln in _function(text, ns, fn) if re.match(r"^v?(add|sub|mul)s[sd]\s", ln)]
            # the exp loops are packed at this width; scalar arithmetic is the per-block lane sums only
            # (scalarized kernels show hundreds of scalar ops and few packed ones)
            assert len(wide) >= 60 and len(wide) >= 3 * len(scalar), (ns, fn, len(wide), len(scalar))
    BUILD_REPORT.append("x86-64 (host compiler): NLL kernels packed at zmm (avx512), ymm (avx2), xmm (baseline)")


def test_every_width_gives_the_same_bits(tmp_path):
    """The 64-byte (AVX-512) logic, compiled without AVX-512, against the paths this CPU runs."""
    cxx = (sysconfig.get_config_var("CXX") or "c++").split()
    exe = tmp_path / "widths"
    _compile(cxx + ["-O2", *FLAGS, str(CXX_TESTS / "widths.cpp"), "-o", str(exe)])
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stdout[-4000:] + r.stderr[-2000:]
    BUILD_REPORT.append(
        f"64-byte kernel logic (the AVX-512 path's) vs the paths run here: {r.stdout.strip()[4:]}; "
        "cpu.hpp's CPUID reading agrees with GCC's __builtin_cpu_supports"
    )


def test_neon_kernels_compile_to_vector_code(tmp_path):
    zig = _zig()
    asm = tmp_path / "dense-aarch64.s"
    _compile(zig + ["-target", "aarch64-linux-gnu", "-O3", *FLAGS, "-S", str(CXX_TESTS / "dense.cpp"), "-o", str(asm)])
    text = asm.read_text(errors="replace")
    counts = {}
    for fn, lanes in (("nll_f32", "4s"), ("nll_f64", "2d")):
        ins = _function(text, "base", fn)
        vec = [ln for ln in ins if re.match(rf"^f(add|sub|mul|mla)\s+v\d+\.{lanes}", ln)]
        scalar = [ln for ln in ins if re.match(r"^f(add|sub|mul|mla)\s+[sd]\d+", ln)]
        assert len(vec) >= 60 and len(vec) >= 3 * len(scalar), (fn, len(vec), len(scalar))
        assert any(re.match(rf"^(fmax|fmin|fcmgt|fcmge)\s+v\d+\.{lanes}", ln) for ln in ins), fn
        counts[fn] = len(vec)
    scan = _function(text, "base", "topk_f32")
    assert any(re.match(r"^fcm(gt|ge)\s+v\d+\.4s", ln) for ln in scan), "top-k scan is not vectorized"
    BUILD_REPORT.append(
        f"aarch64-linux (zig clang): NEON path vectorized: {counts['nll_f32']} vector float ops "
        f"(.4s) in nll_f32, {counts['nll_f64']} (.2d) in nll_f64; top-k scan with vector compares"
    )


@pytest.mark.parametrize("target", ["aarch64-macos", "x86_64-macos"])
def test_kernels_build_for_macos(tmp_path, target):
    zig = _zig()
    _compile(
        zig + ["-target", target, "-O2", *FLAGS, "-c", str(CXX_TESTS / "dense.cpp"), "-o", str(tmp_path / "dense.o")]
    )
    _compile(zig + ["-target", target, "-O0", *FLAGS, "-c", str(CXX_TESTS / "text.cpp"), "-o", str(tmp_path / "t.o")])
    BUILD_REPORT.append(f"{target} (zig clang, no OpenMP): dense kernels compiled, text kernels checked")


def test_kernels_build_for_windows(tmp_path):
    """x86-64 Windows objects (COFF, machine AMD64) of the dense and text kernels, from zig's clang for the
    MinGW target: the same vector extensions and target pragmas that clang-cl builds (setup.py), no OpenMP."""
    zig = _zig()
    for name, opt in (("dense", "-O2"), ("text", "-O0")):
        obj = tmp_path / f"{name}.obj"
        _compile(
            zig + ["-target", "x86_64-windows-gnu", opt, *FLAGS, "-c", str(CXX_TESTS / f"{name}.cpp"), "-o", str(obj)]
        )
        assert obj.read_bytes()[:2] == b"\x64\x86", f"{name}.obj is not an x86-64 COFF object"
    BUILD_REPORT.append(
        "x86_64-windows-gnu (zig clang, MinGW headers, no OpenMP): dense and text kernels compiled to "
        "COFF objects (not clang-cl with MSVC's headers: that build is the Windows wheel job's)"
    )


CHECK = textwrap.dedent("""
    import os, sys
    import numpy as np
    import turbometrics as tm
    from turbometrics._ext import _dense
    assert tm.__file__.startswith(sys.argv[2]), tm.__file__
    before = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1
    out = dict(np.load(sys.argv[1]))
    got = {}
    got["nll"] = tm.token_nll(out["x"], out["t"], num_threads=2)
    tasks = len(os.listdir("/proc/self/task")) if before >= 0 else -1
    hyps, refs = [str(h) for h in out.pop("hyps")], [str(r) for r in out.pop("refs")]
    got["bleu"] = np.array(tm.corpus_bleu(hyps, [refs], num_threads=2).score)
    got["segment_bleu"] = tm.segment_bleu(hyps, [refs], num_threads=2)
    got["chrf"] = np.array(tm.corpus_chrf(hyps, [refs], word_order=2, num_threads=2).score)
    got["rouge"] = tm.rouge(hyps, refs, num_threads=2)["rougeLsum"].fmeasure
    got["topk"] = tm.topk(out["x"], 5, num_threads=2)[1]
    got["rank"] = tm.target_rank(out["x"].astype(np.float16), out["t"], num_threads=2)
    from turbometrics import resampling
    got["resample_sums"] = resampling._sums(resampling._columns(out["x"][:, :300]), out["counts"], 2)
    rows = np.ascontiguousarray(out["x"][:, :3], np.float64)
    got["bootstrap_means"] = _dense.legacy_bootstrap_means(out["key"], 5, rows, 40, 3, 2)[0]
    for k, v in got.items():
        np.testing.assert_array_equal(v, out[k], err_msg=k)
    print("THREADING", _dense.THREADING, "TASKS", before, tasks)
""")


def test_build_without_openmp_uses_threads_and_gives_the_same_bits(tmp_path):
    pytest.importorskip("Cython", reason="the rebuild needs Cython (in the test extra)")
    src = tmp_path / "tree"
    r = build_without_openmp(str(ROOT), str(src))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "building without OpenMP" in r.stderr

    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 5000)) * 4).astype(np.float32)
    t = rng.integers(0, 5000, 64)
    hyps, refs = zipf_corpus(3000)
    want = {"x": x, "t": t, "hyps": np.array(hyps), "refs": np.array(refs)}
    want["nll"] = tm.token_nll(x, t)
    want["bleu"] = np.array(tm.corpus_bleu(hyps, [refs]).score)
    want["segment_bleu"] = tm.segment_bleu(hyps, [refs])
    want["chrf"] = np.array(tm.corpus_chrf(hyps, [refs], word_order=2).score)
    want["rouge"] = tm.rouge(hyps, refs)["rougeLsum"].fmeasure
    want["topk"] = tm.topk(x, 5)[1]
    want["rank"] = tm.target_rank(x.astype(np.float16), t)  # float16: ties to count
    want["counts"] = rng.integers(0, 3, (50, 64)).astype(np.int32)
    want["key"] = np.random.RandomState(4).get_state()[1]
    want["resample_sums"] = resampling._sums(resampling._columns(x[:, :300]), want["counts"], 2)
    rows = np.ascontiguousarray(x[:, :3], np.float64)
    want["bootstrap_means"] = _dense.legacy_bootstrap_means(want["key"].copy(), 5, rows, 40, 3, 2)[0]
    data = tmp_path / "want.npz"
    np.savez(data, **want)

    env = dict(os.environ, PYTHONPATH=str(src / "src"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    r = subprocess.run(
        [sys.executable, "-c", CHECK, str(data), str(src / "src")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    words = r.stdout.split()
    assert words[1:4] == ["std::thread", "pool", "TASKS"], r.stdout
    before, after = int(words[4]), int(words[5])
    if before >= 0:
        assert after > before, "the std::thread pool started no worker thread"
    ways = [w for w in FORK_WAYS if w != "dataloader" or importlib.util.find_spec("torch")]
    out = run_fork_check(ways, env)  # forked children there too (fork_check.py runs that build: PYTHONPATH)
    assert "THREADING std::thread pool" in out, out
    BUILD_REPORT.append(
        f"build without OpenMP (TURBOMETRICS_OPENMP=0): std::thread pool, {after - before} worker "
        "thread(s) started; NLL, top-k, ranks, BLEU, chrF++, ROUGE, resampling bits equal this "
        "build's; forked children (os.fork, Pool, ProcessPoolExecutor, DataLoader, mid-kernel) return "
        "its numbers"
    )
