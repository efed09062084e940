"""The torchmetrics text patches on older torchmetrics releases (fetched from the package index when the test
runs): every family the patch takes gives the states of the unpatched release, bit for bit
(tests/torchmetrics_versions_check.py). ROUGE is left to torchmetrics before 1.6, which takes every key's
scores from the reference best by the first key; 1.0's ``_wil_update`` (later ``_word_info_lost_update``) is
left unpatched by name."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # fetches torchmetrics releases from the package index

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("version", ["1.0.3", "1.5.2", "1.6.0"])
def test_an_older_torchmetrics_gets_its_own_states(tmp_path, version):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            f"torchmetrics=={version}",
        ],
        check=True,
        timeout=600,
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, str(HERE / "torchmetrics_versions_check.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["version"] == version
    assert [k for k, v in r.items() if v == "DIFFERENT"] == []
    old_rouge = version < "1.6"
    assert r["rouge_score accelerated"] == (0 if old_rouge else 1)
    assert r["word_information_lost accelerated"] == (0 if version.startswith("1.0.") else 1)
    others = [k for k in r if k.endswith(" accelerated") and not k.startswith(("rouge", "word_information_lost"))]
    assert others and all(r[k] == 1 for k in others), r
