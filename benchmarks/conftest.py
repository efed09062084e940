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
# TURBOMETRICS_BENCH_ONLY=simd,threads: only the array cases of those groups (report.py's runs per SIMD path
# and in the build without OpenMP); every other run (memory, first calls, fresh processes, sync) is deselected.
ONLY = {g for g in os.environ.get("TURBOMETRICS_BENCH_ONLY", "").split(",") if g}


def pytest_collection_modifyitems(config, items):
    if ONLY:
        left_out = [it for it in items if it.originalname != "test_array_metric"]
        config.hook.pytest_deselected(items=left_out)
        items[:] = [it for it in items if it.originalname == "test_array_metric"]
    # Keep the implementations of one case together so its data is built once.
    items.sort(key=lambda it: it.callspec.params.get("case_idx", -1) if hasattr(it, "callspec") else -1)


@pytest.fixture(scope="session")
def quick():
    return QUICK
