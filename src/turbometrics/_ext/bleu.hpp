// BLEU: per-segment sufficient statistics (hypothesis length, closest reference length, clipped n-gram
// matches and totals per order) on exact per-segment ids, from text or from token-ID input; and
// sacrebleu's score from them (bleu_score).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ngrams.hpp"
#include "parallel.hpp"
#include "text_common.hpp"
#include "tokenizers.hpp"

namespace tmt {

struct BleuWork {
  Scratch scratch;
  std::vector<Tokens> toks;  // [0] hypothesis, then the references present
  TokenIds tids;
  IdMap ids;  // token-ID input: the ids made dense
  Levels lv;
  std::vector<int32_t> refmax;
  std::vector<uint64_t> masks, hmask;  // bleu_counts_short
};

// correct_n of bleu_counts_short from the n-gram position sets: H[i] (the hypothesis), then M_s[i] at
// s * Lh + i. HW: with the popcount instruction, every position without a branch.
template <bool HW>
static inline __attribute__((always_inline)) int64_t bleu_short_correct(const uint64_t* H, int Lh, int m, int R) {
  int64_t correct = 0;
  for (int i = 0; i < m; ++i) {
    const uint64_t self = H[i];
    const bool first = !(self & (((uint64_t)1 << i) - 1));  // this n-gram's first position
    if constexpr (HW) {
      int best = 0;
      for (int s = 1; s <= R; ++s) best = std::max(best, __builtin_popcountll(H[(size_t)s * Lh + i]));
      correct += first ? std::min(__builtin_popcountll(self), best) : 0;
    } else {
      if (!first) continue;
      if (!(self & (self - 1))) {  // once in the hypothesis (most n-grams): 1 if any reference has it
        uint64_t any = 0;
        for (int s = 1; s <= R; ++s) any |= H[(size_t)s * Lh + i];
        correct += any != 0;
        continue;
      }
      int best = 0;
      for (int s = 1; s <= R; ++s) best = std::max(best, popcount64(H[(size_t)s * Lh + i]));
      correct += std::min(popcount64(self), best);
    }
  }
  return correct;
}
TM_POPCNT_TARGET static int64_t bleu_short_correct_popcnt(const uint64_t* H, int Lh, int m, int R) {
  return bleu_short_correct<true>(H, Lh, m, R);
}

// correct_1..N of a segment whose texts all have at most 64 tokens, by bit masks instead of n-gram ids.
// mask[id] has bit p set where the text holds token id at p; for the n-gram at hypothesis position i,
// H[i] marks the hypothesis positions holding the same n-gram and M_s[i] those of reference s:
// H_n[i] = H_{n-1}[i] & (hyp_mask[h[i + n - 1]] >> (n - 1)), and likewise M. Each distinct n-gram
// (its first position: no lower bit in H) adds min(popcount H, max over s of popcount M_s), which is
// correct_n's definition. A few word operations per position and order, no hashing.
static bool bleu_counts_short(BleuWork& w, int nseq, size_t n_ids, int N, int64_t* out) {
  const std::vector<std::vector<int32_t>>& uni = w.lv.uni;
  for (int s = 0; s < nseq; ++s)
    if (uni[s].size() > 64) return false;
  const std::vector<int32_t>& h = uni[0];
  const int Lh = (int)h.size(), R = nseq - 1;
  std::vector<uint64_t>& mask = w.masks;  // (R + 1) x n_ids, zero between uses
  if (mask.size() < (size_t)nseq * n_ids) mask.assign((size_t)nseq * n_ids, 0);
  for (int s = 0; s < nseq; ++s)
    for (size_t p = 0; p < uni[s].size(); ++p) mask[(size_t)s * n_ids + uni[s][p]] |= (uint64_t)1 << p;
  std::vector<uint64_t>& H = w.hmask;  // H[i], then M_s[i] at (s) * Lh + i
  H.resize((size_t)nseq * Lh);
  for (int s = 0; s < nseq; ++s)
    for (int i = 0; i < Lh; ++i) H[(size_t)s * Lh + i] = mask[(size_t)s * n_ids + h[i]];
  const bool popcnt = have_popcnt();
  for (int n = 1; n <= N && n <= Lh; ++n) {
    const int m = Lh - n + 1;
    if (n > 1)
      for (int s = 0; s < nseq; ++s)
        for (int i = 0; i < m; ++i) H[(size_t)s * Lh + i] &= mask[(size_t)s * n_ids + h[i + n - 1]] >> (n - 1);
    out[1 + n] = popcnt ? bleu_short_correct_popcnt(H.data(), Lh, m, R) : bleu_short_correct<false>(H.data(), Lh, m, R);
  }
  for (int s = 0; s < nseq; ++s)
    for (int32_t id : uni[s]) mask[(size_t)s * n_ids + id] = 0;
  return true;
}

// out = [hyp_len, ref_len, correct_1..N, total_1..N] from the dense ids in w.lv.uni[0..nseq)
// (0: the hypothesis, then its references; n_ids of them).
static void bleu_counts(BleuWork& w, int nseq, size_t n_ids, int N, int64_t* out) {
  Levels& lv = w.lv;
  const int64_t hyp_len = (int64_t)lv.uni[0].size();
  int64_t best_diff = -1, ref_len = -1;  // closest reference length; on a tie the shorter
  for (int s = 1; s < nseq; ++s) {
    int64_t L = (int64_t)lv.uni[s].size(), d = L > hyp_len ? L - hyp_len : hyp_len - L;
    if (best_diff < 0 || d < best_diff || (d == best_diff && L < ref_len)) {
      best_diff = d;
      ref_len = L;
    }
  }
  out[0] = hyp_len;
  out[1] = ref_len;
  for (int n = 1; n <= N; ++n) {
    out[1 + n] = 0;
    out[1 + N + n] = std::max<int64_t>(0, hyp_len - n + 1);
  }
  if (bleu_counts_short(w, nseq, n_ids, N, out)) return;
  lv.begin(nseq, n_ids);
  for (int n = 1; n <= N; ++n) {
    tmthreads::tick((int64_t)lv.total);  // a long segment is seconds of work
    if (n > 1) lv.next(n - 1);
    const std::vector<int32_t>& gh = lv.at(0);
    out[1 + n] = 0;
    out[1 + N + n] = (int64_t)gh.size();
    if (!gh.empty()) {
      if (w.refmax.size() < lv.n_ids + 1) w.refmax.assign(lv.n_ids + 1, 0);
      // clip by the maximum count over the references
      for (int s = 1; s < nseq; ++s) {
        lv.touched.clear();
        for (int32_t g : lv.at(s))
          if (lv.cnt2[g]++ == 0) lv.touched.push_back(g);
        for (int32_t g : lv.touched) {
          w.refmax[g] = std::max(w.refmax[g], lv.cnt2[g]);
          lv.cnt2[g] = 0;
        }
      }
      int64_t correct = 0;
      for (int32_t g : gh) lv.cnt[g]++;
      for (int32_t g : gh)
        if (lv.cnt[g]) {
          correct += std::min(lv.cnt[g], w.refmax[g]);
          lv.cnt[g] = 0;
        }
      out[1 + n] = correct;
      for (int s = 1; s < nseq; ++s)
        for (int32_t g : lv.at(s)) w.refmax[g] = 0;
    }
  }
}

// One segment of text. refs: nrefs views, nullptr data = absent (at least one is present).
// tok_ref differs from tok when the references come already tokenized (TOK_NONE).
static void bleu_segment(const StrView& hyp, const StrView* refs, int nrefs, int tok, int tok_ref, int N, BleuWork& w,
                         int64_t* out) {
  int nseq = 1;
  if ((int)w.toks.size() < nrefs + 1) w.toks.resize(nrefs + 1);
  tokenize(hyp, tok, w.scratch, w.toks[0]);
  for (int r = 0; r < nrefs; ++r)
    if (refs[r].data) tokenize(refs[r], tok_ref, w.scratch, w.toks[nseq++]);
  token_ids(w.toks, nseq, w.tids, w.lv);
  bleu_counts(w, nseq, (size_t)w.tids.next, N, out);
}

// BLEU statistics of token-ID segments, parallel over segments: sequences are tok[off[s]:off[s + 1]];
// segment i's hypothesis is sequence hyp[i], its references sequences ref_seq[seg[i]:seg[i + 1]].
static inline void bleu_stats_ids(const int64_t* tok, const int64_t* off, const int64_t* hyp, int64_t n,
                                  const int64_t* ref_seq, const int64_t* seg, int N, int64_t* out, int nthreads) {
  const int64_t W = 2 + 2 * (int64_t)N;
  struct Work {
    BleuWork b;
    std::vector<int64_t> seqs;
  };
  tmthreads::parallel_for(
      n, 64, nthreads, [] { return Work(); },
      [&](Work& w, int64_t i) {
        w.seqs.assign(1, hyp[i]);
        w.seqs.insert(w.seqs.end(), ref_seq + seg[i], ref_seq + seg[i + 1]);
        const int nseq = (int)w.seqs.size();
        const size_t n_ids = dense_ids(tok, off, w.seqs.data(), nseq, w.b.ids, w.b.lv);
        bleu_counts(w.b, nseq, n_ids, N, out + i * W);
      },
      "BLEU segment");
}

// Python's sum() of floats: left to right before 3.12, Neumaier-compensated since.
static double py_sum(const double* v, int n, bool neumaier) {
  if (n == 0) return 0.0;
  double f = 0.0 + v[0], c = 0.0;  // int 0 + first item
  for (int i = 1; i < n; ++i) {
    if (!neumaier) {
      f += v[i];
      continue;
    }
    double t = f + v[i];
    if (std::fabs(f) >= std::fabs(v[i]))
      c += (f - t) + v[i];
    else
      c += (v[i] - t) + f;
    f = t;
  }
  if (neumaier && c != 0.0 && std::isfinite(c)) f += c;
  return f;
}

enum Smooth : int { SM_NONE = 0, SM_FLOOR = 1, SM_ADDK = 2, SM_EXP = 3 };

// sacrebleu's compute_bleu, operation for operation. st = [sys_len, ref_len,
// correct_1..N, total_1..N]. Fills prec (percent), and correct/total as
// sacrebleu reports them (add-k adds k to the orders it reached); returns the
// score and sets *bp_out.
static double bleu_score(const int64_t* st, int N, int smooth, double smooth_value, bool effective, bool neumaier,
                         double* prec, double* correct, double* total, double* bp_out) {
  const double sys_len = (double)st[0], ref_len = (double)st[1];
  double bp = 1.0;
  if (st[0] < st[1]) bp = st[0] > 0 ? std::exp(1.0 - ref_len / sys_len) : 0.0;
  *bp_out = bp;
  bool any = false;
  for (int n = 0; n < N; ++n) {
    correct[n] = (double)st[2 + n];
    total[n] = (double)st[2 + N + n];
    prec[n] = 0.0;
    any |= st[2 + n] != 0;
  }
  if (!any) return 0.0;  // checked before any smoothing (sacrebleu #141)
  double smooth_mteval = 1.0;
  int eff = N;
  for (int n = 1; n <= N; ++n) {
    if (smooth == SM_ADDK && n > 1) {
      correct[n - 1] += smooth_value;
      total[n - 1] += smooth_value;
    }
    if (total[n - 1] == 0) break;
    if (effective) eff = n;
    if (correct[n - 1] == 0) {
      if (smooth == SM_EXP) {
        smooth_mteval *= 2;
        prec[n - 1] = 100. / (smooth_mteval * total[n - 1]);
      } else if (smooth == SM_FLOOR)
        prec[n - 1] = 100. * smooth_value / total[n - 1];
    } else {
      prec[n - 1] = 100. * correct[n - 1] / total[n - 1];
    }
  }
  std::vector<double> logs(eff);
  for (int n = 0; n < eff; ++n) logs[n] = prec[n] == 0.0 ? -9999999999.0 : std::log(prec[n]);
  return bp * std::exp(py_sum(logs.data(), eff, neumaier) / eff);
}

}  // namespace tmt
