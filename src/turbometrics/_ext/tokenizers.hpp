// sacrebleu's tokenizers on code points: 13a (its literal replacements, then its regex passes; and the
// same tokens in one streaming pass, t13a, for a line the replacements leave alone), intl, zh and char.
// tokenize() gives the tokens BLEU counts.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "text_common.hpp"
#include "unicode_tables.hpp"

namespace tmt {

static inline bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }  // regex [0-9]
static inline bool is_dot_comma(uint32_t c) { return c == '.' || c == ','; }
// 13a's first class [\{-\~\[-\` -\&\(-\+\:-\@\/]: space and !"#$%&()*+/:;<=>?@[\]^_`{|}~
static inline bool is_13a_punct(uint32_t c) {
  return (c >= 0x7b && c <= 0x7e) || (c >= 0x5b && c <= 0x60) || (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2b) ||
         (c >= 0x3a && c <= 0x40) || c == 0x2f;
}

// s = s.replace(pat, rep) with Python's semantics (leftmost, non-overlapping).
static void replace_all(U32& s, const char* pat, const char* rep, U32& tmp) {
  const size_t m = std::strlen(pat), r = std::strlen(rep);
  if (s.size() < m) return;
  // the common case: no match at all, no copy
  const uint32_t first = (unsigned char)pat[0];
  size_t i = std::find(s.begin(), s.end(), first) - s.begin();
  if (i == s.size()) return;
  tmp.assign(s.begin(), s.begin() + i);
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

enum Tokenizer : int { TOK_13A = 0, TOK_CHAR = 1, TOK_NONE = 2, TOK_INTL = 3, TOK_ZH = 4 };

// sacrebleu's post-tokenizer (TokenizerRegexp): four regex passes, each
// emulating re.sub's leftmost non-overlapping scan. Result in a. With `pad`,
// the line is first wrapped in spaces (13a's f' {line} '). Passes 2-4 are
// skipped when the characters they need are absent (then they change nothing).
static void regexp_passes(U32& a, U32& b, bool pad, int need = -1) {
  // need: bit 0 = '.' or ',' present, bit 1 = '-' present (-1: scan for them here)
  if (need < 0) {
    need = 0;
    for (uint32_t c : a) need |= (is_dot_comma(c) ? 1 : 0) | (c == '-' ? 2 : 0);
  }
  const bool dot_comma = need & 1, dash = need & 2;
  // pass 1: ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> ' \1 '
  b.resize(3 * a.size() + 2);
  uint32_t* o = b.data();
  if (pad) *o++ = ' ';
  for (uint32_t c : a) {
    if (is_13a_punct(c)) {
      o[0] = ' ';
      o[1] = c;
      o[2] = ' ';
      o += 3;
    } else
      *o++ = c;
  }
  if (pad) *o++ = ' ';
  b.resize(o - b.data());
  if (dot_comma) {
    // pass 2: ([^0-9])([\.,]) -> '\1 \2 '
    a.resize(2 * b.size());
    o = a.data();
    const size_t n = b.size();
    for (size_t i = 0; i < n;) {
      if (i + 1 < n && !is_digit(b[i]) && is_dot_comma(b[i + 1])) {
        o[0] = b[i];
        o[1] = ' ';
        o[2] = b[i + 1];
        o[3] = ' ';
        o += 4;
        i += 2;
      } else
        *o++ = b[i++];
    }
    a.resize(o - a.data());
    // pass 3: ([\.,])([^0-9]) -> ' \1 \2'
    b.resize(2 * a.size());
    o = b.data();
    const size_t m = a.size();
    for (size_t i = 0; i < m;) {
      if (i + 1 < m && is_dot_comma(a[i]) && !is_digit(a[i + 1])) {
        o[0] = ' ';
        o[1] = a[i];
        o[2] = ' ';
        o[3] = a[i + 1];
        o += 4;
        i += 2;
      } else
        *o++ = a[i++];
    }
    b.resize(o - b.data());
  }
  if (!dash) {
    a.swap(b);
    return;
  }
  // pass 4: ([0-9])(-) -> '\1 \2 '
  a.resize(2 * b.size());
  o = a.data();
  const size_t n = b.size();
  for (size_t i = 0; i < n;) {
    if (i + 1 < n && is_digit(b[i]) && b[i + 1] == '-') {
      o[0] = b[i];
      o[1] = ' ';
      o[2] = '-';
      o[3] = ' ';
      o += 4;
      i += 2;
    } else
      *o++ = b[i++];
  }
  a.resize(o - a.data());
}

// sacrebleu's 13a: literal replacements, then the padded regex passes.
static void tok_13a(U32& a, U32& b) {
  // One scan says which steps can change anything. The replacements never
  // add '.', ',' or '-', so the flags stay valid for the regex passes.
  bool lt = false, nl = false, amp = false;
  int need = 0;
  for (uint32_t c : a) {
    lt |= c == '<';
    nl |= c == '\n';
    amp |= c == '&';
    need |= (is_dot_comma(c) ? 1 : 0) | (c == '-' ? 2 : 0);
  }
  if (lt) replace_all(a, "<skipped>", "", b);
  if (nl) {
    replace_all(a, "-\n", "", b);
    replace_all(a, "\n", " ", b);
  }
  if (amp) {
    replace_all(a, "&quot;", "\"", b);
    replace_all(a, "&amp;", "&", b);
    replace_all(a, "&lt;", "<", b);
    replace_all(a, "&gt;", ">", b);
  }
  regexp_passes(a, b, true, need);
}

template <size_t K> static bool in_ranges(const uint32_t (&r)[K][2], uint32_t c) {
  size_t lo = 0, hi = K;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c < r[mid][0])
      hi = mid;
    else if (c > r[mid][1])
      lo = mid + 1;
    else
      return true;
  }
  return false;
}
static inline bool is_N(uint32_t c) { return in_ranges(UNI_N, c); }
static inline bool is_P(uint32_t c) { return in_ranges(UNI_P, c); }
static inline bool is_S(uint32_t c) { return in_ranges(UNI_S, c); }

// Scratch that only grows: a vector's resize upwards is an out-of-line call (std::vector's
// _M_default_append), which a resize per line made a third of a short line's time.
template <class V> static inline void at_least(V& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// intl's classes of a code point, as bits: \p{N}, \p{P}, \p{S} (the `regex` release's tables) and white
// (str.split()'s); the BMP from a 64 KiB table made on first use, astral code points by binary search.
enum : uint8_t { U_N = 1, U_P = 2, U_S = 4, U_W = 8 };
template <size_t K> static void mark_bmp(const uint32_t (&r)[K][2], uint8_t bit, uint8_t* t) {
  for (size_t k = 0; k < K && r[k][0] < 0x10000; ++k)
    for (uint32_t c = r[k][0]; c <= std::min<uint32_t>(r[k][1], 0xffff); ++c) t[c] |= bit;
}
static const uint8_t* intl_bmp() {
  static const std::vector<uint8_t> table = [] {
    std::vector<uint8_t> t(0x10000, 0);
    mark_bmp(UNI_N, U_N, t.data());
    mark_bmp(UNI_P, U_P, t.data());
    mark_bmp(UNI_S, U_S, t.data());
    for (uint32_t c = 0; c < 0x10000; ++c) t[c] |= is_space(c) ? U_W : 0;  // (every white is in the BMP)
    return t;
  }();
  return table.data();
}
static inline uint8_t intl_class(const uint8_t* bmp, uint32_t c) {
  return c < 0x10000 ? bmp[c] : (uint8_t)((is_N(c) ? U_N : 0) | (is_P(c) ? U_P : 0) | (is_S(c) ? U_S : 0));
}

// One of intl's pair passes over (x, kx)[0, n) into (y, ky), in re.sub's leftmost non-overlapping scan:
// (\P{N})(\p{P}) -> '\1 \2 ', or with Lead (\p{P})(\P{N}) -> ' \1 \2'; the blanks it writes are classed white.
template <bool Lead>
static size_t intl_pairs(const uint32_t* x, const uint8_t* kx, size_t n, uint32_t* y, uint8_t* ky) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    const bool pair = i + 1 < n && (Lead ? (kx[i] & U_P) && !(kx[i + 1] & U_N) : !(kx[i] & U_N) && (kx[i + 1] & U_P));
    if (!pair) {
      y[o] = x[i];
      ky[o++] = kx[i++];
      continue;
    }
    const size_t at = o + (Lead ? 1 : 0);
    y[o] = y[o + 1] = y[o + 2] = y[o + 3] = ' ';
    ky[o] = ky[o + 1] = ky[o + 2] = ky[o + 3] = U_W;
    y[at] = x[i];
    ky[at] = kx[i];
    y[at + 2] = x[i + 1];
    ky[at + 2] = kx[i + 1];
    o += 4;
    i += 2;
  }
  return o;
}

// sacrebleu's intl (mteval-v14): (\P{N})(\p{P}) -> '\1 \2 ', (\p{P})(\P{N}) -> ' \1 \2', (\p{S}) -> ' \1 ', then
// split(), on the code points' classes (looked up once). The last pass only wraps symbols in blanks, so it
// is done with the split: a symbol is a token of its own, and every token is a span of the second pass's text.
static void tok_intl(U32& a, U32& b, Buf<uint8_t>& ka, Buf<uint8_t>& kb, Tokens& out) {
  const uint8_t* bmp = intl_bmp();
  const size_t n = a.size();
  at_least(ka, n);
  for (size_t i = 0; i < n; ++i) ka[i] = intl_class(bmp, a[i]);
  at_least(b, 2 * n);
  at_least(kb, 2 * n);
  const size_t m1 = intl_pairs<false>(a.data(), ka.data(), n, b.data(), kb.data());
  at_least(a, 2 * m1);
  at_least(ka, 2 * m1);
  const size_t m = intl_pairs<true>(b.data(), kb.data(), m1, a.data(), ka.data());
  out.clear();
  int64_t start = -1;
  for (size_t i = 0; i < m; ++i) {
    const uint8_t k = ka[i];
    if (!(k & (U_W | U_S))) {
      if (start < 0) start = (int64_t)i;
      continue;
    }
    if (start >= 0) {
      out.start.push_back((int32_t)start);
      out.len.push_back((int32_t)(i - start));
      start = -1;
    }
    if (k & U_S) {
      out.start.push_back((int32_t)i);
      out.len.push_back(1);
    }
  }
  if (start >= 0) {
    out.start.push_back((int32_t)start);
    out.len.push_back((int32_t)(m - start));
  }
  out.text.swap(a);
}

// sacrebleu's "Chinese" characters, including its range bug (#298): the ranges
// written '\u20000'-'\u2a6d6' and '\u2f800'-'\u2fa1d' are two-character strings,
// so they compare as U+2001..U+2A6D and U+2F81..U+2FA1.
static inline bool is_zh(uint32_t c) {
  static const uint32_t R[][2] = {
      {0x3400, 0x4db5}, {0x4e00, 0x9fa5}, {0x9fa6, 0x9fbb}, {0xf900, 0xfa2d}, {0xfa30, 0xfa6a}, {0xfa70, 0xfad9},
      {0x2001, 0x2a6d}, {0x2f81, 0x2fa1}, {0xff00, 0xffef}, {0x2e80, 0x2eff}, {0x3000, 0x303f}, {0x31c0, 0x31ef},
      {0x2f00, 0x2fdf}, {0x2ff0, 0x2fff}, {0x3100, 0x312f}, {0x31a0, 0x31bf}, {0xfe10, 0xfe1f}, {0xfe30, 0xfe4f},
      {0x2600, 0x26ff}, {0x2700, 0x27bf}, {0x3200, 0x32ff}, {0x3300, 0x33ff}};
  if (c < 0x2001) return false;
  for (const auto& r : R)
    if (c >= r[0] && c <= r[1]) return true;
  return false;
}

// sacrebleu's zh before its regex passes (unpadded; tokenize() runs them): strip(), then spaces around each
// "Chinese" character. The line ends in a.
static void zh_wrap(U32& a, U32& b) {
  size_t lo = 0, hi = a.size();
  while (lo < hi && is_space(a[lo])) ++lo;
  while (hi > lo && is_space(a[hi - 1])) --hi;
  at_least(b, 3 * (hi - lo) + 1);  // (+ 1: tokenize's stand-in digit)
  uint32_t* o = b.data();
  for (size_t i = lo; i < hi; ++i) {
    const uint32_t c = a[i];
    if (is_zh(c)) {
      o[0] = ' ';
      o[1] = c;
      o[2] = ' ';
      o += 3;
    } else
      *o++ = c;
  }
  b.resize((size_t)(o - b.data()));
  a.swap(b);
}

// ---------------------------------------------------------------- 13a in one pass
// The same tokens as tok_13a + split_into for a line without '<', '\n' or '&' (the literal
// replacements then change nothing), with no intermediate strings.
//
// Pass 1 wraps 13a punctuation in blanks, and passes 2-4 act only on a pair of adjacent characters
// holding '.', ',' or a '-' after a digit; every pass inserts only blanks, and a white character is just
// [^0-9] to each. So no pass joins two sub-words (runs of characters that are neither white nor 13a
// punctuation), what passes 2-4 make of a sub-word does not depend on what is around it, and a
// sub-word without '.', ',' or digit-'-' is one token as it stands. The line is first classified into
// bit masks (16 bytes at a time for a Latin-1 line), its sub-words and punctuation are read off them,
// and the passes run (as chained streaming transducers) only on the few sub-words that need them.
namespace t13a {
// BLANK: ' ' itself. Pass 1 wraps 13a punctuation (' ' included) in spaces; a blank wrapped in blanks
// is still just blank for the later passes (each looks at two adjacent characters), so it stays one.
// The classes below 4 are neutral: no pass acts on them or next to them.
enum Cls : uint8_t { PLAIN = 0, BLANK = 1, SPACE = 2, PUNCT = 4, DIGIT, DOTCOMMA, DASH, SPECIAL };
struct Table {
  uint8_t c[256];
  Table() {
    for (uint32_t u = 0; u < 256; ++u)
      c[u] = u == '<' || u == '\n' || u == '&' ? SPECIAL
             : u == ' '                        ? BLANK
             : is_13a_punct(u)                 ? PUNCT
             : is_space(u)                     ? SPACE
             : is_digit(u)                     ? DIGIT
             : is_dot_comma(u)                 ? DOTCOMMA
             : u == '-'                        ? DASH
                                               : PLAIN;
  }
};
static const Table TABLE;
static inline uint8_t cls(uint32_t c) { return c < 256 ? TABLE.c[c] : is_space(c) ? SPACE : PLAIN; }
static inline bool white(uint8_t k) { return k == BLANK || k == SPACE; }

// The streaming passes 2-4 and the split, their state in locals so that it stays in registers.
struct State {
  uint32_t h2 = 0, h3 = 0, h4 = 0;  // the character each pass holds back (one of lookahead)
  uint8_t k2 = 0, k3 = 0, k4 = 0;   // its class
  bool has2 = false, has3 = false, has4 = false;
  bool in = false;           // the split is inside a token
  int64_t nt = 0, tok0 = 0;  // characters written; the current token's first
  uint32_t* txt;             // the tokens' characters (sized for the most a line can give)
  int32_t *start, *len;      // the next token's slots (likewise)
  uint64_t* hashes;
};

#define TM_AI inline __attribute__((always_inline))
static TM_AI void end_token(State& s) {
  *s.len++ = (int32_t)(s.nt - s.tok0);
  *s.hashes++ = token_hash(s.txt + s.tok0, (int32_t)(s.nt - s.tok0));
  s.in = false;
}
static TM_AI void split(State& s, uint32_t c, uint8_t k) {
  if (white(k)) {
    if (s.in) end_token(s);
    return;
  }
  if (!s.in) {
    s.tok0 = s.nt;
    *s.start++ = (int32_t)s.nt;
    s.in = true;
  }
  s.txt[s.nt++] = c;
}
// Pass 4: ([0-9])(-) -> '\1 \2 '
static TM_AI void pass4(State& s, uint32_t c, uint8_t k) {
  if (s.has4) {
    if (s.k4 == DIGIT && k == DASH) {
      split(s, s.h4, s.k4);
      split(s, ' ', BLANK);
      split(s, c, k);
      split(s, ' ', BLANK);
      s.has4 = false;
      return;
    }
    split(s, s.h4, s.k4);
  }
  s.h4 = c;
  s.k4 = k;
  s.has4 = true;
}
// Pass 3: ([\.,])([^0-9]) -> ' \1 \2'
static TM_AI void pass3(State& s, uint32_t c, uint8_t k) {
  if (s.has3) {
    if (s.k3 == DOTCOMMA && k != DIGIT) {
      pass4(s, ' ', BLANK);
      pass4(s, s.h3, s.k3);
      pass4(s, ' ', BLANK);
      pass4(s, c, k);
      s.has3 = false;
      return;
    }
    pass4(s, s.h3, s.k3);
  }
  s.h3 = c;
  s.k3 = k;
  s.has3 = true;
}
// Pass 2: ([^0-9])([\.,]) -> '\1 \2 '
static TM_AI void pass2(State& s, uint32_t c, uint8_t k) {
  if (s.has2) {
    if (s.k2 != DIGIT && k == DOTCOMMA) {
      pass3(s, s.h2, s.k2);
      pass3(s, ' ', BLANK);
      pass3(s, c, k);
      pass3(s, ' ', BLANK);
      s.has2 = false;
      return;
    }
    pass3(s, s.h2, s.k2);
  }
  s.h2 = c;
  s.k2 = k;
  s.has2 = true;
}
// Passes 2-4 and the split over one sub-word x[0, n), between blanks.
template <class T> static void passes(State& s, const T* x, int64_t n) {
  pass2(s, ' ', BLANK);
  for (int64_t i = 0; i < n; ++i) pass2(s, x[i], cls(x[i]));
  pass2(s, ' ', BLANK);
  if (s.has2) {
    pass3(s, s.h2, s.k2);
    s.has2 = false;
  }
  if (s.has3) {
    pass4(s, s.h3, s.k3);
    s.has3 = false;
  }
  if (s.has4) {
    split(s, s.h4, s.k4);
    s.has4 = false;
  }
  if (s.in) end_token(s);
}
#undef TM_AI

// What one 64-character word of a line holds, one bit per character, by class.
struct Bits {
  uint64_t white = 0, punct = 0, dotcomma = 0, dash = 0, digit = 0, special = 0;
};

// A Latin-1 word 16 bytes at a time, into the same classes as TABLE (a test tries every byte). A range
// test is one unsigned compare of x - lo.
// x holds 64 bytes (the scan's padded copy of the line); those past m are classified too and masked off.
// SplitOnly: white alone (str.split()'s separators), every other class left empty.
template <bool SplitOnly> static inline void classify(const uint8_t* x, int m, Bits& b) {
  for (int q = 0; q < (m + 15) / 16; ++q) {
    u8x16 v;
    std::memcpy(&v, x + 16 * q, 16);
    auto in = [&](uint8_t lo, uint8_t hi) { return (u8x16)((u8x16)(v - lo) <= (uint8_t)(hi - lo)); };
    auto eq = [&](uint8_t c) { return (u8x16)(v == c); };
    const u8x16 white = in(0x09, 0x0d) | in(0x1c, 0x20) | eq(0x85) | eq(0xa0);
    const int sh = 16 * q;
    b.white |= movemask(white) << sh;
    if constexpr (SplitOnly) continue;
    const u8x16 punct =
        (in(0x21, 0x2f) & ~in(0x2c, 0x2e) & ~eq('\'')) | in(0x3a, 0x40) | in(0x5b, 0x60) | in(0x7b, 0x7e);
    b.punct |= movemask(punct) << sh;
    b.dotcomma |= movemask(eq(',') | eq('.')) << sh;
    b.dash |= movemask(eq('-')) << sh;
    b.digit |= movemask(in('0', '9')) << sh;
    b.special |= movemask(eq('<') | eq('&') | eq('\n')) << sh;
  }
}

// A line read off its class masks: its tokens' starts and ends (one past) in order, and D, one bit per
// character (bit i % 64 of word i / 64), the characters passes 2-4 act on: '.', ',' and '-' after a digit.
// A '.' or ',' that ends a sub-word of two or more characters (passes 2 or 3 split it off, whether a digit
// is before it or not) is a "mark"; when the line has no other D, every sub-word is a token as it stands
// or a word and its mark, so the marks are split off here (`plain`) and every token is read off the masks.
// `bytes`: the line's copy as bytes (a wider character as ' ' or 'a', its class), 64 zero bytes after it.
struct Scan {
  struct Word {
    uint64_t S, N, P, mark, D;
  };
  Buf<Word> words;
  Buf<uint64_t> D;
  Buf<int32_t> start, end;
  int32_t count;
  bool plain;
  Buf<uint8_t> bytes;
};

// The positions of the set bits of `bits`, plus base, to o; returns the end. Eight are written at a time
// whatever the count (o has room for 8 more), so that the loop branches once per 8 bits, not per bit.
static inline int32_t* bit_positions(uint64_t bits, int32_t base, int32_t* o) {
  const int cnt = popcount64(bits);
  for (int j = 0; j < cnt; j += 8)
    for (int q = 0; q < 8; ++q) {
      o[j + q] = base + (int32_t)__builtin_ctzll(bits | (1ULL << 63));  // (no ctz of 0)
      bits &= bits - 1;
    }
  return o + cnt;
}

// False when the line holds '<', '\n' or '&' (never with SplitOnly: then the tokens are str.split()'s, the runs
// of non-white characters, as the 13a pass finds them in a line of no punctuation).
template <bool SplitOnly, class T> static bool scan(const T* x, int64_t n, Scan& sc) {
  const int64_t words = n / 64 + 1;
  at_least(sc.words, (size_t)words + 1);
  at_least(sc.D, (size_t)words + 1);
  at_least(sc.start, (size_t)n + 17);
  at_least(sc.end, (size_t)n + 17);
  Scan::Word* W = sc.words.data();
  // the line as bytes for the classifier: a wider character stands in as a blank or a letter
  at_least(sc.bytes, (size_t)n + 64);
  uint8_t* src = sc.bytes.data();
  if constexpr (sizeof(T) == 1) {
    std::memcpy(src, x, (size_t)n);
  } else {
    for (int64_t i = 0; i < n; ++i) src[i] = x[i] < 256 ? (uint8_t)x[i] : is_space(x[i]) ? ' ' : 'a';
  }
  std::memset(src + n, 0, 64);
  uint64_t digit_carry = 0, special = 0;
  for (int64_t w = 0; w < words; ++w) {
    Bits b;
    const int cnt = (int)std::min<int64_t>(64, n - 64 * w);
    const uint64_t valid = cnt == 64 ? ~0ULL : (1ULL << cnt) - 1;
    if (cnt > 0) classify<SplitOnly>(src + 64 * w, cnt, b);
    W[w].S = b.white | b.punct | ~valid;  // separators (past the end counts as white)
    W[w].N = ~b.white & valid;            // the characters of tokens
    W[w].P = b.punct;
    W[w].mark = b.dotcomma;
    sc.D[w] = W[w].D = b.dotcomma | (b.dash & ((b.digit << 1) | digit_carry));
    digit_carry = b.digit >> 63;
    special |= b.special & valid;
  }
  W[words].S = ~0ULL;
  sc.D[words] = 0;
  uint64_t other = 0, sub_carry = 0;
  for (int64_t w = 0; w < words; ++w) {  // marks: '.' or ',' after a sub-word character, before a separator
    const uint64_t sub = W[w].N & ~W[w].P;
    W[w].mark &= ((sub << 1) | sub_carry) & ((W[w].S >> 1) | (W[w + 1].S << 63));
    other |= W[w].D & ~W[w].mark;
    sub_carry = sub >> 63;
  }
  sc.plain = other == 0;
  const uint64_t fold = sc.plain ? ~0ULL : 0;
  // the line starts as after a separator (white, or 13a punctuation: pass 1 wraps it in blanks)
  uint64_t sep_carry = 1, tok_carry = 0, punct_carry = 0;
  int32_t *st = sc.start.data(), *en = sc.end.data();
  for (int64_t w = 0; w < words; ++w) {
    const uint64_t S = W[w].S, N = W[w].N, P = W[w].P, mark = W[w].mark & fold;
    const uint64_t TS = (N & (P | (S << 1) | sep_carry)) | mark;
    const uint64_t TE = (((N << 1) | tok_carry) & (S | (P << 1) | punct_carry)) | mark;
    st = bit_positions(TS, (int32_t)(64 * w), st);
    en = bit_positions(TE, (int32_t)(64 * w), en);
    sep_carry = S >> 63;
    tok_carry = N >> 63;
    punct_carry = P >> 63;
  }
  sc.count = (int32_t)(st - sc.start.data());
  return !special;
}

// Any bit of D in [a, a + len)? (len >= 1; D has a zero word past the line)
static inline bool any_d(const uint64_t* D, int64_t a, int64_t len) {
  for (; len > 64; a += 64, len -= 64)
    if (any_d(D, a, 64)) return true;
  const int sh = (int)(a & 63);
  const uint64_t win = (D[a >> 6] >> sh) | ((D[(a >> 6) + 1] << 1) << (63 - sh));
  return (win & (~0ULL >> (64 - len))) != 0;
}

// x[0, n) -> o[0, n); Latin-1 16 characters at a time (o has 16 of slack).
template <class T> static inline void widen(uint32_t* o, const T* x, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)  // (GCC's __builtin_convertvector goes through the stack here)
  if constexpr (sizeof(T) == 1) {
    const __m128i z = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16) {
      const __m128i v = _mm_loadu_si128((const __m128i*)(x + i));
      const __m128i lo = _mm_unpacklo_epi8(v, z), hi = _mm_unpackhi_epi8(v, z);
      _mm_storeu_si128((__m128i*)(o + i), _mm_unpacklo_epi16(lo, z));
      _mm_storeu_si128((__m128i*)(o + i + 4), _mm_unpackhi_epi16(lo, z));
      _mm_storeu_si128((__m128i*)(o + i + 8), _mm_unpacklo_epi16(hi, z));
      _mm_storeu_si128((__m128i*)(o + i + 12), _mm_unpackhi_epi16(hi, z));
    }
  }
#endif
  for (; i < n; ++i) o[i] = x[i];
}

// Where the tokens go: the next free slots of Tokens, in locals of tokenize (so in registers; State,
// which the out-of-line passes take by reference, is made only for them).
struct Out {
  uint32_t* txt;
  int32_t *start, *len;
  uint64_t* hash;
  int64_t nt;
};

// The token [a, a + len), a span of the line as it stands (txt[0, n)); `bytes`: the line if Latin-1, with
// 16 zero bytes after it, else null.
static inline __attribute__((always_inline)) void emit(Out& o, const uint8_t* bytes, int64_t a, int64_t len) {
  *o.start++ = (int32_t)a;
  *o.len++ = (int32_t)len;
  *o.hash++ = bytes ? token_hash_bytes(bytes + a, (int32_t)len) : token_hash_wide(o.txt + a, (int32_t)len);
}

// The passes over one sub-word, out of line: Out goes by value both ways, so the loop keeps its own in registers.
template <class T> static __attribute__((noinline)) Out passes_out(Out o, const T* x, int64_t len) {
  State s;
  s.txt = o.txt;
  s.start = o.start;
  s.len = o.len;
  s.hashes = o.hash;
  s.nt = o.nt;
  passes(s, x, len);
  o.start = s.start;
  o.len = s.len;
  o.hash = s.hashes;
  o.nt = s.nt;
  return o;
}

// The tokens of a line its scan found free of '<', '\n' and '&'.
template <class T> static void tokens(const T* x, int64_t n, Scan& sc, Tokens& out) {
  // the line, 16 of slack, then what the passes write (at most n characters); at most n tokens. Sizes only
  // grow here but for the token count: text is read through the spans alone.
  at_least(out.text, 2 * (size_t)n + 16);
  widen(out.text.data(), x, n);
  const uint8_t* bytes = sizeof(T) == 1 ? sc.bytes.data() : nullptr;
  int32_t count = sc.count;
  if (sc.plain) {  // every token as it stands (the marks are split off already): the scan's starts
    out.start.resize((size_t)count);
    out.len.resize((size_t)count);
    out.hash.resize((size_t)count);
    const int32_t *st = sc.start.data(), *en = sc.end.data();
    int32_t *start = out.start.data(), *len = out.len.data();
    uint64_t* hash = out.hash.data();
    const uint32_t* txt = out.text.data();
    for (int32_t k = 0; k < count; ++k) {
      start[k] = st[k];
      len[k] = en[k] - st[k];
      hash[k] = bytes ? token_hash_bytes(bytes + st[k], len[k]) : token_hash_wide(txt + st[k], len[k]);
    }
    return;
  }
  at_least(out.start, (size_t)n + 1);
  at_least(out.len, (size_t)n + 1);
  at_least(out.hash, (size_t)n + 1);
  Out o{out.text.data(), out.start.data(), out.len.data(), out.hash.data(), n + 16};
  const uint64_t* D = sc.D.data();
  const int32_t *starts = sc.start.data(), *ends = sc.end.data();
  static constexpr uint32_t DOT[1] = {'.'}, COMMA[1] = {','};
  static constexpr uint64_t HASH_DOT = token_hash(DOT, 1), HASH_COMMA = token_hash(COMMA, 1);
  for (int32_t k = 0; k < count; ++k) {
    const int64_t a = starts[k], len = ends[k] - a;
    if (len <= 64) {
      // D's bits over the token; "word." or "2017," (D only at a last '.' or ','): the word, then the mark,
      // without a branch (the second token's slots are written always and kept when it is there)
      const int sh = (int)(a & 63);
      const uint64_t d = ((D[a >> 6] >> sh) | ((D[(a >> 6) + 1] << 1) << (63 - sh))) & (~0ULL >> (64 - len));
      const uint32_t last = x[a + len - 1];
      const int64_t mark = (d == 1ULL << (len - 1)) & (len >= 2) & ((last == '.') | (last == ','));
      if (__builtin_expect((d == 0) | mark, 1)) {
        emit(o, bytes, a, len - mark);
        o.start[0] = (int32_t)(a + len - 1);
        o.len[0] = 1;
        o.hash[0] = last == '.' ? HASH_DOT : HASH_COMMA;
        o.start += mark;
        o.len += mark;
        o.hash += mark;
        continue;
      }
    } else if (!any_d(D, a, len)) {
      emit(o, bytes, a, len);
      continue;
    }
    o = passes_out(o, x + a, len);
  }
  const size_t nt = (size_t)(o.start - out.start.data());
  out.start.resize(nt);
  out.len.resize(nt);
  out.hash.resize(nt);
}

// False when the line holds '<', '\n' or '&' (the caller then takes tok_13a, and split_into clears out).
// Every token is a run of the line's characters (the passes insert blanks only), so the line is widened
// once and most tokens are spans of it; the passes write theirs after it. SplitOnly: str.split() ("none").
template <bool SplitOnly, class T> static bool tokenize(const T* x, int64_t n, Tokens& out, Scan& sc) {
  if (!scan<SplitOnly>(x, n, sc)) return false;
  tokens(x, n, sc, out);
  return true;
}
}  // namespace t13a

// The last token without its last character (gone if that was all of it), its hash made again.
static void drop_last_char(Tokens& out) {
  const size_t k = out.size() - 1;
  if (--out.len[k] == 0) {
    out.start.pop_back();
    out.len.pop_back();
    out.hash.pop_back();
  } else
    out.hash[k] = token_hash(out.text.data() + out.start[k], out.len[k]);
}

struct Scratch {
  U32 a, b;
  Buf<uint8_t> ka, kb;  // intl's classes of a and b
  t13a::Scan scan;
};

// t13a::tokenize on s[0, end) in its storage width.
template <bool SplitOnly> static bool t13a_pass(const StrView& s, int64_t end, Tokens& out, t13a::Scan& sc) {
  if (s.kind == 1) return t13a::tokenize<SplitOnly>(static_cast<const uint8_t*>(s.data), end, out, sc);
  if (s.kind == 2) return t13a::tokenize<SplitOnly>(static_cast<const uint16_t*>(s.data), end, out, sc);
  return t13a::tokenize<SplitOnly>(static_cast<const uint32_t*>(s.data), end, out, sc);
}

// rstrip() then the tokenizer then split(): the tokens BLEU counts.
static void tokenize(const StrView& s, int tok, Scratch& w, Tokens& out) {
  int64_t end = s.len;
  while (end > 0 && is_space(at(s, end - 1))) --end;
  if (tok == TOK_NONE) {  // the 13a pass's masks, white the only separator: split_into's time halved
    t13a_pass<true>(s, end, out, w.scan);
    return;
  }
  if (tok == TOK_13A && t13a_pass<false>(s, end, out, w.scan)) return;  // unless the literal replacements apply
  U32& a = w.a;
  load(s, end, a);
  if (tok == TOK_13A)
    tok_13a(a, w.b);
  else if (tok == TOK_INTL) {
    tok_intl(a, w.b, w.ka, w.kb, out);
    return;
  } else if (tok == TOK_ZH) {
    zh_wrap(a, w.b);
    // zh's passes run without 13a's pad blanks, which differ only at a line's ends: a pad blank can be pass 2's
    // \1 before a first '.' or ',', or pass 3's \2 after a last one. After a last one, a digit stands in for
    // "nothing": no pass matches it, or the character before it with it; it comes off the last token after.
    const size_t m = a.size();
    if (m == 0 || !is_dot_comma(a[0])) {
      const bool tail = m > 0 && is_dot_comma(a[m - 1]);
      if (tail) a.push_back('0');
      if (t13a::tokenize<false>(a.data(), (int64_t)a.size(), out, w.scan)) {
        if (tail) drop_last_char(out);
        return;
      }
      if (tail) a.pop_back();
    }
    regexp_passes(a, w.b, false);
  } else if (tok == TOK_CHAR) {  // ' '.join(line).split(): every non-white code point is a token, a span of a
    out.clear();
    for (size_t i = 0; i < a.size(); ++i)
      if (!is_space(a[i])) {
        out.start.push_back((int32_t)i);
        out.len.push_back(1);
      }
    out.text.swap(a);
    return;
  }
  split_into(a, out);
}

}  // namespace tmt
