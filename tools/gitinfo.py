"""The commit a measurement ran at, for the GPU tools' reports (run from the repository's root).

The device machine's copy of the tree may have no git history: there, ``TURBOMETRICS_COMMIT`` (set in the
call's command from this machine's ``git rev-parse --short HEAD``) names it.
"""

import os
import subprocess


def commit() -> str:
    """The short hash of HEAD, with a mark when tracked files differ from it; else ``TURBOMETRICS_COMMIT``."""
    given = os.environ.get("TURBOMETRICS_COMMIT")
    if given:
        return given
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10
        )
        return head.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "") or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
