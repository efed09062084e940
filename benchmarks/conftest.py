"""Benchmarks are not tests: run them with `pytest benchmarks --benchmark-only` (see report.py).

TURBOMETRICS_BENCH=quick selects the small inputs of `turbometrics bench --quick`;
the default is the issue-sized inputs.
"""

import os
from pathlib import Path

import pytest

QUICK = os.environ.get("TURBOMETRICS_BENCH", "full") == "quick"
# The shared test data (WMT17) beside the project root, or where TURBOMETRICS_DATA points; optional here.
_data = Path(os.environ.get("TURBOMETRICS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
DATA_DIR = str(_data) if (_data / "wmt17-en-de").is_dir() else None


def pytest_collection_modifyitems(config, items):
    # Keep the implementations of one case together so its data is built once.
    items.sort(key=lambda it: it.callspec.params.get("case_idx", -1) if hasattr(it, "callspec") else -1)


@pytest.fixture(scope="session")
def quick():
    return QUICK
