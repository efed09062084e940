"""Patched against unpatched, on whatever release of the library is importable: ``python releases_check.py
torchmetrics`` (every patched text family), ``python releases_check.py sacrebleu`` (BLEU, chrF and TER:
corpus, sentence and cached-reference scores, the options the kernels take) or ``python releases_check.py
scikit-learn`` (``top_k_accuracy_score``'s values and their types). tests/test_patch_releases.py
puts an older release first on ``PYTHONPATH``. Prints one JSON object: the release, then for each family
"same", "absent" (not in this release) or "DIFFERENT", and the accelerated calls it made."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore")  # older releases warn about their own deprecations
sys.path.insert(0, str(Path(__file__).resolve().parent))

import conftest  # noqa: E402

W = conftest.DATA / "wmt17-en-de"
hyps, ref, kit = (
    conftest.read_lines(W / f)[:30] for f in ("online-A.0.hyp.de", "newstest2017.ref.de", "KIT.4950.hyp.de")
)
refs = [[a, b] for a, b in zip(ref, kit)]
S = conftest.DATA / "summaries-en"
preds = conftest.read_lines(S / "predictions.txt")[:10]
summaries = [[r, r[::-1]] for r in conftest.read_lines(S / "references.txt")[:10]]

TORCHMETRICS = {
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


def _sacrebleu(make, *options):
    def run(module):
        out = []
        for kw in options:
            m = getattr(module, make)(**kw)
            out.append(m.corpus_score(hyps, [ref, kit]))
            out.append(m.sentence_score(hyps[0], [ref[0], kit[0]]))
        cached = getattr(module, make)(**options[0], references=[ref, kit])
        out += [cached.corpus_score(hyps, None), str(cached.get_signature())]
        return [s if isinstance(s, str) else (repr(s), sorted(vars(s).items(), key=str)) for s in out]

    return run


SACREBLEU = {
    "BLEU": _sacrebleu("BLEU", {}, {"tokenize": "intl", "lowercase": True, "smooth_method": "floor"},
                       {"tokenize": "char", "smooth_method": "add-k"}, {"tokenize": "zh", "effective_order": True}),
    "CHRF": _sacrebleu("CHRF", {}, {"word_order": 2}, {"char_order": 4, "beta": 1, "lowercase": True,
                                                       "whitespace": True}, {"eps_smoothing": True}),
    "TER": _sacrebleu("TER", {}, {"normalized": True, "no_punct": True, "case_sensitive": True},
                      {"asian_support": True}),
}  # fmt: skip


def _top_k(module):
    """top_k_accuracy_score's values and their types over seeded cases (ties, weights, counts, binary)."""
    import numpy as np

    r, out = np.random.default_rng(0), []
    for i in range(60):
        n, c = int(r.integers(12, 200)), int(r.integers(3, 12))
        s = r.integers(0, 4, (n, c)).astype(float) if i % 2 else r.random((n, c))
        kw = {"labels": np.arange(c), "normalize": i % 5 != 0, "sample_weight": r.random(n) if i % 3 == 0 else None}
        out.append(module.top_k_accuracy_score(r.integers(0, c, n), s, k=int(r.integers(1, c)), **kw))
    for normalize in (True, False):
        out.append(module.top_k_accuracy_score([0, 1, 0, 1], [0.1, 0.9, 0.4, 0.6], k=1, normalize=normalize))
    return [(type(v).__name__, v) for v in out]


SKLEARN = {"top_k_accuracy_score": _top_k}


def main(library: str) -> None:
    import importlib

    if library == "torchmetrics":
        import nltk

        nltk.data.path.insert(0, str(conftest.DATA / "nltk_data"))  # ROUGE-Lsum's Punkt, if asked for
        module, families = importlib.import_module("torchmetrics.functional.text"), TORCHMETRICS
    elif library == "scikit-learn":
        library = "sklearn"
        module, families = importlib.import_module("sklearn.metrics"), SKLEARN
    else:
        module, families = importlib.import_module("sacrebleu.metrics"), SACREBLEU
    out: dict = {"version": importlib.import_module(library).__version__}
    for name, run in families.items():
        f = getattr(module, name, None) if library == "torchmetrics" else module
        if f is None:
            out[name] = "absent"
            continue
        before, after, fast = conftest.both(run, f, libraries=[library])
        try:
            if library == "torchmetrics":
                conftest.same_tensors(before, after)
            else:
                assert before == after
            out[name] = "same"
        except AssertionError:
            out[name] = "DIFFERENT"
        out[name + " accelerated"] = fast
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
