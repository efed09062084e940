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


# Sizes a reader can hold in mind: no source file over ~800 lines, no function body over ~60 lines in the
# public modules (their private helpers included). Exceptions name their reason.
MAX_FILE_LINES = 800
MAX_BODY_LINES = 60
GENERATED = {"_ext/unicode_tables.hpp"}  # tools/gen_unicode_tables.py writes it


def _body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = fn.body
    first = body[0]
    docstring = (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    )
    start = body[1].lineno if docstring and len(body) > 1 else first.lineno
    return (fn.end_lineno or start) - start + 1


def test_no_source_file_is_too_long_to_read():
    long = {}
    for p in sorted(ROOT.rglob("*")):
        rel = p.relative_to(ROOT).as_posix()
        if p.suffix in (".py", ".pyx", ".pxd", ".pyi", ".hpp") and rel not in GENERATED:
            n = p.read_text(encoding="utf-8").count("\n")
            if n > MAX_FILE_LINES:
                long[rel] = n
    assert not long, f"over {MAX_FILE_LINES} lines: {long}"


def test_no_function_body_over_60_lines_in_the_public_modules():
    long = {}
    for name, path in MODULES.items():
        if any(part.startswith("_") for part in name.split(".")[1:]):
            continue  # private modules (kernels, glue): their size is the kernels'
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > MAX_BODY_LINES:
                long[f"{name}.{node.name}"] = _body_lines(node)
    assert not long, f"function bodies over {MAX_BODY_LINES} lines: {long}"
