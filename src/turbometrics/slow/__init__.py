"""Plain-Python reference implementations (the baselines), one per metric.

Written for clarity, on nested lists of Python numbers: tests compare the
fast paths with them, and benchmarks time them. Same signatures and semantics
as the public functions (without ``num_threads``).
"""
from .classification import mean_reciprocal_rank, target_rank, topk, topk_accuracy
from .language_model import (perplexity, perplexity_from_log_probs, perplexity_from_nll,
                             perplexity_from_probs, token_nll)
from .text import corpus_bleu, corpus_chrf, rouge, segment_bleu, tokenize

__all__ = [
    "topk", "target_rank", "topk_accuracy", "mean_reciprocal_rank",
    "token_nll", "perplexity", "perplexity_from_log_probs", "perplexity_from_probs",
    "perplexity_from_nll", "corpus_bleu", "segment_bleu", "corpus_chrf", "rouge", "tokenize",
]
