"""turbometrics: ML evaluation metrics with compiled hot paths.

Same numbers as the reference implementations (scikit-learn, PyTorch,
torchmetrics, sacrebleu, rouge-score), many times faster. The README and
docs/ say which oracle each metric reproduces.

``import turbometrics`` loads only this module; each public name loads its
module (and the compiled kernels) on first use, so a process pays only for what it calls (docs/performance.md,
"First calls").
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__  # re-exported

# Functions named after the module that holds them. After loading a submodule the import system binds
# it on this package (setattr), which would hide the function: `import turbometrics.lm_perplexity` or
# `python -m turbometrics.patch` left tm.lm_perplexity / tm.patch a module. The package keeps the function.
_FUNCTION_MODULES = ("lm_perplexity", "patch")


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FUNCTION_MODULES and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

# public name -> the module that defines it
_LAZY = {
    **dict.fromkeys(["metrics", "dask", "distributed"], ""),  # modules themselves
    "show_config": "config",
    **dict.fromkeys(["is_patched", "patch", "unpatch"], "patch"),
    **dict.fromkeys(["mean_reciprocal_rank", "target_rank", "topk", "topk_accuracy"], "classification"),
    **dict.fromkeys(["ConfidenceInterval", "PairedTestResult", "bootstrap_ci", "paired_test"], "resampling"),
    **dict.fromkeys(
        ["CVResult", "GroupKFold", "KFold", "RepeatedKFold", "StratifiedKFold", "cross_validate"], "model_selection"
    ),
    "lm_perplexity": "lm_perplexity",
    **dict.fromkeys(["perplexity_from_hidden", "token_nll_from_hidden", "token_scores_from_hidden"], "lm_head"),
    **dict.fromkeys(
        ["perplexity", "perplexity_from_log_probs", "perplexity_from_nll", "perplexity_from_probs", "token_nll"],
        "language_model",
    ),
    **dict.fromkeys(
        [
            "BLEUScore",
            "CHRFScore",
            "TERScore",
            "corpus_bleu",
            "corpus_chrf",
            "corpus_ter",
            "lcs_length",
            "pairwise_bleu",
            "pairwise_chrf",
            "pairwise_rouge",
            "pairwise_ter",
            "prepare_references",
            "rouge",
            "segment_bleu",
            "segment_chrf",
            "segment_ter",
            "sentence_bleu",
            "sentence_chrf",
            "sentence_ter",
            "tokenize",
        ],
        "text",
    ),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:  # a submodule (tm.text, tm.classification, ...): reachable as when all were imported
        if name.startswith("__"):
            raise AttributeError(f"module 'turbometrics' has no attribute {name!r}")
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'turbometrics' has no attribute {name!r}") from None
    elif where == "":
        value = importlib.import_module(f".{name}", __name__)
    else:
        value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, eagerly
    from . import dask, distributed, metrics
    from .classification import mean_reciprocal_rank, target_rank, topk, topk_accuracy
    from .config import show_config
    from .language_model import (
        perplexity,
        perplexity_from_log_probs,
        perplexity_from_nll,
        perplexity_from_probs,
        token_nll,
    )
    from .lm_head import perplexity_from_hidden, token_nll_from_hidden, token_scores_from_hidden
    from .lm_perplexity import lm_perplexity
    from .model_selection import CVResult, GroupKFold, KFold, RepeatedKFold, StratifiedKFold, cross_validate
    from .patch import is_patched, patch, unpatch
    from .resampling import ConfidenceInterval, PairedTestResult, bootstrap_ci, paired_test
    from .text import (
        BLEUScore,
        CHRFScore,
        TERScore,
        corpus_bleu,
        corpus_chrf,
        corpus_ter,
        pairwise_bleu,
        pairwise_chrf,
        pairwise_rouge,
        pairwise_ter,
        prepare_references,
        segment_bleu,
        segment_chrf,
        segment_ter,
        sentence_bleu,
        sentence_chrf,
        sentence_ter,
        tokenize,
    )
    from .text.rouge import lcs_length, rouge  # the functions (text.rouge is also a module)

__all__ = [
    "metrics",
    "dask",
    "distributed",
    "topk",
    "target_rank",
    "topk_accuracy",
    "mean_reciprocal_rank",
    "token_nll",
    "perplexity",
    "perplexity_from_log_probs",
    "perplexity_from_probs",
    "perplexity_from_nll",
    "lm_perplexity",
    "perplexity_from_hidden",
    "token_nll_from_hidden",
    "token_scores_from_hidden",
    "corpus_bleu",
    "sentence_bleu",
    "segment_bleu",
    "BLEUScore",
    "prepare_references",
    "tokenize",
    "corpus_chrf",
    "sentence_chrf",
    "segment_chrf",
    "CHRFScore",
    "rouge",
    "lcs_length",
    "corpus_ter",
    "sentence_ter",
    "segment_ter",
    "TERScore",
    "pairwise_bleu",
    "pairwise_chrf",
    "pairwise_ter",
    "pairwise_rouge",
    "bootstrap_ci",
    "paired_test",
    "ConfidenceInterval",
    "PairedTestResult",
    "KFold",
    "StratifiedKFold",
    "RepeatedKFold",
    "GroupKFold",
    "cross_validate",
    "CVResult",
    "show_config",
    "patch",
    "unpatch",
    "is_patched",
]
