"""The one validation layer: coercion of array-likes, dtype/shape/range checks.

Every public function goes through here before any kernel runs; the kernels
trust what they are given (no bounds checks), so nothing unchecked may pass.
"""

from __future__ import annotations

import functools
import numbers
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._arrays import is_torch, to_host
from ._ext._text import str_scan

if TYPE_CHECKING:
    from ._ext._dense import _TargetsFn

# Kernel dtype codes (dense.hpp: tmk::Code).
F16, BF16, F32, F64 = 0, 1, 2, 3
_INT_CODES = {
    np.dtype(t): c
    for c, t in enumerate((np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64), start=4)
}
FLOAT_CODES = (F16, BF16, F32, F64)


@dataclass
class Array:
    """A validated input: ``data`` is a NumPy view of the caller's memory (bfloat16 as uint16 bits)."""

    data: np.ndarray
    code: int  # kernel dtype code
    dtype: Any  # the caller's element type, for results of the same type
    torch: bool = False  # came in as a torch tensor: hand array results back as tensors

    @property
    def is_float(self) -> bool:
        return self.code in FLOAT_CODES

    @property
    def n_classes(self) -> int:
        return self.data.shape[-1]


def to_numpy(x: Any, name: str) -> tuple[np.ndarray, bool]:
    """``x`` as an ndarray viewing its memory where possible, and whether it was a torch tensor.

    A torch bfloat16 tensor comes back as its uint16 bits with dtype kept in
    the name ``"bfloat16"`` via a tagged view (see ``as_array``).
    """
    if is_torch(x):  # each torch call costs ~0.4 us: small calls take the short way
        try:  # the common case, one call: a CPU tensor of a NumPy dtype, no grad (else TypeError/RuntimeError)
            a = x.numpy()
        except (TypeError, RuntimeError):
            a = None
        if a is not None and a.dtype.kind != "c":
            return a, True
        import torch

        t = x.detach() if x.requires_grad else x
        if not t.is_cpu:  # the CPU path was chosen (device="cpu", or no GPU kernel here)
            t = t.cpu()
        dt = t.dtype
        if dt == torch.bfloat16:
            return _BF16Bits(t.view(torch.int16).numpy().view(np.uint16)), True
        if dt.is_complex:
            raise TypeError(f"{name} must hold real numbers, got a tensor of {dt}")
        try:
            return t.numpy(), True
        except RuntimeError:  # a lazily negated view: materialise it
            return t.resolve_conj().resolve_neg().numpy(), True
    if isinstance(x, np.ndarray):
        return x, False
    if hasattr(x, "__cuda_array_interface__") or type(x).__module__.startswith(("numba.cuda", "numba_cuda")):
        return np.asarray(to_host(x)), False
    if isinstance(x, (list, tuple)):
        try:
            return np.asarray(x), False
        except ValueError as e:  # ragged nesting: numpy's message names no argument
            raise ValueError(f"{name}: {e}") from None
    if hasattr(x, "__array__") or isinstance(x, numbers.Number):
        return np.asarray(x), False
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x), False
    raise TypeError(f"{name} must be array-like (ndarray, tensor, list), got {type(x).__name__}")


class _BF16Bits(np.ndarray):
    """uint16 bits of a torch bfloat16 tensor (NumPy has no bfloat16 without ml_dtypes)."""

    def __new__(cls, bits: np.ndarray):
        return bits.view(cls)


def as_array(x: Any, name: str) -> Array:
    """Coerce ``x`` to a kernel-ready view without copying where possible.

    Accepts ndarrays (including ml_dtypes bfloat16), torch CPU tensors (any
    dtype, bfloat16 included), objects with ``__array__`` or ``__dlpack__``,
    and nested lists.
    """
    a, from_torch = to_numpy(x, name)
    if isinstance(a, _BF16Bits):
        import torch

        return Array(a.view(np.ndarray), BF16, torch.bfloat16, True)
    return _from_numpy(a, name, from_torch)


def _from_numpy(a: np.ndarray, name: str, torch_in: bool = False) -> Array:
    if not a.dtype.isnative:  # big-endian data: the kernels read native numbers
        a = a.astype(a.dtype.newbyteorder("="))
    dt = a.dtype
    if dt == np.float32:
        return Array(a, F32, dt, torch_in)
    if dt == np.float64:
        return Array(a, F64, dt, torch_in)
    if dt == np.float16:
        return Array(a.view(np.uint16), F16, dt, torch_in)
    if dt.kind == "V" and dt.name == "bfloat16":  # ml_dtypes (kind first: .name costs microseconds)
        return Array(a.view(np.uint16), BF16, dt, torch_in)
    if dt in _INT_CODES:
        return Array(a, _INT_CODES[dt], dt, torch_in)
    if dt == np.bool_ or dt.kind in "OUSVcmM" or dt.kind == "f":
        raise TypeError(f"{name} must hold float16/bfloat16/float32/float64 or integer numbers, got {dt}")
    raise TypeError(f"{name} has unsupported dtype {dt}")


def require_float(a: Array, name: str) -> None:
    if not a.is_float:
        raise TypeError(f"{name} must be a floating-point array (float16, bfloat16, float32, float64), got {a.dtype}")


def check_rows_shape(shape: tuple, name: str, min_ndim: int = 2, max_ndim: int = 3) -> tuple[tuple, int]:
    """A non-empty (N, V) or (B, T, V) shape (or the ``ndim`` range asked): (leading axes, V)."""
    shape = tuple(shape)
    if not min_ndim <= len(shape) <= max_ndim:
        shapes = {1: "(V,)", 2: "(N, V)", 3: "(B, T, V)"}
        want = " or ".join(shapes.get(d, f"{d}-D") for d in range(min_ndim, max_ndim + 1))
        raise ValueError(f"{name} must have shape {want}, got shape {shape}")
    if 0 in shape:
        raise ValueError(f"{name} is empty (shape {shape})")
    return shape[:-1], shape[-1]


def check_device_float(dtype: Any, name: str) -> np.dtype:
    """The dtype of a float array already on the GPU (CuPy/Numba: no bfloat16 there, that comes via torch)."""
    dt = np.dtype(dtype)
    if dt not in (np.float16, np.float32, np.float64):
        raise TypeError(f"{name} must hold float16, float32 or float64 on the GPU (bfloat16 via torch), got {dt}")
    return dt


def check_torch_float(t: Any, name: str) -> None:
    if t.is_complex() or not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")


def rows3d(a: np.ndarray, name: str, min_ndim: int = 2, max_ndim: int = 3) -> np.ndarray:
    """View ``a`` (N, V) or (B, T, V) as (B, T, V) with a contiguous last axis (copying only if not)."""
    check_rows_shape(a.shape, name, min_ndim, max_ndim)
    v = a.reshape((1,) * (3 - a.ndim) + a.shape) if a.ndim < 3 else a
    if v.strides[-1] != v.itemsize:  # e.g. a reversed or strided class axis
        v = np.ascontiguousarray(v)
    return v


def as_int_array(x: Any, name: str) -> np.ndarray:
    """An integer ndarray (any integer dtype); float or bool data is a TypeError."""
    a = to_numpy(x, name)[0]
    if isinstance(a, _BF16Bits):
        raise TypeError(f"{name} must hold integers, got dtype bfloat16")
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    if not a.dtype.isnative:  # big-endian data: compiled code reads native numbers
        a = a.astype(a.dtype.newbyteorder("="))
    return a


def as_int64(x: Any, name: str) -> np.ndarray:
    """``as_int_array`` as int64 (IDs: token IDs, sequence items); uint64 values past int64's range are a
    ValueError, not wrapped to negative ones (which would alias other IDs)."""
    a = as_int_array(x, name)
    if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{name} holds {int(a.max())}, past int64's range (IDs are read as int64)")
    return a.astype(np.int64, copy=False)


def as_mask(mask: Any, shape: tuple, name: str = "mask") -> np.ndarray:
    """A boolean mask of ``shape`` (True = counted); integer 0/1 masks are accepted."""
    m = to_numpy(mask, name)[0]
    if m.dtype != np.bool_:
        if isinstance(m, _BF16Bits) or m.dtype.kind not in "iu":
            raise TypeError(f"{name} must be boolean (True = counted), got dtype {m.dtype}")
        if m.size and (m.min() < 0 or m.max() > 1):
            raise ValueError(f"{name} must hold only 0 and 1 (or booleans)")
        m = m.astype(bool)
    if m.shape != shape:
        raise ValueError(f"{name} has shape {m.shape}, expected {shape}")
    return m


def as_targets(
    targets: Any,
    shape: tuple,
    n_classes: int | None,
    *,
    name: str = "targets",
    ignore_index: int | None = None,
    mask: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Targets of ``shape`` as int64 (flat, -1 where not counted) and the counted mask.

    Positions equal to ``ignore_index`` or where ``mask`` is False are not
    counted; every counted target must lie in [0, n_classes).
    """
    t = as_int_array(targets, name)
    if t.shape != tuple(shape):
        raise ValueError(f"{name} has shape {t.shape}, expected {tuple(shape)} to match the scores")
    ignore = None
    if ignore_index is not None:
        check_int(ignore_index, "ignore_index")
        info = _iinfo(t.dtype)
        if info.min <= ignore_index <= info.max:  # else no target can equal it
            ignore = ignore_index
    keep = None if mask is None else np.ascontiguousarray(as_mask(mask, t.shape)).reshape(-1).view(np.uint8)
    t64 = np.empty(t.size, dtype=np.int64)  # -1 where not counted: the kernels skip negative targets
    counted8 = np.empty(t.size, dtype=np.uint8)
    dt = t.dtype
    fn = _TARGETS.get(dt.num) or _TARGETS.setdefault(dt.num, _targets_of(dt))
    bad = fn(np.ascontiguousarray(t).reshape(-1), ignore, keep, -1 if n_classes is None else n_classes, t64, counted8)
    counted = counted8.view(bool).reshape(t.shape)
    if bad is not None:
        lo, hi = bad
        raise ValueError(f"{name} must lie in [0, {n_classes}) (or be ignored/masked); found {lo if lo < 0 else hi}")
    return t64, counted


_TARGETS: dict[int, _TargetsFn] = {}  # dtype.num -> _targets_of(dtype): a dict lookup on an int is the cheapest


def _targets_of(dtype: np.dtype) -> _TargetsFn:
    """``_dense.targets`` specialised for ``dtype`` (the fused function's own dispatch costs ~1 us a call)."""
    from ._ext import _dense

    return _dense.targets[f"{'u' if dtype.kind == 'u' else ''}int{8 * dtype.itemsize}_t"]


@functools.cache
def _iinfo(dtype: np.dtype) -> np.iinfo:
    return np.iinfo(dtype)


def check_int(v: Any, name: str, minimum: int | None = None) -> int:
    """``v`` as an int (bools refused); a ValueError below ``minimum`` when one is given."""
    if type(v) is not int:  # the common case skips the slower ABC check below
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral,)):
            raise TypeError(f"{name} must be an integer, got {v!r}")
        v = int(v)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def check_bool(v: Any, name: str) -> bool:
    """A flag that must be a bool (as torch's own): a string such as "no" is not read as True."""
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {v!r}")
    return bool(v)


def check_k(k: Any, n: int, name: str = "k") -> int:
    k = check_int(k, name)
    if not 1 <= k <= n:
        raise ValueError(f"{name} must be in [1, {n}] (the size of the scored axis), got {k}")
    return k


def check_choice(value: Any, name: str, options: tuple) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return value


def check_real(v: Any, name: str, *, positive: bool = False, open_unit: bool = False, exc: type = TypeError) -> float:
    """A real number (bools are not); ``positive``: > 0; ``open_unit``: in (0, 1).

    Out-of-range values are a ValueError; ``exc`` is raised for a non-number.
    """
    if type(v) not in (int, float) and (  # int and float first: the ABC check is slow
        isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real)
    ):
        what = "a positive number" if positive else "a number in (0, 1)" if open_unit else "a number"
        raise exc(f"{name} must be {what}, got {v!r}")
    if positive and not v > 0:
        raise ValueError(f"{name} must be a positive number, got {v!r}")
    if open_unit and not 0 < v < 1:
        raise ValueError(f"{name} must be a number in (0, 1), got {v!r}")
    return float(v)


def check_random_state(seed: Any, name: str = "random_state") -> np.random.RandomState:
    """scikit-learn's rule: None -> the global RandomState, int -> a new one, RandomState -> itself."""
    if seed is None or seed is np.random:
        return np.random.mtrand._rand
    if isinstance(seed, numbers.Integral) and not isinstance(seed, (bool, np.bool_)):
        return np.random.RandomState(int(seed))
    if isinstance(seed, np.random.RandomState):
        return seed
    raise ValueError(f"{name} must be None, an int or a numpy RandomState; got {seed!r}")


@functools.cache
def default_threads() -> int:
    """The cores this process may run on (its CPU affinity, as OpenMP counts them), looked up once:
    os.cpu_count() costs ~17 us a call here, as much as a small kernel."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


_INT_MAX = 2**31 - 1


def check_threads(num_threads: Any) -> int:
    """None -> every core this process may use; else a positive int."""
    if num_threads is None:
        return default_threads()
    n = check_int(num_threads, "num_threads")
    if not 1 <= n <= _INT_MAX:  # (the kernels take a C int)
        raise ValueError(f"num_threads must be in [1, {_INT_MAX}], got {n}")
    return n


def as_weights(w: Any, n: int, name: str = "sample_weight", counted: np.ndarray | None = None) -> np.ndarray:
    """Per-row weights of shape (n,), real numbers in their own dtype.

    With ``counted`` (a boolean mask of the rows), the counted rows' weights
    must be finite and non-negative.
    """
    a = to_numpy(w, name)[0]
    if isinstance(a, _BF16Bits):
        a = a.view(np.ndarray).astype(np.uint32) << 16
        a = a.view(np.float32)
    if a.dtype == np.bool_ or a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    if a.shape != (n,):
        raise ValueError(f"{name} has shape {a.shape}, expected ({n},)")
    if counted is not None:
        live = a[counted]
        if not np.all(np.isfinite(live)) or (live < 0).any():
            raise ValueError(f"{name} must be finite and non-negative")
    return a


def wrap(out: np.ndarray, like: Array):
    """Hand an array result back in the caller's type (a torch tensor for torch input)."""
    if like.torch:
        import torch

        if like.code == BF16 and out.dtype == np.uint16:
            return torch.from_numpy(out.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(out)
    return out


# ---------------------------------------------------------------- text


def check_str(s: Any, name: str) -> str:
    if not isinstance(s, str):
        raise TypeError(f"{name} must be a str, got {type(s).__name__}")
    return s


def _as_list(x: Any, name: str, what: str) -> list:
    """list(x), refusing a bare string (which would iterate as characters)."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be {what}, not a single {type(x).__name__}")
    try:
        return list(x)
    except TypeError:
        raise TypeError(f"{name} must be {what}, got {type(x).__name__}") from None


def _check_strs(items: list, name: str, allow_none: bool = False) -> bool:
    """Every item a str (or None); returns whether one is None."""
    bad, none = str_scan(items, allow_none)  # compiled: set(map(type, items)) is slow on corpora
    if bad >= 0:
        raise TypeError(
            f"{name}[{bad}] must be a str{' or None' if allow_none else ''}, got {type(items[bad]).__name__}"
        )
    return none


def as_texts(texts: Any, name: str) -> list[str]:
    """A list of str from any sequence of str; a bare string is an error, not a sequence of characters."""
    out = _as_list(texts, name, "a list of strings")
    _check_strs(out, name)
    return out


def as_reference_streams(references: Any, n: int, name: str = "references") -> list[list]:
    """sacrebleu's layout: a list of streams, each with one str (or None) per hypothesis.

    Every segment needs at least one reference; streams of the wrong length
    are an error (sacrebleu would silently truncate).
    """
    streams = _as_list(references, name, "a list of reference streams (lists of strings)")
    if not streams:
        raise ValueError(f"{name} is empty: give at least one reference stream")
    out, gaps = [], []
    for j, stream in enumerate(streams):
        if isinstance(stream, (str, bytes)):
            raise TypeError(
                f"{name}[{j}] must be a stream (list) of strings, not a str; for one reference per segment pass [refs]"
            )
        s = _as_list(stream, f"{name}[{j}]", "a list of strings")
        if len(s) != n:
            raise ValueError(f"{name}[{j}] has {len(s)} segments but there are {n} hypotheses")
        gaps.append(_check_strs(s, f"{name}[{j}]", allow_none=True))
        out.append(s)
    if all(gaps):  # only then can a segment have no reference at all
        missing = [i for i in range(n) if all(s[i] is None for s in out)]
        if missing:
            raise ValueError(f"segment {missing[0]} has no reference (every entry is None)")
    return out


def as_one_segment(hypothesis: Any, references: Any) -> tuple[list[str], list[list[str]]]:
    """A sentence-level call's hypothesis (str) and its references (a non-empty list of str), in the
    corpus layout: ([hypothesis], one stream per reference)."""
    hyp = check_str(hypothesis, "hypothesis")
    refs = as_texts(references, "references")
    if not refs:
        raise ValueError("references is empty: a segment needs at least one reference")
    return [hyp], [[r] for r in refs]


def as_multi_token_references(references: Any, n: int, name: str = "references") -> tuple[list, np.ndarray]:
    """One tokenized reference (a list of str) or several (a list of them) per prediction, flattened."""
    items = _as_list(references, name, "a list (one entry per prediction)")
    if len(items) != n:
        raise ValueError(f"{name} has {len(items)} entries but there are {n} predictions")
    flat: list = []
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i, item in enumerate(items):
        toks = _as_list(item, f"{name}[{i}]", "a list of tokens or a list of token lists")
        if toks and not isinstance(toks[0], str):  # several references
            flat.extend(as_texts(r, f"{name}[{i}][{j}]") for j, r in enumerate(toks))
        else:  # one reference (an empty list is one empty reference)
            flat.append(as_texts(toks, f"{name}[{i}]"))
        offsets[i + 1] = len(flat)
    return flat, offsets


def as_multi_references(references: Any, n: int, name: str = "references") -> tuple[list[str], np.ndarray]:
    """One reference (str) or several (a list of str) per prediction, flattened with offsets."""
    items = _as_list(references, name, "a list (one entry per prediction)")
    if len(items) != n:
        raise ValueError(f"{name} has {len(items)} entries but there are {n} predictions")
    flat: list[str] = []
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i, item in enumerate(items):
        if isinstance(item, str):
            flat.append(item)
        else:
            refs = as_texts(item, f"{name}[{i}]")
            if not refs:
                raise ValueError(f"{name}[{i}] is empty: every prediction needs a reference")
            flat.extend(refs)
        offsets[i + 1] = len(flat)
    return flat, offsets
