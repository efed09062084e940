// The text kernels' entry points that _text.pyx binds: bleu_stats, tokenize_joined, chrf_stats (parallel
// over segments) and bleu_scores here, and tokenize, bleu_stats_ids, bleu_score and chrf_f from the
// headers below, which hold the kernels:
//   text_common.hpp  strings as code-point views of Python's storage, token buffers, the token hash
//   tokenizers.hpp   sacrebleu's tokenizers (13a, also in one streaming pass; intl, zh, char)
//   ngrams.hpp       exact dense ids of tokens, keys and n-grams (TokenIds, IdMap, Levels)
//   bleu.hpp         BLEU statistics and score
//   chrf.hpp         chrF statistics and F-score
//
// Strings are read in place from Python's PEP 393 storage (1, 2 or 4 bytes
// per code point), so the GIL can be released while segments are processed in
// parallel. The Python layer validates everything first.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "bleu.hpp"
#include "chrf.hpp"
#include "parallel.hpp"
#include "text_common.hpp"
#include "tokenizers.hpp"

namespace tmt {

// Statistics of every segment, parallel over segments. refs is n x R (row per segment).
static inline void bleu_stats(const StrView* hyps, const StrView* refs, int64_t n, int R, int tok, int tok_ref, int N,
                              int64_t* out, int nthreads) {
  const int64_t W = 2 + 2 * (int64_t)N;
  tmthreads::parallel_for(
      n, 64, nthreads, [] { return BleuWork(); },
      [&](BleuWork& w, int64_t i) { bleu_segment(hyps[i], refs + i * R, R, tok, tok_ref, N, w, out + i * W); },
      "BLEU segment");
}

// Tokenize texts (n views) into one buffer: tokens joined by single spaces, text i
// occupying [offsets[i], offsets[i+1]) of `out` (code points).
// Each text's tokens joined by single spaces, into per-thread buffers (no heap vector per text, no copy
// into one buffer after). A Latin-1 text's tokens are Latin-1 too (the tokenizers add only spaces and
// ASCII), so they go to the thread's byte buffer, a quarter of the memory: text i's are
// bytes[which[i]] (kind[i] 1) or wide[which[i]] (kind[i] 4), [at[i], at[i] + len[i]). Absent: len 0.
struct Joined {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::vector<uint32_t>> wide;
  std::vector<int32_t> which, kind;
  std::vector<int64_t> at, len;
};
template <class C> static inline void join_tokens(const Tokens& t, std::vector<C>& b) {
  for (size_t k = 0; k < t.size(); ++k) {
    if (k) b.push_back(' ');
    const uint32_t* p = t.text.data() + t.start[k];
    for (int32_t j = 0; j < t.len[k]; ++j) {
      if (sizeof(C) == 1 && p[j] > 0xff) throw std::logic_error("tokenize_joined: a Latin-1 text gave a wider token");
      b.push_back((C)p[j]);
    }
  }
}
static inline void tokenize_joined(const StrView* texts, int64_t n, int tok, Joined& out, int nthreads) {
  const size_t teams = (size_t)std::max(1, nthreads);  // one buffer per thread of the team, at most nthreads
  out.bytes.assign(teams, {});
  out.wide.assign(teams, {});
  out.which.assign((size_t)n, 0);
  out.kind.assign((size_t)n, 1);
  out.at.assign((size_t)n, 0);
  out.len.assign((size_t)n, 0);
  std::atomic<int> next{0};
  struct Work {
    Scratch w;
    Tokens t;
    int idx;
  };
  auto init = [&] {  // once per thread of the team, which has at most nthreads
    const int idx = next++;
    if ((size_t)idx >= teams) throw std::logic_error("tokenize_joined: more threads than buffers");
    return Work{Scratch(), Tokens(), idx};
  };
  tmthreads::parallel_for(
      n, 64, nthreads, init,
      [&](Work& s, int64_t i) {
        if (!texts[i].data) return;
        tokenize(texts[i], tok, s.w, s.t);
        out.which[i] = s.idx;
        if (texts[i].kind == 1) {
          std::vector<uint8_t>& b = out.bytes[(size_t)s.idx];
          out.at[i] = (int64_t)b.size();
          join_tokens(s.t, b);
          out.len[i] = (int64_t)b.size() - out.at[i];
        } else {
          std::vector<uint32_t>& b = out.wide[(size_t)s.idx];
          out.kind[i] = 4;
          out.at[i] = (int64_t)b.size();
          join_tokens(s.t, b);
          out.len[i] = (int64_t)b.size() - out.at[i];
        }
      },
      "text");
}

static inline void chrf_stats(const StrView* hyps, const StrView* refs, int64_t n, int R, int nc, int nw, double beta,
                              bool whitespace, bool eps_smoothing, int64_t* out, int nthreads) {
  const int64_t W = 3 * (int64_t)(nc + nw);
  tmthreads::parallel_for(
      n, 64, nthreads, [] { return ChrfWork(); },
      [&](ChrfWork& w, int64_t i) {
        chrf_segment(hyps[i], refs + i * R, R, nc, nw, beta, whitespace, eps_smoothing, w, out + i * W);
      },
      "chrF segment");
}

static inline void bleu_scores(const int64_t* stats, int64_t n, int N, int smooth, double smooth_value, bool effective,
                               bool neumaier, double* out) {
  std::vector<double> prec(N), correct(N), total(N);
  double bp;
  for (int64_t i = 0; i < n; ++i)
    out[i] = bleu_score(stats + i * (2 + 2 * (int64_t)N), N, smooth, smooth_value, effective, neumaier, prec.data(),
                        correct.data(), total.data(), &bp);
}

}  // namespace tmt
