"""Types of the compiled text kernels (_text.pyx); keep in step with it (tools/lint.py runs stubtest).

``tok`` is a tokenizer's code (``text.tokenizers.TOKENIZERS``), ``smooth`` a BLEU smoothing method's code
and ``kind`` a ROUGE type's (1..9 ROUGE-N, 10 ROUGE-L, 11 ROUGE-Lsum); ``nthreads`` is the number of threads
a kernel may use (``_validate.check_threads``). Int64 arrays are C-contiguous (``[::1]`` memoryviews).
"""

from typing import Any, Final, TypeAlias, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

# R reference streams of n texts each, None where a segment has fewer references
_Streams: TypeAlias = list[list[str]] | list[list[str | None]]

MAX_ORDER: Final = 1024  # the largest n-gram order (BLEU's max_order, chrF's char + word orders)
MAX_TEXT_CHARS: Final[int]  # the longest text (code points) a kernel takes: longer ones raise ValueError

# (the index of the first item neither a str nor (where allowed) None, or -1; whether an item is None)
def str_scan(items: list[Any], allow_none: bool) -> tuple[int, bool]: ...

# the tokens of one text (after rstrip)
def tokenize(text: str, tok: int) -> list[str]: ...

# the number of tokens in ``texts``, tokenized on the calling thread (for benchmarks)
def token_count(texts: list[str], tok: int) -> int: ...

# int64 (n, 2 + 2 * max_order): [hyp_len, ref_len, correct_1..N, total_1..N] per segment;
# ``refs_tokenized``: the references come from tokenize_many
def bleu_stats(
    hyps: list[str],
    refs: _Streams,
    tok: int,
    max_order: int,
    lowercase: bool,
    nthreads: int,
    refs_tokenized: bool = False,
) -> npt.NDArray[np.int64]: ...

# each text tokenized, its tokens joined by single spaces (None stays None)
@overload
def tokenize_many(texts: list[str], tok: int, lowercase: bool, nthreads: int) -> list[str]: ...
@overload
def tokenize_many(texts: list[str | None], tok: int, lowercase: bool, nthreads: int) -> list[str | None]: ...

# int64 (n, 3 * (char_order + word_order)): [hyp, ref, match] per order of each segment's best reference
def chrf_stats(
    hyps: list[str],
    refs: _Streams,
    char_order: int,
    word_order: int,
    beta: float,
    whitespace: bool,
    eps_smoothing: bool,
    lowercase: bool,
    nthreads: int,
) -> npt.NDArray[np.int64]: ...

# float64 (n,): sacrebleu's chrF of each row of statistics
def chrf_scores(stats: npt.NDArray[np.int64], beta: float, eps_smoothing: bool) -> npt.NDArray[np.float64]: ...

# float64 (n,): sacrebleu's BLEU of each row of statistics
def bleu_scores(
    stats: npt.NDArray[np.int64], max_order: int, smooth: int, smooth_value: float, effective: bool
) -> npt.NDArray[np.float64]: ...

# (score, brevity penalty, precisions, matches, totals) of one row of (summed) statistics
def bleu_detail(
    st: npt.NDArray[np.int64], max_order: int, smooth: int, smooth_value: float, effective: bool
) -> tuple[float, float, list[float], list[float], list[float]]: ...

# float64 (len(rows), len(cols)): sentence BLEU of each row text against each column text (cols None:
# the rows against themselves)
def pairwise_bleu(
    rows: list[str],
    cols: list[str] | None,
    tok: int,
    max_order: int,
    smooth: int,
    smooth_value: float,
    effective: bool,
    lowercase: bool,
    nthreads: int,
) -> npt.NDArray[np.float64]: ...

# float64 (len(rows), len(cols)): sentence chrF, as pairwise_bleu
def pairwise_chrf(
    rows: list[str],
    cols: list[str] | None,
    char_order: int,
    word_order: int,
    beta: float,
    whitespace: bool,
    eps_smoothing: bool,
    lowercase: bool,
    nthreads: int,
) -> npt.NDArray[np.float64]: ...

# float64 (3, len(rows), len(cols)): ROUGE-N or ROUGE-L (kind 1..10) (P, R, F), as pairwise_bleu
def pairwise_rouge(
    rows: list[str], cols: list[str] | None, kind: int, stem: bool, nthreads: int
) -> npt.NDArray[np.float64]: ...

# int64 (n, 3): [best edits, sum of reference lengths, references] per segment of sacrebleu's TER
def ter_stats(hyps: list[str], refs: _Streams, nthreads: int) -> npt.NDArray[np.int64]: ...

# float64 (n, len(kinds), 3): (P, R, F) per prediction of its best reference, prediction i's references
# refs[offsets[i]:offsets[i + 1]]
def rouge_scores(
    preds: list[str], refs: list[str], offsets: npt.NDArray[np.int64], kinds: list[int], stem: bool, nthreads: int
) -> npt.NDArray[np.float64]: ...

# nltk's PorterStemmer().stem(word) of a lowercase ASCII word
def porter_stem(word: str) -> str: ...

# rouge-score's tokens of ``text`` (Porter stems if ``stem``)
def rouge_tokenize(text: str, stem: bool) -> list[str]: ...

# (bit-parallel, DP) LCS lengths of two sequences of ids >= 0: a test hook
def lcs_lengths(a: npt.NDArray[np.intc], b: npt.NDArray[np.intc]) -> tuple[int, int]: ...

# int64 (n,): the LCS length of each pair (a[a_off[p]:a_off[p + 1]], b[b_off[p]:b_off[p + 1]]), ids in
# [0, n_ids)
def lcs_batch(
    a: npt.NDArray[np.intc],
    a_off: npt.NDArray[np.int64],
    b: npt.NDArray[np.intc],
    b_off: npt.NDArray[np.int64],
    n_ids: int,
    nthreads: int,
) -> npt.NDArray[np.int64]: ...

# int64 (n, 2 + 2 * max_order): bleu_stats of token-ID segments (tokens ``tok`` cut at ``off``; hypothesis
# sequences ``hyp``, reference sequences ``ref_seq``, segment i's references ref_seq[seg[i]:seg[i + 1]])
def bleu_stats_ids(
    tok: npt.NDArray[np.int64],
    off: npt.NDArray[np.int64],
    hyp: npt.NDArray[np.int64],
    ref_seq: npt.NDArray[np.int64],
    seg: npt.NDArray[np.int64],
    max_order: int,
    nthreads: int,
) -> npt.NDArray[np.int64]: ...

# float64 (nrows, ncols): pairwise_bleu of token-ID sequences, the rows then the columns (ncols 0: the rows
# against themselves)
def pairwise_bleu_ids(
    tok: npt.NDArray[np.int64],
    off: npt.NDArray[np.int64],
    nrows: int,
    ncols: int,
    max_order: int,
    smooth: int,
    smooth_value: float,
    effective: bool,
    nthreads: int,
) -> npt.NDArray[np.float64]: ...

# float64 (n, len(kinds), 3): rouge_scores of token-ID sequences, laid out as bleu_stats_ids'
def rouge_scores_ids(
    tok: npt.NDArray[np.int64],
    off: npt.NDArray[np.int64],
    pred: npt.NDArray[np.int64],
    ref_seq: npt.NDArray[np.int64],
    seg: npt.NDArray[np.int64],
    kinds: list[int],
    nthreads: int,
) -> npt.NDArray[np.float64]: ...

# Punkt sentence splitting with one model: load it with the ``add_*`` methods and describe every character of
# the texts with ``set_char`` (``missing`` names those not yet described) before ``spans``/``lines``
@disjoint_base  # a Cython extension type: its C layout admits no second such base
class PunktSplitter:
    def add_abbrev(self, t: str) -> None: ...
    def add_starter(self, t: str) -> None: ...
    def add_ortho(self, t: str, flags: int) -> None: ...
    def add_collocation(self, a: str, b: str) -> None: ...
    def set_char(self, c: int, flags: int, lower: str) -> None: ...
    # the code points of ``texts`` not yet described
    def missing(self, texts: list[str]) -> set[int]: ...
    # int64 (k, 2): the (start, stop) of each text's k sentences
    def spans(self, texts: list[str], nthreads: int) -> list[npt.NDArray[np.int64]]: ...
    # each text with its sentences one per line
    def lines(self, texts: list[str], nthreads: int) -> list[str]: ...

# (bit-parallel, DP) Levenshtein distances of two sequences of ids >= 0: a test hook
def levenshtein_pair(a: npt.NDArray[np.intc], b: npt.NDArray[np.intc]) -> tuple[int, int]: ...

# int64 (n, 3): [edit distance, tokens of a[i], tokens of b[i]] of each pair of texts, by words (str.split()) if
# ``words``, else by code points: Levenshtein if sub < 0, else torchmetrics' EditDistance beam with substitution
# cost sub
def edit_distances(a: list[str], b: list[str], words: bool, sub: int, nthreads: int) -> npt.NDArray[np.int64]: ...

# (float64 (n,), int64 (n,)): the last cell of EED's DP and the coverage count of each pair (hyps[i], refs[i])
def eed_rows(
    hyps: list[str], refs: list[str], alpha: float, deletion: float, insertion: float, nthreads: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]: ...
