"""Drop-in acceleration: existing code that calls sacrebleu, rouge-score, scikit-learn or torchmetrics
runs on turbometrics' kernels, unchanged.

>>> import turbometrics as tm
>>> tm.patch()            # doctest: +SKIP
>>> import sacrebleu      # doctest: +SKIP
>>> sacrebleu.corpus_bleu(hyps, [refs])   # same BLEUScore, bit for bit, many times faster  # doctest: +SKIP

or, without touching the code: ``python -m turbometrics.patch script.py [args]`` /
``python -m turbometrics.patch -m sacrebleu [args]``.

What is rebound (the call sites inside the libraries, so names imported with
``from ... import`` before the patch and objects made before it are covered):

- sacrebleu 2.x: ``BLEU``, ``CHRF`` and ``TER``'s per-segment statistics (``_extract_corpus_statistics``)
  and reference caching (``_cache_references``). Every entry point goes through them:
  ``corpus_score`` (also with ``n_bootstrap``), ``sentence_score``, the cached ``references=`` form,
  the compat functions (``corpus_bleu``, ``sentence_chrf``, ...), ``significance.PairedTest`` and the
  ``sacrebleu`` command. The scores themselves are still computed by sacrebleu's own code from the
  statistics, so every field of every score object is sacrebleu's.
- rouge-score 0.1.2: ``rouge_scorer.RougeScorer.score`` / ``score_multi`` and
  ``scoring.BootstrapAggregator``'s resampling (which draws from NumPy's global RNG exactly as before).
- scikit-learn >= 1.3: ``sklearn.metrics.top_k_accuracy_score`` (its code object is swapped, so every
  reference to the function, and scorers made from it, are covered; scikit-learn's own parameter
  validation still runs first).
- torchmetrics >= 1.0: ``torchmetrics.text.Perplexity`` (``update``/``compute``, so ``forward`` too)
  and ``torchmetrics.functional.text.perplexity``. These return the exactly rounded perplexity in the
  dtype and on the device torchmetrics returns, where torchmetrics itself computes softmax, log and
  sum in the logits' dtype (float32 results about 1e-6 off, bfloat16 a few percent): the one place
  where the patched number differs from the original, on purpose.

Out of reach: subclasses that override the methods above (they run their own code; a subclass that
only inherits is accelerated), and a library imported under another name from another path.

A call the fast path does not cover (an option, tokenizer or input type it does not know) runs the
original and logs ``fallback: <reason>`` on the ``turbometrics.patch`` logger (INFO; ``verbose=True``
prints it, and ``accelerated`` for every accelerated call). With ``TURBOMETRICS_PATCH_STRICT=1`` such a
call raises ``PatchFallbackError`` naming the reason instead, unless the original itself raises for
that input (then its own error is raised: invalid input stays the library's business).
"""

from __future__ import annotations

import collections
import functools
import importlib
import importlib.abc
import importlib.util
import logging
import os
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .._locks import ForkSafeLock

__all__ = ["patch", "unpatch", "is_patched", "calls", "PatchFallbackError", "LIBRARIES"]

log = logging.getLogger("turbometrics.patch")

LIBRARIES = ("sacrebleu", "rouge_score", "sklearn", "torchmetrics")
# distribution name, the versions the patch was written and tested for
_DISTRIBUTIONS = {
    "sacrebleu": "sacrebleu",
    "rouge_score": "rouge-score",
    "sklearn": "scikit-learn",
    "torchmetrics": "torchmetrics",
}


class PatchFallbackError(RuntimeError):
    """Raised under ``TURBOMETRICS_PATCH_STRICT=1`` when a patched call would run the original."""


class Fallback(Exception):
    """Raised inside a fast path: run the original instead (the message says why)."""


# --- bookkeeping: every change made, so that unpatch() restores each original object -----------------

_lock = ForkSafeLock(reentrant=True)
_active: set[str] = set()  # libraries asked for
_applied: dict[str, list] = {}  # module name -> undo actions (callables), for modules already patched
_verbose_handler: logging.Handler | None = None
_MISSING = object()


def _set_attr(undo: list, owner: Any, name: str, value: Any) -> None:
    """``owner.name = value``, remembering whether ``owner`` had its own attribute (class methods are
    set on the class; deleting ours lets an inherited one show through again)."""
    old = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)

    def restore() -> None:
        if old is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, old)

    setattr(owner, name, value)
    undo.append(restore)


def original_copy(func: types.FunctionType) -> types.FunctionType:
    """A new function object running ``func``'s current code (kept to call the original after its
    code object is swapped)."""
    f = types.FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
    f.__kwdefaults__ = func.__kwdefaults__
    f.__dict__.update(func.__dict__)
    f.__qualname__ = func.__qualname__
    return f


_IMPLS: dict[int, Callable] = {}  # id(patched function) -> its implementation now
_TRAMPOLINES: dict[int, types.CodeType] = {}  # id(patched function) -> its trampoline (made once)


def _swap_code(undo: list, func: types.FunctionType, impl: Callable) -> None:
    """Make every call of ``func`` (by any reference to the object) call ``impl`` with the same arguments.

    ``func.__code__`` is replaced by a trampoline with the same parameters (names, kinds; the defaults
    stay on the function object), so ``inspect.signature(func)`` is unchanged. Only for functions
    without free variables (module-level functions and methods).
    """
    key = id(func)
    old = func.__code__
    if key not in _TRAMPOLINES:
        _TRAMPOLINES[key] = _trampoline(func, key)
    _IMPLS[key] = impl
    func.__code__ = _TRAMPOLINES[key]

    def restore() -> None:
        func.__code__ = old
        _IMPLS.pop(key, None)

    undo.append(restore)


def _trampoline(func: types.FunctionType, key: int) -> types.CodeType:
    if func.__code__.co_freevars:
        raise TypeError(f"{func.__qualname__} has free variables; its code cannot be swapped")
    import inspect  # here, not at import: `import turbometrics` stays light

    sig = inspect.signature(original_copy(func), follow_wrapped=False)
    params, args = [], []
    star = False
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            params.append(p.name)
            args.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            params.append("*" + p.name)
            args.append("*" + p.name)
            star = True
        elif p.kind is p.KEYWORD_ONLY:
            if not star:
                params.append("*")
                star = True
            params.append(p.name)
            args.append(f"{p.name}={p.name}")
        else:
            params.append("**" + p.name)
            args.append("**" + p.name)
    if any(p.kind is p.POSITIONAL_ONLY for p in sig.parameters.values()):
        last = max(i for i, p in enumerate(sig.parameters.values()) if p.kind is p.POSITIONAL_ONLY)
        params.insert(last + 1, "/")
    # the trampoline runs with func's globals, so it reaches the implementation through the import system
    src = (
        f"def {func.__name__}({', '.join(params)}):\n"
        f"    return __import__('turbometrics.patch', fromlist=['_IMPLS'])._IMPLS[{key}]({', '.join(args)})\n"
    )
    ns: dict = {}
    exec(compile(src, f"<turbometrics.patch trampoline for {func.__qualname__}>", "exec"), ns)
    code = ns[func.__name__].__code__
    return code.replace(co_qualname=func.__qualname__) if sys.version_info >= (3, 11) else code


# --- calls: accelerated, or the original with a logged reason ------------------------------------------


def strict() -> bool:
    return os.environ.get("TURBOMETRICS_PATCH_STRICT", "").strip().lower() not in ("", "0", "false", "no")


_calls: collections.Counter = collections.Counter()  # (entry point, "accelerated" | "fallback") -> calls


def calls() -> dict[tuple[str, str], int]:
    """How many patched calls ran accelerated or fell back, by entry point, since the process started:
    ``{("sacrebleu.BLEU statistics", "accelerated"): 12, ...}``."""
    return dict(_calls)


def accelerated(name: str) -> None:
    _calls[name, "accelerated"] += 1
    if log.isEnabledFor(logging.INFO):
        log.info("%s: accelerated", name)


def fallback(name: str, reason: str, original: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run the original for ``name``, logging ``reason``; in strict mode raise instead, unless the original
    raises for this input itself (then that error is the answer)."""
    _calls[name, "fallback"] += 1
    if log.isEnabledFor(logging.INFO):
        log.info("%s: fallback: %s", name, reason)
    if not strict():
        return original(*args, **kwargs)
    original(*args, **kwargs)
    raise PatchFallbackError(f"{name}: fallback: {reason} (TURBOMETRICS_PATCH_STRICT is set)")


def dispatch(name: str, fast: Callable, original: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fast(*args, **kwargs)``; if it raises ``Fallback``, the original (see ``fallback``)."""
    try:
        out = fast(*args, **kwargs)
    except Fallback as why:
        return fallback(name, str(why), original, *args, **kwargs)
    accelerated(name)
    return out


# --- which modules get which patches, applied when they are imported -------------------------------------


@functools.cache
def _targets() -> dict[str, tuple[str, Callable[[Any, list], None]]]:
    """module name -> (library, apply(module, undo))."""
    from . import _rouge_score, _sacrebleu, _sklearn, _torchmetrics

    out = {}
    for lib, mod in (
        ("sacrebleu", _sacrebleu),
        ("rouge_score", _rouge_score),
        ("sklearn", _sklearn),
        ("torchmetrics", _torchmetrics),
    ):
        for module_name, apply in mod.TARGETS.items():
            out[module_name] = (lib, apply)
    return out


def _version_ok(lib: str) -> bool:
    from . import _rouge_score, _sacrebleu, _sklearn, _torchmetrics

    check = {"sacrebleu": _sacrebleu, "rouge_score": _rouge_score, "sklearn": _sklearn, "torchmetrics": _torchmetrics}[
        lib
    ].supported
    import importlib.metadata  # here, not at import (~25 ms)

    try:
        version = importlib.metadata.version(_DISTRIBUTIONS[lib])
    except importlib.metadata.PackageNotFoundError:
        return False
    if check(version):
        return True
    warnings.warn(
        f"turbometrics.patch: {_DISTRIBUTIONS[lib]} {version} is not a version the patch was written "
        f"for; it runs unpatched",
        RuntimeWarning,
        stacklevel=3,
    )
    return False


def _apply(module_name: str, module: Any) -> None:
    lib, apply = _targets()[module_name]
    undo: list = []
    try:
        apply(module, undo)
    except Exception:
        for restore in reversed(undo):
            restore()
        raise
    _applied[module_name] = undo


class _ImportHook(importlib.abc.MetaPathFinder):
    """Patches a target module right after it is first imported (for libraries imported after patch())."""

    def __init__(self) -> None:
        self._busy = threading.local()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if getattr(self._busy, "on", False):
            return None
        with _lock:
            targets = _targets()
            if fullname not in targets or targets[fullname][0] not in _active or fullname in _applied:
                return None
        self._busy.on = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _PatchingLoader(spec.loader, fullname)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, name: str) -> None:
        self._loader, self._name = loader, name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        with _lock:
            if self._name not in _applied and _targets()[self._name][0] in _active:
                _apply(self._name, module)

    def __getattr__(self, name: str) -> Any:  # get_code, get_source, ... for runpy and tracebacks
        return getattr(self._loader, name)


_hook = _ImportHook()


def patch(libraries: str | Iterable[str] | None = None, *, verbose: bool = False) -> None:
    """Run calls into sacrebleu, rouge-score, scikit-learn and torchmetrics on turbometrics' kernels.

    Parameters
    ----------
    libraries : str or list of str, optional
        Among ``"sacrebleu"``, ``"rouge_score"``, ``"sklearn"``, ``"torchmetrics"``
        (default: every one of them that is installed). Libraries already imported
        are patched now; the others when they are imported.
    verbose : bool
        Log one line per patched call to stderr (``turbometrics.patch`` logger,
        INFO): ``accelerated`` or ``fallback: <reason>``.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        For a library name not in the list above.

    Notes
    -----
    Each patched call returns the same type with the same value as the original,
    bit for bit (torchmetrics' perplexity: the exactly rounded value; see the
    ``turbometrics.patch`` module docstring for what is rebound and what is out of
    reach). Calling ``patch`` again adds libraries; ``unpatch`` undoes all. An
    installed version the patch was not written for (sacrebleu 2.x, rouge-score
    0.1.2, scikit-learn >= 1.3, torchmetrics >= 1.0) is left unpatched, with a
    warning. ``TURBOMETRICS_PATCH_STRICT=1`` turns every fallback into a
    ``PatchFallbackError``. ``python -m turbometrics.patch script.py`` runs a script
    (or ``-m module``) with the patch on.

    Examples
    --------
    >>> import sacrebleu, turbometrics as tm
    >>> tm.patch(["sacrebleu"])
    >>> sacrebleu.corpus_bleu(["The cat sat on the mat."], [["The cat sat on the mat."]]).score
    100.00000000000004
    >>> tm.is_patched("sacrebleu"), tm.is_patched("sklearn")
    (True, False)
    >>> tm.unpatch()
    """
    if libraries is None:
        wanted = [lib for lib in LIBRARIES if importlib.util.find_spec(lib) is not None]
    else:
        wanted = [libraries] if isinstance(libraries, str) else list(libraries)
        for lib in wanted:
            if lib not in LIBRARIES:
                raise ValueError(f"libraries: unknown library {lib!r}; choose among {', '.join(LIBRARIES)}")
    global _verbose_handler
    with _lock:
        if verbose and _verbose_handler is None:
            _verbose_handler = logging.StreamHandler()
            _verbose_handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            log.addHandler(_verbose_handler)
            log.setLevel(logging.INFO)
        for lib in wanted:
            if lib not in _active and _version_ok(lib):
                _active.add(lib)
        if _hook not in sys.meta_path:
            sys.meta_path.insert(0, _hook)
        for name, (lib, _) in _targets().items():
            if lib in _active and name not in _applied and name in sys.modules:
                _apply(name, sys.modules[name])


def unpatch() -> None:
    """Undo ``patch``: every rebound attribute and swapped code object is the original object again.

    Parameters
    ----------
    None

    Returns
    -------
    None

    Raises
    ------
    Nothing; calling it when nothing is patched does nothing.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.patch(["sacrebleu"]); tm.unpatch()
    >>> tm.is_patched()
    False
    """
    global _verbose_handler
    with _lock:
        for name in list(_applied):
            for restore in reversed(_applied.pop(name)):
                restore()
        _active.clear()
        if _hook in sys.meta_path:
            sys.meta_path.remove(_hook)
        if _verbose_handler is not None:
            log.removeHandler(_verbose_handler)
            log.setLevel(logging.NOTSET)
            _verbose_handler = None


def is_patched(library: str | None = None) -> bool:
    """Whether ``patch`` is on, for ``library`` or for any library.

    Parameters
    ----------
    library : str, optional
        ``"sacrebleu"``, ``"rouge_score"``, ``"sklearn"`` or ``"torchmetrics"``.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        For a library name not in the list above.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.is_patched("rouge_score")
    False
    """
    with _lock:
        if library is None:
            return bool(_active)
        if library not in LIBRARIES:
            raise ValueError(f"library: unknown library {library!r}; choose among {', '.join(LIBRARIES)}")
        return library in _active
