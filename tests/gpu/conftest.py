import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture(params=["warp per row", "block per row"])
def row_kernel(request, monkeypatch):
    """Run a test with each layout of the row kernels (nll, ranks)."""
    from turbometrics import _gpu

    monkeypatch.setattr(_gpu, "WARP_ROW_MAX_V", 10**9 if request.param == "warp per row" else 0)
    return request.param
