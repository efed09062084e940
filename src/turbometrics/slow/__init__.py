"""Plain-Python reference implementations (the baselines), one per metric.

Written for clarity, on nested lists of Python numbers: tests compare the
fast paths with them (``tests/test_common.py``), and benchmarks time them.
Same signatures and semantics as the public functions (without
``num_threads``), the same domain (what the fast path rejects, they reject
too), and nothing from the package: they check it, so they must not share
its code (ROUGE's stemmer is nltk's, a test extra).
"""

from .classification import mean_reciprocal_rank, target_rank, topk, topk_accuracy
from .language_model import (
    perplexity,
    perplexity_from_hidden,
    perplexity_from_log_probs,
    perplexity_from_nll,
    perplexity_from_probs,
    token_nll,
    token_nll_from_hidden,
)
from .text import (
    corpus_bleu,
    corpus_chrf,
    corpus_ter,
    lcs_length,
    rouge,
    segment_bleu,
    segment_chrf,
    segment_ter,
    sentence_bleu,
    sentence_chrf,
    sentence_ter,
    tokenize,
)

__all__ = [
    "topk",
    "target_rank",
    "topk_accuracy",
    "mean_reciprocal_rank",
    "token_nll",
    "perplexity",
    "perplexity_from_log_probs",
    "perplexity_from_probs",
    "perplexity_from_nll",
    "token_nll_from_hidden",
    "perplexity_from_hidden",
    "corpus_bleu",
    "segment_bleu",
    "corpus_chrf",
    "segment_chrf",
    "sentence_bleu",
    "sentence_chrf",
    "corpus_ter",
    "segment_ter",
    "sentence_ter",
    "rouge",
    "lcs_length",
    "tokenize",
]
