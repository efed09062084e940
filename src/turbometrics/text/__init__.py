"""Text metrics with sacrebleu's numbers: tokenizers, BLEU and chrF."""
from .bleu import BLEUScore, corpus_bleu, segment_bleu, sentence_bleu
from .chrf import CHRFScore, corpus_chrf, segment_chrf, sentence_chrf
from .tokenizers import TOKENIZERS, tokenize

__all__ = ["BLEUScore", "corpus_bleu", "sentence_bleu", "segment_bleu", "CHRFScore", "corpus_chrf",
           "sentence_chrf", "segment_chrf", "tokenize", "TOKENIZERS"]
