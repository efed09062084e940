"""numba.cuda kernels (cuda.py); the CPU kernels are C++ (_ext/).

Importing this package makes sure Numba has somewhere to write a cache: with a
read-only install and a read-only HOME, a kernel with cache=True would
otherwise fail to compile ("no locator available").
"""
import os
import tempfile


def _ensure_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    home_cache = os.path.join(os.path.expanduser("~"), ".cache")
    if os.access(here, os.W_OK) or os.access(home_cache, os.W_OK) or os.access(
            os.path.expanduser("~"), os.W_OK):
        return
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "turbometrics-numba")


_ensure_cache_dir()
