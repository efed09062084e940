"""The patches on older releases of the libraries they cover (fetched from the package index when the test
runs): every family the patch takes gives what the unpatched release gives, bit for bit
(tests/releases_check.py). torchmetrics: ROUGE is left to torchmetrics before 1.6, which takes every key's
scores from the reference best by the first key; 1.0's ``_wil_update`` (later ``_word_info_lost_update``) is
left unpatched by name. sacrebleu: 2.0.0 (the first 2.x) and 2.4.3. scikit-learn: 1.4.2, the first release that
imports under NumPy 2 (it returns NumPy scalars where 1.9 returns floats)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # fetches releases from the package index

HERE = Path(__file__).resolve().parent


def check(tmp_path, distribution: str, version: str) -> dict:
    """releases_check.py's findings with ``distribution==version`` first on the path."""
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
    subprocess.run([*pip, f"{distribution}=={version}"], check=True, timeout=600)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, str(HERE / "releases_check.py"), distribution],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["version"] == version
    assert [k for k, v in r.items() if v == "DIFFERENT"] == []
    return r


@pytest.mark.parametrize("version", ["2.0.0", "2.4.3"])
def test_an_older_sacrebleu_gets_its_own_scores(tmp_path, version):
    r = check(tmp_path, "sacrebleu", version)
    assert [r[m] for m in ("BLEU", "CHRF", "TER")] == ["same"] * 3, r
    assert all(r[f"{m} accelerated"] > 0 for m in ("BLEU", "CHRF", "TER")), r


@pytest.mark.parametrize("version", ["1.0.3", "1.5.2", "1.6.0"])
def test_an_older_torchmetrics_gets_its_own_states(tmp_path, version):
    r = check(tmp_path, "torchmetrics", version)
    old_rouge = version < "1.6"
    assert r["rouge_score accelerated"] == (0 if old_rouge else 1)
    assert r["word_information_lost accelerated"] == (0 if version.startswith("1.0.") else 1)
    others = [k for k in r if k.endswith(" accelerated") and not k.startswith(("rouge", "word_information_lost"))]
    assert others and all(r[k] == 1 for k in others), r


def test_an_older_scikit_learn_gets_its_own_values_and_types(tmp_path):
    r = check(tmp_path, "scikit-learn", "1.4.2")
    assert r["top_k_accuracy_score"] == "same" and r["top_k_accuracy_score accelerated"] > 0, r
