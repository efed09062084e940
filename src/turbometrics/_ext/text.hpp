// Text kernels: sacrebleu's tokenizers on code points, and BLEU's per-segment
// sufficient statistics on exact per-segment token ids.
//
// Strings are read in place from Python's PEP 393 storage (1, 2 or 4 bytes
// per code point), so the GIL can be released while segments are processed in
// parallel. The Python layer validates everything first.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu.hpp"
#include "parallel.hpp"
#include "unicode_tables.hpp"

namespace tmt {

struct StrView {
  const void* data;  // nullptr: no string (a missing reference)
  int64_t len;
  int kind;  // bytes per code point: 1, 2 or 4
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
  return c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
         c == 0x202f || c == 0x205f || c == 0x3000;
}
static inline bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }  // regex [0-9]
static inline bool is_dot_comma(uint32_t c) { return c == '.' || c == ','; }
// 13a's first class [\{-\~\[-\` -\&\(-\+\:-\@\/]: space and !"#$%&()*+/:;<=>?@[\]^_`{|}~
static inline bool is_13a_punct(uint32_t c) {
  return (c >= 0x7b && c <= 0x7e) || (c >= 0x5b && c <= 0x60) || (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2b) ||
         (c >= 0x3a && c <= 0x40) || c == 0x2f;
}

// std::allocator whose value-initialisation is default-initialisation: resize() leaves new numbers
// unwritten. The 13a pass sizes a line's token buffers for its worst case (about 20 bytes a character)
// before writing them; zero-filling them first was a quarter of the tokenizer's time.
template <class T> struct NoFill : std::allocator<T> {
  template <class U> struct rebind {
    typedef NoFill<U> other;
  };
  NoFill() = default;
  template <class U> NoFill(const NoFill<U>&) noexcept {}
  template <class U> void construct(U* p) noexcept { ::new ((void*)p) U; }
  template <class U, class... A> void construct(U* p, A&&... a) { ::new ((void*)p) U(std::forward<A>(a)...); }
};
template <class T> using Buf = std::vector<T, NoFill<T>>;
typedef Buf<uint32_t> U32;

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

// A token's hash, sixteen code points a step: chunks of eight, each as two 64-bit words (the low bytes
// of its code points, and their second bytes; zero past the token), four independent multiplies summed;
// at least one step, so every token of up to 16 characters takes the same branch-free path. Bits above
// 16 of a code point are left out (an astral character loses its plane: a collision, which costs a
// comparison, never a wrong id). A Latin-1 token (second bytes all zero) hashes straight from two 8-byte
// loads of its bytes (token_hash_bytes): one function of the code points whatever a string's storage.
// The maps take the top bits (Fibonacci hashing). Token ids are handed out in insertion order, so the
// hash changes speed only, never a result.
constexpr uint64_t TOKEN_HASH_SEED = 0x243f6a8885a308d3ULL;
constexpr uint64_t token_hash_step(uint64_t h, uint64_t lo0, uint64_t lo1, uint64_t hi0, uint64_t hi1) {
  return (h ^ lo0) * 0xff51afd7ed558ccdULL + lo1 * 0xc4ceb9fe1a85ec53ULL + hi0 * 0x9e3779b97f4a7c15ULL +
         hi1 * 0xd6e8feb86659fd93ULL;
}
constexpr uint64_t token_hash(const uint32_t* p, int32_t len) {
  uint64_t h = TOKEN_HASH_SEED ^ (uint64_t)len;
  for (int32_t i = 0; i < len || i == 0; i += 16) {
    uint64_t w[4] = {0, 0, 0, 0};  // lo0, lo1, hi0, hi1
    for (int32_t j = 0; j < 16 && i + j < len; ++j) {
      w[j / 8] |= (uint64_t)(p[i + j] & 0xff) << (8 * (j % 8));
      w[2 + j / 8] |= (uint64_t)((p[i + j] >> 8) & 0xff) << (8 * (j % 8));
    }
    h = token_hash_step(h, w[0], w[1], w[2], w[3]);
  }
  return h ^ (h >> 29);
}
// The first k bytes of two words, k = 0..16.
struct Keep16 {
  uint64_t m[17][2];
  constexpr Keep16() : m() {
    for (int k = 0; k <= 16; ++k)
      for (int j = 0; j < 16; ++j)
        if (j < k) m[k][j / 8] |= 0xffULL << (8 * (j % 8));
  }
};
static constexpr Keep16 KEEP16;
// token_hash's steps past the first 16 characters of a Latin-1 token (rare: out of the hot loop).
static __attribute__((noinline)) uint64_t token_hash_bytes_rest(uint64_t h, const uint8_t* p, int32_t len) {
  for (int32_t i = 16; i < len; i += 16) {
    const int32_t k = std::min(len - i, 16);
    uint64_t w0, w1;
    std::memcpy(&w0, p + i, 8);
    std::memcpy(&w1, p + i + 8, 8);
    h = token_hash_step(h, w0 & KEEP16.m[k][0], w1 & KEEP16.m[k][1], 0, 0);
  }
  return h;
}
// token_hash of the Latin-1 text p[0, len): p must hold len rounded up to 16 bytes, and at least 16.
static inline uint64_t token_hash_bytes(const uint8_t* p, int32_t len) {
  const int32_t k = std::min(len, 16);
  uint64_t w0, w1;
  std::memcpy(&w0, p, 8);
  std::memcpy(&w1, p + 8, 8);
  uint64_t h = token_hash_step(TOKEN_HASH_SEED ^ (uint64_t)len, w0 & KEEP16.m[k][0], w1 & KEEP16.m[k][1], 0, 0);
  if (__builtin_expect(len > 16, 0)) h = token_hash_bytes_rest(h, p, len);
  return h ^ (h >> 29);
}

// token_hash of p[0, len); p holds 16 code points from the token's start (SSE2: one pass of packs).
static inline uint64_t token_hash_wide(const uint32_t* p, int32_t len) {
#if defined(__SSE2__) && defined(__x86_64__)
  if (len <= 16) {
    const __m128i ff = _mm_set1_epi32(0xff);
    const __m128i a0 = _mm_loadu_si128((const __m128i*)p), a1 = _mm_loadu_si128((const __m128i*)(p + 4)),
                  a2 = _mm_loadu_si128((const __m128i*)(p + 8)), a3 = _mm_loadu_si128((const __m128i*)(p + 12));
    auto bytes = [&](int sh) {  // byte `sh / 8` of each code point, in order
      const __m128i b0 = _mm_and_si128(_mm_srli_epi32(a0, sh), ff), b1 = _mm_and_si128(_mm_srli_epi32(a1, sh), ff),
                    b2 = _mm_and_si128(_mm_srli_epi32(a2, sh), ff), b3 = _mm_and_si128(_mm_srli_epi32(a3, sh), ff);
      return _mm_packus_epi16(_mm_packs_epi32(b0, b1), _mm_packs_epi32(b2, b3));
    };
    const __m128i lo = bytes(0), hi = bytes(8);
    const uint64_t m0 = KEEP16.m[len][0], m1 = KEEP16.m[len][1];
    const uint64_t h = token_hash_step(TOKEN_HASH_SEED ^ (uint64_t)len, (uint64_t)_mm_cvtsi128_si64(lo) & m0,
                                       (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(lo, lo)) & m1,
                                       (uint64_t)_mm_cvtsi128_si64(hi) & m0,
                                       (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(hi, hi)) & m1);
    return h ^ (h >> 29);
  }
#endif
  return token_hash(p, len);
}

// Bits set, inline (the x86-64 baseline has no POPCNT: __builtin_popcountll was a libgcc call).
static inline int popcount64(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return (int)((x * 0x0101010101010101ULL) >> 56);
}

// The bits of the lanes of a vector compare (0 or all ones each), lane j at bit j.
typedef uint8_t u8x16 __attribute__((vector_size(16)));
static inline uint64_t movemask(u8x16 v) {
#if defined(__SSE2__)
  return (uint64_t)(uint32_t)_mm_movemask_epi8((__m128i)v);
#else
  uint64_t m = 0;
  for (int j = 0; j < 16; ++j) m |= (uint64_t)(v[j] & 1) << j;
  return m;
#endif
}

// Tokens as spans of `text`; `hash` holds each token's token_hash where the tokenizer made them as it went
// (13a's one pass), else it is empty.
struct Tokens {
  U32 text;
  Buf<int32_t> start, len;
  Buf<uint64_t> hash;
  void clear() {
    text.clear();
    start.clear();
    len.clear();
    hash.clear();
  }
  size_t size() const { return start.size(); }
};

// The whitespace-separated tokens of `s` (Python's str.split()); takes s's buffer.
static void split_into(U32& s, Tokens& out) {
  out.clear();
  out.text.swap(s);
  const U32& t = out.text;
  size_t i = 0, n = t.size();
  while (i < n) {
    while (i < n && is_space(t[i])) ++i;
    if (i == n) break;
    size_t j = i;
    while (j < n && !is_space(t[j])) ++j;
    out.start.push_back((int32_t)i);
    out.len.push_back((int32_t)(j - i));
    i = j;
  }
}

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

// sacrebleu's intl (mteval-v14): (\P{N})(\p{P}) -> '\1 \2 ', (\p{P})(\P{N}) -> ' \1 \2',
// (\p{S}) -> ' \1 ', with the `regex` package's Unicode classes. No padding.
static void tok_intl(U32& a, U32& b) {
  b.clear();
  for (size_t i = 0; i < a.size();) {
    if (i + 1 < a.size() && !is_N(a[i]) && is_P(a[i + 1])) {
      b.push_back(a[i]);
      b.push_back(' ');
      b.push_back(a[i + 1]);
      b.push_back(' ');
      i += 2;
    } else
      b.push_back(a[i++]);
  }
  a.clear();
  for (size_t i = 0; i < b.size();) {
    if (i + 1 < b.size() && is_P(b[i]) && !is_N(b[i + 1])) {
      a.push_back(' ');
      a.push_back(b[i]);
      a.push_back(' ');
      a.push_back(b[i + 1]);
      i += 2;
    } else
      a.push_back(b[i++]);
  }
  b.clear();
  for (uint32_t c : a) {
    if (is_S(c)) {
      b.push_back(' ');
      b.push_back(c);
      b.push_back(' ');
    } else
      b.push_back(c);
  }
  a.swap(b);
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

// sacrebleu's zh: strip(), spaces around each "Chinese" character, then the
// regex passes without padding.
static void tok_zh(U32& a, U32& b) {
  size_t lo = 0, hi = a.size();
  while (lo < hi && is_space(a[lo])) ++lo;
  while (hi > lo && is_space(a[hi - 1])) --hi;
  b.clear();
  for (size_t i = lo; i < hi; ++i) {
    if (is_zh(a[i])) {
      b.push_back(' ');
      b.push_back(a[i]);
      b.push_back(' ');
    } else
      b.push_back(a[i]);
  }
  a.swap(b);
  regexp_passes(a, b, false);
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
static inline void classify(const uint8_t* x, int m, Bits& b) {
  for (int q = 0; q < (m + 15) / 16; ++q) {
    u8x16 v;
    std::memcpy(&v, x + 16 * q, 16);
    auto in = [&](uint8_t lo, uint8_t hi) { return (u8x16)((u8x16)(v - lo) <= (uint8_t)(hi - lo)); };
    auto eq = [&](uint8_t c) { return (u8x16)(v == c); };
    const u8x16 white = in(0x09, 0x0d) | in(0x1c, 0x20) | eq(0x85) | eq(0xa0);
    const u8x16 punct =
        (in(0x21, 0x2f) & ~in(0x2c, 0x2e) & ~eq('\'')) | in(0x3a, 0x40) | in(0x5b, 0x60) | in(0x7b, 0x7e);
    const int sh = 16 * q;
    b.white |= movemask(white) << sh;
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

// Scratch that only grows: a vector's resize upwards is an out-of-line call (std::vector's
// _M_default_append), which a resize per line made a third of a short line's time.
template <class V> static inline void at_least(V& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

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

// False when the line holds '<', '\n' or '&'.
template <class T> static bool scan(const T* x, int64_t n, Scan& sc) {
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
    if (cnt > 0) classify(src + 64 * w, cnt, b);
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
// once and most tokens are spans of it; the passes write theirs after it.
template <class T> static bool tokenize(const T* x, int64_t n, Tokens& out, Scan& sc) {
  if (!scan(x, n, sc)) return false;
  tokens(x, n, sc, out);
  return true;
}
}  // namespace t13a

struct Scratch {
  U32 a, b;
  t13a::Scan scan;
};

// The first n code points of s into a (one switch on the storage kind, not one per character).
static void load(const StrView& s, int64_t n, U32& a) {
  a.resize((size_t)n);
  switch (s.kind) {
    case 1: {
      const uint8_t* p = static_cast<const uint8_t*>(s.data);
      for (int64_t i = 0; i < n; ++i) a[i] = p[i];
      break;
    }
    case 2: {
      const uint16_t* p = static_cast<const uint16_t*>(s.data);
      for (int64_t i = 0; i < n; ++i) a[i] = p[i];
      break;
    }
    default:
      if (n) std::memcpy(a.data(), s.data, (size_t)n * 4);
  }
}

// rstrip() then the tokenizer then split(): the tokens BLEU counts.
static void tokenize(const StrView& s, int tok, Scratch& w, Tokens& out) {
  int64_t end = s.len;
  while (end > 0 && is_space(at(s, end - 1))) --end;
  if (tok == TOK_13A) {  // one pass, unless the line needs the literal replacements
    const bool done = s.kind == 1   ? t13a::tokenize(static_cast<const uint8_t*>(s.data), end, out, w.scan)
                      : s.kind == 2 ? t13a::tokenize(static_cast<const uint16_t*>(s.data), end, out, w.scan)
                                    : t13a::tokenize(static_cast<const uint32_t*>(s.data), end, out, w.scan);
    if (done) return;
  }
  U32& a = w.a;
  load(s, end, a);
  if (tok == TOK_13A)
    tok_13a(a, w.b);
  else if (tok == TOK_INTL)
    tok_intl(a, w.b);
  else if (tok == TOK_ZH)
    tok_zh(a, w.b);
  else if (tok == TOK_CHAR) {  // ' '.join(line): every non-space code point is a token
    w.b.clear();
    for (uint32_t c : a) {
      w.b.push_back(c);
      w.b.push_back(' ');
    }
    a.swap(w.b);
  }
  split_into(a, out);
}

// ---------------------------------------------------------------- exact per-segment ids

// The first table of a map sized for n items: no more than 4,096 slots, whatever n (a table doubles
// at half load, so memory follows the distinct keys, not the items: a 50 MB text has 10^7 tokens but
// far fewer distinct ones). Ids are handed out in insertion order either way.
static inline size_t first_capacity(size_t n_items) {
  size_t cap = 16;
  while (cap < 2 * std::min<size_t>(n_items, 2048)) cap <<= 1;
  return cap;
}

// Fibonacci hashing: the top `bits` bits of one multiplication (splitmix64's three took 10% of BLEU).
static inline size_t fib_hash(uint64_t x, int shift) { return (size_t)((x * 0x9e3779b97f4a7c15ULL) >> shift); }
static inline int fib_shift(size_t cap) {  // cap a power of two >= 2
  int shift = 64;
  for (size_t c = cap; c > 1; c >>= 1) --shift;
  return shift;
}

// Open-addressing map from 64-bit keys to dense ids 0, 1, 2, ...
struct IdMap {
  std::vector<uint64_t> keys;
  std::vector<int32_t> vals;  // -1 = empty
  size_t mask = 0;
  int shift = 64;
  int32_t next = 0;
  void reset(size_t n_items) {
    const size_t cap = first_capacity(n_items);
    if (keys.size() < cap) {
      keys.resize(cap);
      vals.resize(cap);
    }
    mask = cap - 1;
    shift = fib_shift(cap);
    std::fill(vals.begin(), vals.begin() + cap, -1);
    next = 0;
  }
  __attribute__((noinline)) void grow() {  // rare: keep id() small enough to inline
    const size_t cap = 2 * (mask + 1);
    const int sh = fib_shift(cap);
    std::vector<uint64_t> k2(cap);
    std::vector<int32_t> v2(cap, -1);
    for (size_t h = 0; h <= mask; ++h) {
      if (vals[h] < 0) continue;
      size_t j = fib_hash(keys[h], sh);
      while (v2[j] >= 0) j = (j + 1) & (cap - 1);
      k2[j] = keys[h];
      v2[j] = vals[h];
    }
    keys.swap(k2);
    vals.swap(v2);
    mask = cap - 1;
    shift = sh;
  }
  int32_t id(uint64_t key) {
    if (2 * ((size_t)next + 1) > mask + 1) grow();
    size_t h = fib_hash(key, shift);
    while (vals[h] >= 0) {
      if (keys[h] == key) return vals[h];
      h = (h + 1) & mask;
    }
    keys[h] = key;
    vals[h] = next;
    return next++;
  }
};

// Token content -> dense id, exact (hash collisions are resolved by comparing code points). Slots point
// at the tokens' text, which must outlive the map, unless reset(n, true) asks it to keep its own copy
// of each distinct token (chrF reads one text at a time and reuses the buffer).
struct TokenIds {
  struct Slot {
    uint64_t hash;
    const uint32_t* p;
    int32_t len;
    int32_t id;
  };
  std::vector<Slot> slots;
  size_t mask = 0;
  int shift = 64;
  int32_t next = 0;
  bool own = false;
  std::vector<std::vector<uint32_t>> chunks;  // the copies: chunks never reallocate, so pointers hold
  void reset(size_t n_items, bool own_copies = false) {
    const size_t cap = first_capacity(n_items);
    if (slots.size() < cap) slots.resize(cap);
    mask = cap - 1;
    shift = fib_shift(cap);
    for (size_t i = 0; i < cap; ++i) slots[i].id = -1;
    next = 0;
    own = own_copies;
    if (chunks.size() > 1) chunks.resize(1);  // the first chunk's memory is kept for the next segment
    if (!chunks.empty()) chunks[0].clear();
    used = 0;
  }
  __attribute__((noinline)) void grow() {  // rare: keep id() small enough to inline
    const size_t cap = 2 * (mask + 1);
    const int sh = fib_shift(cap);
    std::vector<Slot> s2(cap);
    for (Slot& s : s2) s.id = -1;
    for (size_t h = 0; h <= mask; ++h) {
      if (slots[h].id < 0) continue;
      size_t j = fib_hash(slots[h].hash, sh);
      while (s2[j].id >= 0) j = (j + 1) & (cap - 1);
      s2[j] = slots[h];
    }
    slots.swap(s2);
    mask = cap - 1;
    shift = sh;
  }
  size_t used = 0;                                                       // chunks in use
  static bool same(const uint32_t* a, const uint32_t* b, int32_t len) {  // inline: most tokens are short
    if (len > 16) return std::memcmp(a, b, (size_t)len * sizeof(uint32_t)) == 0;
    for (int32_t i = 0; i < len; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  const uint32_t* keep(const uint32_t* p, int32_t len) {
    if (used == 0 || chunks[used - 1].size() + len > chunks[used - 1].capacity()) {
      if (used == chunks.size()) chunks.emplace_back();
      chunks[used].clear();
      chunks[used++].reserve(std::max<size_t>(4096, (size_t)len));
    }
    std::vector<uint32_t>& c = chunks[used - 1];
    c.insert(c.end(), p, p + len);
    return c.data() + c.size() - len;
  }
  int32_t id(const uint32_t* p, int32_t len) { return id(p, len, token_hash(p, len)); }
  // h: token_hash(p, len)
  int32_t id(const uint32_t* p, int32_t len, uint64_t h) {
    if (2 * ((size_t)next + 1) > mask + 1) grow();
    size_t k = fib_hash(h, shift);
    while (slots[k].id >= 0) {
      Slot& s = slots[k];
      if (s.hash == h && s.len == len && same(s.p, p, len)) return s.id;
      k = (k + 1) & mask;
    }
    slots[k] = {h, own ? keep(p, len) : p, len, next};
    return next++;
  }
};

// ---------------------------------------------------------------- n-gram levels

// N-gram ids over several sequences at once (a hypothesis and its references),
// exact and dense: level 1 ids are the unigram ids; the (n+1)-gram starting at
// i gets the id of the pair (n-gram id at i, unigram id at i+n). Ids at each
// level are 0..n_ids-1, so counting uses plain arrays.
struct Levels {
  std::vector<std::vector<int32_t>> uni, gram;  // per sequence
  std::vector<int32_t> cnt, cnt2;               // scratch counters, all zero between uses
  std::vector<int32_t> touched;
  IdMap pairs;
  int nseq = 0;
  size_t n_ids = 0, total = 0;

  void begin(int nseq_, size_t n_unigram_ids) {
    nseq = nseq_;
    if ((int)uni.size() < nseq) {
      uni.resize(nseq);
      gram.resize(nseq);
    }
    total = 0;
    for (int s = 0; s < nseq; ++s) {
      gram[s] = uni[s];
      total += uni[s].size();
    }
    n_ids = n_unigram_ids;
    fit();
  }
  void fit() {
    if (cnt.size() < n_ids + 1) {
      cnt.assign(n_ids + 1, 0);
      cnt2.assign(n_ids + 1, 0);
    }
  }
  // ids of the n-grams of sequence s at the current level
  const std::vector<int32_t>& at(int s) const { return gram[s]; }
  // advance from n-grams to (n+1)-grams
  void next(int n) {
    pairs.reset(total);
    for (int s = 0; s < nseq; ++s) {
      std::vector<int32_t>& g = gram[s];
      const int64_t m = (int64_t)uni[s].size() - n;
      for (int64_t i = 0; i < m; ++i) g[i] = pairs.id(((uint64_t)(uint32_t)g[i] << 32) | (uint32_t)uni[s][i + n]);
      g.resize(m > 0 ? (size_t)m : 0);
    }
    n_ids = (size_t)pairs.next;
    fit();
  }
  // sum over the distinct n-grams g of sequence a of min(count_a(g), count_b(g))
  int64_t clipped(int a, int b) {
    for (int32_t g : gram[b]) cnt2[g]++;
    int64_t m = 0;
    for (int32_t g : gram[a]) cnt[g]++;
    for (int32_t g : gram[a])
      if (cnt[g]) {
        m += std::min(cnt[g], cnt2[g]);
        cnt[g] = 0;
      }
    for (int32_t g : gram[b]) cnt2[g] = 0;
    return m;
  }
};

// The dense ids (exact) of one token list into `ids`.
static void sequence_ids(const Tokens& t, TokenIds& tids, std::vector<int32_t>& ids) {
  ids.resize(t.size());
  const uint32_t* txt = t.text.data();
  if (t.hash.size() == t.size())
    for (size_t i = 0; i < t.size(); ++i) ids[i] = tids.id(txt + t.start[i], t.len[i], t.hash[i]);
  else
    for (size_t i = 0; i < t.size(); ++i) ids[i] = tids.id(txt + t.start[i], t.len[i]);
}

// Map tokens to dense ids (exact) into lv.uni[s] for each token list.
static void token_ids(const std::vector<Tokens>& toks, int nseq, TokenIds& tids, Levels& lv) {
  size_t total = 0;
  for (int s = 0; s < nseq; ++s) total += toks[s].size();
  tids.reset(total);
  if ((int)lv.uni.size() < nseq) {
    lv.uni.resize(nseq);
    lv.gram.resize(nseq);
  }
  for (int s = 0; s < nseq; ++s) sequence_ids(toks[s], tids, lv.uni[s]);
}

// ---------------------------------------------------------------- BLEU statistics

struct BleuWork {
  Scratch scratch;
  std::vector<Tokens> toks;  // [0] hypothesis, then the references present
  TokenIds tids;
  IdMap ids;  // token-ID input: the ids made dense
  Levels lv;
  std::vector<int32_t> refmax;
  std::vector<uint64_t> masks, hmask;  // bleu_counts_short
};

// correct_1..N of a segment whose texts all have at most 64 tokens, by bit masks instead of n-gram ids.
// mask[id] has bit p set where the text holds token id at p; for the n-gram at hypothesis position i,
// H[i] marks the hypothesis positions holding the same n-gram and M_s[i] those of reference s:
// H_n[i] = H_{n-1}[i] & (hyp_mask[h[i + n - 1]] >> (n - 1)), and likewise M. Each distinct n-gram
// (its first position: no lower bit in H) adds min(popcount H, max over s of popcount M_s), which is
// correct_n's definition. A few word operations per position and order, no hashing.
// The x86-64 baseline has no POPCNT (__builtin_popcountll is a library call there): hot loops get a copy
// built for it (TM_POPCNT_TARGET), taken when the CPU has it (every x86-64 CPU since 2008; have_popcnt);
// other targets have a popcount instruction in their baseline.
#if defined(__x86_64__) || defined(__i386__)
#define TM_POPCNT_TARGET __attribute__((target("popcnt")))
#else
#define TM_POPCNT_TARGET
#endif
// TURBOMETRICS_SIMD=baseline takes the baseline's code, as it does for the dense paths.
static inline bool have_popcnt() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = tmcpu::features().popcnt && !(std::getenv("TURBOMETRICS_SIMD") &&
                                                        std::strcmp(std::getenv("TURBOMETRICS_SIMD"), "baseline") == 0);
  return yes;
#else
  return true;
#endif
}

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

// Token-ID sequences (any int64 values) made dense, exactly: seq s is tok[off[s]:off[s + 1]] for s in
// seqs[0..nseq). Into lv.uni[0..nseq); returns the number of distinct ids.
static size_t dense_ids(const int64_t* tok, const int64_t* off, const int64_t* seqs, int nseq, IdMap& map, Levels& lv) {
  int64_t total = 0;
  for (int s = 0; s < nseq; ++s) total += off[seqs[s] + 1] - off[seqs[s]];
  map.reset((size_t)total);
  if ((int)lv.uni.size() < nseq) {
    lv.uni.resize(nseq);
    lv.gram.resize(nseq);
  }
  for (int s = 0; s < nseq; ++s) {
    const int64_t a = off[seqs[s]], b = off[seqs[s] + 1];
    std::vector<int32_t>& u = lv.uni[s];
    u.resize((size_t)(b - a));
    for (int64_t k = a; k < b; ++k) u[k - a] = map.id((uint64_t)tok[k]);
  }
  return (size_t)map.next;
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

// ---------------------------------------------------------------- chrF statistics

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
