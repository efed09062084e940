// Score matrices: every row text against every column text (MBR, self-BLEU), each text tokenized
// and its n-grams made once.
//
// A pair's statistics are per-order clipped matches, sum over the n-grams g both hold of
// min(count_row(g), count_col(g)), plus the lengths. Row i walks, for each of its distinct n-grams,
// the inverted index of the columns that hold it, so a row costs what it shares with the columns,
// not columns x n-grams; each cell is then scored by the sentence-level formula the per-segment
// kernels use (bleu_score, chrf_f), so cell (i, j) is that metric of text i against text j alone.
#pragma once

#include "bleu.hpp"
#include "chrf.hpp"
#include "ngrams.hpp"
#include "parallel.hpp"
#include "rouge.hpp"
#include "text_common.hpp"
#include "tokenizers.hpp"

namespace tmt {

// The distinct n-grams (orders 1..N) of a set of sequences, with counts, and for the column
// sequences (col0 .. nseq-1) the inverted index: for each n-gram, the columns holding it and how often.
struct PairIndex {
  int N = 0;
  int64_t nseq = 0, col0 = 0, ncols = 0;
  std::vector<int64_t> len;                   // symbols per sequence
  std::vector<std::vector<int64_t>> bag_off;  // [order]: nseq + 1 offsets into bag_id / bag_cnt
  std::vector<std::vector<int32_t>> bag_id, bag_cnt;
  std::vector<std::vector<int64_t>> post_off;  // [order]: n_ids + 1 offsets into post_col / post_cnt
  std::vector<std::vector<int32_t>> post_col, post_cnt;

  // uni: each sequence's symbol ids, dense in [0, n_symbols) (consumed).
  void build(std::vector<std::vector<int32_t>>& uni, size_t n_symbols, int64_t col0_, int N_) {
    N = N_;
    nseq = (int64_t)uni.size();
    col0 = col0_;
    ncols = nseq - col0;
    len.resize((size_t)nseq);
    for (int64_t s = 0; s < nseq; ++s) len[s] = (int64_t)uni[s].size();
    bag_off.assign(N, {});
    bag_id.assign(N, {});
    bag_cnt.assign(N, {});
    post_off.assign(N, {});
    post_col.assign(N, {});
    post_cnt.assign(N, {});
    Levels lv;
    lv.uni.swap(uni);
    lv.gram.resize(lv.uni.size());
    lv.begin((int)nseq, n_symbols);
    for (int n = 0; n < N; ++n) {
      if (n > 0) lv.next(n);
      tmthreads::tick((int64_t)lv.total);
      std::vector<int64_t>& off = bag_off[n];
      std::vector<int32_t>& ids = bag_id[n];
      std::vector<int32_t>& cnt = bag_cnt[n];
      off.assign((size_t)nseq + 1, 0);
      for (int64_t s = 0; s < nseq; ++s) {  // distinct n-grams in first-occurrence order
        lv.touched.clear();
        for (int32_t g : lv.at((int)s))
          if (lv.cnt[g]++ == 0) lv.touched.push_back(g);
        for (int32_t g : lv.touched) {
          ids.push_back(g);
          cnt.push_back(lv.cnt[g]);
          lv.cnt[g] = 0;
        }
        off[s + 1] = (int64_t)ids.size();
      }
      std::vector<int64_t>& po = post_off[n];  // columns per n-gram, in column order
      po.assign(lv.n_ids + 1, 0);
      for (int64_t b = off[col0]; b < off[nseq]; ++b) po[(size_t)ids[b] + 1]++;
      for (size_t g = 0; g < lv.n_ids; ++g) po[g + 1] += po[g];
      post_col[n].resize((size_t)po[lv.n_ids]);
      post_cnt[n].resize((size_t)po[lv.n_ids]);
      std::vector<int64_t> at(po.begin(), po.end() - 1);
      for (int64_t s = col0; s < nseq; ++s)
        for (int64_t b = off[s]; b < off[s + 1]; ++b) {
          const int64_t p = at[ids[b]]++;
          post_col[n][p] = (int32_t)(s - col0);
          post_cnt[n][p] = cnt[b];
        }
    }
  }

  // n-grams of order n (1-based) in sequence s
  int64_t grams(int64_t s, int n) const { return std::max<int64_t>(0, len[s] - n + 1); }

  // m[(n - 1) * ncols + j] = clipped matches of sequence i with column j at order n, every n and j.
  void row(int64_t i, std::vector<int32_t>& m) const {
    m.assign((size_t)N * ncols, 0);
    int64_t work = 0;
    for (int n = 0; n < N; ++n) {
      int32_t* mn = m.data() + (size_t)n * ncols;
      const int32_t* pc = post_col[n].data();
      const int32_t* pn = post_cnt[n].data();
      const std::vector<int64_t>& po = post_off[n];
      for (int64_t b = bag_off[n][i]; b < bag_off[n][i + 1]; ++b) {
        const int32_t g = bag_id[n][b], c = bag_cnt[n][b];
        for (int64_t p = po[g]; p < po[g + 1]; ++p) mn[pc[p]] += std::min(c, pn[p]);
        work += po[g + 1] - po[g];
      }
    }
    tmthreads::tick(work);
  }
};

// Tokenize (sacrebleu's tokenizer `tok`) every text, in parallel, into dense token ids.
static void text_token_ids(const StrView* texts, int64_t n, int tok, int nthreads,
                           std::vector<std::vector<int32_t>>& uni, size_t& n_symbols) {
  std::vector<Tokens> toks((size_t)n);
  tmthreads::parallel_for(
      n, 64, nthreads, [] { return Scratch(); }, [&](Scratch& w, int64_t i) { tokenize(texts[i], tok, w, toks[i]); },
      "text");
  size_t total = 0;
  for (const Tokens& t : toks) total += t.size();
  TokenIds tids;
  tids.reset(total);
  uni.resize((size_t)n);
  for (int64_t i = 0; i < n; ++i) sequence_ids(toks[i], tids, uni[i]);
  n_symbols = (size_t)tids.next;
}

// Sentence BLEU of row sequence i against column sequence j alone into out[i * ncols + j]; uni holds
// the rows' dense token ids, then the columns' (none when `self`: the rows against themselves).
static inline void pairwise_bleu_uni(std::vector<std::vector<int32_t>>& uni, size_t n_symbols, int64_t nrows, bool self,
                                     int N, int smooth, double smooth_value, bool effective, bool neumaier, double* out,
                                     int nthreads) {
  PairIndex ix;
  ix.build(uni, n_symbols, self ? 0 : nrows, N);
  const int64_t C = ix.ncols, W = 2 + 2 * (int64_t)N;
  struct Work {
    std::vector<int32_t> m;
    std::vector<int64_t> st;
    std::vector<double> prec, correct, total;
  };
  tmthreads::parallel_for(
      nrows, 1, nthreads,
      [&] {
        Work w;
        w.st.resize(W);
        w.prec.resize(N);
        w.correct.resize(N);
        w.total.resize(N);
        return w;
      },
      [&](Work& w, int64_t i) {
        ix.row(i, w.m);
        int64_t* st = w.st.data();
        st[0] = ix.len[i];
        for (int n = 1; n <= N; ++n) st[1 + N + n] = ix.grams(i, n);
        double bp;
        for (int64_t j = 0; j < C; ++j) {
          st[1] = ix.len[ix.col0 + j];
          for (int n = 0; n < N; ++n) st[2 + n] = w.m[(size_t)n * C + j];
          out[i * C + j] = bleu_score(st, N, smooth, smooth_value, effective, neumaier, w.prec.data(), w.correct.data(),
                                      w.total.data(), &bp);
        }
      },
      "BLEU row");
}

// Texts: the rows, then the columns (ncols == 0: the rows against themselves).
static inline void pairwise_bleu(const StrView* texts, int64_t nrows, int64_t ncols, int tok, int N, int smooth,
                                 double smooth_value, bool effective, bool neumaier, double* out, int nthreads) {
  std::vector<std::vector<int32_t>> uni;
  size_t n_symbols = 0;
  text_token_ids(texts, ncols == 0 ? nrows : nrows + ncols, tok, nthreads, uni, n_symbols);
  pairwise_bleu_uni(uni, n_symbols, nrows, ncols == 0, N, smooth, smooth_value, effective, neumaier, out, nthreads);
}

// Token IDs: sequence s is tok[off[s]:off[s + 1]], the rows then the columns, as pairwise_bleu.
static inline void pairwise_bleu_ids(const int64_t* tok, const int64_t* off, int64_t nrows, int64_t ncols, int N,
                                     int smooth, double smooth_value, bool effective, bool neumaier, double* out,
                                     int nthreads) {
  const int64_t nseq = ncols == 0 ? nrows : nrows + ncols;
  IdMap map;
  map.reset((size_t)(off[nseq] - off[0]));
  std::vector<std::vector<int32_t>> uni((size_t)nseq);
  for (int64_t s = 0; s < nseq; ++s) {
    uni[s].resize((size_t)(off[s + 1] - off[s]));
    for (int64_t k = off[s]; k < off[s + 1]; ++k) uni[s][k - off[s]] = map.id((uint64_t)tok[k]);
  }
  pairwise_bleu_uni(uni, (size_t)map.next, nrows, ncols == 0, N, smooth, smooth_value, effective, neumaier, out,
                    nthreads);
}

// chrF's symbols of every text: characters (whitespace removed unless `whitespace`) and words, as
// dense ids.
static void chrf_symbol_ids(const StrView* texts, int64_t n, bool whitespace, bool words, int nthreads,
                            std::vector<std::vector<int32_t>>& chars, size_t& n_chars,
                            std::vector<std::vector<int32_t>>& word_ids, size_t& n_words) {
  std::vector<U32> text((size_t)n);
  std::vector<Tokens> wt(words ? (size_t)n : 0);
  struct Work {
    Buf<int32_t> start, len;
  };
  tmthreads::parallel_for(
      n, 64, nthreads, [] { return Work(); },
      [&](Work& w, int64_t i) {
        load(texts[i], texts[i].len, text[i]);
        if (words) {
          U32 copy = text[i];
          chrf_words(copy, wt[i], w.start, w.len);
        }
      },
      "text");
  IdMap cmap;
  size_t total = 0;
  for (const U32& t : text) total += t.size();
  cmap.reset(total);
  chars.resize((size_t)n);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t>& c = chars[i];
    c.clear();
    for (uint32_t ch : text[i])
      if (whitespace || !is_space(ch)) c.push_back(cmap.id(ch));
  }
  n_chars = (size_t)cmap.next;
  if (!words) return;
  size_t nw = 0;
  for (const Tokens& t : wt) nw += t.size();
  TokenIds tids;  // points into wt's texts, alive until the end of this function
  tids.reset(nw);
  word_ids.resize((size_t)n);
  for (int64_t i = 0; i < n; ++i) sequence_ids(wt[i], tids, word_ids[i]);
  n_words = (size_t)tids.next;
}

// One order's chrF triple [hyp, ref, match], as the per-segment kernel makes it.
static inline void chrf_triple(int64_t nh, int64_t nr, int64_t match, int64_t* st) {
  st[0] = nr > 0 ? nh : 0;
  st[1] = nr;
  st[2] = (nh > 0 && nr > 0) ? match : 0;
}

// Sentence chrF (nc character orders, nw word orders) of rows[i] against cols[j] alone, as pairwise_bleu.
static inline void pairwise_chrf(const StrView* texts, int64_t nrows, int64_t ncols, int nc, int nw, double beta,
                                 bool whitespace, bool eps_smoothing, double* out, int nthreads) {
  const bool self = ncols == 0;
  const int64_t nseq = self ? nrows : nrows + ncols, col0 = self ? 0 : nrows;
  std::vector<std::vector<int32_t>> chars, words;
  size_t n_chars = 0, n_words = 0;
  chrf_symbol_ids(texts, nseq, whitespace, nw > 0, nthreads, chars, n_chars, words, n_words);
  PairIndex cx, wx;
  if (nc > 0) cx.build(chars, n_chars, col0, nc);
  if (nw > 0) wx.build(words, n_words, col0, nw);
  const int64_t C = nseq - col0;
  const int order = nc + nw;
  struct Work {
    std::vector<int32_t> mc, mw;
    std::vector<int64_t> st;
  };
  tmthreads::parallel_for(
      nrows, 1, nthreads,
      [&] {
        Work w;
        w.st.resize(3 * (size_t)order);
        return w;
      },
      [&](Work& w, int64_t i) {
        if (nc > 0) cx.row(i, w.mc);
        if (nw > 0) wx.row(i, w.mw);
        int64_t* st = w.st.data();
        for (int64_t j = 0; j < C; ++j) {
          for (int n = 1; n <= nc; ++n)
            chrf_triple(cx.grams(i, n), cx.grams(col0 + j, n), w.mc[(size_t)(n - 1) * C + j], st + 3 * (n - 1));
          for (int n = 1; n <= nw; ++n)
            chrf_triple(wx.grams(i, n), wx.grams(col0 + j, n), w.mw[(size_t)(n - 1) * C + j], st + 3 * (nc + n - 1));
          out[i * C + j] = chrf_f(st, order, beta, eps_smoothing);
        }
      },
      "chrF row");
}

// ROUGE-N (kind 1..9) or ROUGE-L (kind 10) of rows[i] against cols[j] alone: (P, R, F) into
// out[((q * nrows) + i) * ncols + j] for q = 0, 1, 2. Texts lowercased by the caller (rouge-score's
// str.lower()), tokenized once (rouge_tokens, stemmed if asked); ROUGE-N through the inverted index,
// ROUGE-L by the bit-parallel LCS of each pair.
static inline void pairwise_rouge(const StrView* texts, int64_t nrows, int64_t ncols, int kind, bool stem, double* out,
                                  int nthreads) {
  const bool self = ncols == 0;
  const int64_t nseq = self ? nrows : nrows + ncols, col0 = self ? 0 : nrows, C = nseq - col0;
  std::vector<Tokens> toks((size_t)nseq);
  tmthreads::parallel_for(
      nseq, 64, nthreads, [] { return std::vector<int32_t>(); },
      [&](std::vector<int32_t>& sents, int64_t i) { rouge_tokens(texts[i], stem, toks[i], sents); }, "text");
  size_t total = 0;
  for (const Tokens& t : toks) total += t.size();
  TokenIds tids;
  tids.reset(total);
  std::vector<std::vector<int32_t>> uni((size_t)nseq);
  for (int64_t i = 0; i < nseq; ++i) sequence_ids(toks[i], tids, uni[i]);
  const size_t n_ids = (size_t)tids.next;
  const size_t plane = (size_t)nrows * (size_t)C;
  auto put = [&](int64_t i, int64_t j, int64_t hits, int64_t den_p, int64_t den_r) {
    const double p = (double)hits / (double)den_p, r = (double)hits / (double)den_r;
    const size_t at = (size_t)i * C + j;
    out[at] = p;
    out[plane + at] = r;
    out[2 * plane + at] = fmeasure(p, r);
  };
  if (kind < ROUGE_L) {
    PairIndex ix;
    ix.build(uni, n_ids, col0, kind);
    tmthreads::parallel_for(
        nrows, 1, nthreads, [] { return std::vector<int32_t>(); },
        [&](std::vector<int32_t>& m, int64_t i) {
          ix.row(i, m);
          const int64_t pc = ix.grams(i, kind);
          for (int64_t j = 0; j < C; ++j) {
            const int64_t tc = ix.grams(col0 + j, kind);
            put(i, j, (pc > 0 && tc > 0) ? m[(size_t)(kind - 1) * C + j] : 0, std::max<int64_t>(pc, 1),
                std::max<int64_t>(tc, 1));
          }
        },
        "ROUGE row");
    return;
  }
  tmthreads::parallel_for(
      nrows, 1, nthreads, [] { return BitLCS(); },
      [&](BitLCS& bl, int64_t i) {
        const std::vector<int32_t>& pr = uni[i];
        const int64_t np_ = (int64_t)pr.size();
        for (int64_t j = 0; j < C; ++j) {
          const std::vector<int32_t>& t = uni[col0 + j];
          const int64_t tc = (int64_t)t.size();
          if (tc == 0 || np_ == 0) {
            put(i, j, 0, 1, 1);
            continue;
          }
          check_cells((double)tc * (double)np_, MAX_BIT_CELLS, "ROUGE-L", tc, np_);
          put(i, j, bl.lcs(t.data(), tc, pr.data(), np_, n_ids), np_, tc);
        }
      },
      "ROUGE row");
}

}  // namespace tmt
