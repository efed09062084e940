"""Host time of the GPU call path's own Python, without a GPU: stand-ins for what only a GPU has.

    python tools/host_path_standins.py

Times (best of 7 runs of 20,000 calls, microseconds a call):

- a direct launch (``_launch.launch`` after its kind was learned) of a row kernel's arguments: numba device
  arrays over stand-in memory (tests/test_launch.py's), a stand-in ``cuda.core.launch`` that does nothing, so
  the figure is our part of the launch only;
- ``_gpu._view`` finding the kept numba view of the logits (bf16, viewed as int16) and of the targets: CPU
  tensors stand in for CUDA ones, and numba's view is a stand-in (made only on a miss);
- ``_gpu_tally._tally_sum`` of a tally's 76 words.

On a GPU, ``tools/gpu_overhead.py`` times the real stages; these figures say how much of them is our Python,
and give an A/B of a later host-path change on any machine (run it at both commits; the figures before
e46cac7 in docs/gpu.md came from the same steps written out for the code of then).
"""

from __future__ import annotations

import contextlib
import math
import sys
import timeit
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def best(fn, n: int = 20000) -> float:
    return min(timeit.repeat(fn, number=n, repeat=7)) / n * 1e6


def launch() -> float:
    import cuda.core
    from numba.cuda.cudadrv import devices

    devices._runtime.ensure_context = lambda: contextlib.nullcontext()  # numba's slicing asks for a context
    import test_launch

    from turbometrics import _launch

    cuda.core.launch = lambda stream, config, kernel, *a: None
    _launch._stream = lambda s: s
    devices.get_context = lambda: types.SimpleNamespace(device=types.SimpleNamespace(id=0))
    _launch.DIRECT = True
    d, args = test_launch.Dispatcher(), test_launch.row_kernel_args()
    _launch.launch(d, 512, 256, 0, args, device=0)  # numba's (stand-in) launch, then learned
    return best(lambda: _launch.launch(d, 512, 256, 0, args, device=0))


def views() -> tuple[float, float]:
    import torch

    from turbometrics import _gpu

    _gpu._numba = lambda t, hold=True: object()
    x = torch.zeros((8, 512, 1000), dtype=torch.bfloat16)
    t = torch.zeros((8, 512), dtype=torch.int64)
    rows = (math.prod(x.shape[:-1]), x.shape[-1])
    return best(lambda: _gpu._view(x, rows, torch.int16)), best(lambda: _gpu._view(t, (t.numel(),)))


def tally_sum() -> float:
    from turbometrics import _gpu, _gpu_tally
    from turbometrics._kernels.cuda import tally

    _gpu._kernels = lambda: types.SimpleNamespace(tally=tally)
    words = np.zeros(tally.WORDS, np.int64)
    words[tally.COUNTED] = 4096
    words[tally.DIGITS + 31 : tally.DIGITS + 34] = (2**31, 12599702919, 13951616)
    return best(lambda: _gpu_tally._tally_sum(words))


if __name__ == "__main__":
    print(f"direct launch, our part (stand-in cuda.core): {launch():.2f} us")
    logits, targets = views()
    print(f"kept view of the logits (bf16 as int16): {logits:.2f} us; of the targets: {targets:.2f} us")
    print(f"tally sum of 76 words: {tally_sum():.2f} us")
