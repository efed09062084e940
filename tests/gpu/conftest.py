import os
import sys
import threading

import numpy as np
import pytest


def _lock_shared_allocations() -> None:
    """numba-cuda's simulator (0.30.4) makes a block's shared array when the first of its threads reaches the
    declaration: it looks the array up by the declaring line and stores a new one if there is none, without a
    lock. Two threads that interleave there get two arrays, and the updates to the loser's are lost (seen: a
    tally's digits, a perplexity off by 20%). The same lookup under a lock, keyed the same way (the declaring
    file and line), without formatting the whole stack at each declaration."""
    from numba.cuda import types
    from numba.cuda.np import numpy_support
    from numba.cuda.simulator import kernelapi

    lock = threading.Lock()
    dynamic_or_aligned = kernelapi.FakeCUDAShared.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # one buffer for all (dynamic), or an error: the simulator's own
            return dynamic_or_aligned(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):  # numba's types; NumPy's go to np.empty as they are
            dtype = numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            got = self._allocations.get(key)
            if got is None:
                got = self._allocations[key] = np.empty(shape, dtype)
        return got

    kernelapi.FakeCUDAShared.array = array


if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # as tests/conftest.py decides to collect tests/gpu
    _lock_shared_allocations()
    # The simulator's block manager polls its threads in a loop that never waits, so each time it gets the GIL it
    # keeps it for the whole switch interval (5 ms by default) while the simulated threads wait: cProfile gave 55 s
    # of a 67 s test to that loop. With 0.1 ms it hands the GIL back sooner: that test took 15-17 s, and the
    # suite 242 s in CI against 566 s (AMD EPYC Zen 4, 2 cores).
    sys.setswitchinterval(1e-4)


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
