"""Every public function documents its parameters, result, errors and an example, and the examples run;
the documentation site (docs/, mkdocs.yml) builds with warnings as errors and renders every public name."""

from __future__ import annotations

import doctest
import inspect
import os
import pathlib
import re
import subprocess
import sys

import pytest

import turbometrics as tm

ROOT = pathlib.Path(__file__).resolve().parents[1]

FUNCTIONS = [getattr(tm, n) for n in tm.__all__ if inspect.isfunction(getattr(tm, n))]
METRICS = [getattr(tm.metrics, n) for n in tm.metrics.__all__ if n not in ("Metric", "Signature")]
NO_RAISES = {
    "show_config",
    "cross_validate",
    "prepare_references",
    "perplexity_from_log_probs",
    "perplexity_from_probs",
    "perplexity_from_nll",
    "sentence_bleu",
    "sentence_chrf",
    "segment_bleu",
    "segment_chrf",
    "sentence_ter",
    "segment_ter",
    "mean_reciprocal_rank",
}  # they raise what a sibling documents


@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_numpy_style_docstring(fn):
    doc = inspect.getdoc(fn) or ""
    sections = ["Parameters", "Returns", "Examples"] + ([] if fn.__name__ in NO_RAISES else ["Raises"])
    for section in sections:
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, f"{fn.__name__}: no {section} section"


@pytest.mark.parametrize("obj", FUNCTIONS + METRICS, ids=[o.__name__ for o in FUNCTIONS + METRICS])
def test_examples_run(obj):
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(obj, obj.__name__, globs={})
    assert any(t.examples for t in tests), f"{obj.__name__} has no example"
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, f"{obj.__name__}: {runner.failures} example(s) failed (see the output above)"


@pytest.mark.docs
def test_site_builds_strict_with_every_public_name(tmp_path):
    """``mkdocs build --strict`` (any warning fails: broken links, docstrings griffe cannot parse), then every
    name of ``tm.__all__`` has its own API entry (the ``turbometrics.NAME`` anchor mkdocstrings gives a
    rendered object) on some page, with the entry's docstring rendered under it."""
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    pages = {p.relative_to(site).parent.as_posix(): p.read_text(encoding="utf-8") for p in site.rglob("index.html")}
    anchors = {page: set(re.findall(r'id="(turbometrics\.[\w.]+)"', html)) for page, html in pages.items()}
    missing = [n for n in tm.__all__ if not any(f"turbometrics.{n}" in ids for ids in anchors.values())]
    assert not missing, f"no API entry rendered for {missing}"
    for name in tm.__all__:
        page = next(p for p, ids in anchors.items() if f"turbometrics.{name}" in ids)
        summary = (inspect.getdoc(getattr(tm, name)) or "").split("\n")[0]
        words = re.findall(r"[A-Za-z]{4,}", summary)[:3]  # a few plain words of the docstring's first line
        assert all(w in pages[page] for w in words), f"{name}: its docstring is not rendered on {page}/"


def test_getting_started_examples_run():
    """docs/index.md's first examples run as written, in order, in one namespace."""
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= 5
    namespace: dict = {"__name__": "getting_started"}
    try:
        for i, block in enumerate(blocks):
            exec(compile(block, f"docs/index.md python block {i + 1}", "exec"), namespace)
    finally:
        tm.unpatch()
