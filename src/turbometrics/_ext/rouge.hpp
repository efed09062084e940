// ROUGE-N, ROUGE-L and ROUGE-Lsum per pair with rouge-score 0.1.2's numbers.
//
// Tokens are rouge-score's: maximal runs of [a-z0-9] in the lowercased text
// (lowercasing is done by Python's str.lower() before the GIL is released),
// optionally Porter-stemmed when longer than 3 characters. Token ids are exact
// per pair (the prediction and its references); ROUGE-L's length comes from a
// bit-parallel LCS, ROUGE-Lsum runs rouge-score's DP and backtrack per sentence
// pair, because which LCS it picks decides the union.
#pragma once
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "bitparallel.hpp"
#include "ngrams.hpp"
#include "parallel.hpp"
#include "porter.hpp"
#include "text_common.hpp"

namespace tmt {

enum RougeKind : int { ROUGE_L = 10, ROUGE_LSUM = 11 };  // 1..9 = ROUGE-N

// Porter stems of the words longer than 3 characters, kept per thread from call to call: a call of one pair (the
// patched RougeScorer.score in a loop) or a metric's small batches would otherwise stem every word again (70 of
// the 114 us of a summary pair, Intel Xeon). Emptied past STEM_CACHE_MAX words (some 7 MiB a thread).
constexpr size_t STEM_CACHE_MAX = size_t(1) << 16;
static std::unordered_map<std::string, std::string>& stem_cache() {
  static thread_local std::unordered_map<std::string, std::string> cache;
  if (cache.size() >= STEM_CACHE_MAX) cache.clear();
  return cache;
}

// Tokens of a lowercased text: runs of [a-z0-9], stemmed if asked (stem_cache), with the sentence index of each
// token ("\n" splits sentences).
static void rouge_tokens(const StrView& s, bool stem, Tokens& tok, std::vector<int32_t>& sents) {
  std::unordered_map<std::string, std::string>& cache = stem_cache();
  tok.clear();
  sents.clear();
  int32_t sent = 0;
  std::string word;
  auto is_tok = [](uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  int64_t i = 0, n = s.len;
  while (i < n) {
    uint32_t c = at(s, i);
    if (!is_tok(c)) {
      if (c == '\n') ++sent;
      ++i;
      continue;
    }
    int64_t j = i;
    const int32_t start = (int32_t)tok.text.size();
    while (j < n && is_tok(at(s, j))) tok.text.push_back(at(s, j++));
    if (stem && j - i > 3) {  // rouge-score stems tokens longer than 3 characters
      word.assign(tok.text.begin() + start, tok.text.end());
      auto it = cache.find(word);
      if (it == cache.end()) it = cache.emplace(word, porter_stem(word)).first;
      tok.text.resize(start);
      for (char ch : it->second) tok.text.push_back((unsigned char)ch);
    }
    tok.start.push_back(start);
    tok.len.push_back((int32_t)tok.text.size() - start);
    sents.push_back(sent);
    i = j;
  }
}

static inline double fmeasure(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0.0; }

// ROUGE-Lsum's work limit (ROUGE-L's is bitparallel.hpp's MAX_BIT_CELLS): rouge-score's DP over every sentence
// pair, M x N cells in all (2^32: a few seconds, and at most 512 MiB of direction bits for one sentence pair).
// rouge-score itself needs hours far below either.
constexpr double MAX_LSUM_CELLS = 4294967296.0;  // 2^32

// LCS length of a and b (Hyyro's bit-parallel algorithm over a's positions): O(n m / 64) time and O(m) memory
// for any vocabulary (MatchMasks).
struct BitLCS {
  MatchMasks mm;
  std::vector<uint64_t> v;
  std::vector<int32_t> dp;

  // O(m n) time, O(n) memory: the reference the bit-parallel result is tested against.
  int64_t lcs_dp(const int32_t* a, int64_t m, const int32_t* b, int64_t n) {
    dp.assign((size_t)n + 1, 0);
    for (int64_t i = 0; i < m; ++i) {
      tmthreads::tick(n);
      int32_t diag = 0;
      for (int64_t j = 1; j <= n; ++j) {
        const int32_t up = dp[j];
        dp[j] = a[i] == b[j - 1] ? diag + 1 : std::max(up, dp[j - 1]);
        diag = up;
      }
    }
    return dp[n];
  }

  int64_t lcs(const int32_t* a, int64_t m, const int32_t* b, int64_t n, size_t n_ids) {
    if (m == 0 || n == 0) return 0;
    mm.build(a, m, n_ids);
    const int64_t W = mm.W;
    v.assign((size_t)W, ~0ULL);
    if (W == 1) {  // up to 64 tokens (most texts): one word, no carries
      uint64_t x = ~0ULL;
      for (int64_t j = 0; j < n; ++j)
        if (const uint64_t* p = mm.get(b[j])) x = (x + (x & *p)) | (x & ~*p);
      v[0] = x;
    } else {
      for (int64_t j = 0; j < n; ++j) {
        const uint64_t* p = mm.get(b[j]);
        if (!p) continue;  // (V + 0) | V = V
        uint64_t carry = 0;
        for (int64_t w = 0; w < W; ++w) {
          const uint64_t u = v[w] & p[w];
          const uint64_t sum = v[w] + u + carry;
          carry = (sum < v[w]) || (carry && sum == v[w]);
          v[w] = sum | (v[w] & ~p[w]);
        }
        tmthreads::tick(W);
      }
    }
    mm.release();
    int64_t zeros = 0;
    for (int64_t w = 0; w < W; ++w) {
      uint64_t x = ~v[w];
      if (w == W - 1 && m % 64) x &= (1ULL << (m % 64)) - 1;
      zeros += popcount64(x);
    }
    return zeros;
  }
};

struct RougeWork {
  std::vector<Tokens> toks;                 // [0] prediction, then its references
  std::vector<std::vector<int32_t>> sents;  // sentence index per token, likewise
  std::vector<double> best_f;
  TokenIds tids;
  Levels lv;
  BitLCS bl;
  std::vector<int32_t> prev, cur, cnt_r, cnt_c;
  std::vector<uint64_t> left;  // rouge-score's backtrack choice of each cell of one sentence pair
  std::vector<char> in_union;
};

// rouge-score's _summary_level_lcs(target sentences, prediction sentences): hits.
static int64_t lsum_hits(RougeWork& w, int tgt, size_t n_ids) {
  const std::vector<int32_t>& R = w.lv.uni[tgt];
  const std::vector<int32_t>& C = w.lv.uni[0];
  const std::vector<int32_t>& rs = w.sents[tgt];
  const std::vector<int32_t>& cs = w.sents[0];
  w.cnt_r.assign(n_ids, 0);
  w.cnt_c.assign(n_ids, 0);
  for (int32_t t : R) w.cnt_r[t]++;
  for (int32_t t : C) w.cnt_c[t]++;
  int64_t hits = 0;
  // sentences as [begin, end) ranges of token positions (sentences without tokens never add hits)
  auto ranges = [](const std::vector<int32_t>& sent) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (size_t i = 0; i < sent.size();) {
      size_t j = i;
      while (j < sent.size() && sent[j] == sent[i]) ++j;
      out.push_back({(int64_t)i, (int64_t)j});
      i = j;
    }
    return out;
  };
  const auto rr = ranges(rs), cr = ranges(cs);
  for (const auto& r : rr) {
    const int64_t m = r.second - r.first;
    w.in_union.assign((size_t)m, 0);
    const int32_t* ref = &R[r.first];
    for (const auto& c : cr) {
      const int64_t n = c.second - c.first;
      const int32_t* can = &C[c.first];
      // rouge-score's table, two rows at a time; its backtrack reads only whether the left cell is
      // strictly larger than the upper one where the tokens differ: one bit per cell, (i-1) n + (j-1)
      w.left.assign((size_t)((m * n + 63) / 64), 0);
      w.prev.assign((size_t)n + 1, 0);
      w.cur.assign((size_t)n + 1, 0);
      for (int64_t i = 1; i <= m; ++i) {
        int32_t* t = w.cur.data();
        const int32_t* up = w.prev.data();
        const int32_t x = ref[i - 1];
        const int64_t base = (i - 1) * n - 1;
        for (int64_t j = 1; j <= n; ++j) {
          if (x == can[j - 1]) {
            t[j] = up[j - 1] + 1;
            continue;
          }
          const bool l = t[j - 1] > up[j];
          t[j] = l ? t[j - 1] : up[j];
          if (l) w.left[(size_t)(base + j) >> 6] |= 1ULL << ((base + j) & 63);
        }
        w.prev.swap(w.cur);
        tmthreads::tick(n);
      }
      // rouge-score's backtrack: take a match; else go left if the left cell is strictly larger; else up
      int64_t i = m, j = n;
      while (i > 0 && j > 0) {
        const int64_t b = (i - 1) * n + (j - 1);
        if (ref[i - 1] == can[j - 1]) {
          w.in_union[i - 1] = 1;
          --i;
          --j;
        } else if ((w.left[(size_t)b >> 6] >> (b & 63)) & 1)
          --j;
        else
          --i;
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      if (!w.in_union[i]) continue;
      const int32_t tok = ref[i];
      if (w.cnt_c[tok] > 0 && w.cnt_r[tok] > 0) {
        ++hits;
        w.cnt_c[tok]--;
        w.cnt_r[tok]--;
      }
    }
  }
  return hits;
}

// One prediction against its K references: for each requested type, the
// (precision, recall, F) of the reference with the highest F (the first on ties).
// From the dense ids in w.lv.uni[0..K] (0: the prediction) and sentence indices in w.sents.
static void rouge_scores_of(RougeWork& w, int K, size_t n_ids, const int* kinds, int nk, double* out /* nk x 3 */) {
  const int64_t np_ = (int64_t)w.lv.uni[0].size();
  int max_n = 0;
  for (int q = 0; q < nk; ++q)
    if (kinds[q] < ROUGE_L) max_n = std::max(max_n, kinds[q]);
  for (int q = 0; q < nk * 3; ++q) out[q] = 0.0;
  w.best_f.assign(nk, -1.0);
  auto offer = [&](int q, double p, double r) {
    const double f = fmeasure(p, r);
    if (f > w.best_f[q]) {
      w.best_f[q] = f;
      out[3 * q] = p;
      out[3 * q + 1] = r;
      out[3 * q + 2] = f;
    }
  };
  // ROUGE-N: levels over all sequences at once
  if (max_n > 0) {
    w.lv.begin(K + 1, n_ids);
    for (int n = 1; n <= max_n; ++n) {
      if (n > 1) w.lv.next(n - 1);
      for (int q = 0; q < nk; ++q) {
        if (kinds[q] != n) continue;
        const int64_t pc = (int64_t)w.lv.at(0).size();
        for (int k = 1; k <= K; ++k) {
          const int64_t tc = (int64_t)w.lv.at(k).size();
          const int64_t overlap = (pc > 0 && tc > 0) ? w.lv.clipped(k, 0) : 0;
          offer(q, (double)overlap / (double)std::max<int64_t>(pc, 1),
                (double)overlap / (double)std::max<int64_t>(tc, 1));
        }
      }
    }
  }
  for (int q = 0; q < nk; ++q) {
    if (kinds[q] == ROUGE_L) {
      for (int k = 1; k <= K; ++k) {
        const std::vector<int32_t>& t = w.lv.uni[k];
        const int64_t tc = (int64_t)t.size();
        if (tc == 0 || np_ == 0) {
          offer(q, 0.0, 0.0);
          continue;
        }
        check_cells((double)tc * (double)np_, MAX_BIT_CELLS, "ROUGE-L", tc, np_);
        const int64_t L = w.bl.lcs(t.data(), tc, w.lv.uni[0].data(), np_, n_ids);
        offer(q, (double)L / (double)np_, (double)L / (double)tc);
      }
    } else if (kinds[q] == ROUGE_LSUM) {
      for (int k = 1; k <= K; ++k) {
        const std::vector<int32_t>& t = w.lv.uni[k];
        const int64_t tc = (int64_t)t.size();
        if (tc == 0 || np_ == 0) {
          offer(q, 0.0, 0.0);
          continue;
        }
        // One sentence with tokens on each side: every LCS token is a hit (each
        // occurs at least as often in both texts as in the LCS), so hits = LCS.
        const bool single = w.sents[k].front() == w.sents[k].back() && w.sents[0].front() == w.sents[0].back();
        check_cells((double)tc * (double)np_, single ? MAX_BIT_CELLS : MAX_LSUM_CELLS, "ROUGE-Lsum", tc, np_);
        const int64_t hits = single ? w.bl.lcs(t.data(), tc, w.lv.uni[0].data(), np_, n_ids) : lsum_hits(w, k, n_ids);
        offer(q, (double)hits / (double)np_, (double)hits / (double)tc);
      }
    }
  }
}

static void rouge_pair(const StrView& pred, const StrView* refs, int K, const int* kinds, int nk, bool stem,
                       RougeWork& w, double* out /* nk x 3 */) {
  if ((int)w.toks.size() < K + 1) {
    w.toks.resize(K + 1);
    w.sents.resize(K + 1);
  }
  rouge_tokens(pred, stem, w.toks[0], w.sents[0]);
  for (int k = 0; k < K; ++k) rouge_tokens(refs[k], stem, w.toks[k + 1], w.sents[k + 1]);
  token_ids(w.toks, K + 1, w.tids, w.lv);
  rouge_scores_of(w, K, (size_t)w.tids.next, kinds, nk, out);
}

// Token-ID pairs, parallel over pairs: sequences are tok[off[s]:off[s + 1]]; pair i's prediction is
// sequence pred[i], its references sequences ref_seq[seg[i]:seg[i + 1]]. One sentence per sequence.
static inline void rouge_all_ids(const int64_t* tok, const int64_t* off, const int64_t* pred, int64_t n,
                                 const int64_t* ref_seq, const int64_t* seg, const int* kinds, int nk, double* out,
                                 int nthreads) {
  struct Work {
    RougeWork r;
    IdMap map;
    std::vector<int64_t> seqs;
  };
  tmthreads::parallel_for(
      n, 32, nthreads, [] { return Work(); },
      [&](Work& w, int64_t i) {
        w.seqs.assign(1, pred[i]);
        w.seqs.insert(w.seqs.end(), ref_seq + seg[i], ref_seq + seg[i + 1]);
        const int nseq = (int)w.seqs.size();
        const size_t n_ids = dense_ids(tok, off, w.seqs.data(), nseq, w.map, w.r.lv);
        if ((int)w.r.sents.size() < nseq) w.r.sents.resize(nseq);
        for (int s = 0; s < nseq; ++s) w.r.sents[s].assign(w.r.lv.uni[s].size(), 0);
        rouge_scores_of(w.r, nseq - 1, n_ids, kinds, nk, out + i * nk * 3);
      },
      "ROUGE prediction");
}

// LCS length of each pair (a[a_off[p]:a_off[p+1]], b[b_off[p]:b_off[p+1]]), ids in [0, n_ids):
// bit-parallel (each thread keeps an id table n_ids long).
static inline void lcs_batch(const int32_t* a, const int64_t* a_off, const int32_t* b, const int64_t* b_off, int64_t n,
                             int32_t n_ids, int64_t* out, int nthreads) {
  tmthreads::parallel_for(
      n, 64, nthreads, [] { return BitLCS(); },
      [&](BitLCS& bl, int64_t p) {
        const int32_t *pa = a + a_off[p], *pb = b + b_off[p];
        const int64_t m = a_off[p + 1] - a_off[p], k = b_off[p + 1] - b_off[p];
        check_cells((double)m * (double)k, MAX_BIT_CELLS, "the LCS", m, k);
        out[p] = bl.lcs(pa, m, pb, k, (size_t)n_ids);
      },
      "pair");
}

// All pairs, parallel over pairs. refs: offsets[i]..offsets[i+1] are pair i's references.
static inline void rouge_all(const StrView* preds, const StrView* refs, const int64_t* offsets, int64_t n,
                             const int* kinds, int nk, bool stem, double* out, int nthreads) {
  tmthreads::parallel_for(
      n, 32, nthreads, [] { return RougeWork(); },
      [&](RougeWork& w, int64_t i) {
        rouge_pair(preds[i], refs + offsets[i], (int)(offsets[i + 1] - offsets[i]), kinds, nk, stem, w,
                   out + i * nk * 3);
      },
      "ROUGE prediction");
}

}  // namespace tmt
