"""Types of the compiled dense kernels (_dense.pyx); keep in step with it (tools/lint.py runs stubtest).

Arrays are C-contiguous where the binding takes a ``[::1]`` memoryview. ``x`` is a (B, T, V) array whose
last axis is contiguous and whose dtype matches ``code`` (``_validate``'s dtype codes). ``nthreads`` is
the number of threads a kernel may use (``_validate.check_threads``).
"""

from typing import Any, Final, Literal, Protocol, TypeAlias, overload, type_check_only

import numpy as np
import numpy.typing as npt

# the SIMD paths (dense.hpp), best first: "avx512", "avx2", "baseline" on x86-64, "neon" alone on aarch64
PATHS: Final[tuple[str, ...]]  # compiled into this build
SUPPORTED: Final[tuple[str, ...]]  # the ones this CPU runs
THREADING: Final[Literal["OpenMP", "std::thread pool"]]  # how the kernels run in parallel (parallel.hpp)
MAX_THREADS: Final[int]  # the threads a kernel uses at most

# ``requested`` (None: $TURBOMETRICS_SIMD; "", "best", "auto": the best supported; "baseline": the lowest)
# as a path of PATHS; RuntimeError for a name not compiled in or not run by this CPU
def choose_path(requested: str | None = None) -> str: ...

# make ``choose_path(name)`` the path the kernels use; returns it
def set_path(name: str | None) -> str: ...

# the path in use, chosen from $TURBOMETRICS_SIMD on the first call (RuntimeError if that names none)
def active_path() -> str: ...

# (float64 (B*T,) token NLLs, the number of rows counted), a row whose target is ``ignore`` not counted
# (0); None when a counted target lies outside [0, V)
def nll_rows(
    x: npt.NDArray[Any], code: int, targets: npt.NDArray[np.int64], ignore: int | None, nthreads: int
) -> tuple[npt.NDArray[np.float64], int] | None: ...

# the exactly rounded sum (math.fsum's value); None for a non-finite value or an intermediate overflow
def fsum(v: npt.NDArray[np.float64]) -> float | None: ...

# fold each row of ``x`` into the running log-sum-exp state M, S (B*T each), in place; ``bad`` turns 1
# for a row with +inf or NaN
def fold_rows(
    x: npt.NDArray[Any],
    code: int,
    M: npt.NDArray[np.float64],
    S: npt.NDArray[np.float64],
    bad: npt.NDArray[np.uint8],
    nthreads: int,
) -> None: ...

# fold_rows of the slice x (columns [v0, v0 + width)) in float64 throughout, keeping each row's first argmax
# in ``arg`` (start it at -1)
def score_rows(
    x: npt.NDArray[Any],
    code: int,
    v0: int,
    M: npt.NDArray[np.float64],
    S: npt.NDArray[np.float64],
    bad: npt.NDArray[np.uint8],
    arg: npt.NDArray[np.int64],
    nthreads: int,
) -> None: ...

# the k best entries of each row: values (B*T, k) of x's dtype and their int64 indices
def topk_rows(
    x: npt.NDArray[Any], code: int, k: int, largest: bool, sorted: bool, nthreads: int
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]: ...

# int64 (B*T,): the rank of each row's target (-1 for a negative target)
def rank_rows(
    x: npt.NDArray[Any],
    code: int,
    targets: npt.NDArray[np.int64],
    before_ge: bool,
    after_ge: bool,
    nthreads: int,
) -> npt.NDArray[np.int64]: ...

# the integer dtypes of ``targets``' fused type
_TargetScalar: TypeAlias = np.int8 | np.int16 | np.int32 | np.int64 | np.uint8 | np.uint16 | np.uint32 | np.uint64

@type_check_only
class _TargetsFn(Protocol):
    # fills ``out`` (int64, -1 where not counted) and ``counted`` (uint8) from flat targets ``t``; None when
    # every counted target lies in [0, n_classes) (or n_classes < 0), else the counted (lowest, highest)
    def __call__(
        self,
        t: npt.NDArray[_TargetScalar],
        ignore: int | None,
        keep: npt.NDArray[np.uint8] | None,
        n_classes: int,
        out: npt.NDArray[np.int64],
        counted: npt.NDArray[np.uint8],
    ) -> tuple[int, int] | None: ...

@type_check_only
class _FusedTargetsFn(_TargetsFn, Protocol):
    # the specialisation for one dtype by its C name ("int8_t" .. "uint64_t"): no dispatch per call
    def __getitem__(self, signature: str, /) -> _TargetsFn: ...

targets: _FusedTargetsFn  # a Cython fused function

# bin the finite values of ``v`` into ``hi``/``lo`` (int64, in place, ``_exact``'s layout); returns the
# counts (NaN, +inf, -inf) left out
def exact_bins(
    v: npt.NDArray[np.float64], hi: npt.NDArray[np.int64], lo: npt.NDArray[np.int64], offset: int
) -> tuple[int, int, int]: ...

# the bins as doubles whose exact sum is their total; None if one overflows
def exact_parts(hi: npt.NDArray[np.int64], lo: npt.NDArray[np.int64], offset: int) -> list[float] | None: ...

# int32 (count, n): how often each of n items is drawn by the default bootstrap's resamples r0.. r0+count-1
def bootstrap_counts(
    entropy: npt.NDArray[np.uint32], r0: int, count: int, n: int, nthreads: int
) -> npt.NDArray[np.int32]: ...

# float32 (N, k): the row sums of sacrebleu's N bootstrap resamples of ``stats`` (n, k)
def sacrebleu_sums(
    entropy: npt.NDArray[np.uint32], N: int, stats: npt.NDArray[np.float32], nthreads: int
) -> npt.NDArray[np.float32]: ...

# (R, k): counts (R, n) @ cols.T for ``cols`` (k, n); int64 sums of int32/int64 columns, float64 of float64
# (another dtype: ValueError)
@overload
def resample_sums(
    cols: npt.NDArray[np.float64], counts: npt.NDArray[np.int32], nthreads: int
) -> npt.NDArray[np.float64]: ...
@overload
def resample_sums(
    cols: npt.NDArray[np.int32 | np.int64], counts: npt.NDArray[np.int32], nthreads: int
) -> npt.NDArray[np.int64]: ...
@overload
def resample_sums(
    cols: npt.NDArray[Any], counts: npt.NDArray[np.int32], nthreads: int
) -> npt.NDArray[np.float64] | npt.NDArray[np.int64]: ...

# fill ``out`` with NumPy's legacy randint(0, rng + 1) draws from the MT19937 state (``key`` (624,)
# advances in place, ``pos``); returns the new position
def legacy_randint(key: npt.NDArray[np.uint32], pos: int, rng: int, out: npt.NDArray[np.int64]) -> int: ...

# float64 (S, m): np.mean(rows[idx[s]], axis=0) for each row s of ``idx`` (S, k), bit for bit
def legacy_ordered_means(
    rows: npt.NDArray[np.float64], idx: npt.NDArray[np.int64], nthreads: int
) -> npt.NDArray[np.float64]: ...

# (float64 (S, m) means of rouge-score's bootstrap resamples of ``rows``, the new position); ``key``
# advances in place
def legacy_bootstrap_means(
    key: npt.NDArray[np.uint32], pos: int, rows: npt.NDArray[np.float64], S: int, per: int, nthreads: int
) -> tuple[npt.NDArray[np.float64], int]: ...

# (C * R, k): sums of rows over Python's random.Random(c0 + c).choices(range(n), k=n) draws, R resamples a
# chunk c < C; float64 rows in draw order as Python's sum (mode 0 plain, 1 Neumaier's, Python >= 3.12)
@overload
def python_choice_sums(
    c0: int, C: int, R: int, rows: npt.NDArray[np.int64], mode: int, nthreads: int
) -> npt.NDArray[np.int64]: ...
@overload
def python_choice_sums(
    c0: int, C: int, R: int, rows: npt.NDArray[np.float64], mode: int, nthreads: int
) -> npt.NDArray[np.float64]: ...
