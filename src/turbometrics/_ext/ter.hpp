// TER (translation edit rate) with sacrebleu 2.6.0's numbers: its Tercom-like shift
// search, operation for operation, on exact per-segment token ids.
//
// The edit distance is a Levenshtein DP restricted to a beam around the
// length-scaled diagonal; shifts of up to 10 words, at most 50 positions away,
// are tried greedily (the best one per round, ranked by edit reduction, then
// length, then earliest start, then earliest target) until none helps or 1,000
// candidates have been scored. sacrebleu caches DP rows in a trie keyed by the
// hypothesis prefix; every hypothesis seen in one search has the same length,
// so a cached row equals the recomputed one: here the rows of the round's base
// hypothesis are reused for the prefix a candidate shares with it.
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ngrams.hpp"
#include "parallel.hpp"
#include "text_common.hpp"
#include "tokenizers.hpp"

namespace tmt {

namespace ter {

constexpr int MAX_SHIFT_SIZE = 10, MAX_SHIFT_DIST = 50, BEAM_WIDTH = 25, MAX_SHIFT_CANDIDATES = 1000;
// sacrebleu's int(1e16) marks cells off the beam. Costs are at most n_h + n_r < 2^29 (texts are at most
// 2^28 code points), and a cell only ever takes a strictly smaller cost than INF, so a 32-bit INF above
// every real cost compares the same: cells are 8 bytes instead of 16.
constexpr int32_t INF = 1 << 30;
// The beam DP's cells of one segment, past which TER raises ValueError instead of trying: up to 1,000
// shift candidates each rerun the DP, so this bounds a segment to ~1.7e10 cell updates (about a minute
// on one core) and its two matrices to 256 MiB. A 46,000-token pair needs 2.4M cells; a 1M-token
// hypothesis against a 2,200-token reference needs 51M.
constexpr int64_t MAX_CELLS = (int64_t)1 << 24;
enum Op : char { NOP = ' ', SUB = 's', INS = 'i', DEL = 'd', UNDEF = 'x' };

struct Cell {
  int32_t cost;
  char op;
};

// sacrebleu's beam over an n_h x n_r DP: row i (1..n_h) spans columns [lo, hi) around the length-scaled
// diagonal; row 0 and row n_h span every column. (torchmetrics' EditDistance keeps the same beam.)
struct Beam {
  int64_t nh, nr, beam;
  double ratio;
  Beam(int64_t nh_, int64_t nr_) : nh(nh_), nr(nr_) {
    ratio = nh ? (double)nr / (double)nh : 1.0;
    beam = BEAM_WIDTH < ratio / 2 ? (int64_t)std::ceil(ratio / 2 + BEAM_WIDTH) : BEAM_WIDTH;
  }
  void row(int64_t i, int64_t& lo, int64_t& hi) const {
    const int64_t diag = (int64_t)std::floor(i * ratio);
    lo = std::min<int64_t>(nr + 1, std::max<int64_t>(0, diag - beam));
    hi = i == nh ? nr + 1 : std::max<int64_t>(lo, std::min<int64_t>(nr + 1, diag + beam));
  }
};

// Row i of the beam DP holds columns [lo[i], hi[i]) at cells[off[i]...]; the rest of the row is
// {INF, UNDEF}. The band depends only on (n_h, n_r), so one layout serves every hypothesis of a search.
struct Band {
  std::vector<int32_t> lo, hi;
  std::vector<int64_t> off;
  int nh = -1, nr = -1;
  void fit(int nh_, int nr_) {
    if (nh_ == nh && nr_ == nr) return;
    nh = nr = -1;  // until the rows are laid out
    lo.resize((size_t)nh_ + 1);
    hi.resize((size_t)nh_ + 1);
    off.resize((size_t)nh_ + 2);
    nh = nh_;
    nr = nr_;
    const Beam beam(nh, nr);
    lo[0] = 0;
    hi[0] = nr + 1;
    off[0] = 0;
    off[1] = nr + 1;
    for (int i = 1; i <= nh; ++i) {
      int64_t l, h;
      beam.row(i, l, h);
      lo[i] = (int32_t)l;
      hi[i] = (int32_t)h;
      off[i + 1] = off[i] + (hi[i] - lo[i]);
    }
  }
  int64_t cells() const { return off[(size_t)nh + 1]; }
  Cell get(const std::vector<Cell>& d, int i, int j) const {
    return j >= lo[i] && j < hi[i] ? d[(size_t)(off[i] + j - lo[i])] : Cell{INF, UNDEF};
  }
};

struct Work {
  Band band;
  std::vector<Cell> base, cand;  // the beam DP of the round's base hypothesis and of a candidate
  std::vector<int32_t> words, shifted, best_words;
  std::vector<char> trace;
  std::vector<int32_t> align, hyp_err, ref_err;
  Scratch scratch;
  std::vector<Tokens> toks;
  TokenIds tids;
  Levels lv;
};

// The beam DP of sacrebleu's BeamEditDistance over rows from+1..n_h of `dist`
// (rows 0..from already filled); returns the edit distance.
static int64_t beam_dp(const int32_t* h, int nh, const int32_t* r, int nr, const Band& b, std::vector<Cell>& dist,
                       int from) {
  if ((int64_t)dist.size() < b.cells()) dist.resize((size_t)b.cells());
  if (from == 0)
    for (int j = 0; j <= nr; ++j) dist[j] = {j, INS};
  for (int i = from + 1; i <= nh; ++i) {
    Cell* row = dist.data() + b.off[i];  // row[j - lo] is column j
    const Cell* up = dist.data() + b.off[i - 1];
    const int lo = b.lo[i], hi = b.hi[i], ulo = b.lo[i - 1], uhi = b.hi[i - 1];
    auto above = [&](int j) { return j >= ulo && j < uhi ? up[j - ulo].cost : INF; };
    int32_t left = INF;  // row[j - 1]'s cost, INF left of the band
    auto put = [&](int j, int32_t up_left, int32_t up_here) {
      const bool same = h[i - 1] == r[j - 1];
      Cell c = {INF, UNDEF};
      const int32_t sub = up_left + (same ? 0 : 1), del = up_here + 1, ins = left + 1;
      if (c.cost > sub) c = {sub, same ? NOP : SUB};  // sacrebleu's order: no-op/sub, deletion, insertion
      if (c.cost > del) c = {del, DEL};
      if (c.cost > ins) c = {ins, INS};
      row[j - lo] = c;
      left = c.cost;
    };
    int j = lo;
    if (j == 0 && j < hi) {
      row[0] = {above(0) + 1, DEL};
      left = row[0].cost;
      j = 1;
    }
    // the row above holds both j - 1 and j for ulo < j < uhi: no bounds checks there
    const int fast_lo = std::min(hi, std::max(j, ulo + 1)), fast_hi = std::max(fast_lo, std::min(hi, uhi));
    for (; j < fast_lo; ++j) put(j, above(j - 1), above(j));
    for (; j < fast_hi; ++j) put(j, up[j - 1 - ulo].cost, up[j - ulo].cost);
    for (; j < hi; ++j) put(j, above(j - 1), above(j));
    tmthreads::tick(hi - lo);
  }
  return b.get(dist, nh, nr).cost;
}

// The alignment of the base hypothesis (sacrebleu's flipped trace -> trace_to_alignment):
// align[ref pos] = hyp pos, and which hypothesis / reference words are errors.
static void alignment(const std::vector<Cell>& dist, int nh, int nr, Work& w) {
  w.trace.clear();
  for (int i = nh, j = nr; i > 0 || j > 0;) {
    const char op = w.band.get(dist, i, j).op;
    w.trace.push_back(op);
    if (op == SUB || op == NOP) {
      --i;
      --j;
    } else if (op == INS)
      --j;
    else
      --i;  // DEL (UNDEF cannot be on the path: the last row spans every column)
  }
  w.align.assign((size_t)nr, -1);
  w.hyp_err.clear();
  w.ref_err.clear();
  int ph = -1, pr = -1;
  for (size_t k = w.trace.size(); k-- > 0;) {
    const char op = w.trace[k];  // flipped: insertions and deletions swap sides
    if (op == NOP || op == SUB) {
      w.align[++pr] = ++ph;
      w.hyp_err.push_back(op == SUB);
      w.ref_err.push_back(op == SUB);
    } else if (op == DEL) {  // flipped to an insertion: a hypothesis word
      ++ph;
      w.hyp_err.push_back(1);
    } else {  // an insertion, flipped to a deletion: a reference word
      w.align[++pr] = ph;
      w.ref_err.push_back(1);
    }
  }
}

static void perform_shift(const std::vector<int32_t>& s, int start, int len, int target, std::vector<int32_t>& out) {
  out.clear();
  auto put = [&](int a, int b) {
    if (b > a) out.insert(out.end(), s.begin() + a, s.begin() + b);
  };
  const int n = (int)s.size();
  auto cl = [n](int x) { return x < 0 ? 0 : x > n ? n : x; };  // Python slice bounds
  if (target < start) {
    put(0, cl(target));
    put(start, cl(start + len));
    put(cl(target), start);
    put(cl(start + len), n);
  } else if (target > start + len) {
    put(0, start);
    put(cl(start + len), cl(target));
    put(start, cl(start + len));
    put(cl(target), n);
  } else {
    put(0, start);
    put(cl(start + len), cl(len + target));
    put(start, cl(start + len));
    put(cl(len + target), n);
  }
}

static inline int err_sum(const std::vector<int32_t>& e, int a, int len) {
  int s = 0;
  for (int k = a; k < a + len && k < (int)e.size(); ++k) s += e[k];
  return s;
}

// sacrebleu's translation_edit_rate: (number of edits, reference length).
static int64_t edits(const int32_t* hyp, int nh, const int32_t* r, int nr, Work& w) {
  if (nr == 0) return nh;
  auto too_many = [&](int64_t cells, const char* how) {
    throw std::invalid_argument("TER of a " + std::to_string(nh) + "-token hypothesis against a " + std::to_string(nr) +
                                "-token reference needs " + how + std::to_string(cells) +
                                " beam DP cells, over the limit of " + std::to_string(MAX_CELLS) +
                                " (about a minute of shift search); split the segment");
  };
  // every row holds a cell at least, the first and the last n_r + 1: a bound before laying out the rows
  if ((int64_t)nh + nr + 1 > MAX_CELLS) too_many((int64_t)nh + nr + 1, "at least ");
  w.band.fit(nh, nr);
  if (w.band.cells() > MAX_CELLS) too_many(w.band.cells(), "");
  const Band& band = w.band;
  w.words.assign(hyp, hyp + nh);
  int64_t shifts = 0;
  int checked = 0;
  for (;;) {
    // one round of _shift on w.words
    const int64_t pre = beam_dp(w.words.data(), nh, r, nr, band, w.base, 0);
    alignment(w.base, nh, nr, w);
    bool have = false;
    int64_t b_score = 0;
    int b_len = 0, b_start = 0, b_idx = 0;
    bool stop = false;
    for (int sh = 0; sh < nh && !stop; ++sh) {
      // only |sr - sh| <= MAX_SHIFT_DIST can shift (sacrebleu scans every sr and skips the rest)
      for (int sr = std::max(0, sh - MAX_SHIFT_DIST); sr < std::min(nr, sh + MAX_SHIFT_DIST + 1) && !stop; ++sr) {
        for (int len = 1; len <= MAX_SHIFT_SIZE; ++len) {  // the matching run grows one word at a time
          if (w.words[sh + len - 1] != r[sr + len - 1]) break;
          if (err_sum(w.hyp_err, sh, len) != 0 && err_sum(w.ref_err, sr, len) != 0 &&
              !(sh <= w.align[sr] && w.align[sr] < sh + len)) {
            int prev = -1;
            for (int off = -1; off < len; ++off) {
              const int idx = sr + off == -1 ? 0 : w.align[sr + off] + 1;
              if (idx == prev) continue;
              prev = idx;
              perform_shift(w.words, sh, len, idx, w.shifted);
              // rows for the prefix the candidate shares with the base are the base's
              int common = 0;
              while (common < nh && w.shifted[common] == w.words[common]) ++common;
              if (w.cand.size() < w.base.size()) w.cand.resize(w.base.size());
              std::copy(w.base.begin(), w.base.begin() + band.off[(size_t)common + 1], w.cand.begin());
              const int64_t score = pre - beam_dp(w.shifted.data(), nh, r, nr, band, w.cand, common);
              ++checked;
              if (!have || score > b_score ||
                  (score == b_score &&
                   (len > b_len || (len == b_len && (sh < b_start || (sh == b_start && idx < b_idx)))))) {
                have = true;
                b_score = score;
                b_len = len;
                b_start = sh;
                b_idx = idx;
                w.best_words = w.shifted;
              }
            }
            if (checked >= MAX_SHIFT_CANDIDATES) {
              stop = true;
              break;
            }
          }
          if (nh == sh + len || nr == sr + len) break;  // one sequence is consumed
        }
      }
    }
    if (checked >= MAX_SHIFT_CANDIDATES) break;
    if (!have || b_score <= 0) break;
    ++shifts;
    w.words.swap(w.best_words);
  }
  return shifts + beam_dp(w.words.data(), nh, r, nr, band, w.base, 0);
}

}  // namespace ter

// out = [best edits over the references, sum of reference lengths, number of references] for one
// segment; texts are already preprocessed (sacrebleu's TercomTokenizer) and split on whitespace here.
static void ter_segment(const StrView& hyp, const StrView* refs, int nrefs, ter::Work& w, int64_t* out) {
  int nseq = 1;
  if ((int)w.toks.size() < nrefs + 1) w.toks.resize(nrefs + 1);
  tokenize(hyp, TOK_NONE, w.scratch, w.toks[0]);
  for (int r = 0; r < nrefs; ++r)
    if (refs[r].data) tokenize(refs[r], TOK_NONE, w.scratch, w.toks[nseq++]);
  token_ids(w.toks, nseq, w.tids, w.lv);
  const std::vector<int32_t>& h = w.lv.uni[0];
  int64_t best = INT64_MAX, total = 0;
  for (int s = 1; s < nseq; ++s) {
    const std::vector<int32_t>& r = w.lv.uni[s];
    const int64_t e = ter::edits(h.data(), (int)h.size(), r.data(), (int)r.size(), w);
    total += (int64_t)r.size();
    if (e < best) best = e;
  }
  out[0] = best;
  out[1] = total;
  out[2] = nseq - 1;
}

static inline void ter_stats(const StrView* hyps, const StrView* refs, int64_t n, int R, int64_t* out, int nthreads) {
  tmthreads::parallel_for(
      n, 16, nthreads, [] { return ter::Work(); },
      [&](ter::Work& w, int64_t i) { ter_segment(hyps[i], refs + i * R, R, w, out + i * 3); }, "TER segment");
}

}  // namespace tmt
