"""Time and peak resident memory of one implementation, measured in a fresh process (Linux /proc).

``turbometrics bench`` does not use them: the benchmarks' memory and scale rows and tests/test_limits.py do.
They stay here, one copy that both reach, because ``measure_in_subprocess`` runs a case that it finds by
name in ``turbometrics._bench``.
"""

from __future__ import annotations

import json
import subprocess
import sys


def _rss_mib(field: str = "VmHWM") -> float:
    """Peak (VmHWM) or current (VmRSS) resident memory of this process, from /proc (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> None:
    """Make VmHWM restart from the current RSS, so setup's temporaries do not mask the peak.

    Freed heap memory is handed back to the OS first (glibc malloc_trim): pages
    left resident by the setup would otherwise be reused unseen.
    """
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc: the figure may then undercount
        pass
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def measure_in_subprocess(case_fn: str, args: tuple, impl: str) -> dict[str, float]:
    """Seconds and the peak resident memory (MiB) an implementation adds on top of its input.

    Runs in a fresh process so that nothing else's allocations count; the
    input is built first, then the peak is reset and the implementation runs once.
    """
    code = (
        f"import json, time, turbometrics._bench as b\n"
        f"c = b.{case_fn}(*{args!r}); d = c.setup(); f = c.impls[{impl!r}].fn\n"
        f"b._reset_peak_rss(); before = b._rss_mib('VmRSS'); t0 = time.perf_counter(); f(d)\n"
        f"t = time.perf_counter() - t0\n"
        f"print(json.dumps({{'seconds': t, 'extra_mib': b._rss_mib('VmHWM') - before}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def extra_memory_mib(case_fn: str, args: tuple, impl: str) -> float:
    """Peak resident memory an implementation adds on top of its input, measured in a fresh process."""
    return measure_in_subprocess(case_fn, args, impl)["extra_mib"]
