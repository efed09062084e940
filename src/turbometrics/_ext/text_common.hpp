// The text kernels' common ground: strings as views of Python's PEP 393 storage (1, 2 or 4 bytes per
// code point, read in place, so the GIL can be released while segments are processed in parallel; the
// Python layer validates everything first), Python's str.isspace(), the buffers a tokenizer fills
// (Tokens, split_into), the token hash the id maps use, and bit helpers (popcount, vector compare masks).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu.hpp"

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

}  // namespace tmt
