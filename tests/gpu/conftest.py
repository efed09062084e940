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


@pytest.fixture
def in_forked_child():
    """``run(body)``: ``body()`` in a forked child (CUDA after fork())."""
    return _in_forked_child


def _in_forked_child(body):
    """Run ``body()`` in a forked child (ended by an alarm if it hangs) and return the text it returned, or the
    message of the RuntimeError it raised."""
    import os
    import signal

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.alarm(120)  # a hang ends the child, and the parent's read with it
        msg = "no error"
        try:
            try:
                msg = body() or msg
            except RuntimeError as e:
                msg = str(e)
        finally:
            os.write(w, msg.encode())
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        got = f.read().decode()
    os.waitpid(pid, 0)
    return got
