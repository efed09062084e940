// Text kernels: sacrebleu's tokenizers on code points, and BLEU's per-segment
// sufficient statistics on exact per-segment token ids.
//
// Strings are read in place from Python's PEP 393 storage (1, 2 or 4 bytes
// per code point), so the GIL can be released while segments are processed in
// parallel. The Python layer validates everything first.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tmt {

struct StrView {
  const void* data;  // nullptr: no string (a missing reference)
  int64_t len;
  int kind;          // bytes per code point: 1, 2 or 4
};

static inline uint32_t at(const StrView& s, int64_t i) {
  switch (s.kind) {
    case 1: return static_cast<const uint8_t*>(s.data)[i];
    case 2: return static_cast<const uint16_t*>(s.data)[i];
    default: return static_cast<const uint32_t*>(s.data)[i];
  }
}

// Python's str.isspace(), which str.split() and str.rstrip() use.
static inline bool is_space(uint32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
         c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}
static inline bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }  // regex [0-9]
static inline bool is_dot_comma(uint32_t c) { return c == '.' || c == ','; }
// 13a's first class [\{-\~\[-\` -\&\(-\+\:-\@\/]: space and !"#$%&()*+/:;<=>?@[\]^_`{|}~
static inline bool is_13a_punct(uint32_t c) {
  return (c >= 0x7b && c <= 0x7e) || (c >= 0x5b && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
         (c >= 0x28 && c <= 0x2b) || (c >= 0x3a && c <= 0x40) || c == 0x2f;
}

typedef std::vector<uint32_t> U32;

// s = s.replace(pat, rep) with Python's semantics (leftmost, non-overlapping).
static void replace_all(U32& s, const char* pat, const char* rep, U32& tmp) {
  const size_t m = std::strlen(pat), r = std::strlen(rep);
  if (s.size() < m) return;
  tmp.clear();
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    bool hit = i + m <= s.size();
    for (size_t j = 0; hit && j < m; ++j) hit = s[i + j] == (unsigned char)pat[j];
    if (hit) {
      for (size_t j = 0; j < r; ++j) tmp.push_back((unsigned char)rep[j]);
      i += m;
      any = true;
    } else {
      tmp.push_back(s[i++]);
    }
  }
  if (any) s.swap(tmp);
}

enum Tokenizer : int { TOK_13A = 0, TOK_CHAR = 1, TOK_NONE = 2 };

// Tokens as spans of `text`.
struct Tokens {
  U32 text;
  std::vector<int32_t> start, len;
  void clear() { text.clear(); start.clear(); len.clear(); }
  size_t size() const { return start.size(); }
};

// Append the whitespace-separated tokens of `s` (Python's str.split()).
static void split_into(const U32& s, Tokens& out) {
  out.clear();
  out.text = s;
  size_t i = 0, n = s.size();
  while (i < n) {
    while (i < n && is_space(s[i])) ++i;
    if (i == n) break;
    size_t j = i;
    while (j < n && !is_space(s[j])) ++j;
    out.start.push_back((int32_t)i);
    out.len.push_back((int32_t)(j - i));
    i = j;
  }
}

// sacrebleu's 13a: four literal replacements, padding, then four regex passes,
// each emulating re.sub's leftmost non-overlapping scan.
static void tok_13a(U32& a, U32& b) {
  replace_all(a, "<skipped>", "", b);
  replace_all(a, "-\n", "", b);
  replace_all(a, "\n", " ", b);
  if (std::find(a.begin(), a.end(), (uint32_t)'&') != a.end()) {
    replace_all(a, "&quot;", "\"", b);
    replace_all(a, "&amp;", "&", b);
    replace_all(a, "&lt;", "<", b);
    replace_all(a, "&gt;", ">", b);
  }
  // f' {line} ' and pass 1: ([\{-\~...]) -> ' \1 '
  b.clear();
  b.push_back(' ');
  for (uint32_t c : a) {
    if (is_13a_punct(c)) { b.push_back(' '); b.push_back(c); b.push_back(' '); }
    else b.push_back(c);
  }
  b.push_back(' ');
  // pass 2: ([^0-9])([\.,]) -> '\1 \2 '
  a.clear();
  for (size_t i = 0; i < b.size();) {
    if (i + 1 < b.size() && !is_digit(b[i]) && is_dot_comma(b[i + 1])) {
      a.push_back(b[i]); a.push_back(' '); a.push_back(b[i + 1]); a.push_back(' ');
      i += 2;
    } else a.push_back(b[i++]);
  }
  // pass 3: ([\.,])([^0-9]) -> ' \1 \2'
  b.clear();
  for (size_t i = 0; i < a.size();) {
    if (i + 1 < a.size() && is_dot_comma(a[i]) && !is_digit(a[i + 1])) {
      b.push_back(' '); b.push_back(a[i]); b.push_back(' '); b.push_back(a[i + 1]);
      i += 2;
    } else b.push_back(a[i++]);
  }
  // pass 4: ([0-9])(-) -> '\1 \2 '
  a.clear();
  for (size_t i = 0; i < b.size();) {
    if (i + 1 < b.size() && is_digit(b[i]) && b[i + 1] == '-') {
      a.push_back(b[i]); a.push_back(' '); a.push_back('-'); a.push_back(' ');
      i += 2;
    } else a.push_back(b[i++]);
  }
}

struct Scratch { U32 a, b; };

// rstrip() then the tokenizer then split(): the tokens BLEU counts.
static void tokenize(const StrView& s, int tok, Scratch& w, Tokens& out) {
  int64_t end = s.len;
  while (end > 0 && is_space(at(s, end - 1))) --end;
  U32& a = w.a;
  a.resize((size_t)end);
  for (int64_t i = 0; i < end; ++i) a[i] = at(s, i);
  if (tok == TOK_13A) tok_13a(a, w.b);
  else if (tok == TOK_CHAR) {  // ' '.join(line): every non-space code point is a token
    w.b.clear();
    for (uint32_t c : a) { w.b.push_back(c); w.b.push_back(' '); }
    a.swap(w.b);
  }
  split_into(a, out);
}

// ---------------------------------------------------------------- exact per-segment ids

static inline uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Open-addressing map from 64-bit keys to dense ids 0, 1, 2, ...
struct IdMap {
  std::vector<uint64_t> keys;
  std::vector<int32_t> vals;  // -1 = empty
  size_t mask = 0;
  int32_t next = 0;
  void reset(size_t n_items) {
    size_t cap = 16;
    while (cap < 2 * n_items) cap <<= 1;
    if (keys.size() < cap) { keys.resize(cap); vals.resize(cap); }
    mask = cap - 1;
    std::fill(vals.begin(), vals.begin() + cap, -1);
    next = 0;
  }
  int32_t id(uint64_t key) {
    size_t h = mix64(key) & mask;
    while (vals[h] >= 0) {
      if (keys[h] == key) return vals[h];
      h = (h + 1) & mask;
    }
    keys[h] = key;
    vals[h] = next;
    return next++;
  }
};

// Token content -> dense id, exact (hash collisions are resolved by comparing code points).
struct TokenIds {
  struct Slot { uint64_t hash; const uint32_t* p; int32_t len; int32_t id; };
  std::vector<Slot> slots;
  size_t mask = 0;
  int32_t next = 0;
  void reset(size_t n_items) {
    size_t cap = 16;
    while (cap < 2 * n_items) cap <<= 1;
    if (slots.size() < cap) slots.resize(cap);
    mask = cap - 1;
    for (size_t i = 0; i < cap; ++i) slots[i].id = -1;
    next = 0;
  }
  int32_t id(const uint32_t* p, int32_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (int32_t i = 0; i < len; ++i) h = (h ^ p[i]) * 1099511628211ULL;
    size_t k = mix64(h) & mask;
    while (slots[k].id >= 0) {
      Slot& s = slots[k];
      if (s.hash == h && s.len == len && std::memcmp(s.p, p, len * sizeof(uint32_t)) == 0) return s.id;
      k = (k + 1) & mask;
    }
    slots[k] = {h, p, len, next};
    return next++;
  }
};

// ---------------------------------------------------------------- BLEU statistics

struct BleuWork {
  Scratch scratch;
  std::vector<Tokens> toks;               // [0] hypothesis, then the references present
  std::vector<std::vector<int32_t>> uni;  // token ids per sequence
  std::vector<std::vector<int32_t>> gram; // current n-gram ids per sequence
  std::vector<int32_t> cnt_h, cnt_r, refmax, touched;
  TokenIds tids;
  IdMap pairs;
};

// out = [hyp_len, ref_len, correct_1..N, total_1..N] for one segment.
// refs: nrefs views, nullptr data = absent (at least one is present).
static void bleu_segment(const StrView& hyp, const StrView* refs, int nrefs, int tok, int N,
                         BleuWork& w, int64_t* out) {
  int nseq = 1;
  if ((int)w.toks.size() < nrefs + 1) w.toks.resize(nrefs + 1);
  tokenize(hyp, tok, w.scratch, w.toks[0]);
  for (int r = 0; r < nrefs; ++r)
    if (refs[r].data) tokenize(refs[r], tok, w.scratch, w.toks[nseq++]);
  size_t total_tokens = 0;
  for (int s = 0; s < nseq; ++s) total_tokens += w.toks[s].size();
  if ((int)w.uni.size() < nseq) { w.uni.resize(nseq); w.gram.resize(nseq); }
  w.tids.reset(total_tokens);
  for (int s = 0; s < nseq; ++s) {
    Tokens& t = w.toks[s];
    w.uni[s].resize(t.size());
    for (size_t i = 0; i < t.size(); ++i) w.uni[s][i] = w.tids.id(t.text.data() + t.start[i], t.len[i]);
    w.gram[s] = w.uni[s];
  }
  const int64_t hyp_len = (int64_t)w.toks[0].size();
  // closest reference length; on a tie the shorter
  int64_t best_diff = -1, ref_len = -1;
  for (int s = 1; s < nseq; ++s) {
    int64_t L = (int64_t)w.toks[s].size(), d = L > hyp_len ? L - hyp_len : hyp_len - L;
    if (best_diff < 0 || d < best_diff || (d == best_diff && L < ref_len)) { best_diff = d; ref_len = L; }
  }
  out[0] = hyp_len;
  out[1] = ref_len;
  size_t n_ids = (size_t)w.tids.next;
  for (int n = 1; n <= N; ++n) {
    if (w.cnt_h.size() < n_ids + 1) { w.cnt_h.assign(n_ids + 1, 0); w.cnt_r.assign(n_ids + 1, 0); w.refmax.assign(n_ids + 1, 0); }
    const std::vector<int32_t>& gh = w.gram[0];
    const int64_t nh = hyp_len - n + 1;
    out[1 + n] = 0;
    out[1 + N + n] = nh > 0 ? nh : 0;
    if (nh > 0) {
      for (int64_t i = 0; i < nh; ++i) w.cnt_h[gh[i]]++;
      for (int s = 1; s < nseq; ++s) {
        const int64_t nr = (int64_t)w.toks[s].size() - n + 1;
        w.touched.clear();
        for (int64_t i = 0; i < nr; ++i) {
          int32_t g = w.gram[s][i];
          if (w.cnt_r[g]++ == 0) w.touched.push_back(g);
        }
        for (int32_t g : w.touched) { w.refmax[g] = std::max(w.refmax[g], w.cnt_r[g]); w.cnt_r[g] = 0; }
      }
      int64_t correct = 0;
      for (int64_t i = 0; i < nh; ++i) {
        int32_t g = gh[i];
        if (w.cnt_h[g]) { correct += std::min(w.cnt_h[g], w.refmax[g]); w.cnt_h[g] = 0; }
      }
      out[1 + n] = correct;
      for (int s = 1; s < nseq; ++s) {
        const int64_t nr = (int64_t)w.toks[s].size() - n + 1;
        for (int64_t i = 0; i < nr; ++i) w.refmax[w.gram[s][i]] = 0;
      }
    }
    if (n == N) break;
    // (n+1)-gram id = id of the pair (n-gram id, next token id): exact, no hashing of tuples
    w.pairs.reset(total_tokens);
    for (int s = 0; s < nseq; ++s) {
      std::vector<int32_t>& g = w.gram[s];
      const int64_t m = (int64_t)w.toks[s].size() - n;  // number of (n+1)-grams
      for (int64_t i = 0; i < m; ++i)
        g[i] = w.pairs.id(((uint64_t)(uint32_t)g[i] << 32) | (uint32_t)w.uni[s][i + n]);
      if (m >= 0) g.resize(m > 0 ? m : 0);
    }
    n_ids = (size_t)w.pairs.next;
  }
}

// Python's sum() of floats: left to right before 3.12, Neumaier-compensated since.
static double py_sum(const double* v, int n, bool neumaier) {
  if (n == 0) return 0.0;
  double f = 0.0 + v[0], c = 0.0;  // int 0 + first item
  for (int i = 1; i < n; ++i) {
    if (!neumaier) { f += v[i]; continue; }
    double t = f + v[i];
    if (std::fabs(f) >= std::fabs(v[i])) c += (f - t) + v[i];
    else c += (v[i] - t) + f;
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
static double bleu_score(const int64_t* st, int N, int smooth, double smooth_value, bool effective,
                         bool neumaier, double* prec, double* correct, double* total, double* bp_out) {
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
    if (smooth == SM_ADDK && n > 1) { correct[n - 1] += smooth_value; total[n - 1] += smooth_value; }
    if (total[n - 1] == 0) break;
    if (effective) eff = n;
    if (correct[n - 1] == 0) {
      if (smooth == SM_EXP) { smooth_mteval *= 2; prec[n - 1] = 100. / (smooth_mteval * total[n - 1]); }
      else if (smooth == SM_FLOOR) prec[n - 1] = 100. * smooth_value / total[n - 1];
    } else {
      prec[n - 1] = 100. * correct[n - 1] / total[n - 1];
    }
  }
  std::vector<double> logs(eff);
  for (int n = 0; n < eff; ++n) logs[n] = prec[n] == 0.0 ? -9999999999.0 : std::log(prec[n]);
  return bp * std::exp(py_sum(logs.data(), eff, neumaier) / eff);
}

}  // namespace tmt

namespace tmt {

// Statistics of every segment, parallel over segments. refs is n x R (row per segment).
static inline void bleu_stats(const StrView* hyps, const StrView* refs, int64_t n, int R, int tok, int N,
                              int64_t* out, int nthreads) {
  const int64_t W = 2 + 2 * (int64_t)N;
#pragma omp parallel num_threads(nthreads)
  {
    BleuWork w;
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < n; ++i) bleu_segment(hyps[i], refs + i * R, R, tok, N, w, out + i * W);
  }
}

static inline void bleu_scores(const int64_t* stats, int64_t n, int N, int smooth, double smooth_value,
                               bool effective, bool neumaier, double* out) {
  std::vector<double> prec(N), correct(N), total(N);
  double bp;
  for (int64_t i = 0; i < n; ++i)
    out[i] = bleu_score(stats + i * (2 + 2 * (int64_t)N), N, smooth, smooth_value, effective, neumaier,
                        prec.data(), correct.data(), total.data(), &bp);
}

}  // namespace tmt
