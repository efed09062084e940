// Edit distances of id sequences (characters or words), as speech and OCR metrics count them:
//
// - levenshtein: the exact Levenshtein distance (unit costs; torchmetrics' WER, CER, MER, WIL and WIP), Hyyro's
//   bit-parallel algorithm in Myers' blocks of 64 pattern positions: O(n m / 64) word operations;
// - beam_edit: torchmetrics' EditDistance, which runs sacrebleu's TER beam (ter::Beam) with a substitution
//   cost, so its distance can exceed the exact one where the best path leaves the beam;
// - eed_row: the DP of the extended edit distance (torchmetrics' ExtendedEditDistance, RWTH's EED.py).
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bitparallel.hpp"
#include "ngrams.hpp"
#include "parallel.hpp"
#include "ter.hpp"
#include "text_common.hpp"
#include "tokenizers.hpp"

namespace tmt {

struct BitLevenshtein {
  MatchMasks mm;
  std::vector<uint64_t> vp, vn;
  std::vector<int64_t> dp;

  // O(m n) time, O(n) memory: the reference the bit-parallel result is tested against.
  int64_t distance_dp(const int32_t* a, int64_t m, const int32_t* b, int64_t n) {
    dp.resize((size_t)n + 1);
    for (int64_t j = 0; j <= n; ++j) dp[j] = j;
    for (int64_t i = 1; i <= m; ++i) {
      tmthreads::tick(n);
      int64_t diag = dp[0];
      dp[0] = i;
      for (int64_t j = 1; j <= n; ++j) {
        const int64_t up = dp[j];
        dp[j] = a[i - 1] == b[j - 1] ? diag : 1 + std::min(diag, std::min(up, dp[j - 1]));
        diag = up;
      }
    }
    return dp[n];
  }

  // (ValueError past MAX_BIT_CELLS, once the common prefix and suffix are gone)
  int64_t distance(const int32_t* a, int64_t m, const int32_t* b, int64_t n, size_t n_ids) {
    while (m && n && *a == *b) ++a, ++b, --m, --n;  // a common prefix or suffix changes nothing
    while (m && n && a[m - 1] == b[n - 1]) --m, --n;
    if (m > n) std::swap(a, b), std::swap(m, n);  // the shorter is the pattern: fewer words
    if (m == 0) return n;
    check_cells((double)m * (double)n, MAX_BIT_CELLS, "the edit distance", m, n);
    mm.build(a, m, n_ids);
    const int64_t W = mm.W;
    const uint64_t last = 1ULL << ((m - 1) % 64);  // the pattern's last row in its last word
    int64_t d = m;                                 // D[m][0]; then D[m][j] column by column
    // Per column: D0 marks rows where D[i][j] = D[i-1][j-1]; HP/HN the horizontal +1/-1 deltas, VP/VN the
    // vertical ones. A block takes the horizontal delta of the row above it (the top row's +1: D[0][j] = j) and
    // passes on its last row's (Myers 1999, Hyyro 2003). A -1 from above makes the block's first row a
    // diagonal zero, as a match does (D[i][j] >= D[i-1][j-1] always): so it joins the match mask, X = Eq | hn.
    if (W == 1) {
      uint64_t VP = ~0ULL, VN = 0;
      for (int64_t j = 0; j < n; ++j) {
        if ((j & 4095) == 4095) tmthreads::tick(4096);
        const uint64_t* p = mm.get(b[j]);
        const uint64_t X = p ? *p : 0;
        const uint64_t D0 = (((X & VP) + VP) ^ VP) | X | VN;
        uint64_t HP = VN | ~(D0 | VP), HN = D0 & VP;
        d += (HP & last) != 0;
        d -= (HN & last) != 0;
        HP = (HP << 1) | 1;
        HN <<= 1;
        VP = HN | ~(D0 | HP);
        VN = HP & D0;
      }
    } else {
      vp.assign((size_t)W, ~0ULL);
      vn.assign((size_t)W, 0);
      for (int64_t j = 0; j < n; ++j) {
        const uint64_t* p = mm.get(b[j]);
        uint64_t hp = 1, hn = 0;  // the deltas entering the block from above
        for (int64_t w = 0; w < W; ++w) {
          const uint64_t X = (p ? p[w] : 0) | hn, VP = vp[w], VN = vn[w];
          const uint64_t D0 = (((X & VP) + VP) ^ VP) | X | VN;
          uint64_t HP = VN | ~(D0 | VP), HN = D0 & VP;
          const uint64_t bottom = w == W - 1 ? last : 1ULL << 63;
          const uint64_t hp_out = (HP & bottom) != 0, hn_out = (HN & bottom) != 0;
          HP = (HP << 1) | hp;
          HN = (HN << 1) | hn;
          vp[w] = HN | ~(D0 | HP);
          vn[w] = HP & D0;
          hp = hp_out;
          hn = hn_out;
        }
        d += (int64_t)hp - (int64_t)hn;
        tmthreads::tick(W);
      }
    }
    mm.release();
    return d;
  }
};

// torchmetrics' _LE_distance(reference, op_substitute=sub)(hypothesis)[0]: rows the hypothesis h, columns the
// reference r, insertions and deletions 1, cells off the beam its int(1e16). Two rows of costs, O(n_r) memory.
static int64_t beam_edit(const int32_t* h, int64_t nh, const int32_t* r, int64_t nr, int64_t sub,
                         std::vector<int64_t>& prev, std::vector<int64_t>& cur) {
  constexpr int64_t INF = 10000000000000000;  // int(1e16); costs stay below it (sub < 2^20, texts < 2^31)
  prev.resize((size_t)nr + 1);
  cur.resize((size_t)nr + 1);
  for (int64_t j = 0; j <= nr; ++j) prev[j] = j;
  const ter::Beam beam(nh, nr);
  int64_t plo = 0, phi = nr + 1;  // the previous row's columns
  for (int64_t i = 1; i <= nh; ++i) {
    int64_t lo, hi;
    beam.row(i, lo, hi);
    auto above = [&](int64_t j) { return j >= plo && j < phi ? prev[j] : INF; };
    int64_t left = INF;
    for (int64_t j = lo; j < hi; ++j) {
      int64_t c;
      if (j == 0) {
        c = above(0) + 1;
      } else {
        c = INF;
        c = std::min(c, above(j - 1) + (h[i - 1] == r[j - 1] ? 0 : sub));
        c = std::min(c, above(j) + 1);
        c = std::min(c, left + 1);
      }
      cur[j] = c;
      left = c;
    }
    std::swap(prev, cur);
    plo = lo;
    phi = hi;
    tmthreads::tick(hi - lo);
  }
  return prev[nr];  // (the last row spans every column)
}

// EED.py's DP of hypothesis h against reference r (code points): CDER's edit distance (deletion, insertion or
// substitution costs) with a jump to the row's best cell, at `alpha`, after each reference space. Returns the
// last cell of the last row and sets `visits` to the coverage count (each hypothesis position's visits as the
// row's best, 1 for none), from which the caller makes the score in Python, as EED.py does. Only additions
// and comparisons, in EED.py's order: the same doubles.
static double eed_row(const U32& h, const U32& r, double alpha, double deletion, double insertion,
                      std::vector<double>& row, std::vector<double>& next, std::vector<int64_t>& seen,
                      int64_t& visits) {
  const size_t n = h.size();
  row.assign(n + 1, 1.0);
  row[0] = 0.0;
  next.resize(n + 1);
  seen.assign(n + 1, -1);
  for (size_t w = 0; w < r.size(); ++w) {
    const uint32_t c = r[w];
    next[0] = row[0] + 1.0;
    for (size_t i = 1; i <= n; ++i) {  // Python's min(deletion, substitution, insertion): the first smallest
      double v = next[i - 1] + deletion;
      const double sub = row[i - 1] + (h[i - 1] == c ? 0.0 : 1.0), ins = row[i] + insertion;
      if (sub < v) v = sub;
      if (ins < v) v = ins;
      next[i] = v;
    }
    size_t best = 0;  // next_row.index(min(next_row))
    for (size_t i = 1; i <= n; ++i)
      if (next[i] < next[best]) best = i;
    seen[best]++;
    if (c == ' ') {
      const double jump = alpha + next[best];
      for (size_t i = 0; i <= n; ++i)
        if (jump < next[i]) next[i] = jump;
    }
    std::swap(row, next);
    tmthreads::tick((int64_t)n + 1);
  }
  visits = 0;
  for (int64_t v : seen) visits += v >= 0 ? v : 1;
  return row[n];
}

// eed_row of each pair (h[p], r[p]) into last[p], visits[p].
static inline void eed_rows(const StrView* h, const StrView* r, int64_t n, double alpha, double deletion,
                            double insertion, double* last, int64_t* visits, int nthreads) {
  struct Work {
    U32 a, b;
    std::vector<double> row, next;
    std::vector<int64_t> seen;
  };
  tmthreads::parallel_for(
      n, 16, nthreads, [] { return Work(); },
      [&](Work& w, int64_t p) {
        load(h[p], h[p].len, w.a);
        load(r[p], r[p].len, w.b);
        last[p] = eed_row(w.a, w.b, alpha, deletion, insertion, w.row, w.next, w.seen, visits[p]);
      },
      "pair");
}

// [edit distance, tokens of a[p], tokens of b[p]] of each pair of texts into out[3 p...]: by words (str.split())
// if `words`, else by code points (list(text)), each pair's tokens as exact dense ids; Levenshtein if sub < 0,
// else torchmetrics' beam with that substitution cost (rows a, columns b).
static inline void edit_texts(const StrView* a, const StrView* b, int64_t n, bool words, int64_t sub, int64_t* out,
                              int nthreads) {
  if (sub >= ((int64_t)1 << 20)) throw std::invalid_argument("the substitution cost must be below 2^20");
  struct Work {
    BitLevenshtein bl;
    std::vector<int64_t> prev, cur;
    Scratch scratch;
    std::vector<Tokens> toks = std::vector<Tokens>(2);
    TokenIds tids;
    Levels lv;
    IdMap chars;
    U32 text;
    std::vector<int32_t> ids[2];
  };
  tmthreads::parallel_for(
      n, 64, nthreads, [] { return Work(); },
      [&](Work& w, int64_t p) {
        size_t n_ids;
        const std::vector<int32_t>*x, *y;
        if (words) {
          tokenize(a[p], TOK_NONE, w.scratch, w.toks[0]);  // rstrip() and split(): str.split()'s words
          tokenize(b[p], TOK_NONE, w.scratch, w.toks[1]);
          token_ids(w.toks, 2, w.tids, w.lv);
          n_ids = (size_t)w.tids.next;
          x = &w.lv.uni[0];
          y = &w.lv.uni[1];
        } else {
          w.chars.reset((size_t)(a[p].len + b[p].len));
          for (int k = 0; k < 2; ++k) {
            const StrView& s = k ? b[p] : a[p];
            load(s, s.len, w.text);
            w.ids[k].resize(w.text.size());
            for (size_t i = 0; i < w.text.size(); ++i) w.ids[k][i] = w.chars.id(w.text[i]);
          }
          n_ids = (size_t)w.chars.next;
          x = &w.ids[0];
          y = &w.ids[1];
        }
        const int64_t m = (int64_t)x->size(), k = (int64_t)y->size();
        int64_t* o = out + 3 * p;
        if (sub < 0) {
          o[0] = w.bl.distance(x->data(), m, y->data(), k, std::max<size_t>(n_ids, 1));
        } else {
          o[0] = beam_edit(x->data(), m, y->data(), k, sub, w.prev, w.cur);
        }
        o[1] = m;
        o[2] = k;
      },
      "pair");
}

}  // namespace tmt
