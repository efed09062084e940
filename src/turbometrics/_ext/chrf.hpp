// chrF: per-segment statistics ([hyp, ref, match] counts per character and word n-gram order, of the
// reference with the best F) on exact n-grams, and sacrebleu's F-score from them (chrf_f).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ngrams.hpp"
#include "parallel.hpp"
#include "text_common.hpp"

namespace tmt {

static inline bool is_ascii_punct(uint32_t c) {  // string.punctuation
  return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e);
}

// chrF's words: split(), then one leading or trailing ASCII punctuation mark
// split off a word longer than one character (the trailing one first).
// `start`/`len` are scratch (swapped with out's, so no buffer is allocated per text).
static void chrf_words(U32& s, Tokens& out, Buf<int32_t>& start, Buf<int32_t>& len) {
  split_into(s, out);
  start.clear();
  len.clear();
  for (size_t i = 0; i < out.size(); ++i) {
    int32_t a = out.start[i], L = out.len[i];
    if (L > 1 && is_ascii_punct(out.text[a + L - 1])) {
      start.push_back(a);
      len.push_back(L - 1);
      start.push_back(a + L - 1);
      len.push_back(1);
    } else if (L > 1 && is_ascii_punct(out.text[a])) {
      start.push_back(a);
      len.push_back(1);
      start.push_back(a + 1);
      len.push_back(L - 1);
    } else {
      start.push_back(a);
      len.push_back(L);
    }
  }
  out.start.swap(start);
  out.len.swap(len);
}

// Characters as tokens (whitespace removed unless `whitespace`).
static void chrf_chars(const U32& s, bool whitespace, Tokens& out) {
  out.clear();
  out.text = s;
  for (size_t i = 0; i < s.size(); ++i)
    if (whitespace || !is_space(s[i])) {
      out.start.push_back((int32_t)i);
      out.len.push_back(1);
    }
}

// sacrebleu's CHRF._compute_f_score, operation for operation. st: 3 ints per order.
static double chrf_f(const int64_t* st, int order, double beta, bool eps_smoothing) {
  const double eps = 1e-16, factor = beta * beta;
  double score = 0.0, avg_prec = 0.0, avg_rec = 0.0;
  int eff = 0;
  for (int i = 0; i < order; ++i) {
    const int64_t n_hyp = st[3 * i], n_ref = st[3 * i + 1], n_match = st[3 * i + 2];
    const double prec = n_hyp > 0 ? (double)n_match / (double)n_hyp : eps;
    const double rec = n_ref > 0 ? (double)n_match / (double)n_ref : eps;
    const double denom = factor * prec + rec;
    score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (n_hyp > 0 && n_ref > 0) {
      avg_prec += prec;
      avg_rec += rec;
      eff += 1;
    }
  }
  if (eps_smoothing) return 100 * score / order;
  if (eff == 0)
    avg_prec = avg_rec = 0.0;
  else {
    avg_prec /= eff;
    avg_rec /= eff;
  }
  if (avg_prec + avg_rec != 0.0) {
    double f = (1 + factor) * avg_prec * avg_rec;
    f /= (factor * avg_prec) + avg_rec;
    return 100 * f;
  }
  return 0.0;
}

// Counts of the n-grams of one hypothesis, each n-gram packed into a key of n symbols of `bits` bits
// (n * bits <= the key's width): exact, and the memory follows the hypothesis's distinct n-grams
// (a 50 MB text's tokens or characters are never stored one by one).
template <class Key> struct GramCounts {
  struct Slot {
    Key key;
    int32_t h, r;
  };  // h: count in the hypothesis (0: empty), r: in the reference
  static constexpr size_t TRACKED = 1 << 16;
  std::vector<Slot> slots;
  std::vector<uint32_t> filled;  // the slots in use while the table is small: clearing costs the n-grams,
  size_t mask = 0, used = 0;     // not the table (most segments are short); a large table is scanned
  // Empty, sized for a hypothesis of `expect` n-grams (the table grows at 3/4 load from there).
  void reset(size_t expect) {
    if (mask + 1 <= TRACKED)
      for (uint32_t j : filled) slots[j] = Slot{Key(0), 0, 0};
    else
      slots.clear();
    filled.clear();
    const size_t cap = first_capacity(expect);
    if (slots.size() < cap || slots.size() > 64 * cap) slots.assign(cap, Slot{Key(0), 0, 0});
    set_mask(cap - 1);
    used = 0;
  }
  int shift = 64;
  // Fibonacci hashing: the top bits of one multiplication (splitmix64 cost 10% of chrF)
  size_t hash(Key k) const {
    uint64_t x = (uint64_t)k;
    if constexpr (sizeof(Key) > 8) x ^= (uint64_t)(k >> 64) * 0xff51afd7ed558ccdULL;
    return (size_t)((x * 0x9e3779b97f4a7c15ULL) >> shift);
  }
  void set_mask(size_t m) {
    mask = m;
    shift = 64;
    for (size_t c = m + 1; c > 1; c >>= 1) --shift;
  }
  __attribute__((noinline)) void grow() {  // rare: keep id() small enough to inline
    std::vector<Slot> s2(2 * (mask + 1), Slot{Key(0), 0, 0});
    const size_t m2 = s2.size() - 1, old = mask;
    set_mask(m2);
    filled.clear();
    for (size_t j = 0; j <= old; ++j) {
      if (!slots[j].h) continue;
      size_t q = hash(slots[j].key);
      while (s2[q].h) q = (q + 1) & m2;
      s2[q] = slots[j];
      if (m2 + 1 <= TRACKED) filled.push_back((uint32_t)q);
    }
    if (m2 + 1 > TRACKED) std::vector<uint32_t>().swap(filled);
    slots.swap(s2);
  }
  void add(Key k) {
    if (4 * (used + 1) > 3 * (mask + 1)) grow();
    size_t j = hash(k);
    while (slots[j].h && !(slots[j].key == k)) j = (j + 1) & mask;
    if (!slots[j].h) {
      slots[j].key = k;
      ++used;
      if (mask + 1 <= TRACKED) filled.push_back((uint32_t)j);
    }
    slots[j].h++;
  }
  // one more occurrence in the reference: true when it is matched (the hypothesis has more)
  bool match(Key k) {
    size_t j = hash(k);
    while (slots[j].h) {
      if (slots[j].key == k) return slots[j].r++ < slots[j].h;
      j = (j + 1) & mask;
    }
    return false;
  }
  void clear_refs() {
    if (mask + 1 <= TRACKED)
      for (uint32_t j : filled) slots[j].r = 0;
    else
      for (size_t j = 0; j <= mask; ++j) slots[j].r = 0;
  }
};

// GramCounts' interface on a plain array, for keys below 2^SMALL_BITS (character unigrams of Latin
// text, word unigrams of up to 1,024 distinct words): no hashing, no probing.
struct SmallCounts {
  static constexpr int SMALL_BITS = 10;
  int32_t h[1 << SMALL_BITS] = {}, r[1 << SMALL_BITS] = {};
  std::vector<uint32_t> filled;
  void reset(size_t) {
    for (uint32_t k : filled) h[k] = r[k] = 0;
    filled.clear();
  }
  void add(uint64_t k) {
    if (h[k]++ == 0) filled.push_back((uint32_t)k);
  }
  bool match(uint64_t k) { return h[k] > 0 && r[k]++ < h[k]; }
  void clear_refs() {
    for (uint32_t k : filled) r[k] = 0;
  }
};

typedef unsigned __int128 u128;

struct ChrfWork {
  std::vector<Tokens> chars, words;
  std::vector<U32> text, sym;  // sym: each short text's counted characters
  TokenIds tids;
  Levels lv;
  SmallCounts small;
  GramCounts<uint64_t> g64;
  GramCounts<u128> g128;
  std::vector<int64_t> per_ref;
  std::vector<const StrView*> seq;
  Buf<int32_t> start, len;  // chrf_words' scratch
  // chrf_chars_short's scratch: symbol -> id (0: not in the hypothesis), position masks, ids
  uint8_t latin[256] = {};
  std::vector<uint32_t> wide;  // the hypothesis' symbols >= 256, and their ids
  std::vector<uint64_t> masks, sets;
  std::vector<int32_t> hyp_id, wide_id;
};

static inline int bit_width(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

// Per-order [hyp, ref, match] triples of order n for each reference, into w.per_ref at column `col`:
// each(s, f) calls f(symbol) for every symbol of sequence s (0: the hypothesis, 1..R: the references).
template <class Key, class Counts, class Each>
static void count_order(Counts& g, int n, int bits, int R, int order, int col, int64_t expect, Each each, ChrfWork& w) {
  const int width = n * bits;
  const Key keep = width >= (int)(8 * sizeof(Key)) ? ~Key(0) : (Key(1) << width) - 1;
  g.reset((size_t)expect);
  Key k = 0;
  int64_t seen = 0;
  each(0, [&](uint32_t c) {
    k = ((k << bits) | c) & keep;
    if (++seen >= n) g.add(k);
  });
  const int64_t nh = std::max<int64_t>(0, seen - n + 1);
  tmthreads::tick(seen);  // a text of 2^28 characters is ~1 s an order
  for (int r = 1; r <= R; ++r) {
    if (r > 1) g.clear_refs();
    int64_t match = 0;
    k = 0;
    seen = 0;
    each(r, [&](uint32_t c) {
      k = ((k << bits) | c) & keep;
      if (++seen >= n && g.match(k)) ++match;
    });
    const int64_t nr = std::max<int64_t>(0, seen - n + 1);
    tmthreads::tick(seen);
    int64_t* st = &w.per_ref[((size_t)(r - 1) * order + col) * 3];
    st[0] = nr > 0 ? nh : 0;
    st[1] = nr;
    st[2] = (nh > 0 && nr > 0) ? match : 0;
  }
}

// Orders 1..N into columns base + n - 1 with packed keys, while n symbols of `bits` bits fit 128 bits;
// returns the first order left (N + 1 when none is).
template <class Each>
static int packed_orders(int N, int base, int bits, int R, int order, int64_t expect, Each each, ChrfWork& w) {
  int n = 1;
  for (; n <= N && n * bits <= SmallCounts::SMALL_BITS; ++n)
    count_order<uint64_t>(w.small, n, bits, R, order, base + n - 1, expect, each, w);
  for (; n <= N && n * bits <= 64; ++n) count_order<uint64_t>(w.g64, n, bits, R, order, base + n - 1, expect, each, w);
  for (; n <= N && n * bits <= 128; ++n) count_order<u128>(w.g128, n, bits, R, order, base + n - 1, expect, each, w);
  return n;
}

// Orders first..N from the n-gram levels of w.lv.uni (the symbols' ids, filled by the caller) into
// columns base + n - 1: ids per position, for words (a fifth as many as characters) and for characters
// past what 128-bit keys hold.
static void level_orders(int first, int N, int base, int R, int order, ChrfWork& w) {
  w.lv.begin(R + 1, (size_t)w.tids.next);
  for (int n = 1; n <= N; ++n) {
    if (n > 1) w.lv.next(n - 1);
    if (n < first) continue;
    const int64_t nh = (int64_t)w.lv.at(0).size();
    for (int r = 1; r <= R; ++r) {
      const int64_t nr = (int64_t)w.lv.at(r).size();
      int64_t* st = &w.per_ref[((size_t)(r - 1) * order + base + n - 1) * 3];
      st[0] = nr > 0 ? nh : 0;
      st[1] = nr;
      st[2] = (nh > 0 && nr > 0) ? w.lv.clipped(0, r) : 0;
    }
  }
}

// chrf_chars_short's orders, for masks of W words; HW: the CPU's popcount instruction.
template <int W, bool HW> static inline __attribute__((always_inline)) void chrf_short_orders(int N, int R, int order,
                                                                                              int Lh, size_t per_text,
                                                                                              ChrfWork& w) {
  auto pop = [](uint64_t x) {
    if constexpr (HW)
      return __builtin_popcountll(x);
    else
      return popcount64(x);
  };
  const std::vector<U32>& sym = w.sym;
  const std::vector<int32_t>& hid = w.hyp_id;
  const std::vector<uint64_t>& mask = w.masks;
  // sets: (R + 1) x Lh x W: H, then M_1..M_R
  std::vector<uint64_t>& sets = w.sets;
  sets.resize((size_t)(R + 1) * Lh * W);
  for (int s = 0; s <= R; ++s)
    for (int i = 0; i < Lh; ++i)
      for (int q = 0; q < W; ++q)
        sets[((size_t)s * Lh + i) * W + q] = mask[(size_t)s * per_text + (size_t)hid[i] * W + q];
  for (int n = 1; n <= N; ++n) {
    const int m = Lh - n + 1;  // hypothesis n-grams
    if (n > 1 && m > 0) {
      const int sh = n - 1;  // n <= 257 here only matters while m > 0, so sh < 256
      const int ws = sh / 64, bs = sh % 64;
      for (int s = 0; s <= R; ++s)
        for (int i = 0; i < m; ++i) {
          const uint64_t* src = &mask[(size_t)s * per_text + (size_t)hid[i + n - 1] * W];
          uint64_t* dst = &sets[((size_t)s * Lh + i) * W];
          if (ws == 0) {  // dst &= src >> sh, over W words (sh < 64: every order up to 64)
            for (int q = 0; q + 1 < W; ++q) dst[q] &= (src[q] >> bs) | (src[q + 1] << (64 - bs));
            dst[W - 1] &= src[W - 1] >> bs;
          } else {
            for (int q = 0; q < W; ++q) {
              const uint64_t lo = q + ws < W ? src[q + ws] : 0, hi = q + ws + 1 < W ? src[q + ws + 1] : 0;
              dst[q] &= bs ? (lo >> bs) | (hi << (64 - bs)) : lo;
            }
          }
        }
    }
    const int64_t nh = std::max(0, m);
    for (int r = 1; r <= R; ++r) {
      int64_t match = 0;
      for (int i = 0; i < m; ++i) {
        const uint64_t* H = &sets[(size_t)i * W];
        const uint64_t* M = &sets[((size_t)r * Lh + i) * W];
        const int wi = i / 64;
        uint64_t before = H[wi] & (((uint64_t)1 << (i % 64)) - 1);
        for (int q = 0; q < wi; ++q) before |= H[q];
        if constexpr (HW) {  // without branches: which n-grams repeat is data, not a pattern
          int ch = 0, cm = 0;
          for (int q = 0; q < W; ++q) {
            ch += pop(H[q]);
            cm += pop(M[q]);
          }
          match += before ? 0 : std::min(ch, cm);  // at this n-gram's first position
        } else {
          if (before) continue;  // not this n-gram's first position
          uint64_t after = H[wi] & ~((((uint64_t)1 << (i % 64)) << 1) - 1);
          for (int q = wi + 1; q < W; ++q) after |= H[q];
          if (!after) {  // once in the hypothesis (most n-grams): 1 if the reference has it
            uint64_t any = 0;
            for (int q = 0; q < W; ++q) any |= M[q];
            match += any != 0;
            continue;
          }
          int ch = 0, cm = 0;
          for (int q = 0; q < W; ++q) {
            ch += pop(H[q]);
            cm += pop(M[q]);
          }
          match += std::min(ch, cm);
        }
      }
      const int64_t nr = std::max<int64_t>(0, (int64_t)sym[r].size() - n + 1);
      int64_t* st = &w.per_ref[((size_t)(r - 1) * order + n - 1) * 3];
      st[0] = nr > 0 ? nh : 0;
      st[1] = nr;
      st[2] = (nh > 0 && nr > 0) ? match : 0;
    }
  }
}

template <bool HW>
static inline __attribute__((always_inline)) void chrf_short_orders_by(int W, int N, int R, int order, int Lh,
                                                                       size_t per_text, ChrfWork& w) {
  switch (W) {  // the word loops unrolled for each mask width
    case 1: chrf_short_orders<1, HW>(N, R, order, Lh, per_text, w); break;
    case 2: chrf_short_orders<2, HW>(N, R, order, Lh, per_text, w); break;
    case 3: chrf_short_orders<3, HW>(N, R, order, Lh, per_text, w); break;
    default: chrf_short_orders<4, HW>(N, R, order, Lh, per_text, w);
  }
}
TM_POPCNT_TARGET static void chrf_short_orders_popcnt(int W, int N, int R, int order, int Lh, size_t per_text,
                                                      ChrfWork& w) {
  chrf_short_orders_by<true>(W, N, R, order, Lh, per_text, w);
}

// Character orders 1..N of texts of at most 256 counted symbols (w.sym), by bit masks instead of a
// hash table per order: mask[s][id] marks the positions of text s holding symbol id (ids: the
// hypothesis' distinct symbols); for hypothesis position i, H[i] marks the hypothesis positions that
// start the same n-gram and M_r[i] those of reference r: H_n[i] = H_{n-1}[i] & (mask[0][id(i + n - 1)]
// >> (n - 1)), and likewise M_r. Each distinct n-gram (its first position: no lower bit in H) adds
// min(popcount H, popcount M_r) to reference r's match count, which is what count_order sums.
// False (nothing written) for a text over 256 symbols, a hypothesis of 255 or more distinct symbols, or
// one of more than 16 distinct symbols past Latin-1 (they are looked up by a linear search).
static bool chrf_chars_short(int N, int R, int order, ChrfWork& w) {
  const std::vector<U32>& sym = w.sym;
  size_t longest = 0;
  for (int s = 0; s <= R; ++s) longest = std::max(longest, sym[s].size());
  if (longest > 256) return false;
  const int W = std::max<int>(1, (int)((longest + 63) / 64));  // words per mask
  const U32& h = sym[0];
  const int Lh = (int)h.size();
  // ids of the hypothesis' symbols (1..), then of each text's symbols (0: not in the hypothesis)
  std::vector<uint32_t>& wide = w.wide;
  wide.clear();
  int nid = 0;
  std::vector<int32_t>& wide_id = w.wide_id;
  wide_id.clear();
  auto id_of = [&](uint32_t c, bool add) -> int {  // ids 1..nid in order of first appearance
    if (c < 256) {
      if (!w.latin[c] && add) w.latin[c] = (uint8_t)++nid;
      return w.latin[c];
    }
    for (size_t j = 0; j < wide.size(); ++j)
      if (wide[j] == c) return wide_id[j];
    if (!add) return 0;
    wide.push_back(c);
    wide_id.push_back(++nid);
    return nid;
  };
  std::vector<int32_t>& hid = w.hyp_id;
  hid.resize((size_t)Lh);
  bool ok = true;
  for (int i = 0; i < Lh && ok; ++i) {
    hid[i] = id_of(h[i], true);
    ok = nid < 255 && wide.size() <= 16;  // the Latin-1 table holds ids as bytes; few wide symbols, searched
  }
  const size_t ids = (size_t)nid + 1;
  const size_t per_text = ids * (size_t)W;
  std::vector<uint64_t>& mask = w.masks;  // (R + 1) texts x ids x W
  if (ok) mask.assign((size_t)(R + 1) * per_text, 0);
  for (int i = 0; i < Lh && ok; ++i) mask[(size_t)hid[i] * W + i / 64] |= (uint64_t)1 << (i % 64);
  for (int r = 1; r <= R && ok; ++r) {
    uint64_t* m = &mask[(size_t)r * per_text];
    const U32& t = sym[r];
    for (size_t p = 0; p < t.size(); ++p) {
      const int id = id_of(t[p], false);
      if (id) m[(size_t)id * W + p / 64] |= (uint64_t)1 << (p % 64);
    }
  }
  for (uint32_t c : h)
    if (c < 256) w.latin[c] = 0;  // the table is all zero between calls
  if (!ok) return false;
  if (have_popcnt())
    chrf_short_orders_popcnt(W, N, R, order, Lh, per_text, w);
  else
    chrf_short_orders_by<false>(W, N, R, order, Lh, per_text, w);
  return true;
}

// Per-order [hyp, ref, match] triples of the reference with the best F (the first on ties).
// Characters are read in place (no copy of a text); words need the text's tokens.
static void chrf_segment(const StrView& hyp, const StrView* refs, int nrefs, int nc, int nw, double beta,
                         bool whitespace, bool eps_smoothing, ChrfWork& w, int64_t* out) {
  const int order = nc + nw;
  std::vector<const StrView*>& seq = w.seq;
  seq.assign(1, &hyp);
  for (int r = 0; r < nrefs; ++r)
    if (refs[r].data) seq.push_back(&refs[r]);
  const int nseq = (int)seq.size(), R = nseq - 1;
  w.per_ref.assign((size_t)R * 3 * order, 0);
  if (nc > 0) {
    auto chars = [&](int s, auto&& f) {
      const StrView& v = *seq[s];
      switch (v.kind) {  // one switch on the storage kind, not one per character
        case 1: {
          const uint8_t* p = static_cast<const uint8_t*>(v.data);
          for (int64_t i = 0; i < v.len; ++i) {
            if (whitespace || !is_space(p[i])) f(p[i]);
          }
          break;
        }
        case 2: {
          const uint16_t* p = static_cast<const uint16_t*>(v.data);
          for (int64_t i = 0; i < v.len; ++i) {
            if (whitespace || !is_space(p[i])) f(p[i]);
          }
          break;
        }
        default: {
          const uint32_t* p = static_cast<const uint32_t*>(v.data);
          for (int64_t i = 0; i < v.len; ++i) {
            if (whitespace || !is_space(p[i])) f(p[i]);
          }
        }
      }
    };
    uint32_t top = 0;  // the largest code point counted: the bits a character needs
    int64_t total = 0;
    for (int s = 0; s < nseq; ++s) total += seq[s]->len;
    int n;
    if (total <= ((int64_t)1 << 20)) {                   // short texts: their counted characters copied once, then each
      if ((int)w.sym.size() < nseq) w.sym.resize(nseq);  // order reads a plain array (no space test)
      for (int s = 0; s < nseq; ++s) {
        U32& out = w.sym[s];
        out.clear();
        chars(s, [&](uint32_t c) {
          out.push_back(c);
          top = std::max(top, c);
        });
      }
      auto syms = [&](int s, auto&& f) {
        for (uint32_t c : w.sym[s]) f(c);
      };
      n = chrf_chars_short(nc, R, order, w)
              ? nc + 1
              : packed_orders(nc, 0, std::max(1, bit_width(top)), R, order, hyp.len, syms, w);
    } else {  // long texts are read in place, once per order
      for (int s = 0; s < nseq; ++s) chars(s, [&](uint32_t c) { top = std::max(top, c); });
      n = packed_orders(nc, 0, std::max(1, bit_width(top)), R, order, hyp.len, chars, w);
    }
    if (n <= nc) {  // long character n-grams: the levels, on the characters as tokens
      if ((int)w.chars.size() < nseq) {
        w.text.resize(nseq);
        w.chars.resize(nseq);
      }
      for (int s = 0; s < nseq; ++s) {
        load(*seq[s], seq[s]->len, w.text[s]);
        chrf_chars(w.text[s], whitespace, w.chars[s]);
      }
      token_ids(w.chars, nseq, w.tids, w.lv);
      level_orders(n, nc, 0, R, order, w);
    }
  }
  if (nw > 0) {
    // one text's characters and words at a time (the ids keep copies of the distinct words)
    if (w.text.empty()) w.text.resize(1);
    if (w.words.empty()) w.words.resize(1);
    if ((int)w.lv.uni.size() < nseq) {
      w.lv.uni.resize(nseq);
      w.lv.gram.resize(nseq);
    }
    int64_t chars = 0;
    for (const StrView* v : seq) chars += v->len;
    w.tids.reset((size_t)(chars / 4), true);  // (a first size: the map grows if need be)
    for (int s = 0; s < nseq; ++s) {
      load(*seq[s], seq[s]->len, w.text[0]);
      chrf_words(w.text[0], w.words[0], w.start, w.len);  // takes the text's buffer
      sequence_ids(w.words[0], w.tids, w.lv.uni[s]);
      w.text[0].swap(w.words[0].text);  // the buffer back, for the next text
    }
    auto words = [&](int s, auto&& f) {
      for (int32_t id : w.lv.uni[s]) f((uint32_t)id);
    };
    const int bits = std::max(1, bit_width((uint64_t)std::max(w.tids.next - 1, 0)));
    const int n = packed_orders(nw, nc, bits, R, order, (int64_t)w.lv.uni[0].size(), words, w);
    if (n <= nw) level_orders(n, nw, nc, R, order, w);
  }
  int best = 0;
  double best_f = -1.0;
  for (int r = 0; r < R; ++r) {
    double f = chrf_f(&w.per_ref[(size_t)r * 3 * order], order, beta, eps_smoothing);
    if (f > best_f) {
      best_f = f;
      best = r;
    }
  }
  std::memcpy(out, &w.per_ref[(size_t)best * 3 * order], sizeof(int64_t) * 3 * order);
}

}  // namespace tmt
