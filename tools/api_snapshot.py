"""Print the public API: every name in the public modules' ``__all__`` with its parameters and defaults.

    python tools/api_snapshot.py > tests/api_snapshot.txt   # after a deliberate API change

tests/test_structure.py compares the output with tests/api_snapshot.txt, so that a refactoring that
changes a public name or signature by accident fails.
"""

from __future__ import annotations

import importlib
import inspect

MODULES = (
    "turbometrics",
    "turbometrics.text",
    "turbometrics.metrics",
    "turbometrics.patch",
    "turbometrics.dask",
    "turbometrics.distributed",
    "turbometrics.resampling",
    "turbometrics.model_selection",
    "turbometrics.lm_perplexity",
    "turbometrics.lm_eval",
    "turbometrics.slow",
)


def _signature(obj: object) -> str:
    """Names, kinds and defaults; annotations left out (a better type hint is not an API change)."""
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def describe(obj: object) -> str:
    if inspect.isclass(obj):
        members = []
        for name, member in sorted(vars(obj).items()):
            if name.startswith("_") and name != "__init__":
                continue
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if isinstance(member, property):
                members.append(f"    .{name} (property)")
            elif callable(member):
                try:
                    members.append(f"    .{name}{_signature(member)}")
                except (TypeError, ValueError):
                    members.append(f"    .{name}")
        return "class\n" + "\n".join(members) if members else "class"
    if callable(obj):
        try:
            return _signature(obj)
        except (TypeError, ValueError):
            return "(callable)"
    return type(obj).__name__


def snapshot() -> str:
    lines = []
    for modname in MODULES:
        module = importlib.import_module(modname)
        for name in sorted(module.__all__):
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                lines.append(f"{modname}.{name}: module")
            else:
                lines.append(f"{modname}.{name}: {describe(obj)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(snapshot(), end="")
