"""Text metrics: tokenizers, BLEU and chrF (sacrebleu's numbers), ROUGE (rouge-score's)."""

from .bleu import BLEUScore, PreparedReferences, corpus_bleu, prepare_references, segment_bleu, sentence_bleu
from .chrf import CHRFScore, corpus_chrf, segment_chrf, sentence_chrf
from .pairwise import pairwise_bleu, pairwise_chrf, pairwise_rouge, pairwise_ter
from .rouge import ROUGE_TYPES, Scores, lcs_length, rouge
from .ter import TERScore, corpus_ter, segment_ter, sentence_ter
from .tokenizers import TOKENIZERS, tokenize

__all__ = [
    "BLEUScore",
    "PreparedReferences",
    "prepare_references",
    "corpus_bleu",
    "sentence_bleu",
    "segment_bleu",
    "CHRFScore",
    "corpus_chrf",
    "sentence_chrf",
    "segment_chrf",
    "TERScore",
    "corpus_ter",
    "sentence_ter",
    "segment_ter",
    "rouge",
    "lcs_length",
    "Scores",
    "ROUGE_TYPES",
    "tokenize",
    "TOKENIZERS",
    "pairwise_bleu",
    "pairwise_chrf",
    "pairwise_ter",
    "pairwise_rouge",
]
