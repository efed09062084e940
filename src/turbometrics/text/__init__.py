"""Text metrics with sacrebleu's and rouge-score's numbers: tokenizers and BLEU."""
from .bleu import BLEUScore, corpus_bleu, segment_bleu, sentence_bleu
from .tokenizers import TOKENIZERS, tokenize

__all__ = ["BLEUScore", "corpus_bleu", "sentence_bleu", "segment_bleu", "tokenize", "TOKENIZERS"]
