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
#include <vector>

#include "text.hpp"

namespace tmt {

namespace ter {

constexpr int MAX_SHIFT_SIZE = 10, MAX_SHIFT_DIST = 50, BEAM_WIDTH = 25, MAX_SHIFT_CANDIDATES = 1000;
constexpr int64_t INF = 10000000000000000LL;  // sacrebleu's int(1e16)
enum Op : char { NOP = ' ', SUB = 's', INS = 'i', DEL = 'd', UNDEF = 'x' };

struct Cell { int64_t cost; char op; };

struct Work {
  std::vector<Cell> base, cand;          // (n_h + 1) x (n_r + 1) DP matrices
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
static int64_t beam_dp(const int32_t* h, int nh, const int32_t* r, int nr, std::vector<Cell>& dist, int from) {
  const int W = nr + 1;
  if ((int)dist.size() < (nh + 1) * W) dist.resize((size_t)(nh + 1) * W);
  if (from == 0)
    for (int j = 0; j <= nr; ++j) dist[j] = {(int64_t)j, INS};
  const double ratio = nh ? (double)nr / (double)nh : 1.0;
  const int beam = BEAM_WIDTH < ratio / 2 ? (int)std::ceil(ratio / 2 + BEAM_WIDTH) : BEAM_WIDTH;
  for (int i = from + 1; i <= nh; ++i) {
    Cell* row = &dist[(size_t)i * W];
    const Cell* up = row - W;
    for (int j = 0; j <= nr; ++j) row[j] = {INF, UNDEF};
    const int64_t diag = (int64_t)std::floor(i * ratio);
    const int lo = (int)std::max<int64_t>(0, diag - beam);
    const int hi = i == nh ? nr + 1 : (int)std::min<int64_t>(nr + 1, diag + beam);
    for (int j = lo; j < hi; ++j) {
      if (j == 0) { row[0] = {up[0].cost + 1, DEL}; continue; }
      const bool same = h[i - 1] == r[j - 1];
      Cell c = row[j];
      const int64_t sub = up[j - 1].cost + (same ? 0 : 1), del = up[j].cost + 1, ins = row[j - 1].cost + 1;
      if (c.cost > sub) c = {sub, same ? NOP : SUB};  // sacrebleu's order: no-op/sub, deletion, insertion
      if (c.cost > del) c = {del, DEL};
      if (c.cost > ins) c = {ins, INS};
      row[j] = c;
    }
  }
  return dist[(size_t)nh * W + nr].cost;
}

// The alignment of the base hypothesis (sacrebleu's flipped trace -> trace_to_alignment):
// align[ref pos] = hyp pos, and which hypothesis / reference words are errors.
static void alignment(const std::vector<Cell>& dist, int nh, int nr, Work& w) {
  const int W = nr + 1;
  w.trace.clear();
  for (int i = nh, j = nr; i > 0 || j > 0;) {
    const char op = dist[(size_t)i * W + j].op;
    w.trace.push_back(op);
    if (op == SUB || op == NOP) { --i; --j; }
    else if (op == INS) --j;
    else --i;  // DEL (UNDEF cannot be on the path: the last row spans every column)
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
    } else {                 // an insertion, flipped to a deletion: a reference word
      w.align[++pr] = ph;
      w.ref_err.push_back(1);
    }
  }
}

static void perform_shift(const std::vector<int32_t>& s, int start, int len, int target, std::vector<int32_t>& out) {
  out.clear();
  auto put = [&](int a, int b) { if (b > a) out.insert(out.end(), s.begin() + a, s.begin() + b); };
  const int n = (int)s.size();
  auto cl = [n](int x) { return x < 0 ? 0 : x > n ? n : x; };  // Python slice bounds
  if (target < start) {
    put(0, cl(target)); put(start, cl(start + len)); put(cl(target), start); put(cl(start + len), n);
  } else if (target > start + len) {
    put(0, start); put(cl(start + len), cl(target)); put(start, cl(start + len)); put(cl(target), n);
  } else {
    put(0, start); put(cl(start + len), cl(len + target)); put(start, cl(start + len)); put(cl(len + target), n);
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
  w.words.assign(hyp, hyp + nh);
  int64_t shifts = 0;
  int checked = 0;
  for (;;) {
    // one round of _shift on w.words
    const int64_t pre = beam_dp(w.words.data(), nh, r, nr, w.base, 0);
    alignment(w.base, nh, nr, w);
    bool have = false;
    int64_t b_score = 0;
    int b_len = 0, b_start = 0, b_idx = 0;
    bool stop = false;
    for (int sh = 0; sh < nh && !stop; ++sh) {
      for (int sr = 0; sr < nr && !stop; ++sr) {
        if (std::abs(sr - sh) > MAX_SHIFT_DIST) continue;
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
              const int W = nr + 1;
              if (w.cand.size() < w.base.size()) w.cand.resize(w.base.size());
              std::copy(w.base.begin(), w.base.begin() + (size_t)(common + 1) * W, w.cand.begin());
              const int64_t score = pre - beam_dp(w.shifted.data(), nh, r, nr, w.cand, common);
              ++checked;
              if (!have || score > b_score || (score == b_score && (len > b_len || (len == b_len &&
                  (sh < b_start || (sh == b_start && idx < b_idx)))))) {
                have = true;
                b_score = score; b_len = len; b_start = sh; b_idx = idx;
                w.best_words = w.shifted;
              }
            }
            if (checked >= MAX_SHIFT_CANDIDATES) { stop = true; break; }
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
  return shifts + beam_dp(w.words.data(), nh, r, nr, w.base, 0);
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
  int64_t best = ter::INF, total = 0;
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
  tmp::parallel_for(n, 16, nthreads, [] { return ter::Work(); }, [&](ter::Work& w, int64_t i) {
    ter_segment(hyps[i], refs + i * R, R, w, out + i * 3);
  });
}

}  // namespace tmt
