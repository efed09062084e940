"""turbometrics: ML evaluation metrics with compiled hot paths.

Same numbers as the reference implementations (scikit-learn, PyTorch,
torchmetrics, ...), many times faster. See DESIGN.md for the oracles.
"""
from . import dask, distributed, metrics  # tm.dask imports Dask, tm.distributed torch, only when called
from .config import show_config
from .classification import mean_reciprocal_rank, target_rank, topk, topk_accuracy
from .resampling import ConfidenceInterval, PairedTestResult, bootstrap_ci, paired_test
from .model_selection import CVResult, GroupKFold, KFold, RepeatedKFold, StratifiedKFold, cross_validate
from .lm_perplexity import lm_perplexity
from .patch import is_patched, patch, unpatch
from .lm_head import perplexity_from_hidden, token_nll_from_hidden
from .language_model import (perplexity, perplexity_from_log_probs, perplexity_from_nll,
                             perplexity_from_probs, token_nll)
from .text import (BLEUScore, CHRFScore, TERScore, corpus_bleu, corpus_chrf, corpus_ter, lcs_length, pairwise_bleu,
                   pairwise_chrf, pairwise_rouge, pairwise_ter, prepare_references, rouge, segment_bleu, segment_chrf, segment_ter, sentence_bleu, sentence_chrf, sentence_ter, tokenize)

__version__ = "0.1.0"

__all__ = [
    "metrics", "dask", "distributed",
    "topk", "target_rank", "topk_accuracy", "mean_reciprocal_rank",
    "token_nll", "perplexity", "perplexity_from_log_probs", "perplexity_from_probs",
    "perplexity_from_nll", "lm_perplexity", "perplexity_from_hidden", "token_nll_from_hidden",
    "corpus_bleu", "sentence_bleu", "segment_bleu", "BLEUScore", "prepare_references", "tokenize",
    "corpus_chrf", "sentence_chrf", "segment_chrf", "CHRFScore", "rouge", "lcs_length",
    "corpus_ter", "sentence_ter", "segment_ter", "TERScore",
    "pairwise_bleu", "pairwise_chrf", "pairwise_ter", "pairwise_rouge",
    "bootstrap_ci", "paired_test", "ConfidenceInterval", "PairedTestResult",
    "KFold", "StratifiedKFold", "RepeatedKFold", "GroupKFold", "cross_validate", "CVResult",
    "show_config", "patch", "unpatch", "is_patched",
]
