"""Build the Cython/C++ extensions; all metadata lives in pyproject.toml."""
import os
import subprocess
import sys
import sysconfig
import tempfile

from Cython.Build import cythonize
from setuptools import Extension, setup

# -ffp-contract=off: no fused multiply-adds behind our back, so every SIMD path
# (and every compiler) rounds the same operations and gives the same bits.
OPT = ["-O3", "-g0", "-std=c++17", "-ffp-contract=off", "-Wno-psabi"]


def _has_openmp() -> bool:
    """True when the C++ compiler accepts -fopenmp (gcc yes; Apple clang without libomp no)."""
    cxx = (sysconfig.get_config_var("CXX") or "c++").split()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.cpp")
        with open(src, "w") as f:
            f.write("#include <omp.h>\nint main(){return omp_get_max_threads() < 1;}\n")
        try:
            cmd = cxx + ["-fopenmp", src, "-o", os.path.join(d, "t")]
            return subprocess.run(cmd, capture_output=True).returncode == 0
        except OSError:
            return False


# TURBOMETRICS_OPENMP=0 builds without OpenMP even where the compiler has it (as on a Mac).
want_omp = os.environ.get("TURBOMETRICS_OPENMP", "1").strip().lower() not in ("0", "false", "no", "off")
omp = ["-fopenmp"] if want_omp and _has_openmp() else []
if not omp:
    print("turbometrics: building without OpenMP; kernels run on a std::thread pool", file=sys.stderr)

extensions = [
    Extension(
        "turbometrics._ext._dense",
        ["src/turbometrics/_ext/_dense.pyx"],
        language="c++",
        include_dirs=["src/turbometrics/_ext"],
        depends=["src/turbometrics/_ext/dense.hpp", "src/turbometrics/_ext/dense_kernels.hpp",
                 "src/turbometrics/_ext/resample.hpp", "src/turbometrics/_ext/parallel.hpp", "src/turbometrics/_ext/pyglue.hpp"],
        extra_compile_args=OPT + omp,
        extra_link_args=omp,
    ),
    Extension(
        "turbometrics._ext._text",
        ["src/turbometrics/_ext/_text.pyx"],
        language="c++",
        include_dirs=["src/turbometrics/_ext"],
        depends=["src/turbometrics/_ext/text.hpp", "src/turbometrics/_ext/unicode_tables.hpp",
                 "src/turbometrics/_ext/rouge.hpp", "src/turbometrics/_ext/porter.hpp",
                 "src/turbometrics/_ext/ter.hpp", "src/turbometrics/_ext/punkt.hpp", "src/turbometrics/_ext/pairwise.hpp",
                 "src/turbometrics/_ext/parallel.hpp", "src/turbometrics/_ext/pyglue.hpp"],
        extra_compile_args=OPT + omp,
        extra_link_args=omp,
    ),
]

setup(
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
    ext_modules=cythonize(
        extensions,
        compiler_directives=dict(language_level=3, boundscheck=False, wraparound=False,
                                 cdivision=True, initializedcheck=False),
    ),
)
