"""Rebinding attributes and swapping code objects, each change recorded so that it can be undone.

Every change appends a ``restore()`` callable to an ``undo`` list; running the list in reverse puts each
original object back.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

_MISSING = object()

IMPLS: dict[int, Callable] = {}  # id(swapped function) -> what its trampoline calls now
_TRAMPOLINES: dict[int, types.CodeType] = {}  # id(swapped function) -> its trampoline (made once)


def set_attr(undo: list, owner: Any, name: str, value: Any) -> None:
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


def forwarder(func: types.FunctionType, impl: Callable, module: str) -> types.FunctionType:
    """A new function with ``func``'s name, parameters, defaults and docstring that calls ``impl`` with its
    arguments (``module``: its ``__module__``)."""
    ns: dict[str, Any] = {"__name__": module, "_impl": impl}
    f: types.FunctionType = _compile(func, "_impl", ns, f"<turbometrics.patch forwarder for {func.__qualname__}>")
    f.__defaults__, f.__kwdefaults__, f.__doc__ = func.__defaults__, func.__kwdefaults__, func.__doc__
    return f


def swap_code(undo: list, func: types.FunctionType, impl: Callable) -> None:
    """Make every call of ``func`` (by any reference to the object) call ``impl`` with the same arguments.

    ``func.__code__`` is replaced by a trampoline with the same parameters (names, kinds; the defaults
    stay on the function object), so ``inspect.signature(func)`` is unchanged. Only for functions
    without free variables (module-level functions and methods).
    """
    key = id(func)
    old = func.__code__
    if key not in _TRAMPOLINES:
        _TRAMPOLINES[key] = _trampoline(func, key)
    IMPLS[key] = impl
    func.__code__ = _TRAMPOLINES[key]

    def restore() -> None:
        func.__code__ = old
        IMPLS.pop(key, None)

    undo.append(restore)


def _trampoline(func: types.FunctionType, key: int) -> types.CodeType:
    if func.__code__.co_freevars:
        raise TypeError(f"{func.__qualname__} has free variables; its code cannot be swapped")
    # the trampoline runs with func's globals, so it reaches the implementation through the import system
    callee = f"__import__({__name__!r}, fromlist=['IMPLS']).IMPLS[{key}]"
    code = _compile(func, callee, {}, f"<turbometrics.patch trampoline for {func.__qualname__}>").__code__
    return code.replace(co_qualname=func.__qualname__) if sys.version_info >= (3, 11) else code


def _compile(func: types.FunctionType, callee: str, ns: dict[str, Any], filename: str) -> Any:
    """``def <func's name>(<func's parameters>): return <callee>(<the arguments>)``, run in ``ns``."""
    params, args = _parameters(func)
    src = f"def {func.__name__}({', '.join(params)}):\n    return {callee}({', '.join(args)})\n"
    exec(compile(src, filename, "exec"), ns)
    return ns[func.__name__]


def _parameters(func: types.FunctionType) -> tuple[list[str], list[str]]:
    """``func``'s parameter list (names and kinds, no defaults) and the arguments that pass each on."""
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
    return params, args
