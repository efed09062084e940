"""Benchmarks are not tests: run them with `pytest benchmarks --benchmark-only` (see report.py).

TURBOMETRICS_BENCH=quick selects the small inputs of `turbometrics bench --quick`;
the default is the issue-sized inputs.
"""
import os

import pytest

QUICK = os.environ.get("TURBOMETRICS_BENCH", "full") == "quick"


def pytest_collection_modifyitems(config, items):
    # Keep the implementations of one case together so its data is built once.
    items.sort(key=lambda it: it.callspec.params.get("case_idx", -1) if hasattr(it, "callspec") else -1)


@pytest.fixture(scope="session")
def quick():
    return QUICK
