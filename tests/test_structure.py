"""The package's shape: no import cycles, and the slow twins independent of what they check."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import turbometrics

ROOT = Path(turbometrics.__file__).resolve().parent
PKG = "turbometrics"


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([PKG, *parts])] = p
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Package modules that ``name`` imports anywhere (module level or inside functions)."""
    is_pkg = path.name == "__init__.py"
    here = name if is_pkg else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.add(sub if sub in MODULES else base)
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return {m for m in found if m in MODULES and m != name and m not in ancestors}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_no_import_cycle():
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(GRAPH[m]):
            assert state.get(n) != 1, (
                "import cycle: " + " -> ".join(path[path.index(n) :] + [m, n])
                if n in path
                else f"import cycle: {m} -> {n}"
            )
            if n not in state:
                visit(n, path + [m])
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m, [])


def test_validation_and_gpu_dispatch_do_not_import_each_other():
    assert f"{PKG}._gpu" not in GRAPH[f"{PKG}._validate"]
    assert GRAPH[f"{PKG}._arrays"] == set()


def test_slow_twins_import_nothing_from_the_package():
    for name in GRAPH:
        if name.startswith(f"{PKG}.slow"):
            outside = {m for m in GRAPH[name] if not m.startswith(f"{PKG}.slow")}
            assert not outside, f"{name} imports {outside}"


def test_only_benchmarks_and_the_bench_command_import_slow():
    users = {name for name, deps in GRAPH.items() if any(d.startswith(f"{PKG}.slow") for d in deps)}
    bench = f"{PKG}._bench"
    assert all(u == bench or u.startswith(bench + ".") for u in users - {f"{PKG}.slow"}), users


def test_public_api_is_the_snapshot():
    """Every public name, parameter and default as in tests/api_snapshot.txt (tools/api_snapshot.py writes it)."""
    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo / "tools"))
    try:
        import api_snapshot
    finally:
        sys.path.pop(0)
    expected = (repo / "tests" / "api_snapshot.txt").read_text()
    assert api_snapshot.snapshot() == expected, "public API changed: if on purpose, rerun tools/api_snapshot.py"
