"""The README is the front door: its first two commands are the install/test lines CI runs, it stays short,
its Python examples run (in order, one namespace) and its links point at files that exist."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL = "pip install . && turbometrics bench --quick"
TEST = 'pip install torch==2.13.0 ".[test]" && python -m pytest'


def test_starts_with_the_two_commands():
    lines = README.split("\n")
    fence = lines.index("```bash")
    first, second = lines[fence + 1], lines[fence + 2]
    assert first.startswith(INSTALL + " ") and second.startswith(TEST + " ")
    assert all(not line.startswith("```") or line == "```bash" for line in lines[:fence]), "a block before them"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # CI runs the README's test command, with the lint between the install and the tests
    lines = [line.replace(" && python tools/lint.py", "") for line in ci.split("\n")]
    assert TEST in lines, ".ci/run no longer runs the README's test command"


def test_short():
    assert len(README.split("\n")) <= 200


def test_python_examples_run():
    blocks = re.findall(r"^```python\n(.*?)^```", README, flags=re.S | re.M)
    assert len(blocks) >= 5
    namespace: dict = {"__name__": "readme"}
    try:
        for i, block in enumerate(blocks):
            exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
    finally:
        tm = namespace.get("tm")
        if tm is not None:
            tm.unpatch()


def test_links_resolve():
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if "://" not in t]
    assert local, "no links into docs/"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"
