# distutils: language = c++
# cython: language_level=3, boundscheck=False, wraparound=False
"""Cython bindings of the text kernels in text.hpp.

Strings are passed as views of their PEP 393 storage; the lists that hold
them stay referenced for the whole call, so the views stay valid while the
GIL is released. Callers (turbometrics.text) validate types and lengths.
"""
import sys

import numpy as np
from libc.stdint cimport int64_t
from libcpp cimport bool as cbool
from libcpp.string cimport string
from libcpp.vector cimport vector

cdef extern from "Python.h":
    int PyUnicode_KIND(object)
    void* PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)

from turbometrics._ext._glue cimport install_signal_poll, raise_py

install_signal_poll()


cdef extern from "text.hpp" namespace "tmt":
    cdef cppclass StrView:
        const void* data
        int64_t len
        int kind
    cdef cppclass Tokens:
        vector[unsigned int] text
        vector[int] start
        vector[int] len
    cdef cppclass Scratch:
        pass
    void c_tokenize "tmt::tokenize"(const StrView& s, int tok, Scratch& w, Tokens& out) except +raise_py nogil
    void c_bleu_stats "tmt::bleu_stats"(const StrView* hyps, const StrView* refs, int64_t n, int R, int tok,
                                        int tok_ref, int N, int64_t* out, int nthreads) except +raise_py nogil
    cdef cppclass Joined:
        vector[vector[unsigned char]] bytes
        vector[vector[unsigned int]] wide
        vector[int] which, kind
        vector[int64_t] at, len
    void c_tokenize_joined "tmt::tokenize_joined"(const StrView* texts, int64_t n, int tok, Joined& out,
                                                  int nthreads) except +raise_py nogil
    double c_bleu_score "tmt::bleu_score"(const int64_t* st, int N, int smooth, double smooth_value,
                                          cbool effective, cbool neumaier, double* prec, double* correct,
                                          double* total, double* bp) except +raise_py nogil
    void c_chrf_stats "tmt::chrf_stats"(const StrView* hyps, const StrView* refs, int64_t n, int R, int nc, int nw,
                                        double beta, cbool whitespace, cbool eps_smoothing, int64_t* out,
                                        int nthreads) except +raise_py nogil
    double c_chrf_f "tmt::chrf_f"(const int64_t* st, int order, double beta, cbool eps_smoothing) except +raise_py nogil
    void c_bleu_stats_ids "tmt::bleu_stats_ids"(const int64_t* tok, const int64_t* off, const int64_t* hyp, int64_t n,
                                                const int64_t* ref_seq, const int64_t* seg, int N, int64_t* out,
                                                int nthreads) except +raise_py nogil
    void c_bleu_scores "tmt::bleu_scores"(const int64_t* stats, int64_t n, int N, int smooth,
                                          double smooth_value, cbool effective, cbool neumaier,
                                          double* out) except +raise_py nogil

# Python's sum() of floats became Neumaier-compensated in 3.12; sacrebleu's
# sentence scores follow the running interpreter, and so do ours.
cdef cbool NEUMAIER = sys.version_info >= (3, 12)


# The largest n-gram order (BLEU's max_order, chrF's char + word orders): statistics rows are sized from
# it in int, and no text metric needs more (an order past a segment's length only adds zero counts).
MAX_ORDER = 1024

# Token offsets are int32, and the 13a passes can grow a text up to about 6x (padding punctuation).
cdef Py_ssize_t MAX_CHARS = 1 << 28
MAX_TEXT_CHARS = MAX_CHARS  # the longest text a kernel takes


cdef StrView _view(object s) except *:
    cdef StrView v
    if s is None:
        v.data = NULL
        v.len = 0
        v.kind = 1
    else:
        if not isinstance(s, str):
            raise TypeError(f"expected a str, got {type(s).__name__}")
        if PyUnicode_GET_LENGTH(s) > MAX_CHARS:
            raise ValueError(f"a text of {PyUnicode_GET_LENGTH(s):,} characters is over the limit of {MAX_CHARS:,}")
        v.data = PyUnicode_DATA(s)
        v.len = PyUnicode_GET_LENGTH(s)
        v.kind = PyUnicode_KIND(s)
    return v


def str_scan(list items, bint allow_none):
    """(the index of the first item that is neither a str nor, where allowed, None, or -1; whether an
    item is None): the validation layer's type scan of a text list, one pointer test per item."""
    cdef Py_ssize_t i
    cdef bint none = False
    for i in range(len(items)):
        x = items[i]
        if isinstance(x, str):
            continue
        if x is None and allow_none:
            none = True
            continue
        return i, none
    return -1, none


def tokenize(text, int tok):
    """The tokens of one string (after rstrip), as a list of str."""
    cdef Scratch w
    cdef Tokens t
    cdef StrView v = _view(text)
    c_tokenize(v, tok, w, t)
    cdef size_t i
    return [PyUnicode_FromKindAndData(4, &t.text[t.start[i]], t.len[i]) for i in range(t.start.size())]


def token_count(list texts, int tok):
    """The number of tokens in ``texts`` (str each) under tokenizer ``tok``, on the calling thread: the
    tokenizer alone, for benchmarks (the tokens are made and dropped)."""
    cdef vector[StrView] tv = _views(texts)
    cdef Py_ssize_t n = len(texts), i
    cdef Scratch w
    cdef Tokens t
    cdef int64_t total = 0
    with nogil:
        for i in range(n):
            c_tokenize(tv[i], tok, w, t)
            total += t.start.size()
    return total


cdef _segment_views(list hyps, list refs, bint lowercase, vector[StrView]& hv, vector[StrView]& rv):
    """Views of n hypotheses and R streams of n references (None = absent); returns the lists to keep alive."""
    if lowercase:  # full Unicode str.lower(), as sacrebleu; the new lists keep the strings alive
        hyps = [h.lower() for h in hyps]
        refs = [[s.lower() if s is not None else None for s in stream] for stream in refs]
    cdef Py_ssize_t n = len(hyps), R = len(refs), i, r
    cdef list stream
    for r in range(R):
        if not isinstance(refs[r], list) or len(refs[r]) != n:
            raise ValueError("every reference stream must be a list with one entry per hypothesis")
    hv.resize(n)
    rv.resize(n * R)
    for i in range(n):
        hv[i] = _view(hyps[i])
    for r in range(R):
        stream = refs[r]
        for i in range(n):
            rv[i * R + r] = _view(stream[i])
    return hyps, refs


def bleu_stats(list hyps, list refs, int tok, int max_order, bint lowercase, int nthreads, bint refs_tokenized=False):
    """Per-segment [hyp_len, ref_len, correct_1..N, total_1..N] (int64, n x (2+2N)).

    ``hyps``: n str; ``refs``: R lists of n (str or None), at least one str per segment.
    ``refs_tokenized``: the references are already lowercased/tokenized (see tokenize_many).
    """
    if not 1 <= max_order <= MAX_ORDER:
        raise ValueError(f"max_order must be in [1, {MAX_ORDER}]")
    cdef vector[StrView] hv, rv
    if refs_tokenized and lowercase:
        hyps = [h.lower() for h in hyps]
        lowercase = False
    alive = _segment_views(hyps, refs, lowercase, hv, rv)
    cdef int64_t n = hv.size(), R = len(refs)
    cdef int tok_ref = 2 if refs_tokenized else tok  # TOK_NONE: split only
    out = np.zeros((n, 2 + 2 * max_order), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    with nogil:
        if n > 0:
            c_bleu_stats(hv.data(), rv.data(), n, <int>R, tok, tok_ref, max_order, &o[0, 0], nthreads)
    del alive
    return out


def tokenize_many(list texts, int tok, bint lowercase, int nthreads):
    """Each text (or None) tokenized, its tokens joined by single spaces (None stays None)."""
    if lowercase:
        texts = [t.lower() if t is not None else None for t in texts]
    cdef vector[StrView] tv = _views(texts, True)
    cdef Py_ssize_t n = len(texts), i
    cdef Joined j
    with nogil:
        c_tokenize_joined(tv.data(), n, tok, j, nthreads)
    return [None if texts[i] is None else
            PyUnicode_FromKindAndData(1, j.bytes[j.which[i]].data() + j.at[i], j.len[i]) if j.kind[i] == 1 else
            PyUnicode_FromKindAndData(4, j.wide[j.which[i]].data() + j.at[i], j.len[i])
            for i in range(n)]


def chrf_stats(list hyps, list refs, int char_order, int word_order, double beta, bint whitespace,
               bint eps_smoothing, bint lowercase, int nthreads):
    """Per-segment chrF statistics: [hyp, ref, match] per order (chars, then words) of the best reference."""
    if char_order < 0 or word_order < 0 or not 1 <= char_order + word_order <= MAX_ORDER:
        raise ValueError(f"chrF needs one to {MAX_ORDER} n-gram orders")
    cdef vector[StrView] hv, rv
    alive = _segment_views(hyps, refs, lowercase, hv, rv)
    cdef int64_t n = hv.size(), R = len(refs)
    out = np.zeros((n, 3 * (char_order + word_order)), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    with nogil:
        if n > 0:
            c_chrf_stats(hv.data(), rv.data(), n, <int>R, char_order, word_order, beta, whitespace, eps_smoothing,
                         &o[0, 0], nthreads)
    del alive
    return out


def chrf_scores(const int64_t[:, ::1] stats, double beta, bint eps_smoothing):
    """sacrebleu's chrF score of each row of statistics (float64)."""
    if stats.shape[1] % 3 or not 0 < stats.shape[1] <= 3 * MAX_ORDER:
        raise ValueError("chrF statistics come in triples, one to MAX_ORDER of them")
    cdef int order = stats.shape[1] // 3
    out = np.zeros(stats.shape[0], dtype=np.float64)
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(stats.shape[0]):
            o[i] = c_chrf_f(&stats[i, 0], order, beta, eps_smoothing)
    return out


def bleu_scores(const int64_t[:, ::1] stats, int max_order, int smooth, double smooth_value, bint effective):
    """sacrebleu's score for each row of statistics (float64)."""
    if not 1 <= max_order <= MAX_ORDER or stats.shape[1] != 2 + 2 * max_order:
        raise ValueError("statistics do not match max_order")
    out = np.zeros(stats.shape[0], dtype=np.float64)
    cdef double[::1] o = out
    with nogil:
        if stats.shape[0] > 0:
            c_bleu_scores(&stats[0, 0], stats.shape[0], max_order, smooth, smooth_value, effective, NEUMAIER,
                          &o[0])
    return out


def bleu_detail(const int64_t[::1] st, int max_order, int smooth, double smooth_value, bint effective):
    """(score, bp, precisions, counts, totals) for one row of (summed) statistics."""
    if not 1 <= max_order <= MAX_ORDER or st.shape[0] != 2 + 2 * max_order:
        raise ValueError("statistics do not match max_order")
    cdef vector[double] prec, correct, total
    prec.resize(max_order)
    correct.resize(max_order)
    total.resize(max_order)
    cdef double bp
    cdef double score = c_bleu_score(&st[0], max_order, smooth, smooth_value, effective, NEUMAIER,
                                     prec.data(), correct.data(), total.data(), &bp)
    return score, bp, list(prec), list(correct), list(total)


cdef extern from "pairwise.hpp" namespace "tmt":
    void c_pairwise_bleu "tmt::pairwise_bleu"(const StrView* texts, int64_t nrows, int64_t ncols, int tok, int N,
                                              int smooth, double smooth_value, cbool effective, cbool neumaier,
                                              double* out, int nthreads) except +raise_py nogil
    void c_pairwise_bleu_ids "tmt::pairwise_bleu_ids"(const int64_t* tok, const int64_t* off, int64_t nrows,
                                                      int64_t ncols, int N, int smooth, double smooth_value,
                                                      cbool effective, cbool neumaier, double* out,
                                                      int nthreads) except +raise_py nogil
    void c_pairwise_rouge "tmt::pairwise_rouge"(const StrView* texts, int64_t nrows, int64_t ncols, int kind,
                                                cbool stem, double* out, int nthreads) except +raise_py nogil
    void c_pairwise_chrf "tmt::pairwise_chrf"(const StrView* texts, int64_t nrows, int64_t ncols, int nc, int nw,
                                              double beta, cbool whitespace, cbool eps_smoothing, double* out,
                                              int nthreads) except +raise_py nogil


cdef tuple _pair_views(list rows, object cols, bint lowercase, vector[StrView]& v):
    """Views of the row texts then the column texts (none when cols is None): (the list to keep alive,
    rows, columns (0: the rows against themselves), the zeroed result matrix)."""
    texts = rows if cols is None else rows + cols
    if lowercase:
        texts = [t.lower() for t in texts]
    v.resize(len(texts))
    cdef Py_ssize_t i
    for i in range(len(texts)):
        v[i] = _view(texts[i])
    nc = 0 if cols is None else len(cols)
    return texts, len(rows), nc, np.zeros((len(rows), len(rows) if cols is None else nc))


def pairwise_bleu(list rows, object cols, int tok, int max_order, int smooth, double smooth_value, bint effective,
                  bint lowercase, int nthreads):
    """(len(rows), len(cols)) sentence BLEU of each row text against each column text alone (cols None: the
    rows against themselves)."""
    if not 1 <= max_order <= MAX_ORDER:
        raise ValueError(f"max_order must be in [1, {MAX_ORDER}]")
    cdef vector[StrView] v
    cdef int64_t nr, nc
    alive, nr, nc, out = _pair_views(rows, cols, lowercase, v)
    cdef double[:, ::1] o = out
    cdef bint work = out.size > 0
    with nogil:
        if work:
            c_pairwise_bleu(v.data(), nr, nc, tok, max_order, smooth, smooth_value, effective, NEUMAIER, &o[0, 0],
                            nthreads)
    del alive
    return out


def pairwise_chrf(list rows, object cols, int char_order, int word_order, double beta, bint whitespace,
                  bint eps_smoothing, bint lowercase, int nthreads):
    """(len(rows), len(cols)) sentence chrF of each row text against each column text alone, as pairwise_bleu."""
    if char_order < 0 or word_order < 0 or not 1 <= char_order + word_order <= MAX_ORDER:
        raise ValueError(f"chrF needs one to {MAX_ORDER} n-gram orders")
    cdef vector[StrView] v
    cdef int64_t nr, nc
    alive, nr, nc, out = _pair_views(rows, cols, lowercase, v)
    cdef double[:, ::1] o = out
    cdef bint work = out.size > 0
    with nogil:
        if work:
            c_pairwise_chrf(v.data(), nr, nc, char_order, word_order, beta, whitespace, eps_smoothing, &o[0, 0],
                            nthreads)
    del alive
    return out


def pairwise_rouge(list rows, object cols, int kind, bint stem, int nthreads):
    """(3, len(rows), len(cols)) ROUGE-N (kind 1..9) or ROUGE-L (10) (P, R, F) of each row text against each
    column text alone (cols None: the rows against themselves)."""
    if not 1 <= kind <= 10:
        raise ValueError(f"pairwise ROUGE kind must be 1..10, got {kind}")
    cdef vector[StrView] v
    cdef int64_t nr, nc
    alive, nr, nc, plane = _pair_views(rows, cols, True, v)  # rouge-score lowercases with str.lower()
    out = np.zeros((3,) + plane.shape)
    cdef double[:, :, ::1] o = out
    cdef bint work = out.size > 0
    with nogil:
        if work:
            c_pairwise_rouge(v.data(), nr, nc, kind, stem, &o[0, 0, 0], nthreads)
    del alive
    return out


cdef extern from "ter.hpp" namespace "tmt":
    void c_ter_stats "tmt::ter_stats"(const StrView* hyps, const StrView* refs, int64_t n, int R, int64_t* out,
                                      int nthreads) except +raise_py nogil


def ter_stats(list hyps, list refs, int nthreads):
    """Per-segment [best edits, sum of reference lengths, references] (int64, n x 3) of sacrebleu's TER.

    ``hyps``: n preprocessed str (split on whitespace here); ``refs``: R lists of n (str or None),
    at least one str per segment.
    """
    cdef vector[StrView] hv, rv
    alive = _segment_views(hyps, refs, False, hv, rv)
    cdef int64_t n = hv.size(), R = len(refs)
    out = np.zeros((n, 3), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    with nogil:
        if n > 0:
            c_ter_stats(hv.data(), rv.data(), n, <int>R, &o[0, 0], nthreads)
    del alive
    return out


cdef extern from "rouge.hpp" namespace "tmt":
    void c_rouge_all "tmt::rouge_all"(const StrView* preds, const StrView* refs, const int64_t* offsets, int64_t n,
                                      const int* kinds, int nk, cbool stem, double* out, int nthreads) except +raise_py nogil
    void c_rouge_all_ids "tmt::rouge_all_ids"(const int64_t* tok, const int64_t* off, const int64_t* pred, int64_t n,
                                              const int64_t* ref_seq, const int64_t* seg, const int* kinds, int nk,
                                              double* out, int nthreads) except +raise_py nogil
    string c_porter_stem "tmt::porter_stem"(const string& word) except +raise_py nogil
    cdef cppclass BitLCS:
        int64_t lcs(const int* a, int64_t m, const int* b, int64_t n, size_t n_ids) except +raise_py nogil
        int64_t lcs_dp(const int* a, int64_t m, const int* b, int64_t n) except +raise_py nogil
    void c_lcs_batch "tmt::lcs_batch"(const int* a, const int64_t* a_off, const int* b, const int64_t* b_off,
                                      int64_t n, int n_ids, int64_t* out, int nthreads) except +raise_py nogil
    void c_rouge_tokens "tmt::rouge_tokens"(const StrView& s, cbool stem, Tokens& tok,
                                            vector[int]& sents) except +raise_py nogil


def rouge_scores(list preds, list refs, const int64_t[::1] offsets, list kinds, bint stem, int nthreads):
    """(n, len(kinds), 3) precision/recall/F per prediction, best reference per kind.

    ``refs`` is flat: prediction i's references are refs[offsets[i]:offsets[i+1]].
    ``kinds``: 1..9 for ROUGE-N, 10 for ROUGE-L, 11 for ROUGE-Lsum.
    """
    cdef Py_ssize_t n = len(preds), i
    if offsets.shape[0] != n + 1 or offsets[0] != 0 or offsets[n] != len(refs):
        raise ValueError("offsets must run from 0 to len(refs) with one entry per prediction")
    for i in range(n):
        if offsets[i + 1] <= offsets[i]:
            raise ValueError("every prediction needs at least one reference")
    preds = [p.lower() for p in preds]  # rouge-score lowercases with str.lower() first
    refs = [r.lower() for r in refs]
    cdef vector[StrView] pv, rv
    pv.resize(n)
    rv.resize(len(refs))
    for i in range(n):
        pv[i] = _view(preds[i])
    for i in range(len(refs)):
        rv[i] = _view(refs[i])
    cdef vector[int] ks = kinds
    out = np.zeros((n, len(kinds), 3), dtype=np.float64)
    cdef double[:, :, ::1] o = out
    with nogil:
        if n > 0 and ks.size() > 0:
            c_rouge_all(pv.data(), rv.data(), &offsets[0], n, ks.data(), <int>ks.size(), stem, &o[0, 0, 0],
                        nthreads)
    return out


def porter_stem(word):
    """nltk's PorterStemmer().stem(word) for a lowercase ASCII word."""
    return c_porter_stem(word.encode("ascii")).decode("ascii")


def rouge_tokenize(text, bint stem):
    """rouge-score's tokens of ``text``: lowercase [a-z0-9] runs, Porter stems of those longer than 3."""
    cdef Tokens t
    cdef vector[int] sents
    lowered = text.lower()
    cdef StrView v = _view(lowered)
    c_rouge_tokens(v, stem, t, sents)
    cdef size_t i
    return [PyUnicode_FromKindAndData(4, &t.text[t.start[i]], t.len[i]) for i in range(t.start.size())]


cdef Py_ssize_t _top_id(const int[::1] x) except -1:
    """The largest id of a test-hook sequence (0 if empty); ValueError for a negative one."""
    cdef Py_ssize_t hi = 0, i
    for i in range(x.shape[0]):
        if x[i] < 0:
            raise ValueError("ids must be >= 0")
        hi = max(hi, x[i])
    return hi


def lcs_lengths(const int[::1] a, const int[::1] b):
    """(bit-parallel, DP) LCS lengths of two id sequences with ids in [0, max+1): a test hook."""
    cdef BitLCS bl
    cdef Py_ssize_t hi = max(_top_id(a), _top_id(b))
    cdef const int* pa = &a[0] if a.shape[0] else NULL
    cdef const int* pb = &b[0] if b.shape[0] else NULL
    return (bl.lcs(pa, a.shape[0], pb, b.shape[0], hi + 1), bl.lcs_dp(pa, a.shape[0], pb, b.shape[0]))


def lcs_batch(const int[::1] a, const int64_t[::1] a_off, const int[::1] b, const int64_t[::1] b_off,
              int n_ids, int nthreads):
    """LCS length of each pair (a[a_off[p]:a_off[p+1]], b[b_off[p]:b_off[p+1]]); ids in [0, n_ids).

    Callers validate: offsets non-decreasing within the arrays, ids in range.
    Bit-parallel (each thread keeps an id table n_ids long).
    """
    cdef Py_ssize_t n = a_off.shape[0] - 1
    if n < 0 or b_off.shape[0] != a_off.shape[0] or n_ids < 1:
        raise ValueError("a_off and b_off need one entry per pair plus one; n_ids >= 1")
    out = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef const int* pa = &a[0] if a.shape[0] else NULL
    cdef const int* pb = &b[0] if b.shape[0] else NULL
    if n > 0:
        with nogil:
            c_lcs_batch(pa, &a_off[0], pb, &b_off[0], n, n_ids, &o[0], nthreads)
    return out


cdef extern from "edit_distance.hpp" namespace "tmt":
    cdef cppclass BitLevenshtein:
        int64_t distance(const int* a, int64_t m, const int* b, int64_t n, size_t n_ids) except +raise_py nogil
        int64_t distance_dp(const int* a, int64_t m, const int* b, int64_t n) except +raise_py nogil
    void c_edit_texts "tmt::edit_texts"(const StrView* a, const StrView* b, int64_t n, cbool words, int64_t sub,
                                        int64_t* out, int nthreads) except +raise_py nogil
    void c_eed_rows "tmt::eed_rows"(const StrView* h, const StrView* r, int64_t n, double alpha, double deletion,
                                    double insertion, double* last, int64_t* visits, int nthreads) except +raise_py nogil


cdef _zip_views(list a, list b, vector[StrView]& av, vector[StrView]& bv):
    """Views of two equally long lists of str (the caller keeps the lists alive)."""
    cdef Py_ssize_t n = len(a), i
    if len(b) != n:
        raise ValueError(f"the lists hold {n} and {len(b)} texts")
    av.resize(n)
    bv.resize(n)
    for i in range(n):
        if a[i] is None or b[i] is None:
            raise TypeError("expected a str, got NoneType")
        av[i] = _view(a[i])
        bv[i] = _view(b[i])


def levenshtein_pair(const int[::1] a, const int[::1] b):
    """(bit-parallel, DP) Levenshtein distances of two id sequences with ids in [0, max+1): a test hook."""
    cdef BitLevenshtein bl
    cdef Py_ssize_t hi = max(_top_id(a), _top_id(b))
    cdef const int* pa = &a[0] if a.shape[0] else NULL
    cdef const int* pb = &b[0] if b.shape[0] else NULL
    return (bl.distance(pa, a.shape[0], pb, b.shape[0], hi + 1), bl.distance_dp(pa, a.shape[0], pb, b.shape[0]))


def edit_distances(list a, list b, bint words, int64_t sub, int nthreads):
    """int64 (n, 3): [edit distance, tokens of a[i], tokens of b[i]] of each pair of str, by words (str.split())
    or by code points; Levenshtein if ``sub`` < 0, else torchmetrics' EditDistance beam with that substitution
    cost."""
    cdef vector[StrView] av, bv
    _zip_views(a, b, av, bv)
    cdef Py_ssize_t n = len(a)
    out = np.zeros((n, 3), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    if n > 0:
        with nogil:
            c_edit_texts(av.data(), bv.data(), n, words, sub, &o[0, 0], nthreads)
    return out


def eed_rows(list hyps, list refs, double alpha, double deletion, double insertion, int nthreads):
    """(float64 (n,), int64 (n,)): the last cell of EED's DP and the coverage count of each pair of str
    (hyps[i], refs[i]) (torchmetrics' _eed_function before its score; parameters finite and >= 0)."""
    cdef vector[StrView] hv, rv
    _zip_views(hyps, refs, hv, rv)
    cdef Py_ssize_t n = len(hyps)
    last = np.zeros(n, dtype=np.float64)
    visits = np.zeros(n, dtype=np.int64)
    cdef double[::1] lo = last
    cdef int64_t[::1] vo = visits
    if n > 0:
        with nogil:
            c_eed_rows(hv.data(), rv.data(), n, alpha, deletion, insertion, &lo[0], &vo[0], nthreads)
    return last, visits


cdef extern from "punkt.hpp" namespace "tmt::punkt":
    cdef cppclass PunktModel "tmt::punkt::Model":
        pass
    void c_punkt_split "tmt::punkt::split_texts"(const PunktModel& m, const StrView* texts, int64_t n,
                                                  vector[vector[int64_t]]& spans, int nthreads) except +raise_py nogil
    void c_punkt_lines "tmt::punkt::split_lines"(const PunktModel& m, const StrView* texts, int64_t n,
                                                  vector[unsigned int]& out, vector[int64_t]& offsets,
                                                  int nthreads) except +raise_py nogil
    void c_add_abbrev "tmt::punkt::add_abbrev"(PunktModel& m, const StrView& t) except +raise_py
    void c_add_starter "tmt::punkt::add_starter"(PunktModel& m, const StrView& t) except +raise_py
    void c_add_ortho "tmt::punkt::add_ortho"(PunktModel& m, const StrView& t, int flags) except +raise_py
    void c_add_collocation "tmt::punkt::add_collocation"(PunktModel& m, const StrView& a, const StrView& b) except +raise_py
    void c_set_char "tmt::punkt::set_char"(PunktModel& m, unsigned int c, int flags, const StrView& lower) except +raise_py
    cbool c_has_char "tmt::punkt::has_char"(const PunktModel& m, unsigned int c)


cdef class PunktSplitter:
    """Punkt sentence splitting (punkt.hpp) with one model.

    The owner (turbometrics.text.sentences) loads the model with the ``add_*``
    methods and describes every character a text holds with ``set_char``
    (``missing`` names those not yet described) before ``spans``/``lines``.
    """
    cdef PunktModel model

    def add_abbrev(self, str t):
        c_add_abbrev(self.model, _view(t))

    def add_starter(self, str t):
        c_add_starter(self.model, _view(t))

    def add_ortho(self, str t, int flags):
        c_add_ortho(self.model, _view(t), flags)

    def add_collocation(self, str a, str b):
        c_add_collocation(self.model, _view(a), _view(b))

    def set_char(self, unsigned int c, int flags, str lower):
        c_set_char(self.model, c, flags, _view(lower))

    def missing(self, list texts):
        """The code points in ``texts`` not yet described, as a set."""
        cdef set out = set()
        cdef StrView v
        cdef Py_ssize_t i
        cdef unsigned int ch
        for t in texts:
            v = _view(t)
            if v.kind == 1:
                continue  # Latin-1: described at load
            for i in range(v.len):
                ch = (<const unsigned short*>v.data)[i] if v.kind == 2 else (<const unsigned int*>v.data)[i]
                if not c_has_char(self.model, ch):
                    out.add(ch)
        return out

    def spans(self, list texts, int nthreads):
        """(start, stop) of each text's sentences: a list of int64 (k, 2) arrays."""
        cdef vector[StrView] tv = _views(texts)
        cdef vector[vector[int64_t]] sp
        with nogil:
            c_punkt_split(self.model, tv.data(), tv.size(), sp, nthreads)
        return [np.array(s, dtype=np.int64).reshape(-1, 2) for s in sp]

    def lines(self, list texts, int nthreads):
        """Each text with its sentences one per line (inner line breaks as spaces, empty ones dropped)."""
        cdef vector[StrView] tv = _views(texts)
        cdef vector[unsigned int] buf
        cdef vector[int64_t] off
        cdef Py_ssize_t i
        with nogil:
            c_punkt_lines(self.model, tv.data(), tv.size(), buf, off, nthreads)
        return [PyUnicode_FromKindAndData(4, buf.data() + off[i], off[i + 1] - off[i]) for i in range(len(texts))]


cdef vector[StrView] _views(list texts, bint allow_none=False) except *:
    """Views of ``texts`` (str each; or None where allowed: a view with no data)."""
    cdef vector[StrView] tv
    tv.resize(len(texts))
    cdef Py_ssize_t i
    for i in range(len(texts)):
        if texts[i] is None and not allow_none:
            raise TypeError("expected a str, got None")
        tv[i] = _view(texts[i])
    return tv


# ---------------------------------------------------------------- token-ID input

def _check_sequences(tok, off, seqs, seg=None):
    """The invariants the token-ID kernels read without bounds checks (made by text.token_ids)."""
    tok, off = np.asarray(tok), np.asarray(off)
    if off.ndim != 1 or off.size < 1 or off[0] != 0 or off[-1] != tok.size or (np.diff(off) < 0).any():
        raise ValueError("token offsets must start at 0, never decrease and end at the number of tokens")
    for s in seqs:
        s = np.asarray(s)
        if s.size and (s.min() < 0 or s.max() >= off.size - 1):
            raise ValueError("sequence index out of range")
    if seg is not None:
        seg = np.asarray(seg)
        if seg[0] != 0 or seg[-1] != len(seqs[1]) or (np.diff(seg) < 1).any():
            raise ValueError("every segment needs at least one reference, in order")


cdef const int64_t* _first(const int64_t[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] > 0 else NULL


def bleu_stats_ids(const int64_t[::1] tok, const int64_t[::1] off, const int64_t[::1] hyp,
                   const int64_t[::1] ref_seq, const int64_t[::1] seg, int max_order, int nthreads):
    """Per-segment BLEU statistics of token-ID segments (see bleu.hpp: bleu_stats_ids)."""
    if not 1 <= max_order <= MAX_ORDER:
        raise ValueError(f"max_order must be in [1, {MAX_ORDER}]")
    cdef int64_t n = hyp.shape[0]
    if seg.shape[0] != n + 1:
        raise ValueError("seg must have one entry per segment, plus one")
    _check_sequences(tok, off, (hyp, ref_seq), seg)
    out = np.zeros((n, 2 + 2 * max_order), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    with nogil:
        if n > 0:
            c_bleu_stats_ids(_first(tok), &off[0], &hyp[0], n, &ref_seq[0], &seg[0], max_order, &o[0, 0], nthreads)
    return out


def pairwise_bleu_ids(const int64_t[::1] tok, const int64_t[::1] off, int64_t nrows, int64_t ncols, int max_order,
                      int smooth, double smooth_value, bint effective, int nthreads):
    """(nrows, ncols) sentence BLEU of token-ID sequences: the rows, then the columns (ncols 0: the rows
    against themselves), as pairwise_bleu."""
    if not 1 <= max_order <= MAX_ORDER:
        raise ValueError(f"max_order must be in [1, {MAX_ORDER}]")
    if nrows < 0 or ncols < 0 or off.shape[0] != nrows + ncols + 1:
        raise ValueError("offsets do not match the rows and columns")
    _check_sequences(tok, off, ())
    out = np.zeros((nrows, nrows if ncols == 0 else ncols), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef bint work = out.size > 0
    with nogil:
        if work:
            c_pairwise_bleu_ids(_first(tok), &off[0], nrows, ncols, max_order, smooth, smooth_value, effective,
                                NEUMAIER, &o[0, 0], nthreads)
    return out


def rouge_scores_ids(const int64_t[::1] tok, const int64_t[::1] off, const int64_t[::1] pred,
                     const int64_t[::1] ref_seq, const int64_t[::1] seg, list kinds, int nthreads):
    """(n, len(kinds), 3) ROUGE of token-ID pairs (see rouge.hpp: rouge_all_ids); ROUGE-Lsum is ROUGE-L
    (one sentence per sequence)."""
    cdef int64_t n = pred.shape[0]
    if seg.shape[0] != n + 1:
        raise ValueError("seg must have one entry per prediction, plus one")
    _check_sequences(tok, off, (pred, ref_seq), seg)
    cdef vector[int] kv = kinds
    for k in kinds:
        if not 1 <= k <= 11:
            raise ValueError(f"unknown ROUGE kind {k}")
    out = np.zeros((n, len(kinds), 3), dtype=np.float64)
    cdef double[:, :, ::1] o = out
    with nogil:
        if n > 0 and kv.size() > 0:
            c_rouge_all_ids(_first(tok), &off[0], &pred[0], n, &ref_seq[0], &seg[0], kv.data(), <int>kv.size(),
                            &o[0, 0, 0], nthreads)
    return out
