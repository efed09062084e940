"""Build helpers for the tests and benchmarks that need another build of the package (no OpenMP, a
sanitizer build): they copy a checkout's source and compile its extensions there. Never used at run time.

Tests import it as ``_build`` (pytest puts tests/ on ``sys.path``); benchmarks/report.py adds tests/ itself.
"""

from __future__ import annotations

import os
import subprocess
import sys


def build_copy(root: str, dest: str, **env: str) -> subprocess.CompletedProcess:
    """Copy the source tree at ``root`` (a checkout) to ``dest`` and build its extensions there in place
    with ``env`` added to the environment (TURBOMETRICS_OPENMP=0; CXXFLAGS/LDFLAGS for a sanitizer build,
    which setup.py's own flags follow); ``dest/src`` is then importable. Needs Cython."""
    import shutil

    os.makedirs(dest, exist_ok=True)
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy(os.path.join(root, name), dest)
    shutil.copytree(
        os.path.join(root, "src"),
        os.path.join(dest, "src"),
        ignore=shutil.ignore_patterns("*.so", "*.cpp", "__pycache__"),
    )
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=dest,
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
        timeout=1200,
    )


def build_without_openmp(root: str, dest: str) -> subprocess.CompletedProcess:
    """``build_copy`` with TURBOMETRICS_OPENMP=0 (the std::thread pool, as on a Mac): the no-OpenMP
    benchmark run and its test."""
    return build_copy(root, dest, TURBOMETRICS_OPENMP="0")
