"""The metric objects: accumulators with ``update`` on chunks, ``merge`` (or ``+``) across workers, ``compute``.

Each keeps its metric's sufficient statistics per item (BLEU and chrF:
integer statistics per segment; ROUGE: scores per pair; top-k accuracy and
MRR: the rank of each row; perplexity: an exact NLL sum plus each sequence's
mean NLL and token count), so the state is small, picklable, and what
bootstrap resampling needs. ``compute()`` equals the one-shot function on all
the data exactly, however it was chunked and in whatever order states were
merged: the one-shot functions are these objects, updated once. The classes
live beside their one-shot functions; ``_metric.Metric`` is their base.
"""

from ._metric import Metric, Signature
from .classification import MeanReciprocalRank, TopKAccuracy
from .language_model import Perplexity
from .text.bleu import BLEU
from .text.chrf import CHRF
from .text.rouge import ROUGE
from .text.ter import TER

__all__ = ["Metric", "Signature", "BLEU", "CHRF", "TER", "ROUGE", "TopKAccuracy", "MeanReciprocalRank", "Perplexity"]
