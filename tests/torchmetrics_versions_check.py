"""Patched against unpatched torchmetrics, every patched text family, on whatever torchmetrics is importable:
``python torchmetrics_versions_check.py`` (tests/test_patch_torchmetrics_versions.py puts an older release
first on ``PYTHONPATH``). Prints one JSON object: for each family "same", "absent" (no such function in this
release) or "DIFFERENT", and the accelerated calls of each family's entry points."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore")  # older releases warn about their own deprecations
sys.path.insert(0, str(Path(__file__).resolve().parent))

import conftest  # noqa: E402
import torchmetrics  # noqa: E402
import torchmetrics.functional.text as F  # noqa: E402

W = conftest.DATA / "wmt17-en-de"
hyps, ref, kit = (
    conftest.read_lines(W / f)[:30] for f in ("online-A.0.hyp.de", "newstest2017.ref.de", "KIT.4950.hyp.de")
)
refs = [[a, b] for a, b in zip(ref, kit)]
S = conftest.DATA / "summaries-en"
preds = conftest.read_lines(S / "predictions.txt")[:10]
summaries = [[r, r[::-1]] for r in conftest.read_lines(S / "references.txt")[:10]]

FAMILIES = {
    "bleu_score": lambda f: f(hyps, refs),
    "sacre_bleu_score": lambda f: f(hyps, refs, tokenize="intl", lowercase=True),
    "chrf_score": lambda f: f(hyps, refs, return_sentence_level_score=True),
    "translation_edit_rate": lambda f: f(hyps, refs, return_sentence_level_score=True),
    "rouge_score": lambda f: f(preds, summaries, rouge_keys=("rouge1", "rougeL")),
    "word_error_rate": lambda f: f(hyps, ref),
    "char_error_rate": lambda f: f(hyps, ref),
    "match_error_rate": lambda f: f(hyps, ref),
    "word_information_lost": lambda f: f(hyps, ref),
    "word_information_preserved": lambda f: f(hyps, ref),
    "edit_distance": lambda f: f(hyps, ref, reduction="none"),
    "extended_edit_distance": lambda f: f(hyps, refs, return_sentence_level_score=True),
}


def main() -> None:
    import nltk

    nltk.data.path.insert(0, str(conftest.DATA / "nltk_data"))  # ROUGE-Lsum's Punkt, if asked for
    out: dict = {"version": torchmetrics.__version__}
    for name, run in FAMILIES.items():
        f = getattr(F, name, None)
        if f is None:
            out[name] = "absent"
            continue
        before, after, fast = conftest.both(run, f, libraries=["torchmetrics"])
        try:
            conftest.same_tensors(before, after)
            out[name] = "same"
        except AssertionError:
            out[name] = "DIFFERENT"
        out[name + " accelerated"] = fast
    print(json.dumps(out))


if __name__ == "__main__":
    main()
