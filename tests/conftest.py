import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# tests/gpu runs in its own process: under the CUDA simulator (tests/test_cuda.py starts it) or on a real GPU.
collect_ignore = []
if not (os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or os.environ.get("TURBOMETRICS_GPU_TESTS") == "1"):
    collect_ignore.append("gpu")
# tests/sanitize runs against the sanitizer build only (tests/test_sanitizers.py starts it).
if os.environ.get("TURBOMETRICS_FUZZ") != "1":
    collect_ignore.append("sanitize")

# What the GPU checks (tests/test_cuda.py), the SIMD paths (tests/test_simd_paths.py) and the
# other builds (tests/test_portability.py) did, printed at the end of every run (from every xdist worker).
GPU_REPORT: list[str] = []
SIMD_REPORT: list[str] = []
BUILD_REPORT: list[str] = []
PATCH_REPORT: list[str] = []  # the upstream suites run against tm.patch() (tests/test_patch_upstream.py)


# The longest tests (CI's --durations list), started first in this order. pytest-xdist deals the first quarter of
# the tests out to its workers in turn and the rest as workers free up: collected in file order, the sanitizer
# build (6-8 minutes at -O3) started last and ran alone for minutes at the end of CI.
LONGEST_FIRST = ("test_sanitizers.py::", "test_cuda.py::test_kernels_under_the_cuda_simulator", "test_wheel.py::")


def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        name = item.nodeid.rsplit("/", 1)[-1]
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if name.startswith(prefix)), len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: the rest keep their order


_REPORTS = {"gpu": GPU_REPORT, "simd": SIMD_REPORT, "build": BUILD_REPORT, "patch": PATCH_REPORT}


def pytest_sessionfinish(session):
    """Under pytest-xdist each worker hands its report lines to the controller, which prints the summary."""
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["turbometrics_reports"] = {k: list(v) for k, v in _REPORTS.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for k, lines in getattr(node, "workeroutput", {}).get("turbometrics_reports", {}).items():
        _REPORTS[k].extend(lines)


def pytest_terminal_summary(terminalreporter):
    for title, lines in (
        ("GPU kernels (no GPU needed)", GPU_REPORT),
        ("SIMD paths", SIMD_REPORT),
        ("other compilers, targets and builds", BUILD_REPORT),
        ("upstream test suites against turbometrics.patch (strict)", PATCH_REPORT),
    ):
        if lines:
            terminalreporter.section(title)
            for line in dict.fromkeys(lines):  # in order, once (several workers may note the same fact)
                terminalreporter.write_line(line)


def run_pytest(args: list[str], env: dict, report: list[str], label: str) -> subprocess.CompletedProcess:
    """Run pytest on ``args`` in a fresh process (tests/ as cwd), report its summary line under
    ``label``, and fail unless everything it collected passed."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=Path(__file__).resolve().parent,
    )
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "no output"
    report.append(f"{label}: {summary}")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    assert " passed" in summary and "skipped" not in summary
    return out


# Real test data lives beside the project root (../shared/data), or where TURBOMETRICS_DATA points.
DATA = Path(os.environ.get("TURBOMETRICS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def both(run, *args, libraries=None, kind="accelerated"):
    """(``run(*args)`` unpatched, the same under ``tm.patch(libraries)``, the patched calls of that ``kind``
    ("accelerated" or "fallback") it made)."""
    import turbometrics as tm
    from turbometrics.patch import calls

    def count():
        return sum(v for (_, k), v in calls().items() if k == kind)

    tm.unpatch()
    before = run(*args)
    tm.patch(libraries)
    try:
        start = count()
        after = run(*args)
        return before, after, count() - start
    finally:
        tm.unpatch()


# --- torchmetrics metrics, patched against unpatched -----------------------------------------------------


def run_metric(make, batches):
    """A metric updated with each (preds, target) batch: its states (lists concatenated) and compute()."""
    m = make()
    for preds, target in batches:
        m.update(preds, target)
    out = m.compute()
    states = {k: getattr(m, k) for k in m._defaults}
    return {k: _joined(v) if isinstance(v, list) else v for k, v in states.items()}, out


def _joined(v):
    import torch

    if not v:
        return torch.empty(0)
    return torch.stack(v) if v[0].dim() == 0 else torch.cat(v)  # ROUGE's 0-d, chrF's and TER's (1,)


def same_tensors(a, b):
    """Equal tensors (NaN equal to NaN, zeros of the same sign), dtypes, shapes and devices, in the same nesting of
    dicts, tuples and lists."""
    import torch

    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same_tensors(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same_tensors(x, y)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device, (a, b)
        if a.is_floating_point():  # NaN where the other has NaN, the same sign of zero
            nan = a.isnan()
            assert torch.equal(nan, b.isnan()) and torch.equal(a.signbit(), b.signbit()), (a, b)
            a, b = a[~nan], b[~nan]
        assert torch.equal(a, b), (a, b)


def read_lines(path: Path) -> list[str]:
    """One segment a line, exactly (no splitlines(): it would also split on U+2028 and friends)."""
    text = path.read_text(encoding="utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


@pytest.fixture(scope="session")
def wmt17():
    """{"ref": [...], "systems": {name: [...]}} from the WMT17 en-de test set."""
    d = DATA / "wmt17-en-de"
    if not d.is_dir():
        pytest.fail(f"test data not found at {d}; set TURBOMETRICS_DATA to the shared data folder")
    systems = {p.name.split(".")[0]: read_lines(p) for p in sorted(d.glob("*.hyp.de"))}
    return {"ref": read_lines(d / "newstest2017.ref.de"), "systems": systems}


@pytest.fixture(scope="session")
def summaries():
    """(predictions, references) from the English summaries data."""
    d = DATA / "summaries-en"
    if not d.is_dir():
        pytest.fail(f"test data not found at {d}; set TURBOMETRICS_DATA to the shared data folder")
    return read_lines(d / "predictions.txt"), read_lines(d / "references.txt")


@pytest.fixture
def nltk_punkt(monkeypatch):
    """rouge-score's split_summaries=True calls nltk.sent_tokenize: its English model from the shared data."""
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(DATA / "nltk_data")] + list(nltk.data.path))


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


MBRS = ("mbrs==0.1.8", "fastchrf==0.2.1")


def fetch_mbrs() -> str | None:
    """Make mbrs importable: installed already, or fetched from the package index without its dependencies
    into a folder of the system's temporary directory (once; a lock keeps xdist workers from racing), which
    is added to sys.path and returned (for subprocesses' PYTHONPATH). No extra can hold mbrs 0.1.8: its
    dependencies pin torchmetrics < 0.11, transformers < 5 and NumPy < 2 (pyproject.toml says so)."""
    import fcntl
    import importlib.util
    import tempfile

    if importlib.util.find_spec("mbrs") and importlib.util.find_spec("fastchrf"):
        return None
    tag = f"py{sys.version_info.major}{sys.version_info.minor}-{os.getuid()}"
    folder = Path(tempfile.gettempdir()) / f"turbometrics-tests-mbrs-0.1.8-{tag}"
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "mbrs").is_dir():
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(folder), *MBRS],
                check=True,
                capture_output=True,
                timeout=600,
            )
    sys.path.append(str(folder))
    return str(folder)
