"""Every public function documents its parameters, result, errors and an example, and the examples run."""
from __future__ import annotations

import doctest
import inspect

import pytest

import turbometrics as tm

FUNCTIONS = [getattr(tm, n) for n in tm.__all__ if inspect.isfunction(getattr(tm, n))]
METRICS = [getattr(tm.metrics, n) for n in tm.metrics.__all__ if n not in ("Metric", "Signature")]
NO_RAISES = {"show_config", "cross_validate", "prepare_references", "perplexity_from_log_probs",
             "perplexity_from_probs", "perplexity_from_nll", "sentence_bleu", "sentence_chrf",
             "segment_bleu", "segment_chrf", "sentence_ter", "segment_ter", "mean_reciprocal_rank"}  # they raise what a sibling documents


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
