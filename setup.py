"""Build the Cython/C++ extensions; all metadata lives in pyproject.toml."""

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# -ffp-contract=off: no fused multiply-adds behind our back, so every SIMD path
# (and every compiler) rounds the same operations and gives the same bits.
# TURBOMETRICS_OPT replaces -O3 (the sanitizer build uses -O1, as OSS-Fuzz does: the same checks, compiled
# 2.5x faster); user CXXFLAGS cannot, since setuptools puts them before these. Not on Windows (CLANG_CL_OPT).
OPT = [*shlex.split(os.environ.get("TURBOMETRICS_OPT") or "-O3")]
OPT += ["-g0", "-std=c++17", "-ffp-contract=off", "-Wno-psabi"]
# Text kernels: loops at 32-byte boundaries, so that an unrelated change cannot move a hot loop (TER's DP)
# off them and slow it down (docs/performance.md, "Measurements behind the kernels").
TEXT_OPT = ["-falign-loops=32"]
# Windows: clang-cl, LLVM's driver for MSVC's toolchain (MSVC's own cl lacks the GCC/clang vector
# extensions the kernels are written in); the same semantics through /clang:, no OpenMP (the kernels run
# on the std::thread pool, as on macOS), MSVC's linker. tests/test_portability.py cross-compiles the
# kernels for x86-64 Windows.
CLANG_CL_OPT = ["/O2", "/std:c++17", "/EHsc", "/clang:-ffp-contract=off", "/clang:-fno-strict-aliasing"]


class BuildExt(build_ext):
    """build_ext that swaps MSVC's cl for clang-cl (Windows); elsewhere setuptools' own compiler."""

    def build_extensions(self):
        if self.compiler.compiler_type == "msvc":
            if not self.compiler.initialized:
                self.compiler.initialize()
            # Visual Studio's own clang-cl first (it matches its C++ library), then one on PATH
            clang_cl = (
                os.environ.get("TURBOMETRICS_CLANG_CL")
                or shutil.which("clang-cl", path=getattr(self.compiler, "_paths", None))
                or shutil.which("clang-cl")
            )
            if not clang_cl:
                raise RuntimeError(
                    "turbometrics builds on Windows with clang-cl (Visual Studio's 'C++ Clang tools' "
                    "component, or LLVM): put it on PATH or name it in TURBOMETRICS_CLANG_CL"
                )
            self.compiler.cc = clang_cl
            self.compiler.compile_options = [o for o in self.compiler.compile_options if o != "/GL"]  # MSVC's LTCG
            # MSVC's and the SDK's headers as system headers (/imsvc), searched after clang's own: as /I they
            # would come first, and MSVC's <emmintrin.h> declares the intrinsics as functions clang lacks.
            system = [f"/imsvc{d}" for d in self.compiler.include_dirs]
            self.compiler.include_dirs = []
            for ext in self.extensions:
                ext.extra_compile_args, ext.extra_link_args = CLANG_CL_OPT + system, []
        super().build_extensions()


def _has_openmp() -> bool:
    """True when the C++ compiler accepts -fopenmp (gcc yes; Apple clang without libomp no; Windows no)."""
    if os.name == "nt":
        return False
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
        depends=[
            "src/turbometrics/_ext/dense.hpp",
            "src/turbometrics/_ext/cpu.hpp",
            "src/turbometrics/_ext/dense_kernels.hpp",
            "src/turbometrics/_ext/resample.hpp",
            "src/turbometrics/_ext/pyrandom.hpp",
            "src/turbometrics/_ext/parallel.hpp",
            "src/turbometrics/_ext/pyglue.hpp",
            "src/turbometrics/_ext/_glue.pxd",
        ],
        extra_compile_args=OPT + omp,
        extra_link_args=omp,
    ),
    Extension(
        "turbometrics._ext._text",
        ["src/turbometrics/_ext/_text.pyx"],
        language="c++",
        include_dirs=["src/turbometrics/_ext"],
        depends=[
            "src/turbometrics/_ext/text.hpp",
            "src/turbometrics/_ext/text_common.hpp",
            "src/turbometrics/_ext/tokenizers.hpp",
            "src/turbometrics/_ext/ngrams.hpp",
            "src/turbometrics/_ext/bleu.hpp",
            "src/turbometrics/_ext/chrf.hpp",
            "src/turbometrics/_ext/cpu.hpp",
            "src/turbometrics/_ext/unicode_tables.hpp",
            "src/turbometrics/_ext/rouge.hpp",
            "src/turbometrics/_ext/porter.hpp",
            "src/turbometrics/_ext/ter.hpp",
            "src/turbometrics/_ext/bitparallel.hpp",
            "src/turbometrics/_ext/edit_distance.hpp",
            "src/turbometrics/_ext/punkt.hpp",
            "src/turbometrics/_ext/pairwise.hpp",
            "src/turbometrics/_ext/parallel.hpp",
            "src/turbometrics/_ext/pyglue.hpp",
            "src/turbometrics/_ext/_glue.pxd",
        ],
        extra_compile_args=OPT + TEXT_OPT + omp,
        extra_link_args=omp,
    ),
]

setup(
    cmdclass={"build_ext": BuildExt},
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
    ext_modules=cythonize(
        extensions,
        include_path=["src"],  # where `cimport turbometrics._ext._glue` finds _glue.pxd
        compiler_directives=dict(
            language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
        ),
    ),
)
