"""Conformance of ``tm.patch()``, the way the anchors prove theirs: the libraries' own test suites run
against the patched libraries, in strict mode (a call the fast path cannot take raises, unless the
original raises for that input too).

The suites come from the package index when the tests run, never from this repository: sacrebleu
2.6.0's sdist (its ``test/``), rouge-score 0.1.2's tests as installed from its sdist (with stand-ins
for the ``testdata/`` it does not ship: ``upstream/rouge_score_testdata.py``), scikit-learn's installed
``sklearn/metrics/tests/test_ranking.py``, lm-eval 0.4.13's sdist ``tests/test_evaluator.py`` (its ``HFLM``
log-likelihood tests: with a stand-in model and datasets for what they download,
``upstream/lm_eval_testdata.py``). The few tests left out are listed, each with its reason, in
``upstream/deselected.txt``. The summary prints passed / deselected per suite and how many patched calls
each suite made.
"""

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import DATA, PATCH_REPORT

pytestmark = pytest.mark.slow  # fetches the upstream suites from PyPI

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "upstream"


def deselected(suite: str) -> list[str]:
    out = []
    for line in (UPSTREAM / "deselected.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, node = line.split(None, 1)
            if name == suite:
                out.append(node.strip())
    return out


def run_suite(suite: str, args: list[str], cwd: Path, *, plugins: tuple = ()) -> None:
    env = {
        **os.environ,
        "TURBOMETRICS_PATCH_STRICT": "1",
        "TURBOMETRICS_DATA": str(DATA),
        "PYTHONPATH": os.pathsep.join([str(UPSTREAM), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",  # nothing is downloaded: a suite that tries fails here as it would in CI
        "HF_DATASETS_OFFLINE": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "turbometrics.patch",
        "--report",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        *[f"-p{p}" for p in plugins],
        *[f"--deselect={d}" for d in deselected(suite)],
        *args,
    ]
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)
    lines = [ln for ln in out.stdout.strip().splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    summary = lines[-1].strip("= ") if lines else "no summary"
    calls = re.findall(r"turbometrics\.patch: (.+): (\d+) accelerated, (\d+) fallback", out.stderr)
    accelerated = sum(int(a) for _, a, _ in calls)
    errors = sum(int(f) for _, _, f in calls)
    PATCH_REPORT.append(
        f"{suite}: {summary}; {accelerated} patched calls accelerated, {errors} fell back "
        f"(inputs the original rejects too)"
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    assert " passed" in summary and "failed" not in summary, summary
    assert accelerated > 0, out.stderr[-2000:]


def pip_download(spec: str, dest: Path) -> Path:
    """The sdist of ``spec`` from the package index (pip's own configuration), unpacked under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(dest), spec],
        check=True,
        capture_output=True,
        timeout=600,
    )
    archive = next(dest.glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return next(p for p in dest.iterdir() if p.is_dir())


def test_sacrebleu_suite(tmp_path):
    root = pip_download("sacrebleu==2.6.0", tmp_path)
    run_suite("sacrebleu", ["test"], root)


def test_rouge_score_suite(tmp_path):
    import rouge_score

    installed = Path(rouge_score.__file__).parent
    tests = [p.name for p in installed.glob("*_test.py")]
    assert "rouge_scorer_test.py" in tests and "scoring_test.py" in tests
    for name in tests:
        shutil.copy(installed / name, tmp_path / name)
    run_suite("rouge-score", sorted(tests), tmp_path, plugins=("rouge_score_testdata",))


def test_sklearn_ranking_suite(tmp_path):
    run_suite("scikit-learn", ["--pyargs", "sklearn.metrics.tests.test_ranking"], tmp_path)


def test_lm_eval_hflm_suite(tmp_path):
    pytest.importorskip("accelerate")  # lm-eval's HFLM needs it (lm-eval[hf])
    root = pip_download("lm-eval==0.4.13", tmp_path)
    run_suite("lm-eval", ["tests/test_evaluator.py"], root, plugins=("lm_eval_testdata",))
