"""turbometrics as a user without a compiler gets it: the sdist is built, the wheel is built from the sdist
(each in a fresh build environment), repaired by auditwheel to a manylinux tag, and installed into a fresh
virtual environment from files alone (no index, binaries only, CC and CXX pointing at a failing command);
then one call of every metric family runs from that install, outside the source tree."""

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.build  # builds the sdist and the wheel

ROOT = Path(__file__).resolve().parents[1]

SMOKE = ROOT / "tools" / "wheel_smoke.py"


def _run(cmd, **kw):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=900, **kw)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def test_wheel_installs_and_runs_without_a_compiler(tmp_path):
    dist, house = tmp_path / "dist", tmp_path / "wheelhouse"
    _run([sys.executable, "-m", "build", "--outdir", dist, ROOT])  # sdist, then the wheel from the sdist
    (_sdist,), (wheel,) = dist.glob("*.tar.gz"), dist.glob("*.whl")
    _run([sys.executable, "-m", "auditwheel", "repair", wheel, "-w", house])
    (repaired,) = house.glob("turbometrics-*.whl")
    assert "manylinux" in repaired.name, repaired.name
    # the types ship with it: PEP 561's marker and the compiled modules' stubs
    names = set(zipfile.ZipFile(repaired).namelist())
    assert {f"turbometrics/{f}" for f in ("py.typed", "_ext/_dense.pyi", "_ext/_text.pyi")} <= names, sorted(names)
    # the runtime dependencies as files, so that the install below needs no index
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--only-binary",
            ":all:",
            "-d",
            house,
            "numpy>=1.24",
            "tqdm>=4.60",
        ]
    )  # numba is the cuda extra's: the wheel runs without it
    venv.create(tmp_path / "venv", with_pip=True)
    py = tmp_path / "venv" / "bin" / "python"
    fail = tmp_path / "no-compiler"
    fail.write_text("#!/bin/sh\necho 'no compiler here' >&2\nexit 1\n")
    fail.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env.update(CC=str(fail), CXX=str(fail), LDSHARED=str(fail))
    _run(
        [
            py,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--only-binary",
            ":all:",
            "--find-links",
            house,
            "turbometrics",
        ],
        env=env,
        cwd=tmp_path,
    )
    out = _run([py, SMOKE], env=env, cwd=tmp_path)
    assert "smoke ok" in out.stdout and "SIMD paths" in out.stdout
