"""pytest plugin for rouge-score 0.1.2's own tests (``-p rouge_score_testdata``).

rouge-score's sdist, and so the installed package, ships the tests but not their ``testdata/``. This
plugin writes stand-ins from the shared English summaries and points ``rouge_score.test_util`` at them;
the tests that compare with ROUGE-1.5.5's output on the original files are deselected
(``deselected.txt`` says which and why).
"""

import os
import tempfile
from pathlib import Path


def pytest_configure(config):
    from rouge_score import test_util

    src = Path(os.environ["TURBOMETRICS_DATA"]) / "summaries-en"
    preds = (src / "predictions.txt").read_text(encoding="utf-8").splitlines()
    refs = (src / "references.txt").read_text(encoding="utf-8").splitlines()
    d = Path(tempfile.mkdtemp(prefix="rouge_score_testdata_"))
    files = {
        "TARGETS_FILE": "\n".join(refs[:2]) + "\n",
        "PREDICTIONS_FILE": "\n".join(preds[:2]) + "\n",
        "LARGE_TARGETS_FILE": "\n".join(refs) + "\n",
        "LARGE_PREDICTIONS_FILE": "\n".join(preds) + "\n",
        "DELIMITED_FILE": ":".join(refs[:4]),
    }
    for name, text in files.items():
        path = d / (name.lower() + ".txt")
        path.write_text(text, encoding="utf-8")
        setattr(test_util, name, str(path))
    test_util.PYROUGE_DIR = str(d / "pyrouge_files")  # absent: the tests reading it are deselected
