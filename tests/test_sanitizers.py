"""The extension built with AddressSanitizer + UndefinedBehaviorSanitizer, fuzzed (tests/sanitize) and fed
the bad-input and large-input tests; any sanitizer report fails.

gcc's runtimes are preloaded into the test process (CPython itself is not instrumented); reports abort the
process (halt_on_error, -fno-sanitize-recover), and the output is searched for them as well. Leak checking
is off: the interpreter keeps what it allocates until exit. The fuzz examples per test come from
TURBOMETRICS_FUZZ_EXAMPLES (default 1000 here: about a minute and a half under ASan on 2 cores, after a
build of about two, at -O1 as OSS-Fuzz builds); the summary says how many ran.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from _build import build_copy
from conftest import BUILD_REPORT, run_pytest

pytestmark = pytest.mark.build  # an ASan + UBSan build of the extensions

ROOT = Path(__file__).resolve().parents[1]
FLAGS = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"


def _runtime(name: str) -> str:
    cxx = os.environ.get("CXX", "g++")
    if not shutil.which(cxx):
        pytest.skip(f"no {cxx}")
    path = subprocess.run([cxx, f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(path):
        print(f"SKIP: {cxx} has no {name}")
        pytest.skip(f"{cxx} has no {name}")
    return path


def test_sanitizer_build_fuzz_and_bad_input(tmp_path):
    pytest.importorskip("Cython", reason="the rebuild needs Cython (in the test extra)")
    preload = ":".join(_runtime(n) for n in ("libasan.so", "libubsan.so"))
    tree = tmp_path / "tree"
    # -O1: 108 s to build on 2 cores against 271 s at -O3, for a fuzz run 7% slower (AMD EPYC Zen 4, 814277b)
    r = build_copy(str(ROOT), str(tree), CXXFLAGS=FLAGS, LDFLAGS=FLAGS, TURBOMETRICS_OPT="-O1")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    count = tmp_path / "fuzz-count"
    env = dict(
        os.environ,
        PYTHONPATH=str(tree / "src"),
        LD_PRELOAD=preload,
        TURBOMETRICS_FUZZ="1",
        TURBOMETRICS_SANITIZED_TREE=str(tree / "src"),
        TURBOMETRICS_FUZZ_COUNT=str(count),
        TURBOMETRICS_FUZZ_EXAMPLES=os.environ.get("TURBOMETRICS_FUZZ_EXAMPLES", "1000"),
        ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1",
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
        NUMBA_CACHE_DIR=str(tmp_path / "numba"),
    )
    label = "ASan+UBSan build"
    # left out: the address-space and peak-memory tests (ASan's shadow memory needs more address space
    # than RLIMIT_AS leaves, and adds its own to the peak) and the Ctrl-C ones (they time the calls)
    out = run_pytest(
        [
            "sanitize/test_fuzz.py",
            "test_bad_input.py",
            "test_limits.py",
            "-k",
            "not memory_error and not 10mb and not sigint",
        ],
        env,
        BUILD_REPORT,
        label,
    )
    text = out.stdout + out.stderr
    assert "Sanitizer" not in text and "runtime error:" not in text, text[-5000:]
    n = int(count.read_text())
    BUILD_REPORT[-1] += f"; {n} fuzz examples, no sanitizer report"
    assert n > 0
